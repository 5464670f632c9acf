// SPDX-License-Identifier: GPL-2.0

//! One RDMA queue to the memory server.
//!
//! A [`Link`] is one rdma_cm connection with its own PD, CQ and QP. Setup follows the
//! rdma_cm steps (resolve address, resolve route, create the QP, post the RECV for the
//! region descriptor, connect) and waits, bounded, for each. Teardown is the reverse, by
//! ownership: [`QueueConn`]'s drop disconnects and drains the QP, then its fields go in
//! declaration order: QP, CQ, PD, cm_id.
//!
//! A [`Queue`] is what a hardware queue of the disk posts to: its current link and its
//! recovery. When the link fails (a failed completion, a disconnect, a request timeout)
//! the queue enters recovery: a work item takes the old link down (its work requests are
//! flushed and their requests requeued), connects a new one to the same server and
//! client id, checks that the server still holds the same region, and puts it in place.
//! If that does not succeed within the recovery window, the queue is dead and its I/O
//! fails. States: `LIVE -> RECOVERING -> LIVE | DEAD`; `shut_down` makes any state DEAD.

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use kernel::{
    new_mutex, new_spinlock, new_work,
    prelude::*,
    revocable::Revocable,
    sync::{Arc, Mutex, SpinLock},
    time::{delay::fsleep, Delta, Instant, Monotonic},
    workqueue::{self, impl_has_work, Work, WorkItem},
};

use super::wire::{ConnectRequest, RegionDescriptor, RejectReason};
use crate::{
    blk::{NoIoScope, MAX_SEGMENTS},
    ib::{
        cm::{CmEvent, CmHandler, CmId, ConnectParams},
        cq::PollContext,
        dma::Direction,
        oneshot::{OneShot, OneShotHandler},
        qp::QpCaps,
        Cq, Device, Pd, Qp,
    },
};

/// Where to connect and what to ask for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target {
    /// The server's IPv4 address (host byte order).
    pub(crate) ip: u32,
    /// The server's port.
    pub(crate) port: u16,
    /// This client's identity (the server keeps a client's region across reconnects).
    pub(crate) client_id: u64,
    /// Bytes of remote memory to ask for.
    pub(crate) size: u64,
    /// Queues the client opens.
    pub(crate) queue_count: u16,
    /// Work requests in flight per queue.
    pub(crate) depth: u32,
    /// Milliseconds each connection step may take.
    pub(crate) step_timeout_ms: u32,
    /// Milliseconds a failed queue may spend reconnecting before its I/O fails; 0 fails
    /// it at once.
    pub(crate) recovery_ms: u32,
}

/// Connection progress as the CM reports it.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Idle = 0,
    AddrResolved = 1,
    RouteResolved = 2,
    Established = 3,
    Rejected = 4,
    Failed = 5,
    Disconnected = 6,
    DeviceRemoval = 7,
    /// rswap itself is tearing the queue down.
    Closing = 8,
}

/// Descriptor receive state.
const DESC_PENDING: u32 = 0;
const DESC_OK: u32 = 1;
const DESC_FAILED: u32 = 2;

/// What the CM and the descriptor receive report for one queue. Written from the CM's
/// workqueue and from softirq completions, read by the thread that connects: atomics only.
pub(crate) struct QueueEvents {
    index: u16,
    step: AtomicU32,
    status: AtomicI32,
    reject_code: AtomicU32,
    reject_max: AtomicU64,
    desc_state: AtomicU32,
    desc: [AtomicU64; RegionDescriptor::SIZE / 8],
}

impl QueueEvents {
    fn new(index: u16) -> Self {
        Self {
            index,
            step: AtomicU32::new(Step::Idle as u32),
            status: AtomicI32::new(0),
            reject_code: AtomicU32::new(0),
            reject_max: AtomicU64::new(0),
            desc_state: AtomicU32::new(DESC_PENDING),
            desc: [const { AtomicU64::new(0) }; RegionDescriptor::SIZE / 8],
        }
    }

