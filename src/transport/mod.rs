// SPDX-License-Identifier: GPL-2.0

//! The connection to a memory server: the wire format, one RDMA queue per connection,
//! and the session that ties a client's queues to the server's region.
//!
//! No RDMA bindings here: everything goes through the safe wrappers in [`crate::ib`].

pub(crate) mod queue;
pub(crate) mod remote;
pub(crate) mod session;
pub(crate) mod wire;
