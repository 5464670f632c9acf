// SPDX-License-Identifier: GPL-2.0

//! One RDMA queue to the memory server: an rdma_cm connection with its own PD, CQ and QP.
//!
//! Setup follows the rdma_cm steps (resolve address, resolve route, create the QP, post
//! the RECV for the region descriptor, connect) and waits, bounded, for each. Teardown is
//! the reverse, by ownership: [`QueueConn`]'s drop disconnects and drains the QP, then its
//! fields go in declaration order: QP, CQ, PD, cm_id.

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use kernel::{
    prelude::*,
    revocable::Revocable,
    sync::Arc,
    time::{delay::fsleep, Delta},
};

use super::wire::{ConnectRequest, RegionDescriptor, RejectReason};
use crate::{
    blk::MAX_SEGMENTS,
    ib::{
        cm::{CmEvent, CmHandler, CmId, ConnectParams},
        cq::PollContext,
        dma::Direction,
        oneshot::{OneShot, OneShotHandler},
        qp::QpCaps,
        Cq, Device, Pd, Qp,
    },
};

/// Where to connect and what to ask for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target {
    /// The server's IPv4 address (host byte order).
    pub(crate) ip: u32,
    /// The server's port.
    pub(crate) port: u16,
    /// This client's identity (the server keeps a client's region across reconnects).
    pub(crate) client_id: u64,
    /// Bytes of remote memory to ask for.
    pub(crate) size: u64,
    /// Queues the client opens.
    pub(crate) queue_count: u16,
    /// Work requests in flight per queue.
    pub(crate) depth: u32,
    /// Milliseconds each connection step may take.
    pub(crate) step_timeout_ms: u32,
}

/// Connection progress as the CM reports it.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Idle = 0,
    AddrResolved = 1,
    RouteResolved = 2,
    Established = 3,
    Rejected = 4,
    Failed = 5,
    Disconnected = 6,
    DeviceRemoval = 7,
    /// rswap itself is tearing the queue down.
    Closing = 8,
}

/// Descriptor receive state.
const DESC_PENDING: u32 = 0;
const DESC_OK: u32 = 1;
const DESC_FAILED: u32 = 2;

/// What the CM and the descriptor receive report for one queue. Written from the CM's
/// workqueue and from softirq completions, read by the thread that connects: atomics only.
pub(crate) struct QueueEvents {
    index: u16,
    step: AtomicU32,
    status: AtomicI32,
    reject_code: AtomicU32,
    reject_max: AtomicU64,
    desc_state: AtomicU32,
    desc: [AtomicU64; RegionDescriptor::SIZE / 8],
}

impl QueueEvents {
    fn new(index: u16) -> Self {
        Self {
            index,
            step: AtomicU32::new(Step::Idle as u32),
            status: AtomicI32::new(0),
            reject_code: AtomicU32::new(0),
            reject_max: AtomicU64::new(0),
            desc_state: AtomicU32::new(DESC_PENDING),
            desc: [const { AtomicU64::new(0) }; RegionDescriptor::SIZE / 8],
        }
    }

    fn step(&self) -> u32 {
        self.step.load(Ordering::Acquire)
    }

    fn set(&self, step: Step) {
        self.step.store(step as u32, Ordering::Release);
    }

    fn descriptor_bytes(&self) -> [u8; RegionDescriptor::SIZE] {
        let mut out = [0u8; RegionDescriptor::SIZE];
        for (chunk, word) in out.chunks_exact_mut(8).zip(self.desc.iter()) {
            chunk.copy_from_slice(&word.load(Ordering::Acquire).to_le_bytes());
        }
        out
    }
}

impl CmHandler for QueueEvents {
    fn event(&self, ev: CmEvent<'_>) {
        match ev {
            CmEvent::AddrResolved => self.set(Step::AddrResolved),
            CmEvent::RouteResolved => self.set(Step::RouteResolved),
            CmEvent::Established => self.set(Step::Established),
            CmEvent::Rejected {
                status,
                private_data,
            } => {
                self.status.store(status, Ordering::Relaxed);
                let code = match RejectReason::decode(private_data) {
                    Ok(r) => {
                        self.reject_max.store(r.max_size, Ordering::Relaxed);
                        u32::from(r.code.to_u16())
                    }
                    Err(_) => u32::MAX,
                };
                self.reject_code.store(code, Ordering::Relaxed);
                self.set(Step::Rejected);
            }
            CmEvent::Disconnected => {
                if self.step() == Step::Established as u32 {
                    pr_warn!("queue {}: disconnected by the server\n", self.index);
                }
                if self.step() != Step::Closing as u32 {
                    self.set(Step::Disconnected);
                }
            }
            CmEvent::DeviceRemoval => self.set(Step::DeviceRemoval),
            CmEvent::Failed { what, status } => {
                pr_err!(
                    "queue {}: {} failed (status {})\n",
                    self.index,
                    what,
                    status
                );
                self.status.store(status, Ordering::Relaxed);
                self.set(Step::Failed);
            }
            CmEvent::Other => {}
        }
    }
}

