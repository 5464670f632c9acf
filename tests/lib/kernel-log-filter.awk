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
	if (inreport && !count)
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
