#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In-band authentication over soft-RoCE in one guest: only a region's owner reaches it.
# rswap-server admits the clients of its allow-list, each with its secret; the kernel
# target has the secret in its write-only `secret` attribute and proves it to the server
# (hello, challenge, proof), and the server proves it back in the region descriptor.
# Impostors (rswap-testclient with the owner's id and a wrong or no secret, a replayed
# proof, a cloned target) are refused with their reason and never disturb the owner.
# SIGHUP reads a second server's allow-list again while a kernel target swaps on that
# server: clients added, rotated and removed, a broken file, none of it disturbing the
# swapping target; then the target's own secret is rotated and it is enabled again with
# the new one, getting its region and data back. A target's secret can also come from a
# logon key of the kernel keyring (`key:DESC`, as rswapctl hands it over), so that its
# digits never pass through configfs's write page.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
BIN=$RSWAP_TOP/tools/rswap-server/target/release
SRV=$BIN/rswap-server
CLI=$BIN/rswap-testclient
CTL=$RSWAP_TOP/tools/rswapctl/target/release/rswapctl
LOAD=${RSWAP_SWAPLOAD:-$RSWAP_OUT/swapload}
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORT=18521
CFG=/sys/kernel/config/rswap
T=$CFG/owner
C=$CFG/clone
W=$CFG/wrong
R=$CFG/reload # the reload server's kernel target
CG=/sys/fs/cgroup/rswap-auth
OUT=$RSWAP_OUT/55-auth
mkdir -p "$OUT"
ID=0x5501
SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
OTHER=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
ID2=0x5502 # rswap-testclient's own entry in the allow-list
IP2=192.0.2.3 # a second address of this host, for a flood from elsewhere
SECRET2=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
ALLOW=/tmp/rswap-55-allow
# The targets whose secret comes from the keyring (t_key_*): $K, client $KID, and
# rswapctl's $KUP, client $KUPID (a region has one owner instance: not $KID again), each
# with its secret.
K=$CFG/keyed
KID=0x5506
KSECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
KUP=keyup
KUPID=0x5507
KUPSECRET=$(head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n')
# The owner's swap load in t_flood: WORK_MB in a cgroup of LIMIT_MB, both verify passes
# (its region and the main server are sized from WORK_MB too).
WORK_MB=32
LIMIT_MB=12
# The reload server (t_reload_*): its port, allow-list and log; its kernel target $R is
# client $RID, swapping a swapload run of RWORK_MB in a cgroup of RLIMIT_MB whose rewrite
# phase the test ends (SIGUSR1) once the reloads are done; RLOAD_S seconds is its cap,
# about three times what the reloads took from the load's start on 2026-11-27 (15 s on
# the stock kernel, 34 s on the debug kernel).
RPORT=$((PORT + 2))
RA=/tmp/rswap-55-reload
RLOG=$OUT/server-reload.log
RID=0x5505
RSECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
RWORK_MB=32
RLIMIT_MB=16
RLOAD_S=45
[[ $(uname -r) != *-rswap-debug ]] || RLOAD_S=90

SPID= RSPID= RDEV=
cleanup() {
	swapoff /dev/rswap0 2>/dev/null
	[ -z "$RDEV" ] || swapoff "$RDEV" 2>/dev/null
	local d
	for d in $C $W $R $K $CFG/$KUP $T; do
		{ [ -d "$d" ] && echo 0 > "$d/enable"; } 2>/dev/null
		rmdir "$d" 2>/dev/null
	done
	rmdir $CG 2>/dev/null
	[ -z "$SPID" ] || kill -KILL "$SPID" 2>/dev/null
	[ -z "$RSPID" ] || kill -KILL "$RSPID" 2>/dev/null
	ip addr del $IP2/24 dev eth0 2>/dev/null
	rm -f $RA
	true
}
trap cleanup EXIT

setup() {
	[ -f "$KO" ] || ktap_skip_rest "rswap.ko not built"
	[ -x "$SRV" ] && [ -x "$CLI" ] || ktap_skip_rest "rswap-server not built (scripts/build-server.sh)"
	rdma_up >/dev/null || ktap_skip_rest "$RDMA_DEV unavailable"
	dmesg_mark "55-auth"
}

# client ARGS...: runs the test client against the server (testclient: output in $CO,
# status in $CS), within 120 s.
client() { TESTCLIENT_LIMIT=120 TESTCLIENT_TIMEOUT=30 testclient "$IP:$PORT" "$@"; }
# rclient ARGS...: the same against the reload server.
rclient() { TESTCLIENT_LIMIT=120 TESTCLIENT_TIMEOUT=30 testclient "$IP:$RPORT" "$@"; }
# hup REGEX: SIGHUP to the reload server; waits (20 s) for REGEX in its log.
hup() { kill -HUP "$RSPID"; wait_log "$RLOG" "$1" 20; }

# Safe defaults.
t_safe_defaults() {
	printf '# id secret\n%s %s\n%s %s\n%s %s\n%s %s\n' "$ID" "$SECRET" "$ID2" "$SECRET2" \
		"$KID" "$KSECRET" "$KUPID" "$KUPSECRET" > $ALLOW
	chmod 644 $ALLOW
	no_list=$(timeout 20 "$SRV" --listen "$IP:$PORT" --size 64M 2>&1); no_list_rc=$?
	open_list=$(timeout 20 "$SRV" --listen "$IP:$PORT" --size 64M --allow-list $ALLOW 2>&1); open_list_rc=$?
	chmod 600 $ALLOW
	if [ $no_list_rc != 0 ] && [ $no_list_rc != 124 ] && [[ $no_list == *--allow-list* ]] \
		&& [ $open_list_rc != 0 ] && [ $open_list_rc != 124 ] && [[ $open_list == *"$ALLOW"* ]] \
		&& [[ $open_list != *"$SECRET"* ]]; then
		ktap_pass
		ktap_diag "no allow-list ($no_list_rc): $no_list" "mode 644 ($open_list_rc): $open_list"
	else
		ktap_fail "no allow-list: exit $no_list_rc: $no_list; mode 644: exit $open_list_rc: $open_list"
	fi
}
ktap_test "auth: the server refuses to start without --allow-list (or --insecure), and with an allow-list others can read" t_safe_defaults

# The secret attribute. Starts the server ($SPID, $MAIN_SPID) with the allow-list of the
# test before, and makes the owner's target $T: the tests after use both.
t_secret_attribute() {
	server_start "$OUT/server.log" --listen "$IP:$PORT" --size $((WORK_MB + 96))M --grace 60 \
		--allow-list $ALLOW >/dev/null || ktap_skip_rest "rswap-server does not start: $(tail -3 "$OUT/server.log")"
	MAIN_SPID=$SPID
	grep -q '^rswap ' /proc/modules || rswap_load || ktap_skip_rest "insmod failed"

	mkdir $T
	unset_read=$(cat $T/secret)
	bad=0
	for v in 0123 "$SECRET"0 xyz"${SECRET:3}" "${SECRET:0:30}" "$(printf 'ab%.0s' $(seq 65))"; do
		echo "$v" > $T/secret 2>/dev/null && bad=1
	done
	bad_msg=$(cat $T/last_error)
	echo "$SECRET" > $T/secret || bad=1
	set_read=$(cat $T/secret)
	if [ "$unset_read" = "(unset)" ] && [ "$set_read" = "(set)" ] && [ $bad = 0 ] \
		&& [[ $bad_msg == "secret: "* ]] && ! dmesg | grep -qi "$SECRET"; then
		ktap_pass
		ktap_diag "reads: $unset_read then $set_read; last refusal: $bad_msg"
	else
		ktap_fail "reads $unset_read / $set_read, a bad value accepted=$bad, last_error: $bad_msg"
	fi
}
ktap_test "auth: the target's secret is write-only (reads say only (set) or (unset)); a malformed secret is refused with its reason" t_secret_attribute

# The owner connects.
t_owner_connects() {
	echo "$IP" > $T/addr; echo $PORT > $T/port; echo $((WORK_MB + 32))M > $T/size; echo 2 > $T/queues
	echo $ID > $T/client_id
	if echo 1 > $T/enable && [[ $(cat $T/state) == connected* ]]; then
		challenges=$(grep -c 'auth_challenge' "$OUT/server.log")
		if [ "$challenges" -ge 2 ] && ! grep -qi "$SECRET" "$OUT/server.log"; then
			ktap_pass
			ktap_diag "$(cat $T/state); $challenges challenges in the server log"
		else
			ktap_fail "challenges logged: $challenges; secret in the log: $(grep -ci "$SECRET" "$OUT/server.log")"
		fi
	else
		ktap_fail "enable: $(cat $T/last_error); $(dmesg | grep rswap | tail -4); $(tail -4 "$OUT/server.log")"
		ktap_skip_rest "the owner does not connect"
	fi
	DEV=/dev/$(cat $T/device)
}
ktap_test "auth: a target with its secret connects (hello, challenge, proof; the server's proof checked) and the server logs no secret" t_owner_connects

# logon_key_write DESC HEX FILE: in one process (python3), adds a `logon` key DESC whose
# payload is the bytes HEX spells to its own keyring, writes `key:DESC` to FILE, and
# invalidates the key; prints OK, or the errno name of the failed write. (x86_64 system
# call numbers: the guest has no keyctl.)
logon_key_write() {
	python3 - "$@" <<'PY'
import ctypes, errno, os, sys
desc, payload, path = sys.argv[1], bytes.fromhex(sys.argv[2]), sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_add_key, SYS_keyctl, KEYCTL_INVALIDATE, KEY_SPEC_PROCESS_KEYRING = 248, 250, 21, -2
key = libc.syscall(ctypes.c_long(SYS_add_key), b"logon", desc.encode(), payload,
                   ctypes.c_size_t(len(payload)), ctypes.c_long(KEY_SPEC_PROCESS_KEYRING))
if key < 0:
    print("add_key:", errno.errorcode.get(ctypes.get_errno(), "?"))
    sys.exit(1)
try:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, f"key:{desc}\n".encode())
        print("OK")
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
    finally:
        os.close(fd)
finally:
    libc.syscall(ctypes.c_long(SYS_keyctl), ctypes.c_long(KEYCTL_INVALIDATE), ctypes.c_long(key))
PY
}

