// SPDX-License-Identifier: GPL-2.0

//! The data path of a disk over several servers: each block request is fanned out
//! ([`crate::blk::FanOut`]) to one I/O per leg it needs, on that leg's queue of the
//! request's hardware queue. Each leg's I/O moves its fragment of every page of the
//! request, at byte `block * fragment` of the leg's region: a data fragment straight from
//! or into the pages (bytes `j * fragment` of each; the whole page for replication), a
//! parity fragment (k > 1) from or into the slot's own pages, its *area*.
//!
//! - A write goes to every leg that is in the disk, live and current in its group. Its
//!   parity (XOR of the data fragments, r = 1) is computed into the parity leg's area
//!   before anything is posted. With parity it goes on without a leg that is reconnecting
//!   (or stale in the group) while k legs take it. When it ends it marks the group in
//!   the dirty map of every leg it did not reach, out of the disk too ([`super::resync`]
//!   rebuilds them once the leg is back, or its server replaced).
//! - A read asks the legs of the data fragments; for a leg that is out of the disk,
//!   reconnecting or stale in the group it asks the parity leg (or another copy) instead,
//!   and rebuilds the missing fragment of each page from parity once every leg is back.
//! - With `extra_reads` d > 0 a read also asks d more parity legs (late binding), and every
//!   leg reads into its area instead of the pages: the read's data is put together and
//!   ended ([`crate::blk::fanout::Settler`]) as soon as the fragments back decode with
//!   copies and XOR, while the slowest legs are still out; they land in the areas, and the
//!   tag is given back once they are all back. Combinations that need P and Q wait for
//!   every leg and are rebuilt in the disk's workqueue. Where a READ must land in one
//!   page-contiguous range (iWARP), a striped code's reads go through the areas too.
//! - A leg whose queue is dead (its server gone for longer than `recovery_ms`, or back
//!   without its region) is taken out of the disk for good ([`LegsOut`]): it missed
//!   writes, so it is never read again; the disk goes on while at least k legs are in.
//!
//! The request ends when every leg's I/O is back: with success if the write reached k
//! legs or more (the others being out now) or the read has every fragment it asked for;
//! otherwise it is issued again (a leg reconnecting, up to [`MAX_RETRIES`] times) or
//! fails.

use core::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use kernel::{
    prelude::*,
    sync::Arc,
    time::{Instant, Monotonic},
};

use super::{
    super::ec_layout::{Decode, LegMask, MAX_LEGS},
    resync::Resync,
    Layout, Leg, Pq, EC_SEGMENTS,
};
use crate::{
    blk::{
        self, FanOut, Filled, HwCtxSlot, Op, PartMask, PartsBack, Released, Request, RequestPart,
        RqPages, SettledRequest, Settler, Status, TimedOutRequest, TimeoutAction,
    },
    disk::{
        crypt::{CryptError, DiskCrypt, RequestCrypt, CRYPT_PAGES},
        ec_layout::BLOCK,
        request::{log_failure, MAX_RETRIES},
        stats::{QueueStats, Snapshot},
    },
    kernel_ext::{Combine, Fragment, IoSink, IoSource, Lost, OwnPage, Raid6, SgTable},
    transport::{
        io::{Dir, IoDesc, IoError, IoOwner, IoSlot, QueueCounters, Refusal},
        queue::{Queue, State, Verdict},
    },
};

/// One leg's transport slot of a request: its scatterlist has an entry per page.
type LegSlot = IoSlot<LegData, EC_SEGMENTS>;

/// The disk's own data in a leg's slot: on an encrypted disk, leg 0's slot holds the
/// request's crypto state (used only while the whole request is owned, never while a
/// leg's I/O is out).
#[derive(Default)]
pub(crate) struct LegData {
    crypt: Option<KBox<SlotCrypt>>,
}

/// A request's crypto state on an encrypted disk: its crypto request and seals, and the
/// bounce pages a write is sealed into before it is cut into fragments.
struct SlotCrypt {
    rc: RequestCrypt,
    bounce: SgTable<CRYPT_PAGES>,
}

/// The legs taken out of a disk (see the module's documentation), shared by its hardware
/// queues.
#[derive(Default)]
pub(crate) struct LegsOut(AtomicU16);

impl LegsOut {
    /// The legs out.
    pub(super) fn mask(&self) -> LegMask {
        self.0.load(Ordering::Acquire)
    }

    /// Brings leg `leg` back in: its server was replaced, and its groups are rebuilt.
    pub(super) fn bring_in(&self, leg: usize) {
        self.0.fetch_and(!(1 << leg), Ordering::AcqRel);
    }

    /// Takes leg `leg` (whose queue is `queue`) out, saying why the first time.
    pub(super) fn take_out(&self, leg: usize, queue: &Queue, why: &str) {
        let bit = 1 << leg;
        if self.0.fetch_or(bit, Ordering::AcqRel) & bit == 0 {
            pr_err!(
                "{}: out of the disk: {}; its fragments are rebuilt from the other servers \
                 from now on\n",
                queue.name(),
                why
            );
        }
    }
}

/// What a request's legs share: how those that did not succeed failed (a leg mask each),
/// and how a read's pages are rebuilt.
#[derive(Default)]
pub(crate) struct EcShared {
    /// Legs out of a resource: issue the request again, not counted as a retry.
    busy: AtomicU16,
    /// Legs whose queue is reconnecting: issue it again once they are back.
    retry: AtomicU16,
    /// Legs whose queue is dead: they go out of the disk.
    dead: AtomicU16,
    /// For a read: how its pages are rebuilt once every leg is back.
    rebuild: Option<Rebuild>,
    /// A read whose legs all read into their areas, so that it may end before the last
    /// of them is back (`extra_reads`), or because its READs must land in whole pages.
    late: bool,
    /// For a late read that ended early: the legs back when it did.
    back_at_end: AtomicU16,
    /// An encrypted read whose block did not verify, issued again to every leg that has
    /// the group, to be rebuilt without up to r legs' fragments ([`verify_read`]).
    verify: bool,
    /// Times this request was issued again because a leg's queue failed.
    retries: u8,
    /// When it was issued, for the latency histogram.
    issued: Option<Instant<Monotonic>>,
}

impl EcShared {
    fn note(&self, leg: usize, why: &AtomicU16) {
        why.fetch_or(1 << leg, Ordering::AcqRel);
    }

    fn failed(&self, leg: usize, verdict: Verdict) {
        self.note(
            leg,
            match verdict {
                Verdict::Retry => &self.retry,
                Verdict::Fail => &self.dead,
            },
        );
    }

    fn refused(&self, leg: usize, r: Refusal) {
        self.note(
            leg,
            match r {
                Refusal::Busy => &self.busy,
                Refusal::Wait => &self.retry,
                Refusal::Fail(_) => &self.dead,
            },
        );
    }
}

/// How a read's pages are rebuilt from parity once every leg is back.
#[derive(Clone, Copy)]
enum Rebuild {
    /// Data fragment `missing` from P (in leg `p_leg`'s area) and the other data
    /// fragments: in the completion.
    Xor { missing: u8, p_leg: u8 },
    /// `lost` from P and Q (in the areas of `p_leg` and `q_leg`) and the other data
    /// fragments: in the disk's workqueue.
    Pq { lost: Lost, p_leg: u8, q_leg: u8 },
}

/// A request's data: a transport slot per leg, and what they share.
pub(crate) type EcRequestData = FanOut<LegSlot, EcShared, MAX_LEGS>;

/// A leg's I/O of a request.
type LegIo = RequestPart<LegSlot, EcShared, MAX_LEGS, EcQueue>;

/// A request of the disk.
type EcRequest = Request<super::EcDriver>;

