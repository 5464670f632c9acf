// SPDX-License-Identifier: GPL-2.0

//! Memory regions for fast registration: the sinks of RDMA READs on iWARP.
//!
//! An iWARP READ's response is placed like an RDMA WRITE from the responder, so its sink
//! must be a memory region registered for remote write; the local DMA key does not do.
//! A [`Qp`](super::Qp) on an iWARP device owns one [`Mr`] per READ slot and one for its
//! fence buffer, and posts the registrations itself ([`super::Qp::post_rdma`]).

use core::ptr::NonNull;
use kernel::{error::from_err_ptr, error::to_result, prelude::*, sync::Arc};

use super::{bindings, pd::Pd, rdma_device::RdmaDevice};

/// A memory region for fast registration (`struct ib_mr` of type `IB_MR_TYPE_MEM_REG`),
/// deregistered on drop.
///
/// Its page list is filled and its key bumped by the C helpers just before each
/// `IB_WR_REG_MR`; this type only owns it.
///
/// # Invariants
///
/// `ptr` came from a successful `ib_alloc_mr` in a PD of `_dev`'s device and has not been
/// deregistered; `_dev` keeps the device valid, and the PD outlives the region (both
/// belong to one [`super::Qp`], which drops its regions before its PD).
pub(crate) struct Mr {
    ptr: NonNull<bindings::ib_mr>,
    _dev: Arc<RdmaDevice>,
}

// SAFETY: an `ib_mr` may be used in work requests and deregistered from any thread.
unsafe impl Send for Mr {}
// SAFETY: `&Mr` only hands out the pointer; what is done with it (registration work
// requests) is serialised by its owner.
unsafe impl Sync for Mr {}

impl Mr {
    /// Allocates a region in `pd` that can map up to `max_pages` pages.
    ///
    /// # Safety
    ///
    /// The region must be dropped before `pd`.
    pub(super) unsafe fn alloc(pd: &Pd, max_pages: u32) -> Result<Self> {
        // SAFETY: the PD is valid while borrowed.
        let ptr = from_err_ptr(unsafe { bindings::rswap_ib_alloc_mr(pd.as_raw(), max_pages) })?;
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        // INVARIANT: just allocated in `pd`, which the caller keeps until after the region
        // is dropped; `_dev` is the PD's device.
        Ok(Self {
            ptr,
            _dev: pd.rdma_device().clone(),
        })
    }

    /// Points the region at the `length` bytes DMA-mapped at `addr` and gives it a new
    /// key, for a registration posted later.
    ///
    /// # Safety
    ///
    /// `addr` must stay mapped for DMA on the region's device, for `length` bytes, for as
    /// long as the region may be registered (until it is dropped), and the region must not
    /// be registered or in a posted work request now.
    pub(super) unsafe fn map_single(&self, addr: u64, length: u32) -> Result {
        // SAFETY: the region is valid (type invariant) and not in use (the caller's
        // guarantee); the helper only writes its page list and key.
        to_result(unsafe { bindings::rswap_ib_mr_map_single(self.as_raw(), addr, length) })
    }

    /// The raw pointer, for the work requests of [`super::Qp`].
    pub(super) fn as_raw(&self) -> *mut bindings::ib_mr {
        self.ptr.as_ptr()
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the region is valid and this is its only owner; its
        // owner drops it only once no work request can use it (after the QP is destroyed,
        // see `Qp::drop`). Its PD is still there (type invariant).
        unsafe { bindings::rswap_ib_dereg_mr(self.as_raw()) };
    }
}
