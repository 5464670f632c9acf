// SPDX-License-Identifier: GPL-2.0

//! What the status socket reports: a plain copy of the server's state at one moment
//! ([`Snapshot`]), and the event counters the server keeps from its start
//! ([`Counters`]). No RDMA, no secrets: the formatters ([`super::metrics`],
//! [`super::json`]) see only this.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use crate::wire::RejectCode;

/// Every reason a connect can be refused with, in wire order: the reject counter
/// has a sample for each from the start (Prometheus: no missing series at zero).
pub(crate) const REJECT_CODES: [RejectCode; 9] = [
    RejectCode::BadVersion,
    RejectCode::TooLarge,
    RejectCode::NoMemory,
    RejectCode::BadRequest,
    RejectCode::TooManyClients,
    RejectCode::QueueMismatch,
    RejectCode::AuthFailed,
    RejectCode::AuthRequired,
    RejectCode::InUse,
];

/// The `why` of a queue closed because its keep-alive probe was not answered within
/// a period (the `why=` of its `queue_closed` log line).
pub(crate) const KEEPALIVE_TIMEOUT: &str = "keepalive_timeout";
/// The `why` of a queue closed because its keep-alive probe failed or could not be
/// posted.
pub(crate) const KEEPALIVE_FAILED: &str = "keepalive_failed";

/// Events counted since the server started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Counters {
    /// Queue connections admitted and accepted.
    pub(crate) connects_accepted: u64,
    /// Connects refused, by reason name (every reason present, from zero).
    pub(crate) connect_rejects: BTreeMap<&'static str, u64>,
    /// Challenges answered to hellos.
    pub(crate) challenges: u64,
    /// Queues closed by the keep-alive, by `why` (both present, from zero).
    pub(crate) keepalive_closes: BTreeMap<&'static str, u64>,
    /// Regions allocated (new regions; not reconnects to a region in its grace period).
    pub(crate) regions_allocated: u64,
    /// Regions freed (grace period over, or server shutdown).
    pub(crate) regions_freed: u64,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            connects_accepted: 0,
            connect_rejects: REJECT_CODES.iter().map(|c| (c.name(), 0)).collect(),
            challenges: 0,
            keepalive_closes: [(KEEPALIVE_TIMEOUT, 0), (KEEPALIVE_FAILED, 0)]
                .into_iter()
                .collect(),
            regions_allocated: 0,
            regions_freed: 0,
        }
    }
}

impl Counters {
    /// A connect refused with `code`.
    pub(crate) fn rejected(&mut self, code: RejectCode) {
        *self.connect_rejects.entry(code.name()).or_insert(0) += 1;
    }

    /// A queue closed with `why`: counted if the keep-alive closed it.
    pub(crate) fn queue_closed(&mut self, why: &str) {
        if let Some(n) = self.keepalive_closes.get_mut(why) {
            *n += 1;
        }
    }
}

/// The pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pool {
    /// `--size`.
    pub(crate) size: u64,
    /// Bytes charged to regions (whole hugepages with `--hugepages`).
    pub(crate) used: u64,
    /// `--max-clients`.
    pub(crate) max_clients: usize,
}

impl Pool {
    /// What is left for new regions.
    pub(crate) fn left(&self) -> u64 {
        self.size.saturating_sub(self.used)
    }
}

/// One live queue (connection) of a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueInfo {
    /// Its `queue_index`.
    pub(crate) index: u16,
    /// The peer's address as rdma_cm gives it (`IP:PORT`).
    pub(crate) peer: String,
}

/// One client holding a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientInfo {
    /// The client id.
    pub(crate) client_id: u64,
    /// Its region's id.
    pub(crate) region_id: u64,
    /// The registered length in bytes.
    pub(crate) length: u64,
    /// The region's epoch.
    pub(crate) epoch: u32,
    /// The `queue_count` the client announced.
    pub(crate) queue_count: u16,
    /// Its live queues, by index.
    pub(crate) queues: Vec<QueueInfo>,
    /// `Some` while the region is in its grace period: the time left.
    pub(crate) grace_left: Option<Duration>,
    /// Time since the client's last queue activity (connect, established, descriptor
    /// delivered, keep-alive answered, disconnect); `None` for a region restored from
    /// the state directory that no queue has connected to yet.
    pub(crate) last_seen: Option<Duration>,
    /// The instance that owns the region, if known.
    pub(crate) owner: Option<u64>,
}

impl ClientInfo {
    /// `grace` or `live`.
    pub(crate) fn state(&self) -> &'static str {
        if self.grace_left.is_some() {
            "grace"
        } else {
            "live"
        }
    }
}

