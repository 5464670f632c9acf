// SPDX-License-Identifier: GPL-2.0

//! One RDMA queue to the memory server, and its recovery.
//!
//! A [`Queue`] is what a hardware queue of the disk posts to: its current [`Link`] and
//! that link's recovery. When the link fails (a failed completion, the server's
//! disconnect, the removal of its RDMA device, a request timeout, a keep-alive probe that
//! fails or goes unanswered) the queue enters
//! recovery at once, whether or not I/O is pending: a work item takes the old link down
//! (its work requests are flushed and their requests requeued), connects a new one to the
//! same server and client id, checks that the server still holds the same region, and
//! puts it in place. If that does not succeed within the recovery window, the queue is dead and
//! its I/O fails. States: `Connecting -> Live -> Recovering -> Live | Dead`;
//! [`Queue::shut_down`] makes any state `Dead`. While a queue is not `Live` the data path
//! makes its I/O wait; [`Resume`] hears when it may go on.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use kernel::{
    new_mutex, new_spinlock, new_spinlock_irq, new_work,
    prelude::*,
    revocable::RevocableGuard,
    sync::{Arc, Mutex, SpinLock, SpinLockIrq},
    time::{delay::fsleep, Delta, Instant, Monotonic},
    workqueue::{impl_has_work, Work, WorkItem},
};

use super::{
    io::{IoCounters, QueueCounters},
    link::{Conn, Link, LinkEvents, LinkParams, LinkWatcher, ProbeOutcome},
    name::Name,
    wire::RegionDescriptor,
};
use crate::{
    ib::DeviceUser,
    kernel_ext::{NoIoScope, ReclaimWorkqueue, ReserveScope},
};

/// Where a queue is in its life.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Its first link is being connected.
    Connecting = 0,
    /// Its link is up; I/O is posted on it.
    Live = 1,
    /// Its link failed; the recovery work is connecting a new one. I/O waits.
    Recovering = 2,
    /// Recovery failed or is off, or the queue was shut down. I/O fails.
    Dead = 3,
}

impl State {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Connecting,
            1 => Self::Live,
            2 => Self::Recovering,
            _ => Self::Dead,
        }
    }
}

/// A [`State`] shared between the data path, completions and the recovery work.
struct AtomicState(AtomicU8);

impl AtomicState {
    fn new(s: State) -> Self {
        Self(AtomicU8::new(s as u8))
    }

    fn get(&self) -> State {
        State::from_u8(self.0.load(Ordering::Acquire))
    }

    fn set(&self, s: State) {
        self.0.store(s as u8, Ordering::Release);
    }

    /// Moves `from` to `to`; the state found otherwise.
    fn change(&self, from: State, to: State) -> core::result::Result<(), State> {
        self.0
            .compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(State::from_u8)
    }
}

/// Told when a queue that made its I/O wait takes I/O again: its recovery ended (the
/// I/O goes on the new link, or fails on a dead queue) or it was shut down.
pub(crate) trait Resume: Send + Sync {
    /// The queue takes I/O again. Runs in process context; must not sleep.
    fn resume(&self);
}

/// What happened to a queue, for whoever watches it ([`Queue::set_watcher`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueueEvent {
    /// Its link failed; it is reconnecting.
    Recovering,
    /// It reconnected to its region.
    Reconnected,
    /// It is dead: recovery failed, ran out of time, or is off. Its I/O fails.
    Dead,
}

impl QueueEvent {
    /// The event's word: `recovering`, `reconnected`, `dead`.
    pub(crate) fn word(self) -> &'static str {
        match self {
            QueueEvent::Recovering => "recovering",
            QueueEvent::Reconnected => "reconnected",
            QueueEvent::Dead => "dead",
        }
    }
}

/// Told of a queue's events, in process context (the queue's recovery work): it may
/// sleep, and must not wait for the queue's own recovery.
pub(crate) trait QueueWatcher: Send + Sync {
    /// Queue `index` had `event`.
    fn queue_event(&self, index: u16, event: QueueEvent);
}

/// What the data path should do with I/O whose link failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The queue is recovering: requeue the I/O, it is retried on the new link.
    Retry,
    /// The queue is dead (or recovery is off): fail the I/O.
    Fail,
}

