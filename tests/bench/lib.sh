# SPDX-License-Identifier: GPL-2.0
# Shared pieces of the benchmark's guest scripts (source, do not run).
# Both guests source this: the server guest through tests/bench/server.sh, the client
# guest through tests/bench/client.sh (which, with --loopback, also runs the server part).

. "$RSWAP_TOP/tests/lib/guest.sh"

BENCH=$RSWAP_TOP/tests/bench
CTL_PORT=7100                              # tests/bench/ctl.py control channel
NVMET_PORT=4420                            # NVMe-oF RDMA service id
NVMET_NQN=nqn.2026-11.org.rswap:bench      # the benchmark's nvmet subsystem
PERF_PORT0=18515                           # first perftest port (one per test)
RSWAP_SERVER_PORT=7471                     # rswap-server's rdma_cm port (when it exists)
RSWAP_SERVER_PORT2=7472                    # a second rswap-server (rswap-md1's other half)

# Both guests load brd the same way, so in --loopback one guest can hold both disks:
# /dev/ram0 backs the nvmet namespace (server side), /dev/ram1 is the client's local disk.
BRD_SERVER_DEV=/dev/ram0
BRD_LOCAL_DEV=/dev/ram1
brd_load() { # SIZE_MB
	if [ -e /sys/module/brd ]; then
		[ -b "$BRD_LOCAL_DEV" ] || { echo "brd is loaded without $BRD_LOCAL_DEV"; return 1; }
		return 0
	fi
	modprobe brd rd_nr=2 rd_size=$(($1 * 1024)) max_part=0 || { echo "modprobe brd failed"; return 1; }
	for _ in $(seq 50); do [ -b "$BRD_LOCAL_DEV" ] && return 0; sleep 0.1; done
	echo "brd loaded but $BRD_LOCAL_DEV did not appear"; return 1
}

# Wait until a block device node exists: WAIT_BDEV DEV SECONDS
wait_bdev() {
	local i
	for i in $(seq $(($2 * 10))); do [ -b "$1" ] && return 0; sleep 0.1; done
	return 1
}

# Minimal JSON string quoting for values we write ourselves.
json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n\t' '  ')"; }

# The device under test as the only swap, freshly made: SWAP_FRESH DEV LOG [ZSWAP]. zswap
# is off unless ZSWAP names its compressor (zswap in front of DEV, shrinker on): otherwise
# it would keep compressed pages in RAM and hide the device.
swap_fresh() {
	local z=/sys/module/zswap/parameters
	swapoff -a 2>/dev/null || true
	if [ -n "${3:-}" ]; then
		echo "$3" > $z/compressor && echo Y > $z/shrinker_enabled && echo Y > $z/enabled \
			|| { echo "zswap with $3 could not be turned on"; return 1; }
	elif [ -w $z/enabled ]; then
		echo N > $z/enabled
	fi
	mkswap -f "$1" > "$2" 2>&1 && swapon "$1" 2>> "$2" \
		|| { echo "mkswap/swapon $1 failed: $(tail -1 "$2")"; return 1; }
}

# A fresh cgroup v2 group CG with MAX and HIGH (each "max", or a size such as 12345K) as
# memory.max and memory.high, and no limit of swap: CG_MAKE CG MAX HIGH.
cg_make() {
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || echo +memory > /sys/fs/cgroup/cgroup.subtree_control
	rmdir "$1" 2>/dev/null; mkdir "$1" || return 1
	echo "$2" > "$1/memory.max" && echo "$3" > "$1/memory.high" || return 1
	[ ! -f "$1/memory.swap.max" ] || echo max > "$1/memory.swap.max"
}

