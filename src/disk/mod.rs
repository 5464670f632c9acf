// SPDX-License-Identifier: GPL-2.0

//! The block device `/dev/rswapN`: a disk over a session to a memory server.
//!
//! [`RemoteDisk::create`] is what `echo 1 > enable` does: take a disk number, connect the
//! session (one queue per hardware queue), and add the disk, sized and limited by what
//! the session got. `echo 0 > enable` shuts the disk ([`RemoteDisk::shut`], refused while
//! it is open) and drops it: the disk goes first (deleting it waits for I/O in flight),
//! then the session's queues, then the number. The data path is in [`request`].

mod crypt;
mod request;
mod stats;

use core::fmt::Write;
use kernel::{prelude::*, str::CString, sync::Arc};

use crate::{
    blk::{Disk, DiskIndex, DiskParams},
    config_parse::Secret,
    kernel_ext::{HmacSha256, SockAddr},
    transport::{
        io::MAX_SEGMENTS,
        link::{Credentials, Devices, LinkParams},
        name::Name,
        session::{Health, Session, SessionConfig},
        wire::RegionDescriptor,
    },
};
use crypt::{DiskCrypt, CRYPT_PAGES};
use request::Driver;

pub(crate) use crate::transport::link::ConnectNote;

/// The block size of every rswap disk: the page size swap writes.
const BLOCK_SIZE: u32 = 4096;

