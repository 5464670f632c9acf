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

NAMES=(
	"the packaged rswap-server and rswapctl run here and report the packaged version"
	"the DKMS-built rswap.ko has this kernel's vermagic and loads (configfs appears)"
	"soft-RoCE rxe0 comes up on eth0"
	"the packaged rswap-server listens"
	"the packaged rswapctl adds a 32 MiB target: connected, /dev/rswap0 of 32 MiB"
	"8 MiB of random data written to /dev/rswap0 reads back identical"
	"rswapctl removes the target and the module unloads"
	"dmesg: no BUG/WARNING/Oops while the DKMS-built module ran"
)
ktap_plan ${#NAMES[@]}
SPID=
cleanup() {
	{ [ -d $T ] && echo 0 > $T/enable; } 2>/dev/null
	rmdir $T 2>/dev/null
	[ -z "$SPID" ] || kill -KILL "$SPID" 2>/dev/null
	true
}
trap cleanup EXIT
dmesg_mark "deb-load"

# 1. the binaries from the package
want=$(cat "$RSWAP_OUT/tools-version" 2>/dev/null)
sv=$("$SRV" --version 2>&1) cv=$("$CTL" --version 2>&1)
if [ -n "$want" ] && [[ $sv == "rswap-server $want "* ]] && [ "$cv" = "rswapctl $want" ]; then
	ktap_pass "$(ktap_name)"
else
	ktap_fail "$(ktap_name)" "want $want; rswap-server: $sv; rswapctl: $cv"
fi

# 2. the module
vm=$(modinfo -F vermagic "$KO" 2>&1)
if [[ $vm == "$(uname -r) "* ]] && o=$(modprobe -a ib_core rdma_cm 2>&1 && insmod "$KO" 2>&1) && [ -d $CFG ]; then
	ktap_pass "$(ktap_name)"
	ktap_diag "vermagic: $vm"
else
	ktap_fail "$(ktap_name)" "vermagic '$vm', kernel $(uname -r); ${o:-}; $(dmesg | tail -5)"
	ktap_skip_rest "rswap.ko not loaded"
fi

# 3., 4. the network and the packaged server
if o=$(rdma_up 2>&1); then ktap_pass "$(ktap_name)"; else ktap_fail "$(ktap_name)" "$o"; ktap_skip_rest "no $RDMA_DEV"; fi
if o=$(server_start "$OUT/server.log" --listen "$IP:$PORT" --size 64M --insecure 2>&1); then
	ktap_pass "$(ktap_name)"
else
	ktap_fail "$(ktap_name)" "$o"; ktap_skip_rest "no server"
fi

# 5. a target through the packaged rswapctl
if "$CTL" add deb0 --server "$IP:$PORT" --size 32M --queues 1 --client-id 0x7001 >"$OUT/add.out" 2>&1 \
	&& [[ $(cat $T/state) == connected* ]] && [ "$(cat $T/device)" = rswap0 ] \
	&& [ "$(blockdev --getsize64 /dev/rswap0)" = $((32 << 20)) ]; then
	ktap_pass "$(ktap_name)"
	ktap_diag "$("$CTL" list 2>&1 | tail -1)"
else
	ktap_fail "$(ktap_name)" "$(cat "$OUT/add.out"; cat $T/state $T/last_error 2>&1)"
	ktap_skip_rest "no target"
fi

# 6. data through it
head -c 8M /dev/urandom > /tmp/rand8
if dd if=/tmp/rand8 of=/dev/rswap0 bs=1M oflag=direct status=none \
	&& dd if=/dev/rswap0 of=/tmp/back8 bs=1M count=8 iflag=direct status=none && cmp /tmp/rand8 /tmp/back8; then
	ktap_pass "$(ktap_name)"
else
	ktap_fail "$(ktap_name)" "$(cmp /tmp/rand8 /tmp/back8 2>&1)"
fi

# 7. teardown
if "$CTL" remove deb0 >"$OUT/remove.out" 2>&1 && [ ! -d $T ] && rmmod rswap && ! grep -q '^rswap ' /proc/modules; then
	ktap_pass "$(ktap_name)"
else
	ktap_fail "$(ktap_name)" "$(cat "$OUT/remove.out"; ls $CFG 2>&1; grep '^rswap ' /proc/modules)"
fi

# 8.
if o=$(dmesg_clean); then ktap_pass "$(ktap_name)"; else ktap_fail "$(ktap_name)" "$o"; fi
ktap_finish
