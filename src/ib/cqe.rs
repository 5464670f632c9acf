// SPDX-License-Identifier: GPL-2.0

//! Work completions routed to the object a posted work request owns.
//!
//! Every work request rswap posts carries an `ib_cqe` embedded in an object the request
//! *owns* while it is posted (a block request's per-request data, a receive buffer). The
//! IB core calls `ib_cqe.done` with the work completion; [`CqeOwner::from_cqe`] turns the
//! `ib_cqe` back into the owning object (the `container_of` step) and
//! [`CqeOwner::complete`] consumes it. Posting gives ownership away
//! ([`CqeOwner::into_cqe`]) and the completion takes it back, so it is taken back exactly
//! once: the IB core delivers exactly one completion per signalled work request, including
//! flushed ones when a QP goes to the error state.

use core::ptr::NonNull;
use kernel::{prelude::*, str::CStr, types::Opaque};

use super::{bindings, Device};

/// A completion entry (`struct ib_cqe`) to embed in an object that posted work requests
/// own.
#[repr(transparent)]
pub(crate) struct Cqe(Opaque<bindings::ib_cqe>);

impl Cqe {
    /// A completion entry with no handler yet; [`arm`] sets it.
    pub(crate) const fn new() -> Self {
        Self(Opaque::zeroed())
    }

    /// The raw pointer, for the other wrappers of this layer.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_cqe {
        self.0.get()
    }
}

impl Default for Cqe {
    fn default() -> Self {
        Self::new()
    }
}

/// An object that a posted work request owns until its completion.
///
/// # Safety
///
/// `into_cqe` must return a pointer to a [`Cqe`] inside the object, which stays valid
/// (not moved, not freed) until `from_cqe` is called with it; `from_cqe` must return the
/// very object that `into_cqe` gave up.
pub(crate) unsafe trait CqeOwner: Sized + Send {
    /// Gives up ownership; the returned entry stands for the object until `from_cqe`.
    fn into_cqe(self) -> NonNull<Cqe>;

    /// Takes back what `into_cqe` gave up.
    ///
    /// # Safety
    ///
    /// `cqe` must come from `into_cqe` of this type and not have been taken back yet.
    unsafe fn from_cqe(cqe: NonNull<Cqe>) -> Self;

    /// The work request finished (successfully or not). May run in softirq context: no
    /// sleeping, no `GFP_KERNEL`.
    fn complete(self, wc: &Wc<'_>);
}

/// Points `cqe.done` at `T`'s completion handler.
pub(crate) fn arm<T: CqeOwner>(cqe: &Cqe) {
    // SAFETY: `cqe` is a valid `ib_cqe`; `done` is a plain function pointer, and nothing
    // reads it until a work request carrying this entry completes.
    unsafe { (*cqe.as_raw()).done = Some(done_callback::<T>) };
}

/// The IB core's `ib_cqe.done` callback.
///
/// # Safety
///
/// Called by the IB core with a valid CQ and a work completion whose `wr_cqe` is an entry
/// armed for `T` and given up by `T::into_cqe`.
unsafe extern "C" fn done_callback<T: CqeOwner>(
    cq: *mut bindings::ib_cq,
    wc: *mut bindings::ib_wc,
) {
    // SAFETY: the IB core passes a valid work completion for the duration of the call.
    let wc_ref = unsafe { &*wc };
    // SAFETY: the IB core passes the CQ the completion came from; its device is valid
    // while the CQ exists.
    let dev = unsafe { Device::from_raw((*cq).device) };
    // SAFETY: rswap posts every work request with `wr_cqe` set (never `wr_id`).
    let raw = unsafe { bindings::rswap_ib_wc_cqe(wc) };
    let Some(cqe) = NonNull::new(raw.cast::<Cqe>()) else {
        return;
    };
    // SAFETY: `Cqe` is a transparent `ib_cqe`; by this function's contract it was armed
    // for `T` and given up by `T::into_cqe`, and each work request completes once.
    let owner = unsafe { T::from_cqe(cqe) };
    owner.complete(&Wc { wc: wc_ref, dev });
}

/// A work completion (`struct ib_wc`), borrowed for the duration of a completion handler.
pub(crate) struct Wc<'a> {
    wc: &'a bindings::ib_wc,
    dev: &'a Device,
}

impl Wc<'_> {
    /// Whether the work request succeeded.
    pub(crate) fn is_ok(&self) -> bool {
        self.wc.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// The raw status code.
    pub(crate) fn status(&self) -> u32 {
        self.wc.status
    }

    /// The status as text, for messages.
    pub(crate) fn status_msg(&self) -> &'static CStr {
        // SAFETY: `ib_wc_status_msg` returns a static string for any value.
        unsafe { CStr::from_char_ptr(bindings::ib_wc_status_msg(self.wc.status)) }
    }

    /// Bytes received (for receives).
    pub(crate) fn byte_len(&self) -> u32 {
        self.wc.byte_len
    }

    /// The device the completion came from (for unmapping DMA).
    pub(crate) fn device(&self) -> &Device {
        self.dev
    }
}
