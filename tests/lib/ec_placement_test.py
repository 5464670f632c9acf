#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host test of tests/lib/ec_placement.py, the placement and parity check of
tests/guest/57-ec.sh: on region files it lays out itself from a random file by the
placement rule (Documentation/configuration.md: leg L holds, of block b, fragment
(L - b / 8) mod (K + R), at byte b * 4096 / K), it accepts the layout of every code the
suite checks (4+0, 1+1, 1+2, 2+1, 4+2) and lists, the way the shell check did, a fragment
swapped with its neighbour's, a layout without the rotation, a flipped byte of a fragment
or of P, a short or missing region file; a flipped byte of Q is not its business."""
import os
import random
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ec_placement.py")
BLOCKS = 16


def layout(k, r, data, rotate=True):
    """The K + R legs' regions (bytearrays) holding DATA (BLOCKS pages), written leg by leg:
    P the XOR of the data fragments, Q (r = 2) random bytes; 8 KiB more of random bytes
    after each, as a region is larger than what was written."""
    n, f, rnd = k + r, 4096 // k, random.Random(7)
    regions = [bytearray(rnd.randbytes(BLOCKS * f + 8192)) for _ in range(n)]
    for leg in range(n):
        for b in range(BLOCKS):
            j = (leg - (b // 8 if rotate else 0)) % n
            if k == 1:
                frag = data[b * 4096:(b + 1) * 4096]
            elif j < k:
                frag = data[(b * k + j) * f:(b * k + j + 1) * f]
            elif j == k:
                frag = bytearray(f)
                for i in range(k):
                    for x, byte in enumerate(data[(b * k + i) * f:(b * k + i + 1) * f]):
                        frag[x] ^= byte
            else:
                frag = rnd.randbytes(f)
            regions[leg][b * f:(b + 1) * f] = frag
    return regions


class Placement(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.data = random.Random(57).randbytes(BLOCKS * 4096)
        self.file = os.path.join(self.dir.name, "blocks")
        with open(self.file, "wb") as f:
            f.write(self.data)

    def tearDown(self):
        self.dir.cleanup()

    def check(self, k, r, regions, paths=None):
        """ec_placement.py on REGIONS, written to files (PATHS instead, if given): its exit
        code and its lines."""
        if paths is None:
            paths = []
            for leg, region in enumerate(regions):
                paths.append(os.path.join(self.dir.name, f"region-{leg}.mem"))
                with open(paths[-1], "wb") as f:
                    f.write(region)
        p = subprocess.run([sys.executable, SCRIPT, str(k), str(r), str(BLOCKS), self.file, *paths],
                           capture_output=True, text=True, check=False)
        return p.returncode, p.stdout.splitlines()

    def test_every_code_placed(self):
        for k, r in ((4, 0), (1, 1), (1, 2), (2, 1), (4, 2)):
            with self.subTest(code=f"{k}+{r}"):
                self.assertEqual(self.check(k, r, layout(k, r, self.data)), (0, []))

    def test_fragment_swapped(self):
        # 4+2: fragment 1 of blocks 9 and 10 (group 1: leg 2) swapped on that leg.
        regions = layout(4, 2, self.data)
        a, b = regions[2][9 * 1024:10 * 1024], regions[2][10 * 1024:11 * 1024]
        regions[2][9 * 1024:11 * 1024] = b + a
        self.assertEqual(self.check(4, 2, regions),
                         (1, ["block 9 fragment 1 (leg 2)", "block 10 fragment 1 (leg 2)"]))
        # 1+2: block 3 and 4 swapped on leg 1 (every leg holds every block).
        regions = layout(1, 2, self.data)
        a, b = regions[1][3 * 4096:4 * 4096], regions[1][4 * 4096:5 * 4096]
        regions[1][3 * 4096:5 * 4096] = b + a
        self.assertEqual(self.check(1, 2, regions),
                         (1, ["block 3 fragment 1 (leg 1)", "block 4 fragment 1 (leg 1)"]))

    def test_no_rotation(self):
        # Group 1 (blocks 8 to 15) where group 0's legs are: every fragment of it, and P.
        want = [f"block {b} fragment {j} (leg {(j + 1) % 3})" if j < 2 else f"block {b} parity (leg 0)"
                for b in range(8, 16) for j in range(3)]
        self.assertEqual(self.check(2, 1, layout(2, 1, self.data, rotate=False)), (1, want))
        want = [f"block {b} fragment {j} (leg {(j + 1) % 4})" for b in range(8, 16) for j in range(4)]
        self.assertEqual(self.check(4, 0, layout(4, 0, self.data, rotate=False)), (1, want))

    def test_byte_flipped(self):
        # 4+0: block 5, fragment 3 (leg 3), its last byte.
        regions = layout(4, 0, self.data)
        regions[3][6 * 1024 - 1] ^= 0x01
        self.assertEqual(self.check(4, 0, regions), (1, ["block 5 fragment 3 (leg 3)"]))
        # 1+1: block 15 on leg 0, its first byte.
        regions = layout(1, 1, self.data)
        regions[0][15 * 4096] ^= 0x80
        self.assertEqual(self.check(1, 1, regions), (1, ["block 15 fragment 1 (leg 0)"]))

    def test_parity_flipped(self):
        # 2+1: P of block 3 on leg 2; 4+2: P of block 12 on leg (4 + 1) mod 6 = 5.
        regions = layout(2, 1, self.data)
        regions[2][3 * 2048 + 100] ^= 0x01
        self.assertEqual(self.check(2, 1, regions), (1, ["block 3 parity (leg 2)"]))
        regions = layout(4, 2, self.data)
        regions[5][12 * 1024 + 1023] ^= 0x40
        self.assertEqual(self.check(4, 2, regions), (1, ["block 12 parity (leg 5)"]))

    def test_q_not_checked(self):
        # 4+2: Q of block 2 is on leg 5, of block 8 on leg 0: not looked at.
        regions = layout(4, 2, self.data)
        regions[5][2 * 1024] ^= 0xff
        regions[0][8 * 1024 + 7] ^= 0xff
        self.assertEqual(self.check(4, 2, regions), (0, []))

    def test_short_or_missing_region(self):
        # 2+1: leg 0's region ends in the middle of block 14's P (leg (2 + 1) mod 3 = 0).
        regions = layout(2, 1, self.data)
        del regions[0][14 * 2048 + 1000:]
        self.assertEqual(self.check(2, 1, regions),
                         (1, ["block 14 parity (leg 0)", "block 15 parity (leg 0)"]))
        # 1+1: leg 1's region file missing: every block of it (fragment 1 of group 0,
        # fragment 0 of group 1).
        self.assertEqual(self.check(1, 1, layout(1, 1, self.data)), (0, []))
        paths = [os.path.join(self.dir.name, "region-0.mem"), os.path.join(self.dir.name, "none.mem")]
        self.assertEqual(self.check(1, 1, None, paths),
                         (1, [f"block {b} fragment {1 - b // 8} (leg 1)" for b in range(BLOCKS)]))

    def test_cannot_check(self):
        regions = layout(2, 1, self.data)
        rc, lines = self.check(4, 2, regions)  # 3 regions for 6 legs
        self.assertEqual((rc, len(lines)), (2, 1))
        self.assertIn("usage", lines[0])
        with open(self.file, "wb") as f:
            f.write(self.data[:4096])
        rc, lines = self.check(2, 1, regions)
        self.assertEqual((rc, lines), (2, [f"ec_placement.py: {self.file}: 4096 bytes, not {BLOCKS * 4096}"]))


if __name__ == "__main__":
    unittest.main()
