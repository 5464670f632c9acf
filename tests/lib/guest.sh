# SPDX-License-Identifier: GPL-2.0
# Helpers for scripts that run inside an rswap test guest (source, do not run).
# The work tree is at $RSWAP_TOP (/mnt/rswap, read-only); $RSWAP_OUT is writable and
# comes back to the host. eth0 has $RSWAP_GUEST_IP; two-guest runs set $RSWAP_PEER_IP.

. "$RSWAP_TOP/tests/lib/ktap.sh"

# The RDMA device the suites run over: soft-RoCE (rxe0) unless the guest was booted with
# rswap.rdma=siw (RSWAP_RDMA=siw make check KERNEL=debug), soft-iWARP (siw0): an iWARP
# device, whose RDMA READ sinks rswap registers in memory regions. Stock Debian kernels
# have no siw.
RDMA_TYPE=${RSWAP_RDMA:-rxe}
RDMA_DEV=${RDMA_TYPE}0
case $RDMA_TYPE in
rxe) RDMA_MODULE=rdma_rxe ;;
siw) RDMA_MODULE=siw ;;
*) echo "RSWAP_RDMA=$RDMA_TYPE: not rxe or siw" >&2; RDMA_MODULE=$RDMA_TYPE ;;
esac
export RDMA_TYPE RDMA_DEV RDMA_MODULE

# Load the RDMA core, the user-space verbs and the connection manager (kernel and user
# space), in this order whoever asks first. The IB core removes a device from its clients
# in the reverse order of their registration, and on a device whose driver cannot revoke
# user-space access (soft-iWARP has no disassociate_ucontext) ib_uverbs waits, in its
# removal, until every program using the device (rswap-server) has closed it. The server
# lets go when rdma_cm tells it of the removal: rdma_cm must come after ib_uverbs, so that
# it is removed first. With rdma_cm first, `rdma link delete siw0` waits for ever.
rdma_modules() {
	modprobe -a ib_core ib_uverbs rdma_cm rdma_ucm
}

# Create $RDMA_DEV on eth0 (idempotent) and load the userspace verbs and rdma_cm
# character devices. Returns non-zero with a message when the device is unusable.
rdma_up() {
	rdma_modules || { echo "modprobe of the RDMA core modules failed"; return 1; }
	modprobe $RDMA_MODULE || { echo "modprobe $RDMA_MODULE failed"; return 1; }
	rdma link show | grep -q "^link $RDMA_DEV/" \
		|| rdma link add $RDMA_DEV type $RDMA_TYPE netdev eth0 || return 1
	for _ in $(seq 200); do
		rdma link show | grep -q "^link $RDMA_DEV/.* state ACTIVE" && return 0
		sleep 0.1
	done
	echo "$RDMA_DEV did not become ACTIVE"; rdma link show; return 1
}

rdma_down() { rdma link delete $RDMA_DEV 2>/dev/null; true; }

