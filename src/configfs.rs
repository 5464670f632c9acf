// SPDX-License-Identifier: GPL-2.0

//! Configuration through configfs, like nvmet and rnull:
//!
//! ```text
//! mkdir /sys/kernel/config/rswap/NAME
//! echo 192.0.2.2 > addr; echo 7471 > port; echo 256M > size
//! echo 1 > enable          # connect and create /dev/rswapN
//! cat state device         # what it is doing, which disk it made
//! echo 0 > enable          # tear down (refused while the disk is open)
//! ```
//!
//! While the disk is open (swapon, a mount, a process), `echo 0 > enable` fails with
//! `EBUSY` (the disk counts its openers and shuts its door against new ones before it is
//! deleted). While a target is enabled, `rmdir` of its directory fails with `EBUSY`: an
//! enabled target holds a configfs dependency on its own directory ([`ItemDependency`]).
//!
//! Every attribute validates its value and refuses a bad one with `-EINVAL` and a message
//! in the kernel log; attributes are read-only (`-EBUSY`) while enabled. The last such
//! message (of any refusal, a failed `enable` too) is also in the read-only `last_error`,
//! so that a tool can show the reason without reading the kernel log.

use core::fmt::Write;
use kernel::{
    c_str, configfs, configfs_attrs, new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    str::{CString, Formatter},
    sync::Mutex,
};

use crate::{
    config_parse::{self as parse, Invalid},
    disk::{ConnectNote, DiskConfig, RemoteDisk},
    ib::Devices,
    kernel_ext::{self, BadAddr, DependableSubsystem, ItemDependency, SockAddr, TextBuf},
};

/// What the module hands to every target it configures.
#[derive(Clone, Copy)]
pub(crate) struct ModuleContext {
    /// Where a target's connections find their RDMA device's object (the IB client).
    pub(crate) devices: &'static dyn Devices,
    /// Whether encrypted targets open their reads in a workqueue (the `crypt_workqueue`
    /// module parameter).
    pub(crate) crypt_workqueue: bool,
}

/// Default port of `rswap-server`.
const DEFAULT_PORT: u16 = 7471;
/// Default work requests in flight per queue.
const DEFAULT_DEPTH: u32 = 128;
/// Default time each connection step may take.
const DEFAULT_TIMEOUT_MS: u32 = 5000;
/// Default reconnect window of a failed queue: the memory server's default grace period
/// (it keeps a client's region that long after its last queue went away).
const DEFAULT_RECOVERY_MS: u32 = 60_000;
/// Bytes of the last refusal's message kept for `last_error`.
const LAST_ERROR_LEN: usize = 200;
/// Default keep-alive period: a silent server is noticed within about twice that.
const DEFAULT_KEEPALIVE_MS: u32 = 5000;
/// Whether a new target seals its pages (Documentation/security.md).
const DEFAULT_ENCRYPT: bool = false;
/// Whether a new target's disk is synchronous (swap-in without readahead): off, since
/// `make bench` measured the swap workload 2.4 times slower with it
/// (Documentation/benchmarks.md, "Synchronous swap-in").
const DEFAULT_SYNC_SWAPIN: bool = false;
/// Most connections (queues and poll queues) one target opens: the server's default
/// limit of queues per client.
const MAX_CONNECTIONS: u32 = 64;

/// The configfs subsystem `/sys/kernel/config/rswap`, whose targets get `context`.
pub(crate) fn subsystem(context: ModuleContext) -> impl PinInit<DependableSubsystem<Root>, Error> {
    let item_type = configfs_attrs! {
        container: configfs::Subsystem<Root>,
        data: Root,
        child: TargetConfig,
        attributes: [
            version: 0,
        ],
    };
    DependableSubsystem::new(c_str!("rswap"), item_type, try_pin_init!(Root { context }))
}

/// The subsystem's own data.
#[pin_data]
pub(crate) struct Root {
    context: ModuleContext,
}

#[vtable]
impl configfs::AttributeOperations<0> for Root {
    type Data = Root;

