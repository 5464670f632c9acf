#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make check`: build whatever is missing, run every test, print "N passed, N failed".
#
#   KERNEL=stock|debug   which guest kernel the in-guest suites run on (default stock)
#   RSWAP_SUITES="tests/guest/10-module.sh ..."   only these in-guest suites
#   RSWAP_HOST_SUITES="tests/host/50-two-guests.sh ..."   only these host-driven suites
#                                                   (empty: none)
#
# Host checks (rustfmt, a warning-free clippy build, cargo tests) and the in-guest KTAP
# suites (one guest boot for all single-guest suites) are tallied into one closing line.
. "$(dirname "$0")/common.sh"
. "$RSWAP_TOP/tests/lib/host.sh"
export KERNEL=${KERNEL:-stock}
start=$(date +%s)
pass=0 fail=0 skip=0
failed=()
out=$RSWAP_TOP/results/check-$KERNEL
rm -rf "$out"; mkdir -p "$out"

# tally PREFIX TEXT: count each KTAP result line of TEXT, named PREFIX: its description.
# A failing test carries the last diagnostic lines ("# ...") printed before its result
# line: they are what says why, and the summary repeats them.
tally() {
	local line diag=()
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"*) result skip "$1: $(sed -E 's/^ok [0-9]+ //; s/ # SKIP.*//' <<<"$line")" "${line##*# SKIP }" ;;
		"ok "*) result ok "$1: $(sed -E 's/^ok [0-9]+ //' <<<"$line")" ;;
		"not ok "*) result fail "$1: $(sed -E 's/^not ok [0-9]+ //' <<<"$line")" \
			"$(printf '%s\n' "${diag[@]}" | sed 's/^# //')" ;;
		"# "*) diag+=("$line"); continue ;;
		esac
		diag=()
	done <<<"$2"
}

# host_tally NAME RC OUTPUT: a host suite's (or a self-test's) KTAP lines, and its exit
# code if no line failed.
host_tally() {
	tally "$1" "$3"
	[ "$2" = 0 ] || [ "$(grep -c '^not ok ' <<<"$3")" != 0 ] || result fail "$1: exited $2" "$(tail -20 <<<"$3")"
}

# result ok|fail|skip NAME [DETAIL]: counts and prints one result. A failure's DETAIL
# follows it, and its first lines follow its name again in the summary at the end (the
# part of a long output a reader sees first).
result() {
	local why
	case $1 in
	ok) pass=$((pass + 1)); echo "ok - $2" ;;
	skip) skip=$((skip + 1)); echo "ok - $2 # SKIP ${3:-}" ;;
	*)
		fail=$((fail + 1)); echo "not ok - $2"
		[ -z "${3:-}" ] || sed 's/^/#   /' <<<"$3"
		why=$([ -z "${3:-}" ] || head -n 20 <<<"$3" | sed 's/^/#   /')
		failed+=("# failed: $2${why:+$'\n'$why}")
		;;
	esac
}

log "preparing the host, build root, kernel tree and guest image (cached after the first run)"
bash "$RSWAP_TOP/scripts/setup-host.sh"
# The build root, the prepared kernel tree and the guest image take a fresh machine
# minutes of downloading and unpacking. They are made in the background while the host
# builds and tests its own crates, which need none of them; rustfmt, the module and the
# guests wait for them below. The kernel tree and the guest image need only the build
# root (its kernel version), not each other: they are made side by side.
prep_log=$out/prepare.log
(bash "$RSWAP_TOP/scripts/buildroot.sh" >/dev/null && {
	bash "$RSWAP_TOP/scripts/kernel-stock.sh" >/dev/null &
	tree_pid=$! image_rc=0
	bash "$RSWAP_TOP/scripts/guest-image.sh" >/dev/null || image_rc=$?
	wait $tree_pid && [ $image_rc = 0 ]
}) >"$prep_log" 2>&1 &
prep_pid=$!
# The tools' release builds, which the guests run: beside the preparation, then the
# module's build (mostly one rustc, on one CPU). Its exit code lands in $tools_rc.
server_log=$out/build-server.log tools_rc=$out/.tools-rc
rm -f "$tools_rc"
(r=0; bash "$RSWAP_TOP/scripts/build-server.sh" >"$server_log" 2>&1 || r=$?; echo $r > "$tools_rc") &
server_pid=$!

