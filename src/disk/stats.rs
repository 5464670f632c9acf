// SPDX-License-Identifier: GPL-2.0

//! Counters of a disk's hardware queues, for the target's `stats` attribute: requests and
//! bytes read and written, errors and a histogram of the latency of reads and one of
//! writes (from the block layer's start of the request to its end), with the
//! transport queue's own (requests in flight on the wire, requeues, recoveries). Updated
//! from `queue_rq` and from completions (softirq), so everything is an atomic and nothing
//! allocates or locks.

use core::{
    fmt::{self, Write},
    sync::atomic::{AtomicU64, Ordering},
};

use crate::{blk::Op, transport::io::QueueCounters};

/// Buckets of the latency histogram: bucket `i` counts completions that took at most
/// `2^(i + 3)` microseconds (8 us, 16 us, ... about 8.4 s); the last one counts the rest.
pub(super) const LATENCY_BUCKETS: usize = 22;

/// The upper bound of bucket `i` in microseconds (`None` for the last, unbounded, one).
fn bucket_bound_us(i: usize) -> Option<u64> {
    (i + 1 < LATENCY_BUCKETS).then(|| 1u64 << (i + 3))
}

/// The bucket of a completion that took `us` microseconds.
fn bucket_of(us: u64) -> usize {
    // The smallest i with us <= 2^(i + 3).
    let bits = u64::BITS - us.saturating_sub(1).leading_zeros();
    (bits.saturating_sub(3) as usize).min(LATENCY_BUCKETS - 1)
}

/// The counters of one hardware queue.
#[derive(Default)]
pub(super) struct QueueStats {
    reads: AtomicU64,
    writes: AtomicU64,
    read_bytes: AtomicU64,
    write_bytes: AtomicU64,
    /// Requests ended with an error.
    errors: AtomicU64,
    read_latency: [AtomicU64; LATENCY_BUCKETS],
    write_latency: [AtomicU64; LATENCY_BUCKETS],
}

impl QueueStats {
    /// A request of `op` and `bytes` completed successfully, `ns` nanoseconds after the
    /// block layer started it.
    pub(super) fn done(&self, op: Op, bytes: u32, ns: u64) {
        let (count, total, latency) = match op {
            Op::Read => (&self.reads, &self.read_bytes, &self.read_latency),
            Op::Write => (&self.writes, &self.write_bytes, &self.write_latency),
            Op::Flush | Op::Other(_) => return,
        };
        count.fetch_add(1, Ordering::Relaxed);
        total.fetch_add(u64::from(bytes), Ordering::Relaxed);
        if let Some(b) = latency.get(bucket_of(ns / 1000)) {
            b.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A request ended with an error.
    pub(super) fn error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// A snapshot of the counters, with those of the hardware queue's transport `queue`.
    pub(super) fn snapshot(&self, queue: QueueCounters) -> Snapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Snapshot {
            reads: get(&self.reads),
            writes: get(&self.writes),
            read_bytes: get(&self.read_bytes),
            write_bytes: get(&self.write_bytes),
            errors: get(&self.errors),
            inflight: queue.inflight,
            registered_reads: queue.registered_reads,
            read_latency: core::array::from_fn(|i| self.read_latency.get(i).map_or(0, get)),
            write_latency: core::array::from_fn(|i| self.write_latency.get(i).map_or(0, get)),
            requeues: queue.requeues,
            recoveries: queue.recoveries,
        }
    }
}

/// The counters of one queue or of a whole disk at one moment.
#[derive(Clone, Copy, Default)]
pub(crate) struct Snapshot {
    reads: u64,
    writes: u64,
    read_bytes: u64,
    write_bytes: u64,
    errors: u64,
    inflight: u64,
    /// RDMA READs posted with a registered sink.
    registered_reads: u64,
    read_latency: [u64; LATENCY_BUCKETS],
    write_latency: [u64; LATENCY_BUCKETS],
    /// Requests issued again after their queue failed under them (the queue's count).
    requeues: u64,
    /// Successful reconnects of the queue (the queue's count).
    recoveries: u64,
}

impl Snapshot {
    /// Adds `other`'s counters to these.
    pub(super) fn add(&mut self, other: &Snapshot) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.read_bytes += other.read_bytes;
        self.write_bytes += other.write_bytes;
        self.errors += other.errors;
        self.inflight += other.inflight;
        self.registered_reads += other.registered_reads;
        self.requeues += other.requeues;
        self.recoveries += other.recoveries;
        for (mine, theirs) in self.read_latency.iter_mut().zip(other.read_latency.iter()) {
            *mine += theirs;
        }
        for (mine, theirs) in self
            .write_latency
            .iter_mut()
            .zip(other.write_latency.iter())
        {
            *mine += theirs;
        }
    }

    /// Writes the counters as `key=value` pairs after `label`, on one line.
    pub(super) fn write_line(&self, w: &mut impl Write, label: fmt::Arguments<'_>) -> fmt::Result {
        writeln!(
            w,
            "{} reads={} writes={} read_bytes={} write_bytes={} errors={} requeues={} recoveries={} inflight={} registered_reads={}",
            label,
            self.reads,
            self.writes,
            self.read_bytes,
            self.write_bytes,
            self.errors,
            self.requeues,
            self.recoveries,
            self.inflight,
            self.registered_reads
        )
    }

    /// Writes the latency histograms, of reads then of writes, one line each:
    /// `read_latency_us le8=N le16=N ... inf=N`, each bucket counting the requests that
    /// took more than the previous bound and up to its own.
    pub(super) fn write_latency(&self, w: &mut impl Write) -> fmt::Result {
        for (label, latency) in [
            ("read_latency_us", &self.read_latency),
            ("write_latency_us", &self.write_latency),
        ] {
            w.write_str(label)?;
            for (i, n) in latency.iter().enumerate() {
                match bucket_bound_us(i) {
                    Some(bound) => write!(w, " le{}={}", bound, n)?,
                    None => write!(w, " inf={}", n)?,
                }
            }
            w.write_str("\n")?;
        }
        Ok(())
    }
}

/// One line of text, built on the stack so that its length is known before it is
/// written out.
pub(super) struct Line {
    buf: [u8; 256],
    len: usize,
}

impl Line {
    /// The line `f` writes (cut at 256 bytes, which no line of these counters reaches).
    pub(super) fn of(f: impl FnOnce(&mut Line) -> fmt::Result) -> Self {
        let mut line = Line {
            buf: [0; 256],
            len: 0,
        };
        let _ = f(&mut line);
        line
    }

    /// The text.
    pub(super) fn as_str(&self) -> &str {
        core::str::from_utf8(self.buf.get(..self.len).unwrap_or(&[])).unwrap_or("")
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - self.len;
        if s.len() > room {
            return Err(fmt::Error);
        }
        self.buf[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
        self.len += s.len();
        Ok(())
    }
}

/// A writer that counts what it passes on.
pub(super) struct Counted<'a, W: Write> {
    w: &'a mut W,
    /// Bytes written so far.
    pub(super) bytes: usize,
}

impl<'a, W: Write> Counted<'a, W> {
    /// Counts what goes to `w`.
    pub(super) fn new(w: &'a mut W) -> Self {
        Self { w, bytes: 0 }
    }
}

impl<W: Write> Write for Counted<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.w.write_str(s)?;
        self.bytes += s.len();
        Ok(())
    }
}
