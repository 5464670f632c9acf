// SPDX-License-Identifier: GPL-2.0

//! One rdma_cm connection of a queue to the memory server: a [`Link`].
//!
//! Setup follows the rdma_cm steps: resolve the address, resolve the route, take the
//! device's object and register the queue as a user of the device, create the QP with a
//! protection domain and CQs of its own (polled on a poll queue, see [`Link::poll`]),
//! post the RECV for the region descriptor, connect with the [`ConnectRequest`] as
//! private data, and take the descriptor the server sends once the connection is up (on
//! iWARP, where the server must not send first, it comes with the accept instead). A
//! client with a secret first dials once with a hello, which the server refuses with a
//! challenge, then dials again with its proof for that challenge, and checks the server's
//! proof in the descriptor before it uses the region (see `Documentation/wire-format.md`).
//! Each step waits, bounded, for the event that ends it: the CM handler and the receive
//! completion record their events in [`LinkEvents`] and wake the connecting thread;
//! nothing polls. [`LinkEvents::abort`] ends a wait at once (teardown, device removal).
//!
//! Teardown is the reverse, by ownership: [`Conn`]'s drop disconnects and drains the QP
//! (every posted work request completes, flushed) and leaves the device's users; then the
//! cm_id goes, destroying its QP first.
//!
//! A live link is probed for the keep-alive ([`Link::probe`]): a zero-length RDMA WRITE,
//! which the server's RDMA device acknowledges without touching memory, so a silent
//! server (host down, network partitioned) shows as a probe that fails or goes unanswered
//! even when the disk is idle.

use core::{
    fmt::{self, Write},
    ptr::NonNull,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{
    new_condvar, new_spinlock, new_spinlock_irq,
    prelude::*,
    revocable::{Revocable, RevocableGuard},
    sync::{Arc, CondVar, CondVarTimeoutResult, SpinLock, SpinLockIrq},
    time::{msecs_to_jiffies, Instant, Monotonic},
};

use super::{
    fault::{self, AllocStep},
    name::Name,
    remote::RemoteRegion,
    wire::{
        client_proof_input, mac_eq, server_proof_input, Auth, ConnectRequest, RegionDescriptor,
        Reject, RejectCode, RejectReason, CLIENT_MAC_LEN, NONCE_LEN,
    },
};
use crate::{
    ib::{
        cm::{CmEvent, CmHandler, CmId, ConnectParams},
        cqe::{impl_has_cqe, Cqe, CqeOwner, SgeList, Wc},
        dma::{Direction, Sge},
        oneshot::{OneShot, OneShotHandler},
        qp::QpCaps,
        DeviceUser, Qp, RdmaDevice,
    },
    kernel_ext::{self, HmacSha256, TextBuf},
    settings::TargetSettings,
};

pub(crate) use crate::ib::Devices;

/// How a link proves to the server who it is.
pub(crate) struct Credentials {
    /// Which instance of the client id this is (one per configured target).
    pub(crate) instance: u64,
    /// The client's secret as a keyed HMAC; `None`: the client has no secret, and only a
    /// server that admits clients without one (`--insecure`) lets it in.
    pub(crate) key: Option<HmacSha256>,
}

/// Bytes of a [`ConnectNote`]'s message.
pub(crate) const NOTE_LEN: usize = 160;

/// Why the last failed connect of a session's links failed, in the words of its kernel log
/// line (`queue 1: the server rejected the connection: AuthFailed`): what a failed
/// `enable` tells the user beside its errno. Written by the connecting thread, also during
/// recovery, without allocating.
#[pin_data]
pub(crate) struct ConnectNote {
    #[pin]
    text: SpinLock<TextBuf<NOTE_LEN>>,
}

impl ConnectNote {
    /// An empty note.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                text <- new_spinlock!(TextBuf::new(), "rswap::ConnectNote::text"),
            }),
            GFP_KERNEL,
        )
    }

    fn set(&self, index: u16, msg: fmt::Arguments<'_>) {
        self.set_text(format_args!("queue {}: {}", index, msg));
    }

    /// Records why a connect failed, for a failure of no particular queue.
    pub(crate) fn set_text(&self, msg: fmt::Arguments<'_>) {
        let mut text = self.text.lock();
        text.clear();
        let _ = text.write_fmt(msg);
    }

    /// A copy of the last failure's text, empty if no connect failed.
    pub(crate) fn get(&self) -> TextBuf<NOTE_LEN> {
        *self.text.lock()
    }
}

