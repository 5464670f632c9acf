#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A self-test of tests/lib/ktap.sh, run on the host by scripts/check.sh: small suites run
# in a child shell, their whole output and exit status compared with what they must be.
# Prints KTAP itself.
#   bash tests/lib/ktap-selftest.sh
KTAP_SH=$(cd "$(dirname "$0")" && pwd)/ktap.sh
# shellcheck source=tests/lib/ktap.sh
. "$KTAP_SH"

# sample BODY: runs BODY in a new shell that sourced ktap.sh; its stdout and stderr in
# $OUT, its exit status in $RC.
OUT='' RC=''
sample() {
	OUT=$(env -u KTAP_LIST bash -c ". \"$KTAP_SH\"; $1" 2>&1)
	RC=$?
}
# expect RC TEXT: the last sample exited RC and printed exactly TEXT.
expect() {
	if [ "$RC" = "$1" ] && [ "$OUT" = "$2" ]; then
		ktap_pass
	else
		ktap_fail "$(printf 'exit %s (want %s); output, diff from the expected:\n' "$RC" "$1"
			diff <(printf '%s\n' "$2") <(printf '%s\n' "$OUT"))"
	fi
}

t_plan() {
	sample '
		a() { ktap_pass; }
		ktap_test "first" a
		ktap_test "second" a
		ktap_test "third" a
		ktap_run'
	expect 0 "KTAP version 1
1..3
ok 1 first
ok 2 second
ok 3 third
# totals: pass:3 fail:0 skip:0"
}
ktap_test "the plan is the number of registered tests, run in the order registered" t_plan

