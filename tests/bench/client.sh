#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The benchmark's client guest: raw RDMA from user space (perftest), then $REPEATS rounds
# of the in-kernel RDMA benchmark (samples/rdma_bench: kernel verbs against rswap-server)
# and of every block device of tests/bench/backends.sh under fio, then the swap workload on
# every block device, $SWAP_RUNS times (the backends in SWAP_ONLY run the swap workload
# only, those in FIO_ONLY no swap workload). Started by scripts/bench.sh through
# qemu/run-pair.sh (two guests) or qemu/run.sh (--loopback, one guest that also runs
# tests/bench/server.sh in the background).
#
#   client.sh [--quick] [--time SECS] [--repeats N] [--swap-mb MIB] [--loopback]
#             [--backend NAME]...
#
# A round runs the in-kernel benchmark once and, on each backend in turn, sets it up, fills
# its test region, runs every fio job once (with the engine its setup chose, BK_FIO) and
# tears it down. Round R takes the items in the order of round 1 rotated by R-1 places, so
# that a drift of the host's speed over the run does not always favour the same backend;
# round 1 keeps tests/bench/backends.sh's order (the baselines before the rswap family), as
# does the swap workload after the rounds. report.py takes the median of the repeats.
#
# --backend NAME (repeatable; scripts/bench.sh makes them from RSWAP_BENCH_BACKENDS): run
# only these: backends by id or label (rswap_sync or rswap-sync), and the raw references
# `perftest` and `kernel` (samples/rdma_bench). Without it, everything runs. What is left
# out is "n/a: not selected" in the results and fails nothing.
#
# Raw results go to $RSWAP_OUT/bench/ (perftest text, the in-kernel benchmark's result
# lines per repeat (kbench/result-R.txt), fio JSON per job and repeat
# (<label>/fio-JOB-R.json), swap JSON per run, status.tsv, env.json); scripts/bench.sh
# turns them into the table, results.json and the plot. Progress lines "@@BENCH ..." on
# the console tell the host which step runs and how long is left. Exit 0 when every
# baseline (perftest, the in-kernel RDMA benchmark, nvme-rdma, local) produced its numbers.
. "$RSWAP_TOP/tests/bench/lib.sh"
. "$BENCH/backends.sh"
. "$BENCH/session.sh"

quick=0 loopback=0 T= REPEATS= SWAP_MB= ONLY=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; shift ;;
	--loopback) loopback=1; shift ;;
	--time) T=$2; shift 2 ;;
	--repeats) REPEATS=$2; shift 2 ;;
	--swap-mb) SWAP_MB=$2; shift 2 ;;
	--backend) ONLY+=("$2"); shift 2 ;;
	*) echo "client.sh: unknown argument $1"; exit 2 ;;
	esac
done
# Each fio job runs FIO_MS (T seconds unless --quick) after RAMP seconds not counted, in
# each of REPEATS rounds, each in-kernel benchmark phase KB_MS in each round: REPEATS x T
# measures about as long as one job of 20 s (and one phase of 10 s) did before the rounds.
# --quick proves the harness, not the figures: the fewest rounds its checks take (2; each
# repeats every fio job and in-kernel phase), one swap run a backend, 0.3 s per fio job
# (without --time) and in-kernel phase, 8 MiB of fio region and of swap working set (in
# a 4 MiB cgroup), and less of some backends (QUICK_SKIP, tests/bench/backends.sh). The
# swap runs were most of its time: a page swapped in over nvme-rdma or rswap takes about
# 5 ms under TCG (a second run of each took make check 45 s).
FIO_MS=${T:+$((T * 1000))} QUICK=$quick
if [ $quick = 1 ]; then
	: "${FIO_MS:=300}" "${T:=1}" "${REPEATS:=2}" "${SWAP_MB:=8}"; RAMP=0 LAT_N=100 BW_N=500
	REGION_MB=8 DEV_MB=24 SWAP_TIMEOUT=180 KB_MS=300 SWAP_RUNS=1
else
	: "${T:=5}" "${REPEATS:=3}" "${SWAP_MB:=96}"; RAMP=1 LAT_N=1000 BW_N=4000 REGION_MB=64 DEV_MB=256
	SWAP_TIMEOUT=600 KB_MS=4000 SWAP_RUNS=3 FIO_MS=$((T * 1000))
