// SPDX-License-Identifier: GPL-2.0

//! The data path of a disk over several servers: each block request is fanned out
//! ([`crate::blk::FanOut`]) to one I/O per leg it needs, on that leg's queue of the
//! request's hardware queue. A write goes to every leg; a read to the legs that hold the
//! data fragments of its group. Each leg's I/O describes its fragment of each page of the
//! request (the whole page for replication), so the data moves straight between the
//! request's pages and the legs' regions, at byte `block * fragment` of each region.
//!
//! The request ends when every leg's I/O is back: with success if all of them succeeded;
//! otherwise it is issued again (a leg recovering, up to [`MAX_RETRIES`] times) or fails.

use core::sync::atomic::{AtomicU8, Ordering};
use kernel::{
    prelude::*,
    sync::Arc,
    time::{Instant, Monotonic},
};

use super::{
    super::ec_layout::{LegMask, MAX_LEGS},
    Layout, Leg, EC_SEGMENTS,
};
use crate::{
    blk::{
        self, FanOut, HwCtxSlot, Op, PartMask, Released, Request, RequestPart, Status,
        TimedOutRequest, TimeoutAction,
    },
    disk::{
        ec_layout::BLOCK,
        stats::{QueueStats, Snapshot},
    },
    transport::{
        io::{Dir, IoDesc, IoError, IoOwner, IoSlot, QueueCounters, Refusal},
        queue::{Queue, State, Verdict},
    },
};

/// How many times one request is issued again after a leg's queue failed under it.
const MAX_RETRIES: u8 = 5;

/// One leg's transport slot of a request: its scatterlist has an entry per page.
type LegSlot = IoSlot<(), EC_SEGMENTS>;

/// What a request's legs report back when they did not succeed, the worst kept
/// ([`Again`]); read once every leg is back.
#[derive(Default)]
pub(crate) struct EcShared {
    again: AtomicU8,
    /// Times this request was issued again because a leg's queue failed.
    retries: u8,
    /// When it was issued, for the latency histogram.
    issued: Option<Instant<Monotonic>>,
}

/// What to do with a request a leg did not take or did not complete, the worst of its
/// legs' answers (in this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum Again {
    /// Every leg succeeded.
    No = 0,
    /// A leg was out of a resource: issue it again, not counted as a retry.
    Busy = 1,
    /// A leg's queue is recovering: issue it again once it is back.
    Retry = 2,
    /// A leg's queue is dead, or the I/O cannot work: fail it.
    Fail = 3,
}

impl EcShared {
    fn note(&self, again: Again) {
        self.again.fetch_max(again as u8, Ordering::AcqRel);
    }

    fn again(&self) -> Again {
        match self.again.load(Ordering::Acquire) {
            0 => Again::No,
            1 => Again::Busy,
            2 => Again::Retry,
            _ => Again::Fail,
        }
    }
}

/// A request's data: a transport slot per leg, and what they share.
pub(crate) type EcRequestData = FanOut<LegSlot, EcShared, MAX_LEGS>;

/// A leg's I/O of a request.
type LegIo = RequestPart<LegSlot, EcShared, MAX_LEGS, EcQueue>;

/// A hardware queue of the disk: the same-numbered queue of each leg, its blk-mq context
/// (stopped while a leg it needs recovers), its counters and the disk's layout.
pub(crate) struct EcQueue {
    legs: KVec<Arc<Queue>>,
    /// Leg 0's queue, standing in for an index that is not a leg (never asked for: parts
    /// exist only for legs).
    first: Arc<Queue>,
    ctx: Arc<HwCtxSlot>,
    stats: QueueStats,
    layout: Layout,
}

