// SPDX-License-Identifier: GPL-2.0

//! Target configuration files, `/etc/rswap/targets/NAME.conf`, for `rswapctl up NAME`
//! (and the `rswap@NAME.service` unit that runs it at boot).
//!
//! One `key = value` per line; blank lines and lines starting with `#` are ignored. The
//! keys are the options of `rswapctl add`: those of the settings
//! ([`crate::settings::SETTINGS`]; `server` and `size` required), then `swap` (`yes` or
//! `no`) and `priority` (with `swap = yes`). An unknown key, a key given twice, a bad
//! value or a missing required key is an error that names the file and line; nothing is
//! then done. `rswapctl replace` rewrites one entry of a file's `servers`, and nothing
//! else ([`with_server_replaced`]).

use crate::settings::{self, Kind, SETTINGS};
use crate::target::AddOptions;
use std::path::PathBuf;

/// The directory `rswapctl up` reads `NAME.conf` from.
pub const DEFAULT_DIR: &str = "/etc/rswap/targets";

/// The keys that are not settings of the module: `rswapctl`'s own.
const OWN_KEYS: [&str; 2] = ["swap", "priority"];

/// The keys a target file may have, in the documentation's order.
pub fn keys() -> Vec<&'static str> {
    SETTINGS
        .iter()
        .filter_map(|s| s.key)
        .chain(OWN_KEYS)
        .collect()
}

/// A target file's settings: `add`'s options (without the secret, which is read from
/// `secret_file` only when the target is brought up).
#[derive(Debug, Clone)]
pub struct TargetConfig {
    pub options: AddOptions,
    pub secret_file: Option<PathBuf>,
    /// `secret_files`, checked, read only when the target is brought up.
    pub secret_files: Option<String>,
}

fn priority(v: &str) -> Result<i32, String> {
    match v.parse::<i32>() {
        Ok(p) if (-1..=32767).contains(&p) => Ok(p),
        _ => Err(format!("{v:?} is not a swap priority (-1..32767)")),
    }
}

/// A `key = value` line of a target file: its key and value without the blanks around
/// them, and where the value starts in the line.
struct KeyValue<'a> {
    key: &'a str,
    value: &'a str,
    at: usize,
}

/// One line of a target file as [`parse_target_config`] reads it: `Ok(None)` for a blank
/// line or a comment, `Err` (the line without the blanks around it) for one without `=`.
/// The key is everything before the first `=`, the value everything after it.
fn key_value(raw: &str) -> Result<Option<KeyValue<'_>>, &str> {
    let line = raw.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let Some(eq) = raw.find('=') else {
        return Err(line);
    };
    let after = &raw[eq + 1..];
    let value = after.trim();
    Ok(Some(KeyValue {
        key: raw[..eq].trim(),
        value,
        at: eq + 1 + (after.len() - after.trim_start().len()),
    }))
}

