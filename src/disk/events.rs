// SPDX-License-Identifier: GPL-2.0

//! The disk's change events: each queue event (recovering, reconnected, dead) is a
//! `change` uevent of `/dev/rswapN` with `RSWAP_TARGET` (the configfs target),
//! `RSWAP_QUEUE` (the queue's index), `RSWAP_EVENT` (what happened) and `RSWAP_STATE`
//! (the target's state word after it, as its `state` attribute starts), for udev rules and
//! `rswapctl monitor`.

use kernel::{prelude::*, str::CString, sync::Arc};

use crate::{
    blk::DiskEvents,
    transport::{
        queue::{Queue, QueueEvent, QueueWatcher},
        session::Health,
    },
};

/// Turns a disk's queue events into its uevents.
pub(super) struct EventWatcher {
    events: Arc<DiskEvents>,
    /// The configfs target's name.
    target: CString,
    /// The session's queues, for the state after an event.
    queues: KVec<Arc<Queue>>,
}

impl EventWatcher {
    /// Sends `events` of target `target` whose session has `queues`.
    pub(super) fn new(
        events: Arc<DiskEvents>,
        target: &CStr,
        queues: &[Arc<Queue>],
    ) -> Result<Arc<Self>> {
        let mut all = KVec::with_capacity(queues.len(), GFP_KERNEL)?;
        for q in queues {
            all.push(q.clone(), GFP_KERNEL)?;
        }
        let target = CString::try_from_fmt(fmt!("{}", target.to_str()?))?;
        Ok(Arc::new(
            Self {
                events,
                target,
                queues: all,
            },
            GFP_KERNEL,
        )?)
    }
}

impl QueueWatcher for EventWatcher {
    fn queue_event(&self, index: u16, event: QueueEvent) {
        let state = Health::of(&self.queues).summary();
        let env = (
            CString::try_from_fmt(fmt!("RSWAP_TARGET={}", self.target.to_str().unwrap_or("?"))),
            CString::try_from_fmt(fmt!("RSWAP_QUEUE={}", index)),
            CString::try_from_fmt(fmt!("RSWAP_EVENT={}", event.word())),
            CString::try_from_fmt(fmt!("RSWAP_STATE={}", state)),
        );
        // Without memory for the text, the event is lost; the log line of the queue's
        // recovery is not.
        if let (Ok(t), Ok(q), Ok(e), Ok(s)) = env {
            let _ = self.events.change(&[&t, &q, &e, &s]);
        }
    }
}
