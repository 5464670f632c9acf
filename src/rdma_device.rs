// SPDX-License-Identifier: GPL-2.0

//! rswap's view of the RDMA devices in the machine.
//!
//! rswap registers an IB client. For every RDMA device it allocates a protection domain
//! and a completion queue (the resources the queues to a memory server will share), and
//! releases them when the device goes away.

use kernel::prelude::*;

use crate::{
    ib::{self, cq::PollContext, ClientCell, ClientDriver},
    registry,
};

/// How many completions the per-device CQ holds.
const DEVICE_CQ_ENTRIES: u32 = 128;

/// The IB client of rswap.
pub(crate) struct RswapClient;

static RSWAP_CLIENT: ClientCell<RswapClient> = ClientCell::new();

/// What rswap holds on one RDMA device.
///
/// Fields are dropped in declaration order: the CQ before the PD it was created beside.
#[expect(
    dead_code,
    reason = "held for their lifetime only until the queues to a memory server use them"
)]
pub(crate) struct RdmaDevice {
    cq: ib::Cq,
    pd: ib::Pd,
}

impl ClientDriver for RswapClient {
    type DeviceData = RdmaDevice;

    fn cell() -> &'static ClientCell<Self> {
        &RSWAP_CLIENT
    }

    fn add(&self, dev: &ib::Device) -> Result<KBox<RdmaDevice>> {
        let pd = ib::Pd::alloc(dev).inspect_err(|e| {
            pr_err!("{}: cannot allocate a PD: {:?}\n", dev.name(), e);
        })?;
        let cq =
            ib::Cq::alloc(dev, DEVICE_CQ_ENTRIES, 0, PollContext::Softirq).inspect_err(|e| {
                pr_err!("{}: cannot allocate a CQ: {:?}\n", dev.name(), e);
            })?;
        pr_info!(
            "{}: device added, PD allocated (local_dma_lkey {:#x}), CQ allocated ({} entries)\n",
            dev.name(),
            pd.local_dma_lkey(),
            cq.entries()
        );
        Ok(KBox::new(RdmaDevice { cq, pd }, GFP_KERNEL)?)
    }

    fn remove(&self, dev: &ib::Device, data: KBox<RdmaDevice>) {
        // rswap's client was registered after rdma_cm's, so this runs before rdma_cm's own
        // removal: tear down every queue on the device (flushing its I/O with errors)
        // while its cm_ids are still ours to destroy.
        let queues = registry::shut_down_device(dev);
        if queues > 0 {
            pr_warn!(
                "{}: device removed under {} queue(s): their I/O now fails\n",
                dev.name(),
                queues
            );
        }
        drop(data);
        pr_info!("{}: device removed, CQ and PD released\n", dev.name());
    }
}
