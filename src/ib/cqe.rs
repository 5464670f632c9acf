// SPDX-License-Identifier: GPL-2.0

//! Work completions routed to the object a posted work request owns.
//!
//! Every work request rswap posts carries an `ib_cqe` embedded in an object the request
//! *owns* while it is posted (a block request's per-request data, a receive buffer). The
//! IB core calls `ib_cqe.done` with the work completion; the `ib_cqe` is turned back into
//! the owning object (the `container_of` step, [`HasCqe`]) and [`CqeOwner::from_raw`]
//! makes it an owner again, which [`CqeOwner::complete`] consumes. Posting gives ownership
//! away ([`CqeOwner::into_raw`]) and the completion takes it back, exactly once.
//!
//! The IB core delivers one completion per signalled work request, flushed ones included
//! when a QP goes to the error state; a provider that loses one (soft-iWARP does, for READs
//! still waiting for their response when its device is removed) would leave its owner
//! owned by nothing for ever. So this layer does not depend on it: each QP lists its posted
//! entries in an [`Outstanding`] set, which its completion handler leaves, and once the QP
//! and its CQ are destroyed (no completion can come after that), every entry still listed
//! is completed as flushed ([`Outstanding::flush_lost`]).

use core::{
    cell::UnsafeCell,
    ptr::NonNull,
    sync::atomic::{AtomicPtr, AtomicU32, Ordering},
};
use kernel::{new_spinlock_irq, prelude::*, str::CStr, sync::SpinLockIrq, types::Opaque};

use super::{
    bindings,
    device::Device,
    dma::{MappedSg, Sge},
};

/// How an entry listed in an [`Outstanding`] set is completed as flushed, if its work
/// request never completes: `flush_callback::<T>` of the owner type that posted it.
type FlushFn = unsafe fn(NonNull<Cqe>, &Device);

/// Where a posted entry is listed, and how to flush it.
struct Listing {
    /// The set it is listed in; null while not posted. Atomic because a completion the
    /// provider delivers twice reads it under its own set's lock, which may not be the
    /// lock the entry is listed under by then.
    set: AtomicPtr<Outstanding>,
    prev: *mut Cqe,
    next: *mut Cqe,
    flush: Option<FlushFn>,
    /// The READ slot its work request holds ([`Posting::take_read_slot`]), or [`NO_SLOT`].
    read_slot: u32,
}

/// [`Listing::read_slot`] of an entry that holds no READ slot.
const NO_SLOT: u32 = u32::MAX;

/// The most READ slots a set hands out (the deepest queue).
pub(super) const MAX_READ_SLOTS: u32 = 1024;

/// Words of the free READ slots' bitmap.
const SLOT_WORDS: usize = (MAX_READ_SLOTS / 64) as usize;

/// A completion entry (`struct ib_cqe`) to embed in an object that posted work requests
/// own.
///
/// # Invariants
///
/// `raw` is the first field (the IB core's `wr_cqe` points at it and is cast back to the
/// `Cqe`); `listing` (but its `set`) is only accessed under the lock of the
/// [`Outstanding`] set the entry is listed in, while its work request is posted.
#[repr(C)]
pub(crate) struct Cqe {
    raw: Opaque<bindings::ib_cqe>,
    listing: UnsafeCell<Listing>,
}

// SAFETY: the entry is plain memory; only the IB core and the QP's `Outstanding` set use
// it, while a work request owns the object it is in.
unsafe impl Send for Cqe {}
// SAFETY: a shared `Cqe` offers nothing to read or write: only this layer touches its
// fields, through raw pointers, while a work request owns it (the IB core) or under the
// lock of the set it is listed in (`listing`).
unsafe impl Sync for Cqe {}

impl Cqe {
    /// A completion entry with no handler yet; posting sets it.
    pub(crate) const fn new() -> Self {
        Self {
            raw: Opaque::zeroed(),
            listing: UnsafeCell::new(Listing {
                set: AtomicPtr::new(core::ptr::null_mut()),
                prev: core::ptr::null_mut(),
                next: core::ptr::null_mut(),
                flush: None,
                read_slot: NO_SLOT,
            }),
        }
    }
}

impl Default for Cqe {
    fn default() -> Self {
        Self::new()
    }
}

/// The entries of one QP's work requests that have not completed yet: a list through
/// their [`Cqe`]s, under an IRQ-safe lock (posting runs in process context, completions
/// in softirq); and which of the QP's READ slots are free.
struct Entries {
    first: *mut Cqe,
    /// One bit per READ slot, set while the slot is free.
    free_slots: [u64; SLOT_WORDS],
}

