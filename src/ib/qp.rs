// SPDX-License-Identifier: GPL-2.0

//! Queue pairs created through rdma_cm, and posting work requests on them.

use core::ptr::NonNull;
use kernel::{error::to_result, prelude::*};

use super::{
    bindings,
    cm::{CmHandler, CmId},
    cqe::{self, CqeOwner},
    dma::Sge,
    Cq, Pd,
};

/// The shape of a QP.
pub(crate) struct QpCaps {
    /// Send work requests (RDMA READ/WRITE) in flight at once.
    pub(crate) send_wr: u32,
    /// Receive work requests posted at once.
    pub(crate) recv_wr: u32,
    /// SGEs per send work request.
    pub(crate) send_sge: u32,
}

/// Which one-sided operation to post.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RdmaOp {
    /// Read remote memory into local buffers.
    Read,
    /// Write local buffers to remote memory.
    Write,
}

/// A reliable-connected QP on an rdma_cm id, destroyed on drop.
///
/// # Invariants
///
/// `id` has a QP created by `rdma_create_qp` that has not been destroyed. The id, the CQ
/// and the PD it was created with outlive it: their owner declares them after the `Qp`, so
/// they are dropped after it.
pub(crate) struct Qp {
    id: NonNull<bindings::rdma_cm_id>,
}

// SAFETY: posting and destroying work from any thread.
unsafe impl Send for Qp {}
// SAFETY: `ib_post_send`/`ib_post_recv` are thread safe.
unsafe impl Sync for Qp {}

impl Qp {
    /// Creates the QP of `id` in `pd`, with `cq` for both send and receive completions.
    pub(crate) fn create<H: CmHandler>(
        id: &CmId<H>,
        pd: &Pd,
        cq: &Cq,
        caps: &QpCaps,
    ) -> Result<Self> {
        let mut attr = bindings::ib_qp_init_attr {
            // Asynchronous QP events (a QP turning fatal, ...) go to the kernel log.
            event_handler: Some(bindings::rswap_ib_qp_event),
            send_cq: cq.as_raw(),
            recv_cq: cq.as_raw(),
            cap: bindings::ib_qp_cap {
                // One more of each for `ib_drain_qp`'s marker work requests.
                max_send_wr: caps.send_wr + 1,
                max_recv_wr: caps.recv_wr + 1,
                max_send_sge: caps.send_sge,
                max_recv_sge: 1,
                ..Default::default()
            },
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            ..Default::default()
        };
        // SAFETY: the id is valid with a resolved route; `pd` and `cq` are valid and on the
        // id's device; `attr` is valid for the call.
        to_result(unsafe { bindings::rdma_create_qp(id.as_raw(), pd.as_raw(), &mut attr) })?;
        // INVARIANT: the id now has a QP; the caller keeps id, CQ and PD beyond it.
        Ok(Self {
            id: NonNull::new(id.as_raw()).ok_or(EINVAL)?,
        })
    }

    fn qp(&self) -> *mut bindings::ib_qp {
        // SAFETY: by the type invariant the id is valid and has a QP.
        unsafe { (*self.id.as_ptr()).qp }
    }

    /// Posts one signalled RDMA READ or WRITE of `sges` at `remote_addr`/`rkey`, owning
    /// `owner` until the completion hands it to `T::complete`. On failure nothing was
    /// posted and `owner` comes back with the error.
    pub(crate) fn post_rdma<T: CqeOwner>(
        &self,
        owner: T,
        sges: *const [Sge],
        op: RdmaOp,
        remote_addr: u64,
        rkey: u32,
    ) -> core::result::Result<(), (Error, T)> {
        let nsges = sges.len();
        let Ok(n) = i32::try_from(nsges) else {
            return Err((EINVAL, owner));
        };
        let cqe = owner.into_cqe();
        // SAFETY: `cqe` is a valid entry inside the owned object (`CqeOwner` contract).
        cqe::arm::<T>(unsafe { cqe.as_ref() });
        // SAFETY: the QP is valid; `sges` points into the object now owned by the work
        // request (the caller takes it from `owner` before giving it up), valid until the
        // completion, and the provider copies the SGEs before the request can complete.
        let ret = unsafe {
            bindings::rswap_ib_post_rdma(
                self.qp(),
                cqe.as_ptr().cast(),
                op == RdmaOp::Write,
                sges.cast::<bindings::ib_sge>().cast_mut(),
                n,
                remote_addr,
                rkey,
            )
        };
        if ret != 0 {
            // SAFETY: nothing was posted, so ownership did not move to a work request.
            return Err((Error::from_errno(ret), unsafe { T::from_cqe(cqe) }));
        }
        Ok(())
    }

    /// Posts one receive into `sge`, owning `owner` until its completion.
    pub(crate) fn post_recv<T: CqeOwner>(
        &self,
        owner: T,
        sge: &Sge,
    ) -> core::result::Result<(), (Error, T)> {
        // The provider copies the SGE during the call; a local copy serves.
        let mut sge = bindings::ib_sge {
            addr: sge.0.addr,
            length: sge.0.length,
            lkey: sge.0.lkey,
        };
        let cqe = owner.into_cqe();
        // SAFETY: `cqe` is a valid entry inside the owned object.
        cqe::arm::<T>(unsafe { cqe.as_ref() });
        let raw_cqe = cqe.as_ptr().cast();
        // SAFETY: the QP is valid; the SGE is copied by the provider during the call.
        let ret = unsafe { bindings::rswap_ib_post_recv(self.qp(), raw_cqe, &mut sge) };
        if ret != 0 {
            // SAFETY: nothing was posted.
            return Err((Error::from_errno(ret), unsafe { T::from_cqe(cqe) }));
        }
        Ok(())
    }

    /// Moves the QP to the error state and waits until every posted work request has
    /// completed (flushed). Sleeps.
    pub(crate) fn drain(&self) {
        // SAFETY: the QP is valid; its CQ is not polled directly (softirq context), which
        // `ib_drain_qp` requires.
        unsafe { bindings::ib_drain_qp(self.qp()) };
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the id is valid and has a QP, which is destroyed
        // once here.
        unsafe { bindings::rdma_destroy_qp(self.id.as_ptr()) };
    }
}
