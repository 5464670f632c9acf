#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the benchmark's raw guest output into results.json, table.md and bench.png.

  report.py --raw DIR --host-env FILE --out DIR [--plot] [--check]

--raw       the client guest's bench/ folder (perftest/*.txt, kbench/result-N.txt,
            <backend>/fio-JOB-N.json, <backend>/swap-N.json, status.tsv, env.json; N is
            the repeat), written by tests/bench/client.sh. A folder of a run before
            repeats (kbench/result.txt, fio-JOB.json) reads as one repeat.
--host-env  JSON with what only the host knows (accelerator, vCPUs, git revision, date)
--plot      also draw bench.png (needs matplotlib; skipped with a message without it)
--check     exit 1 unless every baseline produced its numbers, in every repeat (the
            --quick smoke test); rswap and rswap-md1 may be n/a. It checks that numbers
            exist, never what they are.
The markdown tables go to stdout and to OUT/table.md: the main one (the raw transport,
measured from kernel verbs by samples/rdma_bench and by perftest from user space, and the
block devices under fio and the swap workload), the targets (ratios of this run, each
with pass or miss; the fio ones again for rswap-poll, polled I/O), "synchronous swap-in"
(the swap workload on rswap-sync, rswap with sync_swapin=1, against rswap), "mirrored
swap" (the swap workload on rswap-md1, md RAID1 over two rswap disks, against rswap) and
"redundant swap" (rswap-md1, rswap-4+2 and rswap-2+1, rswap disks over k + r servers,
against each other and rswap: remote memory per GiB of swap, the QD1 and QD32 fio jobs
and the swap workload, with the issue's three targets of rswap-4+2).
Every figure the tables show is the median of its repeats (the fio jobs and the in-kernel
benchmark run env "repeats" times, the swap workload env "swap_runs" times), with the
lowest and highest repeat in brackets; ratios and targets are ratios of medians.
results.json keeps every repeat's figures ("runs").
A run limited to some backends (RSWAP_BENCH_BACKENDS, env "selected") leaves the others
out of the tables and of --check, as does a run of a harness that did not have a backend
yet (env "backends", the labels it had; see in_harness).
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

# (New ones go last: a backend's colour in the plot is its place here.)
BACKENDS = ["rswap", "rswap-enc", "rswap-enc-wq", "nvme-rdma", "local", "rswap-md1", "rswap-sync",
            "rswap-uring", "rswap-poll", "rswap-4+2", "rswap-2+1", "rswap-4+2-d0"]
# The main table's backend columns; the others have a table of their own.
MAIN = ["rswap", "rswap-uring", "rswap-poll", "rswap-enc", "rswap-enc-wq", "nvme-rdma", "local"]
# Backends that run the swap workload only (tests/bench/backends.sh SWAP_ONLY).
SWAP_ONLY = ["rswap-sync"]
# Backends that run the fio jobs only, no swap workload (tests/bench/backends.sh FIO_ONLY).
FIO_ONLY = ["rswap-uring", "rswap-poll", "rswap-4+2-d0"]
# Backends that do not go over RDMA (no packets to count).
LOCAL = ["local"]
# Backends that may be n/a without failing --check (tests/bench/backends.sh OPTIONAL).
OPTIONAL = ["rswap", "rswap-uring", "rswap-poll", "rswap-enc", "rswap-enc-wq", "rswap-md1",
            "rswap-sync", "rswap-4+2", "rswap-2+1", "rswap-4+2-d0"]
# The ids of backends whose label is not their id with "-" for "_" (RSWAP_BENCH_BACKENDS
# takes either).
IDS = {"rswap-md1": "rswap_md", "rswap-4+2": "rswap_ec42", "rswap-2+1": "rswap_ec21",
       "rswap-4+2-d0": "rswap_ec42_d0"}
# Backends whose remote memory is measured (tests/bench/backends.sh REMOTE_MEM).
REMOTE_MEM = ["rswap", "rswap-md1", "rswap-4+2", "rswap-2+1"]
# The redundant swap table: swap over several servers (md RAID1 over two rswap disks, one
# rswap disk over 4+2 and over 2+1 servers, and 4+2 with extra_reads=0, fio only) and one
# rswap disk, with these ratios.
REDUNDANT = ["rswap", "rswap-md1", "rswap-4+2", "rswap-2+1", "rswap-4+2-d0"]
REDUNDANT_RATIOS = [("rswap-4+2", "rswap-md1"), ("rswap-2+1", "rswap-md1"), ("rswap-4+2", "rswap"),
                    ("rswap-2+1", "rswap"), ("rswap-4+2-d0", "rswap")]
MEM_ROW = "remote memory per GiB of swap (GiB)"
# RDMA packets (soft-RoCE's, sent and received by the client) per request of the QD32
# read job and per page the swap workload moved (pswpin + pswpout): under soft-RoCE each
# packet costs CPU time on both guests, so these explain much of the rates.
PACKETS_ROW = "4K rand read QD32x2, RDMA packets per request"
SWAP_PACKETS_ROW = "swap workload, RDMA packets per page swapped"
# The fio engine of a backend's jobs (fio_engine), when not libaio: rswap-uring is rswap
# under io_uring, rswap-poll under io_uring with --hipri, its requests on poll queues.
ENGINE = {"rswap-uring": "io_uring", "rswap-poll": "io_uring hipri"}
# Encrypted rswap (encrypt=1): its cost is its ratio to rswap in the same run.
ENCRYPTED = ["rswap-enc", "rswap-enc-wq"]
# Backends added after client.sh began to list its backends (env "backends"): a run
# without that list did not have them.
NEWER = ["rswap-uring", "rswap-poll", "rswap-4+2", "rswap-2+1", "rswap-4+2-d0"]
FIO_JOBS = ["rr_qd1", "rw_qd1", "rr_qd32", "rw_qd32", "seqread"]
# The raw transport columns: the primary reference (samples/rdma_bench: kernel verbs, one RC
# queue made like rswap's, against rswap-server) and perftest (user space, secondary).
RAW = ["kernel", "perftest"]
NAMES = {"kernel": "in-kernel RDMA", "perftest": "perftest"}
# The targets, ratios of one run: (key, what, numerator, denominator, metric,
# goal, "max" when the ratio must not exceed the goal, "min" when it must reach it).
TARGETS = [
    ("qd1_read_latency", "4K rand read QD1 mean latency, rswap / in-kernel RDMA READ QD1",
     "rswap", "kernel", "4K rand read QD1, mean latency (us)", 1.10, "max"),
    ("qd32_read_iops_vs_kernel", "4K rand read QD32 IOPS, rswap (QD32x2) / in-kernel RDMA READ (QD32)",
     "rswap", "kernel", "4K rand read QD32x2, IOPS", 0.90, "min"),
    ("qd32_read_iops_vs_nvme", "4K rand read QD32x2 IOPS, rswap / nvme-rdma",
     "rswap", "nvme-rdma", "4K rand read QD32x2, IOPS", 2.0, "min"),
    ("swap_wall_time", "swap workload wall time, rswap / nvme-rdma",
     "rswap", "nvme-rdma", "swap workload, wall time (s)", 0.5, "max"),
    # The same goals for polled I/O (rswap-poll: poll queues, fio io_uring --hipri).
    ("poll_qd1_read_latency", "polled I/O: 4K rand read QD1 mean latency, rswap-poll "
     "(io_uring --hipri) / in-kernel RDMA READ QD1",
     "rswap-poll", "kernel", "4K rand read QD1, mean latency (us)", 1.10, "max"),
    ("poll_qd32_read_iops_vs_kernel", "polled I/O: 4K rand read QD32 IOPS, rswap-poll "
     "(QD32x2, io_uring --hipri) / in-kernel RDMA READ (QD32)",
     "rswap-poll", "kernel", "4K rand read QD32x2, IOPS", 0.90, "min"),
    ("poll_qd32_read_iops_vs_nvme", "polled I/O: 4K rand read QD32x2 IOPS, rswap-poll "
     "(io_uring --hipri) / nvme-rdma (libaio)",
     "rswap-poll", "nvme-rdma", "4K rand read QD32x2, IOPS", 2.0, "min"),
    # Redundant swap (issue 28): rswap-4+2 against md RAID1 over two rswap disks and one.
    ("ec42_swap_wall_time_vs_md1", "swap workload wall time, rswap-4+2 / rswap-md1",
     "rswap-4+2", "rswap-md1", "swap workload, wall time (s)", 1.2, "max"),
    ("ec42_remote_memory_vs_md1", "remote memory per GiB of swap, rswap-4+2 / rswap-md1",
     "rswap-4+2", "rswap-md1", MEM_ROW, 0.75, "max"),
    ("ec42_qd32_read_iops_vs_rswap", "4K rand read QD32x2 IOPS, rswap-4+2 / rswap",
     "rswap-4+2", "rswap", "4K rand read QD32x2, IOPS", 0.8, "min"),
]
# The targets shown under the redundant swap table, not under the main one.
REDUNDANT_TARGETS = ["ec42_swap_wall_time_vs_md1", "ec42_remote_memory_vs_md1",
                     "ec42_qd32_read_iops_vs_rswap"]


def parse_perftest(path):
    """The numbers of one perftest client run, or None."""
    try:
        text = open(path).read()
    except OSError:
        return None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes") and i + 1 < len(lines):
            head = line
            vals = lines[i + 1].split()
            try:
                nums = [float(v) for v in vals]
            except ValueError:
                return None
            if "t_avg" in head and len(nums) >= 9:
                return {"bytes": int(nums[0]), "iterations": int(nums[1]), "min_us": nums[2],
                        "max_us": nums[3], "typical_us": nums[4], "avg_us": nums[5],
                        "stdev_us": nums[6], "p99_us": nums[7], "p999_us": nums[8]}
            if "BW average" in head and len(nums) >= 5:
                unit = 1.0 if "MiB" in head else 1e6 / 2**20  # report in MiB/s
                avg = nums[3] * unit
                return {"bytes": int(nums[0]), "iterations": int(nums[1]),
                        "bw_peak_mib_s": nums[2] * unit, "bw_avg_mib_s": avg,
                        "msg_rate_mpps": nums[4],
                        # perftest rounds MsgRate to 1e-6 Mpps; derive a precise one.
                        "msg_per_s": avg * 2**20 / nums[0]}
    return None


def repeat_files(d, stem, ext):
    """The files of d holding one repeat each, STEM-N.EXT, as [(N, path)] in order of N;
    a folder of a run before repeats has STEM.EXT, read as repeat 1."""
    try:
        names = os.listdir(d)
    except OSError:
        return []
    pat = re.compile(r"%s(?:-(\d+))?\.%s$" % (re.escape(stem), re.escape(ext)))
    found = []
    for name in names:
        m = pat.match(name)
        if m:
            found.append((int(m.group(1) or 1), os.path.join(d, name)))
    return sorted(found)


def median(values):
    """The median of numbers (the mean of the middle two for an even count); an int when
    every value is one and so is the median."""
    m = statistics.median(values)
    if all(isinstance(v, int) for v in values) and float(m).is_integer():
        return int(m)
    return m


def summarize(runs, keys):
    """One figure per key of keys out of a list of repeats (dicts): the median over the
    repeats that have it, with "range" {key: [min, max]}, "repeats" (how many) and every
    repeat under "runs"."""
    out, rng = {}, {}
    for k in keys:
        vs = [r[k] for r in runs if isinstance(r.get(k), (int, float))]
        out[k] = median(vs) if vs else None
        if vs:
            rng[k] = [min(vs), max(vs)]
    out.update({"repeats": len(runs), "range": rng, "runs": runs})
    return out


def parse_kbench(raw):
    """The in-kernel benchmark's result lines (kbench/result-N.txt, one file per repeat):
    per "op_qdN", the median of each integer figure over the repeats, its range and every
    repeat (summarize); "error" when a repeat failed."""
    out = {}
    per = {}
    for n, path in repeat_files(os.path.join(raw, "kbench"), "result", "txt"):
        try:
            lines = open(path).read().splitlines()
        except OSError:
            continue
        for line in lines:
            kv = dict(f.split("=", 1) for f in line.split() if "=" in f)
            try:
                key = "%s_qd%s" % (kv.pop("op"), kv.pop("qd"))
                fig = {k: int(v) for k, v in kv.items()}
            except (KeyError, ValueError):
                continue
            fig["repeat"] = n
            per.setdefault(key, []).append(fig)
    for key, runs in per.items():
        keys = [k for k in runs[0] if k != "repeat"]
        out[key] = summarize(runs, keys)
    try:
        err = open(os.path.join(raw, "kbench", "error.txt")).read().strip()
        if err:
            out["error"] = err
    except OSError:
        pass
    return out


def load_swap(d):
    """The swap workload's runs in backend folder d (swap-N.json, swapload-N.json; an older
    single swap.json too), and their summary: the first run's record with the median of
    each figure over the runs that passed, their wall times, min and max, and rc 0 only if
    every run passed. None when there is no run."""
    runs = []
    names = sorted((f for f in os.listdir(d) if re.match(r"swap-\d+\.json$", f)),
                   key=lambda f: int(re.findall(r"\d+", f)[0])) if os.path.isdir(d) else []
    if not names and os.path.exists(os.path.join(d, "swap.json")):
        names = ["swap.json"]
    for name in names:
        try:
            sw = json.load(open(os.path.join(d, name)))
        except (OSError, ValueError):
            continue
        try:
            sw["swapload"] = json.load(open(os.path.join(d, name.replace("swap", "swapload", 1))))
        except (OSError, ValueError):
            sw["swapload"] = None
        runs.append(sw)
    if not runs:
        return None
    summary = dict(runs[0])
    summary["runs"] = runs
    summary["rc"] = 0 if all(r.get("rc") == 0 for r in runs) else next(
        r.get("rc") for r in runs if r.get("rc") != 0)
    ok = [r for r in runs if r.get("rc") == 0]
    if ok:
        for k in ["wall_s", "pswpin", "pswpout"]:
            summary[k] = median([r.get(k, 0) for r in ok])
        # Pages the swap cache read ahead (runs of older versions have none).
        if all("swap_ra" in r for r in ok):
            summary["swap_ra"] = median([r["swap_ra"] for r in ok])
        walls = [r.get("wall_s", 0) for r in ok]
        summary["wall_s_runs"] = walls
        summary["wall_s_min"], summary["wall_s_max"] = min(walls), max(walls)
        faults = [g(r, "swapload", "majflt") for r in ok]
        summary["swapload"] = dict(runs[0].get("swapload") or {})
        if all(isinstance(f, (int, float)) for f in faults):
            summary["swapload"]["majflt"] = median(faults)
        summary["swapload"]["bad_pages"] = sum(g(r, "swapload", "bad_pages") or 0 for r in runs) \
            if all(g(r, "swapload", "bad_pages") is not None for r in runs) else None
    return summary


def parse_encryption(d):
    """What an encrypted backend's targets said: the stats' encryption line (blocks sealed
    and opened, auth_failures, nanoseconds spent) as numbers, summed over the backend's
    set-ups (stats-TAG.txt, one per set-up; stats.txt in a run before repeats), with the
    time per block in microseconds, and the enable's log line naming the gcm(aes)
    implementation."""
    out = {}
    try:
        names = sorted(f for f in os.listdir(d) if re.match(r"stats(-[a-z0-9]+)?\.txt$", f))
    except OSError:
        names = []
    for name in names:
        try:
            lines = open(os.path.join(d, name)).read().splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith("encryption "):
                for f in line.split()[2:]:
                    k, _, v = f.partition("=")
                    if v.isdigit():
                        out[k] = out.get(k, 0) + int(v)
    for op, n in [("seal", "sealed"), ("open", "opened")]:
        if out.get(n):
            out[op + "_us_per_block"] = out.get(op + "_ns", 0) / out[n] / 1000.0
    try:
        line = open(os.path.join(d, "encrypted.txt")).read().strip()
        m = re.search(r"AES-256-GCM \(([^)]*)\)", line)
        if m:
            out["driver"] = m.group(1)
    except OSError:
        pass
    return out


def parse_queues(d):
    """An rswap backend's queue layout and where its requests went: queues.txt (a line
    "queues=Q poll_queues=P io_poll=0|1" per set-up) and the target's stats saved at each
    teardown (stats-TAG.txt; lines "queueN reads=.. writes=..", the poll queues numbered
    from Q). The layout of the first set-up, io_poll of every set-up, and the requests
    (reads and writes) on the poll queues and on the others over every set-up; None
    without queues.txt (a run before it was kept)."""
    try:
        setups = [dict(f.split("=", 1) for f in line.split() if "=" in f)
                  for line in open(os.path.join(d, "queues.txt")).read().splitlines()]
        setups = [{k: int(v) for k, v in st.items()} for st in setups if st]
    except (OSError, ValueError):
        return None
    if not setups:
        return None
    q = setups[0].get("queues", 0)
    out = {"queues": q, "poll_queues": setups[0].get("poll_queues", 0),
           "io_poll": [st.get("io_poll") for st in setups],
           "same_layout": all(st.get("queues") == q and st.get("poll_queues") ==
                              setups[0].get("poll_queues") for st in setups),
           "poll_requests": 0, "other_requests": 0}
    for name in sorted(os.listdir(d)):
        if not re.match(r"stats(-[a-z0-9]+)?\.txt$", name):
            continue
        for line in open(os.path.join(d, name)).read().splitlines():
            m = re.match(r"queue(\d+) ", line)
            if not m:
                continue
            kv = dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
            n = int(kv.get("reads", 0)) + int(kv.get("writes", 0))
            out["poll_requests" if int(m.group(1)) >= q else "other_requests"] += n
    return out


def parse_remote_mem(d):
    """What a backend's rswap-servers allocated (remote-mem.txt: "servers=N
    allocated_bytes=B device_bytes=D", tests/bench/backends.sh remote_mem_record), with
    per_gib_swap, B / D: GiB of remote memory per GiB of swap; None without it."""
    try:
        kv = dict(f.split("=", 1) for f in open(os.path.join(d, "remote-mem.txt")).read().split()
                  if "=" in f)
        out = {k: int(kv[k]) for k in ("servers", "allocated_bytes", "device_bytes")}
    except (OSError, ValueError, KeyError):
        return None
    out["per_gib_swap"] = out["allocated_bytes"] / out["device_bytes"] if out["device_bytes"] else None
    return out


def quick_skipped(env, name):
    """What --quick left out of backend name (env "quick_skip", tests/bench/backends.sh
    QUICK_SKIP): "" for all of it, "fio", "swap", "later" (the rounds after the first) or
    a fio job."""
    return {w for n, _, w in (q.partition(":") for q in env.get("quick_skip") or []) if n == name}


def parse_fio(path):
    try:
        data = json.load(open(path))
    except (OSError, ValueError):
        return None
    job = data["jobs"][0]
    side = "read" if job["read"]["io_bytes"] > 0 else "write"
    s = job[side]
    lat = s.get("lat_ns", {})
    pct = lat.get("percentile") or s.get("clat_ns", {}).get("percentile") or {}
    p99 = pct.get("99.000000")
    opts = job.get("job options") or {}
    return {"side": side, "iops": s["iops"], "bw_mib_s": s["bw"] / 1024.0,
            "lat_mean_us": lat.get("mean", 0) / 1000.0,
            "lat_p99_us": p99 / 1000.0 if p99 is not None else None,
            "clat_mean_us": s.get("clat_ns", {}).get("mean", 0) / 1000.0,
            "runtime_ms": s.get("runtime"), "total_ios": s.get("total_ios"),
            "jobname": job.get("jobname"), "errors": job.get("error", 0),
            "engine": fio_engine(opts),
            # When fio finished (Unix time, the guest's clock).
            "timestamp": data.get("timestamp")}


def fio_engine(opts):
    """The I/O engine of a fio job's options ("job options" of its JSON), as "libaio",
    "io_uring", or "io_uring hipri" when it polls for completions; None when not given."""
    engine = opts.get("ioengine")
    if engine is not None and opts.get("hipri", "0") != "0":
        engine += " hipri"
    return engine


FIO_FIGURES = ["iops", "bw_mib_s", "lat_mean_us", "lat_p99_us", "clat_mean_us", "packets_per_request"]


def parse_packets(path):
    """RDMA packets per request of one fio job (packets-JOB-N.txt: "packets=P requests=Q",
    the client's soft-RoCE packets sent and received and the block device's completed
    requests over the job, its ramp included; tests/bench/client.sh): P / Q, or None."""
    try:
        kv = dict(f.split("=", 1) for f in open(path).read().split() if "=" in f)
        p, q = int(kv["packets"]), int(kv["requests"])
    except (OSError, ValueError, KeyError):
        return None
    return p / q if q > 0 else None


def load_fio(d, job):
    """fio job `job` of backend folder d over its repeats (fio-JOB-N.json): the median of
    each figure, its range and every repeat (summarize), errors summed; None when no
    repeat has numbers."""
    runs = []
    for n, path in repeat_files(d, "fio-" + job, "json"):
        f = parse_fio(path)
        if f is not None:
            f["repeat"] = n
            f["packets_per_request"] = parse_packets(os.path.join(d, "packets-%s-%d.txt" % (job, n)))
            runs.append(f)
    if not runs:
        return None
    out = summarize(runs, FIO_FIGURES)
    out.update({"side": runs[0]["side"], "jobname": runs[0]["jobname"],
                "errors": sum(r["errors"] or 0 for r in runs)})
    return out


def engines(entry):
    """The engines a backend's fio jobs ran with (fio_engine), over every job and repeat,
    in order: one, unless something went wrong."""
    seen = []
    for f in (entry.get("fio") or {}).values():
        for r in (f or {}).get("runs", []):
            if r.get("engine") and r["engine"] not in seen:
                seen.append(r["engine"])
    return seen


def read_status(raw):
    """raw/status.tsv (tests/bench/session.sh bk_status): {label: {status, device, note}}."""
    status = {}
    try:
        # A backend's line as it stood after each of its set-ups: the last one counts.
        for line in open(os.path.join(raw, "status.tsv")):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 4:
                status[f[0]] = {"status": f[1], "device": None if f[2] == "-" else f[2],
                                "note": f[3]}
    except OSError:
        pass
    return status


def read_env(raw, host_env):
    """raw/env.json (the guest's) with host_env's keys over it."""
    env = {}
    try:
        env.update(json.load(open(os.path.join(raw, "env.json"))))
    except (OSError, ValueError) as e:
        env["guest_env_error"] = str(e)
    env.update(host_env)
    return env


def load(raw, host_env):
    env = read_env(raw, host_env)
    res = {"env": env, "raw_rdma": {}, "raw_kernel": parse_kbench(raw), "backends": {}}
    for tool in ["ib_read_lat", "ib_write_lat", "ib_read_bw", "ib_write_bw"]:
        res["raw_rdma"][tool] = parse_perftest(os.path.join(raw, "perftest", tool + ".txt"))
    status = read_status(raw)
    for b in BACKENDS:
        st = status.get(b, {"status": "n/a", "device": None,
                            "note": "the run ended before this backend was measured"
                            if in_harness(env, b) else
                            "not in this run (its harness did not have this backend)"})
        entry = {"status": st["status"], "device": st["device"]}
        if st["status"] == "n/a":
            entry["reason"] = st["note"]
        elif st["status"] == "ok":
            entry["description"] = st["note"]
        else:
            entry["problem"] = st["note"]
        skip = quick_skipped(env, b)
        if skip:
            entry["quick_skipped"] = sorted(skip)
        if st["status"] != "n/a":
            d = os.path.join(raw, b)
            if b not in SWAP_ONLY and "fio" not in skip:
                entry["fio"] = {j: load_fio(d, j) for j in FIO_JOBS if j not in skip}
                entry["fio_engine"] = ", ".join(engines(entry)) or None
                entry["fio_fill"] = [parse_fio(p) for _, p in repeat_files(d, "fio-fill", "json")]
            if b not in FIO_ONLY and "swap" not in skip:
                entry["swap"] = load_swap(d)
            if b in REMOTE_MEM:
                entry["remote_memory"] = parse_remote_mem(d)
            if b in ENCRYPTED:
                entry["encryption"] = parse_encryption(d)
            queues = parse_queues(d)
            if queues is not None:
                entry["queues"] = queues
        res["backends"][b] = entry
    return res


def g(d, *path):
    """Nested lookup that yields None on any missing piece."""
    for p in path:
        if d is None:
            return None
        d = d.get(p) if isinstance(d, dict) else None
    return d


def in_harness(env, name):
    """Whether the harness of the run with env had backend name (a label): those env
    "backends" lists, or for a run before that list, all but NEWER."""
    have = env.get("backends")
    return name not in NEWER if have is None else name in have


def selected(res, name):
    """Whether the run measured name (a backend label, "kernel" or "perftest"): every one
    its harness had (in_harness) unless RSWAP_BENCH_BACKENDS chose some (env "selected":
    ids or labels)."""
    if name in BACKENDS and not in_harness(res["env"], name):
        return False
    only = res["env"].get("selected")
    if not only:
        return True
    return name in only or name.replace("-", "_") in only or IDS.get(name) in only


def swap_ok(sw):
    return sw is not None and sw.get("rc") == 0


def kernel_rate_key(res):
    """The key of the in-kernel benchmark's deep-queue phase, e.g. "qd32"."""
    qd = res["env"].get("kbench_qd", 32)
    return "qd%s" % qd


def values(vs):
    """The numbers of vs (None when there is none): one per repeat."""
    vs = [v for v in vs if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return vs or None


# (label, a backend's values (one per repeat), {raw column: values}, unit/better, take ratios)
def rows(res):
    rr = res["raw_rdma"]
    kb = res["raw_kernel"]
    deep = kernel_rate_key(res)

    def kruns(phase):
        return g(kb, phase, "runs") or []

    def kus(phase, k):
        return values([r[k] / 1000.0 for r in kruns(phase) if r.get(k)])

    def kops(phase):
        return values([r.get("ops_per_s") for r in kruns(phase) if r.get("ops_per_s")])

    def kmib(phase):
        return values([r["ops_per_s"] * r["bytes"] / 2**20 for r in kruns(phase)
                       if r.get("ops_per_s") and r.get("bytes")])

    def perf(tool, k):
        return values([g(rr, tool, k)])

    def fio(j, k):
        return lambda b: values([r.get(k) for r in g(res["backends"][b], "fio", j, "runs") or []])

    def swap(k):
        def f(b):
            sw = g(res["backends"][b], "swap")
            if not swap_ok(sw):
                return None
            ok = [r for r in sw.get("runs") or [] if r.get("rc") == 0]
            if k == "majflt":
                return values([g(r, "swapload", "majflt") for r in ok])
            if k == "packets_per_page":
                return values([r["rdma_packets"] / (r["pswpin"] + r["pswpout"]) for r in ok
                               if isinstance(r.get("rdma_packets"), int)
                               and r.get("pswpin", 0) + r.get("pswpout", 0) > 0])
            return values([r.get(k) for r in ok])
        return f
    def mem(b):
        return values([g(res["backends"][b], "remote_memory", "per_gib_swap")])

    def raw(kernel, perftest):
        return {"kernel": kernel, "perftest": perftest}
    return [
        ("4K rand read QD1, mean latency (us)", fio("rr_qd1", "lat_mean_us"),
         raw(kus("read_qd1", "lat_mean_ns"), perf("ib_read_lat", "avg_us")), "lower", True),
        ("4K rand read QD1, p99 latency (us)", fio("rr_qd1", "lat_p99_us"),
         raw(kus("read_qd1", "lat_p99_ns"), perf("ib_read_lat", "p99_us")), "lower", True),
        ("4K rand write QD1, mean latency (us)", fio("rw_qd1", "lat_mean_us"),
         raw(kus("write_qd1", "lat_mean_ns"), perf("ib_write_lat", "avg_us")), "lower", True),
        ("4K rand write QD1, p99 latency (us)", fio("rw_qd1", "lat_p99_us"),
         raw(kus("write_qd1", "lat_p99_ns"), perf("ib_write_lat", "p99_us")), "lower", True),
        ("4K rand read QD32x2, IOPS", fio("rr_qd32", "iops"),
         raw(kops("read_" + deep), perf("ib_read_bw", "msg_per_s")), "higher", True),
        ("4K rand write QD32x2, IOPS", fio("rw_qd32", "iops"),
         raw(kops("write_" + deep), perf("ib_write_bw", "msg_per_s")), "higher", True),
        ("64K seq read QD16, MiB/s", fio("seqread", "bw_mib_s"),
         raw(kmib("read_" + deep), perf("ib_read_bw", "bw_avg_mib_s")), "higher", True),
        (PACKETS_ROW, fio("rr_qd32", "packets_per_request"), raw(None, None), "", True),
        ("swap workload, wall time (s)", swap("wall_s"), raw(None, None), "lower", True),
        ("swap workload, major faults", swap("majflt"), raw(None, None), "", False),
        ("swap workload, pswpin (pages)", swap("pswpin"), raw(None, None), "", False),
        ("swap workload, pswpout (pages)", swap("pswpout"), raw(None, None), "", False),
        ("swap workload, swap_ra (pages read ahead)", swap("swap_ra"), raw(None, None), "", False),
        (SWAP_PACKETS_ROW, swap("packets_per_page"), raw(None, None), "", True),
        (MEM_ROW, mem, raw(None, None), "lower", True),
    ]


# rswap-uring/rswap: what fio's io_uring engine changes against libaio; rswap-poll/
# rswap-uring: what polling changes, the same engine either way; rswap-poll/rswap: both.
RATIOS = [("rswap", "kernel"), ("rswap", "perftest"), ("rswap", "nvme-rdma"), ("rswap", "local"),
          ("rswap-poll", "kernel"), ("rswap-uring", "rswap"), ("rswap-poll", "rswap-uring"),
          ("rswap-poll", "rswap"), ("rswap-enc", "rswap"), ("rswap-enc-wq", "rswap"), ("rswap-enc", "nvme-rdma"),
          ("nvme-rdma", "kernel"), ("nvme-rdma", "local")]
# The mirrored-swap table: what md RAID1 over two rswap disks costs against one rswap disk
# (a cost ratio: above 1, mirroring is slower). Swap rows only.
MIRROR = ["rswap", "rswap-md1"]
MIRROR_RATIOS = [("rswap-md1", "rswap")]
# The synchronous swap-in table: rswap with sync_swapin=1 (BLK_FEAT_SYNCHRONOUS: swap-in
# without readahead, each page read and written on its own) against rswap. Swap rows only.
SYNC = ["rswap", "rswap-sync"]
SYNC_RATIOS = [("rswap-sync", "rswap")]


def ratio_key(a, b):
    return "%s/%s" % (a, NAMES.get(b, b))


def swap_row(label):
    return label.startswith("swap workload")


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt(v):
    if v is None:
        return "n/a"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) >= 100):
        return str(int(v))
    if abs(v) >= 100:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.1f" % v
    return "%.2f" % v