impl Entries {
    /// Takes a free READ slot.
    fn take_slot(&mut self) -> Option<u32> {
        let (i, word) = self
            .free_slots
            .iter_mut()
            .enumerate()
            .find(|(_, w)| **w != 0)?;
        let bit = word.trailing_zeros();
        *word &= !(1u64 << bit);
        u32::try_from(i).ok().map(|i| i * 64 + bit)
    }

    /// Frees READ slot `slot` (nothing for [`NO_SLOT`]).
    fn put_slot(&mut self, slot: u32) {
        let word = usize::try_from(slot / 64)
            .ok()
            .and_then(|i| self.free_slots.get_mut(i));
        if let Some(word) = word {
            *word |= 1u64 << (slot % 64);
        }
    }
}

// SAFETY: the pointers are only followed under the set's lock.
unsafe impl Send for Entries {}

/// The posted, not yet completed work requests of one QP (see the module documentation).
#[pin_data]
pub(super) struct Outstanding {
    #[pin]
    entries: SpinLockIrq<Entries>,
    /// Completions that came for a work request that had completed already (and were
    /// dropped: its owner was taken back then).
    duplicates: AtomicU32,
}

impl Outstanding {
    /// An empty set, with `read_slots` READ slots free (at most [`MAX_READ_SLOTS`]).
    pub(super) fn new(read_slots: u32) -> impl PinInit<Self> {
        let free_slots = core::array::from_fn(|i| {
            let first = (i as u32).saturating_mul(64);
            match read_slots.min(MAX_READ_SLOTS).saturating_sub(first) {
                0 => 0,
                n if n >= 64 => u64::MAX,
                n => (1u64 << n) - 1,
            }
        });
        pin_init!(Self {
            entries <- new_spinlock_irq!(
                Entries {
                    first: core::ptr::null_mut(),
                    free_slots,
                },
                "rswap::ib::Outstanding"
            ),
            duplicates: AtomicU32::new(0),
        })
    }

    /// Lists `cqe`, to be flushed with `flush` if its work request never completes.
    ///
    /// # Safety
    ///
    /// `cqe` is valid, not listed in any set, and stays valid until it is unlisted.
    unsafe fn list(&self, cqe: *mut Cqe, flush: FlushFn) {
        let mut e = self.entries.lock();
        // SAFETY: `cqe` is valid and not listed anywhere (the caller's guarantee); the
        // listed entries are valid and only touched under this lock.
        unsafe {
            let l = &mut *(*cqe).listing.get();
            l.set
                .store(core::ptr::from_ref(self).cast_mut(), Ordering::Release);
            l.prev = core::ptr::null_mut();
            l.next = e.first;
            l.flush = Some(flush);
            if let Some(first) = e.first.as_mut() {
                (*first.listing.get()).prev = cqe;
            }
        }
        e.first = cqe;
    }

    /// Unlists `cqe`; `false` if it is not listed here (its work request completed
    /// already: the provider delivered a second completion for it).
    ///
    /// # Safety
    ///
    /// `cqe` is valid.
    unsafe fn unlist(&self, cqe: *mut Cqe) -> bool {
        let mut e = self.entries.lock();
        // SAFETY: `cqe` is valid (the caller's guarantee); `set` is atomic.
        let listed_here = unsafe { &(*(*cqe).listing.get()).set }.load(Ordering::Acquire);
        if !core::ptr::eq(listed_here, self) {
            return false;
        }
        // SAFETY: `cqe` and its neighbours are listed here, hence valid; this lock is held.
        unsafe {
            let l = &mut *(*cqe).listing.get();
            match l.prev.as_mut() {
                Some(prev) => (*prev.listing.get()).next = l.next,
                None => e.first = l.next,
            }
            if let Some(next) = l.next.as_mut() {
                (*next.listing.get()).prev = l.prev;
            }
            l.prev = core::ptr::null_mut();
            l.next = core::ptr::null_mut();
            l.set.store(core::ptr::null_mut(), Ordering::Release);
            e.put_slot(core::mem::replace(&mut l.read_slot, NO_SLOT));
        }
        true
    }

    /// Gives the listed `cqe` a free READ slot and returns it; `None` if none is free.
    ///
    /// # Safety
    ///
    /// `cqe` is valid and listed in this set.
    unsafe fn take_read_slot(&self, cqe: *mut Cqe) -> Option<u32> {
        let mut e = self.entries.lock();
        let slot = e.take_slot()?;
        // SAFETY: `cqe` is listed here (the caller's guarantee), so its listing is ours
        // under this lock.
        let old = unsafe { core::mem::replace(&mut (*(*cqe).listing.get()).read_slot, slot) };
        e.put_slot(old);
        Some(slot)
    }