impl OneShotHandler for QueueEvents {
    fn done(&self, _tag: u32, data: Option<&[u8]>) {
        match data {
            Some(bytes) if bytes.len() >= RegionDescriptor::SIZE => {
                for (word, chunk) in self.desc.iter().zip(bytes.chunks_exact(8)) {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(chunk);
                    word.store(u64::from_le_bytes(b), Ordering::Relaxed);
                }
                self.desc_state.store(DESC_OK, Ordering::Release);
            }
            _ => self.desc_state.store(DESC_FAILED, Ordering::Release),
        }
    }
}

/// The RDMA objects of a live connection. Dropping it tears the connection down in the
/// order the hardware needs (see the module documentation).
pub(crate) struct QueueConn {
    qp: Qp,
    #[expect(
        dead_code,
        reason = "owned for the QP's completions; dropped after the QP"
    )]
    cq: Cq,
    pd: Pd,
    cm: CmId<QueueEvents>,
}

impl QueueConn {
    /// The device the connection runs on.
    pub(crate) fn device(&self) -> Option<&Device> {
        self.cm.device()
    }

    /// The local key for DMA-mapped kernel memory.
    pub(crate) fn lkey(&self) -> u32 {
        self.pd.local_dma_lkey()
    }

    /// The QP to post on.
    pub(crate) fn qp(&self) -> &Qp {
        &self.qp
    }
}

impl Drop for QueueConn {
    fn drop(&mut self) {
        // Disconnect (QP to error), then wait until every posted work request has come
        // back through its completion; the fields are then dropped QP, CQ, PD, cm_id.
        self.cm.handler().set(Step::Closing);
        self.cm.disconnect();
        self.qp.drain();
    }
}

/// One queue: its connection (revocable, so device removal and timeouts can tear it down
/// under the data path) and what identifies it.
#[pin_data]
pub(crate) struct Queue {
    /// The device's identity (address), to find the queues of a device being removed.
    device: usize,
    max_sge: u32,
    #[pin]
    conn: Revocable<QueueConn>,
}

impl Queue {
    /// Connects queue `index` to `target` and waits for the region descriptor.
    pub(crate) fn connect(target: &Target, index: u16) -> Result<(Arc<Self>, RegionDescriptor)> {
        let events = Arc::new(QueueEvents::new(index), GFP_KERNEL)?;
        let cm = CmId::new(events.clone())?;
        let ms = target.step_timeout_ms;

        cm.resolve_addr(target.ip, target.port, ms)?;
        wait_step(&events, Step::AddrResolved, ms, "address resolution")?;
        cm.resolve_route(ms)?;
        wait_step(&events, Step::RouteResolved, ms, "route resolution")?;

        let dev = cm.device().ok_or(ENODEV)?;
        let dev_key = dev.as_raw() as usize;
        let pd = Pd::alloc(dev)?;
        let cq = Cq::alloc(
            dev,
            target.depth + 4,
            u32::from(index),
            PollContext::Softirq,
        )?;
        let caps = QpCaps {
            send_wr: target.depth,
            recv_wr: 1,
            send_sge: (MAX_SEGMENTS as u32).min(dev.max_send_sge()),
        };
        let qp = Qp::create(&cm, &pd, &cq, &caps)?;
        OneShot::new(dev, Direction::FromDevice, &[], 0, events.clone())?
            .post_recv(&qp, pd.local_dma_lkey())?;

        let mut private = [0u8; ConnectRequest::SIZE];
        ConnectRequest {
            client_id: target.client_id,
            queue_index: index,
            queue_count: target.queue_count,
            requested_size: target.size,
        }
        .encode(&mut private);
        let initiator_depth = u8::try_from(dev.max_qp_init_rd_atom().min(16)).unwrap_or(16);
        let conn = QueueConn { qp, cq, pd, cm };
        conn.cm.connect(&ConnectParams {
            private_data: &private,
            initiator_depth,
        })?;
        // If anything below fails, dropping `conn` tears the half-made queue down.
        if let Err(e) = wait_step(&events, Step::Established, ms.saturating_mul(3), "connect") {
            if events.step() == Step::Rejected as u32 {
                report_reject(&events, target);
                return Err(ECONNREFUSED);
            }
            return Err(e);
        }
        if !wait_for(ms, || {
            events.desc_state.load(Ordering::Acquire) != DESC_PENDING
        }) {
            pr_err!("queue {}: no region descriptor within {} ms\n", index, ms);
            return Err(ETIMEDOUT);
        }
        if events.desc_state.load(Ordering::Acquire) != DESC_OK {
            pr_err!("queue {}: receiving the region descriptor failed\n", index);
            return Err(EIO);
        }
        let desc = RegionDescriptor::decode(&events.descriptor_bytes()).map_err(|e| {
            pr_err!("queue {}: bad region descriptor: {:?}\n", index, e);
            EPROTO
        })?;
        let queue = Arc::pin_init(
            pin_init!(Self {
                device: dev_key,
                max_sge: caps.send_sge,
                conn <- Revocable::new(conn),
            }),
            GFP_KERNEL,
        )?;
        Ok((queue, desc))
    }