def fmt_ratio(v):
    return "n/a" if v is None else "%.2fx" % v


def fmt_cell(row, k):
    """A table cell: the median of k's repeats, and "(min-max)" when they differ."""
    v, rng = row["values"].get(k), row["range"].get(k)
    if v is None or not rng or row["repeats"].get(k, 0) < 2 or fmt(rng[0]) == fmt(rng[1]):
        return fmt(v)
    return "%s (%s-%s)" % (fmt(v), fmt(rng[0]), fmt(rng[1]))


def compute(res):
    """The table's rows: per column the median of its repeats ("values"), their lowest and
    highest ("range") and how many there were ("repeats"); the ratios are of medians."""
    table = []
    for label, fn, raw, better, take in rows(res):
        runs = {b: fn(b) for b in BACKENDS}
        runs.update(raw)
        vals = {k: median(v) if v else None for k, v in runs.items()}
        rats = {}
        for a, b in RATIOS + REDUNDANT_RATIOS + (MIRROR_RATIOS + SYNC_RATIOS if swap_row(label) else []):
            rats[ratio_key(a, b)] = ratio(vals[a], vals[b]) if take else None
        table.append({"metric": label, "better": better, "values": vals,
                      "range": {k: [min(v), max(v)] for k, v in runs.items() if v},
                      "repeats": {k: len(v) for k, v in runs.items() if v},
                      "ratios": rats})
    res["table"] = table
    res["targets"] = targets(res, table)
    return table


