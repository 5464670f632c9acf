# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# The applications of `make bench-apps` and one measured run of one (source, do not run;
# after tests/bench/lib.sh). Used by tests/bench/apps-client.sh (the benchmark's client
# guest) and tests/guest/42-apps.sh (its quick subset in `make check`).
#
# APPS_BIN is the folder of the project's own programs (tests/bench/apps/build.sh builds
# appqsort, appstream and kvload there); the sizes come from QSORT_MIB, STREAM_MIB,
# KV_KEYS, KV_VALUE (bytes) and KV_OPS, the time limit of one run from APPS_TIMEOUT.
#
#   kv      Redis (Debian's redis-server, no persistence, no eviction) filled with KV_KEYS
#           keys of KV_VALUE bytes by kvload, then KV_OPS requests one at a time (90% GET,
#           10% SET, Zipfian keys, theta 0.99), then every key read back and compared;
#           only redis-server is in the cgroup. Figure: the requests' time (ops/s, p99).
#   qsort   appqsort: quicksort of QSORT_MIB MiB of random 64-bit keys, output checked.
#   stream  appstream: an external-sort pattern over STREAM_MIB MiB (two halves): 1 MiB
#           runs, then sequential merge passes; output checked.
APPS=(kv qsort stream)
APPS_CG=/sys/fs/cgroup/rswap-apps
APPS_REDIS_PORT=6399
: "${APPS_TIMEOUT:=900}"

# app_exec APP OUT ERR: run APP once with its memory in $APPS_CG; its JSON line goes to
# OUT, its complaints to ERR; the exit code is the app's (its output check included).
app_exec() {
	case $1 in
	qsort) timeout "$APPS_TIMEOUT" bash -c "echo \$\$ > $APPS_CG/cgroup.procs && exec $APPS_BIN/appqsort $QSORT_MIB" > "$2" 2> "$3" ;;
	stream) timeout "$APPS_TIMEOUT" bash -c "echo \$\$ > $APPS_CG/cgroup.procs && exec $APPS_BIN/appstream $STREAM_MIB" > "$2" 2> "$3" ;;
	kv) app_exec_kv "$2" "$3" ;;
	*) echo "no application $1" > "$3"; return 2 ;;
	esac
}
app_exec_kv() { # OUT ERR
	local pid rc=0
	bash -c "echo \$\$ > $APPS_CG/cgroup.procs && exec redis-server --port $APPS_REDIS_PORT \
		--bind 127.0.0.1 --save '' --appendonly no --maxmemory 0 --daemonize no" > "$2.redis" 2>&1 &
	pid=$!
	for _ in $(seq 300); do
		[ "$(redis-cli -p $APPS_REDIS_PORT ping 2>/dev/null)" = PONG ] && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	timeout "$APPS_TIMEOUT" "$APPS_BIN/kvload" 127.0.0.1 $APPS_REDIS_PORT "$KV_KEYS" "$KV_VALUE" \
		"$KV_OPS" > "$1" 2> "$2" || rc=$?
	timeout 120 redis-cli -p $APPS_REDIS_PORT shutdown nosave > /dev/null 2>&1 || kill $pid 2>/dev/null
	for _ in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
	return $rc
}

