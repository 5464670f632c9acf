// SPDX-License-Identifier: GPL-2.0

//! A rate limit for the log lines that anyone who can reach the server's port can
//! cause: those of connect requests not (yet) authenticated (`auth_challenge`, and
//! `connect_rejected` before authentication). A token bucket: [`BURST`] lines at
//! once, then [`PER_SEC`] a second. A line over the limit is dropped and counted; the
//! next line logged says how many were dropped before it (`suppressed=N`), and if no
//! further line comes, the server logs the count on its own once the bucket has room
//! ([`LogRate::flush`], at [`LogRate::deadline`]).
//!
//! Pure: the server gives it the time. Unit-tested.

use std::time::{Duration, Instant};

/// Lines logged at once before the limit applies.
pub(crate) const BURST: u64 = 20;
/// Lines a second past the burst.
pub(crate) const PER_SEC: u64 = 5;

/// Thousandths of a line: the bucket's unit.
const MILLI: u64 = 1000;
const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The bucket.
#[derive(Debug, Clone)]
pub(crate) struct LogRate {
    burst: u64,
    per_sec: u64,
    /// Thousandths of a line in the bucket.
    milli: u64,
    /// Up to when the bucket was refilled.
    last: Option<Instant>,
    /// Lines dropped since the last one logged.
    dropped: u64,
}

impl Default for LogRate {
    fn default() -> Self {
        Self::new(BURST, PER_SEC)
    }
}

impl LogRate {
    /// A full bucket of `burst` lines, refilled with `per_sec` lines a second (both at
    /// least 1).
    pub(crate) fn new(burst: u64, per_sec: u64) -> Self {
        let burst = burst.max(1);
        Self {
            burst,
            per_sec: per_sec.max(1),
            milli: burst.saturating_mul(MILLI),
            last: None,
            dropped: 0,
        }
    }

    /// Adds what the time since the last refill is worth, keeping the remainder of
    /// the time that made less than a thousandth of a line.
    fn refill(&mut self, now: Instant) {
        let full = self.burst.saturating_mul(MILLI);
        let Some(last) = self.last else {
            self.last = Some(now);
            return;
        };
        let nanos =
            u64::try_from(now.saturating_duration_since(last).as_nanos()).unwrap_or(u64::MAX);
        // per_sec lines a second are per_sec thousandths of a line a millisecond.
        let add = u128::from(nanos) * u128::from(self.per_sec) / 1_000_000;
        let add = u64::try_from(add).unwrap_or(u64::MAX);
        self.milli = self.milli.saturating_add(add).min(full);
        if self.milli == full {
            self.last = Some(now);
        } else {
            let used = add.saturating_mul(1_000_000) / self.per_sec;
            self.last = Some(last + Duration::from_nanos(used));
        }
    }

    /// Takes one line out of the bucket if there is one: `Some` with how many lines
    /// were dropped before it (which its line reports), `None` if it is dropped (and
    /// counted).
    pub(crate) fn admit(&mut self, now: Instant) -> Option<u64> {
        self.refill(now);
        if self.milli >= MILLI {
            self.milli -= MILLI;
            Some(std::mem::take(&mut self.dropped))
        } else {
            self.dropped = self.dropped.saturating_add(1);
            None
        }
    }

    /// Lines dropped and not reported yet, once the bucket has room for the line that
    /// reports them (taken out of it); `None` if there are none, or no room yet.
    pub(crate) fn flush(&mut self, now: Instant) -> Option<u64> {
        if self.dropped == 0 {
            return None;
        }
        self.refill(now);
        if self.milli < MILLI {
            return None;
        }
        self.milli -= MILLI;
        Some(std::mem::take(&mut self.dropped))
    }

    /// When [`Self::flush`] has something to report: `None` if nothing was dropped.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        if self.dropped == 0 {
            return None;
        }
        let missing = MILLI.saturating_sub(self.milli);
        // Rounded up: at that time the bucket has the room, not a nanosecond later.
        let nanos = missing
            .saturating_mul(NANOS_PER_SEC / MILLI)
            .div_ceil(self.per_sec);
        Some(self.last? + Duration::from_nanos(nanos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let t0 = Instant::now();
        let mut r = LogRate::new(3, 2);
        for _ in 0..3 {
            assert_eq!(r.admit(t0), Some(0));
        }
        // Empty: dropped and counted.
        for _ in 0..5 {
            assert_eq!(r.admit(t0), None);
        }
        // Half a second later (2 a second): one more, which reports the five.
        assert_eq!(r.admit(t0 + Duration::from_millis(499)), None);
        assert_eq!(r.admit(t0 + Duration::from_millis(500)), Some(6));
        assert_eq!(r.admit(t0 + Duration::from_millis(500)), None);
        // After a long pause the bucket is full again, not fuller.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert!(r.admit(later).is_some());
        }
        assert_eq!(r.admit(later), None);
    }

    /// Calls more often than a thousandth of a line's worth of time still refill it.
    #[test]
    fn frequent_calls_do_not_lose_time() {
        let t0 = Instant::now();
        let mut r = LogRate::new(1, 5);
        assert_eq!(r.admit(t0), Some(0));
        let mut logged = 0;
        // Every 10 µs for 10 s: 5 a second, 50 lines (give or take the last one).
        for i in 1..=1_000_000u64 {
            if r.admit(t0 + Duration::from_micros(10 * i)).is_some() {
                logged += 1;
            }
        }
        assert!((49..=50).contains(&logged), "{logged}");
    }

    #[test]
    fn flush_reports_what_was_dropped_once_there_is_room() {
        let t0 = Instant::now();
        let mut r = LogRate::new(1, 1);
        assert_eq!(r.flush(t0), None);
        assert_eq!(r.deadline(), None);
        assert_eq!(r.admit(t0), Some(0));
        assert_eq!(r.admit(t0), None);
        assert_eq!(r.admit(t0), None);
        assert_eq!(r.deadline(), Some(t0 + Duration::from_secs(1)));
        // No room yet: nothing, and nothing more counted.
        assert_eq!(r.flush(t0 + Duration::from_millis(999)), None);
        assert_eq!(r.deadline(), Some(t0 + Duration::from_secs(1)));
        assert_eq!(r.flush(t0 + Duration::from_secs(1)), Some(2));
        assert_eq!(r.flush(t0 + Duration::from_secs(5)), None);
        assert_eq!(r.deadline(), None);
        // With a rate that does not divide a second evenly, the deadline is when the
        // flush finds room.
        let mut r = LogRate::new(1, 7);
        r.admit(t0);
        r.admit(t0);
        let d = r.deadline().expect("deadline");
        assert_eq!(r.flush(d), Some(1));
    }
}