fi
# The items of a round, in round 1's order: the in-kernel benchmark ("kbench") and every
# selected backend that has fio jobs (in this run: runs_fio).
ROUND=()
selected kernel && ROUND+=(kbench)
for b in "${BACKENDS[@]}"; do
	IFS=: read -r id label _ <<< "$b"
	selected "$id" "$label" && runs_fio "$id" && ROUND+=("$id")
done
round_items() { # R: round R's items, round 1's order rotated by R-1 places
	local i n=${#ROUND[@]} id
	for ((i = 0; i < n; i++)); do
		id=${ROUND[(i + $1 - 1) % n]}
		[ "$1" = 1 ] || ! quick_skip "$id" later && echo "$id"
	done
}
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

FIO_JOBS=(rr_qd1 rw_qd1 rr_qd32 rw_qd32 seqread)
lat_est=$((LAT_N * 8 / 1000 + 6)) bw_est=$((BW_N / 600 + 6))
[ $loopback = 1 ] && lat_est=$((LAT_N / 1000 + 6)) bw_est=$((BW_N / 2000 + 6))
if selected perftest; then
	plan_add perf.rl $lat_est "perftest:ib_read_lat"
	plan_add perf.wl $lat_est "perftest:ib_write_lat"
	plan_add perf.rb $bw_est "perftest:ib_read_bw"
	plan_add perf.wb $bw_est "perftest:ib_write_bw"
fi
# Estimates from a two-guest TCG run (fill ~4 s for 64 MiB, swap on nvme-rdma ~1.4 s per
# MiB of working set, on brd ~0.05 s). Keys: kbench.R, ID.R.* (round R), ID.swap.*.
for r in $(seq "$REPEATS"); do
	for id in $(round_items "$r"); do
		if [ "$id" = kbench ]; then
			plan_add "kbench.$r" $((KB_MS * 4 / 1000 + 12)) "in-kernel:rdma_bench-$r"
			continue
		fi
		label=${BK_LABEL[$id]}
		plan_add "$id.$r.setup" 10 "$label:setup-$r"
		plan_add "$id.$r.fill" $((REGION_MB / 16 + 2)) "$label:fill-$r"
		for j in "${FIO_JOBS[@]}"; do
			quick_skip "$id" "$j" || plan_add "$id.$r.$j" $((T + RAMP + 2)) "$label:fio-$j-$r"
		done
	done
done
for b in "${BACKENDS[@]}"; do
	IFS=: read -r id label _ <<< "$b"
	selected "$id" "$label" && runs_swap "$id" || continue
	plan_add "$id.swap.setup" 10 "$label:setup-swap"
	for n in $(seq "$SWAP_RUNS"); do
		if [ "$id" = local ]; then plan_add "$id.swap.$n" $((SWAP_MB / 16 + 3)) "$label:swap-$n"
		# 96 MiB took 35-60 s a run on the RDMA backends, 82 s with sync_swapin (27fb631).
		else plan_add "$id.swap.$n" $((SWAP_MB * 2 / 3 + 5)) "$label:swap-$n"; fi
	done
done
plan_announce

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
	printf ' "fio_time_s": %s, "fio_ramp_s": %s, "fio_region_mb": %s, "device_mb": %s,\n' \
		"$(awk -v ms="$FIO_MS" 'BEGIN { print ms / 1000 }')" "$RAMP" "$REGION_MB" "$DEV_MB"
	printf ' "perftest_lat_iters": %s, "perftest_bw_iters": %s, "swap_mb": %s, "swap_limit_mb": %s,\n' \
		"$LAT_N" "$BW_N" "$SWAP_MB" "$SWAP_LIMIT_MB"
	printf ' "repeats": %s, "swap_runs": %s, "kbench_ms_per_phase": %s, "kbench_qd": %s, "kbench_region_mb": %s,\n' \
		"$REPEATS" "$SWAP_RUNS" "$KB_MS" "$KB_QD" "$REGION_MB"
	printf ' "selected": %s,\n' "$([ ${#ONLY[@]} = 0 ] && echo null \
		|| printf '[%s]' "$(for n in "${ONLY[@]}"; do json_str "$n"; echo; done | paste -sd,)")"
	# Every backend this harness has, by label, selected or not: report.py leaves the
	# backends added after a run out of its tables.
	printf ' "backends": [%s],\n' "$(for b in "${BACKENDS[@]}"; do
		IFS=: read -r _ label _ <<< "$b"; json_str "$label"; echo; done | paste -sd,)"
	# What --quick left out (QUICK_SKIP, by label: LABEL or LABEL:WHAT).
	printf ' "quick_skip": [%s],\n' "$([ $quick = 0 ] || for q in "${QUICK_SKIP[@]}"; do
		id=${q%%:*}; json_str "${BK_LABEL[$id]}${q#"$id"}"; echo; done | paste -sd,)"
	printf ' "client_ip": %s, "server_ip": %s}\n' "$(json_str "$RSWAP_GUEST_IP")" "$(json_str "$PEER")"
} > "$R/env.json"