/// Where to connect and what to ask for.
#[derive(Clone)]
pub(crate) struct LinkParams {
    /// The target's settings: the server and the address to connect from, this client's
    /// identity (the server keeps a client's region across reconnects), the bytes to ask
    /// for, the queues and how many of them, the last ones, are polled (their I/O
    /// completes only when its submitter polls for it, [`Link::poll`]), work requests in
    /// flight per queue, how long each connection step may take (the connect itself:
    /// three times that). `addr` and `size` are set.
    pub(crate) settings: Arc<TargetSettings>,
    /// Most SGEs one work request needs.
    pub(crate) max_sge: u32,
    /// How the link authenticates.
    pub(crate) credentials: Arc<Credentials>,
    /// Where a failed connect says why.
    pub(crate) note: Arc<ConnectNote>,
    /// Where a connection finds its device's object.
    pub(crate) devices: &'static dyn Devices,
}

/// Told when a link that was up goes down on its own (the server disconnected it, a
/// keep-alive probe failed).
pub(crate) trait LinkWatcher: Send + Sync {
    /// The link is lost, for reason `why` (with a work completion status, or 0). Runs in
    /// the CM's process context or in a completion (softirqs disabled): must not sleep.
    fn link_lost(&self, why: &CStr, status: u32);
}

/// How far the connection got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Started,
    AddrResolved,
    RouteResolved,
    Established,
}

