// SPDX-License-Identifier: GPL-2.0

//! What the event loop waits on besides rdma_cm: signals as a descriptor
//! (`signalfd`, through nix), `poll(2)` over descriptors, and the status socket's
//! Unix listener bound with mode 0600 (through rustix); and the process made
//! non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`) and part of the I/O path
//! (`prctl(PR_SET_IO_FLUSHER)`).

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{self, SfdFlags};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::Mode;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

/// An OS error as an error naming the call: `what: the OS error`.
fn failed(what: &str, e: impl Into<io::Error>) -> io::Error {
    let e = e.into();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// A signalfd for a set of signals, which are blocked for the process.
pub struct SignalFd {
    fd: signalfd::SignalFd,
}

impl SignalFd {
    /// Blocks `signals` (call before any thread is started) and opens a signalfd.
    pub fn new(signals: &[i32]) -> io::Result<Self> {
        let mut set = SigSet::empty();
        for &s in signals {
            set.add(Signal::try_from(s).map_err(|e| failed("sigaddset", e))?);
        }
        set.thread_block()
            .map_err(|e| failed("pthread_sigmask", e))?;
        let fd =
            signalfd::SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
                .map_err(|e| failed("signalfd", e))?;
        Ok(Self { fd })
    }

    /// The descriptor to poll.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Reads one pending signal number, if any.
    pub fn read(&self) -> io::Result<Option<i32>> {
        let info = self.fd.read_signal().map_err(io::Error::from)?;
        Ok(info.and_then(|i| i32::try_from(i.ssi_signo).ok()))
    }
}

/// What [`poll_fds`] waits for on a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interest {
    /// Readable (`POLLIN`): data, a connection to accept, or the peer's end.
    Read,
    /// Writable (`POLLOUT`): room in the send buffer.
    Write,
}

/// Waits until one of `fds` is readable or `timeout` passes (`None`: forever).
/// Returns one flag per fd; all false on timeout or EINTR.
pub fn poll_readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    let fds: Vec<(BorrowedFd<'_>, Interest)> = fds.iter().map(|&fd| (fd, Interest::Read)).collect();
    poll_fds(&fds, timeout)
}

/// Waits until one of `fds` is ready for what it is polled for, or `timeout` passes
/// (`None`: forever). Returns one flag per fd (an error or hang-up counts as ready);
/// all false on timeout or EINTR.
pub fn poll_fds(
    fds: &[(BorrowedFd<'_>, Interest)],
    timeout: Option<Duration>,
) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<PollFd<'_>> = fds
        .iter()
        .map(|(fd, interest)| {
            let events = match interest {
                Interest::Read => PollFlags::IN,
                Interest::Write => PollFlags::OUT,
            };
            PollFd::from_borrowed_fd(*fd, events)
        })
        .collect();
    // Whole milliseconds, rounded up (never wake before the deadline), at most
    // i32::MAX as poll(2) takes.
    let timeout = timeout.map(|t| {
        let ms = t
            .as_millis()
            .saturating_add(u128::from(t.subsec_nanos() % 1_000_000 != 0))
            .min(i32::MAX as u128);
        let ms = i64::try_from(ms).unwrap_or(i64::from(i32::MAX));
        Timespec {
            tv_sec: ms / 1000,
            tv_nsec: (ms % 1000) * 1_000_000,
        }
    });
    match rustix::event::poll(&mut pfds, timeout.as_ref()) {
        Ok(_) => {}
        Err(Errno::INTR) => return Ok(vec![false; fds.len()]),
        Err(e) => return Err(e.into()),
    }
    let ready = PollFlags::IN | PollFlags::OUT | PollFlags::ERR | PollFlags::HUP;
    Ok(pfds.iter().map(|p| p.revents().intersects(ready)).collect())
}

/// The longest Unix socket path, without its terminating NUL.
const SUN_PATH_LEN: usize = 108;

/// Binds a Unix stream socket at `path` and listens (backlog 16), the socket file
/// created with mode 0600 (owner only) from the start: Linux gives the file the mode of
/// the socket's inode (less the umask), which `fchmod` sets before `bind`. Nothing
/// process-wide (such as the umask) changes, so no other file is affected.
pub fn bind_unix_private(path: &Path) -> io::Result<UnixListener> {
    use std::os::unix::ffi::OsStrExt as _;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= SUN_PATH_LEN || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a Unix socket path must be shorter than {SUN_PATH_LEN} bytes, without NUL"),
        ));
    }
    let addr = SocketAddrUnix::new(path).map_err(io::Error::from)?;
    let fd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| failed("socket", e))?;
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600)).map_err(|e| failed("fchmod", e))?;
    rustix::net::bind(&fd, &addr).map_err(io::Error::from)?;
    rustix::net::listen(&fd, 16).map_err(|e| failed("listen", e))?;
    Ok(UnixListener::from(fd))
}

