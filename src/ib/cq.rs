// SPDX-License-Identifier: GPL-2.0

//! Completion queues.

use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*};

use super::{bindings, Device};

/// How a CQ's completions are processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PollContext {
    /// In softirq context (`IB_POLL_SOFTIRQ`): the data path's choice, like nvme-rdma.
    Softirq,
}

impl PollContext {
    fn as_raw(self) -> bindings::ib_poll_context {
        match self {
            Self::Softirq => bindings::ib_poll_context_IB_POLL_SOFTIRQ,
        }
    }
}

/// A completion queue (`struct ib_cq`) whose completions are dispatched by the IB core to
/// each work request's `ib_cqe.done`; freed on drop.
///
/// # Invariants
///
/// `ptr` came from a successful `ib_alloc_cq` and has not been freed; its device outlives
/// it (same rule as [`super::Pd`]).
pub(crate) struct Cq {
    ptr: NonNull<bindings::ib_cq>,
}

// SAFETY: a CQ may be used and freed from any thread.
unsafe impl Send for Cq {}
// SAFETY: the IB core serialises polling internally; posting to QPs on it is thread safe.
unsafe impl Sync for Cq {}

impl Cq {
    /// Allocates a CQ with room for `entries` completions on completion vector `vector`.
    pub(crate) fn alloc(dev: &Device, entries: u32, vector: u32, ctx: PollContext) -> Result<Self> {
        let entries = i32::try_from(entries.min(dev.max_cqe())).map_err(|_| EINVAL)?;
        let vector = i32::try_from(vector % dev.num_comp_vectors()).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is valid (type invariant of `Device`); a NULL private pointer is
        // allowed, completions are routed through each work request's `ib_cqe`.
        let ptr = unsafe {
            bindings::rswap_ib_alloc_cq(
                dev.as_raw(),
                core::ptr::null_mut(),
                entries,
                vector,
                ctx.as_raw(),
            )
        };
        let ptr = NonNull::new(from_err_ptr(ptr)?).ok_or(ENOMEM)?;
        // INVARIANT: `ptr` is a freshly allocated CQ on `dev`.
        Ok(Self { ptr })
    }

    /// The raw pointer, for the other wrappers of this layer.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ptr.as_ptr()
    }

    /// How many completions the CQ holds.
    pub(crate) fn entries(&self) -> u32 {
        // SAFETY: by the type invariant the CQ is valid; `cqe` is set at allocation.
        let n = unsafe { (*self.as_raw()).cqe };
        u32::try_from(n).unwrap_or(0)
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the CQ is valid and this is its only owner; QPs
        // using it were destroyed before (they borrow it).
        unsafe { bindings::ib_free_cq(self.as_raw()) };
    }
}
