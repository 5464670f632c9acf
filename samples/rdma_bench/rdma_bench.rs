// SPDX-License-Identifier: GPL-2.0

//! rswap_rdma_bench: the RDMA transport's own speed, measured from kernel verbs.
//!
//! The reference `make bench` divides rswap's figures by. On load it connects to an
//! `rswap-server` over the same kind of queue rswap uses (an RC QP made through rdma_cm,
//! a CQ from the device's pool polled in softirq context, rswap's initiator depth), and
//! for RDMA READ, then RDMA WRITE, posts 4 KiB work requests to random 4 KiB-aligned
//! offsets of the region the server hands out, from preallocated DMA-mapped buffers: one
//! at a time (QD1, latency), then `qd` at a time (throughput), each for `ms` milliseconds.
//! Every phase prints one line:
//!
//! ```text
//! rswap_rdma_bench: result op=read qd=1 bytes=4096 ops=2950 ns=5000123456 ops_per_s=589 lat_mean_ns=1695000 lat_p50_ns=1500000 lat_p99_ns=4100000 wc_mean_ns=1650000
//! ```
//!
//! The latency runs from posting to the waiting thread seeing the completion: what a
//! sleeping kernel caller pays (a block request's completion wakes its submitter too);
//! `wc_mean_ns` stops at the completion handler. Then the module disconnects and stays
//! loaded holding nothing, so `rmmod` only unloads it. Any failed step (no server, a
//! failed work request, nothing completing for 10 s, a signal) fails the load, with the
//! reason in the log.
//!
//! ```text
//! insmod rswap_rdma_bench.ko addr=0xc0000202 port=7471 ms=5000 qd=32
//! ```

#[allow(
    dead_code,
    unused_imports,
    reason = "the benchmark uses only part of the layer"
)]
#[path = "../../src/ib/mod.rs"]
mod ib;
#[allow(
    dead_code,
    unused_imports,
    reason = "the RDMA layer needs the scatterlist table; the benchmark maps none"
)]
#[path = "../../src/kernel_ext/mod.rs"]
mod kernel_ext;
#[allow(dead_code, reason = "the benchmark uses only part of the wire format")]
#[path = "../../src/transport/wire.rs"]
mod wire;

use core::ptr::NonNull;
use ib::{
    cm::{CmEvent, CmHandler, CmId, ConnectParams},
    cqe::{impl_has_cqe, Cqe, CqeOwner, SgeList, Wc},
    dma::{Direction, DmaBuf, DmaBuffer, Sge},
    oneshot::{OneShot, OneShotHandler},
    pd::Pd,
    qp::{QpCaps, RdmaOp},
    ClientCell, ClientDriver, Device, Qp, RdmaDevice, Registration,
};
use kernel::{
    alloc::KVVec,
    new_condvar, new_spinlock_irq,
    prelude::*,
    str::CString,
    sync::{Arc, CondVar, CondVarTimeoutResult, SpinLockIrq},
    time::{msecs_to_jiffies, Delta, Instant, Monotonic},
};
use wire::{Auth, ConnectRequest, RegionDescriptor, Reject};

module! {
    type: RdmaBench,
    name: "rswap_rdma_bench",
    authors: ["rswap developers"],
    description: "rswap bench: 4 KiB RDMA READ/WRITE latency and rate from kernel verbs",
    license: "GPL",
    params: {
        addr: u32 {
            default: 0xc000_0201,
            description: "Server IPv4 address as a number (0xc0000201 is 192.0.2.1)",
        },
        port: u32 {
            default: 7471,
            description: "Server port (rswap's default, 7471)",
        },
        client_id: u64 {
            default: 0xbe4c,
            description: "Client id sent to the server (not 0; not one a disk uses)",
        },
        ops: u32 {
            default: 3,
            description: "What to measure: 1 RDMA READ, 2 RDMA WRITE, 3 both",
        },
        qd: u32 {
            default: 32,
            description: "Work requests in flight in the throughput phases (1..=128)",
        },
        ms: u32 {
            default: 5000,
            description: "Duration of each phase in milliseconds (100..=600000)",
        },
        size_mb: u32 {
            default: 64,
            description: "Region to ask the server for, in MiB: the offsets' range",
        },
    },
}