/// Why the connection ended or never came up.
#[derive(Clone, Copy, Debug)]
enum Failure {
    /// The server refused it; its reason, if it gave one rswap understands.
    Rejected(i32, Option<RejectReason>),
    /// A step failed (`what`) with a CM status.
    Failed(&'static str, i32),
    /// The connection went down after it was up.
    Disconnected,
    /// The RDMA device is being removed.
    DeviceRemoval,
    /// rswap gave up on it (teardown).
    Aborted,
    /// The server could not prove that it knows the client's secret.
    Unauthentic,
}

/// The region descriptor's receive.
#[derive(Clone, Copy)]
enum Descriptor {
    Pending,
    Received([u8; RegionDescriptor::SIZE]),
    Failed,
}

impl Descriptor {
    /// The descriptor at the start of `data` (`Failed` if `data` is too short for one).
    fn from_bytes(data: &[u8]) -> Self {
        data.get(..RegionDescriptor::SIZE)
            .and_then(|d| <[u8; RegionDescriptor::SIZE]>::try_from(d).ok())
            .map_or(Self::Failed, Self::Received)
    }
}

struct Progress {
    step: Step,
    failure: Option<Failure>,
    descriptor: Descriptor,
    /// This dial asked for the descriptor in the accept's private data.
    reply_descriptor: bool,
    /// The server's challenge, when it answered a hello with one.
    challenge: Option<u64>,
    /// Set by [`LinkEvents::abort`]: every wait of every later dial fails too.
    aborted: bool,
}

impl Progress {
    const NEW: Self = Self {
        step: Step::Started,
        failure: None,
        descriptor: Descriptor::Pending,
        reply_descriptor: false,
        challenge: None,
        aborted: false,
    };
}

/// What the CM and the descriptor's receive report for one link, and the wait for it.
/// Written from the CM's workqueue and from softirq completions, hence an IRQ-safe lock.
#[pin_data]
pub(crate) struct LinkEvents {
    name: Name,
    index: u16,
    /// The bytes asked for, for the log.
    asked: u64,
    /// Told when the link, once up, goes down.
    watcher: Arc<dyn LinkWatcher>,
    /// Where a failure of this attempt is noted for the user.
    note: Arc<ConnectNote>,
    /// Whether this attempt noted a failure.
    noted: AtomicBool,
    #[pin]
    progress: SpinLockIrq<Progress>,
    #[pin]
    changed: CondVar,
}

impl LinkEvents {
    /// The events of a new link of queue `index` of `name` asking for `asked` bytes;
    /// `watcher` hears when it goes down after it was up; a failure is noted in `note`.
    pub(crate) fn new(
        name: Name,
        index: u16,
        asked: u64,
        watcher: Arc<dyn LinkWatcher>,
        note: Arc<ConnectNote>,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                name,
                index,
                asked,
                watcher,
                note,
                noted: AtomicBool::new(false),
                progress <- new_spinlock_irq!(Progress::NEW, "rswap::LinkEvents::progress"),
                changed <- new_condvar!("rswap::LinkEvents::changed"),
            }),
            GFP_KERNEL,
        )
    }

    fn update(&self, f: impl FnOnce(&mut Progress)) {
        f(&mut self.progress.lock());
        self.changed.notify_all();
    }

    /// Ends any wait of this link at once with `ECANCELED` (and every later one, also of
    /// a later dial).
    pub(crate) fn abort(&self) {
        self.update(|p| {
            p.aborted = true;
            p.failure.get_or_insert(Failure::Aborted);
        });
    }

    /// Ends the waits of the connection being torn down, which is not coming back.
    fn close(&self) {
        self.update(|p| {
            p.failure.get_or_insert(Failure::Aborted);
        });
    }

    /// Starts over for the next dial of the same link, unless the link was aborted.
    /// Only once the previous dial's cm_id is gone: no event of it can come any more.
    fn restart(&self) {
        self.update(|p| {
            if !p.aborted {
                *p = Progress::NEW;
            }
        });
    }

    /// Whether the connection is up (not refused, failed, disconnected or torn down).
    pub(crate) fn is_established(&self) -> bool {
        let p = self.progress.lock();
        p.step == Step::Established && p.failure.is_none()
    }

    /// Waits up to `ms` for `ready` to give a value; `Err` with the failure that ended
    /// the link, or `ETIMEDOUT`, otherwise.
    fn wait<R>(
        &self,
        ms: u32,
        what: &str,
        mut ready: impl FnMut(&Progress) -> Option<R>,
    ) -> Result<R> {
        let start = Instant::<Monotonic>::now();
        let mut p = self.progress.lock();
        loop {
            if let Some(failure) = p.failure {
                drop(p);
                return Err(self.report(failure, what));
            }
            if let Some(r) = ready(&p) {
                return Ok(r);
            }
            let left = i64::from(ms) - start.elapsed().as_millis();
            if left <= 0 {
                drop(p);
                return Err(self.fail(
                    ETIMEDOUT,
                    format_args!("{} timed out after {} ms", what, ms),
                ));
            }
            let left = u32::try_from(left).unwrap_or(u32::MAX);
            if let CondVarTimeoutResult::Signal { .. } = self
                .changed
                .wait_interruptible_timeout(&mut p, msecs_to_jiffies(left))
            {
                return Err(EINTR);
            }
        }
    }

    /// Logs why this attempt failed, notes it for the user, and returns `e`.
    fn fail(&self, e: Error, msg: fmt::Arguments<'_>) -> Error {
        pr_err!("{}: queue {}: {}\n", self.name, self.index, msg);
        self.note.set(self.index, msg);
        self.noted.store(true, Ordering::Relaxed);
        e
    }

    /// Logs why `what` failed, and the error for it.
    fn report(&self, failure: Failure, what: &str) -> Error {
        match failure {
            Failure::Aborted => ECANCELED,
            Failure::Rejected(_, Some(r)) if r.code == RejectCode::TooLarge => self.fail(
                ECONNREFUSED,
                format_args!(
                    "the server rejected the connection: {} (asked {} bytes, it can give {})",
                    r.code.name(),
                    self.asked,
                    r.max_size
                ),
            ),
            Failure::Rejected(_, Some(r)) => self.fail(
                ECONNREFUSED,
                format_args!("the server rejected the connection: {}", r.code.name()),
            ),
            Failure::Unauthentic => self.fail(
                EACCES,
                format_args!("the server's proof is wrong: it does not know this target's secret"),
            ),
            Failure::Rejected(status, None) => self.fail(
                ECONNREFUSED,
                format_args!(
                    "connection rejected (no rswap server at that address? CM status {})",
                    status
                ),
            ),
            Failure::Failed(step, status) => self.fail(
                EHOSTUNREACH,
                format_args!("{} failed (status {})", step, status),
            ),
            Failure::Disconnected | Failure::DeviceRemoval => self.fail(
                EHOSTUNREACH,
                format_args!("{} failed ({:?})", what, failure),
            ),
        }
    }
}

