// SPDX-License-Identifier: GPL-2.0

//! Tag sets and the blk-mq operations table that calls a driver's [`Operations`].

use core::ptr::{self, NonNull};
use kernel::{error::to_result, ffi, prelude::*, sync::Arc, types::Opaque};

use super::{
    bindings,
    operations::{Operations, Request, TimeoutAction},
    request::{self, Status, TimedOutRequest},
};

/// A blk-mq tag set for driver `T` (`struct blk_mq_tag_set`), freed on drop.
///
/// # Invariants
///
/// `set` was allocated by `blk_mq_alloc_tag_set` and is freed only by drop; its
/// `driver_data` points to `driver`, which this value keeps alive, and its `cmd_size` is
/// that of a `request::Pdu<T::RequestData>`. The last `poll_queues` of its hardware queues are its poll
/// queues, and it has a poll map exactly if there are any.
#[pin_data(PinnedDrop)]
pub(crate) struct TagSet<T: Operations> {
    #[pin]
    set: Opaque<kernel::bindings::blk_mq_tag_set>,
    poll_queues: u32,
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
        exit_hctx: Some(exit_hctx_callback::<T>),
        init_request: Some(init_request_callback::<T>),
        exit_request: Some(exit_request_callback::<T>),
        map_queues: Some(map_queues_callback::<T>),
        poll: Some(poll_callback::<T>),
        // SAFETY: all-zeroes is a valid `blk_mq_ops` (no callbacks).
        ..unsafe { core::mem::zeroed() }
    };

    /// A tag set of `hw_queues` hardware queues for all I/O and, after them, `poll_queues`
    /// for polled I/O ([`Operations::poll`]), `depth` tags each, serving `driver`; a
    /// request times out ([`Operations::timeout`]) after `timeout_ms`. With poll queues,
    /// the disks of the tag set support polling (`BLK_FEAT_POLL`).
    pub(crate) fn new(
        hw_queues: u32,
        poll_queues: u32,
        depth: u32,
        timeout_ms: u32,
        driver: Arc<T>,
    ) -> impl PinInit<Self, Error> {
        let data = Arc::as_ptr(&driver).cast_mut().cast::<ffi::c_void>();
        let cmd_size = u32::try_from(core::mem::size_of::<request::Pdu<T::RequestData>>());
        let polls = poll_queues;
        try_pin_init!(Self {
            // Before `set`: blk-mq maps the queues (`map_queues_callback`) while allocating.
            poll_queues: polls,
            set <- Opaque::try_ffi_init(move |set: *mut kernel::bindings::blk_mq_tag_set| {
                let cmd_size = cmd_size.map_err(|_| EINVAL)?;
                // SAFETY: `set` is valid for writes; all-zeroes is a valid empty tag set.
                unsafe { ptr::write_bytes(set, 0, 1) };
                // SAFETY: as above; plain fields.
                unsafe {
                    (*set).ops = &Self::OPS;
                    (*set).queue_depth = depth;
                    (*set).numa_node = kernel::bindings::NUMA_NO_NODE;
                    (*set).cmd_size = cmd_size;
                    (*set).timeout = bindings::rswap_blk_timeout(timeout_ms);
                    (*set).driver_data = data;
                }
                // SAFETY: `set` is valid and not allocated yet.
                unsafe { bindings::rswap_blk_tag_set_queues(set, hw_queues, polls) };
                // SAFETY: `set` is initialised and pinned until drop frees it.
                to_result(unsafe { kernel::bindings::blk_mq_alloc_tag_set(set) })
            }),
            driver,
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
        // deleted before (the disk owns its tag set and drops it last). This frees the
        // requests, calling `exit_request` for each.
        unsafe { kernel::bindings::blk_mq_free_tag_set(self.set.get()) };
    }
}

/// Points each hardware context's driver data at the driver's data for that queue.
///
/// # Safety
///
/// Called by blk-mq with a valid hardware context of a tag set made by [`TagSet::new`] for
/// `T`, whose `driver_data` is the `T` that tag set keeps alive.
unsafe extern "C" fn init_hctx_callback<T: Operations>(
    hctx: *mut kernel::bindings::blk_mq_hw_ctx,
    driver: *mut ffi::c_void,
    index: ffi::c_uint,
) -> ffi::c_int {
    // SAFETY: `driver` is the tag set's driver data, a `T` alive as long as the tag set.
    let driver = unsafe { &*driver.cast::<T>() };
    let Some(hwq) = driver.hw_queue(index) else {
        return EINVAL.to_errno();
    };
    let Some(ctx) = NonNull::new(hctx) else {
        return EINVAL.to_errno();
    };
    // SAFETY: blk-mq keeps the context valid until `exit_hctx`, which clears the slot.
    unsafe { T::hw_ctx(hwq).set(ctx) };
    // SAFETY: `hctx` is valid; the queue data lives as long as the driver, hence as long
    // as the tag set and its requests.
    unsafe {
        bindings::rswap_blk_hctx_set_driver_data(
            hctx,
            ptr::from_ref(hwq).cast_mut().cast::<ffi::c_void>(),
        )
    };
    0
}

/// Forgets a hardware context that is going away.
///
/// # Safety
///
/// Called by blk-mq with a hardware context of a tag set made by [`TagSet::new`] for `T`
/// that `init_hctx` initialised.
unsafe extern "C" fn exit_hctx_callback<T: Operations>(
    hctx: *mut kernel::bindings::blk_mq_hw_ctx,
    _index: ffi::c_uint,
) {
    // SAFETY: `hctx` is a valid, initialised context of a tag set of `T`.
    let hwq = unsafe { hw_queue_of::<T>(hctx) };
    T::hw_ctx(hwq).clear();
}

/// # Safety
///
/// Called by blk-mq for each request of a tag set made by [`TagSet::new`] for `T`.
unsafe extern "C" fn init_request_callback<T: Operations>(
    set: *mut kernel::bindings::blk_mq_tag_set,
    rq: *mut kernel::bindings::request,
    _hctx_idx: ffi::c_uint,
    _numa_node: ffi::c_int,
) -> ffi::c_int {
    // SAFETY: the tag set's `cmd_size` is that of a `Pdu<T::RequestData>` (type
    // invariant), the PDU of a new request is not initialised, and blk-mq keeps it in place
    // until `exit_request`.
    let data = unsafe { request::init_data::<T::RequestData>(rq, work_callback::<T>) };
    // SAFETY: `set` is a tag set made by `TagSet::new` for `T`: its driver data is the `T`
    // that the tag set keeps alive.
    let driver = unsafe { &*(*set).driver_data.cast::<T>() };
    // SAFETY: `data` was initialised just now, and blk-mq does not use the request before
    // this callback returns.
    match driver.init_request(unsafe { &mut *data }) {
        Ok(()) => 0,
        Err(e) => {
            // blk-mq forgets a request whose initialisation failed without calling
            // `exit_request`: drop its data here.
            // SAFETY: initialised above and no longer used.
            unsafe { request::drop_data::<T::RequestData>(rq) };
            e.to_errno()
        }
    }
}

/// # Safety
///
/// Called by blk-mq for each request of a tag set made by [`TagSet::new`] for `T` when the
/// tag set frees it; every request has ended by then.
unsafe extern "C" fn exit_request_callback<T: Operations>(
    _set: *mut kernel::bindings::blk_mq_tag_set,
    rq: *mut kernel::bindings::request,
    _hctx_idx: ffi::c_uint,
) {
    // SAFETY: `init_request` initialised the data, and nothing uses a request being freed.
    unsafe { request::drop_data::<T::RequestData>(rq) };
}

/// Runs a request that [`request::OwnedRequest::defer`] queued, in the workqueue's worker.
///
/// # Safety
///
/// Called by the workqueue with the work item of the PDU of a request of a tag set of `T`,
/// queued by `defer`, which gave up the request's ownership to it.
unsafe extern "C" fn work_callback<T: Operations>(work: *mut kernel::bindings::work_struct) {
    // SAFETY: `work` is the work item of such a PDU (this function's contract).
    let rq = unsafe { request::request_of_work::<T::RequestData>(work) };
    let Some(rq) = NonNull::new(rq) else {
        return;
    };
    // SAFETY: a started, owned request of a tag set of `T`, whose ownership `defer` gave
    // to this work; taken back once, here.
    T::run_deferred(unsafe { Request::<T>::from_raw(rq) });
}

/// The driver data of hardware context `hctx`.
///
/// # Safety
///
/// `hctx` must be a valid hardware context of a tag set made by [`TagSet::new`] for `T`,
/// initialised by `init_hctx`, and the reference must not outlive that tag set.
unsafe fn hw_queue_of<'a, T: Operations>(
    hctx: *mut kernel::bindings::blk_mq_hw_ctx,
) -> &'a T::HwQueue {
    // SAFETY: `init_hctx` pointed the driver data at a `T::HwQueue` that lives as long as
    // the tag set (the caller's guarantee covers `'a`).
    unsafe { &*bindings::rswap_blk_hctx_driver_data(hctx).cast::<T::HwQueue>() }
}

