// SPDX-License-Identifier: GPL-2.0

//! A hardware queue's context (`struct blk_mq_hw_ctx`), to stop and start the queue.

use core::ptr::NonNull;
use kernel::{
    new_spinlock,
    prelude::*,
    sync::{Arc, SpinLock},
};

/// Where a hardware queue's context is while it exists, i.e. between blk-mq's
/// `init_hctx` and `exit_hctx`. The driver stops the queue while it cannot take requests
/// (blk-mq then leaves them queued instead of retrying every few milliseconds) and starts
/// it when it can again; after `exit_hctx` both do nothing.
///
/// # Invariants
///
/// A context in `hctx` is valid: it is set by `init_hctx` and cleared by `exit_hctx`.
#[pin_data]
pub(crate) struct HwCtxSlot {
    #[pin]
    hctx: SpinLock<Option<NonNull<kernel::bindings::blk_mq_hw_ctx>>>,
}

// SAFETY: the context may be stopped and started from any thread; the pointer is only
// used under the lock.
unsafe impl Send for HwCtxSlot {}
// SAFETY: as above.
unsafe impl Sync for HwCtxSlot {}

impl HwCtxSlot {
    /// An empty slot, for a hardware queue that does not exist yet.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                hctx <- new_spinlock!(None, "rswap::blk::HwCtxSlot"),
            }),
            GFP_KERNEL,
        )
    }

    /// The context was initialised (`init_hctx`).
    ///
    /// # Safety
    ///
    /// `hctx` must stay valid until [`Self::clear`] is called.
    pub(super) unsafe fn set(&self, hctx: NonNull<kernel::bindings::blk_mq_hw_ctx>) {
        // INVARIANT: valid until `clear` (the caller's guarantee).
        *self.hctx.lock() = Some(hctx);
    }

    /// The context is going away (`exit_hctx`).
    pub(super) fn clear(&self) {
        *self.hctx.lock() = None;
    }

    /// Stops the hardware queue: blk-mq calls `queue_rq` on it no more until
    /// [`Self::start`]. Callable from `queue_rq` itself. Does not sleep.
    pub(crate) fn stop(&self) {
        if let Some(hctx) = *self.hctx.lock() {
            // SAFETY: valid while in the slot (type invariant), and we hold the lock.
            unsafe { kernel::bindings::blk_mq_stop_hw_queue(hctx.as_ptr()) };
        }
    }

    /// Starts the hardware queue if it was stopped; its requests are dispatched from
    /// blk-mq's workqueue. Does not sleep.
    pub(crate) fn start(&self) {
        if let Some(hctx) = *self.hctx.lock() {
            // SAFETY: valid while in the slot (type invariant), and we hold the lock;
            // `async` dispatch does not sleep here.
            unsafe { kernel::bindings::blk_mq_start_stopped_hw_queue(hctx.as_ptr(), true) };
        }
    }
}
