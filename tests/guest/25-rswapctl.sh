#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rswapctl end to end over soft-RoCE (one guest): add a target as swap (with a queue depth
# and a timeout of its own, read back from configfs), list and status it (JSON checked
# field by field), a refused add that prints the kernel's reason and leaves
# nothing behind, an encrypted target (add --encrypt; skipped on a module without the
# encrypt attribute), a synchronous one (add --sync-swapin, and up of a target file with
# sync_swapin = yes; skipped on a module without the sync_swapin attribute), one with a
# poll queue (add --poll-queues 1; skipped on a module without the poll_queues
# attribute), `rswapctl metrics` against what fio reports, `rswapctl monitor` (recovering
# and reconnected for the server's SIGUSR1, dead for a SIGKILL with recovery_ms=0), and
# remove.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
CTL=$RSWAP_TOP/tools/rswapctl/target/release/rswapctl
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORT=18525
CFG=/sys/kernel/config/rswap
OUT=$RSWAP_OUT/25-rswapctl
mkdir -p "$OUT"

# list_cell FILE NAME COLUMN WANT: the `rswapctl list` table in FILE has WANT in the
# column headed COLUMN of target NAME's row.
list_cell() {
	awk -v name="$2" -v col="$3" -v want="$4" '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; if (!c) exit 1 }
		$1 == name { f = ($c == want) }
		END { exit !f }' "$1"
}

SPID=
cleanup() {
	swapoff /dev/rswap0 2>/dev/null
	for t in $CFG/ctl0 $CFG/met0 $CFG/mon0 $CFG/bad0 $CFG/enc0 $CFG/sync0 $CFG/sync1 $CFG/poll0; do
		{ [ -d $t ] && echo 0 > $t/enable; } 2>/dev/null
		rmdir $t 2>/dev/null
	done
	[ -z "$SPID" ] || kill -KILL "$SPID" 2>/dev/null
	true
}
trap cleanup EXIT

setup() {
	[ -f "$KO" ] || ktap_skip_rest "rswap.ko not built"
	[ -x "$SRV" ] || ktap_skip_rest "rswap-server not built (scripts/build-server.sh)"
	[ -x "$CTL" ] || ktap_skip_rest "rswapctl not built (scripts/build-server.sh)"
	rdma_up >/dev/null || ktap_skip_rest "$RDMA_DEV unavailable"
	dmesg_mark "25-rswapctl"
	# A removed target's region stays for the server's --grace (60 s): the pool holds ctl0's
	# 32 MiB and 16 MiB for each of met0, enc0, sync0, sync1 and poll0.
	server_start "$OUT/server.log" --listen "$IP:$PORT" --size 128M --insecure >/dev/null || ktap_skip_rest "rswap-server does not start"
	grep -q '^rswap ' /proc/modules || rswap_load || ktap_skip_rest "insmod failed"
	swapoff -a 2>/dev/null
}

# add as swap
t_add_swap() {
	if "$CTL" add ctl0 --server "$IP:$PORT" --size 32M --queues 1 --queue-depth 64 --timeout-ms 2000 \
		--io-timeout-ms 9000 --client-id 0x2501 --swap --priority 5 \
		>"$OUT/add.out" 2>&1 && awk '$1 == "/dev/rswap0" && $5 == 5 { f = 1 } END { exit !f }' /proc/swaps; then
		ktap_pass
	else
		ktap_fail "$(cat "$OUT/add.out"; cat /proc/swaps)"; ktap_skip_rest "no target"
	fi
}
ktap_test "rswapctl add --swap: the target connects, /dev/rswap0 is swapped on at the priority asked" t_add_swap

