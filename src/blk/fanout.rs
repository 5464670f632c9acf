// SPDX-License-Identifier: GPL-2.0

//! One block request issued as several I/Os, its *parts* (one per server of a disk over
//! several servers), each owned by its own work request while it is out.
//!
//! The request's data is a [`FanOut`]: up to `N` parts (each a transport slot with the
//! driver's part data), the driver's `shared` state of the whole request, and the
//! [`Quorum`] that counts the parts out. [`OwnedRequest::fan_out`] gives the request up
//! to the parts of a round; each [`RequestPart`] goes its own way (it can stand aside as
//! a pointer to its part, [`IntoRaw`], as a posted work request needs) and comes back
//! with [`RequestPart::release`]. What the release returns says what its caller owns
//! now: nothing ([`Released::Out`]); the right to end the request's data early because
//! enough parts arrived ([`Released::Quorum`], a [`Settler`]); the whole request again
//! ([`Released::Last`]); or the request to free once its data was ended
//! ([`Released::Done`], a [`SettledRequest`]).
//!
//! Ending the data early is what makes a late part harmless: [`Settler::settle`] ends
//! the request's bios (`blk_update_request`), so their owner goes on, but the tag is
//! given back (`__blk_mq_end_request`) only once every part is back. A part that arrives
//! after the data ended lands in the slot's own memory, which nobody reuses before.
//!
//! # Rules for the driver
//!
//! - Fill every part's slot before [`OwnedRequest::fan_out`]: after it the request's pages
//!   belong to whatever the parts' I/O does with them.
//! - A part that moves data into the request's own pages (zero-copy) must be in every
//!   quorum the driver accepts: the data may be ended only when no I/O still writes to
//!   its pages.
//! - Take every part of [`FanOutParts`] and release each exactly once.

use core::{marker::PhantomData, ptr::NonNull};

use super::{
    quorum::{PartMask, Quorum, Release, MAX_PARTS},
    request::{self, OwnedRequest, RqInfo, Status},
};
use crate::kernel_ext::IntoRaw;

/// One part of a [`FanOut`]: the driver's part and its index, fixed when the tag's data
/// is made.
///
/// `inner` comes first: a pointer to the part is a pointer to `inner`.
#[repr(C)]
struct Part<P> {
    inner: P,
    index: usize,
}

/// A request's data when it is issued as up to `N` parts: the parts, the driver's
/// `shared` state of the whole request, and their count.
///
/// # Invariants
///
/// `parts[i].index == i`.
pub(crate) struct FanOut<P, S, const N: usize> {
    parts: [Part<P>; N],
    /// The driver's state of the whole request. While parts are out, it is only read
    /// (through [`RequestPart::shared`]).
    pub(crate) shared: S,
    quorum: Quorum,
}

impl<P: Default, S: Default, const N: usize> Default for FanOut<P, S, N> {
    fn default() -> Self {
        const { assert!(N <= MAX_PARTS) };
        // INVARIANT: each part gets its own index.
        Self {
            parts: core::array::from_fn(|index| Part {
                inner: P::default(),
                index,
            }),
            shared: S::default(),
            quorum: Quorum::default(),
        }
    }
}

impl<P, S, const N: usize> FanOut<P, S, N> {
    /// Part `i`, if there is one.
    pub(crate) fn part_mut(&mut self, i: usize) -> Option<&mut P> {
        self.parts.get_mut(i).map(|p| &mut p.inner)
    }

