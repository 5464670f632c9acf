// SPDX-License-Identifier: GPL-2.0

//! rswap's IB client: which RDMA devices rswap can use.
//!
//! For every RDMA device the IB layer makes the per-device object ([`RdmaDevice`]: who
//! uses the device); a connection resolved to a device finds it through [`devices`],
//! which the module hands down to the targets it configures. When a
//! device goes away, the queues on it let go of it (and recover on another device, or
//! fail their I/O) before the removal completes.

use kernel::prelude::*;

use crate::ib::{ClientCell, ClientDriver, Device, Devices, RdmaDevice};

/// The IB client of rswap.
pub(crate) struct RswapClient;

static RSWAP_CLIENT: ClientCell<RswapClient> = ClientCell::new();

impl ClientDriver for RswapClient {
    fn cell() -> &'static ClientCell<Self> {
        &RSWAP_CLIENT
    }

    fn add(&self, dev: &RdmaDevice) -> Result {
        pr_info!("{}: device added\n", dev.name());
        Ok(())
    }

    fn remove(&self, dev: &Device, users: usize) {
        if users > 0 {
            pr_warn!(
                "{}: device removed under {} queue(s): their I/O now fails\n",
                dev.name(),
                users
            );
        }
        pr_info!("{}: device removed, its queues released\n", dev.name());
    }
}

/// rswap's device lookup (see [`Devices`]).
pub(crate) fn devices() -> &'static dyn Devices {
    &RSWAP_CLIENT
}