# Lines in dmesg that mean the kernel is unhappy since the marker was set.
# (Lockdep reports start with "WARNING: possible ..." or "BUG: ..."; KASAN with "BUG: KASAN".)
DMESG_BAD='BUG:|WARNING:|Oops|general protection|KASAN:|UBSAN:|inconsistent lock state|Call Trace:|kernel BUG|refcount_t:|list_add corruption|list_del corruption'
dmesg_mark() { echo "rswap-test-mark: $1" > /dev/kmsg; }
# The kernel log without allocation-failure reports: `warn_alloc` prints a call trace when
# an atomic allocation fails, which reports memory pressure rather than a kernel bug
# (soft-RoCE's and the IB CM's GFP_ATOMIC allocations fail that way when a debug kernel
# runs short of memory under the swap test). dmesg_alloc_failures counts them instead.
# It also leaves out the reports of a known soft-RoCE race (tests/lib/kernel-log-filter.awk
# says which), which dmesg_rxe_races counts.
dmesg_no_alloc_reports() {
	dmesg_known_filtered | awk '/page allocation failure:/ { skip = 1; next } skip && /<\/TASK>/ { skip = 0; next } !skip'
}
dmesg_known_filtered() { dmesg | awk -f "$RSWAP_TOP/tests/lib/kernel-log-filter.awk"; }
# A diagnostic line with the number of such reports since the last mark, if any.
dmesg_note_rxe_races() {
	local n
	n=$(dmesg | awk '/rswap-test-mark:/ { buf = ""; next } { buf = buf $0 "\n" } END { printf "%s", buf }' \
		| awk -f "$RSWAP_TOP/tests/lib/kernel-log-filter.awk" -v count=1)
	[ "$n" = 0 ] || ktap_diag "$n reports of the soft-RoCE rxe_sched_task race or its aftermath with no rswap frame (a peer QP destroyed under traffic; not counted as an rswap bug)"
}
dmesg_alloc_failures() {
	dmesg | awk '/rswap-test-mark:/ { n = 0; next } /page allocation failure:/ { n++ } END { print n + 0 }'
}
# dmesg_check_noting: a suite's closing dmesg test, for suites that run memory short:
# the atomic allocation failures and known soft-RoCE race reports since the last mark as
# diagnostics, then the result of dmesg_clean.
dmesg_check_noting() {
	local n
	n=$(dmesg_alloc_failures)
	[ "$n" = 0 ] || ktap_diag "$n atomic allocation failures reported by the kernel (memory pressure, not counted as a kernel bug)"
	dmesg_note_rxe_races
	ktap_check dmesg_clean
}
# Print bad lines logged after the last mark; succeed when there are none.
dmesg_clean() {
	local bad
	bad=$(dmesg_no_alloc_reports | awk '/rswap-test-mark:/ { buf = ""; next } { buf = buf $0 "\n" } END { printf "%s", buf }' \
		| grep -E "$DMESG_BAD" || true)
	[ -z "$bad" ] || { echo "$bad"; return 1; }
}

# Bad lines anywhere in this boot's kernel log; succeed when there are none.
dmesg_clean_since_mark_all() {
	local bad
	bad=$(dmesg_known_filtered | grep -E "$DMESG_BAD" || true)
	[ -z "$bad" ] || { echo "$bad"; return 1; }
}

# Start the suite's rswap-server ($SRV) with options "$2"..., appending its log to $1,
# and wait up to 10 s for a new "listening" line (a restarted server appends to the same
# log). Sets SPID. Prints the log and fails when the server does not start.
server_start() {
	local log=$1 n
	shift
	n=$(grep -sc listening "$log")
	"$SRV" "$@" >>"$log" 2>&1 &
	SPID=$!
	for _ in $(seq 100); do
		[ "$(grep -sc listening "$log")" -gt "${n:-0}" ] && return 0
		sleep 0.1
	done
	echo "server did not start"; cat "$log"; return 1
}

# testclient ADDR:PORT ARGS...: runs rswap-testclient ($CLI) against the server at
# ADDR:PORT, for at most TESTCLIENT_LIMIT seconds (default 180) with --timeout
# TESTCLIENT_TIMEOUT (default 60); its output (stdout and stderr) in $CO, its status in
# $CS, both appended to $OUT/clients.log.
CO= CS=
testclient() {
	local at=$1; shift
	CO=$(timeout "${TESTCLIENT_LIMIT:-180}" "$CLI" --connect "$at" --timeout "${TESTCLIENT_TIMEOUT:-60}" "$@" 2>&1)
	CS=$?
	printf '%s\n' "--- rswap-testclient $*" "$CO" >>"$OUT/clients.log"
}

# target_suite_start: the start (the SETUP of ktap_run) of a suite with a configfs target
# $T, rswap.ko $KO and a server $SRV: target_cleanup as the EXIT trap, and every test
# skipped when the module, the server or the RDMA device is missing.
target_suite_start() {
	SPID=
	trap target_cleanup EXIT
	[ -f "$KO" ] || ktap_skip_rest "rswap.ko not built"
	[ -x "$SRV" ] || ktap_skip_rest "rswap-server not built (scripts/build-server.sh)"
	rdma_up >/dev/null || ktap_skip_rest "$RDMA_DEV unavailable"
}

# The EXIT trap of a suite with a configfs target $T and maybe a server $SPID: disable
# and remove the target, kill the server.
target_cleanup() {
	{ [ -d "$T" ] && echo 0 > "$T/enable"; } 2>/dev/null
	rmdir "$T" 2>/dev/null
	[ -z "${SPID:-}" ] || kill -KILL "$SPID" 2>/dev/null
	true
}

