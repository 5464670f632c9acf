// SPDX-License-Identifier: GPL-2.0

//! One-shot buffer operations: a small DMA-mapped buffer owned by one posted work request
//! (a RECV, an RDMA READ or an RDMA WRITE) until its completion hands it to a handler.

use core::ptr::NonNull;
use kernel::{prelude::*, sync::Arc};

use super::{
    cqe::{impl_has_cqe, Cqe, CqeOwner, SgeList, Wc},
    dma::{Direction, DmaBuf, Sge},
    pd::Pd,
};

/// Told how a [`OneShot`] ended.
pub(crate) trait OneShotHandler: Send + Sync + 'static {
    /// The work request tagged `tag` completed: `data` holds the buffer (for a RECV, the
    /// bytes received) on success, `None` on failure or flush. Runs in softirq context.
    fn done(&self, tag: u32, data: Option<&[u8]>);
}

/// What the work request owns.
pub(crate) struct OneShotBuf {
    cqe: Cqe,
    buf: DmaBuf,
    tag: u32,
    handler: Arc<dyn OneShotHandler>,
}

impl_has_cqe! { impl HasCqe for OneShotBuf { self.cqe } }

impl SgeList for OneShotBuf {
    fn sges(&self) -> &[Sge] {
        self.buf.sges()
    }
}

/// A buffer of [`DmaBuf::SIZE`] bytes for exactly one work request: post it with
/// [`super::Qp::post_recv`] or [`super::Qp::post_rdma`].
pub(crate) struct OneShot(KBox<OneShotBuf>);

impl OneShot {
    /// A buffer holding `contents` (zero-padded), mapped for `dir` for work requests on
    /// the QP of `pd` ([`super::Qp::pd`]), whose completion goes to `handler` with `tag`.
    pub(crate) fn new(
        pd: &Pd,
        dir: Direction,
        contents: &[u8],
        tag: u32,
        handler: Arc<dyn OneShotHandler>,
    ) -> Result<Self> {
        let buf = DmaBuf::with_contents(pd, dir, contents)?;
        Ok(Self(KBox::new(
            OneShotBuf {
                cqe: Cqe::new(),
                buf,
                tag,
                handler,
            },
            GFP_KERNEL,
        )?))
    }
}

// SAFETY: `into_raw` leaks the box, which stays put until `from_raw` rebuilds it.
unsafe impl CqeOwner for OneShot {
    type Target = OneShotBuf;

    fn into_raw(self) -> NonNull<OneShotBuf> {
        // SAFETY: `KBox::into_raw` never returns null.
        unsafe { NonNull::new_unchecked(KBox::into_raw(self.0)) }
    }

    unsafe fn from_raw(target: NonNull<OneShotBuf>) -> Self {
        // SAFETY: leaked by `into_raw` and taken back once (the caller's guarantee).
        Self(unsafe { KBox::from_raw(target.as_ptr()) })
    }

    fn complete(mut self, wc: &Wc<'_>) {
        let inner = &mut *self.0;
        let data = inner.buf.contents_for_cpu();
        // A RECV reports how many bytes arrived; one-sided operations fill the buffer.
        let len = if wc.is_recv() {
            usize::try_from(wc.byte_len()).map_or(0, |n| n.min(data.len()))
        } else {
            data.len()
        };
        inner
            .handler
            .done(inner.tag, wc.is_ok().then(|| &data[..len]));
    }
}
