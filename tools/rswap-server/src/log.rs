// SPDX-License-Identifier: GPL-2.0

//! One-line structured logs on stderr: `ts=... level=... event=... key=value ...`.

use std::fmt::Display;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
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
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{}", self.text);
        }
    }
}
