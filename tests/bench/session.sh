# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# What the benchmarks' client guests share (source, do not run; after lib.sh and
# backends.sh): the choice of backends (RSWAP_BENCH_BACKENDS), the progress protocol the
# host follows, the control channel to the memory-server guest, and a backend's session:
# its set-up, its status line and its teardown. Used by tests/bench/client.sh (`make
# bench`) and tests/bench/apps-client.sh (`make bench-apps`).
#
# The caller sets ONLY (the names given with --backend; empty: everything), PEER (the
# memory-server guest), R (the raw results folder, with status.tsv) and failures (a count).

# selected NAME...: whether any of NAME (an id, a label, perftest, kernel) is to run.
selected() {
	local n
	[ ${#ONLY[@]} = 0 ] && return 0
	for n in "$@"; do [[ " ${ONLY[*]} " == *" $n "* ]] && return 0; done
	return 1
}
NOT_SELECTED="not selected (RSWAP_BENCH_BACKENDS)"
# id -> label and description of every backend.
declare -A BK_LABEL=() BK_DESC=()
for b in "${BACKENDS[@]}" "${APP_BACKENDS[@]}"; do
	IFS=: read -r id label desc <<< "$b"
	BK_LABEL[$id]=$label BK_DESC[$id]=$desc
done

# ---- progress --------------------------------------------------------------------------
# The plan: one "key est_seconds label" per step. A skipped backend drops its steps. The
# console lines "@@BENCH plan N left=SECS" and "@@BENCH step I/N left=SECS LABEL" are what
# scripts/bench.sh shows as progress.
PLAN=()
plan_add() { PLAN+=("$1 $2 $3"); }
STEP_DONE=()
plan_left() { # seconds estimated for the steps not started yet
	local p k e sum=0
	for p in "${PLAN[@]}"; do
		read -r k e _ <<< "$p"
		[[ " ${STEP_DONE[*]} " == *" $k "* ]] || sum=$((sum + e))
	done
	echo $sum
}
plan_announce() { echo "@@BENCH plan ${#PLAN[@]} left=$(plan_left)"; }
step() { # KEY: this step starts now
	local p k e l i=0 n=${#PLAN[@]}
	for p in "${PLAN[@]}"; do
		i=$((i + 1)); read -r k e l <<< "$p"
		if [ "$k" = "$1" ]; then
			STEP_DONE+=("$k")
			echo "@@BENCH step $i/$n left=$(( $(plan_left) + e )) $l"
			return 0
		fi
	done
}
skip_steps() { # PREFIX: drop the steps of a backend that is not available
	local p k
	for p in "${PLAN[@]}"; do read -r k _ <<< "$p"; [[ $k == "$1".* ]] && STEP_DONE+=("$k"); done
}

# ---- control channel to the memory-server guest ------------------------------------------
ctl() { timeout 700 python3 "$BENCH/ctl.py" send "$PEER" "$CTL_PORT" "$@"; }

# ---- a backend's session -------------------------------------------------------------------
# A session sets a backend up (bk_begin), measures, and tears it down (bk_end). A backend
# whose first set-up fails is n/a from then on; anything failing later makes it "partial".
declare -A BK_NA=() BK_BAD=() BK_DEVICE=()
bk_status() { # ID: the backend's line of status.tsv as it stands
	local id=$1 label=${BK_LABEL[$1]}
	if ! selected "$id" "$label"; then
		printf '%s\tn/a\t-\t%s\n' "$label" "$NOT_SELECTED"
	elif [ -n "${BK_NA[$id]+set}" ]; then
		printf '%s\tn/a\t-\t%s\n' "$label" "${BK_NA[$id]}"
	elif [ -n "${BK_BAD[$id]:-}" ]; then
		printf '%s\tpartial\t%s\tfailed:%s\n' "$label" "${BK_DEVICE[$id]}" "${BK_BAD[$id]}"
	else
		printf '%s\tok\t%s\t%s\n' "$label" "${BK_DEVICE[$id]}" "${BK_DESC[$id]}"
	fi
}
# bk_begin ID TAG: set the backend up for session TAG (step ID.TAG.setup) with BK_DIR
# $R/<label>; succeeds with BK_DEV set. On failure it tears down what was built, records
# n/a or partial (status.tsv), drops the backend's steps (all of them, or TAG's) and fails.
bk_begin() {
	local id=$1 tag=$2 label=${BK_LABEL[$1]}
	[ -z "${BK_NA[$id]+set}" ] || return 1
	step "$id.$tag.setup"
	BK_DEV= BK_REASON= BK_DIR=$R/$label BK_FIO=(--ioengine=libaio) BK_ZSWAP=
	mkdir -p "$BK_DIR"
	dmesg_mark "bench $label $tag"
	if ! "backend_${id}_setup"; then
		"backend_${id}_teardown" 2>/dev/null || true
		if [ -z "${BK_DEVICE[$id]:-}" ]; then
			echo "bench client: $label n/a: $BK_REASON"
			BK_NA[$id]=$BK_REASON
			skip_steps "$id"
			backend_optional "$id" || failures=$((failures + 1))
		else
			echo "bench client: $label: set-up for $tag failed: $BK_REASON"
			BK_BAD[$id]+=" setup-$tag"
			skip_steps "$id.$tag"
		fi
		bk_status "$id" >> "$R/status.tsv"
		return 1
	fi
	[ -n "${BK_DEVICE[$id]:-}" ] || echo "bench client: $label is $BK_DEV (${BK_DESC[$id]})"
	BK_DEVICE[$id]=$BK_DEV
}
# bk_end ID TAG: tear the backend down, keep its counters (stats-TAG.txt) and any kernel
# warnings (dmesg-bad.txt, which make it partial), and append its status line.
bk_end() {
	local id=$1 tag=$2 d=$R/${BK_LABEL[$1]} msg
	"backend_${id}_teardown" || true
	# This set-up's counters (backend_rswap_teardown saves the target's stats).
	[ ! -f "$d/stats.txt" ] || mv "$d/stats.txt" "$d/stats-$tag.txt"
	msg=$(dmesg_clean) || {
		printf '%s:\n%s\n' "$tag" "$msg" >> "$d/dmesg-bad.txt"; BK_BAD[$id]+=" dmesg-$tag"
		echo "bench client: kernel warnings during ${BK_LABEL[$id]} ($tag)"; }
	# Each session appends the backend's status (report.py takes a label's last line), so
	# that a run the driver under test crashes still reports what was measured before.
	bk_status "$id" >> "$R/status.tsv"
}
