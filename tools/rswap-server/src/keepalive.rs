// SPDX-License-Identifier: GPL-2.0

//! Keep-alive of the server's queues: when to probe and what a probe's outcome
//! means, without any RDMA (the server posts the probes and reaps them).
//!
//! An idle RC connection to a client host that crashed or lost power produces no
//! rdma_cm event, so the server would hold that client's region forever. Instead,
//! once per period the server probes every established queue with one signalled
//! zero-length RDMA WRITE. A queue has at most one probe outstanding: a probe that
//! has not completed by the next round, or that completes with an error, means the
//! peer is gone and the queue is closed.

use std::time::{Duration, Instant};

/// When keep-alive rounds are due. A period of zero turns keep-alive off.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    period: Duration,
    next: Option<Instant>,
}

impl Schedule {
    /// The first round is one `period` after `now`.
    pub(crate) fn new(period: Duration, now: Instant) -> Self {
        Self {
            period,
            next: (!period.is_zero()).then(|| now + period),
        }
    }

    /// When the next round is due; `None` when keep-alive is off.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.next
    }

    /// Whether a round is due at `now`. If so, the next one is due one period
    /// after `now` (a late round does not cause a burst of rounds).
    pub(crate) fn due(&mut self, now: Instant) -> bool {
        match self.next {
            Some(t) if t <= now => {
                self.next = Some(now + self.period);
                true
            }
            _ => false,
        }
    }
}

/// The keep-alive state of one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Probe {
    /// Not established yet: not probed.
    #[default]
    Waiting,
    /// Established, no probe outstanding.
    Idle,
    /// A probe was posted and has not completed.
    Outstanding,
    /// The queue is dead or closed: nothing more is posted, completions that still
    /// arrive (flushed probes) are ignored.
    Closed,
}

/// What a keep-alive round asks the server to do with one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Round {
    /// Post a probe now (if the post fails, the queue is dead: [`Probe::close`]).
    Post,
    /// The previous probe did not complete within a period: close the queue.
    Dead,
    /// Nothing to do (not established, or already closed).
    Skip,
}

/// What a probe's completion means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The peer acknowledged the probe.
    Alive,
    /// The probe failed: close the queue.
    Dead,
    /// Not a completion the queue waits for (a flushed probe of a queue already
    /// closed for another reason): no action.
    Ignore,
}

impl Probe {
    /// The queue is established: it takes part in the next round.
    pub(crate) fn established(&mut self) {
        if *self == Self::Waiting {
            *self = Self::Idle;
        }
    }

    /// A keep-alive round. [`Round::Post`] counts the probe as outstanding from now.
    pub(crate) fn round(&mut self) -> Round {
        match *self {
            Self::Waiting | Self::Closed => Round::Skip,
            Self::Idle => {
                *self = Self::Outstanding;
                Round::Post
            }
            Self::Outstanding => {
                *self = Self::Closed;
                Round::Dead
            }
        }
    }

    /// A probe completed, successfully (`ok`) or not.
    pub(crate) fn completed(&mut self, ok: bool) -> Reply {
        match (*self, ok) {
            (Self::Outstanding, true) => {
                *self = Self::Idle;
                Reply::Alive
            }
            (Self::Outstanding, false) => {
                *self = Self::Closed;
                Reply::Dead
            }
            _ => Reply::Ignore,
        }
    }

    /// The queue is being closed for some other reason.
    pub(crate) fn close(&mut self) {
        *self = Self::Closed;
    }

    /// Whether a probe is outstanding (its completion is still to be reaped).
    pub(crate) fn outstanding(self) -> bool {
        self == Self::Outstanding
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn established() -> Probe {
        let mut p = Probe::default();
        p.established();
        p
    }

    #[test]
    fn not_probed_before_established() {
        let mut p = Probe::default();
        assert_eq!(p.round(), Round::Skip);
        assert!(!p.outstanding());
        assert_eq!(p.completed(true), Reply::Ignore);
        p.established();
        assert_eq!(p, Probe::Idle);
    }

    #[test]
    fn probe_sent() {
        let mut p = established();
        assert_eq!(p.round(), Round::Post);
        assert!(p.outstanding());
    }

    #[test]
    fn probe_completed_ok() {
        let mut p = established();
        for _ in 0..3 {
            assert_eq!(p.round(), Round::Post);
            assert_eq!(p.completed(true), Reply::Alive);
            assert!(!p.outstanding());
        }
        // established() again (it is idempotent) does not reset anything.
        p.established();
        assert_eq!(p, Probe::Idle);
    }

    #[test]
    fn round_with_probe_outstanding_is_dead() {
        let mut p = established();
        assert_eq!(p.round(), Round::Post);
        assert_eq!(p.round(), Round::Dead);
        assert!(!p.outstanding());
        // Dead once: later rounds and the probe's late completion do nothing.
        assert_eq!(p.round(), Round::Skip);
        assert_eq!(p.completed(true), Reply::Ignore);
        assert_eq!(p.completed(false), Reply::Ignore);
    }

    #[test]
    fn error_completion_is_dead() {
        let mut p = established();
        assert_eq!(p.round(), Round::Post);
        assert_eq!(p.completed(false), Reply::Dead);
        assert_eq!(p.round(), Round::Skip);
        assert_eq!(p.completed(false), Reply::Ignore);
    }

    #[test]
    fn flush_after_close_is_ignored() {
        let mut p = established();
        assert_eq!(p.round(), Round::Post);
        // Closed for another reason (a failed descriptor SEND, a DISCONNECTED
        // event): the probe is then flushed with an error.
        p.close();
        assert_eq!(p.completed(false), Reply::Ignore);
        assert_eq!(p.round(), Round::Skip);
        // Closing before established: never probed.
        let mut p = Probe::default();
        p.close();
        p.established();
        assert_eq!(p.round(), Round::Skip);
    }

    #[test]
    fn completion_without_probe_is_ignored() {
        let mut p = established();
        assert_eq!(p.completed(false), Reply::Ignore);
        assert_eq!(p, Probe::Idle);
    }

    #[test]
    fn schedule_rounds() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut s = Schedule::new(ms(100), t0);
        assert_eq!(s.deadline(), Some(t0 + ms(100)));
        assert!(!s.due(t0));
        assert!(!s.due(t0 + ms(99)));
        assert!(s.due(t0 + ms(100)));
        assert!(!s.due(t0 + ms(100)), "one round per period");
        assert_eq!(s.deadline(), Some(t0 + ms(200)));
        // A late round: the next is a period after it, not a burst.
        assert!(s.due(t0 + ms(1000)));
        assert!(!s.due(t0 + ms(1099)));
        assert_eq!(s.deadline(), Some(t0 + ms(1100)));
    }

    #[test]
    fn keepalive_zero_never_probes() {
        let t0 = Instant::now();
        let mut s = Schedule::new(Duration::ZERO, t0);
        assert_eq!(s.deadline(), None);
        for secs in [0, 1, 60, 86_400] {
            assert!(!s.due(t0 + Duration::from_secs(secs)));
        }
        assert_eq!(s.deadline(), None);
    }
}