/// Bytes of every work request: one page, a swap page's size.
const IO_SIZE: usize = 4096;
/// Most latencies of a phase kept for the percentiles (the mean counts every one).
const MAX_SAMPLES: usize = 1 << 18;
/// A phase fails when nothing completes for this long.
const STALL_MS: u32 = 10_000;
/// Address resolution, route resolution and connect, each.
const CONNECT_MS: u32 = 5000;

/// How far the connection got, as bit flags.
const ADDR: u32 = 1 << 0;
const ROUTE: u32 = 1 << 1;
const ESTABLISHED: u32 = 1 << 2;
const DESCRIPTOR: u32 = 1 << 3;

/// What the CM, the descriptor's RECV and the completions reported.
struct State {
    /// `ADDR`, `ROUTE`, ... reached so far.
    flags: u32,
    /// Why the connection failed, once it did.
    failure: Option<&'static str>,
    /// The CM's status of that failure.
    status: i32,
    /// The server's reject reason, if it sent one.
    rejected: Option<&'static str>,
    /// The region descriptor received.
    descriptor: [u8; DmaBuf::SIZE],
    /// Completed I/O not taken by the benchmark thread yet. Its capacity covers every
    /// I/O buffer, so a completion never allocates.
    done: KVec<IoBox>,
}

/// The benchmark's shared state: the CM's handler, the descriptor RECV's handler, and
/// where completed I/O waits for the benchmark thread.
#[pin_data]
struct Bench {
    #[pin]
    state: SpinLockIrq<State>,
    #[pin]
    changed: CondVar,
}

impl Bench {
    fn new(max_io: usize) -> Result<Arc<Self>> {
        let done = KVec::with_capacity(max_io, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(Self {
                state <- new_spinlock_irq!(
                    State {
                        flags: 0,
                        failure: None,
                        status: 0,
                        rejected: None,
                        descriptor: [0; DmaBuf::SIZE],
                        done,
                    },
                    "rswap_rdma_bench::Bench::state"
                ),
                changed <- new_condvar!("rswap_rdma_bench::Bench::changed"),
            }),
            GFP_KERNEL,
        )
    }

    fn update(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.state.lock());
        self.changed.notify_all();
    }

    /// Waits up to `ms` for `bit`; fails with the connection's failure, on timeout or on a
    /// signal.
    fn wait(&self, bit: u32, what: &str, ms: u32) -> Result {
        let start = Instant::<Monotonic>::now();
        let mut st = self.state.lock();
        loop {
            if let Some(failure) = st.failure {
                let (status, why) = (st.status, st.rejected.unwrap_or("-"));
                drop(st);
                pr_err!(
                    "{}: {} (status {}, server's reason {})\n",
                    what,
                    failure,
                    status,
                    why
                );
                return Err(ECONNREFUSED);
            }
            if st.flags & bit != 0 {
                return Ok(());
            }
            let left = i64::from(ms) - start.elapsed().as_millis();
            if left <= 0 {
                drop(st);
                pr_err!("{} timed out after {} ms\n", what, ms);
                return Err(ETIMEDOUT);
            }
            let left = u32::try_from(left).unwrap_or(u32::MAX);
            if let CondVarTimeoutResult::Signal { .. } = self
                .changed
                .wait_interruptible_timeout(&mut st, msecs_to_jiffies(left))
            {
                return Err(EINTR);
            }
        }
    }

    /// A completed I/O is back (softirq context): queue it for the benchmark thread.
    fn complete(&self, io: IoBox) {
        let refused = self.state.lock().done.push_within_capacity(io).err();
        self.changed.notify_all();
        // Cannot happen (the capacity covers every buffer); if it did, the buffer goes.
        drop(refused);
    }

    /// Moves every completed I/O into `batch`, waiting up to [`STALL_MS`] for one.
    fn take(&self, batch: &mut KVec<IoBox>) -> Result {
        let start = Instant::<Monotonic>::now();
        let mut st = self.state.lock();
        while st.done.is_empty() {
            let left = i64::from(STALL_MS) - start.elapsed().as_millis();
            if left <= 0 {
                drop(st);
                pr_err!("no work request completed for {} ms\n", STALL_MS);
                return Err(ETIMEDOUT);
            }
            let left = u32::try_from(left).unwrap_or(u32::MAX);
            if let CondVarTimeoutResult::Signal { .. } = self
                .changed
                .wait_interruptible_timeout(&mut st, msecs_to_jiffies(left))
            {
                return Err(EINTR);
            }
        }
        while let Some(io) = st.done.pop() {
            // `batch` has room for every buffer too.
            batch.push_within_capacity(io).map_err(|_| ENOMEM)?;
        }
        Ok(())
    }

    /// Forgets every completed I/O (teardown, once the QP is drained): they hold a
    /// reference to this object.
    fn clear(&self) {
        let done = core::mem::take(&mut self.state.lock().done);
        drop(done);
    }
}