# keyrings [python]: reports the test skipped and returns 1 unless the kernel has keyrings
# (the debug kernel has none) and, with `python`, the guest has python3 (logon_key_write).
keyrings() {
	if ! [ -e /proc/keys ]; then
		ktap_skip "this kernel has no keyrings (CONFIG_KEYS)"
		return 1
	fi
	if [ "$1" = python ] && ! command -v python3 >/dev/null; then
		ktap_skip "no python3 in the guest"
		return 1
	fi
}

# The kernel log since the mark MARK (dmesg_mark).
dmesg_since() { dmesg | sed -n "/rswap-test-mark: $1\$/,\$p"; }

# A secret from the keyring: the target $K's secret is a logon key of the process that
# writes `key:DESC` to `secret`, which the module copies (and logs by the key's name); the
# target connects as client $KID and authenticates (the server allocates its region).
t_key_secret() {
	keyrings python || return
	local desc=rswap-test:55-keyed got bad=
	mkdir $K
	dmesg_mark "55-auth key secret"
	got=$(logon_key_write "$desc" "$KSECRET" $K/secret 2>&1)
	[ "$got" = OK ] || bad+="key:$desc not taken ($got): $(cat $K/last_error); "
	[ "$(cat $K/secret)" = "(set)" ] || bad+="secret reads $(cat $K/secret); "
	dmesg_since "55-auth key secret" | grep -q "rswap: keyed: configfs: secret: read from logon key \"$desc\"" \
		|| bad+="no log line of the key: $(dmesg | grep rswap | tail -2); "
	echo "$IP" > $K/addr; echo $PORT > $K/port; echo 16M > $K/size; echo 1 > $K/queues
	echo $KID > $K/client_id
	if [ -z "$bad" ] && echo 1 > $K/enable && [[ $(cat $K/state) == connected* ]] \
		&& grep -q "event=region_allocated client_id=$((KID)) " "$OUT/server.log" \
		&& ! dmesg | grep -qi "$KSECRET"; then
		ktap_pass
		ktap_diag "$(dmesg_since "55-auth key secret" | grep 'read from logon key' | sed 's/^\[[^]]*\] //')" \
			"$(cat $K/state)" "$(grep "event=region_allocated client_id=$((KID)) " "$OUT/server.log" | sed 's/^ts=[^ ]* //')"
	else
		ktap_fail "$bad enable: $(cat $K/last_error); $(cat $K/state); $(tail -3 "$OUT/server.log")"
	fi
	echo 0 > $K/enable
	rmdir $K
}
ktap_test "auth: a secret from the keyring (key:DESC, a logon key of the writer) is taken, logged by the key's name, and the target connects and authenticates" t_key_secret

