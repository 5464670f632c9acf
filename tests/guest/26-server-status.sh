#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rswap-server's --version, -h and status socket over soft-RoCE (one guest, no kernel
# module): `rswapctl server-status` (JSON checked field by field against what two
# rswap-testclients got, and the table) and `--metrics` (families, values, the reject
# counter by reason), a stale socket replaced, a socket in use refused, a silent status
# client that does not hold up the server, and the socket removed at exit.
# Needs the host-built binaries: bash scripts/build-server.sh
. "$RSWAP_TOP/tests/lib/guest.sh"

BIN=$RSWAP_TOP/tools/rswap-server/target/release
SRV=$BIN/rswap-server
CLI=$BIN/rswap-testclient
CTL=$RSWAP_TOP/tools/rswapctl/target/release/rswapctl
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORT=18526 # the server under test: 16M pool, 120 s grace
P0=18527   # a server killed to leave a stale socket behind
P2=18528   # servers that must not start
# rswapctl's default socket, the path the documentation recommends.
SOCK=/run/rswap/server.sock
OUT=$RSWAP_OUT/26-server-status
mkdir -p "$OUT"
MIB=$((1 << 20))
A_ID=$((0x2601)) B_ID=$((0x2602))


SPID= HOLD= MADE_DIR=
cleanup() {
	local p
	for p in $HOLD $SPID; do kill -KILL "$p" 2>/dev/null; done
	rm -f "$SOCK"
	[ -z "$MADE_DIR" ] || rmdir "$(dirname "$SOCK")" 2>/dev/null
	true
}
trap cleanup EXIT

# client ARGS...: runs the test client against the server under test (testclient:
# output in $CO, status in $CS).
client() { testclient "$IP:$PORT" "$@"; }
# metric NAME_AND_LABELS: the value of one sample in $OUT/metrics.txt.
metric() { awk -v k="$1" '$1 == k { print $2 }' "$OUT/metrics.txt"; }

setup() {
	dmesg_mark 26-server-status
	[ -x "$SRV" ] && [ -x "$CLI" ] || ktap_skip_rest "no $SRV (run scripts/build-server.sh on the host)"
	[ -x "$CTL" ] || ktap_skip_rest "rswapctl not built (scripts/build-server.sh)"
	command -v python3 >/dev/null || ktap_skip_rest "no python3 in the guest"
}

