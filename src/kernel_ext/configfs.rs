// SPDX-License-Identifier: GPL-2.0

//! Keeping a configfs directory from being removed while it is in use
//! (`configfs_depend_item_unlocked`), which the kernel crate's configfs does not wrap.

use core::ptr::NonNull;
use kernel::{bindings, error::to_result, prelude::*, str::CStrExt};

/// A dependency on a child directory (item) of a configfs subsystem's root: while it
/// exists, `rmdir` of the directory fails with `EBUSY`. Dropping it lets `rmdir` go on.
///
/// # Invariants
///
/// A dependency on `item` was taken (`configfs_depend_item_unlocked`) and is released only
/// by drop; `item` stays valid as long as this value exists (see [`ItemDependency::take`]).
pub(crate) struct ItemDependency {
    item: NonNull<bindings::config_item>,
}

// SAFETY: the configfs calls made through the pointer are thread safe.
unsafe impl Send for ItemDependency {}
// SAFETY: no method takes `&self`.
unsafe impl Sync for ItemDependency {}

impl ItemDependency {
    /// Takes a dependency on the child `name` of `subsys`'s root directory, from an
    /// attribute write of that same child: fails with `ENOENT` if it is being removed.
    ///
    /// It takes only configfs's dirent spinlock (the subsystem is the caller's own), never
    /// an inode lock, so it may run where the caller holds other locks.
    ///
    /// # Safety
    ///
    /// `subsys` is registered; the caller runs in an attribute read or write of the item
    /// `name` (so `rmdir` cannot unlink it meanwhile); the returned value is dropped
    /// before the item is freed, and never from a `mkdir` or `rmdir` callback.
    pub(crate) unsafe fn take(
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
        // SAFETY: `config_group_find_item` took a reference, which is not needed: the item
        // stays valid by the safety requirement. It is linked under `s`'s root (found
        // there, and an attribute write keeps `rmdir` from unlinking it), so its group
        // and dentry are set, as the call requires.
        let ret = unsafe {
            bindings::config_item_put(item.as_ptr());
            bindings::configfs_depend_item_unlocked(s, item.as_ptr())
        };
        to_result(ret)?;
        // INVARIANT: the dependency was taken.
        Ok(Self { item })
    }
}

impl Drop for ItemDependency {
    fn drop(&mut self) {
        // SAFETY: the item is valid and a dependency on it is held (type invariant);
        // this is its only release.
        unsafe { bindings::configfs_undepend_item(self.item.as_ptr()) };
    }
}
