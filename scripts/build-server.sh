#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build rswap-server, rswap-testclient and rswapctl (release, locked dependencies) and
# print the server binary's path. Idempotent: a second run only re-checks.
. "$(dirname "$0")/common.sh"

bash "$RSWAP_TOP/scripts/setup-host.sh"
command -v cargo >/dev/null || die "cargo not found (install a Rust toolchain)"
crate=$RSWAP_TOP/tools/rswap-server
bin=$crate/target/release/rswap-server
next=$bin-upgrade-test
# tagged: the server built with RSWAP_BUILD_TAG=upgrade-test (`rswap-server -V`:
# 0.1.0+upgrade-test), copied to $next, for the package-style upgrade test
# (tests/guest/48-restart-swap.sh). A change of the tag rebuilds the crate: in a fresh
# tree the tagged build comes first, so that the server is built twice, not three times.
tagged() {
	RSWAP_BUILD_TAG=upgrade-test cargo build --release --locked -j "${RSWAP_JOBS:-2}" --bin rswap-server \
		--manifest-path "$crate/Cargo.toml" >&2 || die "cargo build of the tagged rswap-server failed"
	cp "$bin" "$next.tmp" && mv "$next.tmp" "$next"
}
fresh=
[ -e "$bin" ] || { tagged; fresh=1; }
# -j2: the build machines have two cores shared with other work.
cargo build --release --locked -j "${RSWAP_JOBS:-2}" --manifest-path "$crate/Cargo.toml" >&2 \
	|| die "cargo build of tools/rswap-server failed"
ctl=$RSWAP_TOP/tools/rswapctl
cargo build --release --locked -j "${RSWAP_JOBS:-2}" --manifest-path "$ctl/Cargo.toml" >&2 \
	|| die "cargo build of tools/rswapctl failed"
[ -x "$ctl/target/release/rswapctl" ] || die "no rswapctl under $ctl/target/release"
[ -x "$bin" ] && [ -x "$crate/target/release/rswap-testclient" ] || die "no binaries under $crate/target/release"
[ -z "$fresh" ] || touch "$next"
# The tagged build again when the server was rebuilt since (then the crate a third time).
if [ ! -x "$next" ] || [ "$bin" -nt "$next" ]; then
	tagged
	cargo build --release --locked -j "${RSWAP_JOBS:-2}" --bin rswap-server --manifest-path "$crate/Cargo.toml" >&2 \
		|| die "cargo build of tools/rswap-server failed"
	touch "$next"
fi
echo "$bin"
