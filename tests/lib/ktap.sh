# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# KTAP output helpers for rswap's kselftest-style scripts (source, do not run).
#
# A suite's tests are shell functions, each registered by its name beside its code; the
# suite ends with ktap_run, which prints the plan (the number of tests registered) and
# runs them in the order they were registered:
#
#   t_insmod() { ktap_check rswap_load; }
#   ktap_test "module: insmod with no RDMA device" t_insmod
#   ...
#   ktap_run [SETUP]
#
#   ktap_test "name" FN [ARGS...]   register a test: FN ARGS... runs it
#   ktap_run [SETUP]                "KTAP version 1", "1..N"; then SETUP (a function, for
#                                   preconditions that may ktap_skip_rest), each test,
#                                   and exits 0 when nothing failed, 1 otherwise
# A test function reports exactly one result, for the test it runs:
#   ktap_pass                       "ok K name"
#   ktap_fail [why]                 "not ok K name" (+ "# why")
#   ktap_skip "reason"              "ok K name # SKIP reason"
#   ktap_check CMD...               pass if CMD succeeds, else fail with its output
#   ktap_relay TEXT NAME            what the KTAP TEXT (another script's output) says of
#                                   its test NAME, with the diagnostics before that line
# and may also use:
#   ktap_diag LINE...               "# LINE" for each
#   ktap_name                       the name of the test it runs
#   ktap_skip_rest "reason"         this test (unless it reported already) and every
#                                   later one skipped; then the suite ends
# The result line is printed when the function returns, after its diagnostics. A test
# that reports nothing, or more than once, is "not ok" with a diagnostic saying so.
# Tests run in the suite's shell, one after another: a test may use what an earlier one
# left (its comment says so).
# With KTAP_LIST=1 in the environment, ktap_run (and ktap_skip_rest) print the registered
# names, one a line, and exit without running anything. With KTAP_TIMES=FILE, each test
# appends "SECONDS<tab>NAME" to FILE when it ends, and SETUP "SECONDS<tab>(setup of
# SCRIPT)" (where a suite's time goes).

KTAP_N=0 KTAP_PASS=0 KTAP_FAIL=0 KTAP_SKIP=0 KTAP_PLAN=
KTAP_NAMES=() KTAP_FNS=() KTAP_ARGS=()
# The running test's index (empty between tests), its result (ok, fail, skip), the skip
# reason, and any results reported after the first.
KTAP_CUR='' KTAP_RES='' KTAP_WHY='' KTAP_MORE='' KTAP_T0=0

