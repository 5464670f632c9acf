#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Put a `make bench` run's table into Documentation/benchmarks.md, "Latest results": the
# text between the markers <!-- bench-results:start --> and <!-- bench-results:end -->
# becomes a line saying where the run came from, then OUT/table.md as it is.
#   scripts/bench-doc.sh OUT [NOTE]
#     OUT   the run's results folder (holds table.md and host-env.json)
#     NOTE  a sentence about the run (e.g. "fresh clone of main after the encryption merge")
. "$(dirname "$0")/common.sh"
[ $# -ge 1 ] || die "usage: scripts/bench-doc.sh OUT [NOTE]"
out=$1 note=${2:-}
[ -f "$out/table.md" ] && [ -f "$out/host-env.json" ] || die "$out has no table.md and host-env.json"
python3 - "$RSWAP_TOP/Documentation/benchmarks.md" "$out" "$note" <<'PY'
import json, os, sys
doc, out, note = sys.argv[1:4]
env = json.load(open(os.path.join(out, "host-env.json")))
table = open(os.path.join(out, "table.md")).read().strip()
wall = int(env.get("wall_s", 0))
head = ("`make bench` at git %s, %s, %s, %d min %d s; results folder `%s`%s." % (
    env.get("git_revision", "?"), env.get("mode", "?"), env.get("date", "?"), wall // 60,
    wall % 60, os.path.relpath(out, os.path.dirname(os.path.dirname(doc)))
    if out.startswith(os.path.dirname(os.path.dirname(doc))) else out,
    (": " + note.rstrip(".")) if note else ""))
text = open(doc).read()
start, end = "<!-- bench-results:start -->", "<!-- bench-results:end -->"
i, j = text.find(start), text.find(end)
if i < 0 or j < i:
    sys.exit("bench-doc: the markers are not in " + doc)
text = text[:i + len(start)] + "\n" + head + "\n\n" + table + "\n" + text[j:]
open(doc, "w").write(text)
print("bench-doc: wrote the run of %s into %s" % (out, doc))
PY
