// SPDX-License-Identifier: GPL-2.0

//! One-line structured logs on stderr: `ts=... level=... event=... key=value ...`.
//! When stderr is the journal (systemd's `$JOURNAL_STREAM` names it), each line starts
//! with its syslog priority, `<3>` to `<7>` as `sd-daemon(3)` has it, which journald takes
//! off and keeps as the line's priority: `journalctl -p warning` then shows the warnings
//! and errors only.

use std::fmt::Display;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// Severity of a log line; lines above the configured level are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Something failed.
    Error = 0,
    /// Something was refused or looks wrong.
    Warn = 1,
    /// Lifecycle: listen, connect, region, disconnect, shutdown.
    Info = 2,
    /// Every rdma_cm event and completion.
    Debug = 3,
}

impl Level {
    /// Parses `error`, `warn`, `info` or `debug`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "error" => Some(Self::Error),
            "warn" => Some(Self::Warn),
            "info" => Some(Self::Info),
            "debug" => Some(Self::Debug),
            _ => None,
        }
    }

    /// The syslog priority of its lines (`LOG_ERR`, `LOG_WARNING`, `LOG_INFO`,
    /// `LOG_DEBUG`).
    pub fn priority(self) -> u8 {
        match self {
            Self::Error => 3,
            Self::Warn => 4,
            Self::Info => 6,
            Self::Debug => 7,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);

/// Sets the most verbose level that is printed.
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

/// Whether `journal_stream` (the value of `$JOURNAL_STREAM`, `DEVICE:INODE` in decimal)
/// names the file `(dev, ino)`: systemd's way of telling a service that its stderr is
/// connected to the journal (and not, say, redirected elsewhere by a shell in between).
pub fn is_journal_stream(journal_stream: &str, dev: u64, ino: u64) -> bool {
    journal_stream
        .trim()
        .split_once(':')
        .and_then(|(d, i)| Some((d.parse::<u64>().ok()?, i.parse::<u64>().ok()?)))
        == Some((dev, ino))
}

/// Whether this process's stderr is the journal, decided once.
fn stderr_is_journal() -> bool {
    static JOURNAL: OnceLock<bool> = OnceLock::new();
    *JOURNAL.get_or_init(|| {
        let Some(value) = std::env::var_os("JOURNAL_STREAM") else {
            return false;
        };
        rustix::fs::fstat(std::io::stderr())
            .is_ok_and(|st| is_journal_stream(&value.to_string_lossy(), st.st_dev, st.st_ino))
    })
}

/// The text written for a line of `level`: with its priority prefix for the journal.
fn written(level: Level, text: &str, journal: bool) -> String {
    if journal {
        format!("<{}>{text}", level.priority())
    } else {
        text.to_string()
    }
}

/// A log line being built; printed by [`Line::emit`].
#[must_use = "call emit()"]
pub struct Line {
    level: Level,
    text: String,
}

/// Starts a line of `level` for `event`.
pub fn line(level: Level, event: &str) -> Line {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut text = String::with_capacity(128);
    let _ = write!(
        text,
        "ts={}.{:03} level={} event={}",
        now.as_secs(),
        now.subsec_millis(),
        level.name(),
        event
    );
    Line { level, text }
}

/// Shorthand for `line(Level::Error, event)`.
pub fn error(event: &str) -> Line {
    line(Level::Error, event)
}
/// Shorthand for `line(Level::Warn, event)`.
pub fn warn(event: &str) -> Line {
    line(Level::Warn, event)
}
/// Shorthand for `line(Level::Info, event)`.
pub fn info(event: &str) -> Line {
    line(Level::Info, event)
}
/// Shorthand for `line(Level::Debug, event)`.
pub fn debug(event: &str) -> Line {
    line(Level::Debug, event)
}

impl Line {
    /// Appends `key=value`; values with spaces, quotes or `=` are quoted.
    pub fn kv(mut self, key: &str, value: impl Display) -> Self {
        let v = value.to_string();
        if v.is_empty() || v.contains([' ', '"', '=', '\n']) {
            let _ = write!(self.text, " {key}={v:?}");
        } else {
            let _ = write!(self.text, " {key}={v}");
        }
        self
    }

    /// Appends `key=0x...`.
    pub fn hex(self, key: &str, value: u64) -> Self {
        self.kv(key, format_args!("{value:#x}"))
    }

    /// Prints the line if its level is enabled.
    pub fn emit(self) {
        if self.level as u8 <= LEVEL.load(Ordering::Relaxed) {
            let text = written(self.level, &self.text, stderr_is_journal());
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{text}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_for_the_journal() {
        let text = "ts=1.000 level=warn event=x";
        assert_eq!(written(Level::Error, text, true), format!("<3>{text}"));
        assert_eq!(written(Level::Warn, text, true), format!("<4>{text}"));
        assert_eq!(written(Level::Info, text, true), format!("<6>{text}"));
        assert_eq!(written(Level::Debug, text, true), format!("<7>{text}"));
        // Not the journal (a terminal, a file): the line as it is.
        assert_eq!(written(Level::Warn, text, false), text);
    }

    #[test]
    fn journal_stream() {
        assert!(is_journal_stream("8:12345", 8, 12345));
        assert!(is_journal_stream(" 8:12345\n", 8, 12345));
        // Another file: stderr was redirected under the service.
        assert!(!is_journal_stream("8:12345", 8, 12346));
        assert!(!is_journal_stream("9:12345", 8, 12345));
        assert!(!is_journal_stream("", 8, 12345));
        assert!(!is_journal_stream("8", 8, 12345));
        assert!(!is_journal_stream("x:y", 8, 12345));
    }
}
