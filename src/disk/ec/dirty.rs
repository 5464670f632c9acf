// SPDX-License-Identifier: GPL-2.0

//! A leg's dirty map: a bit per group of the disk, set when a write of that group did not
//! reach the leg (it was reconnecting, or the group was dirty there already), cleared when
//! the group's fragment on the leg is rebuilt. md's write-intent bitmap, kept only on the
//! client: the client is the one that knows which writes a leg missed.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

/// Groups a word of the map covers.
const WORD_BITS: u64 = u64::BITS as u64;

/// The groups of one leg that missed writes, a bit each. Every access is sequentially
/// consistent: the data path reads a bit and then the group a resync is rebuilding, in
/// that order, and the resync writes them in the other (see [`super::resync`]).
pub(super) struct DirtyMap {
    words: KVVec<AtomicU64>,
    groups: u64,
}

impl DirtyMap {
    /// A clean map of `groups` groups. Sleeps.
    pub(super) fn new(groups: u64) -> Result<Self> {
        let n = usize::try_from(groups.div_ceil(WORD_BITS)).map_err(|_| ENOMEM)?;
        let mut words = KVVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            words.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        Ok(Self { words, groups })
    }

    /// Where group `group`'s bit is: its word and its mask; `None` past the map.
    fn at(&self, group: u64) -> Option<(&AtomicU64, u64)> {
        let word = self.words.get(usize::try_from(group / WORD_BITS).ok()?)?;
        Some((word, 1 << (group % WORD_BITS)))
    }

    /// Marks group `group` dirty; whether it was clean. Any context.
    pub(super) fn mark(&self, group: u64) -> bool {
        self.at(group)
            .is_some_and(|(w, bit)| w.fetch_or(bit, Ordering::SeqCst) & bit == 0)
    }

    /// Marks every group dirty: the leg's server was replaced by an empty one.
    pub(super) fn mark_all(&self) {
        for (i, w) in self.words.iter().enumerate() {
            let below = self.groups.saturating_sub(i as u64 * WORD_BITS);
            let bits = match below {
                b if b >= WORD_BITS => u64::MAX,
                b => (1u64 << b) - 1,
            };
            w.fetch_or(bits, Ordering::SeqCst);
        }
    }

    /// Groups in the map.
    pub(super) fn groups(&self) -> u64 {
        self.groups
    }

    /// Whether group `group` is dirty. Any context.
    pub(super) fn is_dirty(&self, group: u64) -> bool {
        self.at(group)
            .is_some_and(|(w, bit)| w.load(Ordering::SeqCst) & bit != 0)
    }

    /// Marks group `group` clean.
    pub(super) fn clear(&self, group: u64) {
        if let Some((w, bit)) = self.at(group) {
            w.fetch_and(!bit, Ordering::SeqCst);
        }
    }

    /// The first dirty group at or after `from`.
    pub(super) fn next(&self, from: u64) -> Option<u64> {
        let first = usize::try_from(from / WORD_BITS).ok()?;
        let skip_below = from % WORD_BITS;
        self.words
            .iter()
            .enumerate()
            .skip(first)
            .find_map(|(i, w)| {
                let mut bits = w.load(Ordering::SeqCst);
                if i == first {
                    bits &= u64::MAX << skip_below;
                }
                (bits != 0).then(|| i as u64 * WORD_BITS + u64::from(bits.trailing_zeros()))
            })
    }

    /// Groups dirty now.
    pub(super) fn count(&self) -> u64 {
        self.words
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum()
    }
}
