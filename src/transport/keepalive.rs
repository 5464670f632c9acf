// SPDX-License-Identifier: GPL-2.0

//! A session's keep-alive: every period, each live queue probes its link
//! ([`Queue::keep_alive`]), so that a server that went silent is noticed within about one
//! to two periods, busy or idle, rather than at the next request's timeout. What happens
//! then is the queue's recovery, as for any other transport failure.

use kernel::{
    new_spinlock,
    prelude::*,
    sync::{Arc, SpinLock},
    time::msecs_to_jiffies,
    workqueue::{impl_has_delayed_work, new_delayed_work, DelayedWork, WorkItem},
};

use super::queue::Queue;
use crate::kernel_ext::{flush_delayed_work, ReclaimWorkqueue};

/// The periodic probe of a session's queues. It runs on the session's recovery workqueue
/// (reclaim-safe: it neither sleeps nor allocates) until [`KeepAlive::stop`].
#[pin_data]
pub(crate) struct KeepAlive {
    queues: KVec<Arc<Queue>>,
    period_ms: u32,
    wq: Arc<ReclaimWorkqueue>,
    /// Set by `stop`; the work queues itself again only while it is clear, under the lock.
    #[pin]
    stopped: SpinLock<bool>,
    #[pin]
    work: DelayedWork<KeepAlive>,
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self> for KeepAlive { self.work }
}

impl KeepAlive {
    /// Starts probing `queues` every `period_ms` (not 0) on `wq`.
    pub(crate) fn start(
        queues: &[Arc<Queue>],
        period_ms: u32,
        wq: Arc<ReclaimWorkqueue>,
    ) -> Result<Arc<Self>> {
        let mut list = KVec::with_capacity(queues.len(), GFP_KERNEL)?;
        for q in queues {
            list.push(q.clone(), GFP_KERNEL)?;
        }
        let this = Arc::pin_init(
            pin_init!(Self {
                queues: list,
                period_ms,
                wq,
                stopped <- new_spinlock!(false, "rswap::KeepAlive::stopped"),
                work <- new_delayed_work!("rswap::KeepAlive::work"),
            }),
            GFP_KERNEL,
        )?;
        this.arm();
        Ok(this)
    }

    /// Queues the next round, unless stopped.
    fn arm(self: &Arc<Self>) {
        let stopped = self.stopped.lock();
        if !*stopped {
            // Already queued: that round is the next one anyway.
            let _ = self
                .wq
                .enqueue_delayed(self.clone(), msecs_to_jiffies(self.period_ms));
        }
    }

    /// Stops the probing for good and waits until no round runs or is queued. Sleeps.
    pub(crate) fn stop(&self) {
        *self.stopped.lock() = true;
        // A round waiting for its delay runs now and does nothing; one that runs finishes
        // and does not queue another (it sees `stopped`).
        flush_delayed_work(&self.work);
    }
}

impl WorkItem for KeepAlive {
    type Pointer = Arc<KeepAlive>;

    fn run(this: Arc<KeepAlive>) {
        if *this.stopped.lock() {
            return;
        }
        for queue in this.queues.iter() {
            Queue::keep_alive(queue);
        }
        this.arm();
    }
}
