// SPDX-License-Identifier: GPL-2.0

//! The service manager's readiness protocol (`sd_notify(3)`): when started by systemd
//! with `Type=notify`, `$NOTIFY_SOCKET` names a Unix datagram socket (a path, or `@NAME`
//! for the abstract namespace) to which the server sends `READY=1` once it listens,
//! `STOPPING=1` when it begins to shut down, and a `STATUS=` line for
//! `systemctl status`. Without `$NOTIFY_SOCKET` every call does nothing. A failed send is
//! not an error: the service manager then says so itself (a start timeout).
//!
//! With `WatchdogSec=` in the unit, systemd also sets `$WATCHDOG_USEC` (and
//! `$WATCHDOG_PID`): the event loop must send `WATCHDOG=1` more often than that, or
//! systemd kills and restarts the server ([`Watchdog`]).

use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::{Duration, Instant};

/// The address `$NOTIFY_SOCKET` names: `@NAME` is NAME in the abstract namespace,
/// anything starting with `/` a path; `None` for anything else (systemd sends no
/// other kind to a service it starts).
pub(crate) fn notify_addr(value: &OsStr) -> Option<SocketAddr> {
    let bytes = value.as_bytes();
    match bytes.first() {
        Some(b'@') => SocketAddr::from_abstract_name(&bytes[1..]).ok(),
        Some(b'/') => SocketAddr::from_pathname(value).ok(),
        _ => None,
    }
}

/// Sends `state` (newline-separated `KEY=VALUE` assignments) to `addr`.
pub(crate) fn send_to(addr: &SocketAddr, state: &str) -> io::Result<()> {
    let sock = UnixDatagram::unbound()?;
    let sent = sock.send_to_addr(state.as_bytes(), addr)?;
    if sent != state.len() {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "short datagram"));
    }
    Ok(())
}

/// Tells the service manager `state` if there is one (`$NOTIFY_SOCKET`). Returns
/// whether it was sent; a failure is logged as a warning once per call.
pub(crate) fn notify(state: &str) -> bool {
    let Some(value) = std::env::var_os("NOTIFY_SOCKET") else {
        return false;
    };
    let result = match notify_addr(&value) {
        Some(addr) => send_to(&addr, state),
        None => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a path or an @abstract name",
        )),
    };
    match result {
        Ok(()) => true,
        Err(e) => {
            crate::log::warn("notify_failed")
                .kv("socket", value.to_string_lossy())
                .kv("error", e)
                .emit();
            false
        }
    }
}

/// The service manager's watchdog: `WATCHDOG=1` every half of its interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Watchdog {
    /// Half of `$WATCHDOG_USEC`.
    every: Duration,
    /// When the next `WATCHDOG=1` is due.
    next: Instant,
}

impl Watchdog {
    /// The watchdog that `$WATCHDOG_USEC` and `$WATCHDOG_PID` (the values given) ask of
    /// process `pid`: none without an interval, with an interval of 0 or one that does
    /// not parse, or when `$WATCHDOG_PID` names another process. Due at once.
    pub(crate) fn from_values(usec: Option<&str>, for_pid: Option<&str>, pid: u32) -> Option<Self> {
        if for_pid.is_some_and(|p| p.trim().parse::<u32>().ok() != Some(pid)) {
            return None;
        }
        let usec = usec?.trim().parse::<u64>().ok().filter(|&u| u > 0)?;
        Some(Watchdog {
            every: Duration::from_micros(usec) / 2,
            next: Instant::now(),
        })
    }

    /// The watchdog of this process's environment, if the service manager set one.
    pub(crate) fn from_env() -> Option<Self> {
        let var = |name: &str| std::env::var(name).ok();
        Self::from_values(
            var("WATCHDOG_USEC").as_deref(),
            var("WATCHDOG_PID").as_deref(),
            std::process::id(),
        )
    }

    /// When the next `WATCHDOG=1` is due: the event loop wakes up by then.
    pub(crate) fn deadline(&self) -> Instant {
        self.next
    }

