// SPDX-License-Identifier: GPL-2.0

//! Challenges the server has issued and not seen answered: what each hello asked
//! for, under the random server nonce sent back to it.
//!
//! A challenge is used up only by a proof that passes every check (its hello's
//! fields and source address, and the MAC): a proof is checked against it first
//! ([`Challenges::lookup`]) and only then is it taken ([`Challenges::take`]), so that
//! a proof that fails, from whoever saw the nonce go by in clear, cannot spend the
//! owner's challenge. A challenge lives at most [`LIFETIME`]. The table is bounded, so that a flood of hellos costs
//! a fixed amount of memory, and its evictions are charged to the address that
//! floods (client ids are public and a hello needs no secret, so the client id alone
//! cannot be what is charged):
//!
//! - at most [`MAX_PER_SOURCE_ID`] challenges per client id *and source address*;
//!   one more evicts the oldest challenge of that same client id from that same
//!   address, never one of the id from another address;
//! - at most [`MAX_TOTAL`] in all; one more evicts the oldest challenge of the source
//!   address that holds the most outstanding challenges (of those tied, the one whose
//!   oldest is oldest). If the address asking holds as many as the most, its own
//!   oldest goes. A challenge of an address that holds fewer than another is never
//!   evicted.
//!
//! What this guarantees: hellos from one address, whatever client ids they name,
//! evict nothing but their own address's challenges while the table is not full, and
//! once it is full only their own as long as their address holds at least as many as
//! any other. A flood from one address therefore cannot evict the challenge of a
//! client at another address between its hello and its proof: the client's proof is
//! admitted. What it does not guarantee: hellos from the client's own address
//! (another user of the same host, hosts behind the same NAT) share its quota and can
//! still crowd its challenges out; and hellos spread over many addresses (about
//! `MAX_TOTAL / k`, each holding no more than the `k` of the client's address) can
//! make the client's address the fullest. A hello only gets a challenge for a listed
//! client id from an address its allow-list entry admits, so listing every client
//! with its hosts' addresses leaves only those hosts able to get challenges at all.
//! No RDMA: the server feeds the table the requests, their source addresses and the
//! time.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::wire::NONCE_LEN;

/// How long a challenge may be answered.
pub(crate) const LIFETIME: Duration = Duration::from_secs(10);
/// Most challenges outstanding in all.
pub(crate) const MAX_TOTAL: usize = 4096;
/// Most challenges outstanding for one client id from one source address.
pub(crate) const MAX_PER_SOURCE_ID: usize = 64;

/// A source address (`None`: the connection's address is not IP; all such
/// connections count as one source).
type Source = Option<IpAddr>;

/// What a hello asked for, kept until its proof comes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// The hello's client id.
    pub(crate) client_id: u64,
    /// The hello's queue index.
    pub(crate) queue_index: u16,
    /// The hello's queue count.
    pub(crate) queue_count: u16,
    /// The hello's requested size.
    pub(crate) requested_size: u64,
    /// The hello's client nonce.
    pub(crate) client_nonce: [u8; NONCE_LEN],
    /// The hello's instance.
    pub(crate) instance: u64,
    /// Where the hello came from (`None`: not an IP address).
    pub(crate) peer: Option<IpAddr>,
    /// When the challenge was issued.
    pub(crate) issued: Instant,
}

/// What looking up a proof's server nonce found. An expired challenge is gone after
/// it; a valid one is gone after [`Challenges::take`] only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Taken {
    /// A challenge within its lifetime.
    Valid(Challenge),
    /// A challenge older than its lifetime.
    Expired,
    /// No such challenge: never issued, already used, or evicted.
    Unknown,
}

/// The nonce is already outstanding (a 2^-64 coincidence): draw another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Collision;

/// Issue orders (a counter that only grows) to server nonces, oldest first.
type Queue = BTreeMap<u64, u64>;

