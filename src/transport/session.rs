// SPDX-License-Identifier: GPL-2.0

//! A session: all queues of one client to one memory server, and the region they share.

use kernel::{prelude::*, sync::Arc};

use super::{
    keepalive::KeepAlive,
    link::LinkParams,
    name::Name,
    queue::{Queue, QueueWatcher, State},
    wire::RegionDescriptor,
};
use crate::kernel_ext::ReclaimWorkqueue;

/// What a session connects to and how it behaves.
pub(crate) struct SessionConfig {
    /// The name log lines carry (the disk's).
    pub(crate) name: Name,
    /// Where each queue connects and what it asks for; its settings also say how long a
    /// failed queue may spend reconnecting before its I/O fails (`recovery_ms`, 0: it
    /// fails at once) and how often the keep-alive probes each queue (`keepalive_ms`, 0:
    /// never).
    pub(crate) link: LinkParams,
}

/// How a session's queues are doing.
pub(crate) struct Health {
    /// Queues in total.
    pub(crate) total: usize,
    /// Live, with their connection up.
    pub(crate) live: usize,
    /// Recovering.
    pub(crate) recovering: usize,
    /// Dead.
    pub(crate) dead: usize,
    /// Successful recoveries, all queues.
    pub(crate) recoveries: u32,
    /// Requests issued again, all queues.
    pub(crate) retried: u64,
}

impl Health {
    /// How `queues` are doing.
    pub(crate) fn of(queues: &[Arc<Queue>]) -> Self {
        let mut h = Health {
            total: queues.len(),
            live: 0,
            recovering: 0,
            dead: 0,
            recoveries: 0,
            retried: 0,
        };
        for q in queues {
            h.live += usize::from(q.is_live());
            match q.state() {
                State::Recovering => h.recovering += 1,
                State::Dead => h.dead += 1,
                State::Connecting | State::Live => {}
            }
            h.recoveries += q.recoveries();
            h.retried += q.retried();
        }
        h
    }

    /// Adds `other`'s queues to these (a disk over several sessions).
    pub(crate) fn add(&mut self, other: &Health) {
        self.total += other.total;
        self.live += other.live;
        self.recovering += other.recovering;
        self.dead += other.dead;
        self.recoveries += other.recoveries;
        self.retried += other.retried;
    }

    /// The session's state in one word: `connected` (every queue live), `recovering`
    /// (some reconnecting), `dead` (all dead), `disconnected` (none live, none recovering
    /// or dead: the server closed them and each reconnects on its next I/O) or `degraded`
    /// (some live or reconnectable, some dead).
    pub(crate) fn summary(&self) -> &'static str {
        if self.live == self.total {
            "connected"
        } else if self.recovering > 0 {
            "recovering"
        } else if self.dead == self.total {
            "dead"
        } else if self.live == 0 && self.dead == 0 {
            "disconnected"
        } else {
            "degraded"
        }
    }
}

/// A connected client: `queue_count` queues, each on the same region, their keep-alive,
/// and the workqueue their recovery and keep-alive run on.
///
/// Drop: the keep-alive stops, every queue is shut down (recovery stopped, links torn
/// down) and the recovery work queued meanwhile has run; then the queues are released,
/// and with the last of them the workqueue.
pub(crate) struct Session {
    queues: KVec<Arc<Queue>>,
    max_sge: u32,
    /// Whether some queue registers its READs' sinks (see [`Session::reads_registered`]).
    reads_registered: bool,
    descriptor: RegionDescriptor,
    keepalive: Option<Arc<KeepAlive>>,
    recovery_wq: Arc<ReclaimWorkqueue>,
}

impl Session {
    /// Connects every queue of `config` and checks that the server gave each the same
    /// region, at least as large as asked. On any failure the queues made so far are torn
    /// down and the error returned.
    pub(crate) fn connect(config: &SessionConfig) -> Result<Self> {
        let recovery_wq = Arc::new(ReclaimWorkqueue::new(c"rswap_recovery")?, GFP_KERNEL)?;
        let settings = &config.link.settings;
        let mut queues = KVec::with_capacity(usize::from(settings.queue_count()), GFP_KERNEL)?;
        let started = Self::start_queues(config, &recovery_wq, &mut queues).and_then(|got| {
            let keepalive = match settings.keepalive_ms {
                0 => None,
                ms => Some(KeepAlive::start(&queues, ms, recovery_wq.clone())?),
            };
            Ok((got, keepalive))
        });
        match started {
            Ok(((descriptor, max_sge, reads_registered), keepalive)) => Ok(Self {
                queues,
                max_sge,
                reads_registered,
                descriptor,
                keepalive,
                recovery_wq,
            }),
            Err(e) => {
                for q in queues.iter() {
                    q.shut_down();
                }
                // As in `drop`: recovery work queued before the shutdown runs here, not
                // with the last reference to its queue.
                recovery_wq.flush();
                Err(e)
            }
        }
    }