def targets(res, table):
    """The issue's target ratios of this run: each the ratio of the two medians, with its
    goal and pass/miss (None when a figure is missing), and the lowest and highest ratio
    of one repeat of each (ratio_min, ratio_max; "runs": how many repeats each had)."""
    by = {r["metric"]: r for r in table}
    out = []
    for key, what, a, b, metric, goal, kind in TARGETS:
        row = by[metric]
        v = row["values"]
        r = ratio(v[a], v[b])
        t = {"key": key, "what": what, "a": a, "b": b, "ratio": r, "goal": goal, "kind": kind,
             "pass": None if r is None else (r <= goal if kind == "max" else r >= goal)}
        ra, rb = row["range"].get(a), row["range"].get(b)
        if r is not None and ra and rb and rb[0] > 0:
            t["ratio_min"] = ra[0] / rb[1]
            t["ratio_max"] = ra[1] / rb[0]
            t["runs"] = [row["repeats"][a], row["repeats"][b]]
        out.append(t)
    return out


def markdown(res, table):
    env = res["env"]
    out = []
    out.append("rswap benchmark, %s, %s: kernel %s, %s, client %s vCPU / server %s vCPU, "
               "git %s, fio %ss per job, %s repeat%s" % (
                   env.get("date", "?"), env.get("mode", "?"), env.get("kernel", "?"),
                   env.get("accelerator", "?").upper(), env.get("client_vcpus", "?"),
                   env.get("server_vcpus") or "-", env.get("git_revision", "?"),
                   env.get("fio_time_s", "?"), env.get("repeats", 1),
                   "" if env.get("repeats", 1) == 1 else "s"))
    if env.get("selected"):
        out.append("")
        out.append("Only %s ran (RSWAP_BENCH_BACKENDS); the rest is left out." %
                   ", ".join(env["selected"]))
    out.append("")
    out.append("Each figure is the median of its repeats (fio jobs and in-kernel RDMA: %s "
               "each; swap workload: %s runs), the lowest and highest in brackets; ratios "
               "are of the medians." % (env.get("repeats", 1), env.get("swap_runs", 1)))
    out.append("")
    # A run limited to some backends shows only their columns and ratios.
    raw_cols = [k for k in RAW if selected(res, k)]
    main_cols = [b for b in MAIN if selected(res, b)]
    ratios = [(a, b) for a, b in RATIOS if selected(res, a) and selected(res, b)]
    hdr = ["metric", "better"] + [NAMES[k] for k in raw_cols] + main_cols + \
        [ratio_key(a, b) for a, b in ratios]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|" + "|".join(["---"] + [":-:"] + ["--:"] * (len(hdr) - 2)) + "|")
    for r in table:
        if r["metric"] == MEM_ROW:
            continue  # the redundant swap table's
        cells = [r["metric"], r["better"] or ""]
        cells += [("-" if swap_row(r["metric"]) else fmt_cell(r, k)) for k in raw_cols]
        cells += [("-" if swap_row(r["metric"]) and b in FIO_ONLY else fmt_cell(r, b))
                  for b in main_cols]
        cells += [fmt_ratio(r["ratios"][ratio_key(a, b)]) for a, b in ratios]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    targets_table(res, out, [t for t in res.get("targets", []) if t["key"] not in REDUNDANT_TARGETS],
                  "Targets (ratios of this run's medians; in brackets the lowest and highest "
                  "ratio of one repeat of each; under TCG they move between runs, see "
                  "Documentation/benchmarks.md):")
    out.append("")
    kb = res["raw_kernel"]
    deep = kernel_rate_key(res)
    if not selected(res, "kernel"):
        pass  # not measured in this run: no line
    elif not g(kb, "read_qd1", "ops"):
        out.append("In-kernel RDMA: n/a (%s)" % kb.get("error", "no results"))
    else:
        out.append("In-kernel RDMA (samples/rdma_bench: kernel verbs, one RC queue made like "
                   "rswap's, against rswap-server, 4 KiB at random offsets of a %s MiB region, "
                   "%s s per phase%s): READ QD1 mean %s us (p50 %s, p99 %s; "
                   "completion handler %s us); WRITE QD1 mean %s us (p50 %s, p99 %s); READ %s %s "
                   "ops/s; WRITE %s %s ops/s.%s" % (
                       res["env"].get("kbench_region_mb", "?"),
                       fmt(res["env"].get("kbench_ms_per_phase", 0) / 1000.0),
                       "" if g(kb, "read_qd1", "repeats") == 1 else
                       ", medians of %s repeats" % g(kb, "read_qd1", "repeats"),
                       *[fmt((g(kb, p, k) or 0) / 1000.0) for p, k in [
                           ("read_qd1", "lat_mean_ns"), ("read_qd1", "lat_p50_ns"),
                           ("read_qd1", "lat_p99_ns"), ("read_qd1", "wc_mean_ns"),
                           ("write_qd1", "lat_mean_ns"), ("write_qd1", "lat_p50_ns"),
                           ("write_qd1", "lat_p99_ns")]],
                       deep.upper(), fmt(g(kb, "read_" + deep, "ops_per_s")),
                       deep.upper(), fmt(g(kb, "write_" + deep, "ops_per_s")),
                       (" A repeat failed: %s" % kb["error"]) if "error" in kb else ""))
    rr = res["raw_rdma"]
    if selected(res, "perftest"):
        out.append("Perftest (user space over rxe, 4 KiB; secondary reference): ib_read_lat avg %s us / p99 %s us; "
                   "ib_write_lat avg %s us / p99 %s us; ib_read_bw %s MiB/s (%s msg/s); "
                   "ib_write_bw %s MiB/s (%s msg/s)." % (
                       fmt(g(rr, "ib_read_lat", "avg_us")), fmt(g(rr, "ib_read_lat", "p99_us")),
                       fmt(g(rr, "ib_write_lat", "avg_us")), fmt(g(rr, "ib_write_lat", "p99_us")),
                       fmt(g(rr, "ib_read_bw", "bw_avg_mib_s")), fmt(g(rr, "ib_read_bw", "msg_per_s")),
                       fmt(g(rr, "ib_write_bw", "bw_avg_mib_s")), fmt(g(rr, "ib_write_bw", "msg_per_s"))))
    for b in BACKENDS:
        e = res["backends"][b]
        if not selected(res, b):
            continue
        if e["status"] == "n/a":
            out.append("- %s: n/a (%s)" % (b, e.get("reason", "")))
        elif e["status"] != "ok":
            out.append("- %s: %s on %s (%s)" % (b, e["status"], e.get("device"), e.get("problem", "")))
        elif b in FIO_ONLY or "swap" not in e:
            out.append("- %s: %s, %s; fio engine %s; no swap workload (%s)" % (
                b, e.get("device"), e.get("description", ""), e.get("fio_engine") or "?",
                "fio jobs only" if b in FIO_ONLY else "left out by --quick"))
        else:
            sw = e.get("swap") or {}
            walls = sw.get("wall_s_runs") or []
            out.append("- %s: %s, %s; swap %s MiB in a %s MiB cgroup, %s; wall time of %d "
                       "run%s: %s s (median %s, min-max %s-%s)" % (
                           b, e.get("device"), e.get("description", ""), sw.get("mib"),
                           sw.get("limit_mib"), "data verified" if swap_ok(sw) else "FAILED",
                           len(walls), "" if len(walls) == 1 else "s",
                           ", ".join(fmt(w) for w in walls), fmt(sw.get("wall_s")),
                           fmt(sw.get("wall_s_min")), fmt(sw.get("wall_s_max"))))
    out.append("")
    for b in ENCRYPTED:
        enc = g(res["backends"][b], "encryption")
        if enc:
            out.append("- %s: gcm(aes) implementation %s; %s blocks sealed, %s opened, "
                       "%s auth_failures; CPU time %s us per block sealed (queue_rq), %s us "
                       "per block opened (%s)." % (
                           b, enc.get("driver", "?"), enc.get("sealed", "?"),
                           enc.get("opened", "?"), enc.get("auth_failures", "?"),
                           fmt(enc.get("seal_us_per_block")), fmt(enc.get("open_us_per_block")),
                           "in a workqueue" if b.endswith("-wq") else "in the RDMA completion"))
    polled_notes(res, out)
    swap_table(res, table, out, SYNC, SYNC_RATIOS,
               "Synchronous swap-in: the swap workload on rswap with sync_swapin=1 "
               "(rswap-sync: the disk declares BLK_FEAT_SYNCHRONOUS, so a fault reads its one "
               "page without the swap cache's readahead and reclaim writes each page on its "
               "own) and on rswap, in the same run. swap_ra is the pages the swap cache read "
               "ahead: 0 when the synchronous path is in use.")
    swap_table(res, table, out, MIRROR, MIRROR_RATIOS,
               "Mirrored swap: the swap workload on md RAID1 over two rswap disks (rswap-md1) "
               "and on one (rswap), in the same run. Both halves' rswap-servers run on the "
               "one memory-server guest, over the one link: this is the cost of writing "
               "every page twice, not the gain of independent servers.")
    redundant_table(res, table, out)
    return "\n".join(out) + "\n"


