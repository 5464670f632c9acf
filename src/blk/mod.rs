// SPDX-License-Identifier: GPL-2.0

//! The blk-mq pieces rswap needs and the kernel's Rust blk-mq abstractions lack:
//! per-request driver data preallocated per tag and dropped with it, sector/operation/
//! segment accessors, completion with an error status, a timeout callback, per-hardware-
//! queue driver data and stopping a hardware queue, a disk whose
//! `block_device_operations.owner` pins the module while the disk is open and that counts
//! its openers (so that it is never deleted from under one), and disk numbers.
//!
//! Nothing here knows about RDMA: a driver plugs in through [`Operations`].

mod bindings;
mod disk;
mod disk_index;
mod events;
mod fanout;
mod hw_ctx;
mod openers;
mod operations;
mod quorum;
mod request;
mod tag_set;

pub(crate) use disk::{Disk, DiskParams};
pub(crate) use disk_index::DiskIndex;
pub(crate) use events::DiskEvents;
pub(crate) use fanout::{FanOut, PartsBack, Released, RequestPart, SettledRequest, Settler};
pub(crate) use hw_ctx::HwCtxSlot;
pub(crate) use operations::{Operations, Request, TimeoutAction};
pub(crate) use quorum::PartMask;
pub(crate) use request::{Filled, Op, RqPages, Sent, Status, TimedOutRequest};
