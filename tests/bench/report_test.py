#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host test of tests/bench/report.py's redundant swap rows (run by scripts/check.sh): on a
raw folder it makes itself (rswap, rswap-md1, rswap-4+2 and rswap-2+1 only), the remote
memory per GiB of swap is what the servers allocated over the swap device's size, the
"Redundant swap" table and its three targets show the ratios of the medians with pass or
MISS, and --check accepts what --quick left out (env quick_skip) but nothing else
missing."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BACKENDS = ["rswap", "rswap-md1", "rswap-4+2", "rswap-2+1", "rswap-4+2-d0"]
IDS = ["rswap", "rswap_md", "rswap_ec42", "rswap_ec21", "rswap_ec42_d0"]
# rswap-4+2-d0 runs its fio jobs only: no swap workload, no remote memory of its own.
FIO_ONLY = ["rswap-4+2-d0"]
JOBS = ["rr_qd1", "rw_qd1", "rr_qd32", "rw_qd32", "seqread"]
MIB = 2**20
# Per backend: (servers, allocated MiB, swap device MiB), the QD32 read IOPS of its rounds,
# and its swap wall times.
REMOTE = {"rswap": (1, 24, 24), "rswap-md1": (2, 80, 40), "rswap-4+2": (6, 36, 24),
          "rswap-2+1": (3, 36, 24)}
IOPS = {"rswap": [1000, 1200, 1100], "rswap-md1": [900, 900, 900], "rswap-4+2": [500, 700, 600],
        "rswap-2+1": [800, 800, 800], "rswap-4+2-d0": [770, 770, 770]}
WALL = {"rswap": [9.0, 10.0, 11.0], "rswap-md1": [10.0, 10.0, 10.0], "rswap-4+2": [11.0, 12.0, 13.0],
        "rswap-2+1": [14.0, 15.0, 16.0]}
# RDMA packets per QD32 read request and, over the 30 pages of a swap run, per page.
PACKETS = {"rswap": 5, "rswap-md1": 5, "rswap-4+2": 10, "rswap-2+1": 8, "rswap-4+2-d0": 8}
SWAP_PACKETS = {"rswap": 150, "rswap-md1": 240, "rswap-4+2": 300, "rswap-2+1": 270}


def dump(obj, *path):
    with open(os.path.join(*path), "w") as f:
        json.dump(obj, f)


def fio(job, iops, t):
    side = {"io_bytes": 4096 * iops, "iops": iops, "bw": iops * 4,
            "lat_ns": {"mean": 1e9 / iops, "percentile": {"99.000000": 2e9 / iops}},
            "clat_ns": {"mean": 1e9 / iops}, "runtime": 1000, "total_ios": iops}
    idle = {"io_bytes": 0, "iops": 0, "bw": 0}
    read = job in ("rr_qd1", "rr_qd32", "seqread")
    return {"timestamp": t, "jobs": [{"jobname": job, "error": 0, "job options": {"ioengine": "libaio"},
                                      "read": side if read else idle, "write": idle if read else side}]}


def swap(wall, packets):
    return {"device": "/dev/x", "rc": 0, "wall_s": wall, "pswpin": 10, "pswpout": 20, "swap_ra": 0,
            "rdma_packets": packets, "mib": 8, "limit_mib": 4}