/// # Safety
///
/// Called by blk-mq with a valid hardware context of a tag set of `T` and a request to
/// issue.
unsafe extern "C" fn queue_rq_callback<T: Operations>(
    hctx: *mut kernel::bindings::blk_mq_hw_ctx,
    bd: *const kernel::bindings::blk_mq_queue_data,
) -> kernel::bindings::blk_status_t {
    // SAFETY: `hctx` is a valid, initialised context of a tag set of `T`, alive for the
    // call.
    let hwq = unsafe { hw_queue_of::<T>(hctx) };
    // SAFETY: `bd` is valid for the call.
    let Some(raw) = NonNull::new(unsafe { bindings::rswap_blk_mq_queue_data_rq(bd) }) else {
        return Status::IoErr.as_raw();
    };
    // SAFETY: blk-mq hands the request to the driver; starting it is the driver's job.
    unsafe { kernel::bindings::blk_mq_start_request(raw.as_ptr()) };
    // SAFETY: the request is started, its PDU is an initialised `T::RequestData`, its
    // context's data is `T::HwQueue`, and blk-mq gave it to this call alone.
    let rq: Request<T> = unsafe { request::OwnedRequest::from_raw(raw) };
    match T::queue_rq(hwq, rq) {
        Ok(()) => Status::Ok.as_raw(),
        Err((status, rq)) => {
            // blk-mq ends (or requeues) the request because of the returned status.
            let _ = rq.into_raw();
            status.as_raw()
        }
    }
}

