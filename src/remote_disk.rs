// SPDX-License-Identifier: GPL-2.0

//! The block device: `/dev/rswapN` over a session to a memory server.
//!
//! Each request becomes one RDMA READ (read) or RDMA WRITE (write) work request on the
//! queue of its hardware queue, with the request's segments as SGEs; the work request
//! owns the request and its DMA mapping until its completion unmaps and ends it.
//!
//! A failed completion, a lost connection or a timeout puts the queue into recovery
//! (see [`crate::transport::queue`]): its requests are requeued and issued again on the
//! new connection, up to [`MAX_RETRIES`] times each; a dead queue fails them.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, sync::Arc};

use crate::{
    blk::{self, Op, OwnedRequest, Status, TimeoutAction, MAX_SEGMENTS},
    ib::{
        cqe::Wc,
        dma::{Direction, SgMapping, Sge},
        qp::RdmaOp,
    },
    transport::{
        queue::{Queue, Verdict},
        session::Session,
    },
};

/// How many times one request is issued again after its queue failed under it. A request
/// that keeps breaking its connection fails rather than looping.
pub(crate) const MAX_RETRIES: u8 = 5;

/// Failed requests logged so far (all disks): the first 20 and every 1000th after that,
/// so a dead link cannot flood the log from the I/O path.
static FAILURES: AtomicU32 = AtomicU32::new(0);

fn log_failure() -> bool {
    let n = FAILURES.fetch_add(1, Ordering::Relaxed);
    n < 20 || n % 1000 == 0
}

/// Per-request state, preallocated with every tag.
pub(crate) struct RequestData {
    mapping: Option<SgMapping>,
    sges: [Sge; MAX_SEGMENTS],
    /// Times this request was requeued because its queue failed.
    retries: u8,
}

impl Default for RequestData {
    fn default() -> Self {
        Self {
            mapping: None,
            sges: core::array::from_fn(|_| Sge::default()),
            retries: 0,
        }
    }
}

/// The driver behind one `/dev/rswapN`.
pub(crate) struct RemoteDisk {
    session: Session,
}

impl RemoteDisk {
    /// A disk driver over a connected session.
    pub(crate) fn new(session: Session) -> Self {
        Self { session }
    }

    /// The session.
    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    fn queue(&self, hw_queue: u32) -> Option<&Arc<Queue>> {
        usize::try_from(hw_queue)
            .ok()
            .and_then(|i| self.session.queues().get(i))
    }

    /// Ends `rq` with `status`, ready for its tag's next request.
    fn end(mut rq: OwnedRequest<Self>, status: Status) {
        rq.segments().1.retries = 0;
        rq.end(status);
    }

    /// Maps `rq` and posts it on `hw_queue`; gives it back with a status on failure,
    /// logging why when it fails the request.
    fn post(
        &self,
        hw_queue: u32,
        rq: OwnedRequest<Self>,
        op: RdmaOp,
    ) -> core::result::Result<(), (Status, OwnedRequest<Self>)> {
        self.try_post(hw_queue, rq, op)
            .map_err(|(status, why, mut rq)| {
                // Resource: blk-mq issues it again later. Anything else ends it.
                if status != Status::Resource {
                    rq.segments().1.retries = 0;
                    if log_failure() {
                        pr_err!(
                            "{:?} of {} bytes at sector {} on queue {} failed: {}\n",
                            op,
                            rq.bytes(),
                            rq.sector(),
                            hw_queue,
                            why
                        );
                    }
                }
                (status, rq)
            })
    }