impl CmHandler for Bench {
    fn event(&self, ev: CmEvent<'_>) {
        self.update(|st| match ev {
            CmEvent::AddrResolved => st.flags |= ADDR,
            CmEvent::RouteResolved => st.flags |= ROUTE,
            CmEvent::Established { .. } => st.flags |= ESTABLISHED,
            CmEvent::Rejected {
                status,
                private_data,
            } => {
                st.failure = Some("connection rejected (no rswap-server at that port?)");
                st.status = status;
                if let Ok(Reject::Refused(r)) = Reject::decode(private_data) {
                    st.rejected = Some(r.code.name());
                }
            }
            CmEvent::Failed { what, status } => {
                st.failure = Some(what);
                st.status = status;
            }
            CmEvent::DeviceRemoval => st.failure = Some("the RDMA device is being removed"),
            CmEvent::Disconnected => st.failure = Some("the server disconnected"),
            CmEvent::Other => {}
        });
    }
}

impl OneShotHandler for Bench {
    fn done(&self, _tag: u32, data: Option<&[u8]>) {
        self.update(|st| match data {
            Some(data) => {
                let n = data.len().min(st.descriptor.len());
                st.descriptor[..n].copy_from_slice(&data[..n]);
                st.flags |= DESCRIPTOR;
            }
            None => st.failure = Some("the RECV of the region descriptor failed"),
        });
    }
}

/// One 4 KiB buffer and what a work request on it needs.
struct Io {
    cqe: Cqe,
    buf: DmaBuffer<IO_SIZE>,
    /// When its work request was posted.
    posted: Instant<Monotonic>,
    /// When its completion handler ran.
    completed: Instant<Monotonic>,
    /// The completion's status when it failed.
    failed: Option<u32>,
    bench: Arc<Bench>,
}

impl_has_cqe! { impl HasCqe for Io { self.cqe } }

impl SgeList for Io {
    fn sges(&self) -> &[Sge] {
        self.buf.sges()
    }
}

/// An I/O buffer that is not posted; posting gives it to the work request.
struct IoBox(KBox<Io>);

impl IoBox {
    fn new(pd: &Pd, dir: Direction, bench: &Arc<Bench>) -> Result<Self> {
        let now = Instant::now();
        Ok(Self(KBox::new(
            Io {
                cqe: Cqe::new(),
                buf: DmaBuffer::with_contents(pd, dir, b"rswap_rdma_bench")?,
                posted: now,
                completed: now,
                failed: None,
                bench: bench.clone(),
            },
            GFP_KERNEL,
        )?))
    }
}

// SAFETY: `into_raw` leaks the box, which stays put until `from_raw` rebuilds it.
unsafe impl CqeOwner for IoBox {
    type Target = Io;

