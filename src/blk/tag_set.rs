// SPDX-License-Identifier: GPL-2.0

//! Tag sets and the blk-mq operations table.

use core::ptr;
use kernel::{error::to_result, ffi, prelude::*, sync::Arc, types::Opaque};

use super::{
    bindings,
    request::{self, OwnedRequest, Pdu, Status, TimedOutRequest},
};
use crate::ib::cqe::Wc;

/// What to do with a request that timed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeoutAction {
    /// The driver makes sure it completes (for rswap: its QP was moved to the error state,
    /// so the work request holding it is flushed and its completion ends it).
    Done,
    /// Re-arm the timer: the driver is recovering and will complete or requeue it.
    ResetTimer,
}

/// A blk-mq driver.
pub(crate) trait Operations: Sized + Send + Sync + 'static {
    /// The driver's per-request data, preallocated per tag.
    type Data: Default + Send;

    /// Issue `rq` on hardware queue `hw_queue`: post it (ownership moves to the work
    /// request) or give it back with a status (blk-mq ends it with an error or, for
    /// [`Status::Resource`], retries it later). Runs in atomic context: no sleeping, no
    /// allocation.
    fn queue_rq(
        &self,
        hw_queue: u32,
        rq: OwnedRequest<Self>,
    ) -> core::result::Result<(), (Status, OwnedRequest<Self>)>;

    /// The work request carrying `rq`, issued on hardware queue `hw_queue`, completed:
    /// end or requeue it. Runs in softirq context.
    fn complete(&self, hw_queue: u32, rq: OwnedRequest<Self>, wc: &Wc<'_>);

    /// `rq` timed out on hardware queue `hw_queue`.
    fn timeout(&self, hw_queue: u32, rq: &TimedOutRequest<'_>) -> TimeoutAction;
}

/// A blk-mq tag set for driver `T` (`struct blk_mq_tag_set`), freed on drop.
///
/// # Invariants
///
/// `set` was allocated by `blk_mq_alloc_tag_set` and is freed only by drop; its
/// `driver_data` points to `driver`, which this value keeps alive.
#[pin_data(PinnedDrop)]
pub(crate) struct TagSet<T: Operations> {
    #[pin]
    set: Opaque<kernel::bindings::blk_mq_tag_set>,
    driver: Arc<T>,
}

// SAFETY: blk-mq tag sets are used from any CPU; the driver is `Send + Sync`.
unsafe impl<T: Operations> Send for TagSet<T> {}
// SAFETY: as above.
unsafe impl<T: Operations> Sync for TagSet<T> {}

impl<T: Operations> TagSet<T> {
    const OPS: kernel::bindings::blk_mq_ops = kernel::bindings::blk_mq_ops {
        queue_rq: Some(queue_rq_callback::<T>),
        timeout: Some(timeout_callback::<T>),
        init_hctx: Some(init_hctx_callback::<T>),
        init_request: Some(init_request_callback::<T>),
        // SAFETY: all-zeroes is a valid `blk_mq_ops` (no callbacks).
        ..unsafe { core::mem::zeroed() }
    };

    /// A tag set of `hw_queues` hardware queues, `depth` tags each, serving `driver`.
    pub(crate) fn new(hw_queues: u32, depth: u32, driver: Arc<T>) -> impl PinInit<Self, Error> {
        let data = Arc::as_ptr(&driver).cast_mut().cast::<ffi::c_void>();
        try_pin_init!(Self {
            driver,
            set <- Opaque::try_ffi_init(move |set: *mut kernel::bindings::blk_mq_tag_set| {
                // SAFETY: `set` is valid for writes; all-zeroes is a valid empty tag set.
                unsafe { ptr::write_bytes(set, 0, 1) };
                // SAFETY: as above; plain fields.
                unsafe {
                    (*set).ops = &Self::OPS;
                    (*set).nr_hw_queues = hw_queues;
                    (*set).queue_depth = depth;
                    (*set).numa_node = kernel::bindings::NUMA_NO_NODE;
                    (*set).cmd_size = core::mem::size_of::<Pdu<T::Data>>() as u32;
                    (*set).timeout = bindings::rswap_blk_default_timeout();
                    (*set).driver_data = data;
                }
                // SAFETY: `set` is initialised and pinned until drop frees it.
                to_result(unsafe { kernel::bindings::blk_mq_alloc_tag_set(set) })
            }),
        })
    }

    /// The raw pointer, for [`super::Disk`].
    pub(super) fn as_raw(&self) -> *mut kernel::bindings::blk_mq_tag_set {
        self.set.get()
    }
}

#[pinned_drop]
impl<T: Operations> PinnedDrop for TagSet<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: by the type invariant the tag set is allocated; every disk using it was
        // deleted before (the disk owns its tag set and drops it last).
        unsafe { kernel::bindings::blk_mq_free_tag_set(self.set.get()) };
    }
}

