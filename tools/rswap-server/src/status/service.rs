// SPDX-License-Identifier: GPL-2.0

//! The status socket's connections, served from the server's single-threaded poll
//! loop without ever blocking it: everything is nonblocking, a client has a short
//! time to send its request line and to read the answer, and is dropped when it
//! runs out of time, sends too much or too many clients are connected.
//!
//! The loop polls [`StatusService::poll_fds`], wakes up at
//! [`StatusService::deadline`] at the latest, and calls [`StatusService::service`],
//! which accepts, reads, answers and writes whatever can be done without waiting.
//! The answer is made from a [`Snapshot`] the caller provides (at most one per call).

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use super::request::{answer, parse_request, REQUEST_MAX};
use super::snapshot::Snapshot;
use super::socket::StatusSocket;
use crate::log;
use crate::os::Interest;

/// How long and how many.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// From the connection to the end of the request line.
    pub(crate) read_timeout: Duration,
    /// From the answer's start to its last byte written.
    pub(crate) write_timeout: Duration,
    /// Connections served at once; one more is closed at once.
    pub(crate) max_connections: usize,
    /// After an accept that failed (out of descriptors): when to try again.
    pub(crate) accept_pause: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            read_timeout: Duration::from_secs(1),
            write_timeout: Duration::from_secs(2),
            max_connections: 16,
            accept_pause: Duration::from_millis(100),
        }
    }
}

/// Connections accepted per call at most, so that a flood of connects cannot keep
/// the loop from its other work.
const ACCEPTS_PER_CALL: usize = 64;

/// Input after the request line that is read and thrown away before the connection
/// is closed, at most: closing a Unix socket with unread input resets the peer's
/// end, and it would lose the answer's end (a client sending more is reset).
const DRAIN_MAX: usize = 4096;

/// Where a connection is.
#[derive(Debug)]
enum Phase {
    /// Reading the request line (what came so far).
    Reading(Vec<u8>),
    /// Writing the answer.
    Writing {
        /// The whole answer.
        out: Vec<u8>,
        /// How much of it is written.
        pos: usize,
    },
}

/// One client of the status socket.
#[derive(Debug)]
struct Conn {
    stream: UnixStream,
    phase: Phase,
    /// When it is dropped if not done.
    deadline: Instant,
}

/// What a step did with a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Waiting for the peer.
    Keep,
    /// Answered in full, or dropped.
    Done,
}

/// What reading the request found.
enum Input {
    /// No complete line yet.
    Pending,
    /// A line (without its newline), or what came before the end of the stream.
    Line(Vec<u8>),
    /// The peer went away without a request, or reading failed.
    Gone,
}

