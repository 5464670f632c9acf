#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Two guests joined by a private link: rswap-server in one, rswap in the other
# (tests/pair/*.sh). Prints the client's KTAP lines for scripts/check.sh, then the
# server guest's.
#   tests/host/50-two-guests.sh [--out DIR]
. "$(dirname "$0")/../../scripts/common.sh"
out=$RSWAP_TOP/results/two-guests
[ "${1:-}" != --out ] || out=$2
rm -rf "$out"; mkdir -p "$out"
gcc -O2 -o "$out/swapload" "$RSWAP_TOP/tests/bench/swapload.c"
mkdir -p "$out/client"; cp "$out/swapload" "$out/client/swapload"
rc=0
# The server guest ends on its own once it has seen the client's last region freed, a
# keep-alive plus a grace period (3 s; 20 s on the debug kernel) after the client guest
# powered off.
RSWAP_QUIET=1 bash "$RSWAP_TOP/qemu/run-pair.sh" --out "$out" --timeout 1500 --grace 120 \
	--kernel "${KERNEL:-stock}" tests/pair/server.sh tests/pair/client.sh || rc=$?
cat "$out/client/console.log" 2>/dev/null
# The server guest's result (its KTAP lines, after the client's).
sed -n '/^KTAP version/,$p' "$out/server/console.log" 2>/dev/null | grep -E '^(ok|not ok|#) ' || true
exit $rc
