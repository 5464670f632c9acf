#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rswap-server --state-dir over soft-RoCE (rxe0 loopback in one guest), driven by
# rswap-testclient: regions live in files on a tmpfs and outlive the server process.
# A SIGKILLed or SIGTERMed server restarted on the same directory gives each client
# its region back (same region_id, REUSED, every byte); an emptied directory yields a
# different region_id; corrupt or incomplete entries are logged, deleted and never
# served; a restored region whose grace period ends is freed with its files.
# Needs the host-built binaries: bash scripts/build-server.sh
. "$RSWAP_TOP/tests/lib/guest.sh"

BIN=$RSWAP_TOP/tools/rswap-server/target/release
SRV=$BIN/rswap-server
CLI=$BIN/rswap-testclient
IP=${RSWAP_GUEST_IP:-192.0.2.1}
P=7477  # the server under test, restarted again and again
P2=7478 # a second server trying the same state directory
OUT=$RSWAP_OUT/47-server-restart
SD=/tmp/rswap-47-state
mkdir -p "$OUT"
MIB=$((1 << 20))


SPID= HOLD= BG= MOUNTED=
cleanup() {
	local p
	for p in $HOLD $SPID $BG; do kill -KILL "$p" 2>/dev/null; done
	[ -z "$MOUNTED" ] || umount "$SD" 2>/dev/null
	true
}
trap cleanup EXIT

# client ARGS...: runs the test client (testclient: output in $CO, status in $CS).
client() { testclient "$IP:$P" "$@"; }
# LOG: the current server's log; each run of the server gets its own.
RUN=0 LOG=
# start [OPTIONS...]: starts the server on the state directory (grace 120 s unless given,
# so regions restored but not reclaimed survive the tests that follow).
start() {
	[ $# -gt 0 ] || set -- --grace 120
	RUN=$((RUN + 1))
	LOG=$OUT/server-$RUN.log
	server_start "$LOG" --listen "$IP:$P" --size 32M --state-dir "$SD" --insecure "$@"
}
# kill_server SIG: sends SIG to the server and waits for it to end; status in $SRC.
SRC=
kill_server() {
	kill -"$1" "$SPID" 2>/dev/null
	wait_exit "$SPID" 30; SRC=$?
	SPID=
}
# run_until_listening LOG CMD...: runs CMD (a server; its output in LOG) until it logs
# event=listening, which comes after whatever it logs as it starts, or ends; at most 30 s.
# Then SIGTERM, and waits for it to end.
run_until_listening() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	BG=$!
	for _ in $(seq 300); do
		grep -q 'event=listening' "$log" && break
		kill -0 "$BG" 2>/dev/null || break
		sleep 0.1
	done
	kill "$BG" 2>/dev/null
	wait_exit "$BG" 30 || { kill -KILL "$BG" 2>/dev/null; wait "$BG" 2>/dev/null; }
	BG=
}
# meta_of REGION_ID: the metadata file naming that region (empty if none).
meta_of() { grep -lx "region_id=$1" "$SD"/region-*.meta 2>/dev/null | head -n1; }
# regions: number of region files (memory and metadata) in the state directory.
regions() { find "$SD" -maxdepth 1 -name 'region-*' | wc -l; }
# wait_no_regions SECS: until no region file is left (files go right after region_freed).
wait_no_regions() {
	local i
	for i in $(seq $(($1 * 10))); do [ "$(regions)" -eq 0 ] && return 0; sleep 0.1; done
	return 1
}
# fail_diag WHY: fail the current test with the last client output and the server log tail.
fail_diag() {
	ktap_fail "$(printf '%s\n' "$1" "client (exit $CS):" "$CO" "server ($LOG):" \
		"$(tail -n 8 "$LOG" 2>/dev/null)" "state dir:" "$(ls -l "$SD" 2>&1)")"
}

