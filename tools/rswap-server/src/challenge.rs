// SPDX-License-Identifier: GPL-2.0

//! Challenges the server has issued and not seen answered: what each hello asked
//! for, under the random server nonce sent back to it.
//!
//! A challenge is used up by the first proof that names it, right or wrong, and
//! lives at most [`LIFETIME`]. The table is bounded: at most [`MAX_PER_CLIENT`]
//! challenges per client id and [`MAX_TOTAL`] in all, the oldest evicted first, so a
//! flood of hellos costs a fixed amount of memory (and can only crowd out the
//! flooded client id's own challenges until the total is reached). No RDMA: the
//! server feeds it requests and the time.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::wire::NONCE_LEN;

/// How long a challenge may be answered.
pub(crate) const LIFETIME: Duration = Duration::from_secs(10);
/// Most challenges outstanding in all.
pub(crate) const MAX_TOTAL: usize = 4096;
/// Most challenges outstanding for one client id.
pub(crate) const MAX_PER_CLIENT: usize = 64;

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

/// What looking up a proof's server nonce found. Either way the challenge is gone.
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

/// The outstanding challenges.
#[derive(Debug)]
pub(crate) struct Challenges {
    lifetime: Duration,
    max_total: usize,
    max_per_client: usize,
    /// Issue order: a counter that only grows.
    next_seq: u64,
    /// By server nonce: the issue order and the challenge.
    by_nonce: HashMap<u64, (u64, Challenge)>,
    /// Nonces in issue order (oldest first).
    order: BTreeMap<u64, u64>,
    /// Per client id, its nonces in issue order.
    per_client: HashMap<u64, BTreeMap<u64, u64>>,
}

impl Default for Challenges {
    fn default() -> Self {
        Self::new(LIFETIME, MAX_TOTAL, MAX_PER_CLIENT)
    }
}

impl Challenges {
    /// A table with these limits (at least one challenge each).
    pub(crate) fn new(lifetime: Duration, max_total: usize, max_per_client: usize) -> Self {
        Self {
            lifetime,
            max_total: max_total.max(1),
            max_per_client: max_per_client.max(1),
            next_seq: 0,
            by_nonce: HashMap::new(),
            order: BTreeMap::new(),
            per_client: HashMap::new(),
        }
    }

