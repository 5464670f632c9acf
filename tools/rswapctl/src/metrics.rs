// SPDX-License-Identifier: GPL-2.0

//! `rswapctl metrics`: every target in the Prometheus text exposition format, version
//! 0.0.4, as Documentation/rswapctl.md lists the families. Each family is named
//! `rswap_target_*` (and `rswap_module_info`, the module's version), has its `# HELP` and
//! `# TYPE` lines and one sample per target that
//! has the value (a disabled target has only `rswap_target_info` and
//! `rswap_target_state`), labelled `target` (the configfs name) and `client_id` (decimal,
//! as the memory server's metrics label its clients). Counters end in `_total`; the
//! latency histograms are in seconds, with cumulative `le` buckets and `_count`, without
//! `_sum` (the module counts requests per bucket, not their total time). The legs of a
//! disk over several servers have families of their own, `rswap_target_leg_*`, with a
//! sample per leg labelled `leg` too.

use crate::parse::Histogram;
use crate::settings::{MetricKind, COUNTERS};
use crate::target::{LegInfo, TargetInfo};
use std::fmt::Write as _;

/// The summary words of a target's `state`, each a sample of `rswap_target_state`.
pub const STATES: [&str; 6] = [
    "disabled",
    "connected",
    "recovering",
    "disconnected",
    "degraded",
    "dead",
];

/// A label value with `\`, `"` and newlines escaped.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A number of microseconds in seconds, exactly: `8` is `0.000008`, `1000000` is `1`.
pub fn us_as_seconds(us: u64) -> String {
    let (whole, frac) = (us / 1_000_000, us % 1_000_000);
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:06}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// The client id label: the `client_id` attribute (0x hex or decimal) in decimal; as it
/// is if it is neither.
fn client_id(t: &TargetInfo) -> String {
    let text = t.settings.get("client_id").as_str().unwrap_or_default();
    let n = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    };
    n.map_or_else(|| text.to_string(), |n| n.to_string())
}

/// Builds the text one family after the other.
struct Text<'a> {
    targets: &'a [TargetInfo],
    out: String,
}

impl Text<'_> {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample of target `t`, with its labels and `more`.
    fn sample(&mut self, name: &str, t: &TargetInfo, more: &[(&str, &str)], value: u64) {
        let _ = write!(
            self.out,
            "{name}{{target=\"{}\",client_id=\"{}\"",
            escape_label(&t.name),
            escape_label(&client_id(t))
        );
        for (k, v) in more {
            let _ = write!(self.out, ",{k}=\"{}\"", escape_label(v));
        }
        let _ = writeln!(self.out, "}} {value}");
    }

    /// A family with one sample per target for which `value` has one.
    fn per_target(
        &mut self,
        name: &str,
        kind: MetricKind,
        help: &str,
        value: impl Fn(&TargetInfo) -> Option<u64>,
    ) {
        self.family(name, kind.name(), help);
        for t in self.targets {
            if let Some(v) = value(t) {
                self.sample(name, t, &[], v);
            }
        }
    }

    /// A family with one sample per leg of each target with legs and the value (`get`
    /// of the leg), labelled `leg` (its index in `servers`).
    fn per_leg(
        &mut self,
        name: &str,
        kind: MetricKind,
        help: &str,
        get: impl Fn(&LegInfo) -> Option<u64>,
    ) {
        self.family(name, kind.name(), help);
        for t in self.targets {
            for leg in t.legs.iter().flatten() {
                if let Some(v) = get(leg) {
                    self.sample(name, t, &[("leg", &leg.leg.to_string())], v);
                }
            }
        }
    }

    /// A histogram family from each target's histogram, `get` of its stats.
    fn histogram(
        &mut self,
        name: &str,
        help: &str,
        get: impl Fn(&TargetInfo) -> Option<&Histogram>,
    ) {
        self.family(name, "histogram", help);
        let bucket = format!("{name}_bucket");
        let count = format!("{name}_count");
        for t in self.targets {
            let Some(h) = get(t) else {
                continue;
            };
            let mut below = 0;
            for (le, n) in &h.buckets {
                below += n;
                let le = le.map_or_else(|| "+Inf".to_string(), us_as_seconds);
                self.sample(&bucket, t, &[("le", &le)], below);
            }
            self.sample(&count, t, &[], below);
        }
    }
}