/// A hardware queue of the disk: the same-numbered queue of each leg, its blk-mq context
/// (stopped while a leg it needs reconnects), its counters, the disk's layout and its legs
/// out.
pub(crate) struct EcQueue {
    legs: KVec<Arc<Queue>>,
    /// Leg 0's queue, standing in for an index that is not a leg (never asked for: parts
    /// exist only for legs).
    first: Arc<Queue>,
    ctx: Arc<HwCtxSlot>,
    stats: QueueStats,
    layout: Layout,
    out: Arc<LegsOut>,
    /// A disk with two parity fragments: the RAID-6 library and where it works.
    pq: Option<Arc<Pq>>,
    /// How reads are made.
    reads: Reads,
    /// Reads ended before every leg they asked was back.
    early: AtomicU64,
    /// Each leg's I/O of this hardware queue's requests.
    leg_io: [LegCounters; MAX_LEGS],
    /// Which groups each leg missed, and their rebuild.
    resync: Arc<Resync>,
    /// The disk's encryption, if it is encrypted.
    crypt: Option<Arc<EcCrypt>>,
}

/// The encryption of a disk over several servers: what a plain disk has, and whether
/// reads are opened in the workqueue rather than in their completion.
pub(super) struct EcCrypt {
    pub(super) disk: DiskCrypt,
    pub(super) open_in_wq: bool,
}

/// How a disk's reads are made.
#[derive(Clone, Copy)]
pub(super) struct Reads {
    /// Parity legs a read asks beyond those it needs (`extra_reads`, at most r).
    pub(super) extra: u8,
    /// Every read lands in the legs' areas, even with no extra leg: a READ must land in
    /// one page-contiguous range (iWARP), and a fragment is a piece of each page.
    pub(super) areas: bool,
}

/// What one leg did for one hardware queue.
#[derive(Default)]
struct LegCounters {
    reads: AtomicU64,
    writes: AtomicU64,
    errors: AtomicU64,
    late: AtomicU64,
    altered: AtomicU64,
}

/// One leg's counters for `stats`, summed over the hardware queues.
#[derive(Default, Clone, Copy)]
pub(super) struct LegTotals {
    /// Its reads and writes that came back with success.
    pub(super) reads: u64,
    pub(super) writes: u64,
    /// Its I/O that failed.
    pub(super) errors: u64,
    /// Its reads that came back after their read had ended.
    pub(super) late: u64,
    /// Blocks of an encrypted disk that verified only once rebuilt without its fragment.
    pub(super) altered: u64,
}

impl EcQueue {
    fn leg(&self, i: usize) -> &Arc<Queue> {
        self.legs.get(i).unwrap_or(&self.first)
    }

    /// (reads ended before their slowest leg, legs' reads back after their read ended).
    pub(super) fn late_binding(&self) -> (u64, u64) {
        let late = self
            .leg_io
            .iter()
            .map(|c| c.late.load(Ordering::Relaxed))
            .sum();
        (self.early.load(Ordering::Relaxed), late)
    }

    /// Takes the legs in `dead` (whose queues died under a request) out of the disk.
    fn take_out_dead(&self, dead: u32) {
        for leg in (0..MAX_LEGS).filter(|l| dead & (1 << l) != 0) {
            self.out.take_out(leg, self.leg(leg), "its queue is dead");
        }
    }

    /// Adds what leg `leg` did for this hardware queue to `t`.
    pub(super) fn add_leg(&self, leg: usize, t: &mut LegTotals) {
        if let Some(c) = self.leg_io.get(leg) {
            let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
            t.reads += get(&c.reads);
            t.writes += get(&c.writes);
            t.errors += get(&c.errors);
            t.late += get(&c.late);
            t.altered += get(&c.altered);
        }
    }

