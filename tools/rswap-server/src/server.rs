// SPDX-License-Identifier: GPL-2.0

//! The memory server: a single-threaded poll loop over the rdma_cm event channel,
//! a signalfd (SIGINT/SIGTERM: exit; SIGUSR1: disconnect everyone), the grace-period
//! timers and the keep-alive rounds ([`crate::keepalive`]). With `--state-dir`,
//! regions live in files ([`crate::store`]) and are restored at start. Every connect
//! request is authenticated first ([`crate::auth`]); a region belongs to one instance
//! of its client ([`policy::ownership`]). With `--status-socket`, the loop also serves
//! the status and the metrics ([`crate::status`]) from snapshots of its state.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use crate::admission::{self, Admitted, Held, Refusal};
use crate::allowlist::AllowList;
use crate::auth::{self, Decision, Gate};
use crate::config::{self, Parsed, ServerConfig};
use crate::crypto::{self, Proven};
use crate::ids;
use crate::keepalive::{Probe, Reply, Round, Schedule};
use crate::log;
use crate::memory::{self, MapWarnings, RegionMemory};
use crate::notify;
use crate::os::{self, Interest, SignalFd};
use crate::pending::Pending;
use crate::policy::{Admit, Limits, Ownership, PAGE};
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

/// RNR retries of the descriptor SEND: a client that has not posted its receive
/// gets a few retries, then the send fails and the queue is closed.
const RNR_RETRY: u8 = 6;

/// How often pending descriptor SENDs are reaped.
const SEND_POLL: Duration = Duration::from_millis(20);

/// `why=` of a queue closed because its keep-alive probe did not complete in time.
const WHY_KEEPALIVE_TIMEOUT: &str = status::snapshot::KEEPALIVE_TIMEOUT;
/// `why=` of a queue closed because its keep-alive probe failed (or could not be posted).
const WHY_KEEPALIVE_FAILED: &str = status::snapshot::KEEPALIVE_FAILED;

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
}

