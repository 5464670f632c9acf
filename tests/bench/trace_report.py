#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Breakdown of one 4 KiB QD1 I/O from the ftrace traces of tests/bench/trace-write.sh.

  trace_report.py DIR      DIR holds kbench-write.trace, kbench-read.trace,
                           rswap-write.trace, rswap-read.trace, swap.trace (any of them)

An I/O's cycle starts at its post (`rswap_ib_post_rdma`, the same C helper in rswap.ko and
in rswap_rdma_bench.ko) and ends at the next one. Each milestone is the first entry of
its name after the one before it in the cycle; the table shows, per milestone, the
median time from the post to it, and the median step from the milestone before it, over
the cycles in which every milestone was found. rswap's cycles also show what comes
before the post: fio's io_submit, blk-mq's queue_rq and the request's start.

The swap workload's trace (swap.trace) is read differently: each time its task leaves the
CPU until it runs again, counted by the first telling frames of its kernel stack, and
the device's requests (issue to completion) by direction.
"""
import re
import statistics
import sys
from pathlib import Path

LINE = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<ts>\d+\.\d+):\s+(?P<rest>.*)$"
)


def parse(path):
    """The trace's entries as (seconds, cpu, comm, name, detail)."""
    out = []
    for line in Path(path).read_text(errors="replace").splitlines():
        m = LINE.match(line)
        if not m:
            continue
        rest = m["rest"]
        ev = re.match(r"^([a-z_0-9]+): (.*)$", rest)
        if ev and not rest.startswith("sys_"):
            name, detail = ev[1], ev[2]
        elif rest.startswith("sys_io_submit("):
            name, detail = "io_submit", rest
        elif rest.startswith(("sys_io_getevents ->", "sys_io_pgetevents ->")):
            name, detail = "io_getevents_ret", rest
        else:
            # function tracer: "func <-parent"
            func = rest.split(" <-", 1)[0].strip()
            name, detail = func, rest
            # rswap's Rust callbacks, or the C helper each calls first.
            if "done_callback" in func or func == "rswap_ib_wc_cqe":
                name = "done_callback"
            elif "queue_rq_callback" in func or func == "rswap_blk_mq_queue_data_rq":
                name = "queue_rq"
        out.append((float(m["ts"]), int(m["cpu"]), m["comm"], name, detail))
    return out


# Milestones: (label, entry name). The same entry name may come twice in a cycle (the rxe
# task runs once to send and once to complete); the sequence decides which.
SUBMIT = [
    ("fio io_submit", "io_submit"),
    ("blk-mq queue_rq (rswap)", "queue_rq"),
    ("blk_mq_start_request", "blk_mq_start_request"),
    ("DMA map (rswap_ib_dma_map_sg_sges)", "rswap_ib_dma_map_sg_sges"),
]
TRANSPORT = [
    ("post (rswap_ib_post_rdma)", "rswap_ib_post_rdma"),
    ("rxe_post_send", "rxe_post_send"),
    ("rxe task starts (rxe_sender)", "rxe_sender"),
    ("rxe_requester", "rxe_requester"),
    ("first packet out (rxe_xmit_packet)", "rxe_xmit_packet"),
    ("virtio-net start_xmit", "start_xmit"),
    ("reply arrives (skb_recv_done)", "skb_recv_done"),
    ("rxe_rcv", "rxe_rcv"),
    ("rxe task (completer)", "rxe_completer"),
    ("rxe_cq_post", "rxe_cq_post"),
    ("CQ softirq (ib_poll_handler)", "ib_poll_handler"),
    ("completion handler (done_callback)", "done_callback"),
]
RSWAP_END = [
    ("DMA unmap", "rswap_ib_dma_unmap_sg"),
    ("blk_mq_end_request", "blk_mq_end_request"),
    ("aio_complete_rw", "aio_complete_rw"),
    ("wake-up of fio", "sched_wakeup"),
    ("fio runs", "sched_switch"),
    ("io_getevents returns", "io_getevents_ret"),
    ("next io_submit", "io_submit"),
]
KBENCH_END = [
    ("wake-up of the bench thread", "sched_wakeup"),
    ("bench thread runs", "sched_switch"),
    ("next post", "rswap_ib_post_rdma"),
]


