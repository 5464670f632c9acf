// SPDX-License-Identifier: GPL-2.0

//! A workqueue whose work makes progress when memory is short, work items embedded in
//! memory the caller keeps in place, and flushing delayed work.

use kernel::{str::CStrExt, types::Opaque, workqueue::DelayedWork};

/// A workqueue of rswap's own with a rescuer thread (`WQ_MEM_RECLAIM`), so its work makes
/// progress when memory is short: rswap is a swap device, and its recovery work is what
/// lets swap I/O finish. Destroyed (after running what is queued) on drop.
///
/// # Invariants
///
/// `wq` came from `alloc_workqueue` and is destroyed only by drop.
pub(crate) struct ReclaimWorkqueue {
    wq: core::ptr::NonNull<kernel::bindings::workqueue_struct>,
}

// SAFETY: workqueues are used and destroyed from any thread.
unsafe impl Send for ReclaimWorkqueue {}
// SAFETY: queueing work is thread safe.
unsafe impl Sync for ReclaimWorkqueue {}

impl ReclaimWorkqueue {
    /// Allocates an unbound reclaim-safe workqueue called `name`.
    pub(crate) fn new(name: &'static core::ffi::CStr) -> kernel::error::Result<Self> {
        let flags =
            kernel::bindings::wq_flags_WQ_MEM_RECLAIM | kernel::bindings::wq_flags_WQ_UNBOUND;
        // SAFETY: the format is "%s" with one NUL-terminated string argument that
        // outlives the workqueue (it is static).
        let wq = unsafe {
            kernel::bindings::alloc_workqueue_noprof(
                c"%s".as_char_ptr(),
                flags,
                0,
                name.as_char_ptr(),
            )
        };
        let wq = core::ptr::NonNull::new(wq).ok_or(kernel::error::code::ENOMEM)?;
        // INVARIANT: just allocated.
        Ok(Self { wq })
    }
}

impl ReclaimWorkqueue {
    /// Queues `work` (unless it is queued already: then `false`). Callable from any
    /// context, softirq included.
    ///
    /// # Safety
    ///
    /// `work` must stay in place and allocated until its function has started, and that
    /// function must be the one [`EmbeddedWork::init`] gave, with what it needs to run.
    pub(crate) unsafe fn queue(&self, work: &EmbeddedWork) -> bool {
        // SAFETY: the workqueue is valid (type invariant); `work` is an initialised work
        // item that stays in place until it ran (the caller's guarantee).
        unsafe {
            kernel::bindings::queue_work_on(
                kernel::bindings::wq_misc_consts_WORK_CPU_UNBOUND as i32,
                self.wq.as_ptr(),
                work.0.get(),
            )
        }
    }

    /// Waits until every work item queued so far has run.
    pub(crate) fn flush(&self) {
        // SAFETY: valid by the type invariant.
        unsafe { kernel::bindings::__flush_workqueue(self.wq.as_ptr()) };
    }
}

impl core::ops::Deref for ReclaimWorkqueue {
    type Target = kernel::workqueue::Queue;

    fn deref(&self) -> &kernel::workqueue::Queue {
        // SAFETY: the workqueue is valid until drop, which cannot run while the returned
        // reference (borrowing `self`) lives.
        unsafe { kernel::workqueue::Queue::from_raw(self.wq.as_ptr()) }
    }
}

impl Drop for ReclaimWorkqueue {
    fn drop(&mut self) {
        // SAFETY: valid by the type invariant; this is the only destroy. It waits for the
        // queued work to run first.
        unsafe { kernel::bindings::destroy_workqueue(self.wq.as_ptr()) };
    }
}

/// A `struct work_struct` embedded in memory whose owner keeps it in place (e.g. a block
/// request's data, which blk-mq allocates once per tag), for work whose function finds its
/// container with `container_of` rather than through a kernel-crate `Work<T>` pointer.
#[repr(transparent)]
pub(crate) struct EmbeddedWork(Opaque<kernel::bindings::work_struct>);

// SAFETY: a work item is queued and run from any thread; the workqueue core serialises
// what it does to the item.
unsafe impl Send for EmbeddedWork {}
// SAFETY: as above.
unsafe impl Sync for EmbeddedWork {}

impl Default for EmbeddedWork {
    fn default() -> Self {
        Self(Opaque::zeroed())
    }
}

impl EmbeddedWork {
    /// Sets the function the work item runs.
    ///
    /// # Safety
    ///
    /// The item must not be queued, and must stay in place from now until it is dropped
    /// or initialised again.
    pub(crate) unsafe fn init(
        &self,
        func: unsafe extern "C" fn(*mut kernel::bindings::work_struct),
    ) {
        let key = kernel::static_lock_class!();
        // SAFETY: the item is not queued and stays in place (the caller's guarantee); the
        // name and the key are static.
        unsafe {
            kernel::bindings::init_work_with_key(
                self.0.get(),
                Some(func),
                false,
                c"rswap::EmbeddedWork".as_char_ptr(),
                key.as_ptr(),
            )
        };
    }
}

/// Runs `dw` at once if it is waiting for its delay, and waits until it has run (the C
/// `flush_delayed_work`). Work that queues itself again while this runs stays queued.
pub(crate) fn flush_delayed_work<T: ?Sized, const ID: u64>(dw: &DelayedWork<T, ID>) {
    // SAFETY: `dw` is a valid, initialised delayed work; its `Work` is the `work` field of
    // the `delayed_work` it wraps (`raw_as_work`), so `container_of` gives that
    // `delayed_work`, which `flush_delayed_work` may be called on at any time.
    unsafe {
        let work = DelayedWork::raw_as_work(dw).cast::<kernel::bindings::work_struct>();
        let dwork = kernel::container_of!(work, kernel::bindings::delayed_work, work);
        kernel::bindings::flush_delayed_work(dwork);
    }
}
