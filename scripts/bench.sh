#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make bench: rswap against raw RDMA, NVMe-oF RDMA and a local RAM disk, in one run.
#
#   scripts/bench.sh [--quick] [--loopback] [--out DIR] [--time SECS] [--repeats N]
#                    [--swap-mb MIB]
#   scripts/bench.sh --apps [--quick|--full] [--out DIR] [--repeats N]
#     --quick      smoke test for make check: tiny sizes and durations; fails unless the
#                  harness produced every baseline number (values are not judged)
#     --loopback   one guest runs both sides (rxe loops back inside the guest: ~10x lower
#                  latency than two guests; for functional checks, not for numbers)
#     --out DIR    results folder (default results/bench-<timestamp>/)
#     --time SECS  run time of each fio job in each repeat (default 5, --quick 0.3 s)
#     --repeats N  rounds of the fio jobs and the in-kernel RDMA benchmark, backends
#                  interleaved; the tables show the median (default 3, --quick 2)
#     --swap-mb M  working set of the swap workload (default 96, --quick 8); the cgroup
#                  limit is half of it. It runs 3 times per backend (--quick: once)
#     --apps       `make bench-apps` instead: real applications at 100/75/50/25% of their
#                  peak memory on every swap backend (tests/bench/apps-client.sh); about
#                  an hour under TCG; --quick: the smallest sizes, 100 and 50% only;
#                  --full: larger sizes, 3 repeats; --repeats N: N runs of each
#
# Environment:
#   RSWAP_BENCH_BACKENDS="rswap rswap_sync"   run only these (words separated by spaces or
#                  commas): backends of tests/bench/backends.sh by id or label (rswap-sync),
#                  and the raw references `perftest` and `kernel` (the in-kernel RDMA
#                  benchmark). Unset or empty: everything. The rest shows as "n/a: not
#                  selected" and is left out of the tables and the checks.
#   RSWAP_ACCEL=kvm  the accelerator (default tcg; on a kvm_pvm host, tcg all the same)
#
# Default: two guests (qemu/run-pair.sh), a memory server 192.0.2.2 (1 vCPU: nvmet target,
# perftest servers, rswap-server) and a client 192.0.2.1 (2 vCPUs: the in-kernel RDMA
# benchmark, block devices, fio, swap).
# Writes OUT/table.md (also on stdout), OUT/results.json, OUT/bench.png (--apps: one
# OUT/apps-APP.png per application) and the guests' raw output under OUT/client (and
# OUT/server). Progress goes to stderr.
# See Documentation/benchmarks.md.
. "$(dirname "$0")/common.sh"

quick=0 loopback=0 out= T= repeats= swap_mb= apps=0 full=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; shift ;;
	--apps) apps=1; shift ;;
	--full) full=1; shift ;;
	--loopback) loopback=1; shift ;;
	--out) out=$2; shift 2 ;;
	--time) T=$2; shift 2 ;;
	--swap-mb) swap_mb=$2; shift 2 ;;
	--repeats) repeats=$2; shift 2 ;;
	-h|--help) sed -n '3,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "bench.sh: unknown option $1 (see --help)" ;;
	esac
done
[ -z "$T" ] || [[ $T =~ ^[0-9]+$ && $T -ge 1 ]] || die "--time wants whole seconds >= 1"
[ -z "$repeats" ] || [[ $repeats =~ ^[0-9]+$ && $repeats -ge 1 ]] || die "--repeats wants a count >= 1"
[ -z "$swap_mb" ] || [[ $swap_mb =~ ^[0-9]+$ && $swap_mb -ge 8 ]] || die "--swap-mb wants MiB >= 8"
if [ $apps = 1 ]; then
	[ $loopback = 0 ] && [ -z "$T$swap_mb" ] || die "--apps runs two guests, with no fio jobs and no swap workload: no --loopback, --time or --swap-mb"
	[ $quick = 0 ] || [ $full = 0 ] || die "--quick or --full, not both"
else
	[ $full = 0 ] || die "--full is an option of --apps"
