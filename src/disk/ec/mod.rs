// SPDX-License-Identifier: GPL-2.0

//! A disk over k + r memory servers, its *legs*: code `k+r` of the target's settings.
//! Each leg is a session of its own (its queues, its region of `size / k` bytes, its
//! recovery), and each request of the disk becomes one I/O on the same-numbered queue of
//! every leg it needs ([`request`]). Where each fragment of each block lives is
//! [`super::ec_layout`]'s.
//!
//! Every code: striping (`k+0`), replication (`1+r`), one parity fragment (`k+1`, P the
//! XOR of the data) and two (`k+2`, P and Q of the kernel's RAID-6 library). While a leg
//! reconnects, writes of a code with parity go on without it and mark what it missed
//! ([`dirty`]); once it is back with its region those groups alone are rebuilt on it
//! ([`resync`]); without parity writes wait for it, as on a plain disk. Reads go around
//! it. A dead leg is taken out of the disk for good, and the disk goes on while k legs
//! are in. With `extra_reads` a read asks more legs than it needs and ends with the first
//! that decode.

mod dirty;
mod request;
mod resync;

use core::fmt::Write;
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

use super::{crypt::DiskCrypt, events::EventWatcher, stats};
use crate::{
    blk::DiskEvents,
    config_parse::Code,
    kernel_ext::{Raid6, Raid6Scratch, ReclaimWorkqueue, SockAddr},
    settings::TargetSettings,
    transport::{
        io::QueueCounters,
        link::LinkParams,
        name::Name,
        queue::{Queue, QueueEvent, QueueWatcher},
        session::{Health, Session, SessionConfig},
    },
};

use super::{
    ec_layout::{Layout, GROUP_BLOCKS, MAX_LEGS},
    DiskConfig,
};
use request::EcCrypt;
pub(super) use request::EcQueue;
use request::LegsOut;
use request::Reads;
use resync::Resync;

/// What a disk with two parity fragments needs beyond the others: the RAID-6 library, the
/// pages its recoveries work in, and the workqueue they run in (never in a completion:
/// the library wants task context).
#[pin_data]
///
/// Fields are dropped in declaration order: the workqueue is drained and destroyed before
/// the library it calls is given back.
pub(super) struct Pq {
    wq: ReclaimWorkqueue,
    #[pin]
    scratch: Mutex<Raid6Scratch>,
    raid6: Raid6,
}

impl Pq {
    /// For blocks of `fragments` fragments. Sleeps.
    fn new(fragments: usize) -> Result<Arc<Self>> {
        let raid6 = Raid6::new()?;
        let scratch = Raid6Scratch::new(fragments)?;
        let wq = ReclaimWorkqueue::new(c"rswap_ec")?;
        Arc::pin_init(
            pin_init!(Self {
                wq,
                scratch <- new_mutex!(scratch, "rswap::disk::ec::Pq::scratch"),
                raid6,
            }),
            GFP_KERNEL,
        )
    }
}

/// Segments (pages) of one request at most: one group, so that every leg's I/O of it is
/// one range of the leg's region.
pub(super) const EC_SEGMENTS: usize = GROUP_BLOCKS as usize;

/// Told of one leg's queue events: a dead queue takes the leg out of the disk, and each
/// event is a uevent of the disk naming the leg.
struct LegWatcher {
    events: Arc<EventWatcher>,
    out: Arc<LegsOut>,
    resync: Arc<Resync>,
    leg: usize,
    queues: KVec<Arc<Queue>>,
}

impl QueueWatcher for LegWatcher {
    fn queue_event(&self, index: u16, event: QueueEvent) {
        match event {
            QueueEvent::Dead => {
                if let Some(q) = self.queues.get(usize::from(index)) {
                    self.out.take_out(self.leg, q, "its queue is dead");
                }
            }
            // Back with its region: what it missed is rebuilt once all its queues are.
            // On a new server: the leg comes back into the disk then.
            QueueEvent::Reconnected => {
                Resync::adopted(&self.resync, self.leg);
                Resync::kick(&self.resync);
            }
            QueueEvent::Recovering => {}
        }
        self.events.queue_event(index, event);
    }
}

/// One server of the disk.
struct Leg {
    session: Session,
}

impl Leg {
    /// Its server's address and port: where its queues connect now.
    fn server(&self) -> Option<SockAddr> {
        self.session
            .queues()
            .first()
            .and_then(|q| q.params().settings.server())
    }
}