impl EcQueue {
    fn leg(&self, i: usize) -> &Arc<Queue> {
        self.legs.get(i).unwrap_or(&self.first)
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
pub(super) fn hw_queues(legs: &[Leg], layout: Layout) -> Result<KVec<EcQueue>> {
    let count = legs.first().map_or(0, |l| l.session.queues().len());
    let mut out = KVec::with_capacity(count, GFP_KERNEL)?;
    for i in 0..count {
        let ctx = HwCtxSlot::new()?;
        let mut queues = KVec::with_capacity(legs.len(), GFP_KERNEL)?;
        for leg in legs {
            let q = leg.session.queues().get(i).ok_or(EINVAL)?;
            q.set_resume(ctx.clone());
            queues.push(q.clone(), GFP_KERNEL)?;
        }
        let first = queues.first().ok_or(EINVAL)?.clone();
        out.push(
            EcQueue {
                legs: queues,
                first,
                ctx,
                stats: QueueStats::default(),
                layout,
            },
            GFP_KERNEL,
        )?;
    }
    Ok(out)
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

/// Failed requests logged so far (all disks): the first 20 and every 1000th after that.
static FAILURES: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

fn log_failure() -> bool {
    let n = FAILURES.fetch_add(1, Ordering::Relaxed);
    n < 20 || n % 1000 == 0
}

/// What a leg's refusal means for its request.
fn refusal_again(r: Refusal) -> Again {
    match r {
        Refusal::Busy => Again::Busy,
        Refusal::Wait => Again::Retry,
        Refusal::Fail(_) => Again::Fail,
    }
}

/// A leg's I/O came back (or was never taken): note how, and finish the request if it was
/// the last.
fn leg_done(io: LegIo, result: core::result::Result<(), IoError>) {
    if let Err(e) = &result {
        io.shared().note(match e.verdict {
            Verdict::Retry => Again::Retry,
            Verdict::Fail => Again::Fail,
        });
        if log_failure() {
            let queue = io.queue();
            pr_err!(
                "{}: queue {}: I/O at sector {} failed: {} (status {})\n",
                queue.name(),
                queue.index(),
                io.info().sector(),
                e.why,
                e.status
            );
        }
    }
    released(io.release(result.is_ok(), |_| false));
}

/// Acts on what a leg's release gave back.
fn released(r: Released<LegSlot, EcShared, MAX_LEGS, EcQueue>) {
    match r {
        Released::Out => {}
        Released::Last(rq) => finish(rq),
        // Not asked for: no quorum is accepted before every leg is back.
        Released::Quorum(settler) => {
            if let Some(rq) = settler.settle(Status::IoErr) {
                rq.end();
            }
        }
        Released::Done(rq) => rq.end(),
    }
}

/// Every leg of `rq` is back: end it, or issue it again.
fn finish(mut rq: Request<super::EcDriver>) {
    let data = rq.data();
    let all = data.ok() == data.given();
    let again = data.shared.again();
    let issued = data.shared.issued.take();
    if all {
        let hwq = rq.hw_queue();
        if let Some(at) = issued {
            let ns = rq
                .age_ns()
                .unwrap_or_else(|| u64::try_from(at.elapsed().as_nanos()).unwrap_or(u64::MAX));
            hwq.stats.done(rq.op(), rq.bytes(), ns);
        }
        rq.data().shared.retries = 0;
        return rq.end(Status::Ok);
    }
    let retries = rq.data().shared.retries;
    match again {
        Again::Busy => rq.requeue(),
        Again::Retry if retries < MAX_RETRIES => {
            rq.data().shared.retries = retries + 1;
            if let Some(q) = rq.hw_queue().legs.first() {
                q.count_retry();
            }
            rq.requeue();
        }
        Again::No | Again::Retry | Again::Fail => {
            rq.hw_queue().stats.error();
            rq.data().shared.retries = 0;
            rq.end(Status::IoErr);
        }
    }
}

/// Why `queue_rq` cannot issue a request now.
enum NotNow {
    /// A leg it needs is recovering.
    Wait,
    /// It fails, for this reason.
    Fail(&'static str),
}

/// Fills each needed leg's scatterlist with its fragment of every page of `rq`; returns
/// the legs and each one's entries.
fn describe(
    hwq: &EcQueue,
    rq: &mut Request<super::EcDriver>,
    dir: Dir,
    group: u64,
) -> core::result::Result<(PartMask, [usize; MAX_LEGS]), NotNow> {
    let layout = &hwq.layout;
    let code = layout.code();
    let all: PartMask = (1 << code.legs()) - 1;
    let legs = match dir {
        Dir::Write => all,
        Dir::Read => {
            let usable = LegMask::try_from(all).map_err(|_| NotNow::Fail("legs"))?;
            PartMask::from(
                layout
                    .read_plan(group, usable, 0)
                    .ok_or(NotNow::Fail("no plan to read"))?,
            )
        }
    };
    let frag = u32::try_from(code.fragment_bytes()).map_err(|_| NotNow::Fail("fragment"))?;
    let mut nents = [0usize; MAX_LEGS];
    for (l, n) in nents.iter_mut().enumerate() {
        if legs & (1 << l) == 0 {
            continue;
        }
        match hwq.leg(l).state() {
            State::Recovering => return Err(NotNow::Wait),
            State::Dead => return Err(NotNow::Fail("a leg is dead")),
            State::Connecting | State::Live => {}
        }
        let leg = u8::try_from(l).map_err(|_| NotNow::Fail("leg"))?;
        let j = u32::from(layout.fragment_on(group, leg));
        // Replication: every fragment is the whole block.
        let off = if code.is_replication() { 0 } else { j * frag };
        *n = rq
            .map_fragments(|d| d.part_mut(l)?.table(), off, frag)
            .ok_or(NotNow::Fail("more segments than the disk allows"))?;
    }
    Ok((legs, nents))
}

/// Issues `rq` on every leg it needs.
fn issue(
    hwq: &EcQueue,
    mut rq: Request<super::EcDriver>,
    dir: Dir,
) -> core::result::Result<(), (NotNow, Request<super::EcDriver>)> {
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
    *shared.again.get_mut() = 0;
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
        let queue = hwq.leg(l);
        if let Err((refusal, io)) = Queue::submit(queue, io, desc) {
            io.shared().note(refusal_again(refusal));
            released(io.release(false, |_| false));
        }
    }
    Ok(())
}

impl blk::Operations for super::EcDriver {
    type RequestData = EcRequestData;
    type HwQueue = EcQueue;

    fn hw_queue(&self, index: u32) -> Option<&EcQueue> {
        self.queues.get(usize::try_from(index).ok()?)
    }

    fn hw_ctx(hwq: &EcQueue) -> &HwCtxSlot {
        &hwq.ctx
    }

    fn queue_rq(
        hwq: &EcQueue,
        rq: Request<Self>,
    ) -> core::result::Result<(), (Status, Request<Self>)> {
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
                rq.data().shared.retries = 0;
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

    /// Nothing is deferred.
    fn run_deferred(rq: Request<Self>) {
        rq.end(Status::IoErr);
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
