# SPDX-License-Identifier: GPL-2.0
# KTAP output helpers for rswap's kselftest-style scripts (source, do not run).
#
#   ktap_plan N                 "1..N" (call once, first)
#   ktap_pass "name"            "ok K name"
#   ktap_fail "name" [why]      "not ok K name" (+ "# why")
#   ktap_skip "name" "reason"   "ok K name # SKIP reason"
#   ktap_check "name" CMD...    pass if CMD succeeds, else fail with its output
#   ktap_finish                 exits 0 when nothing failed, 1 otherwise
# Diagnostics go out as "# ..." lines. Counters live in the sourcing shell.

KTAP_N=0 KTAP_PASS=0 KTAP_FAIL=0 KTAP_SKIP=0 KTAP_PLAN=
ktap_plan() { KTAP_PLAN=$1; echo "KTAP version 1"; echo "1..$1"; }
ktap_diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
ktap_pass() { KTAP_N=$((KTAP_N + 1)); KTAP_PASS=$((KTAP_PASS + 1)); echo "ok $KTAP_N $1"; }
ktap_fail() {
	KTAP_N=$((KTAP_N + 1)); KTAP_FAIL=$((KTAP_FAIL + 1))
	[ -z "${2:-}" ] || ktap_diag "$2"
	echo "not ok $KTAP_N $1"
}
ktap_skip() { KTAP_N=$((KTAP_N + 1)); KTAP_SKIP=$((KTAP_SKIP + 1)); echo "ok $KTAP_N $1 # SKIP $2"; }
ktap_check() {
	local name=$1 out; shift
	if out=$("$@" 2>&1); then ktap_pass "$name"; else ktap_fail "$name" "$out"; fi
}
# For scripts that list their test names in an array NAMES (planned with
# `ktap_plan ${#NAMES[@]}`): the current test's name, and skipping all that is left.
ktap_name() { echo "${NAMES[$KTAP_N]}"; }
ktap_skip_rest() {
	while [ "$KTAP_N" -lt "${#NAMES[@]}" ]; do ktap_skip "$(ktap_name)" "$1"; done
	ktap_finish
}
ktap_finish() {
	if [ -n "$KTAP_PLAN" ] && [ "$KTAP_N" != "$KTAP_PLAN" ]; then
		ktap_diag "planned $KTAP_PLAN tests but ran $KTAP_N"
		KTAP_FAIL=$((KTAP_FAIL + 1))
	fi
	ktap_diag "totals: pass:$KTAP_PASS fail:$KTAP_FAIL skip:$KTAP_SKIP"
	[ "$KTAP_FAIL" -eq 0 ]
	exit $?
}
