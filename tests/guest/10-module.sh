#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rswap.ko loads into the running kernel, follows RDMA devices through its IB client
# (devices present at load, added after it, removed while loaded, removed by unload),
# holds exactly one PD and one CQ per device, and releases them.
. "$RSWAP_TOP/tests/lib/guest.sh"
KO=$RSWAP_TOP/rswap.ko
LOOPS=${RSWAP_LOAD_LOOPS:-20}

# Kernel PDs / CQs owned by rswap, as the RDMA core accounts them.
res_count() { rdma resource show "$1" 2>/dev/null | grep -c 'comm \[rswap\]'; }
# Wait for a dmesg line (fixed string) after the last mark.
dmesg_has() {
	local i
	for i in $(seq 50); do
		dmesg | awk '/rswap-test-mark:/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' \
			| grep -qF "$1" && return 0
		sleep 0.1
	done
	echo "dmesg has no line with: $1"; return 1
}
loaded() { grep -q '^rswap ' /proc/modules; }

ktap_plan 12
if [ ! -f "$KO" ]; then
	for i in $(seq 12); do ktap_skip "module test $i" "rswap.ko not built"; done
	ktap_finish
fi
modprobe -a ib_core $RDMA_MODULE
rdma link delete $RDMA_DEV 2>/dev/null

dmesg_mark "load without devices"
ktap_check "module: insmod with no RDMA device" rswap_load
ktap_check "module: vermagic matches the running kernel" \
	bash -c "[ \"\$(modinfo -F vermagic $KO | cut -d' ' -f1)\" = \"\$(uname -r)\" ]"

dmesg_mark "add $RDMA_DEV"
rdma_up >/dev/null
ktap_check "client: rdma link add is seen by the add callback" dmesg_has "$RDMA_DEV: device added, PD allocated"
# CQs come from the device's CQ pool when a queue connects, not at add.
ktap_check "client: one PD held on $RDMA_DEV" \
	bash -c "[ \$(rdma resource show pd | grep -c 'comm \[rswap\]') = 1 ]"

dmesg_mark "delete $RDMA_DEV"
rdma link delete $RDMA_DEV
ktap_check "client: rdma link delete is seen by the remove callback" dmesg_has "$RDMA_DEV: device removed, its queues and PD released"
ktap_check "module: rmmod with no device" rmmod rswap

dmesg_mark "load with $RDMA_DEV present"
rdma_up >/dev/null
rswap_load
ktap_check "client: a device present before insmod is seen at load" dmesg_has "$RDMA_DEV: device added, PD allocated"
dmesg_mark "unload with $RDMA_DEV present"
rmmod rswap
ktap_check "client: rmmod removes the device from the client" dmesg_has "$RDMA_DEV: device removed, its queues and PD released"
ktap_check "client: no PD or CQ left after unload" \
	bash -c "[ \$(rdma resource show pd | grep -c 'comm \[rswap\]') = 0 ] && [ \$(rdma resource show cq | grep -c 'comm \[rswap\]') = 0 ]"

dmesg_mark "load/unload loop"
slab_before=$(awk '/^Slab:/ { print $2 }' /proc/meminfo)
fails=0
for i in $(seq "$LOOPS"); do
	rswap_load || fails=$((fails + 1))
	[ "$(res_count pd)" = 1 ] || fails=$((fails + 1))
	rmmod rswap || fails=$((fails + 1))
done
slab_after=$(awk '/^Slab:/ { print $2 }' /proc/meminfo)
ktap_diag "slab before/after $LOOPS load/unload cycles: ${slab_before} kB / ${slab_after} kB"
if [ "$fails" = 0 ] && [ "$(res_count pd)" = 0 ] && [ "$(res_count cq)" = 0 ] && ! loaded; then
	ktap_pass "module: $LOOPS load/unload cycles with $RDMA_DEV present, each holding one PD, none left"
else
	ktap_fail "module: $LOOPS load/unload cycles with $RDMA_DEV present" "failures: $fails, pd left: $(res_count pd)"
fi
if ! ip link add dummy0 type dummy 2>/dev/null; then
	ktap_skip "module: a second device gets its own PD" "no dummy netdev in this kernel (CONFIG_DUMMY)"
else ip link del dummy0; ktap_check "module: a second device gets its own PD" bash -c "
	rswap_load && ip link add dummy0 type dummy 2>/dev/null; ip link set dummy0 up 2>/dev/null
	rdma link add rxe1 type rxe netdev dummy0 || exit 1
	n=\$(rdma resource show pd | grep -c 'comm \[rswap\]'); rdma link delete rxe1; rmmod rswap; ip link del dummy0
	[ \"\$n\" = 2 ] || { echo \"expected 2 PDs, saw \$n\"; exit 1; }"
fi
rdma_down
ktap_check "dmesg: no BUG/WARNING/Oops during the module tests" dmesg_clean_since_mark_all
ktap_finish
