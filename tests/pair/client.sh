#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The client guest of a two-guest run: /dev/rswap0 backed by rswap-server in the other
# guest, so nothing depends on soft-RoCE's same-host loopback. fio verify, then the swap
# suite (tests/guest/40-swap.sh) against the remote server.
. "$RSWAP_TOP/tests/lib/guest.sh"
CFG=/sys/kernel/config/rswap
T=$CFG/remote
OUT=$RSWAP_OUT/pair
mkdir -p "$OUT"
setup() {
	rdma_up >/dev/null || { echo "soft-RoCE unavailable"; exit 1; }
	trap ghost_target EXIT
	rswap_load
}

# The tests run in this order on one target, $T: t_enable makes it, the later ones use it
# (and the 4 MiB at 8 MiB that t_data_on_server wrote, /tmp/r4), t_timeout removes it.
t_enable() {
	mkdir $T
	echo "$RSWAP_PEER_IP" > $T/addr; echo 7471 > $T/port; echo 64M > $T/size; echo 2 > $T/queues
	ok=0
	for _ in $(seq 60); do # the server guest may still be booting
		echo 1 > $T/enable 2>/dev/null && { ok=1; break; }
		sleep 2
	done
	if [ $ok = 1 ] && [ -b /dev/rswap0 ]; then ktap_pass; ktap_diag "$(cat $T/state)"
	else ktap_fail "$(dmesg | grep rswap | tail -5)"; fi
}
ktap_test "two guests: enable connects to the server in the other guest" t_enable

# 16 MiB a job, each at the start of its half of the disk (the whole disk, 2 x 32 MiB, took
# 23 s of make check's time: every byte crosses the link twice).
t_fio_verify() {
	fio --name=verify --filename=/dev/rswap0 --direct=1 --ioengine=libaio --rw=randwrite \
		--bsrange=4k-128k --iodepth=32 --numjobs=2 --size=16M --offset_increment=32M \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting \
		--output-format=json --output="$OUT/fio-verify.json" >"$OUT/fio-verify.log" 2>&1
	frc=$?
	errs=$(grep -o '"total_err" : [0-9]*' "$OUT/fio-verify.json" 2>/dev/null | awk '{ s += $3 } END { print s + 0 }')
	if [ $frc = 0 ] && [ "$errs" = 0 ]; then ktap_pass
	else ktap_fail "fio exit $frc errors $errs: $(tail -5 "$OUT/fio-verify.log")"; fi
}
ktap_test "two guests: fio verify (crc32c), random writes then reads, 4k..128k, iodepth 32, 2 jobs" t_fio_verify

t_data_on_server() {
	head -c 4M /dev/urandom > /tmp/r4
	dd if=/tmp/r4 of=/dev/rswap0 bs=1M seek=8 oflag=direct status=none
	echo 0 > $T/enable; echo 1 > $T/enable
	if dd if=/dev/rswap0 bs=1M skip=8 count=4 iflag=direct status=none | cmp -s - /tmp/r4; then ktap_pass
	else ktap_fail "$(cat $T/state)"; fi
}
ktap_test "two guests: data lives on the server guest: after disable and a reconnect it reads back" t_data_on_server

# The RDMA device goes away (hot unplug, rdma link delete) and comes back: its removal
# starts recovery, which lands on the new device once it routes to the server.
t_device_readded() {
	rec0=$(state_field $T recoveries)
	rdma link delete $RDMA_DEV
	sleep 2
	rdma_up >/dev/null
	for _ in $(seq 60); do
		[[ $(cat $T/state) == connected* ]] && [ "$(state_field $T recoveries)" -ge $((rec0 + 2)) ] && break
		sleep 0.5
	done
	if [[ $(cat $T/state) == connected* ]] \
		&& dd if=/dev/rswap0 bs=1M skip=8 count=4 iflag=direct status=none | cmp -s - /tmp/r4; then
		ktap_pass
		ktap_diag "recoveries $rec0 -> $(state_field $T recoveries); $(cat $T/state)"
	else
		ktap_fail "state $(cat $T/state); $(dmesg | grep rswap | tail -6)"
	fi
}
ktap_test "two guests: the client's RDMA device is removed and added back while idle; the queues reconnect on it and the data reads back" t_device_readded

