#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The client guest of `make bench-apps` (scripts/bench.sh --apps, through
# qemu/run-pair.sh): real applications (tests/bench/apps.sh: Redis under a Zipfian load,
# a quicksort, an external-sort pattern) at 100/75/50/25% of their own peak memory, on
# every swap backend a user could pick.
#
#   apps-client.sh [--quick|--full] [--repeats N] [--backend NAME]...
#
# First each application runs once unmeasured (a warm-up: the first run after boot reads
# its program and libraries from disk), then REPEATS times all-local: no swap and no
# limit, in a cgroup whose memory.peak gives the application's peak memory (the largest
# of the repeats).
# Then, backend after backend (set up once: tests/bench/backends.sh), each application
# runs REPEATS times at each fraction of FRACTIONS, each run on a fresh mkswap of the
# backend's device, in a cgroup whose memory.max is that fraction of the peak
# (apps.sh app_limits: memory.high 7/8 of it below 100%).
#   --quick   the pipeline's smoke test: the smallest sizes, fractions 100 and 50
#   --full    the full sweep: larger sizes, 3 repeats (hours under TCG)
#   default   about an hour under TCG: 1 repeat, the sizes below
#   --backend NAME (repeatable; from RSWAP_BENCH_BACKENDS): only these backends
# Raw results go to $RSWAP_OUT/bench-apps/: env.json, status.tsv, local/APP-R.json and
# <backend label>/APP-fFRACTION-R.json (apps.sh app_run's records, with .out and .err);
# scripts/bench.sh turns them into the table, results.json and the figures
# (tests/bench/apps_report.py). Exit 0 when every required backend produced its runs and
# every application's output was right.
. "$RSWAP_TOP/tests/bench/lib.sh"
. "$BENCH/backends.sh"
. "$BENCH/session.sh"
. "$BENCH/apps.sh"

mode=default REPEATS= ONLY=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) mode=quick; shift ;;
	--full) mode=full; shift ;;
	--repeats) REPEATS=$2; shift 2 ;;
	--backend) ONLY+=("$2"); shift 2 ;;
	*) echo "apps-client.sh: unknown argument $1"; exit 2 ;;
	esac
done
# The sizes. The default fits about an hour under TCG with 1 repeat: a page swapped over
# soft-RoCE costs milliseconds there, so each application's peak stays a few tens of MiB.
case $mode in
quick) QSORT_MIB=8 STREAM_MIB=8 KV_KEYS=3000 KV_VALUE=1024 KV_OPS=1000 FRACTIONS=(100 50)
       : "${REPEATS:=1}"; APPS_TIMEOUT=300 ;;
full) QSORT_MIB=128 STREAM_MIB=128 KV_KEYS=100000 KV_VALUE=1024 KV_OPS=50000 FRACTIONS=(100 75 50 25)
      : "${REPEATS:=3}"; APPS_TIMEOUT=3600 ;;
*) QSORT_MIB=16 STREAM_MIB=16 KV_KEYS=12000 KV_VALUE=1024 KV_OPS=6000 FRACTIONS=(100 75 50 25)
   : "${REPEATS:=1}"; APPS_TIMEOUT=900 ;;
esac
APPS_BIN=/tmp/apps-bin
# The order of the backends: the baselines first, the rswap family after them, so that a
# crash of the driver under test cannot cost the others' figures.
IDS=(zram_lz4 zram_zstd vdisk nvme_rdma rswap rswap_enc zswap_rswap rswap_md)
R=$RSWAP_OUT/bench-apps
rm -rf "$R"; mkdir -p "$R/local"
PEER=${RSWAP_PEER_IP:-}
: > "$R/status.tsv"
failures=0

# ---- progress: estimates from a two-guest TCG run ------------------------------------------
# At 50% of the peak on rswap (--quick, b2d406f): kv 3000 keys 21 s, qsort 8 MiB 17 s,
# stream 8 MiB 12 s; a run's estimate grows with the size and the part that does not fit.
est() { # APP FRACTION
	case $1 in
	kv) echo $((3 + KV_KEYS * (100 - $2) / 7500)) ;;
	qsort) echo $((2 + QSORT_MIB * (100 - $2) / 25)) ;;
	stream) echo $((2 + STREAM_MIB * (100 - $2) / 33)) ;;
	esac
}
for app in "${APPS[@]}"; do
	plan_add "local.$app.0" "$(est "$app" 100)" "all-local:$app-warm-up"
	for r in $(seq "$REPEATS"); do plan_add "local.$app.$r" "$(est "$app" 100)" "all-local:$app-$r"; done
done
for id in "${IDS[@]}"; do
	selected "$id" "${BK_LABEL[$id]}" || continue
	plan_add "$id.apps.setup" 15 "${BK_LABEL[$id]}:setup"
	for app in "${APPS[@]}"; do
		for f in "${FRACTIONS[@]}"; do
			for r in $(seq "$REPEATS"); do
				plan_add "$id.$app.$f.$r" "$(est "$app" "$f")" "${BK_LABEL[$id]}:$app-$f%-$r"
			done
		done
	done
done
plan_announce

