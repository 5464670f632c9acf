// SPDX-License-Identifier: GPL-2.0

//! Block requests the driver owns, and the driver's per-request data that blk-mq
//! preallocates with every tag.

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{block::SECTOR_SHIFT, page::BorrowedPage, prelude::*, types::Opaque};

use super::bindings;
use crate::kernel_ext::{EmbeddedWork, IntoRaw, IoSink, IoSource, ReclaimWorkqueue, SgTable};

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

/// How a request ended, or why `queue_rq` gives it back.
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
    /// The block layer's code for this status.
    pub(super) fn as_raw(self) -> bindings::blk_status_t {
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

/// A started block request that the driver owns: handed to `queue_rq`, then (for an
/// RDMA driver) owned by the work request it was posted with, then ended or requeued
/// exactly once.
///
/// `D` is the driver's per-request data (the request's PDU), `Q` what each hardware
/// queue's driver data points to.
///
/// # Invariants
///
/// `rq` is a started, not yet ended request of a tag set whose PDU is an initialised `D`
/// and whose hardware contexts' driver data point to a `Q` that lives as long as the tag
/// set; this value is its only owner.
#[must_use = "a request must be ended, requeued or handed to a work request"]
pub(crate) struct OwnedRequest<D, Q> {
    rq: NonNull<kernel::bindings::request>,
    _types: PhantomData<(D, *const Q)>,
}

// SAFETY: a request may be completed from any CPU; the owner is unique, the data is
// `Send` and the hardware queue data is shared (`Sync`).
unsafe impl<D: Send, Q: Sync> Send for OwnedRequest<D, Q> {}

impl<D, Q> OwnedRequest<D, Q> {
    /// Takes ownership of a started request.
    ///
    /// # Safety
    ///
    /// `rq` must satisfy the type invariant and have no other owner.
    pub(super) unsafe fn from_raw(rq: NonNull<kernel::bindings::request>) -> Self {
        // INVARIANT: the caller's guarantee.
        Self {
            rq,
            _types: PhantomData,
        }
    }

    fn raw(&self) -> *mut kernel::bindings::request {
        self.rq.as_ptr()
    }

    /// The request's identity and hardware queue, for as long as it is borrowed.
    pub(crate) fn info(&self) -> RqInfo<'_, Q> {
        // INVARIANT: the request is valid while this owner is borrowed (type invariant).
        RqInfo {
            rq: self.rq,
            _rq: PhantomData,
        }
    }

    /// The first sector (512-byte units).
    pub(crate) fn sector(&self) -> u64 {
        self.info().sector()
    }

    /// The byte offset of the first sector.
    pub(crate) fn offset(&self) -> u64 {
        self.info().offset()
    }

    /// The number of bytes left to transfer.
    pub(crate) fn bytes(&self) -> u32 {
        self.info().bytes()
    }

    /// See [`RqInfo::age_ns`].
    pub(crate) fn age_ns(&self) -> Option<u64> {
        self.info().age_ns()
    }

    /// The operation.
    pub(crate) fn op(&self) -> Op {
        self.info().op()
    }

    /// The data of the hardware queue the request was issued on. It lives as long as the
    /// tag set, hence at least as long as this request.
    pub(crate) fn hw_queue(&self) -> &Q {
        // SAFETY: the request is valid; its hardware context's driver data points to a
        // `Q` that outlives the request (type invariant).
        unsafe { hw_queue_of(self.raw()) }
    }

    fn pdu_ptr(&self) -> *mut Pdu<D> {
        // SAFETY: the request is valid; its PDU is a `Pdu<D>` (type invariant).
        unsafe { bindings::rswap_blk_mq_rq_to_pdu(self.raw()) }.cast()
    }

    fn data_ptr(&self) -> NonNull<D> {
        // SAFETY: the request is valid and its PDU is a `Pdu<D>` (type invariant).
        unsafe { data_of(self.rq) }
    }

    /// Hands the request to `wq`, whose worker runs the driver's
    /// [`super::Operations::run_deferred`] with it; gives it back if its work item is
    /// queued already (it cannot be: only the request's owner queues it). Callable from
    /// any context, softirq included.
    pub(crate) fn defer(self, wq: &ReclaimWorkqueue) -> Result<(), Self> {
        let pdu = self.pdu_ptr();
        // SAFETY: the work item was initialised with the driver's function when blk-mq
        // made the request (`init_data`), and stays in place until the tag set frees the
        // request, which cannot happen before the request is ended: the work function takes
        // the ownership given up here and ends the request (or passes it on).
        let queued = unsafe { wq.queue(&(*pdu).work) };
        if queued {
            Ok(())
        } else {
            Err(self)
        }
    }

    /// The driver's data of this request.
    pub(crate) fn data(&mut self) -> &mut D {
        // SAFETY: the PDU is an initialised `D`, and this value owns the request
        // exclusively, so borrowing `self` mutably borrows the PDU exclusively.
        unsafe { self.data_ptr().as_mut() }
    }

    /// Fills the scatterlist that `table` picks out of the request's data with the
    /// request's segments, and returns how many entries it used. `None` if `table` gives
    /// no table or the request has more segments than the table has entries.
    pub(crate) fn map_sg<const N: usize>(
        &mut self,
        table: impl FnOnce(&mut D) -> Option<&mut SgTable<N>>,
    ) -> Option<usize> {
        let rq = self.raw();
        let table = table(self.data())?;
        let max = u32::try_from(N).ok()?;
        // SAFETY: the request is valid and owned; `table` has `max` entries, and the
        // helper refuses (< 0) a request with more physical segments than that.
        let n = unsafe { bindings::rswap_blk_rq_map_sg(rq, table.as_raw(), max) };
        usize::try_from(n).ok().filter(|&n| n > 0)
    }

    /// Fills the scatterlist that `table` picks out of the request's data with one entry
    /// per page of the request: bytes `off..off + len` of each page (a fragment of every
    /// block, for a disk whose blocks are pages). Returns how many entries; `None` if
    /// `table` gives no table, a segment is not a whole page, there are more pages than the
    /// table has entries, or the range is not within a page.
    pub(crate) fn map_fragments<const N: usize>(
        &mut self,
        table: impl FnOnce(&mut D) -> Option<&mut SgTable<N>>,
        off: u32,
        len: u32,
    ) -> Option<usize> {
        let rq = self.raw();
        let table = table(self.data())?;
        let max = u32::try_from(N).ok()?;
        // SAFETY: the request is valid and owned; `table` has `max` entries, and the
        // helper writes at most that many.
        let n = unsafe { bindings::rswap_blk_rq_map_frags(rq, table.as_raw(), max, off, len) };
        usize::try_from(n).ok().filter(|&n| n > 0)
    }

    /// The driver's data of this request, and the pages a write sends, in order (see
    /// [`Self::pages`]); `None` for any other operation. The pages are the bios', not
    /// part of the data, so both can be used at once.
    pub(crate) fn data_and_sent_pages<const N: usize>(
        &mut self,
    ) -> Option<(&mut D, RqPages<'_, N, Sent>)> {
        self.data_and_pages(Op::Write)
    }

    /// The driver's data of this request, and the pages a read fills, in order (see
    /// [`Self::pages`]); `None` for any other operation.
    pub(crate) fn data_and_filled_pages<const N: usize>(
        &mut self,
    ) -> Option<(&mut D, RqPages<'_, N, Filled>)> {
        self.data_and_pages(Op::Read)
    }

    /// The data and the pages, if the request is an `op` (whose pages are of kind `K`).
    fn data_and_pages<const N: usize, K>(&mut self, op: Op) -> Option<(&mut D, RqPages<'_, N, K>)> {
        if self.op() != op {
            return None;
        }
        let pages = self.pages()?;
        // SAFETY: the PDU is an initialised `D`, and this value owns the request
        // exclusively (`&mut self`); the pages borrowed beside it are not in the PDU.
        let data = unsafe { self.data_ptr().as_mut() };
        Some((data, pages))
    }

    /// The pages a read fills, in order (see [`Self::pages`]), for the owner alone while
    /// it borrows them; `None` for any other operation.
    pub(crate) fn filled_pages<const N: usize>(&mut self) -> Option<RqPages<'_, N, Filled>> {
        match self.op() {
            Op::Read => self.pages(),
            _ => None,
        }
    }

    /// The pages of the request's data, in order, if each segment is one whole page and
    /// there are at most `N` (a disk whose `dma_alignment` is the page size, with
    /// page-sized blocks, has only such requests). They stay valid while the request is
    /// owned.
    fn pages<const N: usize, K>(&self) -> Option<RqPages<'_, N, K>> {
        // SAFETY: the request is valid, and owned while `self` is borrowed.
        unsafe { pages_of(self.rq) }
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
    /// `queue_rq` returned an error status for it, or the parts it was fanned out to own
    /// it ([`super::fanout`]).
    pub(super) fn into_raw(self) -> NonNull<kernel::bindings::request> {
        self.rq
    }
}

