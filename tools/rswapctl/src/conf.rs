// SPDX-License-Identifier: GPL-2.0

//! Target configuration files, `/etc/rswap/targets/NAME.conf`, for `rswapctl up NAME`
//! (and the `rswap@NAME.service` unit that runs it at boot).
//!
//! One `key = value` per line; blank lines and lines starting with `#` are ignored. The
//! keys are the options of `rswapctl add`: `server` and `size` (required), `client_id`,
//! `secret_file`, `encrypt` and `sync_swapin` (`yes` or `no`), `queues`, `poll_queues`
//! (0..63), `recovery_ms`, `keepalive_ms`, `swap` (`yes` or `no`) and `priority` (with
//! `swap = yes`). An unknown key, a key given twice, a bad value or a missing required
//! key is an error that names the file and line; nothing is then done.

use crate::target::{self, AddOptions};
use std::path::PathBuf;

/// The directory `rswapctl up` reads `NAME.conf` from.
pub const DEFAULT_DIR: &str = "/etc/rswap/targets";

/// The keys a target file may have, in the documentation's order.
pub const KEYS: [&str; 12] = [
    "server",
    "size",
    "client_id",
    "secret_file",
    "encrypt",
    "sync_swapin",
    "queues",
    "poll_queues",
    "recovery_ms",
    "keepalive_ms",
    "swap",
    "priority",
];

/// A target file's settings: `add`'s options (without the secret, which is read from
/// `secret_file` only when the target is brought up).
#[derive(Debug, Clone)]
pub struct TargetConfig {
    pub options: AddOptions,
    pub secret_file: Option<PathBuf>,
}

fn uint(v: &str) -> Result<u32, String> {
    v.parse::<u32>()
        .map_err(|_| format!("{v:?} is not a number (0..4294967295)"))
}

/// `SIZE`: a number of bytes with an optional K, M, G or T suffix (the kernel checks
/// the range and the 4 KiB multiple).
fn size(v: &str) -> Result<String, String> {
    let digits = v.trim_end_matches(['K', 'M', 'G', 'T', 'k', 'm', 'g', 't']);
    let suffixes = v.len() - digits.len();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || suffixes > 1 {
        return Err(format!(
            "{v:?} is not a size (a number with an optional K, M, G or T suffix)"
        ));
    }
    Ok(v.to_string())
}

/// A client id: decimal or 0x hex, not 0.
fn client_id(v: &str) -> Result<String, String> {
    let n = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse::<u64>().ok(),
    };
    match n {
        Some(n) if n != 0 => Ok(v.to_string()),
        _ => Err(format!(
            "{v:?} is not a client id (1..2^64-1, decimal or 0x hex)"
        )),
    }
}

fn yes_no(v: &str) -> Result<bool, String> {
    match v {
        "yes" | "true" | "1" => Ok(true),
        "no" | "false" | "0" => Ok(false),
        _ => Err(format!("{v:?} is not yes or no")),
    }
}

fn priority(v: &str) -> Result<i32, String> {
    match v.parse::<i32>() {
        Ok(p) if (-1..=32767).contains(&p) => Ok(p),
        _ => Err(format!("{v:?} is not a swap priority (-1..32767)")),
    }
}

/// Parses the text of `file` (named so in errors) for target `name`.
pub fn parse_target_config(name: &str, file: &str, text: &str) -> Result<TargetConfig, String> {
    let mut options = AddOptions {
        name: name.to_string(),
        ..AddOptions::default()
    };
    let mut secret_file = None;
    // The line of each key seen, for duplicates and `priority` without `swap`.
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let at = |what: String| format!("{file}:{line_no}: {what}");
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(at(format!(
                "not a `key = value` line: {:?}",
                truncate(line)
            )));
        };
        let (key, value) = (key.trim(), value.trim());
        let Some(known) = KEYS.iter().find(|k| **k == key) else {
            return Err(at(format!(
                "unknown key {:?} (known: {})",
                truncate(key),
                KEYS.join(", ")
            )));
        };
        if let Some((_, first)) = seen.iter().find(|(k, _)| k == known) {
            return Err(at(format!("{key} given twice (first on line {first})")));
        }
        seen.push((known, line_no));
        if value.is_empty() {
            return Err(at(format!("{key}: empty value")));
        }
        let bad = |e: String| at(format!("{key}: {e}"));
        match key {
            "server" => {
                let (addr, port) = target::parse_server(value).map_err(bad)?;
                options.addr = Some(addr);
                options.port = port;
            }
            "size" => options.size = size(value).map_err(bad)?,
            "client_id" => options.client_id = Some(client_id(value).map_err(bad)?),
            "secret_file" => {
                let path = PathBuf::from(value);
                if !path.is_absolute() {
                    return Err(bad(format!("{value:?} is not an absolute path")));
                }
                secret_file = Some(path);
            }
            "encrypt" => options.encrypt = yes_no(value).map_err(bad)?,
            "sync_swapin" => options.sync_swapin = yes_no(value).map_err(bad)?,
            "queues" => options.queues = Some(uint(value).map_err(bad)?),
            "poll_queues" => {
                options.poll_queues = Some(target::parse_poll_queues(value).map_err(bad)?)
            }
            "recovery_ms" => options.recovery_ms = Some(uint(value).map_err(bad)?),
            "keepalive_ms" => options.keepalive_ms = Some(uint(value).map_err(bad)?),
            "swap" => options.swap = yes_no(value).map_err(bad)?,
            "priority" => options.priority = Some(priority(value).map_err(bad)?),
            _ => unreachable!("every key of KEYS is handled"),
        }
    }
    for required in ["server", "size"] {
        if !seen.iter().any(|(k, _)| *k == required) {
            return Err(format!("{file}: no `{required} = ...` line (required)"));
        }
    }
    if let Some((_, line_no)) = seen.iter().find(|(k, _)| *k == "priority") {
        if !options.swap {
            return Err(format!("{file}:{line_no}: priority is only for swap = yes"));
        }
    }
    Ok(TargetConfig {
        options,
        secret_file,
    })
}

/// At most 40 characters of a bad line in an error.
fn truncate(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}
