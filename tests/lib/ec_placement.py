#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""ec_placement.py K R BLOCKS FILE REGION...: FILE, BLOCKS pages written at the start of a
K+R disk, is where the placement rule (Documentation/configuration.md) puts it in the
legs' region files REGION (leg 0 first, K+R of them): fragment j of block b on leg
(j + b / 8) mod (K + R), at byte b * 4096 / K of its region; with replication (K = 1)
every leg holds the whole block; with parity (K > 1) fragment K is P, the XOR of the
block's K data fragments. Q (fragment K + 1, RAID-6) is not checked here: reads that need
it are (57-ec's ec_lose).

Prints the fragments that are not where the rule says, a line each, block by block
("block B fragment J (leg L)", "block B parity (leg L)"), and exits 1 if there is any,
0 if none; 2 (with a line saying why) if it cannot check. tests/guest/57-ec.sh runs it
in the guest; tests/lib/ec_placement_test.py tests it on the host."""
import sys


def misplaced(k, r, blocks, data, regions):
    """The lines for the fragments of DATA (bytes) not where the rule puts them in
    REGIONS (bytes, a leg each: at least the first BLOCKS * 4096 / K bytes)."""
    n, f = k + r, 4096 // k
    for b in range(blocks):
        for j in range(n):
            leg = (j + b // 8) % n
            if k > 1 and j > k:
                continue
            got = regions[leg][b * f:(b + 1) * f]
            if k > 1 and j == k:
                p = 0
                for i in range(k):
                    w = b * k + i
                    p ^= int.from_bytes(data[w * f:(w + 1) * f], "little")
                if got != p.to_bytes(f, "little"):
                    yield f"block {b} parity (leg {leg})"
                continue
            # Replication: every fragment is the whole block; striping: bytes j * f of it.
            w = b if k == 1 else b * k + j
            if got != data[w * f:(w + 1) * f]:
                yield f"block {b} fragment {j} (leg {leg})"


def read_prefix(path, size):
    """The first SIZE bytes of PATH (fewer if it is shorter; none if it is missing: every
    fragment it should hold is then reported)."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as e:
        print(f"ec_placement.py: {path}: {e.strerror}", file=sys.stderr)
        return b""


def main(argv):
    try:
        k, r, blocks = int(argv[1]), int(argv[2]), int(argv[3])
        if k < 1 or r < 0 or 4096 % k or blocks < 0 or len(argv) != 5 + k + r:
            raise ValueError
    except (IndexError, ValueError):
        print("ec_placement.py: usage: ec_placement.py K R BLOCKS FILE REGION... (K + R regions)")
        return 2
    f = 4096 // k
    try:
        with open(argv[4], "rb") as fd:
            data = fd.read(blocks * 4096)
    except OSError as e:
        print(f"ec_placement.py: {argv[4]}: {e.strerror}")
        return 2
    if len(data) != blocks * 4096:
        print(f"ec_placement.py: {argv[4]}: {len(data)} bytes, not {blocks * 4096}")
        return 2
    regions = [read_prefix(p, blocks * f) for p in argv[5:]]
    bad = 0
    for line in misplaced(k, r, blocks, data, regions):
        print(line)
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
