// SPDX-License-Identifier: GPL-2.0

//! Where an erasure-coded disk keeps its data on its k + r memory servers ("legs"), and
//! what a read needs from them. Pure logic (only `core`), tested on the host
//! (`tests/unit`) like `config_parse.rs`.
//!
//! - A **block** is one page (4096 bytes). It is cut into k data **fragments** of
//!   `F = 4096 / k` bytes (fragment `j < k` is bytes `j * F .. (j + 1) * F`) and r parity
//!   fragments: `P` (fragment k, the XOR of the data) and `Q` (fragment k + 1, the RAID-6
//!   syndrome). With k = 1 the code is replication: P and Q of one data fragment are that
//!   fragment itself, so every fragment is a copy.
//! - The code is MDS: any k of a block's k + r fragments give the block back.
//! - A **group** is [`GROUP_BLOCKS`] consecutive blocks (32 KiB); the disk never lets a
//!   request span two groups. Fragment `j` of every block of group `g` lives on leg
//!   `(j + g) mod (k + r)`, at byte `b * F` of that leg's region (b: the block's number),
//!   so every leg holds one fragment of every block and each leg's region is `blocks * F`
//!   bytes. Writes send every fragment, so they load the legs evenly either way; the
//!   rotation is for reads, which fetch data fragments: without it the parity legs would
//!   serve none.

pub(crate) use crate::config_parse::Code;

/// Bytes of a block.
pub(crate) const BLOCK: u64 = 4096;
/// Blocks of a group (32 KiB): the placement rotates once a group.
pub(crate) const GROUP_BLOCKS: u64 = 8;
/// Most legs a disk has (8 + 2).
pub(crate) const MAX_LEGS: usize = 10;

/// A set of legs (or of fragments), bit `i` for leg (fragment) `i`.
pub(crate) type LegMask = u16;

impl Code {
    /// Bytes of one fragment of a 4096-byte block: 4096 / k.
    pub(crate) fn fragment_bytes(self) -> u64 {
        BLOCK / u64::from(self.k())
    }

    /// Blocks of a group whose fragments one leg's work request of at most `max_pages`
    /// pages (one at least) carries, packed one after the other in whole pages: the
    /// group's ([`GROUP_BLOCKS`]) or fewer.
    pub(crate) fn blocks_per_request(self, max_pages: u32) -> u64 {
        let per_page = BLOCK / self.fragment_bytes();
        (u64::from(max_pages.max(1)) * per_page).min(GROUP_BLOCKS)
    }

    /// Whether every fragment is a copy of the block (k = 1).
    pub(crate) fn is_replication(self) -> bool {
        self.k() == 1
    }
}

/// How a block is put back together from the fragments that arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decode {
    /// Every data fragment is there (or, for replication, fragment 0).
    Direct,
    /// Replication: fragment 0 is missing; this copy (a parity fragment) is the block.
    Copy(u8),
    /// Data fragment `missing` is the XOR of the others and P.
    Xor { missing: u8 },
    /// Data fragments `a` and `b` from P and Q (RAID-6 two-data recovery).
    PQ2Data { a: u8, b: u8 },
    /// Data fragment `a` from Q, P being missing too (RAID-6 data-and-P recovery).
    PQData { a: u8 },
    /// Fewer than k fragments: the block cannot be read.
    Impossible,
}

impl Decode {
    /// Whether the decode may run in a completion (softirq): copies and XOR only; the
    /// RAID-6 library's recoveries want task context.
    pub(crate) fn softirq_ok(self) -> bool {
        matches!(self, Decode::Direct | Decode::Copy(_) | Decode::Xor { .. })
    }
}

/// The layout of one disk: its code and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    code: Code,
    blocks: u64,
}

impl Layout {
    /// A disk of `size` bytes (a multiple of [`BLOCK`]; a partial block at the end is
    /// left out) with `code`.
    pub(crate) fn new(code: Code, size: u64) -> Self {
        Self {
            code,
            blocks: size / BLOCK,
        }
    }