    fn step(&self) -> u32 {
        self.step.load(Ordering::Acquire)
    }

    fn set(&self, step: Step) {
        self.step.store(step as u32, Ordering::Release);
    }

    fn descriptor_bytes(&self) -> [u8; RegionDescriptor::SIZE] {
        let mut out = [0u8; RegionDescriptor::SIZE];
        for (chunk, word) in out.chunks_exact_mut(8).zip(self.desc.iter()) {
            chunk.copy_from_slice(&word.load(Ordering::Acquire).to_le_bytes());
        }
        out
    }
}

impl CmHandler for QueueEvents {
    fn event(&self, ev: CmEvent<'_>) {
        match ev {
            CmEvent::AddrResolved => self.set(Step::AddrResolved),
            CmEvent::RouteResolved => self.set(Step::RouteResolved),
            CmEvent::Established => self.set(Step::Established),
            CmEvent::Rejected {
                status,
                private_data,
            } => {
                self.status.store(status, Ordering::Relaxed);
                let code = match RejectReason::decode(private_data) {
                    Ok(r) => {
                        self.reject_max.store(r.max_size, Ordering::Relaxed);
                        u32::from(r.code.to_u16())
                    }
                    Err(_) => u32::MAX,
                };
                self.reject_code.store(code, Ordering::Relaxed);
                self.set(Step::Rejected);
            }
            CmEvent::Disconnected => {
                if self.step() == Step::Established as u32 {
                    pr_warn!("queue {}: disconnected by the server\n", self.index);
                }
                if self.step() != Step::Closing as u32 {
                    self.set(Step::Disconnected);
                }
            }
            CmEvent::DeviceRemoval => self.set(Step::DeviceRemoval),
            CmEvent::Failed { what, status } => {
                pr_err!(
                    "queue {}: {} failed (status {})\n",
                    self.index,
                    what,
                    status
                );
                self.status.store(status, Ordering::Relaxed);
                self.set(Step::Failed);
            }
            CmEvent::Other => {}
        }
    }
}

impl OneShotHandler for QueueEvents {
    fn done(&self, _tag: u32, data: Option<&[u8]>) {
        match data {
            Some(bytes) if bytes.len() >= RegionDescriptor::SIZE => {
                for (word, chunk) in self.desc.iter().zip(bytes.chunks_exact(8)) {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(chunk);
                    word.store(u64::from_le_bytes(b), Ordering::Relaxed);
                }
                self.desc_state.store(DESC_OK, Ordering::Release);
            }
            _ => self.desc_state.store(DESC_FAILED, Ordering::Release),
        }
    }
}

/// The RDMA objects of a live connection. Dropping it tears the connection down in the
/// order the hardware needs (see the module documentation).
pub(crate) struct QueueConn {
    qp: Qp,
    #[expect(
        dead_code,
        reason = "owned for the QP's completions; dropped after the QP"
    )]
    cq: Cq,
    pd: Pd,
    cm: CmId<QueueEvents>,
}

impl QueueConn {
    /// The device the connection runs on.
    pub(crate) fn device(&self) -> Option<&Device> {
        self.cm.device()
    }

    /// The local key for DMA-mapped kernel memory.
    pub(crate) fn lkey(&self) -> u32 {
        self.pd.local_dma_lkey()
    }

    /// The QP to post on.
    pub(crate) fn qp(&self) -> &Qp {
        &self.qp
    }

    /// Whether the connection is up: not disconnected by the server, its device not
    /// going away.
    pub(crate) fn is_established(&self) -> bool {
        self.cm.handler().step() == Step::Established as u32
    }
}

impl Drop for QueueConn {
    fn drop(&mut self) {
        // Disconnect (QP to error), then wait until every posted work request has come
        // back through its completion; the fields are then dropped QP, CQ, PD, cm_id.
        self.cm.handler().set(Step::Closing);
        self.cm.disconnect();
        self.qp.drain();
    }
}