# list and status, as JSON; sets HAS_ENC, HAS_SYNC and HAS_POLL for the tests after it
t_list_status() {
	"$CTL" list --json >"$OUT/list.json" 2>&1
	"$CTL" status ctl0 --json >"$OUT/status.json" 2>&1
	"$CTL" list >"$OUT/list.txt" 2>&1
	# encrypt, sync_swapin: false with a module that has the attribute (default 0), null
	# without it; poll_queues: 0, or null without it.
	HAS_ENC=0 HAS_SYNC=0 HAS_POLL=0
	[ -e $CFG/ctl0/encrypt ] && HAS_ENC=1
	[ -e $CFG/ctl0/sync_swapin ] && HAS_SYNC=1
	[ -e $CFG/ctl0/poll_queues ] && HAS_POLL=1
	# --queue-depth, --timeout-ms and --io-timeout-ms as the module shows them; the last
	# is also the disk's request timeout.
	QD=$(cat $CFG/ctl0/queue_depth 2>&1) TMO=$(cat $CFG/ctl0/timeout_ms 2>&1)
	IOT=$(cat $CFG/ctl0/io_timeout_ms 2>&1),$(cat /sys/block/rswap0/queue/io_timeout 2>&1)
	if python3 - "$OUT/list.json" "$OUT/status.json" "$IP" "$PORT" "$HAS_ENC" "$HAS_SYNC" "$HAS_POLL" "$QD" "$TMO" "$IOT" \
		>"$OUT/check.out" 2>&1 <<'PY'
import json, sys
lst = json.load(open(sys.argv[1]))
st = json.load(open(sys.argv[2]))
ip, port = sys.argv[3], int(sys.argv[4])
has_enc, has_sync, has_poll = sys.argv[5] == "1", sys.argv[6] == "1", sys.argv[7] == "1"
assert sys.argv[8:11] == ["64", "2000", "9000,9000"], ("configfs queue_depth, timeout_ms, io_timeout_ms and io_timeout", sys.argv[8:])
assert isinstance(lst, list) and len(lst) == 1, lst
t = lst[0]
want = {"name": "ctl0", "device": "rswap0", "addr": ip, "port": port,
        "size_bytes": 32 << 20, "state": "connected", "queues_live": 1, "queues_total": 1,
        "recovering": 0, "dead": 0, "swap_priority": 5, "queue_depth": 64, "timeout_ms": 2000,
        "io_timeout_ms": 9000}
for k, v in want.items():
    assert t.get(k) == v, (k, t.get(k), v)
assert isinstance(t["region"], int) and t["epoch"] == 1, t
assert t["swap_used_bytes"] is not None and t["swap_used_bytes"] >= 0, t
assert t["encrypt"] is (False if has_enc else None), t
assert t["sync_swapin"] is (False if has_sync else None), t
# A number, not a bool (False == 0 in Python).
assert (type(t["poll_queues"]) is int and t["poll_queues"] == 0) if has_poll else t["poll_queues"] is None, t
assert t["auth_failures"] is None, t
# The client id, and the counters of stats (the disk swapped on has been read at least
# by swapon).
assert t["client_id"] == "0x2501", t
stats = t["stats"]
assert type(stats["reads"]) is int and stats["reads"] > 0 and stats["errors"] == 0, stats
assert [q["queue"] for q in stats["queues"]] == [0], stats
assert sum(q["reads"] for q in stats["queues"]) == stats["reads"], stats
hist = stats["read_latency_us"] or stats["latency_us"]
assert hist and hist[-1]["le_us"] is None, stats
assert st["stats"]["reads"] >= stats["reads"], st
for k, v in want.items():
    assert st.get(k) == v, ("status", k, st.get(k), v)
attrs = st["attributes"]
assert attrs["client_id"] == "0x2501" and attrs["enable"] == "1" and attrs["queues"] == "1", attrs
assert attrs["queue_depth"] == "64" and attrs["timeout_ms"] == "2000", attrs
assert attrs["io_timeout_ms"] == "9000", attrs
print("ok", t)
PY
	then
		ktap_pass
		ktap_diag "$(head -2 "$OUT/list.txt" | tr -s ' ' | tr '\n' '|')"
	else
		ktap_fail "$(tail -3 "$OUT/check.out"; cat "$OUT/list.json")"
	fi
}
ktap_test "rswapctl list --json and status --json: every field as configured and as the kernel reports it (--io-timeout-ms is the disk's io_timeout), the client id and the stats counters" t_list_status