/// Makes the process non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`): no core dump, and
/// no ptrace or `/proc/PID/mem` by other processes of the same user. The server's heap
/// holds the allow-list's secrets, which a core file would keep on disk.
pub fn no_core_dumps() -> io::Result<()> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(|e| failed("prctl(PR_SET_DUMPABLE, 0)", e))
}

/// Declares the process part of the I/O path (`prctl(PR_SET_IO_FLUSHER, 1)`): its
/// allocations never start I/O to reclaim memory (as with `GFP_NOIO`) and it is not
/// throttled by dirty-page writeback. A memory server may share its host with clients that
/// swap to it (every host lends and borrows): if its own allocations reclaimed by swapping
/// out to an rswap disk, they could wait on I/O that only the server itself can complete.
/// Needs `CAP_SYS_RESOURCE`; without it, `EPERM`.
pub fn io_flusher() -> io::Result<()> {
    rustix::process::configure_io_flusher_behavior(true)
        .map_err(|e| failed("prctl(PR_SET_IO_FLUSHER, 1)", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_dumpable_after_no_core_dumps() {
        use rustix::process::{dumpable_behavior, DumpableBehavior};
        no_core_dumps().expect("prctl");
        assert_eq!(
            dumpable_behavior().expect("prctl"),
            DumpableBehavior::NotDumpable
        );
    }

    /// The process is an I/O flusher afterwards, or was not allowed to be (no
    /// `CAP_SYS_RESOURCE`, as in a container): nothing else.
    #[test]
    fn an_io_flusher_after_io_flusher() {
        match io_flusher() {
            Ok(()) => assert!(rustix::process::is_io_flusher().expect("prctl")),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}"),
        }
    }

    #[test]
    fn poll_fds_read_and_write() {
        use std::io::Write as _;
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let fds = [(b.as_fd(), Interest::Read), (a.as_fd(), Interest::Write)];
        // Nothing to read yet; room to write at once.
        assert_eq!(poll_fds(&fds, Some(Duration::ZERO)).unwrap(), [false, true]);
        (&a).write_all(b"x").unwrap();
        assert_eq!(
            poll_fds(&fds, Some(Duration::from_secs(5))).unwrap(),
            [true, true]
        );
        assert_eq!(poll_readable(&[b.as_fd()], None).unwrap(), [true]);
        // The peer's end counts as ready.
        drop(a);
        let (c, d) = std::os::unix::net::UnixStream::pair().unwrap();
        drop(d);
        assert_eq!(
            poll_fds(&[(c.as_fd(), Interest::Read)], Some(Duration::ZERO)).unwrap(),
            [true]
        );
    }

    #[test]
    fn unix_socket_bound_0600() {
        use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
        let dir = std::env::temp_dir().join(format!("rswap-rdma-bind-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        let listener = bind_unix_private(&path).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        // Listening: a client connects and is accepted.
        let client = std::os::unix::net::UnixStream::connect(&path);
        let accepted = listener.accept().map(|_| ());
        // In use: a second bind fails.
        let again = bind_unix_private(&path).map(|_| ()).unwrap_err().kind();
        // Too long, or with a NUL: refused before any system call.
        let long = dir.join("x".repeat(120));
        let too_long = bind_unix_private(&long).map(|_| ()).unwrap_err().kind();
        drop(listener);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert!(client.is_ok() && accepted.is_ok());
        assert_eq!(again, io::ErrorKind::AddrInUse);
        assert_eq!(too_long, io::ErrorKind::InvalidInput);
    }
}