    fn into_raw(self) -> NonNull<Io> {
        // SAFETY: `KBox::into_raw` never returns null.
        unsafe { NonNull::new_unchecked(KBox::into_raw(self.0)) }
    }

    unsafe fn from_raw(target: NonNull<Io>) -> Self {
        // SAFETY: leaked by `into_raw` and taken back once (the caller's guarantee).
        Self(unsafe { KBox::from_raw(target.as_ptr()) })
    }

    fn complete(mut self, wc: &Wc<'_>) {
        self.0.completed = Instant::now();
        self.0.failed = (!wc.is_ok()).then(|| wc.status());
        let bench = self.0.bench.clone();
        bench.complete(self);
    }
}

/// Random 4 KiB-aligned offsets (xorshift64*; a fixed seed, the same offsets every run).
struct Offsets {
    state: u64,
    pages: u64,
}

impl Offsets {
    fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 16) % self.pages * IO_SIZE as u64
    }
}

/// The figures of one phase.
struct Figures {
    ops: u64,
    ns: u64,
    lat_mean_ns: u64,
    wc_mean_ns: u64,
    lat_p50_ns: u64,
    lat_p99_ns: u64,
}

extern "C" {
    fn rswap_bench_sort_u64(base: *mut u64, num: usize);
}

/// Sorts `v` in ascending order with the kernel's `sort()` (see helpers.c): core's
/// `sort_unstable` brings a quicksort that objtool reports as falling through to the next
/// function.
fn sort_u64(v: &mut [u64]) {
    // SAFETY: `v` is a valid, exclusively borrowed slice of `v.len()` `u64`s for the whole
    // call; the helper only reorders those elements and keeps no pointer to them.
    unsafe { rswap_bench_sort_u64(v.as_mut_ptr(), v.len()) };
}

fn nanos(d: Delta) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(0)
}

/// The connected queue and what the server said, for the phases.
struct Target<'a> {
    bench: &'a Arc<Bench>,
    qp: &'a Qp,
    region: &'a RegionDescriptor,
    offsets: &'a mut Offsets,
}

impl Target<'_> {
    fn post(&mut self, mut io: IoBox, op: RdmaOp) -> Result {
        let addr = self.region.remote_addr + self.offsets.next();
        io.0.posted = Instant::now();
        self.qp
            .post_rdma(io, op, addr, self.region.rkey)
            .map_err(|(e, _)| e)
    }

    /// Keeps `depth` work requests of `op` in flight for `ms` milliseconds, then lets them
    /// finish. On error, what is still posted comes back when the QP is drained.
    fn phase(&mut self, op: RdmaOp, depth: usize, ms: u32) -> Result<Figures> {
        let dir = match op {
            RdmaOp::Read => Direction::FromDevice,
            RdmaOp::Write => Direction::ToDevice,
        };
        let mut batch = KVec::with_capacity(depth, GFP_KERNEL)?;
        for _ in 0..depth {
            batch.push(IoBox::new(self.qp.pd(), dir, self.bench)?, GFP_KERNEL)?;
        }
        let mut samples = KVVec::with_capacity(MAX_SAMPLES, GFP_KERNEL)?;
        let (mut ops, mut lat_sum, mut wc_sum) = (0u64, 0u64, 0u64);
        let mut in_flight = 0usize;
        let start = Instant::<Monotonic>::now();
        let (mut last_ns, end_ns) = (0u64, u64::from(ms) * 1_000_000);
        while let Some(io) = batch.pop() {
            self.post(io, op)?;
            in_flight += 1;
        }
        while in_flight > 0 {
            self.bench.take(&mut batch)?;
            let seen = Instant::<Monotonic>::now();
            while let Some(io) = batch.pop() {
                in_flight -= 1;
                if let Some(status) = io.0.failed {
                    pr_err!(
                        "a 4 KiB RDMA {:?} failed: completion status {}\n",
                        op,
                        status
                    );
                    return Err(EIO);
                }
                ops += 1;
                let lat = nanos(seen - io.0.posted);
                lat_sum += lat;
                wc_sum += nanos(io.0.completed - io.0.posted);
                // Past `MAX_SAMPLES` the percentiles are of the first ones only.
                let _ = samples.push_within_capacity(lat);
                last_ns = last_ns.max(nanos(io.0.completed - start));
                if nanos(seen - start) < end_ns {
                    self.post(io, op)?;
                    in_flight += 1;
                }
            }
        }
        sort_u64(&mut samples);
        let pct = |p: usize| {
            let i = samples.len().saturating_sub(1) * p / 100;
            samples.get(i).copied().unwrap_or(0)
        };
        let n = ops.max(1);
        Ok(Figures {
            ops,
            ns: last_ns,
            lat_mean_ns: lat_sum / n,
            wc_mean_ns: wc_sum / n,
            lat_p50_ns: pct(50),
            lat_p99_ns: pct(99),
        })
    }
}

