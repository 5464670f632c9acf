// SPDX-License-Identifier: GPL-2.0

//! Completion queues of one QP, whose context is that QP's set of posted work requests.

use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*, sync::Arc};

use super::{bindings, cqe::Outstanding, rdma_device::RdmaDevice};

/// Who runs the completion handlers of a [`Cq`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CqPoll {
    /// The IB core, in softirq context, when the device signals a completion.
    Softirq,
    /// Only [`Cq::poll`], called by the CQ's user (a polled block queue, and the
    /// keep-alive and teardown of its QP): no interrupt, no softirq.
    Direct,
}

/// A completion queue (`struct ib_cq`) of one QP: room for `entries` completions, each
/// dispatched to its work request's `ib_cqe.done`, polled as its [`CqPoll`] says. Freed
/// on drop.
///
/// The CQ is the QP's own rather than a share of the device's CQ pool so that destroying
/// it ends every completion of the QP: after that, a work request the provider never
/// completed can be completed as flushed without any risk of its real completion coming
/// later (see [`Outstanding`]). Queues are spread over the device's completion vectors
/// (interrupts) by the vector hint.
///
/// # Invariants
///
/// `ptr` came from `ib_alloc_cq` on `dev`'s device with `outstanding` as its context, in
/// the mode `poll` says, and has not been freed; `dev` keeps that device valid and
/// `outstanding` the context.
pub(crate) struct Cq {
    ptr: NonNull<bindings::ib_cq>,
    poll: CqPoll,
    outstanding: Arc<Outstanding>,
    dev: Arc<RdmaDevice>,
}

// SAFETY: a CQ may be used and freed from any thread.
unsafe impl Send for Cq {}
// SAFETY: the IB core serialises polling internally (a provider's `poll_cq` takes the
// CQ's lock); posting to QPs on it is thread safe.
unsafe impl Sync for Cq {}

impl Cq {
    /// A CQ with room for `entries` completions on `dev`, on completion vector
    /// `vector_hint` (modulo the device's vectors), whose completions are those of the
    /// work requests listed in `outstanding`.
    pub(crate) fn new(
        dev: &Arc<RdmaDevice>,
        entries: u32,
        vector_hint: u32,
        poll: CqPoll,
        outstanding: &Arc<Outstanding>,
    ) -> Result<Self> {
        let entries = i32::try_from(entries.min(dev.device().max_cqe())).map_err(|_| EINVAL)?;
        let vector =
            i32::try_from(vector_hint % dev.device().num_comp_vectors()).map_err(|_| EINVAL)?;
        let context: *const Outstanding = &**outstanding;
        // SAFETY: the device is valid while `dev` exists; the context stays valid while
        // the CQ exists (`outstanding` is kept with it).
        let ptr = unsafe {
            bindings::rswap_ib_alloc_cq(
                dev.device().as_raw(),
                context.cast_mut().cast(),
                entries,
                vector,
                poll == CqPoll::Direct,
            )
        };
        let ptr = NonNull::new(from_err_ptr(ptr)?).ok_or(ENOMEM)?;
        // INVARIANT: allocated on `dev` with `outstanding` as its context, as `poll` says.
        Ok(Self {
            ptr,
            poll,
            outstanding: outstanding.clone(),
            dev: dev.clone(),
        })
    }

    /// The raw pointer, for the other wrappers of this layer.
    pub(super) fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ptr.as_ptr()
    }

    /// Runs the handlers of at most `budget` completions waiting in a [`CqPoll::Direct`]
    /// CQ, with softirqs disabled as a softirq CQ runs them, and returns how many ran;
    /// on a softirq CQ does nothing and returns 0. Does not sleep. In hard interrupt
    /// context it warns and does nothing. Several callers may poll at once.
    pub(super) fn poll(&self, budget: u32) -> u32 {
        if self.poll != CqPoll::Direct {
            return 0;
        }
        let budget = i32::try_from(budget).unwrap_or(i32::MAX);
        // SAFETY: the CQ is valid (type invariant) and polled directly, which
        // `ib_process_cq_direct` requires; concurrent pollers are serialised by the
        // provider's CQ lock, and each completion is handed to one of them.
        let n = unsafe { bindings::rswap_ib_poll_cq(self.as_raw(), budget) };
        u32::try_from(n).unwrap_or(0)
    }

    /// The posted work requests of the QP on this CQ.
    pub(super) fn outstanding(&self) -> &Arc<Outstanding> {
        &self.outstanding
    }

    /// The device the CQ is on.
    pub(super) fn rdma_device(&self) -> &Arc<RdmaDevice> {
        &self.dev
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the CQ is valid and freed once, here; the QP on it
        // was destroyed before (a `Qp` owns its CQs), which `rswap_ib_free_cq` requires.
        // Once this returns no completion handler of the CQ runs (`rswap_ib_free_cq`
        // waits for a softirq handler in progress to return; a direct CQ's pollers hold
        // the QP, which is gone).
        unsafe { bindings::rswap_ib_free_cq(self.as_raw()) };
    }
}