/// What a disk connects to and how (the target's configuration).
pub(crate) struct DiskConfig {
    /// The server's address and port.
    pub(crate) server: SockAddr,
    /// The address to connect from, if not the one the routing picks.
    pub(crate) source: Option<SockAddr>,
    /// Bytes of remote memory, the disk's capacity.
    pub(crate) size: u64,
    /// Hardware queues, one connection each.
    pub(crate) queues: u16,
    /// Hardware queues for polled I/O only (`HCTX_TYPE_POLL`), one connection each, after
    /// those.
    pub(crate) poll_queues: u16,
    /// Requests in flight per queue.
    pub(crate) depth: u32,
    /// This client's identity towards the server.
    pub(crate) client_id: u64,
    /// Milliseconds each connection step may take.
    pub(crate) timeout_ms: u32,
    /// Milliseconds a failed queue may spend reconnecting; 0 turns recovery off.
    pub(crate) recovery_ms: u32,
    /// Milliseconds between keep-alive probes of each queue; 0 turns them off.
    pub(crate) keepalive_ms: u32,
    /// The secret the client authenticates with, if it has one.
    pub(crate) secret: Option<Secret>,
    /// Which instance of the client id this is.
    pub(crate) instance: u64,
    /// Where a queue whose connect fails says why.
    pub(crate) note: Arc<ConnectNote>,
    /// Seal every block before it leaves (see [`crypt`]).
    pub(crate) encrypt: bool,
    /// Open encrypted reads in a workqueue rather than in their completion.
    pub(crate) crypt_workqueue: bool,
    /// Declare the disk synchronous, so that swap reads its pages back without readahead
    /// (see [`DiskParams::synchronous`]).
    pub(crate) sync_swapin: bool,
    /// Where its connections find their RDMA device's object.
    pub(crate) devices: &'static dyn Devices,
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

/// A connected disk.
///
/// Fields are dropped in declaration order: the disk (which owns the tag set and, through
/// it, a reference to the driver), then the driver and its session, then the number.
pub(crate) struct RemoteDisk {
    disk: Pin<KBox<Disk<Driver>>>,
    driver: Arc<Driver>,
    name: Name,
    _index: DiskIndex,
}

impl RemoteDisk {
    /// Connects to the server and adds `/dev/rswapN`.
    pub(crate) fn create(config: &DiskConfig) -> Result<Self> {
        let index = DiskIndex::take()?;
        let name = Name::new(fmt!("rswap{}", index.get()));
        let key = match &config.secret {
            None => None,
            Some(secret) => Some(HmacSha256::new(secret.bytes()).inspect_err(|e| {
                pr_err!("{}: hmac(sha256) of the kernel crypto API: {:?}\n", name, e);
            })?),
        };
        let credentials = Arc::new(
            Credentials {
                instance: config.instance,
                key,
            },
            GFP_KERNEL,
        )?;
        let crypt = match config.encrypt {
            false => None,
            true => Some(
                DiskCrypt::new(config.size, config.crypt_workqueue).inspect_err(|&e| {
                    let why = if e == ENOENT {
                        "the kernel crypto API has no synchronous gcm(aes)"
                    } else if e == ENOMEM {
                        "no memory for the key or the seals (24 bytes per 4 KiB)"
                    } else {
                        "gcm(aes) of the kernel crypto API refused the key"
                    };
                    pr_err!("{}: encryption: {:?}: {}\n", name, e, why);
                    config.note.set_text(format_args!("encryption: {}", why));
                })?,
            ),
        };
        let session = Session::connect(&SessionConfig {
            name,
            link: LinkParams {
                server: config.server,
                source: config.source,
                client_id: config.client_id,
                size: config.size,
                queue_count: config.queues + config.poll_queues,
                poll_queues: config.poll_queues,
                depth: config.depth,
                max_sge: MAX_SEGMENTS as u32,
                timeout_ms: config.timeout_ms,
                credentials,
                note: config.note.clone(),
                devices: config.devices,
            },
            recovery_ms: config.recovery_ms,
            keepalive_ms: config.keepalive_ms,
        })?;
        let desc = *session.descriptor();
        // One SGE per segment: no more segments than every queue takes in a work request.
        // An encrypted request is at most the bounce pages it is sealed into.
        let max_request = if config.encrypt {
            CRYPT_PAGES
        } else {
            MAX_SEGMENTS
        };
        let max_segments = session.max_sge().min(max_request as u32);
        let driver = Arc::new(Driver::new(session, crypt)?, GFP_KERNEL)?;
        let disk_name = CString::try_from_fmt(fmt!("{}", name))?;
        let disk = Disk::new(
            &DiskParams {
                name: &disk_name,
                capacity: config.size,
                block_size: BLOCK_SIZE,
                hw_queues: u32::from(config.queues),
                poll_queues: u32::from(config.poll_queues),
                queue_depth: config.depth,
                max_segments,
                max_request_bytes: max_segments * BLOCK_SIZE,
                whole_pages: config.encrypt,
                synchronous: config.sync_swapin,
                // On iWARP the transport registers a READ's pages as one range (see
                // `transport::io`); a queue may also recover onto such a device.
                page_contiguous: true,
            },
            driver.clone(),
        )?;
        pr_info!(
            "{}: {} bytes of remote memory at {} (region {}, epoch {}{}), {} queues{}\n",
            name,
            config.size,
            config.server.with_port_shown(),
            desc.region_id,
            desc.epoch,
            if desc.reused() { ", reconnected" } else { "" },
            config.queues,
            PollQueues(config.poll_queues)
        );
        if config.sync_swapin {
            pr_info!(
                "{}: synchronous (sync_swapin=1): a swap area on it reads pages back one at \
                 a time, without readahead\n",
                name
            );
        }
        if let Some(crypt) = driver.crypt() {
            pr_info!(
                "{}: encrypted: AES-256-GCM ({}), key of this enable only; {} KiB of seals \
                 kept here; reads opened in {}\n",
                name,
                crypt.driver(),
                crypt.seal_bytes() / 1024,
                if crypt.workqueue().is_some() {
                    "a workqueue"
                } else {
                    "their completion"
                }
            );
        }
        Ok(Self {
            disk,
            driver,
            name,
            _index: index,
        })
    }

    /// The disk's name, e.g. `rswap0`.
    pub(crate) fn name(&self) -> &Name {
        &self.name
    }

    /// Makes the disk refuse every open from now on so that it can be dropped, unless
    /// something holds it open (swapon, a mount, a file descriptor): then `EBUSY`.
    pub(crate) fn shut(&self) -> Result {
        self.disk.shut()
    }

    /// How the queues are doing.
    pub(crate) fn health(&self) -> Health {
        self.driver.session().health()
    }

    /// Writes the disk's counters for the `stats` attribute, in at most `room` bytes: the
    /// total, the latency histogram of all queues, then one line per queue while they fit
    /// (a disk may have 64 queues; the rest are named in a last line). See
    /// `Documentation/configuration.md`.
    pub(crate) fn write_stats(&self, w: &mut impl Write, room: usize) -> Result {
        let queues: KVec<stats::Snapshot> = {
            let mut v = KVec::new();
            for q in self.driver.stats() {
                v.push(q, GFP_KERNEL)?;
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
        match self.driver.crypt() {
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

    /// The region descriptor the queues post with now (see
    /// [`crate::transport::session::Session::current_descriptor`]).
    pub(crate) fn descriptor(&self) -> RegionDescriptor {
        self.driver.session().current_descriptor()
    }
}
