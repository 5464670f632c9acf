// SPDX-License-Identifier: GPL-2.0

//! rswap's object for one RDMA device: who uses the device, so that its removal reaches
//! exactly them, and a reference that keeps the device until the last user lets go.

use core::ptr::NonNull;
use kernel::{
    new_mutex,
    prelude::*,
    str::CStr,
    sync::{Arc, Completion, Mutex},
};

use super::device::Device;

/// Something that runs on an RDMA device and must let go of it when the device goes away.
pub(crate) trait DeviceUser: Send + Sync {
    /// The device is being removed: stop using it and drop every reference to its
    /// [`RdmaDevice`] soon (removal waits for that). Runs in process context.
    fn device_removed(&self);
}

struct Users {
    /// Set once the device's removal started: no one attaches any more.
    removing: bool,
    list: KVec<Arc<dyn DeviceUser>>,
}

/// Completes a [`Completion`] when dropped; the last field of [`RdmaDevice`], so it
/// signals that everything else of the object is gone.
///
/// # Invariants
///
/// The completion is valid until it is completed (its owner waits for that).
struct ReleaseOnDrop(NonNull<Completion>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        // SAFETY: valid until completed (type invariant); the owner frees it only after
        // its wait returns, and `complete_all` touches it for the last time before that.
        unsafe { self.0.as_ref() }.complete_all();
    }
}

/// The per-device object: created by the IB client when the device appears, shared
/// (reference counted) by everything that runs on the device.
///
/// Fields are dropped in declaration order: the (empty) users, then `released` says the
/// object is gone.
///
/// # Invariants
///
/// `dev` is valid as long as this object exists: the IB client's removal of the device
/// tells the users to let go, then waits until `released` is completed, i.e. until the
/// last reference is dropped.
#[pin_data]
pub(crate) struct RdmaDevice {
    dev: NonNull<super::bindings::ib_device>,
    #[pin]
    users: Mutex<Users>,
    released: ReleaseOnDrop,
}

// SAFETY: the device pointer is valid from any thread (type invariant); the users list is
// behind a mutex.
unsafe impl Send for RdmaDevice {}
// SAFETY: as above; shared access only reads or locks.
unsafe impl Sync for RdmaDevice {}

impl RdmaDevice {
    /// The object for `dev`.
    ///
    /// # Safety
    ///
    /// `dev` and `released` must stay valid until `released` is completed.
    pub(super) unsafe fn new(dev: &Device, released: &Completion) -> Result<Arc<Self>> {
        let raw = NonNull::new(dev.as_raw()).ok_or(EINVAL)?;
        // INVARIANT: the caller keeps `dev` valid until `released` is completed, which
        // happens when this object is dropped.
        Arc::pin_init(
            try_pin_init!(Self {
                dev: raw,
                users <- new_mutex!(
                    Users {
                        removing: false,
                        list: KVec::new(),
                    },
                    "rswap::RdmaDevice::users"
                ),
                released: ReleaseOnDrop(NonNull::from(released)),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// The device.
    pub(crate) fn device(&self) -> &Device {
        // SAFETY: valid while this object exists (type invariant).
        unsafe { Device::from_raw(self.dev.as_ptr()) }
    }

    /// The device's name, e.g. `rxe0` (for messages).
    pub(crate) fn name(&self) -> &CStr {
        self.device().name()
    }

    /// Registers `user`, which [`DeviceUser::device_removed`] will reach when the device
    /// goes away. `ENODEV` if its removal has started.
    pub(crate) fn attach(&self, user: Arc<dyn DeviceUser>) -> Result {
        let mut users = self.users.lock();
        if users.removing {
            return Err(ENODEV);
        }
        users.list.push(user, GFP_KERNEL)?;
        Ok(())
    }

    /// Forgets `user` (matched by identity); nothing if it is not attached.
    pub(crate) fn detach(&self, user: &dyn DeviceUser) {
        let this = core::ptr::from_ref(user).cast::<()>();
        let mut users = self.users.lock();
        if let Some(i) = users
            .list
            .iter()
            .position(|u| Arc::as_ptr(u).cast::<()>() == this)
        {
            let _ = users.list.remove(i);
        }
    }

    /// Starts the device's removal: no one attaches any more, and every attached user is
    /// told. Returns how many there were.
    pub(super) fn remove_users(&self) -> usize {
        let list = {
            let mut users = self.users.lock();
            users.removing = true;
            core::mem::take(&mut users.list)
        };
        for user in list.iter() {
            user.device_removed();
        }
        list.len()
    }
}
