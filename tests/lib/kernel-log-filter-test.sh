#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tests/lib/kernel-log-filter.awk against small kernel logs: it drops the known soft-RoCE
# race and its aftermath, and keeps every other report. Prints KTAP; scripts/check.sh
# tallies it.
set -euo pipefail
. "$(dirname "$0")/ktap.sh"
filter=$(dirname "$0")/kernel-log-filter.awk

# report TIME HEADER FRAME...: one WARNING report as a 7.3 kernel prints it.
report() {
	local t=$1 h=$2 f
	shift 2
	printf '[%12s] ------------[ cut here ]------------\n' "$t"
	printf '[%12s] WARNING: %s, CPU#1: kworker/u8:6/2708\n' "$t" "$h"
	printf '[%12s] Modules linked in: rswap(OE) rdma_rxe ib_core [last unloaded: rswap(OE)]\n' "$t"
	printf '[%12s] Call Trace:\n[%12s]  <TASK>\n' "$t" "$t"
	for f; do printf '[%12s]  %s\n' "$t" "$f"; done
	printf '[%12s]  </TASK>\n[%12s] ---[ end trace 0000000000000000 ]---\n' "$t" "$t"
}
race() { report "$1" "drivers/infiniband/sw/rxe/rxe_task.c:111 at rxe_sched_task+0x9a/0xb0 [rdma_rxe]" \
	"rxe_resp_queue_pkt+0x4a/0x60 [rdma_rxe]" "rxe_rcv+0x2ff/0x8e0 [rdma_rxe]" "${@:2}"; }
requeue() { report "$1" "kernel/workqueue.c:2432 at __queue_work+0x3f4/0x520" \
	"queue_work_on+0x66/0x70" "rxe_sched_task+0x6c/0xb0 [rdma_rxe]" "${@:2}"; }
overrun() { report "$1" "drivers/infiniband/sw/rxe/rxe_task.c:171 at do_work+0x18b/0x220 [rdma_rxe]" \
	"process_one_work+0x174/0x330" "${@:2}"; }
line() { printf '[%12s] %s\n' "$1" "$2"; }
# kept LOG: the log's WARNING lines the filter lets through; dropped LOG: its count.
kept() { awk -f "$filter" <<<"$1" | grep -c 'WARNING:' || true; }
dropped() { awk -v count=1 -f "$filter" <<<"$1"; }
# expect LOG KEPT DROPPED: passes if the filter keeps and drops that many reports of LOG.
expect() {
	[ "$(kept "$1")" = "$2" ] && [ "$(dropped "$1")" = "$3" ] && ktap_pass \
		|| ktap_fail "kept $(kept "$1") (want $2), dropped $(dropped "$1") (want $3)"
}

t_race() {
	local log
	log=$(line 1.0 "rswap: swap0: queue 0: connected"; race 2.0; race 2.1; line 3.0 "after")
	[ "$(kept "$log")" = 0 ] && [ "$(dropped "$log")" = 2 ] && awk -f "$filter" <<<"$log" | grep -q after \
		&& ktap_pass || ktap_fail "kept $(kept "$log"), dropped $(dropped "$log")"
}
ktap_test "kernel-log filter: the rxe_sched_task race with no rswap frame is dropped and counted; other lines stay" t_race

t_race_rswap() { expect "$(race 2.0 "rswap_queue_rq+0x10/0x20 [rswap]")" 1 0; }
ktap_test "kernel-log filter: the race's report with an rswap frame is kept" t_race_rswap

t_aftermath() { expect "$(race 2.0; race 2.1; requeue 510.8; overrun 510.9; overrun 515.2)" 0 5; }
ktap_test "kernel-log filter: after the race, a soft-RoCE work queued twice and a task run too often are dropped" t_aftermath

t_aftermath_alone() { expect "$(requeue 510.8; overrun 510.9; race 511.0)" 2 1; }
ktap_test "kernel-log filter: the same warnings with no race before them are kept" t_aftermath_alone

t_aftermath_other() {
	expect "$(race 2.0; requeue 3.0 "rswap_reconnect_work+0x10/0x20 [rswap]"
		report 4.0 "kernel/workqueue.c:2432 at __queue_work+0x3f4/0x520" "queue_work_on+0x66/0x70" \
			"blk_mq_run_hw_queue+0x1/0x2")" 2 1
}
ktap_test "kernel-log filter: after the race, a work queued twice from rswap or outside soft-RoCE is kept" t_aftermath_other