/// One queue of a session: the link its hardware queue posts to, and that link's
/// recovery.
#[pin_data]
pub(crate) struct Queue {
    index: u16,
    name: Name,
    /// Where and how every link connects; another server's after [`Queue::adopt`].
    #[pin]
    params: Mutex<LinkParams>,
    /// Set by [`Queue::adopt`] until its recovery installs a link: that link's region,
    /// whatever it is, becomes the queue's region.
    adopting: AtomicBool,
    /// How long recovery may try to reconnect; 0 turns recovery off.
    recovery_ms: u32,
    state: AtomicState,
    /// Held while a link is connected and installed (first connect, recovery) and by
    /// `shut_down`: a link is only ever installed or retired under it.
    #[pin]
    teardown: Mutex<()>,
    /// The region the first link got, and the SGEs it takes per work request: every later
    /// link must get the same region and take as many SGEs (the disk's limits follow the
    /// first).
    #[pin]
    region: Mutex<Option<(RegionDescriptor, u32)>>,
    /// The descriptor of the link installed last, for the state line.
    #[pin]
    installed: Mutex<Option<RegionDescriptor>>,
    recoveries: AtomicU32,
    /// Requests issued again after this queue failed under them.
    retried: AtomicU64,
    /// The data path's successful completions ([`IoCounters::succeeded`]) when the
    /// keep-alive last looked.
    succeeded_seen: AtomicU64,
    /// The data path's counters (see [`super::io`]).
    io: IoCounters,
    /// The current link. The data path reads it in atomic context.
    #[pin]
    link: SpinLock<Option<Arc<Link>>>,
    /// The connection attempt in progress, so that `shut_down` can end its waits.
    #[pin]
    attempt: SpinLock<Option<Arc<LinkEvents>>>,
    /// Who to tell when the queue takes I/O again.
    #[pin]
    resume: SpinLock<Option<Arc<dyn Resume>>>,
    /// Who hears of its recoveries and death, if anyone.
    #[pin]
    watcher: SpinLock<Option<Arc<dyn QueueWatcher>>>,
    /// Whether the queue was shut down, checked when the recovery work is queued: no work
    /// is queued after a shutdown, so the session's one flush after shutting its queues
    /// down finds all there will ever be. IRQ-safe: [`Queue::fail`] takes it in
    /// completions (softirq), `shut_down` in process context.
    #[pin]
    shut: SpinLockIrq<bool>,
    wq: Arc<ReclaimWorkqueue>,
    #[pin]
    work: Work<Queue>,
}

impl_has_work! {
    impl HasWork<Self> for Queue { self.work }
}

