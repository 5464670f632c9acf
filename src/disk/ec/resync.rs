// SPDX-License-Identifier: GPL-2.0

//! Bringing a leg that missed writes back in sync, group by group.
//!
//! A write of a disk with parity goes to the legs that are live and hold the group
//! current; it skips a leg that is reconnecting, or whose fragment of the group is stale
//! already, and marks the group in that leg's [`DirtyMap`] before the write ends. A read
//! never asks a leg for a group dirty there. When the leg is back (all its queues live,
//! its region the one it had: a server restarted with its state), a work item rebuilds
//! the dirty groups only: it reads each from the other legs (any k, as a read would),
//! puts its blocks together, computes the leg's fragment (data, P or Q) and writes it.
//! A group that fewer than k other legs hold current (more of them stale or away in it
//! than the code survives) is left dirty and the leg's other groups are rebuilt; a pass
//! runs again when a leg comes back or a pass rebuilt anything. A group whose rebuild
//! failed (its queues busy for over a second, or an I/O that failed) is left dirty too,
//! and the work runs again after [`RETRY_MS`], doubled while it keeps failing: nothing
//! else might start it (a write to a group dirty already does not).
//!
//! On an encrypted disk the blocks put together are checked against their seals before
//! the leg's fragment is computed from them: a block that does not verify (a server
//! altered its memory) is put together again from every other current leg, leaving out
//! one leg at a time, then two, up to r, as a read does; the legs left out of the first
//! that verifies are named, counted (`altered=` in `stats`) and their group marked dirty
//! (rebuilt in turn), and a group that no such set verifies is not written. So one lying
//! server's fragments are never copied to the leg being rebuilt, which would leave the
//! block short of one more honest fragment.
//!
//! A write that races the rebuild of its group must not be overwritten by it. The resync
//! names the group it rebuilds (`busy`) before clearing its bit, and a write or read
//! checks the bit and then `busy` (all sequentially consistent): either it sees the group
//! dirty or busy, skips the leg and marks the group again (it is rebuilt once more), or
//! the rebuild had not started, so the rebuild reads what the write left. A write marks
//! the groups it skipped when it ends, after its data is on the other legs.
//!
//! A leg whose server is replaced by an empty one ([`Resync::replace`]) has every group
//! dirty: it comes back into the disk once all its queues are live on the new server
//! ([`Resync::adopted`]), and the same work rebuilds all of it. No read asks it for a
//! group before that group is rebuilt.
//!
//! The rebuild writes at most `rebuild_mbps` MiB/s to the leg (a setting that may change
//! while the disk is enabled), so that it leaves the fabric to the disk's own I/O.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::{
    new_mutex, new_spinlock_irq, new_work,
    prelude::*,
    sync::{Arc, Mutex, SpinLockIrq},
    time::{delay::fsleep, msecs_to_jiffies, Delta, Instant, Monotonic},
    workqueue::{
        impl_has_delayed_work, impl_has_work, new_delayed_work, DelayedWork, Work, WorkItem,
    },
};

use super::{
    dirty::DirtyMap,
    request::{area_of, EcCrypt, LegsOut, ALTERED},
    Leg, Pq, EC_SEGMENTS,
};
use crate::{
    disk::{
        crypt::{RequestCrypt, CRYPT_PAGES},
        ec_layout::{Decode, Layout, LegMask, BLOCK, GROUP_BLOCKS},
    },
    kernel_ext::{
        flush_delayed_work, Combine, Fragment, IoSink, Lost, NoIoScope, ReclaimWorkqueue, SgTable,
    },
    transport::{
        io::Dir,
        queue::{Queue, State},
        waited::WaitedIo,
    },
};

/// `busy` when no group is being rebuilt.
const IDLE: u64 = u64::MAX;

/// Blocks of a group, as a count of pages.
const GROUP_PAGES: usize = GROUP_BLOCKS as usize;

// The crypto state of a request notes the seals of as many blocks as it opens at most: a
// rebuild's run of a group is one such read.
const _: () = assert!(GROUP_PAGES <= CRYPT_PAGES);

/// How often, and how far apart, a rebuild is tried again on a queue that is out of a
/// resource (its send queue full of the disk's I/O) before the group is left dirty.
const BUSY_TRIES: u32 = 100;
const BUSY_WAIT_MS: i64 = 10;

/// The longest the rebuild sleeps at once to keep to its rate.
const PACE_MAX_MS: u64 = 100;

/// How long after a pass in which a rebuild failed the work runs again, at first; each
/// such pass after it doubles the wait, up to [`RETRY_MAX_MS`]; one without resets it.
const RETRY_MS: u32 = 1000;
const RETRY_MAX_MS: u32 = 32_000;

