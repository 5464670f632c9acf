// SPDX-License-Identifier: GPL-2.0

//! The answer to `status`: a [`Snapshot`] as one JSON object, indented by two spaces,
//! ending in a newline. 64-bit numbers (client, region and instance ids) are written
//! exactly, as JSON integers. No secret is in a snapshot, so none is in the answer.

use std::fmt::Write as _;
use std::time::Duration;

use super::snapshot::{ClientInfo, Snapshot};

/// A JSON value, as far as the status needs one.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    /// A number, already written (an integer, or seconds with three decimals).
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(&'static str, Json)>),
}

impl Json {
    fn int(n: impl Into<u64>) -> Self {
        Self::Num(n.into().to_string())
    }

    fn count(n: usize) -> Self {
        Self::Num(n.to_string())
    }

    fn seconds(d: Duration) -> Self {
        Self::Num(format!("{:.3}", d.as_secs_f64()))
    }

    fn opt(v: Option<Json>) -> Self {
        v.unwrap_or(Self::Null)
    }

    /// Writes the value at nesting `depth` (its first line is already indented).
    fn write(&self, out: &mut String, depth: usize) {
        match self {
            Self::Null => out.push_str("null"),
            Self::Num(n) => out.push_str(n),
            Self::Str(s) => write_string(out, s),
            Self::Arr(items) if items.is_empty() => out.push_str("[]"),
            Self::Obj(fields) if fields.is_empty() => out.push_str("{}"),
            Self::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    indent(out, depth + 1);
                    v.write(out, depth + 1);
                }
                out.push('\n');
                indent(out, depth);
                out.push(']');
            }
            Self::Obj(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    indent(out, depth + 1);
                    write_string(out, k);
                    out.push_str(": ");
                    v.write(out, depth + 1);
                }
                out.push('\n');
                indent(out, depth);
                out.push('}');
            }
        }
    }
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// A JSON string: quotes, backslashes and control characters escaped.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn client(c: &ClientInfo) -> Json {
    let queues = c
        .queues
        .iter()
        .map(|q| {
            Json::Obj(vec![
                ("index", Json::int(q.index)),
                ("peer", Json::Str(q.peer.clone())),
            ])
        })
        .collect();
    Json::Obj(vec![
        ("client_id", Json::int(c.client_id)),
        ("region_id", Json::int(c.region_id)),
        ("length", Json::int(c.length)),
        ("epoch", Json::int(c.epoch)),
        ("state", Json::Str(c.state().into())),
        (
            "grace_left_seconds",
            Json::opt(c.grace_left.map(Json::seconds)),
        ),
        (
            "last_seen_seconds",
            Json::opt(c.last_seen.map(Json::seconds)),
        ),
        ("queue_count", Json::int(c.queue_count)),
        ("queues_live", Json::count(c.queues.len())),
        ("queues", Json::Arr(queues)),
        ("owner_instance", Json::opt(c.owner.map(Json::int))),
    ])
}

/// The snapshot as the JSON object of `status`.
pub(crate) fn format_status(s: &Snapshot) -> String {
    let k = &s.counters;
    let by_name = |m: &std::collections::BTreeMap<&'static str, u64>| {
        Json::Obj(m.iter().map(|(name, n)| (*name, Json::int(*n))).collect())
    };
    let doc = Json::Obj(vec![
        (
            "server",
            Json::Obj(vec![
                ("version", Json::Str(s.version.into())),
                ("wire_protocol", Json::int(s.wire_version)),
                ("listen", Json::Str(s.listen.clone())),
                ("uptime_seconds", Json::seconds(s.uptime)),
            ]),
        ),
        (
            "pool",
            Json::Obj(vec![
                ("size_bytes", Json::int(s.pool.size)),
                ("used_bytes", Json::int(s.pool.used)),
                ("left_bytes", Json::int(s.pool.left())),
                ("max_clients", Json::count(s.pool.max_clients)),
                ("clients", Json::count(s.clients.len())),
                ("clients_in_grace", Json::count(s.clients_in_grace())),
                ("queues", Json::count(s.queues)),
            ]),
        ),
        ("clients", Json::Arr(s.clients.iter().map(client).collect())),
        (
            "counters",
            Json::Obj(vec![
                ("connects_accepted", Json::int(k.connects_accepted)),
                ("connect_rejects", by_name(&k.connect_rejects)),
                ("challenges", Json::int(k.challenges)),
                ("keepalive_closes", by_name(&k.keepalive_closes)),
                ("regions_allocated", Json::int(k.regions_allocated)),
                ("regions_freed", Json::int(k.regions_freed)),
            ]),
        ),
    ]);
    let mut out = String::new();
    doc.write(&mut out, 0);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::snapshot::sample;

    #[test]
    fn the_sample() {
        // The same file is rswapctl's sample of what the server answers.
        let want = include_str!("../../../testdata/server-status.json");
        assert_eq!(format_status(&sample()), want);
    }

    #[test]
    fn no_clients_is_an_empty_array() {
        let mut s = sample();
        s.clients.clear();
        let text = format_status(&s);
        assert!(text.contains("\n  \"clients\": [],\n"), "{text}");
    }

    #[test]
    fn strings_are_escaped() {
        let mut out = String::new();
        write_string(&mut out, "a\"b\\c\nd\re\tf\u{1}g\u{7f}é");
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\u{7f}é\"");
        let mut s = sample();
        s.listen = "[fe80::1%eth\"0]:1".into();
        assert!(format_status(&s).contains("\"listen\": \"[fe80::1%eth\\\"0]:1\","));
    }
}