impl Queue {
    /// Queue `index` of session `name`, not connected yet; its recovery runs on `wq`.
    pub(crate) fn new(
        name: Name,
        index: u16,
        params: &LinkParams,
        recovery_ms: u32,
        wq: Arc<ReclaimWorkqueue>,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                index,
                name,
                params <- new_mutex!(params.clone(), "rswap::Queue::params"),
                adopting: AtomicBool::new(false),
                recovery_ms,
                state: AtomicState::new(State::Connecting),
                teardown <- new_mutex!((), "rswap::Queue::teardown"),
                region <- new_mutex!(None, "rswap::Queue::region"),
                installed <- new_mutex!(None, "rswap::Queue::installed"),
                recoveries: AtomicU32::new(0),
                retried: AtomicU64::new(0),
                succeeded_seen: AtomicU64::new(0),
                io: IoCounters::default(),
                link <- new_spinlock!(None, "rswap::Queue::link"),
                attempt <- new_spinlock!(None, "rswap::Queue::attempt"),
                resume <- new_spinlock!(None, "rswap::Queue::resume"),
                watcher <- new_spinlock!(None, "rswap::Queue::watcher"),
                shut <- new_spinlock_irq!(false, "rswap::Queue::shut"),
                wq,
                work <- new_work!("rswap::Queue::work"),
            }),
            GFP_KERNEL,
        )
    }

    /// Connects the queue's first link; returns the link it runs on.
    pub(crate) fn start(this: &Arc<Self>) -> Result<Arc<Link>> {
        let _guard = this.teardown.lock();
        let link = Self::connect_link(this)?;
        *this.region.lock() = Some((*link.descriptor(), link.max_sge()));
        *this.installed.lock() = Some(*link.descriptor());
        *this.link.lock() = Some(link.clone());
        if let Err(state) = this.state.change(State::Connecting, State::Live) {
            // Shut down meanwhile.
            this.retire_link();
            pr_err!(
                "{}: queue {}: shut down while connecting ({:?})\n",
                this.name,
                this.index,
                state
            );
            return Err(ECANCELED);
        }
        // A disconnect while the queue was not live yet was not acted on: act now.
        if !link.is_live() {
            let _ = Self::fail(this, c"disconnected while connecting", 0);
        }
        Ok(link)
    }

    /// Connects one link, abortable by `shut_down` through `attempt`. The link reports its
    /// loss and its device's removal to the queue.
    fn connect_link(this: &Arc<Self>) -> Result<Arc<Link>> {
        let params = this.params.lock().clone();
        let watcher = Arc::new(QueueRef(this.clone()), GFP_KERNEL)?;
        let events = LinkEvents::new(
            this.name,
            this.index,
            params.settings.bytes(),
            watcher.clone(),
            params.note.clone(),
        )?;
        *this.attempt.lock() = Some(events.clone());
        // `shut_down` sets `Dead` before it aborts the attempt it finds: seen here, or
        // the attempt was found and aborted.
        let result = if this.state.get() == State::Dead {
            Err(ECANCELED)
        } else {
            Link::connect(&params, this.index, &events, watcher)
        };
        *this.attempt.lock() = None;
        result
    }

    /// Points a dead queue at another server (`params`) and has its recovery connect
    /// there within `recovery_ms`, taking the region that server gives as the queue's own
    /// from then on: a queue of a disk's leg whose server is replaced by an empty one. The
    /// watcher hears `Reconnected` when it is live, or `Dead` again. Fails with `EBUSY`
    /// unless the queue is dead and was not shut down. Sleeps.
    pub(crate) fn adopt(this: &Arc<Self>, params: LinkParams) -> Result {
        // No link is installed or retired meanwhile, and `shut_down` either ran (the
        // queue stays dead) or finds the recovery queued here.
        let _guard = this.teardown.lock();
        if this.state.get() != State::Dead {
            return Err(EBUSY);
        }
        *this.params.lock() = params;
        let shut = this.shut.lock();
        if *shut || this.state.get() != State::Dead {
            return Err(EBUSY);
        }
        this.adopting.store(true, Ordering::Release);
        this.state.set(State::Recovering);
        let _ = this.wq.enqueue(this.clone());
        Ok(())
    }

    /// Where and how its links connect now.
    pub(crate) fn params(&self) -> LinkParams {
        self.params.lock().clone()
    }

    /// Tells `r` whenever the queue takes I/O again after it had to wait.
    pub(crate) fn set_resume(&self, r: Arc<dyn Resume>) {
        *self.resume.lock() = Some(r);
    }

    fn resumed(&self) {
        let r = self.resume.lock().clone();
        if let Some(r) = r {
            r.resume();
        }
    }

    /// Tells `w` of the queue's events from now on (`None`: nobody).
    pub(crate) fn set_watcher(&self, w: Option<Arc<dyn QueueWatcher>>) {
        *self.watcher.lock() = w;
    }

    /// Tells the watcher of `event`, unless the queue was shut down. Sleeps.
    fn tell(&self, event: QueueEvent) {
        if *self.shut.lock() {
            return;
        }
        let w = self.watcher.lock().clone();
        if let Some(w) = w {
            w.queue_event(self.index, event);
        }
    }

    /// The state.
    pub(crate) fn state(&self) -> State {
        self.state.get()
    }

    /// Successful recoveries so far.
    pub(crate) fn recoveries(&self) -> u32 {
        self.recoveries.load(Ordering::Relaxed)
    }

    /// Counts a request that is issued again after this queue failed under it.
    pub(crate) fn count_retry(&self) {
        self.retried.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests issued again so far.
    pub(crate) fn retried(&self) -> u64 {
        self.retried.load(Ordering::Relaxed)
    }

    /// The data path's counters, to count in.
    pub(super) fn io_counters(&self) -> &IoCounters {
        &self.io
    }

    /// The queue's counters now: work requests in flight, READs with a registered sink,
    /// requeues, recoveries.
    pub(crate) fn counters(&self) -> QueueCounters {
        self.io.load(self.retried(), u64::from(self.recoveries()))
    }

    /// Whether the queue is live and its connection up.
    pub(crate) fn is_live(&self) -> bool {
        self.state.get() == State::Live && self.current().is_some_and(|l| l.is_live())
    }

    /// The name of the session (the disk) for log lines.
    pub(crate) fn name(&self) -> &Name {
        &self.name
    }

    /// The queue's index.
    pub(crate) fn index(&self) -> u16 {
        self.index
    }

    /// The descriptor of the link installed last (a restarted server hands out a new
    /// address, key and epoch for the same region); `None` before the first.
    pub(crate) fn installed_descriptor(&self) -> Option<RegionDescriptor> {
        *self.installed.lock()
    }

    fn current(&self) -> Option<Arc<Link>> {
        self.link.lock().clone()
    }

    /// Runs the completions waiting on this queue's link if it is polled: a task waiting
    /// for polled I/O on the queue calls it. How many ran. Does not sleep.
    pub(crate) fn poll(&self) -> u32 {
        self.current().map_or(0, |link| link.poll())
    }

    /// Runs every completion waiting on this queue's link if it is polled, for I/O that
    /// nobody polls for (a request timed out). How many ran. Does not sleep.
    pub(crate) fn reap(&self) -> u32 {
        self.current().map_or(0, |link| link.reap())
    }

    /// Runs `f` with the live link and its connection, handing `value` to it; gives
    /// `value` back with the reason when the queue has no live connection. `f` runs in an
    /// RCU read-side section: it must not sleep.
    pub(crate) fn with_conn<T, R>(
        this: &Arc<Self>,
        value: T,
        f: impl FnOnce(&Link, &Conn, T) -> R,
    ) -> core::result::Result<R, (Verdict, T)> {
        let state = this.state.get();
        if state != State::Live {
            let verdict = match state {
                State::Dead => Verdict::Fail,
                _ => Verdict::Retry,
            };
            return Err((verdict, value));
        }
        // The clone may outlive the slot's reference; a link is revoked before the slot
        // lets go of it, so dropping this clone never runs the sleeping teardown.
        let link = this.current();
        let conn: Option<RevocableGuard<'_, Conn>> = link.as_ref().and_then(|l| l.conn());
        match (&link, conn) {
            (Some(link), Some(conn)) => Ok(f(link, &conn, value)),
            // Live with no connection: it was taken down under the queue; recover.
            _ => Err((Self::fail(this, c"no connection", 0), value)),
        }
    }

    /// Reports that I/O on the current link failed (`why`, for the log) and says what to
    /// do with that I/O. The first report on a live queue starts recovery (or, with
    /// recovery off, kills the queue). Does not sleep: callable from completions.
    pub(crate) fn fail(this: &Arc<Self>, why: &CStr, status: u32) -> Verdict {
        let next = if this.recovery_ms == 0 {
            State::Dead
        } else {
            State::Recovering
        };
        match this.state.change(State::Live, next) {
            Ok(()) => {
                let code = StatusNote(status);
                if next == State::Recovering {
                    pr_warn!(
                        "{}: queue {}: {}{}: reconnecting; its I/O will be retried\n",
                        this.name,
                        this.index,
                        why,
                        code
                    );
                } else {
                    pr_err!(
                        "{}: queue {}: {}{}; recovery is off: failing its I/O\n",
                        this.name,
                        this.index,
                        why,
                        code
                    );
                }
                // The work item takes the old link down (and, when recovering, connects a
                // new one). Already queued means the same work is pending anyway. Never
                // after a shutdown: the session flushes the workqueue once, after it.
                let shut = this.shut.lock();
                if !*shut {
                    let _ = this.wq.enqueue(this.clone());
                }
            }
            Err(State::Dead) => return Verdict::Fail,
            // Already recovering (or still connecting: nothing posted yet).
            Err(_) => {}
        }
        match this.state.get() {
            State::Dead => Verdict::Fail,
            _ => Verdict::Retry,
        }
    }

    /// The keep-alive: probes the live link, and fails the queue (recovery starts) when
    /// the previous probe is still unanswered and nothing else completed on the queue since
    /// the last call (the probe waits behind the data path's work requests, so completions
    /// show the server is there), or when the QP refuses the probe for good. A probe the
    /// QP refuses as busy ([`ProbeOutcome::Busy`]) is tried again at the next period; a
    /// second refusal in a row fails the queue unless something else completed on it
    /// meanwhile. A probe that fails fails the queue from its completion. Nothing happens
    /// on a queue that is not live. Does not sleep.
    pub(crate) fn keep_alive(this: &Arc<Self>) {
        let succeeded = this.io.succeeded();
        let progress = this.succeeded_seen.swap(succeeded, Ordering::Relaxed) != succeeded;
        let outcome = Self::with_conn(this, (), |link, _conn, ()| link.probe());
        match outcome {
            Ok(ProbeOutcome::Unanswered) if !progress => {
                let _ = Self::fail(this, c"keep-alive probe unanswered", 0);
            }
            Ok(ProbeOutcome::NotPosted) => {
                let _ = Self::fail(this, c"keep-alive probe not posted", 0);
            }
            Ok(ProbeOutcome::StillBusy) if !progress => {
                let _ = Self::fail(this, c"keep-alive probe refused twice", 0);
            }
            Ok(_) | Err(_) => {}
        }
    }

    /// Takes the current link out of the slot and tears it down (sleeps): its posted work
    /// requests are flushed, and their completions run before this returns.
    fn retire_link(&self) {
        let old = self.link.lock().take();
        if let Some(link) = old {
            link.revoke();
        }
    }

    /// The recovery work, on the session's workqueue. It retires the old link, then
    /// connects new ones until one gets the same region or the window ends. `teardown` is
    /// held for each retire and each attempt, not between attempts, so that `shut_down`
    /// and device removal never wait longer than one attempt. With the queue `Dead`
    /// (recovery off, or shut down) it only retires the link.
    fn recover(this: &Arc<Self>) {
        {
            let _guard = this.teardown.lock();
            this.retire_link();
        }
        let Some((region, max_sge)) = *this.region.lock() else {
            return;
        };
        if this.state.get() == State::Recovering {
            this.tell(QueueEvent::Recovering);
        }
        let start = Instant::<Monotonic>::now();
        let mut attempts = 0u32;
        loop {
            if this.state.get() != State::Recovering {
                // Shut down meanwhile: nothing to report.
                return;
            }
            attempts += 1;
            let guard = this.teardown.lock();
            match Self::connect_link(this) {
                Ok(link) => {
                    let desc = *link.descriptor();
                    let adopting = this.adopting.load(Ordering::Acquire);
                    if !adopting && !region.same_region(&desc) {
                        pr_err!(
                            "{}: queue {}: the server no longer holds this client's region (got region {}, had {}): its data is lost, failing the queue's I/O\n",
                            this.name,
                            this.index,
                            desc.region_id,
                            region.region_id
                        );
                        link.revoke();
                        break;
                    }
                    if link.max_sge() < max_sge {
                        pr_err!(
                            "{}: queue {}: the new connection takes {} SGEs, the disk needs {}\n",
                            this.name,
                            this.index,
                            link.max_sge(),
                            max_sge
                        );
                        link.revoke();
                        break;
                    }
                    if adopting {
                        *this.region.lock() = Some((desc, max_sge));
                        this.adopting.store(false, Ordering::Release);
                    }
                    *this.installed.lock() = Some(desc);
                    *this.link.lock() = Some(link);
                    if this.state.change(State::Recovering, State::Live).is_err() {
                        // Shut down meanwhile.
                        this.retire_link();
                        return;
                    }
                    drop(guard);
                    // A disconnect while the queue was not live yet was not acted on.
                    if !this.current().is_some_and(|l| l.is_live()) {
                        let _ = Self::fail(this, c"disconnected while connecting", 0);
                    }
                    this.recoveries.fetch_add(1, Ordering::Relaxed);
                    let plural = if attempts == 1 { "" } else { "s" };
                    let ms = start.elapsed().as_millis();
                    if adopting {
                        pr_info!(
                            "{}: queue {}: connected to its new server after {} ms ({} attempt{}, region {}, epoch {})\n",
                            this.name,
                            this.index,
                            ms,
                            attempts,
                            plural,
                            desc.region_id,
                            desc.epoch
                        );
                    } else {
                        pr_info!(
                            "{}: queue {}: reconnected after {} ms ({} attempt{}, epoch {})\n",
                            this.name,
                            this.index,
                            ms,
                            attempts,
                            plural,
                            desc.epoch
                        );
                    }
                    return;
                }
                Err(e) => {
                    drop(guard);
                    if this.state.get() != State::Recovering {
                        return;
                    }
                    let spent = start.elapsed().as_millis();
                    if spent >= i64::from(this.recovery_ms) {
                        pr_err!(
                            "{}: queue {}: not reconnected within {} ms ({} attempts, last error {:?}): failing its I/O\n",
                            this.name,
                            this.index,
                            this.recovery_ms,
                            attempts,
                            e
                        );
                        break;
                    }
                    // Between attempts: one a second at most, within the window.
                    let pause = (i64::from(this.recovery_ms) - spent).clamp(1, 1000);
                    fsleep(Delta::from_millis(pause));
                }
            }
        }
        let _ = this.state.change(State::Recovering, State::Dead);
    }

    /// The RDMA device under the queue's link (or its connection attempt) is being
    /// removed: recover, as from any other transport failure, and let go of the device
    /// before returning (its removal waits for that). The new link lands on whichever
    /// device then routes to the server, within `recovery_ms`.
    fn device_removed(this: &Arc<Self>) {
        pr_warn!(
            "{}: queue {}: its RDMA device is being removed\n",
            this.name,
            this.index
        );
        let attempt = this.attempt.lock().clone();
        if let Some(events) = attempt {
            events.abort();
        }
        // Under `teardown`, so that a link installed meanwhile (a connection that
        // completed on this device just before) is failed and retired too.
        let _guard = this.teardown.lock();
        let _ = Self::fail(this, c"RDMA device removed", 0);
        this.retire_link();
    }

    /// Tears the queue down for good (idempotent): later I/O on it fails, I/O in flight is
    /// flushed and ends with an error. A connection attempt in progress is aborted; this
    /// waits for it to give up. Sleeps.
    pub(crate) fn shut_down(&self) {
        // Both under the lock: an adoption ([`Queue::adopt`]) sees the queue shut down,
        // or is seen (its `Recovering` is made `Dead` here).
        {
            let mut shut = self.shut.lock();
            *shut = true;
            self.state.set(State::Dead);
        }
        self.take_down();
    }

    /// Takes the queue's link down and leaves it dead, as a failed recovery does: its I/O
    /// fails. A recovery work of it may still be running, to return at its next check of
    /// the state; [`super::session::Session::disconnect`] waits for it, after which
    /// [`Queue::adopt`] may point the queue at another server. Sleeps.
    pub(crate) fn disconnect(&self) {
        self.state.set(State::Dead);
        self.take_down();
    }

    /// The queue is dead: aborts the connection attempt in progress and waits for it to
    /// give up, tears the link down, and lets the I/O that waited fail. Sleeps.
    fn take_down(&self) {
        let attempt = self.attempt.lock().clone();
        if let Some(events) = attempt {
            events.abort();
        }
        let guard = self.teardown.lock();
        self.retire_link();
        drop(guard);
        self.resumed();
    }
}