class RedundantSwap(unittest.TestCase):
    def make(self, d, repeats=3, quick_skip=None, status=None, no_mem=()):
        """A raw folder of a run of the four backends with REMOTE, IOPS and WALL (every
        fio job but rr_qd32 at 100 IOPS); what quick_skip (labels, LABEL:WHAT) names is
        left out of it as client.sh --quick leaves it out."""
        q = quick_skip or []
        dump({"repeats": repeats, "swap_runs": repeats, "backends": BACKENDS, "selected": IDS,
              "quick_skip": q, "quick": bool(q)}, d, "env.json")
        with open(os.path.join(d, "status.tsv"), "w") as st:
            for b in BACKENDS:
                s = (status or {}).get(b, "ok")
                st.write("%s\t%s\t%s\t%s\n" % (b, s, "-" if s == "n/a" else "/dev/x",
                                               "not run" if s == "n/a" else "desc"))
                bd = os.path.join(d, b)
                os.makedirs(bd)
                if s == "n/a" or b in q:
                    continue
                if b not in no_mem and b not in FIO_ONLY:
                    n, alloc, dev = REMOTE[b]
                    with open(os.path.join(bd, "remote-mem.txt"), "w") as f:
                        f.write("servers=%d allocated_bytes=%d device_bytes=%d\n"
                                % (n, alloc * MIB, dev * MIB))
                for r in range(1, repeats + 1):
                    if r > 1 and b + ":later" in q:
                        continue
                    for j in JOBS:
                        if b + ":fio" not in q and b + ":" + j not in q:
                            dump(fio(j, IOPS[b][r - 1] if j == "rr_qd32" else 100, 1000 * r),
                                 bd, "fio-%s-%d.json" % (j, r))
                            with open(os.path.join(bd, "packets-%s-%d.txt" % (j, r)), "w") as f:
                                f.write("packets=%d requests=1000\n" % (PACKETS[b] * 1000))
                    if b + ":swap" not in q and b not in FIO_ONLY:
                        dump(swap(WALL[b][r - 1], SWAP_PACKETS[b]), bd, "swap-%d.json" % r)
                        dump({"majflt": 5, "bad_pages": 0}, bd, "swapload-%d.json" % r)
        dump({"date": "2026-11-28", "accelerator": "tcg"}, d, "host-env.json")

    def report(self, d):
        p = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), "--raw", d,
                            "--host-env", os.path.join(d, "host-env.json"), "--out",
                            os.path.join(d, "out"), "--check"], capture_output=True, text=True)
        with open(os.path.join(d, "out", "results.json")) as f:
            return p, json.load(f)

    def test_table_and_targets(self):
        with tempfile.TemporaryDirectory() as d:
            self.make(d)
            p, res = self.report(d)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            per = {b: res["backends"][b]["remote_memory"]["per_gib_swap"] for b in BACKENDS
                   if b not in FIO_ONLY}
            self.assertEqual(per, {"rswap": 1.0, "rswap-md1": 2.0, "rswap-4+2": 1.5, "rswap-2+1": 1.5})
            t = {x["key"]: x for x in res["targets"]}
            # Wall time: medians 12 / 10; remote memory 1.5 / 2; QD32 read IOPS 600 / 1100.
            self.assertAlmostEqual(t["ec42_swap_wall_time_vs_md1"]["ratio"], 1.2)
            self.assertTrue(t["ec42_swap_wall_time_vs_md1"]["pass"])
            self.assertAlmostEqual(t["ec42_remote_memory_vs_md1"]["ratio"], 0.75)
            self.assertTrue(t["ec42_remote_memory_vs_md1"]["pass"])
            self.assertAlmostEqual(t["ec42_qd32_read_iops_vs_rswap"]["ratio"], 600 / 1100)
            self.assertFalse(t["ec42_qd32_read_iops_vs_rswap"]["pass"])
            self.assertEqual([t["ec42_qd32_read_iops_vs_rswap"][k] for k in ("ratio_min", "ratio_max")],
                             [500 / 1200, 700 / 1000])
            md = p.stdout
            head = "| metric | better | rswap | rswap-md1 | rswap-4+2 | rswap-2+1 | rswap-4+2-d0 | " \
                   "rswap-4+2/rswap-md1 | rswap-2+1/rswap-md1 | rswap-4+2/rswap | rswap-2+1/rswap | " \
                   "rswap-4+2-d0/rswap |"
            self.assertIn("Redundant swap: ", md)
            self.assertIn(head, md)
            self.assertIn("| remote memory per GiB of swap (GiB) | lower | 1.00 | 2.00 | 1.50 | 1.50 | - | "
                          "0.75x | 0.75x | 1.50x | 1.50x | n/a |", md)
            self.assertIn("| 4K rand read QD32x2, IOPS | higher | 1100 (1000-1200) | 900 | 600 (500-700) "
                          "| 800 | 770 | 0.67x | 0.89x | 0.55x | 0.73x | 0.70x |", md)
            self.assertIn("| swap workload, wall time (s) | lower | 10.0 (9.00-11.0) | 10.0 | 12.0 "
                          "(11.0-13.0) | 15.0 (14.0-16.0) | - | 1.20x | 1.50x | 1.20x | 1.50x | n/a |", md)
            # Packets per request and per page swapped, and their ratios.
            self.assertIn("| 4K rand read QD32x2, RDMA packets per request |  | 5.00 | 5.00 | 10.0 | 8.00 "
                          "| 8.00 | 2.00x | 1.60x | 2.00x | 1.60x | 1.60x |", md)
            self.assertIn("| swap workload, RDMA packets per page swapped |  | 5.00 | 8.00 | 10.0 | 9.00 "
                          "| - | 1.25x | 1.12x | 2.00x | 1.80x | n/a |", md)
            self.assertNotIn("rswap-4+2-d0: no remote memory figure", md)
            self.assertIn("- rswap-4+2: 6 servers allocated 36.0 MiB for 24.0 MiB of swap device: "
                          "1.50 GiB per GiB of swap.", md)
            # The three targets are under the redundant table, not the main one.
            tail = md[md.index("Redundant swap targets"):]
            for line in ["| swap workload wall time, rswap-4+2 / rswap-md1 (medians of 3 repeats) "
                         "| 1.20x (1.10-1.30x) | <= 1.20x | pass |",
                         "| remote memory per GiB of swap, rswap-4+2 / rswap-md1 | 0.75x | <= 0.75x | pass |",
                         "| 4K rand read QD32x2 IOPS, rswap-4+2 / rswap (medians of 3 repeats) "
                         "| 0.55x (0.42-0.70x) | >= 0.80x | MISS |"]:
                self.assertIn(line, tail)
            self.assertNotIn("rswap-4+2 / rswap-md1", md[:md.index("Redundant swap: ")])
            # The main table has no remote memory row.
            self.assertEqual(md.count("| remote memory per GiB of swap (GiB) |"), 1)

    def test_quick_skip(self):
        """What --quick leaves out (rswap-2+1 whole, rswap-md1's fio jobs, rswap-4+2's
        swap workload, later rounds and every fio job but rr_qd32) is not asked for; the
        remote memory target is still computed."""
        q = ["rswap-2+1", "rswap-md1:fio", "rswap-4+2:swap", "rswap-4+2:later"] + \
            ["rswap-4+2:" + j for j in JOBS if j != "rr_qd32"]
        with tempfile.TemporaryDirectory() as d:
            self.make(d, repeats=2, quick_skip=q, status={"rswap-2+1": "n/a"})
            p, res = self.report(d)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(res["problems"], [])
            ec = res["backends"]["rswap-4+2"]
            self.assertEqual(list(ec["fio"]), ["rr_qd32"])
            self.assertEqual(len(ec["fio"]["rr_qd32"]["runs"]), 1)
            self.assertNotIn("swap", ec)
            self.assertNotIn("fio", res["backends"]["rswap-md1"])
            self.assertIn("later", ec["quick_skipped"])
            t = {x["key"]: x for x in res["targets"]}
            self.assertAlmostEqual(t["ec42_remote_memory_vs_md1"]["ratio"], 0.75)
            self.assertIsNone(t["ec42_swap_wall_time_vs_md1"]["pass"])
            self.assertAlmostEqual(t["ec42_qd32_read_iops_vs_rswap"]["ratio"], 500 / 1100)
            self.assertIn("- rswap-4+2: /dev/x, desc; fio engine libaio; no swap workload (left out "
                          "by --quick)", p.stdout)

    def test_check_finds_missing(self):
        """--check fails on a missing remote memory figure or packet count, and on a fio
        job or swap workload missing that --quick did not leave out."""
        with tempfile.TemporaryDirectory() as d:
            self.make(d, no_mem=("rswap-4+2",))
            os.remove(os.path.join(d, "rswap-md1", "fio-rr_qd1-2.json"))
            os.remove(os.path.join(d, "rswap-2+1", "swap-3.json"))
            os.remove(os.path.join(d, "rswap", "packets-rr_qd32-2.txt"))
            p, res = self.report(d)
            self.assertEqual(p.returncode, 1)
            probs = "\n".join(res["problems"])
            self.assertIn("rswap-4+2: no remote memory figure", probs)
            self.assertIn("rswap-md1: fio rr_qd1: 2 of 3 repeats", probs)
            self.assertIn("rswap-2+1: the swap workload's 3 runs", probs)
            self.assertIn("rswap: fio rr_qd32 has no RDMA packets per request", probs)

    def test_left_out(self):
        """A run without the redundant backends (RSWAP_BENCH_BACKENDS, or a harness before
        them) has no redundant table; either of their ids or labels selects them."""
        with tempfile.TemporaryDirectory() as d:
            self.make(d)
            with open(os.path.join(d, "env.json")) as f:
                env = json.load(f)
            env["selected"] = ["rswap", "rswap-md1"]
            dump(env, d, "env.json")
            p, _ = self.report(d)
            self.assertNotIn("Redundant swap", p.stdout)
            env["selected"] = ["rswap", "rswap_md", "rswap-4+2"]
            dump(env, d, "env.json")
            p, _ = self.report(d)
            self.assertIn("| metric | better | rswap | rswap-md1 | rswap-4+2 | rswap-4+2/rswap-md1 | "
                          "rswap-4+2/rswap |", p.stdout)
            env["selected"] = None
            env["backends"] = ["rswap", "rswap-md1"]
            dump(env, d, "env.json")
            p, _ = self.report(d)
            self.assertNotIn("Redundant swap", p.stdout)


if __name__ == "__main__":
    unittest.main()