    /// Whether no work request is listed: every one posted has completed.
    pub(super) fn is_empty(&self) -> bool {
        self.entries.lock().first.is_null()
    }

    /// Completions dropped because their work request had completed already.
    pub(super) fn duplicates(&self) -> u32 {
        self.duplicates.load(Ordering::Relaxed)
    }

    /// Completes every entry still listed as flushed, and returns how many there were.
    /// Runs with softirqs disabled around each, as a completion would.
    ///
    /// # Safety
    ///
    /// The QP and the CQ whose work requests this set lists are destroyed: no completion
    /// of them can run any more.
    pub(super) unsafe fn flush_lost(&self, dev: &Device) -> usize {
        let mut next = core::mem::replace(&mut self.entries.lock().first, core::ptr::null_mut());
        // The QP is gone: its READ slots are never handed out again.
        let mut count = 0;
        while let Some(cqe) = NonNull::new(next) {
            count += 1;
            // SAFETY: a listed entry is valid until its owner is taken back, below; read
            // before that, as the owner may post it again at once.
            let flush = unsafe {
                let l = &mut *(*cqe.as_ptr()).listing.get();
                next = l.next;
                l.prev = core::ptr::null_mut();
                l.next = core::ptr::null_mut();
                l.set.store(core::ptr::null_mut(), Ordering::Release);
                l.read_slot = NO_SLOT;
                l.flush.take()
            };
            if let Some(flush) = flush {
                // SAFETY: `flush` is the flush callback of the type that posted `cqe`,
                // whose work request can no longer complete (the caller's guarantee):
                // its owner is taken back here, once.
                unsafe {
                    bindings::rswap_local_bh_disable();
                    flush(cqe, dev);
                    bindings::rswap_local_bh_enable();
                }
            }
        }
        count
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
/// impl_has_cqe! { impl<D> HasCqe for Slot<D> { self.cqe } }
/// ```
macro_rules! impl_has_cqe {
    (impl $(<$($g:ident),*>)? HasCqe for $type:ty { self.$field:ident }) => {
        // SAFETY: both functions use the same field, so `from_cqe` inverts `raw_cqe`.
        unsafe impl $(<$($g),*>)? $crate::ib::cqe::HasCqe for $type {
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

    /// The DMA-mapped scatterlist the SGEs describe, if they come from one ([`SgDma`]):
    /// what an RDMA READ's sink is registered from on iWARP. Without one, only a single
    /// SGE can be registered (the default: the SGEs are buffers of their own).
    ///
    /// [`SgDma`]: super::dma::SgDma
    fn mapped_sg(&self) -> Option<MappedSg<'_>> {
        None
    }
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
/// and the way back if posting fails. Its entry is listed in the QP's [`Outstanding`] set
/// until the work request completes.
pub(super) struct Posting<'a, T: CqeOwner> {
    target: NonNull<T::Target>,
    set: &'a Outstanding,
}

impl<'a, T: CqeOwner> Posting<'a, T> {
    /// Gives up `owner`, arms its completion entry for `T` and lists it in `set`, the set
    /// of the QP it is posted on (whose CQ's context is `set`).
    pub(super) fn new(owner: T, set: &'a Outstanding) -> Self {
        let target = owner.into_raw();
        // SAFETY: `target` is valid and exclusively ours (`CqeOwner` contract).
        let cqe = unsafe { T::Target::raw_cqe(target.as_ptr()) };
        // SAFETY: `cqe` is valid and its first field is the `ib_cqe` (type invariant);
        // `done` is a plain function pointer that nothing reads until a work request
        // carrying it completes.
        unsafe { (*cqe.cast::<bindings::ib_cqe>()).done = Some(done_callback::<T>) };
        // SAFETY: the entry is valid and not listed (its owner was not posted: we had it);
        // it stays valid until taken back, which unlists it first.
        unsafe { set.list(cqe, flush_callback::<T>) };
        Self { target, set }
    }

    /// The completion entry to post with.
    pub(super) fn cqe(&self) -> *mut bindings::ib_cqe {
        // SAFETY: `target` is valid until posted or taken back.
        unsafe { T::Target::raw_cqe(self.target.as_ptr()) }.cast()
    }

    /// A READ slot for this work request alone, free again once it completed: the index
    /// of its sink's region on iWARP (see [`super::Qp::post_rdma`]). `None` if all are
    /// taken.
    pub(super) fn take_read_slot(&self) -> Option<u32> {
        // SAFETY: `target` is valid and its entry listed in `set` (by `new`) until the
        // work request completes or `unpost` takes it back, neither of which can have
        // happened while this value exists.
        unsafe {
            self.set
                .take_read_slot(T::Target::raw_cqe(self.target.as_ptr()))
        }
    }

    /// The SGEs to post; they stay valid while the work request owns the target.
    pub(super) fn sges(&self) -> &[Sge] {
        // SAFETY: `target` is valid and nothing mutates it while it is given up.
        unsafe { self.target.as_ref() }.sges()
    }

    /// The scatterlist behind the SGEs, if any (see [`SgeList::mapped_sg`]).
    pub(super) fn mapped_sg(&self) -> Option<MappedSg<'_>> {
        // SAFETY: as in `sges`.
        unsafe { self.target.as_ref() }.mapped_sg()
    }

    /// Posting failed: nothing owns the target but us, so take the owner back.
    pub(super) fn unpost(self) -> T {
        // SAFETY: `target` is valid and was listed by `new`; no work request carries it,
        // so it is still listed.
        unsafe { self.set.unlist(T::Target::raw_cqe(self.target.as_ptr())) };
        // SAFETY: from `into_raw`, not taken back, and no work request carries it.
        unsafe { T::from_raw(self.target) }
    }
}

/// Flushed completions still to drop, for tests (see [`lose_flushes`]).
#[cfg(rswap_fault_injection)]
static LOSE_FLUSHES: crate::kernel_ext::Countdown = crate::kernel_ext::Countdown::new();

/// Makes the next `n` flushed completions (of any QP) be dropped on arrival, as by a device
/// that loses them: their entries stay listed, and are completed when their QP goes. For
/// the test of that path (the `fault_lose_flushes` module parameter of a module built
/// with fault injection).
#[cfg(rswap_fault_injection)]
pub(crate) fn lose_flushes(n: u32) {
    LOSE_FLUSHES.set(n);
}

/// Whether to drop this completion (see [`lose_flushes`]).
#[cfg(rswap_fault_injection)]
fn lose(wc: &bindings::ib_wc) -> bool {
    wc.status == bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR && LOSE_FLUSHES.take()
}

/// Without fault injection no completion is dropped.
#[cfg(not(rswap_fault_injection))]
fn lose(_wc: &bindings::ib_wc) -> bool {
    false
}

/// The IB core's `ib_cqe.done` callback.
///
/// # Safety
///
/// Called by the IB core with a valid CQ whose context is the [`Outstanding`] set of the
/// QP, and a work completion whose `wr_cqe` is the entry of a `T::Target` that a
/// [`Posting<T>`] gave to a work request of that QP.
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
    if raw.is_null() || lose(wc_ref) {
        return;
    }
    // SAFETY: the CQ's context is the QP's set, valid while the CQ exists (this
    // function's contract); `raw` is the first field of a valid `Cqe`.
    let set = unsafe { &*(*cq).cq_context.cast::<Outstanding>() };
    // SAFETY: as above.
    if !unsafe { set.unlist(raw.cast()) } {
        // Its work request completed before: its owner was taken back then (and may be
        // owned by someone else now). Taking it back again would complete it twice.
        set.duplicates.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // SAFETY: `raw` is the `Cqe` field of a `T::Target` (this function's contract).
    let target = unsafe { T::Target::from_cqe(raw.cast()) };
    // SAFETY: a field's container is not null; it was given up by `T::into_raw` and each
    // work request completes once (it was just unlisted, so `flush_lost` will not), so
    // it is taken back once.
    let owner = unsafe { T::from_raw(NonNull::new_unchecked(target)) };
    owner.complete(&Wc { wc: wc_ref, dev });
}

/// Completes, as flushed, a work request that its provider never completed.
///
/// # Safety
///
/// `cqe` is the entry of a `T::Target` that a [`Posting<T>`] gave to a work request which
/// can no longer complete (its QP and CQ are destroyed), and was unlisted by
/// [`Outstanding::flush_lost`]; `dev` is the device it was posted on.
unsafe fn flush_callback<T: CqeOwner>(cqe: NonNull<Cqe>, dev: &Device) {
    let mut wc = bindings::ib_wc::default();
    // SAFETY: `wc` is a valid work completion to fill; `cqe` starts with its `ib_cqe`.
    unsafe { bindings::rswap_ib_wc_flushed(&mut wc, cqe.as_ptr().cast()) };
    // SAFETY: `cqe` is the `Cqe` field of a `T::Target` (this function's contract).
    let target = unsafe { T::Target::from_cqe(cqe.as_ptr()) };
    // SAFETY: given up by `T::into_raw`; its work request will never complete, and it was
    // taken out of the set, so this is the one time it is taken back.
    let owner = unsafe { T::from_raw(NonNull::new_unchecked(target)) };
    owner.complete(&Wc { wc: &wc, dev });
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