    fn show(_this: &Root, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let mut w = Formatter::new(page);
        w.write_str("rswap 2 (wire format 2)\n")?;
        Ok(w.bytes_written())
    }
}

#[vtable]
impl configfs::GroupOperations for Root {
    type Child = TargetConfig;

    fn make_group(
        &self,
        name: &CStr,
    ) -> Result<impl PinInit<configfs::Group<TargetConfig>, Error>> {
        let item_type = configfs_attrs! {
            container: configfs::Group<TargetConfig>,
            data: TargetConfig,
            attributes: [
                addr: 0,
                port: 1,
                size: 2,
                queues: 3,
                queue_depth: 4,
                client_id: 5,
                timeout_ms: 6,
                enable: 7,
                state: 8,
                device: 9,
                recovery_ms: 10,
                keepalive_ms: 11,
                last_error: 12,
                secret: 13,
                stats: 14,
                src_addr: 15,
                encrypt: 16,
                sync_swapin: 17,
                poll_queues: 18,
            ],
        };
        let target = CString::try_from_fmt(fmt!("{}", name.to_str()?))?;
        let name = CString::try_from_fmt(fmt!("{}", name.to_str()?))?;
        let queues = kernel_ext::nr_cpus().clamp(1, 64) as u16;
        Ok(configfs::Group::new(
            name,
            item_type,
            try_pin_init!(TargetConfig {
                name: target,
                context: self.context,
                inner <- new_mutex!(Settings {
                    addr: None,
                    src_addr: None,
                    port: DEFAULT_PORT,
                    size: None,
                    queues,
                    depth: DEFAULT_DEPTH,
                    client_id: nonzero_random(),
                    timeout_ms: DEFAULT_TIMEOUT_MS,
                    recovery_ms: DEFAULT_RECOVERY_MS,
                    keepalive_ms: DEFAULT_KEEPALIVE_MS,
                    secret: None,
                    encrypt: DEFAULT_ENCRYPT,
                    sync_swapin: DEFAULT_SYNC_SWAPIN,
                    poll_queues: 0,
                    instance: nonzero_random(),
                    enabled: None,
                }),
                last_error <- new_mutex!(TextBuf::new()),
            }),
        ))
    }
}

/// A random number other than 0.
fn nonzero_random() -> u64 {
    loop {
        let v = kernel_ext::random_u64();
        if v != 0 {
            return v;
        }
    }
}

/// One remote-memory target: a directory under `/sys/kernel/config/rswap`.
#[pin_data]
pub(crate) struct TargetConfig {
    /// The directory's name, which log lines about the target carry until it has a disk.
    name: CString,
    /// What the module gave it.
    context: ModuleContext,
    /// Serialises configuration changes, enable and disable.
    #[pin]
    inner: Mutex<Settings>,
    /// The last refusal's message, for `last_error` (cut to [`LAST_ERROR_LEN`] bytes).
    #[pin]
    last_error: Mutex<TextBuf<LAST_ERROR_LEN>>,
}

/// Refuses something of target `this`: logs `msg` with the target's name and keeps it
/// as the target's `last_error`.
fn refuse(this: &TargetConfig, msg: core::fmt::Arguments<'_>) {
    pr_err!("{}: configfs: {}\n", &*this.name, msg);
    let mut last = this.last_error.lock();
    last.clear();
    let _ = last.write_fmt(msg);
}

struct Settings {
    /// The server's address (its port is `port`).
    addr: Option<SockAddr>,
    /// The address to connect from; `None`: whichever the routing picks.
    src_addr: Option<SockAddr>,
    port: u16,
    size: Option<u64>,
    queues: u16,
    depth: u32,
    client_id: u64,
    timeout_ms: u32,
    recovery_ms: u32,
    keepalive_ms: u32,
    /// The secret the target authenticates with, if it has one.
    secret: Option<parse::Secret>,
    /// Whether the disk seals every page before it leaves the host.
    encrypt: bool,
    /// Whether the disk declares itself synchronous (`BLK_FEAT_SYNCHRONOUS`): swap then
    /// reads pages back one at a time, without readahead.
    sync_swapin: bool,
    /// Hardware queues for polled I/O, each a connection of its own, after `queues`.
    poll_queues: u16,
    /// Which instance of its client id this target is, towards the server: random for
    /// each directory, kept across `enable` cycles (a region has one owner instance).
    instance: u64,
    /// The disk, while enabled.
    enabled: Option<Enabled>,
}