# rswapctl metrics before and after a fio run on a target of its own (met0, not swapped
# on, merges off so that each fio I/O is one request); sets SPLIT (the module has the
# read and write histograms) for the test after it.
SPLIT=
t_metrics() {
	rm -f "$OUT"/met-*
	if ! "$CTL" add met0 --server "$IP:$PORT" --size 16M --queues 1 --client-id 0x2506 >"$OUT/met-add.out" 2>&1; then
		ktap_fail "$(cat "$OUT/met-add.out")"; return
	fi
	dev=$(cat $CFG/met0/device)
	"$CTL" metrics >"$OUT/met-before.prom" 2>&1
	echo 2 > "/sys/block/$dev/queue/nomerges"
	fio --name=metrics --filename="/dev/$dev" --direct=1 --ioengine=libaio --rw=randrw --bs=4k \
		--iodepth=4 --size=16M --io_size=4M --output-format=json --output="$OUT/met-fio.json" \
		>"$OUT/met-fio.log" 2>&1
	frc=$?
	"$CTL" metrics >"$OUT/met-after.prom" 2>&1
	"$CTL" remove met0 >>"$OUT/met-add.out" 2>&1
	if [ $frc = 0 ] && python3 - "$OUT/met-before.prom" "$OUT/met-after.prom" "$OUT/met-fio.json" \
		>"$OUT/met-check.out" 2>&1 <<'PY'
import json, re, sys

def parse(path):
    """The samples of met0: {(name, le): value}, and the family types."""
    samples, types = {}, {}
    for line in open(path):
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name] = kind
            continue
        if line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-z_]+)\{([^}]*)\} (\d+)\n', line)
        assert m, line
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m[2]))
        # rswap_module_info has no target.
        if labels.get("target") == "met0":
            assert labels["client_id"] == str(0x2506), line
            samples[(m[1], labels.get("le"), labels.get("state"))] = int(m[3])
    return samples, types

before, _ = parse(sys.argv[1])
after, types = parse(sys.argv[2])
job = json.load(open(sys.argv[3]))["jobs"][0]
d = lambda name, le=None: after[(name, le, None)] - before.get((name, le, None), 0)
assert after[("rswap_target_state", None, "connected")] == 1, after
assert after[("rswap_target_queues_live", None, None)] == 1, after
want = {"rswap_target_reads_total": job["read"]["total_ios"],
        "rswap_target_read_bytes_total": job["read"]["io_bytes"],
        "rswap_target_writes_total": job["write"]["total_ios"],
        "rswap_target_write_bytes_total": job["write"]["io_bytes"],
        "rswap_target_errors_total": 0}
bad = [f"{k}: moved {d(k)}, fio {v}" for k, v in want.items() if d(k) != v]
reads, writes = want["rswap_target_reads_total"], want["rswap_target_writes_total"]
split = ("rswap_target_read_latency_seconds_count", None, None) in after
hists = ([("rswap_target_read_latency_seconds", reads), ("rswap_target_write_latency_seconds", writes)]
         if split else [("rswap_target_latency_seconds", reads + writes)])
for h, n in hists:
    assert types[h] == "histogram", types
    if d(h + "_count") != n:
        bad.append(f"{h}_count moved {d(h + '_count')}, fio {n}")
    if d(h + "_bucket", "+Inf") != n:
        bad.append(f"{h} +Inf bucket moved {d(h + '_bucket', '+Inf')}, fio {n}")
print("; ".join(bad) if bad else
      f"reads +{reads}, writes +{writes} as fio reports; {'read and write histograms' if split else 'one histogram (reads and writes)'}")
print("split" if split else "one")
sys.exit(1 if bad else 0)
PY
	then
		ktap_pass
		ktap_diag "$(head -1 "$OUT/met-check.out")"
	else
		ktap_fail "fio exit $frc; $(cat "$OUT/met-check.out" "$OUT/met-add.out"; tail -5 "$OUT/met-fio.log")"
	fi
	[ "$(tail -1 "$OUT/met-check.out" 2>/dev/null)" = split ] && SPLIT=1
	true
}
ktap_test "rswapctl metrics: a target's reads, writes and bytes move by what fio reports, its latency histograms' counts with them" t_metrics

