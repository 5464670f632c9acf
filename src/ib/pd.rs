// SPDX-License-Identifier: GPL-2.0

//! Protection domains: one per connection (see [`Pd`]).

use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*, sync::Arc};

use super::{bindings, rdma_device::RdmaDevice};

/// A kernel protection domain (`struct ib_pd`), deallocated on drop.
///
/// Each [`super::Qp`] has one of its own, holding the QP, its memory regions and the local
/// key its buffers are mapped with. A memory region is usable by the QPs of its PD alone:
/// an iWARP READ sink whose READ failed stays registered until its QP is destroyed, and
/// with a PD shared by several connections a server could write into it through another
/// connection meanwhile. With a PD per connection only the failed QP could, and a failed
/// QP (in the error state) takes no more data.
///
/// # Invariants
///
/// `ptr` came from a successful `ib_alloc_pd` on `dev`'s device and has not been
/// deallocated; `dev` keeps that device valid.
pub(crate) struct Pd {
    ptr: NonNull<bindings::ib_pd>,
    dev: Arc<RdmaDevice>,
}

// SAFETY: an `ib_pd` may be used and deallocated from any thread.
unsafe impl Send for Pd {}
// SAFETY: verbs that take a PD (creating QPs, MRs) may run concurrently.
unsafe impl Sync for Pd {}

impl Pd {
    /// Allocates a protection domain on `dev`'s device.
    pub(super) fn alloc(dev: &Arc<RdmaDevice>) -> Result<Self> {
        // SAFETY: the device is valid while `dev` exists.
        let ptr = from_err_ptr(unsafe { bindings::rswap_ib_alloc_pd(dev.device().as_raw(), 0) })?;
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        // INVARIANT: `ptr` is a freshly allocated PD on `dev`'s device, which `dev` keeps.
        Ok(Self {
            ptr,
            dev: dev.clone(),
        })
    }

    /// The raw pointer, for the other wrappers of this layer.
    pub(super) fn as_raw(&self) -> *mut bindings::ib_pd {
        self.ptr.as_ptr()
    }

    /// The device object the PD is on.
    pub(crate) fn rdma_device(&self) -> &Arc<RdmaDevice> {
        &self.dev
    }

    /// The lkey that covers all of kernel memory mapped for DMA on the device, in this
    /// PD: the key of the SGEs posted on this PD's QP.
    pub(crate) fn local_dma_lkey(&self) -> u32 {
        // SAFETY: by the type invariant the PD is valid; the field is set at allocation.
        unsafe { (*self.as_raw()).local_dma_lkey }
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the PD is valid and this is its only owner; its
        // owner (a `Qp`) destroys the QP and drops the memory regions in it first. The
        // device is valid while `dev` is held (dropped after this).
        unsafe { bindings::rswap_ib_dealloc_pd(self.as_raw()) };
    }
}
