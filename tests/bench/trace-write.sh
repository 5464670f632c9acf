#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Where a 4 KiB QD1 I/O's time goes: the client guest of scripts/trace-write.sh (run by
# qemu/run-pair.sh beside tests/bench/server.sh). It traces, with ftrace, the in-kernel
# RDMA benchmark's QD1 WRITE and READ (samples/rdma_bench) and fio's 4 KiB QD1 random
# writes and reads on /dev/rswap0, one after the other over the same link and server
# program, and leaves each trace in $RSWAP_OUT/trace/ for tests/bench/trace_report.py.
#
#   trace-write.sh [--ms MS] [--params P1=V1+P2=V2] [--queue ATTR=VALUE+...]
#                  [--swap-mb MIB] [--page-cluster N]
#     --ms MS       how long each traced phase runs (default 3000)
#     --params P    module parameters for rswap.ko, joined by + (default none)
#     --queue Q     /sys/block/rswap0/queue/ATTR=VALUE settings, joined by +, applied
#                   before fio (the kernel command line carries the arguments: no spaces)
#     --swap-mb M   then also the swap workload (tests/bench/swapload.c, $RSWAP_OUT/swapload)
#                   of M MiB in a cgroup of half that, on /dev/rswap0, tracing where the
#                   workload's task sleeps (sched_switch with its kernel stack); 0: not
#     --page-cluster N   vm.page-cluster for the swap workload (default: the kernel's)
#
# The trace holds, on the client only: the entries of rswap's and soft-RoCE's post and
# completion functions (function tracer, filtered to the names in TRACE_FUNCS that the
# kernel has), blk-mq's issue and completion tracepoints, fio's io_submit and
# io_getevents, and the wake-up and scheduling of the waiting task (fio or insmod).
. "$RSWAP_TOP/tests/bench/lib.sh"
. "$BENCH/backends.sh"

MS=3000 PARAMS= QUEUE= SWAP_MB=0 PAGE_CLUSTER=
while [ $# -gt 0 ]; do
	case $1 in
	--ms) MS=$2; shift 2 ;;
	--swap-mb) SWAP_MB=$2; shift 2 ;;
	--page-cluster) PAGE_CLUSTER=$2; shift 2 ;;
	--params) PARAMS=$2; shift 2 ;;
	--queue) QUEUE=$2; shift 2 ;;
	*) echo "trace-write.sh: unknown argument $1"; exit 2 ;;
	esac
done
PEER=${RSWAP_PEER_IP:?two guests only (qemu/run-pair.sh)}
REGION_MB=64 DEV_MB=256
OUT=$RSWAP_OUT/trace
rm -rf "$OUT"; mkdir -p "$OUT"
ctl() { timeout 700 python3 "$BENCH/ctl.py" send "$PEER" "$CTL_PORT" "$@"; }
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T || { echo "trace: no tracefs"; exit 1; }

# The functions whose entries mark the way of one I/O (those the kernel lacks or that are
# not traceable are left out; rswap's Rust callbacks are matched by their names' words,
# and the C helpers they call first stand for them: rswap_blk_mq_queue_data_rq for
# queue_rq, rswap_ib_wc_cqe for the completion handler).
TRACE_FUNCS=(
	'*queue_rq_callback*' rswap_blk_mq_queue_data_rq blk_mq_start_request
	rswap_ib_dma_map_sg_sges rswap_ib_post_rdma
	rxe_post_send rxe_sender rxe_requester rxe_completer rxe_xmit_packet start_xmit
	skb_recv_done rxe_udp_encap_recv rxe_rcv rxe_cq_post ib_cq_completion_softirq
	irq_poll_softirq ib_poll_handler '*done_callback*' rswap_ib_wc_cqe rswap_ib_dma_unmap_sg
	blk_mq_end_request aio_complete_rw wbt_wait
)
trace_setup() { # COMM: the task that waits for each I/O (fio, insmod)
	local f n
	echo 0 > $T/tracing_on
	echo nop > $T/current_tracer
	echo global > $T/trace_clock
	echo 16384 > $T/buffer_size_kb
	: > $T/set_ftrace_filter
	for f in "${TRACE_FUNCS[@]}"; do
		# shellcheck disable=SC2086 # the pattern is a glob for grep here
		n=$(grep -c -- "^$(printf '%s' "$f" | sed 's/\*/[^ ]*/g')\( \|$\)" $T/available_filter_functions)
		[ "$n" -gt 0 ] && echo "$f" >> $T/set_ftrace_filter 2>/dev/null
	done
	# The benchmark module is loaded while tracing: its functions are named for it in
	# advance (ftrace applies a :mod: filter to a module when it loads).
	for f in rswap_ib_post_rdma rswap_ib_wc_cqe '*done_callback*'; do
		echo "$f:mod:rswap_rdma_bench" >> $T/set_ftrace_filter 2>/dev/null
	done
	echo function > $T/current_tracer
	: > $T/set_event
	for e in block:block_rq_issue block:block_rq_complete block:block_rq_insert \
		syscalls:sys_enter_io_submit syscalls:sys_exit_io_getevents \
		syscalls:sys_exit_io_pgetevents sched:sched_wakeup \
		sched:sched_switch; do
		echo "$e" >> $T/set_event 2>/dev/null || echo "trace: no event $e"
	done
	echo "comm == \"$1\"" > $T/events/sched/sched_wakeup/filter
	echo "next_comm == \"$1\"" > $T/events/sched/sched_switch/filter
	: > $T/trace
}
trace_save() { # NAME
	echo 0 > $T/tracing_on
	cat $T/trace > "$OUT/$1.trace"
	echo "trace: $1: $(grep -vc '^#' "$OUT/$1.trace") lines, $(grep -c 'entries-in-buffer' "$OUT/$1.trace") headers"
	: > $T/trace
}