fi
# RSWAP_BENCH_BACKENDS: checked here against the names backends.sh knows, so that a typo
# fails now rather than after the guests booted.
only=()
if [ -n "${RSWAP_BENCH_BACKENDS:-}" ]; then
	known=" perftest kernel $(sed -n 's/^\t"\([a-z0-9_]*\):\([a-z0-9+-]*\):.*/\1 \2/p' \
		"$RSWAP_TOP/tests/bench/backends.sh" | tr ' ' '\n' | awk '!s[$0]++' | tr '\n' ' ')"
	for n in ${RSWAP_BENCH_BACKENDS//,/ }; do
		[[ $known == *" $n "* ]] || die "RSWAP_BENCH_BACKENDS: no backend '$n' (known:$known)"
		only+=(--backend "$n")
	done
fi
stamp=$(date +%Y%m%d-%H%M%S)
[ -n "$out" ] || out=$RSWAP_TOP/results/bench$([ $apps = 0 ] || echo -apps)-$stamp
mkdir -p "$out/client"
out=$(cd "$out" && pwd)
t_start=$(date +%s) date_start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
prog() { printf '[bench %s] %s\n' "$(date -u -d "@$(( $(date +%s) - t_start ))" +%M:%S)" "$*" >&2; }

# The plot needs Debian's matplotlib for the system python3 (installed once, idempotent).
# The first install takes minutes (about 75 MB, 480 MB unpacked): --quick, whose figures
# nobody reads, installs it while the guests run, a measuring run before they start.
PY=/usr/bin/python3
[ -x $PY ] || PY=$(command -v python3)
mpl_pid=
if ! $PY -c 'import matplotlib' 2>/dev/null; then
	prog "installing python3-matplotlib (Debian) for the plot"
	if [ "$(id -u)" = 0 ]; then
		{ DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-matplotlib \
		  || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		       --no-install-recommends python3-matplotlib; }; } > "$out/apt.log" 2>&1 \
		|| prog "apt-get install python3-matplotlib failed (see $out/apt.log): no plot" &
		mpl_pid=$!
		[ $quick = 1 ] || { wait $mpl_pid; mpl_pid=; }
	else
		prog "not root: cannot install python3-matplotlib, no plot"
	fi
fi

# The guest image (built once, cached) and the swap workload or the applications (built
# here, run in the guest).
prog "guest image"
bash "$RSWAP_TOP/scripts/guest-image.sh" > /dev/null || die "the guest image is not available"
if [ $apps = 1 ]; then
	bash "$RSWAP_TOP/tests/bench/apps/build.sh" "$out/client" || die "building tests/bench/apps failed"
else
	gcc -O2 -Wall -Wextra -o "$out/client/swapload" "$RSWAP_TOP/tests/bench/swapload.c" \
		|| die "building tests/bench/swapload.c failed"
fi

args=()
[ $quick = 1 ] && args+=(--quick)
[ $full = 1 ] && args+=(--full)
[ -n "$T" ] && args+=(--time "$T")
[ -n "$repeats" ] && args+=(--repeats "$repeats")
[ -n "$swap_mb" ] && args+=(--swap-mb "$swap_mb")
args+=("${only[@]}")
# Every guest is bounded: at the defaults the whole run stays under 58 minutes, --quick
# under 10 (30 on the debug kernel, KERNEL=debug, which took 16 under KASAN and lockdep).
# The swap workload runs 3 times on each of 9 backends, at up to ~3 s per MiB on the
# slowest; each repeat runs 50 fio jobs of T seconds plus set-ups.
# --apps: 40 minutes for --quick, two hours a repeat by default, six hours a repeat with
# --full (three repeats unless told).
if [ $apps = 1 ]; then
	if [ $quick = 1 ]; then limit=2400
	elif [ $full = 1 ]; then limit=$((21600 * ${repeats:-3}))
	else limit=$((7200 * ${repeats:-1})); fi
elif [ $quick = 1 ]; then limit=$([ "${KERNEL:-stock}" = debug ] && echo 1800 || echo 600)
else limit=$((1200 + 60 * ${repeats:-3} * ${T:-5} + 14 * ${swap_mb:-96})); fi

accel=${RSWAP_ACCEL:-tcg}
[ "$accel" = kvm ] && [ -d /sys/module/kvm_pvm ] && accel=tcg
export RSWAP_ACCEL=$accel RSWAP_QUIET=1
if [ $loopback = 1 ]; then
	prog "booting one guest (--loopback, $accel), guest limit ${limit}s"
	bash "$RSWAP_TOP/qemu/run.sh" --out "$out/client" --timeout "$limit" \
		tests/bench/client.sh "${args[@]}" --loopback > "$out/run.log" 2>&1 &
	server_vcpus=null mode=loopback
