// SPDX-License-Identifier: GPL-2.0

//! Who ends a request that went out as several parts (see [`super::fanout`]): the parts
//! come back one by one, in any order, on any CPU; the request's data may be complete
//! before all of them are back (a *quorum*: enough parts arrived), but its tag may be
//! given back only once every part is. Pure logic on atomics (only `core`), tested on the
//! host (`tests/unit`) with threads.
//!
//! A [`Quorum`] counts the parts still out plus one *settle token*. The token goes to
//! exactly one caller: the first release whose successful parts satisfy the quorum rule
//! ([`Release::Quorum`]: it ends the request's data, then gives the token back with
//! [`Quorum::drop_token`]), or, when no release ever did, the last part back
//! ([`Release::Last`]: it has the whole request again). Whoever brings the count to zero
//! after the token was given back ends the request ([`Release::Done`], or `drop_token`
//! returning `true`).

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// A set of parts: bit `i` for part `i`.
pub(crate) type PartMask = u32;

/// Most parts one request can have.
pub(crate) const MAX_PARTS: usize = 16;

/// The settle token's weight in `outstanding`: above any count of parts.
const TOKEN: u32 = 1 << 16;

/// What a part's release leaves its caller to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Release {
    /// Other parts (or the settler) are still out: nothing.
    Out,
    /// This release made the quorum: the caller holds the settle token. It settles the
    /// request (its data is complete), then calls [`Quorum::drop_token`].
    Quorum,
    /// Every part is back and no quorum was ever made: the caller has the whole request
    /// (the token is spent) and ends, requeues or retries it.
    Last,
    /// Every part is back and the request was settled: the caller ends it.
    Done,
}

/// The count of one request's parts (see the module's documentation).
///
/// # Invariants
///
/// While parts are out (between [`Quorum::begin`] and the end), `outstanding` is the
/// number of parts given out and not released, plus [`TOKEN`] until the token is given
/// back or spent; `claimed` says whether the token has an owner; `released` and `ok`
/// only gain bits, each of a part given out, an `ok` bit before its `released` bit.
#[derive(Default)]
pub(crate) struct Quorum {
    outstanding: AtomicU32,
    given: PartMask,
    ok: AtomicU32,
    released: AtomicU32,
    claimed: AtomicBool,
}

impl Quorum {
    /// Starts a round: the parts in `given` go out. The caller owns the request
    /// exclusively (`&mut`), so nothing races this.
    ///
    /// # Panics
    ///
    /// Never: `given` is cut to [`MAX_PARTS`] parts.
    pub(crate) fn begin(&mut self, given: PartMask) {
        let given = given & ((1u32 << MAX_PARTS) - 1);
        self.given = given;
        *self.outstanding.get_mut() = given.count_ones() + TOKEN;
        *self.ok.get_mut() = 0;
        *self.released.get_mut() = 0;
        *self.claimed.get_mut() = false;
    }

    /// The parts given out this round.
    pub(crate) fn given(&self) -> PartMask {
        self.given
    }

