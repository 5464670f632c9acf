#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs in the stock guest for tests/host/70-deb.sh (not part of the main guest boot): the
# packages' output works on the kernel it was built for. $RSWAP_OUT holds the rswap.ko
# that DKMS built in a clean trixie root, the rswap-tools package unpacked under pkg/,
# and the version the tools must report in tools-version.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_OUT/rswap.ko
SRV=$RSWAP_OUT/pkg/usr/sbin/rswap-server
CTL=$RSWAP_OUT/pkg/usr/sbin/rswapctl
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORT=7471
CFG=/sys/kernel/config/rswap
T=$CFG/deb0
OUT=$RSWAP_OUT/guest
mkdir -p "$OUT"

SPID=
cleanup() {
	{ [ -d $T ] && echo 0 > $T/enable; } 2>/dev/null
	rmdir $T 2>/dev/null
	[ -z "$SPID" ] || kill -KILL "$SPID" 2>/dev/null
	true
}
trap cleanup EXIT
setup() {
	dmesg_mark "deb-load"
}

# the binaries from the package
t_versions() {
	want=$(cat "$RSWAP_OUT/tools-version" 2>/dev/null)
	sv=$("$SRV" --version 2>&1) cv=$("$CTL" --version 2>&1)
	if [ -n "$want" ] && [[ $sv == "rswap-server $want "* ]] && [ "$cv" = "rswapctl $want" ]; then
		ktap_pass
	else
		ktap_fail "want $want; rswap-server: $sv; rswapctl: $cv"
	fi
}
ktap_test "the packaged rswap-server and rswapctl run here and report the packaged version" t_versions

# the module
t_module() {
	vm=$(modinfo -F vermagic "$KO" 2>&1)
	if [[ $vm == "$(uname -r) "* ]] && o=$(modprobe -a ib_core rdma_cm 2>&1 && insmod "$KO" 2>&1) && [ -d $CFG ]; then
		ktap_pass
		ktap_diag "vermagic: $vm"
	else
		ktap_fail "vermagic '$vm', kernel $(uname -r); ${o:-}; $(dmesg | tail -5)"
		ktap_skip_rest "rswap.ko not loaded"
	fi
}
ktap_test "the DKMS-built rswap.ko has this kernel's vermagic and loads (configfs appears)" t_module

# the network
t_rdma() {
	if o=$(rdma_up 2>&1); then ktap_pass; else ktap_fail "$o"; ktap_skip_rest "no $RDMA_DEV"; fi
}
ktap_test "soft-RoCE rxe0 comes up on eth0" t_rdma

# the packaged server
t_server() {
	if o=$(server_start "$OUT/server.log" --listen "$IP:$PORT" --size 64M --insecure 2>&1); then
		ktap_pass
	else
		ktap_fail "$o"; ktap_skip_rest "no server"
	fi
}
ktap_test "the packaged rswap-server listens" t_server

# a target through the packaged rswapctl
t_add() {
	if "$CTL" add deb0 --server "$IP:$PORT" --size 32M --queues 1 --client-id 0x7001 >"$OUT/add.out" 2>&1 \
		&& [[ $(cat $T/state) == connected* ]] && [ "$(cat $T/device)" = rswap0 ] \
		&& [ "$(blockdev --getsize64 /dev/rswap0)" = $((32 << 20)) ]; then
		ktap_pass
		ktap_diag "$("$CTL" list 2>&1 | tail -1)"
	else
		ktap_fail "$(cat "$OUT/add.out"; cat $T/state $T/last_error 2>&1)"
		ktap_skip_rest "no target"
	fi
}
ktap_test "the packaged rswapctl adds a 32 MiB target: connected, /dev/rswap0 of 32 MiB" t_add

# data through it
t_data() {
	head -c 8M /dev/urandom > /tmp/rand8
	if dd if=/tmp/rand8 of=/dev/rswap0 bs=1M oflag=direct status=none \
		&& dd if=/dev/rswap0 of=/tmp/back8 bs=1M count=8 iflag=direct status=none && cmp /tmp/rand8 /tmp/back8; then
		ktap_pass
	else
		ktap_fail "$(cmp /tmp/rand8 /tmp/back8 2>&1)"
	fi
}
ktap_test "8 MiB of random data written to /dev/rswap0 reads back identical" t_data

# teardown
t_teardown() {
	if "$CTL" remove deb0 >"$OUT/remove.out" 2>&1 && [ ! -d $T ] && rmmod rswap && ! grep -q '^rswap ' /proc/modules; then
		ktap_pass
	else
		ktap_fail "$(cat "$OUT/remove.out"; ls $CFG 2>&1; grep '^rswap ' /proc/modules)"
	fi
}
ktap_test "rswapctl removes the target and the module unloads" t_teardown

t_dmesg() {
	if o=$(dmesg_clean); then ktap_pass; else ktap_fail "$o"; fi
}
ktap_test "dmesg: no BUG/WARNING/Oops while the DKMS-built module ran" t_dmesg

ktap_run setup