t_other() {
	local log
	log=$(race 2.0; line 3.0 "BUG: KASAN: slab-use-after-free in rxe_req_notify_cq+0x1/0x2 [rdma_rxe]"; \
		report 4.0 "drivers/infiniband/sw/rxe/rxe_comp.c:700 at rxe_completer+0x1/0x2 [rdma_rxe]" "do_work+0x1/0x2 [rdma_rxe]")
	[ "$(kept "$log")" = 1 ] && awk -f "$filter" <<<"$log" | grep -q 'BUG: KASAN' && ktap_pass \
		|| ktap_fail "$(awk -f "$filter" <<<"$log")"
}
ktap_test "kernel-log filter: after the race, any other soft-RoCE report (KASAN, another WARNING) is kept" t_other

# kasan TIME FREED-FRAME...: a KASAN use-after-free report in rxe_sched_task as the debug
# kernel prints it (serial console: CR LF), its QP freed by FREED-FRAMEs.
kasan() {
	local t=$1 f
	shift
	printf '[%12s] ==================================================================\r\n' "$t"
	printf '[%12s] BUG: KASAN: slab-use-after-free in rxe_sched_task+0x3c/0x230 [rdma_rxe]\r\n' "$t"
	printf '[%12s] Call Trace:\r\n[%12s]  rxe_rcv+0xad9/0x1340 [rdma_rxe]\r\n' "$t" "$t"
	printf '[%12s] Freed by task 4776:\r\n' "$t"
	for f; do printf '[%12s]  %s\r\n' "$t" "$f"; done
	printf '[%12s] ==================================================================\r\n' "$t"
}
UVERBS_FREE=("kfree+0x172/0x4a0" "ib_destroy_qp_user+0x326/0x3e0 [ib_core]" "ib_uverbs_ioctl+0x105/0x150 [ib_uverbs]")
# kasan_kept LOG: the KASAN reports the filter lets through.
kasan_kept() { awk -f "$filter" <<<"$1" | grep -c 'BUG: KASAN' || true; }

t_kasan() {
	local log out
	log=$(line 1.0 "before"; kasan 2.0 "${UVERBS_FREE[@]}"; line 3.0 "after"; race 3.1)
	out=$(awk -f "$filter" <<<"$log")
	[ "$(kasan_kept "$log")" = 0 ] && [ "$(dropped "$log")" = 2 ] && grep -q before <<<"$out" \
		&& grep -q after <<<"$out" && ! grep -q '====' <<<"$out" && ktap_pass \
		|| ktap_fail "dropped $(dropped "$log"); left: $out"
}
ktap_test "kernel-log filter: the race caught by KASAN (rxe_sched_task, its QP freed through uverbs), with no rswap frame, is dropped and counted with its separators" t_kasan

t_kasan_kept() {
	local log
	log=$(kasan 2.0 "${UVERBS_FREE[@]}" "rswap_queue_rq+0x10/0x20 [rswap]"
		kasan 3.0 "kfree+0x172/0x4a0" "ib_destroy_qp+0x1/0x2 [ib_core]" "rswap_qp_drop+0x1/0x2 [rswap]"
		kasan 4.0 "kfree+0x172/0x4a0" "ib_destroy_qp+0x1/0x2 [ib_core]"
		line 5.0 "=================================================================="
		line 5.1 "BUG: KASAN: slab-use-after-free in rxe_completer+0x1/0x2 [rdma_rxe]"
		line 5.2 "==================================================================")
	[ "$(kasan_kept "$log")" = 4 ] && [ "$(dropped "$log")" = 0 ] \
		&& [ "$(awk -f "$filter" <<<"$log" | grep -c '====')" = 8 ] && ktap_pass \
		|| ktap_fail "kept $(kasan_kept "$log") of 4, dropped $(dropped "$log"): $(awk -f "$filter" <<<"$log")"
}
ktap_test "kernel-log filter: a KASAN report with an rswap frame, of a QP not freed through uverbs, or elsewhere than rxe_sched_task is kept whole" t_kasan_kept

ktap_run