/// The server at one moment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Snapshot {
    /// The server's version (the package's, and its build tag if it has one).
    pub(crate) version: &'static str,
    /// The wire protocol version it speaks.
    pub(crate) wire_version: u16,
    /// `--listen`.
    pub(crate) listen: String,
    /// When the server started.
    pub(crate) started: SystemTime,
    /// How long it has been running.
    pub(crate) uptime: Duration,
    /// The pool and its use.
    pub(crate) pool: Pool,
    /// Live queues of all clients (accepted, not closed).
    pub(crate) queues: usize,
    /// The clients holding a region, by client id.
    pub(crate) clients: Vec<ClientInfo>,
    /// The events counted since the start.
    pub(crate) counters: Counters,
}

impl Snapshot {
    /// Clients whose region is in its grace period.
    pub(crate) fn clients_in_grace(&self) -> usize {
        self.clients
            .iter()
            .filter(|c| c.grace_left.is_some())
            .count()
    }

    /// Seconds since the Unix epoch at the start (0 for a clock before 1970).
    pub(crate) fn start_time_seconds(&self) -> f64 {
        self.started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }
}

/// A snapshot for the formatters' tests: two clients, one live with two queues and
/// one in its grace period, a few events counted.
#[cfg(test)]
pub(crate) fn sample() -> Snapshot {
    let mut counters = Counters {
        connects_accepted: 3,
        challenges: 4,
        regions_allocated: 3,
        regions_freed: 1,
        ..Counters::default()
    };
    counters.rejected(RejectCode::TooLarge);
    counters.rejected(RejectCode::TooLarge);
    counters.rejected(RejectCode::AuthFailed);
    counters.queue_closed(KEEPALIVE_TIMEOUT);
    counters.queue_closed("DISCONNECTED");
    Snapshot {
        version: "0.1.0",
        wire_version: 2,
        listen: "192.0.2.1:7471".into(),
        started: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_250),
        uptime: Duration::from_millis(93_500),
        pool: Pool {
            size: 16 << 20,
            used: 6 << 20,
            max_clients: 64,
        },
        queues: 2,
        clients: vec![
            ClientInfo {
                client_id: 0x2601,
                region_id: 18_000_000_000_000_000_001,
                length: 4 << 20,
                epoch: 1,
                queue_count: 2,
                queues: vec![
                    QueueInfo {
                        index: 0,
                        peer: "192.0.2.1:40001".into(),
                    },
                    QueueInfo {
                        index: 1,
                        peer: "192.0.2.1:40002".into(),
                    },
                ],
                grace_left: None,
                last_seen: Some(Duration::from_millis(1500)),
                owner: Some(1),
            },
            ClientInfo {
                client_id: 0x2602,
                region_id: 7,
                length: 2 << 20,
                epoch: 3,
                queue_count: 1,
                queues: Vec::new(),
                grace_left: Some(Duration::from_millis(25_125)),
                last_seen: None,
                owner: None,
            },
        ],
        counters,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reject_code_is_counted() {
        // A code added to the wire format must be added here too.
        let known: Vec<RejectCode> = (0..=u16::MAX)
            .filter_map(|n| RejectCode::from_u16(n).ok())
            .collect();
        assert_eq!(known, REJECT_CODES);
        let c = Counters::default();
        assert_eq!(c.connect_rejects.len(), REJECT_CODES.len());
        assert!(c.connect_rejects.values().all(|&n| n == 0));
    }

    #[test]
    fn counters_count() {
        let s = sample();
        let c = &s.counters;
        assert_eq!(c.connect_rejects["TooLarge"], 2);
        assert_eq!(c.connect_rejects["AuthFailed"], 1);
        assert_eq!(c.connect_rejects["InUse"], 0);
        // Only the keep-alive's closes count.
        assert_eq!(c.keepalive_closes.len(), 2);
        assert_eq!(c.keepalive_closes[KEEPALIVE_TIMEOUT], 1);
        assert_eq!(c.keepalive_closes[KEEPALIVE_FAILED], 0);
    }

    #[test]
    fn derived_values() {
        let s = sample();
        assert_eq!(s.pool.left(), 10 << 20);
        assert_eq!(s.clients_in_grace(), 1);
        assert_eq!(s.clients[0].state(), "live");
        assert_eq!(s.clients[1].state(), "grace");
        assert_eq!(s.start_time_seconds(), 1_700_000_000.25);
        let over = Pool {
            size: 1,
            used: 2,
            max_clients: 1,
        };
        assert_eq!(
            over.left(),
            0,
            "an overcommitted pool (restored regions) has 0 left"
        );
    }
}