    /// Counts leg `leg`'s I/O of a `op` request, `ok` or not.
    fn count_leg(&self, leg: usize, op: Op, ok: bool) {
        let Some(c) = self.leg_io.get(leg) else {
            return;
        };
        let counter = match (ok, op) {
            (false, _) => &c.errors,
            (true, Op::Write) => &c.writes,
            (true, _) => &c.reads,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The hardware queue's counters, with those of its queues on every leg summed.
    pub(super) fn snapshot(&self) -> Snapshot {
        let mut sum = QueueCounters::default();
        for q in self.legs.iter() {
            sum.add(&q.counters());
        }
        self.stats.snapshot(sum)
    }
}

/// One hardware queue per queue of a leg (every leg has as many): queue `i` of each leg
/// resumes hardware queue `i` when it is back.
pub(super) fn hw_queues(
    legs: &[Leg],
    layout: Layout,
    out: &Arc<LegsOut>,
    pq: Option<&Arc<Pq>>,
    reads: Reads,
    resync: &Arc<Resync>,
    crypt: Option<&Arc<EcCrypt>>,
) -> Result<KVec<EcQueue>> {
    let count = legs.first().map_or(0, |l| l.session.queues().len());
    let mut hw = KVec::with_capacity(count, GFP_KERNEL)?;
    for i in 0..count {
        let ctx = HwCtxSlot::new()?;
        let mut queues = KVec::with_capacity(legs.len(), GFP_KERNEL)?;
        for leg in legs {
            let q = leg.session.queues().get(i).ok_or(EINVAL)?;
            q.set_resume(ctx.clone());
            queues.push(q.clone(), GFP_KERNEL)?;
        }
        let first = queues.first().ok_or(EINVAL)?.clone();
        hw.push(
            EcQueue {
                legs: queues,
                first,
                ctx,
                stats: QueueStats::default(),
                layout,
                out: out.clone(),
                pq: pq.cloned(),
                reads,
                early: AtomicU64::new(0),
                leg_io: Default::default(),
                resync: resync.clone(),
                crypt: crypt.cloned(),
            },
            GFP_KERNEL,
        )?;
    }
    Ok(hw)
}

/// A leg's I/O is an I/O of the transport while it is issued.
impl IoOwner for LegIo {
    type Slot = LegSlot;

    fn slot(&mut self) -> &mut LegSlot {
        self.part()
    }

    fn queue(&self) -> &Arc<Queue> {
        self.info().hw_queue().leg(self.part_index())
    }

    fn complete(self, result: core::result::Result<(), IoError>) {
        leg_done(self, result);
    }
}

/// A leg's I/O came back (or was never taken): note how, and finish the request if it was
/// the last.
fn leg_done(io: LegIo, result: core::result::Result<(), IoError>) {
    let info = io.info();
    info.hw_queue()
        .count_leg(io.part_index(), info.op(), result.is_ok());
    if let Err(e) = &result {
        io.shared().failed(io.part_index(), e.verdict);
        if log_failure() {
            let queue = io.queue();
            pr_err!(
                "{}: queue {}: I/O at sector {} failed: {} (status {})\n",
                queue.name(),
                queue.index(),
                info.sector(),
                e.why,
                e.status
            );
        }
    }
    // A late read may end once the legs back decode in this context: none of its legs
    // reads into the pages (every quorum holds them all, as the fan-out wants). Not on an
    // encrypted disk: a block that does not verify is rebuilt from every leg's fragment.
    let early = (io.shared().late && info.hw_queue().crypt.is_none())
        .then(|| (info.hw_queue().layout, Layout::group(info.offset() / BLOCK)));
    released(io.release(result.is_ok(), |ok| {
        early.is_some_and(|(layout, group)| {
            LegMask::try_from(ok).is_ok_and(|ok| layout.decode(group, ok).softirq_ok())
        })
    }));
}

/// Acts on what a leg's release gave back.
fn released(r: Released<LegSlot, EcShared, MAX_LEGS, EcQueue>) {
    match r {
        Released::Out => {}
        Released::Last(rq) => finish(rq),
        Released::Quorum(settler) => settle_early(settler),
        Released::Done(rq) => settled(rq),
    }
}

/// Enough legs of a late read are back: puts its data together and ends it (its bios);
/// the tag waits for the other legs.
fn settle_early(mut settler: Settler<LegSlot, EcShared, MAX_LEGS, EcQueue>) {
    let info = settler.info();
    let layout = info.hw_queue().layout;
    let group = Layout::group(info.offset() / BLOCK);
    let bytes = info.bytes();
    let issued = settler.shared().issued;
    let put = match settler.parts_and_filled_pages::<EC_SEGMENTS>() {
        Some((mut back, pages)) => {
            LegMask::try_from(back.mask())
                .map_err(|_| EINVAL)
                .and_then(|ok| {
                    let decode = layout.decode(group, ok);
                    gather(&mut back, &pages, &layout, group, decode, ALL_PAGES)?;
                    Ok(ok)
                })
        }
        None => Err(EINVAL),
    };
    if let Ok(ok) = put {
        settler.shared().back_at_end.store(ok, Ordering::Release);
    }
    let hwq = settler.info().hw_queue();
    let status = match put {
        Ok(_) => {
            if let Some(at) = issued {
                let ns = u64::try_from(at.elapsed().as_nanos()).unwrap_or(u64::MAX);
                hwq.stats.done(Op::Read, bytes, ns);
            }
            Status::Ok
        }
        Err(_) => {
            hwq.stats.error();
            if log_failure() {
                pr_err!(
                    "{}: queue {}: putting a read together from its fragments failed\n",
                    hwq.first.name(),
                    hwq.first.index()
                );
            }
            Status::IoErr
        }
    };
    if let Some(rq) = settler.settle(status) {
        settled(rq);
    }
}

/// Every leg of a read that ended early is back: counts those that were late, takes any
/// that died out of the disk, and gives the tag back.
fn settled(mut rq: SettledRequest<LegSlot, EcShared, MAX_LEGS, EcQueue>) {
    let data = rq.data();
    let given = data.given();
    let shared = &mut data.shared;
    let late = given & !u32::from(*shared.back_at_end.get_mut());
    let dead = *shared.dead.get_mut();
    shared.retries = 0;
    let info = rq.info();
    let hwq = info.hw_queue();
    if late != 0 {
        hwq.early.fetch_add(1, Ordering::Relaxed);
    }
    for (l, c) in hwq.leg_io.iter().enumerate() {
        if late & (1 << l) != 0 {
            c.late.fetch_add(1, Ordering::Relaxed);
        }
    }
    hwq.take_out_dead(u32::from(dead));
    rq.end();
}

/// Every leg of `rq` is back: end it, or issue it again.
fn finish(mut rq: EcRequest) {
    let k = rq.hw_queue().layout.code().k();
    let data = rq.data();
    let (ok, given) = (data.ok(), data.given());
    let load = |a: &AtomicU16| u32::from(a.load(Ordering::Acquire));
    let (busy, retry, dead) = (
        load(&data.shared.busy),
        load(&data.shared.retry),
        load(&data.shared.dead),
    );
    let issued = data.shared.issued.take();
    let late = data.shared.late;
    rq.hw_queue().take_out_dead(dead);
    // Before the write ends (or is issued again), and after its data is on the legs it
    // went to: the legs it was not given to (out of the disk too: a leg whose server is
    // replaced meanwhile must not take the group as rebuilt before this write is on the
    // legs it is rebuilt from) and those that died under it are rebuilt from those. A
    // leg out of room or reconnecting has it again when it is issued again.
    if rq.op() == Op::Write {
        let all = rq.hw_queue().layout.all_legs();
        let given = LegMask::try_from(given).unwrap_or(all);
        let missed = all & !given | LegMask::try_from(dead).unwrap_or(0);
        if missed != 0 {
            let group = Layout::group(rq.offset() / BLOCK);
            Resync::mark(&rq.hw_queue().resync, missed, group);
        }
    }
    // A late read that never ended early: the legs back may still decode (with P and Q,
    // or fewer than asked). Its data fragments are in the areas.
    let late_decode = match late {
        false => None,
        true => {
            let layout = rq.hw_queue().layout;
            let group = Layout::group(rq.offset() / BLOCK);
            let d = LegMask::try_from(ok).map_or(Decode::Impossible, |ok| layout.decode(group, ok));
            (d != Decode::Impossible).then_some((layout, group, d))
        }
    };
    let done = match rq.op() {
        // Every leg in the disk took it, or enough did and the others are out now.
        Op::Write => retry == 0 && busy == 0 && ok.count_ones() >= u32::from(k),
        _ if late => late_decode.is_some(),
        _ => ok == given,
    };
    if let (true, Some((layout, group, decode))) = (done, late_decode) {
        let gathered = match rq.data_and_filled_pages::<EC_SEGMENTS>() {
            Some((fan, pages)) => gather(fan, &pages, &layout, group, decode, ALL_PAGES),
            None => Err(EINVAL),
        };
        if gathered.is_err() {
            return fail(rq, "putting a read together from its fragments failed");
        }
        match rebuild_for(rq.hw_queue(), group, decode) {
            Ok(r) => rq.data().shared.rebuild = r,
            Err(why) => return fail(rq, why),
        }
    }
    let rebuild = rq.data().shared.rebuild;
    if done {
        if rq.op() == Op::Write {
            commit(&mut rq);
        }
        match rebuild {
            // Done by `gather` for a late read.
            None | Some(Rebuild::Xor { .. }) if late => {}
            None => {}
            Some(Rebuild::Xor { missing, p_leg }) => {
                if rebuild_xor(&mut rq, missing, p_leg).is_err() {
                    return fail(rq, "rebuilding a fragment from parity failed");
                }
            }
            // The RAID-6 library wants task context: the disk's workqueue rebuilds it
            // (`run_deferred`).
            Some(Rebuild::Pq { .. }) => {
                rq.data().shared.issued = issued;
                let Some(pq) = rq.hw_queue().pq.clone() else {
                    return fail(rq, "no RAID-6 library");
                };
                return match rq.defer(&pq.wq) {
                    Ok(()) => {}
                    Err(rq) => fail(rq, "rebuilding from P and Q could not be queued"),
                };
            }
        }
        if rq.op() == Op::Read && rq.hw_queue().crypt.is_some() {
            return open_read(rq, issued);
        }
        return succeed(rq, issued);
    }
    let retries = rq.data().shared.retries;
    if retries >= MAX_RETRIES {
        return fail(rq, "retried too often");
    }
    if busy | retry | dead == 0 {
        return fail(rq, "too few servers took it");
    }
    // Issued again: a dead leg is out now, a busy one may have room, a reconnecting one
    // holds the hardware queue until it is back.
    if retry | dead != 0 {
        rq.data().shared.retries = retries + 1;
        rq.hw_queue().first.count_retry();
    }
    rq.requeue();
}

/// Ends `rq` with success, counted with its latency.
fn succeed(mut rq: EcRequest, issued: Option<Instant<Monotonic>>) {
    if let Some(at) = issued {
        let ns = rq
            .age_ns()
            .unwrap_or_else(|| u64::try_from(at.elapsed().as_nanos()).unwrap_or(u64::MAX));
        rq.hw_queue().stats.done(rq.op(), rq.bytes(), ns);
    }
    rq.data().shared.retries = 0;
    rq.data().shared.verify = false;
    rq.end(Status::Ok);
}

/// Ends `rq` with an I/O error, for reason `why`.
fn fail(mut rq: EcRequest, why: &str) {
    let hwq = rq.hw_queue();
    hwq.stats.error();
    if log_failure() {
        pr_err!(
            "{}: queue {}: {} bytes at sector {} failed: {}\n",
            hwq.first.name(),
            hwq.first.index(),
            rq.bytes(),
            rq.sector(),
            why
        );
    }
    write_failed(&mut rq);
    rq.data().shared.retries = 0;
    rq.data().shared.verify = false;
    rq.end(Status::IoErr);
}

/// The crypto state of `rq`, taken out of leg 0's slot (put it back with
/// [`put_crypt`]); `None` on a disk that is not encrypted.
fn take_crypt(fan: &mut EcRequestData) -> Option<KBox<SlotCrypt>> {
    fan.part_mut(0).and_then(|p| p.data.crypt.take())
}

/// Puts back what [`take_crypt`] took.
fn put_crypt(fan: &mut EcRequestData, crypt: KBox<SlotCrypt>) {
    if let Some(p) = fan.part_mut(0) {
        p.data.crypt = Some(crypt);
    }
}

/// The crypto state of `rq`, in leg 0's slot, where nothing else of the request is
/// borrowed with it (else [`take_crypt`]); `None` on a disk that is not encrypted.
fn crypt_state(fan: &mut EcRequestData) -> Option<&mut SlotCrypt> {
    fan.part_mut(0).and_then(|p| p.data.crypt.as_deref_mut())
}

/// On an encrypted disk, a write that succeeded is on the legs' memory: its seals take
/// effect (see [`DiskCrypt::commit`]).
fn commit(rq: &mut EcRequest) {
    let offset = rq.offset();
    // The reference is dropped before the request ends (see `run_deferred`).
    let Some(crypt) = rq.hw_queue().crypt.clone() else {
        return;
    };
    if let Some(sc) = crypt_state(rq.data()) {
        crypt.disk.commit(&mut sc.rc, offset);
    }
}

/// On an encrypted disk, a write that fails may or may not have reached the legs: its
/// blocks' seals are withdrawn and its claims let go of (see [`DiskCrypt::write_failed`]).
fn write_failed(rq: &mut EcRequest) {
    if rq.op() != Op::Write {
        return;
    }
    let Some(crypt) = rq.hw_queue().crypt.clone() else {
        return;
    };
    let (offset, bytes) = (rq.offset(), rq.bytes());
    let rc = crypt_state(rq.data()).map(|sc| &mut sc.rc);
    crypt.disk.write_failed(rc, offset, bytes);
}

/// An encrypted read whose fragments are in its pages: opened here (in its completion),
/// or in the disk's crypto workqueue if it opens reads there or the read is rebuilt
/// without up to r legs' fragments ([`verify_read`]).
fn open_read(mut rq: EcRequest, issued: Option<Instant<Monotonic>>) {
    let (in_wq, opened) = match rq.hw_queue().crypt.clone() {
        None => (false, Err(CryptError::Failed("no crypto state"))),
        Some(c) if c.open_in_wq || rq.data().shared.verify => (true, Ok(())),
        Some(c) => (false, open_pages(&mut rq, &c.disk)),
    };
    if !in_wq {
        return after_open(rq, issued, opened);
    }
    rq.data().shared.issued = issued;
    // As for P and Q: the reference is dropped once the work is queued.
    let Some(crypt) = rq.hw_queue().crypt.clone() else {
        return fail(rq, "no crypto state");
    };
    let queued = match crypt.disk.workqueue() {
        Some(wq) => rq.defer(wq),
        None => Err(rq),
    };
    if let Err(rq) = queued {
        fail(rq, "opening the read could not be queued");
    }
}

/// Opens every page of encrypted read `rq` in place (see [`DiskCrypt::open_pages`]).
fn open_pages(rq: &mut EcRequest, crypt: &DiskCrypt) -> core::result::Result<(), CryptError> {
    let offset = rq.offset();
    let (fan, pages) = rq
        .data_and_filled_pages::<EC_SEGMENTS>()
        .ok_or(CryptError::Failed("not whole pages"))?;
    let mut sc = take_crypt(fan).ok_or(CryptError::Failed("no crypto state"))?;
    let opened = crypt.open_pages(&mut sc.rc, &pages, offset);
    put_crypt(fan, sc);
    opened
}

/// Ends an encrypted read once opened; or issues it again: to every leg that has the
/// group if a block did not verify (it is then rebuilt without up to r legs' fragments),
/// or as it was if it raced a write of its blocks.
fn after_open(
    mut rq: EcRequest,
    issued: Option<Instant<Monotonic>>,
    opened: core::result::Result<(), CryptError>,
) {
    let shared = &mut rq.data().shared;
    match opened {
        Ok(()) => succeed(rq, issued),
        Err(CryptError::Forged { .. }) if !shared.verify => {
            shared.verify = true;
            rq.requeue();
        }
        Err(CryptError::Raced | CryptError::Busy) if shared.retries < MAX_RETRIES => {
            shared.retries += 1;
            shared.verify = false;
            rq.requeue();
        }
        Err(CryptError::Forged { block }) => {
            let hwq = rq.hw_queue();
            if log_failure() {
                pr_err!(
                    "{}: queue {}: read at sector {} failed: block {} does not verify, nor \
                     does any rebuild of it without the fragments of up to {} servers\n",
                    hwq.first.name(),
                    hwq.first.index(),
                    rq.sector(),
                    block,
                    hwq.layout.code().r()
                );
            }
            fail(rq, "a block does not verify")
        }
        Err(CryptError::Failed(why)) => fail(rq, why),
        Err(CryptError::Raced | CryptError::Busy) => fail(rq, "it raced writes of its blocks"),
    }
}

/// Leg alterations logged so far (all disks, by reads and rebuilds): the first 20 and
/// every 1000th after that.
pub(super) static ALTERED: AtomicU64 = AtomicU64::new(0);

/// Rebuilds each block of encrypted read `rq` that does not verify from the fragments
/// its legs read (every leg that has the group: the read was issued again so), leaving
/// out one leg at a time, then two, up to r ([`Layout::exclusions`]); the first that
/// verifies is the block, and the legs left out altered their memory: each is counted,
/// named in the log and its group marked dirty there, so that the resync writes its
/// fragment again. A block that no candidate opens fails the read. Task context (the
/// disk's crypto workqueue).
fn verify_read(rq: &mut EcRequest, crypt: &DiskCrypt) -> core::result::Result<(), CryptError> {
    let failed = |why| CryptError::Failed(why);
    let layout = rq.hw_queue().layout;
    let pq = rq.hw_queue().pq.clone();
    let first = rq.offset() / BLOCK;
    let group = Layout::group(first);
    let (fan, pages) = rq
        .data_and_filled_pages::<EC_SEGMENTS>()
        .ok_or(failed("not whole pages"))?;
    let arrived = LegMask::try_from(fan.ok()).map_err(|_| failed("no such leg"))?;
    let mut sc = take_crypt(fan).ok_or(failed("no crypto state"))?;
    let mut liars = [0 as LegMask; EC_SEGMENTS];
    let start = Instant::now();
    let mut result = Ok(());
    'blocks: for (i, liar) in liars.iter_mut().enumerate().take(pages.len()) {
        let block = first + i as u64;
        let only = 1 << i;
        let mut verified = false;
        for leave_out in layout.exclusions(group, arrived) {
            let decode = layout.decode(group, arrived & !leave_out);
            if put_together(fan, &pages, &layout, group, decode, pq.as_deref(), only).is_err() {
                result = Err(failed("putting a block together from its fragments failed"));
                break 'blocks;
            }
            let Some(page) = pages.iter().nth(i) else {
                result = Err(failed("no such page"));
                break 'blocks;
            };
            match crypt.open_block(&mut sc.rc, &page, block, i) {
                Ok(()) => {
                    *liar = leave_out;
                    verified = true;
                    break;
                }
                Err(CryptError::Forged { .. }) => {}
                Err(e) => {
                    result = Err(e);
                    break 'blocks;
                }
            }
        }
        if !verified {
            result = Err(CryptError::Forged { block });
            break;
        }
    }
    put_crypt(fan, sc);
    match result {
        Ok(()) => crypt.opened(pages.len(), start),
        Err(e) => {
            if let CryptError::Forged { .. } = e {
                crypt.count_forged();
            }
            for page in pages.iter() {
                let _ = page.zero();
            }
        }
    }
    let hwq = rq.hw_queue();
    for (i, &liars) in liars.iter().enumerate().filter(|&(_, &l)| l != 0) {
        for leg in (0..hwq.legs.len()).filter(|&l| liars & (1 << l) != 0) {
            if let Some(c) = hwq.leg_io.get(leg) {
                c.altered.fetch_add(1, Ordering::Relaxed);
            }
            let n = ALTERED.fetch_add(1, Ordering::Relaxed);
            if n < 20 || n % 1000 == 0 {
                pr_warn!(
                    "{}: block {} failed verification; rebuilt without this leg: its server \
                     altered its memory\n",
                    hwq.leg(leg).name(),
                    first + i as u64
                );
            }
        }
        Resync::mark(&hwq.resync, liars, group);
    }
    result
}

/// Puts the pages of `only` (a bit per page) of a read (group `group`) together from
/// what its legs read into their areas, as `decode` says, rebuilding fragments from P and
/// Q (`pq`) if it needs them. Task context if it does.
fn put_together(
    fan: &mut EcRequestData,
    pages: &RqPages<'_, EC_SEGMENTS, Filled>,
    layout: &Layout,
    group: u64,
    decode: Decode,
    pq: Option<&Pq>,
    only: u32,
) -> Result {
    gather(fan, pages, layout, group, decode, only)?;
    let code = layout.code();
    let k = code.k();
    let lost = match decode {
        Decode::PQ2Data { a, b } => Lost::TwoData(a, b),
        Decode::PQData { a } => Lost::DataAndP(a),
        _ => return Ok(()),
    };
    let (p_leg, q_leg) = (layout.leg_of(group, k), layout.leg_of(group, k + 1));
    pq_recover(
        fan,
        pages,
        code,
        pq.ok_or(EINVAL)?,
        (lost, p_leg, q_leg),
        only,
    )
}

/// Rebuilds data fragment `missing` of every page of read `rq` from P, which leg `p_leg`
/// read into its area, and the page's other data fragments.
fn rebuild_xor(rq: &mut EcRequest, missing: u8, p_leg: u8) -> Result {
    let code = rq.hw_queue().layout.code();
    let (fan, pages) = rq.data_and_filled_pages::<EC_SEGMENTS>().ok_or(EINVAL)?;
    let table = fan
        .part_mut(usize::from(p_leg))
        .and_then(|p| p.table())
        .ok_or(EINVAL)?;
    xor_rebuild(table, &pages, code.k(), missing, ALL_PAGES)
}

/// Every page of a request, as the `only` of [`gather`] and its helpers.
const ALL_PAGES: u32 = u32::MAX;

/// Rebuilds data fragment `missing` of every page of `only` (a bit per page) of a read
/// (of k data fragments) from P, in the area of `p_table`, and the page's other data
/// fragments.
fn xor_rebuild(
    p_table: &mut SgTable<EC_SEGMENTS>,
    pages: &RqPages<'_, EC_SEGMENTS, Filled>,
    k: u8,
    missing: u8,
    only: u32,
) -> Result {
    let f = BLOCK.checked_div(u64::from(k)).ok_or(EINVAL)? as usize;
    let m = usize::from(missing) * f;
    for (i, page) in pages.iter().enumerate().filter(|&(i, _)| is_in(only, i)) {
        let (area, off) = area_of(p_table, i, f).ok_or(EINVAL)?;
        page.combine(m, area.page(), off, f, Combine::Copy)?;
        for j in (0..usize::from(k)).filter(|&j| j != usize::from(missing)) {
            page.combine(m, IoSink::page(&page), j * f, f, Combine::Xor)?;
        }
    }
    Ok(())
}

/// Where block `i` of a request has its fragment (of `f` bytes) in an area: the area's
/// page and the offset in it.
pub(super) fn area_of(
    table: &mut SgTable<EC_SEGMENTS>,
    i: usize,
    f: usize,
) -> Option<(OwnPage<'_>, usize)> {
    let at = i.checked_mul(f)?;
    let page = table.own_pages().nth(at / BLOCK as usize)?;
    Some((page, at % BLOCK as usize))
}

/// The legs' slots of a request, by leg: the whole request's, or those its settler has.
trait LegSlots {
    fn slot(&mut self, leg: usize) -> Option<&mut LegSlot>;
}

impl LegSlots for EcRequestData {
    fn slot(&mut self, leg: usize) -> Option<&mut LegSlot> {
        self.part_mut(leg)
    }
}

impl LegSlots for PartsBack<'_, LegSlot, EcShared, MAX_LEGS> {
    fn slot(&mut self, leg: usize) -> Option<&mut LegSlot> {
        self.get_mut(leg)
    }
}