# What `key:` refuses, each with its reason in last_error and the log naming the target:
# no such key, a description logon keys cannot have, a payload of 8 or 65 bytes. The
# secret stays unset.
t_key_refused() {
	keyrings python || return
	local bad= got why
	mkdir $K
	dmesg_mark "55-auth key refused"
	# refused VALUE WHY: writing VALUE to $K/secret fails, with WHY in last_error and the log.
	refused() {
		if echo "$1" > $K/secret 2>/dev/null || [ "$(cat $K/last_error)" != "secret: $2" ]; then
			bad+="$1: accepted or not for \"$2\": $(cat $K/last_error); "
		fi
	}
	refused key:rswap-test:none "no logon key with that description in the writer's keyrings"
	refused key:nocolon "a logon key's description is PREFIX:NAME (a ':' after at least one character)"
	refused key: "key: names no key (key:DESCRIPTION)"
	for payload in "${KSECRET:0:16}" "$KSECRET$KSECRET${KSECRET:0:2}"; do
		got=$(logon_key_write rswap-test:short "$payload" $K/secret 2>&1)
		why=$(cat $K/last_error)
		[ "$got" = EINVAL ] && [ "$why" = "secret: the key's payload is not 16 to 64 bytes" ] \
			|| bad+="a payload of $((${#payload} / 2)) bytes: $got, $why; "
	done
	dmesg_since "55-auth key refused" | grep -q "rswap: keyed: configfs: secret: no logon key with that description" \
		|| bad+="no log line naming the target; "
	[ "$(cat $K/secret)" = "(unset)" ] || bad+="secret reads $(cat $K/secret); "
	if [ -z "$bad" ]; then
		ktap_pass
		ktap_diag "$(dmesg_since "55-auth key refused" | grep 'rswap: keyed' | sed 's/^\[[^]]*\] //' | tr '\n' '|')"
	else
		ktap_fail "$bad"
	fi
	rmdir $K
}
ktap_test "auth: key: naming no key, an unqualified description or a payload of 8 or 65 bytes is refused, its reason in last_error and the log" t_key_refused

# rswapctl up of a target file with secret_file hands the secret over as a logon key: the
# module logs that it read key rswap:$KUP:PID, rswapctl warns of nothing, and the target
# connects; down removes it.
t_key_rswapctl_up() {
	keyrings || return
	[ -x "$CTL" ] || { ktap_skip "rswapctl not built"; return; }
	local dir=$OUT/targets file=/tmp/rswap-55-$KUP.secret bad=
	mkdir -p "$dir"
	( umask 077; echo "$KUPSECRET" > $file )
	printf '%s\n' "server = $IP:$PORT" "size = 16M" "queues = 1" "client_id = $KUPID" \
		"secret_file = $file" > "$dir/$KUP.conf"
	dmesg_mark "55-auth key rswapctl"
	if "$CTL" up $KUP --config-dir "$dir" >"$OUT/key-up.out" 2>&1; then
		[[ $(cat $CFG/$KUP/state) == connected* ]] || bad+="state: $(cat $CFG/$KUP/state); "
	else
		bad+="up: exit $?; "
	fi
	dmesg_since "55-auth key rswapctl" | grep -qE "rswap: $KUP: configfs: secret: read from logon key \"rswap:$KUP:[0-9]+\"" \
		|| bad+="the module read no key: $(dmesg | grep rswap | tail -2); "
	! grep -q warning "$OUT/key-up.out" || bad+="rswapctl warned; "
	grep -q "event=region_allocated client_id=$((KUPID)) " "$OUT/server.log" || bad+="no region for $KUPID; "
	! dmesg | grep -qi "$KUPSECRET" || bad+="the secret in the kernel log; "
	"$CTL" down $KUP >>"$OUT/key-up.out" 2>&1 && ! [ -d $CFG/$KUP ] || bad+="down failed; "
	if [ -z "$bad" ]; then
		ktap_pass
		ktap_diag "$(dmesg_since "55-auth key rswapctl" | grep 'read from logon key' | sed 's/^\[[^]]*\] //')" \
			"$(tr '\n' ' ' < "$OUT/key-up.out")"
	else
		ktap_fail "$bad$(tr '\n' ' ' < "$OUT/key-up.out")"
	fi
	rm -f $file
}
ktap_test "auth: rswapctl up of a target file with secret_file hands the module a logon key (key:rswap:NAME:PID), not digits, and the target connects" t_key_rswapctl_up

