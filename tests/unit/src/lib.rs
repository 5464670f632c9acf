// SPDX-License-Identifier: GPL-2.0

//! The kernel module's `core`-only modules, compiled for the host so their `#[cfg(test)]`
//! tests run under `cargo test`.

#![no_std]
#![allow(
    dead_code,
    reason = "the module uses these items; the tests use only some"
)]

#[cfg(test)]
extern crate std;

#[path = "../../../src/config_parse.rs"]
mod config_parse;
#[path = "../../../src/disk/ec_layout.rs"]
mod ec_layout;
#[path = "../../../src/blk/quorum.rs"]
mod quorum;
#[path = "../../../src/transport/remote.rs"]
mod remote;
#[path = "../../../src/transport/wire.rs"]
mod wire;

/// Property-based fuzzing of the parsers above (proptest; `fuzz_*` tests).
#[cfg(test)]
mod fuzz;

/// The configfs parser takes exactly the secrets the wire format allows.
#[test]
fn secret_limits_agree() {
    assert_eq!(config_parse::SECRET_MIN, wire::SECRET_MIN_LEN);
    assert_eq!(config_parse::SECRET_MAX, wire::SECRET_MAX_LEN);
}
