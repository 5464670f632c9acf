#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rswap-server over soft-RoCE (rxe0 loopback in one guest), driven by rswap-testclient:
# descriptors on every queue, one-sided write/read through different queues, a region
# per client, rejects with their reasons, reconnect within and after the grace
# period, --max-clients, clean shutdown on SIGTERM/SIGINT.
# Needs the host-built binaries: bash scripts/build-server.sh
. "$RSWAP_TOP/tests/lib/guest.sh"

BIN=$RSWAP_TOP/tools/rswap-server/target/release
SRV=$BIN/rswap-server
CLI=$BIN/rswap-testclient
IP=${RSWAP_GUEST_IP:-192.0.2.1}
P1=7471 # server 1: 16M pool, 30 s grace
P2=7472 # server 2: 8M pool, 1 s grace, one client at most
P3=7473 # server 3: --hugepages
OUT=$RSWAP_OUT/20-server
mkdir -p "$OUT"
MIB=$((1 << 20))

SPID1= SPID2= SPID3= HOLD=
cleanup() {
	local p
	for p in $HOLD $SPID1 $SPID2 $SPID3; do kill -KILL "$p" 2>/dev/null; done
	true
}
trap cleanup EXIT

# client PORT ARGS...: runs the test client (testclient: output in $CO, status in $CS).
client() {
	local port=$1; shift
	testclient "$IP:$port" "$@"
}
# fail_diag WHY: fail the current test with the last client output and server log tails.
fail_diag() {
	ktap_fail "$(printf '%s\n' "$1" "client (exit $CS):" "$CO" "server 1:" \
		"$(tail -n 5 "$OUT/server1.log" 2>/dev/null)" "server 2:" "$(tail -n 5 "$OUT/server2.log" 2>/dev/null)")"
}

setup() {
	dmesg_mark 20-server
	if [ ! -x "$SRV" ] || [ ! -x "$CLI" ]; then
		ktap_skip_rest "no $SRV (run scripts/build-server.sh on the host)"
	fi
	if ! why=$(rdma_up 2>&1); then
		ktap_skip_rest "soft-RoCE unavailable: $why"
	fi
}

# The tests run in this order: the third starts servers 1 and 2, which the later ones use,
# and a test may look at what an earlier one left (client 1's region, client 9's).

# bad option; --listen twice (once the last one was taken)
t_bad_option() {
	err=$("$SRV" --listen "$IP:$P1" --size 16M --insecure --frobnicate 2>&1 >/dev/null); rc=$?
	err2=$("$SRV" --listen "$IP:$P1" --listen "$IP:$P2" --size 16M --insecure 2>&1 >/dev/null); rc2=$?
	err3=$(timeout 20 "$SRV" --listen "$IP:$P1" --size 16M --insecure --grace 18446744073709551615 2>&1 >/dev/null); rc3=$?
	if [ $rc -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [[ $err == *--frobnicate* ]] \
		&& [ $rc2 -eq 2 ] && [ "$(printf '%s\n' "$err2" | wc -l)" -eq 1 ] \
		&& [[ $err2 == *--listen*"multiple times"* ]] \
		&& [ $rc3 -eq 2 ] && [ "$(printf '%s\n' "$err3" | wc -l)" -eq 1 ] && [[ $err3 == *--grace*"at most"* ]]; then
		ktap_pass
	else
		ktap_fail "exit $rc, stderr: $err; twice: exit $rc2, stderr: $err2; huge --grace: exit $rc3, stderr: $err3"
	fi
}
ktap_test "server: bad option, an option given twice, or --grace out of range gives one line and exit 2" t_bad_option

# an address no interface has
t_unbindable() {
	err=$(timeout 20 "$SRV" --listen 198.51.100.7:$P1 --size 16M --insecure 2>&1 >/dev/null); rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] \
		&& [[ $err == *"cannot listen on 198.51.100.7:$P1"* ]]; then
		ktap_pass
	else
		ktap_fail "exit $rc, stderr: $err"
	fi
}
ktap_test "server: unbindable address gives one line and a non-zero exit" t_unbindable