ktap_test() {
	local name=$1 fn=$2
	shift 2
	KTAP_NAMES+=("$name") KTAP_FNS+=("$fn") KTAP_ARGS+=("$([ $# = 0 ] || printf ' %q' "$@")")
}
ktap_plan() { KTAP_PLAN=$1; echo "KTAP version 1"; echo "1..$1"; }
# ktap_list: the names, and an exit that runs no EXIT trap (that would clean up after tests).
ktap_list() {
	trap - EXIT
	[ ${#KTAP_NAMES[@]} = 0 ] || printf '%s\n' "${KTAP_NAMES[@]}"
	exit 0
}
ktap_run() {
	[ -z "${KTAP_LIST:-}" ] || ktap_list
	ktap_plan ${#KTAP_NAMES[@]}
	KTAP_T0=$SECONDS
	[ -z "${1:-}" ] || "$1"
	[ -z "${KTAP_TIMES:-}" ] || printf '%s\t%s\n' $((SECONDS - KTAP_T0)) "(setup of $0)" >>"$KTAP_TIMES"
	while [ "$KTAP_N" -lt "${#KTAP_NAMES[@]}" ]; do
		KTAP_CUR=$KTAP_N KTAP_RES='' KTAP_WHY='' KTAP_MORE='' KTAP_T0=$SECONDS
		if declare -F "${KTAP_FNS[$KTAP_N]}" >/dev/null; then
			eval "${KTAP_FNS[$KTAP_N]}${KTAP_ARGS[$KTAP_N]}"
		else
			ktap_diag "ktap: no function ${KTAP_FNS[$KTAP_N]} for this test"
			KTAP_RES=fail
		fi
		ktap_emit
	done
	ktap_finish
}
ktap_name() { echo "${KTAP_NAMES[${KTAP_CUR:-$KTAP_N}]}"; }
ktap_diag() { printf '%s\n' "$@" | sed 's/^/# /'; }

# ktap_report ok|fail|skip [reason]: the running test's result; a second one is noted.
ktap_report() {
	if [ -z "$KTAP_CUR" ]; then
		ktap_diag "ktap: a $1 reported outside a test (${FUNCNAME[2]:-main}): not counted"
		KTAP_FAIL=$((KTAP_FAIL + 1))
	elif [ -n "$KTAP_RES" ]; then
		KTAP_MORE+=" $1"
	else
		KTAP_RES=$1 KTAP_WHY=${2:-}
	fi
}
ktap_pass() { ktap_report ok; }
ktap_fail() {
	[ -z "${1:-}" ] || ktap_diag "$1"
	ktap_report fail
}
ktap_skip() { ktap_report skip "$1"; }
ktap_check() {
	local out
	if out=$("$@" 2>&1); then ktap_pass; else ktap_fail "$out"; fi
}

# ktap_emit: the running test's result line, which ends it.
ktap_emit() {
	local res=$KTAP_RES fn=${KTAP_FNS[$KTAP_CUR]}
	if [ -z "$res" ]; then
		ktap_diag "ktap: $fn reported no result"
		res=fail
	elif [ -n "$KTAP_MORE" ]; then
		ktap_diag "ktap: $fn reported more than one result: $res$KTAP_MORE"
		res=fail
	fi
	KTAP_N=$((KTAP_N + 1))
	[ -z "${KTAP_TIMES:-}" ] \
		|| printf '%s\t%s\n' $((SECONDS - KTAP_T0)) "${KTAP_NAMES[$KTAP_CUR]}" >>"$KTAP_TIMES"
	case $res in
	ok) KTAP_PASS=$((KTAP_PASS + 1)); echo "ok $KTAP_N ${KTAP_NAMES[$KTAP_CUR]}" ;;
	skip) KTAP_SKIP=$((KTAP_SKIP + 1)); echo "ok $KTAP_N ${KTAP_NAMES[$KTAP_CUR]} # SKIP $KTAP_WHY" ;;
	*) KTAP_FAIL=$((KTAP_FAIL + 1)); echo "not ok $KTAP_N ${KTAP_NAMES[$KTAP_CUR]}" ;;
	esac
	KTAP_CUR=
}

ktap_skip_rest() {
	[ -z "${KTAP_LIST:-}" ] || ktap_list
	[ -n "$KTAP_PLAN" ] || ktap_plan ${#KTAP_NAMES[@]}
	if [ -n "$KTAP_CUR" ]; then
		[ -n "$KTAP_RES" ] || KTAP_RES=skip KTAP_WHY=$1
		ktap_emit
	fi
	while [ "$KTAP_N" -lt "${#KTAP_NAMES[@]}" ]; do
		KTAP_CUR=$KTAP_N KTAP_RES=skip KTAP_WHY=$1 KTAP_MORE= KTAP_T0=$SECONDS
		ktap_emit
	done
	ktap_finish
}

# ktap_relay TEXT NAME: report the result TEXT gives its test NAME ("ok K NAME",
# "not ok K NAME", "ok K NAME # SKIP why"), after the "# " lines that came before that
# line in TEXT (but its "# totals"); fail when TEXT has no result for NAME.
ktap_relay() {
	local line rest diags=()
	while IFS= read -r line; do
		line=${line%$'\r'}
		case $line in
		"# totals:"*) ;;
		"#"*) diags+=("$line") ;;
		"ok "*|"not ok "*)
			rest=${line#not }
			rest=${rest#ok }
			rest=${rest#* }
			if [ "${rest%% # SKIP*}" != "$2" ]; then
				diags=()
				continue
			fi
			[ ${#diags[@]} = 0 ] || printf '%s\n' "${diags[@]}"
			case $line in
			"not ok "*) ktap_fail ;;
			*" # SKIP"*) ktap_skip "${rest#* # SKIP }" ;;
			*) ktap_pass ;;
			esac
			return
			;;
		esac
	done <<<"$1"
	ktap_fail "no result for it in: $(tail -n 5 <<<"$1")"
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
