#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Queue recovery over soft-RoCE in one guest: when a queue's connection fails, rswap
# reconnects it to the same server and client id, checks that the server still holds the
# same region, and issues the queue's I/O again; when it cannot (the region is gone, the
# server stays away longer than recovery_ms, recovery is off) the I/O fails with EIO and
# nothing stale is ever read. The server's SIGUSR1 closes every connection but keeps the
# regions, which is how these tests break connections without losing data.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORT=18517
CFG=/sys/kernel/config/rswap
T=$CFG/rec
OUT=$RSWAP_OUT/45-recovery
mkdir -p "$OUT"
SIZE_MB=64
# What each of fio_verify_start's two jobs writes and verifies, from the start of its half
# of the disk.
FIO_MB=16
DEV=/dev/rswap0

start_server() { server_start "$OUT/server.log" --listen "$IP:$PORT" --size 256M --grace 120 --insecure; }
# The successful reconnects so far, and the requests issued again (fields of the state).
recoveries() { state_field $T recoveries; }
retried() { state_field $T retried; }
# Waits until the server logged $1 more queue_closed lines than $2.
wait_closed() {
	for _ in $(seq 100); do
		[ "$(grep -c queue_closed "$OUT/server.log")" -ge $(($2 + $1)) ] && return 0
		sleep 0.1
	done
	return 1
}
# fio_verify_start NAME: fio writes with crc32c verification in the background, 4k..128k at
# iodepth 32, one job on each half of the disk (FIO_MB of it), into
# $OUT/fio-NAME.{json,log}; sets fpid. Returns once fio has writes in flight (or after
# 10 s: fio may finish in a few seconds).
fio_verify_start() {
	fio --name="$1" --filename=$DEV --direct=1 --ioengine=libaio --rw=randwrite \
		--bsrange=4k-128k --iodepth=32 --numjobs=2 --size=${FIO_MB}M --offset_increment=$((SIZE_MB / 2))M \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --verify_state_save=0 --group_reporting \
		--output-format=json --output="$OUT/fio-$1.json" >"$OUT/fio-$1.log" 2>&1 &
	fpid=$!
	local w
	for _ in $(seq 200); do
		read -r _ w < /sys/block/rswap0/inflight
		[ "$w" -gt 0 ] && break
		sleep 0.05
	done
}
# fio_errors NAME: the errors fio_verify_start's run NAME counted (0 without its JSON).
fio_errors() { grep -o '"total_err" : [0-9]*' "$OUT/fio-$1.json" 2>/dev/null | awk '{ s += $3 } END { print s + 0 }'; }
enable_with() { # recovery_ms client_id
	echo "$IP" > $T/addr; echo $PORT > $T/port; echo ${SIZE_MB}M > $T/size; echo 2 > $T/queues
	echo "$1" > $T/recovery_ms; echo "$2" > $T/client_id
	echo 1 > $T/enable
}

setup() {
	target_suite_start
	dmesg_mark "45-recovery"

	rswap_load && [ -d $CFG ] || ktap_skip_rest "module not loaded"
	start_server || ktap_skip_rest "rswap-server does not start"
	mkdir $T
}

t_attributes() {
	bad=0
	for v in -1 3600001 1e3 x; do
		echo "$v" > $T/recovery_ms 2>/dev/null && bad=1
	done
	rec_msg=$(dmesg | tail -1)
	ka_default=$(cat $T/keepalive_ms)
	for v in 1 999 600001 -1 5s; do
		echo "$v" > $T/keepalive_ms 2>/dev/null && bad=1
	done
	ka_msg=$(dmesg | tail -1)
	echo 0 > $T/keepalive_ms && echo 1000 > $T/keepalive_ms && echo 600000 > $T/keepalive_ms || bad=1
	echo 5000 > $T/keepalive_ms
	if [ "$(cat $T/recovery_ms)" = 60000 ] && [ $bad = 0 ] && echo 0 > $T/recovery_ms \
		&& [ "$(cat $T/recovery_ms)" = 0 ] && [[ $rec_msg == *"configfs: recovery_ms: "* ]] \
		&& [ "$ka_default" = 5000 ] && [[ $ka_msg == *"configfs: keepalive_ms: "* ]]; then
		ktap_pass
	else
		ktap_fail "recovery_ms default/now $(cat $T/recovery_ms), keepalive_ms default $ka_default, bad accepted=$bad; $rec_msg; $ka_msg"
	fi
}
ktap_test "recovery: recovery_ms defaults to 60000 and rejects values past 3600000; keepalive_ms defaults to 5000 and takes 0 or 1000..600000" t_attributes