# --- host checks -------------------------------------------------------------------------
if o=$(python3 "$RSWAP_TOP/scripts/layers.py" 2>&1); then
	result ok "host: layers: no import loop, each names only the layers below it, no unsafe in disk/, configfs, settings"
else
	result fail "host: layers: no import loop, each names only the layers below it, no unsafe in disk/, configfs, settings" "$o"
fi
if o=$(python3 "$RSWAP_TOP/scripts/settings.py" 2>&1); then
	result ok "host: settings: the module's and rswapctl's tables agree, configuration.md names each"
else
	result fail "host: settings: the module's and rswapctl's tables agree, configuration.md names each" "$o"
fi

# host_checks: the host's own tests, which nothing the guests run needs. They run in the
# background, in the idle scheduling class, from the preparation and the builds the guest
# waits for to the end of the guest's suites: they get the CPU time nothing else wants.
host_checks() {
	# idle CMD...: CMD in the idle scheduling class (SCHED_IDLE) at nice 19. A vCPU thread
	# or a build that wakes preempts it at once, which nice 19 alone does not promise.
	idle() { chrt --idle 0 nice -n 19 "$@"; }
	# cargo_tests DIR NAME: `cargo test` in DIR, counted as one result with the number of
	# tests. The build (almost all of the time) in the idle class; the tests' run, seconds,
	# not: some of them time a wait (rswap-server's status socket: another client answered
	# within 2 s, no write call over 100 ms), which a starved thread would miss.
	cargo_tests() {
		local o n
		log "$2: cargo test"
		if o=$(cd "$RSWAP_TOP/$1" && idle cargo test --locked --no-run 2>&1 && cargo test --locked 2>&1); then
			n=$(grep -Eo 'test result: ok\. [0-9]+ passed' <<<"$o" | awk '{ s += $4 } END { print s + 0 }')
			result ok "host: $2 ($n tests)"
		else
			result fail "host: $2" "$(grep -E 'panicked|FAILED|error' <<<"$o" | head -30)"
		fi
	}

	cargo_tests tests/unit "module logic unit tests: config parsing, bounds, wire format"
	if [ -f "$RSWAP_TOP/tools/rswap-server/Cargo.toml" ]; then
		cargo_tests tools/rswap-server "rswap-server unit tests"
		cargo_tests tools/rswapctl "rswapctl unit tests"
		# rswapctl's release build, made beside these checks.
		while [ ! -s "$tools_rc" ]; do sleep 1; done
		if [ "$(cat "$tools_rc")" != 0 ]; then
			result fail "host: rswapctl metrics parses as Prometheus text (prometheus_client)" \
				"no release build of rswapctl (see $server_log)"
		elif o=$(idle bash "$RSWAP_TOP/scripts/check-metrics.sh" 2>&1); then
			result ok "host: rswapctl metrics parses as Prometheus text (prometheus_client)"
		else
			result fail "host: rswapctl metrics parses as Prometheus text (prometheus_client)" "$(tail -20 <<<"$o")"
		fi
		if o=$(idle bash "$RSWAP_TOP/scripts/check-docs.sh" 2>&1); then
			result ok "host: the documentation: README indexes every page, rswapctl list samples have its columns"
		else
			result fail "host: the documentation: README indexes every page, rswapctl list samples have its columns" "$(tail -20 <<<"$o")"
		fi
	fi

	n="host: bench report: redundant swap table, remote memory, targets, --quick's skips (report_test.py)"
	if o=$(idle python3 "$RSWAP_TOP/tests/bench/report_test.py" 2>&1); then result ok "$n"
	else result fail "$n" "$(tail -30 <<<"$o")"; fi
	n="host: bench-apps report: slowdowns, targets, --check of outputs and runs (apps_report_test.py)"
	if o=$(idle python3 "$RSWAP_TOP/tests/bench/apps_report_test.py" 2>&1); then result ok "$n"
	else result fail "$n" "$(tail -30 <<<"$o")"; fi
	n="host: 57-ec's placement and parity check on region files it lays out (ec_placement_test.py)"
	if o=$(idle python3 "$RSWAP_TOP/tests/lib/ec_placement_test.py" 2>&1); then result ok "$n"
	else result fail "$n" "$(tail -30 <<<"$o")"; fi

	# The KTAP library every suite uses (tests/lib/ktap.sh) against its own small suites.
	o=$(idle bash "$RSWAP_TOP/tests/lib/ktap-selftest.sh" 2>&1) && r=0 || r=$?
	host_tally "host: tests/lib/ktap.sh" $r "$o"

	# The kernel-log filter every "no BUG/WARNING" check goes through, against small logs.
	o=$(idle bash "$RSWAP_TOP/tests/lib/kernel-log-filter-test.sh" 2>&1) && r=0 || r=$?
	host_tally "host: tests/lib/kernel-log-filter.awk" $r "$o"
}