t_metrics_split() {
	if [ -n "$SPLIT" ]; then
		ktap_pass
	elif grep -q "^rswap_target_latency_seconds_count" "$OUT/met-after.prom" 2>/dev/null; then
		ktap_skip "rswap.ko has one latency_us histogram for reads and writes (a module older than the split)"
	else
		ktap_fail "no latency histogram in $OUT/met-after.prom"
	fi
}
ktap_test "rswapctl metrics: reads and writes in separate latency histograms" t_metrics_split

# rswapctl monitor while the server's SIGUSR1 closes ctl0's queue: the module's uevents
# say recovering, then reconnected.
t_monitor_recovery() {
	"$CTL" monitor >"$OUT/mon-usr1.out" 2>&1 &
	mpid=$!
	monitor_ready "$mpid"
	kill -USR1 "$SPID"
	line='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{6}Z ctl0 rswap0 queue=0'
	monitor_until "$OUT/mon-usr1.out" "$line reconnected state=connected\$"
	kill "$mpid" 2>/dev/null; wait "$mpid" 2>/dev/null
	rec=$(grep -nE "$line recovering state=recovering\$" "$OUT/mon-usr1.out" | head -1 | cut -d: -f1)
	back=$(grep -nE "$line reconnected state=connected\$" "$OUT/mon-usr1.out" | head -1 | cut -d: -f1)
	if [ -n "$rec" ] && [ -n "$back" ] && [ "$rec" -lt "$back" ]; then
		ktap_pass
		ktap_diag "$(tr '\n' '|' <"$OUT/mon-usr1.out")"
	else
		ktap_fail "monitor printed: $(cat "$OUT/mon-usr1.out"); ctl0: $(cat $CFG/ctl0/state 2>&1)"
	fi
}
ktap_test "rswapctl monitor: the server's SIGUSR1 gives ctl0's queue 0 a recovering line, then a reconnected one (state connected)" t_monitor_recovery

# rswapctl monitor while the server of a target with recovery_ms=0 is killed: dead.
t_monitor_dead() {
	main=$SPID
	if ! server_start "$OUT/server2.log" --listen "$IP:$((PORT + 1))" --size 16M --insecure >"$OUT/mon-server2.out"; then
		SPID=$main; ktap_fail "$(cat "$OUT/mon-server2.out")"; return
	fi
	s2=$SPID SPID=$main
	if ! "$CTL" add mon0 --server "$IP:$((PORT + 1))" --size 16M --queues 1 --recovery-ms 0 \
		--client-id 0x2507 >"$OUT/mon-add.out" 2>&1; then
		kill -KILL "$s2"; wait "$s2" 2>/dev/null
		ktap_fail "$(cat "$OUT/mon-add.out")"; return
	fi
	"$CTL" monitor --json >"$OUT/mon-kill.out" 2>&1 &
	mpid=$!
	# What udev hears of the kernel's uevents meanwhile, for the diagnosis.
	upid=
	if command -v udevadm >/dev/null; then
		udevadm monitor --kernel --property --subsystem-match=block >"$OUT/mon-kill-udevadm.out" 2>&1 &
		upid=$!
	fi
	monitor_ready "$mpid"
	kill -KILL "$s2"; wait "$s2" 2>/dev/null
	monitor_until "$OUT/mon-kill.out" '"target":"mon0".*"event":"dead","state":"dead"'
	kill "$mpid" $upid 2>/dev/null; wait "$mpid" $upid 2>/dev/null
	st=$(cat $CFG/mon0/state 2>&1)
	"$CTL" remove mon0 >>"$OUT/mon-add.out" 2>&1
	if grep -q '"target":"mon0","device":"rswap[0-9]*","queue":0,"event":"dead","state":"dead"}$' "$OUT/mon-kill.out" \
		&& ! [ -d $CFG/mon0 ]; then
		ktap_pass
		ktap_diag "$(grep mon0 "$OUT/mon-kill.out" | tr '\n' '|')"
	else
		ktap_fail "monitor printed: $(cat "$OUT/mon-kill.out"); mon0: $st; $(cat "$OUT/mon-add.out"); udevadm: $(grep -E 'RSWAP|^KERNEL' "$OUT/mon-kill-udevadm.out" 2>&1 | tr '\n' ' ')"
	fi
}
ktap_test "rswapctl monitor --json: killing the server of a target with recovery_ms=0 gives its queue a dead line (state dead)" t_monitor_dead

