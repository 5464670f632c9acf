#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Memory under a sustained swap load: 4 processes of 48 MiB each (swapload) rewrite their
# pages in a random order (each page checked, then written with a new checksummed
# pattern) in a 64 MiB cgroup for 5 minutes on the debug kernel (25 s on the stock
# kernel, which never piled up memory and whose run counts against make check's time),
# with swap striped at equal priority over two rswap targets on two servers in the guest,
# each target with its secret; halfway
# through, both servers close every connection (SIGUSR1) and the queues recover, and
# authenticate again, under the load. Before the load, every 30 s during it (10 s on
# stock) and after it, the suite records the unreclaimable slab (SUnreclaim), the largest
# unreclaimable caches, skbuff_head_cache, kmalloc-1k and -2k, soft-RoCE's counters, the
# RoCE UDP socket's queues and the qdisc backlog, in $RSWAP_OUT/41-memory/series.tsv (a
# row a sample) and slab-LABEL.txt (the largest caches and the QPs at each sample). A
# minute after the load ends (10 s on the stock kernel), unreclaimable slab and
# skbuff_head_cache must be back within 16 MiB and 2048 objects of their level before it.
# Then the same figures after swapoff, after the target's queues are gone, after the
# server is gone and after rmmod, to tell who held what was left.
. "$RSWAP_TOP/tests/lib/guest.sh"

KO=$RSWAP_TOP/rswap.ko
SRV=$RSWAP_TOP/tools/rswap-server/target/release/rswap-server
LOAD=${RSWAP_SWAPLOAD:-$RSWAP_OUT/swapload}
IP=${RSWAP_GUEST_IP:-192.0.2.1}
PORT=18541
CFG=/sys/kernel/config/rswap
T=$CFG/memory
T2=$CFG/memory2
ALLOW=/tmp/rswap-41-allow
ID=0x4101 ID2=0x4102
SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
SECRET2=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
CG=/sys/fs/cgroup/rswap-memory
OUT=$RSWAP_OUT/41-memory
PROCS=4 PROC_MB=48 LIMIT_MB=64
# The load's length, and how long after it the figures must be back (SETTLE_S). The
# teardown's figures, only recorded, are taken TEARDOWN_S after the queues and after the
# servers are gone.
LOAD_S=25 SETTLE_S=10 SAMPLE_S=10 TEARDOWN_S=1
[[ $(uname -r) != *-rswap-debug ]] || LOAD_S=300 SETTLE_S=60 SAMPLE_S=30 TEARDOWN_S=5
# The margins the figures must come back within, SETTLE_S after the load.
SLAB_MARGIN_KB=$((16 << 10)) SKB_MARGIN=2048
# The load stops early when unreclaimable slab passes this share of the guest's memory
# (percent), so that a kernel that piles up memory fails the test instead of the guest.
SLAB_CEILING_PCT=40
# soft-RoCE's counters recorded at each sample (ports/1/hw_counters).
COUNTERS="sent_pkts rcvd_pkts duplicate_request out_of_seq_request rcvd_seq_err rcvd_rnr_err
send_rnr_err ack_deferred completer_retry_err retry_exceeded_err retry_rnr_exceeded_err send_err"

