// SPDX-License-Identifier: GPL-2.0

//! IB client registration: following RDMA devices as they come and go.
//!
//! A driver implements [`ClientDriver`] and keeps a pinned [`Registration`] for as long as
//! it wants to be told about devices. The IB core calls `add` for every RDMA device present
//! at registration and every one added later, and `remove` when a device goes away or the
//! registration is dropped. For each device it takes, the registration makes one
//! [`RdmaDevice`] (the per-device object) and keeps it as the IB client's data of the
//! device; [`Registration::device`] finds it for a connection resolved to the device.
//!
//! On removal the registration stops handing the object out, tells its users
//! ([`super::DeviceUser`]), and waits until the last reference is gone before it returns
//! to the IB core: so nothing can use the device after its removal.

use core::{
    marker::{PhantomData, PhantomPinned},
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    error::to_result,
    ffi, new_mutex,
    prelude::*,
    str::CStr,
    sync::{Arc, Completion, Mutex},
    types::Opaque,
};

use super::{bindings, device::Device, rdma_device::RdmaDevice};

/// A driver that follows RDMA devices.
pub(crate) trait ClientDriver: Send + Sync + Sized + 'static {
    /// The cell through which the IB core's callbacks find this driver's registration.
    ///
    /// Each implementation returns its own `static`, declared next to it.
    fn cell() -> &'static ClientCell<Self>;

    /// A device appeared (or was present when the client registered) and its object was
    /// made. An error means the driver does not use this device.
    fn add(&self, dev: &RdmaDevice) -> Result;

    /// A device that `add` took is going away: `users` of its object were told to let go
    /// of it, and the object (and everything that held it: QPs, PDs, CQs) is gone.
    fn remove(&self, dev: &Device, users: usize);
}

/// Where the IB core's callbacks, which are given only a device, find the registration.
///
/// # Invariants
///
/// The pointer is null or points to the live, pinned [`Registration<T>`]: it is set only
/// by [`Registration::new`] before `ib_register_client`, and cleared by its drop after
/// `ib_unregister_client` has returned (after which no callback runs).
pub(crate) struct ClientCell<T: ClientDriver> {
    registration: AtomicPtr<Registration<T>>,
    _driver: PhantomData<T>,
}

impl<T: ClientDriver> ClientCell<T> {
    /// An empty cell, for a `static`.
    pub(crate) const fn new() -> Self {
        Self {
            registration: AtomicPtr::new(ptr::null_mut()),
            _driver: PhantomData,
        }
    }

    /// The registration, while registered.
    pub(crate) fn get(&self) -> Option<&Registration<T>> {
        let reg = self.registration.load(Ordering::Acquire);
        // SAFETY: by the type invariant, a non-null pointer is a live, pinned registration.
        unsafe { reg.as_ref() }
    }
}

impl<T: ClientDriver> Default for ClientCell<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The IB client's data for one device: its object while the device is present, and the
/// completion the object signals when its last reference is gone.
#[pin_data]
struct Slot {
    #[pin]
    released: Completion,
    /// Cleared (under the registration's `lookup` lock) when removal starts.
    dev: Option<Arc<RdmaDevice>>,
}

/// A registered IB client; unregistered on drop (which removes every device first).
///
/// # Invariants
///
/// `client` is registered with the IB core from the end of initialisation until drop, and
/// `T::cell()` points to this registration for that whole time. The client data of each
/// device `add` took is a leaked `Pin<KBox<Slot>>`, read and changed only under `lookup`.
#[pin_data(PinnedDrop)]
pub(crate) struct Registration<T: ClientDriver> {
    driver: T,
    /// Serialises looking up a device's object with its removal.
    #[pin]
    lookup: Mutex<()>,
    #[pin]
    _pin: PhantomPinned,
    #[pin]
    client: Opaque<bindings::ib_client>,
}

// SAFETY: the IB client is only touched by the IB core (which locks) and by drop; the
// driver is `Sync`, the slots are behind `lookup`.
unsafe impl<T: ClientDriver> Sync for Registration<T> {}
// SAFETY: registering and unregistering may happen on any thread; the driver is `Send`.
unsafe impl<T: ClientDriver> Send for Registration<T> {}