/// Maps the CPUs to the hardware queues of each map (default, read, poll).
///
/// # Safety
///
/// Called by blk-mq with a tag set made by [`TagSet::new`] for `T` (in its allocation or
/// an update of its queues).
unsafe extern "C" fn map_queues_callback<T: Operations>(
    set: *mut kernel::bindings::blk_mq_tag_set,
) {
    let field = set.cast::<Opaque<kernel::bindings::blk_mq_tag_set>>();
    // SAFETY: `set` is the `set` field of a `TagSet<T>` (the caller's guarantee), which
    // `Opaque` wraps transparently.
    let this = unsafe { kernel::container_of!(field, TagSet<T>, set) };
    // SAFETY: `this` is valid; `poll_queues` is initialised before the tag set is
    // allocated (`TagSet::new`) and never changes.
    let poll_queues = unsafe { (*this).poll_queues };
    // SAFETY: `set` is valid; blk-mq allocated a CPU map for each of its `nr_maps` maps,
    // and the tag set has `poll_queues` poll queues after its default ones (invariant).
    unsafe { bindings::rswap_blk_map_queues(set, poll_queues) };
}

/// # Safety
///
/// Called by blk-mq with a valid hardware context of a tag set of `T` (a poll queue's),
/// in process context.
unsafe extern "C" fn poll_callback<T: Operations>(
    hctx: *mut kernel::bindings::blk_mq_hw_ctx,
    _iob: *mut kernel::bindings::io_comp_batch,
) -> ffi::c_int {
    // SAFETY: `hctx` is a valid, initialised context of a tag set of `T`, alive for the
    // call.
    let hwq = unsafe { hw_queue_of::<T>(hctx) };
    ffi::c_int::try_from(T::poll(hwq)).unwrap_or(ffi::c_int::MAX)
}

/// # Safety
///
/// Called by blk-mq with a valid, started request of a tag set of `T`.
unsafe extern "C" fn timeout_callback<T: Operations>(
    rq: *mut kernel::bindings::request,
) -> kernel::bindings::blk_eh_timer_return {
    // SAFETY: `rq` is a valid request of a tag set of `T`, so its context is valid and
    // initialised; both live for the call.
    let hwq = unsafe { hw_queue_of::<T>(bindings::rswap_blk_rq_hctx(rq)) };
    // SAFETY: the request is valid for the call.
    let view = unsafe { TimedOutRequest::from_raw(rq) };
    match T::timeout(hwq, &view) {
        TimeoutAction::Done => kernel::bindings::blk_eh_timer_return_BLK_EH_DONE,
        TimeoutAction::ResetTimer => kernel::bindings::blk_eh_timer_return_BLK_EH_RESET_TIMER,
    }
}
