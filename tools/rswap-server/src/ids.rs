// SPDX-License-Identifier: GPL-2.0

//! Region ids: random, non-zero, unique among the regions a server holds.
//!
//! A client decides whether its data survived from the region id (and length)
//! alone, so an id must never name different memory, not even across server
//! processes or a reboot that lost the memory: 64 random bits from the kernel make
//! a repeat practically impossible, and a draw that collides with a region the
//! server holds is drawn again.

use std::fs::File;
use std::io::Read as _;

/// A random u64 from the kernel (`/dev/urandom`), or from std's randomly keyed
/// hasher if that cannot be read.
pub(crate) fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    let urandom = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    match urandom {
        Ok(()) => u64::from_le_bytes(b),
        Err(_) => {
            use std::hash::{BuildHasher as _, Hasher as _};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            h.write_u128(now.as_nanos());
            h.write_u32(std::process::id());
            h.finish()
        }
    }
}

/// A new region id: random, never 0, never one `taken` says is in use. After a
/// few draws that all collide (a broken random source), counts up from the last
/// draw instead, which ends because only finitely many ids are taken.
pub(crate) fn pick_region_id(mut draw: impl FnMut() -> u64, taken: impl Fn(u64) -> bool) -> u64 {
    let mut id = 0;
    for _ in 0..16 {
        id = draw();
        if id != 0 && !taken(id) {
            return id;
        }
    }
    loop {
        id = id.wrapping_add(1);
        if id != 0 && !taken(id) {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn region_ids_are_unique_and_non_zero() {
        // Draws of 0 and of taken ids are skipped.
        let mut seq = [0u64, 5, 5, 0, 7].into_iter();
        let taken: HashSet<u64> = [5].into();
        assert_eq!(
            pick_region_id(|| seq.next().unwrap_or(0), |id| taken.contains(&id)),
            7
        );
        // A stuck random source still yields a free id.
        let taken: HashSet<u64> = [9, 10, 11].into();
        assert_eq!(pick_region_id(|| 9, |id| taken.contains(&id)), 12);
        assert_eq!(pick_region_id(|| 0, |_| false), 1);
        assert_eq!(pick_region_id(|| u64::MAX, |id| id == u64::MAX), 1);
        // Many ids from the real source: all distinct within one "process".
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            let id = pick_region_id(random_u64, |id| seen.contains(&id));
            assert_ne!(id, 0);
            assert!(seen.insert(id));
        }
        // Two sources ("two server processes") do not agree.
        assert_ne!(random_u64(), random_u64());
    }
}
