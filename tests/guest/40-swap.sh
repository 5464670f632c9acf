#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# /dev/rswap0 as swap: a cgroup limited to 16 MiB runs a program that writes a checksummed
# pattern to 48 MiB and verifies every page twice; pages must really go out to the
# remote memory and come back intact. rmmod, disable and rmdir of the target are refused
# while swapped on (under the load); swapoff brings everything back. Then the same with
# synchronous swap-in (sync_swapin=1, 16 MiB in an 8 MiB cgroup): the
# attribute refuses bad values and writes while enabled, the workload ends with 0 bad
# pages, and the kernel really took the synchronous path: it swapped pages in without
# reading any ahead (swap_ra in /proc/vmstat stays still, where the first run's moved).
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
LOAD=${RSWAP_SWAPLOAD:-$RSWAP_OUT/swapload}
SERVER_IP=${RSWAP_PEER_IP:-${RSWAP_GUEST_IP:-192.0.2.1}}
PORT=${RSWAP_SWAP_PORT:-18516}
CFG=/sys/kernel/config/rswap
T=$CFG/swap0
CG=/sys/fs/cgroup/rswap-swaptest
OUT=$RSWAP_OUT/40-swap
# Three times the cgroup's limit: two thirds of the working set is out on the disk at
# any time.
WORK_MB=${RSWAP_SWAP_WORK_MB:-48}
LIMIT_MB=${RSWAP_SWAP_LIMIT_MB:-16}
# The synchronous swap-in run: a second target, 16 MiB in an 8 MiB cgroup. Every page it
# swaps in is one read waited for (no readahead), so its time goes with the pages and
# with what else runs on the host: 36 MiB in 12 took 38 s on a quiet host and 271 s with
# a kernel build beside the guest (2026-11-28); 2048 pages swapped in show the path as well.
# RSWAP_SWAP_SYNC_LOAD=0 leaves its workload out (skipped, with the reason): the two-guest
# run does, whose every synchronous swap-in crosses the link (about 8 ms a page under TCG)
# to test what this guest's run tests already.
T2=$CFG/swapsync
SYNC_WORK_MB=16 SYNC_LIMIT_MB=8
SYNC_LOAD=${RSWAP_SWAP_SYNC_LOAD:-1}
mkdir -p "$OUT"

SPID=
cleanup() {
	swapoff /dev/rswap0 2>/dev/null
	{ [ -d $T2 ] && echo 0 > $T2/enable; } 2>/dev/null
	rmdir $T2 2>/dev/null
	target_cleanup
	rmdir $CG 2>/dev/null
	true
}
trap cleanup EXIT

setup() {
	[ -f "$KO" ] || ktap_skip_rest "rswap.ko not built"
	[ -x "$LOAD" ] || ktap_skip_rest "no swapload binary at $LOAD"
	rdma_up >/dev/null || ktap_skip_rest "$RDMA_DEV unavailable"
	dmesg_mark "40-swap"
	if [ -z "${RSWAP_PEER_IP:-}" ]; then
		[ -x "$SRV" ] || ktap_skip_rest "rswap-server not built"
		# Room for both targets: the first one's region outlives it by the grace period.
		"$SRV" --listen "$SERVER_IP:$PORT" --size $((WORK_MB + SYNC_WORK_MB + 96))M --insecure >"$OUT/server.log" 2>&1 &
		SPID=$!
		for _ in $(seq 100); do grep -q listening "$OUT/server.log" && break; sleep 0.1; done
	fi
	grep -q '^rswap ' /proc/modules || rswap_load || ktap_skip_rest "insmod failed"
	swapoff -a 2>/dev/null
	mkdir -p $T
	echo "$SERVER_IP" > $T/addr; echo $PORT > $T/port; echo $((WORK_MB + 32))M > $T/size
	echo 1 > $T/enable || ktap_skip_rest "enable failed: $(dmesg | tail -3)"

	# Where the kernel has dynamic debug, turn on soft-RoCE's error-path messages (not its
	# per-packet ones), so a QP that goes to the error state says why.
	DYNDBG=/proc/dynamic_debug/control
	if [ -w $DYNDBG ]; then
		for q in 'file rxe_req.c +p' 'file rxe_net.c +p' 'file rxe_mr.c +p' \
			'module rdma_rxe format "moved to error state" +p' 'module rdma_rxe format "Failed sending" +p'; do
			echo "$q" > $DYNDBG 2>/dev/null
		done
	fi
}