# ---- environment -------------------------------------------------------------------------
json_list() { local x; for x in "$@"; do json_str "$x"; echo; done | paste -sd,; }
{
	printf '{"kernel": %s, "vcpus": %s, "mem_mb": %s, "mode": %s, "repeats": %s,\n' \
		"$(json_str "$(uname -r)")" "$(nproc)" "$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024))" \
		"$(json_str "$mode")" "$REPEATS"
	printf ' "fractions": [%s], "apps": [%s], "backends": [%s],\n' "$(IFS=,; echo "${FRACTIONS[*]}")" \
		"$(json_list "${APPS[@]}")" "$(for id in "${IDS[@]}"; do json_str "${BK_LABEL[$id]}"; echo; done | paste -sd,)"
	printf ' "qsort_mib": %s, "stream_mib": %s, "kv_keys": %s, "kv_value_bytes": %s, "kv_ops": %s,\n' \
		"$QSORT_MIB" "$STREAM_MIB" "$KV_KEYS" "$KV_VALUE" "$KV_OPS"
	printf ' "redis": %s, "page_cluster": %s, "selected": %s,\n' \
		"$(json_str "$(redis-server --version 2>/dev/null)")" "$(cat /proc/sys/vm/page-cluster)" \
		"$([ ${#ONLY[@]} = 0 ] && echo null || printf '[%s]' "$(json_list "${ONLY[@]}")")"
	printf ' "client_ip": %s, "server_ip": %s}\n' "$(json_str "$RSWAP_GUEST_IP")" "$(json_str "$PEER")"
} > "$R/env.json"

echo "bench client: $(uname -r), $(nproc) vCPU, peer $PEER, bench-apps $mode, $REPEATS repeats, fractions ${FRACTIONS[*]}"
mkdir -p "$APPS_BIN"
for p in appqsort appstream kvload; do
	cp "$RSWAP_OUT/$p" "$APPS_BIN/" 2>/dev/null && chmod +x "$APPS_BIN/$p" \
		|| { echo "bench client: no $p in \$RSWAP_OUT (scripts/bench.sh builds it)"; exit 1; }
done
command -v redis-server > /dev/null || { echo "bench client: no redis-server in the guest (scripts/guest-image.sh)"; exit 1; }
rdma_up || { echo "bench client: rxe0 is not usable"; exit 1; }
ctl --wait=180 ping || { echo "bench client: the memory-server guest's control port never answered"; exit 1; }

# ---- all-local: the reference time and each application's peak memory ----------------------
swapoff -a 2>/dev/null
declare -A PEAK=()
for app in "${APPS[@]}"; do
	PEAK[$app]=0
	step "local.$app.0"
	app_run "$app" "$R/local/$app-warm-up.json" max max > /dev/null \
		|| echo "bench client: the warm-up run of $app failed: $(tail -2 "$R/local/$app-warm-up.json.err")"
	for r in $(seq "$REPEATS"); do
		step "local.$app.$r"
		app_run "$app" "$R/local/$app-$r.json" max max \
			|| { echo "bench client: all-local $app run $r failed"; failures=$((failures + 1)); continue; }
		p=$(sed -n 's/.*"peak_kb": \([0-9]*\).*/\1/p' "$R/local/$app-$r.json")
		[ "$p" -le "${PEAK[$app]}" ] || PEAK[$app]=$p
	done
	echo "bench client: $app peak ${PEAK[$app]} KiB all-local"
	printf '%s\t%s\n' "$app" "${PEAK[$app]}" >> "$R/local/peaks.tsv"
done
# Every device holds the largest application whole, and some more.
DEV_MB=64
for app in "${APPS[@]}"; do
	[ $((PEAK[$app] / 1024 + 32)) -le $DEV_MB ] || DEV_MB=$((PEAK[$app] / 1024 + 32))
done

# ---- every backend -------------------------------------------------------------------------
for id in "${IDS[@]}"; do
	label=${BK_LABEL[$id]}
	selected "$id" "$label" || { bk_status "$id" >> "$R/status.tsv"; continue; }
	bk_begin "$id" apps || continue
	for app in "${APPS[@]}"; do
		[ "${PEAK[$app]}" -gt 0 ] || continue
		for f in "${FRACTIONS[@]}"; do
			read -r max high <<< "$(app_limits "$f" "${PEAK[$app]}")"
			for r in $(seq "$REPEATS"); do
				step "$id.$app.$f.$r"
				rec=$BK_DIR/$app-f$f-$r.json
				msg=$(swap_fresh "$BK_DEV" "$rec.mkswap" "$BK_ZSWAP") \
					|| { BK_BAD[$id]+=" swap-$app-$f-$r"; echo "bench client: $label: $msg"; continue; }
				msg=$(app_run "$app" "$rec" "$max" "$high" "$BK_DEV") \
					|| { BK_BAD[$id]+=" $app-$f-$r"; echo "bench client: $label: $msg"; }
				timeout 600 swapoff "$BK_DEV" || echo "bench client: swapoff $BK_DEV failed or timed out"
			done
		done
	done
	bk_end "$id" apps
done
for id in "${IDS[@]}"; do
	selected "$id" "${BK_LABEL[$id]}" || continue
	bk_status "$id" >> "$R/status.tsv"
	[ -z "${BK_BAD[$id]:-}" ] || failures=$((failures + 1))
done

ctl stop >/dev/null || echo "bench client: could not tell the server to stop"
echo "@@BENCH done failures=$failures"
[ $failures = 0 ]