impl CmHandler for LinkEvents {
    fn log_name(&self) -> Option<&CStr> {
        Some(self.name.as_cstr())
    }

    fn event(&self, ev: CmEvent<'_>) {
        match ev {
            CmEvent::AddrResolved => self.update(|p| p.step = p.step.max(Step::AddrResolved)),
            CmEvent::RouteResolved => self.update(|p| p.step = p.step.max(Step::RouteResolved)),
            CmEvent::Established { private_data } => self.update(|p| {
                p.step = Step::Established;
                if p.reply_descriptor {
                    p.descriptor = Descriptor::from_bytes(private_data);
                }
            }),
            CmEvent::Rejected {
                status,
                private_data,
            } => self.update(|p| match Reject::decode(private_data) {
                Ok(Reject::Challenge { server_nonce }) => p.challenge = Some(server_nonce),
                Ok(Reject::Refused(reason)) => {
                    p.failure
                        .get_or_insert(Failure::Rejected(status, Some(reason)));
                }
                Err(_) => {
                    p.failure.get_or_insert(Failure::Rejected(status, None));
                }
            }),
            CmEvent::Disconnected => {
                let mut was_up = false;
                self.update(|p| {
                    was_up = p.step == Step::Established && p.failure.is_none();
                    p.failure.get_or_insert(Failure::Disconnected);
                });
                if was_up {
                    // Recover now, not at the next I/O: an idle disk must not outwait
                    // the server's grace period.
                    self.watcher.link_lost(c"disconnected by the server", 0);
                }
            }
            CmEvent::DeviceRemoval => self.update(|p| {
                p.failure.get_or_insert(Failure::DeviceRemoval);
            }),
            CmEvent::Failed { what, status } => self.update(|p| {
                p.failure.get_or_insert(Failure::Failed(what, status));
            }),
            CmEvent::Other => {}
        }
    }
}

impl OneShotHandler for LinkEvents {
    fn done(&self, _tag: u32, data: Option<&[u8]>) {
        let descriptor = data.map_or(Descriptor::Failed, Descriptor::from_bytes);
        self.update(|p| p.descriptor = descriptor);
    }
}

/// The RDMA objects of a live connection. Dropping it tears the connection down in the
/// order the hardware needs (see the module documentation).
pub(crate) struct Conn {
    cm: CmId<LinkEvents>,
    dev: Arc<RdmaDevice>,
    /// The queue, registered as a user of `dev` while this connection exists.
    user: Arc<dyn DeviceUser>,
}

impl Conn {
    /// The QP to post on (`None` only for a connection that never got one).
    pub(crate) fn qp(&self) -> Option<&Qp> {
        self.cm.qp()
    }

    /// The device's object.
    pub(crate) fn rdma_device(&self) -> &RdmaDevice {
        &self.dev
    }

    /// Whether the connection is up: not disconnected by the server, its device not
    /// going away.
    pub(crate) fn is_established(&self) -> bool {
        self.cm.handler().is_established()
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Disconnect (QP to error), wait until every posted work request has come back
        // through its completion, and leave the device's users; the cm_id then destroys
        // the QP, then itself.
        self.cm.handler().close();
        self.cm.disconnect();
        self.cm.drain();
        self.dev.detach(&*self.user);
    }
}