    /// Parts `a` and `b` at once, if both exist and differ.
    pub(crate) fn pair_mut(&mut self, a: usize, b: usize) -> Option<(&mut P, &mut P)> {
        if a == b {
            return None;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        let (first, rest) = self.parts.split_at_mut(hi);
        let (lo, hi) = (&mut first.get_mut(lo)?.inner, &mut rest.first_mut()?.inner);
        Some(if a < b { (lo, hi) } else { (hi, lo) })
    }

    /// The parts that came back with success in the last round.
    pub(crate) fn ok(&self) -> PartMask {
        self.quorum.ok()
    }

    /// The parts of the last round.
    pub(crate) fn given(&self) -> PartMask {
        self.quorum.given()
    }
}

/// A request whose data is a [`FanOut`].
type FanRequest<P, S, const N: usize, Q> = OwnedRequest<FanOut<P, S, N>, Q>;

impl<P: Send, S: Send + Sync, const N: usize, Q: Sync> FanRequest<P, S, N, Q> {
    /// Gives the request up to its parts in `parts` (a round): each is then taken from
    /// the returned [`FanOutParts`] and released once. Gives the request back if `parts`
    /// is empty or names a part beyond `N`.
    pub(crate) fn fan_out(mut self, parts: PartMask) -> Result<FanOutParts<P, S, N, Q>, Self> {
        let all = u32::try_from(N)
            .ok()
            .and_then(|n| 1u32.checked_shl(n))
            .map_or(u32::MAX, |b| b - 1);
        if parts == 0 || parts & !all != 0 {
            return Err(self);
        }
        self.data().quorum.begin(parts);
        let rq = self.into_raw();
        // INVARIANT: the request's ownership is now with these parts.
        Ok(FanOutParts {
            rq,
            left: parts,
            _types: PhantomData,
        })
    }
}

/// The parts of a request fanned out, not yet taken.
///
/// # Invariants
///
/// `rq` is a started request whose PDU is a `FanOut<P, S, N>` and whose hardware
/// contexts' driver data are `Q`s; its quorum's round gave out the parts in `left` (and
/// maybe others, already taken), none of them released yet: the request cannot end
/// before they are.
#[must_use = "every part must be taken and released"]
pub(crate) struct FanOutParts<P, S, const N: usize, Q> {
    rq: NonNull<kernel::bindings::request>,
    left: PartMask,
    _types: PhantomData<(P, S, *const Q)>,
}

impl<P, S, const N: usize, Q> FanOutParts<P, S, N, Q> {
    /// Part `i` of the round, if it was not taken yet.
    pub(crate) fn take(&mut self, i: usize) -> Option<RequestPart<P, S, N, Q>> {
        let bit = u32::try_from(i).ok().and_then(|i| 1u32.checked_shl(i))?;
        if self.left & bit == 0 {
            return None;
        }
        self.left &= !bit;
        // SAFETY: the PDU is a `FanOut<P, S, N>` of a valid request (type invariant).
        let fan = unsafe { request::data_of::<FanOut<P, S, N>>(self.rq) };
        // SAFETY: `i < N` (the round's parts are below `N`, checked by `fan_out`), so the
        // part is in the array; the pointer is not null.
        let part = unsafe {
            NonNull::new_unchecked((&raw mut (*fan.as_ptr()).parts).cast::<Part<P>>().add(i))
        };
        // INVARIANT: part `i` of the round, given out once (its bit is now cleared).
        Some(RequestPart {
            part,
            _types: PhantomData,
        })
    }
}

/// One part of a fanned-out request, owned by whoever holds this (its work request while
/// it is posted).
///
/// # Invariants
///
/// `part` is part `index` of the `FanOut<P, S, N>` of a started request whose hardware
/// contexts' driver data are `Q`s; that part was given out in the current round and not
/// released, and this value is its only owner.
#[must_use = "a part must be released"]
pub(crate) struct RequestPart<P, S, const N: usize, Q> {
    part: NonNull<Part<P>>,
    _types: PhantomData<(P, S, *const Q)>,
}

// SAFETY: a part moves to whichever CPU completes its work request; its own data is
// `Send`, and what it shares with the other parts is only read (`S: Sync`) or atomic.
unsafe impl<P: Send, S: Sync, const N: usize, Q: Sync> Send for RequestPart<P, S, N, Q> {}

impl<P, S, const N: usize, Q> RequestPart<P, S, N, Q> {
    fn index(&self) -> usize {
        // SAFETY: the part is valid (type invariant); `index` is never written after the
        // tag's data was made.
        unsafe { (*self.part.as_ptr()).index }
    }

    fn fan(&self) -> NonNull<FanOut<P, S, N>> {
        // SAFETY: the part is element `index` of the `parts` array of a `FanOut` (type
        // invariants of this and of `FanOut`), so stepping back `index` elements gives
        // the array, the `parts` field.
        unsafe {
            let parts = self.part.as_ptr().sub(self.index()).cast::<[Part<P>; N]>();
            NonNull::new_unchecked(kernel::container_of!(parts, FanOut<P, S, N>, parts))
        }
    }

    fn rq(&self) -> NonNull<kernel::bindings::request> {
        // SAFETY: the `FanOut` is the data of the PDU of a valid request (type invariant).
        unsafe { request::request_of_data(self.fan()) }
    }

    /// The part's index in the request.
    pub(crate) fn part_index(&self) -> usize {
        self.index()
    }

    /// The part's data, for its owner alone.
    pub(crate) fn part(&mut self) -> &mut P {
        // SAFETY: this value owns the part exclusively (type invariant).
        unsafe { &mut (*self.part.as_ptr()).inner }
    }

    /// The driver's state of the whole request, read-only while parts are out.
    pub(crate) fn shared(&self) -> &S {
        // SAFETY: the `FanOut` is valid while a part is out; `shared` is only read while
        // the request is fanned out (only an owner of the whole request writes it).
        unsafe { &(*self.fan().as_ptr()).shared }
    }