def targets_table(res, out, targets, caption):
    """Appends to out caption and a table of targets (those of res["targets"] whose two
    sides this run measured), each with its ratio, goal and pass or MISS; nothing when
    none is left."""
    shown = [t for t in targets if selected(res, t["a"]) and selected(res, t["b"])]
    if not shown:
        return
    out.append(caption)
    out.append("")
    out.append("| target | ratio | goal | result |")
    out.append("|---|--:|--:|:-:|")
    for t in shown:
        what, cell = t["what"], fmt_ratio(t["ratio"])
        if "ratio_min" in t and max(t["runs"]) > 1:
            n_a, n_b = t["runs"]
            what += " (medians of %s repeats)" % (n_a if n_a == n_b else "%d and %d" % (n_a, n_b))
            cell += " (%.2f-%.2fx)" % (t["ratio_min"], t["ratio_max"])
        mark = {True: "pass", False: "MISS", None: "n/a"}[t["pass"]]
        out.append("| %s | %s | %s %.2fx | %s |" % (what, cell, "<=" if t["kind"] == "max" else ">=",
                                                   t["goal"], mark))


# The redundant swap table's rows (of the main table's, and the remote memory).
REDUNDANT_ROWS = [MEM_ROW, "4K rand read QD1, mean latency (us)", "4K rand write QD1, mean latency (us)",
                  "4K rand read QD32x2, IOPS", PACKETS_ROW, "4K rand write QD32x2, IOPS",
                  "swap workload, wall time (s)", SWAP_PACKETS_ROW]