# Idle: the server drops the connections; nothing is in flight. The disconnect itself
# starts recovery: the queues reconnect with no I/O, and the data written before is there.
# Enables $T, which the tests after use (each enables it anew as it needs).
t_idle() {
	enable_with 60000 0x4501 || ktap_skip_rest "enable failed: $(dmesg | grep rswap | tail -3)"
	ktap_diag "state: $(cat $T/state)"

	head -c 8M /dev/urandom > /tmp/rec8
	dd if=/tmp/rec8 of=$DEV bs=1M oflag=direct status=none
	closed=$(grep -c queue_closed "$OUT/server.log")
	r0=$(recoveries)
	start=$(date +%s)
	kill -USR1 "$SPID"
	wait_closed 2 "$closed"
	for _ in $(seq 100); do
		[[ $(cat $T/state) == connected* ]] && [ "$(recoveries)" -ge $((r0 + 2)) ] && break
		sleep 0.1
	done
	st_back=$(cat $T/state)
	took=$(( $(date +%s) - start ))
	if [[ $st_back == connected* ]] && [ "$(recoveries)" -ge $((r0 + 2)) ] \
		&& dd if=$DEV of=/tmp/rec8b bs=1M count=8 iflag=direct status=none && cmp -s /tmp/rec8 /tmp/rec8b \
		&& dmesg | grep -q 'rswap: rswap[0-9]*: queue [0-9]*: reconnected after'; then
		ktap_pass
		ktap_diag "reconnected with no I/O within ${took}s of SIGUSR1: $st_back" \
			"$(dmesg | grep 'rswap: rswap[0-9]*: queue [0-9]*: reconnected' | tail -1 | sed 's/^\[[^]]*\] //')"
	else
		ktap_fail "state $(cat $T/state) after ${took}s; $(dmesg | grep rswap | tail -6)"
	fi
}
ktap_test "recovery: the server closes every connection while idle; the queues reconnect at once, with no I/O, to the same region and the data reads back" t_idle

# The same with a server whose grace period (3 s; 5 s on the debug kernel) is shorter than
# the idle time after its maintenance (7 s; 12 s): the region survives only because the
# queues reconnect at once (t_idle's did 50 ms after the close on the stock kernel,
# 2026-11-28).
GRACE_S=3 IDLE_S=7
[[ $(uname -r) != *-rswap-debug ]] || GRACE_S=5 IDLE_S=12
t_idle_grace() {
	G=$CFG/grace
	GLOG=$OUT/server-grace.log
	"$SRV" --listen "$IP:$((PORT + 1))" --size 64M --grace $GRACE_S --insecure >"$GLOG" 2>&1 &
	GPID=$!
	for _ in $(seq 100); do grep -q listening "$GLOG" && break; sleep 0.1; done
	mkdir $G
	echo "$IP" > $G/addr; echo $((PORT + 1)) > $G/port; echo 16M > $G/size; echo 2 > $G/queues
	if echo 1 > $G/enable; then
		GDEV=/dev/$(cat $G/device)
		head -c 4M /dev/urandom > /tmp/grace4
		dd if=/tmp/grace4 of=$GDEV bs=1M oflag=direct status=none
		kill -USR1 "$GPID"
		sleep $IDLE_S
		if dd if=$GDEV of=/tmp/grace4b bs=1M count=4 iflag=direct status=none && cmp -s /tmp/grace4 /tmp/grace4b \
			&& ! grep -q region_freed "$GLOG"; then
			ktap_pass
			ktap_diag "$IDLE_S s after the maintenance: $(cat $G/state)"
		else
			ktap_fail "state $(cat $G/state); $(grep -E 'region_freed|queue_' "$GLOG" | tail -4); $(dmesg | grep rswap | tail -4)"
		fi
		echo 0 > $G/enable
	else
		ktap_fail "enable failed: $(dmesg | grep rswap | tail -3)"
	fi
	rmdir $G
	kill "$GPID"; wait "$GPID" 2>/dev/null
}
ktap_test "recovery: an idle disk keeps its memory when the server drops its connections for longer than its grace period (grace $GRACE_S s, $IDLE_S s idle)" t_idle_grace

