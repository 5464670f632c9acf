#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The benchmark's client guest: raw RDMA (perftest, then samples/rdma_bench from kernel
# verbs against rswap-server), then every block device of tests/bench/backends.sh under fio
# and the swap workload, $SWAP_RUNS times (the swap workload only for the backends in
# SWAP_ONLY). Started by scripts/bench.sh
# through qemu/run-pair.sh (two guests) or qemu/run.sh (--loopback, one guest that also
# runs tests/bench/server.sh in the background).
#
#   client.sh [--quick] [--time SECS] [--swap-mb MIB] [--loopback] [--backend NAME]...
#
# --backend NAME (repeatable; scripts/bench.sh makes them from RSWAP_BENCH_BACKENDS): run
# only these: backends by id or label (rswap_sync or rswap-sync), and the raw references
# `perftest` and `kernel` (samples/rdma_bench). Without it, everything runs. What is left
# out is "n/a: not selected" in the results and fails nothing.
#
# Raw results go to $RSWAP_OUT/bench/ (perftest text, the in-kernel benchmark's result
# lines, fio JSON, swap JSON per run, status.tsv, env.json); scripts/bench.sh turns them
# into the table, results.json and the plot. Progress lines "@@BENCH ..." on the console
# tell the host which step runs and how long is left. Exit 0 when every baseline
# (perftest, the in-kernel RDMA benchmark, nvme-rdma, local) produced its numbers.
. "$RSWAP_TOP/tests/bench/lib.sh"
. "$BENCH/backends.sh"

quick=0 loopback=0 T= SWAP_MB= ONLY=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; shift ;;
	--loopback) loopback=1; shift ;;
	--time) T=$2; shift 2 ;;
	--swap-mb) SWAP_MB=$2; shift 2 ;;
	--backend) ONLY+=("$2"); shift 2 ;;
	*) echo "client.sh: unknown argument $1"; exit 2 ;;
	esac
done
if [ $quick = 1 ]; then
	: "${T:=2}" "${SWAP_MB:=16}"; RAMP=0 LAT_N=100 BW_N=500 REGION_MB=16 DEV_MB=64 SWAP_TIMEOUT=180
	KB_MS=1000 SWAP_RUNS=2
else
	: "${T:=20}" "${SWAP_MB:=96}"; RAMP=2 LAT_N=1000 BW_N=4000 REGION_MB=64 DEV_MB=256 SWAP_TIMEOUT=600
	KB_MS=10000 SWAP_RUNS=3