/// Whether page `i` is one of `only` (a bit per page).
fn is_in(only: u32, i: usize) -> bool {
    u32::try_from(i)
        .ok()
        .and_then(|i| 1u32.checked_shl(i))
        .is_some_and(|bit| only & bit != 0)
}

/// Puts the pages of `only` (a bit per page) of a late read (group `group`) together
/// from what its legs read into their areas, as `decode` says: each data fragment that
/// arrived is copied in (for replication, the copy read), and one missing is rebuilt
/// from P. Fragments that need P and Q are left to [`pq_recover`].
fn gather(
    slots: &mut impl LegSlots,
    pages: &RqPages<'_, EC_SEGMENTS, Filled>,
    layout: &Layout,
    group: u64,
    decode: Decode,
    only: u32,
) -> Result {
    let code = layout.code();
    let (k, f) = (code.k(), code.fragment_bytes() as usize);
    let leg = |j: u8| usize::from(layout.leg_of(group, j));
    let missing: LegMask = match decode {
        Decode::Impossible => return Err(EINVAL),
        Decode::Direct | Decode::Copy(_) => 0,
        Decode::Xor { missing } => 1 << missing,
        Decode::PQData { a } => 1 << a,
        Decode::PQ2Data { a, b } => (1 << a) | (1 << b),
    };
    if code.is_replication() {
        let j = match decode {
            Decode::Copy(j) => j,
            _ => 0,
        };
        return copy_in(slots, pages, leg(j), (0, f), only);
    }
    for j in (0..k).filter(|j| missing & (1 << j) == 0) {
        copy_in(slots, pages, leg(j), (usize::from(j) * f, f), only)?;
    }
    if let Decode::Xor { missing } = decode {
        let p = slots.slot(leg(k)).and_then(|s| s.table()).ok_or(EINVAL)?;
        xor_rebuild(p, pages, k, missing, only)?;
    }
    Ok(())
}