/// What [`Link::probe`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProbeOutcome {
    /// A probe is on its way.
    Sent,
    /// The previous probe has not completed since the last call. It waits behind the
    /// link's other work requests (RC completes them in order), so this alone does not
    /// mean the server is gone.
    Unanswered,
    /// The probe could not be posted: the connection is gone or its QP refuses work.
    NotPosted,
    /// The probe could not be posted now: another poster is registering the QP's fence
    /// region (soft-iWARP, around a QP's first WRITE), or the send queue is full. The next
    /// period probes again.
    Busy,
    /// The probe was refused as busy at the previous period too: the refusal was not
    /// one of a moment.
    StillBusy,
}

/// The keep-alive probe of a link: a zero-length RDMA WRITE. Allocated with the link; a
/// posted probe is owned by its work request (a reference of its own, [`PostedProbe`])
/// until its completion gives it back.
struct Probe {
    cqe: Cqe,
    /// Whether its work request is posted: set by [`Link::probe`], cleared by the
    /// completion.
    posted: AtomicBool,
    /// Whether the QP refused it as busy at the last period ([`ProbeOutcome::Busy`]).
    refused: AtomicBool,
    /// Set when its link is being torn down: a probe flushed then says nothing new.
    closing: AtomicBool,
    /// Told when the probe fails.
    watcher: Arc<dyn LinkWatcher>,
}

impl_has_cqe! { impl HasCqe for Probe { self.cqe } }

impl SgeList for Probe {
    fn sges(&self) -> &[Sge] {
        &[]
    }
}

/// The reference to a probe that its posted work request holds.
struct PostedProbe(Arc<Probe>);

// SAFETY: `into_raw` leaks the reference, whose probe stays allocated (and in place, in
// the `Arc`) until `from_raw` rebuilds it, once.
unsafe impl CqeOwner for PostedProbe {
    type Target = Probe;

    fn into_raw(self) -> NonNull<Probe> {
        // SAFETY: `Arc::into_raw` never returns null.
        unsafe { NonNull::new_unchecked(Arc::into_raw(self.0).cast_mut()) }
    }

    unsafe fn from_raw(target: NonNull<Probe>) -> Self {
        // SAFETY: leaked by `into_raw` and taken back once (the caller's guarantee).
        Self(unsafe { Arc::from_raw(target.as_ptr()) })
    }

    fn complete(self, wc: &Wc<'_>) {
        let probe = &self.0;
        // A connection being torn down is marked first: its flushed probe says nothing
        // new.
        if !wc.is_ok() && !probe.closing.load(Ordering::Acquire) {
            probe
                .watcher
                .link_lost(c"keep-alive probe failed", wc.status());
        }
        probe.posted.store(false, Ordering::Release);
    }
}

/// One connection of a queue, and what it got from the server: revocable, so the queue's
/// recovery, device removal and teardown can take it down under the data path.
///
/// Drop revokes the connection first (if nobody did): that drains the QP, so a posted
/// probe's completion runs, and finds its link closing, while every field is still
/// there.
#[pin_data(PinnedDrop)]
pub(crate) struct Link {
    /// The region as the data path addresses it (its length is what the client asked
    /// for).
    region: RemoteRegion,
    /// The descriptor the server sent.
    descriptor: RegionDescriptor,
    max_sge: u32,
    /// Whether a READ's sink is registered in a memory region (iWARP).
    reads_registered: bool,
    #[pin]
    conn: Revocable<Conn>,
    /// The keep-alive probe.
    probe: Arc<Probe>,
}

#[pinned_drop]
impl PinnedDrop for Link {
    fn drop(self: Pin<&mut Self>) {
        self.revoke();
    }
}

impl Link {
    /// Connects queue `index` as `params` say and waits for the region descriptor; `user`
    /// (the queue) becomes a user of the device the connection runs on. `events` is this
    /// attempt's, so that the caller can abort it.
    pub(crate) fn connect(
        params: &LinkParams,
        index: u16,
        events: &Arc<LinkEvents>,
        user: Arc<dyn DeviceUser>,
    ) -> Result<Arc<Self>> {
        Self::establish(params, index, events, user).map_err(|e| {
            // A step that failed without saying why (no memory, no RDMA device for the
            // address, ...) is noted by its errno.
            if e != ECANCELED && !events.noted.load(Ordering::Relaxed) {
                events.fail(e, format_args!("connecting failed: {:?}", e))
            } else {
                e
            }
        })
    }

