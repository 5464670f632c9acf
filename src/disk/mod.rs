// SPDX-License-Identifier: GPL-2.0

//! The block device `/dev/rswapN`: a disk over a session to a memory server.
//!
//! [`RemoteDisk::create`] is what `echo 1 > enable` does: take a disk number, connect the
//! session (one queue per hardware queue), and add the disk, sized and limited by what
//! the session got. `echo 0 > enable` shuts the disk ([`RemoteDisk::shut`], refused while
//! it is open) and drops it: the disk goes first (deleting it waits for I/O in flight),
//! then the session's queues, then the number. The data path is in [`request`].

mod crypt;
mod ec;
pub(crate) mod ec_layout;
mod events;
mod request;
mod stats;

use core::fmt::Write;
use kernel::{prelude::*, str::CString, sync::Arc};

use crate::{
    blk::{Disk, DiskEvents, DiskIndex, DiskParams},
    config_parse::{Code, Secret},
    kernel_ext::{HmacSha256, SockAddr},
    settings::{ModuleContext, TargetSettings},
    transport::{
        io::MAX_SEGMENTS,
        link::{Credentials, LinkParams},
        name::Name,
        session::{Health, Session, SessionConfig},
    },
};
use crypt::{DiskCrypt, CRYPT_PAGES};
use ec::EcDriver;
pub(crate) use ec::Refused;
use events::EventWatcher;
use request::Driver;

pub(crate) use crate::transport::link::ConnectNote;

/// The block size of every rswap disk: the page size swap writes.
const BLOCK_SIZE: u32 = 4096;

/// What a disk connects to and how (the target's configuration).
pub(crate) struct DiskConfig {
    /// The target's settings, as `enable` checked them: `addr` and `size` are set,
    /// `poll_queues` is at most the CPUs, the connections at most 64.
    pub(crate) settings: TargetSettings,
    /// Which instance of the client id this is.
    pub(crate) instance: u64,
    /// The configfs target's name, which the disk's events carry.
    pub(crate) target: CString,
    /// Where a queue whose connect fails says why.
    pub(crate) note: Arc<ConnectNote>,
    /// What the module gives every target: where connections find their RDMA device's
    /// object, and whether encrypted reads are opened in a workqueue rather than in their
    /// completion.
    pub(crate) context: ModuleContext,
}

/// How a disk of `settings` named `name` with requests of `max_segments` pages looks, but
/// for what its kind of disk sets: no chunks, whole pages if encrypted, no events.
fn disk_params<'a>(settings: &TargetSettings, name: &'a CStr, max_segments: u32) -> DiskParams<'a> {
    DiskParams {
        name,
        capacity: settings.bytes(),
        block_size: BLOCK_SIZE,
        hw_queues: u32::from(settings.queues),
        poll_queues: u32::from(settings.poll_queues),
        queue_depth: settings.queue_depth,
        io_timeout_ms: settings.io_timeout_ms,
        max_segments,
        max_request_bytes: max_segments * BLOCK_SIZE,
        chunk_bytes: 0,
        whole_pages: settings.encrypt,
        synchronous: settings.sync_swapin,
        // On iWARP the transport registers a READ's pages as one range (see
        // `transport::io`); a queue may also recover onto such a device.
        page_contiguous: true,
        events: None,
    }
}

/// How the session(s) of disk `name` authenticate: as instance `instance`, with
/// `secret` if there is one.
fn credentials(name: Name, secret: Option<&Secret>, instance: u64) -> Result<Arc<Credentials>> {
    let key = match secret {
        None => None,
        Some(secret) => Some(HmacSha256::new(secret.bytes()).inspect_err(|e| {
            pr_err!("{}: hmac(sha256) of the kernel crypto API: {:?}\n", name, e);
        })?),
    };
    Ok(Arc::new(Credentials { instance, key }, GFP_KERNEL)?)
}

