#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks the layering of rswap.ko's crate (Documentation/design.md, "Layers").

Reads every .rs file under src/, takes the crate-level modules each layer names
(`crate::ib`, `use crate::{blk, ...}`), and checks:
  - the layers' imports form no loop;
  - each layer names only the layers below it that design.md allows;
  - src/disk/, src/configfs.rs and src/settings.rs have no `unsafe` at all.
Prints the import graph; exits 1 with the violations, 0 when there are none.
"""
import os
import re
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LAYERS = {"ib", "blk", "transport", "disk", "kernel_ext", "configfs",
          "config_parse", "settings", "rdma_client", "rswap_main"}
# The layers with no `unsafe` at all (block, fn or impl).
SAFE_LAYERS = {"disk", "configfs", "settings"}
# What each layer may name (besides itself).
ALLOWED = {
    "kernel_ext": set(),
    "config_parse": set(),
    "ib": {"kernel_ext"},
    "blk": {"kernel_ext"},
    "settings": {"ib", "kernel_ext", "config_parse"},
    "transport": {"ib", "kernel_ext", "settings"},
    "disk": {"blk", "transport", "kernel_ext", "config_parse", "settings"},
    "rdma_client": {"ib"},
    "configfs": {"disk", "kernel_ext", "config_parse", "settings"},
    "rswap_main": LAYERS,
}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def imports(text):
    names = set(re.findall(r"\bcrate::(\w+)", text))
    for block in re.findall(r"\buse\s+crate::\{(.*?)\};", text, flags=re.S):
        names |= set(re.findall(r"(?:^|[\s,{])(\w+)(?=\s*(?:::|,|\}|$))", block))
    return names & LAYERS


def main():
    graph = {}
    unsafe_in_disk = []
    for root, _, files in os.walk(os.path.join(TOP, "src")):
        for f in sorted(files):
            if not f.endswith(".rs") or f == "bindings_generated.rs":
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, os.path.join(TOP, "src"))
            layer = rel.split(os.sep)[0] if os.sep in rel else rel[:-3]
            text = strip_comments(open(path, encoding="utf-8").read())
            graph.setdefault(layer, set()).update(imports(text) - {layer})
            if layer in SAFE_LAYERS:
                for n, line in enumerate(text.splitlines(), 1):
                    if re.search(r"\bunsafe\b", line):
                        unsafe_in_disk.append(f"src/{rel}:{n}: {line.strip()}")
    bad = []
    for layer in sorted(graph):
        print(f"{layer} -> {', '.join(sorted(graph[layer])) or '(nothing)'}")
        extra = graph[layer] - ALLOWED.get(layer, set())
        if extra:
            bad.append(f"{layer} names {', '.join(sorted(extra))}, which it may not")
    # A loop between layers, by depth-first search.
    state = {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
            if not state.get(nxt):
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if not state.get(node):
            loop = visit(node, [node])
            if loop:
                bad.append("import loop: " + " -> ".join(loop))
                break
    bad += [f"unsafe outside the wrapper layers: {u}" for u in unsafe_in_disk]
    for b in bad:
        print("violation: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