/// What a connection of a queue reports back to it: a lost link and the removal of its
/// device. One per connection attempt: it holds the queue, and the connection holds it
/// until it is torn down.
struct QueueRef(Arc<Queue>);

impl LinkWatcher for QueueRef {
    fn link_lost(&self, why: &CStr, status: u32) {
        let _ = Queue::fail(&self.0, why, status);
    }
}

impl DeviceUser for QueueRef {
    fn device_removed(&self) {
        Queue::device_removed(&self.0);
    }
}

impl WorkItem for Queue {
    type Pointer = Arc<Queue>;

    fn run(this: Arc<Queue>) {
        // The disk's I/O may be what reclaim would wait on: allocate without starting any.
        let _noio = NoIoScope::enter();
        let recovering = this.state.get() == State::Recovering;
        {
            // The teardown of the old link (its DREQ) and the new connection (cm_id, QP,
            // MADs, the hello and the proof) are what reclaim may be waiting on: they take
            // the memory reserves rather than wait for reclaim, and fail at once when
            // those are gone too, to be tried again within `recovery_ms`.
            let _reserve = ReserveScope::enter();
            // Tells of `Recovering` once the old link is retired.
            Self::recover(&this);
        }
        // Live again or dead: the I/O that waited goes on (or fails) either way, and only
        // then is the event told (its uevent allocates and may take a while).
        this.resumed();
        match this.state.get() {
            State::Live if recovering => this.tell(QueueEvent::Reconnected),
            State::Dead => this.tell(QueueEvent::Dead),
            _ => {}
        }
    }
}

/// Formats a work completion status for the log: nothing for 0 (no completion involved).
struct StatusNote(u32);

impl kernel::fmt::Display for StatusNote {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            0 => Ok(()),
            s => write!(f, " (status {s})"),
        }
    }
}
