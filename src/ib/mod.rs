// SPDX-License-Identifier: GPL-2.0

//! The RDMA layer: safe wrappers over the kernel's RDMA verbs and rdma_cm.
//!
//! This is the only part of rswap that touches the generated RDMA bindings. Everything
//! above it (the transport, the block device) is safe Rust.

pub(crate) mod bindings;
pub(crate) mod client;
pub(crate) mod cm;
pub(crate) mod cq;
pub(crate) mod cqe;
pub(crate) mod device;
pub(crate) mod dma;
pub(crate) mod oneshot;
pub(crate) mod pd;
pub(crate) mod qp;

pub(crate) use client::{ClientCell, ClientDriver, Registration};
pub(crate) use cq::Cq;
pub(crate) use device::Device;
pub(crate) use pd::Pd;
pub(crate) use qp::Qp;
