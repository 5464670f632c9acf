// SPDX-License-Identifier: GPL-2.0

//! The I/O interface of the transport: what a block device asks of a queue.
//!
//! A device hands a [`Queue`] one I/O at a time: its direction, its pages (described in
//! the scatterlist of its [`IoSlot`]), the remote byte offset, and the owner to complete
//! ([`IoOwner`]). The transport maps the pages for DMA on the live connection's device,
//! posts the RDMA READ or WRITE at the region's address with its key (on iWARP with the
//! READ's registered sink, or the WRITE's fence), and owns the I/O until the work
//! request's completion unmaps it and calls [`IoOwner::complete`], exactly once, with
//! how it went. The device never sees a work request, a mapping, a memory region or a
//! key.
//!
//! Each I/O slot (a block request's tag) carries the transport's state preallocated in
//! [`IoSlot`], so nothing is allocated to issue or complete an I/O.

use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::{prelude::*, sync::Arc};

use super::{
    link::{Conn, Link},
    queue::{Queue, Verdict},
};
use crate::{
    ib::{
        cqe::{Cqe, CqeOwner, HasCqe, SgeList, Wc},
        dma::{Direction, MappedSg, SgDma, Sge},
        pd::Pd,
        qp::RdmaOp,
        Device, Qp,
    },
    kernel_ext::{IntoRaw, SgTable},
};

/// Segments (scatterlist entries) of one I/O at most: the SGEs of one work request.
pub(crate) const MAX_SEGMENTS: usize = 32;

/// Which way an I/O moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// From the server's memory into the pages.
    Read,
    /// From the pages into the server's memory.
    Write,
}

impl Dir {
    fn op(self) -> RdmaOp {
        match self {
            Self::Read => RdmaOp::Read,
            Self::Write => RdmaOp::Write,
        }
    }

    fn dma(self) -> Direction {
        match self {
            Self::Read => Direction::FromDevice,
            Self::Write => Direction::ToDevice,
        }
    }
}

/// One I/O slot's preallocated state: the transport's part (its work request's
/// completion entry, the scatterlist of its pages, at most `N` entries, and that list's
/// DMA mapping), then the device's own `data`.
#[derive(Default)]
pub(crate) struct IoSlot<D, const N: usize = MAX_SEGMENTS> {
    cqe: Cqe,
    dma: SgDma<N>,
    /// The device's part.
    pub(crate) data: D,
}

impl<D, const N: usize> IoSlot<D, N> {
    /// The scatterlist to describe the next I/O's pages in; `None` while an I/O of this
    /// slot is under way (its list is mapped).
    pub(crate) fn table(&mut self) -> Option<&mut SgTable<N>> {
        self.dma.table()
    }
}

// SAFETY: both functions use the `cqe` field, so `from_cqe` inverts `raw_cqe`.
unsafe impl<D, const N: usize> HasCqe for IoSlot<D, N> {
    unsafe fn raw_cqe(this: *mut Self) -> *mut Cqe {
        // SAFETY: `this` points to a valid `Self` (the caller's guarantee).
        unsafe { &raw mut (*this).cqe }
    }

    unsafe fn from_cqe(cqe: *mut Cqe) -> *mut Self {
        // SAFETY: `cqe` is the field of a valid `Self` (the caller's guarantee).
        unsafe { kernel::container_of!(cqe, Self, cqe) }
    }
}

impl<D, const N: usize> SgeList for IoSlot<D, N> {
    fn sges(&self) -> &[Sge] {
        self.dma.sges()
    }

    fn mapped_sg(&self) -> Option<MappedSg<'_>> {
        self.dma.mapped_sg()
    }
}

/// The transport's view of an I/O slot of any size: its mapping, and what a work request
/// needs of it.
pub(crate) trait Slot: HasCqe + SgeList {
    /// Maps the first `nents` entries of the slot's scatterlist (see [`SgDma::map`]).
    fn map(&mut self, pd: &Pd, nents: usize, dir: Direction) -> Result;

    /// Undoes the mapping (see [`SgDma::unmap`]).
    fn unmap(&mut self, dev: &Device);
}

impl<D, const N: usize> Slot for IoSlot<D, N> {
    fn map(&mut self, pd: &Pd, nents: usize, dir: Direction) -> Result {
        self.dma.map(pd, nents, dir)
    }

