// SPDX-License-Identifier: GPL-2.0

//! Completion queues, taken from the IB core's per-device CQ pool.

use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*, sync::Arc};

use super::{bindings, rdma_device::RdmaDevice};

/// A share of a completion queue (`struct ib_cq`) from the device's CQ pool: room for
/// `entries` completions, polled in softirq context, each dispatched to its work
/// request's `ib_cqe.done`. Given back to the pool on drop.
///
/// The pool spreads CQs over the device's completion vectors (interrupts) and shares
/// them between connections, as the kernel's own ULPs (nvme-rdma, iSER) do.
///
/// # Invariants
///
/// `ptr` came from `ib_cq_pool_get` on `dev`'s device with `entries` and has not been put
/// back; `_dev` keeps that device valid.
pub(crate) struct Cq {
    ptr: NonNull<bindings::ib_cq>,
    entries: u32,
    /// Keeps the device valid while the CQ is taken.
    _dev: Arc<RdmaDevice>,
}

// SAFETY: a CQ may be used and put back from any thread.
unsafe impl Send for Cq {}
// SAFETY: the IB core serialises polling internally; posting to QPs on it is thread safe.
unsafe impl Sync for Cq {}

impl Cq {
    /// Takes room for `entries` completions on `dev`, preferably on completion vector
    /// `vector_hint` (the pool picks the least used CQ of that vector).
    pub(crate) fn get(dev: &Arc<RdmaDevice>, entries: u32, vector_hint: u32) -> Result<Self> {
        let entries = entries.min(dev.device().max_cqe());
        let hint =
            i32::try_from(vector_hint % dev.device().num_comp_vectors()).map_err(|_| EINVAL)?;
        // SAFETY: the device is valid while `dev` exists.
        let ptr = unsafe {
            bindings::ib_cq_pool_get(
                dev.device().as_raw(),
                entries,
                hint,
                bindings::ib_poll_context_IB_POLL_SOFTIRQ,
            )
        };
        let ptr = NonNull::new(from_err_ptr(ptr)?).ok_or(ENOMEM)?;
        // INVARIANT: taken from `dev`'s pool with `entries`.
        Ok(Self {
            ptr,
            entries,
            _dev: dev.clone(),
        })
    }

    /// The raw pointer, for the other wrappers of this layer.
    pub(super) fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ptr.as_ptr()
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the CQ came from the pool with `entries`, once; QPs
        // using it were destroyed before (a `Qp` owns its `Cq`).
        unsafe { bindings::ib_cq_pool_put(self.as_raw(), self.entries) };
    }
}