    fn try_post(
        &self,
        hw_queue: u32,
        rq: OwnedRequest<Self>,
        op: RdmaOp,
    ) -> core::result::Result<(), (Status, &'static str, OwnedRequest<Self>)> {
        let Some(queue) = self.queue(hw_queue) else {
            return Err((Status::IoErr, "no such queue", rq));
        };
        let region = *self.session.region();
        let Ok(remote_addr) = region.remote_addr(rq.offset(), u64::from(rq.bytes())) else {
            return Err((Status::IoErr, "outside the remote region", rq));
        };
        let dir = match op {
            RdmaOp::Read => Direction::FromDevice,
            RdmaOp::Write => Direction::ToDevice,
        };
        let mut slot = Some(rq);
        let posted = queue.with_conn(|conn| {
            let mut rq = slot.take()?;
            if !conn.is_established() {
                // The server disconnected: recover (issue it again later) or fail.
                let wq = self.session.recovery_wq();
                return Some(Err(match Queue::fail(queue, wq, c"connection lost", 0) {
                    Verdict::Retry => (Status::Resource, "", rq),
                    Verdict::Fail => (Status::IoErr, "the queue is dead", rq),
                }));
            }
            let Some(dev) = conn.device() else {
                return Some(Err((Status::IoErr, "the connection has no device", rq)));
            };
            let (sg, data, nents) = rq.map_segments();
            let (mapping, nsges) =
                match SgMapping::map(dev, sg, nents, dir, &mut data.sges, conn.lkey()) {
                    Ok(m) => m,
                    // Out of mapping resources: retry later. Anything else will not improve.
                    Err(e) if e == ENOMEM => return Some(Err((Status::Resource, "", rq))),
                    Err(_) => return Some(Err((Status::IoErr, "DMA mapping failed", rq))),
                };
            data.mapping = Some(mapping);
            let sges: *const [Sge] = data.sges.get(..nsges).unwrap_or(&[]);
            Some(
                conn.qp()
                    .post_rdma(rq, sges, op, remote_addr, region.rkey)
                    .map_err(|(e, mut rq)| {
                        let (sg, data) = rq.segments();
                        if let Some(m) = data.mapping.take() {
                            m.unmap(dev, sg);
                        }
                        if e == ENOMEM {
                            (Status::Resource, "", rq)
                        } else {
                            (Status::IoErr, "posting the work request failed", rq)
                        }
                    }),
            )
        });
        match (posted.flatten(), slot.take()) {
            (Some(result), _) => result,
            // No connection: recovering (issue it again later), or dead (device removed,
            // recovery failed or off, disabled).
            (None, Some(rq)) if queue.is_recovering() => Err((Status::Resource, "", rq)),
            (None, Some(rq)) => Err((Status::IoErr, "the queue is dead", rq)),
            // The closure always takes the request before it can return `None`.
            (None, None) => Ok(()),
        }
    }
}

impl blk::Operations for RemoteDisk {
    type Data = RequestData;

    fn queue_rq(
        &self,
        hw_queue: u32,
        rq: OwnedRequest<Self>,
    ) -> core::result::Result<(), (Status, OwnedRequest<Self>)> {
        match rq.op() {
            Op::Read => self.post(hw_queue, rq, RdmaOp::Read),
            Op::Write => self.post(hw_queue, rq, RdmaOp::Write),
            // A write completes only when the server's memory holds it (RC acknowledges
            // placement), so there is no volatile cache to flush.
            Op::Flush => {
                Self::end(rq, Status::Ok);
                Ok(())
            }
            Op::Other(_) => Err((Status::NotSupp, rq)),
        }
    }

    fn complete(&self, hw_queue: u32, mut rq: OwnedRequest<Self>, wc: &Wc<'_>) {
        let (sg, data) = rq.segments();
        if let Some(m) = data.mapping.take() {
            m.unmap(wc.device(), sg);
        }
        if wc.is_ok() {
            return Self::end(rq, Status::Ok);
        }
        let queue = self.queue(hw_queue);
        let verdict = match queue {
            Some(q) => Queue::fail(q, self.session.recovery_wq(), wc.status_msg(), wc.status()),
            None => Verdict::Fail,
        };
        let retries = &mut rq.segments().1.retries;
        if verdict == Verdict::Retry && *retries < MAX_RETRIES {
            *retries += 1;
            if let Some(q) = queue {
                q.count_retry();
            }
            return rq.requeue();
        }
        if log_failure() {
            let why = match verdict {
                Verdict::Retry => ", retried too often",
                Verdict::Fail => "",
            };
            pr_err!(
                "I/O at sector {} failed: {} (status {}{})\n",
                rq.sector(),
                wc.status_msg(),
                wc.status(),
                why
            );
        }
        Self::end(rq, Status::IoErr);
    }

    fn timeout(&self, hw_queue: u32, rq: &blk::request::TimedOutRequest<'_>) -> TimeoutAction {
        pr_warn!(
            "request at sector {} timed out on queue {}\n",
            rq.sector(),
            hw_queue
        );
        // The queue's link is taken down either way, which flushes every request it holds
        // (this one included); each flush completion requeues its request (recovering)
        // or ends it with an I/O error (dead).
        match self.queue(hw_queue) {
            Some(q) => match Queue::fail(q, self.session.recovery_wq(), c"request timed out", 0) {
                Verdict::Retry => TimeoutAction::ResetTimer,
                Verdict::Fail => TimeoutAction::Done,
            },
            None => TimeoutAction::Done,
        }
    }
}