def cycles(events, anchor):
    """Slices of `events`, each from one `anchor` entry to the next."""
    idx = [i for i, e in enumerate(events) if e[3] == anchor]
    return [events[a : b + 1] for a, b in zip(idx, idx[1:])]


def walk(cycle, marks):
    """Times of `marks` in `cycle`, each the first after the one before; None if one is
    missing."""
    times, i = [], 0
    for pos, (_, name) in enumerate(marks):
        start = i + 1 if pos > 0 else i
        while start < len(cycle) and cycle[start][3] != name:
            start += 1
        if start >= len(cycle):
            return None
        times.append(cycle[start][0])
        i = start
    return times


def breakdown(events, kind):
    """(labels, per-cycle time lists, cycles seen, extra counts)."""
    if kind == "rswap":
        marks = SUBMIT + TRANSPORT + RSWAP_END
        anchor = "io_submit"
    else:
        marks = TRANSPORT + KBENCH_END
        anchor = "rswap_ib_post_rdma"
    # Drop marks the trace has none of (a function the kernel does not have, or of a
    # module loaded after the filter was set): without the post helper, rxe_post_send,
    # which it calls, stands for it.
    present = {e[3] for e in events}
    if anchor not in present:
        anchor = "rxe_post_send"
        marks = [(label, anchor if name == "rswap_ib_post_rdma" else name)
                 for label, name in marks if label != "rxe_post_send"]
    marks = [m for m in marks if m[1] in present]
    all_cycles = cycles(events, anchor)
    rows = []
    counts = {"rxe_xmit_packet": [], "rxe_sender": [], "rxe_rcv": [], "cpus": []}
    for c in all_cycles:
        t = walk(c, marks)
        if t is None:
            continue
        rows.append(t)
        for k in ("rxe_xmit_packet", "rxe_sender", "rxe_rcv"):
            counts[k].append(sum(1 for e in c if e[3] == k))
        counts["cpus"].append(len({e[1] for e in c}))
    return [m[0] for m in marks], rows, len(all_cycles), counts


def us(x):
    return f"{x * 1e6:.0f}"


def report(path, kind):
    events = parse(path)
    labels, rows, seen, counts = breakdown(events, kind)
    name = Path(path).stem
    print(f"## {name}: {len(rows)} complete cycles of {seen}")
    if not rows:
        print()
        return None
    zero = next(i for i, l in enumerate(labels) if l.startswith("post ("))
    print("| milestone | from post (us, median) | step (us, median) | step (us, mean) |")
    print("|---|--:|--:|--:|")
    for j, label in enumerate(labels):
        rel = statistics.median(r[j] - r[zero] for r in rows)
        if j == 0:
            step_med = step_mean = "-"
        else:
            steps = [r[j] - r[j - 1] for r in rows]
            step_med, step_mean = us(statistics.median(steps)), us(statistics.mean(steps))
        print(f"| {label} | {us(rel)} | {step_med} | {step_mean} |")
    total = [r[-1] - r[0] for r in rows]
    print(f"\ncycle (first to last milestone): median {us(statistics.median(total))} us, "
          f"mean {us(statistics.mean(total))} us")
    for k in ("rxe_xmit_packet", "rxe_sender", "rxe_rcv"):
        if counts[k]:
            print(f"{k} per cycle: median {statistics.median(counts[k])}, "
                  f"max {max(counts[k])}")
    print(f"CPUs per cycle: median {statistics.median(counts['cpus'])}\n")
    return labels, rows


# Frames that say nothing of why a task sleeps.
GENERIC = {
    "__schedule", "schedule", "schedule_timeout", "io_schedule", "io_schedule_timeout",
    "schedule_preempt_disabled", "preempt_schedule", "preempt_schedule_common",
    "__cond_resched", "preempt_schedule_irq", "irqentry_exit", "asm_sysvec_apic_timer_interrupt",
    "schedule_hrtimeout_range", "schedule_hrtimeout_range_clock", "__wait_for_common",
    "wait_for_completion", "__folio_lock_or_retry", "folio_wait_bit_common",
    "__folio_lock", "rq_qos_wait", "usleep_range_state", "msleep",
    # The stacktrace trigger's own frames.
    "trace_event_raw_event_sched_switch", "__traceiter_sched_switch", "__trace_stack",
    "event_triggers_call", "stacktrace_trigger",
}