/// One connection of a queue: revocable, so the queue's recovery, device removal and
/// teardown can take it down under the data path.
///
/// # Invariants
///
/// A link in a [`Queue`]'s slot leaves it only to be revoked, so the other references
/// (short-lived clones taken by the data path) are never the last one to an unrevoked
/// link: dropping them never runs the sleeping teardown in atomic context.
#[pin_data]
pub(crate) struct Link {
    /// The device's identity (address), to find the queues of a device being removed.
    device: usize,
    max_sge: u32,
    #[pin]
    conn: Revocable<QueueConn>,
}

impl Link {
    /// Connects queue `index` to `target` and waits for the region descriptor. Gives up
    /// early (`ECANCELED`) once `abort` returns true.
    fn connect(
        target: &Target,
        index: u16,
        abort: &dyn Fn() -> bool,
    ) -> Result<(Arc<Self>, RegionDescriptor)> {
        let events = Arc::new(QueueEvents::new(index), GFP_KERNEL)?;
        let cm = CmId::new(events.clone())?;
        let ms = target.step_timeout_ms;

        cm.resolve_addr(target.ip, target.port, ms)?;
        wait_step(&events, Step::AddrResolved, ms, "address resolution", abort)?;
        cm.resolve_route(ms)?;
        wait_step(&events, Step::RouteResolved, ms, "route resolution", abort)?;

        let dev = cm.device().ok_or(ENODEV)?;
        let dev_key = dev.as_raw() as usize;
        let pd = Pd::alloc(dev)?;
        let cq = Cq::alloc(
            dev,
            target.depth + 4,
            u32::from(index),
            PollContext::Softirq,
        )?;
        let caps = QpCaps {
            send_wr: target.depth,
            recv_wr: 1,
            send_sge: (MAX_SEGMENTS as u32).min(dev.max_send_sge()),
        };
        let qp = Qp::create(&cm, &pd, &cq, &caps)?;
        OneShot::new(dev, Direction::FromDevice, &[], 0, events.clone())?
            .post_recv(&qp, pd.local_dma_lkey())?;

        let mut private = [0u8; ConnectRequest::SIZE];
        ConnectRequest {
            client_id: target.client_id,
            queue_index: index,
            queue_count: target.queue_count,
            requested_size: target.size,
        }
        .encode(&mut private);
        let initiator_depth = u8::try_from(dev.max_qp_init_rd_atom().min(16)).unwrap_or(16);
        let conn = QueueConn { qp, cq, pd, cm };
        conn.cm.connect(&ConnectParams {
            private_data: &private,
            initiator_depth,
        })?;
        // If anything below fails, dropping `conn` tears the half-made queue down.
        let connect_ms = ms.saturating_mul(3);
        if let Err(e) = wait_step(&events, Step::Established, connect_ms, "connect", abort) {
            if events.step() == Step::Rejected as u32 {
                report_reject(&events, target);
                return Err(ECONNREFUSED);
            }
            return Err(e);
        }
        if !wait_for(ms, || {
            events.desc_state.load(Ordering::Acquire) != DESC_PENDING || abort()
        }) || abort()
        {
            if abort() {
                return Err(ECANCELED);
            }
            pr_err!("queue {}: no region descriptor within {} ms\n", index, ms);
            return Err(ETIMEDOUT);
        }
        if events.desc_state.load(Ordering::Acquire) != DESC_OK {
            pr_err!("queue {}: receiving the region descriptor failed\n", index);
            return Err(EIO);
        }
        let desc = RegionDescriptor::decode(&events.descriptor_bytes()).map_err(|e| {
            pr_err!("queue {}: bad region descriptor: {:?}\n", index, e);
            EPROTO
        })?;
        let link = Arc::pin_init(
            pin_init!(Self {
                device: dev_key,
                max_sge: caps.send_sge,
                conn <- Revocable::new(conn),
            }),
            GFP_KERNEL,
        )?;
        Ok((link, desc))
    }

    /// Whether the connection is up (not torn down, not disconnected by the server).
    fn is_live(&self) -> bool {
        self.conn
            .try_access_with(QueueConn::is_established)
            .unwrap_or(false)
    }
}

