// SPDX-License-Identifier: GPL-2.0

//! rswap: remote memory over RDMA as a swap block device.
//!
//! The crate root: the module declaration and the registrations it holds. See
//! `Documentation/` for the design; the layers are
//! - [`ib`]: safe wrappers over RDMA verbs and rdma_cm (the only code with RDMA FFI),
//! - [`rdma_device`]: the IB client following RDMA devices.

mod ib;
mod rdma_device;

use kernel::prelude::*;

module! {
    type: RswapModule,
    name: "rswap",
    authors: ["rswap developers"],
    description: "Remote memory over RDMA as a swap block device",
    license: "GPL",
}

/// The loaded module. Dropping it (at `rmmod`) unregisters the IB client, which removes
/// every device first.
#[pin_data(PinnedDrop)]
struct RswapModule {
    #[pin]
    client: ib::Registration<rdma_device::RswapClient>,
}

impl kernel::InPlaceModule for RswapModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        pr_info!("loading\n");
        try_pin_init!(Self {
            client <- ib::Registration::new(c"rswap", rdma_device::RswapClient),
        })
    }
}

#[pinned_drop]
impl PinnedDrop for RswapModule {
    fn drop(self: Pin<&mut Self>) {
        pr_info!("unloading\n");
    }
}