    /// Makes and connects the queues into `queues`; returns the region, the SGE limit
    /// they share, and whether any registers its READs' sinks.
    fn start_queues(
        config: &SessionConfig,
        wq: &Arc<ReclaimWorkqueue>,
        queues: &mut KVec<Arc<Queue>>,
    ) -> Result<(RegionDescriptor, u32, bool)> {
        let mut first: Option<RegionDescriptor> = None;
        let mut max_sge = u32::MAX;
        let mut reads_registered = false;
        for index in 0..config.link.settings.queue_count() {
            let queue = Queue::new(
                config.name,
                index,
                &config.link,
                config.link.settings.recovery_ms,
                wq.clone(),
            )?;
            queues.push(queue.clone(), GFP_KERNEL)?;
            let link = Queue::start(&queue)?;
            let desc = *link.descriptor();
            max_sge = max_sge.min(link.max_sge());
            reads_registered |= link.reads_registered();
            match first {
                None => first = Some(desc),
                // The same descriptor; only the server's proof differs from queue to queue.
                Some(f) if f.body() == desc.body() => {}
                Some(f) => {
                    pr_err!(
                        "{}: queue {} got region {} (epoch {}), queue 0 got region {} (epoch {})\n",
                        config.name,
                        index,
                        desc.region_id,
                        desc.epoch,
                        f.region_id,
                        f.epoch
                    );
                    return Err(EPROTO);
                }
            }
        }
        Ok((first.ok_or(EINVAL)?, max_sge, reads_registered))
    }

    /// The queues, one per hardware queue of the disk.
    pub(crate) fn queues(&self) -> &[Arc<Queue>] {
        &self.queues
    }

    /// Whether a READ's sink must be one page-contiguous range (it is registered in a
    /// memory region, as iWARP requires): no READ may land in pieces of pages.
    pub(crate) fn reads_registered(&self) -> bool {
        self.reads_registered
    }

    /// The most SGEs every queue takes in one work request.
    pub(crate) fn max_sge(&self) -> u32 {
        self.max_sge
    }

    /// The descriptor the server sent first.
    pub(crate) fn descriptor(&self) -> &RegionDescriptor {
        &self.descriptor
    }

    /// The descriptor the queues post with now: the one queue 0 installed last (after a
    /// server restart: the same region at a new address, key and epoch).
    pub(crate) fn current_descriptor(&self) -> RegionDescriptor {
        self.queues
            .first()
            .and_then(|q| q.installed_descriptor())
            .unwrap_or(self.descriptor)
    }

    /// How the queues are doing.
    pub(crate) fn health(&self) -> Health {
        Health::of(&self.queues)
    }

    /// Tells `w` of every queue's events from now on (`None`: nobody); see
    /// [`QueueWatcher`]. A watcher that holds the session must be taken off before the
    /// session can be dropped.
    pub(crate) fn set_watcher(&self, w: Option<Arc<dyn QueueWatcher>>) {
        for q in self.queues.iter() {
            q.set_watcher(w.clone());
        }
    }

    /// Takes every queue's link down and leaves it dead ([`Queue::disconnect`]), and waits
    /// until no recovery of theirs runs: each may then be pointed at another server
    /// ([`Queue::adopt`]). Not from the session's workqueue (a queue watcher). Sleeps.
    pub(crate) fn disconnect(&self) {
        for q in self.queues.iter() {
            q.disconnect();
        }
        self.recovery_wq.flush();
    }

    /// Stops the keep-alive and tears every queue down (idempotent). Sleeps.
    pub(crate) fn shut_down(&self) {
        if let Some(k) = &self.keepalive {
            k.stop();
        }
        for q in self.queues.iter() {
            q.shut_down();
            // A watcher may hold the queues: it hears nothing after the shutdown anyway.
            q.set_watcher(None);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shut_down();
        // A recovery work item queued before the shutdown holds its queue; let it run
        // (a dead queue's work only returns) so that the queues, and with them the
        // workqueue, are released here rather than inside that work.
        self.recovery_wq.flush();
    }
}
