#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The benchmark harness's smoke test: `scripts/bench.sh --quick` must produce every figure
# (it asserts the harness works, not how fast anything is). Prints KTAP for check.sh.
#   tests/host/60-bench-quick.sh [--out DIR]
. "$(dirname "$0")/../../scripts/common.sh"
out=$RSWAP_TOP/results/bench-quick
[ "${1:-}" != --out ] || out=$2
rm -rf "$out"
echo "1..2"
if bash "$RSWAP_TOP/scripts/bench.sh" --quick --out "$out" > "$out.table" 2> "$out.log"; then
	echo "ok 1 bench --quick: every baseline figure measured (perftest, nvme-rdma, local RAM disk)"
else
	echo "not ok 1 bench --quick: every baseline figure measured"; tail -20 "$out.log" | sed 's/^/# /'
fi
if python3 - "$out/results.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
r = d["backends"]["rswap"]
ok = r["status"] == "ok" and all(r["fio"][j]["iops"] > 0 and r["fio"][j]["errors"] == 0
                                 for j in ("rr_qd1", "rw_qd1"))
sys.exit(0 if ok else 1)
PY
then
	echo "ok 2 bench --quick: the rswap row is filled and the JSON has the raw figures"
else
	echo "not ok 2 bench --quick: the rswap row is filled and the JSON has the raw figures"
	head -5 "$out.table" | sed 's/^/# /'
fi
