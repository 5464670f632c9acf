// SPDX-License-Identifier: GPL-2.0

//! The data path: each block request becomes one I/O on the transport queue of its
//! hardware queue ([`crate::transport::io`]): its direction, its segments, its offset.
//! The transport owns the request until it completes it, exactly once; the request is
//! then ended (or requeued). On an encrypted disk the pages are sealed before the I/O is
//! issued and opened after it completed ([`super::crypt`]).
//!
//! A failed completion, a lost connection or a timeout puts the queue into recovery
//! (see [`crate::transport::queue`]): its requests are requeued and issued again on the
//! new connection, up to [`MAX_RETRIES`] times each; a dead queue fails them.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    prelude::*,
    sync::Arc,
    time::{Instant, Monotonic},
};

use crate::{
    blk::{self, HwCtxSlot, Op, Request, Status, TimedOutRequest, TimeoutAction},
    transport::{
        io::{Dir, IoDesc, IoError, IoOwner, IoSlot, Refusal},
        queue::{Queue, Resume, State, Verdict},
        session::Session,
    },
};

use super::{
    crypt::{CryptError, DiskCrypt, RequestCrypt, CRYPT_PAGES},
    stats::{QueueStats, Snapshot},
};

/// How many times one request is issued again after its queue failed under it. A request
/// that keeps breaking its connection fails rather than looping.
pub(super) const MAX_RETRIES: u8 = 5;

/// Failed requests logged so far (all disks, plain or over several servers): the first 20
/// and every 1000th after that, so a dead link cannot flood the log from the I/O path.
static FAILURES: AtomicU32 = AtomicU32::new(0);

pub(super) fn log_failure() -> bool {
    let n = FAILURES.fetch_add(1, Ordering::Relaxed);
    n < 20 || n % 1000 == 0
}

/// The disk's state of one request, preallocated with its tag beside the transport's
/// ([`IoSlot`]): the retry count and when it was issued; on an encrypted disk also its
/// crypto state.
#[derive(Default)]
pub(crate) struct RequestData {
    /// The request's crypto state, on an encrypted disk. Taken out only for the length of
    /// a seal or an open.
    crypt: Option<RequestCrypt>,
    /// Times this request was requeued because its queue failed.
    retries: u8,
    /// When it was issued, for the latency histogram.
    issued: Option<Instant<Monotonic>>,
}

/// A block request is an I/O of the transport while it is issued.
impl IoOwner for Request<Driver> {
    type Slot = IoSlot<RequestData>;

    fn slot(&mut self) -> &mut IoSlot<RequestData> {
        self.data()
    }

    fn queue(&self) -> &Arc<Queue> {
        &self.hw_queue().queue
    }

    fn complete(self, result: core::result::Result<(), IoError>) {
        complete(self, result);
    }
}

/// A hardware queue of the disk: the queue it posts to, its blk-mq context, stopped
/// while the queue recovers, and its counters.
pub(crate) struct DiskQueue {
    queue: Arc<Queue>,
    ctx: Arc<HwCtxSlot>,
    stats: QueueStats,
    /// The disk's encryption, if it is encrypted.
    crypt: Option<Arc<DiskCrypt>>,
}

/// A recovering queue's hardware queue is stopped; the queue starts it again when it is
/// live again (or dead, so that its I/O fails).
impl Resume for HwCtxSlot {
    fn resume(&self) {
        self.start();
    }
}

/// The blk-mq driver of one disk.
///
/// Fields are dropped in declaration order: the session shuts its queues down before the
/// hardware queues let go of them.
pub(crate) struct Driver {
    session: Session,
    queues: KVec<DiskQueue>,
    crypt: Option<Arc<DiskCrypt>>,
}

impl Driver {
    /// A driver over a connected session, one hardware queue per queue; every block is
    /// sealed with `crypt` if it is given.
    pub(super) fn new(session: Session, crypt: Option<DiskCrypt>) -> Result<Self> {
        let crypt = match crypt {
            Some(c) => Some(Arc::new(c, GFP_KERNEL)?),
            None => None,
        };
        let mut queues = KVec::with_capacity(session.queues().len(), GFP_KERNEL)?;
        for queue in session.queues() {
            let ctx = HwCtxSlot::new()?;
            queue.set_resume(ctx.clone());
            queues.push(
                DiskQueue {
                    queue: queue.clone(),
                    ctx,
                    stats: QueueStats::default(),
                    crypt: crypt.clone(),
                },
                GFP_KERNEL,
            )?;
        }
        Ok(Self {
            session,
            queues,
            crypt,
        })
    }