# The same under polled I/O: the removal tears the poll queue down while its submitter
# polls it; the flushed requests wait for recovery, which reconnects every queue on the
# new device, and are issued again there. fio verifies what it wrote across the removal,
# away from the 4 MiB the other cases read back.
t_polled_device_readded() {
	[ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" = 2 ] && echo 0 > /proc/sys/kernel/io_uring_disabled
	echo 0 > $T/enable; echo 1 > $T/poll_queues
	if echo 1 > $T/enable && [[ $(cat $T/state) == "connected queues=3/3 "* ]]; then
		rec0=$(state_field $T recoveries)
		p0=$(awk '$1 == "queue2" { for (i = 2; i <= NF; i++) if ($i ~ /^reads=/) print substr($i, 7) }' $T/stats)
		fio --name=polled-removal --filename=/dev/rswap0 --direct=1 --ioengine=io_uring --hipri=1 \
			--rw=randwrite --bsrange=4k-64k --iodepth=16 --offset=32M --size=24M --verify=crc32c \
			--verify_fatal=1 --do_verify=1 --verify_state_save=0 --output-format=json \
			--output="$OUT/fio-polled-removal.json" >"$OUT/fio-polled-removal.log" 2>&1 &
		fpid=$!
		sleep 3
		rdma link delete $RDMA_DEV
		sleep 2
		rdma_up >/dev/null
		wait_exit $fpid 240
		frc=$?
		[ $frc = 124 ] && kill -KILL $fpid 2>/dev/null
		for _ in $(seq 60); do
			[[ $(cat $T/state) == "connected queues=3/3 "* ]] && [ "$(state_field $T recoveries)" -ge $((rec0 + 3)) ] && break
			sleep 0.5
		done
		errs=$(grep -o '"total_err" : [0-9]*' "$OUT/fio-polled-removal.json" 2>/dev/null | awk '{ s += $3 } END { print s + 0 }')
		p1=$(awk '$1 == "queue2" { for (i = 2; i <= NF; i++) if ($i ~ /^reads=/) print substr($i, 7) }' $T/stats)
		if [ $frc = 0 ] && [ "$errs" = 0 ] && [[ $(cat $T/state) == "connected queues=3/3 "* ]] \
			&& [ "$(state_field $T recoveries)" -ge $((rec0 + 3)) ] && [ "${p1:-0}" -gt "${p0:-0}" ]; then
			ktap_pass
			ktap_diag "recoveries $rec0 -> $(state_field $T recoveries), retried $(state_field $T retried); poll queue reads ${p0:-?} -> ${p1:-?}; $(cat $T/state)"
		else
			ktap_fail "fio exit $frc errors $errs; poll queue reads ${p0:-?} -> ${p1:-?}; state $(cat $T/state); $(tail -3 "$OUT/fio-polled-removal.log"); $(dmesg | grep rswap | tail -6)"
		fi
	else
		ktap_fail "enable with a poll queue: $(cat $T/state); $(cat $T/last_error)"
	fi
	echo 0 > $T/enable; echo 0 > $T/poll_queues; echo 1 > $T/enable
}
ktap_test "two guests: the RDMA device is removed and added back under polled fio verify (io_uring --hipri, poll_queues=1): every queue reconnects on the new device, fio ends with 0 errors" t_polled_device_readded

# A silent server while the disk is idle: nothing in flight, every packet dropped. Only the
# keep-alive can notice: a probe goes unanswered (or fails), the queues go into recovery,
# and reconnect once packets flow again, to the same region.
t_keepalive_idle() {
	modprobe sch_netem 2>/dev/null
	echo 0 > $T/enable; echo 2000 > $T/keepalive_ms; echo 1 > $T/enable
	rec0=$(state_field $T recoveries)
	if tc qdisc add dev eth0 root netem loss 100%; then
		start=$(date +%s%N)
		for _ in $(seq 300); do
			[[ $(cat $T/state) == connected* ]] || break
			sleep 0.1
		done
		ms=$(( ($(date +%s%N) - start) / 1000000 ))
		st=$(cat $T/state)
		sleep 2
		tc qdisc del dev eth0 root
		for _ in $(seq 180); do
			[[ $(cat $T/state) == connected* ]] && [ "$(state_field $T recoveries)" -ge $((rec0 + 2)) ] && break
			sleep 0.5
		done
		limit=$((2 * 2000 + 2000))
		if [[ $st != connected* ]] && [ $ms -le $limit ] && [[ $(cat $T/state) == connected* ]] \
			&& dd if=/dev/rswap0 bs=1M skip=8 count=4 iflag=direct status=none | cmp -s - /tmp/r4; then
			ktap_pass
			ktap_diag "noticed after ${ms} ms (limit ${limit}): $st; $(dmesg | grep -E 'rswap: rswap[0-9]*: queue 0: (keep-alive|reconnected)' | tail -2 | sed 's/^\[[^]]*\] //' | tr '\n' ' ')"
		else
			ktap_fail "state after ${ms} ms: $st; now $(cat $T/state); $(dmesg | grep rswap | tail -6)"
		fi
	else
		ktap_skip "no netem qdisc in this kernel"
	fi
}
ktap_test "two guests: keep-alive: an idle disk notices a silent server (every packet dropped) within 2 x keepalive_ms + 2 s; when packets flow again it reconnects and the data reads back" t_keepalive_idle

# The same silence with an idle poll queue: its probe completes only when polled, so its
# keep-alive polls the queue itself, and that must not hide a probe nobody answered.
# Queues 0 and 1 notice on their own; the check is on queue 2's own log line.
t_keepalive_poll() {
	echo 0 > $T/enable; echo 1 > $T/poll_queues
	if ! echo 1 > $T/enable || [[ $(cat $T/state) != "connected queues=3/3 "* ]]; then
		ktap_fail "enable with a poll queue: $(cat $T/state); $(cat $T/last_error)"
	elif tc qdisc add dev eth0 root netem loss 100%; then
		dmesg_mark "pair: silent poll"
		rec0=$(state_field $T recoveries)
		start=$(date +%s%N)
		line=
		for _ in $(seq 150); do
			line=$(dmesg | sed -n '/rswap-test-mark: pair: silent poll/,$p' \
				| grep -E -m1 'rswap: rswap[0-9]*: queue 2: keep-alive probe (unanswered|failed)')
			[ -n "$line" ] && break
			sleep 0.1
		done
		ms=$(( ($(date +%s%N) - start) / 1000000 ))
		sleep 2
		tc qdisc del dev eth0 root
		for _ in $(seq 180); do
			[[ $(cat $T/state) == "connected queues=3/3 "* ]] && [ "$(state_field $T recoveries)" -ge $((rec0 + 3)) ] && break
			sleep 0.5
		done
		limit=$((2 * 2000 + 2000))
		if [ -n "$line" ] && [ $ms -le $limit ] && [[ $(cat $T/state) == "connected queues=3/3 "* ]] \
			&& dd if=/dev/rswap0 bs=1M skip=8 count=4 iflag=direct status=none | cmp -s - /tmp/r4; then
			ktap_pass
			ktap_diag "queue 2 noticed after ${ms} ms (limit ${limit}): ${line#*] }" "recoveries $rec0 -> $(state_field $T recoveries); $(cat $T/state)"
		else
			ktap_fail "queue 2's line after ${ms} ms: '$line'; now $(cat $T/state); $(dmesg | grep rswap | tail -6)"
		fi
	else
		ktap_skip "no netem qdisc in this kernel"
	fi
	echo 0 > $T/enable; echo 0 > $T/poll_queues; echo 5000 > $T/keepalive_ms; echo 1 > $T/enable
}
ktap_test "two guests: keep-alive: an idle poll queue (poll_queues=1) notices a silent server by itself within 2 x keepalive_ms + 2 s; when packets flow again all three queues reconnect and the data reads back" t_keepalive_poll

# A network blackout under a read: the read times out (io_timeout 5 s; soft-RoCE's own
# retries outlast a 12 s blackout), the timeout starts recovery, which takes the queue
# down and reconnects once packets flow again, and the read is issued again.
t_blackout() {
	rec0=$(state_field $T recoveries)
	echo 5000 > /sys/block/rswap0/queue/io_timeout
	if tc qdisc add dev eth0 root netem loss 100%; then
		dd if=/dev/rswap0 of=/tmp/r4b bs=1M skip=8 count=4 iflag=direct status=none 2>"$OUT/blackout.err" &
		ddpid=$!
		sleep 12
		tc qdisc del dev eth0 root
		timeout 180 tail --pid=$ddpid -f /dev/null
		wait $ddpid; rc=$?
		rec1=$(state_field $T recoveries)
		same=no; cmp -s /tmp/r4 /tmp/r4b && same=yes
		if [ $rc = 0 ] && [ $same = yes ] && [ "$rec1" -gt "$rec0" ]; then
			ktap_pass
			ktap_diag "recoveries $rec0 -> $rec1; $(dmesg | grep 'rswap: rswap[0-9]*: queue [0-9]*: reconnected' | tail -1 | sed 's/^\[[^]]*\] //')"
		else
			ktap_fail "dd exit $rc, same data $same, recoveries $rec0 -> $rec1; $(cat "$OUT/blackout.err"); $(dmesg | grep rswap | tail -6)"
		fi
	else
		ktap_skip "no netem qdisc in this kernel"
	fi
}
ktap_test "two guests: the link drops every packet for 12 s under a read; the read times out, the queue recovers, the read returns the right data" t_blackout

# Late binding: a disk over three servers in the other guest (code 2+1, one address each,
# tests/pair/server.sh), one of which is slowed by 30 ms (netem on the packets to its
# address). With extra_reads=1 a read asks all three and ends with the first two, so the
# 4 KiB QD1 read latency stays near the unslowed one; with extra_reads=0 the reads that
# need the slow server's fragment (two groups in three) wait for it.
LATE_DELAY_MS=30
# p50 ARGS: the median completion latency (us) of 100 4 KiB QD1 random reads of the first
# 4 MiB of $dev (what the test wrote).
p50() {
	fio --name=p50 --filename=$dev --direct=1 --ioengine=psync --rw=randread --bs=4k \
		--size=4M --number_ios=100 --output-format=json "$@" 2>/dev/null \
		| python3 -c 'import json, sys; j = json.load(sys.stdin); print(int(j["jobs"][0]["read"]["clat_ns"]["percentile"]["50.000000"] / 1000))'
}
t_late_binding() {
	local ec=$CFG/late why= base slow1 slow0
	# The servers' addresses are resolved (ARP) for the first time here: on a loaded host
	# that took over the default 5 s once, so the connect waits longer, and is tried again.
	late_enable() { # EXTRA
		mkdir -p $ec && echo 2+1 > $ec/code && echo 16M > $ec/size && echo 1 > $ec/queues \
			&& echo 192.0.2.12:7481,192.0.2.13:7482,192.0.2.14:7483 > $ec/servers \
			&& echo "$1" > $ec/extra_reads && echo 0x5a70 > $ec/client_id \
			&& echo 20000 > $ec/timeout_ms || return 1
		local _
		for _ in 1 2 3; do echo 1 > $ec/enable 2>/dev/null && return 0; sleep 2; done
		return 1
	}
	if ! late_enable 1; then
		ktap_fail "enable: $(cat $ec/last_error 2>&1)"; rmdir $ec 2>/dev/null; return
	fi
	dev=/dev/$(cat $ec/device)
	head -c 4M /dev/urandom > /tmp/late4
	dd if=/tmp/late4 of=$dev bs=64k oflag=direct status=none || why+="write failed; "
	base=$(p50)
	if ! { tc qdisc add dev eth0 root handle 1: prio \
		&& tc qdisc add dev eth0 parent 1:3 handle 30: netem delay ${LATE_DELAY_MS}ms \
		&& tc filter add dev eth0 parent 1: protocol ip u32 match ip dst 192.0.2.14/32 flowid 1:3; } \
		2>"$OUT/late-tc.err"; then
		tc qdisc del dev eth0 root 2>/dev/null
		echo 0 > $ec/enable; rmdir $ec
		ktap_skip "this kernel cannot delay one address (prio, netem, u32): $(head -1 "$OUT/late-tc.err")"
		return
	fi
	slow1=$(p50)
	late1=$(grep '^code ' $ec/stats)
	echo 0 > $ec/enable && late_enable 0 || why+="enable with extra_reads=0: $(cat $ec/last_error 2>&1); "
	slow0=$(p50)
	tc qdisc del dev eth0 root 2>/dev/null
	dd if=$dev bs=64k count=64 iflag=direct status=none | cmp -s - /tmp/late4 || why+="data read back differs; "
	echo 0 > $ec/enable; rmdir $ec
	# Robust bounds (TCG's own latency is a few ms): the slowed server costs extra_reads=1
	# under half its delay, and extra_reads=0 at least most of it.
	[ -n "$base" ] && [ -n "$slow1" ] && [ -n "$slow0" ] || why+="no latency from fio ($base, $slow1, $slow0); "
	if [ -z "$why" ]; then
		[ "$slow1" -lt $((base + LATE_DELAY_MS * 500)) ] || why+="extra_reads=1 waited for the slow server; "
		[ "$slow0" -ge $((LATE_DELAY_MS * 800)) ] || why+="extra_reads=0 did not wait for the slow server; "
	fi
	local ratios
	ratios=$(awk -v b="$base" -v s1="$slow1" -v s0="$slow0" 'BEGIN { printf "extra_reads=1 %.2fx, extra_reads=0 %.2fx of the unslowed run", s1 / b, s0 / b }')
	if [ -z "$why" ]; then
		ktap_pass
	else
		ktap_fail "$why"
	fi
	ktap_diag "4 KiB QD1 read p50: unslowed $base us; one server +${LATE_DELAY_MS} ms: extra_reads=1 $slow1 us, extra_reads=0 $slow0 us ($ratios); $late1"
}
ktap_test "two guests: late binding: one of three servers slowed by 30 ms: with extra_reads=1 the 4 KiB QD1 read latency stays near the unslowed one, with extra_reads=0 it does not" t_late_binding

# The request timeout with recovery off: the link drops everything, the disk's timeout is
# far below the RDMA retry time, so blk-mq's timeout handler runs: it tears the queue
# down, which ends the request with an I/O error.
t_timeout() {
	echo 0 > $T/enable; echo 0 > $T/recovery_ms; echo 1 > $T/enable
	echo 1 > /sys/block/rswap0/queue/io_timeout 2>/dev/null || echo 100 > /sys/block/rswap0/queue/io_timeout
	dmesg_mark "timeout"
	if tc qdisc add dev eth0 root netem loss 100%; then
		start=$(date +%s)
		timeout 120 dd if=/dev/rswap0 of=/dev/null bs=4k count=1 skip=3 iflag=direct status=none 2>/dev/null; rc=$?
		took=$(( $(date +%s) - start ))
		tc qdisc del dev eth0 root
		if [ $rc != 0 ] && [ $rc != 124 ] && dmesg | grep -q 'rswap: rswap[0-9]*: queue [0-9]*: request at sector .* timed out'; then
			ktap_pass
			ktap_diag "read failed after ${took}s; state: $(cat $T/state)"
		else
			ktap_fail "dd exit $rc after ${took}s; $(dmesg | grep rswap | tail -4)"
		fi
	else
		ktap_skip "no netem qdisc in this kernel"
	fi
	echo 0 > $T/enable; rmdir $T; rmmod rswap
}
ktap_test "two guests: with recovery off and the link dropping every packet, a read times out, its queue is torn down, the read fails" t_timeout

# The swap suite, with the server in the other guest (it starts none of its own): each of
# its tests is one here, named "two guests: NAME". The first runs the suite ($SWAP_KTAP;
# as it goes, also in $OUT/40-swap.ktap), the others report what it printed for them.
# 32 MiB in a 16 MiB cgroup: the single guest's run has the large working set (72 MiB);
# this one adds the remote server, and every page swapped in crosses the link, so its
# time goes with the size (64 MiB in 32 and 32 in 16 took 135 s of make check's time).
# The synchronous swap-in workload is the single guest's only: here, about 8 ms a page
# under TCG, 16 MiB in 8 took 53 s of the pair's 249 s (a run of 2026-11-28).
SWAP_ENV=(RSWAP_SWAP_PORT=7471 RSWAP_SWAP_WORK_MB=32 RSWAP_SWAP_LIMIT_MB=16 RSWAP_SWAP_SYNC_LOAD=0)
SWAP_KTAP='' SWAP_RAN=''
t_swap() {
	if [ -z "$SWAP_RAN" ]; then
		SWAP_KTAP=$(env "${SWAP_ENV[@]}" bash "$RSWAP_TOP/tests/guest/40-swap.sh" | tee "$OUT/40-swap.ktap")
		SWAP_RAN=1
	fi
	ktap_relay "$SWAP_KTAP" "$1"
}
# A suite that cannot list its tests is one failing test here, not none.
if swap_tests=$(env "${SWAP_ENV[@]}" KTAP_LIST=1 bash "$RSWAP_TOP/tests/guest/40-swap.sh") \
	&& [ -n "$swap_tests" ]; then
	# (A here-string: the guest has no /dev/fd for process substitution.)
	while IFS= read -r n; do ktap_test "two guests: $n" t_swap "$n"; done <<<"$swap_tests"
else
	ktap_test "two guests: tests/guest/40-swap.sh lists its tests" ktap_fail "KTAP_LIST=1 printed: $swap_tests"
fi

# Last, as this script exits: a target left enabled when this guest powers off (the server
# guest checks that its keep-alive notices, tests/pair/server.sh; its server of its own,
# at port 7475, notices sooner than the main one).
ghost_target() {
	rswap_load
	mkdir $CFG/ghost
	echo "$RSWAP_PEER_IP" > $CFG/ghost/addr; echo 7475 > $CFG/ghost/port; echo 16M > $CFG/ghost/size
	echo 1 > $CFG/ghost/queues; echo 0x5a5a > $CFG/ghost/client_id
	echo 1 > $CFG/ghost/enable && head -c 1M /dev/urandom | dd of=/dev/rswap0 bs=1M oflag=direct status=none \
		&& echo "# ghost target enabled: $(cat $CFG/ghost/state); powering off with it"
}
ktap_run setup