fi
# selected NAME...: whether any of NAME (an id, a label, perftest, kernel) is to run.
selected() {
	local n
	[ ${#ONLY[@]} = 0 ] && return 0
	for n in "$@"; do [[ " ${ONLY[*]} " == *" $n "* ]] && return 0; done
	return 1
}
NOT_SELECTED="not selected (RSWAP_BENCH_BACKENDS)"
# The in-kernel RDMA benchmark (samples/rdma_bench): KB_MS per phase (READ QD1, READ
# QD$KB_QD, WRITE QD1, WRITE QD$KB_QD) over one queue of the kind rswap uses.
KB_QD=32
# The swap workload's cgroup: memory.max at half the working set, memory.high at 7/8 of
# that. Without memory.high the memcg OOM killer fired on nvme-rdma (16 and 32 MiB limits,
# TCG): reclaim outran the slow network swap device's writeback. memory.high throttles
# the task in reclaim instead.
SWAP_LIMIT_MB=$((SWAP_MB / 2)) SWAP_HIGH_KB=$((SWAP_MB * 1024 * 7 / 16))
[ "$DEV_MB" -ge $((SWAP_MB + 16)) ] || DEV_MB=$((SWAP_MB + 16))
R=$RSWAP_OUT/bench
rm -rf "$R"; mkdir -p "$R/perftest" "$R/kbench"
PEER=${RSWAP_PEER_IP:-}
[ $loopback = 1 ] && PEER=$RSWAP_GUEST_IP
: > "$R/status.tsv"
failures=0

# ---- progress --------------------------------------------------------------------------
# The plan: one "key est_seconds label" per step. A skipped backend drops its steps.
PLAN=()
plan_add() { PLAN+=("$1 $2 $3"); }
STEP_DONE=()
plan_left() { # seconds estimated for the steps not started yet
	local p k e sum=0
	for p in "${PLAN[@]}"; do
		read -r k e _ <<< "$p"
		[[ " ${STEP_DONE[*]} " == *" $k "* ]] || sum=$((sum + e))
	done
	echo $sum
}
step() { # KEY: this step starts now
	local p k e l i=0 n=${#PLAN[@]}
	for p in "${PLAN[@]}"; do
		i=$((i + 1)); read -r k e l <<< "$p"
		if [ "$k" = "$1" ]; then
			STEP_DONE+=("$k")
			echo "@@BENCH step $i/$n left=$(( $(plan_left) + e )) $l"
			return 0
		fi
	done
}
skip_steps() { # PREFIX: drop the steps of a backend that is not available
	local p k
	for p in "${PLAN[@]}"; do read -r k _ <<< "$p"; [[ $k == "$1".* ]] && STEP_DONE+=("$k"); done
}

FIO_JOBS=(rr_qd1 rw_qd1 rr_qd32 rw_qd32 seqread)
lat_est=$((LAT_N * 8 / 1000 + 6)) bw_est=$((BW_N / 600 + 6))
[ $loopback = 1 ] && lat_est=$((LAT_N / 1000 + 6)) bw_est=$((BW_N / 2000 + 6))
if selected perftest; then
	plan_add perf.rl $lat_est "perftest:ib_read_lat"
	plan_add perf.wl $lat_est "perftest:ib_write_lat"
	plan_add perf.rb $bw_est "perftest:ib_read_bw"
	plan_add perf.wb $bw_est "perftest:ib_write_bw"
fi
selected kernel && plan_add kbench $((KB_MS * 4 / 1000 + 12)) "in-kernel:rdma_bench"
for b in "${BACKENDS[@]}"; do
	IFS=: read -r id label _ <<< "$b"
	selected "$id" "$label" || continue
	plan_add "$id.setup" 10 "$label:setup"
	# Estimates from a two-guest TCG run (fill ~4 s for 64 MiB, swap on nvme-rdma ~1.4 s per
	# MiB of working set, on brd ~0.05 s).
	if ! swap_only "$id"; then
		plan_add "$id.fill" $((REGION_MB / 16 + 2)) "$label:fill"
		for j in "${FIO_JOBS[@]}"; do plan_add "$id.$j" $((T + RAMP + 2)) "$label:fio-$j"; done
	fi
	for n in $(seq "$SWAP_RUNS"); do
		if [ "$id" = local ]; then plan_add "$id.swap$n" $((SWAP_MB / 16 + 3)) "$label:swap-$n"
		else plan_add "$id.swap$n" $((SWAP_MB * 3 / 2 + 5)) "$label:swap-$n"; fi
	done
done
echo "@@BENCH plan ${#PLAN[@]} left=$(plan_left)"

# ---- control channel to the memory-server guest ------------------------------------------
ctl() { timeout 700 python3 "$BENCH/ctl.py" send "$PEER" "$CTL_PORT" "$@"; }

# ---- environment ---------------------------------------------------------------------------
{
	printf '{"kernel": %s, "vcpus": %s, "mem_mb": %s, "mode": %s, "quick": %s,\n' \
		"$(json_str "$(uname -r)")" "$(nproc)" "$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024))" \
		"$(json_str "$([ $loopback = 1 ] && echo loopback || echo two-guests)")" "$([ $quick = 1 ] && echo true || echo false)"
	printf ' "fio": %s, "perftest": %s, "nvme_cli": %s, "page_cluster": %s, "zswap_was": %s,\n' \
		"$(json_str "$(fio --version)")" \
		"$(json_str "$(dpkg-query -W -f '${Version}' perftest 2>/dev/null)")" \
		"$(json_str "$(nvme version 2>/dev/null | head -1)")" \
		"$(cat /proc/sys/vm/page-cluster)" \
		"$(json_str "$(cat /sys/module/zswap/parameters/enabled 2>/dev/null || echo absent)")"
	printf ' "fio_time_s": %s, "fio_ramp_s": %s, "fio_region_mb": %s, "device_mb": %s,\n' "$T" "$RAMP" "$REGION_MB" "$DEV_MB"
	printf ' "perftest_lat_iters": %s, "perftest_bw_iters": %s, "swap_mb": %s, "swap_limit_mb": %s,\n' \
		"$LAT_N" "$BW_N" "$SWAP_MB" "$SWAP_LIMIT_MB"
	printf ' "swap_runs": %s, "kbench_ms_per_phase": %s, "kbench_qd": %s, "kbench_region_mb": %s,\n' \
		"$SWAP_RUNS" "$KB_MS" "$KB_QD" "$REGION_MB"
	printf ' "selected": %s,\n' "$([ ${#ONLY[@]} = 0 ] && echo null \
		|| printf '[%s]' "$(for n in "${ONLY[@]}"; do json_str "$n"; echo; done | paste -sd,)")"
	printf ' "client_ip": %s, "server_ip": %s}\n' "$(json_str "$RSWAP_GUEST_IP")" "$(json_str "$PEER")"
} > "$R/env.json"

echo "bench client: $(uname -r), $(nproc) vCPU, peer $PEER, fio ${T}s per job"
rdma_up || { echo "bench client: rxe0 is not usable"; exit 1; }
if [ $loopback = 1 ]; then
	bash "$BENCH/server.sh" > "$RSWAP_OUT/bench-server.console" 2>&1 &
fi
ctl --wait=180 ping || { echo "bench client: the memory-server guest's control port never answered"; exit 1; }

# ---- raw RDMA: perftest over rxe ---------------------------------------------------------
perf_port=$PERF_PORT0
perftest_run() { # KEY TOOL ITERS TIMEOUT: up to 3 attempts, each on a fresh server and port
	local key=$1 tool=$2 n=$3 limit=$4 args attempt out
	step "$key"
	for attempt in 1 2 3; do
		perf_port=$((perf_port + 1))
		args=(-d rxe0 -s 4096 -n "$n" -R -F -p "$perf_port")
		if ! out=$(ctl run perftest_start "$tool" "${args[@]}"); then
			echo "bench client: $tool server (attempt $attempt): $out"; continue
		fi
		if timeout "$limit" "$tool" "${args[@]}" "$PEER" > "$R/perftest/$tool.txt" 2>&1 \
				&& grep -q '^ *#bytes' "$R/perftest/$tool.txt"; then
			return 0
		fi
		echo "bench client: $tool attempt $attempt failed: $(grep -v inline "$R/perftest/$tool.txt" | tail -1)"
		mv "$R/perftest/$tool.txt" "$R/perftest/$tool.attempt$attempt"
	done
	failures=$((failures + 1))
}
# Time limits: ~7 ms per latency iteration and ~1 ms per bandwidth message between two
# TCG guests; allow 5x that plus start-up.
if selected perftest; then
	perftest_run perf.rl ib_read_lat "$LAT_N" $((LAT_N * 35 / 1000 + 40))
	perftest_run perf.wl ib_write_lat "$LAT_N" $((LAT_N * 35 / 1000 + 40))
	perftest_run perf.rb ib_read_bw "$BW_N" $((BW_N * 5 / 1000 + 40))
	perftest_run perf.wb ib_write_bw "$BW_N" $((BW_N * 5 / 1000 + 40))
fi

# ---- raw RDMA from kernel verbs: samples/rdma_bench against rswap-server ----------------
# The transport reference rswap's rows are divided by: 4 KiB RDMA READ and WRITE at QD1
# and QD$KB_QD over one RC queue made like rswap's, against an rswap-server on the
# memory-server guest (the same server program rswap uses, started for it and stopped
# after, so rswap's backend starts on a fresh one). The result lines go to kbench/result.txt.
KBENCH_KO=$RSWAP_TOP/rswap_rdma_bench.ko
kbench_run() {
	local out hex rc=0 k=$R/kbench
	step kbench
	[ -f "$KBENCH_KO" ] || { echo "not built: $KBENCH_KO (make)" > "$k/error.txt"; return 1; }
	if ! out=$(ctl run rswap_server_start "$PEER" "$REGION_MB" 2>&1); then
		echo "rswap-server on $PEER: $(echo "$out" | tail -1)" > "$k/error.txt"; return 1
	fi
	hex=$(printf '0x%02x%02x%02x%02x' ${PEER//./ })
	dmesg_mark "bench in-kernel RDMA"
	timeout $((KB_MS * 4 / 1000 + 90)) insmod "$KBENCH_KO" addr="$hex" port="$RSWAP_SERVER_PORT" \
		ms="$KB_MS" qd="$KB_QD" size_mb="$REGION_MB" > "$k/insmod.log" 2>&1 || rc=$?
	dmesg | sed -n '/rswap-test-mark: bench in-kernel RDMA/,$p' | grep 'rswap_rdma_bench:' \
		| sed 's/^\[[^]]*\] //' > "$k/dmesg.txt"
	grep -o 'result op=.*' "$k/dmesg.txt" > "$k/result.txt"
	grep -q '^rswap_rdma_bench ' /proc/modules && { timeout 60 rmmod rswap_rdma_bench || rc=1; }
	ctl run rswap_server_stop "$RSWAP_SERVER_PORT" > /dev/null 2>&1
	dmesg_clean > "$k/dmesg-bad.txt" || { echo "kernel warnings during the in-kernel benchmark" >> "$k/error.txt"; rc=1; }
	[ $rc = 0 ] || { echo "insmod exit $rc: $(tail -1 "$k/dmesg.txt")" >> "$k/error.txt"; return 1; }
	[ "$(wc -l < "$k/result.txt")" = 4 ] || { echo "expected 4 result lines" >> "$k/error.txt"; return 1; }
}
if ! selected kernel; then
	echo "$NOT_SELECTED" > "$R/kbench/not-selected.txt"
elif ! kbench_run; then
	echo "bench client: in-kernel RDMA benchmark failed: $(tr '\n' ' ' < "$R/kbench/error.txt")"
	failures=$((failures + 1))
fi

# ---- fio --------------------------------------------------------------------------------
fio_job() { # DEV OUTFILE JOB
	local dev=$1 outf=$2 spec
	case $3 in
	rr_qd1)  spec=(--rw=randread --bs=4k --iodepth=1 --numjobs=1) ;;
	rw_qd1)  spec=(--rw=randwrite --bs=4k --iodepth=1 --numjobs=1) ;;
	rr_qd32) spec=(--rw=randread --bs=4k --iodepth=32 --numjobs=2) ;;
	rw_qd32) spec=(--rw=randwrite --bs=4k --iodepth=32 --numjobs=2) ;;
	seqread) spec=(--rw=read --bs=64k --iodepth=16 --numjobs=1) ;;
	esac
	timeout $((T + RAMP + 90)) fio --name="$3" --filename="$dev" --direct=1 --ioengine=libaio \
		--size="${REGION_MB}M" --time_based --runtime="$T" --ramp_time="$RAMP" \
		--norandommap --randrepeat=0 --lat_percentiles=1 --group_reporting \
		"${spec[@]}" --output-format=json --output="$outf" > "$outf.log" 2>&1
}