# Impostors while the owner runs fio verify.
t_impostors() {
	rec0=$(state_field $T recoveries)
	closed0=$(grep -c queue_closed "$OUT/server.log")
	fio --name=owner --filename=$DEV --direct=1 --ioengine=libaio --rw=randwrite --bs=4k \
		--iodepth=16 --numjobs=2 --size=16M --offset_increment=16M --verify=crc32c \
		--verify_fatal=1 --do_verify=1 --verify_state_save=0 --group_reporting \
		--output-format=json --output="$OUT/fio-owner.json" >"$OUT/fio-owner.log" 2>&1 &
	fpid=$!
	client --client-id $ID --size $((WORK_MB + 32))M --queues 2 --secret "$OTHER" --expect-reject AuthFailed
	wrong_cs=$CS wrong_co=$CO
	client --client-id $ID --size $((WORK_MB + 32))M --queues 2 --expect-reject AuthRequired
	none_cs=$CS none_co=$CO
	timeout 300 tail --pid=$fpid -f /dev/null
	wait $fpid; frc=$?
	errs=$(grep -o '"total_err" : [0-9]*' "$OUT/fio-owner.json" 2>/dev/null | awk '{ s += $3 } END { print s + 0 }')
	rec1=$(state_field $T recoveries)
	closed1=$(grep -c queue_closed "$OUT/server.log")
	if [ $wrong_cs = 0 ] && [ $none_cs = 0 ] && [ $frc = 0 ] && [ "$errs" = 0 ] \
		&& [ "$rec1" = "$rec0" ] && [ "$closed1" = "$closed0" ] && [[ $(cat $T/state) == connected* ]]; then
		ktap_pass
		ktap_diag "wrong secret: $(grep -m1 reason= <<<"$wrong_co"); no secret: $(grep -m1 reason= <<<"$none_co"); owner: fio 0 errors, recoveries $rec0 -> $rec1"
	else
		ktap_fail "wrong secret exit $wrong_cs ($wrong_co); no secret exit $none_cs ($none_co); fio exit $frc errors $errs; recoveries $rec0 -> $rec1; queues closed $closed0 -> $closed1; $(cat $T/state)"
	fi
}
ktap_test "auth: impostors with the owner's id and a wrong or no secret are rejected (AuthFailed, AuthRequired) while the owner runs fio verify: 0 errors, no reconnect" t_impostors

# Recovery authenticates too: each reconnect is a hello and a proof of the same
# instance, and the server hands the region back.
t_recovery_authenticates() {
	head -c 8M /dev/urandom > /tmp/auth8
	dd if=/tmp/auth8 of=$DEV bs=1M seek=40 oflag=direct status=none
	rec0=$(state_field $T recoveries)
	ch0=$(grep -c 'auth_challenge' "$OUT/server.log")
	region0=$(state_field $T region)
	kill -USR1 "$SPID"
	for _ in $(seq 200); do
		[[ $(cat $T/state) == connected* ]] && [ "$(state_field $T recoveries)" -ge $((rec0 + 2)) ] && break
		sleep 0.1
	done
	ch1=$(grep -c 'auth_challenge' "$OUT/server.log")
	if [[ $(cat $T/state) == connected* ]] && [ "$(state_field $T recoveries)" -ge $((rec0 + 2)) ] \
		&& [ "$(state_field $T region)" = "$region0" ] && [ "$ch1" -ge $((ch0 + 2)) ] \
		&& dd if=$DEV of=/tmp/auth8b bs=1M skip=40 count=8 iflag=direct status=none && cmp -s /tmp/auth8 /tmp/auth8b; then
		ktap_pass
		ktap_diag "challenges $ch0 -> $ch1; $(cat $T/state)" \
			"$(dmesg | grep 'rswap: rswap[0-9]*: queue [0-9]*: reconnected' | tail -1 | sed 's/^\[[^]]*\] //')"
	else
		ktap_fail "state $(cat $T/state); challenges $ch0 -> $ch1; $(dmesg | grep rswap | tail -4); $(tail -4 "$OUT/server.log")"
	fi
}
ktap_test "auth: the server drops every connection (SIGUSR1): the owner's queues authenticate again, get the same region back, and the data reads back" t_recovery_authenticates

# Replay: a proof seen on the wire, sent again.
t_replay() {
	client --client-id $ID2 --size 4M --secret "$SECRET2" --replay
	if [ $CS = 0 ] && grep -q 'replay=rejected reason=AuthFailed' <<<"$CO"; then
		ktap_pass
		ktap_diag "$(grep -m1 replay= <<<"$CO")"
	else
		ktap_fail "exit $CS: $CO"
	fi
}
ktap_test "auth: a replayed proof is rejected with AuthFailed" t_replay

# Forged proofs: the server nonce travels in clear, so a host that sees a challenge go by
# can send a proof naming it. rswap-testclient, as the owner of $ID2, reconnects (two
# queues, five times); before each of its proofs it sends one with a random MAC naming
# the same challenge from $IP2 (another address of this host) and one from its own
# address. Each forged one is refused, and the owner's proof after them is admitted.
t_forged_proofs() {
	other0=$(grep -c 'why="proof from another address than its hello"' "$OUT/server.log")
	wrong0=$(grep -c 'why="wrong proof"' "$OUT/server.log")
	ip addr add $IP2/24 dev eth0
	runs=5 ok=0 fails=
	for _ in $(seq $runs); do
		client --client-id $ID2 --size 4M --queues 2 --secret "$SECRET2" --test-forge-proofs-from $IP2
		if [ $CS = 0 ] && [ "$(grep -c '^queue=[01] forged=2 refused=AuthFailed,AuthFailed$' <<<"$CO")" = 2 ]; then
			ok=$((ok + 1))
		else
			fails="exit $CS: $CO"
		fi
	done
	ip addr del $IP2/24 dev eth0
	other=$(( $(grep -c 'why="proof from another address than its hello"' "$OUT/server.log") - other0 ))
	wrong=$(( $(grep -c 'why="wrong proof"' "$OUT/server.log") - wrong0 ))
	if [ $ok = $runs ] && [ "$other" -ge 1 ] && [ "$wrong" -ge 1 ]; then
		ktap_pass
		ktap_diag "$runs connects of 2 queues, each after 2 forged proofs: all admitted" \
			"server log (rate-limited): $other proofs from another address, $wrong wrong proofs refused"
	else
		ktap_fail "$ok of $runs connects admitted; refused in the log: $other from another address, $wrong wrong; last failure: $fails"
	fi
}
ktap_test "auth: forged proofs naming the owner's challenge (from a second address, and a wrong MAC from its own) are refused and do not spend it: the owner authenticates on every reconnect" t_forged_proofs

