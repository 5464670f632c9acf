# SPDX-License-Identifier: GPL-2.0
# Helpers of the host side of the guest runs (scripts/check.sh, tests/host/*.sh): what one
# suite printed in a guest's console, and the kernel log check of a whole boot. Source
# it after scripts/common.sh.

# suite_body CONSOLE SUITE: the lines SUITE printed in CONSOLE (tests/guest/run-all.sh's
# begin and end markers around them), its end marker last; nothing if it never began.
suite_body() {
	awk -v s="$2" '$0 == "# rswap-suite-begin: " s { on = 1; next }
		on && index($0, "# rswap-suite-end: " s) == 1 { print; exit } on { print }' "$1"
}

# A kernel line ("[  12.345678] ...", so test names that mention these words don't count)
# reporting a bug.
KERNEL_BAD='^\[ *[0-9]+\.[0-9]+\] .*(BUG:|Oops|KASAN|WARNING:|possible circular locking|kernel BUG|general protection)'

# kernel_log SERIAL: the kernel log of a boot (its serial console) without the reports of a
# known soft-RoCE race with no rswap frame (tests/lib/kernel-log-filter.awk says which).
kernel_log() { awk -f "$RSWAP_TOP/tests/lib/kernel-log-filter.awk" "$1" 2>/dev/null; }

# kernel_log_bad SERIAL: the bug reports in that log with three lines of context each;
# fails (and prints nothing) when there are none.
kernel_log_bad() { kernel_log "$1" | grep -E -A3 "$KERNEL_BAD"; }
