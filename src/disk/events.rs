// SPDX-License-Identifier: GPL-2.0

//! The disk's change events: each queue event (recovering, reconnected, dead) is a
//! `change` uevent of `/dev/rswapN` with `RSWAP_TARGET` (the configfs target),
//! `RSWAP_QUEUE` (the queue's index), `RSWAP_EVENT` (what happened) and `RSWAP_STATE`
//! (the target's state word after it, as its `state` attribute starts), for udev rules and
//! `rswapctl monitor`; a leg's queue of a disk over several servers adds `RSWAP_LEG`.

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
    /// Every queue of the disk (every leg's), for the state after an event.
    queues: KVec<Arc<Queue>>,
    /// The leg whose queues these events are of, on a disk over several servers.
    leg: Option<u8>,
}

impl EventWatcher {
    /// Sends `events` of target `target` whose disk has `queues`, for the queues of leg
    /// `leg` of a disk over several servers, or of its only session.
    pub(super) fn new<'a>(
        events: Arc<DiskEvents>,
        target: &CStr,
        queues: impl Iterator<Item = &'a Arc<Queue>>,
        leg: Option<u8>,
    ) -> Result<Arc<Self>> {
        let mut all = KVec::new();
        for q in queues {
            all.push(q.clone(), GFP_KERNEL)?;
        }
        let target = CString::try_from_fmt(fmt!("{}", target.to_str()?))?;
        Ok(Arc::new(
            Self {
                events,
                target,
                queues: all,
                leg,
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
        let leg = self
            .leg
            .map(|l| CString::try_from_fmt(fmt!("RSWAP_LEG={}", l)));
        // Without memory for the text, the event is lost; the log line of the queue's
        // recovery is not.
        if let (Ok(t), Ok(q), Ok(e), Ok(s)) = env {
            let _ = match leg {
                None => self.events.change(&[&t, &q, &e, &s]),
                Some(Ok(l)) => self.events.change(&[&t, &q, &e, &s, &l]),
                Some(Err(_)) => Ok(()),
            };
        }
    }
}
