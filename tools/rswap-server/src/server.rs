// SPDX-License-Identifier: GPL-2.0

//! The memory server: a single-threaded poll loop over the rdma_cm event channel,
//! a signalfd (SIGINT/SIGTERM: exit; SIGUSR1: disconnect everyone) and the grace-period
//! timers.

use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::config::{self, Parsed, ServerConfig};
use crate::ids;
use crate::log;
use crate::policy::{self, Admit, Existing, Limits, PAGE};
use crate::rdma::{
    self, CmId, Device, Event, EventChannel, EventKind, IdKey, Pd, QpCaps, RemoteRegion, SignalFd,
};
use crate::size::format_size;
use crate::wire::{ConnectRequest, RegionDescriptor, RejectCode, RejectReason, WireError};

/// QP sizes of a server-side queue: one SEND (the descriptor), no receives needed
/// but one allowed, inline data large enough for the descriptor.
const SERVER_QP: QpCaps = QpCaps {
    max_send_wr: 4,
    max_recv_wr: 1,
    max_inline: 64,
};

/// RNR retries of the descriptor SEND: a client that has not posted its receive
/// gets a few retries, then the send fails and the queue is closed.
const RNR_RETRY: u8 = 6;

/// How often pending descriptor SENDs are reaped.
const SEND_POLL: Duration = Duration::from_millis(20);

/// One connection (queue) of a client.
struct Queue {
    id: CmId,
    client_id: u64,
    queue_index: u16,
    peer: String,
    send_pending: bool,
}

/// One client's region and bookkeeping.
struct Client {
    region_id: u64,
    epoch: u32,
    queue_count: u16,
    charge: u64,
    /// Live queues by index.
    queues: BTreeMap<u16, IdKey>,
    /// Set while no queue is live: when the region is freed.
    grace_until: Option<Instant>,
    /// Deregistered before the PD is released (the region pins the PD anyway).
    region: RemoteRegion,
    pd: Pd,
    device: Device,
}

impl Client {
    fn descriptor(&self) -> RegionDescriptor {
        RegionDescriptor {
            flags: if self.epoch > 1 {
                RegionDescriptor::FLAG_REUSED
            } else {
                0
            },
            region_id: self.region_id,
            epoch: self.epoch,
            rkey: self.region.rkey(),
            remote_addr: self.region.addr(),
            length: self.region.size() as u64,
        }
    }
}

struct Server {
    cfg: ServerConfig,
    unit: u64,
    used: u64,
    queues: HashMap<IdKey, Queue>,
    clients: BTreeMap<u64, Client>,
    listener: Option<CmId>,
    chan: EventChannel,
}