/// Blocks of a group that one work request of each leg moves: the group's, or as many as
/// the legs' queues take pages in one.
struct Run {
    group: u64,
    /// Its first block, and how many.
    first: u64,
    blocks: usize,
    /// Where each leg holds its fragments of them, and their bytes.
    offset: u64,
    bytes: u32,
}

/// What a pass did.
struct Passed {
    /// It rebuilt a group.
    rebuilt: bool,
    /// A rebuild failed, and left its group dirty.
    failed: bool,
}

/// One leg's resynchronisation.
struct LegResync {
    dirty: DirtyMap,
    /// The group being rebuilt on the leg now, or [`IDLE`].
    busy: AtomicU64,
    /// Groups rebuilt so far.
    resynced: AtomicU64,
    /// Blocks a rebuild found altered in the leg's memory: they verified only once put
    /// together without its fragment (each leg so left out counts them, as reads count).
    altered: AtomicU64,
    /// Whether a resync of the leg was announced and has not ended yet.
    syncing: AtomicBool,
    /// Set by [`Resync::replace`]: the leg's server is being replaced, and the leg is out
    /// of the disk until its queues are live on the new one.
    adopting: AtomicBool,
    /// Set by [`Resync::replace`] until its rebuild is announced: all of it is rebuilt.
    new_server: AtomicBool,
    /// The leg's queues: all live means the leg is back; the first carries the resync.
    queues: KVec<Arc<Queue>>,
}

impl LegResync {
    /// Whether the leg's fragment of group `group` is current: not dirty, not being
    /// rebuilt. The bit is read first (see the module's documentation).
    fn is_current(&self, group: u64) -> bool {
        !self.dirty.is_dirty(group) && self.busy.load(Ordering::SeqCst) != group
    }

    /// Whether every queue of the leg is live.
    fn is_back(&self) -> bool {
        self.queues.iter().all(|q| q.state() == State::Live)
    }
}

/// Where a resync puts a group together: a waited I/O per leg, whose pages hold that
/// leg's fragment of each block of the group, the group's blocks, and a page for a P
/// that is computed only to get Q; on an encrypted disk, the crypto state and a page that
/// blocks are opened in to check them.
///
/// Boxed tables keep it `Unpin`, so that its lock's guard lends it mutably.
struct Buffers {
    io: KVec<WaitedIo<EC_SEGMENTS>>,
    blocks: KBox<SgTable<GROUP_PAGES>>,
    p: KBox<SgTable<1>>,
    rc: Option<RequestCrypt>,
    opened: KBox<SgTable<1>>,
}

/// The resynchronisation of a disk's legs.
///
/// Fields are dropped in declaration order; the disk stops the work ([`Resync::stop`])
/// before the last reference goes.
#[pin_data]
pub(super) struct Resync {
    legs: KVec<LegResync>,
    layout: Layout,
    out: Arc<LegsOut>,
    pq: Option<Arc<Pq>>,
    /// The disk's encryption, if it is encrypted: what checks the blocks put together.
    crypt: Option<Arc<EcCrypt>>,
    /// MiB/s the rebuild writes at most (`rebuild_mbps`).
    rate: AtomicU32,
    /// Blocks of a group one work request moves: all of them, or as many as the legs'
    /// queues take pages in one (a mirror's group is 8 pages a leg; soft-iWARP takes 6).
    run_blocks: usize,
    #[pin]
    bufs: Mutex<Buffers>,
    /// Set by [`Resync::stop`]: the work is not queued again.
    #[pin]
    stopped: SpinLockIrq<bool>,
    /// How long the next retry waits, in ms.
    retry_ms: AtomicU32,
    wq: Arc<ReclaimWorkqueue>,
    #[pin]
    work: Work<Resync>,
    /// Starts the work again after a pass in which a rebuild failed.
    #[pin]
    retry: DelayedWork<Resync, 1>,
}

impl_has_work! {
    impl HasWork<Self> for Resync { self.work }
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self, 1> for Resync { self.retry }
}