def redundant_table(res, table, out):
    """Appends to out the redundant swap table: for rswap and the redundant backends this
    run measured, the remote memory per GiB of swap, the QD1 and QD32 fio jobs and the
    swap workload's wall time, their ratios, what each backend's servers allocated, and the
    issue's targets of rswap-4+2; nothing when the run left out rswap-4+2 and rswap-2+1."""
    if not (selected(res, "rswap-4+2") or selected(res, "rswap-2+1")):
        return
    cols = [b for b in REDUNDANT if selected(res, b)]
    ratios = [(a, b) for a, b in REDUNDANT_RATIOS if a in cols and b in cols]
    out.append("")
    out.append("Redundant swap: rswap's own redundancy, one disk over k + r servers (rswap-4+2: "
               "4 data and 2 parity fragments a page on six rswap-servers, any two may be "
               "lost; rswap-2+1: 2 and their XOR on three, any one; rswap-4+2-d0: 4+2 with "
               "extra_reads=0, its fio jobs only), against md RAID1 over "
               "two rswap disks (rswap-md1, any one) and one rswap disk, in the same run. "
               "Every server runs on the one memory-server guest, over the one link. Remote "
               "memory is what the backend's servers allocated over the size of its swap "
               "device.")
    out.append("")
    hdr = ["metric", "better"] + cols + [ratio_key(a, b) for a, b in ratios]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|" + "|".join(["---"] + [":-:"] + ["--:"] * (len(hdr) - 2)) + "|")
    by = {r["metric"]: r for r in table}
    for m in REDUNDANT_ROWS:
        r = by[m]
        cells = [m, r["better"] or ""] + [
            "-" if b in FIO_ONLY and (swap_row(m) or m == MEM_ROW) else fmt_cell(r, b) for b in cols]
        cells += [fmt_ratio(r["ratios"].get(ratio_key(a, b))) for a, b in ratios]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    for b in (b for b in cols if b in REMOTE_MEM):
        m = g(res["backends"][b], "remote_memory")
        if m:
            out.append("- %s: %d server%s allocated %s MiB for %s MiB of swap device: %s GiB per "
                       "GiB of swap." % (b, m["servers"], "" if m["servers"] == 1 else "s",
                                          fmt(m["allocated_bytes"] / 2**20), fmt(m["device_bytes"] / 2**20),
                                          fmt(m["per_gib_swap"])))
        elif res["backends"][b]["status"] != "n/a":
            out.append("- %s: no remote memory figure" % b)
    out.append("")
    targets_table(res, out, [t for t in res.get("targets", []) if t["key"] in REDUNDANT_TARGETS],
                  "Redundant swap targets (issue 28; ratios of this run's medians):")


