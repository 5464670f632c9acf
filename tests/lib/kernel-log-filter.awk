# SPDX-License-Identifier: GPL-2.0
# Prints a kernel log (dmesg, or a serial console log) without the reports of a known
# soft-RoCE race that is not rswap's, so that the tests' "no BUG/WARNING" checks still see
# everything else. With -v count=1 it prints only how many reports it dropped.
#
# The race: rxe's receive path queues a packet on the destination QP and then schedules
# the QP's task; when that QP is being destroyed (its owner, e.g. a SIGKILLed
# rswap-server, is gone) and its task consumes the packet in between, the last reference
# is already dropped and rxe_sched_task() warns, twice
# ("WARNING: drivers/infiniband/sw/rxe/rxe_task.c:NNN at rxe_sched_task"). A report is
# dropped only if none of its stack frames is in rswap ("[rswap]").
#
# The same call then queues the task's work on a QP that is being freed, and the freed
# task can run afterwards: once such a report has been seen, the workqueue's warning of a
# work item queued twice ("WARNING: kernel/workqueue.c:NNN at __queue_work") and rxe's of
# a task run more often than scheduled ("rxe_task.c:NNN at do_work") are that race's
# aftermath. They are dropped only after a dropped rxe_sched_task report, only with a
# soft-RoCE frame ("[rdma_rxe]") and, like it, none in rswap.
#
# On a kernel with KASAN the same race may be caught as a use-after-free instead: a
# report between two lines of "=", "BUG: KASAN: slab-use-after-free in rxe_sched_task",
# whose QP was freed through uverbs ("ib_destroy_qp_user" called from "ib_uverbs"): a
# userspace QP, the memory server's, which rswap's QPs never are. It is dropped likewise,
# only with a soft-RoCE frame and none in rswap.
inkasan {
	buf = buf $0 "\n"
	if ($0 ~ /^(\[ *[0-9.]+\] )?=+\r?$/) {
		if (buf !~ /\[rswap\]/ && buf ~ /\[rdma_rxe\]/ && buf ~ /ib_destroy_qp_user/ && buf ~ /ib_uverbs/) {
			dropped++
			raced = 1
		} else if (!count) {
			printf "%s", buf
		}
		inkasan = 0
		buf = ""
	}
	next
}
held != "" {
	if (!inreport && $0 ~ /BUG: KASAN: slab-use-after-free in rxe_sched_task/) {
		inkasan = 1
		buf = held "\n" $0 "\n"
		held = ""
		next
	}
	if (!count)
		print held
	held = ""
}
!inreport && /^(\[ *[0-9.]+\] )?=+\r?$/ {
	held = $0
	next
}
/WARNING: drivers\/infiniband\/sw\/rxe\/rxe_task\.c:[0-9]+ at rxe_sched_task/ {
	start_report(1)
	next
}
raced && /WARNING: (kernel\/workqueue\.c:[0-9]+ at __queue_work|drivers\/infiniband\/sw\/rxe\/rxe_task\.c:[0-9]+ at do_work)/ {
	start_report(0)
	next
}
inreport {
	buf = buf $0 "\n"
	if ($0 ~ /---\[ end trace/) {
		if (buf ~ /\[rswap\]/ || (!cause && buf !~ /\[rdma_rxe\]/)) {
			if (!count)
				printf "%s", buf
		} else {
			dropped++
			raced = 1
		}
		inreport = 0
		buf = ""
	}
	next
}
!count { print }
END {
	if (held != "" && !count)
		print held
	if ((inreport || inkasan) && !count)
		printf "%s", buf
	if (count)
		print dropped + 0
}

# A report starts at this line; is_cause: it is the race itself (rxe_sched_task).
function start_report(is_cause) {
	if (inreport && !count)
		printf "%s", buf
	inreport = 1
	cause = is_cause
	buf = $0 "\n"
}