    /// Sends `WATCHDOG=1` through `send` if it is due at `now`; the next is due half
    /// an interval later.
    pub(crate) fn feed(&mut self, now: Instant, send: impl FnOnce(&str) -> bool) {
        if now >= self.next {
            send("WATCHDOG=1");
            self.next = now + self.every;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{notify_addr, send_to, Watchdog};
    use std::ffi::OsStr;
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    use std::time::{Duration, Instant};

    fn recv(sock: &UnixDatagram) -> String {
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 512];
        let n = sock.recv(&mut buf).unwrap();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn addresses() {
        let a = notify_addr(OsStr::new("@/org/freedesktop/systemd1/notify/42")).unwrap();
        assert_eq!(
            a.as_abstract_name(),
            Some(&b"/org/freedesktop/systemd1/notify/42"[..])
        );
        let p = notify_addr(OsStr::new("/run/systemd/notify")).unwrap();
        assert_eq!(
            p.as_pathname(),
            Some(std::path::Path::new("/run/systemd/notify"))
        );
        assert!(notify_addr(OsStr::new("")).is_none());
        assert!(notify_addr(OsStr::new("relative/path")).is_none());
        // vsock and the like are not sent to a service manager's children.
        assert!(notify_addr(OsStr::new("vsock:2:1234")).is_none());
    }

    #[test]
    fn sends_to_a_path() {
        let dir = std::env::temp_dir().join(format!("rswap-notify-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let sock = UnixDatagram::bind(&path).unwrap();
        let addr = notify_addr(path.as_os_str()).unwrap();
        send_to(&addr, "READY=1\nSTATUS=listening").unwrap();
        assert_eq!(recv(&sock), "READY=1\nSTATUS=listening");
        send_to(&addr, "STOPPING=1").unwrap();
        assert_eq!(recv(&sock), "STOPPING=1");
        drop(sock);
        std::fs::remove_dir_all(&dir).unwrap();
        // Nobody listens any more: an error, not a panic.
        assert!(send_to(&addr, "READY=1").is_err());
    }

    #[test]
    fn sends_to_an_abstract_name() {
        let name = format!("rswap-notify-test-{}", std::process::id());
        let sock =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        let addr = notify_addr(OsStr::new(&format!("@{name}"))).unwrap();
        send_to(&addr, "READY=1").unwrap();
        assert_eq!(recv(&sock), "READY=1");
    }

    #[test]
    fn watchdog_from_the_environment() {
        let w = Watchdog::from_values(Some("30000000"), Some("42"), 42).unwrap();
        assert_eq!(w.every, Duration::from_secs(15));
        assert!(w.deadline() <= Instant::now());
        // Without $WATCHDOG_PID: this process's.
        assert!(Watchdog::from_values(Some("30000000"), None, 42).is_some());
        // Another process's, none, 0, not a number.
        assert_eq!(Watchdog::from_values(Some("30000000"), Some("7"), 42), None);
        assert_eq!(Watchdog::from_values(None, Some("42"), 42), None);
        assert_eq!(Watchdog::from_values(Some("0"), None, 42), None);
        assert_eq!(Watchdog::from_values(Some("30s"), None, 42), None);
    }

    #[test]
    fn watchdog_feeds_every_half_interval() {
        let mut w = Watchdog::from_values(Some("2000000"), None, 1).unwrap();
        let start = w.deadline();
        let mut sent = Vec::new();
        for ms in [0, 400, 999, 1000, 1500, 2100] {
            w.feed(start + Duration::from_millis(ms), |s| {
                sent.push((ms, s.to_string()));
                true
            });
        }
        let fed: Vec<u64> = sent.iter().map(|(ms, _)| *ms).collect();
        assert_eq!(fed, [0, 1000, 2100]);
        assert!(sent.iter().all(|(_, s)| s == "WATCHDOG=1"));
        assert_eq!(w.deadline(), start + Duration::from_millis(3100));
    }
}