    /// The request's identity and hardware queue.
    pub(crate) fn info(&self) -> RqInfo<'_, Q> {
        // SAFETY: the request is valid while this part is out; its hardware queue's data
        // lives as long as the tag set.
        unsafe { RqInfo::new(self.rq()) }
    }

    /// The part is back, `ok` or not (see [`Quorum::release`] for `quorum`); says what
    /// the caller owns now.
    pub(crate) fn release(
        self,
        ok: bool,
        quorum: impl Fn(PartMask) -> bool,
    ) -> Released<P, S, N, Q> {
        let index = self.index();
        let rq = self.rq();
        // SAFETY: the `FanOut` is valid while this part is out; its quorum is atomic.
        let outcome = unsafe { (*self.fan().as_ptr()).quorum.release(index, ok, quorum) };
        // The part is given up: only `rq` (a pointer) is used below.
        match outcome {
            Release::Out => Released::Out,
            // INVARIANT: the token is ours: the request cannot end before we drop it.
            Release::Quorum => Released::Quorum(Settler {
                rq,
                _types: PhantomData,
            }),
            // SAFETY: every part is back and the token is spent: the request is ours
            // alone, as started (it was never settled).
            Release::Last => Released::Last(unsafe { OwnedRequest::from_raw(rq) }),
            // INVARIANT: every part is back and the data was settled: ours alone.
            Release::Done => Released::Done(SettledRequest {
                rq,
                _types: PhantomData,
            }),
        }
    }
}

// SAFETY: the part stays in place in its request's PDU until the request is freed, which
// cannot happen while the part is out; `from_raw` rebuilds the same owner from it (its
// index is in the part itself).
unsafe impl<P, S, const N: usize, Q> IntoRaw for RequestPart<P, S, N, Q> {
    type Target = P;

    fn into_raw(self) -> NonNull<P> {
        // `Part` is `repr(C)` with `inner` first.
        self.part.cast()
    }

    unsafe fn from_raw(part: NonNull<P>) -> Self {
        // INVARIANT: `part` came from `into_raw` (the caller's guarantee), so it is the
        // `inner` of a `Part<P>` at the same address, out and owned through the pointer.
        Self {
            part: part.cast(),
            _types: PhantomData,
        }
    }
}

/// What a part's caller owns after its release.
pub(crate) enum Released<P, S, const N: usize, Q> {
    /// Nothing.
    Out,
    /// The right to end the request's data: enough parts arrived.
    Quorum(Settler<P, S, N, Q>),
    /// The whole request: every part is back and none made a quorum.
    Last(OwnedRequest<FanOut<P, S, N>, Q>),
    /// The request to end: every part is back, its data was ended.
    Done(SettledRequest<P, S, N, Q>),
}

/// The parts of a request that came back with success, lent to its settler with the
/// request's pages ([`Settler::parts_and_filled_pages`]).
///
/// # Invariants
///
/// `fan` is the `FanOut<P, S, N>` of a request whose settle token the borrowed settler
/// holds, and every part in `back` was released with success this round: nobody else
/// reads or writes those parts while this value lives.
pub(crate) struct PartsBack<'a, P, S, const N: usize> {
    fan: NonNull<FanOut<P, S, N>>,
    back: PartMask,
    _settler: PhantomData<&'a mut P>,
}

impl<P, S, const N: usize> PartsBack<'_, P, S, N> {
    /// The parts lent.
    pub(crate) fn mask(&self) -> PartMask {
        self.back
    }

    /// Part `i`, if it is one of those lent.
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut P> {
        let bit = u32::try_from(i).ok().and_then(|i| 1u32.checked_shl(i))?;
        if self.back & bit == 0 || i >= N {
            return None;
        }
        // SAFETY: `i < N`, so the part is in the array; it is one of those lent, which
        // nobody else touches while this value is borrowed mutably (type invariant).
        Some(unsafe {
            &mut (*(&raw mut (*self.fan.as_ptr()).parts)
                .cast::<Part<P>>()
                .add(i))
            .inner
        })
    }
}

/// Who ends a request's data once enough parts arrived ([`Released::Quorum`]). It reads
/// what came back and fills the request's pages, then [`Settler::settle`]s.
///
/// # Invariants
///
/// `rq` is a started request whose PDU is a `FanOut<P, S, N>`, of which this value holds
/// the settle token: the request is not ended and its data not settled, and only this
/// value may do either.
#[must_use = "a settler must settle"]
pub(crate) struct Settler<P, S, const N: usize, Q> {
    rq: NonNull<kernel::bindings::request>,
    _types: PhantomData<(P, S, *const Q)>,
}