/// Parses the text of `file` (named so in errors) for target `name`.
pub fn parse_target_config(name: &str, file: &str, text: &str) -> Result<TargetConfig, String> {
    let mut options = AddOptions {
        name: name.to_string(),
        ..AddOptions::default()
    };
    let mut secret_file = None;
    let mut secret_files = None;
    // The line of each key seen, for duplicates and `priority` without `swap`.
    let mut seen: Vec<(&str, usize)> = Vec::new();
    let keys = keys();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let at = |what: String| format!("{file}:{line_no}: {what}");
        let (key, value) = match key_value(raw) {
            Ok(None) => continue,
            Ok(Some(kv)) => (kv.key, kv.value),
            Err(line) => {
                return Err(at(format!(
                    "not a `key = value` line: {:?}",
                    truncate(line)
                )))
            }
        };
        let Some(&known) = keys.iter().find(|k| **k == key) else {
            return Err(at(format!(
                "unknown key {:?} (known: {})",
                truncate(key),
                keys.join(", ")
            )));
        };
        if let Some((_, first)) = seen.iter().find(|(k, _)| *k == known) {
            return Err(at(format!("{key} given twice (first on line {first})")));
        }
        seen.push((known, line_no));
        if value.is_empty() {
            return Err(at(format!("{key}: empty value")));
        }
        let bad = |e: String| at(format!("{key}: {e}"));
        match (key, settings::by_key(key)) {
            (_, Some(s)) if s.kind == Kind::SecretFile => {
                let path = PathBuf::from(value);
                if !path.is_absolute() {
                    return Err(bad(format!("{value:?} is not an absolute path")));
                }
                secret_file = Some(path);
            }
            (_, Some(s)) if s.kind == Kind::SecretFileList => {
                secret_files = Some(s.check(value).map_err(bad)?);
            }
            (_, Some(s)) => options.set(s, value).map_err(bad)?,
            ("swap", None) => options.swap = settings::yes_no(value).map_err(bad)?,
            ("priority", None) => options.priority = Some(priority(value).map_err(bad)?),
            _ => unreachable!("every key of keys() is handled"),
        }
    }
    let given = |key: &str| seen.iter().find(|(k, _)| *k == key).map(|(_, line)| *line);
    for required in SETTINGS.iter().filter(|s| s.required()) {
        let key = required.key.unwrap_or(required.attr);
        // A setting that may be given instead of it (`servers` for `server`).
        let other = SETTINGS
            .iter()
            .find(|s| s.instead_of == Some(required.attr))
            .and_then(|s| s.key);
        match (given(key), other.and_then(given)) {
            (Some(_), Some(line_no)) => {
                let other = other.unwrap_or_default();
                return Err(format!("{file}:{line_no}: {key} or {other}, not both"));
            }
            (None, None) => {
                let or = other
                    .map(|o| format!(" or `{o} = ...`"))
                    .unwrap_or_default();
                return Err(format!("{file}: no `{key} = ...` line{or} (required)"));
            }
            _ => {}
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
        secret_files,
    })
}

/// At most 40 characters of a bad line in an error.
fn truncate(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// The key of the list of servers, whose entries `rswapctl replace` replaces.
const SERVERS: &str = "servers";

/// Target file `text` (of target `name`, `file` in errors) with entry `leg` of its
/// `servers` replaced by `server`: every other byte as it was, the other lines, the
/// other entries and the blanks around the replaced one included. `Ok(None)` when the
/// file has no `servers` line. The file must be one `up` takes (its errors are
/// [`parse_target_config`]'s), with an entry `leg`.
pub fn with_server_replaced(
    name: &str,
    file: &str,
    text: &str,
    leg: usize,
    server: &str,
) -> Result<Option<String>, String> {
    let cfg = parse_target_config(name, file, text)?;
    if cfg.options.get(SERVERS).is_none() {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len() + server.len());
    // The lines as `lines()` cuts them for the parser, each with its line ending.
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let kv = match key_value(raw) {
            Ok(Some(kv)) if kv.key == SERVERS => kv,
            _ => {
                out.push_str(raw);
                continue;
            }
        };
        // Where each entry is in the line, without the blanks around it.
        let mut entries = Vec::new();
        let mut start = kv.at;
        for e in kv.value.split(',') {
            let blank = e.len() - e.trim_start().len();
            entries.push(start + blank..start + blank + e.trim().len());
            start += e.len() + 1;
        }
        let Some(entry) = entries.get(leg) else {
            let n = entries.len();
            let entries = if n == 1 { "entry" } else { "entries" };
            return Err(format!(
                "{file}:{}: {SERVERS} has {n} {entries}, none for leg {leg} (the first is leg 0)",
                i + 1
            ));
        };
        out.push_str(&raw[..entry.start]);
        out.push_str(server);
        out.push_str(&raw[entry.end..]);
    }
    Ok(Some(out))
}