/// What the data path should do with I/O whose link failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The queue is recovering: requeue the I/O, it is retried on the new link.
    Retry,
    /// The queue is dead (or recovery is off): fail the I/O.
    Fail,
}

const LIVE: u32 = 0;
const RECOVERING: u32 = 1;
const DEAD: u32 = 2;

/// One queue of a session: the link its hardware queue posts to, and that link's
/// recovery.
#[pin_data]
pub(crate) struct Queue {
    index: u16,
    target: Target,
    /// The region the first link got; every later link must get the same one.
    region: RegionDescriptor,
    /// The SGE limit the disk was set up with; a new link must take as many.
    max_sge: u32,
    /// How long recovery may try to reconnect; 0 turns recovery off.
    recovery_ms: u32,
    state: AtomicU32,
    /// Held by the recovery work while it runs and by `shut_down`: a link is only ever
    /// retired or installed under it.
    #[pin]
    teardown: Mutex<()>,
    recoveries: AtomicU32,
    /// Requests issued again after this queue failed under them.
    retried: AtomicU64,
    #[pin]
    link: SpinLock<Option<Arc<Link>>>,
    #[pin]
    work: Work<Queue>,
}

impl_has_work! {
    impl HasWork<Self> for Queue { self.work }
}

impl Queue {
    /// Connects queue `index` to `target`; returns it with the region descriptor it got.
    pub(crate) fn connect(target: &Target, index: u16) -> Result<(Arc<Self>, RegionDescriptor)> {
        let (link, desc) = Link::connect(target, index, &|| false)?;
        let max_sge = link.max_sge;
        // If this fails, the link moved into the initialiser is dropped there, unrevoked,
        // in process context: its drop tears it down.
        let queue = Arc::pin_init(
            pin_init!(Self {
                index,
                target: *target,
                region: desc,
                max_sge,
                recovery_ms: target.recovery_ms,
                state: AtomicU32::new(LIVE),
                teardown <- new_mutex!((), "rswap::Queue::teardown"),
                recoveries: AtomicU32::new(0),
                retried: AtomicU64::new(0),
                link <- new_spinlock!(Some(link), "rswap::Queue::link"),
                work <- new_work!("rswap::Queue::work"),
            }),
            GFP_KERNEL,
        )?;
        Ok((queue, desc))
    }

    /// The most SGEs one work request on this queue may carry.
    pub(crate) fn max_sge(&self) -> u32 {
        self.max_sge
    }

    /// Whether the queue's current link runs on the device `dev` (by identity). A queue
    /// that is reconnecting and has no link yet might land on any device: it counts as
    /// on every device, so a device's removal stops it rather than race it.
    pub(crate) fn is_on(&self, dev: &Device) -> bool {
        match self.current() {
            Some(l) => l.device == dev.as_raw() as usize,
            None => self.state.load(Ordering::Acquire) == RECOVERING,
        }
    }

    fn current(&self) -> Option<Arc<Link>> {
        self.link.lock().clone()
    }

    /// Runs `f` with the live connection, or returns `None` when the queue has none (torn
    /// down, recovering). `f` runs in an RCU read-side section: it must not sleep.
    pub(crate) fn with_conn<R>(&self, f: impl FnOnce(&QueueConn) -> R) -> Option<R> {
        if self.state.load(Ordering::Acquire) != LIVE {
            return None;
        }
        // The clone may outlive the slot's reference; the link is revoked before the slot
        // lets go of it (type invariant of `Link`), so dropping it here never sleeps.
        let link = self.current()?;
        link.conn.try_access_with(f)
    }

    /// Whether the queue is live and its connection up.
    pub(crate) fn is_live(&self) -> bool {
        self.state.load(Ordering::Acquire) == LIVE && self.current().is_some_and(|l| l.is_live())
    }

    /// Whether the queue is recovering.
    pub(crate) fn is_recovering(&self) -> bool {
        self.state.load(Ordering::Acquire) == RECOVERING
    }

