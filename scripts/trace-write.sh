#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Where a 4 KiB QD1 write's (and read's) time goes, beside the in-kernel RDMA benchmark's.
#
#   scripts/trace-write.sh [--out DIR] [--ms MS] [--params P=V+...] [--queue ATTR=V+...]
#                          [--swap-mb MIB] [--page-cluster N]
#     --out DIR     results folder (default results/trace-<timestamp>/)
#     --ms MS       how long each traced phase runs (default 3000)
#     --params P    module parameters for rswap.ko, joined by +
#     --queue Q     /sys/block/rswap0/queue settings for the fio phases and the swap
#                   workload, joined by +, e.g. scheduler=none+wbt_lat_usec=0
#     --swap-mb M   then the swap workload of M MiB (in a cgroup of half that) on
#                   /dev/rswap0, tracing where its task waits
#     --page-cluster N   vm.page-cluster for that workload
#
# Boots the two bench guests (qemu/run-pair.sh: tests/bench/server.sh and
# tests/bench/trace-write.sh), traces with ftrace on the client the in-kernel benchmark's
# QD1 WRITE and READ and fio's 4 KiB QD1 random writes and reads on /dev/rswap0, and prints
# the breakdown tests/bench/trace_report.py makes of the traces (also in DIR/breakdown.md).
# Needs `make` (rswap.ko, rswap_rdma_bench.ko) and rswap-server built.
# See Documentation/benchmarks.md ("Where a QD1 write's time goes").
. "$(dirname "$0")/common.sh"

out= args=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--ms|--params|--queue|--swap-mb|--page-cluster) args+=("$1" "$2"); shift 2 ;;
	-h|--help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "trace-write.sh: unknown option $1 (see --help)" ;;
	esac
done
for f in rswap.ko rswap_rdma_bench.ko tools/rswap-server/target/release/rswap-server; do
	[ -e "$RSWAP_TOP/$f" ] || die "$f is not built (make; make server)"
done
[ -n "$out" ] || out=$RSWAP_TOP/results/trace-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
out=$(cd "$out" && pwd)
mkdir -p "$out/client"
gcc -O2 -Wall -Wextra -o "$out/client/swapload" "$RSWAP_TOP/tests/bench/swapload.c" \
	|| die "building tests/bench/swapload.c failed"
log "booting two guests; results in $out"
grc=0
RSWAP_QUIET=1 bash "$RSWAP_TOP/qemu/run-pair.sh" --out "$out" --timeout 900 --grace 30 \
	tests/bench/server.sh tests/bench/trace-write.sh "${args[@]}" > "$out/run.log" 2>&1 || grc=$?
[ -d "$out/client/trace" ] || { tail -20 "$out/run.log" >&2; die "the client guest left no traces (exit $grc)"; }
python3 "$RSWAP_TOP/tests/bench/trace_report.py" "$out/client/trace" | tee "$out/breakdown.md"
[ $grc = 0 ] || { log "the client guest exited $grc (see $out/client/serial.log)"; exit 1; }
