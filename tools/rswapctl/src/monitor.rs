// SPDX-License-Identifier: GPL-2.0

//! `rswapctl monitor`: the module's uevents, one line each as they come. On every state
//! change of a queue the module sends a `change` uevent on the target's disk
//! (`SUBSYSTEM=block`, `DEVNAME=rswapN`) with `RSWAP_TARGET` (the configfs name),
//! `RSWAP_QUEUE` (the queue's index), `RSWAP_EVENT` (`recovering`, `reconnected`,
//! `dead`) and `RSWAP_STATE` (the target's state word after it); on a disk over several
//! servers, `RSWAP_LEG` (the server's index in `servers`). They are read from the
//! kernel's uevent netlink socket (`NETLINK_KOBJECT_UEVENT`, its multicast group of
//! kernel events), as udev reads them.

use rustix::io::Errno;
use rustix::net::netlink::{self, SocketAddrNetlink};
use rustix::net::{self, AddressFamily, SocketFlags, SocketType};
use serde::Serialize;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::time::{SystemTime, UNIX_EPOCH};

/// One rswap event, from one uevent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// When `rswapctl` received it: RFC 3339 in UTC, microseconds
    /// (`2026-11-27T02:40:00.123456Z`).
    pub time: String,
    /// The target's configfs name.
    pub target: String,
    /// Its disk (`rswap0`), empty if the uevent had no `DEVNAME`.
    pub device: String,
    /// The leg (server) of a disk over several servers whose queue it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leg: Option<u32>,
    /// The queue whose state changed; `None` if the module did not say.
    pub queue: Option<u32>,
    /// `recovering`, `reconnected`, `dead` (any word is kept, so that a newer module's
    /// events still show).
    pub event: String,
    /// The target's state after it: `connected`, `recovering`, `dead`.
    pub state: String,
}

impl Event {
    /// Its line: `TIME TARGET DEVICE [leg=L ]queue=N EVENT state=STATE` (`queue=-`
    /// without one; `leg=` on a disk over several servers).
    pub fn line(&self) -> String {
        let queue = self
            .queue
            .map_or_else(|| "-".to_string(), |q| q.to_string());
        let device = if self.device.is_empty() {
            "-"
        } else {
            &self.device
        };
        let leg = self.leg.map_or_else(String::new, |l| format!("leg={l} "));
        format!(
            "{} {} {device} {leg}queue={queue} {} state={}",
            self.time, self.target, self.event, self.state
        )
    }
}

/// Reads one kernel uevent (`ACTION@DEVPATH`, then `KEY=VALUE` strings, each ended by a
/// NUL byte): the rswap event it carries, with `time`; `None` for any other uevent (not
/// a `change` of a block device with `RSWAP_TARGET` and `RSWAP_EVENT`), and for udev's
/// own messages (which start with `libudev`).
pub fn parse_uevent(buf: &[u8], time: &str) -> Option<Event> {
    let mut parts = buf.split(|&b| b == 0).filter(|p| !p.is_empty());
    let header = std::str::from_utf8(parts.next()?).ok()?;
    if !header.contains('@') {
        return None;
    }
    let mut env: Vec<(&str, &str)> = Vec::new();
    for p in parts {
        let Ok(text) = std::str::from_utf8(p) else {
            continue;
        };
        if let Some((k, v)) = text.split_once('=') {
            env.push((k, v));
        }
    }
    let value = |key: &str| env.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    if value("ACTION") != Some("change") || value("SUBSYSTEM") != Some("block") {
        return None;
    }
    Some(Event {
        time: time.to_string(),
        target: value("RSWAP_TARGET")?.to_string(),
        device: value("DEVNAME").unwrap_or_default().to_string(),
        leg: value("RSWAP_LEG").and_then(|l| l.parse().ok()),
        queue: value("RSWAP_QUEUE").and_then(|q| q.parse().ok()),
        event: value("RSWAP_EVENT")?.to_string(),
        state: value("RSWAP_STATE").unwrap_or_default().to_string(),
    })
}

/// The civil date of a day since 1970-01-01: (year, month, day).
fn civil(days: i64) -> (i64, u32, u32) {
    // Eras of 400 years (146097 days) starting on 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `t` in RFC 3339, UTC, with microseconds.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (year, month, day) = civil(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        s / 3600,
        s % 3600 / 60,
        s % 60,
        d.subsec_micros()
    )
}