/// Copies the fragment (of `f` bytes) of every page of `only` that leg `leg` read into its
/// area to bytes `dst..dst + f` of the page.
fn copy_in(
    slots: &mut impl LegSlots,
    pages: &RqPages<'_, EC_SEGMENTS, Filled>,
    leg: usize,
    (dst, f): (usize, usize),
    only: u32,
) -> Result {
    let table = slots.slot(leg).and_then(|s| s.table()).ok_or(EINVAL)?;
    for (i, page) in pages.iter().enumerate().filter(|&(i, _)| is_in(only, i)) {
        let (area, off) = area_of(table, i, f).ok_or(EINVAL)?;
        page.combine(dst, area.page(), off, f, Combine::Copy)?;
    }
    Ok(())
}

/// Rebuilds the fragments `lost` of every page of read `rq` from P and Q, which legs
/// `p_leg` and `q_leg` read into their areas, and the page's other data fragments. Task
/// context (the disk's workqueue).
fn rebuild_pq(rq: &mut EcRequest, lost: Lost, p_leg: u8, q_leg: u8) -> Result {
    let code = rq.hw_queue().layout.code();
    let pq = rq.hw_queue().pq.clone().ok_or(EINVAL)?;
    let (fan, pages) = rq.data_and_filled_pages::<EC_SEGMENTS>().ok_or(EINVAL)?;
    pq_recover(fan, &pages, code, &pq, (lost, p_leg, q_leg), ALL_PAGES)
}

