// SPDX-License-Identifier: GPL-2.0

//! rswap_rdma_rw: the shortest example of rswap's safe RDMA layer.
//!
//! On load it registers an IB client (which makes the per-device objects), connects to an
//! `rswap-server` with rdma_cm, receives the region descriptor, RDMA-WRITEs one buffer
//! into the remote region, RDMA-READs it back, compares, tears everything down and
//! reports. Loading fails if any step does.
//!
//! ```text
//! insmod rswap_rdma_rw.ko addr=0xc0000201 port=7471    # 192.0.2.1:7471
//! ```

#[allow(
    dead_code,
    unused_imports,
    reason = "the sample uses only part of the layer"
)]
#[path = "../../src/ib/mod.rs"]
mod ib;
#[allow(
    dead_code,
    unused_imports,
    reason = "the RDMA layer needs the scatterlist table; the sample maps none"
)]
#[path = "../../src/kernel_ext/mod.rs"]
mod kernel_ext;
#[allow(dead_code, reason = "the sample uses only part of the wire format")]
#[path = "../../src/transport/wire.rs"]
mod wire;

use core::sync::atomic::{AtomicU32, Ordering};
use ib::{
    cm::{CmEvent, CmHandler, CmId, ConnectParams},
    dma::{Direction, DmaBuf},
    oneshot::{OneShot, OneShotHandler},
    qp::{QpCaps, RdmaOp},
    ClientCell, ClientDriver, Device, RdmaDevice, Registration,
};
use kernel::{
    prelude::*,
    str::CString,
    sync::Arc,
    time::{delay::fsleep, Delta},
};
use wire::{Auth, ConnectRequest, RegionDescriptor};

module! {
    type: RdmaRw,
    name: "rswap_rdma_rw",
    authors: ["rswap developers"],
    description: "rswap sample: RDMA WRITE and READ one buffer through rswap's safe RDMA layer",
    license: "GPL",
    params: {
        addr: u32 {
            default: 0xc000_0201,
            description: "Server IPv4 address as a number (0xc0000201 is 192.0.2.1)",
        },
        port: u32 {
            default: 7471,
            description: "Server port",
        },
    },
}

/// Completion tags of the three one-shot operations.
const RECV: u32 = 0;
const WRITE: u32 = 1;
const READ: u32 = 2;

/// What the connection manager and the completions reported, as bit flags.
const ADDR: u32 = 1 << 0;
const ROUTE: u32 = 1 << 1;
const ESTABLISHED: u32 = 1 << 2;
const FAILED: u32 = 1 << 3;
const DONE: u32 = 1 << 4; // DONE << tag: that work request succeeded

/// Events of the one connection (atomics: the CM's workqueue and softirq write them).
struct Events {
    flags: AtomicU32,
    received: [AtomicU32; DmaBuf::SIZE / 4],
}

impl CmHandler for Events {
    fn event(&self, ev: CmEvent<'_>) {
        let bit = match ev {
            CmEvent::AddrResolved => ADDR,
            CmEvent::RouteResolved => ROUTE,
            CmEvent::Established { .. } => ESTABLISHED,
            CmEvent::Rejected { .. } | CmEvent::Failed { .. } | CmEvent::DeviceRemoval => FAILED,
            CmEvent::Disconnected | CmEvent::Other => 0,
        };
        self.flags.fetch_or(bit, Ordering::AcqRel);
    }
}

impl OneShotHandler for Events {
    fn done(&self, tag: u32, data: Option<&[u8]>) {
        let Some(data) = data else {
            self.flags.fetch_or(FAILED, Ordering::AcqRel);
            return;
        };
        if tag != WRITE {
            for (word, chunk) in self.received.iter().zip(data.chunks_exact(4)) {
                let b = [chunk[0], chunk[1], chunk[2], chunk[3]];
                word.store(u32::from_le_bytes(b), Ordering::Relaxed);
            }
        }
        self.flags.fetch_or(DONE << tag, Ordering::AcqRel);
    }
}

impl Events {
    /// Waits up to five seconds for `bit`.
    fn wait(&self, bit: u32, what: &str) -> Result {
        for _ in 0..500 {
            let f = self.flags.load(Ordering::Acquire);
            if f & bit != 0 {
                return Ok(());
            }
            if f & FAILED != 0 {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        pr_err!("{} failed or timed out\n", what);
        Err(EIO)
    }

    fn received(&self) -> [u8; DmaBuf::SIZE] {
        let mut out = [0u8; DmaBuf::SIZE];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.received.iter()) {
            chunk.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        out
    }
}

/// The sample's IB client: it takes every device (the layer makes its object).
struct SampleClient;

static SAMPLE_CLIENT: ClientCell<SampleClient> = ClientCell::new();

impl ClientDriver for SampleClient {
    fn cell() -> &'static ClientCell<Self> {
        &SAMPLE_CLIENT
    }

    fn add(&self, _dev: &RdmaDevice) -> Result {
        Ok(())
    }

    fn remove(&self, _dev: &Device, _users: usize) {}
}

/// The loaded sample (nothing stays connected or registered).
struct RdmaRw;

impl kernel::Module for RdmaRw {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let ip = module_parameters::addr.value();
        let port = u16::try_from(module_parameters::port.value()).map_err(|_| EINVAL)?;
        let client = KBox::pin_init(
            Registration::new(c"rswap_rdma_rw", SampleClient),
            GFP_KERNEL,
        )?;
        round_trip(&client, ip, port)?;
        Ok(Self)
    }
}

