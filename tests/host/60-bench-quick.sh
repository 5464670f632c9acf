#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The benchmark harness's smoke test: `scripts/bench.sh --quick` must produce every figure
# (it asserts the harness works, not how fast anything is). Prints KTAP for check.sh.
#   tests/host/60-bench-quick.sh [--out DIR]
. "$(dirname "$0")/../../scripts/common.sh"
. "$RSWAP_TOP/tests/lib/ktap.sh"
out=$RSWAP_TOP/results/bench-quick
[ "${1:-}" != --out ] || out=$2
rm -rf "$out"; mkdir -p "$out"

# Runs the benchmark: the tests after check what it wrote ($out/results.json, $out.table).
# bench.sh's progress (each step's time) goes to OUT/progress.log: check.sh keeps this
# suite's own output in OUT.log.
t_baselines() {
	if bash "$RSWAP_TOP/scripts/bench.sh" --quick --out "$out" > "$out.table" 2> "$out/progress.log"; then
		ktap_pass
	else
		ktap_fail "$(tail -20 "$out/progress.log")"
	fi
}
ktap_test "bench --quick: every baseline figure measured (in-kernel RDMA, perftest, nvme-rdma, local RAM disk)" t_baselines

t_rswap_row() {
	if python3 - "$out/results.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
r = d["backends"]["rswap"]
ok = r["status"] == "ok" and all(r["fio"][j]["iops"] > 0 and r["fio"][j]["errors"] == 0
                                 for j in ("rr_qd1", "rw_qd1"))
sys.exit(0 if ok else 1)
PY
	then
		ktap_pass
	else
		ktap_fail "$(head -5 "$out.table")"
	fi
}
ktap_test "bench --quick: the rswap row is filled and the JSON has the raw figures" t_rswap_row

t_json_figures() {
	if python3 - "$out/results.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
k = d["raw_kernel"]
qd = d["env"]["kbench_qd"]
ok = all(k[p][f] > 0 for p in ("read_qd1", "write_qd1")
         for f in ("ops", "lat_mean_ns", "lat_p50_ns", "lat_p99_ns", "wc_mean_ns"))
ok = ok and all(k["%s_qd%d" % (op, qd)]["ops_per_s"] > 0 for op in ("read", "write"))
# The three targets (four ratios) are computed, each with its goal and verdict, and the
# fio ones again for polled I/O (rswap-poll; no ratio when it is n/a, see the polled I/O test).
t = {x["key"]: x for x in d["targets"]}
poll = ("poll_qd1_read_latency", "poll_qd32_read_iops_vs_kernel", "poll_qd32_read_iops_vs_nvme")
redundant = {"ec42_swap_wall_time_vs_md1", "ec42_remote_memory_vs_md1", "ec42_qd32_read_iops_vs_rswap"}
ok = ok and set(t) == {"qd1_read_latency", "qd32_read_iops_vs_kernel", "qd32_read_iops_vs_nvme",
                       "swap_wall_time", *poll, *redundant}
ok = ok and all(x["goal"] > 0 and x["kind"] in ("max", "min") for x in t.values())
ok = ok and t["qd1_read_latency"]["ratio"] > 0 and t["qd32_read_iops_vs_kernel"]["ratio"] > 0
if d["backends"]["rswap-poll"]["status"] == "ok":
    ok = ok and all(t[k]["ratio"] > 0 for k in poll)
# Every backend's swap workload ran as often as planned, but for the fio-only ones
# (rswap-uring, rswap-poll), which have none, and those --quick leaves it out of (rswap-4+2).
runs = d["env"]["swap_runs"]
fio_only = ("rswap-uring", "rswap-poll")
ok = ok and runs >= 1 and all(len(b["swap"]["runs"]) == runs for n, b in d["backends"].items()
                              if b["status"] == "ok" and n not in fio_only
                              and "swap" not in b.get("quick_skipped", []))
ok = ok and not any("swap" in d["backends"][n] for n in fio_only)
sys.exit(0 if ok else 1)
PY
	then
		ktap_pass
	else
		ktap_fail "$(grep -i 'in-kernel\|target' "$out.table" | head -8)"
	fi
}
ktap_test "bench --quick: in-kernel RDMA figures, the target ratios and every swap run are in the JSON" t_json_figures