def polled_notes(res, out):
    """Appends to out how rswap-uring and rswap-poll ran: their fio engine, queues, io_poll,
    and the requests their poll queues and their other queues served."""
    lines = []
    for b in ["rswap-uring", "rswap-poll"]:
        e = res["backends"][b]
        q = e.get("queues")
        if not selected(res, b) or e["status"] == "n/a" or q is None:
            continue
        io_poll = sorted(set(q["io_poll"]))
        lines.append("- %s: fio engine %s; %d queues and %d poll queues%s, io_poll %s in %s; "
                     "requests on the poll queues %d, on the others %d (the libaio fill among "
                     "them)." % (
                         b, e.get("fio_engine") or "?", q["queues"], q["poll_queues"],
                         "" if q["same_layout"] else " (the first set-up's; others differed)",
                         "/".join(str(v) for v in io_poll),
                         "every set-up" if len(io_poll) == 1 else "the set-ups",
                         q["poll_requests"], q["other_requests"]))
    if lines:
        out.append("")
        out.append("Polled I/O: rswap-uring is rswap under fio's io_uring engine (completions "
                   "by interrupt), rswap-poll the same with poll queues and fio's --hipri "
                   "(IORING_SETUP_IOPOLL: completions polled by the submitting task); fio jobs "
                   "only, swap I/O is never polled. rswap-uring/rswap is what the engine "
                   "changes, rswap-poll/rswap-uring what polling changes.")
        out.append("")
        out.extend(lines)