/// Rebuilds the fragments `lost` of every page of `only` (a bit per page) of a read from
/// P and Q, which legs `p_leg` and `q_leg` read into their areas, and the page's other
/// data fragments. Task context.
fn pq_recover(
    fan: &mut EcRequestData,
    pages: &RqPages<'_, EC_SEGMENTS, Filled>,
    code: crate::config_parse::Code,
    pq: &Pq,
    (lost, p_leg, q_leg): (Lost, u8, u8),
    only: u32,
) -> Result {
    let (k, f) = (usize::from(code.k()), code.fragment_bytes() as usize);
    let mut scratch = pq.scratch.lock();
    let (p_slot, q_slot) = fan
        .pair_mut(usize::from(p_leg), usize::from(q_leg))
        .ok_or(EINVAL)?;
    let (p_table, q_table) = (p_slot.table().ok_or(EINVAL)?, q_slot.table().ok_or(EINVAL)?);
    for (i, page) in pages.iter().enumerate().filter(|&(i, _)| is_in(only, i)) {
        let (p_area, off) = area_of(p_table, i, f).ok_or(EINVAL)?;
        let (q_area, _) = area_of(q_table, i, f).ok_or(EINVAL)?;
        pq.raid6.recover(
            &mut scratch,
            k,
            f,
            &page,
            [
                Fragment {
                    page: p_area.page(),
                    offset: off,
                },
                Fragment {
                    page: q_area.page(),
                    offset: off,
                },
            ],
            lost,
        )?;
    }
    Ok(())
}

/// Computes the parity of every page of write `rq` (group `group`) into the areas of the
/// parity legs: P, the XOR of the data fragments; with two parity fragments P and Q of the
/// RAID-6 library. `EAGAIN` where the library cannot run (not task context).
fn parity_write(hwq: &EcQueue, rq: &mut EcRequest, group: u64) -> Result {
    let (fan, pages) = rq.data_and_sent_pages::<EC_SEGMENTS>().ok_or(EINVAL)?;
    parity_of(hwq, fan, pages.iter(), group)
}

/// Computes the parity of the blocks of `pages` (a write of group `group`: the request's
/// pages, or the ciphertext they were sealed into) into the areas of the parity legs of
/// `fan`, as [`parity_write`] says.
fn parity_of<S: IoSource>(
    hwq: &EcQueue,
    fan: &mut EcRequestData,
    pages: impl Iterator<Item = S>,
    group: u64,
) -> Result {
    let layout = &hwq.layout;
    let code = layout.code();
    let (k, f) = (usize::from(code.k()), code.fragment_bytes() as usize);
    let p_leg = usize::from(layout.leg_of(group, code.k()));
    if code.r() == 2 {
        let raid6: &Raid6 = &hwq.pq.as_ref().ok_or(EINVAL)?.raid6;
        let q_leg = usize::from(layout.leg_of(group, code.k() + 1));
        let (p_slot, q_slot) = fan.pair_mut(p_leg, q_leg).ok_or(EINVAL)?;
        let (p_table, q_table) = (p_slot.table().ok_or(EINVAL)?, q_slot.table().ok_or(EINVAL)?);
        for (i, page) in pages.enumerate() {
            let (p_area, off) = area_of(p_table, i, f).ok_or(EINVAL)?;
            let (q_area, _) = area_of(q_table, i, f).ok_or(EINVAL)?;
            raid6.gen(k, f, &page, (&p_area, off), (&q_area, off))?;
        }
        return Ok(());
    }
    let table = fan.part_mut(p_leg).and_then(|p| p.table()).ok_or(EINVAL)?;
    for (i, page) in pages.enumerate() {
        let (area, off) = area_of(table, i, f).ok_or(EINVAL)?;
        let src = IoSource::page(&page);
        area.combine(off, src, 0, f, Combine::Copy)?;
        for j in 1..k {
            area.combine(off, src, j * f, f, Combine::Xor)?;
        }
    }
    Ok(())
}

/// What a parity computation that failed with `e` means for the request.
fn parity_failed(e: Error) -> NotNow {
    match e == EAGAIN {
        true => NotNow::Busy,
        false => NotNow::Fail("computing the parity failed"),
    }
}

/// Seals the pages of write `rq` (group `group`) into its bounce pages, claiming its
/// blocks (see [`DiskCrypt::seal_write`]), then cuts the ciphertext into fragments: each
/// data fragment (for replication, each copy) into its leg's area, and the parity of the
/// ciphertext into the parity legs' areas. Every leg then writes from its area.
fn seal_write(
    hwq: &EcQueue,
    crypt: &DiskCrypt,
    rq: &mut EcRequest,
    group: u64,
) -> core::result::Result<(), NotNow> {
    let offset = rq.offset();
    let (fan, pages) = rq
        .data_and_sent_pages::<EC_SEGMENTS>()
        .ok_or(NotNow::Fail("not whole pages"))?;
    let mut sc = take_crypt(fan).ok_or(NotNow::Fail("no crypto state"))?;
    let SlotCrypt { rc, bounce } = &mut *sc;
    let done = match crypt.seal_write(rc, &pages, bounce.own_pages(), offset) {
        Ok(n) => split_sealed(hwq, fan, bounce, n, group),
        Err(CryptError::Busy) => Err(NotNow::Busy),
        Err(CryptError::Failed(why)) => Err(NotNow::Fail(why)),
        Err(CryptError::Forged { .. } | CryptError::Raced) => Err(NotNow::Fail("sealing failed")),
    };
    put_crypt(fan, sc);
    done
}

/// Cuts the first `n` sealed blocks in `bounce` (a write of group `group`) into the legs'
/// areas of `fan` (see [`seal_write`]).
fn split_sealed(
    hwq: &EcQueue,
    fan: &mut EcRequestData,
    bounce: &mut SgTable<CRYPT_PAGES>,
    n: usize,
    group: u64,
) -> core::result::Result<(), NotNow> {
    let layout = &hwq.layout;
    let code = layout.code();
    let f = code.fragment_bytes() as usize;
    let (copies, each) = match code.is_replication() {
        true => (code.legs(), 0),
        false => (code.k(), f),
    };
    let cut = |()| NotNow::Fail("cutting the sealed blocks into fragments failed");
    for j in 0..copies {
        let leg = usize::from(layout.leg_of(group, j));
        let table = fan.part_mut(leg).and_then(|p| p.table()).ok_or(cut(()))?;
        for (i, page) in bounce.own_pages().take(n).enumerate() {
            let (area, off) = area_of(table, i, f).ok_or(cut(()))?;
            area.combine(off, page.page(), usize::from(j) * each, f, Combine::Copy)
                .map_err(|_| cut(()))?;
        }
    }
    if code.r() > 0 && !code.is_replication() {
        parity_of(hwq, fan, bounce.own_pages().take(n), group).map_err(parity_failed)?;
    }
    Ok(())
}