/// Connect, receive the descriptor, write, read back, compare. Every object is dropped
/// in reverse order of creation on return: the QP (with its CQ), the device's object,
/// then the cm_id.
fn round_trip(client: &Registration<SampleClient>, ip: u32, port: u16) -> Result {
    let ev = Arc::new(
        Events {
            flags: AtomicU32::new(0),
            received: [const { AtomicU32::new(0) }; DmaBuf::SIZE / 4],
        },
        GFP_KERNEL,
    )?;
    let mut cm = CmId::new(ev.clone())?;
    let text = CString::try_from_fmt(fmt!(
        "{}.{}.{}.{}",
        ip >> 24,
        (ip >> 16) & 0xff,
        (ip >> 8) & 0xff,
        ip & 0xff
    ))?;
    let server = kernel_ext::SockAddr::parse(text.to_str()?).map_err(|_| EINVAL)?;
    cm.resolve_addr(None, &server.with_port(port), 5000)?;
    ev.wait(ADDR, "address resolution")?;
    cm.resolve_route(5000)?;
    ev.wait(ROUTE, "route resolution")?;
    let dev = cm.device().and_then(|d| client.device(d)).ok_or(ENODEV)?;
    let caps = QpCaps {
        send_wr: 2,
        recv_wr: 1,
        send_sge: 1,
        // The one READ, into a buffer of at most two pages.
        read_slots: 1,
        read_pages: 2,
        polled: false,
    };
    cm.create_qp(&dev, &caps, 0)?;
    let qp = cm.qp().ok_or(EINVAL)?;

    // The server sends the region descriptor right after the connection is up, so the
    // RECV for it is posted first.
    qp.post_recv(OneShot::new(
        qp.pd(),
        Direction::FromDevice,
        &[],
        RECV,
        ev.clone(),
    )?)
    .map_err(|(e, _)| e)?;
    let mut hello = [0u8; ConnectRequest::SIZE];
    ConnectRequest {
        client_id: 0x5a3,
        queue_index: 0,
        queue_count: 1,
        requested_size: 1 << 20,
        // The descriptor comes in a SEND: this baseline runs over soft-RoCE.
        reply_descriptor: false,
        // The shortest path: no secret, so the server must run with `--insecure`.
        auth: Auth::None { instance: 1 },
    }
    .encode(&mut hello);
    cm.connect(&ConnectParams {
        private_data: &hello,
        initiator_depth: 1,
    })?;
    ev.wait(ESTABLISHED, "connect")?;
    ev.wait(DONE << RECV, "receiving the region descriptor")?;
    let region = RegionDescriptor::decode(&ev.received()).map_err(|_| EPROTO)?;
    pr_info!(
        "connected to {}.{}.{}.{}:{} on {}: region {} of {} bytes, rkey {:#x}\n",
        ip >> 24,
        (ip >> 16) & 0xff,
        (ip >> 8) & 0xff,
        ip & 0xff,
        port,
        dev.name(),
        region.region_id,
        region.length,
        region.rkey
    );

    let mut pattern = [0u8; DmaBuf::SIZE];
    for (i, b) in pattern.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37).wrapping_add(11);
    }
    let write = OneShot::new(qp.pd(), Direction::ToDevice, &pattern, WRITE, ev.clone())?;
    qp.post_write(write, region.remote_addr, region.rkey)
        .map_err(|(e, _)| e)?;
    ev.wait(DONE << WRITE, "RDMA WRITE")?;
    let read = OneShot::new(qp.pd(), Direction::FromDevice, &[], READ, ev.clone())?;
    qp.post_rdma(read, RdmaOp::Read, region.remote_addr, region.rkey)
        .map_err(|(e, _)| e)?;
    ev.wait(DONE << READ, "RDMA READ")?;

    if ev.received() != pattern {
        pr_err!("the buffer read back differs from the one written\n");
        return Err(EIO);
    }
    pr_info!(
        "wrote {} bytes with RDMA WRITE and read them back with RDMA READ: identical\n",
        DmaBuf::SIZE
    );
    cm.disconnect();
    cm.drain();
    Ok(())
}