t_swapon() {
	if mkswap /dev/rswap0 >/dev/null && swapon -p 100 /dev/rswap0 \
		&& awk '$1 == "/dev/rswap0" && $5 == 100 { f = 1 } END { exit !f }' /proc/swaps; then
		ktap_pass
	else
		ktap_fail "$(cat /proc/swaps)"; ktap_skip_rest "no swap"
	fi
}
ktap_test "swap: mkswap + swapon /dev/rswap0 at priority 100" t_swapon

# Starts the load ($LPID, and the slab sampler) that the next two tests wait for and
# count.
t_busy_under_load() {
	in0=$(vm pswpin); out0=$(vm pswpout); ra0=$(vm swap_ra)
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	mkdir -p $CG
	echo $((LIMIT_MB << 20)) > $CG/memory.max
	echo max > $CG/memory.swap.max 2>/dev/null
	# Sample the kernel's unreclaimable slab while the load runs: the peak, and the largest
	# slab caches at that moment (a kernel running short of memory is where RDMA errors come
	# from; see Documentation/testing.md).
	( peak=0
	while sleep 2; do
		su=$(awk '$1 == "SUnreclaim:" { print $2 }' /proc/meminfo)
		if [ "$su" -gt "$peak" ]; then
			peak=$su
			{ echo "SUnreclaim ${su} kB MemFree $(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo) kB at ${SECONDS}s"
			  awk 'NR > 2 { printf "%s %d kB\n", $1, $3 * $4 / 1024 }' /proc/slabinfo 2>/dev/null | sort -k2 -rn | head -4
			} > "$OUT/slab-peak.txt"
		fi
	done ) &
	SAMPLER=$!
	start=$(date +%s)
	sh -c "echo \$\$ > $CG/cgroup.procs && exec $LOAD $WORK_MB 7" >"$OUT/swapload.json" 2>"$OUT/swapload.err" &
	LPID=$!
	# Once pages really go out, try to take the disk away from under the swap.
	swapping=$(wait_swapping $LPID $out0)
	r1=0; e1=$(rmdir $T 2>&1) && r1=1
	r2=0; e2=$( (echo 0 > $T/enable) 2>&1) && r2=1
	if [ "$swapping" -ge 2000 ] && [ $r1 = 0 ] && [ $r2 = 0 ] && [[ $e1 == *busy* ]] && [[ $e2 == *busy* ]] \
		&& [ -d $T ] && [ -b /dev/rswap0 ] && [ "$(cat $T/enable)" = 1 ]; then
		ktap_pass
		ktap_diag "after $swapping pages out: rmdir: ${e1##*: }; disable: ${e2##*: }"
	else
		ktap_fail "pages out $swapping; rmdir succeeded=$r1 ($e1); disable succeeded=$r2 ($e2)"
	fi
}
ktap_test "swap: under the load, rmdir and disable of the target are refused with EBUSY; the disk stays" t_busy_under_load

# The load of the test before.
t_checksums() {
	wait $LPID
	lrc=$?
	kill $SAMPLER 2>/dev/null; wait $SAMPLER 2>/dev/null
	took=$(( $(date +%s) - start ))
	peak=$(awk '$1 == "/dev/rswap0" { print $4 }' /proc/swaps)
	in1=$(vm pswpin); out1=$(vm pswpout); ra1=$(vm swap_ra)
	if [ $lrc = 0 ] && grep -q '"bad_pages": *0' "$OUT/swapload.json"; then
		ktap_pass
		ktap_diag "swapload: ${took}s: $(cat "$OUT/swapload.json")"
	else
		ktap_fail "exit $lrc: $(cat "$OUT/swapload.err" "$OUT/swapload.json")"
	fi
}
ktap_test "swap: ${WORK_MB} MiB checksummed pattern in a ${LIMIT_MB} MiB cgroup, every page verified twice, 0 mismatches" t_checksums