/// Sets each hardware queue's driver data to the driver.
///
/// # Safety
///
/// Called by blk-mq with a valid hardware context and the tag set's `driver_data`.
unsafe extern "C" fn init_hctx_callback<T: Operations>(
    hctx: *mut kernel::bindings::blk_mq_hw_ctx,
    data: *mut ffi::c_void,
    _index: ffi::c_uint,
) -> ffi::c_int {
    // SAFETY: `hctx` is valid; `data` is the driver, alive as long as the tag set.
    unsafe { bindings::rswap_blk_hctx_set_driver_data(hctx, data) };
    0
}

/// # Safety
///
/// Called by blk-mq for each request of a tag set made by [`TagSet::new`] for `T`.
unsafe extern "C" fn init_request_callback<T: Operations>(
    _set: *mut kernel::bindings::blk_mq_tag_set,
    rq: *mut kernel::bindings::request,
    _hctx_idx: ffi::c_uint,
    _numa_node: ffi::c_int,
) -> ffi::c_int {
    // SAFETY: the tag set's `cmd_size` is that of `Pdu<T::Data>`.
    unsafe { request::init_pdu::<T::Data>(rq) };
    0
}

/// The driver serving hardware context `hctx`, and the context's index.
///
/// # Safety
///
/// `hctx` must be a valid hardware context of a tag set made by [`TagSet::new`] for `T`,
/// and the returned reference must not outlive that tag set (which keeps the driver).
unsafe fn driver_of_hctx<'a, T: Operations>(
    hctx: *mut kernel::bindings::blk_mq_hw_ctx,
) -> (&'a T, u32) {
    // SAFETY: `hctx` is valid; its driver data was set to the driver by `init_hctx`, and
    // the driver lives as long as the tag set (the caller's guarantee covers `'a`).
    unsafe {
        (
            &*bindings::rswap_blk_hctx_driver_data(hctx).cast::<T>(),
            bindings::rswap_blk_hctx_index(hctx),
        )
    }
}

/// The driver serving request `rq`, and the index of its hardware queue.
///
/// # Safety
///
/// `rq` must be a valid request of a tag set made by [`TagSet::new`] for `T`, and the
/// returned reference must not outlive that tag set.
pub(super) unsafe fn driver_of_request<'a, T: Operations>(
    rq: *mut kernel::bindings::request,
) -> (&'a T, u32) {
    // SAFETY: a valid request of such a tag set has a valid hardware context of it.
    unsafe { driver_of_hctx(bindings::rswap_blk_rq_hctx(rq)) }
}

/// # Safety
///
/// Called by blk-mq with a valid hardware context of a tag set of `T` and a request to
/// issue.
unsafe extern "C" fn queue_rq_callback<T: Operations>(
    hctx: *mut kernel::bindings::blk_mq_hw_ctx,
    bd: *const kernel::bindings::blk_mq_queue_data,
) -> kernel::bindings::blk_status_t {
    // SAFETY: `hctx` is a valid context of a tag set of `T`, alive for the call.
    let (driver, index) = unsafe { driver_of_hctx::<T>(hctx) };
    // SAFETY: `bd` is valid for the call.
    let raw = unsafe { bindings::rswap_blk_mq_queue_data_rq(bd) };
    // SAFETY: blk-mq hands the request to the driver; starting it is the driver's job.
    unsafe { kernel::bindings::blk_mq_start_request(raw) };
    // SAFETY: the request is started, has a `Pdu<T::Data>` and no other owner.
    let Some(rq) = (unsafe { OwnedRequest::<T>::from_raw(raw) }) else {
        return Status::IoErr.as_blk();
    };
    match driver.queue_rq(index, rq) {
        Ok(()) => Status::Ok.as_blk(),
        Err((status, rq)) => {
            // blk-mq ends (or requeues) the request because of the returned status.
            let _ = rq.into_raw();
            status.as_blk()
        }
    }
}

/// # Safety
///
/// Called by blk-mq with a valid, started request of a tag set of `T`.
unsafe extern "C" fn timeout_callback<T: Operations>(
    rq: *mut kernel::bindings::request,
) -> kernel::bindings::blk_eh_timer_return {
    // SAFETY: `rq` is a valid request of a tag set of `T`, alive for the call.
    let (driver, index) = unsafe { driver_of_request::<T>(rq) };
    // SAFETY: the request is valid for the call.
    let view = unsafe { TimedOutRequest::from_raw(rq) };
    match driver.timeout(index, &view) {
        TimeoutAction::Done => kernel::bindings::blk_eh_timer_return_BLK_EH_DONE,
        TimeoutAction::ResetTimer => kernel::bindings::blk_eh_timer_return_BLK_EH_RESET_TIMER,
    }
}