# The log lines of unauthenticated connect requests are rate-limited (a burst of 20,
# then 5 a second); what is dropped is counted on the next line (suppressed=N) or, once
# the flood is over, in a connect_log_suppressed line. A flood of hellos for unlisted
# ids: every one refused, logged or counted. The earlier tests' refused connects may have
# left lines dropped and not yet reported (the report waits for room in the bucket, at
# most 200 ms): a second first lets that report land before the mark.
t_connect_log_rate() {
	sleep 1
	mark=$(wc -l < "$OUT/server.log")
	n=200
	client --client-id $ID --size 4M --flood $n
	sleep 1
	tail -n +$((mark + 1)) "$OUT/server.log" > "$OUT/server-rate.log"
	logged=$(grep -c 'event=connect_rejected .*why="client id not in the allow-list"' "$OUT/server-rate.log")
	counted=$(grep -oE '( suppressed=| event=connect_log_suppressed lines=)[0-9]+' "$OUT/server-rate.log" \
		| awk -F= '{ s += $NF } END { print s + 0 }')
	ms=$(grep -o 'ms=[0-9]*' <<<"$CO" | cut -d= -f2)
	most=$((20 + 5 * (${ms:-0} / 1000 + 2)))
	if [ $CS = 0 ] && grep -q "rejected=$n " <<<"$CO" && [ "$counted" -gt 0 ] && [ "$logged" -le "$most" ] \
		&& [ $((logged + counted)) = $n ] && grep -q 'event=connect_log_suppressed lines=' "$OUT/server-rate.log"; then
		ktap_pass
		ktap_diag "$(grep -m1 flood <<<"$CO")" "$logged lines logged (at most $most), $counted counted as suppressed" \
			"$(grep -m1 connect_log_suppressed "$OUT/server-rate.log")"
	else
		ktap_fail "flood exit $CS: $CO; logged $logged (at most $most), counted $counted of $n"
	fi
}
ktap_test "auth: the log lines of a flood of unauthenticated connects are rate-limited, and what is dropped is counted" t_connect_log_rate