    /// Remembers challenge `c` under `nonce`, after dropping the expired ones and, if
    /// the client id or the table is full, the oldest of the client id or of all.
    /// Returns how many were evicted to make room.
    pub(crate) fn issue(&mut self, nonce: u64, c: Challenge) -> Result<usize, Collision> {
        self.expire(c.issued);
        if self.by_nonce.contains_key(&nonce) {
            return Err(Collision);
        }
        let mut evicted = 0;
        while self
            .per_client
            .get(&c.client_id)
            .is_some_and(|m| m.len() >= self.max_per_client)
        {
            let oldest = self
                .per_client
                .get(&c.client_id)
                .and_then(|m| m.values().next().copied());
            match oldest {
                Some(n) if self.remove(n).is_some() => evicted += 1,
                _ => break,
            }
        }
        while self.by_nonce.len() >= self.max_total {
            match self.order.values().next().copied() {
                Some(n) if self.remove(n).is_some() => evicted += 1,
                _ => break,
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, nonce);
        self.per_client
            .entry(c.client_id)
            .or_default()
            .insert(seq, nonce);
        self.by_nonce.insert(nonce, (seq, c));
        Ok(evicted)
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

    /// Challenges outstanding for `client_id`.
    #[cfg(test)]
    fn count(&self, client_id: u64) -> usize {
        self.per_client.get(&client_id).map_or(0, BTreeMap::len)
    }

    /// Whether `c` is older than the lifetime at `now`.
    fn expired(&self, c: &Challenge, now: Instant) -> bool {
        now.saturating_duration_since(c.issued) > self.lifetime
    }

    /// Removes the challenge of `nonce` from every index.
    fn remove(&mut self, nonce: u64) -> Option<Challenge> {
        let (seq, c) = self.by_nonce.remove(&nonce)?;
        self.order.remove(&seq);
        if let Some(m) = self.per_client.get_mut(&c.client_id) {
            m.remove(&seq);
            if m.is_empty() {
                self.per_client.remove(&c.client_id);
            }
        }
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(client_id: u64, issued: Instant) -> Challenge {
        Challenge {
            client_id,
            queue_index: 0,
            queue_count: 1,
            requested_size: 4096,
            client_nonce: [7; NONCE_LEN],
            instance: 1,
            peer: Some("192.0.2.1".parse().expect("ip")),
            issued,
        }
    }

    fn consistent(t: &Challenges) {
        assert_eq!(t.by_nonce.len(), t.order.len());
        assert_eq!(
            t.by_nonce.len(),
            t.per_client.values().map(BTreeMap::len).sum::<usize>()
        );
        assert!(t.per_client.values().all(|m| !m.is_empty()));
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
        // expire() drops only what is past its lifetime, oldest first.
        for i in 0..10u64 {
            t.issue(100 + i, ch(i % 3, t0 + Duration::from_secs(i)))
                .expect("issue");
        }
        assert_eq!(t.expire(t0 + Duration::from_secs(12)), 2);
        assert_eq!(t.len(), 8);
        assert_eq!(t.take(101, t0), Taken::Unknown);
        assert!(matches!(t.take(102, t0), Taken::Valid(_)));
        // Issuing drops the expired ones as well.
        t.issue(999, ch(5, t0 + Duration::from_secs(60)))
            .expect("issue");
        assert_eq!(t.len(), 1);
        consistent(&t);
    }

    #[test]
    fn per_client_cap_evicts_that_clients_oldest() {
        let t0 = Instant::now();
        let mut t = Challenges::default();
        t.issue(5000, ch(2, t0)).expect("issue");
        for n in 0..MAX_PER_CLIENT as u64 {
            assert_eq!(t.issue(n, ch(1, t0)), Ok(0));
        }
        assert_eq!(t.count(1), MAX_PER_CLIENT);
        // One more for client 1 evicts its oldest (nonce 0), not client 2's older one.
        assert_eq!(t.issue(64, ch(1, t0)), Ok(1));
        assert_eq!(t.count(1), MAX_PER_CLIENT);
        assert_eq!(t.take(0, t0), Taken::Unknown);
        assert!(matches!(t.take(1, t0), Taken::Valid(_)));
        assert!(matches!(t.take(5000, t0), Taken::Valid(_)));
        // A flood of one id never holds more than the cap.
        for n in 10_000..20_000u64 {
            t.issue(n, ch(1, t0)).expect("issue");
        }
        assert_eq!(t.count(1), MAX_PER_CLIENT);
        assert_eq!(t.len(), MAX_PER_CLIENT);
        // The newest are the ones kept.
        assert!(matches!(t.take(19_999, t0), Taken::Valid(_)));
        assert_eq!(t.take(19_000, t0), Taken::Unknown);
        consistent(&t);
    }

    #[test]
    fn total_cap_evicts_the_oldest_of_all() {
        let t0 = Instant::now();
        let mut t = Challenges::default();
        // 4096 challenges of 4096 client ids, issued over time (within the lifetime).
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
            t.issue(n, ch(n, now)).expect("issue");
        }
        assert_eq!(t.len(), MAX_TOTAL);
        assert!(matches!(t.take(2_019_999, now), Taken::Valid(_)));
        consistent(&t);
    }

    #[test]
    fn small_limits() {
        let t0 = Instant::now();
        let mut t = Challenges::new(Duration::from_secs(1), 3, 2);
        t.issue(1, ch(1, t0)).expect("issue");
        t.issue(2, ch(2, t0)).expect("issue");
        t.issue(3, ch(1, t0)).expect("issue");
        // Client 1 is at its cap: its oldest (1) goes.
        assert_eq!(t.issue(4, ch(1, t0)), Ok(1));
        // The table is at its cap: the oldest of all (2) goes.
        assert_eq!(t.issue(5, ch(3, t0)), Ok(1));
        let left: Vec<u64> = t.order.values().copied().collect();
        assert_eq!(left, [3, 4, 5]);
        consistent(&t);
    }
}