// SAFETY: the PDU stays in place in the request's allocation until blk-mq frees the
// request, which cannot happen before the request is ended, and only an owner ends it:
// while given up, the PDU stands for the request's one owner; `from_raw` takes it back.
unsafe impl<D, Q> IntoRaw for OwnedRequest<D, Q> {
    type Target = D;

    /// Gives up ownership, keeping the request's data as the handle that `from_raw` takes
    /// back (a work request's completion entry lives there).
    fn into_raw(self) -> NonNull<D> {
        self.data_ptr()
    }

    unsafe fn from_raw(data: NonNull<D>) -> Self {
        // SAFETY: `data` is the data of the PDU of an owned request (the caller's
        // guarantee).
        let rq = unsafe { request_of_data(data) };
        // INVARIANT: the ownership `into_raw` gave up comes back exactly once.
        Self {
            rq,
            _types: PhantomData,
        }
    }
}

/// The driver's data in the PDU of `rq`.
///
/// # Safety
///
/// `rq` must be a valid request whose PDU is a `Pdu<D>`.
pub(super) unsafe fn data_of<D>(rq: NonNull<kernel::bindings::request>) -> NonNull<D> {
    // SAFETY: the caller's guarantee: the PDU is a `Pdu<D>` in the request's allocation,
    // so its field's address is not null.
    unsafe {
        let pdu = bindings::rswap_blk_mq_rq_to_pdu(rq.as_ptr()).cast::<Pdu<D>>();
        NonNull::new_unchecked(&raw mut (*pdu).data)
    }
}

