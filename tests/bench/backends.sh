# SPDX-License-Identifier: GPL-2.0
# The block devices the benchmark compares (source, do not run; used by client.sh).
#
# A backend is one function, backend_<id>_setup, plus an optional backend_<id>_teardown,
# and one line in BACKENDS ("id:label:description"). setup runs on the client guest with
# $PEER (the memory-server guest's address; our own in --loopback), $DEV_MB (the device
# size the run wants) and the control channel `ctl run|spawn FUNC ARG...` (server.sh's
# functions on the peer). On success it sets BK_DEV to the block device and returns 0;
# when the backend cannot be built it sets BK_REASON (one line) and returns non-zero, and
# the results show the backend as "n/a" with that reason.

# Run order. rswap goes last: a crash of the driver under test must not cost the
# baselines' numbers.
BACKENDS=(
	"nvme_rdma:nvme-rdma:NVMe-oF RDMA (nvmet-rdma target, brd namespace on the memory-server guest)"
	"local:local:brd RAM disk on the client guest"
	"rswap:rswap:/dev/rswap0 backed by rswap-server on the memory-server guest"
)

# ---- HOOK: rswap -----------------------------------------------------------------------
# Create /dev/rswapN backed by rswap-server on $PEER and set BK_DEV: start the server
# (tests/bench/server.sh srv_rswap_server_start), insmod rswap.ko from the work tree,
# configure /sys/kernel/config/rswap/bench (Documentation/configuration.md), enable.
# Reports "not available" while rswap.ko or rswap-server is not built.
RSWAP_CFG=/sys/kernel/config/rswap/bench
backend_rswap_setup() {
	local out
	[ -f "$RSWAP_TOP/rswap.ko" ] || { BK_REASON="not available: rswap.ko is not built (make)"; return 1; }
	if ! out=$(ctl run rswap_server_start "$PEER" "$DEV_MB" 2>&1); then
		BK_REASON="rswap-server on $PEER: $(echo "$out" | tail -1)"; return 1
	fi
	if ! grep -q '^rswap ' /proc/modules; then
		out=$(rswap_load 2>&1) || { BK_REASON="insmod rswap.ko failed: $(echo "$out" | tail -1)"; return 1; }
	fi
	mkdir -p "$RSWAP_CFG" || { BK_REASON="no rswap configfs directory $RSWAP_CFG"; return 1; }
	echo "$PEER" > "$RSWAP_CFG/addr" && echo "$RSWAP_SERVER_PORT" > "$RSWAP_CFG/port" \
		&& echo "${DEV_MB}M" > "$RSWAP_CFG/size" \
		|| { BK_REASON="configuring $RSWAP_CFG failed: $(dmesg | grep rswap | tail -1)"; return 1; }
	timeout 120 sh -c "echo 1 > $RSWAP_CFG/enable" \
		|| { BK_REASON="enable failed: $(dmesg | grep rswap | tail -1)"; return 1; }
	out=/dev/$(cat "$RSWAP_CFG/device")
	wait_bdev "$out" 30 || { BK_REASON="enabled, but $out did not appear"; return 1; }
	BK_DEV=$out
}
backend_rswap_teardown() {
	if [ -d "$RSWAP_CFG" ]; then
		timeout 120 sh -c "echo 0 > $RSWAP_CFG/enable" 2>/dev/null
		rmdir "$RSWAP_CFG" 2>/dev/null
	fi
	grep -q '^rswap ' /proc/modules && timeout 60 rmmod rswap 2>/dev/null
	ctl run rswap_server_stop "$RSWAP_SERVER_PORT" >/dev/null 2>&1
	true
}
# ----------------------------------------------------------------------------------------

backend_nvme_rdma_setup() {
	local out hostnqn c
	if ! out=$(ctl run nvmet_setup "$PEER" "$DEV_MB" 2>&1); then
		BK_REASON="nvmet target setup on $PEER failed: $(echo "$out" | tail -1)"; return 1
	fi
	modprobe nvme-rdma || { BK_REASON="modprobe nvme-rdma failed"; return 1; }
	hostnqn=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid)
	if ! out=$(timeout 60 nvme connect -t rdma -a "$PEER" -s "$NVMET_PORT" -n "$NVMET_NQN" \
			--hostnqn="$hostnqn" 2>&1); then
		BK_REASON="nvme connect -t rdma to $PEER failed: $(echo "$out" | tail -1)"; return 1
	fi
	for _ in $(seq 100); do
		for c in /sys/class/nvme/nvme*; do
			[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NVMET_NQN" ] || continue
			if [ -b "/dev/$(basename "$c")n1" ]; then BK_DEV=/dev/$(basename "$c")n1; return 0; fi
		done
		sleep 0.2
	done
	BK_REASON="nvme connect succeeded but no namespace block device appeared"; return 1
}
backend_nvme_rdma_teardown() {
	timeout 60 nvme disconnect -n "$NVMET_NQN" >/dev/null 2>&1
	ctl run nvmet_teardown >/dev/null 2>&1
	true
}

backend_local_setup() {
	local out
	out=$(brd_load "$DEV_MB") || { BK_REASON=$out; return 1; }
	BK_DEV=$BRD_LOCAL_DEV
}
backend_local_teardown() { :; }
