#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn `make bench-apps`'s raw guest output into results.json, table.md and one figure
per application (apps-APP.png).

  apps_report.py --raw DIR --host-env FILE --out DIR [--plot] [--check]

--raw       the client guest's bench-apps/ folder (tests/bench/apps-client.sh): env.json,
            status.tsv, local/APP-R.json and <backend>/APP-fFRACTION-R.json, each the
            record of one run (tests/bench/apps.sh app_run)
--host-env  JSON with what only the host knows (accelerator, git revision, date, wall time)
--plot      draw apps-APP.png: slowdown (y) against the local-memory fraction (x), one
            line per backend (needs matplotlib; skipped with a message without it)
--check     exit 1 unless every figure was measured and every application's output was
            right, in every run of every backend that must produce them (the rswap family
            may be n/a while rswap.ko is not built). It never judges a figure's value.

The slowdown of a run is its completion time over the median all-local one of the same
application (kv: the time of its Zipfian requests; qsort and stream: fill and sort). Each
table cell is the median of the runs with the lowest and highest in brackets. The
issue's targets are ratios of this run, reported and never asserted.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fmt, fmt_ratio, median, read_env, read_status  # noqa: E402

# Backend labels (tests/bench/backends.sh), in the order of the tables and of the plot's
# colours.
BACKENDS = ["rswap", "rswap-enc", "rswap-md1", "zswap-rswap", "nvme-rdma", "zram-lz4",
            "zram-zstd", "virtio-disk"]
# May be n/a without failing --check (tests/bench/backends.sh OPTIONAL).
OPTIONAL = ["rswap", "rswap-enc", "rswap-md1", "zswap-rswap"]
# Whose device traffic crosses the link to the memory server.
REMOTE = ["rswap", "rswap-enc", "rswap-md1", "zswap-rswap", "nvme-rdma"]
APPS = {"kv": "Redis, Zipfian GET/SET (time of the requests)",
        "qsort": "quicksort (fill + sort)",
        "stream": "external-sort pattern, sequential merge passes (fill + runs + merges)"}
COLORS = ["#d62728", "#ff7f0e", "#8c564b", "#e377c2", "#1f77b4", "#2ca02c", "#17becf",
          "#9467bd"]


def app_ok(app, o):
    """Whether the application's own line says its output was right."""
    if not o:
        return False
    if app == "kv":
        return o.get("bad") == 0 and o.get("checked", 0) > 0
    return o.get("sorted") == 1 and o.get("checksum_ok") == 1


def read_runs(d, stem):
    """The records d/STEM-R.json, in order of R."""
    runs = []
    try:
        names = os.listdir(d)
    except OSError:
        return runs
    for n in names:
        if n.startswith(stem + "-") and n.endswith(".json"):
            r = n[len(stem) + 1:-5]
            if r.isdigit():
                try:
                    rec = json.load(open(os.path.join(d, n)))
                except (OSError, ValueError) as e:
                    rec = {"rc": None, "error": str(e)}
                rec["repeat"] = int(r)
                runs.append(rec)
    return sorted(runs, key=lambda x: x["repeat"])


def dev_bytes(rec, key):
    devs = rec.get("devices") or {}
    return sum(v.get(key, 0) for v in devs.values()) if devs else None


def run_figures(app, rec):
    """The figures of one run record: time_s, and for kv ops_per_s and p99_us; the device
    traffic; ok (exit 0 and the right output)."""
    o = rec.get("out") or {}
    f = {"repeat": rec.get("repeat"), "rc": rec.get("rc"), "ok": rec.get("rc") == 0 and app_ok(app, o),
         "time_s": o.get("time_s"), "wall_s": rec.get("wall_s"), "peak_kb": rec.get("peak_kb"),
         "oom_kill": rec.get("oom_kill"), "dev_read_bytes": dev_bytes(rec, "read_bytes"),
         "dev_write_bytes": dev_bytes(rec, "write_bytes")}
    if app == "kv":
        f.update({k: o.get(k) for k in ("ops_per_s", "p99_us", "p50_us", "fill_s", "verify_s")})
    vm = rec.get("vmstat") or {}
    f.update({k: vm.get(k) for k in ("pswpin", "pswpout", "zswpout", "zswpin", "zswpwb")})
    zram = [v["zram_mem_used_max"] for v in (rec.get("devices") or {}).values()
            if "zram_mem_used_max" in v]
    if zram:
        f["zram_mem_used_max"] = sum(zram)
    return f


