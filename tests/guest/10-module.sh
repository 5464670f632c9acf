#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rswap.ko loads into the running kernel, follows RDMA devices through its IB client
# (devices present at load, added after it, removed while loaded, removed by unload),
# and holds no PD or CQ of its own: those belong to each connection (30-datapath counts
# them), so a device with no queue on it holds nothing of rswap's.
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

# No PD or CQ of rswap's on any device.
no_pd_cq() { [ "$(res_count pd)" = 0 ] && [ "$(res_count cq)" = 0 ]; }

setup() {
	[ -f "$KO" ] || ktap_skip_rest "rswap.ko not built"
	modprobe -a ib_core $RDMA_MODULE
	rdma link delete $RDMA_DEV 2>/dev/null
}

t_insmod() {
	dmesg_mark "load without devices"
	ktap_check rswap_load
}
ktap_test "module: insmod with no RDMA device" t_insmod

ktap_test "module: vermagic matches the running kernel" ktap_check \
	bash -c "[ \"\$(modinfo -F vermagic $KO | cut -d' ' -f1)\" = \"\$(uname -r)\" ]"

t_add() {
	dmesg_mark "add $RDMA_DEV"
	rdma_up >/dev/null
	ktap_check dmesg_has "$RDMA_DEV: device added"
}
ktap_test "client: rdma link add is seen by the add callback" t_add

# Each connection allocates its PD and CQ; a device with no queue on it has none.
ktap_test "client: no PD or CQ held on $RDMA_DEV before a queue connects" ktap_check no_pd_cq

t_delete() {
	dmesg_mark "delete $RDMA_DEV"
	rdma link delete $RDMA_DEV
	ktap_check dmesg_has "$RDMA_DEV: device removed, its queues released"
}
ktap_test "client: rdma link delete is seen by the remove callback" t_delete

ktap_test "module: rmmod with no device" ktap_check rmmod rswap

t_load_present() {
	dmesg_mark "load with $RDMA_DEV present"
	rdma_up >/dev/null
	rswap_load
	ktap_check dmesg_has "$RDMA_DEV: device added"
}
ktap_test "client: a device present before insmod is seen at load" t_load_present

t_unload_present() {
	dmesg_mark "unload with $RDMA_DEV present"
	rmmod rswap
	ktap_check dmesg_has "$RDMA_DEV: device removed, its queues released"
}
ktap_test "client: rmmod removes the device from the client" t_unload_present

ktap_test "client: no PD or CQ left after unload" ktap_check no_pd_cq

# $RDMA_DEV is up, rswap not loaded (the tests above).
t_loop() {
	local slab_before slab_after fails=0 loop_log added removed
	dmesg_mark "load/unload loop"
	slab_before=$(awk '/^Slab:/ { print $2 }' /proc/meminfo)
	for _ in $(seq "$LOOPS"); do
		rswap_load || fails=$((fails + 1))
		rmmod rswap || fails=$((fails + 1))
	done
	# Each load saw the device, each unload let it go.
	loop_log=$(dmesg | sed -n '/rswap-test-mark: load\/unload loop/,$p')
	added=$(grep -c "rswap: $RDMA_DEV: device added" <<<"$loop_log")
	removed=$(grep -c "rswap: $RDMA_DEV: device removed, its queues released" <<<"$loop_log")
	slab_after=$(awk '/^Slab:/ { print $2 }' /proc/meminfo)
	ktap_diag "slab before/after $LOOPS load/unload cycles: ${slab_before} kB / ${slab_after} kB"
	if [ "$fails" = 0 ] && [ "$added" = "$LOOPS" ] && [ "$removed" = "$LOOPS" ] \
		&& [ "$(res_count pd)" = 0 ] && [ "$(res_count cq)" = 0 ] && ! loaded; then
		ktap_pass
	else
		ktap_fail "failures: $fails, added $added, removed $removed, pd left: $(res_count pd)"
	fi
}
ktap_test "module: $LOOPS load/unload cycles with $RDMA_DEV present, each seeing it added and removed, no PD or CQ left" t_loop

t_second_device() {
	if ! ip link add dummy0 type dummy 2>/dev/null; then
		ktap_skip "no dummy netdev in this kernel (CONFIG_DUMMY)"
		return
	fi
	ip link del dummy0
	dmesg_mark "second device"
	ktap_check bash -c "
	rswap_load && ip link add dummy0 type dummy 2>/dev/null; ip link set dummy0 up 2>/dev/null
	rdma link add rxe1 type rxe netdev dummy0 || exit 1
	m=\$(dmesg | sed -n '/rswap-test-mark: second device/,\$p')
	rdma link delete rxe1
	n=\$(dmesg | sed -n '/rswap-test-mark: second device/,\$p' | grep -c 'rswap: rxe1: device removed')
	rmmod rswap; ip link del dummy0
	grep -q 'rswap: rxe1: device added' <<<\"\$m\" && [ \"\$n\" = 1 ] \
		|| { echo \"rxe1 added/removed not seen: \$n removals\"; exit 1; }"
}
ktap_test "module: a second device is followed on its own" t_second_device

t_dmesg() {
	rdma_down
	ktap_check dmesg_clean_since_mark_all
}
ktap_test "dmesg: no BUG/WARNING/Oops during the module tests" t_dmesg

ktap_run setup