/// The encryption state of a disk of `config` named `name` if it is encrypted, its reads
/// opened in a workqueue of its own if `in_workqueue`; the reason in the log and in
/// `last_error` if it cannot be made. Sleeps.
fn disk_crypt(config: &DiskConfig, name: Name, in_workqueue: bool) -> Result<Option<DiskCrypt>> {
    if !config.settings.encrypt {
        return Ok(None);
    }
    let crypt = DiskCrypt::new(config.settings.bytes(), in_workqueue).inspect_err(|&e| {
        let why = if e == ENOENT {
            "the kernel crypto API has no synchronous gcm(aes)"
        } else if e == ENOMEM {
            "no memory for the key or the seals (24 bytes per 4 KiB)"
        } else {
            "gcm(aes) of the kernel crypto API refused the key"
        };
        pr_err!("{}: encryption: {:?}: {}\n", name, e, why);
        config.note.set_text(format_args!("encryption: {}", why));
    })?;
    Ok(Some(crypt))
}

/// The log line of an encrypted disk named `name`: its AES-GCM implementation, the
/// memory of its seals, and where its reads are opened.
fn log_encrypted(name: Name, crypt: &DiskCrypt, in_workqueue: bool) {
    pr_info!(
        "{}: encrypted: AES-256-GCM ({}), key of this enable only; {} KiB of seals kept \
         here; reads opened in {}\n",
        name,
        crypt.driver(),
        crypt.seal_bytes() / 1024,
        if in_workqueue {
            "a workqueue"
        } else {
            "their completion"
        }
    );
}

/// The poll queues of a disk, as its log line names them (nothing if there are none).
struct PollQueues(u16);

impl kernel::fmt::Display for PollQueues {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            0 => Ok(()),
            n => write!(f, " and {} poll queues", n),
        }
    }
}

/// A disk and its driver: over one server, or over several (code other than 1+0).
///
/// Fields are dropped in declaration order: the disk (which owns the tag set and, through
/// it, a reference to the driver), then the driver and its sessions.
enum Driven {
    Plain {
        disk: Pin<KBox<Disk<Driver>>>,
        driver: Arc<Driver>,
    },
    Ec {
        disk: Pin<KBox<Disk<EcDriver>>>,
        driver: Arc<EcDriver>,
    },
}

/// A connected disk.
///
/// Fields are dropped in declaration order: the disk and its driver, then the number.
pub(crate) struct RemoteDisk {
    driven: Driven,
    name: Name,
    _index: DiskIndex,
}

impl RemoteDisk {
    /// Connects to the server (or servers) and adds `/dev/rswapN`.
    pub(crate) fn create(config: &DiskConfig) -> Result<Self> {
        let index = DiskIndex::take()?;
        let name = Name::new(fmt!("rswap{}", index.get()));
        let driven = if config.settings.code == Code::PLAIN {
            Self::create_plain(config, name)?
        } else {
            Self::create_ec(config, name)?
        };
        Ok(Self {
            driven,
            name,
            _index: index,
        })
    }

    /// The disk over one server. Not inlined, nor is `create_ec`: in `create` their
    /// locals would share one stack frame (2.8 KiB) instead of each having its own.
    #[inline(never)]
    fn create_plain(config: &DiskConfig, name: Name) -> Result<Driven> {
        let settings = &config.settings;
        let server = settings.server().ok_or(EDESTADDRREQ)?;
        let credentials = credentials(name, settings.secret.as_ref(), config.instance)?;
        let size = settings.bytes();
        let crypt = disk_crypt(config, name, config.context.crypt_workqueue)?;
        let session = Session::connect(&SessionConfig {
            name,
            link: LinkParams {
                settings: Arc::new(settings.clone(), GFP_KERNEL)?,
                max_sge: MAX_SEGMENTS as u32,
                credentials,
                note: config.note.clone(),
                devices: config.context.devices,
            },
        })?;
        let desc = *session.descriptor();
        // One SGE per segment: no more segments than every queue takes in a work request.
        // An encrypted request is at most the bounce pages it is sealed into.
        let max_request = if settings.encrypt {
            CRYPT_PAGES
        } else {
            MAX_SEGMENTS
        };
        let max_segments = session.max_sge().min(max_request as u32);
        let driver = Arc::new(Driver::new(session, crypt)?, GFP_KERNEL)?;
        // The session tells the disk's watcher of its queues' events, until it shuts down.
        let events = DiskEvents::new()?;
        let queues = driver.session().queues().iter();
        let watcher = EventWatcher::new(events.clone(), &config.target, queues, None)?;
        driver.session().set_watcher(Some(watcher));
        let disk_name = CString::try_from_fmt(fmt!("{}", name))?;
        let disk = Disk::new(
            &DiskParams {
                events: Some(events.clone()),
                ..disk_params(settings, &disk_name, max_segments)
            },
            driver.clone(),
        )?;
        pr_info!(
            "{}: {} bytes of remote memory at {} (region {}, epoch {}{}), {} queues{}\n",
            name,
            size,
            server.with_port_shown(),
            desc.region_id,
            desc.epoch,
            if desc.reused() { ", reconnected" } else { "" },
            settings.queues,
            PollQueues(settings.poll_queues)
        );
        if settings.sync_swapin {
            pr_info!(
                "{}: synchronous (sync_swapin=1): a swap area on it reads pages back one at \
                 a time, without readahead\n",
                name
            );
        }
        if let Some(crypt) = driver.crypt() {
            log_encrypted(name, crypt, crypt.workqueue().is_some());
        }
        Ok(Driven::Plain { disk, driver })
    }

