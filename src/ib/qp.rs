// SPDX-License-Identifier: GPL-2.0

//! Queue pairs created through rdma_cm, and posting work requests on them.

use core::{
    mem::ManuallyDrop,
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicU8, Ordering},
};
use kernel::{
    error::to_result,
    prelude::*,
    str::CStrExt,
    sync::Arc,
    time::{delay::fsleep, Delta, Instant, Monotonic},
};

use super::{
    bindings,
    cq::{Cq, CqPoll},
    cqe::{impl_has_cqe, Cqe, CqeOwner, Outstanding, Posting, SgeList, Wc, MAX_READ_SLOTS},
    dma::{Direction, DmaBuf, Sge},
    mr::Mr,
    pd::Pd,
    rdma_device::RdmaDevice,
};

/// RDMA READ and WRITE posts still to fail, for tests (see [`fail_posts`]).
#[cfg(rswap_fault_injection)]
static FAIL_POSTS: crate::kernel_ext::Countdown = crate::kernel_ext::Countdown::new();

/// Makes the next `n` RDMA READ or WRITE posts (of any QP) fail with `ENOTCONN` before they
/// reach the device, as posts do on a QP the device put in the error state when the peer
/// disconnected (soft-iWARP refuses those). For the test of that path (the
/// `fault_fail_posts` module parameter of a module built with fault injection).
#[cfg(rswap_fault_injection)]
pub(crate) fn fail_posts(n: u32) {
    FAIL_POSTS.set(n);
}

/// The shape of a QP.
pub(crate) struct QpCaps {
    /// Send work requests (RDMA READ/WRITE) in flight at once.
    pub(crate) send_wr: u32,
    /// Receive work requests posted at once.
    pub(crate) recv_wr: u32,
    /// SGEs per send work request.
    pub(crate) send_sge: u32,
    /// RDMA READs in flight at once, at most [`MAX_READ_SLOTS`]: on iWARP each holds a
    /// memory region of the QP, its slot, until it completes (see [`Qp::post_rdma`]).
    pub(crate) read_slots: u32,
    /// The most pages one READ's local buffers span.
    pub(crate) read_pages: u32,
    /// Whether the send completions are polled by the QP's user ([`Qp::poll`]) rather
    /// than run in softirq context (see [`Qp`]).
    pub(crate) polled: bool,
}

/// How many completions one [`Qp::poll`] runs at most.
const POLL_BUDGET: u32 = 16;

/// How many times [`Qp::poll_all`] polls at most.
const POLL_ALL_ROUNDS: u32 = 64;

/// How long the teardown of a polled QP polls for its drain marker (see [`Qp::drain`]);
/// what has not completed by then is completed as flushed once the QP is destroyed, as
/// for a provider that loses completions.
const POLLED_DRAIN_MS: i64 = 5000;

/// The last work request of a polled QP: a zero-length RDMA WRITE posted once the QP is in
/// the error state, whose (flushed) completion comes after that of every send posted
/// before it (see [`Qp::drain`]), as `ib_drain_qp`'s marker does.
struct DrainMarker {
    cqe: Cqe,
    /// Set by its completion.
    done: AtomicBool,
}

impl_has_cqe! { impl HasCqe for DrainMarker { self.cqe } }

impl SgeList for DrainMarker {
    fn sges(&self) -> &[Sge] {
        &[]
    }
}

/// The posted drain marker of a QP, which owns it (in a box, so it does not move).
///
/// # Invariants
///
/// Points to the marker of a QP that is posted at most once and outlives its completion
/// (the QP completes every posted work request before its fields go, see [`Qp::drop`]).
struct MarkerPost(NonNull<DrainMarker>);

// SAFETY: the marker is plain memory whose only shared field is atomic.
unsafe impl Send for MarkerPost {}

// SAFETY: the marker stays in its box, which the QP keeps until after every completion
// (type invariant), and it is posted once, so `from_raw` takes back what `into_raw` gave.
unsafe impl CqeOwner for MarkerPost {
    type Target = DrainMarker;

    fn into_raw(self) -> NonNull<DrainMarker> {
        self.0
    }

    unsafe fn from_raw(target: NonNull<DrainMarker>) -> Self {
        Self(target)
    }

    fn complete(self, _wc: &Wc<'_>) {
        // SAFETY: the marker outlives its completion (type invariant).
        unsafe { self.0.as_ref() }
            .done
            .store(true, Ordering::Release);
    }
}