/// An enabled target: its disk, and the dependency that keeps its directory (`rmdir`
/// fails with `EBUSY`). Fields are dropped in declaration order: the disk first.
struct Enabled {
    disk: RemoteDisk,
    _dependency: ItemDependency,
}

/// The address of one host, as nvme-rdma takes `traddr`: a dotted quad, or IPv6 with an
/// optional `%scope` (an interface name or number).
fn host_addr(text: &str) -> core::result::Result<SockAddr, Invalid> {
    SockAddr::parse(text).map_err(|e| match e {
        BadAddr::Syntax => Invalid("not an IPv4 or IPv6 address"),
        BadAddr::NotAHost => Invalid("not the address of one host (any, broadcast or multicast)"),
    })
}

fn invalid(this: &TargetConfig, what: &str, e: Invalid) -> Error {
    refuse(this, format_args!("{}: {}", what, e.0));
    EINVAL
}

/// Stores `value` into the settings unless the target is enabled.
fn store_setting(this: &TargetConfig, what: &str, f: impl FnOnce(&mut Settings)) -> Result {
    let mut s = this.inner.lock();
    if s.enabled.is_some() {
        refuse(
            this,
            format_args!(
                "{}: read-only while enabled (write 0 to enable first)",
                what
            ),
        );
        return Err(EBUSY);
    }
    f(&mut s);
    Ok(())
}

fn show_with(
    page: &mut [u8; PAGE_SIZE],
    f: impl FnOnce(&mut Formatter<'_>) -> core::fmt::Result,
) -> Result<usize> {
    let mut w = Formatter::new(page);
    f(&mut w)?;
    Ok(w.bytes_written())
}

fn enable(this: &TargetConfig, s: &mut Settings) -> Result {
    let Some(addr) = s.addr else {
        refuse(this, format_args!("enable: set addr first"));
        return Err(EINVAL);
    };
    let Some(size) = s.size else {
        refuse(this, format_args!("enable: set size first"));
        return Err(EINVAL);
    };
    // More poll queues than CPUs would have no CPU mapped to them (as nvme-rdma, which
    // caps its own at the CPUs online).
    let cpus = u16::try_from(kernel_ext::nr_cpus()).unwrap_or(u16::MAX);
    let poll_queues = s.poll_queues.min(cpus);
    if poll_queues < s.poll_queues {
        pr_info!(
            "{}: configfs: poll_queues {} is more than the {} CPUs: {} poll queues\n",
            &*this.name,
            s.poll_queues,
            cpus,
            poll_queues
        );
    }
    let connections = u32::from(s.queues) + u32::from(poll_queues);
    if connections > MAX_CONNECTIONS {
        refuse(
            this,
            format_args!(
                "enable: queues + poll_queues is {}, more than {} connections",
                connections, MAX_CONNECTIONS
            ),
        );
        return Err(EINVAL);
    }
    let config = DiskConfig {
        server: addr.with_port(s.port),
        source: s.src_addr,
        size,
        queues: s.queues,
        poll_queues,
        depth: s.depth,
        client_id: s.client_id,
        timeout_ms: s.timeout_ms,
        recovery_ms: s.recovery_ms,
        keepalive_ms: s.keepalive_ms,
        secret: s.secret.clone(),
        instance: s.instance,
        note: ConnectNote::new()?,
        encrypt: s.encrypt,
        crypt_workqueue: this.context.crypt_workqueue,
        devices: this.context.devices,
        sync_swapin: s.sync_swapin,
    };
    let failed = |e: Error| {
        // Copied out: `refuse` takes a mutex, the note is under a spinlock.
        let why = config.note.get();
        match why.text() {
            "" => refuse(
                this,
                format_args!("enable failed: {:?} (the kernel log has the details)", e),
            ),
            why => refuse(this, format_args!("enable failed: {:?}: {}", e, why)),
        }
        e
    };
    let dependency = ItemDependency::take(&this.name).map_err(failed)?;
    let disk = RemoteDisk::create(&config).map_err(failed)?;
    s.enabled = Some(Enabled {
        disk,
        _dependency: dependency,
    });
    Ok(())
}

macro_rules! setting_attr {
    ($id:literal, $name:literal, |$s:ident, $w:ident| $show:expr, |$text:ident| $parse:expr, |$st:ident, $v:ident| $apply:expr) => {
        #[vtable]
        impl configfs::AttributeOperations<$id> for TargetConfig {
            type Data = TargetConfig;

            fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
                let $s = this.inner.lock();
                show_with(page, |$w| $show)
            }

            fn store(this: &TargetConfig, page: &[u8]) -> Result {
                let $text = parse::text(page).map_err(|e| invalid(this, $name, e))?;
                let $v = $parse.map_err(|e| invalid(this, $name, e))?;
                store_setting(this, $name, |$st| $apply)
            }
        }
    };
}

