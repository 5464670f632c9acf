#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The data-path, poll queue, swap, recovery and erasure-coded disk suites again, over
# soft-iWARP (siw0) instead of soft-RoCE: an iWARP device, where rswap registers each RDMA
# READ's sink in a memory region (a disk over several servers reads its fragments into
# areas for it) and fences each WRITE with a READ, so those paths carry every suite's data.
# Debian's stock kernel does not build siw: on it this suite is skipped; `make check
# KERNEL=debug` runs it. Prints KTAP for scripts/check.sh, each line named "siw: SUITE: ...".
# RSWAP_SIW_SUITES="tests/guest/57-ec.sh" runs only those suites over soft-iWARP.
#   tests/host/40-siw.sh [--out DIR]
. "$(dirname "$0")/../../scripts/common.sh"
. "$RSWAP_TOP/tests/lib/host.sh"
out=$RSWAP_TOP/results/siw
[ "${1:-}" != --out ] || out=$2
suites=(tests/guest/10-module.sh tests/guest/30-datapath.sh tests/guest/33-poll.sh
	tests/guest/40-swap.sh tests/guest/45-recovery.sh tests/guest/57-ec.sh)
[ -z "${RSWAP_SIW_SUITES:-}" ] || read -ra suites <<<"$RSWAP_SIW_SUITES"

if [ "${KERNEL:-stock}" != debug ]; then
	echo "1..1"
	echo "ok 1 siw: the data-path, poll queue, swap and recovery suites over soft-iWARP # SKIP the stock kernel has no siw (make check KERNEL=debug runs them)"
	exit 0
fi

rm -rf "$out"; mkdir -p "$out"
gcc -O2 -Wall -o "$out/swapload" "$RSWAP_TOP/tests/bench/swapload.c"
rc=0
RSWAP_RDMA=siw RSWAP_QUIET=1 bash "$RSWAP_TOP/qemu/run.sh" --kernel debug --out "$out" \
	--timeout 7200 tests/guest/run-all.sh "${suites[@]}" || rc=$?
console=$out/console.log
[ -f "$console" ] || : > "$console"

# Every suite's KTAP lines, renumbered into one plan, then one line per suite that did not
# finish (the guest died or timed out inside it).
lines=() n=0
for s in "${suites[@]}"; do
	body=$(suite_body "$console" "$s")
	while IFS= read -r line; do
		case $line in
		"ok "*|"not ok "*)
			n=$((n + 1))
			status=${line%% [0-9]*}
			rest=$(sed -E 's/^(not )?ok [0-9]+ //' <<<"$line")
			lines+=("$status $n siw: $s: $rest") ;;
		esac
	done <<<"$body"
	if ! grep -q "^# rswap-suite-end: $s " <<<"$body"; then
		n=$((n + 1))
		lines+=("not ok $n siw: $s: finished (the guest died or timed out inside it; see $out/serial.log)")
	fi
done
# As scripts/check.sh checks the main boot's.
n=$((n + 1))
if bad=$(kernel_log_bad "$out/serial.log"); then
	lines+=("not ok $n siw: kernel log of the whole boot is free of BUG/WARNING/Oops/KASAN/lockdep")
	lines+=("$(head -20 <<<"$bad" | sed 's/^/#   /')")
else
	lines+=("ok $n siw: kernel log of the whole boot is free of BUG/WARNING/Oops/KASAN/lockdep")
fi
echo "1..$n"
printf '%s\n' "${lines[@]}"
[ $rc = 0 ] || echo "# guest exit code $rc"