/// Which one-sided operation to post.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RdmaOp {
    /// Read remote memory into local buffers.
    Read,
    /// Write local buffers to remote memory.
    Write,
}

/// `Fence::state`: the fence buffer's region is not registered yet.
const FENCE_UNREGISTERED: u8 = 0;
/// `Fence::state`: one poster is posting the registration now.
const FENCE_REGISTERING: u8 = 1;
/// `Fence::state`: the registration is on the send queue, ahead of anything posted
/// from now on.
const FENCE_REGISTERED: u8 = 2;

/// The buffer the READ that follows each WRITE puts its byte in, on a device that needs
/// it (iWARP), and its memory region: see [`Qp::post_rdma`].
///
/// Fields are dropped in declaration order: the region is deregistered before its buffer
/// is unmapped.
struct Fence {
    /// Maps the buffer's first byte; registered once, before the first fence READ, and
    /// valid for the QP's life.
    mr: Mr,
    /// Whether `mr` is registered: `FENCE_*`.
    state: AtomicU8,
    _sink: DmaBuf,
}

/// A reliable-connected QP on an rdma_cm id, with its CQ and a protection domain of its own
/// (see [`Pd`]); drained and destroyed on drop, and every work request it was given
/// completed by then (see [`Qp::drop`]).
///
/// A polled QP ([`QpCaps::polled`]) has two CQs: its send completions (the RDMA READs and
/// WRITEs) are run only by [`Qp::poll`], in the context of whoever polls, and its receive
/// completions (the server's descriptor, which the connect waits for) in softirq context.
///
/// Only a [`super::cm::CmId`] makes and owns one, and drops it before destroying the id.
///
/// On an iWARP device the sink of an RDMA READ must be registered for remote write (the
/// response is placed like a WRITE from the server): the QP then owns a memory region per
/// READ slot, registered before each READ and invalidated by it, and one for the buffer
/// its fence READs write to (see [`Qp::post_rdma`]).
///
/// # Invariants
///
/// `id` is valid and has a QP created by `rdma_create_qp` in `pd`, with `cq` for its
/// sends and `recv_cq` (if set, else `cq`) for its receives, that has not been destroyed.
/// Both CQs list their work requests in `cq`'s [`Outstanding`] set. The id outlives this
/// value (its owner, the `CmId`, drops it first); the CQs and the PD are owned here, the
/// CQs are dropped only in `drop`, and `pd` last of all. `name` is null or a string that
/// outlives the QP. `fence` is set exactly on an iWARP device, and then `read_mrs` holds
/// one region for each READ slot (else none); the regions are in `pd`. `marker` is set
/// exactly on a polled QP, and posted at most once, by `drain`.
pub(crate) struct Qp {
    id: NonNull<bindings::rdma_cm_id>,
    /// The fence READs' buffer (iWARP). Deregistered and unmapped after the QP is
    /// destroyed.
    fence: Option<Fence>,
    /// One region per READ slot on iWARP (empty elsewhere): the sink of the READ in
    /// flight with that slot. Deregistered after the QP is destroyed.
    read_mrs: KVec<Mr>,
    /// Set once drained: nothing can be posted after that, so once is enough.
    drained: AtomicBool,
    /// The QP's CQ (its send CQ if it is polled), freed after the QP is destroyed.
    cq: ManuallyDrop<Cq>,
    /// A polled QP's receive CQ (softirq), freed after the QP is destroyed.
    recv_cq: ManuallyDrop<Option<Cq>>,
    /// A polled QP's drain marker; freed after every completion.
    marker: Option<KBox<DrainMarker>>,
    /// The QP's name for the log (its queue), or null.
    name: *const kernel::ffi::c_char,
    /// The QP's protection domain, holding the QP and the regions. Last: dropped after
    /// everything in it.
    pd: Pd,
}

// SAFETY: posting and destroying work from any thread.
unsafe impl Send for Qp {}
// SAFETY: `ib_post_send`/`ib_post_recv` are thread safe.
unsafe impl Sync for Qp {}

