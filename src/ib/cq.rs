// SPDX-License-Identifier: GPL-2.0

//! Completion queues: one per QP, whose context is that QP's set of posted work requests.

use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*, sync::Arc};

use super::{bindings, cqe::Outstanding, rdma_device::RdmaDevice};

/// A completion queue (`struct ib_cq`) of one QP: room for `entries` completions, polled
/// in softirq context, each dispatched to its work request's `ib_cqe.done`. Freed on drop.
///
/// The CQ is the QP's own rather than a share of the device's CQ pool so that destroying
/// it ends every completion of the QP: after that, a work request the provider never
/// completed can be completed as flushed without any risk of its real completion coming
/// later (see [`Outstanding`]). Queues are spread over the device's completion vectors
/// (interrupts) by the vector hint.
///
/// # Invariants
///
/// `ptr` came from `ib_alloc_cq` on `dev`'s device with `outstanding` as its context and
/// has not been freed; `dev` keeps that device valid and `outstanding` the context.
pub(crate) struct Cq {
    ptr: NonNull<bindings::ib_cq>,
    outstanding: Arc<Outstanding>,
    dev: Arc<RdmaDevice>,
}

// SAFETY: a CQ may be used and freed from any thread.
unsafe impl Send for Cq {}
// SAFETY: the IB core serialises polling internally; posting to QPs on it is thread safe.
unsafe impl Sync for Cq {}

impl Cq {
    /// A CQ with room for `entries` completions on `dev`, on completion vector
    /// `vector_hint` (modulo the device's vectors).
    pub(crate) fn new(dev: &Arc<RdmaDevice>, entries: u32, vector_hint: u32) -> Result<Self> {
        let entries = i32::try_from(entries.min(dev.device().max_cqe())).map_err(|_| EINVAL)?;
        let vector =
            i32::try_from(vector_hint % dev.device().num_comp_vectors()).map_err(|_| EINVAL)?;
        let outstanding = Arc::pin_init(Outstanding::new(), GFP_KERNEL)?;
        let context: *const Outstanding = &*outstanding;
        // SAFETY: the device is valid while `dev` exists; the context stays valid while
        // the CQ exists (`outstanding` is kept with it).
        let ptr = unsafe {
            bindings::rswap_ib_alloc_cq(
                dev.device().as_raw(),
                context.cast_mut().cast(),
                entries,
                vector,
            )
        };
        let ptr = NonNull::new(from_err_ptr(ptr)?).ok_or(ENOMEM)?;
        // INVARIANT: allocated on `dev` with `outstanding` as its context.
        Ok(Self {
            ptr,
            outstanding,
            dev: dev.clone(),
        })
    }

    /// The raw pointer, for the other wrappers of this layer.
    pub(super) fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ptr.as_ptr()
    }

    /// The posted work requests of the QP on this CQ.
    pub(super) fn outstanding(&self) -> &Arc<Outstanding> {
        &self.outstanding
    }

    /// The device the CQ is on.
    pub(super) fn rdma_device(&self) -> &Arc<RdmaDevice> {
        &self.dev
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the CQ is valid and freed once, here; the QP on it
        // was destroyed before (a `Qp` owns its `Cq`). Once this returns no completion
        // handler of the CQ runs (`ib_free_cq` waits for one in progress).
        unsafe { bindings::ib_free_cq(self.as_raw()) };
    }
}
