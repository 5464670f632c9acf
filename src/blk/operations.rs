// SPDX-License-Identifier: GPL-2.0

//! What a blk-mq driver implements.

use super::{
    hw_ctx::HwCtxSlot,
    request::{OwnedRequest, Status, TimedOutRequest},
};

/// What to do with a request that timed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeoutAction {
    /// The driver makes sure it completes (for rswap: its QP was moved to the error state,
    /// so the work request holding it is flushed and its completion ends it).
    Done,
    /// Re-arm the timer: the driver is recovering and will complete or requeue it.
    ResetTimer,
}

/// A request of driver `T`.
pub(crate) type Request<T> =
    OwnedRequest<<T as Operations>::RequestData, <T as Operations>::HwQueue>;

/// A blk-mq driver.
pub(crate) trait Operations: Sized + Send + Sync + 'static {
    /// The driver's data of each request, preallocated with every tag (`Default`) and
    /// dropped when the tag set frees its requests.
    type RequestData: Default + Send;

    /// What each hardware queue's driver data points to (`hctx->driver_data`).
    type HwQueue: Send + Sync;

    /// The data of hardware queue `index`, or `None` if there is no such queue. It must
    /// live as long as the driver.
    fn hw_queue(&self, index: u32) -> Option<&Self::HwQueue>;

    /// Readies the data of a request that blk-mq just allocated (it is `Default` so far):
    /// the place to preallocate what the driver needs per request. Runs in process
    /// context (in the tag set's allocation or an I/O scheduler switch, both under the
    /// block layer's no-I/O allocation scope); an error fails that allocation.
    fn init_request(&self, _data: &mut Self::RequestData) -> kernel::error::Result {
        Ok(())
    }

    /// Where hardware queue `hwq` keeps its blk-mq context, so that the driver can stop
    /// and start the queue.
    fn hw_ctx(hwq: &Self::HwQueue) -> &HwCtxSlot;

    /// Issue `rq` on hardware queue `hwq`: hand it to the hardware (ownership moves with
    /// it) or give it back with a status (blk-mq ends it with an error or, for
    /// [`Status::Resource`], retries it later). Runs in atomic context: no sleeping, no
    /// allocation.
    fn queue_rq(
        hwq: &Self::HwQueue,
        rq: Request<Self>,
    ) -> core::result::Result<(), (Status, Request<Self>)>;

    /// Completes what has finished on poll queue `hwq` (see
    /// [`super::tag_set::TagSet::new`]), for a task that waits for its polled I/O by
    /// polling; returns how many completions it found (0: none yet). Runs in process
    /// context; must not sleep. Only called on poll queues: a driver without any need not
    /// implement it.
    fn poll(_hwq: &Self::HwQueue) -> u32 {
        0
    }

    /// Runs `rq`, which [`OwnedRequest::defer`] handed to a workqueue, in that workqueue's
    /// worker (process context). The function owns `rq`: it ends, requeues or passes it
    /// on.
    fn run_deferred(rq: Request<Self>);

    /// `rq` timed out on hardware queue `hwq`.
    fn timeout(hwq: &Self::HwQueue, rq: &TimedOutRequest<'_>) -> TimeoutAction;
}