impl Qp {
    /// Creates the QP of `id` on `dev`, in a PD and with a CQ of its own for both
    /// directions (or, polled, one for each); its asynchronous events are logged with
    /// `name`.
    ///
    /// # Safety
    ///
    /// `id` must be a valid id with a resolved route on `dev`'s device and no QP, that
    /// outlives the returned value; so must `name`.
    pub(super) unsafe fn create(
        id: NonNull<bindings::rdma_cm_id>,
        dev: &Arc<RdmaDevice>,
        caps: &QpCaps,
        vector_hint: u32,
        name: Option<&CStr>,
    ) -> Result<Self> {
        let iwarp = dev.device().is_iwarp();
        // Dropped after the regions, on every return below (declared first).
        let pd = Pd::alloc(dev)?;
        let fence = if iwarp {
            let sink = DmaBuf::with_contents(&pd, Direction::FromDevice, &[])?;
            // SAFETY: the region is dropped before `pd`: here on error (declared later),
            // else by the `Qp`, whose `pd` is its last field.
            let mr = unsafe { Mr::alloc(&pd, 1)? };
            let addr = sink.sges().first().map_or(0, |sge| sge.0.addr);
            // SAFETY: `addr` is the mapping of `sink`, which stays mapped until after the
            // region is dropped (`Fence` drops its region first); the region is new.
            unsafe { mr.map_single(addr, 1)? };
            Some(Fence {
                mr,
                state: AtomicU8::new(FENCE_UNREGISTERED),
                _sink: sink,
            })
        } else {
            None
        };
        if caps.read_slots > MAX_READ_SLOTS {
            return Err(EINVAL);
        }
        let mut read_mrs = KVec::new();
        if iwarp {
            let slots = usize::try_from(caps.read_slots).map_err(|_| EINVAL)?;
            read_mrs.reserve(slots, GFP_KERNEL)?;
            for _ in 0..slots {
                // SAFETY: as for the fence's region.
                read_mrs.push(unsafe { Mr::alloc(&pd, caps.read_pages)? }, GFP_KERNEL)?;
            }
        }
        // On iWARP every work request may be two (see `post_rdma`): a fenced WRITE is a
        // WRITE and a READ, a READ is a registration and the READ; and once, the fence
        // buffer's registration.
        let send_wr = if iwarp {
            caps.send_wr.saturating_mul(2).saturating_add(1)
        } else {
            caps.send_wr
        };
        // READ slots only where a READ needs a region (iWARP).
        let read_slots = if iwarp { caps.read_slots } else { 0 };
        let outstanding = Arc::pin_init(Outstanding::new(read_slots), GFP_KERNEL)?;
        let (cq, recv_cq) = if caps.polled {
            // One more of each for the drain markers (see `drain`).
            let cq = Cq::new(dev, send_wr + 1, vector_hint, CqPoll::Direct, &outstanding)?;
            let recv_cq = Cq::new(
                dev,
                caps.recv_wr + 1,
                vector_hint,
                CqPoll::Softirq,
                &outstanding,
            )?;
            (cq, Some(recv_cq))
        } else {
            // One more of each for `ib_drain_qp`'s marker work requests.
            let cqes = send_wr + caps.recv_wr + 2;
            let cq = Cq::new(dev, cqes, vector_hint, CqPoll::Softirq, &outstanding)?;
            (cq, None)
        };
        let marker = if caps.polled {
            Some(KBox::new(
                DrainMarker {
                    cqe: Cqe::new(),
                    done: AtomicBool::new(false),
                },
                GFP_KERNEL,
            )?)
        } else {
            None
        };
        let mut attr = bindings::ib_qp_init_attr {
            // Asynchronous QP events (a QP turning fatal, ...) go to the kernel log.
            event_handler: Some(bindings::rswap_ib_qp_event),
            qp_context: name.map_or(core::ptr::null_mut(), |n| n.as_char_ptr().cast_mut().cast()),
            send_cq: cq.as_raw(),
            recv_cq: recv_cq.as_ref().unwrap_or(&cq).as_raw(),
            cap: bindings::ib_qp_cap {
                max_send_wr: send_wr + 1,
                max_recv_wr: caps.recv_wr + 1,
                max_send_sge: caps.send_sge,
                max_recv_sge: 1,
                ..Default::default()
            },
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            ..Default::default()
        };
        // SAFETY: the id is valid with a resolved route and no QP (the caller's
        // guarantee); the PD and CQ are valid and on the id's device; `attr` is valid for
        // the call.
        to_result(unsafe { bindings::rdma_create_qp(id.as_ptr(), pd.as_raw(), &mut attr) })?;
        // INVARIANT: the id now has a QP in `pd` with `cq` and `recv_cq` (or `cq`), both
        // listing in `outstanding`.
        Ok(Self {
            id,
            fence,
            read_mrs,
            drained: AtomicBool::new(false),
            cq: ManuallyDrop::new(cq),
            recv_cq: ManuallyDrop::new(recv_cq),
            marker,
            name: name.map_or(core::ptr::null(), |n| n.as_char_ptr()),
            pd,
        })
    }