else
	prog "booting two guests (memory server + client, $accel), guest limit ${limit}s"
	# --apps: the client's scratch virtio disk (virtio-disk, the local SSD stand-in) holds
	# the largest application whole.
	pair=(tests/bench/server.sh tests/bench/client.sh)
	[ $apps = 0 ] || pair=(--client-scratch "$([ $full = 1 ] && echo 1024 || echo 512)" \
		tests/bench/server.sh tests/bench/apps-client.sh)
	bash "$RSWAP_TOP/qemu/run-pair.sh" --out "$out" --timeout "$limit" --grace 30 \
		"${pair[@]}" "${args[@]}" > "$out/run.log" 2>&1 &
	server_vcpus=1 mode=two-guests
fi
runpid=$!
trap 'kill -TERM $runpid 2>/dev/null; wait $runpid 2>/dev/null; exit 130' INT TERM HUP

# Progress: the client guest prints "@@BENCH step I/N left=SECS LABEL" on its console.
# duration SECS: [H:]MM:SS (the estimate of a full run is over an hour); 00:00 for what
# is not a number.
duration() {
	local s=$1
	[[ $s =~ ^[0-9]+$ ]] || s=0
	if [ "$s" -ge 3600 ]; then printf '%d:%02d:%02d' $((s / 3600)) $((s % 3600 / 60)) $((s % 60))
	else printf '%02d:%02d' $((s / 60)) $((s % 60)); fi
}
{
	tail --pid=$runpid -n +1 -F "$out/client/serial.log" 2>/dev/null | while IFS= read -r line; do
		line=${line%$'\r'}
		case $line in
		*"@@BENCH step "*)
			set -- ${line#*@@BENCH step }
			prog "step $1 ${3:-}  (~$(duration "${2#left=}") left)" ;;
		*"@@BENCH plan "*)
			set -- ${line#*@@BENCH plan }
			prog "guest up: $1 steps, estimated $(duration "${2#left=}")" ;;
		*"bench client: "*) prog "${line#*bench client: }" ;;
		esac
	done
} &
follower=$!
grc=0; wait $runpid || grc=$?
trap - INT TERM HUP
wait $follower 2>/dev/null || true
prog "guests finished (exit $grc) after $(( $(date +%s) - t_start ))s"

git_rev=$(git -C "$RSWAP_TOP" rev-parse --short HEAD 2>/dev/null || echo "none")
[ "$git_rev" = none ] || [ -z "$(git -C "$RSWAP_TOP" status --porcelain 2>/dev/null | head -1)" ] \
	|| git_rev+="-dirty"
cat > "$out/host-env.json" <<EOF
{"date": "$date_start", "git_revision": "$git_rev", "accelerator": "$accel",
 "mode": "$mode", "client_vcpus": 2, "server_vcpus": $server_vcpus,
 "qemu": "$(qemu-system-x86_64 --version | head -1)", "host_kernel": "$(uname -r)",
 "host_cpu": "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)", "host_cpus": $(nproc),
 "host_loadavg_at_start": "$(cut -d' ' -f1-3 /proc/loadavg)",
 "guest_exit_code": $grc, "wall_s": $(( $(date +%s) - t_start )),
 "results_dir": "$out"}
EOF
raw=$out/client/bench report=report.py
[ $apps = 0 ] || raw=$out/client/bench-apps report=apps_report.py
[ -f "$raw/env.json" ] || { cat "$out/run.log" >&2; die "the client guest produced no results (guest exit $grc, see $out/client/serial.log)"; }
[ -z "$mpl_pid" ] || { prog "waiting for the python3-matplotlib install"; wait $mpl_pid || true; }
rrc=0
$PY "$RSWAP_TOP/tests/bench/$report" --raw "$raw" --host-env "$out/host-env.json" \
	--out "$out" --plot --check || rrc=$?
prog "results: $out/results.json, $out/table.md$(cd "$out" && for f in bench.png apps-*.png; do [ -f "$f" ] && printf ', %s' "$out/$f"; done)"
[ $rrc = 0 ] && [ $grc = 0 ] || { prog "FAILED (guest exit $grc, report check $rrc)"; exit 1; }
prog "done in $(( $(date +%s) - t_start ))s"