/// The request whose PDU holds `data`.
///
/// # Safety
///
/// `data` must be the data of the PDU (a `Pdu<D>`) of a valid request.
pub(super) unsafe fn request_of_data<D>(data: NonNull<D>) -> NonNull<kernel::bindings::request> {
    // SAFETY: the caller's guarantee; the request sits right before its PDU in the same
    // allocation, so it is not null.
    unsafe {
        let pdu = kernel::container_of!(data.as_ptr(), Pdu<D>, data);
        NonNull::new_unchecked(bindings::rswap_blk_mq_rq_from_pdu(pdu.cast()))
    }
}

/// The driver data of `rq`'s hardware queue.
///
/// # Safety
///
/// `rq` must be a valid request of a tag set whose hardware contexts' driver data point to
/// a `Q` that outlives `'a`, and stay valid for `'a`.
pub(super) unsafe fn hw_queue_of<'a, Q>(rq: *mut kernel::bindings::request) -> &'a Q {
    // SAFETY: the caller's guarantee.
    unsafe { &*bindings::rswap_blk_hctx_driver_data(bindings::rswap_blk_rq_hctx(rq)).cast::<Q>() }
}

/// The pages of `rq`'s data (see [`OwnedRequest::filled_pages`]).
///
/// # Safety
///
/// `rq` must be a valid request whose bios stay with it for `'a` (it is not ended), of
/// kind `K` ([`Sent`]: a write; [`Filled`]: a read whose pages nobody else uses for `'a`).
pub(super) unsafe fn pages_of<'a, const N: usize, K>(
    rq: NonNull<kernel::bindings::request>,
) -> Option<RqPages<'a, N, K>> {
    let mut pages = [core::ptr::null_mut(); N];
    let max = u32::try_from(N).ok()?;
    // SAFETY: the request is valid (the caller's guarantee); `pages` has room for `max`
    // pointers.
    let n = unsafe { bindings::rswap_blk_rq_pages(rq.as_ptr(), pages.as_mut_ptr(), max) };
    let len = usize::try_from(n).ok()?;
    // INVARIANT: the helper wrote `len` pages of the request's bios, which stay for `'a`
    // (the caller's guarantee).
    Some(RqPages {
        pages,
        len,
        _rq: PhantomData,
    })
}

