#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The memory server restarted under a swap load (soft-RoCE, one guest): rswap-server keeps
# its regions in files on a tmpfs (--state-dir), is SIGKILLed while /dev/rswap0 is swapping,
# and started again on the same directory. The kernel's queues see the disconnect, reconnect
# to the restarted server, find the same region (same id and length, a new address and
# key) and go on: every page of the swap workload reads back, no process is killed.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
LOAD=${RSWAP_SWAPLOAD:-$RSWAP_OUT/swapload}
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORT=18519
CFG=/sys/kernel/config/rswap
T=$CFG/restart
CG=/sys/fs/cgroup/rswap-restart
OUT=$RSWAP_OUT/48-restart-swap
SD=/tmp/rswap-48-state
WORK_MB=48
LIMIT_MB=16
mkdir -p "$OUT"

SPID= MOUNTED=
cleanup() {
	swapoff /dev/rswap0 2>/dev/null
	target_cleanup
	rmdir $CG 2>/dev/null
	[ -z "$MOUNTED" ] || umount $SD 2>/dev/null
	true
}
trap cleanup EXIT

setup() {
	[ -f "$KO" ] || ktap_skip_rest "rswap.ko not built"
	[ -x "$SRV" ] || ktap_skip_rest "rswap-server not built (scripts/build-server.sh)"
	[ -x "$LOAD" ] || ktap_skip_rest "no swapload binary at $LOAD"
	rdma_up >/dev/null || ktap_skip_rest "$RDMA_DEV unavailable"
	dmesg_mark "48-restart-swap"

	mkdir -p $SD
	mount -t tmpfs -o size=$((WORK_MB + 64))M,mode=0700 rswap-48 $SD && MOUNTED=1
	start_server() { server_start "$OUT/server.log" --listen "$IP:$PORT" --size $((WORK_MB + 48))M --grace 60 --state-dir $SD --insecure; }
	start_server || ktap_skip_rest "rswap-server --state-dir does not start: $(tail -3 "$OUT/server.log")"
	grep -q '^rswap ' /proc/modules || rswap_load || ktap_skip_rest "insmod failed"
	swapoff -a 2>/dev/null
}

t_swapon() {
	mkdir $T
	echo "$IP" > $T/addr; echo $PORT > $T/port; echo $((WORK_MB + 32))M > $T/size; echo 2 > $T/queues
	if echo 1 > $T/enable && mkswap /dev/rswap0 >/dev/null && swapon -p 100 /dev/rswap0; then
		ktap_pass
		ktap_diag "$(cat $T/state); $(ls $SD | tr '\n' ' ')"
	else
		ktap_fail "$(dmesg | grep rswap | tail -3)"; ktap_skip_rest "no swap"
	fi
}
ktap_test "restart: /dev/rswap0 swaps to a server that keeps its regions in a state directory" t_swapon

# Starts the swap load ($LPID) on the swap of the test before, which t_workload waits
# for; kills the server under it and restarts it.
t_server_killed() {
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	mkdir -p $CG
	echo $((LIMIT_MB << 20)) > $CG/memory.max
	echo max > $CG/memory.swap.max 2>/dev/null
	region0=$(state_field $T region)
	epoch0=$(state_field $T epoch)
	rec0=$(state_field $T recoveries)
	out0=$(vm pswpout)
	# One verify pass: the kill comes during the write phase, and the pass checks every
	# page after it (those swapped out come back from the restarted server).
	SWAPLOAD_PASSES=1 sh -c "echo \$\$ > $CG/cgroup.procs && exec $LOAD $WORK_MB 11" >"$OUT/swapload.json" 2>"$OUT/swapload.err" &
	LPID=$!
	# Kill the server once the workload really swaps (pages went out), so that swap-ins and
	# swap-outs are in flight or about to be.
	swapping=$(wait_swapping $LPID $out0)
	killed_at=$(date +%s)
	kill -KILL "$SPID"; wait "$SPID" 2>/dev/null; SPID=
	sleep 1
	start_server || ktap_diag "restart failed: $(tail -3 "$OUT/server.log")"
	timeout 900 tail --pid=$LPID -f /dev/null
	wait $LPID; lrc=$?
	took=$(( $(date +%s) - killed_at ))
	rec1=$(state_field $T recoveries)
	st=$(cat $T/state)
	# The state line shows the live link's descriptor: the restarted server's epoch.
	epoch1=$(state_field $T epoch)
	srv_epoch=$(grep 'event=descriptor_posted' "$OUT/server.log" | tail -1 | sed -n 's/.* epoch=\([0-9]*\).*/\1/p')
	if [ "$swapping" -ge 2000 ] && grep -q 'event=region_restored' "$OUT/server.log" \
		&& [[ $st == connected* ]] && [ "$rec1" -gt "$rec0" ] && [ "$(state_field $T region)" = "$region0" ] \
		&& [ "$epoch1" -gt "$epoch0" ] && [ "$epoch1" = "$srv_epoch" ] \
		&& ! dmesg | sed -n '/rswap-test-mark: 48-restart-swap/,$p' | grep -q 'no longer holds this client'; then
		ktap_pass
		ktap_diag "killed after $swapping pages went out; workload done ${took}s later; recoveries $rec0 -> $rec1; epoch $epoch0 -> $epoch1; $st" \
			"$(dmesg | grep 'rswap: rswap[0-9]*: queue [0-9]*: reconnected' | tail -1 | sed 's/^\[[^]]*\] //')"
	else
		ktap_fail "pages out before the kill $swapping; state $st; recoveries $rec0 -> $rec1; epoch $epoch0 -> $epoch1 (server $srv_epoch); $(grep -E 'region_(restored|discarded|freed)' "$OUT/server.log" | tail -3); $(dmesg | grep rswap | tail -5)"
	fi
}
ktap_test "restart: the server is SIGKILLed and restarted on its state directory under the swap load; the queues reconnect to the same region; state shows the new epoch" t_server_killed