    fn establish(
        params: &LinkParams,
        index: u16,
        events: &Arc<LinkEvents>,
        user: Arc<dyn DeviceUser>,
    ) -> Result<Arc<Self>> {
        let ms = params.settings.timeout_ms;
        let creds = &params.credentials;
        let mut request = ConnectRequest {
            client_id: params.settings.client_id,
            queue_index: index,
            queue_count: params.settings.queue_count(),
            requested_size: params.settings.bytes(),
            // Set per device when dialling.
            reply_descriptor: false,
            auth: Auth::None {
                instance: creds.instance,
            },
        };
        // With a secret: the hello, answered by a challenge, then the proof for it.
        let mut proof = None;
        if let Some(key) = &creds.key {
            let mut client_nonce = [0u8; NONCE_LEN];
            kernel_ext::random_bytes(&mut client_nonce);
            request.auth = Auth::Hello {
                client_nonce,
                instance: creds.instance,
            };
            let hello = Self::dial(params, index, events, user.clone(), &request)?;
            let challenge = events.wait(ms.saturating_mul(3), "authentication", |p| {
                match (p.challenge, p.step) {
                    (Some(nonce), _) => Some(Ok(nonce)),
                    (None, Step::Established) => Some(Err(())),
                    _ => None,
                }
            });
            // The hello's cm_id goes before the next dial, so none of its events can
            // reach the next one.
            drop(hello);
            let server_nonce = challenge?.map_err(|()| {
                events.fail(
                    EPROTO,
                    format_args!("the server accepted a hello without a challenge"),
                )
            })?;
            events.restart();
            let input = client_proof_input(&request, creds.instance, &client_nonce, server_nonce);
            let digest = key.digest(&input)?;
            let mut mac = [0u8; CLIENT_MAC_LEN];
            mac.copy_from_slice(digest.get(..CLIENT_MAC_LEN).ok_or(EINVAL)?);
            request.auth = Auth::Proof { server_nonce, mac };
            proof = Some((key, client_nonce, server_nonce));
        }
        let (conn, max_sge) = Self::dial(params, index, events, user, &request)?;
        let reads_registered = conn.dev.device().is_iwarp();
        events
            .wait(ms.saturating_mul(3), "connect", |p| match (p.challenge, p.step) {
                (Some(_), _) => Some(Err(())),
                (None, Step::Established) => Some(Ok(())),
                _ => None,
            })?
            .map_err(|()| {
                events.fail(
                    EPROTO,
                    format_args!(
                        "the server answered with a challenge, though this target has no secret (or just proved it)"
                    ),
                )
            })?;
        let bytes = events.wait(ms, "receiving the region descriptor", |p| {
            match p.descriptor {
                Descriptor::Pending => None,
                Descriptor::Received(b) => Some(Ok(b)),
                Descriptor::Failed => Some(Err(())),
            }
        })?;
        let bytes = bytes.map_err(|()| {
            events.fail(EIO, format_args!("receiving the region descriptor failed"))
        })?;
        let descriptor = RegionDescriptor::decode(&bytes)
            .map_err(|e| events.fail(EPROTO, format_args!("bad region descriptor: {:?}", e)))?;
        if let Some((key, client_nonce, server_nonce)) = proof {
            let input = server_proof_input(
                params.settings.client_id,
                &client_nonce,
                server_nonce,
                &descriptor.body(),
            );
            if !mac_eq(&key.digest(&input)?, &descriptor.mac) {
                return Err(events.report(Failure::Unauthentic, "authentication"));
            }
        }
        let size = params.settings.bytes();
        if descriptor.length < size {
            return Err(events.fail(
                EPROTO,
                format_args!(
                    "the server's region is {} bytes, {} were asked for",
                    descriptor.length, size
                ),
            ));
        }
        fault::alloc(AllocStep::Link)?;
        Arc::pin_init(
            try_pin_init!(Self {
                region: RemoteRegion {
                    addr: descriptor.remote_addr,
                    len: size,
                    rkey: descriptor.rkey,
                },
                descriptor,
                max_sge,
                reads_registered,
                conn <- Revocable::new(conn),
                probe: Arc::new(
                    Probe {
                        cqe: Cqe::new(),
                        posted: AtomicBool::new(false),
                        refused: AtomicBool::new(false),
                        closing: AtomicBool::new(false),
                        watcher: events.watcher.clone(),
                    },
                    GFP_KERNEL,
                )?,
            }),
            GFP_KERNEL,
        )
    }