SPID= SPID2= LPIDS=()
cleanup() {
	[ ${#LPIDS[@]} = 0 ] || kill "${LPIDS[@]}" 2>/dev/null
	swapoff /dev/rswap0 2>/dev/null; swapoff /dev/rswap1 2>/dev/null
	{ [ -d "$T2" ] && echo 0 > "$T2/enable"; } 2>/dev/null
	rmdir "$T2" 2>/dev/null
	[ -z "$SPID2" ] || kill -KILL "$SPID2" 2>/dev/null
	target_cleanup
	rmdir $CG 2>/dev/null
	true
}
trap cleanup EXIT

# slab NAME: active objects of slab cache NAME (0 when there is none).
slab() { awk -v n="$1" '$1 == n { a = $2 } END { print a + 0 }' /proc/slabinfo; }
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
# shrink: give back empty slabs, and (on a KASAN kernel) the freed objects its quarantine
# still holds, which count as allocated: a settled figure, not a leak.
shrink() {
	local f
	for f in /sys/kernel/slab/*/shrink; do
		[ -L "${f%/shrink}" ] || echo 1 > "$f" 2>/dev/null
	done
}
# The RoCE v2 UDP socket's (port 4791) receive and send queue, bytes: "rx/tx".
udp_queues() {
	local rx=0 tx=0 q
	for q in $(awk 'NR > 1 && $2 ~ /:12B7$/ { print $5 }' /proc/net/udp /proc/net/udp6 2>/dev/null); do
		tx=$((tx + 16#${q%%:*})) rx=$((rx + 16#${q##*:}))
	done
	echo "$rx/$tx"
}
qdisc_backlog() {
	tc -s qdisc show dev eth0 2>/dev/null | awk '/backlog/ { b += $2 + 0; p += $3 + 0 } END { printf "%db/%dp", b, p }'
}
# The ten largest unreclaimable slab caches: name, kB, objects in use. $RECLAIMABLE (set
# up once) names the caches that are not.
top_unreclaimable() {
	awk -v skip="$RECLAIMABLE" 'BEGIN { n = split(skip, r, " "); for (i = 1; i <= n; i++) rcl[r[i]] = 1 }
		NR > 2 && !($1 in rcl) { printf "%-28s %8d kB %8d objects\n", $1, $3 * $4 / 1024, $2 }' /proc/slabinfo \
		| sort -k2 -rn | head -10
}
# The reconnects of both targets' queues so far.
recoveries() { echo $(( $(state_field $T recoveries 2>/dev/null || echo 0) + $(state_field $T2 recoveries 2>/dev/null || echo 0) )); }
# sample LABEL: one row of series.tsv; the largest caches and the QPs in slab-LABEL.txt.
SERIES=$OUT/series.tsv
T0=$(date +%s)
sample() {
	local c v row
	row="$1	$(( $(date +%s) - T0 ))	$(meminfo SUnreclaim)	$(meminfo MemFree)	$(slab skbuff_head_cache)	$(slab skbuff_small_head)	$(slab kmalloc-1k)	$(slab kmalloc-2k)	$(udp_queues)	$(qdisc_backlog)	$(vm pswpout)	$(vm pswpin)	$(recoveries)"
	for c in $COUNTERS; do
		v=$(cat "/sys/class/infiniband/$RDMA_DEV/ports/1/hw_counters/$c" 2>/dev/null)
		row+="	${v:--}"
	done
	printf '%s\n' "$row" >> "$SERIES"
	{ echo "# $1 at $(( $(date +%s) - T0 ))s: SUnreclaim $(meminfo SUnreclaim) kB"
	  top_unreclaimable
	  rdma resource show qp 2>/dev/null | grep -v 'type GSI\|type SMI'
	} > "$OUT/slab-$1.txt"
}
# row_field LABEL COLUMN: a column (named as in the header) of the series' row LABEL.
row_field() { awk -F'\t' -v l="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } $1 == l { v = $k } END { print v }' "$SERIES"; }

setup() {
	rm -rf "$OUT"; mkdir -p "$OUT"
	[ -f "$KO" ] || ktap_skip_rest "rswap.ko not built"
	[ -x "$SRV" ] || ktap_skip_rest "rswap-server not built (scripts/build-server.sh)"
	[ -x "$LOAD" ] || ktap_skip_rest "no swapload binary at $LOAD"
	[ -r /proc/slabinfo ] || ktap_skip_rest "no /proc/slabinfo"
	rdma_up >/dev/null || ktap_skip_rest "$RDMA_DEV unavailable"
	dmesg_mark "41-memory"
	RECLAIMABLE=$(grep -lx 1 /sys/kernel/slab/*/reclaim_account 2>/dev/null | awk -F/ '{ printf "%s ", $5 }')
	printf 'label\tt_s\tSUnreclaim_kB\tMemFree_kB\tskbuff_head_cache\tskbuff_small_head\tkmalloc-1k\tkmalloc-2k\tudp_rx/tx_B\tqdisc_backlog\tpswpout\tpswpin\trecoveries' > "$SERIES"
	printf '\t%s' $COUNTERS >> "$SERIES"; echo >> "$SERIES"
	printf '# id secret\n%s %s\n%s %s\n' "$ID" "$SECRET" "$ID2" "$SECRET2" > $ALLOW
	chmod 600 $ALLOW
	server_start "$OUT/server2.log" --listen "$IP:$((PORT + 1))" --size $((PROCS * PROC_MB / 2 + 96))M --allow-list $ALLOW \
		|| ktap_skip_rest "the second rswap-server does not start"
	SPID2=$SPID
	server_start "$OUT/server.log" --listen "$IP:$PORT" --size $((PROCS * PROC_MB / 2 + 96))M --allow-list $ALLOW \
		|| ktap_skip_rest "rswap-server does not start"
	grep -q '^rswap ' /proc/modules || rswap_load || ktap_skip_rest "insmod failed"
	swapoff -a 2>/dev/null
}

# target_on DIR PORT ID SECRET DEV: enables a target of half the load (and a margin) and
# swaps on it at priority 100.
target_on() {
	mkdir -p "$1"
	echo "$IP" > "$1/addr"; echo "$2" > "$1/port"; echo $((PROCS * PROC_MB / 2 + 64))M > "$1/size"
	echo "$3" > "$1/client_id"; echo "$4" > "$1/secret"
	echo 1 > "$1/enable" && mkswap "$5" >/dev/null && swapon -p 100 "$5"
}
t_swapon() {
	if target_on $T $PORT $ID "$SECRET" /dev/rswap0 && target_on $T2 $((PORT + 1)) $ID2 "$SECRET2" /dev/rswap1; then
		ktap_pass
		ktap_diag "$(cat /proc/swaps | tr -s ' ' | tr '\n' ';')"
	else
		ktap_fail "$(cat $T/last_error $T2/last_error 2>/dev/null); $(dmesg | grep rswap | tail -3)"; ktap_skip_rest "no swap"
	fi
}
ktap_test "memory: swap striped at equal priority over /dev/rswap0 and /dev/rswap1, each on its own server in the guest with its secret" t_swapon

# The load, with the rows "before" and "during-N" (every $SAMPLE_S s, plus the time a
# sample takes), and slab-peak.txt at the largest SUnreclaim seen.
t_load() {
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	mkdir -p $CG
	echo $((LIMIT_MB << 20)) > $CG/memory.max
	echo max > $CG/memory.swap.max 2>/dev/null
	sync; echo 3 > /proc/sys/vm/drop_caches; shrink
	sample before
	ceiling=$(( $(meminfo MemTotal) * SLAB_CEILING_PCT / 100 ))
	start=$(date +%s)
	deadline=$((start + LOAD_S))
	for n in $(seq $PROCS); do
		# No verify passes after the rewrite phase: it checked every page it rewrote, and
		# reading everything back twice takes a debug kernel's guest a quarter of an hour.
		SWAPLOAD_PASSES=0 sh -c "echo \$\$ > $CG/cgroup.procs && exec $LOAD $PROC_MB $n $LOAD_S" \
			>"$OUT/load-$n.json" 2>"$OUT/load-$n.err" &
		LPIDS+=($!)
	done
	peak=0 k=0 stopped= usr1=
	rec0=$(recoveries)
	# Until every process ended, at most 10 minutes past the deadline: a sample every
	# SAMPLE_S s while any runs, their end noticed within half a second.
	while kill -0 "${LPIDS[@]}" 2>/dev/null; do
		due=$(( $(date +%s%N) / 1000000 + SAMPLE_S * 1000 ))
		while kill -0 "${LPIDS[@]}" 2>/dev/null && [ $(( $(date +%s%N) / 1000000 )) -lt $due ]; do
			sleep 0.5
		done
		kill -0 "${LPIDS[@]}" 2>/dev/null || break
		k=$((k + 1))
		sample "during-$k"
		su=$(row_field "during-$k" SUnreclaim_kB)
		if [ "$su" -gt "$peak" ]; then peak=$su; cp "$OUT/slab-during-$k.txt" "$OUT/slab-peak.txt"; fi
		# Halfway through, a transport error: both servers close every connection
		# (keeping the regions), and the queues recover under the load.
		if [ -z "$usr1" ] && [ "$(date +%s)" -ge $((start + LOAD_S / 2)) ]; then
			usr1=$(( $(date +%s) - start ))
			kill -USR1 "$SPID" "$SPID2"
		fi
		if [ -z "$stopped" ] && [ "$su" -gt "$ceiling" ]; then
			stopped="unreclaimable slab ${su} kB passed ${SLAB_CEILING_PCT}% of the guest's memory at $(( $(date +%s) - start ))s"
			kill "${LPIDS[@]}" 2>/dev/null
		fi
		[ "$(date +%s)" -lt $((deadline + 600)) ] || kill "${LPIDS[@]}" 2>/dev/null
	done
	failed=0
	for p in "${LPIDS[@]}"; do wait "$p" || failed=$((failed + 1)); done
	LPIDS=()
	took=$(( $(date +%s) - start ))
	runs=$(cat "$OUT"/load-*.json 2>/dev/null | grep -c '"bad_pages": *0')
	rewrites=$(cat "$OUT"/load-*.json 2>/dev/null | sed -n 's/.*"rewrites": *\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
	since=$(dmesg | sed -n '/rswap-test-mark: 41-memory/,$p')
	killed=$(printf '%s\n' "$since" | grep -c 'Killed process')
	timedout=$(printf '%s\n' "$since" | grep -c 'rswap.*: queue [0-9]*: .* timed out after [0-9]* ms')
	rec1=$(recoveries)
	ktap_diag "load: $PROCS x $PROC_MB MiB in $LIMIT_MB MiB for ${took}s: $rewrites pages rewritten; $runs of $PROCS processes ended with 0 bad pages, $failed failed; peak SUnreclaim ${peak} kB" \
		"the servers closed every connection at ${usr1:-(never)}s; recoveries $rec0 -> $rec1; steps timed out: $timedout"
	[ -z "$stopped" ] || ktap_diag "stopped: $stopped"
	if [ -z "$stopped" ] && [ "$runs" = $PROCS ] && [ "$failed" = 0 ] && [ "$killed" = 0 ] \
		&& [ "$timedout" = 0 ] && [ -n "$usr1" ] && [ "$rec1" -gt "$rec0" ]; then
		ktap_pass
	else
		ktap_fail "$(cat "$OUT"/load-*.err 2>/dev/null | tail -4); killed $killed; timed out $timedout; recoveries $rec0 -> $rec1; $(printf '%s\n' "$since" | grep rswap | tail -4)"
	fi
}
ktap_test "memory: the swap load ($PROCS x $PROC_MB MiB rewritten in a $LIMIT_MB MiB cgroup for ${LOAD_S}s, both servers closing every connection halfway) ends with 0 bad pages, no process killed, the queues reconnected with no step timed out, slab below its ceiling" t_load

# The rows of t_load; SETTLE_S after the load, the same figures again.
t_back() {
	sleep $SETTLE_S
	sample after-${SETTLE_S}s
	shrink
	sample after
	s0=$(row_field before SUnreclaim_kB) s1=$(row_field after SUnreclaim_kB) sp=$(awk -F'\t' '$1 ~ /^during-/ && $3 > m { m = $3 } END { print m + 0 }' "$SERIES")
	k0=$(row_field before skbuff_head_cache) k1=$(row_field after skbuff_head_cache)
	kp=$(awk -F'\t' '$1 ~ /^during-/ && $5 > m { m = $5 } END { print m + 0 }' "$SERIES")
	ktap_diag "SUnreclaim: before ${s0} kB, at most ${sp} kB during the load, ${SETTLE_S}s after ${s1} kB" \
		"skbuff_head_cache: before $k0, at most $kp during the load, ${SETTLE_S}s after $k1 objects"
	sed 's/^/peak: /' "$OUT/slab-peak.txt" 2>/dev/null | head -8 | while IFS= read -r l; do ktap_diag "$l"; done
	for c in duplicate_request out_of_seq_request rcvd_seq_err completer_retry_err ack_deferred send_err; do
		ktap_diag "$RDMA_DEV $c: $(row_field before $c) -> $(row_field after $c)"
	done
	if [ $((s1 - s0)) -le $SLAB_MARGIN_KB ] && [ $((k1 - k0)) -le $SKB_MARGIN ]; then
		ktap_pass
	else
		ktap_fail "unreclaimable slab +$((s1 - s0)) kB (at most +$SLAB_MARGIN_KB), skbuff_head_cache +$((k1 - k0)) (at most +$SKB_MARGIN) ${SETTLE_S}s after the load"
	fi
}
ktap_test "memory: after the load (a minute on the debug kernel, 10 s on stock), unreclaimable slab within 16 MiB and skbuff_head_cache within 2048 objects of their level before it" t_back

# Where what is left goes away: after swapoff, without the target's queues, without the
# server, without the module. Records rows; fails only if the teardown fails.
t_teardown() {
	rmdir $CG 2>/dev/null
	ok=1
	swapoff /dev/rswap0 || ok=0
	swapoff /dev/rswap1 || ok=0
	shrink; sample swapoff
	echo 0 > $T/enable || ok=0
	echo 0 > $T2/enable || ok=0
	rmdir $T $T2 || ok=0
	sleep $TEARDOWN_S; shrink; sample disabled
	kill "$SPID" "$SPID2"; wait "$SPID" "$SPID2" 2>/dev/null; SPID= SPID2=
	sleep $TEARDOWN_S; shrink; sample no-server
	rmmod rswap || ok=0
	shrink; sample rmmod
	for l in swapoff disabled no-server rmmod; do
		ktap_diag "$l: SUnreclaim $(row_field $l SUnreclaim_kB) kB, skbuff_head_cache $(row_field $l skbuff_head_cache)"
	done
	if [ $ok = 1 ]; then ktap_pass; else ktap_fail "$(dmesg | tail -5)"; fi
}
ktap_test "memory: swapoff, disable, servers stop and rmmod work; the figures after each are recorded" t_teardown

ktap_test "dmesg: no BUG/WARNING/Oops in the memory tests" dmesg_check_noting

ktap_run setup