# Live configuration: SIGHUP reads the allow-list again. A second server (grace 5 s) with
# an allow-list of its own; its first client is a kernel target ($R, client $RID, its
# secret) used as swap (priority 200, above any other) by a swapload run of RWORK_MB
# MiB in a cgroup of RLIMIT_MB. While its pages go out: client 0x5503 (rswap-testclient)
# is refused, then added and connects; a broken file is refused with FILE:LINE and the
# list in use stays; its secret is rotated (the old one refused, the new one admitted);
# it is removed while it holds its region: its queue is closed, its region freed after
# the grace, its hellos refused. The load's rewrite phase lasts until all of that is done
# (SIGUSR1 ends it then). The swapping target is never disturbed: no queue of it
# closed, no recovery, 0 bad pages, no process killed. Leaves the server ($RSPID) and
# the target (swapped off) to the next test.
t_reload_under_swap() {
	local id3=0x5503 s3a s3b bad= h3 h3rc out0 swapping out1 out2 rec0 rec1 lrc start steps_s
	s3a=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	s3b=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	( umask 077; printf '%s %s\n' "$RID" "$RSECRET" > $RA )
	if ! server_start "$RLOG" --listen "$IP:$RPORT" --size 64M --grace 5 --allow-list $RA >/dev/null; then
		SPID=$MAIN_SPID
		ktap_fail "the second server does not start: $(tail -3 "$RLOG")"
		return
	fi
	RSPID=$SPID SPID=$MAIN_SPID
	mkdir $R
	echo "$IP" > $R/addr; echo $RPORT > $R/port; echo $((RWORK_MB + 16))M > $R/size; echo 2 > $R/queues
	echo $RID > $R/client_id; echo "$RSECRET" > $R/secret
	if ! echo 1 > $R/enable || [[ $(cat $R/state) != connected* ]]; then
		ktap_fail "target $RID does not connect: $(cat $R/last_error); $(tail -3 "$RLOG")"
		return
	fi
	RDEV=/dev/$(cat $R/device)
	if ! mkswap "$RDEV" >/dev/null || ! swapon -p 200 "$RDEV"; then
		ktap_fail "no swap on $RDEV: $(cat /proc/swaps)"
		return
	fi
	dmesg_mark "55-auth reload"
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	mkdir -p $CG
	echo $((RLIMIT_MB << 20)) > $CG/memory.max
	echo max > $CG/memory.swap.max 2>/dev/null
	rec0=$(state_field $R recoveries)
	out0=$(vm pswpout)
	start=$(date +%s)
	sh -c "echo \$\$ > $CG/cgroup.procs && SWAPLOAD_PASSES=1 exec $LOAD $RWORK_MB 56 $RLOAD_S" \
		>"$OUT/swapload-reload.json" 2>"$OUT/swapload-reload.err" &
	LPID=$!
	swapping=$(wait_swapping $LPID $out0)
	[ "$swapping" -ge 2000 ] || bad+="only $swapping pages out before the reloads; "
	out1=$(vm pswpout)
	# Added.
	rclient --client-id $id3 --size 4M --secret "$s3a" --expect-reject AuthFailed
	[ $CS = 0 ] || bad+="unlisted $id3 not refused: $CO; "
	printf '%s %s\n' "$id3" "$s3a" >> $RA
	hup 'event=allow_list_reloaded .*clients=2 added=21763 removed=none changed=none' || bad+="no reload (add); "
	rclient --client-id $id3 --size 4M --secret "$s3a"
	[ $CS = 0 ] || bad+="added $id3 does not connect: $CO; "
	# A broken file.
	echo "0x5504 zz" >> $RA
	hup "level=error event=allow_list_rejected error=\"$RA:3: " || bad+="broken file not refused with $RA:3; "
	rclient --client-id $id3 --size 4M --secret "$s3a"
	[ $CS = 0 ] || bad+="$id3 refused after a broken reload: $CO; "
	kill -0 "$RSPID" 2>/dev/null || bad+="the server died; "
	# Rotated.
	printf '%s %s\n%s %s\n' "$RID" "$RSECRET" "$id3" "$s3b" > $RA
	hup 'event=allow_list_reloaded .*changed=21763' || bad+="no reload (rotate); "
	rclient --client-id $id3 --size 4M --secret "$s3a" --expect-reject AuthFailed
	[ $CS = 0 ] || bad+="old secret of $id3 not refused: $CO; "
	rclient --client-id $id3 --size 4M --secret "$s3b"
	[ $CS = 0 ] || bad+="new secret of $id3 not admitted: $CO; "
	# Removed while it holds its region.
	timeout 150 "$CLI" --connect "$IP:$RPORT" --client-id $id3 --size 4M --secret "$s3b" \
		--print-descriptor --hold 100 >"$OUT/reload-holder3.out" 2>&1 &
	h3=$!
	wait_log "$OUT/reload-holder3.out" '^queue=0 ' 60 || bad+="$id3 did not connect to hold; "
	printf '%s %s\n' "$RID" "$RSECRET" > $RA
	hup 'event=allow_list_reloaded .*removed=21763' || bad+="no reload (remove); "
	wait_exit "$h3" 30; h3rc=$?
	{ [ $h3rc = 1 ] && grep -q 'server disconnected a queue' "$OUT/reload-holder3.out"; } \
		|| bad+="$id3 not disconnected (exit $h3rc: $(tail -1 "$OUT/reload-holder3.out")); "
	grep -q 'event=queue_closed client_id=21763 .*why="removed from the allow-list"' "$RLOG" || bad+="no queue_closed of $id3; "
	wait_log "$RLOG" 'event=region_freed client_id=21763 .*why="grace period over"' 20 || bad+="region of $id3 not freed; "
	rclient --client-id $id3 --size 4M --secret "$s3b" --expect-reject AuthFailed
	[ $CS = 0 ] || bad+="removed $id3 not refused: $CO; "
	# All of that while the target swapped.
	out2=$(vm pswpout)
	steps_s=$(( $(date +%s) - start ))
	[ $((out2 - out1)) -ge 1000 ] || bad+="only $((out2 - out1)) pages out during the reloads; "
	# The reloads done: the load's rewrite phase ends, its verify pass follows.
	if ! kill -0 "$LPID" 2>/dev/null; then
		bad+="swapload ended before the reloads did (${steps_s}s; its rewrite phase is ${RLOAD_S}s at most); "
	elif ! stop_rewrite "$LPID"; then
		bad+="process $LPID is $(cat "/proc/$LPID/comm" 2>/dev/null), not swapload: not signalled; "
	fi
	wait_exit "$LPID" 300; lrc=$?
	[ $lrc != 124 ] || kill -KILL "$LPID" 2>/dev/null
	rmdir $CG 2>/dev/null
	{ [ $lrc = 0 ] && grep -q '"bad_pages": *0' "$OUT/swapload-reload.json"; } \
		|| bad+="swapload exit $lrc: $(cat "$OUT/swapload-reload.err" "$OUT/swapload-reload.json" | tail -3); "
	! dmesg | sed -n '/rswap-test-mark: 55-auth reload/,$p' | grep -q 'Killed process' || bad+="a process was killed; "
	# The target undisturbed: connected, no recovery, none of its queues closed.
	rec1=$(state_field $R recoveries)
	{ [[ $(cat $R/state) == connected* ]] && [ "$rec1" = "$rec0" ]; } || bad+="target $RID: $(cat $R/state) (recoveries were $rec0); "
	! grep -q "event=queue_closed client_id=$((RID)) " "$RLOG" || bad+="a queue of $RID was closed: $(grep "event=queue_closed client_id=$((RID)) " "$RLOG" | head -1); "
	if [ -z "$bad" ]; then
		ktap_pass
		ktap_diag "$(grep -E 'allow_list_(reloaded|rejected)' "$RLOG" | sed 's/^ts=[^ ]* //')"
		ktap_diag "target $RID swapping on $RDEV: $swapping pages out before the reloads, $((out2 - out1)) during them (${steps_s}s from the load's start); recoveries $rec0 -> $rec1" \
			"swapload: $(cat "$OUT/swapload-reload.json")"
	else
		ktap_fail "$bad"
	fi
}
ktap_test "auth: SIGHUP reloads the allow-list while a kernel target swaps on the server: a client added connects, a broken file keeps the old list, a rotated secret is required, a removed client is disconnected and its region freed after the grace; the target undisturbed (no queue closed, no recovery, 0 bad pages)" t_reload_under_swap