/// How a read of group `group` whose legs decode as `decode` is rebuilt once they are
/// all back: nothing to rebuild, one fragment from P, or fragments from P and Q. The
/// reason if it cannot be.
fn rebuild_for(
    hwq: &EcQueue,
    group: u64,
    decode: Decode,
) -> core::result::Result<Option<Rebuild>, &'static str> {
    let k = hwq.layout.code().k();
    let (p_leg, q_leg) = (hwq.layout.leg_of(group, k), hwq.layout.leg_of(group, k + 1));
    let lost = match decode {
        Decode::Direct | Decode::Copy(_) => return Ok(None),
        Decode::Xor { missing } => return Ok(Some(Rebuild::Xor { missing, p_leg })),
        Decode::PQ2Data { a, b } => Lost::TwoData(a, b),
        Decode::PQData { a } => Lost::DataAndP(a),
        Decode::Impossible => return Err("no way to rebuild the block"),
    };
    match hwq.pq {
        Some(_) => Ok(Some(Rebuild::Pq { lost, p_leg, q_leg })),
        None => Err("no way to rebuild the block"),
    }
}

/// Why `queue_rq` cannot issue a request now.
enum NotNow {
    /// A leg it needs is reconnecting.
    Wait,
    /// Not here: issue it again soon (from another context).
    Busy,
    /// It fails, for this reason.
    Fail(&'static str),
}

/// The legs of `hwq` by what they can do now: (in the disk and live, reconnecting). A leg
/// whose queue is dead goes out of the disk here.
fn legs_now(hwq: &EcQueue) -> (LegMask, LegMask) {
    let n = usize::from(hwq.layout.code().legs());
    let (mut live, mut reconnecting) = (0, 0);
    for l in 0..n {
        if hwq.out.mask() & (1 << l) != 0 {
            continue;
        }
        match hwq.leg(l).state() {
            State::Recovering => reconnecting |= 1 << l,
            State::Dead => hwq.out.take_out(l, hwq.leg(l), "its queue is dead"),
            State::Connecting | State::Live => live |= 1 << l,
        }
    }
    (live, reconnecting)
}

/// Chooses the legs of `rq` and fills each one's scatterlist; returns them and each one's
/// entries.
fn describe(
    hwq: &EcQueue,
    rq: &mut EcRequest,
    dir: Dir,
    group: u64,
) -> core::result::Result<(PartMask, [usize; MAX_LEGS]), NotNow> {
    let layout = &hwq.layout;
    let code = layout.code();
    let (live, reconnecting) = legs_now(hwq);
    let verify = rq.data().shared.verify;
    // An encrypted read notes its blocks' seals, and waits for a write of them.
    if let (Dir::Read, Some(c)) = (dir, &hwq.crypt) {
        read_begin(&c.disk, rq)?;
    }
    // Live legs whose fragment of the group is stale (a write skipped them) wait for
    // their rebuild: no read asks them, and writes skip them until then.
    let current = hwq.resync.current(live, group);
    let stale = live & !current;
    // What to do when the legs usable now are too few: wait for a leg that reconnects;
    // otherwise the group cannot be had (a stale leg is rebuilt only from k current
    // ones, which it does not have).
    let short = || match (reconnecting, stale) {
        (0, 0) => NotNow::Fail("more servers are out than the code survives"),
        (0, _) => NotNow::Fail("too few servers hold the group current"),
        _ => NotNow::Wait,
    };
    let legs = match dir {
        // Without parity every leg in the disk keeps every block current.
        Dir::Write if code.r() == 0 && reconnecting != 0 => return Err(NotNow::Wait),
        Dir::Write if current.count_ones() < u32::from(code.k()) => return Err(short()),
        // With parity a write goes on without a leg that is reconnecting (or stale), and
        // marks the group dirty there (`finish`).
        Dir::Write => current,
        // A block that did not verify is rebuilt from every leg that has the group.
        Dir::Read if verify => layout
            .read_plan(group, current, code.r())
            .ok_or_else(short)?,
        Dir::Read => layout
            .read_plan(group, current, hwq.reads.extra)
            .ok_or_else(short)?,
    };
    // More legs than the block needs: every leg reads into its area, and the read ends
    // with the first that decode. An encrypted read too: its fragments are put together
    // again without up to r legs' fragments if the block does not verify.
    let late = dir == Dir::Read
        && (legs.count_ones() > u32::from(code.k()) || hwq.reads.areas || hwq.crypt.is_some());
    let shared = &mut rq.data().shared;
    shared.late = late;
    *shared.back_at_end.get_mut() = 0;
    shared.rebuild = match dir {
        Dir::Write => None,
        // Decided by the legs that come back.
        Dir::Read if late => None,
        Dir::Read => rebuild_for(hwq, group, layout.decode(group, legs)).map_err(NotNow::Fail)?,
    };
    let sealed = dir == Dir::Write && hwq.crypt.is_some();
    match &hwq.crypt {
        _ if dir != Dir::Write => {}
        Some(c) => seal_write(hwq, &c.disk, rq, group)?,
        None if code.r() > 0 && !code.is_replication() => {
            parity_write(hwq, rq, group).map_err(parity_failed)?
        }
        None => {}
    }
    let f = code.fragment_bytes();
    let frag = u32::try_from(f).map_err(|_| NotNow::Fail("fragment"))?;
    let mut nents = [0usize; MAX_LEGS];
    for (l, n) in nents.iter_mut().enumerate() {
        if legs & (1 << l) == 0 {
            continue;
        }
        let leg = u8::try_from(l).map_err(|_| NotNow::Fail("leg"))?;
        let j = layout.fragment_on(group, leg);
        // A late read's fragments land in the leg's area (`gather` copies them into the
        // pages); so do a read's parity fragments (the pages are rebuilt from them at the
        // end), and a write's parity was computed there above, as was every fragment of
        // an encrypted write.
        let in_area = late || sealed || (!code.is_replication() && j >= code.k());
        let entries = if in_area {
            let blocks = u64::from(rq.bytes()) / BLOCK;
            let bytes = (blocks * f) as usize;
            rq.data()
                .part_mut(l)
                .and_then(|p| p.table())
                .map(|t| t.use_own_bytes(bytes))
                .filter(|&e| e > 0)
        } else if code.is_replication() {
            // Every fragment is the whole page.
            rq.map_fragments(|d| d.part_mut(l)?.table(), 0, frag)
        } else {
            rq.map_fragments(|d| d.part_mut(l)?.table(), u32::from(j) * frag, frag)
        };
        *n = entries.ok_or(NotNow::Fail("more segments than the disk allows"))?;
    }
    Ok((PartMask::from(legs), nents))
}

/// Notes what encrypted read `rq` is about to fetch (see [`DiskCrypt::read_begin`]);
/// `Busy` while a write holds one of its blocks.
fn read_begin(crypt: &DiskCrypt, rq: &mut EcRequest) -> core::result::Result<(), NotNow> {
    let (offset, bytes) = (rq.offset(), rq.bytes());
    let sc = crypt_state(rq.data()).ok_or(NotNow::Fail("no crypto state"))?;
    crypt
        .read_begin(&mut sc.rc, offset, bytes)
        .map_err(|_| NotNow::Busy)
}

/// Issues `rq` on every leg it needs.
fn issue(
    hwq: &EcQueue,
    mut rq: EcRequest,
    dir: Dir,
) -> core::result::Result<(), (NotNow, EcRequest)> {
    let block = rq.offset() / BLOCK;
    let blocks = u64::from(rq.bytes()) / BLOCK;
    let group = Layout::group(block);
    if blocks == 0 || Layout::group(block + blocks - 1) != group {
        return Err((NotNow::Fail("not whole blocks of one group"), rq));
    }
    let (legs, nents) = match describe(hwq, &mut rq, dir, group) {
        Ok(d) => d,
        Err(e) => return Err((e, rq)),
    };
    let code = hwq.layout.code();
    let offset = hwq.layout.remote_offset(block);
    let bytes = u32::try_from(blocks * code.fragment_bytes()).unwrap_or(u32::MAX);
    let shared = &mut rq.data().shared;
    for why in [&mut shared.busy, &mut shared.retry, &mut shared.dead] {
        *why.get_mut() = 0;
    }
    shared.issued = Some(Instant::now());
    let mut parts = match rq.fan_out(legs) {
        Ok(p) => p,
        Err(rq) => return Err((NotNow::Fail("no leg to issue on"), rq)),
    };
    for (l, &nents) in nents.iter().enumerate() {
        let Some(io) = parts.take(l) else {
            continue;
        };
        let desc = IoDesc {
            dir,
            offset,
            bytes,
            nents,
        };
        if let Err((refusal, io)) = Queue::submit(hwq.leg(l), io, desc) {
            io.shared().refused(l, refusal);
            released(io.release(false, |_| false));
        }
    }
    Ok(())
}

impl blk::Operations for super::EcDriver {
    type RequestData = EcRequestData;
    type HwQueue = EcQueue;