# server 1 (and server 2 for the grace and --max-clients tests)
t_listens() {
	"$SRV" --listen "$IP:$P1" --size 16M --grace 30 --log-level debug --insecure 2>"$OUT/server1.log" &
	SPID1=$!
	"$SRV" --listen "$IP:$P2" --size 8M --grace 1 --max-clients 1 --insecure 2>"$OUT/server2.log" &
	SPID2=$!
	if wait_log "$OUT/server1.log" "event=listening addr=$IP:$P1" 20 \
		&& wait_log "$OUT/server2.log" "event=listening addr=$IP:$P2" 20; then
		# Root in the guest may declare the server part of the I/O path.
		if grep 'event=listening' "$OUT/server1.log" | grep -q ' io_flusher=true'; then
			ktap_pass
		else
			ktap_fail "not an I/O flusher: $(grep -E 'event=(listening|io_flusher_failed)' "$OUT/server1.log")"
		fi
	else
		ktap_fail "$(cat "$OUT/server1.log" "$OUT/server2.log")"
		ktap_skip_rest "the server did not start"
	fi
}
ktap_test "server: listens on the guest address, declared part of the I/O path (io_flusher=true)" t_listens

# client 1: two queues, write through queue 0, verify through queue 1
t_two_queues() {
	client $P1 --client-id 1 --size 4M --queues 2 --print-descriptor --write-pattern 11 --verify-pattern 11
	A_REGION=$(field region_id) A_ADDR=$(field remote_addr) A_RKEY=$(field rkey)
	q1_region=$(field region_id '^queue=1 ') q1_addr=$(field remote_addr '^queue=1 ') q1_rkey=$(field rkey '^queue=1 ')
	if [ $CS -eq 0 ] && [ -n "$A_REGION" ] && [ "$q1_region" = "$A_REGION" ] && [ "$q1_addr" = "$A_ADDR" ] \
		&& [ "$q1_rkey" = "$A_RKEY" ] && [ "$(field epoch)" = 1 ] && [ "$(field reused)" = 0 ] \
		&& [ "$(field length)" = $((4 * MIB)) ] \
		&& printf '%s\n' "$CO" | grep -q "^verify_pattern seed=11 bytes=$((4 * MIB)) queue=1 .*result=ok" \
		&& [ "$(grep -c 'event=descriptor_posted client_id=1 ' "$OUT/server1.log")" -eq 2 ] \
		&& ! grep -v '^ts=[^ ]* level=debug ' "$OUT/server1.log" | grep -qE '\b(rkey|remote_addr)=' \
		&& grep -q "level=debug event=region_access client_id=1 region_id=$A_REGION remote_addr=$A_ADDR rkey=$A_RKEY\$" "$OUT/server1.log"; then
		ktap_pass
	else
		fail_diag "expected 2 equal descriptors (epoch 1), 2 descriptor SENDs, a clean verify, and the rkey and address in the server log at debug level only"
	fi
}
ktap_test "two queues: same descriptor on both, pattern written via queue 0 reads back via queue 1; rkey and address logged at debug level only" t_two_queues

# reconnect within the grace period (the server must have seen client 1 go idle):
# client 1's region of the test before ($A_REGION, $A_ADDR)
t_reconnect_grace() {
	wait_log "$OUT/server1.log" "event=client_idle client_id=1 " 20
	client $P1 --client-id 1 --size 4M --queues 2 --print-descriptor --verify-pattern 11
	if [ $CS -eq 0 ] && [ "$(field region_id)" = "$A_REGION" ] && [ "$(field remote_addr)" = "$A_ADDR" ] \
		&& [ "$(field epoch)" = 2 ] && [ "$(field reused)" = 1 ] && [ "$(field flags)" = 0x1 ] \
		&& [ "$(field epoch '^queue=1 ')" = 2 ] && printf '%s\n' "$CO" | grep -q '^verify_pattern .*result=ok'; then
		ktap_pass
	else
		fail_diag "expected region $A_REGION at $A_ADDR back with epoch 2 and the data of seed 11"
	fi
}
ktap_test "reconnect within grace: same region, epoch 2, REUSED, earlier data intact" t_reconnect_grace

# a second client
t_second_client() {
	client $P1 --client-id 2 --size 4M --print-descriptor
	if [ $CS -eq 0 ] && [ -n "$(field region_id)" ] && [ "$(field region_id)" != "$A_REGION" ] \
		&& [ "$(field remote_addr)" != "$A_ADDR" ] && [ "$(field epoch)" = 1 ]; then
		ktap_pass
	else
		fail_diag "expected a region other than $A_REGION/$A_ADDR"
	fi
}
ktap_test "second client id gets a different region" t_second_client