    /// The code.
    pub(crate) fn code(&self) -> Code {
        self.code
    }

    /// Blocks of the disk.
    pub(crate) fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Groups of the disk, the last one maybe partial.
    pub(crate) fn groups(&self) -> u64 {
        self.blocks.div_ceil(GROUP_BLOCKS)
    }

    /// Bytes of each leg's region: a fragment of every block, rounded up to a page.
    pub(crate) fn leg_bytes(&self) -> u64 {
        let bytes = self.blocks * self.code.fragment_bytes();
        bytes.div_ceil(BLOCK) * BLOCK
    }

    /// The group of block `block`.
    pub(crate) fn group(block: u64) -> u64 {
        block / GROUP_BLOCKS
    }

    /// Where in every leg's region block `block`'s fragment is.
    pub(crate) fn remote_offset(&self, block: u64) -> u64 {
        block * self.code.fragment_bytes()
    }

    /// The leg that holds fragment `fragment` of the blocks of group `group`.
    pub(crate) fn leg_of(&self, group: u64, fragment: u8) -> u8 {
        let n = u64::from(self.code.legs());
        // `n` is never 0 (a code has a leg at least); `checked_rem` spares the I/O path a
        // panic it cannot reach.
        let at = group.checked_rem(n).unwrap_or(0);
        (u64::from(fragment) + at).checked_rem(n).unwrap_or(0) as u8
    }

    /// The fragment that leg `leg` holds of the blocks of group `group`.
    pub(crate) fn fragment_on(&self, group: u64, leg: u8) -> u8 {
        let n = u64::from(self.code.legs());
        let at = group.checked_rem(n).unwrap_or(0);
        (u64::from(leg) + n - at).checked_rem(n).unwrap_or(0) as u8
    }

    /// The fragments held by the legs of `legs`, in group `group`.
    pub(crate) fn fragments_of(&self, group: u64, legs: LegMask) -> LegMask {
        (0..self.code.legs())
            .filter(|&l| legs & (1 << l) != 0)
            .fold(0, |m, l| m | 1 << self.fragment_on(group, l))
    }

    /// Every leg of the disk, as a mask.
    pub(crate) fn all_legs(&self) -> LegMask {
        LegMask::MAX >> (LegMask::BITS - u32::from(self.code.legs()))
    }

    /// The legs that hold the fragments of `fragments`, in group `group`.
    pub(crate) fn legs_of(&self, group: u64, fragments: LegMask) -> LegMask {
        (0..self.code.legs())
            .filter(|&j| fragments & (1 << j) != 0)
            .fold(0, |m, j| m | 1 << self.leg_of(group, j))
    }

    /// The legs a read of group `group` asks, of those in `usable`: the data fragments'
    /// legs, a parity fragment's for each data leg that is not usable (P first, then Q),
    /// and up to `extra` more parity legs, whose fragments let the read end without its
    /// slowest leg. `None` if fewer than k legs are usable.
    pub(crate) fn read_plan(&self, group: u64, usable: LegMask, extra: u8) -> Option<LegMask> {
        let k = self.code.k();
        let have = self.fragments_of(group, usable);
        let data: LegMask = (1 << k) - 1;
        let mut want = have & data;
        let mut short = k - want.count_ones() as u8;
        let mut extra = extra;
        for p in k..self.code.legs() {
            let bit = 1 << p;
            if have & bit == 0 {
                continue;
            }
            if short > 0 {
                want |= bit;
                short -= 1;
            } else if extra > 0 {
                want |= bit;
                extra -= 1;
            }
        }
        (short == 0).then(|| self.legs_of(group, want))
    }

