// SPDX-License-Identifier: GPL-2.0

//! Protection domains.

use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*};

use super::{bindings, device::Device};

/// A kernel protection domain (`struct ib_pd`), deallocated on drop.
///
/// # Invariants
///
/// `ptr` came from a successful `ib_alloc_pd` and has not been deallocated. The device it
/// belongs to outlives it: a `Pd` is only created as the PD of an [`super::RdmaDevice`],
/// whose device is valid as long as it exists.
pub(crate) struct Pd {
    ptr: NonNull<bindings::ib_pd>,
}

// SAFETY: an `ib_pd` may be used and deallocated from any thread.
unsafe impl Send for Pd {}
// SAFETY: verbs that take a PD (creating QPs, MRs) may run concurrently.
unsafe impl Sync for Pd {}

impl Pd {
    /// Allocates a protection domain on `dev`, for [`super::RdmaDevice`].
    pub(super) fn alloc(dev: &Device) -> Result<Self> {
        // SAFETY: `dev` is a valid device (type invariant of `Device`).
        let ptr = from_err_ptr(unsafe { bindings::rswap_ib_alloc_pd(dev.as_raw(), 0) })?;
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        // INVARIANT: `ptr` is a freshly allocated PD on `dev`.
        Ok(Self { ptr })
    }

    /// The raw pointer, for the other wrappers of this layer.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_pd {
        self.ptr.as_ptr()
    }

    /// The lkey that covers all of kernel memory mapped for DMA on this device.
    pub(crate) fn local_dma_lkey(&self) -> u32 {
        // SAFETY: by the type invariant the PD is valid; the field is set at allocation.
        unsafe { (*self.as_raw()).local_dma_lkey }
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the PD is valid and this is its only owner; every
        // object created in it (QPs) holds a reference to its `RdmaDevice`, so it was
        // dropped before.
        unsafe { bindings::rswap_ib_dealloc_pd(self.as_raw()) };
    }
}
