// SPDX-License-Identifier: GPL-2.0

//! The blk-mq pieces rswap needs and the kernel's Rust blk-mq abstractions lack:
//! per-request driver data preallocated per tag, sector/operation/segment accessors,
//! completion with an error status, a timeout callback, per-hardware-queue dispatch, and a
//! disk whose `block_device_operations.owner` pins the module while the disk is open,
//! disk numbers, and a no-I/O allocation scope for the work that lets the disk's I/O finish.

pub(crate) mod bindings;
pub(crate) mod disk;
pub(crate) mod disk_index;
pub(crate) mod noio;
pub(crate) mod request;
pub(crate) mod tag_set;

pub(crate) use disk::{Disk, DiskParams};
pub(crate) use disk_index::DiskIndex;
pub(crate) use noio::NoIoScope;
pub(crate) use request::{Op, OwnedRequest, Status, MAX_SEGMENTS};
pub(crate) use tag_set::{Operations, TimeoutAction};