# clients 1 and 2 (live or in grace) hold 8M of the 16M pool
t_too_large() {
	client $P1 --client-id 3 --size 64M --expect-reject TooLarge
	if [ $CS -eq 0 ] && [ "$(field max_size '^reason=')" = $((8 * MIB)) ]; then
		ktap_pass
	else
		fail_diag "expected TooLarge with max_size=$((8 * MIB))"
	fi
}
ktap_test "too large an ask is rejected with TooLarge and max_size = pool left" t_too_large

# client 4 holds queue 0 of 2; a connect announcing 1 queue must be refused
t_queue_mismatch() {
	timeout 120 "$CLI" --connect "$IP:$P1" --client-id 4 --size 1M --queues 1 --queue-count 2 \
		--print-descriptor --hold 30 >"$OUT/holder.out" 2>&1 &
	HOLD=$!
	if wait_log "$OUT/holder.out" '^queue=0 ' 60; then
		client $P1 --client-id 4 --size 1M --queues 1 --expect-reject QueueMismatch
		if [ $CS -eq 0 ] && printf '%s\n' "$CO" | grep -q '^reason=QueueMismatch'; then
			ktap_pass
		else
			fail_diag "expected QueueMismatch"
		fi
	else
		CO=$(cat "$OUT/holder.out") CS=-; fail_diag "the holding client did not connect"
	fi
	kill "$HOLD" 2>/dev/null; wait "$HOLD" 2>/dev/null; HOLD=
}
ktap_test "queue_count disagreeing with live queues is rejected with QueueMismatch" t_queue_mismatch

# a version-1 client (before authentication) is refused with BadVersion, framed as
# version 1 so that it can read why, and learns nothing of the pool (max_size 0); as
# does a request of an unknown version
t_bad_version() {
	client $P1 --client-id 5 --size 1M --proto-version 1 --expect-reject BadVersion
	v1=$CO v1s=$CS
	client $P1 --client-id 5 --size 1M --proto-version 3 --expect-reject BadVersion
	if [ $v1s -eq 0 ] && [ $CS -eq 0 ] && [ "$(CO=$v1 field max_size '^reason=BadVersion')" = 0 ] \
		&& [ "$(field max_size '^reason=BadVersion')" = 0 ]; then
		ktap_pass
	else
		CO="$v1 / $CO"; fail_diag "expected BadVersion with max_size=0 (version 1, then 3)"
	fi
}
ktap_test "a version-1 (or 3) client is rejected with BadVersion, in a reject it can read, with no pool figure" t_bad_version

# size 0
t_size_zero() {
	client $P1 --client-id 6 --size 0 --expect-reject BadRequest
	if [ $CS -eq 0 ] && printf '%s\n' "$CO" | grep -q '^reason=BadRequest'; then
		ktap_pass
	else
		fail_diag "expected BadRequest"
	fi
}
ktap_test "size 0 is rejected with BadRequest" t_size_zero

# a queue_count above the server's cap
t_max_queues() {
	client $P1 --client-id 7 --size 1M --queues 1 --queue-count 65 --expect-reject BadRequest
	if [ $CS -eq 0 ] && printf '%s\n' "$CO" | grep -q '^reason=BadRequest' \
		&& grep -q 'queue_count above --max-queues' "$OUT/server1.log"; then
		ktap_pass
	else
		fail_diag "expected BadRequest for queue_count 65"
	fi
}
ktap_test "queue_count above --max-queues (64) is rejected with BadRequest, the cap named in the log" t_max_queues

# a wildcard address: the server warns (and still listens)
t_wildcard() {
	"$SRV" --listen "0.0.0.0:7474" --size 4M --insecure >"$OUT/server-wildcard.log" 2>&1 &
	wpid=$!
	if wait_log "$OUT/server-wildcard.log" "event=listen_wildcard" 20 && grep -q 'event=listening' "$OUT/server-wildcard.log"; then
		ktap_pass
		ktap_diag "$(grep -m1 listen_wildcard "$OUT/server-wildcard.log" | sed 's/^ts=[^ ]* //')"
	else
		ktap_fail "$(tail -3 "$OUT/server-wildcard.log")"
	fi
	kill $wpid 2>/dev/null; wait $wpid 2>/dev/null
}
ktap_test "listening on a wildcard address logs a warning" t_wildcard

