// SPDX-License-Identifier: GPL-2.0

//! A workqueue whose work makes progress when memory is short, and flushing delayed work.

use kernel::{str::CStrExt, workqueue::DelayedWork};

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