echo "bench client: $(uname -r), $(nproc) vCPU, peer $PEER, fio ${FIO_MS} ms per job, $REPEATS rounds"
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
# after, so rswap's backend starts on a fresh one). Repeat N's result lines go to
# kbench/result-N.txt; what went wrong in any repeat to kbench/error.txt.
KBENCH_KO=$RSWAP_TOP/rswap_rdma_bench.ko
kbench_run() { # N: repeat N
	local n=$1 out hex rc=0 k=$R/kbench mark="bench in-kernel RDMA, repeat $1"
	kerr() { echo "repeat $n: $*" >> "$k/error.txt"; }
	step "kbench.$n"
	[ -f "$KBENCH_KO" ] || { kerr "not built: $KBENCH_KO (make)"; return 1; }
	if ! out=$(ctl run rswap_server_start "$PEER" "$REGION_MB" 2>&1); then
		kerr "rswap-server on $PEER: $(echo "$out" | tail -1)"; return 1
	fi
	hex=$(printf '0x%02x%02x%02x%02x' ${PEER//./ })
	dmesg_mark "$mark"
	timeout $((KB_MS * 4 / 1000 + 90)) insmod "$KBENCH_KO" addr="$hex" port="$RSWAP_SERVER_PORT" \
		ms="$KB_MS" qd="$KB_QD" size_mb="$REGION_MB" > "$k/insmod-$n.log" 2>&1 || rc=$?
	dmesg | sed -n "/rswap-test-mark: $mark\$/,\$p" | grep 'rswap_rdma_bench:' \
		| sed 's/^\[[^]]*\] //' > "$k/dmesg-$n.txt"
	grep -o 'result op=.*' "$k/dmesg-$n.txt" > "$k/result-$n.txt"
	grep -q '^rswap_rdma_bench ' /proc/modules && { timeout 60 rmmod rswap_rdma_bench || rc=1; }
	ctl run rswap_server_stop "$RSWAP_SERVER_PORT" > /dev/null 2>&1
	dmesg_clean > "$k/dmesg-bad-$n.txt" || { kerr "kernel warnings during the in-kernel benchmark"; rc=1; }
	[ $rc = 0 ] || { kerr "insmod exit $rc: $(tail -1 "$k/dmesg-$n.txt")"; return 1; }
	[ "$(wc -l < "$k/result-$n.txt")" = 4 ] || { kerr "expected 4 result lines"; return 1; }
}
selected kernel || echo "$NOT_SELECTED" > "$R/kbench/not-selected.txt"

# ---- fio --------------------------------------------------------------------------------
# The engine of the fio jobs (not of the fill): libaio unless the backend's setup chose
# another (BK_FIO, tests/bench/backends.sh); session() resets it before each setup.
BK_FIO=(--ioengine=libaio)
fio_job() { # DEV OUTFILE JOB
	local dev=$1 outf=$2 spec
	case $3 in
	rr_qd1)  spec=(--rw=randread --bs=4k --iodepth=1 --numjobs=1) ;;
	rw_qd1)  spec=(--rw=randwrite --bs=4k --iodepth=1 --numjobs=1) ;;
	rr_qd32) spec=(--rw=randread --bs=4k --iodepth=32 --numjobs=2) ;;
	rw_qd32) spec=(--rw=randwrite --bs=4k --iodepth=32 --numjobs=2) ;;
	seqread) spec=(--rw=read --bs=64k --iodepth=16 --numjobs=1) ;;
	esac
	timeout $((T + RAMP + 90)) fio --name="$3" --filename="$dev" --direct=1 "${BK_FIO[@]}" \
		--size="${REGION_MB}M" --time_based --runtime="${FIO_MS}ms" --ramp_time="$RAMP" \
		--norandommap --randrepeat=0 --lat_percentiles=1 --group_reporting \
		"${spec[@]}" --output-format=json --output="$outf" > "$outf.log" 2>&1
}