/// Why a queue is to be closed: the `why=` of its `queue_closed` line and one more
/// key and value, if any.
struct Closing {
    why: &'static str,
    detail: Option<(&'static str, String)>,
}

/// What draining a queue's completions found.
struct Reaped {
    /// Why the queue must be closed, if it must (the first reason).
    closing: Option<Closing>,
    /// The peer acknowledged something (the descriptor, a probe): it was seen.
    seen: bool,
}

impl Queue {
    /// Drains the queue's completions (its descriptor SEND and keep-alive probes).
    fn reap(&mut self) -> Reaped {
        let mut closing = None;
        let mut seen = false;
        // At most the SEND and one probe are outstanding; the bound only keeps a
        // misbehaving CQ from holding up the loop.
        for _ in 0..SERVER_QP.max_send_wr + SERVER_QP.max_recv_wr {
            let c = match self.id.poll() {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => {
                    self.send_pending = false;
                    self.probe.close();
                    log::error("poll_cq_failed")
                        .kv("client_id", self.client_id)
                        .kv("queue", self.queue_index)
                        .kv("error", &e)
                        .emit();
                    return Reaped {
                        closing: closing.or(Some(Closing {
                            why: "ibv_poll_cq failed",
                            detail: Some(("error", e.to_string())),
                        })),
                        seen,
                    };
                }
            };
            if c.is_send {
                self.send_pending = false;
                if c.ok {
                    seen = true;
                    log::debug("descriptor_delivered")
                        .kv("client_id", self.client_id)
                        .kv("queue", self.queue_index)
                        .emit();
                } else {
                    log::warn("descriptor_not_delivered")
                        .kv("client_id", self.client_id)
                        .kv("queue", self.queue_index)
                        .kv("status", &c.status)
                        .emit();
                    // A probe behind the SEND is flushed: not a second reason.
                    self.probe.close();
                    closing.get_or_insert(Closing {
                        why: "descriptor SEND failed",
                        detail: None,
                    });
                }
            } else if c.is_probe {
                match self.probe.completed(c.ok) {
                    Reply::Alive => {
                        seen = true;
                        log::debug("keepalive_ok")
                            .kv("client_id", self.client_id)
                            .kv("queue", self.queue_index)
                            .emit();
                    }
                    Reply::Dead => {
                        closing.get_or_insert(Closing {
                            why: WHY_KEEPALIVE_FAILED,
                            detail: Some(("status", c.status)),
                        });
                    }
                    Reply::Ignore => log::debug("keepalive_ignored")
                        .kv("client_id", self.client_id)
                        .kv("queue", self.queue_index)
                        .kv("status", &c.status)
                        .emit(),
                }
            }
        }
        Reaped { closing, seen }
    }
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
    /// When the server started (wall clock, and for the uptime).
    started: (SystemTime, Instant),
}

/// Entry point of `rswap-server`.
pub fn main() -> ExitCode {
    let cfg = match config::parse_server_args(std::env::args().skip(1)) {
        Ok(Parsed::Help(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Generate(dir)) => {
            return match config::generate(config::server_command(), "8", &dir) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("rswap-server: {e}");
                    ExitCode::FAILURE
                }
            };
        }
        Ok(Parsed::Version) => {
            println!("{}", config::version_line("rswap-server"));
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
    // First: a bad allow-list stops the start before anything else is set up.
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
    let signals = SignalFd::new(&[libc::SIGINT, libc::SIGTERM, libc::SIGUSR1])
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
            unit = state_dir_unit(&store, &cfg, unit)?;
            let (clients, used) = restore(&store, &cfg)?;
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
        .kv("memory_locked", memory_locked);
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
    line.emit();
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
        started: (SystemTime::now(), Instant::now()),
    };
    let res = srv.event_loop(&signals, status.as_mut());
    srv.shutdown();
    res
}

/// `desc` as queue of `client_id` is sent it: with the server's proof for a proven
/// client (made with a wrong key if `wrong_key`, for `--test-wrong-server-proof`),
/// unsigned (zeros) for the others. `proven` is dropped, and its secret wiped, here.
fn sign_descriptor(
    proven: Option<Proven>,
    wrong_key: bool,
    client_id: u64,
    desc: RegionDescriptor,
) -> RegionDescriptor {
    match proven {
        Some(p) if wrong_key => p.with_wrong_key().sign(client_id, desc),
        Some(p) => p.sign(client_id, desc),
        None => desc,
    }
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

/// Logs what did not take on a region's new mapping; the region is served anyway.
fn log_map_warnings(w: MapWarnings, client_id: u64, region_id: u64) {
    if let Some(e) = w.dont_dump {
        log::warn("region_dontdump_failed")
            .kv("client_id", client_id)
            .kv("region_id", region_id)
            .kv("errno", e.raw_os_error().unwrap_or(0))
            .kv("error", e)
            .kv(
                "effect",
                "the region's memory may appear in a core dump of the server",
            )
            .emit();
    }
    if let Some(e) = w.lock {
        log::warn("region_mlock_failed")
            .kv("client_id", client_id)
            .kv("region_id", region_id)
            .kv("error", e)
            .emit();
    }
}

/// Maps a region's memory file (`--state-dir`), locked unless `mlock` is false, and
/// excluded from core dumps; a lock or advice that fails is logged, not fatal (as
/// for the process's own memory).
fn map_region_file(
    file: &std::fs::File,
    map_len: usize,
    mlock: bool,
    client_id: u64,
    region_id: u64,
) -> std::io::Result<RegionMemory> {
    let (mem, warnings) = RegionMemory::shared(file, map_len, mlock)?;
    log_map_warnings(warnings, client_id, region_id);
    Ok(mem)
}

/// Checks the state directory's file system against `--hugepages` and returns
/// the allocation unit: a file on hugetlbfs is made of its hugepages.
fn state_dir_unit(store: &Store, cfg: &ServerConfig, unit: u64) -> Result<u64, String> {
    let (magic, block) = store.fs_type();
    let dir = store.dir().display();
    match (magic == store::HUGETLBFS_MAGIC, cfg.hugepages) {
        (true, true) => return Ok(block.max(PAGE)),
        (true, false) => {
            return Err(format!(
                "--state-dir: {dir} is on hugetlbfs: add --hugepages"
            ))
        }
        (false, true) => {
            return Err(format!(
                "--hugepages with --state-dir needs the directory on hugetlbfs; {dir} is not"
            ))
        }
        (false, false) => {}
    }
    if magic != store::TMPFS_MAGIC && magic != store::RAMFS_MAGIC {
        log::warn("state_dir_not_tmpfs")
            .kv("dir", &dir)
            .hex("fs_magic", magic)
            .kv(
                "effect",
                "regions are files on a disk file system; ibv_reg_mr may refuse them",
            )
            .emit();
    }
    Ok(unit)
}

/// Scans the state directory: deletes what is incomplete or inconsistent, maps
/// every complete region and starts its grace period. Returns the regions by
/// client id and the pool bytes they take.
fn restore(store: &Store, cfg: &ServerConfig) -> Result<(BTreeMap<u64, Client>, u64), String> {
    let dir = store.dir().display();
    let verdicts = store
        .scan()
        .map_err(|e| format!("--state-dir: cannot read {dir}: {e}"))?;
    let mut clients = BTreeMap::new();
    let mut used: u64 = 0;
    let grace_until = Instant::now() + cfg.grace;
    for v in verdicts {
        match v {
            Verdict::Ignore { name, why } => {
                log::warn("state_file_ignored")
                    .kv("file", name)
                    .kv("why", why)
                    .emit();
            }
            Verdict::Discard {
                region_id,
                files,
                why,
            } => {
                let res = store.remove_files(&files);
                let mut line = log::warn("region_discarded")
                    .kv("region_id", region_id)
                    .kv("files", files.join(","))
                    .kv("why", why);
                if let Err(e) = res {
                    line = line.kv("error", e);
                }
                line.emit();
            }
            Verdict::Restore(meta) => {
                let cannot = |e: &dyn std::fmt::Display| {
                    format!(
                        "--state-dir: cannot restore region {} of client {} in {dir}: {e}",
                        meta.region_id, meta.client_id
                    )
                };
                let file = store
                    .open_memory(meta.region_id, meta.map_length)
                    .map_err(|e| cannot(&e))?;
                let map_len = usize::try_from(meta.map_length).map_err(|e| cannot(&e))?;
                let mem =
                    map_region_file(&file, map_len, cfg.mlock, meta.client_id, meta.region_id)
                        .map_err(|e| cannot(&e))?;
                used = used.saturating_add(meta.map_length);
                log::info("region_restored")
                    .kv("client_id", meta.client_id)
                    .kv("region_id", meta.region_id)
                    .kv("length", meta.length)
                    .kv("epoch", meta.epoch)
                    .kv("instance", instance_text(meta.instance))
                    .kv("grace_s", cfg.grace.as_secs())
                    .kv("pool_left", cfg.size.saturating_sub(used))
                    .emit();
                clients.insert(
                    meta.client_id,
                    Client {
                        region_id: meta.region_id,
                        epoch: meta.epoch,
                        queue_count: meta.queue_count,
                        charge: meta.map_length,
                        length: meta.length,
                        queues: BTreeMap::new(),
                        grace_until: Some(grace_until),
                        reg: None,
                        mem,
                        owner: meta.instance,
                        last_seen: None,
                    },
                );
            }
        }
    }
    if used > cfg.size || clients.len() > cfg.max_clients {
        log::warn("pool_overcommitted")
            .kv("restored", clients.len())
            .kv("restored_bytes", used)
            .kv("pool", cfg.size)
            .kv("max_clients", cfg.max_clients)
            .kv(
                "effect",
                "new clients are refused until enough restored regions are freed",
            )
            .emit();
    }
    Ok((clients, used))
}

impl Server {
    fn event_loop(
        &mut self,
        signals: &SignalFd,
        mut status: Option<&mut StatusService>,
    ) -> Result<(), String> {
        loop {
            let mut fds = vec![
                (self.chan.fd(), Interest::Read),
                (signals.fd(), Interest::Read),
            ];
            let mut timeout = self.next_timeout();
            if let Some(st) = status.as_deref() {
                fds.extend(st.poll_fds());
                if let Some(t) = st.deadline() {
                    let left = t.saturating_duration_since(Instant::now());
                    timeout = Some(timeout.map_or(left, |d| d.min(left)));
                }
            }
            let ready = os::poll_fds(&fds, timeout).map_err(|e| format!("poll: {e}"))?;
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
            // Completions first: a probe that completed by now is not overdue.
            self.reap_completions();
            self.keepalive_round(Instant::now());
            self.expire(Instant::now());
            // Last: the state answered is the state after this wake-up's work.
            if let Some(st) = status.as_deref_mut() {
                let now = Instant::now();
                let status_ready = ready.iter().skip(2).any(|&r| r);
                if status_ready || st.deadline().is_some_and(|t| t <= now) {
                    st.service(now, &mut || self.snapshot(Instant::now()));
                }
            }
        }
    }

    /// The state as the status socket reports it.
    fn snapshot(&self, now: Instant) -> Snapshot {
        let clients = self
            .clients
            .iter()
            .map(|(&client_id, c)| ClientInfo {
                client_id,
                region_id: c.region_id,
                length: c.length,
                epoch: c.epoch,
                queue_count: c.queue_count,
                queues: c
                    .queues
                    .iter()
                    .map(|(&index, key)| QueueInfo {
                        index,
                        peer: self
                            .queues
                            .get(key)
                            .map_or_else(|| "?".into(), |q| q.peer.clone()),
                    })
                    .collect(),
                grace_left: c.grace_until.map(|t| t.saturating_duration_since(now)),
                last_seen: c.last_seen.map(|t| now.saturating_duration_since(t)),
                owner: c.owner,
            })
            .collect();
        Snapshot {
            version: env!("CARGO_PKG_VERSION"),
            wire_version: wire::VERSION,
            listen: self.cfg.listen.to_string(),
            started: self.started.0,
            uptime: now.saturating_duration_since(self.started.1),
            pool: Pool {
                size: self.cfg.size,
                used: self.used,
                max_clients: self.cfg.max_clients,
            },
            queues: self.queues.len(),
            clients,
            counters: self.counters.clone(),
        }
    }

    /// Client `client_id` showed activity on one of its queues.
    fn seen(&mut self, client_id: u64) {
        if let Some(c) = self.clients.get_mut(&client_id) {
            c.last_seen = Some(Instant::now());
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
        // Rounds only matter while there are queues; a round missed meanwhile runs
        // at the next wake-up and finds nothing to probe.
        let keepalive = self
            .keepalive
            .deadline()
            .filter(|_| !self.queues.is_empty())
            .map(|t| t.saturating_duration_since(now));
        [grace, send, keepalive].into_iter().flatten().min()
    }

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
                // A peer that disconnects was there.
                if matches!(ev.kind, EventKind::Disconnected) {
                    if let Some(client_id) = self.queues.get(&ev.id).map(|q| q.client_id) {
                        self.seen(client_id);
                    }
                }
                let why = ev.kind.name();
                self.close_queue(ev.id, &why);
            }
            _ => {}
        }
        Ok(())
    }

