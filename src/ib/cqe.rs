// SPDX-License-Identifier: GPL-2.0

//! Work completions routed to the object a posted work request owns.
//!
//! Every work request rswap posts carries an `ib_cqe` embedded in an object the request
//! *owns* while it is posted (a block request's per-request data, a receive buffer). The
//! IB core calls `ib_cqe.done` with the work completion; the `ib_cqe` is turned back into
//! the owning object (the `container_of` step, [`HasCqe`]) and [`CqeOwner::from_raw`]
//! makes it an owner again, which [`CqeOwner::complete`] consumes. Posting gives ownership
//! away ([`CqeOwner::into_raw`]) and the completion takes it back, so it is taken back
//! exactly once: the IB core delivers exactly one completion per signalled work request,
//! including flushed ones when a QP goes to the error state.

use core::ptr::NonNull;
use kernel::{prelude::*, str::CStr, types::Opaque};

use super::{bindings, device::Device, dma::Sge};

/// A completion entry (`struct ib_cqe`) to embed in an object that posted work requests
/// own.
#[repr(transparent)]
pub(crate) struct Cqe(Opaque<bindings::ib_cqe>);

// SAFETY: the entry is plain memory; only the IB core reads it, while a work request
// owns the object it is in.
unsafe impl Send for Cqe {}

impl Cqe {
    /// A completion entry with no handler yet; posting sets it.
    pub(crate) const fn new() -> Self {
        Self(Opaque::zeroed())
    }
}

impl Default for Cqe {
    fn default() -> Self {
        Self::new()
    }
}

/// A type with a [`Cqe`] field; implement it with [`impl_has_cqe!`].
///
/// # Safety
///
/// `raw_cqe` must return a pointer to a `Cqe` field of `*this`, and `from_cqe` must invert
/// it (return the object whose field `raw_cqe` returned).
pub(crate) unsafe trait HasCqe {
    /// The address of the `Cqe` field.
    ///
    /// # Safety
    ///
    /// `this` must point to a valid `Self`.
    unsafe fn raw_cqe(this: *mut Self) -> *mut Cqe;

    /// The object whose `Cqe` field `cqe` is.
    ///
    /// # Safety
    ///
    /// `cqe` must point to the `Cqe` field of a valid `Self`.
    unsafe fn from_cqe(cqe: *mut Cqe) -> *mut Self;
}

/// Implements [`HasCqe`] for a type through one of its fields:
///
/// ```ignore
/// impl_has_cqe! { impl HasCqe for RequestData { self.cqe } }
/// ```
macro_rules! impl_has_cqe {
    (impl HasCqe for $type:ty { self.$field:ident }) => {
        // SAFETY: both functions use the same field, so `from_cqe` inverts `raw_cqe`.
        unsafe impl $crate::ib::cqe::HasCqe for $type {
            unsafe fn raw_cqe(this: *mut Self) -> *mut $crate::ib::cqe::Cqe {
                // SAFETY: `this` points to a valid `Self` (the caller's guarantee).
                unsafe { &raw mut (*this).$field }
            }

            unsafe fn from_cqe(cqe: *mut $crate::ib::cqe::Cqe) -> *mut Self {
                // SAFETY: `cqe` is the field of a valid `Self` (the caller's guarantee).
                unsafe { kernel::container_of!(cqe, Self, $field) }
            }
        }
    };
}
pub(crate) use impl_has_cqe;

/// The memory a send or receive work request transfers, as SGEs.
pub(crate) trait SgeList {
    /// The SGEs, read by the provider while the work request is posted.
    fn sges(&self) -> &[Sge];
}

/// An owner of an object that a posted work request owns until its completion.
///
/// # Safety
///
/// `into_raw` must return a valid, exclusively owned object that stays valid (not moved,
/// not freed) until `from_raw` takes it back, and `from_raw` must return the owner that
/// `into_raw` gave up.
pub(crate) unsafe trait CqeOwner: Sized + Send {
    /// What the work request owns: it embeds the completion entry and names the memory.
    type Target: HasCqe + SgeList;

    /// Gives up ownership; the returned object stands for it until `from_raw`.
    fn into_raw(self) -> NonNull<Self::Target>;

    /// Takes back what `into_raw` gave up.
    ///
    /// # Safety
    ///
    /// `target` must come from `into_raw` of this type and not have been taken back yet.
    unsafe fn from_raw(target: NonNull<Self::Target>) -> Self;

    /// The work request finished (successfully or not). May run in softirq context: no
    /// sleeping, no `GFP_KERNEL`.
    fn complete(self, wc: &Wc<'_>);
}

/// An object given up by a [`CqeOwner`] for one work request: the pointers to post with,
/// and the way back if posting fails.
pub(super) struct Posting<T: CqeOwner> {
    target: NonNull<T::Target>,
}

impl<T: CqeOwner> Posting<T> {
    /// Gives up `owner` and arms its completion entry for `T`.
    pub(super) fn new(owner: T) -> Self {
        let target = owner.into_raw();
        // SAFETY: `target` is valid and exclusively ours (`CqeOwner` contract).
        let cqe = unsafe { T::Target::raw_cqe(target.as_ptr()) };
        // SAFETY: `cqe` is a valid `ib_cqe` (`Cqe` is transparent); `done` is a plain
        // function pointer that nothing reads until a work request carrying it completes.
        unsafe { (*cqe.cast::<bindings::ib_cqe>()).done = Some(done_callback::<T>) };
        Self { target }
    }

    /// The completion entry to post with.
    pub(super) fn cqe(&self) -> *mut bindings::ib_cqe {
        // SAFETY: `target` is valid until posted or taken back.
        unsafe { T::Target::raw_cqe(self.target.as_ptr()) }.cast()
    }

    /// The SGEs to post; they stay valid while the work request owns the target.
    pub(super) fn sges(&self) -> &[Sge] {
        // SAFETY: `target` is valid and nothing mutates it while it is given up.
        unsafe { self.target.as_ref() }.sges()
    }

    /// Posting failed: nothing owns the target but us, so take the owner back.
    pub(super) fn unpost(self) -> T {
        // SAFETY: from `into_raw`, not taken back, and no work request carries it.
        unsafe { T::from_raw(self.target) }
    }
}

/// The IB core's `ib_cqe.done` callback.
///
/// # Safety
///
/// Called by the IB core with a valid CQ and a work completion whose `wr_cqe` is the entry
/// of a `T::Target` that a [`Posting<T>`] gave to a work request.
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
    if raw.is_null() {
        return;
    }
    // SAFETY: `raw` is the `Cqe` field of a `T::Target` (this function's contract).
    let target = unsafe { T::Target::from_cqe(raw.cast()) };
    // SAFETY: a field's container is not null; it was given up by `T::into_raw` and each
    // work request completes once, so it is taken back once.
    let owner = unsafe { T::from_raw(NonNull::new_unchecked(target)) };
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

    /// Whether the work request was a receive.
    pub(crate) fn is_recv(&self) -> bool {
        self.wc.opcode & bindings::ib_wc_opcode_IB_WC_RECV != 0
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
