// SPDX-License-Identifier: GPL-2.0

//! What the module tracks globally: live queues (so an RDMA device's removal can find
//! the queues on it).

use kernel::{prelude::*, sync::Arc};

use crate::{ib::Device, transport::queue::Queue};

/// The registry's contents.
pub(crate) struct Registry {
    queues: KVec<Arc<Queue>>,
}

impl Registry {
    const fn new() -> Self {
        Self {
            queues: KVec::new(),
        }
    }
}

kernel::sync::global_lock! {
    // SAFETY: initialised in module init (`init`) before anything uses it.
    unsafe(uninit) static REGISTRY: Mutex<Registry> = Registry::new();
}

/// Initialises the registry. Call once, from module init.
pub(crate) fn init() {
    // SAFETY: called once, from module init, before any other use.
    unsafe { REGISTRY.init() };
}

/// Adds the queues of a session.
pub(crate) fn add_queues(queues: &[Arc<Queue>]) -> Result {
    let mut reg = REGISTRY.lock();
    for q in queues {
        reg.queues.push(q.clone(), GFP_KERNEL)?;
    }
    Ok(())
}

/// Forgets the queues of a session.
pub(crate) fn remove_queues(queues: &[Arc<Queue>]) {
    let mut reg = REGISTRY.lock();
    reg.queues
        .retain(|q| !queues.iter().any(|r| Arc::ptr_eq(q, r)));
}

/// Tears down every queue on `dev` (its removal is in progress) and returns how many.
/// Allocates nothing; the lock is not held while a queue drains.
pub(crate) fn shut_down_device(dev: &Device) -> usize {
    let mut count = 0;
    loop {
        let next = {
            let mut reg = REGISTRY.lock();
            let pos = reg.queues.iter().position(|q| q.is_on(dev));
            pos.and_then(|i| reg.queues.remove(i).ok())
        };
        let Some(queue) = next else {
            return count;
        };
        queue.shut_down();
        count += 1;
    }
}