def swap_table(res, table, out, cols, ratios, caption):
    """Appends to out a table of the swap rows for cols (rswap first, then the variant)
    with ratios, under caption; nothing when the run left the variant out."""
    if not selected(res, cols[-1]):
        return
    out.append("")
    out.append(caption)
    out.append("")
    hdr = ["metric", "better"] + cols + [ratio_key(a, b) for a, b in ratios]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|" + "|".join(["---"] + [":-:"] + ["--:"] * (len(hdr) - 2)) + "|")
    for r in table:
        if not swap_row(r["metric"]):
            continue
        cells = [r["metric"], r["better"] or ""] + [fmt_cell(r, b) for b in cols]
        cells += [fmt_ratio(r["ratios"].get(ratio_key(a, b))) for a, b in ratios]
        out.append("| " + " | ".join(cells) + " |")
    for a, b in ratios:
        sa, sb = g(res["backends"][a], "swap"), g(res["backends"][b], "swap")
        if swap_ok(sa) and swap_ok(sb) and sa.get("wall_s_min") and sb.get("wall_s_min"):
            out.append("")
            out.append("Wall time %s: %s (of the medians; best and worst pairing of single "
                       "runs: %.2f-%.2fx); "
                       "%s %s s, %s %s s." % (
                           ratio_key(a, b), fmt_ratio(ratio(sa["wall_s"], sb["wall_s"])),
                           sa["wall_s_min"] / sb["wall_s_max"], sa["wall_s_max"] / sb["wall_s_min"],
                           a, ", ".join(fmt(w) for w in sa["wall_s_runs"]),
                           b, ", ".join(fmt(w) for w in sb["wall_s_runs"])))