impl Resync {
    /// The resynchronisation of `legs`, of a disk of `layout` with `pq` for two parity
    /// fragments and `crypt` if it is encrypted, writing at most `mbps` MiB/s in work
    /// requests of at most `max_pages` pages. Its buffers are allocated now (nothing is
    /// allocated once it runs). Sleeps.
    pub(super) fn new(
        legs: &[Leg],
        layout: Layout,
        out: &Arc<LegsOut>,
        pq: Option<&Arc<Pq>>,
        crypt: Option<&Arc<EcCrypt>>,
        mbps: u32,
        max_pages: u32,
    ) -> Result<Arc<Self>> {
        let code = layout.code();
        let run_blocks = code.blocks_per_request(max_pages) as usize;
        // A code without parity never skips a leg: nothing to map.
        let groups = if code.r() > 0 { layout.groups() } else { 0 };
        let pages = (GROUP_PAGES * code.fragment_bytes() as usize).div_ceil(BLOCK as usize);
        let mut states = KVec::with_capacity(legs.len(), GFP_KERNEL)?;
        let mut io = KVec::with_capacity(legs.len(), GFP_KERNEL)?;
        for leg in legs {
            let queues = leg.session.queues();
            let mut mine = KVec::with_capacity(queues.len(), GFP_KERNEL)?;
            for q in queues {
                mine.push(q.clone(), GFP_KERNEL)?;
            }
            if groups > 0 {
                io.push(
                    WaitedIo::new(mine.first().ok_or(EINVAL)?, pages)?,
                    GFP_KERNEL,
                )?;
            }
            states.push(
                LegResync {
                    dirty: DirtyMap::new(groups)?,
                    busy: AtomicU64::new(IDLE),
                    resynced: AtomicU64::new(0),
                    altered: AtomicU64::new(0),
                    syncing: AtomicBool::new(false),
                    adopting: AtomicBool::new(false),
                    new_server: AtomicBool::new(false),
                    queues: mine,
                },
                GFP_KERNEL,
            )?;
        }
        let mut blocks = KBox::new(SgTable::new(), GFP_KERNEL)?;
        let mut p = KBox::new(SgTable::new(), GFP_KERNEL)?;
        let mut opened = KBox::new(SgTable::new(), GFP_KERNEL)?;
        let mut rc = None;
        if groups > 0 {
            blocks.reserve_own_pages(GROUP_PAGES)?;
            p.reserve_own_pages(1)?;
            if let Some(c) = crypt {
                opened.reserve_own_pages(1)?;
                rc = Some(c.disk.request_state()?);
            }
        }
        let wq = Arc::new(ReclaimWorkqueue::new(c"rswap_resync")?, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(Self {
                legs: states,
                layout,
                out: out.clone(),
                pq: pq.cloned(),
                crypt: crypt.cloned(),
                rate: AtomicU32::new(mbps.max(1)),
                run_blocks,
                bufs <- new_mutex!(
                    Buffers {
                        io,
                        blocks,
                        p,
                        rc,
                        opened
                    },
                    "rswap::disk::ec::Resync::bufs"
                ),
                stopped <- new_spinlock_irq!(false, "rswap::disk::ec::Resync::stopped"),
                retry_ms: AtomicU32::new(RETRY_MS),
                wq,
                work <- new_work!("rswap::disk::ec::Resync::work"),
                retry <- new_delayed_work!("rswap::disk::ec::Resync::retry"),
            }),
            GFP_KERNEL,
        )
    }

    /// The legs of `live` whose fragment of group `group` is current. Any context.
    pub(super) fn current(&self, live: LegMask, group: u64) -> LegMask {
        self.legs
            .iter()
            .enumerate()
            .filter(|&(l, leg)| live & (1 << l) != 0 && leg.is_current(group))
            .fold(0, |m, (l, _)| m | 1 << l)
    }

    /// Marks group `group` dirty on every leg of `skipped` (a write did not reach them),
    /// and starts the work if a leg's map was clean there. Any context.
    pub(super) fn mark(this: &Arc<Self>, skipped: LegMask, group: u64) {
        let mut new = false;
        for (l, leg) in this.legs.iter().enumerate() {
            if skipped & (1 << l) != 0 {
                new |= leg.dirty.mark(group);
            }
        }
        if new {
            Self::kick(this);
        }
    }

    /// Starts the work (it rebuilds what it can: legs that are back). Any context.
    pub(super) fn kick(this: &Arc<Self>) {
        let stopped = this.stopped.lock();
        if !*stopped {
            // Already queued: it will see this too.
            let _ = this.wq.enqueue::<_, 0>(this.clone());
        }
    }

    /// Starts the work again in [`Resync::retry_ms`] ms, and doubles that for the next
    /// time, unless a retry is waiting already (it comes first). Any context.
    fn retry_later(this: &Arc<Self>) {
        let ms = this.retry_ms.load(Ordering::Relaxed);
        let stopped = this.stopped.lock();
        if *stopped {
            return;
        }
        let queued = this
            .wq
            .enqueue_delayed::<_, 1>(this.clone(), msecs_to_jiffies(ms));
        if queued.is_ok() {
            this.retry_ms
                .store(ms.saturating_mul(2).min(RETRY_MAX_MS), Ordering::Relaxed);
        }
    }