setting_attr!(
    0,
    "addr",
    |s, w| match &s.addr {
        Some(a) => writeln!(w, "{}", a),
        None => writeln!(w, "(unset)"),
    },
    |t| host_addr(t),
    |s, v| s.addr = Some(v)
);
setting_attr!(
    15,
    "src_addr",
    |s, w| match &s.src_addr {
        Some(a) => writeln!(w, "{}", a),
        None => writeln!(w, "(any)"),
    },
    |t| match t {
        "any" => Ok(None),
        t => host_addr(t).map(Some),
    },
    |s, v| s.src_addr = v
);
setting_attr!(
    1,
    "port",
    |s, w| writeln!(w, "{}", s.port),
    |t| parse::number(t, 1, 65535),
    |s, v| s.port = v as u16
);
setting_attr!(
    2,
    "size",
    |s, w| match s.size {
        Some(b) => writeln!(w, "{}", b),
        None => writeln!(w, "(unset)"),
    },
    |t| parse::size(t),
    |s, v| s.size = Some(v)
);
setting_attr!(
    3,
    "queues",
    |s, w| writeln!(w, "{}", s.queues),
    |t| parse::number(t, 1, u64::from(MAX_CONNECTIONS)),
    |s, v| s.queues = v as u16
);
setting_attr!(
    4,
    "queue_depth",
    |s, w| writeln!(w, "{}", s.depth),
    |t| parse::number(t, 1, 1024),
    |s, v| s.depth = v as u32
);
setting_attr!(
    5,
    "client_id",
    |s, w| writeln!(w, "{:#x}", s.client_id),
    |t| parse::client_id(t),
    |s, v| s.client_id = v
);
setting_attr!(
    6,
    "timeout_ms",
    |s, w| writeln!(w, "{}", s.timeout_ms),
    |t| parse::number(t, 100, 120_000),
    |s, v| s.timeout_ms = v as u32
);
setting_attr!(
    10,
    "recovery_ms",
    |s, w| writeln!(w, "{}", s.recovery_ms),
    |t| parse::number(t, 0, 3_600_000),
    |s, v| s.recovery_ms = v as u32
);
setting_attr!(
    16,
    "encrypt",
    |s, w| writeln!(w, "{}", u8::from(s.encrypt)),
    |t| parse::boolean(t),
    |s, v| s.encrypt = v
);
setting_attr!(
    17,
    "sync_swapin",
    |s, w| writeln!(w, "{}", u8::from(s.sync_swapin)),
    |t| parse::boolean(t),
    |s, v| s.sync_swapin = v
);
setting_attr!(
    18,
    "poll_queues",
    |s, w| writeln!(w, "{}", s.poll_queues),
    |t| parse::number(t, 0, u64::from(MAX_CONNECTIONS) - 1),
    |s, v| s.poll_queues = v as u16
);
setting_attr!(
    11,
    "keepalive_ms",
    |s, w| writeln!(w, "{}", s.keepalive_ms),
    |t| parse::keepalive_ms(t),
    |s, v| s.keepalive_ms = v as u32
);

