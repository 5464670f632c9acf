// SPDX-License-Identifier: GPL-2.0

//! The connection to a memory server: the wire format, one rdma_cm connection per
//! [`link::Link`], a [`queue::Queue`] per hardware queue that keeps a link up and takes
//! I/O through the interface of [`io`], the [`session::Session`] that ties a client's
//! queues to the server's region, and its [`keepalive::KeepAlive`]; [`waited`] I/O for a
//! task that moves data outside any block request.
//!
//! No RDMA bindings here: everything goes through the safe wrappers in [`crate::ib`].

pub(crate) mod fault;
pub(crate) mod io;
pub(crate) mod keepalive;
pub(crate) mod link;
pub(crate) mod name;
pub(crate) mod queue;
pub(crate) mod remote;
pub(crate) mod session;
pub(crate) mod waited;
pub(crate) mod wire;