# The counters read before and after the load (the two tests before); sets $dra, the
# readahead the next workload must not have.
t_pages_moved() {
	ktap_diag "rswap state: $(cat $T/state)"
	[ -f "$OUT/slab-peak.txt" ] && sed 's/^/peak slab: /' "$OUT/slab-peak.txt" | while IFS= read -r l; do ktap_diag "$l"; done
	since_mark() { dmesg | sed -n '/rswap-test-mark: 40-swap/,$p'; }
	since_mark | grep 'rswap: rswap[0-9]*: queue [0-9]*: ' | sed 's/^\[[^]]*\] //' | sort | uniq -c | sort -rn | head -5 | sed 's/^/# recovery log: /'
	since_mark | grep -E 'qp#[0-9]+|mr#[0-9]+' | sed 's/^\[[^]]*\] //' | sort | uniq -c | sort -rn | head -8 | sed 's/^/# rxe debug: /'
	rdma statistic show link $RDMA_DEV/1 2>/dev/null | tr -s ' \t' ' ' | fold -s -w 140 | sed "s/^/# $RDMA_DEV counters: /"
	dout=$((out1 - out0)); din=$((in1 - in0))
	dra=$((ra1 - ra0))
	ktap_diag "pswpout +$dout pswpin +$din pages, swap_ra +$dra (read ahead); /dev/rswap0 used ${peak} KiB after the run"
	# At least the part of the working set above the limit must have gone out and come back.
	need=$(( (WORK_MB - LIMIT_MB) * 256 ))
	if [ $dout -ge $need ] && [ $din -ge $need ]; then ktap_pass
	else ktap_fail "expected >= $need pages each way"; fi
}
ktap_test "swap: pages really went out to and came back from /dev/rswap0 (vmstat, /proc/swaps)" t_pages_moved

t_rmmod_refused() {
	r=0; rmmod rswap 2>/dev/null && r=1
	if [ $r = 0 ] && grep -q '^rswap ' /proc/modules; then ktap_pass
	else ktap_fail "rmmod succeeded while swapped on"; ktap_skip_rest "module gone"; fi
}
ktap_test "swap: rmmod is refused while swapped on" t_rmmod_refused

t_swapoff() {
	rmdir $CG 2>/dev/null
	ok=1
	swapoff /dev/rswap0 || ok=0
	grep -q rswap0 /proc/swaps && ok=0
	echo 0 > $T/enable || ok=0
	rmdir $T || ok=0
	rmmod rswap || ok=0
	if [ $ok = 1 ]; then ktap_pass; else ktap_fail "$(cat /proc/swaps; dmesg | tail -5)"; fi
}
ktap_test "swap: swapoff brings everything back; disable and rmmod then work" t_swapoff

# Synchronous swap-in. The attribute first: default, a bad value, a write while enabled.
t_sync_attribute() {
	grep -q '^rswap ' /proc/modules || rswap_load || ktap_skip_rest "insmod failed"
	mkdir -p $T2
	def=$(cat $T2/sync_swapin 2>&1)
	bad=0; (echo 2 > $T2/sync_swapin) 2>/dev/null && bad=1
	why=$(cat $T2/last_error)
	echo "$SERVER_IP" > $T2/addr; echo $PORT > $T2/port; echo $((SYNC_WORK_MB + 32))M > $T2/size
	set1=0; echo 1 > $T2/sync_swapin && set1=1
	echo 1 > $T2/enable || ktap_skip_rest "enable with sync_swapin=1 failed: $(cat $T2/last_error)"
	busy=0; e=$( (echo 0 > $T2/sync_swapin) 2>&1) || busy=1
	why2=$(cat $T2/last_error)
	if [ "$def" = 0 ] && [ $bad = 0 ] && [[ $why == "sync_swapin: not a boolean"* ]] && [ $set1 = 1 ] \
		&& [ $busy = 1 ] && [[ $e == *busy* ]] && [[ $why2 == "sync_swapin: read-only while enabled"* ]] \
		&& [ "$(cat $T2/sync_swapin)" = 1 ]; then
		ktap_pass
		ktap_diag "refused: $why; while enabled: $why2"
	else
		ktap_fail "default '$def'; bad value accepted=$bad ($why); set=$set1; refused while enabled=$busy ($e: $why2)"
	fi
}
ktap_test "sync_swapin: off by default; a bad value is refused with a reason; read-only while enabled" t_sync_attribute