# The target of the test before rotates its own secret, its load over and swapped off:
# a known pattern written to its disk; the new secret in the allow-list and SIGHUP
# (changed=$RID) leave its queues up, and the pattern reads back through them. The
# target disabled, enabling it with the old secret is refused with AuthFailed
# (last_error, dmesg, the server's log); with the new secret it connects within the
# grace and gets the same region back (region_reused, epoch + 1), the pattern in it.
# Then the target is removed and the server stopped.
t_reload_rotate_target() {
	local bad= k2 region0 epoch0 rec0 t0 ms pat=/tmp/rswap-55-reload4
	if [ -z "$RSPID" ] || [ "$(cat $R/enable 2>/dev/null)" != 1 ]; then
		ktap_fail "no target $RID on the reload server (the test before)"
	else
		swapoff "$RDEV" || bad+="swapoff $RDEV: $(cat /proc/swaps); "
		head -c 4M /dev/urandom > $pat
		dd if=$pat of="$RDEV" bs=1M seek=40 oflag=direct status=none || bad+="writing the pattern failed; "
		region0=$(state_field $R region) epoch0=$(state_field $R epoch) rec0=$(state_field $R recoveries)
		k2=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
		printf '%s %s\n' "$RID" "$k2" > $RA
		hup "event=allow_list_reloaded .*removed=none changed=$((RID))( |$)" || bad+="no reload (rotate $RID); "
		# The established queues stay, and work.
		{ dd if="$RDEV" of=$pat.b bs=1M skip=40 count=4 iflag=direct status=none && cmp -s $pat $pat.b; } \
			|| bad+="the pattern does not read back after the rotation; "
		{ [[ $(cat $R/state) == connected* ]] && [ "$(state_field $R recoveries)" = "$rec0" ]; } \
			|| bad+="after the rotation: $(cat $R/state) (recoveries were $rec0); "
		! grep -q "event=queue_closed client_id=$((RID)) " "$RLOG" || bad+="the rotation closed a queue of $RID; "
		# Enabled again: the old secret refused, the new one admitted within the grace.
		t0=$(date +%s%N)
		echo 0 > $R/enable || bad+="disable: $(cat $R/last_error); "
		echo "$RSECRET" > $R/secret
		dmesg_mark "55-auth reload old secret"
		! echo 1 > $R/enable 2>/dev/null || bad+="enabled with the old secret; "
		{ [ "$(cat $R/enable)" = 0 ] \
			&& [[ $(cat $R/last_error) == "enable failed: "*": queue 0: the server rejected the connection: AuthFailed" ]] \
			&& dmesg | sed -n '/rswap-test-mark: 55-auth reload old secret/,$p' \
				| grep -q 'rswap: rswap[0-9]*: queue 0: the server rejected the connection: AuthFailed'; } \
			|| bad+="old secret: enable=$(cat $R/enable), last_error: $(cat $R/last_error); "
		grep -qE "event=connect_rejected .*reason=AuthFailed .*client_id=$((RID)) " "$RLOG" \
			|| bad+="the server logged no AuthFailed for $RID; "
		echo "$k2" > $R/secret
		{ echo 1 > $R/enable && [[ $(cat $R/state) == connected* ]]; } \
			|| bad+="the new secret does not connect: $(cat $R/last_error); $(tail -3 "$RLOG"); "
		ms=$(( ($(date +%s%N) - t0) / 1000000 ))
		{ [ "$(state_field $R region)" = "$region0" ] && [ "$(state_field $R epoch)" -gt "$epoch0" ] \
			&& grep -q "event=region_reused client_id=$((RID)) region_id=$region0 " "$RLOG" \
			&& ! grep -q "event=region_freed client_id=$((RID)) " "$RLOG"; } \
			|| bad+="not the same region: region $region0 epoch $epoch0 -> $(cat $R/state); $(grep "client_id=$((RID)) " "$RLOG" | tail -3); "
		RDEV=/dev/$(cat $R/device)
		{ dd if="$RDEV" of=$pat.b bs=1M skip=40 count=4 iflag=direct status=none && cmp -s $pat $pat.b; } \
			|| bad+="the pattern does not read back after the re-enable; "
		if [ -z "$bad" ]; then
			ktap_pass
			ktap_diag "$(grep -E "allow_list_reloaded .*changed=$((RID))( |$)" "$RLOG" | sed 's/^ts=[^ ]* //')" \
				"old secret: $(cat $R/last_error)" \
				"new secret: $(cat $R/state), ${ms} ms after the disable (grace 5 s); $(grep "event=region_reused client_id=$((RID)) " "$RLOG" | sed 's/^ts=[^ ]* //')"
		else
			ktap_fail "$bad"
		fi
		echo 0 > $R/enable
		rm -f $pat $pat.b
	fi
	rmdir $R 2>/dev/null
	RDEV=
	[ -z "$RSPID" ] || { kill "$RSPID"; wait "$RSPID" 2>/dev/null; RSPID=; }
	rm -f $RA
}
ktap_test "auth: the swapping target's secret rotated by SIGHUP: its queues stay; enabled again, the old secret is refused (AuthFailed) and the new one gets the same region back within the grace, its data intact" t_reload_rotate_target

# A target with a secret the server does not have for its id.
t_server_lacks_secret() {
	mkdir $W
	echo "$IP" > $W/addr; echo $PORT > $W/port; echo 16M > $W/size; echo 1 > $W/queues
	echo $ID > $W/client_id; echo "$OTHER" > $W/secret
	dmesg_mark "55-auth wrong secret"
	if ! echo 1 > $W/enable 2>/dev/null && [ "$(cat $W/enable)" = 0 ] \
		&& [[ $(cat $W/last_error) == "enable failed: "*": queue 0: the server rejected the connection: AuthFailed" ]] \
		&& dmesg | sed -n '/rswap-test-mark: 55-auth wrong secret/,$p' \
			| grep -q 'rswap: rswap[0-9]*: queue 0: the server rejected the connection: AuthFailed'; then
		ktap_pass
		ktap_diag "last_error: $(cat $W/last_error)" "$(dmesg | grep 'AuthFailed' | tail -1 | sed 's/^\[[^]]*\] //')"
	else
		ktap_fail "enable=$(cat $W/enable); last_error: $(cat $W/last_error); $(dmesg | grep rswap | tail -3)"
	fi
	rmdir $W
}
ktap_test "auth: a target whose secret the server does not have fails enable; last_error and the log give the reason" t_server_lacks_secret