# server 2 allows one client: client 9 holds, client 10 is refused
t_max_clients() {
	timeout 120 "$CLI" --connect "$IP:$P2" --client-id 9 --size 2M --print-descriptor --write-pattern 5 \
		--hold 3 >"$OUT/holder.out" 2>&1 &
	HOLD=$!
	if wait_log "$OUT/holder.out" '^write_pattern seed=5 ' 60; then
		client $P2 --client-id 10 --size 1M --expect-reject TooManyClients
		if [ $CS -eq 0 ] && printf '%s\n' "$CO" | grep -q '^reason=TooManyClients'; then
			ktap_pass
		else
			fail_diag "expected TooManyClients"
		fi
	else
		CO=$(cat "$OUT/holder.out") CS=-; fail_diag "client 9 did not connect and write"
	fi
	wait_exit "$HOLD" 60; hold_rc=$?; HOLD=
	D_REGION=$(CO=$(cat "$OUT/holder.out"); field region_id)
}
ktap_test "--max-clients 1: a second client is rejected with TooManyClients" t_max_clients

# the grace period (1 s) ends: region freed; a reconnect gets a new, zeroed region (client
# 9 of the test before: $hold_rc, $D_REGION)
t_grace_over() {
	if [ $hold_rc -eq 0 ] && wait_log "$OUT/server2.log" "event=region_freed client_id=9 .*why=\"grace period over\"" 20; then
		client $P2 --client-id 9 --size 2M --print-descriptor --verify-pattern 5
		if [ $CS -ne 0 ] && printf '%s\n' "$CO" | grep -q 'pattern mismatch at offset' \
			&& [ "$(field epoch)" = 1 ] && [ "$(field reused)" = 0 ] \
			&& [ -n "$(field region_id)" ] && [ "$(field region_id)" != "$D_REGION" ]; then
			ktap_pass
		else
			fail_diag "expected a new region (not $D_REGION) with epoch 1 and no pattern"
		fi
	else
		CO=$(cat "$OUT/holder.out") CS=$hold_rc; fail_diag "client 9 failed or its region was not freed"
	fi
}
ktap_test "after the grace period the region is freed: new region, epoch 1, data gone" t_grace_over

# A client may ask for the descriptor with the accept (the kernel client does on iWARP,
# where MPA has the initiator send first): it gets it there, on every queue, signed as
# usual, and the server posts no SEND. The SEND path (every other test) stays for clients
# that do not ask.
t_descriptor_in_accept() {
	client $P1 --client-id 13 --size 1M --queues 2 --descriptor-in-accept --print-descriptor \
		--write-pattern 13 --verify-pattern 13
	if [ $CS -eq 0 ] && [ "$(field epoch)" = 1 ] && [ "$(field length)" = $MIB ] \
		&& [ "$(field region_id '^queue=1 ')" = "$(field region_id)" ] \
		&& printf '%s\n' "$CO" | grep -q "^verify_pattern seed=13 bytes=$MIB queue=1 .*result=ok" \
		&& [ "$(grep -c 'event=descriptor_posted client_id=13 .* via=accept ' "$OUT/server1.log")" -eq 2 ] \
		&& ! grep -q 'event=descriptor_posted client_id=13 .* via=send ' "$OUT/server1.log" \
		&& ! grep -q 'event=descriptor_delivered client_id=13 ' "$OUT/server1.log" \
		&& [ "$(grep -c 'event=descriptor_posted client_id=1 .* via=send ' "$OUT/server1.log")" -ge 2 ]; then
		ktap_pass
	else
		fail_diag "expected 2 descriptors via the accept for client 13 and none by SEND, a clean verify; and SENDs for client 1"
	fi
}
ktap_test "descriptor in the accept: a client that asks gets it with the accept on every queue and no SEND; the others get a SEND" t_descriptor_in_accept