/// The kernel's uevent socket, bound to its group of kernel events.
pub fn open() -> Result<OwnedFd, String> {
    let fd = net::socket_with(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        Some(netlink::KOBJECT_UEVENT),
    )
    .map_err(|e| format!("uevent socket: {e}"))?;
    // Room for a burst (every queue of every target at once).
    let _ = net::sockopt::set_socket_recv_buffer_size(&fd, 1 << 20);
    net::bind(&fd, &SocketAddrNetlink::new(0, 1)).map_err(|e| format!("uevent socket: {e}"))?;
    Ok(fd)
}

/// Prints every rswap event read from `fd` as it comes, a line each (`json`: a JSON
/// object each), until `count` events (forever without) or an error.
pub fn run(
    fd: &OwnedFd,
    json: bool,
    count: Option<u64>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut seen = 0;
    while count.is_none_or(|c| seen < c) {
        let n = match net::recv(fd, &mut buf[..], net::RecvFlags::empty()) {
            Ok((n, _)) => n,
            Err(Errno::INTR) => continue,
            // The socket's buffer overflowed: some events were lost.
            Err(Errno::NOBUFS) => {
                eprintln!(
                    "rswapctl: monitor: some events were lost (the socket's buffer overflowed)"
                );
                continue;
            }
            Err(e) => return Err(format!("reading the uevent socket: {e}")),
        };
        let Some(event) = parse_uevent(&buf[..n.min(buf.len())], &rfc3339(SystemTime::now()))
        else {
            continue;
        };
        let text = if json {
            serde_json::to_string(&event).unwrap_or_default()
        } else {
            event.line()
        };
        writeln!(out, "{text}")
            .and_then(|()| out.flush())
            .map_err(|e| format!("output: {e}"))?;
        seen += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A kernel uevent as the module sends it on a queue's state change.
    fn uevent(action: &str, subsystem: &str, rswap: &[(&str, &str)]) -> Vec<u8> {
        let mut fields = vec![
            format!("{action}@/devices/virtual/block/rswap0"),
            format!("ACTION={action}"),
            "DEVPATH=/devices/virtual/block/rswap0".to_string(),
            format!("SUBSYSTEM={subsystem}"),
            "MAJOR=252".to_string(),
            "MINOR=0".to_string(),
            "DEVNAME=rswap0".to_string(),
            "DEVTYPE=disk".to_string(),
            "DISKSEQ=9".to_string(),
        ];
        fields.extend(rswap.iter().map(|(k, v)| format!("{k}={v}")));
        fields.push("SEQNUM=4242".to_string());
        let mut buf = Vec::new();
        for f in fields {
            buf.extend_from_slice(f.as_bytes());
            buf.push(0);
        }
        buf
    }

    const T: &str = "2026-11-27T02:40:00.000001Z";

    fn rswap(event: &str, state: &str) -> Vec<u8> {
        uevent(
            "change",
            "block",
            &[
                ("RSWAP_TARGET", "mem0"),
                ("RSWAP_QUEUE", "1"),
                ("RSWAP_EVENT", event),
                ("RSWAP_STATE", state),
            ],
        )
    }

    #[test]
    fn every_event() {
        for (event, state) in [
            ("recovering", "recovering"),
            ("reconnected", "connected"),
            ("dead", "dead"),
        ] {
            let e = parse_uevent(&rswap(event, state), T).unwrap();
            assert_eq!(
                e,
                Event {
                    time: T.to_string(),
                    target: "mem0".to_string(),
                    device: "rswap0".to_string(),
                    leg: None,
                    queue: Some(1),
                    event: event.to_string(),
                    state: state.to_string(),
                }
            );
            assert_eq!(
                e.line(),
                format!("{T} mem0 rswap0 queue=1 {event} state={state}")
            );
        }
        let e = parse_uevent(&rswap("dead", "dead"), T).unwrap();
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            format!(
                r#"{{"time":"{T}","target":"mem0","device":"rswap0","queue":1,"event":"dead","state":"dead"}}"#
            )
        );
    }

    #[test]
    fn a_leg_of_a_disk_over_several_servers() {
        let buf = uevent(
            "change",
            "block",
            &[
                ("RSWAP_TARGET", "ec"),
                ("RSWAP_QUEUE", "0"),
                ("RSWAP_EVENT", "dead"),
                ("RSWAP_STATE", "degraded"),
                ("RSWAP_LEG", "3"),
            ],
        );
        let e = parse_uevent(&buf, T).unwrap();
        assert_eq!(e.leg, Some(3));
        assert_eq!(
            e.line(),
            format!("{T} ec rswap0 leg=3 queue=0 dead state=degraded")
        );
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            format!(
                r#"{{"time":"{T}","target":"ec","device":"rswap0","leg":3,"queue":0,"event":"dead","state":"degraded"}}"#
            )
        );
    }

    #[test]
    fn other_uevents_are_not_rswap_events() {
        // Another block device's change, an rswap disk's add, a network device's change.
        assert_eq!(parse_uevent(&uevent("change", "block", &[]), T), None);
        let add = uevent(
            "add",
            "block",
            &[("RSWAP_TARGET", "m"), ("RSWAP_EVENT", "dead")],
        );
        assert_eq!(parse_uevent(&add, T), None);
        let net = uevent(
            "change",
            "net",
            &[("RSWAP_TARGET", "m"), ("RSWAP_EVENT", "dead")],
        );
        assert_eq!(parse_uevent(&net, T), None);
        // Only a target, no event.
        let half = uevent("change", "block", &[("RSWAP_TARGET", "m")]);
        assert_eq!(parse_uevent(&half, T), None);
        // udev's own messages, garbage, nothing.
        let mut udev = b"libudev\0".to_vec();
        udev.extend_from_slice(&rswap("dead", "dead")[..]);
        assert_eq!(parse_uevent(&udev, T), None);
        assert_eq!(parse_uevent(b"\xff\xfe@\0ACTION=change\0", T), None);
        assert_eq!(parse_uevent(b"", T), None);
        assert_eq!(parse_uevent(b"\0\0\0", T), None);
    }

    #[test]
    fn missing_or_odd_fields() {
        // No queue, no device, no state; an unknown event word; a value that is not UTF-8.
        let mut buf = uevent(
            "change",
            "block",
            &[
                ("RSWAP_TARGET", "t"),
                ("RSWAP_EVENT", "paused"),
                ("RSWAP_QUEUE", "x"),
            ],
        );
        buf.extend_from_slice(b"JUNK=\xff\0");
        let text = String::from_utf8_lossy(&buf).replace("DEVNAME=rswap0", "DEVNAME_=rswap0");
        let e = parse_uevent(text.as_bytes(), T).unwrap();
        assert_eq!(e.line(), format!("{T} t - queue=- paused state="));
    }

    #[test]
    fn times_in_rfc3339() {
        let at = |secs: u64, micros: u64| {
            rfc3339(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.000005Z");
        assert_eq!(at(1_798_331_096, 123_456), "2026-12-27T00:24:56.123456Z");
        assert_eq!(at(4_107_542_399, 999_999), "2100-02-28T23:59:59.999999Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000000Z");
    }

    #[test]
    fn run_prints_the_rswap_events_of_a_socket() {
        use rustix::net::{socketpair, SendFlags};
        let (a, b) = socketpair(
            AddressFamily::UNIX,
            SocketType::DGRAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        for msg in [
            uevent("change", "block", &[]),
            rswap("recovering", "recovering"),
            uevent("add", "block", &[]),
            rswap("reconnected", "connected"),
        ] {
            net::send(&b, &msg, SendFlags::empty()).unwrap();
        }
        let mut out = Vec::new();
        run(&a, false, Some(2), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].ends_with(" mem0 rswap0 queue=1 recovering state=recovering"));
        assert!(lines[1].ends_with(" mem0 rswap0 queue=1 reconnected state=connected"));
        net::send(&b, &rswap("dead", "dead"), SendFlags::empty()).unwrap();
        let mut out = Vec::new();
        run(&a, true, Some(1), &mut out).unwrap();
        let e: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!((&e["event"], &e["queue"]), (&"dead".into(), &1.into()));
    }
}
