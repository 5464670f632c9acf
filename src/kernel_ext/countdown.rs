// SPDX-License-Identifier: GPL-2.0

//! A count of injected failures still to happen, for the fault-injection parameters.

use core::sync::atomic::{AtomicU32, Ordering};

/// How many more times a fault is to be injected; shared by every context that may inject
/// it.
pub(crate) struct Countdown(AtomicU32);

impl Countdown {
    /// None to inject.
    pub(crate) const fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// Injects the fault the next `n` times it is asked.
    pub(crate) fn set(&self, n: u32) {
        self.0.store(n, Ordering::Relaxed);
    }

    /// Whether to inject it this time: true `n` times after [`Countdown::set`], then
    /// false.
    pub(crate) fn take(&self) -> bool {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }
}
