// SPDX-License-Identifier: GPL-2.0

//! Owners that can be given up as a pointer and taken back, as `KBox::into_raw` and
//! `KBox::from_raw` do: what a posted work request or a queued work item holds while the
//! owner is away.

use core::ptr::NonNull;

/// An owner that can stand aside as a pointer to what it owns.
///
/// # Safety
///
/// `into_raw` must return a valid pointer to a `Target` owned exclusively through the
/// returned pointer, which stays in place (not moved, not freed) until `from_raw` takes
/// it back; `from_raw` of that pointer must return the owner `into_raw` gave up.
pub(crate) unsafe trait IntoRaw: Sized {
    /// What the pointer points to.
    type Target;

    /// Gives up ownership; the pointer stands for it until [`IntoRaw::from_raw`].
    fn into_raw(self) -> NonNull<Self::Target>;

    /// Takes back what [`IntoRaw::into_raw`] gave up.
    ///
    /// # Safety
    ///
    /// `target` must come from `into_raw` of this type and not have been taken back since.
    unsafe fn from_raw(target: NonNull<Self::Target>) -> Self;
}