/// The rank of a source for eviction on the total cap: the most outstanding
/// challenges first, then the one whose oldest challenge is the oldest. The greatest
/// rank is evicted from.
type Rank = (usize, Reverse<u64>, Source);

/// The outstanding challenges.
#[derive(Debug)]
pub(crate) struct Challenges {
    lifetime: Duration,
    max_total: usize,
    max_per_source_id: usize,
    /// Issue order: a counter that only grows.
    next_seq: u64,
    /// By server nonce: the issue order and the challenge.
    by_nonce: HashMap<u64, (u64, Challenge)>,
    /// All nonces in issue order (oldest first), for expiry.
    order: Queue,
    /// Per client id and source address, its nonces in issue order.
    per_source_id: HashMap<(u64, Source), Queue>,
    /// Per source address, its nonces in issue order.
    per_source: HashMap<Source, Queue>,
    /// Every source in `per_source` by its rank (the last is the fullest).
    ranks: BTreeSet<Rank>,
}

impl Default for Challenges {
    fn default() -> Self {
        Self::new(LIFETIME, MAX_TOTAL, MAX_PER_SOURCE_ID)
    }
}

/// The rank of `source` whose nonces are `q` (`None`: it has none).
fn rank(source: Source, q: &Queue) -> Option<Rank> {
    q.keys()
        .next()
        .map(|&oldest| (q.len(), Reverse(oldest), source))
}

impl Challenges {
    /// A table with these limits (at least one challenge each).
    pub(crate) fn new(lifetime: Duration, max_total: usize, max_per_source_id: usize) -> Self {
        Self {
            lifetime,
            max_total: max_total.max(1),
            max_per_source_id: max_per_source_id.max(1),
            next_seq: 0,
            by_nonce: HashMap::new(),
            order: BTreeMap::new(),
            per_source_id: HashMap::new(),
            per_source: HashMap::new(),
            ranks: BTreeSet::new(),
        }
    }

