// SPDX-License-Identifier: GPL-2.0

//! Who holds a disk open, and a door that shuts before the disk goes away.
//!
//! The disk's `block_device_operations.open` and `.release` land here. Every open is
//! counted under a lock, and [`Openers::shut`] refuses while the count is not zero, or
//! else shuts the door for good: an open either came first (and the shut fails with
//! `EBUSY`) or comes after (and fails with `ENXIO`), so a disk cannot be deleted from
//! under a `swapon` that raced with the delete. Nothing else is taken in `open`: it runs
//! under the disk's `open_mutex`.

use kernel::{ffi::c_void, new_spinlock, prelude::*, sync::SpinLock};

struct Door {
    /// Opens that succeeded and have not been released.
    count: u32,
    /// Set once the disk is about to be deleted: no open succeeds after.
    shut: bool,
}

/// The open count of one disk and its door.
#[pin_data]
pub(crate) struct Openers {
    #[pin]
    door: SpinLock<Door>,
}

impl Openers {
    pub(super) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            door <- new_spinlock!(Door { count: 0, shut: false }, "rswap::Openers::door"),
        })
    }

    fn open(&self) -> Result {
        let mut door = self.door.lock();
        if door.shut {
            return Err(ENXIO);
        }
        door.count += 1;
        Ok(())
    }

    /// # Safety
    ///
    /// Each call pairs with an earlier successful [`Openers::open`].
    unsafe fn release(&self) {
        self.door.lock().count -= 1;
    }

    /// Shuts the door unless the disk is open (`EBUSY`); from then on every open fails.
    pub(super) fn shut(&self) -> Result {
        let mut door = self.door.lock();
        if door.count > 0 {
            return Err(EBUSY);
        }
        door.shut = true;
        Ok(())
    }

    /// Shuts the door whether or not the disk is open; returns the number of openers.
    pub(super) fn force_shut(&self) -> u32 {
        let mut door = self.door.lock();
        door.shut = true;
        door.count
    }
}

/// `block_device_operations.open` of every rswap disk (called from `helpers.c`).
///
/// # Safety
///
/// `openers` is the `private_data` of a disk made by [`super::Disk::new`]: a live
/// [`Openers`].
#[no_mangle]
unsafe extern "C" fn rswap_blk_openers_open(openers: *mut c_void) -> kernel::ffi::c_int {
    // SAFETY: by the function's safety requirement.
    let openers = unsafe { &*openers.cast::<Openers>() };
    match openers.open() {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `block_device_operations.release`, after a successful open.
///
/// # Safety
///
/// As for [`rswap_blk_openers_open`], which returned 0 for this opener.
#[no_mangle]
unsafe extern "C" fn rswap_blk_openers_release(openers: *mut c_void) {
    // SAFETY: by the function's safety requirement: a live `Openers`, and this release
    // pairs with an open that succeeded.
    unsafe { (*openers.cast::<Openers>()).release() };
}
