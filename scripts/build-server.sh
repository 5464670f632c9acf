#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build rswap-server, rswap-testclient and rswapctl (release, locked dependencies) and
# print the server binary's path. Idempotent: a second run only re-checks.
. "$(dirname "$0")/common.sh"

bash "$RSWAP_TOP/scripts/setup-host.sh"
command -v cargo >/dev/null || die "cargo not found (install a Rust toolchain)"
crate=$RSWAP_TOP/tools/rswap-server
# -j2: the build machines have two cores shared with other work.
cargo build --release --locked -j "${RSWAP_JOBS:-2}" --manifest-path "$crate/Cargo.toml" >&2 \
	|| die "cargo build of tools/rswap-server failed"
ctl=$RSWAP_TOP/tools/rswapctl
cargo build --release --locked -j "${RSWAP_JOBS:-2}" --manifest-path "$ctl/Cargo.toml" >&2 \
	|| die "cargo build of tools/rswapctl failed"
[ -x "$ctl/target/release/rswapctl" ] || die "no rswapctl under $ctl/target/release"
bin=$crate/target/release/rswap-server
[ -x "$bin" ] && [ -x "$crate/target/release/rswap-testclient" ] || die "no binaries under $crate/target/release"
echo "$bin"