# ---- swap workload ------------------------------------------------------------------------
SWAPLOAD=/tmp/swapload
vmstat_get() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
# swap_ra: pages the swap cache read ahead (0 on a swap area with synchronous I/O).
swap_run() { # DEV DIR RUN: one run of the workload; its records are DIR/*-RUN.*
	local dev=$1 d=$2 n=$3 cg=/sys/fs/cgroup/rswap-bench rc=0 t0 t1 in0 out0 in1 out1 ra0 ra1 oom
	swapoff -a 2>/dev/null || true
	# zswap would keep compressed pages in RAM and hide the device: the device must be the
	# only place pages go.
	[ -w /sys/module/zswap/parameters/enabled ] && echo N > /sys/module/zswap/parameters/enabled
	mkswap -f "$dev" > "$d/mkswap-$n.log" 2>&1 && swapon "$dev" 2>> "$d/mkswap-$n.log" \
		|| { echo "mkswap/swapon $dev failed: $(tail -1 "$d/mkswap-$n.log")"; return 1; }
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || echo +memory > /sys/fs/cgroup/cgroup.subtree_control
	rmdir "$cg" 2>/dev/null; mkdir "$cg"
	echo "${SWAP_LIMIT_MB}M" > "$cg/memory.max"
	echo "${SWAP_HIGH_KB}K" > "$cg/memory.high"
	[ -f "$cg/memory.swap.max" ] && echo max > "$cg/memory.swap.max"
	in0=$(vmstat_get pswpin) out0=$(vmstat_get pswpout) ra0=$(vmstat_get swap_ra)
	t0=$(date +%s.%N)
	timeout "$SWAP_TIMEOUT" bash -c "echo \$\$ > $cg/cgroup.procs && exec $SWAPLOAD $SWAP_MB" \
		> "$d/swapload-$n.json" 2> "$d/swapload-$n.err" || rc=$?
	t1=$(date +%s.%N)
	in1=$(vmstat_get pswpin) out1=$(vmstat_get pswpout) ra1=$(vmstat_get swap_ra)
	oom=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events")
	printf '{"device": %s, "run": %s, "rc": %s, "wall_s": %s, "pswpin": %s, "pswpout": %s, "swap_ra": %s, "oom_kill": %s, "mib": %s, "limit_mib": %s, "high_kib": %s, "swaps": %s}\n' \
		"$(json_str "$dev")" "$n" "$rc" "$(awk "BEGIN { printf \"%.3f\", $t1 - $t0 }")" \
		$((in1 - in0)) $((out1 - out0)) $((${ra1:-0} - ${ra0:-0})) "${oom:-0}" "$SWAP_MB" "$SWAP_LIMIT_MB" "$SWAP_HIGH_KB" \
		"$(json_str "$(tail -n +2 /proc/swaps)")" > "$d/swap-$n.json"
	timeout 300 swapoff "$dev" || echo "swapoff $dev failed or timed out"
	rmdir "$cg" 2>/dev/null
	[ $rc = 0 ] || { echo "swapload on $dev: exit $rc $(cat "$d/swapload-$n.err")"; return 1; }
}
cp "$RSWAP_OUT/swapload" "$SWAPLOAD" 2>/dev/null && chmod +x "$SWAPLOAD" \
	|| echo "bench client: no swapload binary in \$RSWAP_OUT (scripts/bench.sh builds it)"