def swap_report(path):
    """Where the swap workload's task was off the CPU, by its kernel stack, and what the
    block layer saw of its device."""
    lines = Path(path).read_text(errors="replace").splitlines()
    offs = []  # (start, state, frames)
    waits = {}
    cur = None  # (start, state, frames) while the task is off the CPU
    first = last = None
    issued = {}
    blk = {"R": [], "W": []}
    i = 0
    while i < len(lines):
        m = LINE.match(lines[i])
        i += 1
        if not m:
            continue
        ts, rest = float(m["ts"]), m["rest"]
        if rest.startswith("sched_switch:"):
            sw = re.search(r"prev_comm=(\S+) .*prev_state=(\S+) ==> next_comm=(\S+)", rest)
            if not sw:
                continue
            first = ts if first is None else first
            last = ts
            if sw[1] == "swapload":
                frames = []
                if i < len(lines) and "<stack trace>" in lines[i]:
                    i += 1
                    while i < len(lines) and lines[i].startswith(" => "):
                        frames.append(lines[i][4:].split("+")[0].strip())
                        i += 1
                cur = (ts, sw[2], frames)
            elif sw[3] == "swapload" and cur:
                start, state, frames = cur
                cur = None
                if state.startswith("R"):
                    key = "runnable (preempted)"
                else:
                    useful = [f for f in frames if f not in GENERIC]
                    key = " <- ".join(useful[:4]) or "?"
                n, t = waits.get(key, (0, 0.0))
                waits[key] = (n + 1, t + ts - start)
        elif rest.startswith("block_rq_issue:") or rest.startswith("block_rq_complete:"):
            b = re.search(r": (\d+,\d+) (\S+) (?:\d+ )?\(.*?\) (\d+) \+ (\d+)", rest)
            if not b:
                continue
            d = "W" if "W" in b[2] else "R" if "R" in b[2] else None
            if d is None:
                continue
            key = (b[1], int(b[3]))
            if rest.startswith("block_rq_issue:"):
                writing = sum(1 for v in issued.values() if v[2] == "W")
                issued[key] = (ts, int(b[4]), d, writing)
            elif key in issued:
                t0, sectors, _, writing = issued.pop(key)
                blk[d].append((ts - t0, sectors * 512, writing))
    if first is None:
        print("## swap workload: no trace\n")
        return
    total = sum(t for _, t in waits.values())
    print(f"## swap workload: the task off the CPU {total:.2f} s of {last - first:.2f} s traced")
    print("| where it waited (first frames of its kernel stack) | times | s | share |")
    print("|---|--:|--:|--:|")
    for key, (n, t) in sorted(waits.items(), key=lambda kv: -kv[1][1])[:15]:
        print(f"| {key} | {n} | {t:.2f} | {t / max(total, 1e-9):.0%} |")
    print()
    print("| requests | count | mean KiB | mean latency (ms) | median latency (ms) |")
    print("|---|--:|--:|--:|--:|")
    rows = (("reads", [r for r in blk["R"]]),
            ("reads issued with no write in flight", [r for r in blk["R"] if r[2] == 0]),
            ("reads issued behind a write in flight", [r for r in blk["R"] if r[2] > 0]),
            ("writes", blk["W"]))
    for name, v in rows:
        if v:
            lat = [r[0] for r in v]
            print(f"| {name} | {len(v)} | {statistics.mean(r[1] for r in v) / 1024:.1f} | "
                  f"{statistics.mean(lat) * 1e3:.2f} | {statistics.median(lat) * 1e3:.2f} |")
    print()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = Path(sys.argv[1])
    found = False
    for name, kind in (("kbench-write", "kbench"), ("rswap-write", "rswap"),
                       ("kbench-read", "kbench"), ("rswap-read", "rswap")):
        p = d / f"{name}.trace"
        if p.exists():
            found = True
            report(p, kind)
    if (d / "swap.trace").exists():
        found = True
        swap_report(d / "swap.trace")
    if not found:
        sys.exit(f"no traces in {d}")


if __name__ == "__main__":
    main()