    /// Sets the rate the rebuild writes at, at most, in MiB/s (0 is taken as 1).
    pub(super) fn set_rate(&self, mbps: u32) {
        self.rate.store(mbps.max(1), Ordering::Relaxed);
    }

    /// Sleeps as long as writing `written` bytes since `start` at the rate takes beyond
    /// the time it took, if that is a millisecond or more, and [`PACE_MAX_MS`] at most
    /// (the next group sleeps again if need be; a stop waits no longer).
    fn pace(&self, start: Instant<Monotonic>, written: u64) {
        let mbps = u64::from(self.rate.load(Ordering::Relaxed).max(1));
        let due_ns = written.saturating_mul(1_000_000_000) / (mbps << 20);
        let took_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let ahead_ms = due_ns.saturating_sub(took_ns) / 1_000_000;
        if ahead_ms >= 1 {
            fsleep(Delta::from_millis(ahead_ms.min(PACE_MAX_MS) as i64));
        }
    }

    /// Stops the work for good and waits until it is not running. Sleeps.
    pub(super) fn stop(&self) {
        *self.stopped.lock() = true;
        // A retry waiting for its delay runs now and queues nothing (it sees `stopped`);
        // the work queues no retry from now on.
        flush_delayed_work(&self.retry);
        self.wq.flush();
    }

    fn is_stopped(&self) -> bool {
        *self.stopped.lock()
    }