    /// The QP's protection domain: buffers posted on this QP are mapped with its local key
    /// ([`super::dma::SgDma::map`], [`super::dma::DmaBuffer::with_contents`]).
    pub(crate) fn pd(&self) -> &Pd {
        &self.pd
    }

    fn qp(&self) -> *mut bindings::ib_qp {
        // SAFETY: by the type invariant the id is valid and has a QP.
        unsafe { (*self.id.as_ptr()).qp }
    }

    /// Runs the handlers of the send completions waiting on a polled QP (at most a few),
    /// with softirqs disabled, and returns how many ran; 0 on a QP that is not polled.
    /// Does not sleep; not in hard interrupt context (it warns and does nothing there).
    pub(crate) fn poll(&self) -> u32 {
        self.cq.poll(POLL_BUDGET)
    }

    /// [`Qp::poll`] until it finds nothing (or a bounded number of times, if completions
    /// keep coming): for who reaps what nobody polled for (the keep-alive, a timeout).
    /// How many ran.
    pub(crate) fn poll_all(&self) -> u32 {
        let mut total = 0;
        for _ in 0..POLL_ALL_ROUNDS {
            let n = self.poll();
            total += n;
            if n < POLL_BUDGET {
                break;
            }
        }
        total
    }

    /// Whether this QP registers the sink of each RDMA READ (iWARP), see
    /// [`Qp::post_rdma`].
    pub(crate) fn registers_read_sinks(&self) -> bool {
        // Exactly the QPs of iWARP devices have a fence.
        self.fence.is_some()
    }

    /// Posts one signalled RDMA WRITE of the SGEs of `owner`'s target at
    /// `remote_addr`/`rkey`, as [`Qp::post_rdma`] does.
    pub(crate) fn post_write<T: CqeOwner>(
        &self,
        owner: T,
        remote_addr: u64,
        rkey: u32,
    ) -> core::result::Result<(), (Error, T)> {
        self.post_rdma(owner, RdmaOp::Write, remote_addr, rkey)
    }

    /// Whether `e`, from a post, refused the work request only for now: the send queue
    /// is full (`ENOMEM`), or what it needs is another poster's a moment longer (`EBUSY`:
    /// every READ slot in use, the fence region being registered). Post it again soon.
    pub(crate) fn refused_for_now(e: Error) -> bool {
        e == EBUSY || e == ENOMEM
    }