    /// The disk over the servers of `servers`, with code `code`.
    #[inline(never)]
    fn create_ec(config: &DiskConfig, name: Name) -> Result<Driven> {
        let settings = &config.settings;
        // Sealed before it is cut into fragments; its workqueue (always: it rebuilds the
        // blocks that do not verify) opens the reads too with `crypt_workqueue`.
        let crypt = disk_crypt(config, name, true)?;
        let driver = Arc::new(EcDriver::connect(config, name, crypt)?, GFP_KERNEL)?;
        let events = DiskEvents::new()?;
        driver.watch(&events, &config.target)?;
        // A request is at most a group, and an encrypted one at most its bounce pages.
        let max_segments = match settings.encrypt {
            true => driver.max_segments().min(CRYPT_PAGES as u32),
            false => driver.max_segments(),
        };
        let disk_name = CString::try_from_fmt(fmt!("{}", name))?;
        let disk = Disk::new(
            &DiskParams {
                events: Some(events.clone()),
                // A request stays in one group, where the placement is one rule.
                chunk_bytes: (ec_layout::GROUP_BLOCKS * ec_layout::BLOCK) as u32,
                // Fragments are cut from whole pages.
                whole_pages: true,
                ..disk_params(settings, &disk_name, max_segments)
            },
            driver.clone(),
        )?;
        let code = driver.code();
        pr_info!(
            "{}: {} bytes over {} servers, code {}+{} ({} bytes of remote memory on each), {} \
             queues{}\n",
            name,
            settings.bytes(),
            code.legs(),
            code.k(),
            code.r(),
            ec_layout::Layout::new(code, settings.bytes()).leg_bytes(),
            settings.queues,
            PollQueues(settings.poll_queues)
        );
        if let Some(crypt) = driver.crypt() {
            log_encrypted(name, crypt, driver.opens_in_workqueue());
        }
        Ok(Driven::Ec { disk, driver })
    }

    /// The disk's name, e.g. `rswap0`.
    pub(crate) fn name(&self) -> &Name {
        &self.name
    }

    /// Makes the disk refuse every open from now on so that it can be dropped, unless
    /// something holds it open (swapon, a mount, a file descriptor): then `EBUSY`.
    pub(crate) fn shut(&self) -> Result {
        match &self.driven {
            Driven::Plain { disk, .. } => disk.shut(),
            Driven::Ec { disk, .. } => disk.shut(),
        }
    }

    /// Takes the settings that may change while the disk is enabled (`live` in the
    /// settings table) from `settings`.
    pub(crate) fn update(&self, settings: &TargetSettings) {
        match &self.driven {
            Driven::Plain { .. } => {}
            Driven::Ec { driver, .. } => driver.update(settings),
        }
    }