# ---- swap workload (swap_run: tests/bench/lib.sh) ------------------------------------------
cp "$RSWAP_OUT/swapload" "$SWAPLOAD" 2>/dev/null && chmod +x "$SWAPLOAD" \
	|| echo "bench client: no swapload binary in \$RSWAP_OUT (scripts/bench.sh builds it)"

# ---- the rounds, then the swap workload -------------------------------------------------------
# A session (tests/bench/session.sh) sets a backend up, measures and tears it down: in
# round R (TAG R) it fills the test region and runs every fio job once
# (<label>/fio-JOB-R.json); in TAG "swap" it runs the swap workload SWAP_RUNS times.
session() { # ID TAG
	local id=$1 tag=$2 label=${BK_LABEL[$1]} d j n msg pk0 pk1 rq0 rq1
	d=$R/$label
	bk_begin "$id" "$tag" || return 0
	remote_mem_record "$id" || BK_BAD[$id]+=" remote-mem"
	if [ "$tag" = swap ]; then
		for n in $(seq "$SWAP_RUNS"); do
			step "$id.swap.$n"
			if [ ! -x "$SWAPLOAD" ]; then BK_BAD[$id]+=" swap"; break; fi
			msg=$(swap_run "$BK_DEV" "$d" "$n") || { BK_BAD[$id]+=" swap-$n"; echo "bench client: $msg"; break; }
		done
	else
		step "$id.$tag.fill"
		timeout 600 fio --name=fill --filename="$BK_DEV" --direct=1 --ioengine=libaio --rw=write \
			--bs=1M --iodepth=4 --size="${REGION_MB}M" --output-format=json \
			--output="$d/fio-fill-$tag.json" > "$d/fio-fill-$tag.log" 2>&1 || BK_BAD[$id]+=" fill-$tag"
		for j in "${FIO_JOBS[@]}"; do
			quick_skip "$id" "$j" && continue
			step "$id.$tag.$j"
			pk0=$(rdma_packets) rq0=$(bdev_requests "$BK_DEV")
			fio_job "$BK_DEV" "$d/fio-$j-$tag.json" "$j" || {
				BK_BAD[$id]+=" $j-$tag"; echo "bench client: fio $j (round $tag) on $label failed"
				tail -3 "$d/fio-$j-$tag.json.log"; }
			# What the job (its ramp included) carried: report.py's packets per request.
			pk1=$(rdma_packets) rq1=$(bdev_requests "$BK_DEV")
			[ -z "$pk0" ] || [ -z "$pk1" ] \
				|| echo "packets=$((pk1 - pk0)) requests=$((rq1 - rq0))" > "$d/packets-$j-$tag.txt"
		done
	fi
	bk_end "$id" "$tag"
}
for b in "${BACKENDS[@]}"; do
	IFS=: read -r id label _ <<< "$b"
	mkdir -p "$R/$label"; : > "$R/$label/dmesg-bad.txt"
	quick_skip "$id" && BK_NA[$id]="left out by --quick (QUICK_SKIP)"
	selected "$id" "$label" && ! quick_skip "$id" || bk_status "$id" >> "$R/status.tsv"
done
kb_failed=0
for r in $(seq "$REPEATS"); do
	for id in $(round_items "$r"); do
		if [ "$id" != kbench ]; then session "$id" "$r"
		elif ! kbench_run "$r"; then kb_failed=$((kb_failed + 1)); fi
	done
done
if [ $kb_failed != 0 ]; then
	echo "bench client: in-kernel RDMA benchmark failed in $kb_failed of $REPEATS repeats: $(tr '\n' ' ' < "$R/kbench/error.txt")"
	failures=$((failures + 1))
fi
for b in "${BACKENDS[@]}"; do
	IFS=: read -r id label _ <<< "$b"
	selected "$id" "$label" && runs_swap "$id" && session "$id" swap
done
for b in "${BACKENDS[@]}"; do
	IFS=: read -r id label _ <<< "$b"
	selected "$id" "$label" || continue
	bk_status "$id" >> "$R/status.tsv"
	[ -z "${BK_BAD[$id]:-}" ] || failures=$((failures + 1))
done

ctl stop >/dev/null || echo "bench client: could not tell the server to stop"
[ $loopback = 1 ] && wait
echo "@@BENCH done failures=$failures"
[ $failures = 0 ]
