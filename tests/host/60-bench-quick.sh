#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The benchmark harness's smoke test: `scripts/bench.sh --quick` must produce every figure
# (it asserts the harness works, not how fast anything is). Prints KTAP for check.sh.
#   tests/host/60-bench-quick.sh [--out DIR]
. "$(dirname "$0")/../../scripts/common.sh"
out=$RSWAP_TOP/results/bench-quick
[ "${1:-}" != --out ] || out=$2
rm -rf "$out"
echo "1..3"
if bash "$RSWAP_TOP/scripts/bench.sh" --quick --out "$out" > "$out.table" 2> "$out.log"; then
	echo "ok 1 bench --quick: every baseline figure measured (in-kernel RDMA, perftest, nvme-rdma, local RAM disk)"
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
if python3 - "$out/results.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
k = d["raw_kernel"]
qd = d["env"]["kbench_qd"]
ok = all(k[p][f] > 0 for p in ("read_qd1", "write_qd1")
         for f in ("ops", "lat_mean_ns", "lat_p50_ns", "lat_p99_ns", "wc_mean_ns"))
ok = ok and all(k["%s_qd%d" % (op, qd)]["ops_per_s"] > 0 for op in ("read", "write"))
# The three targets (four ratios) are computed, each with its goal and verdict.
t = {x["key"]: x for x in d["targets"]}
ok = ok and len(t) == 4 and all(x["goal"] > 0 and x["kind"] in ("max", "min") for x in t.values())
ok = ok and t["qd1_read_latency"]["ratio"] > 0 and t["qd32_read_iops_vs_kernel"]["ratio"] > 0
# Every backend's swap workload ran as often as planned.
runs = d["env"]["swap_runs"]
ok = ok and runs >= 2 and all(len(b["swap"]["runs"]) == runs for b in d["backends"].values()
                              if b["status"] == "ok")
sys.exit(0 if ok else 1)
PY
then
	echo "ok 3 bench --quick: in-kernel RDMA figures, the target ratios and every swap run are in the JSON"
else
	echo "not ok 3 bench --quick: in-kernel RDMA figures, the target ratios and every swap run are in the JSON"
	grep -i 'in-kernel\|target' "$out.table" | head -8 | sed 's/^/# /'
fi
