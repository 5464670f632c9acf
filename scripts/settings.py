#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks that the module's table of target settings (src/settings.rs) and rswapctl's
(tools/rswapctl/src/settings.rs) agree: the same settings, the same defaults, the same
number ranges; and that Documentation/configuration.md names every setting.

Prints one line per setting; exits 1 with the differences, 0 when there are none.
"""
import os
import re
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# A kernel row: { ID, NAME: TYPE = DEFAULT, PARSE, SHOW, LIVE, "DOC" }
KERNEL_ROW = re.compile(
    r"\{\s*(?P<id>\d+),\s*(?P<name>\w+):\s*(?P<ty>[^=]+?)\s*=\s*(?P<default>[^,]+?),\s*"
    r"(?P<parse>\|t\|\s*ranged\(t,\s*(?P<min>[\d_]+),\s*(?P<max>[\d_]+)\)|\w+),\s*"
    r"(?P<show>\w+),\s*(?P<live>true|false),\s*\"")
# An rswapctl row: Setting::new("NAME", KIND, ModuleDefault::WHAT[("TEXT")])
CTL_ROW = re.compile(
    r"Setting::new\(\s*\"(?P<name>\w+)\",\s*(?P<kind>.*?),\s*"
    r"ModuleDefault::(?P<default>\w+)(?:\(\"(?P<text>[^\"]*)\"\))?\s*,?\s*\)", re.S)
CTL_RANGE = re.compile(r"(?:number|ms)\(\s*([\d_]+),\s*([\d_]+)")


def num(text):
    return int(text.replace("_", ""))


def kernel_rows(text):
    body = text[text.index("macro_rules! for_each_setting"):]
    body = body[:body.index("pub(crate) use for_each_setting;")]
    rows = {}
    for m in KERNEL_ROW.finditer(body):
        rows[m["name"]] = m
    return rows


def kernel_default(m):
    """The default as rswapctl's ModuleDefault says it: (WHAT, TEXT)."""
    d = m["default"].strip()
    if d == "None":
        word = {"unset": "(unset)", "any": "(any)", "set_or_unset": "(unset)"}.get(m["show"])
        # A setting enable refuses to start without is rswapctl's Required.
        return ("Unset", word)
    if d == "cpus()":
        return ("Cpus", None)
    if d == "random()":
        return ("Random", None)
    if d.endswith("::EMPTY"):
        # A list (servers, secrets): none given.
        return ("Unset", "(none)")
    if d == "Code::PLAIN":
        return ("Value", "1+0")
    if d in ("false", "true"):
        return ("Value", "1" if d == "true" else "0")
    return ("Value", str(num(d)))


def main():
    ktext = open(os.path.join(TOP, "src/settings.rs"), encoding="utf-8").read()
    ctext = open(os.path.join(TOP, "tools/rswapctl/src/settings.rs"), encoding="utf-8").read()
    doc = open(os.path.join(TOP, "Documentation/configuration.md"), encoding="utf-8").read()
    # "enable: set size first" (configfs.rs), "set addr (or servers) first" (config_parse.rs,
    # the checks of a target's servers).
    checks = "".join(open(os.path.join(TOP, f), encoding="utf-8").read()
                     for f in ("src/configfs.rs", "src/config_parse.rs"))
    required = set(re.findall(r"\"(?:enable: )?set (\w+)(?: \(or \w+\))? first\"", checks))
    krows = kernel_rows(ktext)
    ctext = ctext[ctext.index("pub const SETTINGS"):]
    crows = {m["name"]: m for m in CTL_ROW.finditer(ctext)}
    errors = []
    if not krows:
        errors.append("src/settings.rs: no rows found in for_each_setting!")
    for name in sorted(set(krows) | set(crows)):
        k, c = krows.get(name), crows.get(name)
        if k is None:
            errors.append(f"{name}: in rswapctl's table, not in the module's")
            continue
        if c is None:
            errors.append(f"{name}: in the module's table, not in rswapctl's")
            continue
        what, text = kernel_default(k)
        if what == "Unset" and name in required:
            what, text = "Required", None
        got = (c["default"], c["text"])
        if (what, text) != got:
            errors.append(f"{name}: default: module {what}({text}), rswapctl {got[0]}({got[1]})")
        if k["min"] is not None:
            r = CTL_RANGE.search(c["kind"])
            want = (num(k["min"]), num(k["max"]))
            if r is None or (num(r[1]), num(r[2])) != want:
                errors.append(f"{name}: range: module {want}, rswapctl {c['kind'].strip()}")
        # The row's builder calls, up to the next row: `.live()` when the module takes a
        # new value while enabled.
        end = ctext.find("Setting::new", c.end())
        live = ".live()" in ctext[c.end():end if end >= 0 else len(ctext)]
        if live != (k["live"] == "true"):
            errors.append(f"{name}: live: module {k['live']}, rswapctl {'.live()' if live else 'not'}")
        if f"`{name}`" not in doc:
            errors.append(f"{name}: not in Documentation/configuration.md")
        print(f"{name}: attribute {k['id']}, default {what}({text or ''}), "
              f"{'live' if k['live'] == 'true' else 'fixed while enabled'}")
    for e in errors:
        print(f"MISMATCH {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