/// What any holder of a request may read of it: where it is, how large, which operation,
/// and its hardware queue.
///
/// # Invariants
///
/// `rq` is a valid request of a tag set whose hardware contexts' driver data point to a
/// `Q`, and both stay valid for `'a`.
pub(crate) struct RqInfo<'a, Q> {
    rq: NonNull<kernel::bindings::request>,
    _rq: PhantomData<&'a Q>,
}

impl<'a, Q> RqInfo<'a, Q> {
    /// # Safety
    ///
    /// `rq` must satisfy the type invariant for `'a`.
    pub(super) unsafe fn new(rq: NonNull<kernel::bindings::request>) -> Self {
        // INVARIANT: the caller's guarantee.
        Self {
            rq,
            _rq: PhantomData,
        }
    }

    /// The first sector (512-byte units).
    pub(crate) fn sector(&self) -> u64 {
        // SAFETY: the request is valid (type invariant).
        unsafe { bindings::rswap_blk_rq_pos(self.rq.as_ptr()) }
    }

    /// The byte offset of the first sector.
    pub(crate) fn offset(&self) -> u64 {
        self.sector() << SECTOR_SHIFT
    }

    /// The number of bytes left to transfer.
    pub(crate) fn bytes(&self) -> u32 {
        // SAFETY: the request is valid.
        unsafe { bindings::rswap_blk_rq_bytes(self.rq.as_ptr()) }
    }

    /// Nanoseconds since the block layer started the request (when its bio became a
    /// request), if the block layer timed it: it does with I/O accounting on (the queue's
    /// `iostats`, the default) or an I/O scheduler.
    pub(crate) fn age_ns(&self) -> Option<u64> {
        // SAFETY: the request is valid.
        let ns = unsafe { bindings::rswap_blk_rq_age_ns(self.rq.as_ptr()) };
        (ns != u64::MAX).then_some(ns)
    }

    /// The operation.
    pub(crate) fn op(&self) -> Op {
        // SAFETY: the request is valid.
        let op = unsafe { bindings::rswap_blk_rq_op(self.rq.as_ptr()) };
        match op {
            kernel::bindings::req_op_REQ_OP_READ => Op::Read,
            kernel::bindings::req_op_REQ_OP_WRITE => Op::Write,
            kernel::bindings::req_op_REQ_OP_FLUSH => Op::Flush,
            other => Op::Other(other),
        }
    }

    /// The data of the request's hardware queue.
    pub(crate) fn hw_queue(&self) -> &'a Q {
        // SAFETY: the request and its hardware queue's data are valid for `'a` (type
        // invariant).
        unsafe { hw_queue_of(self.rq.as_ptr()) }
    }
}

/// [`RqPages`] of a write: the pages it sends.
pub(crate) struct Sent;

/// [`RqPages`] of a read: the pages it fills.
pub(crate) struct Filled;

/// The pages of an owned request's data ([`OwnedRequest::sent_pages`],
/// [`OwnedRequest::filled_pages`]).
///
/// # Invariants
///
/// The first `len` entries of `pages` are pages of the bios of a request owned for `'a`,
/// which keep them allocated; with `K` = [`Sent`] the request is a write, with `K` =
/// [`Filled`] a read, and its owner is borrowed exclusively for `'a`.
pub(crate) struct RqPages<'a, const N: usize, K> {
    pages: [*mut kernel::bindings::page; N],
    len: usize,
    _rq: PhantomData<(&'a (), K)>,
}

impl<'a, const N: usize, K> RqPages<'a, N, K> {
    /// How many pages.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The pages, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = RqPage<'a, K>> + '_ {
        self.pages.iter().take(self.len).filter_map(|&p| {
            // SAFETY: the page is one of the request's, valid for `'a` (type invariant).
            let page = NonNull::new(p).map(|p| unsafe { BorrowedPage::from_raw(p) })?;
            // INVARIANT: a page of these pages, so of a request of kind `K`.
            Some(RqPage(page, PhantomData))
        })
    }
}

