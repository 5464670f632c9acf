// SPDX-License-Identifier: GPL-2.0

//! Keeping a configfs directory from being removed while something outside configfs
//! uses it (`configfs_depend_item`), which the kernel crate's configfs does not wrap.

use core::ptr::NonNull;
use kernel::{bindings, error::to_result, prelude::*, str::CStrExt};

/// A child directory (item) of a configfs subsystem's root that can be pinned: while a
/// dependency is held, `rmdir` of the directory fails with `EBUSY`.
///
/// # Invariants
///
/// `subsys` is a registered subsystem and `item` one of its root's children; both stay
/// valid as long as this value exists (see [`ItemDepend::find`]).
pub(crate) struct ItemDepend {
    subsys: NonNull<bindings::configfs_subsystem>,
    item: NonNull<bindings::config_item>,
}

// SAFETY: the configfs calls made through the pointers are thread safe.
unsafe impl Send for ItemDepend {}
// SAFETY: as above.
unsafe impl Sync for ItemDepend {}

impl ItemDepend {
    /// Finds the child `name` of `subsys`'s root directory.
    ///
    /// No reference to the item is kept: the caller makes sure the value lives no longer
    /// than the item, typically by storing it in the item's own data.
    ///
    /// # Safety
    ///
    /// `subsys` is a registered subsystem that outlives the value; the returned value is
    /// dropped before the item `name` is freed.
    pub(crate) unsafe fn find(
        subsys: NonNull<bindings::configfs_subsystem>,
        name: &CStr,
    ) -> Result<Self> {
        let s = subsys.as_ptr();
        // SAFETY: `s` is registered (safety requirement); its children are looked up
        // under its `su_mutex`, as `config_group_find_item` requires.
        let item = unsafe {
            bindings::mutex_lock(&raw mut (*s).su_mutex);
            let item = bindings::config_group_find_item(&raw mut (*s).su_group, name.as_char_ptr());
            bindings::mutex_unlock(&raw mut (*s).su_mutex);
            item
        };
        let item = NonNull::new(item).ok_or(ENOENT)?;
        // SAFETY: `config_group_find_item` took a reference; the item stays valid without
        // it by the safety requirement.
        unsafe { bindings::config_item_put(item.as_ptr()) };
        Ok(Self { subsys, item })
    }

    /// Takes a dependency on the item: fails with `ENOENT` if it is being removed.
    ///
    /// Must not be called from a configfs callback that holds the subsystem's locks
    /// (`mkdir`, `rmdir`); attribute reads and writes are fine.
    pub(crate) fn depend(&self) -> Result {
        // SAFETY: both pointers are valid (type invariant).
        to_result(unsafe {
            bindings::configfs_depend_item(self.subsys.as_ptr(), self.item.as_ptr())
        })
    }

    /// Drops a dependency taken by [`ItemDepend::depend`].
    ///
    /// # Safety
    ///
    /// Each call pairs with an earlier successful [`ItemDepend::depend`] on this value.
    pub(crate) unsafe fn undepend(&self) {
        // SAFETY: the item is valid (type invariant) and a dependency is held (safety
        // requirement).
        unsafe { bindings::configfs_undepend_item(self.item.as_ptr()) };
    }
}