# The workload on the synchronous disk. swapon marks a swap area on a disk that declares
# BLK_FEAT_SYNCHRONOUS with SWP_SYNCHRONOUS_IO, which nothing shows but what swap does: a
# fault then reads its page without the swap cache's readahead, so swap_ra stays still.
# On the target $T2 of the test before; $dra from t_pages_moved.
t_sync_workload() {
	dev=/dev/$(cat $T2/device)
	if [[ $(uname -r) == *-rswap-debug ]]; then
		# On the debug kernel this second workload runs the one guest short of memory:
		# soft-RoCE fails an atomic skb allocation and drops queue 0's connection, and the
		# memory server, in the same guest, stalls until recovery_ms runs out, so the queue
		# dies with pages on it (seen twice on 2026-11-24; the second time they included the
		# test runner's, and the guest panicked). With the server on another host it does
		# not arise; the stock kernel runs the case.
		ktap_skip "the debug kernel's one guest runs out of memory for soft-RoCE and its co-located server in this second workload"
	elif [ "$SYNC_LOAD" = 0 ]; then
		ktap_skip "left out here (RSWAP_SWAP_SYNC_LOAD=0): the single guest's 40-swap runs it"
	elif mkswap "$dev" >/dev/null && swapon -p 100 "$dev"; then
		dmesg | grep -o "$(basename "$dev"): synchronous (sync_swapin=1).*" | tail -1 | sed 's/^/# /'
		in0=$(vm pswpin); ra0=$(vm swap_ra)
		mkdir -p $CG
		echo $((SYNC_LIMIT_MB << 20)) > $CG/memory.max
		echo max > $CG/memory.swap.max 2>/dev/null
		start=$(date +%s)
		sh -c "echo \$\$ > $CG/cgroup.procs && exec $LOAD $SYNC_WORK_MB 7" >"$OUT/swapload-sync.json" 2>"$OUT/swapload-sync.err"
		lrc=$?
		took=$(( $(date +%s) - start ))
		sin=$(( $(vm pswpin) - in0 )) sra=$(( $(vm swap_ra) - ra0 ))
		need=$(( (SYNC_WORK_MB - SYNC_LIMIT_MB) * 256 ))
		if [ $lrc = 0 ] && grep -q '"bad_pages": *0' "$OUT/swapload-sync.json" && [ $sin -ge $need ] \
			&& [ $sra = 0 ] && [ "$dra" -gt 0 ]; then
			ktap_pass
		else
			ktap_fail "exit $lrc; pswpin +$sin (want >= $need); swap_ra +$sra (want 0; without sync_swapin +$dra, want > 0): $(cat "$OUT/swapload-sync.err" "$OUT/swapload-sync.json")"
		fi
		ktap_diag "sync_swapin=1: ${took}s, pswpin +$sin, swap_ra +$sra: $(cat "$OUT/swapload-sync.json")"
		rmdir $CG 2>/dev/null
		swapoff "$dev"
	else
		ktap_fail "mkswap/swapon $dev failed: $(cat /proc/swaps)"
	fi
	echo 0 > $T2/enable && rmdir $T2 && rmmod rswap || ktap_diag "teardown after sync_swapin: $(dmesg | tail -3)"
	[ -z "$SPID" ] || { kill "$SPID"; wait "$SPID"; SPID=; }
}
ktap_test "sync_swapin=1: ${SYNC_WORK_MB} MiB in a ${SYNC_LIMIT_MB} MiB cgroup, 0 mismatches; the kernel swapped in without readahead (swap_ra still, it moved without sync_swapin)" t_sync_workload

t_dmesg() {
	n=$(dmesg_alloc_failures)
	[ "$n" = 0 ] || ktap_diag "$n atomic allocation failures reported by the kernel during the swap tests (memory pressure, not counted as a kernel bug)"
	ktap_check dmesg_clean
}
ktap_test "dmesg: no BUG/WARNING/Oops in the swap tests" t_dmesg

ktap_run setup