/// The metrics of the module loaded (its `version`, `None` when it shows none) and of
/// `targets` (as `Ctl::list` reads them).
pub fn render(module_version: Option<&str>, targets: &[TargetInfo]) -> String {
    let mut text = Text {
        targets,
        out: String::new(),
    };
    text.family(
        "rswap_module_info",
        "gauge",
        "The rswap module loaded: its version (the package's); always 1.",
    );
    if let Some(v) = module_version {
        let _ = writeln!(
            text.out,
            "rswap_module_info{{version=\"{}\"}} 1",
            escape_label(v)
        );
    }
    text.family(
        "rswap_target_info",
        "gauge",
        "A target: its disk and memory server; always 1.",
    );
    for t in targets {
        let server = t.server().unwrap_or_default();
        let device = t.device.clone().unwrap_or_default();
        text.sample(
            "rswap_target_info",
            t,
            &[("device", &device), ("server", &server)],
            1,
        );
    }
    text.family(
        "rswap_target_state",
        "gauge",
        "The target's state: 1 for the state it is in, 0 for the others.",
    );
    for t in targets {
        let mut states: Vec<&str> = STATES.to_vec();
        if !states.contains(&t.state.as_str()) {
            states.push(&t.state);
        }
        for s in states {
            text.sample(
                "rswap_target_state",
                t,
                &[("state", s)],
                u64::from(s == t.state),
            );
        }
    }
    let gauge = MetricKind::Gauge;
    text.per_target("rswap_target_queues", gauge, "The target's queues.", |t| {
        t.queues_total.map(u64::from)
    });
    text.per_target(
        "rswap_target_queues_live",
        gauge,
        "Queues connected now.",
        |t| t.queues_live.map(u64::from),
    );
    text.per_target(
        "rswap_target_queues_recovering",
        gauge,
        "Queues reconnecting now.",
        |t| t.recovering.map(u64::from),
    );
    text.per_target(
        "rswap_target_queues_dead",
        gauge,
        "Queues that gave up reconnecting: their I/O fails.",
        |t| t.dead.map(u64::from),
    );
    for c in COUNTERS {
        text.per_target(c.metric, c.kind, c.help, |t| {
            t.stats.as_ref().and_then(|s| s.0.total(c.key))
        });
    }
    text.per_target(
        "rswap_target_auth_failures_total",
        MetricKind::Counter,
        "Blocks read back that did not verify (encrypted targets only).",
        |t| t.auth_failures,
    );
    text.histogram(
        "rswap_target_read_latency_seconds",
        "Reads, from the block layer's start of the request to its end.",
        |t| t.stats.as_ref().and_then(|s| s.0.read_latency.as_ref()),
    );
    text.histogram(
        "rswap_target_write_latency_seconds",
        "Writes, from the block layer's start of the request to its end.",
        |t| t.stats.as_ref().and_then(|s| s.0.write_latency.as_ref()),
    );
    text.histogram(
        "rswap_target_latency_seconds",
        "Reads and writes together, from posting to completion (modules older than the \
         read and write histograms).",
        |t| t.stats.as_ref().and_then(|s| s.0.latency.as_ref()),
    );
    // The legs of disks over several servers, after every family of the plain ones.
    text.family(
        "rswap_target_leg_info",
        "gauge",
        "A leg of a disk over several servers: its memory server; always 1.",
    );
    for t in targets {
        for leg in t.legs.iter().flatten() {
            let index = leg.leg.to_string();
            let labels = [("leg", index.as_str()), ("server", leg.server.as_str())];
            text.sample("rswap_target_leg_info", t, &labels, 1);
        }
    }
    let counter = MetricKind::Counter;
    text.per_leg(
        "rswap_target_leg_reads_total",
        counter,
        "The leg's reads that came back with success.",
        |l| l.reads,
    );
    text.per_leg(
        "rswap_target_leg_writes_total",
        counter,
        "The leg's writes that came back with success.",
        |l| l.writes,
    );
    text.per_leg(
        "rswap_target_leg_errors_total",
        counter,
        "The leg's reads and writes that failed.",
        |l| l.errors,
    );
    text.per_leg(
        "rswap_target_leg_late_reads_total",
        counter,
        "The leg's reads that came back after their read had ended (the slowest leg has most).",
        |l| l.late,
    );
    text.per_leg(
        "rswap_target_leg_dirty_groups",
        gauge,
        "The leg's groups (32 KiB) written while it was away, waiting to be rebuilt on it.",
        |l| l.dirty,
    );
    text.per_leg(
        "rswap_target_leg_resynced_groups_total",
        counter,
        "The leg's groups rebuilt on it since the target was enabled.",
        |l| l.resynced,
    );
    text.per_leg(
        "rswap_target_leg_altered_blocks_total",
        counter,
        "The leg's blocks (encrypted target) that verified only once rebuilt without its \
         fragment: its server altered its memory.",
        |l| l.altered,
    );
    text.out
}