# a refused add: nothing listens on port 1
# and one the server refuses: more memory than its pool holds.
t_refused_add() {
	rc=0 rc2=0
	"$CTL" add bad0 --server "$IP:1" --size 16M --queues 1 >"$OUT/bad.out" 2>&1 || rc=$?
	"$CTL" add bad0 --server "$IP:$PORT" --size 1G --queues 1 >"$OUT/big.out" 2>&1 || rc2=$?
	if [ $rc = 1 ] && grep -q "kernel: enable failed: .*: queue 0: connection rejected (no rswap server at that address?" "$OUT/bad.out" \
		&& [ $rc2 = 1 ] && grep -q "kernel: enable failed: .*: queue 0: the server rejected the connection: TooLarge (asked 1073741824 bytes, it can give [0-9]*)" "$OUT/big.out" \
		&& ! [ -d $CFG/bad0 ]; then
		ktap_pass
		ktap_diag "$(tr '\n' ' ' <"$OUT/bad.out")" "$(tr '\n' ' ' <"$OUT/big.out")"
	else
		ktap_fail "exit $rc: $(cat "$OUT/bad.out"); exit $rc2: $(cat "$OUT/big.out"); $(ls $CFG)"
	fi
}
ktap_test "rswapctl add with no server listening, and asking more than the server has: exit 1, the kernel's reason (last_error: no server; TooLarge) printed, nothing left behind" t_refused_add

# an encrypted target, on a module that has the encrypt attribute (HAS_ENC)
t_encrypt() {
	if [ $HAS_ENC = 0 ]; then
		ktap_skip "rswap.ko has no $CFG/ctl0/encrypt (a module older than encryption)"
	else
		rm -f "$OUT"/enc-*
		"$CTL" add enc0 --server "$IP:$PORT" --size 16M --queues 1 --client-id 0x2502 --encrypt >"$OUT/enc.out" 2>&1
		rc=$?
		enc=$(cat $CFG/enc0/encrypt 2>&1)
		"$CTL" list >"$OUT/enc-list.txt" 2>&1
		"$CTL" list --json >"$OUT/enc-list.json" 2>&1
		"$CTL" status enc0 --json >"$OUT/enc-status.json" 2>&1
		if [ $rc = 0 ] && [ "$enc" = 1 ] \
			&& list_cell "$OUT/enc-list.txt" enc0 ENC yes \
			&& python3 - "$OUT/enc-list.json" "$OUT/enc-status.json" >"$OUT/enc-check.out" 2>&1 <<'PY'
import json, sys
lst = {t["name"]: t for t in json.load(open(sys.argv[1]))}
st = json.load(open(sys.argv[2]))
assert lst["enc0"]["encrypt"] is True, lst["enc0"]
assert lst["ctl0"]["encrypt"] is False, lst["ctl0"]
assert st["encrypt"] is True and st["state"] == "connected", st
assert st["attributes"]["encrypt"] == "1", st["attributes"]
assert st["auth_failures"] == 0, (st["auth_failures"], st["attributes"].get("stats"))
print("ok", lst["enc0"])
PY
		then
			checked=1
		else
			checked=
		fi
		# Removed whatever the checks said: t_remove unloads the module.
		removed=
		"$CTL" remove enc0 >>"$OUT/enc.out" 2>&1 && ! [ -d $CFG/enc0 ] && removed=1
		if [ -n "$checked" ] && [ -n "$removed" ]; then
			ktap_pass
			ktap_diag "$(grep -e ^NAME -e ^enc0 "$OUT/enc-list.txt" | tr -s ' ' | tr '\n' '|')"
		else
			ktap_fail "exit $rc, encrypt=$enc: $(cat "$OUT/enc.out" "$OUT/enc-list.txt"; tail -3 "$OUT/enc-check.out" 2>/dev/null; ls $CFG)"
		fi
	fi
}
ktap_test "rswapctl add --encrypt: the target's encrypt is 1, list shows ENC yes, list --json has encrypt true, status --json auth_failures 0; removed again" t_encrypt