    /// The disk's encryption, if it is encrypted.
    pub(super) fn crypt(&self) -> Option<&DiskCrypt> {
        self.crypt.as_deref()
    }

    /// The session.
    pub(super) fn session(&self) -> &Session {
        &self.session
    }

    /// The counters of each hardware queue, with its queue's requeues and recoveries.
    pub(super) fn stats(&self) -> impl Iterator<Item = Snapshot> + '_ {
        self.queues
            .iter()
            .map(|hwq| hwq.stats.snapshot(hwq.queue.counters()))
    }
}

type NotPosted = (Refusal, Request<Driver>);

/// Ends `rq` with `status`, ready for its tag's next request.
fn end(mut rq: Request<Driver>, status: Status) {
    if status != Status::Ok {
        write_failed(&mut rq);
    }
    rq.data().data.retries = 0;
    rq.end(status);
}

/// On an encrypted disk, a write that fails may or may not have reached the server: its
/// blocks' seals are withdrawn, so that their reads fail as unwritten-by-a-failed-write
/// rather than as forged.
fn write_failed(rq: &mut Request<Driver>) {
    if rq.op() != Op::Write {
        return;
    }
    let Some(crypt) = hwq_crypt(rq) else {
        return;
    };
    let (offset, bytes) = (rq.offset(), rq.bytes());
    crypt.write_failed(rq.data().data.crypt.as_mut(), offset, bytes);
}

/// Issues `rq` on `hwq`'s queue: seals a write's pages (encrypted disk), notes what a read
/// will fetch, describes its pages, and hands it to the transport.
fn issue(
    hwq: &DiskQueue,
    mut rq: Request<Driver>,
    dir: Dir,
) -> core::result::Result<(), NotPosted> {
    let nents = match (&hwq_crypt(&rq), dir) {
        (Some(crypt), Dir::Write) => match seal(crypt, &mut rq) {
            Ok(n) => n,
            Err(refusal) => return Err((refusal, rq)),
        },
        (Some(crypt), Dir::Read) if read_begin(crypt, &mut rq).is_err() => {
            return Err((Refusal::Busy, rq));
        }
        _ => match rq.map_sg(|slot| slot.table()) {
            Some(n) => n,
            None => return Err((Refusal::Fail("more segments than the disk allows"), rq)),
        },
    };
    rq.data().data.issued = Some(Instant::now());
    let desc = IoDesc {
        dir,
        offset: rq.offset(),
        bytes: rq.bytes(),
        nents,
    };
    Queue::submit(&hwq.queue, rq, desc)
}

/// The disk's encryption, if `rq`'s disk is encrypted.
fn hwq_crypt(rq: &Request<Driver>) -> Option<Arc<DiskCrypt>> {
    rq.hw_queue().crypt.clone()
}

/// Notes what read `rq` is about to fetch (see [`DiskCrypt::read_begin`]); `Err` while a
/// write holds one of its blocks.
fn read_begin(crypt: &DiskCrypt, rq: &mut Request<Driver>) -> core::result::Result<(), CryptError> {
    let (offset, bytes) = (rq.offset(), rq.bytes());
    match rq.data().data.crypt.as_mut() {
        Some(rc) => crypt.read_begin(rc, offset, bytes),
        None => Ok(()),
    }
}

/// Seals the pages of write `rq` into its scatterlist's own pages and points the list at
/// them; returns how many entries.
fn seal(crypt: &DiskCrypt, rq: &mut Request<Driver>) -> core::result::Result<usize, Refusal> {
    let offset = rq.offset();
    let Some((slot, pages)) = rq.data_and_sent_pages::<CRYPT_PAGES>() else {
        return Err(Refusal::Fail("not whole pages"));
    };
    let Some(mut rc) = slot.data.crypt.take() else {
        return Err(Refusal::Fail("no crypto state"));
    };
    let sealed = match slot.table() {
        Some(table) => crypt
            .seal_write(&mut rc, &pages, table.own_pages(), offset)
            .map(|n| table.use_own_pages(n)),
        None => Err(CryptError::Failed("the scatterlist is in use")),
    };
    slot.data.crypt = Some(rc);
    match sealed {
        Ok(0) => Err(Refusal::Fail("mapping the sealed pages failed")),
        Ok(n) => Ok(n),
        Err(CryptError::Busy) => Err(Refusal::Busy),
        Err(CryptError::Failed(why)) => Err(Refusal::Fail(why)),
        Err(CryptError::Forged { .. } | CryptError::Raced) => Err(Refusal::Fail("sealing failed")),
    }
}