    /// The most SGEs one work request on this queue may carry.
    pub(crate) fn max_sge(&self) -> u32 {
        self.max_sge
    }

    /// Whether the queue runs on the device `dev` (by identity).
    pub(crate) fn is_on(&self, dev: &Device) -> bool {
        self.device == dev.as_raw() as usize
    }

    /// Runs `f` with the live connection, or returns `None` when it was torn down. `f`
    /// runs in an RCU read-side section: it must not sleep.
    pub(crate) fn with_conn<R>(&self, f: impl FnOnce(&QueueConn) -> R) -> Option<R> {
        self.conn.try_access_with(f)
    }

    /// Whether the connection is up (not torn down, not disconnected by the server).
    pub(crate) fn is_live(&self) -> bool {
        self.with_conn(|c| c.cm.handler().step() == Step::Established as u32)
            .unwrap_or(false)
    }

    /// Tears the connection down (idempotent): later I/O on this queue fails, I/O in
    /// flight is flushed and ends with an error. Sleeps.
    pub(crate) fn shut_down(&self) -> bool {
        self.conn.revoke()
    }
}

/// Polls `cond` every 10 ms for up to `ms` milliseconds.
fn wait_for(ms: u32, cond: impl Fn() -> bool) -> bool {
    for _ in 0..=ms / 10 {
        if cond() {
            return true;
        }
        fsleep(Delta::from_millis(10));
    }
    cond()
}

/// Waits until the CM reports `want`; a failure step ends the wait early.
fn wait_step(events: &QueueEvents, want: Step, ms: u32, what: &str) -> Result {
    let failed = |s: u32| {
        s == Step::Rejected as u32
            || s == Step::Failed as u32
            || s == Step::Disconnected as u32
            || s == Step::DeviceRemoval as u32
    };
    wait_for(ms, || {
        let s = events.step();
        s == want as u32 || failed(s)
    });
    let s = events.step();
    if s == want as u32 {
        return Ok(());
    }
    if s == Step::Rejected as u32 {
        return Err(ECONNREFUSED);
    }
    if failed(s) {
        pr_err!(
            "queue {}: {} failed (state {}, status {})\n",
            events.index,
            what,
            s,
            events.status.load(Ordering::Relaxed)
        );
        return Err(EHOSTUNREACH);
    }
    pr_err!(
        "queue {}: {} timed out after {} ms\n",
        events.index,
        what,
        ms
    );
    Err(ETIMEDOUT)
}

fn report_reject(events: &QueueEvents, target: &Target) {
    let code = events.reject_code.load(Ordering::Relaxed);
    let reason = u16::try_from(code)
        .ok()
        .and_then(|c| super::wire::RejectCode::from_u16(c).ok());
    match reason {
        Some(r) => pr_err!(
            "queue {}: the server rejected the connection: {} (asked {} bytes, it can give {})\n",
            events.index,
            r.name(),
            target.size,
            events.reject_max.load(Ordering::Relaxed)
        ),
        None => pr_err!(
            "queue {}: connection rejected (no rswap server at that address? CM status {})\n",
            events.index,
            events.status.load(Ordering::Relaxed)
        ),
    }
}