def plot(res, table, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("report: no plot (%s)" % e, file=sys.stderr)
        return False
    every = RAW + BACKENDS
    keys = [k for k in every if selected(res, k)]
    names = [NAMES.get(k, k) for k in keys]
    colors = ["#444444", "#aaaaaa", "#d62728", "#ff7f0e", "#bcbd22", "#1f77b4", "#2ca02c",
              "#9467bd", "#17becf", "#e377c2", "#8c564b", "#7f7f00", "#00007f", "#7f0000"]
    by = {r["metric"]: r for r in table}
    panels = [
        ("QD1 mean latency (us, lower is better)",
         ["4K rand read QD1, mean latency (us)", "4K rand write QD1, mean latency (us)"],
         ["read", "write"]),
        ("QD32x2 4K IOPS (raw: msg/s at QD32; higher is better)",
         ["4K rand read QD32x2, IOPS", "4K rand write QD32x2, IOPS"], ["read", "write"]),
        ("64K sequential read (MiB/s; raw: 4K READ at QD32; higher is better)",
         ["64K seq read QD16, MiB/s"], ["read"]),
        ("swap workload wall time (s, lower is better)",
         ["swap workload, wall time (s)"], ["wall"]),
    ]
    from matplotlib.patches import Patch
    from matplotlib.transforms import blended_transform_factory
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for ax, (title, metrics, groups) in zip(axes.flat, panels):
        # The raw transport and a fio-only backend have no swap figure; a swap-only
        # backend has nothing but.
        swap = swap_row(metrics[0])
        ks = [k for k in keys if (k not in RAW + FIO_ONLY if swap else k not in SWAP_ONLY)]
        width = 0.8 / max(len(ks), 1)
        trans = blended_transform_factory(ax.transData, ax.transAxes)
        for ki, k in enumerate(ks):
            for gi, m in enumerate(metrics):
                v = by[m]["values"][k] if m in by else None
                x = gi + (ki - (len(ks) - 1) / 2) * width
                if v is None or (isinstance(v, float) and math.isnan(v)) or v <= 0:
                    ax.text(x, 0.02, "n/a", ha="center", va="bottom", fontsize=8,
                            rotation=90, transform=trans)
                    continue
                # The bar is the median; the whisker spans the lowest to the highest repeat.
                lo, hi = by[m]["range"].get(k, [v, v])
                ax.bar([x], [v], width, color=colors[every.index(k)],
                       yerr=[[v - lo], [hi - v]] if hi > lo else None, capsize=2,
                       error_kw={"elinewidth": 0.8})
                ax.text(x, v, fmt(v), ha="center", va="bottom", fontsize=7)
        ax.set_xlim(-0.5, len(groups) - 0.5)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups)
        ax.set_title(title, fontsize=10)
        ax.set_yscale("log")  # the local RAM disk is 1-2 orders of magnitude apart
        ax.grid(axis="y", alpha=0.3)
    fig.legend(handles=[Patch(color=colors[every.index(k)], label=n) for k, n in zip(keys, names)],
               loc="lower center", ncol=len(names), fontsize=9)
    env = res["env"]
    fig.suptitle("rswap bench %s (%s, %s, git %s)" % (env.get("date", ""), env.get("mode", ""),
                                                      env.get("accelerator", "").upper(),
                                                      env.get("git_revision", "")), fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    fig.savefig(path, dpi=100)
    return True


def check(res):
    """The smoke test: every baseline produced numbers, in every repeat (values are not
    judged)."""
    bad = []
    repeats = res["env"].get("repeats", 1)
    perftest = [("ib_read_lat", ["avg_us", "p99_us"]), ("ib_write_lat", ["avg_us", "p99_us"]),
                ("ib_read_bw", ["msg_per_s"]), ("ib_write_bw", ["msg_per_s"])]
    for tool, keys in perftest if selected(res, "perftest") else []:
        for k in keys:
            v = g(res["raw_rdma"], tool, k)
            if not isinstance(v, (int, float)) or v <= 0:
                bad.append("raw RDMA %s %s missing" % (tool, k))
    kb = res["raw_kernel"]
    if not selected(res, "kernel"):
        kb = None
    elif "error" in kb:
        bad.append("in-kernel RDMA: %s" % kb["error"])
    phases = [] if kb is None else [("read_qd1", ["lat_mean_ns", "lat_p99_ns"]),
                                    ("write_qd1", ["lat_mean_ns", "lat_p99_ns"]),
                                    ("read_" + kernel_rate_key(res), ["ops_per_s"]),
                                    ("write_" + kernel_rate_key(res), ["ops_per_s"])]
    for phase, keys in phases:
        runs = g(kb, phase, "runs") or []
        if len(runs) < repeats:
            bad.append("in-kernel RDMA %s: %d of %d repeats" % (phase, len(runs), repeats))
        for k in keys:
            if not runs or any(not isinstance(r.get(k), int) or r[k] <= 0 for r in runs):
                bad.append("in-kernel RDMA %s %s missing" % (phase, k))
    for b in BACKENDS:
        e = res["backends"][b]
        if (b in OPTIONAL and e["status"] == "n/a") or not selected(res, b):
            continue
        if e["status"] != "ok":
            bad.append("%s: %s %s" % (b, e["status"], e.get("reason") or e.get("problem") or ""))
            continue
        # What --quick left out of it (QUICK_SKIP) is not asked for.
        skip = quick_skipped(res["env"], b)
        want = 1 if "later" in skip else repeats
        for j in ([] if b in SWAP_ONLY or "fio" in skip else [j for j in FIO_JOBS if j not in skip]):
            runs = g(e, "fio", j, "runs") or []
            if len(runs) < want:
                bad.append("%s: fio %s: %d of %d repeats" % (b, j, len(runs), want))
            if not runs or any(f["iops"] <= 0 or f["lat_mean_us"] <= 0 for f in runs):
                bad.append("%s: fio %s has no numbers" % (b, j))
            elif j.endswith("qd1") and not all(f.get("lat_p99_us") for f in runs):
                bad.append("%s: fio %s has no p99" % (b, j))
            elif b not in LOCAL and not all(f.get("packets_per_request") for f in runs):
                bad.append("%s: fio %s has no RDMA packets per request (packets-JOB-N.txt)" % (b, j))
        # The fio jobs measured what the backend stands for: its engine, and for
        # rswap-poll requests on the poll queues.
        got, want = engines(e), ENGINE.get(b, "libaio")
        if b not in SWAP_ONLY and got and got != [want]:
            bad.append("%s: fio ran with %s, not %s" % (b, ", ".join(got), want))
        if b == "rswap-poll":
            q = e.get("queues") or {}
            if not q.get("poll_queues") or set(q.get("io_poll") or [0]) != {1} \
                    or not q.get("poll_requests"):
                bad.append("rswap-poll: polled I/O did not reach poll queues (%s)"
                           % (q or "no queues.txt"))
        if b in REMOTE_MEM and not g(e, "remote_memory", "per_gib_swap"):
            bad.append("%s: no remote memory figure (remote-mem.txt)" % b)
        if b in FIO_ONLY or "swap" in skip:
            continue
        sw = e.get("swap")
        runs = (sw or {}).get("runs") or []
        want = res["env"].get("swap_runs", 1)
        if not swap_ok(sw) or len(runs) < want or any(
                r.get("wall_s", 0) <= 0 or r.get("pswpout", 0) <= 0
                or g(r, "swapload", "bad_pages") != 0 for r in runs):
            bad.append("%s: the swap workload's %s runs did not all complete with data "
                       "verified and pages swapped out (%s)" % (b, want, runs or sw))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--host-env", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    host_env = json.load(open(a.host_env))
    res = load(a.raw, host_env)
    table = compute(res)
    md = markdown(res, table)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(md)
    if a.plot and plot(res, table, os.path.join(a.out, "bench.png")):
        res["plot"] = "bench.png"
    problems = check(res)
    res["problems"] = problems
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=False)
        f.write("\n")
    sys.stdout.write(md)
    if problems:
        print("\nproblems:\n" + "\n".join("- " + p for p in problems))
    if a.check and problems:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
