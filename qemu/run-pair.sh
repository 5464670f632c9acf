#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Boot two rswap test guests joined by a private Ethernet link (QEMU -netdev stream over a
# Unix socket) and run a script in each: a memory-server guest and a client guest.
#
#   qemu/run-pair.sh [options] SERVER_SCRIPT CLIENT_SCRIPT [CLIENT_ARG...]
#     --out DIR            results; the guests' folders are DIR/server and DIR/client
#     --timeout SEC        hard limit for each guest (default 900)
#     --kernel stock|debug --mem MB --accel tcg|kvm   passed to both guests
#     --server-smp N       vCPUs of the server guest (default 1)
#     --client-smp N       vCPUs of the client guest (default 2)
#     --server-arg ARG     an argument for SERVER_SCRIPT (repeatable)
#     --client-scratch MB  a scratch virtio disk of MB MiB for the client guest
#                          (qemu/run.sh --scratch; /dev/vdb there)
#     --systemd            both guests boot with systemd as PID 1 (qemu/run.sh --systemd):
#                          the two scripts prepare their roots for it
#     --grace SEC          how long the server guest may take to finish on its own once
#                          the client guest has ended (default 30); then it is stopped
#
# The server guest is 192.0.2.2 (role "server"), the client guest 192.0.2.1 (role
# "client"); each sees the other's address as $RSWAP_PEER_IP. The scripts coordinate over
# the network themselves (e.g. the client waits until a server port answers and tells the
# server when to stop). The client's exit code becomes this script's; both guests are
# always terminated, also when this script is interrupted.
# Unless RSWAP_QUIET is set, both consoles are echoed with [server] / [client] prefixes.
. "$(dirname "$0")/../scripts/common.sh"

out= timeout=900 grace=30 ssmp=1 csmp=2 common=() sargs=() cargs=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--grace) grace=$2; shift 2 ;;
	--kernel|--mem|--accel) common+=("$1" "$2"); shift 2 ;;
	--systemd) common+=("$1"); shift ;;
	--server-smp) ssmp=$2; shift 2 ;;
	--client-smp) csmp=$2; shift 2 ;;
	--server-arg) sargs+=("$2"); shift 2 ;;
	--client-scratch) cargs+=(--scratch "$2"); shift 2 ;;
	--) shift; break ;;
	-*) die "qemu/run-pair.sh: unknown option $1" ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || die "usage: qemu/run-pair.sh [options] SERVER_SCRIPT CLIENT_SCRIPT [CLIENT_ARG...]"
sscript=$1 cscript=$2; shift 2
for s in "$sscript" "$cscript"; do
	[ -f "$RSWAP_TOP/$s" ] || die "no such script in the work tree: $s"
done
[ -n "$out" ] || out=$(mktemp -d /tmp/rswap-pair.XXXXXX)
mkdir -p "$out/server" "$out/client"
: > "$out/server/serial.log"; : > "$out/client/serial.log"

# Build (or find) the guest image once, before two guests race for it.
bash "$RSWAP_TOP/scripts/guest-image.sh" >/dev/null

sockdir=$(mktemp -d /tmp/rswap-pair-sock.XXXXXX)
sock=$sockdir/link.sock
spid= cpid= tails=()
stop_guest() { # PID NAME: stop one run.sh (it passes the signal on to its QEMU)
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 0
	log "stopping the $2 guest"
	kill -TERM "$1" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.2; done
	kill -KILL "$1" 2>/dev/null || true
}
cleanup() {
	trap - EXIT INT TERM HUP
	stop_guest "$cpid" client
	stop_guest "$spid" server
	for t in "${tails[@]}"; do kill "$t" 2>/dev/null || true; done
	rm -rf "$sockdir"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

if [ -z "${RSWAP_QUIET:-}" ]; then
	for r in server client; do
		{ tail -n +1 -F "$out/$r/serial.log" 2>/dev/null | sed -u "s/^/[$r] /"; } &
		tails+=($!)
	done
fi

export RSWAP_QUIET=1
bash "$RSWAP_TOP/qemu/run.sh" "${common[@]}" --out "$out/server" --smp "$ssmp" --timeout "$timeout" \
	--ip 192.0.2.2/24 --peer 192.0.2.1 --role server --net-listen "$sock" \
	"$sscript" "${sargs[@]}" &
spid=$!
# The listening side must exist before the client's QEMU connects (it retries anyway).
for _ in $(seq 300); do
	[ -S "$sock" ] && break
	kill -0 "$spid" 2>/dev/null || die "the server guest ended before it listened (see $out/server/serial.log)"
	sleep 0.1
done
[ -S "$sock" ] || die "the server guest's QEMU did not create $sock"

bash "$RSWAP_TOP/qemu/run.sh" "${common[@]}" "${cargs[@]}" --out "$out/client" --smp "$csmp" --timeout "$timeout" \
	--ip 192.0.2.1/24 --peer 192.0.2.2 --role client --net-connect "$sock" \
	"$cscript" "$@" &
cpid=$!
crc=0; wait "$cpid" || crc=$?
cpid=

# Let the server guest finish on its own (its script was told to stop), then stop it.
for _ in $(seq $((grace * 5))); do kill -0 "$spid" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$spid" 2>/dev/null; then
	stop_guest "$spid" server
	src="stopped"
else
	src=0; wait "$spid" || src=$?
fi
spid=
log "client guest exit $crc, server guest exit $src (results in $out)"
exit "$crc"