    /// Whether the queue is dead (recovery failed or is off, or it was shut down).
    pub(crate) fn is_dead(&self) -> bool {
        self.state.load(Ordering::Acquire) == DEAD
    }

    /// Successful recoveries so far.
    pub(crate) fn recoveries(&self) -> u32 {
        self.recoveries.load(Ordering::Relaxed)
    }

    /// Counts a request that is issued again after this queue failed under it.
    pub(crate) fn count_retry(&self) {
        self.retried.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests issued again so far.
    pub(crate) fn retried(&self) -> u64 {
        self.retried.load(Ordering::Relaxed)
    }

    /// Reports that I/O on the current link failed (`why`, for the log) and says what to
    /// do with that I/O. The first report on a live queue starts recovery on `wq` (or,
    /// with recovery off, kills the queue). Does not sleep: callable from completions.
    pub(crate) fn fail(
        this: &Arc<Self>,
        wq: &workqueue::Queue,
        why: &CStr,
        status: u32,
    ) -> Verdict {
        let next = if this.recovery_ms == 0 {
            DEAD
        } else {
            RECOVERING
        };
        match this
            .state
            .compare_exchange(LIVE, next, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                let code = StatusNote(status);
                if next == RECOVERING {
                    pr_warn!(
                        "queue {}: {}{}: reconnecting; its I/O will be retried\n",
                        this.index,
                        why,
                        code
                    );
                } else {
                    pr_err!(
                        "queue {}: {}{}; recovery is off: failing its I/O\n",
                        this.index,
                        why,
                        code
                    );
                }
                // The work item takes the old link down (and, when recovering, connects a
                // new one). Already queued means the same work is pending anyway.
                let _ = wq.enqueue(this.clone());
            }
            Err(DEAD) => return Verdict::Fail,
            // Already recovering.
            Err(_) => {}
        }
        if this.state.load(Ordering::Acquire) == DEAD {
            Verdict::Fail
        } else {
            Verdict::Retry
        }
    }

    /// Takes the current link out of the slot and tears it down (sleeps): its posted work
    /// requests are flushed, and their completions run before this returns.
    fn retire_link(&self) {
        let old = self.link.lock().take();
        if let Some(link) = old {
            link.conn.revoke();
        }
    }

    /// The recovery work: runs on the session's workqueue, under `teardown`. With the
    /// queue DEAD (recovery off, or shut down) it only retires the link.
    fn recover(&self) {
        self.retire_link();
        if self.state.load(Ordering::Acquire) != RECOVERING {
            return;
        }
        let start = Instant::<Monotonic>::now();
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let abort = || self.state.load(Ordering::Acquire) != RECOVERING;
            match Link::connect(&self.target, self.index, &abort) {
                Ok((link, desc)) => {
                    if !self.region.same_region(&desc) {
                        pr_err!(
                            "queue {}: the server no longer holds this client's region (got region {}, had {}): its data is lost, failing the queue's I/O\n",
                            self.index,
                            desc.region_id,
                            self.region.region_id
                        );
                        link.conn.revoke();
                        break;
                    }
                    if link.max_sge < self.max_sge {
                        pr_err!(
                            "queue {}: the new connection takes {} SGEs, the disk needs {}\n",
                            self.index,
                            link.max_sge,
                            self.max_sge
                        );
                        link.conn.revoke();
                        break;
                    }
                    *self.link.lock() = Some(link);
                    if self
                        .state
                        .compare_exchange(RECOVERING, LIVE, Ordering::AcqRel, Ordering::Acquire)
                        .is_err()
                    {
                        // Shut down meanwhile.
                        self.retire_link();
                        return;
                    }
                    self.recoveries.fetch_add(1, Ordering::Relaxed);
                    let plural = if attempts == 1 { "" } else { "s" };
                    pr_info!(
                        "queue {}: reconnected after {} ms ({} attempt{}, epoch {})\n",
                        self.index,
                        start.elapsed().as_millis(),
                        attempts,
                        plural,
                        desc.epoch
                    );
                    return;
                }
                Err(e) => {
                    if self.state.load(Ordering::Acquire) != RECOVERING {
                        // Shut down meanwhile: nothing to report.
                        return;
                    }
                    let spent = start.elapsed().as_millis();
                    if spent >= i64::from(self.recovery_ms) {
                        pr_err!(
                            "queue {}: not reconnected within {} ms ({} attempts, last error {:?}): failing its I/O\n",
                            self.index,
                            self.recovery_ms,
                            attempts,
                            e
                        );
                        break;
                    }
                    let pause = (i64::from(self.recovery_ms) - spent).clamp(1, 1000);
                    fsleep(Delta::from_millis(pause));
                }
            }
        }
        let _ = self
            .state
            .compare_exchange(RECOVERING, DEAD, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Tears the queue down for good (idempotent): later I/O on it fails, I/O in flight is
    /// flushed and ends with an error. Waits for a running recovery to give up (it checks
    /// between attempts; one attempt is bounded by the step timeouts). Sleeps.
    pub(crate) fn shut_down(&self) {
        self.state.store(DEAD, Ordering::Release);
        let _guard = self.teardown.lock();
        self.retire_link();
    }
}

impl WorkItem for Queue {
    type Pointer = Arc<Queue>;