# a synchronous target: add --sync-swapin, then up of a target file that asks for it
# (HAS_SYNC)
t_sync_swapin() {
	if [ $HAS_SYNC = 0 ]; then
		ktap_skip "rswap.ko has no $CFG/ctl0/sync_swapin (a module older than synchronous swap-in)"
	else
		rm -f "$OUT"/sync-*
		bad=
		# sync_check NAME HOW: the target is up with sync_swapin 1, as the kernel, list,
		# list --json and status --json show it; ctl0 (added without it) is not.
		sync_check() {
			local v
			v=$(cat $CFG/$1/sync_swapin 2>&1)
			"$CTL" list >"$OUT/sync-$1-list.txt" 2>&1
			"$CTL" list --json >"$OUT/sync-$1-list.json" 2>&1
			"$CTL" status "$1" --json >"$OUT/sync-$1-status.json" 2>&1
			[ "$v" = 1 ] || { bad+="$2: $1/sync_swapin=$v; "; return 1; }
			list_cell "$OUT/sync-$1-list.txt" "$1" SYNC yes && list_cell "$OUT/sync-$1-list.txt" ctl0 SYNC no \
				|| { bad+="$2: list: $(tr -s ' ' <"$OUT/sync-$1-list.txt" | tr '\n' '|'); "; return 1; }
			python3 - "$OUT/sync-$1-list.json" "$OUT/sync-$1-status.json" "$1" >"$OUT/sync-$1-check.out" 2>&1 <<'PY' \
				|| { bad+="$2: $(tail -1 "$OUT/sync-$1-check.out"); "; return 1; }
import json, sys
lst = {t["name"]: t for t in json.load(open(sys.argv[1]))}
st = json.load(open(sys.argv[2]))
name = sys.argv[3]
assert lst[name]["sync_swapin"] is True, lst[name]
assert lst["ctl0"]["sync_swapin"] is False, lst["ctl0"]
assert st["sync_swapin"] is True and st["state"] == "connected", st
assert st["attributes"]["sync_swapin"] == "1", st["attributes"]
print("ok", lst[name])
PY
		}
		# add --sync-swapin
		if "$CTL" add sync0 --server "$IP:$PORT" --size 16M --queues 1 --client-id 0x2503 --sync-swapin \
			>"$OUT/sync-add.out" 2>&1; then
			sync_check sync0 "add --sync-swapin"
		else
			bad+="add --sync-swapin: exit $?: $(cat "$OUT/sync-add.out"); "
		fi
		# Removed whatever the checks said: t_remove unloads the module.
		"$CTL" remove sync0 >>"$OUT/sync-add.out" 2>&1 && ! [ -d $CFG/sync0 ] \
			|| bad+="remove sync0: $(cat "$OUT/sync-add.out"); "
		# up of a target file with sync_swapin = yes
		mkdir -p "$OUT/targets"
		printf '%s\n' "server = $IP:$PORT" "size = 16M" "queues = 1" "client_id = 0x2504" \
			"sync_swapin = yes" "queue_depth = 32" >"$OUT/targets/sync1.conf"
		if "$CTL" up sync1 --config-dir "$OUT/targets" >"$OUT/sync-up.out" 2>&1; then
			sync_check sync1 "up (sync_swapin = yes)"
			# Another key of the file, as configfs shows it.
			v=$(cat $CFG/sync1/queue_depth 2>&1)
			[ "$v" = 32 ] || bad+="up: sync1/queue_depth=$v, not the file's 32; "
		else
			bad+="up: exit $?: $(cat "$OUT/sync-up.out"); "
		fi
		"$CTL" down sync1 >>"$OUT/sync-up.out" 2>&1 && ! [ -d $CFG/sync1 ] \
			|| bad+="down sync1: $(cat "$OUT/sync-up.out"); "
		if [ -z "$bad" ]; then
			ktap_pass
			ktap_diag "$(grep -e ^NAME -e ^sync0 "$OUT/sync-sync0-list.txt" | tr -s ' ' | tr '\n' '|')" \
				"$(tr '\n' ' ' <"$OUT/sync-up.out")"
		else
			ktap_fail "$bad$(ls $CFG)"
		fi
	fi
}
ktap_test "rswapctl add --sync-swapin, and up of a target file with sync_swapin = yes: the target's sync_swapin is 1, list shows SYNC yes, list --json and status --json have sync_swapin true; removed and down again" t_sync_swapin