# ---- every backend ---------------------------------------------------------------------------
for b in "${BACKENDS[@]}"; do
	IFS=: read -r id label desc <<< "$b"
	d=$R/$label; mkdir -p "$d"
	if ! selected "$id" "$label"; then
		printf '%s\tn/a\t-\t%s\n' "$label" "$NOT_SELECTED" >> "$R/status.tsv"
		continue
	fi
	step "$id.setup"
	BK_DEV= BK_REASON= BK_DIR=$d
	dmesg_mark "bench $label"
	if ! "backend_${id}_setup"; then
		echo "bench client: $label n/a: $BK_REASON"
		printf '%s\tn/a\t-\t%s\n' "$label" "$BK_REASON" >> "$R/status.tsv"
		skip_steps "$id"
		backend_optional "$id" || failures=$((failures + 1))
		"backend_${id}_teardown" 2>/dev/null || true
		continue
	fi
	echo "bench client: $label is $BK_DEV ($desc)"
	bad=
	if ! swap_only "$id"; then
		step "$id.fill"
		timeout 600 fio --name=fill --filename="$BK_DEV" --direct=1 --ioengine=libaio --rw=write \
			--bs=1M --iodepth=4 --size="${REGION_MB}M" --output-format=json --output="$d/fio-fill.json" \
			> "$d/fio-fill.log" 2>&1 || bad+=" fill"
		for j in "${FIO_JOBS[@]}"; do
			step "$id.$j"
			fio_job "$BK_DEV" "$d/fio-$j.json" "$j" || { bad+=" $j"; echo "bench client: fio $j on $label failed"; tail -3 "$d/fio-$j.json.log"; }
		done
	fi
	for n in $(seq "$SWAP_RUNS"); do
		step "$id.swap$n"
		if [ ! -x "$SWAPLOAD" ]; then bad+=" swap"; break; fi
		msg=$(swap_run "$BK_DEV" "$d" "$n") || { bad+=" swap-$n"; echo "bench client: $msg"; break; }
	done
	"backend_${id}_teardown" || true
	dmesg_clean > "$d/dmesg-bad.txt" || { bad+=" dmesg"; echo "bench client: kernel warnings during $label"; }
	if [ -n "$bad" ]; then
		printf '%s\tpartial\t%s\tfailed:%s\n' "$label" "$BK_DEV" "$bad" >> "$R/status.tsv"
		failures=$((failures + 1))
	else
		printf '%s\tok\t%s\t%s\n' "$label" "$BK_DEV" "$desc" >> "$R/status.tsv"
	fi
done

ctl stop >/dev/null || echo "bench client: could not tell the server to stop"
[ $loopback = 1 ] && wait
echo "@@BENCH done failures=$failures"
[ $failures = 0 ]