# Guest-side helper programs, built on the host into the results folder the guest sees.
mkdir -p "$out/guest"
gcc -O2 -Wall -o "$out/guest/swapload" "$RSWAP_TOP/tests/bench/swapload.c" \
	|| result fail "host: build tests/bench/swapload.c"
# The workload's own check: a rewrite phase that ends with 0 bad pages, and a flipped bit
# found by the one verify pass left.
if o=$("$out/guest/swapload" 4 1 1 2>&1) && grep -q '"rewrites": [1-9].*"bad_pages": 0' <<<"$o" \
	&& ! SWAPLOAD_CORRUPT=1 SWAPLOAD_PASSES=1 "$out/guest/swapload" 4 1 1 >/dev/null 2>&1; then
	result ok "host: swapload: a 1 s random-order rewrite phase, 0 bad pages; a flipped bit is caught"
else
	result fail "host: swapload: a 1 s random-order rewrite phase, 0 bad pages; a flipped bit is caught" "$o"
fi
# make bench-apps's own programs (tests/guest/42-apps.sh runs appqsort), and their checks:
# a swapped pair in the sorted output is caught.
if o=$(bash "$RSWAP_TOP/tests/bench/apps/build.sh" "$out/guest" 2>&1) \
	&& o=$("$out/guest/appqsort" 2 2>&1) && grep -q '"sorted": 1, "checksum_ok": 1' <<<"$o" \
	&& o=$("$out/guest/appstream" 2 2>&1) && grep -q '"sorted": 1, "checksum_ok": 1' <<<"$o" \
	&& ! APPS_CORRUPT=1 "$out/guest/appqsort" 2 >/dev/null 2>&1 \
	&& ! APPS_CORRUPT=1 "$out/guest/appstream" 2 >/dev/null 2>&1; then
	result ok "host: bench-apps programs build; appqsort and appstream sort and catch a swapped pair"
else
	result fail "host: bench-apps programs build; appqsort and appstream sort and catch a swapped pair" "$o"
fi

# The host checks, from now on beside the preparation, the builds and then the guest,
# their results tallied after the guest's: `result` prints a KTAP line there (a failure's
# detail as "# " lines before it), which `tally` counts. The guest does not wait for
# them: it needs rswap.ko and the tools' release builds only. Beside it they are in the
# idle class (see `idle`), which a vCPU thread preempts the moment it wakes: the suites
# that wait on swap-in latency are the ones that slow down when anything runs beside
# them at normal priority, or even at nice 19 (40-swap 145 s instead of 84). In the idle
# class the checks may starve for minutes while the guest keeps both CPUs busy; they only
# need to end before it does.
checks_out=$out/host-checks.ktap
(
	result() {
		case $1 in
		ok) echo "ok 1 ${2#host: }" ;;
		skip) echo "ok 1 ${2#host: } # SKIP ${3:-}" ;;
		*) [ -z "${3:-}" ] || sed 's/^/# /' <<<"$3"; echo "not ok 1 ${2#host: }" ;;
		esac
	}
	log() { :; }
	host_checks
) >"$checks_out" 2>&1 &
checks_pid=$!