    fn unmap(&mut self, dev: &Device) {
        self.dma.unmap(dev);
    }
}

/// What one I/O moves: `dir` of the `nents` pages described in its slot's scatterlist,
/// `bytes` in all, at byte `offset` of the remote region.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoDesc {
    /// Which way.
    pub(crate) dir: Dir,
    /// The byte offset in the region.
    pub(crate) offset: u64,
    /// Bytes in all.
    pub(crate) bytes: u32,
    /// Scatterlist entries filled.
    pub(crate) nents: usize,
}

/// Why an I/O failed, as its completion hears it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoError {
    /// What happened, for the log (a work completion's status, ...).
    pub(crate) why: &'static CStr,
    /// The work completion's status code (0: none).
    pub(crate) status: u32,
    /// What the queue says of I/O that failed on it.
    pub(crate) verdict: Verdict,
}

/// Why a queue did not take an I/O; the caller keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Out of a resource (DMA mapping, send queue, READ slots): issue it again soon.
    Busy,
    /// The queue is recovering: issue it again once the queue takes I/O again (see
    /// [`super::queue::Resume`]).
    Wait,
    /// It fails, for this reason.
    Fail(&'static str),
}

impl Refusal {
    /// What a queue that failed says of an I/O it did not take, as its `verdict` goes:
    /// wait for its recovery, or fail for `why`.
    fn after(verdict: Verdict, why: &'static str) -> Self {
        match verdict {
            Verdict::Retry => Self::Wait,
            Verdict::Fail => Self::Fail(why),
        }
    }
}

/// What owns an I/O: the device's request, which gives itself up to the transport while
/// its work request is posted (as a pointer to its [`IoSlot`]) and is completed once.
pub(crate) trait IoOwner: IntoRaw<Target = Self::Slot> + Send {
    /// The slot the I/O is described in (an [`IoSlot`]).
    type Slot: Slot;

    /// The slot, while the owner has it.
    fn slot(&mut self) -> &mut Self::Slot;

    /// The queue the I/O is issued on.
    fn queue(&self) -> &Arc<Queue>;

    /// The I/O ended: its data moved (`Ok`) or not. Runs with softirqs disabled (in
    /// softirq, or on a poll queue in the task that polls): no sleeping, no allocation.
    fn complete(self, result: core::result::Result<(), IoError>);
}

/// The counters of a queue's data path: work requests posted and completed (their
/// difference is in flight), those that completed successfully, and READs posted with a
/// registered sink (iWARP).
#[derive(Default)]
pub(crate) struct IoCounters {
    posted: AtomicU64,
    completed: AtomicU64,
    succeeded: AtomicU64,
    registered_reads: AtomicU64,
}

/// The data-path counters of a queue at one moment (see [`Queue::counters`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QueueCounters {
    /// Work requests in flight.
    pub(crate) inflight: u64,
    /// RDMA READs posted with a registered sink.
    pub(crate) registered_reads: u64,
    /// I/O issued again after the queue failed under it.
    pub(crate) requeues: u64,
    /// Successful reconnects.
    pub(crate) recoveries: u64,
}

impl QueueCounters {
    /// Adds `other`'s counts to these (the queues of several servers behind one hardware
    /// queue).
    pub(crate) fn add(&mut self, other: &QueueCounters) {
        self.inflight += other.inflight;
        self.registered_reads += other.registered_reads;
        self.requeues += other.requeues;
        self.recoveries += other.recoveries;
    }
}

impl IoCounters {
    /// The counters now, with the queue's own `requeues` and `recoveries`. `completed` is
    /// read first, so that a completion between the two loads shows as one more in
    /// flight, never a negative count.
    pub(super) fn load(&self, requeues: u64, recoveries: u64) -> QueueCounters {
        let completed = self.completed.load(Ordering::Relaxed);
        let posted = self.posted.load(Ordering::Relaxed);
        QueueCounters {
            inflight: posted.saturating_sub(completed),
            registered_reads: self.registered_reads.load(Ordering::Relaxed),
            requeues,
            recoveries,
        }
    }

    /// Work requests that completed successfully so far: the keep-alive's sign of life
    /// while its probe waits behind them.
    pub(super) fn succeeded(&self) -> u64 {
        self.succeeded.load(Ordering::Relaxed)
    }

    fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// An I/O while its work request owns it.
struct InFlight<R>(R);

// SAFETY: `into_raw`/`from_raw` are those of `R`'s `IntoRaw`, whose contract is the one
// `CqeOwner` asks for.
unsafe impl<R: IoOwner> CqeOwner for InFlight<R> {
    type Target = R::Slot;

    fn into_raw(self) -> NonNull<R::Slot> {
        self.0.into_raw()
    }

    unsafe fn from_raw(target: NonNull<R::Slot>) -> Self {
        // SAFETY: the caller's guarantee, passed on.
        Self(unsafe { R::from_raw(target) })
    }

    fn complete(self, wc: &Wc<'_>) {
        let mut io = self.0;
        io.slot().unmap(wc.device());
        let result = {
            let queue = io.queue();
            let counters = queue.io_counters();
            IoCounters::count(&counters.completed);
            if wc.is_ok() {
                IoCounters::count(&counters.succeeded);
                Ok(())
            } else {
                Err(IoError {
                    why: wc.status_msg(),
                    status: wc.status(),
                    verdict: Queue::fail(queue, wc.status_msg(), wc.status()),
                })
            }
        };
        io.complete(result);
    }
}

impl Queue {
    /// Issues `io` as `desc` says. On success the transport owns `io` until it completes
    /// it ([`IoOwner::complete`]); otherwise `io` comes back with why. Runs in atomic
    /// context: no sleeping, no allocation.
    pub(crate) fn submit<R: IoOwner>(
        this: &Arc<Self>,
        io: R,
        desc: IoDesc,
    ) -> core::result::Result<(), (Refusal, R)> {
        match Queue::with_conn(this, io, |link, conn, io| post(this, link, conn, io, desc)) {
            Ok(result) => result,
            // Recovering, or dead: device removed, recovery failed or off, disabled.
            Err((verdict, io)) => Err((Refusal::after(verdict, "the queue is dead"), io)),
        }
    }
}

/// Maps `io`'s pages on `conn`'s device and posts its work request on `conn`'s QP.
fn post<R: IoOwner>(
    queue: &Arc<Queue>,
    link: &Link,
    conn: &Conn,
    mut io: R,
    desc: IoDesc,
) -> core::result::Result<(), (Refusal, R)> {
    let IoDesc {
        dir,
        offset,
        bytes,
        nents,
    } = desc;
    if !conn.is_established() {
        // The server disconnected: recover (issue it again later) or fail.
        let verdict = Queue::fail(queue, c"connection lost", 0);
        return Err((Refusal::after(verdict, "the queue is dead"), io));
    }
    let Ok(remote_addr) = link.region().remote_addr(offset, u64::from(bytes)) else {
        return Err((Refusal::Fail("outside the remote region"), io));
    };
    let Some(qp) = conn.qp() else {
        return Err((Refusal::Fail("the connection has no QP"), io));
    };
    // The caller's to keep to (the disk's segment limit): a device may refuse more, or
    // take them; the queue must not be torn down for it either way.
    if nents > link.max_sge() as usize {
        return Err((Refusal::Fail("more segments than the queue takes"), io));
    }
    match io.slot().map(qp.pd(), nents, dir.dma()) {
        Ok(()) => {}
        // Out of mapping resources: retry later. Anything else will not improve.
        Err(e) if e == ENOMEM => return Err((Refusal::Busy, io)),
        Err(_) => return Err((Refusal::Fail("DMA mapping failed"), io)),
    }
    let counters = queue.io_counters();
    // Counted before the post: its completion may run before `post_rdma` returns.
    IoCounters::count(&counters.posted);
    match qp.post_rdma(InFlight(io), dir.op(), remote_addr, link.region().rkey) {
        Ok(()) => {
            if dir == Dir::Read && qp.registers_read_sinks() {
                IoCounters::count(&counters.registered_reads);
            }
            Ok(())
        }
        Err((e, InFlight(mut io))) => {
            IoCounters::count(&counters.completed);
            io.slot().unmap(conn.rdma_device().device());
            if Qp::refused_for_now(e) {
                return Err((Refusal::Busy, io));
            }
            // The QP would not take it: the device has put it in the error state, as when
            // the server disconnected after the check above (soft-iWARP refuses posts
            // then). As for a connection lost: recover and issue it again, or fail.
            let verdict = Queue::fail(queue, c"posting the work request failed", 0);
            Err((
                Refusal::after(verdict, "posting the work request failed"),
                io,
            ))
        }
    }
}