    /// Answers with `refusal` (see `admission.rs`).
    fn refuse(&mut self, id: CmId, req: Option<&ConnectRequest>, refusal: Refusal) {
        let Refusal {
            version,
            code,
            why,
            detail,
        } = refusal;
        self.reject_as(id, version, code, req, &why, &detail);
    }

    fn reject(&mut self, id: CmId, code: RejectCode, req: Option<&ConnectRequest>, why: &str) {
        self.reject_as(id, wire::VERSION, code, req, why, &[]);
    }

    /// Rejects with `code` in a reject of protocol `version`, and logs it with `why`
    /// and `detail` (never a secret).
    fn reject_as(
        &mut self,
        mut id: CmId,
        version: u16,
        code: RejectCode,
        req: Option<&ConnectRequest>,
        why: &str,
        detail: &[(&str, String)],
    ) {
        // What the pool has left is nobody's business until they authenticated.
        let max_size = match code {
            RejectCode::AuthFailed | RejectCode::AuthRequired => 0,
            _ => self.limits().max_size(),
        };
        let mut buf = [0u8; RejectReason::SIZE];
        RejectReason { code, max_size }.encode_as(version, &mut buf);
        let sent = id.reject(&buf);
        self.counters.rejected(code);
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
                .kv("requested", r.requested_size)
                .kv("auth", auth::kind_name(&r.auth));
        }
        for (k, v) in detail {
            line = line.kv(k, v);
        }
        if let Err(e) = sent {
            line = line.kv("error", e);
        }
        line.emit();
        // Dropping the id destroys it.
    }

    /// Answers a hello with a challenge: a reject carrying the server nonce. No QP is
    /// made and nothing of any region is sent.
    fn challenge(&mut self, mut id: CmId, req: &ConnectRequest, server_nonce: u64, evicted: usize) {
        let mut buf = [0u8; Reject::SIZE];
        Reject::encode_challenge(server_nonce, &mut buf);
        let sent = id.reject(&buf);
        self.counters.challenges += 1;
        let mut line = log::info("auth_challenge")
            .kv("peer", id.peer())
            .kv("client_id", req.client_id)
            .kv("queue", req.queue_index)
            .kv("queue_count", req.queue_count)
            .kv("requested", req.requested_size);
        if let wire::Auth::Hello { instance, .. } = req.auth {
            line = line.kv("instance", instance);
        }
        line = line.kv("outstanding", self.gate.outstanding());
        if evicted > 0 {
            line = line.kv("evicted", evicted);
        }
        if let Err(e) = sent {
            line = line.kv("error", e);
        }
        line.emit();
    }

    fn on_connect_request(&mut self, id: CmId, ev: &Event) {
        let key = id.key();
        self.connect_request(id, ev);
        // Every path that did not make the connection a queue has rejected or
        // destroyed it by now: it is not pending any more. A queue stays pending
        // until ESTABLISHED (on_established) or until it is dropped (drop_queue).
        if !self.queues.contains_key(&key) {
            self.pending.end(&key);
        }
    }

    fn connect_request(&mut self, mut id: CmId, ev: &Event) {
        let req = match admission::parse(&ev.private_data) {
            Ok(r) => r,
            Err(r) => return self.refuse(id, None, r),
        };
        // Before anything is allocated for the request.
        if let Err(at) = self.pending.start(id.key(), id.peer_ip()) {
            return self.refuse(id, Some(&req), admission::too_many_pending(at.pending));
        }
        // Authentication, before anything about regions is looked at.
        let (instance, proven) =
            match self
                .gate
                .check(&req, id.peer_ip(), Instant::now(), crypto::random_u64)
            {
                Decision::Challenge {
                    server_nonce,
                    evicted,
                } => return self.challenge(id, &req, server_nonce, evicted),
                Decision::Refuse { code, why } => {
                    return self.refuse(id, Some(&req), Refusal::new(code, why));
                }
                Decision::Admit { instance, proven } => (instance, proven),
            };
        let device = id.device();
        let held = self.clients.get(&req.client_id).map(|c| Held {
            owner: c.owner,
            other_device: c
                .reg
                .as_ref()
                .zip(device.as_ref())
                .is_some_and(|(r, d)| !d.same(&r.device)),
            live: !c.queues.is_empty(),
            queue_count: c.queue_count,
            length: c.length,
        });
        let held = held.as_ref();
        let (Admitted { admit, ownership }, device) =
            match admission::admit(&req, instance, held, device, self.limits()) {
                Ok(a) => a,
                Err(r) => return self.refuse(id, Some(&req), r),
            };
        match admit {
            Admit::NewRegion { length, charge } => {
                match self.new_client(&req, instance, &device, length, charge) {
                    Ok(c) => {
                        self.used += c.charge;
                        self.counters.regions_allocated += 1;
                        log::info("region_allocated")
                            .kv("client_id", req.client_id)
                            .kv("region_id", c.region_id)
                            .kv("length", c.length)
                            .hex("remote_addr", c.mem.addr())
                            .hex("rkey", c.reg.as_ref().map_or(0, |r| r.region.rkey()).into())
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
                if let Err(e) = self.register_restored(req.client_id, &device) {
                    return self.reject(id, RejectCode::NoMemory, Some(&req), &e);
                }
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
                self.persist(req.client_id);
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
            self.drop_queue(old, "replaced by a new connection of the same queue", None);
        }
        let Some(pd) = self
            .clients
            .get(&req.client_id)
            .and_then(|c| c.reg.as_ref())
            .map(|r| r.pd.clone())
        else {
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
        client.last_seen = Some(Instant::now());
        let claimed = ownership == Ownership::Claim && client.owner.is_none();
        if claimed {
            client.owner = Some(instance);
            log::info("region_claimed")
                .kv("client_id", req.client_id)
                .kv("region_id", client.region_id)
                .kv("instance", instance)
                .emit();
        }
        self.counters.connects_accepted += 1;
        log::info("queue_accepted")
            .kv("client_id", req.client_id)
            .kv("queue", req.queue_index)
            .kv("queue_count", req.queue_count)
            .kv("region_id", client.region_id)
            .kv("epoch", client.epoch)
            .kv("instance", instance)
            .kv("auth", if proven.is_some() { "proof" } else { "none" })
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
                probe: Probe::default(),
                proven,
            },
        );
        if claimed {
            self.persist(req.client_id);
        }
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
        instance: u64,
        device: &Device,
        length: u64,
        charge: u64,
    ) -> Result<Client, String> {
        let len = usize::try_from(length).map_err(|_| "size does not fit in memory".to_string())?;
        let map_len =
            usize::try_from(charge).map_err(|_| "size does not fit in memory".to_string())?;
        let pd = Pd::new(device).map_err(|e| format!("protection domain: {e}"))?;
        let failed = |e: &dyn std::fmt::Display| {
            log::error("region_alloc_failed")
                .kv("client_id", req.client_id)
                .kv("length", length)
                .kv("error", e)
                .emit();
            format!("region: {e}")
        };
        let (region_id, mem, region) = match &self.store {
            None => {
                let region_id = self.new_region_id();
                let (mem, warnings) = RegionMemory::anon(map_len.max(len), self.cfg.hugepages)
                    .map_err(|e| failed(&e))?;
                log_map_warnings(warnings, req.client_id, region_id);
                let region = RemoteRegion::new(&pd, &mem, len).map_err(|e| failed(&e))?;
                (region_id, mem, region)
            }
            Some(store) => {
                // O_EXCL: an id whose files are still on disk is never reused.
                let mut tries = 0;
                let (region_id, file) = loop {
                    let id = self.new_region_id();
                    match store.create_memory(id, charge) {
                        Ok(f) => break (id, f),
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => {
                            tries += 1;
                        }
                        Err(e) => return Err(failed(&format_args!("state dir: {e}"))),
                    }
                };
                let made = (|| {
                    let mem =
                        map_region_file(&file, map_len, self.cfg.mlock, req.client_id, region_id)?;
                    let region = RemoteRegion::new(&pd, &mem, len)?;
                    let meta = Meta {
                        client_id: req.client_id,
                        region_id,
                        length,
                        map_length: charge,
                        epoch: 1,
                        queue_count: req.queue_count,
                        instance: Some(instance),
                    };
                    store
                        .write_meta(&meta)
                        .map_err(|e| std::io::Error::new(e.kind(), format!("state dir: {e}")))?;
                    Ok::<_, std::io::Error>((mem, region))
                })();
                match made {
                    Ok((mem, region)) => (region_id, mem, region),
                    Err(e) => {
                        let _ = store.remove_region(region_id);
                        return Err(failed(&e));
                    }
                }
            }
        };
        Ok(Client {
            region_id,
            epoch: 1,
            queue_count: req.queue_count,
            charge,
            length,
            queues: BTreeMap::new(),
            grace_until: None,
            reg: Some(Registration {
                region,
                pd,
                device: device.clone(),
            }),
            mem,
            owner: Some(instance),
            last_seen: None,
        })
    }

    /// Registers a restored region on `device` (its first queue's) if it is not
    /// registered yet.
    fn register_restored(&mut self, client_id: u64, device: &Device) -> Result<(), String> {
        let Some(c) = self.clients.get_mut(&client_id) else {
            return Ok(());
        };
        if c.reg.is_some() {
            return Ok(());
        }
        let len =
            usize::try_from(c.length).map_err(|_| "size does not fit in memory".to_string())?;
        let pd = Pd::new(device).map_err(|e| format!("protection domain: {e}"))?;
        let region = RemoteRegion::new(&pd, &c.mem, len).map_err(|e| {
            log::error("region_alloc_failed")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("length", c.length)
                .kv("error", &e)
                .emit();
            format!("region: {e}")
        })?;
        log::info("region_registered")
            .kv("client_id", client_id)
            .kv("region_id", c.region_id)
            .kv("length", c.length)
            .hex("remote_addr", c.mem.addr())
            .hex("rkey", region.rkey().into())
            .kv("device", device.name())
            .emit();
        c.reg = Some(Registration {
            region,
            pd,
            device: device.clone(),
        });
        Ok(())
    }

    /// Writes a client's metadata to the state directory (if there is one).
    fn persist(&self, client_id: u64) {
        let (Some(store), Some(c)) = (&self.store, self.clients.get(&client_id)) else {
            return;
        };
        if let Err(e) = store.write_meta(&c.meta(client_id)) {
            log::error("state_write_failed")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("error", e)
                .emit();
        }
    }

    fn on_established(&mut self, key: IdKey) {
        self.pending.end(&key);
        let Some(client_id) = self.queues.get(&key).map(|q| q.client_id) else {
            return;
        };
        self.seen(client_id);
        let Some(desc) = self.clients.get(&client_id).and_then(Client::descriptor) else {
            self.close_queue(key, "region not registered");
            return;
        };
        let Some(q) = self.queues.get_mut(&key) else {
            return;
        };
        // An authenticated client gets the server's proof; the others zeros. The secret
        // is not needed after this: it leaves the queue here.
        let proven = q.proven.is_some();
        let wrong_key = proven && self.cfg.test_wrong_server_proof;
        let desc = sign_descriptor(q.proven.take(), wrong_key, client_id, desc);
        let mut buf = [0u8; RegionDescriptor::SIZE];
        desc.encode(&mut buf);
        match q.id.post_send_inline(&buf) {
            Ok(()) => {
                q.send_pending = true;
                q.probe.established();
                let mut line = log::info("descriptor_posted")
                    .kv("client_id", q.client_id)
                    .kv("queue", q.queue_index)
                    .kv("region_id", desc.region_id)
                    .kv("epoch", desc.epoch)
                    .hex("rkey", desc.rkey.into())
                    .hex("remote_addr", desc.remote_addr)
                    .kv("length", desc.length)
                    .kv("reused", u8::from(desc.reused()))
                    .kv("proof", u8::from(proven));
                if wrong_key {
                    line = line.kv("proof_key", "wrong");
                }
                line.emit();
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

    /// Reaps the completions of every queue that has work outstanding and closes
    /// the queues whose descriptor SEND or keep-alive probe failed.
    fn reap_completions(&mut self) {
        let mut dead: Vec<(IdKey, Closing)> = Vec::new();
        let mut seen: Vec<u64> = Vec::new();
        for (key, q) in self
            .queues
            .iter_mut()
            .filter(|(_, q)| q.send_pending || q.probe.outstanding())
        {
            let r = q.reap();
            if r.seen {
                seen.push(q.client_id);
            }
            if let Some(c) = r.closing {
                dead.push((*key, c));
            }
        }
        for client_id in seen {
            self.seen(client_id);
        }
        for (key, c) in dead {
            self.close_queue_with(key, c.why, c.detail);
        }
    }

    /// A keep-alive round, if one is due: closes every queue whose previous probe
    /// has not completed and posts a new probe on every other established queue.
    fn keepalive_round(&mut self, now: Instant) {
        if !self.keepalive.due(now) {
            return;
        }
        let period_ms = self.cfg.keepalive.as_millis().to_string();
        let mut dead = Vec::new();
        for (key, q) in &mut self.queues {
            match q.probe.round() {
                Round::Skip => {}
                Round::Dead => dead.push((
                    *key,
                    Closing {
                        why: WHY_KEEPALIVE_TIMEOUT,
                        detail: Some(("keepalive_ms", period_ms.clone())),
                    },
                )),
                Round::Post => {
                    if let Err(e) = q.id.post_rdma_write_zero() {
                        q.probe.close();
                        dead.push((
                            *key,
                            Closing {
                                why: WHY_KEEPALIVE_FAILED,
                                detail: Some(("error", e.to_string())),
                            },
                        ));
                    }
                }
            }
        }
        for (key, c) in dead {
            self.close_queue_with(key, c.why, c.detail);
        }
    }

    /// Removes a queue from its client (starting the grace period if it was the
    /// last one), disconnects and destroys it.
    fn close_queue(&mut self, key: IdKey, why: &str) {
        self.close_queue_with(key, why, None);
    }

    /// Like close_queue, with one more key and value for the `queue_closed` line.
    fn close_queue_with(&mut self, key: IdKey, why: &str, detail: Option<(&str, String)>) {
        if let Some(client_id) = self.drop_queue(key, why, detail) {
            self.counters.queue_closed(why);
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

    /// Like close_queue_with, without starting the grace period. Returns the
    /// client id, or `None` when the queue is already gone (then nothing is logged).
    fn drop_queue(&mut self, key: IdKey, why: &str, detail: Option<(&str, String)>) -> Option<u64> {
        self.pending.end(&key);
        let mut q = self.queues.remove(&key)?;
        if let Some(c) = self.clients.get_mut(&q.client_id) {
            if c.queues.get(&q.queue_index) == Some(&key) {
                c.queues.remove(&q.queue_index);
            }
        }
        // Errors here only mean the connection is already down.
        let _ = q.id.disconnect();
        let mut line = log::info("queue_closed")
            .kv("client_id", q.client_id)
            .kv("queue", q.queue_index)
            .kv("peer", &q.peer)
            .kv("why", why);
        if let Some((k, v)) = detail {
            line = line.kv(k, v);
        }
        line.emit();
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
            self.counters.regions_freed += 1;
            log::info("region_freed")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("length", c.length)
                .kv("why", why)
                .kv("pool_left", self.remaining())
                .emit();
            let region_id = c.region_id;
            // Dropping deregisters the MR, unmaps the memory and frees the PD.
            drop(c);
            if let Some(store) = &self.store {
                if let Err(e) = store.remove_region(region_id) {
                    log::error("state_remove_failed")
                        .kv("client_id", client_id)
                        .kv("region_id", region_id)
                        .kv("error", e)
                        .emit();
                }
            }
        }
    }

    /// With `--state-dir`, at shutdown: releases the region in this process but
    /// keeps its files, for the next server.
    fn keep_client(&mut self, client_id: u64, why: &str) {
        self.persist(client_id);
        if let Some(c) = self.clients.remove(&client_id) {
            self.used = self.used.saturating_sub(c.charge);
            log::info("region_kept")
                .kv("client_id", client_id)
                .kv("region_id", c.region_id)
                .kv("length", c.length)
                .kv("epoch", c.epoch)
                .kv("why", why)
                .emit();
            // Dropping deregisters the MR and unmaps the memory; the files stay.
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
        notify::notify("STOPPING=1\nSTATUS=shutting down");
        // Stop accepting first, then close every queue, then free every region
        // (with a state directory: keep every region's files).
        self.listener = None;
        let keys: Vec<IdKey> = self.queues.keys().copied().collect();
        for key in keys {
            self.drop_queue(key, "server shutdown", None);
        }
        let ids: Vec<u64> = self.clients.keys().copied().collect();
        for id in ids {
            if self.store.is_some() {
                self.keep_client(id, "server shutdown");
            } else {
                self.free_client(id, "server shutdown");
            }
        }
        log::info("stopped").emit();
    }
}

#[cfg(test)]
mod tests {
    use super::{is_wildcard, meminfo, sign_descriptor};
    use crate::crypto::{self, Proven, Secret};
    use crate::wire::{RegionDescriptor, NONCE_LEN, SERVER_MAC_LEN};

    /// `--test-wrong-server-proof`: the descriptor's MAC is not the right one (which is
    /// what a client checks), and is made with the secret's first byte flipped.
    #[test]
    fn wrong_server_proof_differs_from_the_right_one() {
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        let secret = Secret::from_hex(hex).expect("hex");
        let proven = || Proven {
            secret: secret.clone(),
            client_nonce: [3; NONCE_LEN],
            server_nonce: 0x55,
        };
        let desc = RegionDescriptor {
            flags: 0,
            region_id: 9,
            epoch: 1,
            rkey: 0x1234,
            remote_addr: 0x7f00_0000_0000,
            length: 1 << 20,
            mac: [0; SERVER_MAC_LEN],
        };
        let right = crypto::server_mac(&secret, 7, &[3; NONCE_LEN], 0x55, &desc);
        let signed = sign_descriptor(Some(proven()), false, 7, desc);
        assert_eq!(signed.mac, right);
        let wrong = sign_descriptor(Some(proven()), true, 7, desc);
        assert_ne!(wrong.mac, right);
        assert_eq!(wrong.body(), desc.body(), "only the MAC differs");
        let flipped = Secret::from_hex(&format!("ff{}", &hex[2..])).expect("hex");
        assert_eq!(
            wrong.mac,
            crypto::server_mac(&flipped, 7, &[3; NONCE_LEN], 0x55, &desc)
        );
        // Without authentication there is nothing to sign, wrong or not.
        for wrong_key in [false, true] {
            assert_eq!(
                sign_descriptor(None, wrong_key, 7, desc).mac,
                [0; SERVER_MAC_LEN]
            );
        }
    }

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