# --version, -h
t_version() {
	v=$("$SRV" --version 2>&1); rc=$?
	cv=$("$CLI" --version 2>&1); crc=$?
	h=$("$SRV" -h 2>&1); hrc=$?
	sv=$("$SRV" -V 2>&1); svrc=$?
	scv=$("$CLI" -V 2>&1); scvrc=$?
	VER=${v#rswap-server }; VER=${VER%% *}
	if [ $rc -eq 0 ] && [[ $v =~ ^rswap-server\ [0-9][^\ ]*\ \(wire\ protocol\ 2\)$ ]] \
		&& [ $crc -eq 0 ] && [ "$cv" = "rswap-testclient ${v#rswap-server }" ] \
		&& [ $hrc -eq 0 ] && [ "$h" = "$("$SRV" --help)" ] && [[ $h == *--status-socket* ]] \
		&& [ $svrc -eq 0 ] && [ "$sv" = "$v" ] && [ $scvrc -eq 0 ] && [ "$scv" = "$cv" ]; then
		ktap_pass
		ktap_diag "$v"
	else
		ktap_fail "$v (exit $rc); $cv (exit $crc); -V: $sv (exit $svrc), $scv (exit $scvrc); -h exit $hrc: $(head -2 <<<"$h")"
	fi
}
ktap_test "--version: one line with the wire protocol, exit 0 (server and test client); -V is --version, -h is --help" t_version

# a socket path that cannot be made; the first test of the RDMA device and the socket
t_socket_unmakeable() {
	if ! why=$(rdma_up 2>&1); then
		ktap_skip_rest "soft-RoCE unavailable: $why"
	fi
	[ -d "$(dirname "$SOCK")" ] || MADE_DIR=1
	rm -f "$SOCK"

	err=$(timeout 20 "$SRV" --listen "$IP:$P2" --size 4M --insecure --status-socket /proc/rswap-none/s.sock 2>&1 >/dev/null); rc=$?
	if [ $rc -eq 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] \
		&& [[ $err == "rswap-server: --status-socket /proc/rswap-none/s.sock: "* ]]; then
		ktap_pass
		ktap_diag "$err"
	else
		ktap_fail "exit $rc, stderr: $err"
	fi
}
ktap_test "--status-socket where it cannot be made: one line naming it, exit 1" t_socket_unmakeable

# a server killed with SIGKILL leaves its socket; the next one replaces it
t_stale_socket() {
	stale=no
	if server_start "$OUT/server0.log" --listen "$IP:$P0" --size 4M --insecure --status-socket "$SOCK" >/dev/null; then
		kill -KILL "$SPID"; wait "$SPID" 2>/dev/null; SPID=
		[ -S "$SOCK" ] && stale=yes
	fi
	if server_start "$OUT/server.log" --listen "$IP:$PORT" --size 16M --grace 120 --insecure \
		--status-socket "$SOCK" >"$OUT/start.out"; then
		"$CTL" server-status --json >"$OUT/first.json" 2>&1; rc=$?
		mode=$(stat -c '%a %F' "$SOCK")
		if [ $stale = yes ] && [ $rc -eq 0 ] && [ "$mode" = "600 socket" ] \
			&& grep -q "event=listening .*status_socket=$SOCK" "$OUT/server.log"; then
			ktap_pass
		else
			ktap_fail "stale socket left: $stale; server-status exit $rc; mode: $mode; $(tail -3 "$OUT/first.json")"
		fi
	else
		ktap_fail "$(cat "$OUT/start.out")"
		ktap_skip_rest "the server did not start"
	fi
}
ktap_test "a stale socket left by a killed server is replaced; the socket is mode 0600" t_stale_socket

# a second server on the same socket is refused; the first keeps its socket
t_socket_in_use() {
	err=$(timeout 20 "$SRV" --listen "$IP:$P2" --size 4M --insecure --status-socket "$SOCK" 2>&1 >/dev/null); rc=$?
	if [ $rc -eq 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] \
		&& [[ $err == "rswap-server: --status-socket $SOCK: in use"* ]] \
		&& [ -S "$SOCK" ] && "$CTL" server-status >/dev/null 2>&1; then
		ktap_pass
		ktap_diag "$err"
	else
		ktap_fail "exit $rc, stderr: $err; socket: $(ls -l "$SOCK" 2>&1)"
	fi
}
ktap_test "a second server on a socket in use: one line, exit 1, the first server unharmed" t_socket_in_use

# client A holds two queues; client B connects once and goes into its grace period. The
# tests after this one look at this server ($SPID, of the test before) and these clients.
t_json() {
	timeout 300 "$CLI" --connect "$IP:$PORT" --client-id $A_ID --size 4M --queues 2 --timeout 60 \
		--print-descriptor --hold 200 >"$OUT/holder.out" 2>&1 &
	HOLD=$!
	wait_log "$OUT/holder.out" '^queue=1 ' 60
	CO=$(cat "$OUT/holder.out")
	A_REGION=$(field region_id) A_LEN=$(field length)
	client --client-id $B_ID --size 2M --print-descriptor
	B_REGION=$(field region_id) B_LEN=$(field length)
	wait_log "$OUT/server.log" "event=client_idle client_id=$B_ID " 30
	"$CTL" server-status --json >"$OUT/status.json" 2>"$OUT/status.err"; rc=$?
	if [ $rc -eq 0 ] && [ -n "$A_REGION" ] && [ -n "$B_REGION" ] \
		&& python3 - "$OUT/status.json" "$IP" "$PORT" "$VER" "$A_ID" "$A_REGION" "$A_LEN" \
			"$B_ID" "$B_REGION" "$B_LEN" >"$OUT/check.out" 2>&1 <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
ip, port, version = sys.argv[2], int(sys.argv[3]), sys.argv[4]
a_id, a_region, a_len, b_id, b_region, b_len = map(int, sys.argv[5:11])
srv = st["server"]
assert srv["version"] == version and srv["wire_protocol"] == 2, srv
assert srv["listen"] == f"{ip}:{port}" and srv["uptime_seconds"] >= 0, srv
pool = st["pool"]
want = {"size_bytes": 16 << 20, "used_bytes": a_len + b_len,
        "left_bytes": (16 << 20) - a_len - b_len, "max_clients": 64,
        "clients": 2, "clients_in_grace": 1, "queues": 2}
for k, v in want.items():
    assert pool[k] == v, ("pool", k, pool[k], v)
ids = [c["client_id"] for c in st["clients"]]
assert ids == [a_id, b_id], ids
a, b = st["clients"]
for c, region, length in ((a, a_region, a_len), (b, b_region, b_len)):
    assert c["region_id"] == region and c["length"] == length and c["epoch"] == 1, c
    assert c["owner_instance"] == 1, c
assert a["state"] == "live" and a["grace_left_seconds"] is None, a
assert a["queue_count"] == 2 and a["queues_live"] == 2, a
assert [q["index"] for q in a["queues"]] == [0, 1], a
for q in a["queues"]:
    assert q["peer"].rsplit(":", 1)[0] in (ip, "::ffff:" + ip), q
assert 0 <= a["last_seen_seconds"] < 60, a
assert b["state"] == "grace" and 0 < b["grace_left_seconds"] <= 120, b
assert b["queue_count"] == 1 and b["queues_live"] == 0 and b["queues"] == [], b
assert 0 <= b["last_seen_seconds"] < 60, b
k = st["counters"]
assert k["connects_accepted"] == 3 and k["regions_allocated"] == 2 and k["regions_freed"] == 0, k
assert k["connect_rejects"]["TooLarge"] == 0 and k["challenges"] == 0, k
print("ok")
PY
	then
		ktap_pass
	else
		ktap_fail "exit $rc $(cat "$OUT/status.err"); A: $A_REGION/$A_LEN B: $B_REGION/$B_LEN; $(tail -3 "$OUT/check.out")"
	fi
}
ktap_test "server-status --json: pool, and both clients' ids, regions, lengths, queues and states as they got them" t_json

# the table (default socket)
t_table() {
	"$CTL" server-status >"$OUT/table.txt" 2>&1; rc=$?
	if [ $rc -eq 0 ] && [ "$(head -1 "$OUT/table.txt" | tr -s ' ')" = "CLIENT_ID REGION SIZE QUEUES STATE LAST_SEEN" ] \
		&& [ "$(wc -l <"$OUT/table.txt")" -eq 3 ] \
		&& awk -v r="$A_REGION" '$1 == "0x2601" && $2 == r && $3 == "4M" && $4 == "2/2" && $5 == "live" && $6 ~ /^[0-9]+s$/ { f = 1 } END { exit !f }' "$OUT/table.txt" \
		&& awk -v r="$B_REGION" '$1 == "0x2602" && $2 == r && $3 == "2M" && $4 == "0/1" && $5 ~ /^grace\([0-9]+m?[0-9]*s\)$/ { f = 1 } END { exit !f }' "$OUT/table.txt"; then
		ktap_pass
		ktap_diag "$(tr -s ' ' <"$OUT/table.txt" | tr '\n' '|')"
	else
		ktap_fail "exit $rc: $(cat "$OUT/table.txt")"
	fi
}
ktap_test "server-status: a table row per client, live and in grace" t_table

# the metrics
t_metrics() {
	"$CTL" server-status --metrics >"$OUT/metrics.txt" 2>&1; rc=$?
	# Every sample's family has its HELP and TYPE lines, before it.
	fam_err=$(awk '
		/^# HELP / { help[$3] = 1; next }
		/^# TYPE / { if (!help[$3]) print "TYPE before HELP: " $3; type[$3] = $4; next }
		/^#/ || NF == 0 { next }
		{ n = $1; sub(/\{.*/, "", n); if (!type[n]) print "no TYPE: " n; if (n ~ /_total$/ && type[n] != "counter") print "not a counter: " n }
	' "$OUT/metrics.txt")
	miss=
	for want in \
		"rswap_server_info{version=\"$VER\",wire_protocol=\"2\"} 1" \
		"rswap_server_pool_size_bytes $((16 * MIB))" \
		"rswap_server_pool_used_bytes $((6 * MIB))" \
		"rswap_server_pool_left_bytes $((10 * MIB))" \
		"rswap_server_clients 2" \
		"rswap_server_clients_in_grace 1" \
		"rswap_server_queues 2" \
		"rswap_server_client_region_bytes{client_id=\"$A_ID\"} $((4 * MIB))" \
		"rswap_server_client_region_bytes{client_id=\"$B_ID\"} $((2 * MIB))" \
		"rswap_server_client_queues{client_id=\"$A_ID\"} 2" \
		"rswap_server_client_queues{client_id=\"$B_ID\"} 0" \
		"rswap_server_client_epoch{client_id=\"$A_ID\"} 1" \
		"rswap_server_connects_accepted_total 3" \
		"rswap_server_connect_rejects_total{reason=\"TooLarge\"} 0" \
		"rswap_server_challenges_total 0" \
		"rswap_server_keepalive_closes_total{why=\"keepalive_timeout\"} 0" \
		"rswap_server_regions_allocated_total 2" \
		"rswap_server_regions_freed_total 0"; do
		grep -qxF "$want" "$OUT/metrics.txt" || miss="$miss|$want"
	done
	seen=$(metric "rswap_server_client_last_seen_age_seconds{client_id=\"$A_ID\"}")
	left=$(metric "rswap_server_client_grace_left_seconds{client_id=\"$B_ID\"}")
	if [ $rc -eq 0 ] && [ -z "$fam_err" ] && [ -z "$miss" ] \
		&& [[ $seen =~ ^[0-9]+\.[0-9]{3}$ ]] && [[ $left =~ ^[0-9]+\.[0-9]{3}$ ]] \
		&& [ -z "$(metric "rswap_server_client_grace_left_seconds{client_id=\"$A_ID\"}")" ]; then
		ktap_pass
		ktap_diag "$(grep -c '^# TYPE' "$OUT/metrics.txt") families, $(grep -vc '^#' "$OUT/metrics.txt") samples"
	else
		ktap_fail "exit $rc; family errors: $fam_err; missing: $miss; last seen: $seen; grace left: $left"
	fi
}
ktap_test "server-status --metrics: every family with HELP and TYPE, pool, clients, queues, per-client values" t_metrics

# a reject counts with its reason
t_reject_metric() {
	client --client-id $((0x2603)) --size 64M --expect-reject TooLarge
	"$CTL" server-status --metrics >"$OUT/metrics.txt" 2>&1
	if [ $CS -eq 0 ] && [ "$(metric 'rswap_server_connect_rejects_total{reason="TooLarge"}')" = 1 ] \
		&& [ "$(metric 'rswap_server_connect_rejects_total{reason="BadRequest"}')" = 0 ] \
		&& [ "$(metric rswap_server_connects_accepted_total)" = 3 ] \
		&& [ "$(metric rswap_server_clients)" = 2 ]; then
		ktap_pass
	else
		ktap_fail "client exit $CS: $CO; $(grep -E 'rejects_total|accepted_total' "$OUT/metrics.txt")"
	fi
}
ktap_test "a TooLarge reject counts in rswap_server_connect_rejects_total{reason=\"TooLarge\"}" t_reject_metric

# a client that connects and says nothing: the server answers others meanwhile and
# drops it after its deadline (1 s), without an answer; a bad request gets one line
t_silent_client() {
	if python3 - "$SOCK" >"$OUT/silent.out" 2>&1 <<'PY'
import socket, sys, time
path = sys.argv[1]
def ask(req):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    s.sendall(req)
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            return out
        out += d
silent = socket.socket(socket.AF_UNIX)
silent.connect(path)
t0 = time.monotonic()
st = ask(b"status\n")
took = time.monotonic() - t0
assert st.startswith(b"{") and b'"clients"' in st, st[:200]
# Still connected, unanswered: the silent one did not hold the server up.
silent.setblocking(False)
try:
    d = silent.recv(100)
    raise AssertionError(f"the silent client got {d!r} after {took:.3f} s")
except BlockingIOError:
    pass
silent.settimeout(10)
assert silent.recv(100) == b"", "an answer without a request"
dropped = time.monotonic() - t0
assert 0.5 <= dropped < 5, dropped
bad = ask(b"hello\n")
assert bad.startswith(b"error: unknown request") and bad.count(b"\n") == 1, bad
print(f"answered in {took:.3f} s, silent client dropped after {dropped:.3f} s; {bad!r}")
PY
	then
		ktap_pass
		ktap_diag "$(cat "$OUT/silent.out")"
	else
		ktap_fail "$(tail -5 "$OUT/silent.out")"
	fi
}
ktap_test "a silent status client does not hold up others and is dropped; a bad request gets one error line" t_silent_client

# SIGTERM: the socket goes with the server
t_sigterm() {
	kill -TERM "$SPID"
	wait_exit "$SPID" 30; rc=$?; SPID=
	err=$("$CTL" server-status 2>&1 >/dev/null); crc=$?
	if [ $rc -eq 0 ] && [ ! -e "$SOCK" ] && grep -q 'event=stopped' "$OUT/server.log" \
		&& [ $crc -eq 1 ] && [[ $err == "rswapctl: server-status: cannot connect to $SOCK: "* ]]; then
		ktap_pass
		ktap_diag "$err"
	else
		ktap_fail "server exit $rc; socket: $(ls -l "$SOCK" 2>&1); rswapctl exit $crc: $err"
	fi
	kill "$HOLD" 2>/dev/null; wait "$HOLD" 2>/dev/null; HOLD=
	if grep -q 'level=error' "$OUT/server.log"; then
		ktap_diag "server errors: $(grep 'level=error' "$OUT/server.log" | head -3)"
	fi
}
ktap_test "SIGTERM: exit 0, the socket removed; then server-status fails naming the socket" t_sigterm

# the kernel stayed quiet
t_dmesg() {
	if bad=$(dmesg_clean); then ktap_pass; else ktap_fail "$bad"; fi
	rdma_down
}
ktap_test "no kernel warnings" t_dmesg

ktap_run setup
