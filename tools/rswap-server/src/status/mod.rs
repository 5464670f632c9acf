// SPDX-License-Identifier: GPL-2.0

//! The status socket (`--status-socket PATH`): the server's state for operators and
//! monitoring, over a Unix stream socket, served from the server's poll loop.
//!
//! - [`snapshot`]: what is reported (a copy of the server's state, and the event
//!   counters), no RDMA;
//! - [`request`]: the protocol, one request line (`status` or `metrics`), one answer;
//! - [`json`] and [`metrics`]: the answers, JSON and the Prometheus text format;
//! - [`socket`]: the socket file (mode 0600, stale file replaced, removed at exit);
//! - [`service`]: the connections, nonblocking, with deadlines and a cap.

pub(crate) mod json;
pub(crate) mod metrics;
pub(crate) mod request;
pub(crate) mod service;
pub(crate) mod snapshot;
pub(crate) mod socket;

pub(crate) use service::StatusService;
pub(crate) use snapshot::{ClientInfo, Counters, Pool, QueueInfo, Snapshot};
pub(crate) use socket::StatusSocket;
