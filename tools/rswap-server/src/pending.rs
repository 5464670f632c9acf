// SPDX-License-Identifier: GPL-2.0

//! Connect requests that have not reached ESTABLISHED, counted per source address
//! (`--max-pending-per-source`), so that a flood of half-open connections from one
//! host cannot exhaust the server's state. No RDMA: the server starts an entry for
//! every connect request it goes on with and ends it on every path that stops the
//! connection being pending.

use std::collections::HashMap;
use std::hash::Hash;

/// A source that already has the most pending connects allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AtCap {
    /// How many connects of the source are pending (the cap).
    pub(crate) pending: usize,
}

/// Pending connects by connection key `K` (one per rdma_cm id), each with its
/// source `S`.
#[derive(Debug)]
pub(crate) struct Pending<K, S> {
    cap: usize,
    by_key: HashMap<K, S>,
    by_source: HashMap<S, usize>,
}

impl<K: Hash + Eq, S: Hash + Eq + Clone> Pending<K, S> {
    /// At most `cap` pending connects per source.
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            by_key: HashMap::new(),
            by_source: HashMap::new(),
        }
    }

    /// Counts connect `key` from `source` as pending, unless `source` already has
    /// `cap` of them: then nothing is counted. A key already pending is ended first
    /// (keys are reused once their connection is gone).
    pub(crate) fn start(&mut self, key: K, source: S) -> Result<(), AtCap> {
        self.end(&key);
        let pending = self.count(&source);
        if pending >= self.cap {
            return Err(AtCap { pending });
        }
        *self.by_source.entry(source.clone()).or_insert(0) += 1;
        self.by_key.insert(key, source);
        Ok(())
    }

    /// Connect `key` is no longer pending: established, rejected, failed or closed.
    /// Returns whether it was pending; ending a key that is not is a no-op, so every
    /// path that drops a connection may call it.
    pub(crate) fn end(&mut self, key: &K) -> bool {
        let Some(source) = self.by_key.remove(key) else {
            return false;
        };
        if let Some(n) = self.by_source.get_mut(&source) {
            *n -= 1;
            if *n == 0 {
                self.by_source.remove(&source);
            }
        }
        true
    }

    /// Pending connects from `source`.
    pub(crate) fn count(&self, source: &S) -> usize {
        self.by_source.get(source).copied().unwrap_or(0)
    }

    /// Whether `key` is pending.
    #[cfg(test)]
    fn contains(&self, key: &K) -> bool {
        self.by_key.contains_key(key)
    }

    /// All pending connects.
    #[cfg(test)]
    fn len(&self) -> usize {
        debug_assert_eq!(self.by_key.len(), self.by_source.values().sum::<usize>());
        self.by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type P = Pending<u32, &'static str>;

    #[test]
    fn counts_per_source() {
        let mut p = P::new(4);
        assert_eq!(p.count(&"a"), 0);
        p.start(1, "a").unwrap();
        p.start(2, "a").unwrap();
        p.start(3, "b").unwrap();
        assert_eq!((p.count(&"a"), p.count(&"b"), p.count(&"c")), (2, 1, 0));
        assert!(p.contains(&1) && p.contains(&3) && !p.contains(&4));
        assert_eq!(p.len(), 3);
    }

    /// Every way a pending connect ends (established, rejected, disconnected, timed
    /// out as an rdma_cm error event, closed at shutdown) is one `end` of its key.
    #[test]
    fn every_ending_counts_down() {
        let mut p = P::new(8);
        for (key, _why) in [
            (1, "established"),
            (2, "rejected"),
            (3, "disconnected"),
            (4, "timeout (UNREACHABLE / CONNECT_ERROR)"),
            (5, "shutdown"),
        ] {
            p.start(key, "a").unwrap();
        }
        assert_eq!(p.count(&"a"), 5);
        for key in 1..=5 {
            assert!(p.end(&key));
            assert_eq!(p.count(&"a"), 5 - key as usize);
        }
        assert_eq!(p.len(), 0);
        // Nothing is left behind for a source with nothing pending.
        assert!(p.by_source.is_empty());
    }

    #[test]
    fn end_is_idempotent() {
        let mut p = P::new(2);
        p.start(1, "a").unwrap();
        p.start(2, "a").unwrap();
        assert!(p.end(&1));
        // A second end (e.g. ESTABLISHED, then the queue closed) changes nothing.
        assert!(!p.end(&1));
        assert!(!p.end(&99));
        assert_eq!(p.count(&"a"), 1);
    }

    #[test]
    fn cap_enforced_per_source() {
        let mut p = P::new(2);
        p.start(1, "a").unwrap();
        p.start(2, "a").unwrap();
        assert_eq!(p.start(3, "a"), Err(AtCap { pending: 2 }));
        assert!(!p.contains(&3));
        assert_eq!(p.count(&"a"), 2);
        // Other sources are unaffected.
        p.start(4, "b").unwrap();
        p.start(5, "b").unwrap();
        assert_eq!(p.start(6, "b"), Err(AtCap { pending: 2 }));
        // A refused key ended later (its id is destroyed) does not count down.
        assert!(!p.end(&3));
        assert_eq!(p.count(&"a"), 2);
        // Once one ends, the source may start another.
        assert!(p.end(&1));
        p.start(3, "a").unwrap();
        assert_eq!((p.count(&"a"), p.count(&"b")), (2, 2));
    }

    #[test]
    fn reused_key_is_not_counted_twice() {
        let mut p = P::new(2);
        p.start(1, "a").unwrap();
        // The same key again (an id address reused) replaces the entry, even for
        // another source.
        p.start(1, "a").unwrap();
        assert_eq!(p.count(&"a"), 1);
        p.start(1, "b").unwrap();
        assert_eq!((p.count(&"a"), p.count(&"b")), (0, 1));
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn cap_zero_refuses_all() {
        let mut p = P::new(0);
        assert_eq!(p.start(1, "a"), Err(AtCap { pending: 0 }));
        assert_eq!(p.len(), 0);
        assert!(p.by_source.is_empty());
    }
}