echo "trace client: $(uname -r), $(nproc) vCPU, peer $PEER, ${MS} ms per phase"
rdma_up || exit 1
ctl --wait=180 ping || { echo "trace client: the server guest never answered"; exit 1; }
rc=0

# ---- the in-kernel benchmark: WRITE, then READ, QD1 ----------------------------------
hex=$(printf '0x%02x%02x%02x%02x' ${PEER//./ })
for op in write read; do
	case $op in write) ops=2 ;; read) ops=1 ;; esac
	ctl run rswap_server_start "$PEER" "$REGION_MB" > /dev/null || { echo "trace: no rswap-server"; exit 1; }
	trace_setup insmod
	dmesg_mark "trace kbench $op"
	echo 1 > $T/tracing_on
	timeout 120 insmod "$RSWAP_TOP/rswap_rdma_bench.ko" addr="$hex" port="$RSWAP_SERVER_PORT" \
		ops=$ops qd=1 ms="$MS" size_mb="$REGION_MB" || rc=1
	trace_save "kbench-$op"
	dmesg | sed -n "/rswap-test-mark: trace kbench $op\$/,\$p" | grep -o 'result op=.*' > "$OUT/kbench-$op.result"
	cat "$OUT/kbench-$op.result"
	rmmod rswap_rdma_bench 2>/dev/null
	ctl run rswap_server_stop "$RSWAP_SERVER_PORT" > /dev/null
done

# ---- rswap: fio 4 KiB QD1 random writes, then reads ---------------------------------
BK_DIR=$OUT RSWAP_BK_PARAMS=${PARAMS//+/ }
backend_rswap_setup || { echo "trace: rswap set-up failed: $BK_REASON"; exit 1; }
dev=${BK_DEV#/dev/}
for kv in ${QUEUE//+/ }; do
	echo "${kv#*=}" > "/sys/block/$dev/queue/${kv%%=*}" || echo "trace: $kv refused"
done
for a in scheduler wbt_lat_usec nr_requests nomerges rotational; do
	echo "$a=$(cat "/sys/block/$dev/queue/$a" 2>/dev/null)"
done > "$OUT/queue.txt"
cat "$OUT/queue.txt"
fio --name=fill --filename="$BK_DEV" --direct=1 --ioengine=libaio --rw=write --bs=1M \
	--iodepth=4 --size="${REGION_MB}M" > /dev/null 2>&1 || rc=1
for rw in write read; do
	trace_setup fio
	echo 1 > $T/tracing_on
	fio --name="qd1-$rw" --filename="$BK_DEV" --direct=1 --ioengine=libaio --rw="rand$rw" \
		--bs=4k --iodepth=1 --size="${REGION_MB}M" --time_based --runtime="${MS}ms" \
		--norandommap --randrepeat=0 --output-format=json --output="$OUT/rswap-$rw.json" \
		> /dev/null 2>&1 || rc=1
	trace_save "rswap-$rw"
done

# ---- the swap workload: where its task waits ------------------------------------------
swap_trace_start() {
	echo 0 > $T/tracing_on
	echo nop > $T/current_tracer
	: > $T/set_event
	echo 'prev_comm == "swapload" || next_comm == "swapload"' > $T/events/sched/sched_switch/filter
	echo 'stacktrace if prev_comm == "swapload"' > $T/events/sched/sched_switch/trigger
	echo sched:sched_switch block:block_rq_issue block:block_rq_complete | tr ' ' '\n' > $T/set_event
	: > $T/trace
	echo 1 > $T/tracing_on
}
swap_trace_stop() {
	echo 0 > $T/tracing_on
	cat $T/trace > "$OUT/swap.trace"
	echo '!stacktrace if prev_comm == "swapload"' > $T/events/sched/sched_switch/trigger
	echo 0 > $T/events/sched/sched_switch/filter
	: > $T/trace
}
if [ "$SWAP_MB" -gt 0 ]; then
	[ -z "$PAGE_CLUSTER" ] || echo "$PAGE_CLUSTER" > /proc/sys/vm/page-cluster
	echo "page-cluster=$(cat /proc/sys/vm/page-cluster)" >> "$OUT/queue.txt"
	cp "$RSWAP_OUT/swapload" "$SWAPLOAD" && chmod +x "$SWAPLOAD" || { echo "trace: no swapload"; rc=1; }
	SWAP_LIMIT_MB=$((SWAP_MB / 2)) SWAP_HIGH_KB=$((SWAP_MB * 1024 * 7 / 16)) SWAP_TIMEOUT=900
	cat "$RSWAP_CFG/stats" > "$OUT/stats-before-swap.txt"
	SWAP_TRACE_START=swap_trace_start SWAP_TRACE_STOP=swap_trace_stop \
		swap_run "$BK_DEV" "$OUT" 1 || rc=1
	cat "$RSWAP_CFG/stats" > "$OUT/stats-after-swap.txt"
	echo "swap: $(cat "$OUT/swap-1.json")"
	echo "swap: $(cat "$OUT/swapload-1.json")"
fi
backend_rswap_teardown
echo nop > $T/current_tracer
dmesg_clean > "$OUT/dmesg-bad.txt" || { echo "trace client: kernel warnings, see dmesg-bad.txt"; rc=1; }
ctl stop > /dev/null
echo "trace client: done (rc $rc)"
exit $rc
