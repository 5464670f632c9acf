// SPDX-License-Identifier: GPL-2.0

//! The RDMA layer: safe wrappers over the kernel's RDMA verbs and rdma_cm.
//!
//! This is the only part of rswap that touches the generated RDMA bindings. Everything
//! above it (the transport, the block device) is safe Rust.
//!
//! - [`client`]: the IB client, one [`RdmaDevice`] (its users) per device;
//! - [`cm`]: rdma_cm ids, which own their [`Qp`] (and its CQ);
//! - [`cqe`]: work completions routed back to the object the work request owned;
//! - [`dma`]: DMA mappings of small buffers and of block requests' scatterlists;
//! - [`mr`]: memory regions for fast registration (iWARP READ sinks), owned by a [`Qp`];
//! - [`oneshot`]: a small buffer for exactly one work request;
//! - [`pd`]: protection domains, one per [`Qp`].

mod bindings;
pub(crate) mod client;
pub(crate) mod cm;
mod cq;
pub(crate) mod cqe;
mod device;
pub(crate) mod dma;
mod mr;
pub(crate) mod oneshot;
pub(crate) mod pd;
pub(crate) mod qp;
mod rdma_device;

pub(crate) use client::{ClientCell, ClientDriver, Devices, Registration};
#[cfg(rswap_fault_injection)]
pub(crate) use device::cap_send_sge;
pub(crate) use device::Device;
pub(crate) use qp::Qp;
pub(crate) use rdma_device::{DeviceUser, RdmaDevice};