# --- what needs the build root, the kernel tree and the guest image ----------------------
prep_rc=0
wait "$prep_pid" || prep_rc=$?
cat "$prep_log" >&2
if [ $prep_rc != 0 ]; then
	result fail "host: build root, prepared kernel tree and guest image" "$(tail -30 "$prep_log")"
	wait "$server_pid" "$checks_pid" || true
	tally host "$(cat "$checks_out")"
	echo "$pass passed, $fail failed, $skip skipped"
	exit 1
fi
if o=$(bash "$RSWAP_TOP/scripts/rustfmt.sh" --check 2>&1); then result ok "host: rustfmt --check"
else result fail "host: rustfmt --check" "$o"; fi
log "building rswap.ko for the $KERNEL kernel with clippy and fault injection"
make -s -C "$RSWAP_TOP" clean
# The tests load the module built here: with its fault-injection parameters, which a
# module built for installing (DKMS, `make`) does not have.
if o=$(make -C "$RSWAP_TOP" CLIPPY=1 RSWAP_FAULT_INJECTION=y 2>&1); then
	w=$(grep -E '^(warning|error)' <<<"$o" || true)
	if [ -z "$w" ]; then result ok "host: rswap.ko builds with no warnings (CLIPPY=1, KERNEL=$KERNEL)"
	else result fail "host: rswap.ko builds with no warnings (CLIPPY=1, KERNEL=$KERNEL)" "$(grep -E -A8 '^(warning|error)' <<<"$o" | head -60)"; fi
else
	result fail "host: rswap.ko builds (KERNEL=$KERNEL)" "$(tail -40 <<<"$o")"
fi
# The module's version (modinfo, /sys/module/rswap/version) is the packages'.
kv=$(modinfo -F version "$RSWAP_TOP/rswap.ko" 2>&1 || true)
pv=$(sed -n 's/^version = "\(.*\)"/\1/p' "$RSWAP_TOP/tools/rswap-server/Cargo.toml" | head -1)
if [ -n "$pv" ] && [ "$kv" = "$pv" ]; then result ok "host: rswap.ko's version $kv is the packages'"
else result fail "host: rswap.ko's version is the packages'" "modinfo: '$kv'; tools/rswap-server/Cargo.toml: '$pv'"; fi

wait "$server_pid" || true
if [ "$(cat "$tools_rc" 2>/dev/null)" = 0 ]; then result ok "host: rswap-server release build"
else result fail "host: rswap-server release build" "$(tail -20 "$server_log")"; fi

# shellcheck disable=SC2206
host_suites=(${RSWAP_HOST_SUITES-$(cd "$RSWAP_TOP" && ls tests/host/[0-9][0-9]-*.sh)})
# The packages' suite spends minutes on the host (make deb, lintian, apt and DKMS in a
# clean root) before its one guest: that part runs now, beside the guests below, in the
# idle scheduling class (a vCPU thread that wakes preempts it at once, which nice 19
# does not promise); its guest waits for $gate, made when every other guest ended.
beside=tests/host/70-deb.sh beside_pid= gate=$out/.guests-done
beside_out=$out/$(basename "$beside" .sh)
if [[ " ${host_suites[*]} " == *" $beside "* ]] && [ -f "$RSWAP_TOP/$beside" ]; then
	log "running $beside's host part beside the guests"
	chrt --idle 0 nice -n 19 bash "$RSWAP_TOP/$beside" --out "$beside_out" --guest-after "$gate" \
		> "$beside_out.log" 2>&1 &
	beside_pid=$!
fi