/// Entry point of `rswap-server`.
pub fn main() -> ExitCode {
    let cfg = match config::parse_server_args(std::env::args().skip(1)) {
        Ok(Parsed::Help) => {
            print!("{}", config::SERVER_HELP);
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Run(cfg)) => cfg,
        Err(e) => {
            eprintln!("rswap-server: {e}");
            return ExitCode::from(2);
        }
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
    let unit = if cfg.hugepages {
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
        match rdma::lock_all_memory() {
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
    let signals = SignalFd::new(&[libc::SIGINT, libc::SIGTERM, libc::SIGUSR1])
        .map_err(|e| format!("cannot set up signal handling: {e}"))?;
    let chan = EventChannel::new()
        .map_err(|e| format!("cannot open rdma_cm (is the rdma_ucm module loaded?): {e}"))?;
    let mut listener = chan
        .create_id()
        .map_err(|e| format!("cannot create an rdma_cm id: {e}"))?;
    listener
        .listen(cfg.listen, 128)
        .map_err(|e| format!("cannot listen on {}: {e}", cfg.listen))?;
    log::info("listening")
        .kv("addr", cfg.listen)
        .kv(
            "device",
            listener.device().map_or_else(|| "any".into(), |d| d.name()),
        )
        .kv("pool", format_size(cfg.size))
        .kv("max_clients", cfg.max_clients)
        .kv("grace_s", cfg.grace.as_secs())
        .kv("hugepages", cfg.hugepages)
        .kv("memory_locked", memory_locked)
        .emit();
    let mut srv = Server {
        cfg,
        unit,
        used: 0,
        queues: HashMap::new(),
        clients: BTreeMap::new(),
        listener: Some(listener),
        chan,
    };
    let res = srv.event_loop(&signals);
    srv.shutdown();
    res
}

impl Server {
    fn event_loop(&mut self, signals: &SignalFd) -> Result<(), String> {
        loop {
            let timeout = self.next_timeout();
            let ready = rdma::poll_readable(&[self.chan.fd(), signals.fd()], timeout)
                .map_err(|e| format!("poll: {e}"))?;
            if ready.get(1).copied().unwrap_or(false) {
                match signals.read().map_err(|e| format!("signalfd: {e}"))? {
                    Some(libc::SIGUSR1) => self.disconnect_all(),
                    Some(sig) => {
                        log::info("shutdown").kv("signal", sig).emit();
                        return Ok(());
                    }
                    None => {}
                }
            }
            if ready.first().copied().unwrap_or(false) {
                let ev = self.chan.get_event().map_err(|e| format!("rdma_cm: {e}"))?;
                self.handle(ev)?;
            }
            self.reap_sends();
            self.expire(Instant::now());
        }
    }

    fn next_timeout(&self) -> Option<Duration> {
        let now = Instant::now();
        let grace = self
            .clients
            .values()
            .filter_map(|c| c.grace_until)
            .min()
            .map(|t| t.saturating_duration_since(now));
        let send = self
            .queues
            .values()
            .any(|q| q.send_pending)
            .then_some(SEND_POLL);
        match (grace, send) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn remaining(&self) -> u64 {
        self.cfg.size.saturating_sub(self.used)
    }

    fn handle(&mut self, mut ev: Event) -> Result<(), String> {
        log::debug("cm_event")
            .kv("type", ev.kind.name())
            .kv("status", ev.status)
            .emit();
        let is_listener = self.listener.as_ref().map(CmId::key) == Some(ev.id);
        match ev.kind {
            EventKind::ConnectRequest => {
                let ours = self.listener.as_ref().map(CmId::key);
                if ev.listen_id.is_some() && ev.listen_id != ours {
                    log::warn("connect_request_ignored")
                        .kv("why", "not for our listener")
                        .emit();
                } else if let Some(id) = ev.new_id.take() {
                    self.on_connect_request(id, &ev);
                }
            }
            EventKind::Established => self.on_established(ev.id),
            EventKind::DeviceRemoval if is_listener => {
                return Err("the RDMA device of the listening address was removed".into());
            }
            EventKind::Disconnected
            | EventKind::ConnectError
            | EventKind::Unreachable
            | EventKind::Rejected
            | EventKind::DeviceRemoval => {
                let why = ev.kind.name();
                self.close_queue(ev.id, &why);
            }
            _ => {}
        }
        Ok(())
    }

    fn reject(&self, mut id: CmId, code: RejectCode, req: Option<&ConnectRequest>, why: &str) {
        let max_size = Limits {
            clients: self.clients.len(),
            max_clients: self.cfg.max_clients,
            remaining: self.remaining(),
            unit: self.unit,
        }
        .max_size();
        let mut buf = [0u8; RejectReason::SIZE];
        RejectReason { code, max_size }.encode(&mut buf);
        let sent = id.reject(&buf);
        let mut line = log::warn("connect_rejected")
            .kv("peer", id.peer())
            .kv("reason", code.name())
            .kv("max_size", max_size)
            .kv("why", why);
        if let Some(r) = req {
            line = line
                .kv("client_id", r.client_id)
                .kv("queue", r.queue_index)
                .kv("queue_count", r.queue_count)
                .kv("requested", r.requested_size);
        }
        if let Err(e) = sent {
            line = line.kv("error", e);
        }
        line.emit();
        // Dropping the id destroys it.
    }

    fn on_connect_request(&mut self, mut id: CmId, ev: &Event) {
        let req = match ConnectRequest::decode(&ev.private_data) {
            Ok(r) => r,
            Err(e) => {
                let (code, why) = match e {
                    WireError::BadVersion => (RejectCode::BadVersion, "unknown protocol version"),
                    WireError::BadMagic => (RejectCode::BadRequest, "bad magic"),
                    WireError::Short => (RejectCode::BadRequest, "private data too short"),
                    WireError::BadField => (RejectCode::BadRequest, "invalid field"),
                };
                return self.reject(id, code, None, why);
            }
        };
        let Some(device) = id.device() else {
            return self.reject(
                id,
                RejectCode::BadRequest,
                Some(&req),
                "no RDMA device for the connection",
            );
        };
        let existing = match self.clients.get(&req.client_id) {
            None => Existing::None,
            Some(c) if !device.same(&c.device) => {
                return self.reject(
                    id,
                    RejectCode::BadRequest,
                    Some(&req),
                    "region is on another device",
                );
            }
            Some(c) if c.queues.is_empty() => Existing::Grace {
                length: c.region.size() as u64,
            },
            Some(c) => Existing::Live {
                queue_count: c.queue_count,
                length: c.region.size() as u64,
            },
        };
        let limits = Limits {
            clients: self.clients.len(),
            max_clients: self.cfg.max_clients,
            remaining: self.remaining(),
            unit: self.unit,
        };
        let decision = match policy::admit(&req, existing, limits) {
            Ok(d) => d,
            Err(code) => {
                let why = match code {
                    RejectCode::TooLarge => "not enough memory left in the pool",
                    RejectCode::TooManyClients => "--max-clients reached",
                    RejectCode::QueueMismatch => "queue_count differs from the live queues",
                    _ => "size differs from the client's region, or invalid queue",
                };
                return self.reject(id, code, Some(&req), why);
            }
        };
        match decision {
            Admit::NewRegion { length, charge } => {
                match self.new_client(&req, &device, length, charge) {
                    Ok(c) => {
                        self.used += c.charge;
                        log::info("region_allocated")
                            .kv("client_id", req.client_id)
                            .kv("region_id", c.region_id)
                            .kv("length", c.region.size())
                            .hex("remote_addr", c.region.addr())
                            .hex("rkey", c.region.rkey().into())
                            .kv("device", device.name())
                            .kv("pool_left", self.remaining())
                            .emit();
                        self.clients.insert(req.client_id, c);
                    }
                    Err(e) => {
                        return self.reject(id, RejectCode::NoMemory, Some(&req), &e);
                    }
                }
            }
            Admit::Revive => {
                if let Some(c) = self.clients.get_mut(&req.client_id) {
                    c.epoch = c.epoch.wrapping_add(1).max(1);
                    c.queue_count = req.queue_count;
                    c.grace_until = None;
                    log::info("region_reused")
                        .kv("client_id", req.client_id)
                        .kv("region_id", c.region_id)
                        .kv("epoch", c.epoch)
                        .emit();
                }
            }
            Admit::JoinLive => {}
        }
        // A queue index that is still live is a stale connection the client has
        // already given up on: replace it.
        let stale = self
            .clients
            .get(&req.client_id)
            .and_then(|c| c.queues.get(&req.queue_index).copied());
        if let Some(old) = stale {
            self.drop_queue(old, "replaced by a new connection of the same queue");
        }
        let Some(pd) = self.clients.get(&req.client_id).map(|c| c.pd.clone()) else {
            return;
        };
        let peer = id.peer();
        if let Err(e) = id.create_qp(&pd, SERVER_QP) {
            self.reject(
                id,
                RejectCode::NoMemory,
                Some(&req),
                &format!("queue setup: {e}"),
            );
            self.grace_if_idle(req.client_id);
            return;
        }
        if let Err(e) = id.accept(ev.initiator_depth, ev.responder_resources, RNR_RETRY) {
            log::error("accept_failed")
                .kv("client_id", req.client_id)
                .kv("queue", req.queue_index)
                .kv("peer", &peer)
                .kv("error", e)
                .emit();
            drop(id);
            self.grace_if_idle(req.client_id);
            return;
        }
        let Some(client) = self.clients.get_mut(&req.client_id) else {
            return;
        };
        let key = id.key();
        client.queues.insert(req.queue_index, key);
        log::info("queue_accepted")
            .kv("client_id", req.client_id)
            .kv("queue", req.queue_index)
            .kv("queue_count", req.queue_count)
            .kv("region_id", client.region_id)
            .kv("epoch", client.epoch)
            .kv("peer", &peer)
            .emit();
        self.queues.insert(
            key,
            Queue {
                id,
                client_id: req.client_id,
                queue_index: req.queue_index,
                peer,
                send_pending: false,
            },
        );
    }

    /// A new region id: random, not 0, not one this server holds.
    fn new_region_id(&self) -> u64 {
        ids::pick_region_id(ids::random_u64, |id| {
            self.clients.values().any(|c| c.region_id == id)
        })
    }

    fn new_client(
        &self,
        req: &ConnectRequest,
        device: &Device,
        length: u64,
        charge: u64,
    ) -> Result<Client, String> {
        let len = usize::try_from(length).map_err(|_| "size does not fit in memory".to_string())?;
        let map_len =
            usize::try_from(charge).map_err(|_| "size does not fit in memory".to_string())?;
        let pd = Pd::new(device).map_err(|e| format!("protection domain: {e}"))?;
        let region = RemoteRegion::new(&pd, len, map_len, self.cfg.hugepages).map_err(|e| {
            log::error("region_alloc_failed")
                .kv("client_id", req.client_id)
                .kv("length", length)
                .kv("error", &e)
                .emit();
            format!("region: {e}")
        })?;
        Ok(Client {
            region_id: self.new_region_id(),
            epoch: 1,
            queue_count: req.queue_count,
            charge,
            queues: BTreeMap::new(),
            grace_until: None,
            region,
            pd,
            device: device.clone(),
        })
    }

    fn on_established(&mut self, key: IdKey) {
        let Some(q) = self.queues.get_mut(&key) else {
            return;
        };
        let Some(c) = self.clients.get(&q.client_id) else {
            return;
        };
        let desc = c.descriptor();
        let mut buf = [0u8; RegionDescriptor::SIZE];
        desc.encode(&mut buf);
        match q.id.post_send_inline(&buf) {
            Ok(()) => {
                q.send_pending = true;
                log::info("descriptor_posted")
                    .kv("client_id", q.client_id)
                    .kv("queue", q.queue_index)
                    .kv("region_id", desc.region_id)
                    .kv("epoch", desc.epoch)
                    .hex("rkey", desc.rkey.into())
                    .hex("remote_addr", desc.remote_addr)
                    .kv("length", desc.length)
                    .kv("reused", u8::from(desc.reused()))
                    .emit();
            }
            Err(e) => {
                log::error("descriptor_send_failed")
                    .kv("client_id", q.client_id)
                    .kv("queue", q.queue_index)
                    .kv("error", e)
                    .emit();
                self.close_queue(key, "descriptor send failed");
            }
        }
    }

    fn reap_sends(&mut self) {
        let mut failed = Vec::new();
        for (key, q) in self.queues.iter_mut().filter(|(_, q)| q.send_pending) {
            match q.id.poll() {
                Ok(Some(c)) if c.is_send => {
                    q.send_pending = false;
                    if c.ok {
                        log::debug("descriptor_delivered")
                            .kv("client_id", q.client_id)
                            .kv("queue", q.queue_index)
                            .emit();
                    } else {
                        log::warn("descriptor_not_delivered")
                            .kv("client_id", q.client_id)
                            .kv("queue", q.queue_index)
                            .kv("status", c.status)
                            .emit();
                        failed.push(*key);
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    q.send_pending = false;
                    log::error("poll_cq_failed").kv("error", e).emit();
                    failed.push(*key);
                }
            }
        }
        for key in failed {
            self.close_queue(key, "descriptor SEND failed");
        }
    }

    /// Removes a queue from its client (starting the grace period if it was the
    /// last one), disconnects and destroys it.
    fn close_queue(&mut self, key: IdKey, why: &str) {
        if let Some(client_id) = self.drop_queue(key, why) {
            self.grace_if_idle(client_id);
        }
    }

    /// Starts the grace period of a client that has no live queue (and none running).
    fn grace_if_idle(&mut self, client_id: u64) {
        if self
            .clients
            .get(&client_id)
            .is_some_and(|c| c.queues.is_empty() && c.grace_until.is_none())
        {
            self.start_grace(client_id);
        }
    }

    /// Like close_queue, without starting the grace period. Returns the client id.
    fn drop_queue(&mut self, key: IdKey, why: &str) -> Option<u64> {
        let mut q = self.queues.remove(&key)?;
        if let Some(c) = self.clients.get_mut(&q.client_id) {
            if c.queues.get(&q.queue_index) == Some(&key) {
                c.queues.remove(&q.queue_index);
            }
        }
        // Errors here only mean the connection is already down.
        let _ = q.id.disconnect();
        log::info("queue_closed")
            .kv("client_id", q.client_id)
            .kv("queue", q.queue_index)
            .kv("peer", &q.peer)
            .kv("why", why)
            .emit();
        Some(q.client_id)
    }

    fn start_grace(&mut self, client_id: u64) {
        let grace = self.cfg.grace;
        if let Some(c) = self.clients.get_mut(&client_id) {
            c.grace_until = Some(Instant::now() + grace);
            log::info("client_idle")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("epoch", c.epoch)
                .kv("grace_s", grace.as_secs())
                .emit();
        }
    }

    fn expire(&mut self, now: Instant) {
        let due: Vec<u64> = self
            .clients
            .iter()
            .filter(|(_, c)| c.grace_until.is_some_and(|t| t <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.free_client(id, "grace period over");
        }
    }

    fn free_client(&mut self, client_id: u64, why: &str) {
        if let Some(c) = self.clients.remove(&client_id) {
            self.used = self.used.saturating_sub(c.charge);
            log::info("region_freed")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("length", c.region.size())
                .kv("why", why)
                .kv("pool_left", self.remaining())
                .emit();
            // Dropping deregisters the MR, unmaps the memory and frees the PD.
        }
    }

    /// SIGUSR1: closes every queue but keeps every region for its grace period, so
    /// clients reconnect and find their data (maintenance, and the clients' recovery
    /// tests).
    fn disconnect_all(&mut self) {
        let keys: Vec<IdKey> = self.queues.keys().copied().collect();
        log::info("disconnect_all").kv("queues", keys.len()).emit();
        for key in keys {
            self.close_queue(key, "SIGUSR1");
        }
    }

    fn shutdown(&mut self) {
        // Stop accepting first, then close every queue, then free every region.
        self.listener = None;
        let keys: Vec<IdKey> = self.queues.keys().copied().collect();
        for key in keys {
            self.drop_queue(key, "server shutdown");
        }
        let ids: Vec<u64> = self.clients.keys().copied().collect();
        for id in ids {
            self.free_client(id, "server shutdown");
        }
        log::info("stopped").emit();
    }
}

#[cfg(test)]
mod tests {
    use super::meminfo;

    #[test]
    fn meminfo_reads_fields() {
        // MemTotal exists on every Linux system.
        assert!(meminfo("MemTotal").is_some_and(|kb| kb > 0));
        assert_eq!(meminfo("NoSuchField"), None);
    }
}