    /// Posts one signalled RDMA READ or WRITE of the SGEs of `owner`'s target at
    /// `remote_addr`/`rkey`; the work request owns `owner` until its completion hands it
    /// to `T::complete`. On failure nothing was posted and `owner` comes back with the
    /// error (`EBUSY`: try again soon).
    ///
    /// A WRITE's success means the data is in the remote memory. On InfiniBand and RoCE
    /// the responder's acknowledgement says so. On iWARP a WRITE completes once its data
    /// is handed to TCP, and a connection lost after that loses it: there the WRITE goes
    /// unsignalled, followed by a one-byte READ of the same address (into a scratch
    /// buffer of the QP) that completes `owner`. The READ's response comes after the WRITE
    /// was placed (one ordered stream), and either failing fails the READ.
    ///
    /// On iWARP a READ's sink must be registered for remote write: the READ takes a free
    /// READ slot of the QP (free again when it completes; `EBUSY` if none is) and goes as
    /// an unsignalled registration of the target's pages in the slot's region, then an
    /// RDMA READ with invalidate into that region (one SGE, whatever the target's
    /// segments), which leaves the region invalid again when it completes. The scratch
    /// buffer of the fence READs has a region of its own, registered ahead of the first
    /// fenced WRITE and for the QP's life: a QP cannot post before it is connected, and
    /// chained to its first use the registration needs no wait anywhere.
    pub(crate) fn post_rdma<T: CqeOwner>(
        &self,
        owner: T,
        op: RdmaOp,
        remote_addr: u64,
        rkey: u32,
    ) -> core::result::Result<(), (Error, T)> {
        #[cfg(rswap_fault_injection)]
        if FAIL_POSTS.take() {
            return Err((ENOTCONN, owner));
        }
        let posting = Posting::new(owner, self.cq.outstanding());
        let (sges, len) = {
            let sges = posting.sges();
            (sges.as_ptr(), sges.len())
        };
        let Ok(nsges) = i32::try_from(len) else {
            return Err((EINVAL, posting.unpost()));
        };
        let mut wr = bindings::rswap_ib_rdma {
            cqe: posting.cqe(),
            write: op == RdmaOp::Write,
            sges: sges.cast::<bindings::ib_sge>().cast_mut(),
            nsges,
            remote_addr,
            rkey,
            ..Default::default()
        };
        // In the target, which does not move while given up.
        let (sgl, sg_count) = posting
            .mapped_sg()
            .map_or((core::ptr::null_mut(), 0), |sg| (sg.as_raw(), sg.count()));
        let mut fence_reg = false;
        match op {
            RdmaOp::Read if self.registers_read_sinks() => {
                let Some(slot) = posting.take_read_slot() else {
                    return Err((EBUSY, posting.unpost()));
                };
                let mr = usize::try_from(slot)
                    .ok()
                    .and_then(|i| self.read_mrs.get(i));
                let Some(mr) = mr else {
                    return Err((EINVAL, posting.unpost()));
                };
                wr.sink_mr = mr.as_raw();
                wr.sgl = sgl;
                wr.sg_count = sg_count;
            }
            RdmaOp::Read => {}
            RdmaOp::Write => {
                if let Some(fence) = &self.fence {
                    wr.fence_mr = fence.mr.as_raw();
                    fence_reg = match fence.state.compare_exchange(
                        FENCE_UNREGISTERED,
                        FENCE_REGISTERING,
                        Ordering::Acquire,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => true,
                        Err(FENCE_REGISTERED) => false,
                        // Another poster is registering it right now: what is posted
                        // must go after that.
                        Err(_) => return Err((EBUSY, posting.unpost())),
                    };
                    wr.fence_reg = fence_reg;
                }
            }
        }
        // SAFETY: the QP is valid; the SGEs, the scatterlist and the completion entry are
        // in the object the work request owns from now on, valid until its completion;
        // the provider copies the SGEs during the call and the registration copies the
        // scatterlist's DMA addresses into the region's page list. The regions are this
        // QP's and live until after it is destroyed; the READ slot's region is this work
        // request's alone until it completes (the slot is free again only then), the
        // fence region is registered once (the state above).
        let ret = unsafe { bindings::rswap_ib_post_rdma(self.qp(), &mut wr) };
        if let (true, Some(fence)) = (fence_reg, &self.fence) {
            // A registration that went to the send queue stays there, even if what
            // follows it did not: the region must not be registered twice.
            let state = if wr.reg_posted {
                FENCE_REGISTERED
            } else {
                FENCE_UNREGISTERED
            };
            fence.state.store(state, Ordering::Release);
        }
        if ret != 0 {
            return Err((Error::from_errno(ret), posting.unpost()));
        }
        Ok(())
    }

    /// Posts one receive into the (single) SGE of `owner`'s target, owning `owner` until
    /// its completion.
    pub(crate) fn post_recv<T: CqeOwner>(&self, owner: T) -> core::result::Result<(), (Error, T)> {
        let posting = Posting::new(owner, self.cq.outstanding());
        let sge = posting.sges().first().map(core::ptr::from_ref);
        let Some(sge) = sge else {
            return Err((EINVAL, posting.unpost()));
        };
        // SAFETY: the QP is valid; the SGE and the completion entry are in the object the
        // work request owns from now on; the provider copies the SGE during the call.
        let ret = unsafe {
            bindings::rswap_ib_post_recv(
                self.qp(),
                posting.cqe(),
                sge.cast::<bindings::ib_sge>().cast_mut(),
            )
        };
        if ret != 0 {
            return Err((Error::from_errno(ret), posting.unpost()));
        }
        Ok(())
    }