# A server that answers at the address but cannot prove the secret: the target must
# not use what it says.
t_server_cannot_prove() {
	WPORT=$((PORT + 1))
	server_start "$OUT/server-wrong.log" --listen "$IP:$WPORT" --size 64M --allow-list $ALLOW \
		--test-wrong-server-proof >/dev/null
	WSPID=$SPID SPID=$MAIN_SPID
	mkdir $W
	echo "$IP" > $W/addr; echo $WPORT > $W/port; echo 16M > $W/size; echo 1 > $W/queues
	echo $ID2 > $W/client_id; echo "$SECRET2" > $W/secret
	dmesg_mark "55-auth wrong server proof"
	if ! echo 1 > $W/enable 2>/dev/null && [ "$(cat $W/enable)" = 0 ] \
		&& [[ $(cat $W/last_error) == "enable failed: "*": queue 0: the server's proof is wrong"* ]] \
		&& dmesg | sed -n '/rswap-test-mark: 55-auth wrong server proof/,$p' \
			| grep -q "rswap: rswap[0-9]*: queue 0: the server's proof is wrong" \
		&& grep -q 'proof_key=wrong' "$OUT/server-wrong.log"; then
		ktap_pass
		ktap_diag "$(dmesg | grep "proof is wrong" | tail -1 | sed 's/^\[[^]]*\] //'); last_error: $(cat $W/last_error)"
	else
		ktap_fail "enable=$(cat $W/enable); last_error: $(cat $W/last_error); $(dmesg | grep rswap | tail -3); $(tail -3 "$OUT/server-wrong.log")"
	fi
	rmdir $W
	kill "$WSPID"; wait "$WSPID" 2>/dev/null
}
ktap_test "auth: a server that cannot prove the secret (a wrong MAC in its descriptor) is refused by the target: enable fails, the log says why" t_server_cannot_prove

# A cloned target: same id, same secret, another directory (instance).
t_clone() {
	mkdir $C
	echo "$IP" > $C/addr; echo $PORT > $C/port; echo $((WORK_MB + 32))M > $C/size; echo 2 > $C/queues
	echo $ID > $C/client_id; echo "$SECRET" > $C/secret
	rec0=$(state_field $T recoveries)
	if ! echo 1 > $C/enable 2>/dev/null && dmesg | tail -20 | grep -q 'rejected the connection: InUse' \
		&& grep -q 'reason=InUse' "$OUT/server.log" && [[ $(cat $T/state) == connected* ]] \
		&& [ "$(state_field $T recoveries)" = "$rec0" ]; then
		ktap_pass
		ktap_diag "$(dmesg | grep 'InUse' | tail -1 | sed 's/^\[[^]]*\] //')" "$(grep 'reason=InUse' "$OUT/server.log" | tail -1)"
	else
		ktap_fail "clone enable=$(cat $C/enable); owner $(cat $T/state); $(dmesg | grep rswap | tail -3); $(grep -E 'connect_rejected' "$OUT/server.log" | tail -2)"
	fi
	rmdir $C
}
ktap_test "auth: a cloned target (same id and secret, another instance) is refused with InUse; the owner is untouched" t_clone

# A flood of bogus connects while the owner swaps.
t_flood() {
	if [ -x "$LOAD" ] && mkswap $DEV >/dev/null && { swapoff -a 2>/dev/null; swapon -p 100 $DEV; }; then
		echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
		mkdir -p $CG
		echo $((LIMIT_MB << 20)) > $CG/memory.max
		echo max > $CG/memory.swap.max 2>/dev/null
		out0=$(vm pswpout)
		sh -c "echo \$\$ > $CG/cgroup.procs && exec $LOAD $WORK_MB 55" >"$OUT/swapload.json" 2>"$OUT/swapload.err" &
		LPID=$!
		swapping=$(wait_swapping $LPID $out0)
		# Hellos for random client ids, as fast as one process makes them. Then hellos and
		# wrong proofs for the owner's id from a second address of this host, while the
		# server drops every connection: the owner's queues authenticate again meanwhile.
		client --client-id $ID --size 4M --flood 400
		flood_cs=$CS flood_co=$CO
		ip addr add $IP2/24 dev eth0
		rec0=$(state_field $T recoveries)
		( sleep 2; kill -USR1 "$SPID" ) &
		client --client-id $ID --size 4M --flood 300 --flood-id --source $IP2
		flood2_cs=$CS flood2_co=$CO
		for _ in $(seq 300); do
			[[ $(cat $T/state) == connected* ]] && [ "$(state_field $T recoveries)" -ge $((rec0 + 2)) ] && break
			sleep 0.1
		done
		rec1=$(state_field $T recoveries)
		[ "$rec1" -ge $((rec0 + 2)) ] || flood2_cs="owner not reconnected (recoveries $rec0 -> $rec1)"
		timeout 900 tail --pid=$LPID -f /dev/null
		wait $LPID; lrc=$?
		challenged=$(grep -o 'challenged=[0-9]*' <<<"$flood2_co" | cut -d= -f2)
		if [ "$swapping" -ge 2000 ] && [ "$flood_cs" = 0 ] && [ "$flood2_cs" = 0 ] && [ "${challenged:-0}" -gt 0 ] \
			&& [ $lrc = 0 ] \
			&& grep -q '"bad_pages": *0' "$OUT/swapload.json" \
			&& ! dmesg | sed -n '/rswap-test-mark: 55-auth/,$p' | grep -q 'Killed process'; then
			ktap_pass
			ktap_diag "$(grep -m1 flood <<<"$flood_co")" "owner's id from $IP2: $(grep -m1 flood <<<"$flood2_co"); owner recoveries $rec0 -> $rec1; $swapping pages out when the floods began" \
				"swapload: $(cat "$OUT/swapload.json")"
		else
			ktap_fail "pages out $swapping; flood exit $flood_cs ($flood_co) / $flood2_cs ($flood2_co); swapload exit $lrc: $(cat "$OUT/swapload.err" "$OUT/swapload.json" | tail -3)"
		fi
		rmdir $CG 2>/dev/null
	else
		ktap_fail "no swap on $DEV (swapload at $LOAD)"
	fi
}
ktap_test "auth: connect floods during a swap run (random ids; the owner's id from another address, while the owner reconnects): every bogus attempt refused, the owner reconnected, 0 bad pages, no process killed" t_flood

t_teardown() {
	ok=1
	swapoff $DEV 2>/dev/null
	echo 0 > $T/enable || ok=0
	rmdir $T || ok=0
	rmmod rswap || ok=0
	if [ $ok = 1 ]; then ktap_pass; else ktap_fail "$(cat /proc/swaps; dmesg | tail -5)"; fi
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
}
ktap_test "auth: swapoff, disable, rmdir and rmmod work" t_teardown

ktap_test "dmesg: no BUG/WARNING/Oops in the auth tests" dmesg_check_noting

ktap_run setup
