// SPDX-License-Identifier: GPL-2.0

//! The answer to `metrics`: a [`Snapshot`] in the Prometheus text exposition format,
//! version 0.0.4. Every family is named `rswap_server_*` and has its `# HELP` and
//! `# TYPE` lines; counters end in `_total`, sizes in `_bytes`, times in `_seconds`.
//! Families of per-client samples (label `client_id`, decimal as in the log) are
//! present with no sample while no client holds a region.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::snapshot::{ClientInfo, Snapshot};

/// A metric family's type.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Gauge,
    Counter,
}

/// Builds the text: one family after the other.
struct Text {
    out: String,
}

impl Text {
    /// Starts family `name` with its help and type lines.
    fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let kind = match kind {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        };
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample of the current family; `labels` as (name, unescaped value).
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: &str) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_label(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    /// A family with one sample and no labels.
    fn single(&mut self, name: &str, kind: Kind, help: &str, value: &str) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// A counter family with one sample per entry of `counts`, labelled `label`.
    fn counters_by(
        &mut self,
        name: &str,
        help: &str,
        label: &str,
        counts: &BTreeMap<&'static str, u64>,
    ) {
        self.family(name, Kind::Counter, help);
        for (value, n) in counts {
            self.sample(name, &[(label, value)], &n.to_string());
        }
    }

    /// A family with one sample per client for which `value` has one.
    fn per_client(
        &mut self,
        s: &Snapshot,
        name: &str,
        help: &str,
        value: impl Fn(&ClientInfo) -> Option<String>,
    ) {
        self.family(name, Kind::Gauge, help);
        for c in &s.clients {
            if let Some(v) = value(c) {
                self.sample(name, &[("client_id", &c.client_id.to_string())], &v);
            }
        }
    }
}

