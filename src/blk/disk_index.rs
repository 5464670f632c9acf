// SPDX-License-Identifier: GPL-2.0

//! Disk numbers (`N` of `/dev/rswapN`), from the kernel's ID pool.

use kernel::{id_pool::IdPool, prelude::*};

/// The most disks at once.
const MAX_DISKS: usize = 64;

kernel::sync::global_lock! {
    // SAFETY: initialised in module init (`DiskIndex::init`) before anything uses it.
    unsafe(uninit) static POOL: Mutex<Option<IdPool>> = None;
}

/// A disk number, taken until dropped.
///
/// # Invariants
///
/// `index` is acquired in [`POOL`] and released only by drop.
pub(crate) struct DiskIndex {
    index: usize,
}

impl DiskIndex {
    /// Sets up the pool. Call once, from module init, before any other use.
    pub(crate) fn init() {
        // SAFETY: called once, from module init, before any other use.
        unsafe { POOL.init() };
    }

    /// Takes the lowest free number; `ENOSPC` when [`MAX_DISKS`] are taken.
    pub(crate) fn take() -> Result<Self> {
        let mut pool = POOL.lock();
        let pool = pool.get_or_insert_with(IdPool::new);
        let index = pool.find_unused_id(0).ok_or(ENOSPC)?.acquire();
        if index >= MAX_DISKS {
            pool.release_id(index);
            return Err(ENOSPC);
        }
        // INVARIANT: just acquired.
        Ok(Self { index })
    }

    /// The number.
    pub(crate) fn get(&self) -> usize {
        self.index
    }
}

impl Drop for DiskIndex {
    fn drop(&mut self) {
        if let Some(pool) = POOL.lock().as_mut() {
            pool.release_id(self.index);
        }
    }
}