/// The benchmark's IB client: it takes every device (the layer makes its object).
struct BenchClient;

static BENCH_CLIENT: ClientCell<BenchClient> = ClientCell::new();

impl ClientDriver for BenchClient {
    fn cell() -> &'static ClientCell<Self> {
        &BENCH_CLIENT
    }

    fn add(&self, _dev: &RdmaDevice) -> Result {
        Ok(())
    }

    fn remove(&self, _dev: &Device, _users: usize) {}
}

/// The loaded benchmark (nothing stays connected or registered).
struct RdmaBench;

/// The parameters, checked.
struct Params {
    ip: u32,
    port: u16,
    client_id: u64,
    read: bool,
    write: bool,
    depth: u32,
    ms: u32,
    size: u64,
}

impl Params {
    fn get() -> Result<Self> {
        let ops = module_parameters::ops.value();
        let depth = module_parameters::qd.value();
        let ms = module_parameters::ms.value();
        let size_mb = module_parameters::size_mb.value();
        let client_id = module_parameters::client_id.value();
        if ops == 0 || ops > 3 || !(1..=128).contains(&depth) || !(100..=600_000).contains(&ms) {
            pr_err!("ops must be 1..=3, qd 1..=128, ms 100..=600000\n");
            return Err(EINVAL);
        }
        if client_id == 0 || !(1..=1_048_576).contains(&size_mb) {
            pr_err!("client_id must not be 0, size_mb must be 1..=1048576\n");
            return Err(EINVAL);
        }
        Ok(Self {
            ip: module_parameters::addr.value(),
            port: u16::try_from(module_parameters::port.value()).map_err(|_| EINVAL)?,
            client_id,
            read: ops & 1 != 0,
            write: ops & 2 != 0,
            depth,
            ms,
            size: u64::from(size_mb) << 20,
        })
    }
}

impl kernel::Module for RdmaBench {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let params = Params::get()?;
        let client = KBox::pin_init(
            Registration::new(c"rswap_rdma_bench", BenchClient),
            GFP_KERNEL,
        )?;
        let bench = Bench::new(params.depth as usize)?;
        let result = run(&client, &bench, &params);
        // Completions that came back after a failed phase hold references to `bench`.
        bench.clear();
        result?;
        Ok(Self)
    }
}