    /// Leg `leg`, out of the disk, gets an empty server: every group of it is dirty from
    /// now on, and it stays out until [`Resync::adopted`] finds its queues live there.
    /// `EINVAL` for a code without parity (nothing to rebuild it from).
    pub(super) fn replace(&self, leg: usize) -> Result {
        let l = self.legs.get(leg).ok_or(EINVAL)?;
        if l.dirty.groups() == 0 {
            return Err(EINVAL);
        }
        l.dirty.mark_all();
        l.syncing.store(false, Ordering::Relaxed);
        l.new_server.store(true, Ordering::Relaxed);
        l.adopting.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// A queue of leg `leg` reconnected. If the leg's server is being replaced and every
    /// queue of it is live on the new one, brings it into the disk, where the next
    /// [`Resync::kick`] rebuilds it; unless the new server gave it the region of another leg of the disk (the
    /// same server twice: one server lost would lose two fragments of every block), or
    /// its queues different regions: then its queues are disconnected and it stays out.
    /// Sleeps.
    pub(super) fn adopted(this: &Arc<Self>, leg: usize) {
        let Some(me) = this.legs.get(leg) else {
            return;
        };
        if !me.is_back() || !me.adopting.swap(false, Ordering::SeqCst) {
            return;
        }
        let region = |l: &LegResync| {
            l.queues
                .first()
                .and_then(|q| q.installed_descriptor())
                .map(|d| d.region_id)
        };
        let mine = region(me);
        let split = me
            .queues
            .iter()
            .any(|q| q.installed_descriptor().map(|d| d.region_id) != mine);
        let shared = this
            .legs
            .iter()
            .enumerate()
            .find(|&(m, other)| m != leg && region(other) == mine);
        let Some(first) = me.queues.first() else {
            return;
        };
        if split || shared.is_some() {
            match shared {
                Some((m, _)) => pr_err!(
                    "{}: its new server gave it the region of leg {}: the same server \
                     twice? It stays out of the disk\n",
                    first.name(),
                    m
                ),
                None => pr_err!(
                    "{}: its new server gave its queues different regions; it stays out \
                     of the disk\n",
                    first.name()
                ),
            }
            for q in me.queues.iter() {
                q.disconnect();
            }
            return;
        }
        pr_info!(
            "{}: in the disk again, on its new server (region {})\n",
            first.name(),
            mine.unwrap_or(0)
        );
        this.out.bring_in(leg);
    }

    /// Leg `leg`'s groups dirty now and rebuilt so far, and the blocks its rebuilds found
    /// altered in its memory.
    pub(super) fn counts(&self, leg: usize) -> (u64, u64, u64) {
        self.legs.get(leg).map_or((0, 0, 0), |l| {
            (
                l.dirty.count(),
                l.resynced.load(Ordering::Relaxed),
                l.altered.load(Ordering::Relaxed),
            )
        })
    }

    /// One pass over the legs that are back: rebuilds their dirty groups, but those too
    /// few other legs hold current. Whether it rebuilt any (a group dirtied meanwhile, or
    /// one that another leg's rebuild made current, may be left for another pass), and
    /// whether a rebuild failed.
    fn pass(&self, bufs: &mut Buffers) -> Passed {
        let mut passed = Passed {
            rebuilt: false,
            failed: false,
        };
        for (l, leg) in self.legs.iter().enumerate() {
            if self.out.mask() & (1 << l) != 0 || !leg.is_back() {
                continue;
            }
            let Some(first) = leg.dirty.next(0) else {
                continue;
            };
            let name = leg.queues.first().map(|q| q.name());
            if let (Some(name), false) = (name, leg.syncing.swap(true, Ordering::Relaxed)) {
                if leg.new_server.swap(false, Ordering::Relaxed) {
                    pr_info!(
                        "{}: rebuilding all {} groups on its new server from the others\n",
                        name,
                        leg.dirty.count()
                    );
                } else {
                    pr_info!(
                        "{}: back: rebuilding the {} groups written while it was away\n",
                        name,
                        leg.dirty.count()
                    );
                }
            }
            let (mut group, mut done) = (Some(first), 0u64);
            let (start, mut written) = (Instant::now(), 0u64);
            // Groups that too few other legs hold current now, and groups of an
            // encrypted disk that verify from no set of them: how many, the first.
            let (mut short, mut first_short) = (0u64, None);
            let (mut unverified, mut first_unverified) = (0u64, None);
            while let Some(g) = group {
                if self.is_stopped() {
                    return passed;
                }
                // Not to be had now (more legs stale or away in it than the code
                // survives): left dirty, the leg's other groups are rebuilt. A leg that
                // comes back starts another pass.
                if self.plan(l, g).is_none() {
                    short += 1;
                    first_short.get_or_insert(g);
                    group = leg.dirty.next(g + 1);
                    continue;
                }
                leg.busy.store(g, Ordering::SeqCst);
                leg.dirty.clear(g);
                let mut rebuilt = self.rebuild(bufs, l, g);
                // A queue full of the disk's own I/O: it drains soon.
                for _ in 0..BUSY_TRIES {
                    if rebuilt != Err(EBUSY) {
                        break;
                    }
                    fsleep(Delta::from_millis(BUSY_WAIT_MS));
                    rebuilt = self.rebuild(bufs, l, g);
                }
                if rebuilt.is_err() {
                    leg.dirty.mark(g);
                }
                leg.busy.store(IDLE, Ordering::SeqCst);
                // Its blocks do not verify from the legs read (more of them lie than the
                // code leaves out): the leg's other groups are rebuilt, this one is tried
                // again later.
                if rebuilt == Err(EBADMSG) {
                    unverified += 1;
                    first_unverified.get_or_insert(g);
                    passed.failed = true;
                    group = leg.dirty.next(g + 1);
                    continue;
                }
                if let Err(e) = rebuilt {
                    if let Some(name) = name {
                        pr_warn!(
                            "{}: rebuilding group {} failed ({:?}); {} groups left dirty, \
                             trying again in {} ms\n",
                            name,
                            g,
                            e,
                            leg.dirty.count(),
                            self.retry_ms.load(Ordering::Relaxed)
                        );
                    }
                    passed.failed = true;
                    break;
                }
                done += 1;
                written += self.group_bytes(g);
                self.pace(start, written);
                group = leg.dirty.next(g + 1);
            }
            if let (Some(name), Some(g)) = (name, first_unverified) {
                pr_warn!(
                    "{}: {} groups verify from no set of the other legs now, from group {}; {} groups left dirty, trying again in {} ms\n",
                    name,
                    unverified,
                    g,
                    leg.dirty.count(),
                    self.retry_ms.load(Ordering::Relaxed)
                );
            }
            if let (Some(name), Some(g)) = (name, first_short) {
                pr_warn!(
                    "{}: {} groups cannot be rebuilt now, from group {}: too few other legs hold them current; {} groups left dirty\n",
                    name,
                    short,
                    g,
                    leg.dirty.count()
                );
            }
            if done > 0 {
                leg.resynced.fetch_add(done, Ordering::Relaxed);
                passed.rebuilt = true;
            }
            if leg.dirty.count() == 0 && leg.syncing.swap(false, Ordering::Relaxed) {
                if let Some(name) = name {
                    pr_info!(
                        "{}: in sync: {} groups rebuilt since the disk was enabled\n",
                        name,
                        leg.resynced.load(Ordering::Relaxed)
                    );
                }
            }
        }
        passed
    }

    /// Blocks of group `g` (the last group of the disk may be partial).
    fn group_blocks(&self, g: u64) -> u64 {
        let first = g * GROUP_BLOCKS;
        self.layout.blocks().saturating_sub(first).min(GROUP_BLOCKS)
    }

    /// Bytes of each leg's fragments of group `g`.
    fn group_bytes(&self, g: u64) -> u64 {
        self.group_blocks(g) * self.layout.code().fragment_bytes()
    }

    /// The legs but `l` that may give their fragments of group `g`: in the disk, back and
    /// current there.
    fn sources(&self, l: usize, g: u64) -> LegMask {
        self.legs
            .iter()
            .enumerate()
            .filter(|&(m, leg)| {
                m != l && self.out.mask() & (1 << m) == 0 && leg.is_back() && leg.is_current(g)
            })
            .fold(0, |mask: LegMask, (m, _)| mask | 1 << m)
    }

    /// The legs to read group `g` from to rebuild it on leg `l`: k of its
    /// [`Resync::sources`]; `None` if fewer are.
    fn plan(&self, l: usize, g: u64) -> Option<LegMask> {
        self.layout.read_plan(g, self.sources(l, g), 0)
    }

    /// The queue of leg `m` that carries the resync.
    fn queue(&self, m: usize) -> Result<&Arc<Queue>> {
        self.legs
            .get(m)
            .and_then(|leg| leg.queues.first())
            .ok_or(EINVAL)
    }

    /// Rebuilds leg `l`'s fragment of every block of group `g` from the legs
    /// [`Resync::plan`] names now (each try asks again: legs come and go), a run of
    /// [`Resync::run_blocks`] blocks at a time. `EBADMSG` if blocks of an encrypted disk
    /// do not verify from any set of legs [`Resync::without_liars`] tries.
    fn rebuild(&self, bufs: &mut Buffers, l: usize, g: u64) -> Result {
        let layout = &self.layout;
        let f = layout.code().fragment_bytes() as usize;
        let fragment = layout.fragment_on(g, l as u8);
        let (blocks, mut done) = (self.group_blocks(g) as usize, 0);
        while done < blocks {
            let n = (blocks - done).min(self.run_blocks);
            let first = g * GROUP_BLOCKS + done as u64;
            let run = Run {
                group: g,
                first,
                blocks: n,
                offset: layout.remote_offset(first),
                bytes: u32::try_from(n * f).map_err(|_| EINVAL)?,
            };
            // The seals first, then the legs to read: a write that skipped a leg marked
            // the group dirty there before it committed its seals, so a leg read as
            // current holds what the noted seals say, or the block was written since (a
            // race, not a lie). A leg found lying in an earlier run is dirty now.
            self.note_seals(bufs, &run)?;
            let sources = self.sources(l, g);
            let plan = layout.read_plan(g, sources, 0).ok_or(EIO)?;
            self.move_run(bufs, plan, Dir::Read, &run)?;
            self.put_together(bufs, g, layout.decode(g, plan), n)?;
            let altered = self.unverified(bufs, &run, u64::MAX)?;
            if altered != 0 {
                self.without_liars(bufs, l, sources, plan, &run, altered)?;
            }
            self.fragment_of(bufs, l, fragment, n)?;
            self.move_run(bufs, 1 << l, Dir::Write, &run)?;
            done += n;
        }
        Ok(())
    }

    /// Moves the fragments of `run` `dir` between each leg of `legs` and its pages.
    fn move_run(&self, bufs: &mut Buffers, legs: LegMask, dir: Dir, run: &Run) -> Result {
        for m in (0..self.legs.len()).filter(|m| legs & (1 << m) != 0) {
            bufs.io
                .get_mut(m)
                .ok_or(EINVAL)?
                .run(self.queue(m)?, dir, run.offset, run.bytes)?;
        }
        Ok(())
    }

    /// On an encrypted disk, notes the seals of the blocks of `run` before they are read,
    /// to tell one a write changed meanwhile from one a server altered; `EBUSY` while a
    /// write of one is under way.
    fn note_seals(&self, bufs: &mut Buffers, run: &Run) -> Result {
        let (Some(crypt), Some(rc)) = (&self.crypt, bufs.rc.as_mut()) else {
            return Ok(());
        };
        let bytes = u32::try_from(run.blocks as u64 * BLOCK).map_err(|_| EINVAL)?;
        crypt
            .disk
            .read_begin(rc, run.first * BLOCK, bytes)
            .map_err(|_| EBUSY)
    }

    /// How many of the blocks of `run` put together in `bufs.blocks` are not what the disk
    /// last wrote ([`DiskCrypt::verifies`](crate::disk::crypt::DiskCrypt::verifies)),
    /// each opened in a page of its own, counting up to `limit`; none on a disk that is
    /// not encrypted.
    fn unverified(&self, bufs: &mut Buffers, run: &Run, limit: u64) -> Result<u64> {
        let Some(crypt) = &self.crypt else {
            return Ok(0);
        };
        let Buffers {
            blocks, rc, opened, ..
        } = bufs;
        let rc = rc.as_mut().ok_or(EINVAL)?;
        let copy = opened.own_pages().next().ok_or(EINVAL)?;
        let mut bad = 0;
        for (i, block) in blocks.own_pages().take(run.blocks).enumerate() {
            copy.combine(0, IoSink::page(&block), 0, BLOCK as usize, Combine::Copy)?;
            let verifies = crypt
                .disk
                .verifies(rc, &copy, run.first + i as u64, i)
                .map_err(|_| EIO)?;
            if !verifies {
                bad += 1;
                if bad >= limit {
                    break;
                }
            }
        }
        Ok(bad)
    }

    /// `altered` blocks of `run`, read from the legs of `plan` and rebuilt for leg `l`, do
    /// not verify: reads `run` from the other legs of `sources` too, and puts it together
    /// from them without one leg at a time, then two, up to r ([`Layout::exclusions`]).
    /// The legs left out of the first set that verifies altered their memory: each is
    /// named, counted and the group marked dirty on it. `EBADMSG` if no set verifies.
    fn without_liars(
        &self,
        bufs: &mut Buffers,
        l: usize,
        sources: LegMask,
        plan: LegMask,
        run: &Run,
        altered: u64,
    ) -> Result {
        let g = run.group;
        self.move_run(bufs, sources & !plan, Dir::Read, run)?;
        // Leaving none out puts together what did not verify.
        for leave_out in self.layout.exclusions(g, sources).filter(|&out| out != 0) {
            let decode = self.layout.decode(g, sources & !leave_out);
            self.put_together(bufs, g, decode, run.blocks)?;
            if self.unverified(bufs, run, 1)? != 0 {
                continue;
            }
            for (m, leg) in self.legs.iter().enumerate() {
                if leave_out & (1 << m) == 0 {
                    continue;
                }
                leg.dirty.mark(g);
                leg.altered.fetch_add(altered, Ordering::Relaxed);
                let n = ALTERED.fetch_add(1, Ordering::Relaxed);
                if let (Some(q), true) = (leg.queues.first(), n < 20 || n % 1000 == 0) {
                    pr_warn!(
                        "{}: group {} did not verify with its fragments when rebuilding leg \
                         {}; rebuilt without them: its server altered its memory\n",
                        q.name(),
                        g,
                        l
                    );
                }
            }
            return Ok(());
        }
        Err(EBADMSG)
    }

    /// Puts the first `blocks` blocks of group `g` together in `bufs.blocks` from the
    /// fragments read into the legs' pages, as `decode` says.
    fn put_together(&self, bufs: &mut Buffers, g: u64, decode: Decode, blocks: usize) -> Result {
        let layout = &self.layout;
        let code = layout.code();
        let (k, f) = (code.k(), code.fragment_bytes() as usize);
        let leg = |j: u8| usize::from(layout.leg_of(g, j));
        let Buffers {
            io, blocks: out, ..
        } = bufs;
        if code.is_replication() {
            let j = match decode {
                Decode::Direct => 0,
                Decode::Copy(j) => j,
                _ => return Err(EIO),
            };
            return copy_fragments(io, leg(j), out, 0, f, blocks);
        }
        let missing: LegMask = match decode {
            Decode::Direct => 0,
            Decode::Xor { missing } => 1 << missing,
            Decode::PQData { a } => 1 << a,
            Decode::PQ2Data { a, b } => (1 << a) | (1 << b),
            Decode::Copy(_) | Decode::Impossible => return Err(EIO),
        };
        for j in (0..k).filter(|j| missing & (1 << j) == 0) {
            copy_fragments(io, leg(j), out, usize::from(j) * f, f, blocks)?;
        }
        match decode {
            Decode::Xor { missing } => {
                let m = usize::from(missing) * f;
                copy_fragments(io, leg(k), out, m, f, blocks)?;
                for j in (0..k).filter(|&j| j != missing) {
                    for page in out.own_pages().take(blocks) {
                        page.combine(m, IoSink::page(&page), usize::from(j) * f, f, Combine::Xor)?;
                    }
                }
                Ok(())
            }
            Decode::PQData { a } => self.recover(io, out, g, Lost::DataAndP(a), blocks),
            Decode::PQ2Data { a, b } => self.recover(io, out, g, Lost::TwoData(a, b), blocks),
            _ => Ok(()),
        }
    }

    /// Rebuilds the data fragments `lost` of the first `blocks` blocks in `out` from P and
    /// Q in their legs' pages (RAID-6).
    fn recover(
        &self,
        io: &mut [WaitedIo<EC_SEGMENTS>],
        out: &mut SgTable<GROUP_PAGES>,
        g: u64,
        lost: Lost,
        blocks: usize,
    ) -> Result {
        let code = self.layout.code();
        let (k, f) = (code.k(), code.fragment_bytes() as usize);
        let pq = self.pq.as_ref().ok_or(EIO)?;
        let p_leg = usize::from(self.layout.leg_of(g, k));
        let q_leg = usize::from(self.layout.leg_of(g, k + 1));
        let (p_io, q_io) = pair_mut(io, p_leg, q_leg).ok_or(EINVAL)?;
        let mut scratch = pq.scratch.lock();
        for (i, block) in out.own_pages().take(blocks).enumerate() {
            let (p, off) = area_of(p_io.table()?, i, f).ok_or(EINVAL)?;
            let (q, _) = area_of(q_io.table()?, i, f).ok_or(EINVAL)?;
            let (p, q) = (IoSink::page(&p), IoSink::page(&q));
            pq.raid6.recover(
                &mut scratch,
                usize::from(k),
                f,
                &block,
                [
                    Fragment {
                        page: p,
                        offset: off,
                    },
                    Fragment {
                        page: q,
                        offset: off,
                    },
                ],
                lost,
            )?;
        }
        Ok(())
    }

    /// Computes fragment `j` of the first `blocks` blocks in `bufs.blocks` into leg `l`'s
    /// pages: a data fragment, P (their XOR) or Q (RAID-6).
    fn fragment_of(&self, bufs: &mut Buffers, l: usize, j: u8, blocks: usize) -> Result {
        let code = self.layout.code();
        let (k, f) = (code.k(), code.fragment_bytes() as usize);
        let Buffers {
            io,
            blocks: data,
            p,
            ..
        } = bufs;
        let io = io.get_mut(l).ok_or(EINVAL)?;
        for (i, block) in data.own_pages().take(blocks).enumerate() {
            let (dst, off) = area_of(io.table()?, i, f).ok_or(EINVAL)?;
            let src = IoSink::page(&block);
            if code.is_replication() || j < k {
                let from = if code.is_replication() {
                    0
                } else {
                    usize::from(j) * f
                };
                dst.combine(off, src, from, f, Combine::Copy)?;
            } else if j == k {
                dst.combine(off, src, 0, f, Combine::Copy)?;
                for d in 1..usize::from(k) {
                    dst.combine(off, src, d * f, f, Combine::Xor)?;
                }
            } else {
                let pq = self.pq.as_ref().ok_or(EIO)?;
                let p_page = p.own_pages().next().ok_or(EINVAL)?;
                pq.raid6
                    .gen(usize::from(k), f, &block, (&p_page, 0), (&dst, off))?;
            }
        }
        Ok(())
    }
}

impl WorkItem for Resync {
    type Pointer = Arc<Resync>;