def summary(runs, keys, base=None):
    """Medians and [min, max] of keys over the runs that ended well; slowdown against base
    (the all-local median time)."""
    good = [r for r in runs if r["ok"]]
    out = {"runs": runs, "repeats": len(runs), "ok": bool(runs) and len(good) == len(runs)}
    for k in keys:
        vs = [r[k] for r in good if isinstance(r.get(k), (int, float))]
        out[k] = median(vs) if vs else None
        out[k + "_range"] = [min(vs), max(vs)] if vs else None
    if base and out.get("time_s") is not None:
        out["slowdown"] = out["time_s"] / base
        out["slowdown_range"] = [v / base for v in out["time_s_range"]]
    return out


KEYS = ["time_s", "wall_s", "peak_kb", "dev_read_bytes", "dev_write_bytes", "ops_per_s", "p99_us",
        "pswpin", "pswpout", "zswpout", "zswpwb", "zram_mem_used_max"]


def load(raw, host_env):
    env = read_env(raw, host_env)
    status = read_status(raw)
    fractions = env.get("fractions", [100, 75, 50, 25])
    res = {"env": env, "backends": {}, "apps": {}}
    only = env.get("selected")
    for b in BACKENDS:
        if only and b not in only and b.replace("-", "_") not in only and not (
                b == "rswap-md1" and "rswap_md" in only):
            st = {"status": "n/a", "device": None, "note": "not selected (RSWAP_BENCH_BACKENDS)"}
        else:
            st = status.get(b, {"status": "n/a", "device": None,
                                "note": "the run ended before this backend was measured"})
        res["backends"][b] = {"status": st["status"], "device": st["device"],
                              ("reason" if st["status"] == "n/a" else
                               "description" if st["status"] == "ok" else "problem"): st["note"]}
    for app in env.get("apps", list(APPS)):
        local = [run_figures(app, r) for r in read_runs(os.path.join(raw, "local"), app)]
        loc = summary(local, KEYS)
        a = {"what": APPS.get(app, app), "local": loc,
             "peak_kb": max([r["peak_kb"] for r in local if r.get("peak_kb")] or [0]) or None,
             "backends": {}}
        for b in BACKENDS:
            if res["backends"][b]["status"] == "n/a":
                continue
            a["backends"][b] = {
                str(f): summary([run_figures(app, r) for r in
                                 read_runs(os.path.join(raw, b), "%s-f%s" % (app, f))],
                                KEYS, loc.get("time_s"))
                for f in fractions}
        res["apps"][app] = a
    return res


def cell(c, key="slowdown"):
    if not c or c.get(key) is None:
        return "fail" if c and c["runs"] else "n/a"
    v, rng = c[key], c.get(key + "_range")
    s = fmt_ratio(v) if key == "slowdown" else fmt(v)
    if rng and c["repeats"] > 1 and fmt(rng[0]) != fmt(rng[1]):
        s += " (%s-%s)" % (fmt(rng[0]), fmt(rng[1]))
    return s + ("" if c["ok"] else " !")


def mib(v):
    return None if v is None else v / 2**20


def targets(res):
    """The issue's targets, as ratios of this run at 50% local memory."""
    out = []

    def at(app, b, key="slowdown"):
        return (res["apps"].get(app, {}).get("backends", {}).get(b, {}).get("50") or {}).get(key)

    def add(key, what, num, den, goal, kind):
        r = num / den if num is not None and den else None
        met = None if r is None else (r <= goal if kind == "max" else r >= goal)
        out.append({"key": key, "what": what, "ratio": r, "goal": goal, "kind": kind, "met": met})

    for app in res["apps"]:
        add("%s_rswap_vs_nvme" % app, "%s at 50%%: rswap slowdown / nvme-rdma slowdown" % app,
            at(app, "rswap"), at(app, "nvme-rdma"), 0.6, "max")
        add("%s_enc_vs_rswap" % app, "%s at 50%%: rswap-enc slowdown / rswap slowdown" % app,
            at(app, "rswap-enc"), at(app, "rswap"), 1.15, "max")
    if "kv" in res["apps"]:
        add("kv_zswap_write_cut", "kv at 50%: bytes written to rswap, rswap / zswap-rswap",
            at("kv", "rswap", "dev_write_bytes"), at("kv", "zswap-rswap", "dev_write_bytes"),
            2.0, "min")
    return out