    /// How to put a block of group `group` together from what the legs of `arrived`
    /// sent.
    pub(crate) fn decode(&self, group: u64, arrived: LegMask) -> Decode {
        let k = self.code.k();
        let have = self.fragments_of(group, arrived);
        if self.code.is_replication() {
            return match (0..self.code.legs()).find(|&j| have & (1 << j) != 0) {
                Some(0) => Decode::Direct,
                Some(j) => Decode::Copy(j),
                None => Decode::Impossible,
            };
        }
        let data: LegMask = (1 << k) - 1;
        let missing = data & !have;
        let (p, q) = (have & (1 << k) != 0, have & (1 << (k + 1)) != 0);
        let mut gone = (0..k).filter(|&j| missing & (1 << j) != 0);
        match (missing.count_ones(), p, q) {
            (0, _, _) => Decode::Direct,
            (1, true, _) => Decode::Xor {
                missing: gone.next().unwrap_or(0),
            },
            (1, false, true) => Decode::PQData {
                a: gone.next().unwrap_or(0),
            },
            (2, true, true) => Decode::PQ2Data {
                a: gone.next().unwrap_or(0),
                b: gone.next().unwrap_or(0),
            },
            _ => Decode::Impossible,
        }
    }
}

/// The candidates of [`Layout::exclusions`]: sets of legs to leave out of a decode, in
/// the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exclusions {
    layout: Layout,
    group: u64,
    arrived: LegMask,
    /// How many legs the sets taken now leave out: none first, then one, up to r.
    size: u32,
    /// The next set of that size to look at: sets of one size go lowest first.
    from: u32,
}

impl Iterator for Exclusions {
    type Item = LegMask;

    fn next(&mut self) -> Option<LegMask> {
        let sets = 1u32 << self.layout.code.legs();
        while self.size <= u32::from(self.layout.code.r()) {
            while self.from < sets {
                let set = self.from;
                self.from += 1;
                if set.count_ones() != self.size {
                    continue;
                }
                match LegMask::try_from(set) {
                    Ok(out) if self.layout.worth_leaving_out(self.group, self.arrived, out) => {
                        return Some(out)
                    }
                    _ => {}
                }
            }
            self.size += 1;
            self.from = 0;
        }
        None
    }
}

impl Layout {
    /// The legs whose fragments `decode` reads, in group `group`.
    pub(crate) fn used(&self, group: u64, decode: Decode) -> LegMask {
        let k = self.code.k();
        let data: LegMask = (1 << k) - 1;
        let (p, q): (LegMask, LegMask) = (1 << k, 1 << (k + 1));
        let fragments = match decode {
            Decode::Impossible => 0,
            Decode::Direct if self.code.is_replication() => 1,
            Decode::Direct => data,
            Decode::Copy(j) => 1 << j,
            Decode::Xor { missing } => data & !(1 << missing) | p,
            Decode::PQData { a } => data & !(1 << a) | q,
            Decode::PQ2Data { a, b } => data & !(1 << a) & !(1 << b) | p | q,
        };
        self.legs_of(group, fragments)
    }

    /// What a block of group `group` whose fragments from the legs of `arrived` put
    /// together do not verify is tried with, in order: first no leg left out (0), then
    /// each leg, then each two legs, up to r, lowest first; a set where the others still
    /// decode, and whose every leg the decode without the set's other legs uses. The first
    /// that verifies is the block; the legs it leaves out are those whose fragments were
    /// wrong. A set with a leg that decode would not use is not tried: leaving that leg
    /// out puts the same fragments together again as the set without it.
    pub(crate) fn exclusions(&self, group: u64, arrived: LegMask) -> Exclusions {
        Exclusions {
            layout: *self,
            group,
            arrived,
            size: 0,
            from: 0,
        }
    }

