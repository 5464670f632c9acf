#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host test of tests/bench/apps_report.py (run by scripts/check.sh): on a raw folder it
makes itself, the slowdown is the median time over the all-local median, the targets are
the issue's ratios at 50%, and --check finds a wrong output, a missing run and a backend
that did not come up, and passes a complete run."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BACKENDS = ["zram-lz4", "zram-zstd", "virtio-disk", "nvme-rdma", "rswap", "rswap-enc",
            "zswap-rswap", "rswap-md1"]
APPS = ["kv", "qsort", "stream"]
FRACTIONS = [100, 50]


def dump(obj, *path):
    with open(os.path.join(*path), "w") as f:
        json.dump(obj, f)


def load(*path):
    with open(os.path.join(*path)) as f:
        return f.read()


def record(app, time_s, written=4096, ok=True):
    o = {"time_s": time_s}
    if app == "kv":
        o.update(bad=0 if ok else 1, checked=10, ops_per_s=100.0, p99_us=50.0)
    else:
        o.update(sorted=1 if ok else 0, checksum_ok=1)
    return {"app": app, "rc": 0 if ok else 1, "wall_s": time_s + 0.5, "max_kb": None,
            "high_kb": None, "peak_kb": 1000, "oom_kill": 0,
            "vmstat": {"pswpin": 1, "pswpout": 2, "zswpin": 0, "zswpout": 0, "zswpwb": 0},
            "devices": {"rswap0": {"read_bytes": 4096, "write_bytes": written}}, "out": o}


class AppsReport(unittest.TestCase):
    def make(self, d, repeats=3, skip=None, bad=None, status=None):
        """A raw folder: all-local times 2, 4, 6 (median 4); a backend's time at FRACTION
        is 4 * (its index + 1) * (100 / FRACTION) in each repeat; kv's rswap-family writes
        are 8 KiB a run, zswap-rswap's 2 KiB."""
        dump({"mode": "default", "repeats": repeats, "fractions": FRACTIONS, "apps": APPS,
              "backends": BACKENDS, "selected": None}, d, "env.json")
        os.makedirs(os.path.join(d, "local"))
        for a in APPS:
            for r in range(1, repeats + 1):
                dump(record(a, 2.0 * r), d, "local", "%s-%d.json" % (a, r))
        with open(os.path.join(d, "status.tsv"), "w") as st:
            for i, b in enumerate(BACKENDS):
                st.write("%s\t%s\t/dev/x\tdesc\n" % (b, (status or {}).get(b, "ok")))
                os.makedirs(os.path.join(d, b))
                for a in APPS:
                    for f in FRACTIONS:
                        for r in range(1, repeats + 1):
                            name = "%s-f%d-%d" % (a, f, r)
                            if name == skip and b == "rswap":
                                continue
                            rec = record(a, 4.0 * (i + 1) * 100 / f,
                                         2048 if b == "zswap-rswap" else 8192,
                                         ok=not (name == bad and b == "rswap"))
                            dump(rec, d, b, name + ".json")

    def report(self, **kw):
        with tempfile.TemporaryDirectory() as d:
            raw, out = os.path.join(d, "raw"), os.path.join(d, "out")
            os.makedirs(raw)
            self.make(raw, **kw)
            host = os.path.join(d, "host.json")
            dump({"date": "now", "git_revision": "x", "accelerator": "tcg",
                  "mode": "two-guests", "wall_s": 1}, host)
            p = subprocess.run([sys.executable, os.path.join(HERE, "apps_report.py"), "--raw", raw,
                                "--host-env", host, "--out", out, "--check"],
                               capture_output=True, text=True)
            return p.returncode, json.loads(load(out, "results.json")), load(out, "table.md")

    def test_complete_run(self):
        rc, res, table = self.report()
        self.assertEqual(rc, 0, res["problems"])
        self.assertEqual(res["problems"], [])
        rs = res["apps"]["qsort"]["backends"]["rswap"]["50"]
        # rswap is the fifth backend: 4 * 5 * 2 = 40 s against the all-local median of 4 s.
        self.assertAlmostEqual(rs["slowdown"], 10.0)
        self.assertEqual(rs["slowdown_range"], [10.0, 10.0])
        self.assertEqual(res["apps"]["qsort"]["local"]["time_s"], 4.0)
        self.assertIn("| qsort | 50% | 4.00 |", table)
        t = {x["key"]: x for x in res["targets"]}
        # rswap (5th) over nvme-rdma (4th), rswap-enc (6th) over rswap, writes 8 KiB / 2 KiB.
        self.assertAlmostEqual(t["qsort_rswap_vs_nvme"]["ratio"], 5 / 4)
        self.assertFalse(t["qsort_rswap_vs_nvme"]["met"])
        self.assertAlmostEqual(t["kv_enc_vs_rswap"]["ratio"], 6 / 5)
        self.assertAlmostEqual(t["kv_zswap_write_cut"]["ratio"], 4.0)
        self.assertTrue(t["kv_zswap_write_cut"]["met"])

    def test_wrong_output(self):
        rc, res, table = self.report(bad="kv-f50-2")
        self.assertEqual(rc, 1)
        self.assertTrue(any("kv on rswap at 50%" in p for p in res["problems"]), res["problems"])
        self.assertIn("!", table)

    def test_missing_run(self):
        rc, res, _ = self.report(skip="stream-f100-3")
        self.assertEqual(rc, 1)
        self.assertTrue(any("stream on rswap at 100%: 2 runs of 3" in p for p in res["problems"]),
                        res["problems"])

    def test_backend_not_up(self):
        rc, res, _ = self.report(status={"zram-zstd": "partial"})
        self.assertEqual(rc, 1)
        self.assertTrue(any(p.startswith("zram-zstd: partial") for p in res["problems"]))


if __name__ == "__main__":
    unittest.main()
