#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The benchmark's memory-server guest (run by qemu/run-pair.sh, or in the background of
# the client guest with --loopback).
#
#   server.sh                 bring up rxe0, answer the client's requests (tests/bench/ctl.py)
#                             until it says "stop", then tear everything down
#   server.sh FUNC ARG...     one server-side step, run by the control channel:
#     perftest_start TOOL ARG...  a perftest server, returns once it listens
#     nvmet_setup ADDR SIZE_MB  nvmet target over RDMA on ADDR, namespace on a brd RAM disk
#     nvmet_teardown
#     rswap_server_start ADDR SIZE_MB [PORT]...   HOOK: start rswap-server (when it is
#                               built) on each PORT (default $RSWAP_SERVER_PORT); one
#                               server per port
#     rswap_server_stop [PORT]  stop the server on PORT (no PORT: every one)
#     rswap_server_allocated    the remote memory the running servers allocated
. "$RSWAP_TOP/tests/bench/lib.sh"

SRV_LOG=$RSWAP_OUT/bench-server
mkdir -p "$SRV_LOG"

# Start a perftest server (TOOL ARG..., with -p PORT) in the background, bounded in time,
# and return once its rdma_cm id listens: a client that connects earlier is rejected, and
# perftest's client then crashed in librdmacm (GP fault) and hung once under TCG.
srv_perftest_start() {
	local tool=$1 port= prev= a pid
	for a in "$@"; do [ "$prev" = -p ] && port=$a; prev=$a; done
	[ -n "$port" ] || { echo "perftest_start: no -p PORT"; return 2; }
	setsid timeout 300 "$@" > "$SRV_LOG/$tool-$port.log" 2>&1 < /dev/null &
	pid=$!
	for _ in $(seq 150); do
		rdma res show cm_id 2>/dev/null | grep 'state LISTEN' | grep -qE ":$port( |\$)" && return 0
		kill -0 $pid 2>/dev/null || { echo "$tool server exited: $(tail -2 "$SRV_LOG/$tool-$port.log")"; return 1; }
		sleep 0.2
	done
	echo "$tool server is not listening on port $port after 30 s"; return 1
}

srv_nvmet_setup() { # ADDR SIZE_MB
	local addr=$1 size=$2 cfg=/sys/kernel/config/nvmet sub port
	brd_load "$size" || return 1
	modprobe nvmet && modprobe nvmet-rdma || { echo "modprobe nvmet / nvmet-rdma failed"; return 1; }
	[ -d $cfg ] || { echo "no nvmet configfs at $cfg"; return 1; }
	sub=$cfg/subsystems/$NVMET_NQN port=$cfg/ports/1
	[ -d "$sub" ] || mkdir "$sub" || return 1
	echo 1 > "$sub/attr_allow_any_host"
	[ -d "$sub/namespaces/1" ] || mkdir "$sub/namespaces/1" || return 1
	echo -n "$BRD_SERVER_DEV" > "$sub/namespaces/1/device_path"
	echo 1 > "$sub/namespaces/1/enable" || { echo "enabling the namespace on $BRD_SERVER_DEV failed"; return 1; }
	[ -d "$port" ] || mkdir "$port" || return 1
	echo rdma > "$port/addr_trtype"
	echo ipv4 > "$port/addr_adrfam"
	echo "$addr" > "$port/addr_traddr"
	echo "$NVMET_PORT" > "$port/addr_trsvcid"
	[ -e "$port/subsystems/$NVMET_NQN" ] || ln -s "$sub" "$port/subsystems/$NVMET_NQN" \
		|| { echo "binding the subsystem to the RDMA port failed"; dmesg | tail -5; return 1; }
	echo "nvmet: $NVMET_NQN on rdma $addr:$NVMET_PORT, namespace $BRD_SERVER_DEV (${size} MiB brd)"
}

srv_nvmet_teardown() {
	local cfg=/sys/kernel/config/nvmet
	[ -d $cfg ] || return 0
	rm -f "$cfg/ports/1/subsystems/$NVMET_NQN" 2>/dev/null
	rmdir "$cfg/ports/1" 2>/dev/null
	[ -d "$cfg/subsystems/$NVMET_NQN/namespaces/1" ] && {
		echo 0 > "$cfg/subsystems/$NVMET_NQN/namespaces/1/enable"
		rmdir "$cfg/subsystems/$NVMET_NQN/namespaces/1"
	}
	rmdir "$cfg/subsystems/$NVMET_NQN" 2>/dev/null
	true
}