    /// Dials the server once with `request` as the connect's private data: resolves the
    /// address and route, joins the device's users, creates the QP and posts the RECV for
    /// the descriptor, and starts the connect; `events` hears how it ends. Returns the
    /// connection (dropping it tears down what was built) and the SGEs a work request on
    /// it may carry, READ or WRITE.
    fn dial(
        params: &LinkParams,
        index: u16,
        events: &Arc<LinkEvents>,
        user: Arc<dyn DeviceUser>,
        request: &ConnectRequest,
    ) -> Result<(Conn, u32)> {
        let settings = &params.settings;
        let ms = settings.timeout_ms;
        let server = settings.server().ok_or(EDESTADDRREQ)?;
        fault::alloc(AllocStep::CmId)?;
        let cm = CmId::new(events.clone())?;

        cm.resolve_addr(settings.src_addr.as_ref(), &server, ms)?;
        events.wait(ms, "address resolution", |p| {
            (p.step >= Step::AddrResolved).then_some(())
        })?;
        cm.resolve_route(ms)?;
        events.wait(ms, "route resolution", |p| {
            (p.step >= Step::RouteResolved).then_some(())
        })?;

        let dev = cm
            .device()
            .and_then(|d| params.devices.device(d))
            .ok_or(ENODEV)?;
        dev.attach(user.clone())?;
        // From here on, dropping `conn` tears the half-made connection down.
        let mut conn = Conn { cm, dev, user };
        let device = conn.dev.device();
        let send_sge = params.max_sge.min(device.max_send_sge());
        // A request is an RDMA READ or WRITE of the same segments: it may carry only as
        // many segments as a READ takes, which is often fewer than a send. On iWARP a
        // READ's sink is registered in a memory region, one SGE whatever the segments, as
        // many as the region maps pages (one more than segments: the first may start
        // inside a page). That takes segments whose middles are whole pages, which the
        // disk asks the block layer for (its virt boundary).
        let read_sge = if device.is_iwarp() {
            device.max_fast_reg_pages().saturating_sub(1)
        } else {
            device.max_sge_rd()
        };
        let max_sge = send_sge.min(read_sge).max(1);
        let caps = QpCaps {
            // One per request in flight, and the keep-alive probe.
            send_wr: settings.queue_depth + 1,
            recv_wr: 1,
            send_sge,
            // One READ slot per request in flight (its tag).
            read_slots: settings.queue_depth,
            // A request of at most `max_sge` pages of data, page-contiguous but for the
            // start of the first and the end of the last.
            read_pages: max_sge + 1,
            polled: index >= settings.queue_count().saturating_sub(settings.poll_queues),
        };
        fault::alloc(AllocStep::QueuePair)?;
        let qp = conn.cm.create_qp(&conn.dev, &caps, u32::from(index))?;
        // On iWARP the server must not send first (see `REQUEST_REPLY_DESCRIPTOR`): the
        // descriptor comes with its accept. Elsewhere it comes in a SEND, which servers
        // that do not know the flag expect to make.
        let reply_descriptor = device.is_iwarp();
        events.update(|p| p.reply_descriptor = reply_descriptor);
        if !reply_descriptor {
            fault::alloc(AllocStep::RecvBuffer)?;
            let recv = OneShot::new(qp.pd(), Direction::FromDevice, &[], 0, events.clone())?;
            qp.post_recv(recv).map_err(|(e, _)| e)?;
        }
        let initiator_depth =
            u8::try_from(conn.dev.device().max_qp_init_rd_atom().min(16)).unwrap_or(16);

        let mut private = [0u8; ConnectRequest::SIZE];
        ConnectRequest {
            reply_descriptor,
            ..*request
        }
        .encode(&mut private);
        conn.cm
            .connect(&ConnectParams {
                private_data: &private,
                initiator_depth,
            })
            .map_err(|e| match e {
                // iWARP connects over TCP at once: a port with no listener refuses here,
                // not with a REJECTED event later.
                ECONNREFUSED => events.fail(
                    e,
                    format_args!("connection refused (no rswap server at that address?)"),
                ),
                e => e,
            })?;
        Ok((conn, max_sge))
    }