    /// The parts released so far. Whatever a part wrote before its release is visible to
    /// the caller once it sees the part's bit here.
    #[cfg_attr(
        MODULE,
        expect(dead_code, reason = "late reads (a later step) look at it")
    )]
    pub(crate) fn released(&self) -> PartMask {
        self.released.load(Ordering::Acquire)
    }

    /// The parts released with success so far.
    pub(crate) fn ok(&self) -> PartMask {
        self.ok.load(Ordering::Acquire)
    }

    /// Part `part` is back, `ok` or not. `quorum` says whether a set of successful parts
    /// completes the request's data; it is asked with the successful parts after this
    /// release, until one caller got the token.
    ///
    /// The caller must own part `part` of this round and give it up here (once).
    pub(crate) fn release(
        &self,
        part: usize,
        ok: bool,
        quorum: impl Fn(PartMask) -> bool,
    ) -> Release {
        let bit = u32::try_from(part)
            .ok()
            .and_then(|p| 1u32.checked_shl(p))
            .unwrap_or(0)
            & self.given;
        let ok_now = if ok {
            self.ok.fetch_or(bit, Ordering::AcqRel) | bit
        } else {
            self.ok.load(Ordering::Acquire)
        };
        self.released.fetch_or(bit, Ordering::AcqRel);
        let settler = ok && !self.claimed.load(Ordering::Acquire) && quorum(ok_now) && self.claim();
        let before = self.outstanding.fetch_sub(1, Ordering::AcqRel);
        if settler {
            // The token is ours: the count cannot reach zero before we give it back.
            return Release::Quorum;
        }
        match before {
            // The last part, and the token is still out: spend it if nobody claimed it;
            // otherwise its owner is settling and ends the request after.
            b if b == TOKEN + 1 => {
                if self.claim() {
                    self.outstanding.fetch_sub(TOKEN, Ordering::AcqRel);
                    Release::Last
                } else {
                    Release::Out
                }
            }
            // The last part after the token came back.
            1 => Release::Done,
            _ => Release::Out,
        }
    }

    /// The settler gives the token back; `true` if every part is back, so the caller ends
    /// the request.
    pub(crate) fn drop_token(&self) -> bool {
        self.outstanding.fetch_sub(TOKEN, Ordering::AcqRel) == TOKEN
    }

    /// Takes the token if nobody has it.
    fn claim(&self) -> bool {
        self.claimed
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{sync::Arc, thread, vec::Vec};

    fn all(mask: PartMask) -> impl Fn(PartMask) -> bool {
        move |ok| ok & mask == mask
    }

    #[test]
    fn last_part_gets_the_request_without_quorum() {
        let mut q = Quorum::default();
        q.begin(0b111);
        assert_eq!(q.release(0, true, |_| false), Release::Out);
        assert_eq!(q.release(2, false, |_| false), Release::Out);
        assert_eq!(q.release(1, true, |_| false), Release::Last);
        assert_eq!(q.released(), 0b111);
        assert_eq!(q.ok(), 0b011);
    }

    #[test]
    fn quorum_at_the_last_part_settles_then_ends() {
        let mut q = Quorum::default();
        q.begin(0b11);
        assert_eq!(q.release(1, true, all(0b11)), Release::Out);
        assert_eq!(q.release(0, true, all(0b11)), Release::Quorum);
        assert!(q.drop_token());
    }

    #[test]
    fn early_quorum_then_stragglers() {
        let mut q = Quorum::default();
        q.begin(0b1111);
        let two = |ok: PartMask| ok.count_ones() >= 2;
        assert_eq!(q.release(3, true, two), Release::Out);
        assert_eq!(q.release(0, true, two), Release::Quorum);
        // Another success after the quorum does not make a second settler.
        assert_eq!(q.release(1, true, two), Release::Out);
        assert!(!q.drop_token());
        assert_eq!(q.release(2, false, two), Release::Done);
    }

    #[test]
    fn stragglers_before_the_settler_gives_back() {
        let mut q = Quorum::default();
        q.begin(0b111);
        let one = |ok: PartMask| ok != 0;
        assert_eq!(q.release(0, true, one), Release::Quorum);
        assert_eq!(q.release(1, true, one), Release::Out);
        // The last part with the token still held: the settler ends it.
        assert_eq!(q.release(2, true, one), Release::Out);
        assert!(q.drop_token());
    }

    #[test]
    fn failures_never_make_a_quorum() {
        let mut q = Quorum::default();
        q.begin(0b11);
        assert_eq!(q.release(0, false, |_| true), Release::Out);
        assert_eq!(q.release(1, false, |_| true), Release::Last);
        assert_eq!(q.ok(), 0);
    }

    #[test]
    fn a_new_round_starts_clean() {
        let mut q = Quorum::default();
        q.begin(0b1);
        assert_eq!(q.release(0, true, |_| false), Release::Last);
        q.begin(0b10);
        assert_eq!(q.given(), 0b10);
        assert_eq!(q.released(), 0);
        // A part outside the round counts nothing but its release.
        assert_eq!(q.release(1, true, |_| true), Release::Quorum);
        assert!(q.drop_token());
    }

    /// Parts released on many threads at once: exactly one caller gets the token, and
    /// exactly one ends the request, in every run.
    #[test]
    fn exactly_once_under_concurrent_releases() {
        for round in 0..2000u32 {
            let parts = 2 + (round % 9) as usize;
            let need = 1 + (round % parts as u32);
            let mut q = Quorum::default();
            q.begin((1 << parts) - 1);
            let q = Arc::new(q);
            let threads: Vec<_> = (0..parts)
                .map(|i| {
                    let q = q.clone();
                    let ok = (i as u32 + round) % 5 != 0;
                    thread::spawn(move || {
                        let r = q.release(i, ok, |m: PartMask| m.count_ones() >= need);
                        let ended_by_settler = r == Release::Quorum && q.drop_token();
                        (r, ended_by_settler)
                    })
                })
                .collect();
            let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            let quorums = results
                .iter()
                .filter(|(r, _)| *r == Release::Quorum)
                .count();
            let lasts = results.iter().filter(|(r, _)| *r == Release::Last).count();
            let dones = results.iter().filter(|(r, _)| *r == Release::Done).count();
            let settler_ends = results.iter().filter(|(_, e)| *e).count();
            assert_eq!(quorums + lasts, 1, "round {round}: one token owner");
            assert_eq!(lasts + dones + settler_ends, 1, "round {round}: one end");
            let oks = q.ok().count_ones();
            assert_eq!(
                quorums == 1,
                oks >= need,
                "round {round}: quorum iff enough ok"
            );
        }
    }
}