def markdown(res):
    env = res["env"]
    fr = [str(f) for f in env.get("fractions", [])]
    bs = [b for b in BACKENDS if res["backends"][b]["status"] != "n/a"]
    lines = ["rswap bench-apps, %s, %s: kernel %s, %s, client %s vCPU, git %s, %s mode, %s repeat(s), "
             "wall time %s s" % (env.get("date", "?"), env.get("mode_guests", "two-guests"),
                                 env.get("kernel", "?"), env.get("accelerator", "?").upper(),
                                 env.get("vcpus", "?"), env.get("git_revision", "?"),
                                 env.get("mode", "?"), env.get("repeats", "?"), env.get("wall_s", "?")),
             ""]
    lines.append("Sizes: kv %s keys x %s B, %s requests; qsort %s MiB; stream %s MiB. Peak memory "
                 "all-local: %s." % (env.get("kv_keys"), env.get("kv_value_bytes"), env.get("kv_ops"),
                                     env.get("qsort_mib"), env.get("stream_mib"),
                                     ", ".join("%s %s MiB" % (a, fmt(mib((x["peak_kb"] or 0) * 1024)))
                                               for a, x in res["apps"].items())))
    lines += ["", "Slowdown against all-local (median completion time / all-local median; "
              "min-max of the runs in brackets; ! marks a cell with a failed run):", ""]
    lines.append("| app | local memory | all-local (s) | " + " | ".join(bs) + " |")
    lines.append("|---|--:|--:|" + "--:|" * len(bs))
    for app, a in res["apps"].items():
        for f in fr:
            lines.append("| %s | %s%% | %s | %s |" % (
                app, f, fmt(a["local"].get("time_s")),
                " | ".join(cell(a["backends"].get(b, {}).get(f)) for b in bs)))
    lines += ["", "Device traffic per run (MiB written / read; for the remote backends this is what "
              "crossed the link; zram: its peak memory use in brackets):", ""]
    lines.append("| app | local memory | " + " | ".join(bs) + " |")
    lines.append("|---|--:|" + "--:|" * len(bs))
    for app, a in res["apps"].items():
        for f in fr:
            cs = []
            for b in bs:
                c = a["backends"].get(b, {}).get(f) or {}
                s = "%s / %s" % (fmt(mib(c.get("dev_write_bytes"))), fmt(mib(c.get("dev_read_bytes"))))
                if c.get("zram_mem_used_max") is not None:
                    s += " (%s)" % fmt(mib(c["zram_mem_used_max"]))
                cs.append(s)
            lines.append("| %s | %s%% | %s |" % (app, f, " | ".join(cs)))
    if "kv" in res["apps"]:
        a = res["apps"]["kv"]
        lines += ["", "kv (Redis): requests/s and p99 latency (us); all-local %s ops/s, p99 %s us:" % (
            fmt(a["local"].get("ops_per_s")), fmt(a["local"].get("p99_us"))), ""]
        lines.append("| local memory | " + " | ".join(bs) + " |")
        lines.append("|--:|" + "--:|" * len(bs))
        for f in fr:
            lines.append("| %s%% | %s |" % (f, " | ".join(
                "%s / %s" % (cell(a["backends"].get(b, {}).get(f), "ops_per_s"),
                             cell(a["backends"].get(b, {}).get(f), "p99_us")) for b in bs)))
    lines += ["", "Targets at 50% local memory (reported, not asserted):", ""]
    lines.append("| target | ratio | goal | |")
    lines.append("|---|--:|--:|---|")
    for t in res["targets"]:
        lines.append("| %s | %s | %s %.2f | %s |" % (
            t["what"], fmt_ratio(t["ratio"]), "<=" if t["kind"] == "max" else ">=", t["goal"],
            "n/a" if t["met"] is None else "met" if t["met"] else "MISS"))
    lines.append("")
    for b in BACKENDS:
        e = res["backends"][b]
        lines.append("- %s: %s%s" % (b, e["status"], ": " + (e.get("reason") or e.get("problem") or
                                                              e.get("description") or "")))
    return "\n".join(lines) + "\n"


