// SPDX-License-Identifier: GPL-2.0

//! The memory server: a single-threaded poll loop over the rdma_cm event channel,
//! a signalfd (SIGINT/SIGTERM: exit; SIGUSR1: disconnect everyone), the grace-period
//! timers and the keep-alive rounds ([`crate::keepalive`]). With `--state-dir`,
//! regions live in files ([`crate::store`]) and are restored at start. Every connect
//! request is authenticated first ([`crate::auth`]); a region belongs to one instance
//! of its client ([`crate::policy::ownership`]). With `--status-socket`, the loop also
//! serves the status and the metrics ([`crate::status`]) from snapshots of its state.
//!
//! This file holds the server's state and its start ([`run`]); [`connect`] the
//! handshake of a queue (admission itself is decided in [`crate::admission`], without
//! I/O), [`regions`] the life of a region (made, restored, registered, persisted, in
//! grace, freed or kept), and [`event_loop`] the loop, its events, the queues'
//! completions and keep-alive probes, and shutdown.

mod connect;
mod event_loop;
mod regions;
mod reload;

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use crate::admission::{self, Admitted, Held, Refusal};
use crate::allowlist::AllowList;
use crate::auth::{self, Decision, Gate};
use crate::config::{self, ServerConfig};
use crate::crypto::{self, Proven};
use crate::ids;
use crate::keepalive::{Probe, Reply, Round, Schedule};
use crate::log;
use crate::memory::{self, MapWarnings, RegionMemory};
use crate::notify;
use crate::os::{self, Interest, SignalFd};
use crate::pending::Pending;
use crate::policy::{Admit, Limits, Ownership, PAGE};
use crate::ratelimit::LogRate;
use crate::rdma::{CmId, Device, Event, EventChannel, EventKind, IdKey, Pd, QpCaps, RemoteRegion};
use crate::size::format_size;
use crate::status::{
    self, ClientInfo, Counters, Pool, QueueInfo, Snapshot, StatusService, StatusSocket,
};
use crate::store::{self, Meta, Store, Verdict};
use crate::wire::{
    self, ConnectRequest, RegionDescriptor, Reject, RejectCode, RejectReason, SERVER_MAC_LEN,
};

/// QP sizes of a server-side queue: one SEND (the descriptor) and one keep-alive
/// probe, no receives needed but one allowed, inline data large enough for the
/// descriptor (80 bytes since protocol version 2: a provider refuses an inline SEND
/// longer than the QP's `max_inline_data`).
const SERVER_QP: QpCaps = QpCaps {
    max_send_wr: 4,
    max_recv_wr: 1,
    max_inline: DESCRIPTOR_INLINE,
};

/// The descriptor's size as the QP's inline limit (checked to fit at compile time).
const DESCRIPTOR_INLINE: u32 = {
    assert!(RegionDescriptor::SIZE <= 256);
    RegionDescriptor::SIZE as u32
};

/// One connection (queue) of a client.
struct Queue {
    id: CmId,
    client_id: u64,
    queue_index: u16,
    peer: String,
    send_pending: bool,
    /// Keep-alive state; probed once established.
    probe: Probe,
    /// For an authenticated queue whose descriptor is not signed yet: what proves the
    /// server in it (a copy of the client's secret). Taken out, and dropped (wiped),
    /// when the descriptor is signed.
    proven: Option<Proven>,
    /// The descriptor the accept carried (the client asked for it there), until the
    /// connection is established.
    in_accept: Option<RegionDescriptor>,
}

/// A region's registration on the device its client connects through.
struct Registration {
    /// Deregistered before the PD is released (the region pins the PD anyway).
    region: RemoteRegion,
    pd: Pd,
    device: Device,
}

/// One client's region and bookkeeping.
struct Client {
    region_id: u64,
    epoch: u32,
    queue_count: u16,
    charge: u64,
    /// Registered length (what the client asked for, rounded up to 4 KiB).
    length: u64,
    /// Live queues by index.
    queues: BTreeMap<u16, IdKey>,
    /// Set while no queue is live: when the region is freed.
    grace_until: Option<Instant>,
    /// `None` only for a region restored from the state directory that no queue
    /// has connected to yet: it is registered on the device of its first queue.
    reg: Option<Registration>,
    /// The memory (pinned by the registration too).
    mem: RegionMemory,
    /// The instance of the client that owns the region; `None` only for a region
    /// restored from metadata written before owners were recorded, until the first
    /// instance admitted claims it.
    owner: Option<u64>,
    /// The last activity of one of its queues (accepted, established, descriptor
    /// delivered, keep-alive answered, disconnected); `None` for a restored region no
    /// queue has reached yet.
    last_seen: Option<Instant>,
}