    /// Remembers challenge `c` under `nonce`, after dropping the expired ones and
    /// making room: if `c`'s client id and source address are at their cap, the
    /// oldest of that id and address goes; if the table is full, the oldest of the
    /// source address holding the most (`c`'s own if it holds as many as the most).
    /// Returns how many were evicted to make room.
    pub(crate) fn issue(&mut self, nonce: u64, c: Challenge) -> Result<usize, Collision> {
        self.expire(c.issued);
        if self.by_nonce.contains_key(&nonce) {
            return Err(Collision);
        }
        let key = (c.client_id, c.peer);
        let mut evicted = 0;
        while let Some(oldest) = self
            .per_source_id
            .get(&key)
            .filter(|q| q.len() >= self.max_per_source_id)
            .and_then(|q| q.values().next().copied())
        {
            if self.remove(oldest).is_none() {
                break;
            }
            evicted += 1;
        }
        while self.by_nonce.len() >= self.max_total {
            let own = self.per_source.get(&c.peer).map_or(0, Queue::len);
            let from = match self.ranks.last() {
                Some(&(most, _, source)) if most > own => source,
                _ => c.peer,
            };
            let oldest = self
                .per_source
                .get(&from)
                .and_then(|q| q.values().next().copied());
            match oldest {
                Some(n) if self.remove(n).is_some() => evicted += 1,
                _ => break,
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, nonce);
        self.per_source_id
            .entry(key)
            .or_default()
            .insert(seq, nonce);
        let q = self.per_source.entry(c.peer).or_default();
        if let Some(r) = rank(c.peer, q) {
            self.ranks.remove(&r);
        }
        q.insert(seq, nonce);
        if let Some(r) = rank(c.peer, q) {
            self.ranks.insert(r);
        }
        self.by_nonce.insert(nonce, (seq, c));
        Ok(evicted)
    }

    /// Looks up the challenge of `nonce` at `now` without using it up (an expired one
    /// is dropped): a proof is checked against what it returns, and only a proof that
    /// passes takes it ([`Self::take`]).
    pub(crate) fn lookup(&mut self, nonce: u64, now: Instant) -> Taken {
        let expired = match self.by_nonce.get(&nonce) {
            None => return Taken::Unknown,
            Some((_, c)) => self.expired(c, now),
        };
        if expired {
            self.remove(nonce);
            return Taken::Expired;
        }
        self.by_nonce
            .get(&nonce)
            .map_or(Taken::Unknown, |(_, c)| Taken::Valid(c.clone()))
    }

    /// Takes the challenge of `nonce` out of the table (single use) and says whether it
    /// is still valid at `now`.
    pub(crate) fn take(&mut self, nonce: u64, now: Instant) -> Taken {
        match self.remove(nonce) {
            None => Taken::Unknown,
            Some(c) if self.expired(&c, now) => Taken::Expired,
            Some(c) => Taken::Valid(c),
        }
    }

    /// Drops every challenge that is past its lifetime at `now`; returns how many.
    pub(crate) fn expire(&mut self, now: Instant) -> usize {
        let mut n = 0;
        while let Some(&nonce) = self.order.values().next() {
            let old = self
                .by_nonce
                .get(&nonce)
                .is_some_and(|(_, c)| self.expired(c, now));
            if !old {
                break;
            }
            self.remove(nonce);
            n += 1;
        }
        n
    }

    /// Challenges outstanding.
    pub(crate) fn len(&self) -> usize {
        self.by_nonce.len()
    }

    /// Challenges outstanding for `client_id` from `source`.
    #[cfg(test)]
    fn count(&self, client_id: u64, source: Source) -> usize {
        self.per_source_id
            .get(&(client_id, source))
            .map_or(0, Queue::len)
    }

    /// Challenges outstanding from `source`.
    #[cfg(test)]
    fn count_source(&self, source: Source) -> usize {
        self.per_source.get(&source).map_or(0, Queue::len)
    }

    /// Whether `c` is older than the lifetime at `now`.
    fn expired(&self, c: &Challenge, now: Instant) -> bool {
        now.saturating_duration_since(c.issued) > self.lifetime
    }

    /// Removes the challenge of `nonce` from every index.
    fn remove(&mut self, nonce: u64) -> Option<Challenge> {
        let (seq, c) = self.by_nonce.remove(&nonce)?;
        self.order.remove(&seq);
        let key = (c.client_id, c.peer);
        if let Some(q) = self.per_source_id.get_mut(&key) {
            q.remove(&seq);
            if q.is_empty() {
                self.per_source_id.remove(&key);
            }
        }
        if let Some(q) = self.per_source.get_mut(&c.peer) {
            if let Some(r) = rank(c.peer, q) {
                self.ranks.remove(&r);
            }
            q.remove(&seq);
            match rank(c.peer, q) {
                Some(r) => {
                    self.ranks.insert(r);
                }
                None => {
                    self.per_source.remove(&c.peer);
                }
            }
        }
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The source of [`ch`]'s challenges.
    const A: &str = "192.0.2.1";

    fn ip(s: &str) -> Source {
        Some(s.parse().expect("ip"))
    }

    fn ch(client_id: u64, issued: Instant) -> Challenge {
        ch_from(client_id, ip(A), issued)
    }

    fn ch_from(client_id: u64, peer: Source, issued: Instant) -> Challenge {
        Challenge {
            client_id,
            queue_index: 0,
            queue_count: 1,
            requested_size: 4096,
            client_nonce: [7; NONCE_LEN],
            instance: 1,
            peer,
            issued,
        }
    }

    /// splitmix64: the test's "random" client ids and nonces, reproducible.
    fn mix(n: u64) -> u64 {
        let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Every index agrees with `by_nonce`, and the caps hold.
    fn consistent(t: &Challenges) {
        let n = t.by_nonce.len();
        assert!(n <= t.max_total);
        assert_eq!(n, t.order.len());
        assert_eq!(n, t.per_source_id.values().map(Queue::len).sum::<usize>());
        assert_eq!(n, t.per_source.values().map(Queue::len).sum::<usize>());
        assert!(t.per_source_id.values().all(|q| !q.is_empty()));
        assert!(t
            .per_source_id
            .values()
            .all(|q| q.len() <= t.max_per_source_id));
        assert!(t.per_source.values().all(|q| !q.is_empty()));
        assert_eq!(t.ranks.len(), t.per_source.len());
        for (source, q) in &t.per_source {
            assert!(t.ranks.contains(&rank(*source, q).expect("not empty")));
        }
        for (seq, (s, c)) in t.by_nonce.values().map(|(s, c)| (*s, (s, c))) {
            assert!(t.order.contains_key(&seq));
            assert!(t.per_source_id[&(c.client_id, c.peer)].contains_key(s));
            assert!(t.per_source[&c.peer].contains_key(s));
        }
    }

    #[test]
    fn single_use() {
        let t0 = Instant::now();
        let mut t = Challenges::default();
        assert_eq!(t.issue(11, ch(1, t0)), Ok(0));
        assert_eq!(t.issue(11, ch(2, t0)), Err(Collision));
        assert_eq!(t.len(), 1);
        assert_eq!(t.take(11, t0), Taken::Valid(ch(1, t0)));
        // Used up: a replay finds nothing.
        assert_eq!(t.take(11, t0), Taken::Unknown);
        assert_eq!(t.take(12, t0), Taken::Unknown);
        assert_eq!(t.len(), 0);
        consistent(&t);
    }

    #[test]
    fn lookup_leaves_the_challenge_to_the_proof_that_passes() {
        let t0 = Instant::now();
        let mut t = Challenges::default();
        t.issue(11, ch(1, t0)).expect("issue");
        // Looked up any number of times (proofs that fail their checks): still there.
        for _ in 0..3 {
            assert_eq!(t.lookup(11, t0), Taken::Valid(ch(1, t0)));
        }
        assert_eq!(t.lookup(12, t0), Taken::Unknown);
        assert_eq!(t.len(), 1);
        consistent(&t);
        // The proof that passes takes it.
        assert_eq!(t.take(11, t0), Taken::Valid(ch(1, t0)));
        assert_eq!(t.lookup(11, t0), Taken::Unknown);
        // An expired one is dropped by the lookup.
        t.issue(13, ch(1, t0)).expect("issue");
        let late = t0 + LIFETIME + Duration::from_millis(1);
        assert_eq!(t.lookup(13, late), Taken::Expired);
        assert_eq!(t.lookup(13, t0), Taken::Unknown);
        assert_eq!(t.len(), 0);
        consistent(&t);
    }

    #[test]
    fn expiry() {
        let t0 = Instant::now();
        let mut t = Challenges::default();
        t.issue(1, ch(1, t0)).expect("issue");
        t.issue(2, ch(1, t0 + Duration::from_secs(5)))
            .expect("issue");
        // Exactly the lifetime old is still valid; a moment later it is not.
        assert_eq!(t.take(1, t0 + LIFETIME), Taken::Valid(ch(1, t0)));
        assert_eq!(
            t.take(2, t0 + Duration::from_secs(15) + Duration::from_millis(1)),
            Taken::Expired
        );
        // An expired challenge is used up too.
        assert_eq!(t.take(2, t0), Taken::Unknown);
        // expire() drops only what is past its lifetime, oldest first, whatever the
        // source.
        for i in 0..10u64 {
            let peer = if i % 2 == 0 { ip(A) } else { ip("192.0.2.2") };
            t.issue(100 + i, ch_from(i % 3, peer, t0 + Duration::from_secs(i)))
                .expect("issue");
        }
        assert_eq!(t.expire(t0 + Duration::from_secs(12)), 2);
        assert_eq!(t.len(), 8);
        assert_eq!(t.take(101, t0), Taken::Unknown);
        assert!(matches!(t.take(102, t0), Taken::Valid(_)));
        consistent(&t);
        // Issuing drops the expired ones as well.
        t.issue(999, ch(5, t0 + Duration::from_secs(60)))
            .expect("issue");
        assert_eq!(t.len(), 1);
        consistent(&t);
    }

    #[test]
    fn per_source_id_cap_evicts_that_ids_oldest_from_that_source() {
        let t0 = Instant::now();
        let b = ip("192.0.2.2");
        let mut t = Challenges::default();
        // Older challenges of another id from A, and of the same id from B.
        t.issue(5000, ch(2, t0)).expect("issue");
        t.issue(5001, ch_from(1, b, t0)).expect("issue");
        for n in 0..MAX_PER_SOURCE_ID as u64 {
            assert_eq!(t.issue(n, ch(1, t0)), Ok(0));
        }
        assert_eq!(t.count(1, ip(A)), MAX_PER_SOURCE_ID);
        // One more for client 1 from A evicts its oldest from A (nonce 0), not client
        // 2's older one from A, nor client 1's older one from B.
        assert_eq!(t.issue(64, ch(1, t0)), Ok(1));
        assert_eq!(t.count(1, ip(A)), MAX_PER_SOURCE_ID);
        assert_eq!(t.take(0, t0), Taken::Unknown);
        // The eviction order within (1, A) is the issue order.
        for n in 1..=10u64 {
            assert!(t.by_nonce.contains_key(&n));
            assert_eq!(t.issue(10_000 + n, ch(1, t0)), Ok(1));
            assert_eq!(t.take(n, t0), Taken::Unknown, "nonce {n} evicted in turn");
        }
        assert!(matches!(t.take(11, t0), Taken::Valid(_)));
        // Taking one made room: the next issue evicts nothing.
        assert_eq!(t.issue(20_000, ch(1, t0)), Ok(0));
        assert_eq!(t.issue(20_001, ch(1, t0)), Ok(1));
        assert_eq!(t.take(12, t0), Taken::Unknown);
        assert!(matches!(t.take(5000, t0), Taken::Valid(_)));
        assert!(matches!(t.take(5001, t0), Taken::Valid(_)));
        consistent(&t);
        // A flood of one id from one source never holds more than the cap.
        for n in 100_000..110_000u64 {
            t.issue(n, ch(1, t0)).expect("issue");
        }
        assert_eq!(t.count(1, ip(A)), MAX_PER_SOURCE_ID);
        assert_eq!(t.len(), MAX_PER_SOURCE_ID);
        // The newest are the ones kept.
        assert!(matches!(t.take(109_999, t0), Taken::Valid(_)));
        assert_eq!(t.take(109_000, t0), Taken::Unknown);
        consistent(&t);
    }

    /// The owner's hello from A, then a flood from B: the owner's challenge stays.
    fn owner_survives(flood_id: impl Fn(u64) -> u64) {
        let t0 = Instant::now();
        let (a, b) = (ip("198.51.100.1"), ip("198.51.100.2"));
        let mut t = Challenges::default();
        let owner = ch_from(1, a, t0);
        assert_eq!(t.issue(7, owner.clone()), Ok(0));
        let mut evicted = 0;
        for i in 0..10_000u64 {
            let at = t0 + Duration::from_micros(i);
            evicted += t
                .issue(mix(i) | 1 << 63, ch_from(flood_id(i), b, at))
                .expect("issue");
            assert!(t.len() <= MAX_TOTAL);
        }
        consistent(&t);
        assert!(evicted > 0, "the flood filled a cap");
        assert_eq!(t.count_source(a), 1);
        assert!(t.count_source(b) < MAX_TOTAL);
        assert!(t
            .per_source_id
            .values()
            .all(|q| q.len() <= MAX_PER_SOURCE_ID));
        // The owner's proof finds its challenge.
        assert_eq!(t.take(7, t0 + Duration::from_secs(1)), Taken::Valid(owner));
    }

    #[test]
    fn flood_of_the_owners_id_from_another_source_keeps_the_owners_challenge() {
        owner_survives(|_| 1);
    }

    #[test]
    fn flood_of_random_ids_from_another_source_keeps_the_owners_challenge() {
        owner_survives(mix);
    }

    #[test]
    fn total_cap_evicts_the_oldest_of_one_source() {
        let t0 = Instant::now();
        let mut t = Challenges::default();
        // 4096 challenges of 4096 client ids from one source, issued over time
        // (within the lifetime): the oldest of that source is the oldest of all.
        for n in 0..MAX_TOTAL as u64 {
            let at = t0 + Duration::from_millis(n);
            assert_eq!(t.issue(n, ch(n, at)), Ok(0));
        }
        assert_eq!(t.len(), MAX_TOTAL);
        let now = t0 + Duration::from_millis(MAX_TOTAL as u64);
        assert_eq!(t.issue(1_000_000, ch(999_999, now)), Ok(1));
        assert_eq!(t.len(), MAX_TOTAL);
        assert_eq!(t.take(0, now), Taken::Unknown, "the oldest was evicted");
        assert!(matches!(t.take(1, now), Taken::Valid(_)));
        assert!(matches!(t.take(1_000_000, now), Taken::Valid(_)));
        // A flood of random ids stays bounded.
        for n in 2_000_000..2_020_000u64 {
            t.issue(n, ch(mix(n), now)).expect("issue");
        }
        assert_eq!(t.len(), MAX_TOTAL);
        assert!(matches!(t.take(2_019_999, now), Taken::Valid(_)));
        consistent(&t);
    }

    #[test]
    fn total_cap_evicts_from_the_fullest_source() {
        let t0 = Instant::now();
        let (a, b, c, d) = (ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.3"), ip("::1"));
        let mut t = Challenges::new(LIFETIME, 6, 10);
        // A: 1 (the oldest of all), B: 3, C: 2.
        t.issue(1, ch_from(1, a, t0)).expect("issue");
        for n in [2, 3, 4] {
            t.issue(n, ch_from(n, b, t0)).expect("issue");
        }
        for n in [5, 6] {
            t.issue(n, ch_from(n, c, t0)).expect("issue");
        }
        // C asks: B holds the most, more than C: B's oldest goes, not A's older one.
        assert_eq!(t.issue(7, ch_from(7, c, t0)), Ok(1));
        assert_eq!(t.take(2, t0), Taken::Unknown);
        // Now B: 2, C: 3. B asks: C holds more, C's oldest goes.
        assert_eq!(t.issue(8, ch_from(8, b, t0)), Ok(1));
        assert_eq!(t.take(5, t0), Taken::Unknown);
        // B: 3, C: 2. B asks, holding the most itself: its own oldest goes.
        assert_eq!(t.issue(9, ch_from(9, b, t0)), Ok(1));
        assert_eq!(t.take(3, t0), Taken::Unknown);
        // B: 3 (4, 8, 9), C: 2 (6, 7). C asks: B's oldest.
        assert_eq!(t.issue(10, ch_from(10, c, t0)), Ok(1));
        assert_eq!(t.take(4, t0), Taken::Unknown);
        // B: 2 (8, 9), C: 3 (6, 7, 10). B asks: C's oldest.
        assert_eq!(t.issue(11, ch_from(11, b, t0)), Ok(1));
        assert_eq!(t.take(6, t0), Taken::Unknown);
        // B: 3 (8, 9, 11), C: 2 (7, 10). B asks, holding the most: its own oldest.
        assert_eq!(t.issue(12, ch_from(12, b, t0)), Ok(1));
        assert_eq!(t.take(8, t0), Taken::Unknown);
        // B: 3 (9, 11, 12), C: 2 (7, 10). A newcomer D takes from B.
        assert_eq!(t.issue(13, ch_from(13, d, t0)), Ok(1));
        assert_eq!(t.take(9, t0), Taken::Unknown);
        // B: 2 (11, 12), C: 2 (7, 10), D: 1. Another from D: B and C tie at the most;
        // the older oldest (C's 7) goes.
        assert_eq!(t.issue(14, ch_from(14, d, t0)), Ok(1));
        assert_eq!(t.take(7, t0), Taken::Unknown);
        // A's challenge, the oldest of all, was never touched.
        assert!(matches!(t.take(1, t0), Taken::Valid(_)));
        consistent(&t);
        let left: Vec<u64> = t.order.values().copied().collect();
        assert_eq!(left, [10, 11, 12, 13, 14]);
    }

    #[test]
    fn a_tie_goes_against_the_source_asking() {
        let t0 = Instant::now();
        let (a, b) = (ip("10.0.0.1"), ip("10.0.0.2"));
        let mut t = Challenges::new(LIFETIME, 4, 10);
        for (n, peer) in [(1, a), (2, a), (3, b), (4, b)] {
            t.issue(n, ch_from(n, peer, t0)).expect("issue");
        }
        // B asks holding as many as A: B's oldest goes, not A's older one.
        assert_eq!(t.issue(5, ch_from(5, b, t0)), Ok(1));
        assert_eq!(t.take(3, t0), Taken::Unknown);
        // The same for A: its own oldest.
        assert_eq!(t.issue(6, ch_from(6, a, t0)), Ok(1));
        assert_eq!(t.take(1, t0), Taken::Unknown);
        // A newcomer, with A (2, 6) and B (4, 5) tied: the older oldest (A's 2) goes.
        assert_eq!(t.issue(7, ch_from(7, ip("10.0.0.3"), t0)), Ok(1));
        let left: Vec<u64> = t.order.values().copied().collect();
        assert_eq!(left, [4, 5, 6, 7]);
        consistent(&t);
    }

    /// What the policy does not promise: hellos from as many addresses as there are
    /// challenges, one each, can evict the owner's single challenge.
    #[test]
    fn many_sources_can_crowd_out_one() {
        let t0 = Instant::now();
        let mut t = Challenges::new(LIFETIME, 16, MAX_PER_SOURCE_ID);
        t.issue(1, ch_from(1, ip("10.1.0.1"), t0)).expect("issue");
        for n in 0..15u64 {
            let peer = Some(IpAddr::from([10, 2, 0, n as u8]));
            t.issue(100 + n, ch_from(1, peer, t0)).expect("issue");
        }
        // A sixteenth address: every source holds one; the oldest (the owner's) goes.
        assert_eq!(t.issue(200, ch_from(1, ip("10.3.0.1"), t0)), Ok(1));
        assert_eq!(t.take(1, t0), Taken::Unknown);
        consistent(&t);
    }

    #[test]
    fn small_limits() {
        let t0 = Instant::now();
        let mut t = Challenges::new(Duration::from_secs(1), 3, 2);
        t.issue(1, ch(1, t0)).expect("issue");
        t.issue(2, ch(2, t0)).expect("issue");
        t.issue(3, ch(1, t0)).expect("issue");
        // Client 1 from A is at its cap: its oldest (1) goes.
        assert_eq!(t.issue(4, ch(1, t0)), Ok(1));
        // The table is at its cap, all of it from A: A's oldest (2) goes.
        assert_eq!(t.issue(5, ch(3, t0)), Ok(1));
        let left: Vec<u64> = t.order.values().copied().collect();
        assert_eq!(left, [3, 4, 5]);
        // Sources that are not IP count as one.
        let mut t = Challenges::new(Duration::from_secs(1), 3, 2);
        for n in 1..=5 {
            t.issue(n, ch_from(n, None, t0)).expect("issue");
        }
        assert_eq!(t.count_source(None), 3);
        let left: Vec<u64> = t.order.values().copied().collect();
        assert_eq!(left, [3, 4, 5]);
        consistent(&t);
    }
}
