// SPDX-License-Identifier: GPL-2.0

//! Block requests and their preallocated per-request data.

use core::ptr::NonNull;
use kernel::{block::SECTOR_SHIFT, prelude::*, types::Opaque};

use super::{bindings, Operations};
use crate::ib::{
    cqe::{Cqe, CqeOwner, Wc},
    dma::SgEntry,
};

/// Segments per request (the disk's `max_segments`; also the SGEs of one work request).
pub(crate) const MAX_SEGMENTS: usize = 32;

/// What a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Read sectors.
    Read,
    /// Write sectors.
    Write,
    /// Make earlier completed writes durable.
    Flush,
    /// Anything else (discard, zone ops, driver-private): not supported.
    Other(u32),
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Success.
    Ok,
    /// I/O error.
    IoErr,
    /// The operation is not supported.
    NotSupp,
    /// Out of a resource: blk-mq will retry the request later.
    Resource,
}

impl Status {
    /// The kernel's code for this status.
    pub(super) fn as_blk(self) -> bindings::blk_status_t {
        self.as_raw()
    }

    fn as_raw(self) -> bindings::blk_status_t {
        let errno = match self {
            Self::Ok => 0,
            Self::IoErr => EIO.to_errno(),
            Self::NotSupp => EOPNOTSUPP.to_errno(),
            Self::Resource => ENOMEM.to_errno(),
        };
        // SAFETY: a pure mapping of an errno to the block layer's status codes
        // (ENOMEM becomes BLK_STS_RESOURCE).
        unsafe { kernel::bindings::errno_to_blk_status(errno) }
    }
}

/// The per-request data blk-mq allocates with every request (`cmd_size`), preallocated
/// per tag: the work request's completion entry, the request's scatterlist and the
/// driver's own data. Nothing is allocated when a request is issued.
#[repr(C)]
pub(crate) struct Pdu<D> {
    cqe: Cqe,
    sg: [SgEntry; MAX_SEGMENTS],
    /// The driver's data for this request.
    pub(crate) data: D,
}

impl<D: Default> Pdu<D> {
    fn new() -> Self {
        Self {
            cqe: Cqe::new(),
            sg: [const { SgEntry::new() }; MAX_SEGMENTS],
            data: D::default(),
        }
    }
}

/// A started block request that the driver owns: issued by `queue_rq`, then owned by the
/// work request it was posted with, then ended exactly once with [`OwnedRequest::end`].
///
/// # Invariants
///
/// `rq` is a started request of a tag set of `T`, not ended, whose PDU is a `Pdu<T::Data>`
/// initialised by `init_request`; this value is its only owner.
#[must_use = "a request must be ended or handed to a work request"]
pub(crate) struct OwnedRequest<T: Operations> {
    rq: NonNull<kernel::bindings::request>,
    _ops: core::marker::PhantomData<T>,
}

// SAFETY: a request may be completed from any CPU; the owner is unique.
unsafe impl<T: Operations> Send for OwnedRequest<T> {}

impl<T: Operations> OwnedRequest<T> {
    /// Takes ownership of a started request.
    ///
    /// # Safety
    ///
    /// `rq` must satisfy the type invariant and have no other owner.
    pub(super) unsafe fn from_raw(rq: *mut kernel::bindings::request) -> Option<Self> {
        // INVARIANT: the caller's guarantee.
        NonNull::new(rq).map(|rq| Self {
            rq,
            _ops: core::marker::PhantomData,
        })
    }

    fn raw(&self) -> *mut kernel::bindings::request {
        self.rq.as_ptr()
    }

    /// The first sector (512-byte units).
    pub(crate) fn sector(&self) -> u64 {
        // SAFETY: the request is valid (type invariant).
        unsafe { bindings::rswap_blk_rq_pos(self.raw()) }
    }

    /// The byte offset of the first sector.
    pub(crate) fn offset(&self) -> u64 {
        self.sector() << SECTOR_SHIFT
    }

    /// The number of bytes left to transfer.
    pub(crate) fn bytes(&self) -> u32 {
        // SAFETY: the request is valid.
        unsafe { bindings::rswap_blk_rq_bytes(self.raw()) }
    }

    /// The operation.
    pub(crate) fn op(&self) -> Op {
        // SAFETY: the request is valid.
        let op = unsafe { bindings::rswap_blk_rq_op(self.raw()) };
        match op {
            kernel::bindings::req_op_REQ_OP_READ => Op::Read,
            kernel::bindings::req_op_REQ_OP_WRITE => Op::Write,
            kernel::bindings::req_op_REQ_OP_FLUSH => Op::Flush,
            other => Op::Other(other),
        }
    }

    fn pdu_ptr(&self) -> *mut Pdu<T::Data> {
        // SAFETY: the request is valid; its PDU is a `Pdu<T::Data>` (type invariant).
        unsafe { bindings::rswap_blk_mq_rq_to_pdu(self.raw()).cast() }
    }