impl Client {
    /// The region's descriptor, without the server's proof (zero `mac`).
    fn descriptor(&self) -> Option<RegionDescriptor> {
        let reg = self.reg.as_ref()?;
        Some(RegionDescriptor {
            flags: if self.epoch > 1 {
                RegionDescriptor::FLAG_REUSED
            } else {
                0
            },
            region_id: self.region_id,
            epoch: self.epoch,
            rkey: reg.region.rkey(),
            remote_addr: reg.region.addr(),
            length: reg.region.size() as u64,
            mac: [0; SERVER_MAC_LEN],
        })
    }

    /// What the state directory keeps about the region.
    fn meta(&self, client_id: u64) -> Meta {
        Meta {
            client_id,
            region_id: self.region_id,
            length: self.length,
            map_length: self.mem.len() as u64,
            epoch: self.epoch,
            queue_count: self.queue_count,
            instance: self.owner,
        }
    }
}

struct Server {
    cfg: ServerConfig,
    unit: u64,
    used: u64,
    queues: HashMap<IdKey, Queue>,
    /// Accepted queues not established yet, by source address (`None`: not IP).
    pending: Pending<IdKey, Option<IpAddr>>,
    clients: BTreeMap<u64, Client>,
    /// The state directory, with `--state-dir`.
    store: Option<Store>,
    listener: Option<CmId>,
    chan: EventChannel,
    /// When the next keep-alive round is due.
    keepalive: Schedule,
    /// Authentication: the allow-list and the outstanding challenges.
    gate: Gate,
    /// Events counted since the start, for the status socket.
    counters: Counters,
    /// The rate limit of the log lines of unauthenticated connect requests.
    connect_log: LogRate,
    /// When the server started (wall clock, and for the uptime).
    started: (SystemTime, Instant),
}