# Under load: fio writes with verification on both queues while the server drops every
# connection. The flushed requests are requeued and issued again after the reconnect.
t_under_load() {
	r0=$(recoveries); q0=$(retried)
	# Drop the connections while fio has writes in flight (fio may finish in a few seconds).
	fio_verify_start recover
	closed=$(grep -c queue_closed "$OUT/server.log")
	kill -USR1 "$SPID"
	timeout 300 tail --pid=$fpid -f /dev/null
	wait $fpid; frc=$?
	errs=$(fio_errors recover)
	r1=$(recoveries); q1=$(retried)
	if [ $frc = 0 ] && [ "$errs" = 0 ] && [ "$r1" -gt "$r0" ] && [ "$q1" -gt "$q0" ] \
		&& [ "$(grep -c queue_closed "$OUT/server.log")" -gt "$closed" ]; then
		ktap_pass
		ktap_diag "recoveries $r0 -> $r1, requests issued again $q0 -> $q1; state: $(cat $T/state)"
	else
		ktap_fail "fio exit $frc errors $errs recoveries $r0 -> $r1 retried $q0 -> $q1; $(tail -5 "$OUT/fio-recover.log"); $(dmesg | grep rswap | tail -6)"
	fi
}
ktap_test "recovery: the server closes every connection under fio verify; fio ends with 0 errors" t_under_load

# CPU hotplug during a recovery: blk-mq drains the hardware queue of a CPU going
# offline (it waits for the requests it holds), while those requests are being flushed,
# requeued and issued again by the recovery the server's SIGUSR1 starts. Nothing may be
# lost, fail or hang, and the CPU's queue must serve I/O again once it is back.
t_cpu_hotplug() {
	CPU1=/sys/devices/system/cpu/cpu1/online
	if [ -w $CPU1 ]; then
		r0=$(recoveries)
		fio_verify_start hotplug
		kill -USR1 "$SPID"
		off_rc=1; timeout 120 sh -c "echo 0 > $CPU1" && off_rc=0
		sleep 1
		on_rc=1; timeout 120 sh -c "echo 1 > $CPU1" && on_rc=0
		fio_then=ended; kill -0 $fpid 2>/dev/null && fio_then=running
		wait_exit $fpid 300; frc=$?
		errs=$(fio_errors hotplug)
		# Both queues serve I/O again: a read from each CPU (blk-mq maps CPU N to queue N).
		rd_rc=0
		for cpu in 0 1; do
			timeout 60 taskset -c $cpu dd if=$DEV of=/dev/null bs=1M count=2 iflag=direct status=none || rd_rc=1
		done
		st=$(cat $T/state); r1=$(recoveries)
		if [ $off_rc = 0 ] && [ $on_rc = 0 ] && [ $frc = 0 ] && [ "$errs" = 0 ] && [ $rd_rc = 0 ] \
			&& [[ $st == "connected queues=2/2 "* ]] && [ "$r1" -gt "$r0" ]; then
			ktap_pass
			ktap_diag "recoveries $r0 -> $r1; fio $fio_then when CPU 1 was back; state: $st"
		else
			ktap_fail "offline rc $off_rc online rc $on_rc fio exit $frc errors $errs read rc $rd_rc recoveries $r0 -> $r1 state $st; $(tail -3 "$OUT/fio-hotplug.log"); $(dmesg | grep rswap | tail -4)"
		fi
		[ "$(cat $CPU1)" = 1 ] || echo 1 > $CPU1
	else
		ktap_skip "CPU 1 cannot go offline here (no $CPU1)"
	fi
}
ktap_test "recovery: CPU 1 goes offline and comes back under fio verify while the server closes every connection: fio ends with 0 errors and both queues are live again" t_cpu_hotplug

# The server restarts: its memory (our data) is gone and the new one hands out a new
# region. Recovery must notice and fail the I/O rather than read the new, empty region.
t_restarted_server() {
	kill -KILL "$SPID"; wait "$SPID" 2>/dev/null
	start_server || ktap_skip_rest "rswap-server does not restart"
	dmesg_mark "45-recovery: restarted server"
	if ! dd if=$DEV of=/tmp/rec8b bs=1M count=8 iflag=direct status=none 2>/dev/null \
		&& dmesg | grep -q 'the server no longer holds this client.s region' \
		&& [[ $(cat $T/state) == *" dead="[12]" "* ]]; then
		ktap_pass
		ktap_diag "$(dmesg | grep 'no longer holds' | tail -1 | sed 's/^\[[^]]*\] //')"
	else
		ktap_fail "state $(cat $T/state); $(dmesg | grep rswap | tail -6)"
	fi
	echo 0 > $T/enable
}
ktap_test "recovery: a restarted server (region lost) is detected; reads fail with EIO instead of returning other data" t_restarted_server

