// SPDX-License-Identifier: GPL-2.0

//! A scope in which the current task's allocations start no block I/O.

use core::marker::PhantomData;

extern "C" {
    fn rswap_memalloc_noio_save() -> u32;
    fn rswap_memalloc_noio_restore(flags: u32);
}

/// While alive, every allocation of the current task behaves as `GFP_NOIO`
/// (`memalloc_noio_save`): the reclaim it may trigger starts no I/O. A swap device's
/// recovery work needs this: if its allocations reclaimed memory by swapping out to the
/// very device being recovered, they would wait on I/O that only the recovery can finish.
///
/// # Invariants
///
/// `flags` is what `memalloc_noio_save` returned on the task that created the scope; the
/// scope is neither `Send` nor `Sync`, so it is restored on that same task.
pub(crate) struct NoIoScope {
    flags: u32,
    _task_bound: PhantomData<*mut ()>,
}

impl NoIoScope {
    /// Enters the scope for the current task.
    pub(crate) fn enter() -> Self {
        // SAFETY: sets a flag on the current task; restored by drop on the same task.
        let flags = unsafe { rswap_memalloc_noio_save() };
        // INVARIANT: just saved on the current task.
        Self {
            flags,
            _task_bound: PhantomData,
        }
    }
}

impl Drop for NoIoScope {
    fn drop(&mut self) {
        // SAFETY: `flags` came from `memalloc_noio_save` on this task (type invariant);
        // scopes nest and are dropped in reverse order, like the C pattern.
        unsafe { rswap_memalloc_noio_restore(self.flags) };
    }
}