impl<P, S, const N: usize, Q> Settler<P, S, N, Q> {
    fn fan(&self) -> &FanOut<P, S, N> {
        // SAFETY: the request is valid and its PDU a `FanOut` (type invariant); only its
        // atomics and its shared state (read-only while fanned out) are read through this
        // reference.
        unsafe { request::data_of::<FanOut<P, S, N>>(self.rq).as_ref() }
    }

    /// The request's identity and hardware queue.
    pub(crate) fn info(&self) -> RqInfo<'_, Q> {
        // SAFETY: the request is valid while the token is held (type invariant); its
        // hardware queue's data lives as long as the tag set.
        unsafe { RqInfo::new(self.rq) }
    }

    /// The driver's state of the whole request (read-only: parts may still be out).
    pub(crate) fn shared(&self) -> &S {
        &self.fan().shared
    }

    /// The parts back with success so far, and the pages the read fills (see
    /// [`request::OwnedRequest::data_and_filled_pages`]): what the settler puts the
    /// request's data together from. `None` if the request is not a read or its pages
    /// are not whole pages, at most `M`.
    pub(crate) fn parts_and_filled_pages<const M: usize>(
        &mut self,
    ) -> Option<(
        PartsBack<'_, P, S, N>,
        request::RqPages<'_, M, request::Filled>,
    )> {
        if self.info().op() != request::Op::Read {
            return None;
        }
        let back = self.fan().quorum.ok();
        // SAFETY: the request is valid and not ended while the token is held (type
        // invariant), and no part writes into its pages (the module's rules: a part that
        // does is in every quorum, so it is back), so they are the settler's while it is
        // borrowed.
        let pages = unsafe { request::pages_of(self.rq) }?;
        // SAFETY: the PDU is a `FanOut<P, S, N>` of the valid request (type invariant).
        let fan = unsafe { request::data_of::<FanOut<P, S, N>>(self.rq) };
        // INVARIANT: every part in `back` was released with success this round: its
        // holder gave it up, and nobody takes it again before the request is reissued,
        // which cannot happen while the token is held.
        Some((
            PartsBack {
                fan,
                back,
                _settler: PhantomData,
            },
            pages,
        ))
    }

    /// Ends the request's data with `status` (its bios: their owners go on); returns the
    /// request to end if every part is back already.
    pub(crate) fn settle(self, status: Status) -> Option<SettledRequest<P, S, N, Q>> {
        let rq = self.rq;
        // SAFETY: the request is valid while the token is held (type invariant).
        let bytes = unsafe { RqInfo::<Q>::new(rq) }.bytes();
        // SAFETY: the request is started and not settled (type invariant); all of its
        // bytes are ended here, once.
        unsafe { kernel::bindings::blk_update_request(rq.as_ptr(), status.as_raw(), bytes) };
        // INVARIANT: when the count reaches zero with the token, every part is back.
        self.fan().quorum.drop_token().then_some(SettledRequest {
            rq,
            _types: PhantomData,
        })
    }
}

/// A request whose data was ended and whose parts are all back: only its tag is left to
/// give back.
///
/// # Invariants
///
/// `rq` is a started request whose bios were all ended, whose PDU is a `FanOut<P, S, N>`
/// with no part out, owned by this value alone.
#[must_use = "a settled request must be ended"]
pub(crate) struct SettledRequest<P, S, const N: usize, Q> {
    rq: NonNull<kernel::bindings::request>,
    _types: PhantomData<(P, S, *const Q)>,
}

// SAFETY: the request may be freed from any CPU; this value owns it alone.
unsafe impl<P: Send, S: Send, const N: usize, Q: Sync> Send for SettledRequest<P, S, N, Q> {}

impl<P, S, const N: usize, Q> SettledRequest<P, S, N, Q> {
    /// The request's data, every part being back: the owner's alone.
    pub(crate) fn data(&mut self) -> &mut FanOut<P, S, N> {
        // SAFETY: the PDU is a `FanOut` of the valid request, which this value owns alone
        // (type invariant).
        unsafe { request::data_of::<FanOut<P, S, N>>(self.rq).as_mut() }
    }

    /// The request's identity and hardware queue.
    pub(crate) fn info(&self) -> RqInfo<'_, Q> {
        // SAFETY: the request is valid while owned (type invariant); its hardware queue's
        // data lives as long as the tag set.
        unsafe { RqInfo::new(self.rq) }
    }

    /// Gives the tag back.
    pub(crate) fn end(self) {
        // SAFETY: the request's bios were all ended (type invariant) and this consumes its
        // only owner.
        unsafe { kernel::bindings::__blk_mq_end_request(self.rq.as_ptr(), Status::Ok.as_raw()) };
    }
}
