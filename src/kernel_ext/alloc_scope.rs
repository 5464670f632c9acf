// SPDX-License-Identifier: GPL-2.0

//! Scopes that change how the current task's allocations behave: no block I/O from
//! their reclaim, or access to the memory reserves instead of reclaim.

use core::marker::PhantomData;

extern "C" {
    fn rswap_memalloc_noio_save() -> u32;
    fn rswap_memalloc_noio_restore(flags: u32);
    fn rswap_memalloc_noreclaim_save() -> u32;
    fn rswap_memalloc_noreclaim_restore(flags: u32);
    #[cfg(rswap_fault_injection)]
    fn rswap_current_uses_reserves() -> bool;
}

/// Defines a scope type that saves a task flag with `$save` on entry and restores it
/// with `$restore` on drop.
macro_rules! task_scope {
    ($(#[$doc:meta])* $name:ident, $save:ident, $restore:ident) => {
        $(#[$doc])*
        ///
        /// # Invariants
        ///
        /// `flags` is what the save function returned on the task that created the scope;
        /// the scope is neither `Send` nor `Sync`, so it is restored on that same task.
        pub(crate) struct $name {
            flags: u32,
            _task_bound: PhantomData<*mut ()>,
        }

        impl $name {
            /// Enters the scope for the current task.
            pub(crate) fn enter() -> Self {
                // SAFETY: sets a flag on the current task; restored by drop on the same
                // task.
                let flags = unsafe { $save() };
                // INVARIANT: just saved on the current task.
                Self {
                    flags,
                    _task_bound: PhantomData,
                }
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: `flags` came from the save function on this task (type
                // invariant); scopes nest and are dropped in reverse order, like the C
                // pattern.
                unsafe { $restore(self.flags) };
            }
        }
    };
}

task_scope!(
    /// While alive, every allocation of the current task behaves as `GFP_NOIO`
    /// (`memalloc_noio_save`): the reclaim it may trigger starts no I/O. A swap device's
    /// recovery work needs this: if its allocations reclaimed memory by swapping out to the
    /// very device being recovered, they would wait on I/O that only the recovery can
    /// finish.
    NoIoScope,
    rswap_memalloc_noio_save,
    rswap_memalloc_noio_restore
);

task_scope!(
    /// While alive, the current task's allocations may use the memory reserves and never
    /// reclaim (`memalloc_noreclaim_save`, `PF_MEMALLOC`): they succeed from the reserves
    /// or fail at once. For work that frees memory and cannot wait for reclaim to do it
    /// first, as swap over NFS reconnects its socket: the reconnect of a swap device is
    /// what reclaim is waiting on. Keep what runs in it short and its allocations small.
    ReserveScope,
    rswap_memalloc_noreclaim_save,
    rswap_memalloc_noreclaim_restore
);

/// Whether the current task is in a [`ReserveScope`] (or otherwise has `PF_MEMALLOC`):
/// fault injection fails allocations only there.
#[cfg(rswap_fault_injection)]
pub(crate) fn current_uses_reserves() -> bool {
    // SAFETY: reads a flag of the current task.
    unsafe { rswap_current_uses_reserves() }
}
