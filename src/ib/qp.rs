// SPDX-License-Identifier: GPL-2.0

//! Queue pairs created through rdma_cm, and posting work requests on them.

use core::{
    mem::ManuallyDrop,
    ptr::NonNull,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{error::to_result, prelude::*, str::CStrExt, sync::Arc};

use super::{
    bindings,
    cq::Cq,
    cqe::{CqeOwner, Posting},
    dma::{Direction, DmaBuf},
    rdma_device::RdmaDevice,
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

/// A reliable-connected QP on an rdma_cm id, with its CQ; drained and destroyed on drop,
/// and every work request it was given completed by then (see [`Qp::drop`]).
///
/// Only a [`super::cm::CmId`] makes and owns one, and drops it before destroying the id.
///
/// # Invariants
///
/// `id` is valid and has a QP created by `rdma_create_qp` in `cq`'s device's PD, with `cq`
/// for both directions, that has not been destroyed. The id outlives this value (its
/// owner, the `CmId`, drops it first); the CQ and, through it, the PD are owned here, and
/// `cq` is dropped only in `drop`. `name` is null or a string that outlives the QP.
pub(crate) struct Qp {
    id: NonNull<bindings::rdma_cm_id>,
    /// Where the READ that follows each WRITE puts its byte, on a device that needs it
    /// (iWARP): see [`Qp::post_rdma`]. Unmapped after the QP is destroyed.
    fence_sink: Option<DmaBuf>,
    /// Set once drained: nothing can be posted after that, so once is enough.
    drained: AtomicBool,
    /// The QP's CQ, freed after the QP is destroyed.
    cq: ManuallyDrop<Cq>,
    /// The QP's name for the log (its queue), or null.
    name: *const kernel::ffi::c_char,
}

// SAFETY: posting and destroying work from any thread.
unsafe impl Send for Qp {}
// SAFETY: `ib_post_send`/`ib_post_recv` are thread safe.
unsafe impl Sync for Qp {}

impl Qp {
    /// Creates the QP of `id` in `dev`'s PD, with a CQ of its own for both directions;
    /// its asynchronous events are logged with `name`.
    ///
    /// # Safety
    ///
    /// `id` must be a valid id with a resolved route on `dev`'s device and no QP, that
    /// outlives the returned value; so must `name`.
    pub(super) unsafe fn create(
        id: NonNull<bindings::rdma_cm_id>,
        dev: &Arc<RdmaDevice>,
        caps: &QpCaps,
        vector_hint: u32,
        name: Option<&CStr>,
    ) -> Result<Self> {
        // A fenced WRITE is two work requests (see `post_rdma`).
        let fence_sink = if dev.device().is_iwarp() {
            Some(DmaBuf::with_contents(dev, Direction::FromDevice, &[])?)
        } else {
            None
        };
        let send_wr = if fence_sink.is_some() {
            caps.send_wr.saturating_mul(2)
        } else {
            caps.send_wr
        };
        // One more of each for `ib_drain_qp`'s marker work requests.
        let cqes = send_wr + caps.recv_wr + 2;
        let cq = Cq::new(dev, cqes, vector_hint)?;
        let mut attr = bindings::ib_qp_init_attr {
            // Asynchronous QP events (a QP turning fatal, ...) go to the kernel log.
            event_handler: Some(bindings::rswap_ib_qp_event),
            qp_context: name.map_or(core::ptr::null_mut(), |n| n.as_char_ptr().cast_mut().cast()),
            send_cq: cq.as_raw(),
            recv_cq: cq.as_raw(),
            cap: bindings::ib_qp_cap {
                max_send_wr: send_wr + 1,
                max_recv_wr: caps.recv_wr + 1,
                max_send_sge: caps.send_sge,
                max_recv_sge: 1,
                ..Default::default()
            },
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            ..Default::default()
        };
        // SAFETY: the id is valid with a resolved route and no QP (the caller's
        // guarantee); the PD and CQ are valid and on the id's device; `attr` is valid for
        // the call.
        to_result(unsafe { bindings::rdma_create_qp(id.as_ptr(), dev.pd().as_raw(), &mut attr) })?;
        // INVARIANT: the id now has a QP in the device's PD with `cq`.
        Ok(Self {
            id,
            fence_sink,
            drained: AtomicBool::new(false),
            cq: ManuallyDrop::new(cq),
            name: name.map_or(core::ptr::null(), |n| n.as_char_ptr()),
        })
    }

    fn qp(&self) -> *mut bindings::ib_qp {
        // SAFETY: by the type invariant the id is valid and has a QP.
        unsafe { (*self.id.as_ptr()).qp }
    }

    /// Posts one signalled RDMA READ or WRITE of the SGEs of `owner`'s target at
    /// `remote_addr`/`rkey`; the work request owns `owner` until its completion hands it
    /// to `T::complete`. On failure nothing was posted and `owner` comes back with the
    /// error.
    ///
    /// A WRITE's success means the data is in the remote memory. On InfiniBand and RoCE
    /// the responder's acknowledgement says so. On iWARP a WRITE completes once its data
    /// is handed to TCP, and a connection lost after that loses it: there the WRITE goes
    /// unsignalled, followed by a one-byte READ of the same address (into a scratch
    /// buffer of the QP) that completes `owner`. The READ's response comes after the WRITE was placed (one ordered
    /// stream), and either failing fails the READ.
    pub(crate) fn post_rdma<T: CqeOwner>(
        &self,
        owner: T,
        op: RdmaOp,
        remote_addr: u64,
        rkey: u32,
    ) -> core::result::Result<(), (Error, T)> {
        let posting = Posting::new(owner, self.cq.outstanding());
        let (sges, len) = {
            let sges = posting.sges();
            (sges.as_ptr(), sges.len())
        };
        let Ok(n) = i32::try_from(len) else {
            return Err((EINVAL, posting.unpost()));
        };
        // One byte of the QP's scratch buffer, for the READ that fences a WRITE.
        let mut fence = self.fence_sink.as_ref().map(|sink| {
            let whole = &sink.sges()[0].0;
            bindings::ib_sge {
                addr: whole.addr,
                length: 1,
                lkey: whole.lkey,
            }
        });
        // SAFETY: the QP is valid; the SGEs and the completion entry are in the object
        // the work request owns from now on, valid until its completion; the provider
        // copies the SGEs (the fence's too) during the call; the fence's buffer stays
        // mapped until the QP is destroyed.
        let ret = unsafe {
            bindings::rswap_ib_post_rdma(
                self.qp(),
                posting.cqe(),
                op == RdmaOp::Write,
                fence
                    .as_mut()
                    .map_or(core::ptr::null_mut(), core::ptr::from_mut),
                sges.cast::<bindings::ib_sge>().cast_mut(),
                n,
                remote_addr,
                rkey,
            )
        };
        if ret != 0 {
            return Err((Error::from_errno(ret), posting.unpost()));
        }
        Ok(())
    }

    /// Posts one receive into the (single) SGE of `owner`'s target, owning `owner` until
    /// its completion.
    pub(crate) fn post_recv<T: CqeOwner>(&self, owner: T) -> core::result::Result<(), (Error, T)> {
        let posting = Posting::new(owner, self.cq.outstanding());
        let sge = posting.sges().first().map(core::ptr::from_ref);
        let Some(sge) = sge else {
            return Err((EINVAL, posting.unpost()));
        };
        // SAFETY: the QP is valid; the SGE and the completion entry are in the object the
        // work request owns from now on; the provider copies the SGE during the call.
        let ret = unsafe {
            bindings::rswap_ib_post_recv(
                self.qp(),
                posting.cqe(),
                sge.cast::<bindings::ib_sge>().cast_mut(),
            )
        };
        if ret != 0 {
            return Err((Error::from_errno(ret), posting.unpost()));
        }
        Ok(())
    }

    /// Moves the QP to the error state and waits until every posted work request has
    /// completed (flushed). Sleeps. Only the first call does anything, so it is for the
    /// owner's teardown alone ([`super::cm::CmId::drain`] and drop), once nothing posts.
    pub(super) fn drain(&self) {
        if self.drained.swap(true, Ordering::AcqRel) {
            return;
        }
        // SAFETY: the QP is valid; its CQ is not polled directly (softirq context), which
        // `ib_drain_qp` requires.
        unsafe { bindings::ib_drain_qp(self.qp()) };
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // Every posted work request owns something (a request, a buffer): let each come
        // back through its completion before the QP goes.
        self.drain();
        // SAFETY: by the type invariant the id is valid and has a QP, which is destroyed
        // once here.
        unsafe { bindings::rdma_destroy_qp(self.id.as_ptr()) };
        // SAFETY: dropped once, here, after the QP on it was destroyed; not used after.
        let cq = unsafe { ManuallyDrop::take(&mut self.cq) };
        let outstanding = cq.outstanding().clone();
        let dev = cq.rdma_device().clone();
        drop(cq);
        // A provider may drop completions the drain should have waited for (soft-iWARP
        // loses the READs still waiting for their responses when its device is removed).
        // With the QP and its CQ gone none can come now: complete what is left as flushed.
        // SAFETY: the QP and the CQ of the set are destroyed.
        let lost = unsafe { outstanding.flush_lost(dev.device()) };
        let duplicates = outstanding.duplicates();
        if lost > 0 || duplicates > 0 {
            let name = if self.name.is_null() {
                c"rswap"
            } else {
                // SAFETY: a non-null name is a string that outlives the QP (invariant).
                unsafe { CStr::from_char_ptr(self.name) }
            };
            pr_warn!(
                "{}: {}: the device never completed {} work request(s) (completed as flushed after the QP was destroyed) and completed {} twice (the second ignored)\n",
                name,
                dev.device().name(),
                lost,
                duplicates
            );
        }
    }
}