# ---- what the fabric carried ---------------------------------------------------------------
# RDMA packets this guest's RDMA devices have sent and received so far (soft-RoCE's port
# counters sent_pkts and rcvd_pkts, summed); nothing when no device counts them (soft-iWARP
# has no such counters). Under soft-RoCE every packet costs CPU time on both guests, so the
# packets a request takes explain much of a backend's rate.
rdma_packets() {
	local f s=0 found=
	for f in /sys/class/infiniband/*/ports/*/hw_counters/sent_pkts \
		/sys/class/infiniband/*/ports/*/hw_counters/rcvd_pkts; do
		[ -r "$f" ] || continue
		s=$((s + $(cat "$f"))) found=1
	done
	[ -z "$found" ] || echo "$s"
}
# Requests a block device has completed so far, reads and writes (its stat file).
bdev_requests() { # DEV
	awk '{ print $1 + $5 }' "/sys/block/$(basename "$(readlink -f "$1")")/stat"
}

# ---- the swap workload (tests/bench/swapload.c) ---------------------------------------------
# swap_run needs SWAPLOAD (the binary), SWAP_MB (its working set), SWAP_LIMIT_MB and
# SWAP_HIGH_KB (the cgroup's memory.max and memory.high) and SWAP_TIMEOUT (seconds).
# SWAP_TRACE_START and SWAP_TRACE_STOP, if set, are commands run right before the workload
# starts and right after it ends (tests/bench/trace-write.sh traces it).
SWAPLOAD=/tmp/swapload
vmstat_get() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
# swap_ra: pages the swap cache read ahead (0 on a swap area with synchronous I/O).
swap_run() { # DEV DIR RUN: one run of the workload; its records are DIR/*-RUN.*
	local dev=$1 d=$2 n=$3 cg=/sys/fs/cgroup/rswap-bench rc=0 t0 t1 in0 out0 in1 out1 ra0 ra1 oom pk0 pk1
	swap_fresh "$dev" "$d/mkswap-$n.log" || return 1
	cg_make "$cg" "${SWAP_LIMIT_MB}M" "${SWAP_HIGH_KB}K"
	in0=$(vmstat_get pswpin) out0=$(vmstat_get pswpout) ra0=$(vmstat_get swap_ra) pk0=$(rdma_packets)
	${SWAP_TRACE_START:-}
	t0=$(date +%s.%N)
	timeout "$SWAP_TIMEOUT" bash -c "echo \$\$ > $cg/cgroup.procs && exec $SWAPLOAD $SWAP_MB" \
		> "$d/swapload-$n.json" 2> "$d/swapload-$n.err" || rc=$?
	t1=$(date +%s.%N)
	${SWAP_TRACE_STOP:-}
	in1=$(vmstat_get pswpin) out1=$(vmstat_get pswpout) ra1=$(vmstat_get swap_ra) pk1=$(rdma_packets)
	oom=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events")
	# rdma_packets: null when this guest counts no packets.
	printf '{"device": %s, "run": %s, "rc": %s, "wall_s": %s, "pswpin": %s, "pswpout": %s, "swap_ra": %s, "rdma_packets": %s, "oom_kill": %s, "mib": %s, "limit_mib": %s, "high_kib": %s, "swaps": %s}\n' \
		"$(json_str "$dev")" "$n" "$rc" "$(awk "BEGIN { printf \"%.3f\", $t1 - $t0 }")" \
		$((in1 - in0)) $((out1 - out0)) $((${ra1:-0} - ${ra0:-0})) \
		"$([ -n "$pk0" ] && [ -n "$pk1" ] && echo $((pk1 - pk0)) || echo null)" \
		"${oom:-0}" "$SWAP_MB" "$SWAP_LIMIT_MB" "$SWAP_HIGH_KB" \
		"$(json_str "$(tail -n +2 /proc/swaps)")" > "$d/swap-$n.json"
	timeout 300 swapoff "$dev" || echo "swapoff $dev failed or timed out"
	rmdir "$cg" 2>/dev/null
	[ $rc = 0 ] || { echo "swapload on $dev: exit $rc $(cat "$d/swapload-$n.err")"; return 1; }
}