/// One page of [`RqPages`].
///
/// # Invariants
///
/// The page is one of the data of a request of kind `K` owned for `'a` (see
/// [`RqPages`]).
pub(crate) struct RqPage<'a, K>(BorrowedPage<'a>, PhantomData<K>);

// SAFETY: a write's pages stay allocated while its owner has it (type invariant); the
// block layer hands them over to be sent, and a caller that changes its buffer under the
// write (`O_DIRECT`) accepts that a mix of its bytes is written, as DMA would send them.
unsafe impl IoSource for RqPage<'_, Sent> {
    fn page(&self) -> &kernel::page::Page {
        &self.0
    }
}

// SAFETY: a read's pages stay allocated while its owner has it, and until the read ends
// nobody but the driver, here the borrower of its owner (type invariant), uses them.
unsafe impl IoSink for RqPage<'_, Filled> {
    fn page(&self) -> &kernel::page::Page {
        &self.0
    }
}

/// What blk-mq allocates after each request (`cmd_size`): the driver's data, and the
/// work item that runs the request in a workqueue ([`OwnedRequest::defer`]).
#[repr(C)]
pub(super) struct Pdu<D> {
    data: D,
    work: EmbeddedWork,
}

/// The request whose PDU's work item is `work`.
///
/// # Safety
///
/// `work` must be the work item of the PDU (a `Pdu<D>`) of a valid request.
pub(super) unsafe fn request_of_work<D>(
    work: *mut kernel::bindings::work_struct,
) -> *mut kernel::bindings::request {
    // `EmbeddedWork` is a transparent `work_struct`.
    let work = work.cast::<EmbeddedWork>();
    // SAFETY: `work` is the `work` field of a `Pdu<D>` of a request (the caller's
    // guarantee), which sits right after the request.
    unsafe {
        let pdu = kernel::container_of!(work, Pdu<D>, work);
        bindings::rswap_blk_mq_rq_from_pdu(pdu.cast())
    }
}

/// Initialises the PDU of a new request, its work item running `work_fn`, and returns the
/// driver's data in it.
///
/// # Safety
///
/// `rq` must be a request of a tag set whose `cmd_size` is `size_of::<Pdu<D>>()`, with
/// an uninitialised (or dropped) PDU, which stays in place until [`drop_data`].
pub(super) unsafe fn init_data<D: Default>(
    rq: *mut kernel::bindings::request,
    work_fn: unsafe extern "C" fn(*mut kernel::bindings::work_struct),
) -> *mut D {
    // SAFETY: `rq` is a valid request (the caller's guarantee).
    let pdu = unsafe { bindings::rswap_blk_mq_rq_to_pdu(rq) }.cast::<Pdu<D>>();
    // SAFETY: the PDU has room for a `Pdu<D>` (the caller's guarantee) and is not
    // initialised; blk-mq aligns PDUs for any kernel type. Its work item is new (not
    // queued) and stays in place (the caller's guarantee).
    unsafe {
        pdu.write(Pdu {
            data: D::default(),
            work: EmbeddedWork::default(),
        });
        (*pdu).work.init(work_fn);
        &raw mut (*pdu).data
    }
}

/// Drops the PDU of a request that is being freed.
///
/// # Safety
///
/// `rq` must be a request whose PDU is an initialised `Pdu<D>` that nothing uses any more
/// (its work item is not queued).
pub(super) unsafe fn drop_data<D>(rq: *mut kernel::bindings::request) {
    // SAFETY: the caller's guarantee; the PDU is not used again.
    unsafe { core::ptr::drop_in_place(bindings::rswap_blk_mq_rq_to_pdu(rq).cast::<Pdu<D>>()) };
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

    /// Whether the request is still in flight: not, if it was ended meanwhile (its memory
    /// stays valid, as blk-mq holds a reference for the timeout handler).
    pub(crate) fn is_in_flight(&self) -> bool {
        // SAFETY: the request is valid.
        unsafe { bindings::rswap_blk_rq_in_flight(self.rq.get()) }
    }
}