    /// A disk with parity reserves each leg's area: the parity of a group's blocks (any
    /// leg holds parity in some group), or what a late read reads there.
    fn init_request(&self, data: &mut EcRequestData) -> Result {
        let code = self.layout.code();
        if let Some(crypt) = &self.crypt {
            // The bounce pages a write is sealed into, and the request's crypto state.
            let mut bounce = SgTable::new();
            bounce.reserve_own_pages(CRYPT_PAGES)?;
            let sc = KBox::new(
                SlotCrypt {
                    rc: crypt.disk.request_state()?,
                    bounce,
                },
                GFP_KERNEL,
            )?;
            data.part_mut(0).ok_or(EINVAL)?.data.crypt = Some(sc);
        }
        // Areas hold parity, and what reads into areas read. Replication needs them only
        // for late reads (its reads are whole pages). Every fragment of an encrypted disk
        // is written from and read into them.
        let areas = match (code.is_replication(), code.r()) {
            _ if self.crypt.is_some() => true,
            (true, _) => self.reads.extra > 0,
            (false, 0) => self.reads.areas,
            (false, _) => true,
        };
        if !areas {
            return Ok(());
        }
        let pages = GROUP_AREA
            .checked_div(usize::from(code.k()))
            .ok_or(EINVAL)?
            .div_ceil(BLOCK as usize);
        for l in 0..usize::from(code.legs()) {
            let table = data.part_mut(l).and_then(|p| p.table()).ok_or(EINVAL)?;
            table.reserve_own_pages(pages)?;
        }
        Ok(())
    }

    fn hw_queue(&self, index: u32) -> Option<&EcQueue> {
        self.queues.get(usize::try_from(index).ok()?)
    }

    fn hw_ctx(hwq: &EcQueue) -> &HwCtxSlot {
        &hwq.ctx
    }

    fn queue_rq(hwq: &EcQueue, rq: EcRequest) -> core::result::Result<(), (Status, EcRequest)> {
        let dir = match rq.op() {
            Op::Read => Dir::Read,
            Op::Write => Dir::Write,
            // A write completes only when every leg's memory holds it.
            Op::Flush => {
                rq.end(Status::Ok);
                return Ok(());
            }
            Op::Other(_) => return Err((Status::NotSupp, rq)),
        };
        issue(hwq, rq, dir).map_err(|(why, mut rq)| match why {
            NotNow::Busy => (Status::Resource, rq),
            NotNow::Wait => {
                // As a plain disk: wait for the leg's recovery; if it ended meanwhile, its
                // `resume` may have run before the stop.
                hwq.ctx.stop();
                if hwq.legs.iter().all(|q| q.state() != State::Recovering) {
                    hwq.ctx.start();
                }
                (Status::Resource, rq)
            }
            NotNow::Fail(why) => {
                write_failed(&mut rq);
                rq.data().shared.retries = 0;
                rq.data().shared.verify = false;
                hwq.stats.error();
                if log_failure() {
                    let q = &hwq.first;
                    pr_err!(
                        "{}: queue {}: {:?} of {} bytes at sector {} failed: {}\n",
                        q.name(),
                        q.index(),
                        dir,
                        rq.bytes(),
                        rq.sector(),
                        why
                    );
                }
                (Status::IoErr, rq)
            }
        })
    }

    /// Reads rebuilt from P and Q (see `finish`), and encrypted reads opened (with
    /// `crypt_workqueue`) or rebuilt without up to r legs' fragments ([`verify_read`]).
    fn run_deferred(mut rq: EcRequest) {
        let issued = rq.data().shared.issued.take();
        // The reference to the disk's crypto state is dropped before the request ends
        // (as on a plain disk: the last one must not be this work's).
        let crypt = rq.hw_queue().crypt.clone();
        let opened = match crypt {
            Some(c) if rq.data().shared.verify => Some(verify_read(&mut rq, &c.disk)),
            _ => None,
        };
        if let Some(opened) = opened {
            return after_open(rq, issued, opened);
        }
        let encrypted = rq.hw_queue().crypt.is_some();
        let rebuilt = match rq.data().shared.rebuild {
            Some(Rebuild::Pq { lost, p_leg, q_leg }) => rebuild_pq(&mut rq, lost, p_leg, q_leg),
            _ if encrypted => Ok(()),
            _ => Err(EINVAL),
        };
        let opened = match (&rebuilt, rq.hw_queue().crypt.clone()) {
            (Ok(()), Some(c)) if rq.op() == Op::Read => Some(open_pages(&mut rq, &c.disk)),
            _ => None,
        };
        match (rebuilt, opened) {
            (Ok(()), Some(opened)) => after_open(rq, issued, opened),
            (Ok(()), None) => succeed(rq, issued),
            (Err(_), _) => fail(rq, "rebuilding fragments from P and Q failed"),
        }
    }

    fn poll(hwq: &EcQueue) -> u32 {
        hwq.legs.iter().map(|q| q.poll()).sum()
    }

    fn timeout(hwq: &EcQueue, rq: &TimedOutRequest<'_>) -> TimeoutAction {
        for q in hwq.legs.iter() {
            q.reap();
        }
        if !rq.is_in_flight() {
            return TimeoutAction::Done;
        }
        pr_warn!(
            "{}: queue {}: request at sector {} timed out\n",
            hwq.first.name(),
            hwq.first.index(),
            rq.sector()
        );
        // Every leg's queue with work requests out is taken down: that flushes this
        // request's I/O (and others'), whose completions requeue or fail them.
        let mut action = TimeoutAction::Done;
        for q in hwq.legs.iter().filter(|q| q.counters().inflight > 0) {
            if Queue::fail(q, c"request timed out", 0) == Verdict::Retry {
                action = TimeoutAction::ResetTimer;
            }
        }
        action
    }
}

/// Bytes of a group: the most a request moves, so the most parity of one (k = 1).
const GROUP_AREA: usize = (super::super::ec_layout::GROUP_BLOCKS * BLOCK) as usize;
