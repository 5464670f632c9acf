// SPDX-License-Identifier: GPL-2.0

//! IB client registration: following RDMA devices as they come and go.
//!
//! A driver implements [`ClientDriver`] and keeps a pinned [`Registration`] for as long as
//! it wants to be told about devices. The IB core calls `add` for every RDMA device present
//! at registration and every one added later, and `remove` when a device goes away or the
//! registration is dropped. What `add` returns is owned by the IB core's per-device client
//! data until `remove` hands it back, exactly once.

use core::{
    marker::{PhantomData, PhantomPinned},
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{error::to_result, ffi, prelude::*, str::CStr, types::Opaque};

use super::{bindings, Device};

/// A driver that follows RDMA devices.
pub(crate) trait ClientDriver: Send + Sync + Sized + 'static {
    /// What the driver keeps for each device it took, released in [`Self::remove`].
    type DeviceData: Send;

    /// The cell through which the IB core's callbacks find this driver's registration.
    ///
    /// Each implementation returns its own `static`, declared next to it.
    fn cell() -> &'static ClientCell<Self>;

    /// A device appeared (or was present when the client registered).
    ///
    /// An error means the driver does not use this device; it gets no `remove` for it.
    fn add(&self, dev: &Device) -> Result<KBox<Self::DeviceData>>;

    /// A device that `add` took is going away; `data` is what `add` returned.
    ///
    /// Everything using the device must be gone when this returns.
    fn remove(&self, dev: &Device, data: KBox<Self::DeviceData>);
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

    fn get(&self) -> Option<&Registration<T>> {
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

/// A registered IB client; unregistered on drop (which removes every device first).
///
/// # Invariants
///
/// `client` is registered with the IB core from the end of initialisation until drop, and
/// `T::cell()` points to this registration for that whole time.
#[pin_data(PinnedDrop)]
pub(crate) struct Registration<T: ClientDriver> {
    driver: T,
    #[pin]
    _pin: PhantomPinned,
    #[pin]
    client: Opaque<bindings::ib_client>,
}

// SAFETY: the IB client is only touched by the IB core (which locks) and by drop; the
// driver is `Sync`.
unsafe impl<T: ClientDriver> Sync for Registration<T> {}
// SAFETY: registering and unregistering may happen on any thread; the driver is `Send`.
unsafe impl<T: ClientDriver> Send for Registration<T> {}

impl<T: ClientDriver> Registration<T> {
    /// Registers `driver` as IB client `name`. `add` runs for every present device before
    /// this returns. Fails with `EBUSY` if `T` is already registered.
    pub(crate) fn new(name: &'static CStr, driver: T) -> impl PinInit<Self, Error> {
        try_pin_init!(&this in Self {
            driver,
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
                // unregisters it. The callbacks may run from here on: `driver` is already
                // initialised and the cell points to `this`.
                let ret = to_result(unsafe { bindings::ib_register_client(client) });
                if ret.is_err() {
                    cell.store(ptr::null_mut(), Ordering::Release);
                }
                ret
            }),
        })
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
    match reg.driver.add(dev) {
        Ok(data) => {
            // SAFETY: `raw` is valid and `reg.client` is registered; the IB core keeps the
            // pointer until it passes it to `remove_callback`, which takes it back.
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
    // SAFETY: `data` came from `KBox::into_raw` in `add_callback` and the IB core passes it
    // here once, so ownership comes back exactly once.
    let data = unsafe { KBox::from_raw(data.cast::<T::DeviceData>()) };
    // SAFETY: the device is valid for the duration of this callback.
    let dev = unsafe { Device::from_raw(raw) };
    reg.driver.remove(dev, data);
}