# --- in-guest suites ---------------------------------------------------------------------
# shellcheck disable=SC2206
suites=(${RSWAP_SUITES:-$(cd "$RSWAP_TOP" && ls tests/guest/[0-9][0-9]-*.sh)})
log "booting the $KERNEL guest for ${#suites[@]} suites: ${suites[*]}"
# A failing suite must not end this script (set -e): its results are tallied below. The
# debug kernel (KASAN, lockdep) runs every suite three to five times slower: its whole run
# takes about two hours alone on the host.
grc=0
guest_timeout=3000
[ "$KERNEL" != debug ] || guest_timeout=10800
RSWAP_QUIET=1 bash "$RSWAP_TOP/qemu/run.sh" --kernel "$KERNEL" --out "$out/guest" \
	--timeout "${RSWAP_GUEST_TIMEOUT:-$guest_timeout}" tests/guest/run-all.sh "${suites[@]}" || grc=$?
console=$out/guest/console.log
[ -f "$console" ] || : > "$console"
for s in "${suites[@]}"; do
	body=$(suite_body "$console" "$s")
	echo "# $s"
	tally "$s" "$body"
	end=$(grep -F "# rswap-suite-end: $s " <<<"$body" || true)
	plan=$(grep -Eo '^1\.\.[0-9]+' <<<"$body" | head -1 | cut -d. -f3 || true)
	ran=$(grep -cE '^(ok|not ok) ' <<<"$body" || true)
	if [ -z "$end" ]; then
		result fail "$s: finished (the guest died or timed out inside it; see $out/guest/serial.log)"
	elif [ -n "$plan" ] && [ "$ran" != "$plan" ]; then
		result fail "$s: ran its whole plan ($ran of $plan)"
	elif ! grep -q 'exit=0 ' <<<"$end" && [ "$(grep -c '^not ok ' <<<"$body")" = 0 ]; then
		result fail "$s: exited non-zero with no failing test ($end)"
	fi
done
races=$(awk -v count=1 -f "$RSWAP_TOP/tests/lib/kernel-log-filter.awk" "$out/guest/serial.log" 2>/dev/null || echo 0)
[ "${races:-0}" = 0 ] || log "guest: $races reports of the soft-RoCE rxe_sched_task race (or its aftermath) with no rswap frame left out of the check"
if bad=$(kernel_log_bad "$out/guest/serial.log"); then
	result fail "guest: kernel log of the whole boot is free of BUG/WARNING/Oops/KASAN/lockdep" \
		"$(head -30 <<<"$bad")"
else
	result ok "guest: kernel log of the whole boot is free of BUG/WARNING/Oops/KASAN/lockdep"
fi
[ $grc = 0 ] || [ $grc = 1 ] || log "guest exit code $grc"

# The host checks, before the extra suites' guests take the CPUs.
if kill -0 "$checks_pid" 2>/dev/null; then log "waiting for the host checks"; fi
r=0
wait "$checks_pid" || r=$?
tally host "$(cat "$checks_out")"
[ $r = 0 ] || result fail "host: the host checks exited $r" "$(tail -20 "$checks_out")"

# --- extra suites (two guests, benchmarks smoke test) -----------------------------------
for extra in "${host_suites[@]/#/$RSWAP_TOP/}"; do
	[ -f "$extra" ] || continue
	name=tests/host/$(basename "$extra")
	[ "$name" != "$beside" ] || [ -z "$beside_pid" ] || continue
	log "running $name"
	r=0
	o=$(bash "$extra" --out "$out/$(basename "$extra" .sh)" 2>&1) || r=$?
	echo "$o" > "$out/$(basename "$extra" .sh).log"
	host_tally "$name" $r "$o"
done
if [ -n "$beside_pid" ]; then
	touch "$gate"
	log "waiting for $beside (its guest now)"
	r=0
	wait "$beside_pid" || r=$?
	host_tally "$beside" $r "$(cat "$beside_out.log")"
fi

echo
echo "# results in $out; kernel $KERNEL; $(( $(date +%s) - start )) s"
[ ${#failed[@]} = 0 ] || printf '%s\n' "${failed[@]}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