/// A completed read or write of an encrypted disk: a write's seals take effect, a read is
/// opened. `Err` if the read must fail (with why).
fn finish_crypt(
    crypt: &DiskCrypt,
    rq: &mut Request<Driver>,
) -> core::result::Result<(), CryptError> {
    let Some(mut rc) = rq.data().data.crypt.take() else {
        return Err(CryptError::Failed("no crypto state"));
    };
    let offset = rq.offset();
    let result = match rq.op() {
        Op::Write => {
            crypt.commit(&mut rc, offset);
            Ok(())
        }
        Op::Read => match rq.filled_pages::<CRYPT_PAGES>() {
            Some(pages) => crypt.open_read(&mut rc, &pages, offset),
            None => Err(CryptError::Failed("not whole pages")),
        },
        Op::Flush | Op::Other(_) => Ok(()),
    };
    rq.data().data.crypt = Some(rc);
    result
}

/// The transport completed `rq`: end or requeue it. Runs with softirqs disabled: in
/// softirq context, or on a poll queue in whichever task polls.
fn complete(mut rq: Request<Driver>, result: core::result::Result<(), IoError>) {
    let issued = rq.data().data.issued.take();
    let e = match result {
        Ok(()) => {
            // The disk's crypto state is let go of before the request ends (see
            // `open_deferred`).
            let crypted = match hwq_crypt(&rq) {
                None => Ok(()),
                Some(crypt) => match (crypt.workqueue(), rq.op()) {
                    (Some(wq), Op::Read) => {
                        rq.data().data.issued = issued;
                        match rq.defer(wq) {
                            Ok(()) => return,
                            // Not queued (it cannot be: the item is queued once per read);
                            // open it here rather than lose it.
                            Err(back) => rq = back,
                        }
                        finish_crypt(&crypt, &mut rq)
                    }
                    _ => finish_crypt(&crypt, &mut rq),
                },
            };
            return after_crypt(rq, issued, crypted);
        }
        Err(e) => e,
    };
    if e.verdict == Verdict::Retry && rq.data().data.retries < MAX_RETRIES {
        rq.data().data.retries += 1;
        rq.hw_queue().queue.count_retry();
        return rq.requeue();
    }
    if log_failure() {
        let why = match e.verdict {
            Verdict::Retry => ", retried too often",
            Verdict::Fail => "",
        };
        let queue = &rq.hw_queue().queue;
        pr_err!(
            "{}: queue {}: I/O at sector {} failed: {} (status {}{})\n",
            queue.name(),
            queue.index(),
            rq.sector(),
            e.why,
            e.status,
            why
        );
    }
    rq.hw_queue().stats.error();
    end(rq, Status::IoErr);
}

/// Ends a request that completed successfully, counting it with its latency: from the
/// block layer's start of it (or, if the block layer did not time it, from when it was
/// issued) to now.
fn done(rq: Request<Driver>, issued: Option<Instant<Monotonic>>) {
    if let Some(at) = issued {
        let ns = rq
            .age_ns()
            .unwrap_or_else(|| u64::try_from(at.elapsed().as_nanos()).unwrap_or(u64::MAX));
        rq.hw_queue().stats.done(rq.op(), rq.bytes(), ns);
    }
    end(rq, Status::Ok);
}

/// Opens an encrypted read in the disk's crypto workqueue (see
/// [`blk::Operations::run_deferred`]) and ends it.
fn open_deferred(mut rq: Request<Driver>) {
    let issued = rq.data().data.issued.take();
    // The reference to the disk's crypto state is dropped before the request ends: once
    // the disk's last request ended, its teardown may drop the rest, and the last reference
    // must not be this work's (the state's workqueue would then be destroyed from its own
    // worker, and after `rmmod` this code would run unloaded).
    let crypted = match hwq_crypt(&rq) {
        Some(crypt) => finish_crypt(&crypt, &mut rq),
        None => Err(CryptError::Failed("no crypto state")),
    };
    after_crypt(rq, issued, crypted);
}

/// Ends (or, if it raced a write, reads again) a request whose crypto is done.
fn after_crypt(
    mut rq: Request<Driver>,
    issued: Option<Instant<Monotonic>>,
    crypted: core::result::Result<(), CryptError>,
) {
    match crypted {
        Ok(()) => done(rq, issued),
        Err(CryptError::Raced) if rq.data().data.retries < MAX_RETRIES => {
            rq.data().data.retries += 1;
            rq.requeue();
        }
        Err(e) => crypt_failed(rq, e),
    }
}