# For scripts that drive rswap-testclient: `field KEY [LINE-PATTERN]` is the value of KEY=
# in the first line of its output $CO matching the pattern (default: queue 0's line).
field() { printf '%s\n' "$CO" | grep -m1 -- "${2:-^queue=0 }" | sed -n "s/.*\b$1=\([^ ]*\).*/\1/p"; }
# wait_log FILE PATTERN SECS: until FILE has a line matching PATTERN (extended regex).
wait_log() {
	local i
	for i in $(seq $(($3 * 10))); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}
# wait_exit PID SECS: succeeds with the process's exit status once it ended (124 if not).
wait_exit() {
	local i
	for i in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || { wait "$1"; return; }; sleep 0.1; done
	return 124
}

# vm KEY: a counter of /proc/vmstat, e.g. vm pswpout.
vm() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
# wait_swapping PID BASE: waits (up to 60 s) until 2000 pages more than BASE (a pswpout
# reading) went out to swap, or process PID ended; prints how many went out.
wait_swapping() {
	local i
	for i in $(seq 600); do
		[ $(( $(vm pswpout) - $2 )) -ge 2000 ] && break
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	echo $(( $(vm pswpout) - $2 ))
}

# stop_rewrite PID: ends the rewrite phase of swapload process PID (SIGUSR1), once sure
# that PID is swapload itself (`sh -c '... exec'` keeps its PID) and not a shell, which
# the signal would kill. Fails if it is not.
stop_rewrite() {
	[ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$(basename "${RSWAP_SWAPLOAD:-swapload}" | cut -c1-15)" ] \
		&& kill -USR1 "$1"
}

# uevents_start FILE: records rswap's uevents (a `change` of /dev/rswapN with RSWAP_EVENT)
# into FILE as they come, one line each ("DEVNAME=.. RSWAP_TARGET=.. RSWAP_QUEUE=..
# RSWAP_EVENT=.. RSWAP_STATE=.."), until uevents_stop; returns once it listens.
uevents_start() {
	: > "$1"
	python3 - "$1" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)  # NETLINK_KOBJECT_UEVENT
s.bind((0, 1))  # the kernel's multicast group
out = open(sys.argv[1], "a")
print("listening", file=out, flush=True)
keys = ("DEVNAME", "RSWAP_TARGET", "RSWAP_QUEUE", "RSWAP_EVENT", "RSWAP_STATE")
while True:
    parts = s.recv(1 << 16).split(b"\0")
    env = dict(p.decode(errors="replace").split("=", 1) for p in parts[1:] if b"=" in p)
    if "RSWAP_EVENT" in env:
        print(" ".join(f"{k}={env.get(k, '')}" for k in keys), file=out, flush=True)
PY
	UEVENTS_PID=$!
	for _ in $(seq 100); do grep -q '^listening' "$1" && return 0; sleep 0.1; done
	return 1
}
uevents_stop() { kill "$UEVENTS_PID" 2>/dev/null; wait "$UEVENTS_PID" 2>/dev/null; true; }

# A numeric field of target $1's state line, e.g. state_field $T recoveries.
state_field() { sed -n "s/.* $2=\([0-9]*\).*/\1/p" "$1/state"; }

# Load rswap.ko from the work tree. insmod does not resolve dependencies, so load the
# RDMA core and connection manager first, as modprobe would.
rswap_load() {
	rdma_modules || return 1
	insmod "$RSWAP_TOP/rswap.ko" "$@"
}
export -f rdma_modules rswap_load

# monitor_until FILE PATTERN: waits up to 30 s for a line of FILE matching PATTERN.
monitor_until() {
	for _ in $(seq 300); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# monitor_ready PID: waits up to 10 s for process PID (rswapctl monitor) to have bound
# its uevent socket (/proc/net/netlink: protocol 15, NETLINK_KOBJECT_UEVENT, its port
# id the process's id), so that no event before that is missed.
monitor_ready() {
	for _ in $(seq 100); do
		awk -v pid="$1" '$2 == 15 && $3 == pid { f = 1 } END { exit !f }' /proc/net/netlink && return 0
		sleep 0.1
	done
	return 1
}