# dev_sectors DEV: "read_sectors written_sectors" of a block device (/sys/block/DEV/stat).
dev_sectors() { awk '{ print $3, $7 }' "/sys/block/$1/stat" 2>/dev/null || echo "0 0"; }
# stat_devs DEV: the block devices whose traffic is the backend's: an md array's members,
# otherwise the device itself.
stat_devs() {
	local n=${1#/dev/} s
	for s in /sys/block/"$n"/slaves/*; do [ -e "$s" ] && basename "$s"; done | grep . || echo "$n"
}

# app_run APP FILE MAX HIGH [DEV...]: one measured run of APP in a fresh $APPS_CG with
# memory.max MAX and memory.high HIGH (each "max" or a size in KiB); FILE gets its record,
# one JSON object: the app's own line ("out"), exit code, wall time, the group's peak
# memory and OOM kills, the swap and zswap counters of /proc/vmstat moved during the run,
# and the bytes read and written on each DEV (for zram also its peak memory use). The
# app's output and complaints are kept in FILE.out and FILE.err. Fails when the app did.
app_run() {
	local app=$1 f=$2 max=$3 high=$4 rc=0 t0 t1 k d v0=() v1=() s0=() s1=() devs=() j
	shift 4
	local vkeys=(pswpin pswpout zswpin zswpout zswpwb)
	# (No process substitution: the guests have no /dev/fd.)
	# shellcheck disable=SC2207 # block device names have no blanks
	for d in "$@"; do devs+=($(stat_devs "$d")); done
	cg_make "$APPS_CG" "$([ "$max" = max ] && echo max || echo "${max}K")" \
		"$([ "$high" = max ] && echo max || echo "${high}K")" || { echo "cgroup $APPS_CG: cannot make it"; return 1; }
	for k in "${vkeys[@]}"; do v0+=("$(vm "$k")"); done
	for d in "${devs[@]}"; do
		s0+=("$(dev_sectors "$d")")
		[ ! -w "/sys/block/$d/mem_used_max" ] || echo 0 > "/sys/block/$d/mem_used_max"
	done
	t0=$(date +%s.%N)
	app_exec "$app" "$f.out" "$f.err" || rc=$?
	t1=$(date +%s.%N)
	for k in "${vkeys[@]}"; do v1+=("$(vm "$k")"); done
	for d in "${devs[@]}"; do s1+=("$(dev_sectors "$d")"); done
	{
		printf '{"app": "%s", "rc": %s, "wall_s": %s, "max_kb": %s, "high_kb": %s, "peak_kb": %s, "oom_kill": %s,\n' \
			"$app" "$rc" "$(awk "BEGIN { printf \"%.3f\", $t1 - $t0 }")" \
			"$([ "$max" = max ] && echo null || echo "$max")" "$([ "$high" = max ] && echo null || echo "$high")" \
			$(($(cat "$APPS_CG/memory.peak" 2>/dev/null || echo 0) / 1024)) \
			"$(awk '$1 == "oom_kill" { print $2 }' "$APPS_CG/memory.events")"
		j=
		for k in "${!vkeys[@]}"; do
			j+="${j:+, }\"${vkeys[$k]}\": $(( ${v1[$k]:-0} - ${v0[$k]:-0} ))"
		done
		printf ' "vmstat": {%s},\n' "$j"
		j=
		for k in "${!devs[@]}"; do
			read -r r0 w0 <<< "${s0[$k]}"; read -r r1 w1 <<< "${s1[$k]}"
			j+="${j:+, }\"${devs[$k]}\": {\"read_bytes\": $(( (r1 - r0) * 512 )), \"write_bytes\": $(( (w1 - w0) * 512 ))"
			[ ! -r "/sys/block/${devs[$k]}/mm_stat" ] \
				|| j+=", \"zram_mem_used_max\": $(awk '{ print $5 }' "/sys/block/${devs[$k]}/mm_stat")"
			j+="}"
		done
		printf ' "devices": {%s},\n' "$j"
		printf ' "out": %s}\n' "$(head -1 "$f.out" | grep '^{' || echo null)"
	} > "$f"
	rmdir "$APPS_CG" 2>/dev/null
	[ $rc = 0 ] || { echo "$app: exit $rc: $(tail -2 "$f.err" | tr '\n' ' ')"; return 1; }
}

# The limits of a run at FRACTION percent of the peak PEAK_KB: "MAX HIGH" in KiB, memory.high
# 7/8 of memory.max below 100% (as the swap workload of `make bench`: without it the
# memcg OOM killer fired on slow network swap, whose writeback reclaim outran), none at
# 100%.
app_limits() { # FRACTION PEAK_KB
	local max=$(( $2 * $1 / 100 ))
	if [ "$1" -ge 100 ]; then echo "$max max"; else echo "$max $((max * 7 / 8))"; fi
}