/// A read of an encrypted disk did not open (or crypto failed): it ends with an I/O error
/// and is not retried (the server would send the same bytes again).
fn crypt_failed(rq: Request<Driver>, e: CryptError) {
    let hwq = rq.hw_queue();
    hwq.stats.error();
    if log_failure() {
        let queue = &hwq.queue;
        match e {
            CryptError::Forged { block } => pr_err!(
                "{}: queue {}: read at sector {} failed: block {} does not verify (the \
                 server altered, moved or replayed it)\n",
                queue.name(),
                queue.index(),
                rq.sector(),
                block
            ),
            CryptError::Failed(why) => pr_err!(
                "{}: queue {}: I/O at sector {} failed: {}\n",
                queue.name(),
                queue.index(),
                rq.sector(),
                why
            ),
            CryptError::Busy | CryptError::Raced => pr_err!(
                "{}: queue {}: read at sector {} failed: it raced writes of its blocks {} \
                 times\n",
                queue.name(),
                queue.index(),
                rq.sector(),
                MAX_RETRIES
            ),
        }
    }
    end(rq, Status::IoErr);
}

impl blk::Operations for Driver {
    type RequestData = IoSlot<RequestData>;
    type HwQueue = DiskQueue;

    fn init_request(&self, slot: &mut IoSlot<RequestData>) -> Result {
        if let Some(crypt) = &self.crypt {
            // The bounce pages a write is sealed into.
            slot.table().ok_or(EINVAL)?.reserve_own_pages(CRYPT_PAGES)?;
            slot.data.crypt = Some(crypt.request_state()?);
        }
        Ok(())
    }

    fn hw_queue(&self, index: u32) -> Option<&DiskQueue> {
        self.queues.get(usize::try_from(index).ok()?)
    }

    fn hw_ctx(hwq: &DiskQueue) -> &HwCtxSlot {
        &hwq.ctx
    }

    fn queue_rq(
        hwq: &DiskQueue,
        rq: Request<Self>,
    ) -> core::result::Result<(), (Status, Request<Self>)> {
        let queue = &hwq.queue;
        let dir = match rq.op() {
            Op::Read => Dir::Read,
            Op::Write => Dir::Write,
            // A write completes only when the server's memory holds it (see
            // `transport::io`), so there is no volatile cache to flush.
            Op::Flush => {
                end(rq, Status::Ok);
                return Ok(());
            }
            Op::Other(_) => return Err((Status::NotSupp, rq)),
        };
        issue(hwq, rq, dir).map_err(|(refusal, mut rq)| match refusal {
            Refusal::Busy => (Status::Resource, rq),
            Refusal::Wait => {
                // Wait for the queue's recovery instead of being retried every few ms;
                // if it ended meanwhile, its `resume` may have run before the stop.
                hwq.ctx.stop();
                if queue.state() != State::Recovering {
                    hwq.ctx.start();
                }
                (Status::Resource, rq)
            }
            Refusal::Fail(why) => {
                rq.data().data.retries = 0;
                write_failed(&mut rq);
                hwq.stats.error();
                if log_failure() {
                    pr_err!(
                        "{}: queue {}: {:?} of {} bytes at sector {} failed: {}\n",
                        queue.name(),
                        queue.index(),
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

    /// Only encrypted reads are deferred, to be opened in the disk's crypto workqueue.
    fn run_deferred(rq: Request<Self>) {
        open_deferred(rq);
    }

    fn poll(hwq: &DiskQueue) -> u32 {
        hwq.queue.poll()
    }

    fn timeout(hwq: &DiskQueue, rq: &TimedOutRequest<'_>) -> TimeoutAction {
        let queue = &hwq.queue;
        // On a poll queue a request whose submitter stopped polling (a stopped task, an
        // io_uring that does not reap) completes only when polled: poll before calling
        // a healthy link dead, as nvme-pci does before timing a request out.
        queue.reap();
        if !rq.is_in_flight() {
            return TimeoutAction::Done;
        }
        pr_warn!(
            "{}: queue {}: request at sector {} timed out\n",
            queue.name(),
            queue.index(),
            rq.sector()
        );
        // The queue's link is taken down either way, which flushes every request it holds
        // (this one included); each flush completion requeues its request (recovering)
        // or ends it with an I/O error (dead).
        match Queue::fail(queue, c"request timed out", 0) {
            Verdict::Retry => TimeoutAction::ResetTimer,
            Verdict::Fail => TimeoutAction::Done,
        }
    }
}