/// Why `replace` refused, for the target's `last_error`.
pub(crate) struct Refused(pub(crate) Error, pub(crate) &'static str);

/// The blk-mq driver of a disk over several servers.
///
/// Fields are dropped in declaration order: the legs' sessions shut their queues down
/// before the hardware queues let go of them. The resync is stopped first (on drop).
pub(crate) struct EcDriver {
    legs: KVec<Leg>,
    queues: KVec<EcQueue>,
    layout: Layout,
    out: Arc<LegsOut>,
    resync: Arc<Resync>,
    /// How reads are made.
    reads: Reads,
    /// The disk's encryption, if it is encrypted.
    crypt: Option<Arc<EcCrypt>>,
}

impl Drop for EcDriver {
    fn drop(&mut self) {
        self.resync.stop();
    }
}

impl EcDriver {
    /// Connects one session to each server of `config` and makes a driver over them, one
    /// hardware queue per queue of a session; every block is sealed with `crypt` before it
    /// is cut into fragments, if it is given (its workqueue rebuilds blocks that do not
    /// verify).
    pub(super) fn connect(
        config: &DiskConfig,
        name: Name,
        crypt: Option<DiskCrypt>,
    ) -> Result<Self> {
        let settings = &config.settings;
        let layout = Layout::new(settings.code, settings.bytes());
        let n = usize::from(settings.code.legs());
        if settings.servers.len() != n || n > MAX_LEGS {
            return Err(EINVAL);
        }
        let code = settings.code;
        let pq = match code.r() == 2 && !code.is_replication() {
            false => None,
            true => Some(Pq::new(n).inspect_err(|&e| {
                let why = if e == ENOENT {
                    "the kernel has no RAID-6 library (module raid6_pq, CONFIG_RAID6_PQ)"
                } else {
                    "no memory for the RAID-6 scratch pages or workqueue"
                };
                pr_err!("{}: code {}+{}: {}\n", name, code.k(), code.r(), why);
                config.note.set_text(format_args!("code {}: {}", code, why));
            })?),
        };
        let mut legs = KVec::with_capacity(n, GFP_KERNEL)?;
        for i in 0..n {
            let leg = Self::connect_leg(config, name, &layout, i)?;
            if let Some(same) = legs.iter().position(|l: &Leg| {
                l.session.descriptor().region_id == leg.session.descriptor().region_id
            }) {
                pr_err!(
                    "{}: legs {} and {} got the same region {}: the same server twice?\n",
                    name,
                    same,
                    i,
                    leg.session.descriptor().region_id
                );
                config.note.set_text(format_args!(
                    "legs {} and {} got the same region: the same server twice?",
                    same, i
                ));
                return Err(EEXIST);
            }
            legs.push(leg, GFP_KERNEL)?;
        }
        let out = Arc::new(LegsOut::default(), GFP_KERNEL)?;
        let reads = Reads {
            extra: settings.extra_reads.min(code.r()),
            // A fragment is a piece of each page: where a READ must land in one
            // page-contiguous range (iWARP), fragments are read into the areas.
            areas: code.k() > 1 && legs.iter().any(|l: &Leg| l.session.reads_registered()),
        };
        let crypt = match crypt {
            None => None,
            Some(disk) => Some(Arc::new(
                EcCrypt {
                    disk,
                    open_in_wq: config.context.crypt_workqueue,
                },
                GFP_KERNEL,
            )?),
        };
        let resync = Resync::new(
            &legs,
            layout,
            &out,
            pq.as_ref(),
            crypt.as_ref(),
            settings.rebuild_mbps,
            max_segments(&legs),
        )?;
        let queues = request::hw_queues(
            &legs,
            layout,
            &out,
            pq.as_ref(),
            reads,
            &resync,
            crypt.as_ref(),
        )?;
        Ok(Self {
            legs,
            queues,
            layout,
            out,
            resync,
            reads,
            crypt,
        })
    }

    /// Connects leg `i`: the target's settings with that server, its secret, and a region
    /// of the leg's size. Not inlined: its copy of the settings has a frame of its own.
    #[inline(never)]
    fn connect_leg(config: &DiskConfig, disk: Name, layout: &Layout, i: usize) -> Result<Leg> {
        let settings = &config.settings;
        let (addr, port) = settings.servers.entry(i).ok_or(EINVAL)?;
        let mut leg = TargetSettings::clone(settings);
        leg.addr = Some(addr);
        leg.port = port.unwrap_or(settings.port);
        leg.size = Some(layout.leg_bytes());
        if let Some(secret) = settings.secrets.get(i) {
            leg.secret = Some(secret.clone());
        }
        leg.server().ok_or(EDESTADDRREQ)?;
        let name = Name::new(fmt!("{} leg{}", disk, i));
        let credentials = super::credentials(name, leg.secret.as_ref(), config.instance)?;
        let session = Session::connect(&SessionConfig {
            name,
            link: LinkParams {
                settings: Arc::new(leg, GFP_KERNEL)?,
                max_sge: EC_SEGMENTS as u32,
                credentials,
                note: config.note.clone(),
                devices: config.context.devices,
            },
        })?;
        Ok(Leg { session })
    }

    /// Puts the server at `addr`, `port` in place of leg `leg`'s, out of the disk (its server
    /// lost): the leg's queues connect there, each taking the empty region that server
    /// gives, and once they are all live the leg is back in the disk with every group
    /// dirty, rebuilt from the other legs at `rebuild_mbps` ([`resync`]). Refused for a
    /// code without parity, a leg in the disk, and another leg's server. Sleeps.
    pub(super) fn replace(
        &self,
        leg: usize,
        addr: SockAddr,
        port: u16,
    ) -> core::result::Result<(), Refused> {
        let server = addr.with_port(port);
        if self.code().r() == 0 {
            return Err(Refused(
                EINVAL,
                "a code with no parity keeps nothing to rebuild a server from",
            ));
        }
        let l = self
            .legs
            .get(leg)
            .ok_or(Refused(EINVAL, "the disk has no such leg"))?;
        if self.legs_out() & (1 << leg) == 0 {
            return Err(Refused(
                EBUSY,
                "the leg is in the disk; only a leg out of it (its server lost) is replaced",
            ));
        }
        if self
            .legs
            .iter()
            .enumerate()
            .any(|(i, other)| i != leg && other.server() == Some(server))
        {
            return Err(Refused(EINVAL, "that server is another leg's"));
        }
        let params = Self::params_for(l, addr, port).map_err(|e| Refused(e, "out of memory"))?;
        let queues = l.session.queues();
        l.session.disconnect();
        self.resync
            .replace(leg)
            .map_err(|e| Refused(e, "the leg has no dirty map"))?;
        if let Some(q) = queues.first() {
            pr_info!(
                "{}: replacing its server with {}: {} groups to rebuild once connected\n",
                q.name(),
                server.with_port_shown(),
                self.layout.groups()
            );
        }
        for q in queues {
            Queue::adopt(q, params.clone()).map_err(|e| Refused(e, "the disk is going away"))?;
        }
        Ok(())
    }

    /// The link parameters of `leg` with the server at `addr`, `port` in place of its own.
    /// Not inlined: its copy of the settings has a frame of its own.
    #[inline(never)]
    fn params_for(leg: &Leg, addr: SockAddr, port: u16) -> Result<LinkParams> {
        let mut params = leg.session.queues().first().ok_or(EINVAL)?.params();
        let mut settings = TargetSettings::clone(&params.settings);
        settings.addr = Some(addr);
        settings.port = port;
        params.settings = Arc::new(settings, GFP_KERNEL)?;
        Ok(params)
    }

    /// The most pages one request may have: a group, or fewer if a leg's queues take
    /// fewer SGEs in a work request.
    pub(super) fn max_segments(&self) -> u32 {
        max_segments(&self.legs)
    }

    /// Takes the settings that may change while enabled: the rebuild's rate.
    pub(super) fn update(&self, settings: &TargetSettings) {
        self.resync.set_rate(settings.rebuild_mbps);
    }

    /// The disk's encryption, if it is encrypted.
    pub(super) fn crypt(&self) -> Option<&DiskCrypt> {
        self.crypt.as_deref().map(|c| &c.disk)
    }

    /// Whether encrypted reads are opened in a workqueue rather than in their completion.
    pub(super) fn opens_in_workqueue(&self) -> bool {
        self.crypt.as_deref().is_some_and(|c| c.open_in_wq)
    }

    /// The code.
    pub(super) fn code(&self) -> Code {
        self.layout.code()
    }

    /// How the queues of every leg are doing, together.
    pub(super) fn health(&self) -> Health {
        let mut h = Health::of(&[]);
        for leg in self.legs.iter() {
            h.add(&leg.session.health());
        }
        h
    }

    /// Sends the disk's `events` (of configfs target `target`) for every leg's queues, and
    /// takes a leg whose queue dies out of the disk then, not when I/O next looks.
    pub(super) fn watch(&self, events: &Arc<DiskEvents>, target: &CStr) -> Result {
        let all = || self.legs.iter().flat_map(|l| l.session.queues().iter());
        for (i, leg) in self.legs.iter().enumerate() {
            let index = u8::try_from(i).map_err(|_| EINVAL)?;
            let mut queues = KVec::with_capacity(leg.session.queues().len(), GFP_KERNEL)?;
            for q in leg.session.queues() {
                queues.push(q.clone(), GFP_KERNEL)?;
            }
            let watcher = Arc::new(
                LegWatcher {
                    events: EventWatcher::new(events.clone(), target, all(), Some(index))?,
                    out: self.out.clone(),
                    resync: self.resync.clone(),
                    leg: i,
                    queues,
                },
                GFP_KERNEL,
            )?;
            leg.session.set_watcher(Some(watcher));
        }
        Ok(())
    }

    /// The legs out of the disk.
    fn legs_out(&self) -> u16 {
        self.out.mask()
    }

    /// Legs in the disk whose queues are all live.
    pub(super) fn legs_up(&self) -> usize {
        let out = self.legs_out();
        self.legs
            .iter()
            .enumerate()
            .filter(|(i, l)| {
                let h = l.session.health();
                out & (1 << i) == 0 && h.live == h.total
            })
            .count()
    }

    /// One line per leg for `state`: its server, its state word (its queues', or `out`
    /// once it is out of the disk) and queues, its region, its groups waiting to be
    /// rebuilt.
    pub(super) fn write_legs(&self, w: &mut impl Write) -> core::fmt::Result {
        let out = self.legs_out();
        for (i, leg) in self.legs.iter().enumerate() {
            let h = leg.session.health();
            let d = leg.session.current_descriptor();
            let (dirty, _, _) = self.resync.counts(i);
            writeln!(
                w,
                "leg{} {} {} queues={}/{} region={} epoch={} dirty={}",
                i,
                leg.server().ok_or(core::fmt::Error)?.with_port_shown(),
                if out & (1 << i) != 0 {
                    "out"
                } else {
                    h.summary()
                },
                h.live,
                h.total,
                d.region_id,
                d.epoch,
                dirty
            )?;
        }
        Ok(())
    }

    /// The line of `stats` on late binding: the extra reads asked, reads ended before
    /// their slowest leg, and legs' reads that came back after their read had ended.
    pub(super) fn write_late_binding(&self, w: &mut impl Write) -> core::fmt::Result {
        let (early, late) = self
            .queues
            .iter()
            .map(EcQueue::late_binding)
            .fold((0, 0), |(e, l), (qe, ql)| (e + qe, l + ql));
        writeln!(
            w,
            "code {} extra_reads={} early_reads={} late_leg_reads={}",
            self.code(),
            self.reads.extra,
            early,
            late
        )
    }

    /// One line per leg for `stats`: its I/O that came back with success, that failed,
    /// its reads back after their read had ended, its queues' transport counters, its
    /// groups waiting to be rebuilt and rebuilt so far, and (encrypted disk) the blocks
    /// that verified only once put together without its fragment, by a read or a rebuild.
    pub(super) fn write_leg_stats(&self, w: &mut impl Write) -> core::fmt::Result {
        for (i, leg) in self.legs.iter().enumerate() {
            let mut t = request::LegTotals::default();
            for q in self.queues.iter() {
                q.add_leg(i, &mut t);
            }
            let mut c = QueueCounters::default();
            for q in leg.session.queues() {
                c.add(&q.counters());
            }
            let (dirty, resynced, rebuild_altered) = self.resync.counts(i);
            writeln!(
                w,
                "leg{} reads={} writes={} errors={} late={} requeues={} recoveries={} \
                 inflight={} dirty={} resynced={} altered={}",
                i,
                t.reads,
                t.writes,
                t.errors,
                t.late,
                c.requeues,
                c.recoveries,
                c.inflight,
                dirty,
                resynced,
                t.altered + rebuild_altered
            )?;
        }
        Ok(())
    }

    /// The counters of each hardware queue, with the transport counters of its queues
    /// (every leg's) summed.
    pub(super) fn stats(&self) -> impl Iterator<Item = stats::Snapshot> + '_ {
        self.queues.iter().map(EcQueue::snapshot)
    }
}

/// The most pages one work request to any of `legs` may carry: a group's, or fewer where
/// a leg's queues take fewer SGEs (soft-iWARP: 6).
fn max_segments(legs: &[Leg]) -> u32 {
    legs.iter()
        .map(|l| l.session.max_sge())
        .fold(EC_SEGMENTS as u32, u32::min)
}