/// A help text as the format wants it: backslash and newline escaped.
fn escape_help(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A label value as the format wants it: backslash, double quote and newline escaped.
fn escape_label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Seconds with millisecond precision, as a sample value.
fn seconds(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

/// The snapshot as Prometheus text (format 0.0.4).
pub(crate) fn format_metrics(s: &Snapshot) -> String {
    let mut t = Text { out: String::new() };
    t.family(
        "rswap_server_info",
        Kind::Gauge,
        "The server's version and the wire protocol version it speaks (always 1).",
    );
    t.sample(
        "rswap_server_info",
        &[
            ("version", s.version),
            ("wire_protocol", &s.wire_version.to_string()),
        ],
        "1",
    );
    t.single(
        "rswap_server_start_time_seconds",
        Kind::Gauge,
        "When the server started, in seconds since the Unix epoch.",
        &format!("{:.3}", s.start_time_seconds()),
    );
    t.single(
        "rswap_server_pool_size_bytes",
        Kind::Gauge,
        "The pool: memory the server may hand out to all clients together (--size).",
        &s.pool.size.to_string(),
    );
    t.single(
        "rswap_server_pool_used_bytes",
        Kind::Gauge,
        "Pool memory held by regions, live or in their grace period.",
        &s.pool.used.to_string(),
    );
    t.single(
        "rswap_server_pool_left_bytes",
        Kind::Gauge,
        "Pool memory left for new regions.",
        &s.pool.left().to_string(),
    );
    t.single(
        "rswap_server_max_clients",
        Kind::Gauge,
        "Most clients that may hold a region at once (--max-clients).",
        &s.pool.max_clients.to_string(),
    );
    t.single(
        "rswap_server_clients",
        Kind::Gauge,
        "Clients holding a region, live or in their grace period.",
        &s.clients.len().to_string(),
    );
    t.single(
        "rswap_server_clients_in_grace",
        Kind::Gauge,
        "Clients without a live queue whose region is kept for its grace period.",
        &s.clients_in_grace().to_string(),
    );
    t.single(
        "rswap_server_queues",
        Kind::Gauge,
        "Live queues (connections) of all clients.",
        &s.queues.to_string(),
    );
    t.per_client(
        s,
        "rswap_server_client_region_bytes",
        "Registered length of the client's region.",
        |c| Some(c.length.to_string()),
    );
    t.per_client(
        s,
        "rswap_server_client_queues",
        "Live queues of the client.",
        |c| Some(c.queues.len().to_string()),
    );
    t.per_client(
        s,
        "rswap_server_client_epoch",
        "Epoch of the client's region (1 when allocated, +1 at each return from the grace period).",
        |c| Some(c.epoch.to_string()),
    );
    t.per_client(
        s,
        "rswap_server_client_last_seen_age_seconds",
        "Seconds since the client's last queue activity (connect, established, keep-alive answer, disconnect); absent for a restored region no queue has reached yet.",
        |c| c.last_seen.map(seconds),
    );
    t.per_client(
        s,
        "rswap_server_client_grace_left_seconds",
        "Seconds until the region of a client without a live queue is freed; absent while the client has a live queue.",
        |c| c.grace_left.map(seconds),
    );
    let c = &s.counters;
    t.single(
        "rswap_server_connects_accepted_total",
        Kind::Counter,
        "Queue connections admitted and accepted since the server started.",
        &c.connects_accepted.to_string(),
    );
    t.counters_by(
        "rswap_server_connect_rejects_total",
        "Connect requests refused since the server started, by reject reason.",
        "reason",
        &c.connect_rejects,
    );
    t.single(
        "rswap_server_challenges_total",
        Kind::Counter,
        "Authentication challenges answered to hellos since the server started.",
        &c.challenges.to_string(),
    );
    t.counters_by(
        "rswap_server_keepalive_closes_total",
        "Queues closed by the keep-alive since the server started: probe not answered within a period (keepalive_timeout) or failed (keepalive_failed).",
        "why",
        &c.keepalive_closes,
    );
    t.single(
        "rswap_server_regions_allocated_total",
        Kind::Counter,
        "New regions allocated since the server started.",
        &c.regions_allocated.to_string(),
    );
    t.single(
        "rswap_server_regions_freed_total",
        Kind::Counter,
        "Regions freed since the server started (grace period over, or shutdown).",
        &c.regions_freed.to_string(),
    );
    t.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::snapshot::{sample, Counters, Pool};
    use std::collections::BTreeSet;
    use std::time::SystemTime;

    /// The sample lines of `text`, without comments.
    fn samples(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn values_of_the_sample() {
        let text = format_metrics(&sample());
        let lines = samples(&text);
        for want in [
            "rswap_server_info{version=\"0.1.0\",wire_protocol=\"2\"} 1",
            "rswap_server_start_time_seconds 1700000000.250",
            "rswap_server_pool_size_bytes 16777216",
            "rswap_server_pool_used_bytes 6291456",
            "rswap_server_pool_left_bytes 10485760",
            "rswap_server_max_clients 64",
            "rswap_server_clients 2",
            "rswap_server_clients_in_grace 1",
            "rswap_server_queues 2",
            "rswap_server_client_region_bytes{client_id=\"9729\"} 4194304",
            "rswap_server_client_region_bytes{client_id=\"9730\"} 2097152",
            "rswap_server_client_queues{client_id=\"9729\"} 2",
            "rswap_server_client_queues{client_id=\"9730\"} 0",
            "rswap_server_client_epoch{client_id=\"9729\"} 1",
            "rswap_server_client_epoch{client_id=\"9730\"} 3",
            "rswap_server_client_last_seen_age_seconds{client_id=\"9729\"} 1.500",
            "rswap_server_client_grace_left_seconds{client_id=\"9730\"} 25.125",
            "rswap_server_connects_accepted_total 3",
            "rswap_server_connect_rejects_total{reason=\"TooLarge\"} 2",
            "rswap_server_connect_rejects_total{reason=\"AuthFailed\"} 1",
            "rswap_server_connect_rejects_total{reason=\"InUse\"} 0",
            "rswap_server_challenges_total 4",
            "rswap_server_keepalive_closes_total{why=\"keepalive_timeout\"} 1",
            "rswap_server_keepalive_closes_total{why=\"keepalive_failed\"} 0",
            "rswap_server_regions_allocated_total 3",
            "rswap_server_regions_freed_total 1",
        ] {
            assert!(lines.contains(&want), "{want} missing in\n{text}");
        }
        // Absent where there is nothing to say: client 9730 was restored and never
        // seen, client 9729 is live.
        assert!(!text.contains("last_seen_age_seconds{client_id=\"9730\"}"));
        assert!(!text.contains("grace_left_seconds{client_id=\"9729\"}"));
        // Every reason has its sample.
        let rejects = lines
            .iter()
            .filter(|l| l.starts_with("rswap_server_connect_rejects_total{"))
            .count();
        assert_eq!(rejects, 9);
        // 9 of the server, 8 of the clients, 15 counters.
        assert_eq!(lines.len(), 32);
    }

    /// The format's rules, checked on the text: each family once, HELP then TYPE then
    /// its samples, names and labels well formed, counters ending in `_total`, values
    /// numbers, a final newline.
    fn check_format(text: &str) {
        assert!(text.ends_with('\n'));
        let mut families = BTreeSet::new();
        let mut current: Option<(String, String)> = None;
        let mut help: Option<String> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, text) = rest.split_once(' ').expect("help text");
                assert!(!text.is_empty());
                assert!(families.insert(name.to_string()), "{name} twice");
                help = Some(name.to_string());
                current = None;
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("type");
                assert_eq!(
                    help.as_deref(),
                    Some(name),
                    "TYPE of {name} right after its HELP"
                );
                assert!(kind == "gauge" || kind == "counter", "{line}");
                assert_eq!(kind == "counter", name.ends_with("_total"), "{line}");
                assert!(name.starts_with("rswap_server_"), "{name}");
                assert!(
                    name.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                    "{name}"
                );
                current = Some((name.to_string(), kind.to_string()));
            } else {
                assert!(!line.starts_with('#'), "{line}");
                let (name, _) = current.as_ref().expect("a sample after its TYPE");
                let (series, value) = line.rsplit_once(' ').expect("value");
                let (sname, labels) = match series.split_once('{') {
                    Some((n, l)) => (n, Some(l)),
                    None => (series, None),
                };
                assert_eq!(sname, name, "{line}");
                if let Some(l) = labels {
                    let l = l.strip_suffix('}').expect("closing brace");
                    for pair in l.split(',') {
                        let (k, v) = pair.split_once('=').expect("label=value");
                        assert!(k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
                        assert!(v.starts_with('"') && v.ends_with('"') && v.len() >= 2);
                    }
                }
                assert!(value.parse::<f64>().is_ok_and(f64::is_finite), "{line}");
            }
        }
        assert!(families.len() >= 20);
    }

    #[test]
    fn format_is_well_formed() {
        check_format(&format_metrics(&sample()));
    }

    #[test]
    fn no_clients() {
        let s = Snapshot {
            version: "0.1.0",
            wire_version: 2,
            listen: "[::1]:7471".into(),
            started: SystemTime::UNIX_EPOCH,
            uptime: Duration::ZERO,
            pool: Pool {
                size: 4096,
                used: 0,
                max_clients: 1,
            },
            queues: 0,
            clients: Vec::new(),
            counters: Counters::default(),
        };
        let text = format_metrics(&s);
        check_format(&text);
        // The per-client families are there, without samples.
        assert!(text.contains("# TYPE rswap_server_client_region_bytes gauge\n# HELP"));
        assert!(!text.contains("client_id="));
        assert!(samples(&text).contains(&"rswap_server_clients 0"));
        assert!(
            samples(&text).contains(&"rswap_server_connect_rejects_total{reason=\"BadVersion\"} 0")
        );
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(escape_help("a\\b\nc\"d"), "a\\\\b\\nc\"d");
        let mut s = sample();
        s.version = "1.0\"x\n";
        let text = format_metrics(&s);
        assert!(text.contains("rswap_server_info{version=\"1.0\\\"x\\n\",wire_protocol=\"2\"} 1\n"));
    }
}