# a target with a poll queue, on a module that has the poll_queues attribute (HAS_POLL)
t_poll_queues() {
	if [ $HAS_POLL = 0 ]; then
		ktap_skip "rswap.ko has no $CFG/ctl0/poll_queues (a module older than poll queues)"
	else
		rm -f "$OUT"/poll-*
		"$CTL" add poll0 --server "$IP:$PORT" --size 16M --queues 1 --poll-queues 1 --client-id 0x2505 \
			>"$OUT/poll.out" 2>&1
		rc=$?
		pq=$(cat $CFG/poll0/poll_queues 2>&1)
		dev=$(cat $CFG/poll0/device 2>/dev/null)
		iop=$([ -n "$dev" ] && cat "/sys/block/$dev/queue/io_poll" 2>&1)
		"$CTL" list --json >"$OUT/poll-list.json" 2>&1
		"$CTL" status poll0 --json >"$OUT/poll-status.json" 2>&1
		if [ $rc = 0 ] && [ "$pq" = 1 ] && [ "$iop" = 1 ] \
			&& python3 - "$OUT/poll-list.json" "$OUT/poll-status.json" >"$OUT/poll-check.out" 2>&1 <<'PY'
import json, sys
lst = {t["name"]: t for t in json.load(open(sys.argv[1]))}
st = json.load(open(sys.argv[2]))
# A number, not a bool (True == 1 in Python).
num = lambda v, n: type(v) is int and v == n
assert num(lst["poll0"]["poll_queues"], 1), lst["poll0"]
assert num(lst["ctl0"]["poll_queues"], 0), lst["ctl0"]
# One queue and one poll queue: two connections, both live.
assert lst["poll0"]["queues_live"] == 2 and lst["poll0"]["queues_total"] == 2, lst["poll0"]
assert num(st["poll_queues"], 1) and st["state"] == "connected", st
assert st["attributes"]["poll_queues"] == "1", st["attributes"]
print("ok", lst["poll0"])
PY
		then
			checked=1
		else
			checked=
		fi
		# Removed whatever the checks said: t_remove unloads the module.
		removed=
		"$CTL" remove poll0 >>"$OUT/poll.out" 2>&1 && ! [ -d $CFG/poll0 ] && removed=1
		if [ -n "$checked" ] && [ -n "$removed" ]; then
			ktap_pass
			ktap_diag "/dev/$dev io_poll $iop" "$(tail -1 "$OUT/poll-check.out")"
		else
			ktap_fail "exit $rc, poll_queues=$pq, device '$dev', io_poll '$iop': $(cat "$OUT/poll.out"; tail -3 "$OUT/poll-check.out" 2>/dev/null; ls $CFG)"
		fi
	fi
}
ktap_test "rswapctl add --poll-queues 1: the target's poll_queues is 1, its disk polls (io_poll 1) with 2 queues live, list --json and status --json have poll_queues 1; removed again" t_poll_queues

# remove ctl0, the target of the first test
t_remove() {
	if "$CTL" remove ctl0 >"$OUT/remove.out" 2>&1 && ! grep -q rswap0 /proc/swaps && ! [ -d $CFG/ctl0 ] \
		&& rmmod rswap; then
		ktap_pass
	else
		ktap_fail "$(cat "$OUT/remove.out"; cat /proc/swaps; ls $CFG)"
	fi
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
}
ktap_test "rswapctl remove: swapoff, disable, rmdir" t_remove

ktap_test "dmesg: no BUG/WARNING/Oops in the rswapctl tests" ktap_check dmesg_clean

ktap_run setup
