// SPDX-License-Identifier: GPL-2.0

//! rswap: remote memory over RDMA as a swap block device.
//!
//! The crate root: the module declaration and the registrations it holds. See
//! `Documentation/` for the design; the layers are
//! - [`ib`]: safe wrappers over RDMA verbs and rdma_cm (the only code with RDMA FFI),
//!   with one object per RDMA device;
//! - [`blk`]: the blk-mq pieces the kernel crate lacks (nothing of RDMA);
//! - [`transport`]: the wire format, links, queues and sessions to a memory server, and
//!   the I/O interface a device issues through (no FFI);
//! - [`disk`]: the block device over a session: block requests to transport I/O (nothing
//!   of RDMA);
//! - [`configfs`]: configuration attributes, and [`rdma_client`]: the IB client;
//! - [`kernel_ext`]: kernel facilities both sides use (scatterlist table, workqueue).

mod blk;
mod config_parse;
mod configfs;
mod disk;
mod ib;
mod kernel_ext;
mod rdma_client;
mod settings;
mod transport;

use kernel::prelude::*;

/// The module's version: the packages' (`version` of tools/rswap-server/Cargo.toml, which
/// `make check` compares), as `modinfo -F version rswap` and /sys/module/rswap/version show
/// it. A `.modinfo` entry, as C's `MODULE_VERSION` makes one; `module!` has no field for it.
#[link_section = ".modinfo"]
#[used]
static MODULE_VERSION: [u8; 14] = *b"version=0.1.0\0";

#[cfg(not(rswap_fault_injection))]
module! {
    type: RswapModule,
    name: "rswap",
    authors: ["rswap developers"],
    description: "Remote memory over RDMA as a swap block device",
    license: "GPL",
    params: {
        crypt_workqueue: bool {
            default: false,
            description: "Encrypted targets enabled from now on open (decrypt and verify) \
                          pages in a workqueue instead of the RDMA completion",
        },
    },
}

// Built for tests with `make RSWAP_FAULT_INJECTION=y` (Documentation/testing.md): the
// same, with the fault-injection parameters.
#[cfg(rswap_fault_injection)]
module! {
    type: RswapModule,
    name: "rswap",
    authors: ["rswap developers"],
    description: "Remote memory over RDMA as a swap block device (with fault injection)",
    license: "GPL",
    params: {
        crypt_workqueue: bool {
            default: false,
            description: "Encrypted targets enabled from now on open (decrypt and verify) \
                          pages in a workqueue instead of the RDMA completion",
        },
        fault_lose_flushes: u32 {
            default: 0,
            description: "For tests: drop this many flushed work completions, as an RDMA \
                          device that loses them would (rswap then completes them itself \
                          when their queue pair is destroyed)",
        },
        fault_fail_posts: u32 {
            default: 0,
            description: "For tests: fail this many RDMA READ or WRITE posts with ENOTCONN, \
                          as a device does on a queue pair it put in the error state when \
                          the server disconnected",
        },
        fault_fail_reconnect_allocs: u32 {
            default: 0,
            description: "For tests: fail this many allocating steps of queue recoveries \
                          with ENOMEM, each step in turn, as when the memory reserves are gone",
        },
        fault_max_sge: u32 {
            default: 0,
            description: "For tests: take every RDMA device to carry at most this many \
                          SGEs in a send work request, as soft-iWARP's 6 (0: what it says)",
        },
        fault_busy_waited_ios: u32 {
            default: 0,
            description: "For tests: refuse this many of a rebuild's RDMA READs and WRITEs \
                          as busy, as a queue full of the disk's own I/O does",
        },
        fault_busy_probes: u32 {
            default: 0,
            description: "For tests: refuse this many keep-alive probes as busy, as a QP \
                          does while another poster registers its fence region",
        },
    },
}

/// The loaded module. Dropping it (at `rmmod`) unregisters the IB client, which removes
/// every device first.
///
/// Fields are dropped in declaration order: configfs first (no target directory can exist
/// then, since each pins the module), then the IB client.
#[pin_data(PinnedDrop)]
struct RswapModule {
    #[pin]
    configfs: kernel_ext::DependableSubsystem<configfs::Root>,
    #[pin]
    client: ib::Registration<rdma_client::RswapClient>,
}

impl kernel::InPlaceModule for RswapModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        pr_info!("loading\n");
        blk::DiskIndex::init();
        #[cfg(rswap_fault_injection)]
        ib::cqe::lose_flushes(module_parameters::fault_lose_flushes.value());
        #[cfg(rswap_fault_injection)]
        ib::qp::fail_posts(module_parameters::fault_fail_posts.value());
        #[cfg(rswap_fault_injection)]
        ib::cap_send_sge(module_parameters::fault_max_sge.value());
        #[cfg(rswap_fault_injection)]
        transport::fault::fail_reconnect_allocs(
            module_parameters::fault_fail_reconnect_allocs.value(),
        );
        #[cfg(rswap_fault_injection)]
        transport::fault::busy_waited_ios(module_parameters::fault_busy_waited_ios.value());
        #[cfg(rswap_fault_injection)]
        transport::fault::busy_probes(module_parameters::fault_busy_probes.value());
        try_pin_init!(Self {
            client <- ib::Registration::new(c"rswap", rdma_client::RswapClient),
            configfs <- configfs::subsystem(settings::ModuleContext {
                devices: rdma_client::devices(),
                crypt_workqueue: module_parameters::crypt_workqueue.value(),
            }),
        })
    }
}

#[pinned_drop]
impl PinnedDrop for RswapModule {
    fn drop(self: Pin<&mut Self>) {
        pr_info!("unloading\n");
    }
}