    /// The region as the data path addresses it.
    pub(crate) fn region(&self) -> &RemoteRegion {
        &self.region
    }

    /// The descriptor the server sent.
    pub(crate) fn descriptor(&self) -> &RegionDescriptor {
        &self.descriptor
    }

    /// Whether each READ's sink is registered in a memory region (iWARP): one range,
    /// page-contiguous but for the start of its first segment and the end of its last.
    pub(crate) fn reads_registered(&self) -> bool {
        self.reads_registered
    }

    /// The most SGEs one work request on this link may carry.
    pub(crate) fn max_sge(&self) -> u32 {
        self.max_sge
    }

    /// The connection, unless it was taken down. The guard is an RCU read-side section:
    /// do not sleep while holding it.
    pub(crate) fn conn(&self) -> Option<RevocableGuard<'_, Conn>> {
        self.conn.try_access()
    }

    /// Whether the connection is up (not torn down, not disconnected by the server).
    pub(crate) fn is_live(&self) -> bool {
        self.conn
            .try_access_with(Conn::is_established)
            .unwrap_or(false)
    }

    /// Probes this link's connection for the keep-alive, unless the previous probe is
    /// still out: then it has not been answered yet. A failed probe is reported to the
    /// link's watcher from its completion. Does not sleep.
    pub(crate) fn probe(&self) -> ProbeOutcome {
        let Some(conn) = self.conn() else {
            return ProbeOutcome::NotPosted;
        };
        // Nobody may have polled an idle polled link since the last probe: its completion
        // is reaped here.
        if let Some(qp) = conn.qp() {
            qp.poll_all();
        }
        let Some(qp) = conn.qp() else {
            return ProbeOutcome::NotPosted;
        };
        if self.probe.posted.swap(true, Ordering::AcqRel) {
            return ProbeOutcome::Unanswered;
        }
        // Zero bytes: the server's device checks neither the address nor the key, but
        // they are the region's anyway.
        let refused = match fault::probe() {
            Err(e) => Some(e),
            Ok(()) => {
                let posted = PostedProbe(self.probe.clone());
                qp.post_write(posted, self.region.addr, self.region.rkey)
                    .err()
                    .map(|(e, _)| e)
            }
        };
        let Some(e) = refused else {
            self.probe.refused.store(false, Ordering::Relaxed);
            return ProbeOutcome::Sent;
        };
        self.probe.posted.store(false, Ordering::Release);
        if !Qp::refused_for_now(e) {
            ProbeOutcome::NotPosted
        } else if self.probe.refused.swap(true, Ordering::Relaxed) {
            ProbeOutcome::StillBusy
        } else {
            ProbeOutcome::Busy
        }
    }

    /// Runs the completions waiting on a polled link (see [`Qp::poll`]); how many ran (0
    /// on a link that is not polled, or torn down). Does not sleep.
    pub(crate) fn poll(&self) -> u32 {
        self.conn()
            .and_then(|conn| conn.qp().map(Qp::poll))
            .unwrap_or(0)
    }

    /// Runs every completion waiting on a polled link (see [`Qp::poll_all`]), for I/O
    /// that nobody polls for any more. Does not sleep.
    pub(crate) fn reap(&self) -> u32 {
        self.conn()
            .and_then(|conn| conn.qp().map(Qp::poll_all))
            .unwrap_or(0)
    }

    /// Takes the connection down (sleeps): its posted work requests are flushed, and
    /// their completions run before this returns.
    pub(crate) fn revoke(&self) {
        self.probe.closing.store(true, Ordering::Release);
        self.conn.revoke();
    }
}