    fn run(this: Arc<Resync>) {
        // Swap I/O may be what reclaim waits on: allocate nothing that starts I/O.
        let _noio = NoIoScope::enter();
        let mut bufs = this.bufs.lock();
        let mut failed = false;
        while !this.is_stopped() {
            let passed = this.pass(&mut bufs);
            failed = passed.failed;
            if !passed.rebuilt {
                break;
            }
        }
        drop(bufs);
        if failed {
            Resync::retry_later(&this);
        } else {
            this.retry_ms.store(RETRY_MS, Ordering::Relaxed);
        }
    }
}

/// The retry after a pass in which a rebuild failed: the work again.
impl WorkItem<1> for Resync {
    type Pointer = Arc<Resync>;

    fn run(this: Arc<Resync>) {
        Resync::kick(&this);
    }
}

/// Copies the fragment (`f` bytes) of each of the first `blocks` blocks that leg `leg`
/// read into its pages to bytes `dst..dst + f` of the block in `out`.
fn copy_fragments(
    io: &mut [WaitedIo<EC_SEGMENTS>],
    leg: usize,
    out: &mut SgTable<GROUP_PAGES>,
    dst: usize,
    f: usize,
    blocks: usize,
) -> Result {
    let io = io.get_mut(leg).ok_or(EINVAL)?;
    for (i, block) in out.own_pages().take(blocks).enumerate() {
        let (src, off) = area_of(io.table()?, i, f).ok_or(EINVAL)?;
        block.combine(dst, IoSink::page(&src), off, f, Combine::Copy)?;
    }
    Ok(())
}

/// Two distinct elements of `v`, mutably.
fn pair_mut<T>(v: &mut [T], a: usize, b: usize) -> Option<(&mut T, &mut T)> {
    if a == b || a.max(b) >= v.len() {
        return None;
    }
    if a < b {
        let (x, y) = v.split_at_mut(b);
        Some((x.get_mut(a)?, y.first_mut()?))
    } else {
        let (x, y) = v.split_at_mut(a);
        Some((y.first_mut()?, x.get_mut(b)?))
    }
}