impl<T: ClientDriver> Registration<T> {
    /// Registers `driver` as IB client `name`. `add` runs for every present device before
    /// this returns. Fails with `EBUSY` if `T` is already registered.
    pub(crate) fn new(name: &'static CStr, driver: T) -> impl PinInit<Self, Error> {
        try_pin_init!(&this in Self {
            driver,
            lookup <- new_mutex!((), "rswap::ib::Registration::lookup"),
            _pin: PhantomPinned,
            client <- Opaque::try_ffi_init(move |client: *mut bindings::ib_client| {
                // SAFETY: `try_ffi_init` gives a pointer valid for writes; all-zeroes is a
                // valid `ib_client` (no callbacks, no name), completed below.
                unsafe { ptr::write_bytes(client, 0, 1) };
                // SAFETY: as above; the fields are plain pointers.
                unsafe {
                    (*client).name = name.as_char_ptr();
                    (*client).add = Some(add_callback::<T>);
                    (*client).remove = Some(remove_callback::<T>);
                }
                let cell = &T::cell().registration;
                cell.compare_exchange(
                    ptr::null_mut(),
                    this.as_ptr(),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .map_err(|_| EBUSY)?;
                // SAFETY: `client` is initialised and pinned inside `this` until drop, which
                // unregisters it. The callbacks may run from here on: `driver` and `lookup`
                // are already initialised and the cell points to `this`.
                let ret = to_result(unsafe { bindings::ib_register_client(client) });
                if ret.is_err() {
                    cell.store(ptr::null_mut(), Ordering::Release);
                }
                ret
            }),
        })
    }

    /// The object of `dev`, unless the client did not take the device or its removal has
    /// started.
    pub(crate) fn device(&self, dev: &Device) -> Option<Arc<RdmaDevice>> {
        let _guard = self.lookup.lock();
        // SAFETY: `dev` is valid and the client is registered (type invariant).
        let slot = unsafe { bindings::rswap_ib_get_client_data(dev.as_raw(), self.client.get()) };
        // SAFETY: a non-null client data is a live `Slot` (type invariant); removal clears
        // it under `lookup`, which we hold, before freeing the slot.
        let slot = unsafe { slot.cast::<Slot>().as_ref() }?;
        slot.dev.clone()
    }
}

/// Where a connection finds the object of the device its route resolved to: the IB
/// client's lookup, handed down to whoever connects (rather than reached through a global).
pub(crate) trait Devices: Send + Sync {
    /// The object of `dev`, if the client took the device and its removal has not started.
    fn device(&self, dev: &Device) -> Option<Arc<RdmaDevice>>;
}

/// A client's cell looks devices up in its registration, once registered.
impl<T: ClientDriver> Devices for ClientCell<T> {
    fn device(&self, dev: &Device) -> Option<Arc<RdmaDevice>> {
        self.get()?.device(dev)
    }
}

#[pinned_drop]
impl<T: ClientDriver> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: by the type invariant the client is registered; this calls `remove` for
        // every device that `add` took and waits for callbacks in flight.
        unsafe { bindings::ib_unregister_client(self.client.get()) };
        // INVARIANT: no callback runs any more, so the cell may forget this registration.
        T::cell()
            .registration
            .store(ptr::null_mut(), Ordering::Release);
    }
}

/// The IB core's `add` callback.
///
/// # Safety
///
/// Called by the IB core with a valid device, while the client is registered.
unsafe extern "C" fn add_callback<T: ClientDriver>(raw: *mut bindings::ib_device) -> ffi::c_int {
    let Some(reg) = T::cell().get() else {
        return ENODEV.to_errno();
    };
    // SAFETY: the IB core keeps the device valid until `remove` returns; the reference
    // lives only for this call.
    let dev = unsafe { Device::from_raw(raw) };
    let added = (|| -> Result<Pin<KBox<Slot>>> {
        let mut slot = KBox::pin_init(
            pin_init!(Slot {
                released <- Completion::new(),
                dev: None,
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: the device stays valid until `remove_callback` returns, and that waits
        // for `released` (the slot is freed only after that).
        let obj = unsafe { RdmaDevice::new(dev, &slot.released)? };
        if let Err(e) = reg.driver.add(&obj) {
            drop(obj);
            slot.released.wait_for_completion();
            return Err(e);
        }
        // SAFETY: `dev` is not structurally pinned; setting it moves nothing.
        unsafe { slot.as_mut().get_unchecked_mut() }.dev = Some(obj);
        Ok(slot)
    })();
    match added {
        Ok(slot) => {
            let _guard = reg.lookup.lock();
            // SAFETY: the pointer of a leaked pinned box; `remove_callback` takes it back.
            let data = unsafe { Pin::into_inner_unchecked(slot) };
            // SAFETY: `raw` is valid and `reg.client` is registered; the IB core keeps the
            // pointer until it passes it to `remove_callback`.
            unsafe {
                bindings::ib_set_client_data(raw, reg.client.get(), KBox::into_raw(data).cast())
            };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// The IB core's `remove` callback.
///
/// # Safety
///
/// Called by the IB core with a valid device and the client data `add_callback` set for it
/// (or null when `add` did not take the device), once.
unsafe extern "C" fn remove_callback<T: ClientDriver>(
    raw: *mut bindings::ib_device,
    data: *mut ffi::c_void,
) {
    let Some(reg) = T::cell().get() else {
        return;
    };
    if data.is_null() {
        return;
    }
    let slot = data.cast::<Slot>();
    let obj = {
        let _guard = reg.lookup.lock();
        // SAFETY: `raw` is valid and `reg.client` registered; no lookup finds the slot
        // after this.
        unsafe { bindings::ib_set_client_data(raw, reg.client.get(), ptr::null_mut()) };
        // SAFETY: the slot is live (it is freed below) and only changed under `lookup`.
        unsafe { (*slot).dev.take() }
    };
    let users = obj.map_or(0, |obj| obj.remove_users());
    // SAFETY: the slot is live until freed below; `released` is pinned inside it.
    unsafe { (*slot).released.wait_for_completion() };
    // SAFETY: the device is valid for the duration of this callback.
    reg.driver.remove(unsafe { Device::from_raw(raw) }, users);
    // SAFETY: `data` came from `KBox::into_raw` in `add_callback`, the IB core passes it
    // here once, and the object that pointed into it is gone.
    drop(unsafe { KBox::from_raw(slot) });
}
