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
/WARNING: drivers\/infiniband\/sw\/rxe\/rxe_task\.c:[0-9]+ at rxe_sched_task/ {
	inreport = 1
	buf = $0 "\n"
	next
}
inreport {
	buf = buf $0 "\n"
	if ($0 ~ /---\[ end trace/) {
		if (buf ~ /\[rswap\]/) {
			if (!count)
				printf "%s", buf
		} else {
			dropped++
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