# The swap load that t_server_killed started and waited for.
t_workload() {
	since_mark() { dmesg | sed -n '/rswap-test-mark: 48-restart-swap/,$p'; }
	if [ $lrc = 0 ] && grep -q '"bad_pages": *0' "$OUT/swapload.json" && ! since_mark | grep -q 'Killed process'; then
		ktap_pass
		ktap_diag "swapload: $(cat "$OUT/swapload.json")"
	else
		ktap_fail "exit $lrc: $(cat "$OUT/swapload.err" "$OUT/swapload.json" | tail -3); $(dmesg | grep -E 'Killed process|rswap' | tail -4)"
	fi
}
ktap_test "restart: the swap workload ends with 0 bad pages and no process killed" t_workload

# A package-style upgrade under a swap load: the server is stopped as a package upgrade
# stops it (SIGTERM: it closes every queue and keeps its regions), and another build of
# the binary (rswap-server-upgrade-test: scripts/build-server.sh builds it tagged, -V
# 0.1.0+upgrade-test) starts on the same state directory. The queues reconnect to the
# same region under the load, and every page reads back.
SRV_NEXT=$SRV-upgrade-test
t_upgrade() {
	[ -x "$SRV_NEXT" ] || { ktap_skip "no second build at $SRV_NEXT (scripts/build-server.sh)"; return; }
	dmesg_mark "48-restart-swap: upgrade"
	region0=$(state_field $T region) rec0=$(state_field $T recoveries) out0=$(vm pswpout)
	# One verify pass: it reads every page back across the upgrade.
	SWAPLOAD_PASSES=1 sh -c "echo \$\$ > $CG/cgroup.procs && exec $LOAD $WORK_MB 12" >"$OUT/upgrade.json" 2>"$OUT/upgrade.err" &
	LPID=$!
	swapping=$(wait_swapping $LPID $out0)
	kill -TERM "$SPID"; wait "$SPID"; trc=$?; SPID=
	SRV=$SRV_NEXT start_server || ktap_diag "the new build did not start: $(tail -3 "$OUT/server.log")"
	timeout 900 tail --pid=$LPID -f /dev/null
	wait $LPID; lrc=$?
	listening=$(grep 'event=listening' "$OUT/server.log" | tail -1)
	killed=$(dmesg | sed -n '/rswap-test-mark: 48-restart-swap: upgrade/,$p' | grep -c 'Killed process')
	rec1=$(state_field $T recoveries) st=$(cat $T/state)
	if [ $trc = 0 ] && [ "$swapping" -ge 2000 ] && [ $lrc = 0 ] && grep -q '"bad_pages": *0' "$OUT/upgrade.json" \
		&& [ "$killed" = 0 ] && [[ $listening == *" restored=1 "*"version=0.1.0+upgrade-test"* ]] \
		&& [[ $st == connected* ]] && [ "$(state_field $T region)" = "$region0" ] && [ "$rec1" -gt "$rec0" ]; then
		ktap_pass
		ktap_diag "stopped after $swapping pages went out; recoveries $rec0 -> $rec1; $(cat "$OUT/upgrade.json")" \
			"${listening#*event=}"
	else
		ktap_fail "old server exit $trc, pages out before the stop $swapping, swapload exit $lrc ($(cat "$OUT/upgrade.err" "$OUT/upgrade.json" | tail -2)), killed $killed, recoveries $rec0 -> $rec1, state $st; new server: $listening; $(dmesg | grep rswap | tail -4)"
	fi
}
ktap_test "restart: a package-style upgrade under the swap load (SIGTERM, another build of the server started on the state directory): the same region, 0 bad pages, no process killed" t_upgrade

t_teardown() {
	rmdir $CG 2>/dev/null
	ok=1
	swapoff /dev/rswap0 || ok=0
	echo 0 > $T/enable || ok=0
	rmdir $T || ok=0
	rmmod rswap || ok=0
	if [ $ok = 1 ]; then ktap_pass; else ktap_fail "$(cat /proc/swaps; dmesg | tail -5)"; fi
	[ -z "$SPID" ] || { kill "$SPID"; wait "$SPID" 2>/dev/null; SPID=; }
}
ktap_test "restart: swapoff, disable and rmmod work" t_teardown

ktap_test "dmesg: no BUG/WARNING/Oops in the restart tests" dmesg_check_noting

ktap_run setup
