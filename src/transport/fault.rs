// SPDX-License-Identifier: GPL-2.0

//! Failures injected into the transport, for tests: a module built with fault injection
//! (`make RSWAP_FAULT_INJECTION=y`) takes `fault_fail_reconnect_allocs=N`, and the next N
//! allocating steps of queue recoveries fail with `ENOMEM`, as they would when even the
//! memory reserves are gone; and `fault_busy_waited_ios=N`, and the next N waited I/Os (a
//! rebuild's) are refused as busy, as on a queue full of the disk's own I/O; and
//! `fault_busy_probes=N`, and the next N keep-alive probes are refused as busy, as while
//! another poster registers a QP's fence region. Without fault injection nothing fails
//! here.
//!
//! Only allocations made in a recovery (the current task in a
//! [`ReserveScope`](crate::kernel_ext::ReserveScope)) are failed, never those of `enable`;
//! the steps fail in turn, so that every one of them is seen failing: the k-th injected
//! failure hits the step numbered k modulo the number of steps, or the first step after
//! it that the attempt reaches (a connection over iWARP has no RECV buffer to allocate).

use kernel::prelude::*;

/// An allocating step of a connection attempt.
#[derive(Clone, Copy)]
pub(crate) enum AllocStep {
    /// The rdma_cm id.
    CmId = 0,
    /// The queue pair, its CQ and the region of READ sinks.
    QueuePair = 1,
    /// The buffer of the RECV for the server's descriptor.
    RecvBuffer = 2,
    /// The link itself, once connected and authenticated.
    Link = 3,
}

#[cfg(rswap_fault_injection)]
mod inject {
    use super::AllocStep;
    use crate::kernel_ext::Countdown;
    use core::sync::atomic::{AtomicU32, Ordering};

    /// Injected failures still to come.
    static BUDGET: Countdown = Countdown::new();
    /// Injected failures so far: which step the next one hits.
    static DONE: AtomicU32 = AtomicU32::new(0);
    /// How many steps [`AllocStep`] has.
    const STEPS: u32 = AllocStep::Link as u32 + 1;

    /// Waited I/Os still to refuse as busy.
    static BUSY_WAITED: Countdown = Countdown::new();
    /// Keep-alive probes still to refuse as busy.
    static BUSY_PROBES: Countdown = Countdown::new();

    /// Makes the next `n` allocating steps of recoveries fail.
    pub(crate) fn fail_reconnect_allocs(n: u32) {
        BUDGET.set(n);
    }

    /// Makes the next `n` waited I/Os come back busy without being posted.
    pub(crate) fn busy_waited_ios(n: u32) {
        BUSY_WAITED.set(n);
    }

    /// Whether this waited I/O is to come back busy.
    pub(super) fn waited_busy() -> bool {
        BUSY_WAITED.take()
    }

    /// Makes the next `n` keep-alive probes come back busy without being posted.
    pub(crate) fn busy_probes(n: u32) {
        BUSY_PROBES.set(n);
    }

    /// Whether this probe is to come back busy.
    pub(super) fn probe_busy() -> bool {
        BUSY_PROBES.take()
    }

    /// Whether `step` of the current connection attempt is to fail: the first step the
    /// attempt reaches that is the one whose turn it is or a later one (its first
    /// failure ends the attempt).
    pub(super) fn fails(step: AllocStep) -> bool {
        crate::kernel_ext::current_uses_reserves()
            && step as u32 >= DONE.load(Ordering::Relaxed) % STEPS
            && BUDGET.take()
            && {
                DONE.fetch_add(1, Ordering::Relaxed);
                true
            }
    }
}

#[cfg(rswap_fault_injection)]
pub(crate) use inject::{busy_probes, busy_waited_ios, fail_reconnect_allocs};

/// `Err(ENOMEM)` if a test asked for `step` of this connection attempt to fail (see the
/// module's documentation); `Ok` otherwise, and always without fault injection.
#[inline]
pub(crate) fn alloc(step: AllocStep) -> Result {
    #[cfg(rswap_fault_injection)]
    if inject::fails(step) {
        return Err(ENOMEM);
    }
    #[cfg(not(rswap_fault_injection))]
    let _ = step;
    Ok(())
}

/// `Err(EBUSY)` if a test asked for this waited I/O to be refused as busy (see the
/// module's documentation); `Ok` otherwise, and always without fault injection.
#[inline]
pub(crate) fn waited_io() -> Result {
    #[cfg(rswap_fault_injection)]
    if inject::waited_busy() {
        return Err(EBUSY);
    }
    Ok(())
}

/// `Err(EBUSY)` if a test asked for this keep-alive probe to be refused as busy (see the
/// module's documentation); `Ok` otherwise, and always without fault injection.
#[inline]
pub(crate) fn probe() -> Result {
    #[cfg(rswap_fault_injection)]
    if inject::probe_busy() {
        return Err(EBUSY);
    }
    Ok(())
}
