// SPDX-License-Identifier: GPL-2.0

//! Change events (uevents) of a disk, for its driver to tell user space what happened to
//! it (`udevadm monitor --kernel --property`).

use core::ptr::{self, NonNull};
use kernel::{
    new_mutex,
    prelude::*,
    str::CStrExt,
    sync::{Arc, Mutex},
};

use super::bindings;

/// Most `KEY=value` entries one event carries besides the usual ones.
const MAX_ENV: usize = 8;

/// The disk an event is about, while there is one.
struct DiskPtr(*mut kernel::bindings::gendisk);

// SAFETY: only a pointer, used under `DiskEvents`' mutex.
unsafe impl Send for DiskPtr {}

/// Where a driver sends change events of its disk: from before the disk exists (the
/// driver is made first) to after it is gone; events sent while there is no disk are
/// dropped.
///
/// # Invariants
///
/// `gd` is null or a disk that was added and is not deleted yet: [`super::Disk`] sets it
/// once the disk is added and clears it before deleting the disk, under the mutex that
/// [`DiskEvents::change`] holds while it uses the disk.
#[pin_data]
pub(crate) struct DiskEvents {
    #[pin]
    gd: Mutex<DiskPtr>,
}

impl DiskEvents {
    /// No disk yet.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                gd <- new_mutex!(DiskPtr(ptr::null_mut()), "rswap::DiskEvents"),
            }),
            GFP_KERNEL,
        )
    }

    /// `gd` was added.
    pub(super) fn attach(&self, gd: NonNull<kernel::bindings::gendisk>) {
        // INVARIANT: the caller's disk was just added.
        self.gd.lock().0 = gd.as_ptr();
    }

    /// The disk is about to be deleted: no event uses it from now on.
    pub(super) fn detach(&self) {
        self.gd.lock().0 = ptr::null_mut();
    }

    /// Sends a `change` event of the disk with `env` (`KEY=value` each, at most 8) added
    /// to the usual ones (`DEVNAME`, ...); nothing if there is no disk. Sleeps (it
    /// allocates).
    pub(crate) fn change(&self, env: &[&CStr]) -> Result {
        if env.len() > MAX_ENV {
            return Err(EINVAL);
        }
        let mut envp = [ptr::null_mut::<u8>(); MAX_ENV + 1];
        for (slot, e) in envp.iter_mut().zip(env) {
            *slot = e.as_char_ptr().cast_mut();
        }
        let gd = self.gd.lock();
        if gd.0.is_null() {
            return Ok(());
        }
        // SAFETY: `gd` is an added disk not deleted while the lock is held (type
        // invariant); `envp` is a NULL-terminated array of NUL-terminated strings that
        // outlive the call, which only reads them.
        kernel::error::to_result(unsafe {
            bindings::rswap_blk_disk_change(gd.0, envp.as_mut_ptr().cast())
        })
    }
}