    /// Fills the request's scatterlist from its segments and returns the scatterlist, the
    /// driver data and the number of entries used (at most [`MAX_SEGMENTS`], which the
    /// disk's limits guarantee).
    pub(crate) fn map_segments(&mut self) -> (&mut [SgEntry], &mut T::Data, usize) {
        let pdu = self.pdu_ptr();
        // SAFETY: the PDU is initialised and exclusively ours; `sg` has `MAX_SEGMENTS`
        // entries, the limit the disk was created with.
        let n = unsafe {
            bindings::rswap_blk_rq_map_sg(
                self.raw(),
                SgEntry::table_as_raw(&mut (*pdu).sg).cast(),
                MAX_SEGMENTS as u32,
            )
        };
        // SAFETY: as above; the two fields are disjoint.
        let (sg, data) = unsafe { (&mut (*pdu).sg, &mut (*pdu).data) };
        (sg, data, usize::try_from(n).unwrap_or(0))
    }

    /// The scatterlist and driver data, after [`Self::map_segments`].
    pub(crate) fn segments(&mut self) -> (&mut [SgEntry], &mut T::Data) {
        let pdu = self.pdu_ptr();
        // SAFETY: the PDU is initialised and exclusively ours; the fields are disjoint.
        unsafe { (&mut (*pdu).sg, &mut (*pdu).data) }
    }

    /// Ends the request with `status`.
    pub(crate) fn end(self, status: Status) {
        // SAFETY: the request is started and not ended, and this consumes its only owner.
        unsafe { kernel::bindings::blk_mq_end_request(self.raw(), status.as_raw()) };
    }

    /// Gives the request back to blk-mq to be issued again later (`queue_rq` sees it
    /// anew). Callable from completions.
    pub(crate) fn requeue(self) {
        // SAFETY: the request is started and not ended; this consumes its only owner.
        unsafe { kernel::bindings::blk_mq_requeue_request(self.raw(), true) };
    }

    /// Gives up ownership without ending the request: blk-mq ends or requeues it because
    /// `queue_rq` returned an error status for it.
    pub(super) fn into_raw(self) -> *mut kernel::bindings::request {
        self.raw()
    }
}

// SAFETY: `into_cqe` returns the `cqe` field of the request's PDU, which lives as long as
// the request (blk-mq frees PDUs only with the tag set, and a started request is not
// reused before it is ended); `from_cqe` walks back from that field to the PDU and from
// the PDU to its request, which is the request `into_cqe` gave up.
unsafe impl<T: Operations> CqeOwner for OwnedRequest<T> {
    fn into_cqe(self) -> NonNull<Cqe> {
        let pdu = self.pdu_ptr();
        // SAFETY: `pdu` is valid; taking the address of a field.
        let cqe = unsafe { &raw mut (*pdu).cqe };
        // The request is now owned by the work request carrying `cqe`.
        let _ = self.into_raw();
        // SAFETY: a field address of a valid allocation is non-null.
        unsafe { NonNull::new_unchecked(cqe) }
    }

    unsafe fn from_cqe(cqe: NonNull<Cqe>) -> Self {
        // SAFETY: `cqe` is the `cqe` field of a `Pdu<T::Data>` (the caller's contract).
        let pdu = unsafe { kernel::container_of!(cqe.as_ptr(), Pdu<T::Data>, cqe) };
        // SAFETY: `pdu` is the PDU of a request of this tag set; the request sits right
        // before it in the same allocation, so the pointer is not null.
        let rq = unsafe { NonNull::new_unchecked(bindings::rswap_blk_mq_rq_from_pdu(pdu.cast())) };
        // INVARIANT: ownership comes back from the work request exactly once.
        Self {
            rq,
            _ops: core::marker::PhantomData,
        }
    }

    fn complete(self, wc: &Wc<'_>) {
        // SAFETY: the request belongs to a tag set of `T` (type invariant), and the tag set
        // (with its driver) outlives its requests, so the driver outlives this call.
        let (driver, index) = unsafe { super::tag_set::driver_of_request::<T>(self.raw()) };
        driver.complete(index, self, wc);
    }
}

/// Initialises the PDU of a new request.
///
/// # Safety
///
/// `rq` must be a request of a tag set whose `cmd_size` is `size_of::<Pdu<D>>()`.
pub(super) unsafe fn init_pdu<D: Default>(rq: *mut kernel::bindings::request) {
    // SAFETY: the caller guarantees the PDU has room for a `Pdu<D>`; it is uninitialised
    // memory owned by blk-mq for this request.
    unsafe {
        let pdu = bindings::rswap_blk_mq_rq_to_pdu(rq).cast::<Pdu<D>>();
        pdu.write(Pdu::new());
    }
}

/// A block request seen by the timeout handler: it is owned elsewhere (by a work request),
/// so only its identity can be read.
pub(crate) struct TimedOutRequest<'a> {
    rq: &'a Opaque<kernel::bindings::request>,
}

impl<'a> TimedOutRequest<'a> {
    /// # Safety
    ///
    /// `rq` must be a valid request for `'a`.
    pub(super) unsafe fn from_raw(rq: *mut kernel::bindings::request) -> Self {
        // SAFETY: the caller guarantees validity; `Opaque` is transparent.
        let rq = unsafe { &*rq.cast() };
        Self { rq }
    }

    /// The first sector.
    pub(crate) fn sector(&self) -> u64 {
        // SAFETY: the request is valid.
        unsafe { bindings::rswap_blk_rq_pos(self.rq.get()) }
    }
}
