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
ctl=$RSWAP_TOP/tools/rswapctl
# -j2: the build machines have two cores shared with other work.
jobs=${RSWAP_JOBS:-2}
# tagged: the server built with RSWAP_BUILD_TAG=upgrade-test (`rswap-server -V`:
# 0.1.0+upgrade-test), copied to $next, for the package-style upgrade test
# (tests/guest/48-restart-swap.sh). A change of the tag rebuilds the crate: in a fresh
# tree the tagged build comes first, so that the server is built twice, not three times.
tagged() {
	RSWAP_BUILD_TAG=upgrade-test cargo build --release --locked -j "$jobs" --bin rswap-server \
		--manifest-path "$crate/Cargo.toml" >&2 || die "cargo build of the tagged rswap-server failed"
	cp "$bin" "$next.tmp" && mv "$next.tmp" "$next"
}
# server: the server's builds, one after the other (one target folder).
server() {
	local fresh=
	[ -e "$bin" ] || { tagged; fresh=1; }
	cargo build --release --locked -j "$jobs" --manifest-path "$crate/Cargo.toml" >&2 \
		|| die "cargo build of tools/rswap-server failed"
	[ -x "$bin" ] && [ -x "$crate/target/release/rswap-testclient" ] || die "no binaries under $crate/target/release"
	[ -z "$fresh" ] || touch "$next"
	# The tagged build again when the server was rebuilt since (then the crate a third time).
	if [ ! -x "$next" ] || [ "$bin" -nt "$next" ]; then
		tagged
		cargo build --release --locked -j "$jobs" --bin rswap-server --manifest-path "$crate/Cargo.toml" >&2 \
			|| die "cargo build of tools/rswap-server failed"
		touch "$next"
	fi
}
# rswapctl (a crate and target folder of its own) beside the server's builds, which are
# the longer chain: with half the jobs, so that it fills the CPU time they leave (a build
# script, a link: one job) more than it takes from theirs. Its output follows theirs.
ctl_jobs=$jobs
[[ ! $jobs =~ ^[1-9][0-9]*$ ]] || ctl_jobs=$(( (jobs + 1) / 2 ))
ctl_log=$(mktemp) ctl_pid=
# ctl_done: waits for rswapctl's build and shows its output; fails if the build did.
ctl_done() {
	local rc=0
	if [ -n "$ctl_pid" ]; then
		wait "$ctl_pid" || rc=$?
		ctl_pid=
		cat "$ctl_log" >&2
	fi
	rm -f "$ctl_log"
	return $rc
}
# A failed server build still waits for rswapctl's (and says if it failed too); an
# interrupted one stops it.
trap 'ctl_done || die "cargo build of tools/rswapctl failed"' EXIT
trap '[ -z "$ctl_pid" ] || kill "$ctl_pid" 2>/dev/null || true; ctl_pid=; exit 130' INT TERM HUP
cargo build --release --locked -j "$ctl_jobs" --manifest-path "$ctl/Cargo.toml" >"$ctl_log" 2>&1 &
ctl_pid=$!
server
ctl_done || die "cargo build of tools/rswapctl failed"
[ -x "$ctl/target/release/rswapctl" ] || die "no rswapctl under $ctl/target/release"
echo "$bin"