t_fail() {
	sample '
		a() { ktap_pass; }
		b() { ktap_diag "before"; ktap_fail "the reason
on two lines"; }
		ktap_test "passes" a
		ktap_test "fails" b
		ktap_test "passes too" a
		ktap_run'
	expect 1 "KTAP version 1
1..3
ok 1 passes
# before
# the reason
# on two lines
not ok 2 fails
ok 3 passes too
# totals: pass:2 fail:1 skip:0"
}
ktap_test "a failing test prints its diagnostics, then not ok; the suite goes on and exits 1" t_fail

t_skip() {
	sample '
		a() { ktap_skip "no device"; }
		ktap_test "needs a device" a
		ktap_run'
	expect 0 "KTAP version 1
1..1
ok 1 needs a device # SKIP no device
# totals: pass:0 fail:0 skip:1"
}
ktap_test "a skipped test prints ok with the SKIP directive and its reason" t_skip

t_check() {
	sample '
		ktap_test "true" ktap_check true
		ktap_test "a command that fails" ktap_check sh -c "echo out; echo err >&2; exit 3"
		ktap_run'
	expect 1 "KTAP version 1
1..2
ok 1 true
# out
# err
not ok 2 a command that fails
# totals: pass:1 fail:1 skip:0"
}
ktap_test "ktap_check passes on success and fails with the command's output" t_check

t_args() {
	# shellcheck disable=SC2016 # expanded by the child shell
	sample '
		eq() { [ "$1" = "a b" ] && [ "$2" = "\$x;" ] && [ $# = 2 ] && ktap_pass; }
		ktap_test "arguments" eq "a b" "\$x;"
		ktap_test "arguments as given" ktap_check [ "x y" = "x y" ]
		none() { [ $# = 0 ] && ktap_pass; }
		ktap_test "no arguments" none
		ktap_run'
	expect 0 "KTAP version 1
1..3
ok 1 arguments
ok 2 arguments as given
ok 3 no arguments
# totals: pass:3 fail:0 skip:0"
}
ktap_test "a test's arguments reach its function unchanged" t_args

t_forgot() {
	sample '
		silent() { :; }
		twice() { ktap_pass; ktap_fail "second"; }
		ktap_test "reports nothing" silent
		ktap_test "reports twice" twice
		ktap_test "has no function" nosuchfn
		ktap_run'
	expect 1 "KTAP version 1
1..3
# ktap: silent reported no result
not ok 1 reports nothing
# second
# ktap: twice reported more than one result: ok fail
not ok 2 reports twice
# ktap: no function nosuchfn for this test
not ok 3 has no function
# totals: pass:0 fail:3 skip:0"
}
ktap_test "a test that reports nothing, reports twice or has no function is not ok" t_forgot

t_skip_rest() {
	sample '
		a() { ktap_pass; }
		b() { ktap_fail "no server"; ktap_skip_rest "the server did not start"; }
		c() { ktap_skip_rest "no device"; }
		ktap_test "one" a
		ktap_test "two" b
		ktap_test "three" a
		ktap_test "four" c
		ktap_run'
	expect 1 "KTAP version 1
1..4
ok 1 one
# no server
not ok 2 two
ok 3 three # SKIP the server did not start
ok 4 four # SKIP the server did not start
# totals: pass:1 fail:1 skip:2"
}
ktap_test "ktap_skip_rest skips the running test (unless it reported) and every later one" t_skip_rest

t_skip_rest_unreported() {
	sample '
		a() { ktap_pass; }
		c() { ktap_diag "no device here"; ktap_skip_rest "no device"; }
		ktap_test "one" a
		ktap_test "two" c
		ktap_test "three" a
		ktap_run'
	expect 0 "KTAP version 1
1..3
ok 1 one
# no device here
ok 2 two # SKIP no device
ok 3 three # SKIP no device
# totals: pass:1 fail:0 skip:2"
}
ktap_test "ktap_skip_rest in a test that has not reported skips that test too" t_skip_rest_unreported

t_skip_setup() {
	sample '
		a() { ktap_pass; }
		setup() { ktap_skip_rest "no device"; }
		ktap_test "one" a
		ktap_test "two" a
		ktap_run setup'
	expect 0 "KTAP version 1
1..2
ok 1 one # SKIP no device
ok 2 two # SKIP no device
# totals: pass:0 fail:0 skip:2"
}
ktap_test "ktap_skip_rest in the SETUP of ktap_run skips every test" t_skip_setup

t_list() {
	OUT=$(KTAP_LIST=1 bash -c ". \"$KTAP_SH\"
		trap 'echo cleanup ran' EXIT
		a() { echo ran; ktap_pass; }
		ktap_test \"one\" a
		ktap_test \"two\" a
		ktap_run a" 2>&1)
	RC=$?
	expect 0 "one
two"
}
ktap_test "KTAP_LIST=1 lists the registered names and runs nothing, not even the EXIT trap" t_list

t_strict() {
	sample '
		set -euo pipefail
		a() { ktap_pass; }
		b() { ktap_diag "note"; ktap_fail "why"; }
		c() { ktap_skip "reason"; }
		r() { ktap_relay "ok 1 x" x; }
		ktap_test "passes" a
		ktap_test "fails" b
		ktap_test "skips" c
		ktap_test "relays" r
		ktap_test "checks" ktap_check true
		ktap_run'
	expect 1 "KTAP version 1
1..5
ok 1 passes
# note
# why
not ok 2 fails
ok 3 skips # SKIP reason
ok 4 relays
ok 5 checks
# totals: pass:3 fail:1 skip:1"
}
ktap_test "the library works under set -euo pipefail (as the host suites run)" t_strict

t_relay() {
	local text="KTAP version 1
1..4
# about one
ok 1 one
# about two
not ok 2 two
ok 3 three # SKIP why not
ok 4 four
# totals: pass:2 fail:1 skip:1"
	sample "
		TEXT='$text'
		r() { ktap_relay \"\$TEXT\" \"\$1\"; }
		ktap_test 'x: one' r one
		ktap_test 'x: two' r two
		ktap_test 'x: three' r three
		ktap_test 'x: five' r five
		ktap_run"
	expect 1 "KTAP version 1
1..4
# about one
ok 1 x: one
# about two
not ok 2 x: two
ok 3 x: three # SKIP why not
# no result for it in: # about two
# not ok 2 two
# ok 3 three # SKIP why not
# ok 4 four
# # totals: pass:2 fail:1 skip:1
not ok 4 x: five
# totals: pass:1 fail:2 skip:1"
}
ktap_test "ktap_relay reports another script's result for a name, with its diagnostics" t_relay

ktap_run
