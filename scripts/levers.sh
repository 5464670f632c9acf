#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The swap workload on rswap with and without each lever, interleaved in one boot of the
# bench guests, so that each lever is measured against its baseline in the same run.
#
#   scripts/levers.sh [--out DIR] [--swap-mb MIB] [--runs N] [--nvme] [--params P=V+...]
#                     LEVER...
#     LEVER        NAME:SETTING+SETTING...: q.ATTR=VALUE (the disk's queue attribute),
#                  vm.NAME=VALUE (a vm sysctl), p.NAME=VALUE (an rswap.ko parameter),
#                  t.encrypt=1 (an encrypted target); e.g. nowbt:q.wbt_lat_usec=0
#                  pc5:vm.page-cluster=5 enc:t.encrypt=1
#     --swap-mb M  working set (default 32; the cgroup's limit is half)
#     --runs N     rounds (default 3): the baseline and every lever once each, rotated
#     --nvme       nvme-rdma's swap workload once per round too, for the ratio
#     --params P   rswap.ko parameters at load, joined by +
#
# Prints the median wall time of each, its ratio to the baseline's (and nvme-rdma's);
# DIR/client/levers/ has every run's JSON. Needs `make` and rswap-server built. See
# Documentation/benchmarks.md ("Swap-out levers").
. "$(dirname "$0")/common.sh"

out= args=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--swap-mb|--runs|--params) args+=("$1" "$2"); shift 2 ;;
	--nvme) args+=("$1"); shift ;;
	-h|--help) sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) die "levers.sh: unknown option $1 (see --help)" ;;
	*) [[ $1 =~ ^[a-z0-9_-]+:[a-z0-9._=+-]*$ ]] || die "levers.sh: bad lever $1"
	   args+=("$1"); shift ;;
	esac
done
for f in rswap.ko tools/rswap-server/target/release/rswap-server; do
	[ -e "$RSWAP_TOP/$f" ] || die "$f is not built (make; make server)"
done
[ -n "$out" ] || out=$RSWAP_TOP/results/levers-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out/client"
out=$(cd "$out" && pwd)
gcc -O2 -Wall -Wextra -o "$out/client/swapload" "$RSWAP_TOP/tests/bench/swapload.c" \
	|| die "building tests/bench/swapload.c failed"
log "booting two guests; results in $out"
grc=0
RSWAP_QUIET=1 bash "$RSWAP_TOP/qemu/run-pair.sh" --out "$out" --timeout 3000 --grace 30 \
	tests/bench/server.sh tests/bench/levers.sh "${args[@]}" > "$out/run.log" 2>&1 || grc=$?
[ -f "$out/client/levers/summary.txt" ] || { tail -20 "$out/run.log" >&2; die "no summary (guest exit $grc)"; }
cat "$out/client/levers/summary.txt"
[ $grc = 0 ] || { log "the client guest exited $grc (see $out/client/serial.log)"; exit 1; }