    /// Moves the QP to the error state and waits until every posted work request has
    /// completed (flushed). Sleeps. Only the first call does anything, so it is for the
    /// owner's teardown alone ([`super::cm::CmId::drain`] and drop), once nothing posts.
    ///
    /// A polled QP's receives are drained by `ib_drain_rq` (their CQ is a softirq CQ), which
    /// moves it to the error state; then its sends by posting a drain marker and polling
    /// the send CQ until the marker completes: `ib_drain_sq` would poll it too, but run
    /// the handlers with softirqs enabled. It polls for at most [`POLLED_DRAIN_MS`]; what
    /// a provider never completes is completed as flushed after the QP is destroyed (see
    /// [`Qp::drop`]).
    pub(super) fn drain(&self) {
        if self.drained.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(marker) = &self.marker else {
            // SAFETY: the QP is valid; its CQ is not polled directly (softirq context),
            // which `ib_drain_qp` requires.
            unsafe { bindings::ib_drain_qp(self.qp()) };
            return;
        };
        // SAFETY: the QP is valid; its receive CQ is a softirq CQ, which `ib_drain_rq`
        // requires. This moves the QP to the error state.
        unsafe { bindings::ib_drain_rq(self.qp()) };
        // INVARIANT: the marker is the QP's, posted this once (`drained` was clear).
        let posted = self.post_marker(MarkerPost(NonNull::from(&**marker)));
        let outstanding = self.cq.outstanding();
        let start: Instant<Monotonic> = Instant::now();
        loop {
            let done = if posted {
                marker.done.load(Ordering::Acquire)
            } else {
                outstanding.is_empty()
            };
            if done || start.elapsed() >= Delta::from_millis(POLLED_DRAIN_MS) {
                break;
            }
            if self.poll() == 0 {
                fsleep(Delta::from_micros(500));
            }
        }
    }

    /// Posts `marker` as a signalled zero-length RDMA WRITE, not fenced (on iWARP too: it
    /// carries no data, and is posted only to come back flushed); whether it was posted.
    fn post_marker(&self, marker: MarkerPost) -> bool {
        let posting = Posting::new(marker, self.cq.outstanding());
        let mut wr = bindings::rswap_ib_rdma {
            cqe: posting.cqe(),
            write: true,
            sges: core::ptr::null_mut(),
            nsges: 0,
            ..Default::default()
        };
        // SAFETY: the QP is valid; the work request has no SGEs, no region, and its
        // completion entry is in the marker, which the work request owns until its
        // completion (`MarkerPost`).
        let ret = unsafe { bindings::rswap_ib_post_rdma(self.qp(), &mut wr) };
        if ret != 0 {
            let _ = posting.unpost();
            return false;
        }
        true
    }

    /// The QP's name for the log.
    fn log_name(&self) -> &CStr {
        if self.name.is_null() {
            c"rswap"
        } else {
            // SAFETY: a non-null name is a string that outlives the QP (invariant).
            unsafe { CStr::from_char_ptr(self.name) }
        }
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // Every posted work request owns something (a request, a buffer): let each come
        // back through its completion before the QP goes.
        self.drain();
        // SAFETY: by the type invariant the id is valid and has a QP, which is destroyed
        // once here.
        unsafe { bindings::rdma_destroy_qp(self.id.as_ptr()) };
        // SAFETY: dropped once, here, after the QP on them was destroyed; not used after.
        let (cq, recv_cq) = unsafe {
            (
                ManuallyDrop::take(&mut self.cq),
                ManuallyDrop::take(&mut self.recv_cq),
            )
        };
        let outstanding = cq.outstanding().clone();
        let dev = cq.rdma_device().clone();
        drop(recv_cq);
        drop(cq);
        // A provider may drop completions the drain should have waited for (soft-iWARP
        // loses the READs still waiting for their responses when its device is removed).
        // With the QP and its CQ gone none can come now: complete what is left as flushed.
        // SAFETY: the QP and the CQ of the set are destroyed.
        let lost = unsafe { outstanding.flush_lost(dev.device()) };
        let duplicates = outstanding.duplicates();
        if lost > 0 || duplicates > 0 {
            let name = self.log_name();
            pr_warn!(
                "{}: {}: the device never completed {} work request(s) (completed as flushed after the QP was destroyed) and completed {} twice (the second ignored)\n",
                name,
                dev.device().name(),
                lost,
                duplicates
            );
        }
        // Last, the memory regions (iWARP): no work request can use them once the QP is
        // gone. The fence buffer is unmapped after its region. The PD, a field, follows.
        self.read_mrs.clear();
        self.fence = None;
    }
}
