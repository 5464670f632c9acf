// SPDX-License-Identifier: GPL-2.0

//! The block device: `/dev/rswapN` over a session to a memory server.
//!
//! Each request becomes one RDMA READ (read) or RDMA WRITE (write) work request on the
//! queue of its hardware queue, with the request's segments as SGEs; the work request
//! owns the request and its DMA mapping until its completion unmaps and ends it.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;

use crate::{
    blk::{self, Op, OwnedRequest, Status, TimeoutAction, MAX_SEGMENTS},
    ib::{
        cqe::Wc,
        dma::{Direction, SgMapping, Sge},
        qp::RdmaOp,
    },
    transport::session::Session,
};

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
}

impl Default for RequestData {
    fn default() -> Self {
        Self {
            mapping: None,
            sges: core::array::from_fn(|_| Sge::default()),
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

    /// Maps `rq` and posts it on `hw_queue`; gives it back with a status on failure,
    /// logging why when it fails the request.
    fn post(
        &self,
        hw_queue: u32,
        rq: OwnedRequest<Self>,
        op: RdmaOp,
    ) -> core::result::Result<(), (Status, OwnedRequest<Self>)> {
        self.try_post(hw_queue, rq, op)
            .map_err(|(status, why, rq)| {
                if status != Status::Resource && log_failure() {
                    pr_err!(
                        "{:?} of {} bytes at sector {} on queue {} failed: {}\n",
                        op,
                        rq.bytes(),
                        rq.sector(),
                        hw_queue,
                        why
                    );
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
        let Some(queue) = usize::try_from(hw_queue)
            .ok()
            .and_then(|i| self.session.queues().get(i))
        else {
            return Err((Status::IoErr, "no such queue", rq));
        };
        let region = *self.session.region();
        let Ok(remote_addr) = region.target(rq.offset(), u64::from(rq.bytes())) else {
            return Err((Status::IoErr, "outside the remote region", rq));
        };
        let dir = match op {
            RdmaOp::Read => Direction::FromDevice,
            RdmaOp::Write => Direction::ToDevice,
        };
        let mut slot = Some(rq);
        let posted = queue.with_conn(|conn| {
            let mut rq = slot.take()?;
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
            // The queue was torn down (device removed, timed out, disabled).
            (None, Some(rq)) => Err((Status::IoErr, "the queue was torn down", rq)),
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
                rq.end(Status::Ok);
                Ok(())
            }
            Op::Other(_) => Err((Status::NotSupp, rq)),
        }
    }

    fn complete(mut rq: OwnedRequest<Self>, wc: &Wc<'_>) {
        let (sg, data) = rq.segments();
        if let Some(m) = data.mapping.take() {
            m.unmap(wc.device(), sg);
        }
        let status = if wc.is_ok() {
            Status::Ok
        } else {
            if log_failure() {
                pr_err!(
                    "I/O at sector {} failed: {} (status {})\n",
                    rq.sector(),
                    wc.status_msg(),
                    wc.status()
                );
            }
            Status::IoErr
        };
        rq.end(status);
    }

    fn timeout(&self, hw_queue: u32, rq: &blk::request::TimedOutRequest<'_>) -> TimeoutAction {
        pr_warn!(
            "request at sector {} timed out on queue {}: tearing the queue down\n",
            rq.sector(),
            hw_queue
        );
        // Tearing the queue down flushes every request it holds (this one included),
        // and each flush completion ends its request with an I/O error.
        if let Some(queue) = usize::try_from(hw_queue)
            .ok()
            .and_then(|i| self.session.queues().get(i))
        {
            queue.shut_down();
        }
        TimeoutAction::Done
    }
}