setup() {
	dmesg_mark 47-server-restart
	if [ ! -x "$SRV" ] || [ ! -x "$CLI" ]; then
		ktap_skip_rest "no $SRV (run scripts/build-server.sh on the host)"
	fi
	if ! why=$(rdma_up 2>&1); then
		ktap_skip_rest "soft-RoCE unavailable: $why"
	fi
	# A tmpfs of its own, as in production: memory that outlives the server, not a reboot.
	mkdir -p "$SD"
	if mount -t tmpfs -o size=64M,mode=0700 rswap-47-state "$SD"; then
		MOUNTED=1
	else
		ktap_diag "could not mount a tmpfs on $SD; using the directory as it is (/tmp is tmpfs)"
		rm -rf "${SD:?}"/*
	fi
}

# The tests run in this order on one state directory, $SD: each starts, kills or restarts
# the server the one before left ($SPID, $LOG) and checks client 1's and 2's regions ($R1,
# $R2) that earlier ones wrote.
# two clients write their patterns; their regions are files
t_regions_are_files() {
	if ! start >/dev/null; then
		ktap_fail "$(cat "$LOG")"
		ktap_skip_rest "the server did not start"
	fi
	client --client-id 1 --size 4M --queues 2 --print-descriptor --write-pattern 21
	R1=$(field region_id) E1=$(field epoch)
	out1=$CO cs1=$CS
	client --client-id 2 --size 4M --print-descriptor --write-pattern 22
	R2=$(field region_id)
	M1=$(meta_of "$R1")
	if [ $cs1 -eq 0 ] && [ $CS -eq 0 ] && [ -n "$R1" ] && [ -n "$R2" ] && [ "$R1" != "$R2" ] && [ "$E1" = 1 ] \
		&& grep -q "event=listening addr=$IP:$P .*state_dir=$SD restored=0" "$LOG" \
		&& [ -n "$M1" ] && grep -qx 'client_id=1' "$M1" && grep -qx 'epoch=1' "$M1" \
		&& [ "$(stat -c %s "${M1%.meta}.mem")" = $((4 * MIB)) ] && [ -n "$(meta_of "$R2")" ] \
		&& [ "$(regions)" -eq 4 ]; then
		ktap_pass
	else
		CO="$out1
$CO"; fail_diag "expected regions $R1 and $R2 as 4 files, client 1's metadata with epoch 1"
	fi
}
ktap_test "--state-dir on tmpfs: two clients write, each region is a memory file and a metadata file" t_regions_are_files

# the state directory is locked by the running server
t_state_dir_locked() {
	err=$(timeout 20 "$SRV" --listen "$IP:$P2" --size 8M --state-dir "$SD" --insecure 2>&1 >/dev/null); rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] \
		&& [[ $err == *"in use by another rswap-server"* ]] && [ "$(regions)" -eq 4 ]; then
		ktap_pass
	else
		ktap_fail "exit $rc, stderr: $err; $(ls -l "$SD")"
	fi
}
ktap_test "a second server on the same state directory is refused with one line" t_state_dir_locked

# a state directory the server must not use: on a disk (the guest's ext4 root) unless
#    --state-dir-on-disk, writable by others, or another user's; each refused with one
#    line, exit 1; a tmpfs smaller than the pool is only a warning
t_state_dir_checks() {
	local disk=/var/tmp/rswap-47-disk t=/tmp/rswap-47-checks out=() rc=() i
	rm -rf "$disk" "$t"; mkdir -p "$t"
	mkdir -m 0700 "$t/open" "$t/foreign" && chmod 0777 "$t/open" && chown 65534:65534 "$t/foreign"
	for d in "$disk" "$t/open" "$t/foreign"; do
		out+=("$(timeout 20 "$SRV" --listen "$IP:$P2" --size 8M --state-dir "$d" --insecure 2>&1 >/dev/null)")
		rc+=($?)
	done
	run_until_listening "$OUT/server-disk.log" \
		"$SRV" --listen "$IP:$P2" --size 8M --state-dir "$disk" --state-dir-on-disk --insecure
	mkdir -m 0700 "$t/small" && mount -t tmpfs -o size=4M,mode=0700 rswap-47-small "$t/small"
	run_until_listening "$OUT/server-small.log" "$SRV" --listen "$IP:$P2" --size 8M --state-dir "$t/small" --insecure
	umount "$t/small"
	local bad=
	for i in 0 1 2; do
		{ [ "${rc[$i]}" = 1 ] && [ "$(printf '%s\n' "${out[$i]}" | grep -c .)" = 1 ]; } || bad+="case $i: exit ${rc[$i]}: ${out[$i]}; "
	done
	[[ ${out[0]} == *"$disk is not on tmpfs or hugetlbfs"*plaintext*--state-dir-on-disk* ]] || bad+="disk: ${out[0]}; "
	[[ ${out[1]} == *"$t/open has mode 0777"*"chmod 700"* ]] || bad+="mode: ${out[1]}; "
	[[ ${out[2]} == *"$t/foreign belongs to uid 65534"* ]] || bad+="owner: ${out[2]}; "
	grep -q "level=warn event=state_dir_on_disk dir=$disk .*plaintext" "$OUT/server-disk.log" || bad+="no state_dir_on_disk warning; "
	grep -q 'event=listening' "$OUT/server-disk.log" || bad+="--state-dir-on-disk did not start; "
	grep -q "level=warn event=state_dir_small dir=$t/small fs_size=4M pool=8M" "$OUT/server-small.log" || bad+="no state_dir_small warning; "
	if [ -z "$bad" ]; then
		ktap_pass
		ktap_diag "${out[@]}"
	else
		ktap_fail "$bad"
	fi
	rm -rf "$disk" "$t"
}
ktap_test "a state directory on disk (without --state-dir-on-disk), writable by others or of another user is refused; a small tmpfs is a warning" t_state_dir_checks

# SIGKILL, restart: region restored, client 1 gets it back
t_sigkill_restart() {
	wait_log "$LOG" "event=client_idle client_id=1 " 20
	kill_server KILL
	if ! start >/dev/null; then
		ktap_fail "$(cat "$LOG")"
		ktap_skip_rest "the server did not restart"
	fi
	client --client-id 1 --size 4M --queues 2 --print-descriptor --verify-pattern 21
	if [ $CS -eq 0 ] && grep -q "event=region_restored client_id=1 region_id=$R1 length=$((4 * MIB)) " "$LOG" \
		&& grep -q "event=region_restored client_id=2 region_id=$R2 " "$LOG" \
		&& grep -q "event=listening .*restored=2" "$LOG" \
		&& [ "$(field region_id)" = "$R1" ] && [ "$(field region_id '^queue=1 ')" = "$R1" ] \
		&& [ "$(field epoch)" = 2 ] && [ "$(field reused)" = 1 ] && [ "$(field flags)" = 0x1 ] \
		&& printf '%s\n' "$CO" | grep -q "^verify_pattern seed=21 bytes=$((4 * MIB)) queue=1 .*result=ok" \
		&& grep -qx 'epoch=2' "$(meta_of "$R1")"; then
		ktap_pass
	else
		fail_diag "expected region $R1 back with epoch 2, REUSED and the data of seed 21"
	fi
}
ktap_test "SIGKILL + restart: region restored; the client gets the same region_id, REUSED and its data" t_sigkill_restart

# SIGTERM while client 1 is connected (client 2 in its grace period): both kept.
#    Client 1's two queues must be gone first, or its one-queue connect is a mismatch.
t_sigterm() {
	wait_log "$LOG" "event=client_idle client_id=1 " 20
	timeout 120 "$CLI" --connect "$IP:$P" --client-id 1 --size 4M --print-descriptor --hold 60 \
		>"$OUT/holder.out" 2>&1 &
	HOLD=$!
	wait_log "$OUT/holder.out" '^queue=0 ' 60
	kill_server TERM
	wait_exit "$HOLD" 30; hold_rc=$?; HOLD=
	if [ $SRC -eq 0 ] && grep -q 'event=stopped' "$LOG" \
		&& grep -q 'event=queue_closed client_id=1 .*why="server shutdown"' "$LOG" \
		&& grep -q "event=region_kept client_id=1 region_id=$R1 .*epoch=3 " "$LOG" \
		&& grep -q "event=region_kept client_id=2 region_id=$R2 " "$LOG" \
		&& ! grep -q 'event=region_freed' "$LOG" \
		&& [ $hold_rc -eq 1 ] && grep -q 'server disconnected a queue' "$OUT/holder.out" \
		&& [ "$(regions)" -eq 4 ] && grep -qx 'epoch=3' "$(meta_of "$R1")"; then
		ktap_pass
	else
		CO=$(cat "$OUT/holder.out") CS=$hold_rc
		fail_diag "server exit $SRC: expected region_kept for $R1 (epoch 3) and $R2, no region_freed"
	fi
}
ktap_test "SIGTERM with a live client: exit 0, regions kept on disk (region_kept), none freed" t_sigterm

# restart after SIGTERM
t_restart_after_sigterm() {
	if ! start >/dev/null; then
		ktap_fail "$(cat "$LOG")"
		ktap_skip_rest "the server did not restart"
	fi
	client --client-id 1 --size 4M --print-descriptor --verify-pattern 21
	if [ $CS -eq 0 ] && grep -q "event=region_restored client_id=1 region_id=$R1 .*epoch=3 " "$LOG" \
		&& [ "$(field region_id)" = "$R1" ] && [ "$(field epoch)" = 4 ] && [ "$(field reused)" = 1 ] \
		&& printf '%s\n' "$CO" | grep -q '^verify_pattern seed=21 .*result=ok'; then
		ktap_pass
	else
		fail_diag "expected region $R1 back with epoch 4 and the data of seed 21"
	fi
}
ktap_test "restart after SIGTERM: same region_id, REUSED, data intact" t_restart_after_sigterm

# the memory is lost (as after a reboot): a different region id, no data
t_memory_lost() {
	kill_server KILL
	rm -f "$SD"/region-*
	if ! start >/dev/null; then
		ktap_fail "$(cat "$LOG")"
		ktap_skip_rest "the server did not restart"
	fi
	client --client-id 1 --size 4M --print-descriptor --verify-pattern 21
	if [ $CS -ne 0 ] && printf '%s\n' "$CO" | grep -q 'pattern mismatch at offset' \
		&& ! grep -q 'event=region_restored' "$LOG" && grep -q "event=listening .*restored=0" "$LOG" \
		&& [ -n "$(field region_id)" ] && [ "$(field region_id)" != "$R1" ] && [ "$(field region_id)" != "$R2" ] \
		&& [ "$(field epoch)" = 1 ] && [ "$(field reused)" = 0 ]; then
		ktap_pass
	else
		fail_diag "expected a new region (not $R1) with epoch 1 and no pattern"
	fi
}
ktap_test "emptied state directory: a restart hands out a different region_id, epoch 1, no data" t_memory_lost

# client 1 and 2 write again; then, server down, client 2's metadata is corrupted and a
#    memory file without metadata (an interrupted creation) appears
t_corrupt_entries() {
	client --client-id 1 --size 4M --print-descriptor --write-pattern 23
	R1=$(field region_id) cs1=$CS
	client --client-id 2 --size 4M --print-descriptor --write-pattern 24
	R2=$(field region_id) cs2=$CS
	kill_server KILL
	M2=$(meta_of "$R2")
	LONE=$SD/region-00000000000000aa.mem
	[ -z "$M2" ] || printf 'rswap-region 1\nclient_id=2\nregion_id=garbage\n' >"$M2"
	truncate -s 4096 "$LONE"
	if [ $cs1 -ne 0 ] || [ $cs2 -ne 0 ] || [ -z "$M2" ]; then
		fail_diag "setup failed: clients exit $cs1/$cs2, metadata of $R2: ${M2:-none}"
	elif ! start >/dev/null; then
		ktap_fail "$(cat "$LOG")"
		ktap_skip_rest "the server did not start with a corrupt state directory"
	else
		client --client-id 1 --size 4M --print-descriptor --verify-pattern 23
		out1=$CO cs1=$CS r1=$(field region_id) reused1=$(field reused)
		client --client-id 2 --size 4M --print-descriptor --verify-pattern 24
		if [ $cs1 -eq 0 ] && [ "$r1" = "$R1" ] && [ "$reused1" = 1 ] \
			&& [ "$(grep -c 'event=region_discarded' "$LOG")" -eq 2 ] \
			&& grep -q "event=region_discarded region_id=$R2 .*why=\"metadata: " "$LOG" \
			&& grep -q 'event=region_discarded region_id=170 files=region-00000000000000aa.mem why="metadata missing' "$LOG" \
			&& grep -q "event=region_restored client_id=1 region_id=$R1 " "$LOG" \
			&& ! grep -q "event=region_restored client_id=2 " "$LOG" \
			&& [ ! -e "$M2" ] && [ ! -e "${M2%.meta}.mem" ] && [ ! -e "$LONE" ] \
			&& [ $CS -ne 0 ] && printf '%s\n' "$CO" | grep -q 'pattern mismatch at offset' \
			&& [ -n "$(field region_id)" ] && [ "$(field region_id)" != "$R2" ] && [ "$(field epoch)" = 1 ]; then
			ktap_pass
		else
			CO="$out1
$CO"; fail_diag "expected $R2 and the lone file discarded, $R1 restored, client 2 on a new region"
		fi
	fi
}
ktap_test "corrupt metadata and a lone memory file: logged, deleted, never served; the rest restored" t_corrupt_entries

# metadata the server cannot read (here: a server running as nobody, and client 1's
#    metadata mode 000, EACCES; likewise EMFILE or EIO) says nothing about the region:
#    the server tries again, then refuses to start and deletes nothing; once the cause is
#    gone it restores the region. On a copy of client 1's files, in a directory of
#    nobody's; $SD is left as it was for the next test.
t_unreadable_metadata() {
	[ -z "$SPID" ] || kill_server KILL
	local u=/tmp/rswap-47-unreadable bin=/tmp/rswap-server-47 m err rc
	m=$(meta_of "$R1")
	rm -rf "$u"; mkdir -m 700 "$u"
	cp "$m" "${m%.meta}.mem" "$u/" && cp "$SRV" "$bin" && chmod 755 "$bin"
	chown -R 65534:65534 "$u"
	chmod 000 "$u/${m##*/}"
	# The server as nobody (as root, a mode says nothing) on $u.
	local nobody_server=(setpriv --reuid=65534 --regid=65534 --clear-groups "$bin" --listen "$IP:$P2"
		--size 32M --state-dir "$u" --insecure --no-mlock)
	err=$(timeout 30 "${nobody_server[@]}" 2>&1); rc=$?
	files=$(find "$u" -name 'region-*' | wc -l)
	chmod 600 "$u/${m##*/}"
	# Readable again: it restores the region before it listens.
	run_until_listening "$OUT/server-nobody.log" "${nobody_server[@]}"
	if [ $rc != 0 ] && [ $rc != 124 ] && [[ $err == *"cannot read $u/${m##*/} "*"after 3 tries: Permission denied"*"files are kept"* ]] \
		&& [[ $err != *region_discarded* ]] && [ "$files" = 2 ] \
		&& grep -q "event=region_restored client_id=1 region_id=$R1 " "$OUT/server-nobody.log"; then
		ktap_pass
		ktap_diag "$(tail -n 1 <<<"$err")"
	else
		ktap_fail "exit $rc, $files region files left: $err; once readable: $(tail -n 3 "$OUT/server-nobody.log")"
	fi
	rm -rf "$u" "$bin"
}
ktap_test "metadata that cannot be read (EACCES): retried, the server refuses to start and deletes nothing; readable again, the region is restored" t_unreadable_metadata