# Recovery off: the first failure kills the queue, the I/O fails with EIO.
t_recovery_off() {
	enable_with 0 0x4502 || ktap_skip_rest "enable failed"
	dd if=/tmp/rec8 of=$DEV bs=1M oflag=direct status=none
	closed=$(grep -c queue_closed "$OUT/server.log")
	kill -USR1 "$SPID"
	wait_closed 2 "$closed"
	start=$(date +%s)
	timeout 60 dd if=$DEV of=/dev/null bs=1M count=8 iflag=direct status=none 2>/dev/null; rc=$?
	took=$(( $(date +%s) - start ))
	if [ $rc != 0 ] && [ $rc != 124 ] && [ $took -le 10 ] && [ "$(recoveries)" = 0 ] && [ "$(retried)" = 0 ] \
		&& dmesg | grep -q 'recovery is off: failing its I/O'; then
		ktap_pass
		ktap_diag "read failed after ${took}s; state: $(cat $T/state)"
	else
		ktap_fail "dd exit $rc after ${took}s; state $(cat $T/state)"
	fi
	echo 0 > $T/enable
}
ktap_test "recovery: with recovery_ms=0 a dropped connection fails the I/O at once" t_recovery_off

# Every queue event is a change uevent of the disk: recovering then reconnected for each
# queue when the server closes the connections, dead for each with recovery off.
t_uevents() {
	local name bad=
	name=$(basename $T)
	enable_with 60000 0x4503 || ktap_skip_rest "enable failed: $(cat $T/last_error)"
	uevents_start "$OUT/uevents.txt" || bad+="no uevent listener; "
	closed=$(grep -c queue_closed "$OUT/server.log") r0=$(recoveries)
	kill -USR1 "$SPID"
	wait_closed 2 "$closed"
	for _ in $(seq 100); do
		[[ $(cat $T/state) == connected* ]] && [ "$(recoveries)" -ge $((r0 + 2)) ] \
			&& [ "$(grep -c 'RSWAP_EVENT=reconnected' "$OUT/uevents.txt")" -ge 2 ] && break
		sleep 0.1
	done
	echo 0 > $T/enable
	enable_with 0 0x4504 || bad+="enable with recovery off: $(cat $T/last_error); "
	closed=$(grep -c queue_closed "$OUT/server.log")
	kill -USR1 "$SPID"
	wait_closed 2 "$closed"
	# A dropped connection of an idle queue kills it at once with recovery off.
	for _ in $(seq 100); do
		[ "$(grep -c 'RSWAP_EVENT=dead' "$OUT/uevents.txt")" -ge 2 ] && break
		sleep 0.1
	done
	uevents_stop
	echo 0 > $T/enable
	for q in 0 1; do
		for ev in recovering reconnected dead; do
			grep -q "^DEVNAME=rswap0 RSWAP_TARGET=$name RSWAP_QUEUE=$q RSWAP_EVENT=$ev RSWAP_STATE=[a-z]*$" \
				"$OUT/uevents.txt" || bad+="queue $q: no $ev event; "
		done
	done
	# The last event of the first round leaves the target connected; every dead one
	# leaves it degraded or dead.
	grep -q 'RSWAP_EVENT=reconnected RSWAP_STATE=connected$' "$OUT/uevents.txt" || bad+="no reconnected event with state connected; "
	grep 'RSWAP_EVENT=dead' "$OUT/uevents.txt" | grep -vq 'RSWAP_STATE=\(dead\|degraded\)$' && bad+="a dead event with another state; "
	if [ -z "$bad" ]; then
		ktap_pass
		ktap_diag "$(grep -c RSWAP_EVENT "$OUT/uevents.txt") events: $(grep RSWAP_EVENT "$OUT/uevents.txt" | cut -d' ' -f3- | tr '\n' ';')"
	else
		ktap_fail "$bad; $(cat "$OUT/uevents.txt" | tr '\n' ';')"
	fi
}
ktap_test "events: each queue's recovering, reconnected (server closes the connections) and dead (recovery_ms=0) is a change uevent of /dev/rswap0 with RSWAP_TARGET, RSWAP_QUEUE, RSWAP_EVENT and RSWAP_STATE" t_uevents

