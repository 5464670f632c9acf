// SPDX-License-Identifier: GPL-2.0

//! A session: all queues of one client to one memory server, and the region they share.

use kernel::{prelude::*, sync::Arc, workqueue};

use crate::kernel_ext::ReclaimWorkqueue;

use super::{
    queue::{Queue, Target},
    remote::RemoteRegion,
    wire::RegionDescriptor,
};

/// A connected client: `queue_count` queues, each with the same region descriptor, and
/// the workqueue their recovery runs on.
///
/// Drop order: every queue is shut down (recovery stopped, links torn down), then the
/// queues are released, then the workqueue is destroyed after running what is queued
/// (recovery work of a dead queue only returns).
pub(crate) struct Session {
    queues: KVec<Arc<Queue>>,
    max_sge: u32,
    region: RemoteRegion,
    descriptor: RegionDescriptor,
    recovery_wq: ReclaimWorkqueue,
}

impl Session {
    /// Connects every queue of `target` and checks that the server gave each the same
    /// region, at least as large as asked. On any failure the queues made so far are torn
    /// down (dropped) and the error returned.
    pub(crate) fn connect(target: &Target) -> Result<Self> {
        let recovery_wq = ReclaimWorkqueue::new(c"rswap_recovery")?;
        let mut queues = KVec::with_capacity(usize::from(target.queue_count), GFP_KERNEL)?;
        let mut first: Option<RegionDescriptor> = None;
        let mut max_sge = u32::MAX;
        for index in 0..target.queue_count {
            let (queue, desc) = Queue::connect(target, index)?;
            max_sge = max_sge.min(queue.max_sge());
            queues.push(queue, GFP_KERNEL)?;
            match first {
                None => {
                    if desc.length < target.size {
                        pr_err!(
                            "the server's region is {} bytes, {} were asked for\n",
                            desc.length,
                            target.size
                        );
                        return Err(EPROTO);
                    }
                    first = Some(desc);
                }
                Some(f) if f == desc => {}
                Some(f) => {
                    pr_err!(
                        "queue {} got region {} (epoch {}), queue 0 got region {} (epoch {})\n",
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
        let descriptor = first.ok_or(EINVAL)?;
        Ok(Self {
            queues,
            max_sge,
            region: RemoteRegion {
                addr: descriptor.remote_addr,
                len: target.size,
                rkey: descriptor.rkey,
            },
            descriptor,
            recovery_wq,
        })
    }

    /// The workqueue queue recovery runs on.
    pub(crate) fn recovery_wq(&self) -> &workqueue::Queue {
        &self.recovery_wq
    }

    /// The queues, one per hardware queue of the disk.
    pub(crate) fn queues(&self) -> &[Arc<Queue>] {
        &self.queues
    }

    /// The most SGEs every queue takes in one work request.
    pub(crate) fn max_sge(&self) -> u32 {
        self.max_sge
    }

    /// The usable remote region (its length is what the client asked for).
    pub(crate) fn region(&self) -> &RemoteRegion {
        &self.region
    }

    /// The descriptor the server sent.
    pub(crate) fn descriptor(&self) -> &RegionDescriptor {
        &self.descriptor
    }

    /// Tears every queue down (idempotent). Sleeps.
    pub(crate) fn shut_down(&self) {
        for q in self.queues.iter() {
            q.shut_down();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shut_down();
    }
}
