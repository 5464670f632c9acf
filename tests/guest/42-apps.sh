#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The quick subset of `make bench-apps` (Documentation/benchmarks.md): one application,
# appqsort (a quicksort of 6 MiB of random keys, output checked), all-local and then on
# /dev/rswap0 at 100% and 50% of the peak memory it had all-local, each run in a cgroup
# with that memory.max, measured by the benchmark's own code (tests/bench/apps.sh app_run,
# the rswap set-up of tests/bench/backends.sh; the memory server runs in this guest). It
# asserts that every figure was measured and that the output is right, never how fast.
. "$RSWAP_TOP/tests/bench/lib.sh"
. "$BENCH/backends.sh"
. "$BENCH/apps.sh"

OUT=$RSWAP_OUT/42-apps
APPS_BIN=$RSWAP_OUT
QSORT_MIB=${RSWAP_APPS_QSORT_MIB:-6}
APPS_TIMEOUT=300
PEER=$RSWAP_GUEST_IP
# The control channel of the two-guest benchmark, here: run the memory server's step in
# this guest (tests/bench/server.sh starts rswap-server in the background).
ctl() { [ "$1" = run ] || return 0; shift; bash "$BENCH/server.sh" "$@"; }
mkdir -p "$OUT"
BK_DIR=$OUT BK_DEV=

cleanup() {
	swapoff -a 2>/dev/null
	rmdir "$APPS_CG" 2>/dev/null
	backend_rswap_teardown > /dev/null 2>&1
	true
}
trap cleanup EXIT

setup() {
	[ -x "$APPS_BIN/appqsort" ] || ktap_skip_rest "no appqsort at $APPS_BIN (scripts/check.sh builds it)"
	[ -f "$RSWAP_TOP/rswap.ko" ] || ktap_skip_rest "rswap.ko not built"
	rdma_up >/dev/null || ktap_skip_rest "$RDMA_DEV unavailable"
	dmesg_mark "42-apps"
	swapoff -a 2>/dev/null
}

# record FILE FIELD...: each FIELD (a Python expression over the record r and its app's
# line o) of FILE's record, one per line; fails when a figure is missing (None).
record() {
	local f=$1; shift
	python3 - "$f" "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
o = r.get("out") or {}
for e in sys.argv[2:]:
    try:
        v = eval(e, {}, {"r": r, "o": o})
    except (KeyError, TypeError):
        v = None
    print("%s=%s" % (e, v))
    if v is None or v is False:
        sys.exit(1)
PY
}
# The figures every run must have, and the check of the output.
FIGS=('r["wall_s"] > 0' 'o["time_s"] >= 0' 'o["sort_s"] >= 0' 'r["peak_kb"] > 0'
      'o["sorted"] == 1' 'o["checksum_ok"] == 1' 'r["oom_kill"] == 0' 'r["vmstat"]["pswpout"] >= 0')

t_local() {
	local why
	if why=$(app_run qsort "$OUT/local.json" max max) && why=$(record "$OUT/local.json" "${FIGS[@]}"); then
		PEAK=$(sed -n 's/.*"peak_kb": \([0-9]*\).*/\1/p' "$OUT/local.json")
		ktap_pass
		ktap_diag "all-local: $(cat "$OUT/local.json.out"); peak ${PEAK} KiB"
	else
		ktap_fail "$why $(cat "$OUT/local.json" "$OUT/local.json.err" 2>/dev/null)"
		ktap_skip_rest "no all-local run"
	fi
}
ktap_test "apps: appqsort ${QSORT_MIB} MiB all-local (no swap, no limit): sorted, checksum right; time and peak memory measured" t_local

t_rswap_setup() {
	DEV_MB=$((PEAK / 1024 + 32))
	if backend_rswap_setup; then
		ktap_pass
		ktap_diag "rswap: $BK_DEV, ${DEV_MB} MiB"
	else
		ktap_fail "$BK_REASON"
		ktap_skip_rest "no rswap disk"
	fi
}
ktap_test "apps: the benchmark's rswap backend set up (tests/bench/backends.sh, server in this guest)" t_rswap_setup

# The test before set up $BK_DEV; PEAK from the first test.
t_fraction() { # FRACTION
	local f=$1 rec=$OUT/rswap-f$1.json why max high figs=("${FIGS[@]}")
	read -r max high <<< "$(app_limits "$f" "$PEAK")"
	# Below the peak, pages must have gone to rswap and come back.
	[ "$f" -ge 100 ] || figs+=('r["vmstat"]["pswpout"] > 0' 'r["devices"]["rswap0"]["write_bytes"] > 0'
				    'r["devices"]["rswap0"]["read_bytes"] > 0' 'r["max_kb"] > 0')
	if why=$(swap_fresh "$BK_DEV" "$rec.mkswap") && why=$(app_run qsort "$rec" "$max" "$high" "$BK_DEV") \
		&& why=$(record "$rec" "${figs[@]}"); then
		ktap_pass
	else
		ktap_fail "$why $(cat "$rec" "$rec.err" 2>/dev/null)"
	fi
	ktap_diag "rswap at $f%: memory.max ${max} KiB: $(cat "$rec.out" 2>/dev/null)"
	ktap_diag "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("vmstat", r["vmstat"], "devices", r["devices"])' "$rec" 2>&1)"
	swapoff "$BK_DEV" 2>/dev/null
}
ktap_test "apps: appqsort on rswap at 100% of its peak: sorted, checksum right; every figure measured" t_fraction 100
ktap_test "apps: appqsort on rswap at 50% of its peak: sorted, checksum right; every figure measured, pages went to rswap and back" t_fraction 50

t_teardown() {
	backend_rswap_teardown
	if ! grep -q '^rswap ' /proc/modules && [ -s "$OUT/stats.txt" ]; then
		ktap_pass
		ktap_diag "rswap stats: $(head -1 "$OUT/stats.txt")"
	else
		ktap_fail "rswap still loaded or no stats saved"
	fi
}
ktap_test "apps: the rswap backend torn down (its stats kept)" t_teardown

t_dmesg() { ktap_check dmesg_clean; }
ktap_test "dmesg: no BUG/WARNING/Oops in the application runs" t_dmesg

ktap_run setup
