// SPDX-License-Identifier: GPL-2.0

//! One-shot buffer operations: a small DMA-mapped buffer owned by one posted work request
//! (a RECV, an RDMA READ or an RDMA WRITE) until its completion hands it to a handler.

use core::ptr::NonNull;
use kernel::{prelude::*, sync::Arc};

use super::{
    cqe::{Cqe, CqeOwner, Wc},
    dma::{Direction, DmaBuf},
    qp::{Qp, RdmaOp},
    Device,
};

/// Told how a [`OneShot`] ended.
pub(crate) trait OneShotHandler: Send + Sync + 'static {
    /// The work request tagged `tag` completed: `data` holds the buffer (for a RECV, the
    /// bytes received) on success, `None` on failure or flush. Runs in softirq context.
    fn done(&self, tag: u32, data: Option<&[u8]>);
}

struct Inner<H: OneShotHandler> {
    cqe: Cqe,
    buf: DmaBuf,
    tag: u32,
    /// A RECV reports how many bytes arrived; one-sided operations use the whole buffer.
    is_recv: bool,
    handler: Arc<H>,
}

/// A buffer of [`DmaBuf::SIZE`] bytes for exactly one work request.
pub(crate) struct OneShot<H: OneShotHandler>(KBox<Inner<H>>);

impl<H: OneShotHandler> OneShot<H> {
    /// A buffer holding `contents` (zero-padded), mapped on `dev` for `dir`, whose
    /// completion goes to `handler` with `tag`.
    pub(crate) fn new(
        dev: &Device,
        dir: Direction,
        contents: &[u8],
        tag: u32,
        handler: Arc<H>,
    ) -> Result<Self> {
        let buf = DmaBuf::with_contents(dev, dir, contents)?;
        Ok(Self(KBox::new(
            Inner {
                cqe: Cqe::new(),
                buf,
                tag,
                is_recv: false,
                handler,
            },
            GFP_KERNEL,
        )?))
    }

    /// Posts a RECV into the buffer.
    pub(crate) fn post_recv(mut self, qp: &Qp, lkey: u32) -> Result {
        self.0.is_recv = true;
        let sge = self.0.buf.sge(lkey);
        qp.post_recv(self, &sge).map_err(|(e, _buf)| e)
    }

    /// Posts an RDMA READ into, or an RDMA WRITE from, the buffer at `remote_addr`.
    #[allow(
        dead_code,
        reason = "used by samples/rdma_rw; rswap itself posts RDMA for block requests"
    )]
    pub(crate) fn post_rdma(
        self,
        qp: &Qp,
        lkey: u32,
        op: RdmaOp,
        remote_addr: u64,
        rkey: u32,
    ) -> Result {
        let sge = [self.0.buf.sge(lkey)];
        let sges: *const [_] = &sge;
        qp.post_rdma(self, sges, op, remote_addr, rkey)
            .map_err(|(e, _buf)| e)
    }
}

// SAFETY: `into_cqe` leaks the box and returns its `cqe` field, which stays put until
// `from_cqe` rebuilds the box from it with `container_of`.
unsafe impl<H: OneShotHandler> CqeOwner for OneShot<H> {
    fn into_cqe(self) -> NonNull<Cqe> {
        let inner = KBox::into_raw(self.0);
        // SAFETY: `inner` is a valid, leaked allocation; taking a field's address.
        unsafe { NonNull::new_unchecked(&raw mut (*inner).cqe) }
    }

    unsafe fn from_cqe(cqe: NonNull<Cqe>) -> Self {
        // SAFETY: `cqe` is the `cqe` field of a leaked `Inner<H>` (caller's contract).
        let inner = unsafe { kernel::container_of!(cqe.as_ptr(), Inner<H>, cqe) };
        // SAFETY: the allocation was leaked by `into_cqe` and is taken back once.
        Self(unsafe { KBox::from_raw(inner) })
    }

    fn complete(mut self, wc: &Wc<'_>) {
        let inner = &mut *self.0;
        let data = inner.buf.contents_for_cpu();
        let len = if inner.is_recv {
            usize::try_from(wc.byte_len()).map_or(0, |n| n.min(data.len()))
        } else {
            data.len()
        };
        inner
            .handler
            .done(inner.tag, wc.is_ok().then(|| &data[..len]));
    }
}
