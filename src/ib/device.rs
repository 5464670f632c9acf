// SPDX-License-Identifier: GPL-2.0

//! An RDMA device as the IB core hands it to its clients.

use kernel::{prelude::*, str::CStr, types::Opaque};

use super::bindings;

/// The most send SGEs any device is taken to have, for tests (see [`cap_send_sge`]).
#[cfg(rswap_fault_injection)]
static SEND_SGE_CAP: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// Takes every device to carry at most `n` SGEs in a send work request (0: what each
/// says), as a device with few does (soft-iWARP: 6), so that what must fit them is tested
/// on any device. For the `fault_max_sge` module parameter of a module built with fault
/// injection.
#[cfg(rswap_fault_injection)]
pub(crate) fn cap_send_sge(n: u32) {
    SEND_SGE_CAP.store(n, core::sync::atomic::Ordering::Relaxed);
}

/// An RDMA device (`struct ib_device`).
///
/// Only borrowed: the IB core owns devices, and hands a client a device from its `add`
/// callback until its `remove` callback has returned.
///
/// # Invariants
///
/// The wrapped `ib_device` is valid for as long as a reference to this type exists.
#[repr(transparent)]
pub(crate) struct Device(Opaque<bindings::ib_device>);

impl Device {
    /// Borrows the device behind `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a valid `ib_device` that stays valid for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `Device` is a transparent wrapper of `ib_device`; the caller guarantees
        // the pointer is valid for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The raw pointer, for the other wrappers of this layer.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The device's name, e.g. `rxe0`.
    ///
    /// A rename can free the string; use it right away (for messages), do not keep it.
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: by the type invariant the device is valid, and `dev_name` of a
        // registered device is a NUL-terminated string.
        unsafe { CStr::from_char_ptr(bindings::rswap_ib_device_name(self.as_raw())) }
    }

    /// The largest completion queue the device supports.
    pub(crate) fn max_cqe(&self) -> u32 {
        // SAFETY: by the type invariant the device is valid; `attrs` is filled in before
        // the device is registered and does not change afterwards.
        unsafe { (*self.as_raw()).attrs.max_cqe }
    }

    /// The most SGEs one send work request may carry.
    pub(crate) fn max_send_sge(&self) -> u32 {
        // SAFETY: as in `max_cqe`.
        let sge = unsafe { (*self.as_raw()).attrs.max_send_sge }.max(1);
        #[cfg(rswap_fault_injection)]
        let sge = match SEND_SGE_CAP.load(core::sync::atomic::Ordering::Relaxed) {
            0 => sge,
            cap => sge.min(cap),
        };
        sge
    }

    /// Whether the device speaks iWARP (an RNIC): RDMA over TCP, where a work request's
    /// completion says only that the data left, not that it arrived.
    pub(crate) fn is_iwarp(&self) -> bool {
        // SAFETY: as in `max_cqe`.
        u32::from(unsafe { (*self.as_raw()).node_type }) == bindings::RDMA_NODE_RNIC
    }

    /// The most SGEs an RDMA READ work request may carry: often fewer than a send may
    /// (30 on mlx4; 1 on iWARP devices, whose READ sink is a single buffer).
    pub(crate) fn max_sge_rd(&self) -> u32 {
        // SAFETY: as in `max_cqe`.
        unsafe { (*self.as_raw()).attrs.max_sge_rd }.max(1)
    }

    /// The most pages one fast-registration memory region may map.
    pub(crate) fn max_fast_reg_pages(&self) -> u32 {
        // SAFETY: as in `max_cqe`.
        unsafe { (*self.as_raw()).attrs.max_fast_reg_page_list_len }
    }

    /// The most RDMA READs one QP may have outstanding as initiator.
    pub(crate) fn max_qp_init_rd_atom(&self) -> u32 {
        // SAFETY: as in `max_cqe`.
        unsafe { (*self.as_raw()).attrs.max_qp_init_rd_atom }.max(1)
    }

    /// How many completion vectors (interrupts) the device has.
    pub(crate) fn num_comp_vectors(&self) -> u32 {
        // SAFETY: as in `max_cqe`; `num_comp_vectors` is set before registration.
        let n = unsafe { (*self.as_raw()).num_comp_vectors };
        u32::try_from(n).unwrap_or(1).max(1)
    }
}