t_rounds() {
	if o4=$(python3 - "$out/results.json" 2>&1 <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
n = d["env"]["repeats"]
bad = [] if n >= 2 else ["env.repeats is %s" % n]

def within(what, fig, k, n=n):
    """fig (a job or phase) has n repeats and its figure k is their median, within min..max."""
    runs = [r[k] for r in fig.get("runs", [])]
    if len(runs) != n or fig.get("repeats") != n:
        bad.append("%s: %d repeats, not %d" % (what, len(runs), n))
    elif not (min(runs) <= fig[k] <= max(runs) and fig["range"][k] == [min(runs), max(runs)]
              and abs(fig[k] - statistics.median(runs)) <= 1e-9 * abs(fig[k]) + 1e-9):
        bad.append("%s %s: %s is not the median of %s" % (what, k, fig[k], runs))

rounds = {}
for name, b in d["backends"].items():
    if b["status"] != "ok" or "fio" not in b:
        continue
    # --quick runs some backends' fio jobs in the first round only (QUICK_SKIP "later").
    want = 1 if "later" in b.get("quick_skipped", []) else n
    for job, f in b["fio"].items():
        for k in ("iops", "lat_mean_us"):
            within("%s fio %s" % (name, job), f or {}, k, want)
        for r in (f or {}).get("runs", []):
            rounds.setdefault(r["repeat"], []).append(r["timestamp"])
qd = d["env"]["kbench_qd"]
for p in ("read_qd1", "write_qd1", "read_qd%d" % qd, "write_qd%d" % qd):
    within("in-kernel RDMA " + p, d["raw_kernel"].get(p) or {}, "ops_per_s")
# The rounds interleave the backends: every job of round R ended before any of round R+1.
if sorted(rounds) != list(range(1, n + 1)):
    bad.append("fio rounds %s" % sorted(rounds))
for r in range(1, n):
    if r + 1 in rounds and max(rounds[r]) > min(rounds[r + 1]):
        bad.append("round %d ran after round %d began" % (r, r + 1))
# The table shows the medians, and each target's ratio (of those the JSON test asks for, and any
# other the run has) lies between its extreme pairings.
row = {x["metric"]: x for x in d["table"]}["4K rand read QD1, mean latency (us)"]
if row["values"]["rswap"] != d["backends"]["rswap"]["fio"]["rr_qd1"]["lat_mean_us"]:
    bad.append("the table's rswap QD1 latency is not the fio median")
for t in d["targets"]:
    if t["ratio"] is not None and not t.get("ratio_min", 0) <= t["ratio"] <= t.get("ratio_max", 0):
        bad.append("target %s: %s outside %s..%s" % (t["key"], t["ratio"], t.get("ratio_min"), t.get("ratio_max")))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
	); then
		ktap_pass
	else
		ktap_fail "$(tail -20 <<<"$o4")"
	fi
}
ktap_test "bench --quick: every fio job and in-kernel phase ran in each interleaved round; the tables show the medians" t_rounds

# Polled I/O: rswap-uring (rswap's target, fio on io_uring) and rswap-poll (poll queues,
# one per client vCPU, fio on io_uring --hipri) ran every fio job with that engine, and
# rswap-poll's requests reached its poll queues. rswap-poll may be n/a only because the
# rswap.ko under test has no poll_queues attribute.
t_polled() {
	if o5=$(python3 - "$out/results.json" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
bad, notes = [], []

def fio_ok(name, engine):
    b = d["backends"][name]
    if b["status"] != "ok":
        bad.append("%s: %s %s" % (name, b["status"], b.get("reason") or b.get("problem")))
        return None
    for j, f in b["fio"].items():
        if not f or not all(r["iops"] > 0 for r in f["runs"]) or f["errors"]:
            bad.append("%s: fio %s has no numbers or errors" % (name, j))
    if b.get("fio_engine") != engine:
        bad.append("%s: fio engine %s, not %s" % (name, b.get("fio_engine"), engine))
    q = b.get("queues") or {}
    notes.append("%s: fio %s; %s queues + %s poll queues, io_poll %s; requests: %s on poll queues, "
                 "%s on the others" % (name, b.get("fio_engine"), q.get("queues"), q.get("poll_queues"),
                                       q.get("io_poll"), q.get("poll_requests"), q.get("other_requests")))
    return q

q = fio_ok("rswap-uring", "io_uring")
if q is not None and q.get("poll_queues") != 0:
    bad.append("rswap-uring: poll_queues %s" % q.get("poll_queues"))
p = d["backends"]["rswap-poll"]
if p["status"] == "n/a" and "has no poll_queues attribute" in p.get("reason", ""):
    notes.append("rswap-poll n/a: %s" % p["reason"])
else:
    q = fio_ok("rswap-poll", "io_uring hipri")
    if q is not None and not (q.get("poll_queues") == d["env"]["vcpus"]
                              and set(q.get("io_poll", [])) == {1} and q.get("poll_requests", 0) > 0):
        bad.append("rswap-poll: poll queues %s, not one per vCPU (%s) with io_poll 1 and requests"
                   % (q, d["env"]["vcpus"]))
print("\n".join(bad or notes))
sys.exit(1 if bad else 0)
PY
	); then
		ktap_pass
		ktap_diag "$o5"
	else
		ktap_fail "$(tail -20 <<<"$o5")"
	fi
}
ktap_test "bench --quick: rswap-uring ran fio on io_uring, rswap-poll on io_uring --hipri over its poll queues (or n/a: no poll_queues)" t_polled