    fn run(this: Arc<Queue>) {
        // The disk's I/O may be what reclaim would wait on: allocate without starting any.
        let _noio = NoIoScope::enter();
        let _guard = this.teardown.lock();
        this.recover();
    }
}

/// Formats a work completion status for the log: nothing for 0 (no completion involved).
struct StatusNote(u32);

impl kernel::fmt::Display for StatusNote {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            0 => Ok(()),
            s => write!(f, " (status {s})"),
        }
    }
}

/// Polls `cond` every 10 ms for up to `ms` milliseconds.
fn wait_for(ms: u32, cond: impl Fn() -> bool) -> bool {
    for _ in 0..=ms / 10 {
        if cond() {
            return true;
        }
        fsleep(Delta::from_millis(10));
    }
    cond()
}

/// Waits until the CM reports `want`; a failure step ends the wait early.
fn wait_step(
    events: &QueueEvents,
    want: Step,
    ms: u32,
    what: &str,
    abort: &dyn Fn() -> bool,
) -> Result {
    let failed = |s: u32| {
        s == Step::Rejected as u32
            || s == Step::Failed as u32
            || s == Step::Disconnected as u32
            || s == Step::DeviceRemoval as u32
    };
    wait_for(ms, || {
        let s = events.step();
        s == want as u32 || failed(s) || abort()
    });
    let s = events.step();
    if s == want as u32 {
        return Ok(());
    }
    if abort() {
        return Err(ECANCELED);
    }
    if s == Step::Rejected as u32 {
        return Err(ECONNREFUSED);
    }
    if failed(s) {
        pr_err!(
            "queue {}: {} failed (state {}, status {})\n",
            events.index,
            what,
            s,
            events.status.load(Ordering::Relaxed)
        );
        return Err(EHOSTUNREACH);
    }
    pr_err!(
        "queue {}: {} timed out after {} ms\n",
        events.index,
        what,
        ms
    );
    Err(ETIMEDOUT)
}

fn report_reject(events: &QueueEvents, target: &Target) {
    let code = events.reject_code.load(Ordering::Relaxed);
    let reason = u16::try_from(code)
        .ok()
        .and_then(|c| super::wire::RejectCode::from_u16(c).ok());
    match reason {
        Some(r) => pr_err!(
            "queue {}: the server rejected the connection: {} (asked {} bytes, it can give {})\n",
            events.index,
            r.name(),
            target.size,
            events.reject_max.load(Ordering::Relaxed)
        ),
        None => pr_err!(
            "queue {}: connection rejected (no rswap server at that address? CM status {})\n",
            events.index,
            events.status.load(Ordering::Relaxed)
        ),
    }
}