/// `stats`: the disk's counters while enabled (empty when disabled).
#[vtable]
impl configfs::AttributeOperations<14> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let s = this.inner.lock();
        let mut w = Formatter::new(page);
        if let Some(Enabled { disk, .. }) = &s.enabled {
            disk.write_stats(&mut w, PAGE_SIZE)?;
        }
        Ok(w.bytes_written())
    }
}

/// `secret`: write-only in effect; reading says only whether one is set.
#[vtable]
impl configfs::AttributeOperations<13> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let set = this.inner.lock().secret.is_some();
        show_with(page, |w| {
            writeln!(w, "{}", if set { "(set)" } else { "(unset)" })
        })
    }

    fn store(this: &TargetConfig, page: &[u8]) -> Result {
        let text = parse::text(page).map_err(|e| invalid(this, "secret", e))?;
        let secret = match text {
            "none" => None,
            hex => Some(parse::secret(hex).map_err(|e| invalid(this, "secret", e))?),
        };
        store_setting(this, "secret", |s| s.secret = secret)
    }
}

#[vtable]
impl configfs::AttributeOperations<7> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let on = this.inner.lock().enabled.is_some();
        show_with(page, |w| writeln!(w, "{}", u8::from(on)))
    }

    fn store(this: &TargetConfig, page: &[u8]) -> Result {
        let text = parse::text(page).map_err(|e| invalid(this, "enable", e))?;
        let on = parse::boolean(text).map_err(|e| invalid(this, "enable", e))?;
        let mut s = this.inner.lock();
        match (on, s.enabled.is_some()) {
            (true, false) => enable(this, &mut s),
            (false, true) => {
                if let Some(Enabled { disk, .. }) = &s.enabled {
                    if let Err(e) = disk.shut() {
                        refuse(
                            this,
                            format_args!(
                                "enable: {} is open (swapon, mount or a process); close it first",
                                disk.name()
                            ),
                        );
                        return Err(e);
                    }
                }
                drop(s.enabled.take());
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[vtable]
impl configfs::AttributeOperations<8> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let s = this.inner.lock();
        show_with(page, |w| match &s.enabled {
            None => writeln!(w, "disabled"),
            Some(Enabled { disk, .. }) => {
                let h = disk.health();
                let d = disk.descriptor();
                let summary = if h.live == h.total {
                    "connected"
                } else if h.recovering > 0 {
                    "recovering"
                } else if h.dead == h.total {
                    "dead"
                } else if h.live == 0 && h.dead == 0 {
                    // The server closed the connections: each reconnects on its next I/O.
                    "disconnected"
                } else {
                    "degraded"
                };
                writeln!(
                    w,
                    "{} queues={}/{} region={} epoch={} rkey={:#x} length={} recovering={} dead={} recoveries={} retried={}",
                    summary,
                    h.live,
                    h.total,
                    d.region_id,
                    d.epoch,
                    d.rkey,
                    s.size.unwrap_or(0),
                    h.recovering,
                    h.dead,
                    h.recoveries,
                    h.retried
                )
            }
        })
    }
}

#[vtable]
impl configfs::AttributeOperations<9> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let s = this.inner.lock();
        show_with(page, |w| match &s.enabled {
            Some(Enabled { disk, .. }) => writeln!(w, "{}", disk.name()),
            None => writeln!(w),
        })
    }
}

#[vtable]
impl configfs::AttributeOperations<12> for TargetConfig {
    type Data = TargetConfig;

    fn show(this: &TargetConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let last = this.last_error.lock();
        show_with(page, |w| match last.text() {
            "" => writeln!(w),
            text => writeln!(w, "{}", text),
        })
    }
}