# SIGTERM with client 7 connected (and clients 1, 2, 4 in their grace period)
t_sigterm() {
	timeout 120 "$CLI" --connect "$IP:$P1" --client-id 7 --size 1M --print-descriptor --hold 60 \
		>"$OUT/holder.out" 2>&1 &
	HOLD=$!
	wait_log "$OUT/holder.out" '^queue=0 ' 60
	kill -TERM "$SPID1"
	wait_exit "$SPID1" 30; rc=$?
	wait_exit "$HOLD" 30; hold_rc=$?
	if [ $rc -eq 0 ] && grep -q 'event=stopped' "$OUT/server1.log" \
		&& grep -q 'event=queue_closed client_id=7 .*why="server shutdown"' "$OUT/server1.log" \
		&& grep -q 'event=region_freed client_id=7 .*why="server shutdown"' "$OUT/server1.log" \
		&& [ $hold_rc -eq 1 ] && grep -q 'server disconnected a queue' "$OUT/holder.out" \
		&& ! grep -q 'level=error' "$OUT/server1.log"; then
		ktap_pass
	else
		ktap_fail "server exit $rc, client 7 exit $hold_rc: $(cat "$OUT/holder.out")
$(tail -n 8 "$OUT/server1.log")"
	fi
	SPID1= HOLD=
}
ktap_test "SIGTERM: server 1 disconnects a live client, frees its region and exits 0" t_sigterm

# SIGINT
t_sigint() {
	kill -INT "$SPID2"
	wait_exit "$SPID2" 30; rc=$?
	if [ $rc -eq 0 ] && grep -q 'event=stopped' "$OUT/server2.log"; then
		ktap_pass
	else
		ktap_fail "exit $rc; $(tail -n 8 "$OUT/server2.log")"
	fi
	SPID2=
}
ktap_test "SIGINT: server 2 exits 0" t_sigint

# Hugepages: none reserved -> refuse to start. A kernel without HugeTLB (the tinyconfig
# debug kernel): the server must still fail with one clear line.
t_hugepages_none() {
	if [ ! -e /proc/sys/vm/nr_hugepages ]; then
		err=$(timeout 20 "$SRV" --listen "$IP:$P3" --size 8M --hugepages --insecure 2>&1 >/dev/null); rc=$?
		if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] \
			&& [[ $err == "rswap-server: --hugepages: "* ]]; then
			ktap_pass
		else
			ktap_fail "exit $rc, stderr: $err"
		fi
	else
		echo 0 >/proc/sys/vm/nr_hugepages
		err=$(timeout 20 "$SRV" --listen "$IP:$P3" --size 8M --hugepages --insecure 2>&1 >/dev/null); rc=$?
		if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] \
			&& [[ $err == *"no hugepages are reserved"* ]]; then
			ktap_pass
		else
			ktap_fail "exit $rc, stderr: $err"
		fi
	fi
}
ktap_test "--hugepages with no hugepages reserved: one clear line, non-zero exit" t_hugepages_none

# Hugepages: 4 x 2M reserved, a 2M region written and read back (the hugepage-backed run
# cannot happen on a kernel without HugeTLB).
t_hugepages_region() {
	if [ ! -e /proc/sys/vm/nr_hugepages ]; then
		ktap_skip "this kernel has no HugeTLB support"
		return
	fi
	echo 4 >/proc/sys/vm/nr_hugepages
	if [ "$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)" -lt 1 ] \
		|| [ "$(awk '/^Hugepagesize:/ { print $2 }' /proc/meminfo)" != 2048 ]; then
		ktap_skip "could not reserve 2M hugepages"
	else
		"$SRV" --listen "$IP:$P3" --size 8M --hugepages --insecure 2>"$OUT/server3.log" &
		SPID3=$!
		wait_log "$OUT/server3.log" "event=listening addr=$IP:$P3" 20
		free_before=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
		client $P3 --client-id 12 --size 2M --print-descriptor --write-pattern 3 --verify-pattern 3
		free_during=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
		kill -TERM "$SPID3"; wait_exit "$SPID3" 30; rc=$?; SPID3=
		if [ $CS -eq 0 ] && [ $rc -eq 0 ] && printf '%s\n' "$CO" | grep -q '^verify_pattern .*result=ok' \
			&& [ "$free_during" -eq $((free_before - 1)) ] \
			&& [ "$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)" -eq "$free_before" ]; then
			ktap_pass
		else
			fail_diag "server exit $rc; hugepages free before/during/after: $free_before/$free_during/$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
	$(tail -n 5 "$OUT/server3.log")"
		fi
	fi
	echo 0 >/proc/sys/vm/nr_hugepages
}
ktap_test "--hugepages: a hugepage-backed region takes a pattern and gives it back" t_hugepages_region

# the kernel stayed quiet
t_dmesg() {
	if bad=$(dmesg_clean); then ktap_pass; else ktap_fail "$bad"; fi
	rdma_down
}
ktap_test "no kernel warnings" t_dmesg

ktap_run setup