/// Connects, receives the descriptor, runs the phases, disconnects. Every object is
/// dropped in reverse order of creation on return: the device's object, then the id
/// with its QP (drained: every posted work request comes back first) and its CQ.
fn run(client: &Registration<BenchClient>, bench: &Arc<Bench>, p: &Params) -> Result {
    let ip = p.ip;
    let mut cm = CmId::new(bench.clone())?;
    let text = CString::try_from_fmt(fmt!(
        "{}.{}.{}.{}",
        ip >> 24,
        (ip >> 16) & 0xff,
        (ip >> 8) & 0xff,
        ip & 0xff
    ))?;
    let server = kernel_ext::SockAddr::parse(text.to_str()?).map_err(|_| EINVAL)?;
    cm.resolve_addr(None, &server.with_port(p.port), CONNECT_MS)?;
    bench.wait(ADDR, "address resolution", CONNECT_MS)?;
    cm.resolve_route(CONNECT_MS)?;
    bench.wait(ROUTE, "route resolution", CONNECT_MS)?;
    let dev = cm.device().and_then(|d| client.device(d)).ok_or(ENODEV)?;
    // The shape of one of rswap's queues: a work request per request in flight (and
    // one for its keep-alive probe), one RECV for the descriptor.
    let caps = QpCaps {
        send_wr: p.depth + 1,
        recv_wr: 1,
        send_sge: 1,
        // A READ slot per buffer of a phase (at most `depth`), each 4 KiB: two pages at
        // most.
        read_slots: p.depth,
        read_pages: 2,
        polled: false,
    };
    cm.create_qp(&dev, &caps, 0)?;
    let qp = cm.qp().ok_or(EINVAL)?;
    qp.post_recv(OneShot::new(
        qp.pd(),
        Direction::FromDevice,
        &[],
        0,
        bench.clone(),
    )?)
    .map_err(|(e, _)| e)?;
    let mut hello = [0u8; ConnectRequest::SIZE];
    ConnectRequest {
        client_id: p.client_id,
        queue_index: 0,
        queue_count: 1,
        requested_size: p.size,
        // The descriptor comes in a SEND: the bench runs over soft-RoCE.
        reply_descriptor: false,
        // No secret: the server must run with `--insecure`, as the bench's does.
        auth: Auth::None { instance: 1 },
    }
    .encode(&mut hello);
    cm.connect(&ConnectParams {
        private_data: &hello,
        initiator_depth: u8::try_from(dev.device().max_qp_init_rd_atom().min(16)).unwrap_or(16),
    })?;
    bench.wait(ESTABLISHED, "connect", CONNECT_MS)?;
    bench.wait(DESCRIPTOR, "receiving the region descriptor", CONNECT_MS)?;
    let descriptor = bench.state.lock().descriptor;
    let region = RegionDescriptor::decode(&descriptor).map_err(|_| EPROTO)?;
    let pages = region.length.min(p.size) / IO_SIZE as u64;
    if pages == 0 {
        pr_err!(
            "the server's region of {} bytes holds no page\n",
            region.length
        );
        return Err(EPROTO);
    }
    pr_info!(
        "connected to {}:{} on {}: region {} of {} bytes; {} ms per phase, qd {}\n",
        &*text,
        p.port,
        dev.name(),
        region.region_id,
        region.length,
        p.ms,
        p.depth
    );

    let mut offsets = Offsets {
        state: 0x9e37_79b9_7f4a_7c15,
        pages,
    };
    let mut target = Target {
        bench,
        qp,
        region: &region,
        offsets: &mut offsets,
    };
    let mut phases = KVec::new();
    if p.read {
        phases.push((RdmaOp::Read, "read"), GFP_KERNEL)?;
    }
    if p.write {
        phases.push((RdmaOp::Write, "write"), GFP_KERNEL)?;
    }
    let result = phases.iter().try_for_each(|&(op, name)| {
        for depth in [1, p.depth] {
            let f = target.phase(op, depth as usize, p.ms)?;
            let ops_per_s = f.ops.saturating_mul(1_000_000_000) / f.ns.max(1);
            pr_info!(
                "result op={} qd={} bytes={} ops={} ns={} ops_per_s={} lat_mean_ns={} lat_p50_ns={} lat_p99_ns={} wc_mean_ns={}\n",
                name,
                depth,
                IO_SIZE,
                f.ops,
                f.ns,
                ops_per_s,
                f.lat_mean_ns,
                f.lat_p50_ns,
                f.lat_p99_ns,
                f.wc_mean_ns
            );
            if depth == 1 && p.depth == 1 {
                break;
            }
        }
        Ok(())
    });
    cm.disconnect();
    cm.drain();
    result
}