    /// Whether leaving the legs of `out` out of a block of group `group` whose fragments
    /// arrived from `arrived` is one of its [`Layout::exclusions`].
    fn worth_leaving_out(&self, group: u64, arrived: LegMask, out: LegMask) -> bool {
        if out == 0 {
            return true;
        }
        if out & !arrived != 0 || self.decode(group, arrived & !out) == Decode::Impossible {
            return false;
        }
        (0..self.code.legs())
            .map(|l| 1 << l)
            .filter(|&leg| out & leg != 0)
            .all(|leg| self.used(group, self.decode(group, arrived & !(out & !leg))) & leg != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Code `k+r`, through its parser.
    fn code(k: u8, r: u8) -> Code {
        Code::parse(&std::format!("{k}+{r}")).expect("a code")
    }

    /// Every code the parser takes.
    fn codes() -> impl Iterator<Item = Code> {
        [1u8, 2, 4, 8]
            .into_iter()
            .flat_map(|k| (0u8..=2).map(move |r| code(k, r)))
    }

    #[test]
    fn fragments_are_raid6_aligned() {
        for c in codes() {
            assert_eq!(c.fragment_bytes() * u64::from(c.k()), BLOCK);
            assert_eq!(c.fragment_bytes() % 512, 0, "{c}");
            assert!(usize::from(c.legs()) <= MAX_LEGS);
        }
    }

    #[test]
    fn blocks_per_request_fit_their_pages() {
        for c in codes() {
            for pages in 0..=10u32 {
                let n = c.blocks_per_request(pages);
                assert!((1..=GROUP_BLOCKS).contains(&n), "{c} {pages}: {n}");
                let used = (n * c.fragment_bytes()).div_ceil(BLOCK);
                // As many as fit, all of the group where it fits (a queue takes one page
                // at least).
                assert!(
                    used <= u64::from(pages.max(1)),
                    "{c} {pages}: {n} blocks, {used} pages"
                );
                assert!(
                    n == GROUP_BLOCKS
                        || (n + 1) * c.fragment_bytes() > u64::from(pages.max(1)) * BLOCK
                );
            }
        }
        // A mirror's group on soft-iWARP's 6 SGEs: two work requests, of 6 and 2 blocks.
        assert_eq!(code(1, 1).blocks_per_request(6), 6);
        assert_eq!(code(4, 2).blocks_per_request(6), 8);
        assert_eq!(code(2, 1).blocks_per_request(3), 6);
    }

    #[test]
    fn leg_regions() {
        let l = Layout::new(code(4, 2), 1 << 30);
        assert_eq!(l.leg_bytes(), 1 << 28);
        assert_eq!(l.remote_offset(3), 3 * 1024);
        let small = Layout::new(code(8, 1), 3 * BLOCK);
        assert_eq!(
            small.leg_bytes(),
            BLOCK,
            "3 blocks of 512-byte fragments: one page"
        );
        assert_eq!(Layout::new(Code::PLAIN, 1 << 20).leg_bytes(), 1 << 20);
    }

    /// In every group each leg holds one fragment; over k + r groups each leg holds each
    /// fragment once; `fragment_on` undoes `leg_of`.
    #[test]
    fn placement_rotates_per_group() {
        for c in codes() {
            let l = Layout::new(c, 1 << 30);
            let n = c.legs();
            let all = l.all_legs();
            for g in 0..3 * u64::from(n) {
                let mut legs: LegMask = 0;
                for j in 0..n {
                    let leg = l.leg_of(g, j);
                    assert!(leg < n);
                    assert_eq!(l.fragment_on(g, leg), j, "{c} group {g}");
                    legs |= 1 << leg;
                }
                assert_eq!(legs, all, "{c} group {g}");
            }
            for leg in 0..n {
                let seen =
                    (0..u64::from(n)).fold(0 as LegMask, |m, g| m | 1 << l.fragment_on(g, leg));
                assert_eq!(seen, all, "{c} leg {leg}");
            }
            assert_eq!(Layout::group(GROUP_BLOCKS - 1), 0);
            assert_eq!(Layout::group(GROUP_BLOCKS), 1);
        }
    }

    /// The code is MDS: a block can be decoded exactly when k fragments arrived, and the
    /// decode names only fragments that are missing (what it rebuilds) and uses only
    /// parity that arrived.
    #[test]
    fn decode_every_mask_of_every_code() {
        for c in codes() {
            let l = Layout::new(c, 1 << 30);
            let n = c.legs();
            for g in 0..u64::from(n) {
                for arrived in 0..(1 as LegMask) << n {
                    let have = l.fragments_of(g, arrived);
                    let d = l.decode(g, arrived);
                    let enough = arrived.count_ones() >= u32::from(c.k());
                    assert_eq!(
                        d != Decode::Impossible,
                        enough,
                        "{c} group {g} arrived {arrived:b}: {d:?}"
                    );
                    let gone = |j: u8| j < c.k() && have & (1 << j) == 0;
                    let there = |j: u8| have & (1 << j) != 0;
                    match d {
                        Decode::Direct if c.is_replication() => assert!(there(0)),
                        Decode::Direct => assert!((0..c.k()).all(there)),
                        Decode::Copy(j) => {
                            assert!(c.is_replication() && j > 0 && there(j) && !there(0))
                        }
                        Decode::Xor { missing } => {
                            assert!(gone(missing) && there(c.k()));
                            assert!((0..c.k()).filter(|&j| j != missing).all(there));
                        }
                        Decode::PQData { a } => {
                            assert!(gone(a) && !there(c.k()) && there(c.k() + 1));
                        }
                        Decode::PQ2Data { a, b } => {
                            assert!(
                                a < b && gone(a) && gone(b) && there(c.k()) && there(c.k() + 1)
                            );
                        }
                        Decode::Impossible => {}
                    }
                    assert_eq!(
                        d.softirq_ok(),
                        !matches!(
                            d,
                            Decode::PQData { .. } | Decode::PQ2Data { .. } | Decode::Impossible
                        ),
                    );
                }
            }
        }
    }

    /// A read asks only usable legs, k of them plus at most `extra` more, exactly when k
    /// are usable; what it asks decodes, and with no leg missing and no extra it asks the
    /// data fragments' legs only.
    #[test]
    fn read_plans() {
        for c in codes() {
            let l = Layout::new(c, 1 << 30);
            let n = c.legs();
            let all = l.all_legs();
            for g in 0..u64::from(n) {
                assert_eq!(
                    l.read_plan(g, all, 0),
                    Some(l.legs_of(g, (1 << c.k()) - 1)),
                    "{c} group {g}"
                );
                for usable in 0..=all {
                    for extra in 0..=2u8 {
                        let plan = l.read_plan(g, usable, extra);
                        let k = u32::from(c.k());
                        if usable.count_ones() < k {
                            assert_eq!(plan, None);
                            continue;
                        }
                        let plan = plan.expect("k usable legs");
                        assert_eq!(plan & !usable, 0);
                        let spare = usable.count_ones() - k;
                        assert_eq!(
                            plan.count_ones(),
                            k + u32::from(extra).min(spare),
                            "{c} {usable:b} +{extra}"
                        );
                        assert_ne!(l.decode(g, plan), Decode::Impossible);
                    }
                }
            }
        }
    }

    /// Calls `f` with every code, its layout, each group of one turn of the rotation and
    /// every set of legs.
    fn every_mask(mut f: impl FnMut(Code, &Layout, u64, LegMask)) {
        for c in codes() {
            let l = Layout::new(c, 1 << 30);
            for g in 0..u64::from(c.legs()) {
                for arrived in 0..(1 as LegMask) << c.legs() {
                    f(c, &l, g, arrived);
                }
            }
        }
    }

    /// A decode uses only legs that arrived, and exactly the k fragments it needs (for
    /// replication, one copy).
    #[test]
    fn decodes_use_what_arrived() {
        every_mask(|c, l, g, arrived| {
            let d = l.decode(g, arrived);
            let used = l.used(g, d);
            assert_eq!(used & !arrived, 0, "{c} group {g} {arrived:b}: {d:?}");
            let want = match (d, c.is_replication()) {
                (Decode::Impossible, _) => 0,
                (_, true) => 1,
                _ => u32::from(c.k()),
            };
            assert_eq!(used.count_ones(), want, "{c} group {g} {arrived:b}: {d:?}");
        });
    }

    /// The candidates for a block that does not verify: none left out first, then sets of
    /// one leg, two ..., up to r, lowest first; without each the others decode, and each
    /// leg of a set is one the decode without the set's other legs uses. Whatever legs
    /// lie, up to r of them and with the others enough to decode, the first candidate
    /// whose decode uses none of them leaves out liars only: the legs named are the ones
    /// that lied.
    #[test]
    fn exclusion_candidates() {
        let bits = |m: LegMask| (0..16).map(|l| 1 << l).filter(move |&b| m & b != 0);
        every_mask(|c, l, g, arrived| {
            let cands: std::vec::Vec<LegMask> = l.exclusions(g, arrived).collect();
            assert_eq!(cands.first(), Some(&0), "{c} {arrived:b}");
            let mut last = (0, 0);
            for &e in cands.iter().skip(1) {
                assert!(e.count_ones() <= u32::from(c.r()), "{c} {arrived:b}: {e:b}");
                assert_eq!(e & !arrived, 0, "{c} {arrived:b}: {e:b} did not arrive");
                assert!(last < (e.count_ones(), e), "{c} {arrived:b}: not in order");
                last = (e.count_ones(), e);
                let without = l.decode(g, arrived & !e);
                assert_ne!(without, Decode::Impossible, "{c} {arrived:b} -{e:b}");
                assert_eq!(l.used(g, without) & e, 0);
                for leg in bits(e) {
                    let others = l.decode(g, arrived & !(e & !leg));
                    assert_ne!(l.used(g, others) & leg, 0, "{c} {arrived:b} -{e:b}");
                }
            }
            if l.decode(g, arrived) == Decode::Impossible {
                return;
            }
            for liars in 1..(1 as LegMask) << c.legs() {
                let d = l.decode(g, arrived & !liars);
                if liars & !arrived != 0
                    || liars.count_ones() > u32::from(c.r())
                    || d == Decode::Impossible
                {
                    continue;
                }
                let first = cands
                    .iter()
                    .find(|&&e| l.used(g, l.decode(g, arrived & !e)) & liars == 0);
                let e = first.unwrap_or_else(|| panic!("{c} {arrived:b}: no way around {liars:b}"));
                assert_eq!(e & !liars, 0, "{c} {arrived:b}: {e:b} names honest legs");
            }
        });
        // 4+2, group 0, every leg back: data legs 0..3 used; each left out in turn, then
        // two at a time (6 sets, decoded from P and Q), then each with P (leg 4: 4 sets,
        // decoded from Q). Not a data leg with Q, nor P with Q: without the data leg the
        // decode uses P, not Q; with every data leg it uses neither.
        let l = Layout::new(code(4, 2), 1 << 30);
        let cands: std::vec::Vec<LegMask> = l.exclusions(0, 0b111111).collect();
        assert_eq!(&cands[..5], [0, 0b1, 0b10, 0b100, 0b1000]);
        assert_eq!(cands.len(), 5 + 6 + 4);
        assert!(cands.contains(&0b110) && cands.contains(&0b010010));
        assert!(!cands.contains(&0b100001) && !cands.contains(&0b110000));
        assert_eq!(l.decode(0, 0b111101), Decode::Xor { missing: 1 });
        // Striping: nothing to rebuild from.
        let s = Layout::new(code(4, 0), 1 << 30);
        assert_eq!(s.exclusions(0, 0b1111).collect::<std::vec::Vec<_>>(), [0]);
    }

    /// Two worked examples of the rule, for the documentation.
    #[test]
    fn examples() {
        let l = Layout::new(code(4, 2), 1 << 30);
        // Group 1: fragment j on leg j + 1; P (4) on leg 5, Q (5) on leg 0.
        assert_eq!(l.leg_of(1, 0), 1);
        assert_eq!(l.leg_of(1, 4), 5);
        assert_eq!(l.leg_of(1, 5), 0);
        // Leg 2 gone in group 1: data fragment 1 is rebuilt from P by XOR.
        assert_eq!(l.read_plan(1, 0b111011, 0), Some(0b111010));
        assert_eq!(l.decode(1, 0b111010), Decode::Xor { missing: 1 });
        // Legs 2 and 5 (fragment 1 and P) gone: fragment 1 from Q.
        assert_eq!(l.decode(1, 0b011011), Decode::PQData { a: 1 });
    }
}
