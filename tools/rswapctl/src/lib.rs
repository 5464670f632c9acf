// SPDX-License-Identifier: GPL-2.0

//! `rswapctl`: adds, removes and lists rswap targets (remote memory over RDMA as swap
//! disks) through the module's configfs directory, and asks a memory server for its
//! status on its status socket. See `Documentation/rswapctl.md`.

pub mod cli;
pub mod conf;
pub mod keyring;
pub mod metrics;
pub mod monitor;
pub mod parse;
pub mod server_status;
pub mod settings;
pub mod target;

#[cfg(test)]
mod tests;
