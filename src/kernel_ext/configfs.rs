// SPDX-License-Identifier: GPL-2.0

//! Keeping a configfs directory from being removed while it is in use
//! (`configfs_depend_item_unlocked`), which the kernel crate's configfs does not wrap.

use core::{
    marker::PhantomPinned,
    pin::Pin,
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    bindings,
    configfs::{HasGroup, ItemType, Subsystem},
    error::to_result,
    prelude::*,
    str::CStrExt,
};

extern "C" {
    fn rswap_configfs_root_lock();
    fn rswap_configfs_root_unlock();
}

/// The registered subsystem of a live [`DependableSubsystem`], or null; read and written
/// only under the root lock ([`RootLock`]).
static ROOT: AtomicPtr<bindings::configfs_subsystem> = AtomicPtr::new(ptr::null_mut());

/// The root lock, held while this value lives: a sleeping lock (it is held across
/// configfs's own mutexes).
struct RootLock;

impl RootLock {
    fn lock() -> Self {
        // SAFETY: a statically initialised mutex, taken in process context.
        unsafe { rswap_configfs_root_lock() };
        RootLock
    }

    /// The recorded subsystem, or null.
    fn root(&self) -> *mut bindings::configfs_subsystem {
        ROOT.load(Ordering::Relaxed)
    }

    fn set_root(&self, root: *mut bindings::configfs_subsystem) {
        ROOT.store(root, Ordering::Relaxed);
    }
}

impl Drop for RootLock {
    fn drop(&mut self) {
        // SAFETY: taken by `lock`, on this task.
        unsafe { rswap_configfs_root_unlock() };
    }
}

/// A configfs subsystem whose child directories can be kept from `rmdir`
/// ([`ItemDependency::take`]). One per module.
///
/// # Invariants
///
/// While it exists after its initialiser succeeded, the root lock's record points at its
/// registered subsystem; its drop clears the record, under the lock, before the subsystem
/// is unregistered.
#[pin_data(PinnedDrop)]
pub(crate) struct DependableSubsystem<D> {
    #[pin]
    inner: Subsystem<D>,
    #[pin]
    _pin: PhantomPinned,
}

impl<D> DependableSubsystem<D> {
    /// Registers subsystem `name` with the root directory's `item_type` and `data`;
    /// `EBUSY` if the module has one already.
    pub(crate) fn new(
        name: &'static CStr,
        item_type: &'static ItemType<Subsystem<D>, D>,
        data: impl PinInit<D, Error>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            inner <- Subsystem::new(name, item_type, data),
            _pin: PhantomPinned,
        })
        .pin_chain(|this| {
            let raw = subsystem_ptr(&this.inner);
            let lock = RootLock::lock();
            if !lock.root().is_null() {
                return Err(EBUSY);
            }
            // INVARIANT: recorded once registered; cleared by drop.
            lock.set_root(raw);
            Ok(())
        })
    }
}

/// The address of the `configfs_subsystem` that `subsys` wraps.
fn subsystem_ptr<D>(subsys: &Subsystem<D>) -> *mut bindings::configfs_subsystem {
    // SAFETY: a `Subsystem` is a `configfs_subsystem`, whose `su_group` is its group; only
    // addresses are computed.
    unsafe {
        let group = <Subsystem<D> as HasGroup<D>>::group(subsys);
        kernel::container_of!(group, bindings::configfs_subsystem, su_group).cast_mut()
    }
}

#[pinned_drop]
impl<D> PinnedDrop for DependableSubsystem<D> {
    fn drop(self: Pin<&mut Self>) {
        let raw = subsystem_ptr(&self.inner);
        let lock = RootLock::lock();
        // A failed `new` recorded nothing, or another subsystem's record.
        if lock.root() == raw {
            lock.set_root(ptr::null_mut());
        }
    }
}

/// A dependency on a child directory (item) of the module's [`DependableSubsystem`]:
/// while it exists, `rmdir` of the directory fails with `EBUSY`. Dropping it lets `rmdir`
/// go on.
///
/// # Invariants
///
/// A dependency on `item` was taken (`configfs_depend_item_unlocked`) and is released only
/// by drop, and a reference on `item` is held until then, so the item stays valid and
/// (the dependency refuses its `rmdir`) linked, with its dentry.
pub(crate) struct ItemDependency {
    item: NonNull<bindings::config_item>,
}

// SAFETY: the configfs calls made through the pointer are thread safe.
unsafe impl Send for ItemDependency {}
// SAFETY: no method takes `&self`.
unsafe impl Sync for ItemDependency {}

impl ItemDependency {
    /// Takes a dependency on the child `name` of the module's [`DependableSubsystem`]'s
    /// root directory: `ENODEV` if there is no such subsystem, `ENOENT` if it has no such
    /// child or the child is being removed.
    ///
    /// It sleeps (the subsystem's mutex). Calling it from the subsystem's `mkdir` or
    /// `rmdir` callbacks, which hold that mutex, deadlocks.
    pub(crate) fn take(name: &CStr) -> Result<Self> {
        let lock = RootLock::lock();
        let s = lock.root();
        if s.is_null() {
            return Err(ENODEV);
        }
        // SAFETY: `s` is registered while recorded, and the record cannot be cleared (nor
        // the subsystem dropped past its drop's first step) while this holds the lock. Its
        // children are looked up under its `su_mutex`, as `config_group_find_item`
        // requires; the reference it takes on the item is kept.
        let item = unsafe {
            bindings::mutex_lock(&raw mut (*s).su_mutex);
            let item = bindings::config_group_find_item(&raw mut (*s).su_group, name.as_char_ptr());
            bindings::mutex_unlock(&raw mut (*s).su_mutex);
            item
        };
        let item = NonNull::new(item).ok_or(ENOENT)?;
        // SAFETY: `s` is registered (above); `item` is valid (its reference). If it was
        // unlinked since the lookup, configfs finds no dirent for it under `s` and fails.
        let ret = unsafe { bindings::configfs_depend_item_unlocked(s, item.as_ptr()) };
        drop(lock);
        if let Err(e) = to_result(ret) {
            // SAFETY: the reference taken by the lookup, given back.
            unsafe { bindings::config_item_put(item.as_ptr()) };
            return Err(e);
        }
        // INVARIANT: the dependency was taken; the reference is kept.
        Ok(Self { item })
    }
}

impl Drop for ItemDependency {
    fn drop(&mut self) {
        // SAFETY: the item is valid, linked, and a dependency on it is held (type
        // invariant); this is its only release, then its reference's.
        unsafe {
            bindings::configfs_undepend_item(self.item.as_ptr());
            bindings::config_item_put(self.item.as_ptr());
        }
    }
}