# The server dies under writes and stays away: the queues see it at once (the dead
# process's connections are torn down) or from the keep-alive, try to reconnect for
# recovery_ms, then the writes fail.
t_server_dies() {
	echo 2000 > $T/keepalive_ms
	enable_with 4000 0x4504 || ktap_skip_rest "enable failed"
	fio --name=kill --filename=$DEV --direct=1 --ioengine=libaio --rw=randwrite --bs=4k --iodepth=16 \
		--time_based --runtime=120 --continue_on_error=none >"$OUT/fio-kill.log" 2>&1 &
	fpid=$!
	sleep 3
	dmesg_mark "45-recovery: kill"
	kill -KILL "$SPID"; wait "$SPID" 2>/dev/null; SPID=
	# The clock starts when the server is gone: reaped, its exit has closed its RDMA
	# connections. Until then its QPs still answer (the kernel's soft-RoCE does), and
	# the exit of a process with its memory locked takes a debug kernel seconds.
	dmesg_mark "45-recovery: reaped"
	wait_exit $fpid 60; rc=$?
	# From the reaping to the first write the kernel failed, by the kernel log's clock:
	# fio's own exit after its errors is not rswap's (seconds on a loaded host's debug
	# kernel).
	# (No process substitution: the guest has no /dev/fd.)
	times=$(dmesg | sed -n '/rswap-test-mark: 45-recovery: kill/,$p' | awk -F'[][]' '
		/rswap-test-mark: 45-recovery: kill/ { t0 = $2 }
		/rswap-test-mark: 45-recovery: reaped/ { t1 = $2 }
		/I\/O error, dev rswap0/ && t0 != "" && te == "" { te = $2 }
		END { if (t1 != "" && te != "") printf "%d %d", (t1 - t0) * 1000, (te - t1) * 1000 }')
	read -r reap ms <<<"$times" || true
	[ -n "$ms" ] || ms=999999
	limit=$((4000 + 2000 + 2000))
	if [ $rc != 0 ] && [ $rc != 124 ] && [ $ms -le $limit ] && dmesg | grep -q 'not reconnected within 4000 ms'; then
		ktap_pass
		ktap_diag "the first write failed ${ms} ms after the server was reaped (limit ${limit}; reaped ${reap} ms after the kill): $(dmesg | grep -E 'rswap: rswap[0-9]*: queue 0: ' | tail -2 | sed 's/^\[[^]]*\] //' | tr '\n' ' ')"
	else
		ktap_fail "fio exit $rc; the first write failed ${ms} ms after the server was reaped (limit ${limit}; reaped ${reap:-?} ms after the kill); $(tail -3 "$OUT/fio-kill.log"); $(dmesg | grep rswap | tail -4)"
	fi
	echo 0 > $T/enable
	echo 5000 > $T/keepalive_ms
	start_server || ktap_skip_rest "rswap-server does not restart"
}
ktap_test "recovery: the server is SIGKILLed under writes (recovery_ms=4000, keepalive_ms=2000): the writes fail within recovery_ms + keep-alive + 2 s" t_server_dies

# read_then_unload: a 1 MiB direct read of $DEV, its exit status in rc and its seconds in
# took; the target's state in st; then disable (d_rc), rmdir and rmmod (m_rc).
read_then_unload() {
	local start
	start=$(date +%s)
	timeout 120 dd if=$DEV of=/dev/null bs=1M count=1 iflag=direct status=none 2>/dev/null; rc=$?
	took=$(( $(date +%s) - start ))
	st=$(cat $T/state)
	d_rc=1; echo 0 > $T/enable && d_rc=0
	rmdir $T
	m_rc=1; rmmod rswap && m_rc=0
}

# The server exits and stays away: recovery tries for recovery_ms, then the I/O fails.
t_server_exits() {
	enable_with 3000 0x4503 || ktap_skip_rest "enable failed"
	kill -TERM "$SPID"; wait "$SPID" 2>/dev/null; SPID=
	read_then_unload
	if [ $rc != 0 ] && [ $rc != 124 ] && [ $took -ge 2 ] && [ $took -le 60 ] && [ $d_rc = 0 ] && [ $m_rc = 0 ] \
		&& dmesg | grep -q 'not reconnected within 3000 ms'; then
		ktap_pass
		ktap_diag "read failed after ${took}s; state was: $st"
	else
		ktap_fail "dd exit $rc after ${took}s, disable=$d_rc rmmod=$m_rc, state $st; $(dmesg | grep rswap | tail -4)"
	fi
}
ktap_test "recovery: a server gone longer than recovery_ms fails the I/O after that window; disable and rmmod work" t_server_exits

# A device that loses completions: soft-iWARP loses those of the READs in flight when
# its device is removed. rswap.ko's fault_lose_flushes drops the first 16 flushed
# completions on arrival, on any device; their requests must still come back (completed
# as flushed once their QP and CQ are destroyed) and be issued again on the new
# connection, or fio would wait for them for ever.
t_lost_completions() {
	lost_lines() { dmesg | grep -o 'the device never completed [0-9]*' | awk '{ s += $5 } END { print s + 0 }'; }
	lost0=$(lost_lines)
	if rswap_load fault_lose_flushes=16 && start_server && mkdir $T && enable_with 60000 0x4507; then
		fio_verify_start lose
		kill -USR1 "$SPID"
		wait_exit $fpid 300; frc=$?
		errs=$(fio_errors lose)
		lost=$(( $(lost_lines) - lost0 ))
		st=$(cat $T/state)
		d_rc=1; echo 0 > $T/enable && d_rc=0
		rmdir $T
		m_rc=1; rmmod rswap && m_rc=0
		if [ $frc = 0 ] && [ "$errs" = 0 ] && [ $lost -ge 1 ] && [ $d_rc = 0 ] && [ $m_rc = 0 ]; then
			ktap_pass
			ktap_diag "work requests whose completion was dropped and that rswap completed itself: $lost; state was: $st"
		else
			ktap_fail "fio exit $frc errors $errs, completed by rswap $lost, disable=$d_rc rmmod=$m_rc, state $st; $(tail -3 "$OUT/fio-lose.log"); $(dmesg | grep rswap | tail -4)"
		fi
	else
		ktap_fail "could not set up: $(dmesg | grep rswap | tail -3)"
		rmdir $T 2>/dev/null; rmmod rswap 2>/dev/null
	fi
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
}
ktap_test "recovery: a device that loses flushed completions (rswap.ko fault_lose_flushes=16): the server closes every connection under fio verify; rswap completes the lost work requests itself when their QP goes, fio ends with 0 errors, disable and rmmod work" t_lost_completions

# A post the QP refuses: once the server's disconnect has put a QP in the error state,
# soft-iWARP refuses the posts that raced it. rswap.ko's fault_fail_posts=4 fails the
# first four RDMA READ/WRITE posts with ENOTCONN; each is a lost connection: the queue
# recovers and the request is issued again on the new one: fio verify ends with 0 errors
# and the log has no I/O error since the test's mark (the first posts refused are the
# partition scan's at enable; before, they failed with EIO).
t_post_refused() {
	local since refused ioerr
	dmesg_mark "45-recovery: refused"
	if rswap_load fault_fail_posts=4 && start_server && mkdir $T && enable_with 60000 0x450a; then
		fio_verify_start refused
		wait_exit $fpid 300; frc=$?
		errs=$(fio_errors refused)
		since=$(dmesg | sed -n '/rswap-test-mark: 45-recovery: refused/,$p')
		refused=$(printf '%s\n' "$since" | grep -c 'posting the work request failed: reconnecting')
		ioerr=$(printf '%s\n' "$since" | grep -c 'I/O error, dev rswap0')
		st=$(cat $T/state)
		d_rc=1; echo 0 > $T/enable && d_rc=0
		rmdir $T
		m_rc=1; rmmod rswap && m_rc=0
		if [ $frc = 0 ] && [ "$errs" = 0 ] && [ $refused -ge 1 ] && [ $ioerr = 0 ] && [ $d_rc = 0 ] && [ $m_rc = 0 ]; then
			ktap_pass
			ktap_diag "refused posts that started a recovery: $refused; I/O errors in the log: 0; state was: $st"
		else
			ktap_fail "fio exit $frc errors $errs, recoveries from a refused post $refused, I/O error lines $ioerr, disable=$d_rc rmmod=$m_rc, state $st; $(tail -3 "$OUT/fio-refused.log"); $(dmesg | grep rswap | tail -4)"
		fi
	else
		ktap_fail "could not set up: $(dmesg | grep rswap | tail -3)"
		rmdir $T 2>/dev/null; rmmod rswap 2>/dev/null
	fi
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
}
ktap_test "recovery: RDMA posts the QP refuses (rswap.ko fault_fail_posts=4, as soft-iWARP after a disconnect) start a recovery and are issued again; fio verify ends with 0 errors, disable and rmmod work" t_post_refused

# A keep-alive probe the QP refuses for now: soft-iWARP refuses a WRITE posted while
# another poster registers the QP's fence region (its first WRITE), as any device does on
# a full send queue. rswap.ko's fault_busy_probes=N refuses the next N probes as busy.
# probe_busy_test N: loads rswap.ko with it, keepalive_ms=1000, two queues, and sets
# $why, $rec (recoveries) and $lines (the keep-alive lines of the log since the test
# began). The disk is idle (nothing written) for 6 s, then 1 MiB is written and read back.
probe_busy_test() {
	local since
	why= rec= lines=
	dmesg_mark "45-recovery: probe busy $1"
	if rswap_load fault_busy_probes=$1 && start_server && mkdir $T \
		&& echo 1000 > $T/keepalive_ms && enable_with 60000 0x450b; then
		sleep 6
		for _ in $(seq 100); do [ "$(state_field $T recovering)" = 0 ] && break; sleep 0.1; done
		head -c 1M /dev/urandom > "$OUT/probe-busy"
		dd if="$OUT/probe-busy" of=$DEV bs=64k oflag=direct status=none || why+="write failed; "
		dd if=$DEV of="$OUT/probe-busy-back" bs=64k count=16 iflag=direct status=none || why+="read failed; "
		cmp -s "$OUT/probe-busy" "$OUT/probe-busy-back" || why+="read back differs; "
		rec=$(recoveries)
		since=$(dmesg | sed -n "/rswap-test-mark: 45-recovery: probe busy $1\$/,\$p")
		lines=$(printf '%s\n' "$since" | grep 'keep-alive probe')
		st=$(cat $T/state)
		echo 0 > $T/enable || why+="disable failed; "
		rmdir $T
		rmmod rswap || why+="rmmod failed; "
	else
		why+="could not set up: $(dmesg | grep rswap | tail -3 | tr '\n' ' '); "
		rmdir $T 2>/dev/null; rmmod rswap 2>/dev/null
	fi
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
}

# One refusal of each queue's probe (fault_busy_probes=2, the first period): posted again
# at the next period, and the idle disk keeps its connections (before, each refusal took
# its queue down: "keep-alive probe not posted: reconnecting").
t_probe_busy() {
	local st
	probe_busy_test 2
	[ "$rec" = 0 ] || why+="recoveries=$rec; "
	[ -z "$lines" ] || why+="$(head -2 <<<"$lines" | tr '\n' ' '); "
	if [ -z "$why" ]; then
		ktap_pass
		ktap_diag "each queue's first probe refused as busy, posted again at the next period: 0 recoveries, 1 MiB read back; state was: $st"
	else
		ktap_fail "$why state $st"
	fi
}
ktap_test "recovery: a keep-alive probe the QP refuses as busy (rswap.ko fault_busy_probes=2, as soft-iWARP while its fence region is registered) is posted again at the next period; the idle disk does not reconnect" t_probe_busy

# Refusals that last (fault_busy_probes=6: three periods of both queues): refused again
# at the next period with nothing completed meanwhile, a queue recovers ("keep-alive
# probe refused twice: reconnecting"), reconnects to the same region, and the disk works.
t_probe_busy_twice() {
	local st n
	probe_busy_test 6
	n=$(grep -c 'keep-alive probe refused twice: reconnecting' <<<"$lines")
	[ "$n" -ge 1 ] || why+="no queue recovered: $(head -2 <<<"$lines" | tr '\n' ' '); "
	[ "${rec:-0}" -ge 1 ] || why+="recoveries=$rec; "
	if [ -z "$why" ]; then
		ktap_pass
		ktap_diag "probes refused as busy at two periods in a row: $n queue recoveries, then 1 MiB written and read back; state was: $st"
	else
		ktap_fail "$why state $st"
	fi
}
ktap_test "recovery: keep-alive probes the QP refuses as busy at two periods in a row (rswap.ko fault_busy_probes=6) take the idle queue down; it reconnects to the same region and the disk works" t_probe_busy_twice

# Allocations fail while the queues reconnect under a swap load: rswap.ko's
# fault_fail_reconnect_allocs=8 fails the next 8 allocating steps of recoveries (the
# cm_id, the QP, the RECV buffer, the link, in turn) with ENOMEM, as when even the memory
# reserves are gone. Each failed attempt must end at once, not wait out a timeout, and be
# tried again; once the failures are spent both queues reconnect and every page of the
# swap load comes back intact. The load's rewrite phase goes on for 3 s after both queues
# are back, then the test ends it (SIGUSR1; 20 s is its cap) and its verify pass follows.
SWAPLOAD=${RSWAP_SWAPLOAD:-$RSWAP_OUT/swapload}
NOMEM_CG=/sys/fs/cgroup/rswap-nomem
t_nomem_swap() {
	[ -x "$SWAPLOAD" ] || { ktap_skip "no swapload binary at $SWAPLOAD"; return; }
	if ! { rswap_load fault_fail_reconnect_allocs=8 && start_server && mkdir $T && enable_with 60000 0x4508 \
		&& mkswap $DEV >/dev/null && swapon -p 100 $DEV; }; then
		ktap_fail "could not set up: $(dmesg | grep rswap | tail -3)"
		rmdir $T 2>/dev/null; rmmod rswap 2>/dev/null; return
	fi
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	mkdir -p $NOMEM_CG; echo $((16 << 20)) > $NOMEM_CG/memory.max
	base=$(vm pswpout) r0=$(recoveries)
	SWAPLOAD_PASSES=1 sh -c "echo \$\$ > $NOMEM_CG/cgroup.procs && exec $SWAPLOAD 40 11 20" \
		>"$OUT/nomem.json" 2>"$OUT/nomem.err" &
	lpid=$!
	out=$(wait_swapping $lpid "$base")
	dmesg_mark "45-recovery: nomem"
	kill -USR1 "$SPID"
	# Both queues back (or the load over, or 60 s), 3 s more of the load on the new
	# connections, then the end of its rewrite phase.
	for _ in $(seq 600); do
		[[ $(cat $T/state) == connected* ]] && [ "$(recoveries)" -ge $((r0 + 2)) ] && break
		kill -0 $lpid 2>/dev/null || break
		sleep 0.1
	done
	sleep 3
	stop_rewrite $lpid
	wait_exit $lpid 600; lrc=$?
	since=$(dmesg | sed -n '/rswap-test-mark: 45-recovery: nomem/,$p')
	# The errno by name, or by number on a kernel without CONFIG_SYMBOLIC_ERRNAME (debug).
	failed=$(printf '%s\n' "$since" | grep -cE 'connecting failed: .*(ENOMEM|Error\(12\))')
	attempts=$(printf '%s\n' "$since" | sed -n 's/.*reconnected after [0-9]* ms (\([0-9]*\) attempt.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
	waited=$(printf '%s\n' "$since" | grep -c 'timed out')
	r1=$(recoveries) st=$(cat $T/state)
	s_rc=1; swapoff $DEV && s_rc=0
	d_rc=1; echo 0 > $T/enable && d_rc=0
	rmdir $T; rmdir $NOMEM_CG 2>/dev/null
	m_rc=1; rmmod rswap && m_rc=0
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
	if [ $lrc = 0 ] && grep -q '"bad_pages": *0' "$OUT/nomem.json" && [ "$out" -ge 2000 ] \
		&& [ $failed -ge 8 ] && [ $attempts -ge 10 ] && [ $waited = 0 ] && [ $((r1 - r0)) -ge 2 ] \
		&& [ $s_rc = 0 ] && [ $d_rc = 0 ] && [ $m_rc = 0 ]; then
		ktap_pass
		ktap_diag "attempts failed with ENOMEM: $failed, attempts in all: $attempts, recoveries $r0 -> $r1; $(printf '%s\n' "$since" | grep -o 'queue [0-9]*: reconnected after .*' | tr '\n' ' '); swapload: $(cat "$OUT/nomem.json")"
	else
		ktap_fail "swapload exit $lrc ($(cat "$OUT/nomem.err" "$OUT/nomem.json" | tail -2)), pages out before the break $out, ENOMEM attempts $failed (want >= 8), attempts $attempts (want >= 10), timed-out waits $waited, recoveries $r0 -> $r1, swapoff=$s_rc disable=$d_rc rmmod=$m_rc; state $st; $(printf '%s\n' "$since" | grep rswap | tail -5)"
	fi
}
ktap_test "recovery: allocations fail during the reconnect under a swap load (rswap.ko fault_fail_reconnect_allocs=8): each attempt fails at once and is retried, the queues reconnect, 0 bad pages, swapoff, disable and rmmod work" t_nomem_swap

# The allocations of every reconnect fail for longer than recovery_ms: the I/O fails
# cleanly once that window ends, and disable and rmmod work.
t_nomem_forever() {
	if ! { rswap_load fault_fail_reconnect_allocs=100000 && start_server && mkdir $T && enable_with 3000 0x4509; }; then
		ktap_fail "could not set up: $(dmesg | grep rswap | tail -3)"
		rmdir $T 2>/dev/null; rmmod rswap 2>/dev/null; return
	fi
	kill -USR1 "$SPID"
	read_then_unload
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
	if [ $rc != 0 ] && [ $rc != 124 ] && [ $took -le 60 ] && [ $d_rc = 0 ] && [ $m_rc = 0 ] \
		&& dmesg | grep -qE 'not reconnected within 3000 ms \(.*(ENOMEM|Error\(12\))'; then
		ktap_pass
		ktap_diag "read failed after ${took}s: $(dmesg | grep 'not reconnected within 3000 ms' | tail -1 | sed 's/^\[[^]]*\] //')"
	else
		ktap_fail "dd exit $rc after ${took}s, disable=$d_rc rmmod=$m_rc, state $st; $(dmesg | grep rswap | tail -4)"
	fi
}
ktap_test "recovery: every allocation of the reconnects fails (fault_fail_reconnect_allocs=100000, recovery_ms=3000): the I/O fails with EIO after that window, never hangs; disable and rmmod work" t_nomem_forever

t_dmesg() {
	dmesg_note_rxe_races
	ktap_check dmesg_clean
}
ktap_test "dmesg: no BUG/WARNING/Oops in the recovery tests" t_dmesg

ktap_run setup