    /// Puts the server at `addr`, `port` in place of leg `leg`'s (see
    /// [`EcDriver::replace`]); a disk over one server has no leg to replace. Sleeps.
    pub(crate) fn replace(
        &self,
        leg: usize,
        addr: SockAddr,
        port: u16,
    ) -> core::result::Result<(), Refused> {
        match &self.driven {
            Driven::Plain { .. } => Err(Refused(
                EINVAL,
                "a disk over one server has no leg to replace (code 1+0)",
            )),
            Driven::Ec { driver, .. } => driver.replace(leg, addr, port),
        }
    }

    /// How the queues are doing (every server's).
    pub(crate) fn health(&self) -> Health {
        match &self.driven {
            Driven::Plain { driver, .. } => driver.session().health(),
            Driven::Ec { driver, .. } => driver.health(),
        }
    }

    /// Writes the `state` attribute of the target, whose disk is `length` bytes: a first
    /// line with the state word, the queues and the region (for a disk over several
    /// servers: region 0, then its code and legs), then a line per server of such a disk.
    /// See `Documentation/configuration.md`.
    pub(crate) fn write_state(&self, w: &mut impl Write, length: u64) -> core::fmt::Result {
        let h = self.health();
        let (region, epoch) = match &self.driven {
            Driven::Plain { driver, .. } => {
                let d = driver.session().current_descriptor();
                (d.region_id, d.epoch)
            }
            Driven::Ec { .. } => (0, 0),
        };
        write!(
            w,
            "{} queues={}/{} region={} epoch={} length={} recovering={} dead={} recoveries={} \
             retried={}",
            h.summary(),
            h.live,
            h.total,
            region,
            epoch,
            length,
            h.recovering,
            h.dead,
            h.recoveries,
            h.retried
        )?;
        match &self.driven {
            Driven::Plain { .. } => writeln!(w),
            Driven::Ec { driver, .. } => {
                writeln!(
                    w,
                    " code={} legs_up={}/{}",
                    driver.code(),
                    driver.legs_up(),
                    driver.code().legs()
                )?;
                driver.write_legs(w)
            }
        }
    }

    /// Writes the disk's counters for the `stats` attribute, in at most `room` bytes: the
    /// total, the latency histogram of all queues, then one line per queue while they fit
    /// (a disk may have 64 queues; the rest are named in a last line). See
    /// `Documentation/configuration.md`.
    pub(crate) fn write_stats(&self, w: &mut impl Write, room: usize) -> Result {
        let queues: KVec<stats::Snapshot> = {
            let mut v = KVec::new();
            match &self.driven {
                Driven::Plain { driver, .. } => {
                    for q in driver.stats() {
                        v.push(q, GFP_KERNEL)?;
                    }
                }
                Driven::Ec { driver, .. } => {
                    for q in driver.stats() {
                        v.push(q, GFP_KERNEL)?;
                    }
                }
            }
            v
        };
        let mut total = stats::Snapshot::default();
        for q in queues.iter() {
            total.add(q);
        }
        let mut w = stats::Counted::new(w);
        total.write_line(&mut w, format_args!("total"))?;
        total.write_latency(&mut w)?;
        let crypt = match &self.driven {
            Driven::Plain { driver, .. } => driver.crypt(),
            Driven::Ec { driver, .. } => driver.crypt(),
        };
        match crypt {
            None => writeln!(w, "encryption off")?,
            Some(c) => {
                let c = c.counters();
                writeln!(
                    w,
                    "encryption aes-256-gcm sealed={} opened={} auth_failures={} seal_ns={} \
                     open_ns={}",
                    c.sealed, c.opened, c.auth_failures, c.seal_ns, c.open_ns
                )?;
            }
        }
        if let Driven::Ec { driver, .. } = &self.driven {
            driver.write_late_binding(&mut w)?;
            driver.write_leg_stats(&mut w)?;
        }
        // Room for the last line, should the queues not all fit.
        let tail = 64;
        for (i, q) in queues.iter().enumerate() {
            let line = stats::Line::of(|l| q.write_line(l, format_args!("queue{}", i)));
            if w.bytes + line.as_str().len() + tail > room {
                writeln!(
                    w,
                    "queues {}..{}: not shown, the page is full",
                    i,
                    queues.len() - 1
                )?;
                break;
            }
            w.write_str(line.as_str())?;
        }
        Ok(())
    }
}