/// Entry point of `rswap-server`.
pub fn main() -> ExitCode {
    let parsed = config::parse_server_args(std::env::args().skip(1));
    let cfg = match config::command_line("rswap-server", parsed, config::server_command, "8") {
        Ok(cfg) => cfg,
        Err(status) => return status,
    };
    log::set_level(cfg.log_level);
    match run(cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rswap-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Reads a field of /proc/meminfo (in kB, or a plain count).
fn meminfo(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn run(cfg: ServerConfig) -> Result<(), String> {
    // Before any secret is read: no core file, no ptrace by the same user.
    os::no_core_dumps().map_err(|e| format!("cannot keep secrets out of core dumps: {e}"))?;
    // Its own allocations must never wait on the swap it serves (memory-server.md).
    let io_flusher = match os::io_flusher() {
        Ok(()) => true,
        Err(e) => {
            log::warn("io_flusher_failed")
                .kv("error", e)
                .kv(
                    "effect",
                    "the server's allocations may wait on swap it serves (needs CAP_SYS_RESOURCE)",
                )
                .emit();
            false
        }
    };
    // A bad allow-list stops the start before anything else is set up.
    let allow = match &cfg.allow_list {
        Some(path) => AllowList::load(path)?,
        None => AllowList::default(),
    };
    let mut unit = if cfg.hugepages {
        let kb = meminfo("Hugepagesize")
            .ok_or("--hugepages: cannot read Hugepagesize from /proc/meminfo")?;
        if meminfo("HugePages_Total").unwrap_or(0) == 0 {
            return Err("--hugepages: no hugepages are reserved (vm.nr_hugepages is 0)".into());
        }
        kb.saturating_mul(1024).max(PAGE)
    } else {
        PAGE
    };
    let memory_locked = if cfg.mlock {
        match memory::lock_all_memory() {
            Ok(()) => true,
            Err(e) => {
                log::warn("mlock_failed")
                    .kv("error", e)
                    .kv(
                        "effect",
                        "the server's own memory may be swapped out (raise RLIMIT_MEMLOCK)",
                    )
                    .emit();
                false
            }
        }
    } else {
        false
    };
    // Block the signals before anything could start a thread.
    let signals = SignalFd::new(&[libc::SIGINT, libc::SIGTERM, libc::SIGUSR1, libc::SIGHUP])
        .map_err(|e| format!("cannot set up signal handling: {e}"))?;
    // Before anything slow: a path that cannot be used stops the start at once. Served
    // once the loop runs; removed when `status` is dropped, on every way out of here.
    let mut status = match &cfg.status_socket {
        Some(path) => Some(StatusService::new(StatusSocket::bind(path)?)),
        None => None,
    };
    let (store, clients, used) = match &cfg.state_dir {
        Some(dir) => {
            let store = Store::open(dir)?;
            unit = regions::state_dir_unit(&store, &cfg, unit)?;
            let (clients, used) = regions::restore(&store, &cfg)?;
            (Some(store), clients, used)
        }
        None => (None, BTreeMap::new(), 0),
    };
    let chan = EventChannel::new()
        .map_err(|e| format!("cannot open rdma_cm (is the rdma_ucm module loaded?): {e}"))?;
    let mut listener = chan
        .create_id()
        .map_err(|e| format!("cannot create an rdma_cm id: {e}"))?;
    listener
        .listen(cfg.listen, 128)
        .map_err(|e| format!("cannot listen on {}: {e}", cfg.listen))?;
    let mut line = log::info("listening")
        .kv("addr", cfg.listen)
        .kv(
            "device",
            listener.device().map_or_else(|| "any".into(), |d| d.name()),
        )
        .kv("pool", format_size(cfg.size))
        .kv("max_clients", cfg.max_clients)
        .kv("max_queues", cfg.max_queues)
        .kv("max_pending_per_source", cfg.max_pending_per_source)
        .kv("grace_s", cfg.grace.as_secs())
        .kv("keepalive_ms", cfg.keepalive.as_millis())
        .kv("hugepages", cfg.hugepages)
        .kv("memory_locked", memory_locked)
        .kv("io_flusher", io_flusher);
    if let Some(path) = &cfg.allow_list {
        line = line
            .kv("allow_list", path.display())
            .kv("allow_list_clients", allow.len());
    }
    line = line.kv("insecure", cfg.insecure);
    if let Some(s) = &status {
        line = line.kv("status_socket", s.path().display());
    }
    if let Some(s) = &store {
        line = line
            .kv("state_dir", s.dir().display())
            .kv("restored", clients.len());
    }
    line.kv("version", env!("RSWAP_SERVER_VERSION")).emit();
    // Type=notify: the service is up once the listener is (and after a restore).
    notify::notify(&format!(
        "READY=1\nSTATUS=listening on {}, pool {}, {} regions restored",
        cfg.listen,
        format_size(cfg.size),
        clients.len()
    ));
    if cfg.insecure {
        log::warn("insecure")
            .kv(
                "effect",
                "clients without an allow-list entry are admitted without authentication: anyone who can reach this address may take memory and read or write the region of any client id that is not listed",
            )
            .emit();
    }
    if cfg.test_wrong_server_proof {
        log::warn("test_wrong_server_proof")
            .kv(
                "effect",
                "for tests only: every region descriptor is signed with a wrong key, so every authenticated client refuses this server",
            )
            .emit();
    }
    if is_wildcard(cfg.listen) {
        log::warn("listen_wildcard")
            .kv("addr", cfg.listen)
            .kv(
                "hint",
                "every address of this host accepts clients; give --listen the address on the RDMA network",
            )
            .emit();
    }
    let gate = Gate::new(allow, cfg.insecure);
    let keepalive = Schedule::new(cfg.keepalive, Instant::now());
    let pending = Pending::new(cfg.max_pending_per_source);
    let mut srv = Server {
        cfg,
        unit,
        used,
        queues: HashMap::new(),
        pending,
        clients,
        store,
        listener: Some(listener),
        chan,
        keepalive,
        gate,
        counters: Counters::default(),
        connect_log: LogRate::default(),
        started: (SystemTime::now(), Instant::now()),
    };
    let res = srv.event_loop(&signals, status.as_mut());
    srv.shutdown();
    res
}

/// An owner instance for the log: the number, or `unknown`.
fn instance_text(instance: Option<u64>) -> String {
    instance.map_or_else(|| "unknown".into(), |i| i.to_string())
}

/// Whether `addr` is a wildcard (`0.0.0.0`, `::`): rdma_cm then listens on every
/// RDMA-capable interface of the host.
fn is_wildcard(addr: SocketAddr) -> bool {
    addr.ip().is_unspecified()
}

impl Server {
    fn remaining(&self) -> u64 {
        self.cfg.size.saturating_sub(self.used)
    }

    /// What admission decisions depend on, now.
    fn limits(&self) -> Limits {
        Limits {
            clients: self.clients.len(),
            max_clients: self.cfg.max_clients,
            max_queues: self.cfg.max_queues,
            remaining: self.remaining(),
            unit: self.unit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_wildcard, meminfo};

    #[test]
    fn wildcard_addresses() {
        for a in ["0.0.0.0:7471", "[::]:7471", "[::]:0"] {
            assert!(is_wildcard(a.parse().unwrap()), "{a}");
        }
        for a in [
            "192.0.2.1:7471",
            "127.0.0.1:7471",
            "[::1]:7471",
            "[fe80::1%2]:7471",
        ] {
            assert!(!is_wildcard(a.parse().unwrap()), "{a}");
        }
    }

    #[test]
    fn meminfo_reads_fields() {
        // MemTotal exists on every Linux system.
        assert!(meminfo("MemTotal").is_some_and(|kb| kb > 0));
        assert_eq!(meminfo("NoSuchField"), None);
    }
}