# Redundant swap: --quick runs rswap-4+2 (one disk over six rswap-servers) in the first
# round only, a fill and the QD32 read (QUICK_SKIP), and measures the remote memory its
# servers allocated: 1.5x rswap's per GiB of swap (each of six legs holds a quarter of
# the disk); rswap-md1's (two whole copies, a little more for md's metadata) is at least
# 2x. The redundant swap table and the ratios of the two targets --quick can measure are
# in the results.
t_redundant() {
	if o6=$(python3 - "$out/results.json" "$out.table" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
bad = []
b = d["backends"]
ec = b["rswap-4+2"]
if ec["status"] != "ok":
    bad.append("rswap-4+2: %s %s" % (ec["status"], ec.get("reason") or ec.get("problem")))
else:
    f = (ec.get("fio") or {}).get("rr_qd32") or {}
    fill = ec.get("fio_fill") or []
    if not f.get("runs") or not all(r["iops"] > 0 for r in f["runs"]) or f.get("errors"):
        bad.append("rswap-4+2: no QD32 read figure: %s" % f)
    if len(fill) != 1 or not fill[0] or fill[0]["errors"] or fill[0]["iops"] <= 0:
        bad.append("rswap-4+2: not one fill without errors: %s" % fill)
mem = {n: (b[n].get("remote_memory") or {}) for n in ("rswap", "rswap-4+2", "rswap-md1")}
per = {n: m.get("per_gib_swap") for n, m in mem.items()}
if mem["rswap-4+2"].get("servers") != 6 or mem["rswap"].get("servers") != 1:
    bad.append("servers: %s" % mem)
elif not (per["rswap"] and per["rswap-4+2"] and abs(per["rswap-4+2"] / per["rswap"] - 1.5) < 0.01):
    bad.append("rswap-4+2's remote memory per GiB of swap is not 1.5x rswap's: %s" % mem)
if b["rswap-md1"]["status"] == "ok" and not (per["rswap-md1"] and per["rswap-md1"] >= 2 * per["rswap"]):
    bad.append("rswap-md1's remote memory per GiB of swap is not 2x rswap's or more: %s" % mem)
t = {x["key"]: x for x in d["targets"]}
for k in ("ec42_remote_memory_vs_md1", "ec42_qd32_read_iops_vs_rswap"):
    if b["rswap-md1"]["status"] == "ok" or k != "ec42_remote_memory_vs_md1":
        if not (t[k]["ratio"] or 0) > 0:
            bad.append("target %s has no ratio" % k)
if "Redundant swap: " not in table or "| remote memory per GiB of swap (GiB) |" not in table:
    bad.append("no redundant swap table in table.md")
print("\n".join(bad) or "rswap-4+2: %s QD32 read IOPS; remote memory per GiB of swap: %s" % (
    ec["fio"]["rr_qd32"]["iops"], ", ".join("%s %.3f" % (n, v) for n, v in per.items() if v)))
sys.exit(1 if bad else 0)
PY
	); then
		ktap_pass
		ktap_diag "$o6"
	else
		ktap_fail "$(tail -20 <<<"$o6")"
	fi
}
ktap_test "bench --quick: rswap-4+2 measured (fill, QD32 read), its remote memory 1.5x rswap's per GiB of swap" t_redundant

ktap_run
