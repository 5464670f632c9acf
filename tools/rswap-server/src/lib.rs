// SPDX-License-Identifier: GPL-2.0

//! rswap's userspace memory server (`rswap-server`) and its test client
//! (`rswap-testclient`). The `unsafe` code is in `rdma` (the rdma-core FFI) and
//! `memory` (mapping the regions); everything else is safe Rust. See `Documentation/memory-server.md`.

mod admission;
mod allowlist;
mod auth;
mod challenge;
mod client;
mod config;
mod crypto;
/// Property-based fuzzing of the parsers (proptest; `fuzz_*` tests).
#[cfg(test)]
mod fuzz;
mod ids;
mod keepalive;
mod log;
mod memory;
mod notify;
mod os;
mod pending;
mod policy;
mod ratelimit;
mod rdma;
mod server;
mod size;
mod status;
mod store;

/// The wire format, the very file the kernel module compiles.
#[allow(
    dead_code,
    reason = "shared with the kernel module; the server uses only part of it"
)]
#[path = "../../../src/transport/wire.rs"]
mod wire;

pub use client::main as client_main;
pub use server::main as server_main;