def plot(res, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("apps_report: no plot (%s)" % e, file=sys.stderr)
        return []
    made = []
    env = res["env"]
    for app, a in res["apps"].items():
        fig, ax = plt.subplots(figsize=(8, 5))
        fr = sorted(env.get("fractions", []), reverse=True)
        ax.axhline(1.0, color="#444444", linestyle="--", linewidth=1, label="all-local")
        for i, b in enumerate(BACKENDS):
            cs = a["backends"].get(b)
            if not cs:
                continue
            xs, ys, lo, hi = [], [], [], []
            for f in fr:
                c = cs.get(str(f)) or {}
                if c.get("slowdown") is None:
                    continue
                xs.append(f)
                ys.append(c["slowdown"])
                lo.append(c["slowdown"] - c["slowdown_range"][0])
                hi.append(c["slowdown_range"][1] - c["slowdown"])
            if xs:
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, color=COLORS[i], label=b)
        ax.set_xlim(max(fr or [100]) + 5, min(fr or [25]) - 5)  # local memory shrinks to the right
        ax.set_xticks(fr)
        ax.set_xticklabels(["%d%%" % f for f in fr])
        ax.set_xlabel("local memory (% of the all-local peak, cgroup memory.max)")
        ax.set_ylabel("slowdown against all-local (x, log scale)")
        ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
        ax.set_title("%s: %s\n%s, %s, git %s" % (app, a["what"], env.get("date", ""),
                                                 env.get("accelerator", "").upper(),
                                                 env.get("git_revision", "")), fontsize=10)
        ax.legend(fontsize=8, loc="upper left")
        fig.tight_layout()
        name = "apps-%s.png" % app
        fig.savefig(os.path.join(out, name), dpi=100)
        plt.close(fig)
        made.append(name)
    return made


def check(res):
    """Every figure measured and every output right (never a value judged)."""
    problems = []
    env = res["env"]
    for b, e in res["backends"].items():
        if e["status"] == "partial" or (e["status"] == "n/a" and b not in OPTIONAL
                                        and "not selected" not in e.get("reason", "")):
            problems.append("%s: %s %s" % (b, e["status"], e.get("reason") or e.get("problem")))
    for app, a in res["apps"].items():
        loc = a["local"]
        if not loc["ok"] or loc["repeats"] != env.get("repeats") or not a["peak_kb"]:
            problems.append("%s all-local: %d of %s runs ended well, peak %s" % (
                app, sum(r["ok"] for r in loc["runs"]), env.get("repeats"), a["peak_kb"]))
        for b, cs in a["backends"].items():
            if res["backends"][b]["status"] != "ok":
                continue
            for f, c in cs.items():
                bad = [r for r in c["runs"] if not r["ok"] or r["time_s"] is None
                       or r["peak_kb"] is None or r["dev_write_bytes"] is None]
                if c["repeats"] != env.get("repeats") or bad:
                    problems.append("%s on %s at %s%%: %d runs of %s, %d without every figure or "
                                    "with a wrong output" % (app, b, f, c["repeats"],
                                                             env.get("repeats"), len(bad)))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--raw", required=True)
    ap.add_argument("--host-env", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    host_env = json.load(open(a.host_env))
    host_env["mode_guests"] = host_env.pop("mode", None)
    res = load(a.raw, host_env)
    res["targets"] = targets(res)
    md = markdown(res)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(md)
    if a.plot:
        res["plots"] = plot(res, a.out)
    problems = check(res)
    res["problems"] = problems
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    sys.stdout.write(md)
    if problems:
        print("\nproblems:\n" + "\n".join("- " + p for p in problems))
    return 1 if a.check and problems else 0


if __name__ == "__main__":
    sys.exit(main())