/// Reads and discards what input is there, up to [`DRAIN_MAX`] bytes.
fn drain(stream: &mut UnixStream) {
    let mut sink = [0u8; 512];
    let mut left = DRAIN_MAX;
    while left > 0 {
        match stream.read(sink.get_mut(..left.min(512)).unwrap_or_default()) {
            Ok(0) => return,
            Ok(n) => left = left.saturating_sub(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Closes a connection beyond the cap with one error line (a short write that a new
/// socket's buffer takes; if it does not, the peer just sees the end).
fn refuse(mut stream: UnixStream) {
    drain(&mut stream);
    let _ = stream.write(BUSY.as_bytes());
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// The answer to a connection beyond the cap.
const BUSY: &str = "error: too many status connections at once; try again\n";

/// Reads what is there, up to a newline or one byte more than a request may have.
fn read_request(stream: &mut UnixStream, buf: &mut Vec<u8>) -> Input {
    let mut chunk = [0u8; REQUEST_MAX + 1];
    loop {
        let room = (REQUEST_MAX + 1).saturating_sub(buf.len());
        let Some(chunk) = chunk.get_mut(..room).filter(|c| !c.is_empty()) else {
            return Input::Line(std::mem::take(buf));
        };
        match stream.read(chunk) {
            Ok(0) if buf.is_empty() => return Input::Gone,
            Ok(0) => return Input::Line(std::mem::take(buf)),
            Ok(n) => {
                buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
                if let Some(end) = buf.iter().position(|&b| b == b'\n') {
                    buf.truncate(end);
                    return Input::Line(std::mem::take(buf));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Input::Pending,
            Err(_) => return Input::Gone,
        }
    }
}

impl Conn {
    /// Does what can be done now. `snapshot` is made on the first need.
    fn step(
        &mut self,
        now: Instant,
        limits: &Limits,
        snapshot: &mut Option<Snapshot>,
        make: &mut dyn FnMut() -> Snapshot,
    ) -> Step {
        if let Phase::Reading(buf) = &mut self.phase {
            match read_request(&mut self.stream, buf) {
                Input::Pending if now >= self.deadline => {
                    log::debug("status_dropped")
                        .kv("why", "no request line in time")
                        .emit();
                    return Step::Done;
                }
                Input::Pending => return Step::Keep,
                Input::Gone => return Step::Done,
                Input::Line(line) => {
                    let out = match parse_request(&line) {
                        Ok(req) => {
                            let text = answer(req, snapshot.get_or_insert_with(&mut *make));
                            log::debug("status_request")
                                .kv("request", req.name())
                                .kv("bytes", text.len())
                                .emit();
                            text
                        }
                        Err(e) => {
                            log::debug("status_bad_request").emit();
                            e
                        }
                    };
                    self.phase = Phase::Writing {
                        out: out.into_bytes(),
                        pos: 0,
                    };
                    self.deadline = now + limits.write_timeout;
                }
            }
        }
        let Phase::Writing { out, pos } = &mut self.phase else {
            return Step::Keep;
        };
        while let Some(rest) = out.get(*pos..).filter(|r| !r.is_empty()) {
            match self.stream.write(rest) {
                Ok(0) => return Step::Done,
                Ok(n) => *pos += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if now >= self.deadline {
                        log::debug("status_dropped")
                            .kv("why", "answer not read in time")
                            .kv("written", *pos)
                            .kv("bytes", out.len())
                            .emit();
                        return Step::Done;
                    }
                    return Step::Keep;
                }
                Err(_) => return Step::Done,
            }
        }
        // All written: the peer reads to the end of the stream.
        drain(&mut self.stream);
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        Step::Done
    }

    fn interest(&self) -> Interest {
        match self.phase {
            Phase::Reading(_) => Interest::Read,
            Phase::Writing { .. } => Interest::Write,
        }
    }
}

/// The status socket and its clients.
#[derive(Debug)]
pub(crate) struct StatusService {
    socket: StatusSocket,
    conns: Vec<Conn>,
    limits: Limits,
    /// Set after a failed accept: no accepting until then.
    accept_paused_until: Option<Instant>,
}

impl StatusService {
    /// Serves on `socket` with the default limits.
    pub(crate) fn new(socket: StatusSocket) -> Self {
        Self::with_limits(socket, Limits::default())
    }

    /// Serves on `socket` with `limits`.
    pub(crate) fn with_limits(socket: StatusSocket, limits: Limits) -> Self {
        Self {
            socket,
            conns: Vec::new(),
            limits,
            accept_paused_until: None,
        }
    }

    /// The socket's path.
    pub(crate) fn path(&self) -> &Path {
        self.socket.path()
    }

    /// The descriptors to poll and for what: the listening socket (unless accepting
    /// is paused), then every connection.
    pub(crate) fn poll_fds(&self) -> Vec<(BorrowedFd<'_>, Interest)> {
        let listener = self
            .accept_paused_until
            .is_none()
            .then(|| (self.socket.listener().as_fd(), Interest::Read));
        listener
            .into_iter()
            .chain(self.conns.iter().map(|c| (c.stream.as_fd(), c.interest())))
            .collect()
    }

    /// The next moment something is due without any descriptor being ready: a
    /// connection's deadline, or the end of an accept pause.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.conns
            .iter()
            .map(|c| c.deadline)
            .chain(self.accept_paused_until)
            .min()
    }

    /// Connections being served.
    #[cfg(test)]
    pub(crate) fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Accepts new connections, reads requests, writes answers and drops the
    /// connections that are done or out of time, without waiting for anything.
    pub(crate) fn service(&mut self, now: Instant, make: &mut dyn FnMut() -> Snapshot) {
        if self.accept_paused_until.is_some_and(|t| now >= t) {
            self.accept_paused_until = None;
        }
        if self.accept_paused_until.is_none() {
            self.accept(now);
        }
        let mut snapshot = None;
        let limits = self.limits;
        self.conns
            .retain_mut(|c| c.step(now, &limits, &mut snapshot, make) == Step::Keep);
    }

    fn accept(&mut self, now: Instant) {
        for _ in 0..ACCEPTS_PER_CALL {
            let stream = match self.socket.listener().accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                Err(e) => {
                    // Out of descriptors, most likely: the listener stays readable, so
                    // pause rather than spin.
                    log::warn("status_accept_failed")
                        .kv("error", e)
                        .kv("pause_ms", self.limits.accept_pause.as_millis())
                        .emit();
                    self.accept_paused_until = Some(now + self.limits.accept_pause);
                    return;
                }
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if self.conns.len() >= self.limits.max_connections {
                log::debug("status_dropped")
                    .kv("why", "too many connections")
                    .emit();
                refuse(stream);
                continue;
            }
            self.conns.push(Conn {
                stream,
                phase: Phase::Reading(Vec::new()),
                deadline: now + self.limits.read_timeout,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::poll_fds;
    use crate::status::json::format_status;
    use crate::status::metrics::format_metrics;
    use crate::status::snapshot::{sample, ClientInfo, QueueInfo};
    use crate::status::socket::tests::TempDir;
    use std::thread;

    /// A service on a socket in a fresh directory.
    fn service(limits: Limits) -> (TempDir, std::path::PathBuf, StatusService) {
        let tmp = TempDir::new("status-service");
        let path = tmp.0.join("s.sock");
        let svc = StatusService::with_limits(StatusSocket::bind(&path).unwrap(), limits);
        (tmp, path, svc)
    }

    /// Runs the service as the server's loop does (poll, then service) until `done`
    /// or 10 s; returns how many snapshots were made and the longest service call.
    fn drive(svc: &mut StatusService, done: impl Fn(&StatusService) -> bool) -> (usize, Duration) {
        let start = Instant::now();
        let mut made = 0;
        let mut longest = Duration::ZERO;
        while !done(svc) {
            // Only a guard against a hang: a loaded machine takes seconds.
            assert!(start.elapsed() < Duration::from_secs(120), "stuck");
            let timeout = svc
                .deadline()
                .map(|d| d.saturating_duration_since(Instant::now()))
                .unwrap_or(Duration::from_millis(50))
                .min(Duration::from_millis(50));
            poll_fds(&svc.poll_fds(), Some(timeout)).unwrap();
            let t = Instant::now();
            svc.service(t, &mut || {
                made += 1;
                sample()
            });
            longest = longest.max(t.elapsed());
        }
        (made, longest)
    }

    /// A client in a thread: connects, sends `request`, reads to the end.
    fn client(path: &Path, request: &'static [u8]) -> thread::JoinHandle<io::Result<Vec<u8>>> {
        let path = path.to_path_buf();
        thread::spawn(move || {
            let mut s = UnixStream::connect(path)?;
            s.set_read_timeout(Some(Duration::from_secs(10)))?;
            s.write_all(request)?;
            let mut out = Vec::new();
            s.read_to_end(&mut out)?;
            Ok(out)
        })
    }

    fn text(h: thread::JoinHandle<io::Result<Vec<u8>>>) -> String {
        String::from_utf8(h.join().unwrap().expect("client failed")).unwrap()
    }

    #[test]
    fn status_and_metrics_over_a_real_socket() {
        let (_tmp, path, mut svc) = service(Limits::default());
        let status = client(&path, b"status\n");
        let metrics = client(&path, b"metrics\r\n");
        drive(&mut svc, |_| status.is_finished() && metrics.is_finished());
        assert_eq!(text(status), format_status(&sample()));
        assert_eq!(text(metrics), format_metrics(&sample()));
        assert_eq!(svc.connections(), 0);
    }

    #[test]
    fn a_request_ended_by_the_end_of_the_stream() {
        let (_tmp, path, mut svc) = service(Limits::default());
        let path2 = path.clone();
        let h = thread::spawn(move || {
            let mut s = UnixStream::connect(path2).unwrap();
            s.write_all(b"metrics").unwrap();
            s.shutdown(std::net::Shutdown::Write).unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        });
        drive(&mut svc, |_| h.is_finished());
        assert_eq!(h.join().unwrap(), format_metrics(&sample()));
    }

    #[test]
    fn bad_requests_get_an_error_line() {
        let (_tmp, path, mut svc) = service(Limits::default());
        let unknown = client(&path, b"hello\nstatus\n");
        let long = client(&path, &[b'x'; 200]);
        let (made, _) = drive(&mut svc, |_| unknown.is_finished() && long.is_finished());
        assert_eq!(made, 0, "no snapshot for a bad request");
        assert_eq!(
            text(unknown),
            "error: unknown request \"hello\" (send \"status\" or \"metrics\")\n"
        );
        assert!(text(long).starts_with("error: request longer than 64 bytes"));
    }

    #[test]
    fn one_snapshot_for_requests_served_together() {
        let (_tmp, path, mut svc) = service(Limits::default());
        // Three requests waiting before the service runs.
        let conns: Vec<UnixStream> = (0..3)
            .map(|_| {
                let mut s = UnixStream::connect(&path).unwrap();
                s.write_all(b"status\n").unwrap();
                s
            })
            .collect();
        let mut made = 0;
        svc.service(Instant::now(), &mut || {
            made += 1;
            sample()
        });
        assert_eq!(made, 1);
        for mut s in conns {
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            assert_eq!(out, format_status(&sample()));
        }
    }

    #[test]
    fn a_silent_client_is_dropped_and_does_not_hold_up_others() {
        // Long enough that a loaded machine (make check builds beside the unit tests)
        // answers the other client well within it.
        let timeout = Duration::from_secs(2);
        let limits = Limits {
            read_timeout: timeout,
            ..Limits::default()
        };
        let (_tmp, path, mut svc) = service(limits);
        let mut silent = UnixStream::connect(&path).unwrap();
        let started = Instant::now();
        // Another client is answered while the silent one waits.
        let other = client(&path, b"status\n");
        drive(&mut svc, |_| other.is_finished());
        assert!(started.elapsed() < timeout, "{:?}", started.elapsed());
        assert_eq!(text(other), format_status(&sample()));
        assert_eq!(svc.connections(), 1);
        // Then the silent one is closed at its deadline, without an answer.
        drive(&mut svc, |s| s.connections() == 0);
        assert!(started.elapsed() >= timeout);
        let mut out = Vec::new();
        silent
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(silent.read_to_end(&mut out).unwrap(), 0);
    }

    #[test]
    fn too_many_connections_are_closed_at_once() {
        let limits = Limits {
            max_connections: 2,
            ..Limits::default()
        };
        let (_tmp, path, mut svc) = service(limits);
        let held: Vec<UnixStream> = (0..2)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        let mut extra = UnixStream::connect(&path).unwrap();
        extra.write_all(b"status\n").unwrap();
        svc.service(Instant::now(), &mut sample);
        assert_eq!(svc.connections(), 2);
        extra
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut out = String::new();
        extra.read_to_string(&mut out).unwrap();
        assert_eq!(out, BUSY);
        drop(held);
        // Their end is noticed: gone without a request.
        svc.service(Instant::now(), &mut sample);
        assert_eq!(svc.connections(), 0);
    }

    /// A snapshot whose status is about 2 MiB: more than a socket buffer holds.
    fn big() -> Snapshot {
        let mut s = sample();
        let c = s.clients[0].clone();
        s.clients = (0..3_000u64)
            .map(|i| ClientInfo {
                client_id: i,
                queues: vec![
                    QueueInfo {
                        index: 0,
                        peer: "[2001:db8::1]:40000".into(),
                    };
                    4
                ],
                ..c.clone()
            })
            .collect();
        s
    }

    #[test]
    fn a_client_that_does_not_read_is_dropped_without_blocking() {
        let limits = Limits {
            write_timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let (_tmp, path, mut svc) = service(limits);
        let mut lazy = UnixStream::connect(&path).unwrap();
        lazy.write_all(b"status\n").unwrap();
        // The first call makes the answer and writes what fits.
        let start = Instant::now();
        svc.service(start, &mut big);
        assert_eq!(svc.connections(), 1);
        let mut longest = Duration::ZERO;
        while svc.connections() > 0 {
            assert!(start.elapsed() < Duration::from_secs(10), "stuck");
            thread::sleep(Duration::from_millis(20));
            let t = Instant::now();
            svc.service(t, &mut big);
            longest = longest.max(t.elapsed());
        }
        assert!(start.elapsed() >= Duration::from_millis(300));
        // A write never waits for the peer.
        assert!(longest < Duration::from_millis(100), "{longest:?}");
        // What arrived is a part of the answer, then the end.
        let want = format_status(&big());
        let mut got = Vec::new();
        lazy.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = lazy.read_to_end(&mut got);
        assert!(!got.is_empty() && got.len() < want.len(), "{}", got.len());
        assert!(want.as_bytes().starts_with(&got));
    }

    #[test]
    fn a_large_answer_is_written_in_parts() {
        let (_tmp, path, mut svc) = service(Limits::default());
        let h = client(&path, b"status\n");
        let start = Instant::now();
        while !h.is_finished() {
            // Only a guard against a hang: a loaded machine takes seconds.
            assert!(start.elapsed() < Duration::from_secs(120), "stuck");
            poll_fds(&svc.poll_fds(), Some(Duration::from_millis(50))).unwrap();
            svc.service(Instant::now(), &mut big);
        }
        let want = format_status(&big());
        assert!(want.len() > 1 << 20, "{}", want.len());
        assert_eq!(text(h), want);
    }

    #[test]
    fn poll_fds_and_deadline() {
        let (_tmp, path, mut svc) = service(Limits::default());
        assert_eq!(svc.poll_fds().len(), 1);
        assert_eq!(svc.poll_fds()[0].1, Interest::Read);
        assert_eq!(svc.deadline(), None);
        let mut s = UnixStream::connect(&path).unwrap();
        let now = Instant::now();
        svc.service(now, &mut sample);
        assert_eq!(svc.poll_fds()[1].1, Interest::Read);
        assert_eq!(svc.deadline(), Some(now + Limits::default().read_timeout));
        s.write_all(b"status\n").unwrap();
        svc.service(now, &mut big);
        // The answer does not fit the socket buffer: waiting to write.
        assert_eq!(svc.poll_fds()[1].1, Interest::Write);
        assert_eq!(svc.deadline(), Some(now + Limits::default().write_timeout));
    }
}
