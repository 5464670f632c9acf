// SPDX-License-Identifier: GPL-2.0

//! A one-shot receive: a DMA-mapped buffer owned by its posted RECV until it completes.

use core::ptr::NonNull;
use kernel::{prelude::*, sync::Arc};

use super::{
    cqe::{Cqe, CqeOwner, Wc},
    dma::{Direction, DmaBuf},
    qp::Qp,
    Device,
};

/// Told what a [`Recv`] received.
pub(crate) trait RecvHandler: Send + Sync + 'static {
    /// The receive completed: `data` is the message on success, `None` on failure or
    /// flush. Runs in softirq context.
    fn received(&self, data: Option<&[u8]>);
}

struct RecvInner<H: RecvHandler> {
    cqe: Cqe,
    buf: DmaBuf,
    handler: Arc<H>,
}

/// A posted-once receive buffer.
pub(crate) struct Recv<H: RecvHandler>(KBox<RecvInner<H>>);

impl<H: RecvHandler> Recv<H> {
    /// Allocates and maps a receive buffer on `dev` whose completion goes to `handler`,
    /// and posts it on `qp` with `lkey`.
    pub(crate) fn post(dev: &Device, qp: &Qp, lkey: u32, handler: Arc<H>) -> Result {
        let buf = DmaBuf::new(dev, Direction::FromDevice)?;
        let sge = buf.sge(lkey);
        let recv = Self(KBox::new(
            RecvInner {
                cqe: Cqe::new(),
                buf,
                handler,
            },
            GFP_KERNEL,
        )?);
        qp.post_recv(recv, &sge).map_err(|(e, _recv)| e)
    }
}

// SAFETY: `into_cqe` leaks the box and returns its `cqe` field, which stays put until
// `from_cqe` rebuilds the box from it with `container_of`.
unsafe impl<H: RecvHandler> CqeOwner for Recv<H> {
    fn into_cqe(self) -> NonNull<Cqe> {
        let inner = KBox::into_raw(self.0);
        // SAFETY: `inner` is a valid, leaked allocation; taking a field's address.
        unsafe { NonNull::new_unchecked(&raw mut (*inner).cqe) }
    }

    unsafe fn from_cqe(cqe: NonNull<Cqe>) -> Self {
        // SAFETY: `cqe` is the `cqe` field of a leaked `RecvInner<H>` (caller's contract).
        let inner = unsafe { kernel::container_of!(cqe.as_ptr(), RecvInner<H>, cqe) };
        // SAFETY: the allocation was leaked by `into_cqe` and is taken back once.
        Self(unsafe { KBox::from_raw(inner) })
    }

    fn complete(self, wc: &Wc<'_>) {
        let len = usize::try_from(wc.byte_len()).unwrap_or(0);
        let data = wc
            .is_ok()
            .then(|| self.0.buf.contents().get(..len))
            .flatten();
        self.0.handler.received(data);
    }
}