# ---- HOOK: rswap memory server ------------------------------------------------------
# Start rswap-server (tools/rswap-server, built by make) on ADDR:PORT (default
# $RSWAP_SERVER_PORT; several PORTs: one server on each, in turn) with a pool a little
# larger than SIZE_MB, in the background; succeed once each listens. Reports "not
# available" when the binary is not built. Servers on different ports run side by side
# (rswap-md1 uses two, rswap-4+2 six), each with its own log
# ($SRV_LOG/rswap-server-PORT.log) and pid file (/run/rswap-server-PORT.pid); starting on
# a port first stops whatever server the bench left there.
RSWAP_SERVER_BIN=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
srv_rswap_server_start() { # ADDR SIZE_MB [PORT]...
	local addr=$1 mb=$2 port
	shift 2
	[ $# -gt 0 ] || set -- "$RSWAP_SERVER_PORT"
	for port in "$@"; do srv_rswap_server_start1 "$addr" "$mb" "$port" || return 1; done
}
srv_rswap_server_start1() { # ADDR SIZE_MB PORT
	local port=$3 log pid
	log=$SRV_LOG/rswap-server-$port.log
	[ -x "$RSWAP_SERVER_BIN" ] || { echo "not available: rswap-server is not built ($RSWAP_SERVER_BIN)"; return 1; }
	srv_rswap_server_stop "$port"
	setsid "$RSWAP_SERVER_BIN" --listen "$1:$port" --size "$(($2 + 16))M" --insecure \
		> "$log" 2>&1 < /dev/null &
	pid=$!
	echo $pid > "/run/rswap-server-$port.pid"
	for _ in $(seq 150); do
		grep -q listening "$log" && return 0
		kill -0 $pid 2>/dev/null || { echo "rswap-server on port $port exited: $(tail -2 "$log")"; return 1; }
		sleep 0.2
	done
	echo "rswap-server is not listening on port $port after 30 s: $(tail -2 "$log")"; return 1
}
# The remote memory the running servers (those with a pid file) allocated: the sum of
# the lengths of their regions, from each log's "event=region_allocated ... length=BYTES"
# lines (Documentation/memory-server.md), as "servers=N allocated_bytes=BYTES". A server
# started for a backend logs only that backend's regions: starting it empties its log.
srv_rswap_server_allocated() {
	local f port n=0 sum=0 b
	for f in /run/rswap-server-*.pid; do
		[ -f "$f" ] || continue
		port=${f#/run/rswap-server-}; port=${port%.pid}
		n=$((n + 1))
		for b in $(sed -n 's/.*event=region_allocated .*length=\([0-9]*\).*/\1/p' \
				"$SRV_LOG/rswap-server-$port.log"); do
			sum=$((sum + b))
		done
	done
	echo "servers=$n allocated_bytes=$sum"
}
srv_rswap_server_stop() { # [PORT]
	local f pid
	for f in /run/rswap-server-${1:-*}.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f"); rm -f "$f"
		kill "$pid" 2>/dev/null || continue
		# Wait (bounded) until it is gone (a zombie counts as gone), so that its pool is
		# freed and its port is free.
		for _ in $(seq 50); do
			case $(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) in
			''|Z) break ;;
			esac
			sleep 0.1
		done
	done
	true
}
# --------------------------------------------------------------------------------------

if [ $# -gt 0 ]; then
	fn=srv_$1; shift
	declare -F "$fn" >/dev/null || { echo "server.sh: no step ${fn#srv_}"; exit 2; }
	"$fn" "$@"
	exit $?
fi

echo "bench server: $(uname -r), $(nproc) vCPU, $RSWAP_GUEST_IP"
rdma_up || exit 1
rc=0
timeout "${BENCH_SERVER_TIMEOUT:-3600}" python3 "$BENCH/ctl.py" serve "$CTL_PORT" "$BENCH/server.sh" || rc=$?
srv_rswap_server_stop
srv_nvmet_teardown
dmesg_clean > "$SRV_LOG/dmesg-bad.txt" || echo "bench server: kernel warnings, see $SRV_LOG/dmesg-bad.txt"
echo "bench server: done (control loop exit $rc)"
exit $rc
