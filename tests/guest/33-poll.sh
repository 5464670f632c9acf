#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Poll queues over soft-RoCE in one guest: a target with poll_queues has hardware queues
# for polled I/O only (io_uring with IORING_SETUP_IOPOLL, fio --hipri), each a connection
# whose RDMA completions are run by the task that polls for them, not by an interrupt.
# Polled I/O goes to those queues and only there, reads back what it wrote, recovers
# when the server drops the connections, and an idle poll queue passes its keep-alive.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORT=18527
CFG=/sys/kernel/config/rswap
T=$CFG/poll
OUT=$RSWAP_OUT/33-poll
mkdir -p "$OUT"
SIZE_MB=32

# qstat FILE QUEUE KEY: counter KEY of hardware queue QUEUE in a copy of the stats.
qstat() { awk -v q="queue$2" -v k="$3" '$1 == q { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$1"; }
# requests FILE QUEUE: reads + writes of QUEUE.
requests() { echo $(( $(qstat "$1" "$2" reads) + $(qstat "$1" "$2" writes) )); }
fio_errors() { grep -o '"total_err" : [0-9]*' "$1" 2>/dev/null | awk '{ s += $3 } END { print s + 0 }'; }
# fio_hipri NAME [more fio options]: polled fio writes and verifies 8 MiB of the disk in
# 4 KiB requests at QD8, into $OUT/fio-NAME.*.
fio_hipri() {
	local name=$1
	shift
	fio --name="$name" --filename="$DEV" --direct=1 --ioengine=io_uring --hipri=1 --rw=randwrite \
		--bs=4k --iodepth=8 --size=8M --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--verify_state_save=0 --output-format=json --output="$OUT/fio-$name.json" "$@" \
		>"$OUT/fio-$name.log" 2>&1
}
# fio_hipri_load NAME [FIO OPTION...]: fio_hipri with 4k..128k requests at QD32 in 2 jobs,
# one on each half of the disk (the options given after NAME override these), in the
# background (sets fpid); returns once it has I/O in flight.
fio_hipri_load() {
	fio_hipri "$1" --bsrange=4k-128k --iodepth=32 --numjobs=2 --size=$((SIZE_MB / 2))M \
		--offset_increment=$((SIZE_MB / 2))M --group_reporting "${@:2}" &
	fpid=$!
	local rd wr
	for _ in $(seq 200); do
		read -r rd wr < /sys/block/$B/inflight
		[ $((rd + wr)) -gt 0 ] && break
		sleep 0.05
	done
}

setup() {
	target_suite_start
	dmesg_mark "33-poll"

	rswap_load || ktap_skip_rest "insmod failed"
	server_start "$OUT/server.log" --listen "$IP:$PORT" --size 128M --grace 120 --insecure \
		|| ktap_skip_rest "rswap-server does not start: $(tail -2 "$OUT/server.log")"
	# Polled I/O needs io_uring; a distribution may turn it off for unprivileged users only.
	[ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" = 2 ] && echo 0 > /proc/sys/kernel/io_uring_disabled
}

# The tests run in this order on one target, $T: t_attribute makes it, t_enable connects
# it with a poll queue and sets $DEV and $B (its disk), which reenable renews; the later
# tests use it, up to t_teardown. The last two make their own.
t_attribute() {
	mkdir $T
	bad=0 why=
	try() { # attr value: must be refused with a reason in last_error
		if echo "$2" > "$T/$1" 2>/dev/null; then bad=1; why+="$1=$2 accepted; "; return; fi
		[[ $(cat $T/last_error) == "$1: "* ]] || { bad=1; why+="$1=$2: last_error '$(cat $T/last_error)'; "; }
	}
	default=$(cat $T/poll_queues)
	for v in 64 -1 x 1e1; do try poll_queues "$v"; done
	range=$(cat $T/last_error)
	echo 63 > $T/poll_queues && [ "$(cat $T/poll_queues)" = 63 ] || { bad=1; why+="63 refused; "; }
	echo "$IP" > $T/addr; echo $PORT > $T/port; echo ${SIZE_MB}M > $T/size; echo 64 > $T/queues; echo 1 > $T/poll_queues
	if echo 1 > $T/enable 2>/dev/null; then
		bad=1 why+="enable with 64 + 1 queues accepted; "
		echo 0 > $T/enable
	fi
	over=$(cat $T/last_error)
	[[ $over == "enable: queues + poll_queues is 65, more than 64 connections" ]] || { bad=1; why+="enable: '$over'; "; }
	[[ $(cat $T/state) != connected* ]] || { bad=1; why+="state $(cat $T/state); "; }
	echo 0 > $T/poll_queues
	if [ "$default" = 0 ] && [ $bad = 0 ]; then
		ktap_pass
		ktap_diag "$range" "$over"
	else
		ktap_fail "default $default; $why"
	fi
}
ktap_test "poll: poll_queues defaults to 0 and takes 0..63; bad values, and queues + poll_queues over 64 at enable, are refused with a reason" t_attribute

# Without poll queues the block layer refuses polled I/O: fio fails fast.
t_no_poll_queues() {
	echo 1 > $T/queues
	if echo 1 > $T/enable && [[ $(cat $T/state) == connected* ]]; then
		DEV=/dev/$(cat $T/device)
		B=$(basename "$DEV")
		iop=$(cat /sys/block/$B/queue/io_poll)
		timeout 60 fio --name=nopoll --filename="$DEV" --direct=1 --ioengine=io_uring --hipri=1 \
			--rw=randread --bs=4k --iodepth=1 --size=1M --number_ios=16 >"$OUT/fio-nopoll.log" 2>&1
		frc=$?
		if [ "$iop" = 0 ] && [ $frc != 0 ] && [ $frc != 124 ] && grep -qi 'not supported' "$OUT/fio-nopoll.log"; then
			ktap_pass
			ktap_diag "io_poll $iop; fio exit $frc: $(grep -i -m1 'not supported' "$OUT/fio-nopoll.log")"
		else
			ktap_fail "io_poll $iop; fio exit $frc: $(tail -3 "$OUT/fio-nopoll.log")"
		fi
		echo 0 > $T/enable
	else
		ktap_fail "enable: $(cat $T/last_error)"
	fi
}
ktap_test "poll: a target without poll queues does not poll (io_poll 0), and polled I/O on it fails with EOPNOTSUPP instead of hanging" t_no_poll_queues

t_enable() {
	echo 1 > $T/poll_queues; echo 1000 > $T/keepalive_ms
	if ! echo 1 > $T/enable || [[ $(cat $T/state) != connected* ]]; then
		ktap_fail "enable: $(cat $T/last_error); $(dmesg | grep rswap | tail -4)"
		ktap_skip_rest "the target with a poll queue did not connect"
	fi
	DEV=/dev/$(cat $T/device)
	B=$(basename "$DEV")
	line=$(dmesg | grep "rswap: $B: .* 1 queues and 1 poll queues" | tail -1 | sed 's/^\[[^]]*\] //')
	if [ "$(cat /sys/block/$B/queue/io_poll)" = 1 ] && [[ $(cat $T/state) == "connected queues=2/2 "* ]] \
		&& [ -n "$line" ] && [ -n "$(qstat $T/stats 1 reads)" ]; then
		ktap_pass
		ktap_diag "$line" "$(cat $T/state)"
	else
		ktap_fail "io_poll $(cat /sys/block/$B/queue/io_poll); state $(cat $T/state); log '$line'; $(cat $T/stats)"
	fi
}
ktap_test "poll: queues=1 poll_queues=1 connects two queues, and the disk polls (io_poll 1)" t_enable

t_hipri() {
	cat $T/stats > "$OUT/stats-0.txt"
	fio_hipri polled
	frc=$?
	cat $T/stats > "$OUT/stats-1.txt"
	q0=$(( $(requests "$OUT/stats-1.txt" 0) - $(requests "$OUT/stats-0.txt" 0) ))
	q1=$(( $(requests "$OUT/stats-1.txt" 1) - $(requests "$OUT/stats-0.txt" 1) ))
	# 8 MiB written and read back in 4 KiB requests: 4096 of them.
	if [ $frc = 0 ] && [ "$(fio_errors "$OUT/fio-polled.json")" = 0 ] && [ $q1 -ge 4096 ] && [ $q0 = 0 ] \
		&& [ "$(qstat "$OUT/stats-1.txt" 1 inflight)" = 0 ] && [ "$(qstat "$OUT/stats-1.txt" 1 errors)" = 0 ]; then
		ktap_pass
		ktap_diag "queue0 +$q0, queue1 +$q1 requests"
	else
		ktap_fail "fio exit $frc, errors $(fio_errors "$OUT/fio-polled.json"); queue0 +$q0, queue1 +$q1; $(tail -3 "$OUT/fio-polled.log")"
	fi
}
ktap_test "poll: fio io_uring --hipri writes and verifies 8 MiB: 0 errors, every request on the poll queue (queue1), none on queue0" t_hipri

t_libaio() {
	fio --name=irq --filename="$DEV" --direct=1 --ioengine=libaio --rw=randwrite --bs=4k --iodepth=8 \
		--size=4M --verify=crc32c --verify_fatal=1 --do_verify=1 --verify_state_save=0 \
		--output-format=json --output="$OUT/fio-irq.json" >"$OUT/fio-irq.log" 2>&1
	frc=$?
	cat $T/stats > "$OUT/stats-2.txt"
	q0=$(( $(requests "$OUT/stats-2.txt" 0) - $(requests "$OUT/stats-1.txt" 0) ))
	q1=$(( $(requests "$OUT/stats-2.txt" 1) - $(requests "$OUT/stats-1.txt" 1) ))
	if [ $frc = 0 ] && [ "$(fio_errors "$OUT/fio-irq.json")" = 0 ] && [ $q0 -ge 2048 ] && [ $q1 = 0 ]; then
		ktap_pass
		ktap_diag "queue0 +$q0, queue1 +$q1 requests"
	else
		ktap_fail "fio exit $frc; queue0 +$q0, queue1 +$q1; $(tail -3 "$OUT/fio-irq.log")"
	fi
}
ktap_test "poll: I/O that is not polled (libaio) goes to queue0 only" t_libaio

# The keep-alive probe of a poll queue completes only when someone polls: the keep-alive
# itself must, or an idle poll queue looks dead at its second round.
t_idle_keepalive() {
	r0=$(state_field $T recoveries)
	dmesg_mark "33-poll idle"
	sleep 6
	idle=$(dmesg | sed -n '/rswap-test-mark: 33-poll idle/,$p')
	if [ "$(state_field $T recoveries)" = "$r0" ] && ! grep -q 'keep-alive probe' <<<"$idle" \
		&& [[ $(cat $T/state) == "connected queues=2/2 "* ]]; then
		ktap_pass
		ktap_diag "$(cat $T/state)"
	else
		ktap_fail "recoveries $r0 -> $(state_field $T recoveries); $(grep rswap <<<"$idle" | tail -4)"
	fi
}
ktap_test "poll: an idle poll queue passes 6 keep-alive rounds (keepalive_ms=1000): no probe unanswered, no recovery" t_idle_keepalive

# The server drops every connection (keeping the regions) while polled I/O is in flight:
# the flushed requests are requeued and polled for again on the new links.
t_recovery() {
	r0=$(state_field $T recoveries) q0=$(state_field $T retried)
	fio_hipri_load recover
	kill -USR1 "$SPID"
	wait_exit $fpid 300
	frc=$?
	for _ in $(seq 100); do
		[[ $(cat $T/state) == "connected queues=2/2 "* ]] && [ "$(state_field $T recoveries)" -ge $((r0 + 2)) ] && break
		sleep 0.1
	done
	r1=$(state_field $T recoveries) q1=$(state_field $T retried)
	if [ $frc = 0 ] && [ "$(fio_errors "$OUT/fio-recover.json")" = 0 ] && [ "$r1" -ge $((r0 + 2)) ] \
		&& [ "$q1" -gt "$q0" ] && [[ $(cat $T/state) == "connected queues=2/2 "* ]]; then
		ktap_pass
		ktap_diag "recoveries $r0 -> $r1, requests issued again $q0 -> $q1; $(cat $T/state)" \
			"$(dmesg | grep 'queue 1: reconnected' | tail -1 | sed 's/^\[[^]]*\] //')"
	else
		ktap_fail "fio exit $frc, errors $(fio_errors "$OUT/fio-recover.json"); recoveries $r0 -> $r1, retried $q0 -> $q1; $(cat $T/state); $(tail -3 "$OUT/fio-recover.log")"
	fi
}
ktap_test "poll: the server closes every connection under polled fio verify; the flushed requests are issued again, both queues reconnect and fio ends with 0 errors" t_recovery

# reenable SETTING=VALUE...: disables the target, writes the settings, enables it again.
reenable() {
	local kv
	echo 0 > $T/enable || return 1
	for kv in "$@"; do echo "${kv#*=}" > "$T/${kv%%=*}" || return 1; done
	echo 1 > $T/enable && DEV=/dev/$(cat $T/device) && B=$(basename "$DEV")
}

# The submitter of polled I/O stops polling with requests in flight: they complete in the
# CQ, where nobody (no keep-alive either) runs them, until blk-mq times them out. The
# timeout must poll and find them done, not take a healthy link down.
t_stopped_poller() {
	if reenable keepalive_ms=0; then
		echo 2000 > /sys/block/$B/queue/io_timeout
		r0=$(state_field $T recoveries)
		dmesg_mark "33-poll stop"
		# A light load (QD4 of at most 16 KiB per job): what is in flight when fio stops must
		# be in the CQ well before io_timeout even on the slowest emulated device (the debug
		# kernel's soft-RoCE under TCG had not completed one of QD32x2 of up to 128 KiB after
		# 5 s), so that a request timed out means the timeout's poll failed, not the device.
		fio_hipri_load stopped --iodepth=4 --bsrange=4k-16k
		pkill -STOP -f -- --name=stopped
		sleep 8
		stopped=$(dmesg | sed -n '/rswap-test-mark: 33-poll stop/,$p')
		counters=$(cd /sys/class/infiniband/$RDMA_DEV/ports/1/hw_counters 2>/dev/null \
			&& grep -H . * 2>/dev/null | grep -v ':0$' | tr '\n' ' ')
		r1=$(state_field $T recoveries)
		pkill -CONT -f -- --name=stopped
		wait_exit $fpid 300
		frc=$?
		if [ $frc = 0 ] && [ "$(fio_errors "$OUT/fio-stopped.json")" = 0 ] && [ "$r1" = "$r0" ] \
			&& ! grep -q 'timed out' <<<"$stopped"; then
			ktap_pass
			ktap_diag "recoveries $r0 -> $r1 while fio was stopped for 8 s; $(cat $T/state)"
		else
			ktap_fail "fio exit $frc, errors $(fio_errors "$OUT/fio-stopped.json"); recoveries $r0 -> $r1; $(grep rswap <<<"$stopped" | tail -3); $RDMA_DEV counters while stopped: $counters"
		fi
	else
		ktap_fail "re-enable with keepalive_ms=0: $(cat $T/last_error)"
	fi
}
ktap_test "poll: polled I/O whose submitter stops polling (SIGSTOP, keepalive_ms=0, io_timeout 2 s): the timeout polls and finds it done, no request timed out, no recovery; fio ends with 0 errors once resumed" t_stopped_poller

# Encrypted: reads are opened in their completion, which on a poll queue runs in the task
# that polls.
t_encrypt() {
	if reenable encrypt=1; then
		cat $T/stats > "$OUT/stats-enc0.txt"
		fio_hipri encrypted
		frc=$?
		cat $T/stats > "$OUT/stats-enc1.txt"
		opened=$(sed -n 's/^encryption .*\bopened=\([0-9]*\).*/\1/p' "$OUT/stats-enc1.txt")
		q1=$(( $(requests "$OUT/stats-enc1.txt" 1) - $(requests "$OUT/stats-enc0.txt" 1) ))
		if [ $frc = 0 ] && [ "$(fio_errors "$OUT/fio-encrypted.json")" = 0 ] && [ "${opened:-0}" -ge 2048 ] \
			&& [ $q1 -ge 4096 ]; then
			ktap_pass
			ktap_diag "queue1 +$q1 requests; $(grep '^encryption ' "$OUT/stats-enc1.txt")"
		else
			ktap_fail "fio exit $frc, errors $(fio_errors "$OUT/fio-encrypted.json"); queue1 +$q1; $(grep '^encryption ' "$OUT/stats-enc1.txt"); $(tail -3 "$OUT/fio-encrypted.log")"
		fi
	else
		ktap_fail "re-enable with encrypt=1: $(cat $T/last_error)"
	fi
}
ktap_test "poll: an encrypted target (encrypt=1) with a poll queue: polled fio verify opens every read in the polling task, 0 errors" t_encrypt

t_cpu_cap() {
	cpus=$(nproc --all)
	if reenable encrypt=0 poll_queues=63 && [[ $(cat $T/state) == "connected queues=$((cpus + 1))/$((cpus + 1)) "* ]] \
		&& capped=$(dmesg | grep "rswap: poll: configfs: poll_queues 63 is more than the $cpus CPUs: $cpus poll queues" | tail -1) \
		&& [ -n "$capped" ]; then
		ktap_pass
		ktap_diag "${capped#*] }" "$(cat $T/state)"
	else
		ktap_fail "state $(cat $T/state); $(cat $T/last_error); $(dmesg | grep rswap | tail -3)"
	fi
}
ktap_test "poll: poll_queues above the CPU count is capped at it at enable, with a log line" t_cpu_cap

# Recovery off: the polled requests flushed by the teardown, and those that wait, end with
# EIO; the polling task sees them end instead of polling for ever.
t_no_recovery() {
	if reenable poll_queues=1 recovery_ms=0; then
		dmesg_mark "33-poll norecovery"
		fio_hipri_load dead
		start=$(date +%s)
		kill -USR1 "$SPID"
		wait_exit $fpid 120
		frc=$?
		took=$(( $(date +%s) - start ))
		dead=$(dmesg | sed -n '/rswap-test-mark: 33-poll norecovery/,$p')
		if [ $frc != 0 ] && [ $frc != 124 ] && [ $took -le 30 ] && grep -q 'recovery is off: failing its I/O' <<<"$dead" \
			&& grep -qi 'input/output error' "$OUT/fio-dead.log"; then
			ktap_pass
			ktap_diag "fio exit $frc after ${took}s: $(grep -i -m1 'input/output error' "$OUT/fio-dead.log")" "$(cat $T/state)"
		else
			ktap_fail "fio exit $frc after ${took}s; $(tail -2 "$OUT/fio-dead.log"); $(grep rswap <<<"$dead" | tail -3)"
			kill -KILL $fpid 2>/dev/null
		fi
	else
		ktap_fail "re-enable with recovery_ms=0: $(cat $T/last_error)"
	fi
}
ktap_test "poll: with recovery_ms=0 the server closing every connection under polled fio fails its I/O with EIO promptly; nothing hangs" t_no_recovery

# With a secret every queue proves it in its connect request (hello, challenge, proof); a
# poll queue does too, before any of its completions is polled for.
t_auth() {
	A=$CFG/pollauth
	ALLOW=/tmp/rswap-33-allow
	AUTH_PORT=18528
	AUTH_ID=0x3301
	AUTH_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	printf '%s %s\n' "$AUTH_ID" "$AUTH_SECRET" > $ALLOW
	chmod 600 $ALLOW
	MAIN_SPID=$SPID
	if server_start "$OUT/server-auth.log" --listen "$IP:$AUTH_PORT" --size 64M --allow-list $ALLOW \
		&& mkdir $A && echo "$IP" > $A/addr && echo $AUTH_PORT > $A/port && echo ${SIZE_MB}M > $A/size \
		&& echo 1 > $A/queues && echo 1 > $A/poll_queues && echo $AUTH_ID > $A/client_id \
		&& echo "$AUTH_SECRET" > $A/secret && echo 1 > $A/enable && [[ $(cat $A/state) == "connected queues=2/2 "* ]]; then
		T_DEV=$DEV T_B=$B
		DEV=/dev/$(cat $A/device)
		B=$(basename "$DEV")
		cat $A/stats > "$OUT/stats-auth0.txt"
		fio_hipri auth
		frc=$?
		cat $A/stats > "$OUT/stats-auth1.txt"
		q1=$(( $(requests "$OUT/stats-auth1.txt" 1) - $(requests "$OUT/stats-auth0.txt" 1) ))
		challenges=$(grep -c 'auth_challenge' "$OUT/server-auth.log")
		if [ $frc = 0 ] && [ "$(fio_errors "$OUT/fio-auth.json")" = 0 ] && [ $q1 -ge 4096 ] && [ "$challenges" -ge 2 ]; then
			ktap_pass
			ktap_diag "$(cat $A/state); queue1 +$q1 requests; $challenges challenges in the server log"
		else
			ktap_fail "fio exit $frc, errors $(fio_errors "$OUT/fio-auth.json"); queue1 +$q1; challenges $challenges; $(tail -3 "$OUT/fio-auth.log")"
		fi
		DEV=$T_DEV B=$T_B
	else
		ktap_fail "could not connect: $(cat $A/last_error 2>/dev/null); $(dmesg | grep rswap | tail -3); $(tail -3 "$OUT/server-auth.log")"
	fi
	[ -d $A ] && { echo 0 > $A/enable; rmdir $A; }
	[ "$SPID" = "$MAIN_SPID" ] || { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }
	SPID=$MAIN_SPID
	rm -f $ALLOW
}
ktap_test "poll: a target with a secret (the server has an allow-list) and a poll queue: both queues authenticate, polled fio verify ends with 0 errors on the poll queue" t_auth

t_teardown() {
	ok=1
	echo 0 > $T/enable || ok=0
	rmdir $T || ok=0
	rmmod rswap || ok=0
	if [ $ok = 1 ]; then ktap_pass; else ktap_fail "$(dmesg | tail -3)"; fi
}
ktap_test "poll: disable, rmdir and rmmod work" t_teardown

# A polled QP is drained by polling until every work request is back; one whose flushed
# completion the device never delivers holds that up to its limit, and is then completed
# as flushed once the QP and its CQ are gone (as on a softirq queue).
t_lose_flushes() {
	lost_lines() { dmesg | grep -o 'the device never completed [0-9]*' | awk '{ s += $5 } END { print s + 0 }'; }
	lost0=$(lost_lines)
	if rswap_load fault_lose_flushes=16 && mkdir $T && echo "$IP" > $T/addr && echo $PORT > $T/port \
		&& echo ${SIZE_MB}M > $T/size && echo 1 > $T/queues && echo 1 > $T/poll_queues \
		&& echo 0 > $T/keepalive_ms && echo 1 > $T/enable; then
		DEV=/dev/$(cat $T/device)
		B=$(basename "$DEV")
		fio_hipri_load lose
		kill -USR1 "$SPID"
		wait_exit $fpid 300
		frc=$?
		lost=$(( $(lost_lines) - lost0 ))
		st=$(cat $T/state)
		ok=1
		echo 0 > $T/enable || ok=0
		rmdir $T || ok=0
		rmmod rswap || ok=0
		if [ $frc = 0 ] && [ "$(fio_errors "$OUT/fio-lose.json")" = 0 ] && [ $lost -ge 1 ] && [ $ok = 1 ]; then
			ktap_pass
			ktap_diag "work requests whose completion was dropped and that rswap completed itself: $lost; state was: $st" \
				"$(dmesg | grep 'the device never completed' | tail -1 | sed 's/^\[[^]]*\] //')"
		else
			ktap_fail "fio exit $frc, errors $(fio_errors "$OUT/fio-lose.json"), completed by rswap $lost, teardown ok=$ok, state $st; $(tail -3 "$OUT/fio-lose.log"); $(dmesg | grep rswap | tail -4)"
		fi
	else
		ktap_fail "could not set up: $(cat $T/last_error 2>/dev/null); $(dmesg | grep rswap | tail -3)"
		rmdir $T 2>/dev/null; rmmod rswap 2>/dev/null
	fi
}
ktap_test "poll: a device that loses flushed completions (fault_lose_flushes=16, keepalive_ms=0) under polled fio verify: the poll queue's teardown stops waiting at its marker, then completes them itself; fio ends with 0 errors" t_lose_flushes

# The RDMA device goes away under polled I/O, with nothing to reconnect to: the removal
# tears the poll queue down (its drain polls for its marker), recovery finds no device
# within recovery_ms and fails the I/O, and the removal itself ends.
t_removal() {
	if rswap_load && mkdir $T && echo "$IP" > $T/addr && echo $PORT > $T/port \
		&& echo ${SIZE_MB}M > $T/size && echo 1 > $T/queues && echo 1 > $T/poll_queues \
		&& echo 5000 > $T/recovery_ms && echo 1 > $T/enable; then
		DEV=/dev/$(cat $T/device)
		B=$(basename "$DEV")
		dmesg_mark "33-poll removal"
		fio --name=removal --filename="$DEV" --direct=1 --ioengine=io_uring --hipri=1 --rw=randrw \
			--bs=4k --iodepth=16 --numjobs=2 --time_based --runtime=60 --continue_on_error=none \
			>"$OUT/fio-removal.log" 2>&1 &
		fpid=$!
		sleep 4
		polled=$(requests $T/stats 1)
		rdma link delete $RDMA_DEV &
		dpid=$!
		start=$(date +%s)
		wait_exit $fpid 90
		fio_rc=$?
		took=$(( $(date +%s) - start ))
		wait_exit $dpid 60
		del_rc=$?
		st=$(cat $T/state)
		if [ $fio_rc = 124 ] || [ $del_rc = 124 ]; then
			ktap_fail "after ${took}s: fio exit $fio_rc, rdma link delete exit $del_rc (124: still running); state $st; $(dmesg | grep rswap | tail -5)"
			kill -KILL $fpid "$SPID" 2>/dev/null
			ktap_skip_rest "polled I/O or the device's removal hung"
		fi
		ok=1
		echo 0 > $T/enable || ok=0
		rmdir $T || ok=0
		rmmod rswap || ok=0
		if [ $fio_rc != 0 ] && [ $del_rc = 0 ] && [ $ok = 1 ] && [[ $st == dead* ]] && [ "$polled" -gt 0 ]; then
			ktap_pass
			ktap_diag "queue1 had served $polled polled requests; fio ended ${took}s after the removal (exit $fio_rc): $(grep -i -m1 'error' "$OUT/fio-removal.log")" \
				"state was: $st"
		else
			ktap_fail "fio exit $fio_rc after ${took}s, removal exit $del_rc, teardown ok=$ok, queue1 served $polled, state $st; $(tail -3 "$OUT/fio-removal.log"); $(dmesg | grep rswap | tail -4)"
		fi
	else
		ktap_fail "could not set up: $(cat $T/last_error 2>/dev/null); $(dmesg | grep rswap | tail -3)"
		rmdir $T 2>/dev/null; rmmod rswap 2>/dev/null
	fi
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
}
ktap_test "poll: rdma link delete under polled fio (recovery_ms=5000): the poll queue is torn down with its device, the I/O fails within 90 s, the removal ends; disable and rmmod work" t_removal

t_dmesg() {
	dmesg_note_rxe_races
	ktap_check dmesg_clean
}
ktap_test "dmesg: no BUG/WARNING/Oops in the poll queue tests" t_dmesg

ktap_run setup