# restart with a 2 s grace and nobody reconnecting: both regions freed, files deleted
t_grace_over() {
	[ -z "$SPID" ] || kill_server KILL
	if ! start --grace 2 >/dev/null; then
		ktap_fail "$(cat "$LOG")"
		ktap_skip_rest "the server did not restart"
	fi
	if grep -q "event=listening .*restored=2" "$LOG" \
		&& wait_log "$LOG" 'event=region_freed client_id=1 .*why="grace period over"' 20 \
		&& wait_log "$LOG" 'event=region_freed client_id=2 .*why="grace period over"' 20 \
		&& wait_no_regions 5; then
		ktap_pass
	else
		fail_diag "expected both restored regions freed after 2 s and no region files left"
	fi
	kill_server TERM
	[ "$SRC" -eq 0 ] || ktap_diag "the last server exited with $SRC"
}
ktap_test "a restored region nobody reclaims is freed after its grace period, with its files" t_grace_over

# no server run logged an error (discarded entries are warnings)
t_no_errors() {
	if ! bad=$(grep -H 'level=error' "$OUT"/server-*.log); then
		ktap_pass
	else
		ktap_fail "$bad"
	fi
}
ktap_test "no errors in the server logs" t_no_errors

# the kernel stayed quiet
t_dmesg() {
	dmesg_note_rxe_races
	if bad=$(dmesg_clean); then ktap_pass; else ktap_fail "$bad"; fi

	[ -z "$MOUNTED" ] || { umount "$SD" && MOUNTED=; }
	rdma_down
}
ktap_test "no kernel warnings" t_dmesg

ktap_run setup
