// SPDX-License-Identifier: GPL-2.0

//! Parsers for what the kernel shows: a target's `state` (its line, and a line per leg of
//! a disk over several servers), its `secret` attribute and its 0/1 ones (`encrypt`,
//! `sync_swapin`), its `stats` and `/proc/swaps`; a secret file's content; the
//! human-readable sizes of the table.

use std::fmt;

/// A parsed `state` attribute of an enabled target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// `connected`, `recovering`, `disconnected`, `degraded` or `dead` (any word is kept,
    /// so that a newer module's summary still lists).
    pub summary: String,
    pub queues_live: u32,
    pub queues_total: u32,
    pub region: u64,
    pub epoch: u64,
    pub length: u64,
    pub recovering: u32,
    pub dead: u32,
    pub recoveries: u64,
    pub retried: u64,
}

/// What the `state` attribute says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetState {
    Disabled,
    Enabled(State),
}

impl TargetState {
    /// The summary word: `disabled` or the enabled state's summary.
    pub fn summary(&self) -> &str {
        match self {
            TargetState::Disabled => "disabled",
            TargetState::Enabled(s) => &s.summary,
        }
    }

    pub fn enabled(&self) -> Option<&State> {
        match self {
            TargetState::Disabled => None,
            TargetState::Enabled(s) => Some(s),
        }
    }
}

/// Why a `state` line did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateError(pub String);

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unexpected state line: {}", self.0)
    }
}

fn number(key: &str, value: &str) -> Result<u64, StateError> {
    let parsed = match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    parsed.map_err(|_| StateError(format!("{key}={value} is not a number")))
}

fn small(key: &str, value: &str) -> Result<u32, StateError> {
    u32::try_from(number(key, value)?).map_err(|_| StateError(format!("{key}={value} too large")))
}

/// A `queues=L/N` value of `state` (the first line's or a leg's): (live, total).
fn live_of_total(key: &str, value: &str) -> Result<(u32, u32), StateError> {
    let Some((live, total)) = value.split_once('/') else {
        return Err(StateError(format!("{key}={value} is not L/N")));
    };
    Ok((small(key, live)?, small(key, total)?))
}

/// Parses the `state` attribute: `disabled`, or `SUMMARY queues=L/N region=.. epoch=..
/// length=.. recovering=R dead=D recoveries=K retried=M`. Unknown `key=value`
/// fields are ignored (a newer module may add some); a missing known one is an error.
/// Only the first line is read: a disk over several servers adds a line per server,
/// which [`parse_state_legs`] reads.
pub fn parse_state(text: &str) -> Result<TargetState, StateError> {
    let line = text.lines().next().unwrap_or("").trim();
    let mut words = line.split_whitespace();
    let summary = match words.next() {
        None => return Err(StateError("empty".into())),
        Some("disabled") => return Ok(TargetState::Disabled),
        Some(w) if w.contains('=') => return Err(StateError(format!("no summary in {line:?}"))),
        Some(w) => w.to_string(),
    };
    let mut queues = None;
    let (mut region, mut epoch, mut length) = (None, None, None);
    let (mut recovering, mut dead, mut recoveries, mut retried) = (None, None, None, None);
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(StateError(format!("{word:?} is not key=value")));
        };
        match key {
            "queues" => queues = Some(live_of_total(key, value)?),
            "region" => region = Some(number(key, value)?),
            "epoch" => epoch = Some(number(key, value)?),
            "length" => length = Some(number(key, value)?),
            "recovering" => recovering = Some(small(key, value)?),
            "dead" => dead = Some(small(key, value)?),
            "recoveries" => recoveries = Some(number(key, value)?),
            "retried" => retried = Some(number(key, value)?),
            _ => {}
        }
    }
    let missing = |key: &str| StateError(format!("no {key}= in {line:?}"));
    let (queues_live, queues_total) = queues.ok_or_else(|| missing("queues"))?;
    Ok(TargetState::Enabled(State {
        summary,
        queues_live,
        queues_total,
        region: region.ok_or_else(|| missing("region"))?,
        epoch: epoch.ok_or_else(|| missing("epoch"))?,
        length: length.ok_or_else(|| missing("length"))?,
        recovering: recovering.ok_or_else(|| missing("recovering"))?,
        dead: dead.ok_or_else(|| missing("dead"))?,
        recoveries: recoveries.ok_or_else(|| missing("recoveries"))?,
        retried: retried.ok_or_else(|| missing("retried"))?,
    }))
}

/// A leg's line of the `state` attribute of a disk over several servers: `legN SERVER
/// WORD queues=L/N region=.. epoch=..`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegState {
    /// N: the server's index in `servers`.
    pub leg: u32,
    /// As the module prints it: `192.0.2.2:7471`, `[fd00::2]:7471`.
    pub server: String,
    /// `out` once the leg is out of the disk, else its queues' summary (`connected`,
    /// `recovering`, `degraded`, `dead`, `disconnected`; any word is kept).
    pub state: String,
    pub queues_live: u32,
    pub queues_total: u32,
    pub region: u64,
    pub epoch: u64,
}

/// The `N` of a line's first word `PREFIXN` (`leg3`, `queue0`).
fn indexed(first: &str, prefix: &str) -> Option<u32> {
    first.strip_prefix(prefix)?.parse().ok()
}

/// One leg line of `state`; `leg` is its index.
fn leg_state(leg: u32, line: &str) -> Result<LegState, StateError> {
    let mut words = line.split_whitespace().skip(1);
    let mut word = |what: &str| match words.next() {
        Some(w) if !w.contains('=') => Ok(w.to_string()),
        _ => Err(StateError(format!("no {what} in {line:?}"))),
    };
    let (server, state) = (word("server")?, word("state word")?);
    let (mut queues, mut region, mut epoch) = (None, None, None);
    for w in words {
        let Some((key, value)) = w.split_once('=') else {
            return Err(StateError(format!("{w:?} is not key=value")));
        };
        match key {
            "queues" => queues = Some(live_of_total(key, value)?),
            "region" => region = Some(number(key, value)?),
            "epoch" => epoch = Some(number(key, value)?),
            _ => {}
        }
    }
    let missing = |key: &str| StateError(format!("no {key}= in {line:?}"));
    let (queues_live, queues_total) = queues.ok_or_else(|| missing("queues"))?;
    Ok(LegState {
        leg,
        server,
        state,
        queues_live,
        queues_total,
        region: region.ok_or_else(|| missing("region"))?,
        epoch: epoch.ok_or_else(|| missing("epoch"))?,
    })
}

/// Parses the leg lines of the `state` attribute of a disk over several servers (those
/// after the first line whose first word is `legN`; see [`LegState`]), in their order.
/// A plain target's `state`, a disabled one's and a module's without legs have none: an
/// empty list. Unknown `key=value` fields are ignored; a leg line without its server,
/// state word or a known field is an error.
pub fn parse_state_legs(text: &str) -> Result<Vec<LegState>, StateError> {
    text.lines()
        .skip(1)
        .map(str::trim)
        .filter_map(|line| {
            let leg = indexed(line.split_whitespace().next()?, "leg")?;
            Some(leg_state(leg, line))
        })
        .collect()
}

/// One line of `/proc/swaps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapEntry {
    pub filename: String,
    pub size_kib: u64,
    pub used_kib: u64,
    pub priority: i32,
}

/// Parses `/proc/swaps` (`Filename Type Size Used Priority`, sizes in KiB). Lines that
/// do not parse (the header) are skipped.
pub fn parse_swaps(text: &str) -> Vec<SwapEntry> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 5 {
                return None;
            }
            Some(SwapEntry {
                filename: f[0].to_string(),
                size_kib: f[2].parse().ok()?,
                used_kib: f[3].parse().ok()?,
                priority: f[4].parse().ok()?,
            })
        })
        .collect()
}

/// Shortest secret in hexadecimal digits (16 bytes, the kernel's minimum).
pub const SECRET_MIN_DIGITS: usize = 32;
/// Longest secret in hexadecimal digits (64 bytes, the kernel's maximum).
pub const SECRET_MAX_DIGITS: usize = 128;

/// A target's secret as its `secret` attribute takes it: 32 to 128 hexadecimal digits.
///
/// It cannot leak by accident: it has no `Display` and no `Serialize`, its `Debug` shows
/// only its length, its digits are private (only the attribute write in `target` reads
/// them) and they are wiped when it is dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    /// ASCII hexadecimal digits, as given (the kernel takes either case).
    digits: Vec<u8>,
}

impl Secret {
    /// Its length in bytes (half its digits).
    pub fn len_bytes(&self) -> usize {
        self.digits.len() / 2
    }

    /// The digits, for writing the attribute; nothing else may call this.
    pub(crate) fn digits(&self) -> &str {
        // Only ASCII hexadecimal digits get in (`parse_secret`).
        std::str::from_utf8(&self.digits).unwrap_or_default()
    }
}

/// A secret's bytes, decoded from its digits (the payload of the keyring key `target`
/// hands the module); wiped when dropped. Its `Debug` shows only its length.
pub(crate) struct SecretBytes(Vec<u8>);

impl SecretBytes {
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for SecretBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretBytes({} bytes)", self.0.len())
    }
}

impl Drop for SecretBytes {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

impl Secret {
    /// The bytes its digits spell, for the keyring; nothing else may call this.
    pub(crate) fn bytes(&self) -> SecretBytes {
        // Preallocated: the vector never moves its bytes (and leaves no unwiped copy).
        let mut out = Vec::with_capacity(self.digits.len() / 2);
        for pair in self.digits.chunks_exact(2) {
            let digit = |d: u8| char::from(d).to_digit(16).unwrap_or(0) as u8;
            out.push(digit(pair[0]) << 4 | digit(pair[1]));
        }
        SecretBytes(out)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({} bytes)", self.len_bytes())
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        wipe(&mut self.digits);
    }
}

/// Overwrites bytes that held (part of) a secret.
pub(crate) fn wipe(bytes: &mut [u8]) {
    bytes.fill(0);
    // Keeps the wipe of memory that is about to be freed from being optimised away.
    std::hint::black_box(&*bytes);
}

/// Why a secret file's content is not a secret. The messages never quote the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretError {
    Empty,
    NotHex,
    OddDigits,
    Length,
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SecretError::Empty => "it is empty",
            SecretError::NotHex => "it is not only hexadecimal digits (one secret, no comments)",
            SecretError::OddDigits => "it has an odd number of hexadecimal digits",
            SecretError::Length => "a secret is 16 to 64 bytes (32 to 128 hexadecimal digits)",
        })
    }
}

/// Parses a secret file's content: 32 to 128 hexadecimal digits (an even number, either
/// case) with optional whitespace (a trailing newline) around them.
pub fn parse_secret(content: &[u8]) -> Result<Secret, SecretError> {
    let digits = content.trim_ascii();
    if digits.is_empty() {
        return Err(SecretError::Empty);
    }
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(SecretError::NotHex);
    }
    if digits.len() % 2 != 0 {
        return Err(SecretError::OddDigits);
    }
    if !(SECRET_MIN_DIGITS..=SECRET_MAX_DIGITS).contains(&digits.len()) {
        return Err(SecretError::Length);
    }
    Ok(Secret {
        digits: digits.to_vec(),
    })
}

/// The `secret` attribute: `(set)` or `(unset)`; anything else (a newer module's word)
/// is not known.
pub fn parse_secret_attr(text: &str) -> Option<bool> {
    match text.trim() {
        "(set)" => Some(true),
        "(unset)" => Some(false),
        _ => None,
    }
}

/// A 0/1 attribute (`encrypt`, `sync_swapin`): `1` or `0`; anything else is not known.
pub fn parse_bool_attr(text: &str) -> Option<bool> {
    match text.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// The encryption line of an enabled target's `stats` attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encryption {
    /// `encryption off`.
    Off,
    /// `encryption CIPHER sealed=N opened=N auth_failures=N`.
    On {
        /// `aes-256-gcm` (any word is kept, so that a newer module's cipher still shows).
        cipher: String,
        /// Blocks sealed on their way out.
        sealed: u64,
        /// Blocks read back that opened (authenticated and decrypted).
        opened: u64,
        /// Blocks read back that did not open: altered, moved or replayed by the server
        /// (each read failed with EIO).
        auth_failures: u64,
    },
}

impl Encryption {
    /// `auth_failures=` of an encrypted disk; `None` when encryption is off.
    pub fn auth_failures(&self) -> Option<u64> {
        match self {
            Encryption::Off => None,
            Encryption::On { auth_failures, .. } => Some(*auth_failures),
        }
    }
}

/// Why the encryption line of `stats` did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsError(pub String);

impl fmt::Display for StatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unexpected stats line: {}", self.0)
    }
}

/// Finds and parses the line of a target's `stats` attribute that starts with the word
/// `encryption`: `encryption off`, or `encryption CIPHER sealed=N opened=N
/// auth_failures=N`. `Ok(None)` when there is no such line (a disabled target, whose
/// `stats` is empty, or a module older than encryption). Unknown `key=value` fields are
/// ignored (a newer module may add some); a missing known one is an error.
pub fn parse_stats_encryption(stats: &str) -> Result<Option<Encryption>, StatsError> {
    let Some(line) = stats
        .lines()
        .map(str::trim)
        .find(|l| l.split_whitespace().next() == Some("encryption"))
    else {
        return Ok(None);
    };
    let mut words = line.split_whitespace().skip(1);
    let cipher = match words.next() {
        None => return Err(StatsError(format!("no cipher in {line:?}"))),
        Some("off") => return Ok(Some(Encryption::Off)),
        Some(w) if w.contains('=') => return Err(StatsError(format!("no cipher in {line:?}"))),
        Some(w) => w.to_string(),
    };
    let (mut sealed, mut opened, mut auth_failures) = (None, None, None);
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(StatsError(format!("{word:?} is not key=value")));
        };
        let slot = match key {
            "sealed" => &mut sealed,
            "opened" => &mut opened,
            "auth_failures" => &mut auth_failures,
            _ => continue,
        };
        *slot = Some(
            value
                .parse::<u64>()
                .map_err(|_| StatsError(format!("{key}={value} is not a number")))?,
        );
    }
    let missing = |key: &str| StatsError(format!("no {key}= in {line:?}"));
    Ok(Some(Encryption::On {
        cipher,
        sealed: sealed.ok_or_else(|| missing("sealed"))?,
        opened: opened.ok_or_else(|| missing("opened"))?,
        auth_failures: auth_failures.ok_or_else(|| missing("auth_failures"))?,
    }))
}

/// A latency histogram line of `stats` (`read_latency_us le8=0 le16=3 ... inf=0`): the
/// requests of each bucket, not cumulative (`leN`: more than the previous bound and at
/// most N microseconds; `inf`: the rest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    /// `(bound in microseconds, requests)`, bounds rising; `None` is `inf`, the last.
    pub buckets: Vec<(Option<u64>, u64)>,
}

impl Histogram {
    /// The requests of all buckets.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|(_, n)| n).sum()
    }
}

/// The late-binding line of the `stats` of a disk over several servers: `code K+R
/// extra_reads=D early_reads=N late_leg_reads=M`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeLine {
    /// `K+R`, as the module prints it.
    pub code: String,
    /// Parity fragments (or copies) a read asks beyond the k it needs.
    pub extra_reads: u64,
    /// Reads that ended before their slowest leg was back.
    pub early_reads: u64,
    /// Legs' reads that came back after their read had ended.
    pub late_leg_reads: u64,
}

/// A leg's line of the `stats` of a disk over several servers: `legN reads=.. writes=..
/// errors=.. late=.. requeues=.. recoveries=.. inflight=.. dirty=.. resynced=.. altered=..`
/// (`dirty` and `resynced` from a module that rebuilds a leg that is back, `altered` from
/// one that encrypts such a disk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegStats {
    /// N: the server's index in `servers`.
    pub leg: u32,
    /// The leg's reads and writes that came back with success.
    pub reads: u64,
    pub writes: u64,
    /// Its failed ones.
    pub errors: u64,
    /// Its reads that came back after their read had ended.
    pub late: u64,
    /// Its queues' requeues, reconnects and work requests in flight.
    pub requeues: u64,
    pub recoveries: u64,
    pub inflight: u64,
    /// Its groups (32 KiB) written while it was away, waiting to be rebuilt on it; `None`
    /// from a module that does not show them.
    pub dirty: Option<u64>,
    /// Its groups rebuilt on it since `enable`; `None` likewise.
    pub resynced: Option<u64>,
    /// Blocks of an encrypted disk that verified only once rebuilt without its fragment:
    /// its server altered its memory; `None` from a module that does not show them.
    pub altered: Option<u64>,
}

/// A target's `stats` attribute (Documentation/configuration.md, "Counters").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stats {
    /// The `key=value` fields of the `total` line, in its order.
    pub total: Vec<(String, u64)>,
    /// `read_latency_us`: reads, from the block layer's start of the request to its end.
    pub read_latency: Option<Histogram>,
    /// `write_latency_us`: writes, likewise.
    pub write_latency: Option<Histogram>,
    /// `latency_us`: reads and writes together, from posting the work request to its
    /// completion (a module older than the two lines above).
    pub latency: Option<Histogram>,
    pub encryption: Option<Encryption>,
    /// The `code` line of a disk over several servers.
    pub code: Option<CodeLine>,
    /// The `legN` lines of a disk over several servers, in their order.
    pub legs: Vec<LegStats>,
    /// The `queueN` lines: the queue's index and its fields.
    pub queues: Vec<(u32, Vec<(String, u64)>)>,
}

impl Stats {
    /// Field `key` of the `total` line.
    pub fn total(&self, key: &str) -> Option<u64> {
        optional(&self.total, key)
    }
}

/// The `key=N` fields of a line after its first word.
fn fields(line: &str) -> Result<Vec<(String, u64)>, StatsError> {
    line.split_whitespace()
        .skip(1)
        .map(|word| {
            let (key, value) = word
                .split_once('=')
                .ok_or_else(|| StatsError(format!("{word:?} is not key=value")))?;
            let n = value
                .parse::<u64>()
                .map_err(|_| StatsError(format!("{key}={value} is not a number")))?;
            Ok((key.to_string(), n))
        })
        .collect()
}

/// Field `key` of `fields`, if the line has it.
fn optional(fields: &[(String, u64)], key: &str) -> Option<u64> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// Field `key` of `fields`, which a line must have.
fn field(fields: &[(String, u64)], key: &str, line: &str) -> Result<u64, StatsError> {
    optional(fields, key).ok_or_else(|| StatsError(format!("no {key}= in {line:?}")))
}

/// The `code K+R extra_reads=.. early_reads=.. late_leg_reads=..` line.
fn code_line(line: &str) -> Result<CodeLine, StatsError> {
    let code = match line.split_whitespace().nth(1) {
        Some(c) if !c.contains('=') => c.to_string(),
        _ => return Err(StatsError(format!("no code in {line:?}"))),
    };
    // The fields after the code: `fields` skips the first word of what it is given.
    let f = fields(
        &line
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" "),
    )?;
    Ok(CodeLine {
        extra_reads: field(&f, "extra_reads", line)?,
        early_reads: field(&f, "early_reads", line)?,
        late_leg_reads: field(&f, "late_leg_reads", line)?,
        code,
    })
}

/// A `legN reads=.. ...` line of `stats`.
fn leg_stats(leg: u32, line: &str) -> Result<LegStats, StatsError> {
    let f = fields(line)?;
    let get = |key| field(&f, key, line);
    Ok(LegStats {
        leg,
        reads: get("reads")?,
        writes: get("writes")?,
        errors: get("errors")?,
        late: get("late")?,
        requeues: get("requeues")?,
        recoveries: get("recoveries")?,
        inflight: get("inflight")?,
        dirty: optional(&f, "dirty"),
        resynced: optional(&f, "resynced"),
        altered: optional(&f, "altered"),
    })
}

/// A histogram line's fields: `leN=..` with rising bounds, then `inf=..`.
fn histogram(line: &str) -> Result<Histogram, StatsError> {
    let mut buckets: Vec<(Option<u64>, u64)> = Vec::new();
    for (key, n) in fields(line)? {
        if buckets.last().is_some_and(|(bound, _)| bound.is_none()) {
            return Err(StatsError(format!("{key}= after inf= in {line:?}")));
        }
        let bound = match key.as_str() {
            "inf" => None,
            _ => match key.strip_prefix("le").map(str::parse::<u64>) {
                Some(Ok(b)) if buckets.last().is_none_or(|(prev, _)| prev < &Some(b)) => Some(b),
                _ => {
                    return Err(StatsError(format!(
                        "{key}= is not a rising leN in {line:?}"
                    )))
                }
            },
        };
        buckets.push((bound, n));
    }
    if buckets.last().is_none_or(|(bound, _)| bound.is_some()) {
        return Err(StatsError(format!("no inf= at the end of {line:?}")));
    }
    Ok(Histogram { buckets })
}

/// Parses a target's `stats` attribute: the `total` line, the latency histograms (the
/// `read_latency_us` and `write_latency_us` pair, or a module's older single
/// `latency_us`), the encryption line (as [`parse_stats_encryption`]), the `code` and
/// `legN` lines of a disk over several servers (their unknown `key=value` fields
/// ignored, a missing known one an error but a leg's `dirty`, `resynced` and `altered`, which an
/// older module does not print) and the `queueN` lines. Lines it does not know (the `queues A..B: not shown` of a full page, a newer
/// module's) are skipped; a known line that does not parse is an error. A disabled
/// target's `stats` is empty: all empty.
pub fn parse_stats(stats: &str) -> Result<Stats, StatsError> {
    let mut out = Stats {
        encryption: parse_stats_encryption(stats)?,
        ..Stats::default()
    };
    for line in stats.lines().map(str::trim) {
        let Some(first) = line.split_whitespace().next() else {
            continue;
        };
        match first {
            "total" => out.total = fields(line)?,
            "read_latency_us" => out.read_latency = Some(histogram(line)?),
            "write_latency_us" => out.write_latency = Some(histogram(line)?),
            "latency_us" => out.latency = Some(histogram(line)?),
            "code" => out.code = Some(code_line(line)?),
            _ => {
                if let Some(q) = indexed(first, "queue") {
                    out.queues.push((q, fields(line)?));
                } else if let Some(leg) = indexed(first, "leg") {
                    out.legs.push(leg_stats(leg, line)?);
                }
            }
        }
    }
    Ok(out)
}

/// Bytes in the kernel's suffixes (binary): `8G`, `1.5G`, `512K`, `100B`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 5] = [
        ("P", 1 << 50),
        ("T", 1 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ];
    for (suffix, unit) in UNITS {
        if bytes >= unit {
            return if bytes % unit == 0 {
                format!("{}{suffix}", bytes / unit)
            } else {
                format!("{:.1}{suffix}", bytes as f64 / unit as f64)
            };
        }
    }
    format!("{bytes}B")
}

/// A time in seconds, short, whole seconds rounded down: `0s`, `59s`, `1m05s`, `2h03m`,
/// `3d04h`.
pub fn human_seconds(secs: f64) -> String {
    // Not a number or negative: nothing.
    let s = if secs.is_finite() && secs > 0.0 {
        secs.min(u64::MAX as f64) as u64
    } else {
        0
    };
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86400, s % 86400 / 3600),
    }
}

/// Whether `modules_dep` (a kernel's `modules.dep`: `PATH: DEPENDENCIES` per line) lists
/// module `name` (`.../name.ko`, compressed or not).
pub fn lists_module(modules_dep: &str, name: &str) -> bool {
    modules_dep.lines().any(|l| {
        let path = l.split(':').next().unwrap_or_default();
        let file = path.rsplit('/').next().unwrap_or_default();
        let base = [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
            .iter()
            .find_map(|ext| file.strip_suffix(ext));
        base == Some(name)
    })
}

/// Whether `mounts` (the text of `/proc/self/mounts`) has a file system of type `fstype`
/// mounted on `dir`. Mount points with blanks are octal-escaped there (`\040`).
pub fn is_mounted(mounts: &str, dir: &std::path::Path, fstype: &str) -> bool {
    let want = dir
        .to_string_lossy()
        .replace('\\', "\\134")
        .replace(' ', "\\040")
        .replace('\t', "\\011")
        .replace('\n', "\\012");
    mounts.lines().any(|l| {
        let mut f = l.split(' ');
        let (_, point, ty) = (f.next(), f.next(), f.next());
        point == Some(want.as_str()) && ty == Some(fstype)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(summary: &str) -> String {
        format!(
            "{summary} queues=1/2 region=7 epoch=3 length=8589934592 \
             recovering=1 dead=0 recoveries=4 retried=12\n"
        )
    }

    #[test]
    fn disabled() {
        assert_eq!(parse_state("disabled\n"), Ok(TargetState::Disabled));
        assert_eq!(TargetState::Disabled.summary(), "disabled");
    }

    #[test]
    fn older_module_rkey_ignored() {
        // Earlier modules also showed the region's rkey: still parsed, the key ignored.
        let old = "connected queues=2/2 region=7 epoch=3 rkey=0x1a2b length=8589934592 \
                   recovering=0 dead=0 recoveries=0 retried=0";
        let TargetState::Enabled(s) = parse_state(old).unwrap() else {
            panic!("not enabled")
        };
        assert_eq!((s.region, s.epoch, s.length), (7, 3, 8589934592));
    }

    #[test]
    fn every_summary() {
        for summary in [
            "connected",
            "recovering",
            "disconnected",
            "degraded",
            "dead",
        ] {
            let st = parse_state(&line(summary)).unwrap();
            assert_eq!(st.summary(), summary);
            assert_eq!(
                st.enabled().unwrap(),
                &State {
                    summary: summary.to_string(),
                    queues_live: 1,
                    queues_total: 2,
                    region: 7,
                    epoch: 3,
                    length: 8 << 30,
                    recovering: 1,
                    dead: 0,
                    recoveries: 4,
                    retried: 12,
                }
            );
        }
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let st = parse_state(&format!("{} future=9", line("connected").trim())).unwrap();
        // A disk over several servers: its code on the first line, then a line per server.
        let legs = format!(
            "{} code=2+0 legs_up=2/2\nleg0 192.0.2.2:7471 connected queues=2/2 region=5 \
             epoch=1\nleg1 [fd00::3]:7471 connected queues=2/2 region=6 epoch=1\n",
            line("connected").trim()
        );
        assert_eq!(parse_state(&legs), parse_state(&line("connected")));
        assert_eq!(st.enabled().unwrap().retried, 12);
    }

    #[test]
    fn bad_lines() {
        assert!(parse_state("").is_err());
        assert!(parse_state("queues=1/1").is_err());
        assert!(parse_state("connected queues=1").is_err());
        assert!(parse_state("connected queues=1/x").is_err());
        assert!(parse_state("connected queues=1/1 region=7").is_err());
        assert!(parse_state("connected bogus").is_err());
        let e = parse_state(&line("connected").replace("epoch=3", "epoch=z")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unexpected state line: epoch=z is not a number"
        );
    }

    /// The `state` of a 4+2 disk with leg 1 out, as the module prints it; leg 3 on an
    /// IPv6 server, leg 5 with a field of a newer module.
    const STATE_4_2: &str = "degraded queues=10/12 region=0 epoch=0 length=16777216 \
        recovering=0 dead=2 recoveries=0 retried=3 code=4+2 legs_up=5/6\n\
        leg0 192.0.2.2:7471 connected queues=2/2 region=6104377862120398185 epoch=1 dirty=0\n\
        leg1 192.0.2.3:7471 out queues=0/2 region=1478130930843524612 epoch=1 dirty=4\n\
        leg2 192.0.2.4:7471 connected queues=2/2 region=12370173478124151043 epoch=1 dirty=0\n\
        leg3 [fd00::2]:7471 connected queues=2/2 region=8630591549093106726 epoch=1 dirty=0\n\
        leg4 192.0.2.6:7471 connected queues=2/2 region=5 epoch=2 dirty=0\n\
        leg5 192.0.2.7:7000 connected queues=2/2 region=6 epoch=1 dirty=1 future=9\n";

    #[test]
    fn state_legs() {
        let legs = parse_state_legs(STATE_4_2).unwrap();
        assert_eq!(legs.len(), 6);
        assert_eq!(
            legs[1],
            LegState {
                leg: 1,
                server: "192.0.2.3:7471".into(),
                state: "out".into(),
                queues_live: 0,
                queues_total: 2,
                region: 1478130930843524612,
                epoch: 1,
            }
        );
        assert_eq!(legs[3].server, "[fd00::2]:7471");
        assert_eq!(legs[2].region, 12370173478124151043);
        assert_eq!((legs[5].leg, legs[5].epoch), (5, 1));
        // The first line is the disk's, as before.
        let st = parse_state(STATE_4_2).unwrap();
        assert_eq!(st.enabled().unwrap().queues_live, 10);
        // A plain target, a disabled one: no legs.
        assert_eq!(parse_state_legs(&line("connected")), Ok(vec![]));
        assert_eq!(parse_state_legs("disabled\n"), Ok(vec![]));
        assert_eq!(parse_state_legs(""), Ok(vec![]));
        // Lines that are not `legN ...` are not legs.
        let other = format!("{}legs 2\nlegx a b\nfuture line\n", line("connected"));
        assert_eq!(parse_state_legs(&other), Ok(vec![]));
    }

    #[test]
    fn state_legs_bad_lines() {
        for (leg, why) in [
            ("leg0", "no server in \"leg0\""),
            ("leg0 192.0.2.2:7471", "no state word in "),
            ("leg0 queues=2/2 region=1 epoch=1", "no server in "),
            (
                "leg0 192.0.2.2:7471 queues=2/2 region=1 epoch=1",
                "no state word in ",
            ),
            (
                "leg0 192.0.2.2:7471 connected queues=2 region=1 epoch=1",
                "queues=2 is not L/N",
            ),
            (
                "leg0 192.0.2.2:7471 connected queues=2/2 epoch=1",
                "no region= in ",
            ),
            (
                "leg0 192.0.2.2:7471 connected queues=2/2 region=1",
                "no epoch= in ",
            ),
            (
                "leg0 192.0.2.2:7471 connected queues=2/2 region=x epoch=1",
                "region=x is not a number",
            ),
            (
                "leg0 192.0.2.2:7471 connected queues=2/2 region=1 epoch=1 bogus",
                "\"bogus\" is not key=value",
            ),
        ] {
            let text = format!("{}{leg}\n", line("connected"));
            let e = parse_state_legs(&text).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("unexpected state line: {why}")),
                "{leg:?}: {e}"
            );
        }
    }

    /// The `stats` of a 4+2 disk (fewer latency buckets), as the module prints it; leg 5
    /// with a field of a newer module.
    const STATS_4_2: &str = "total reads=5120 writes=1536 read_bytes=20971520 \
        write_bytes=6291456 errors=0 requeues=0 recoveries=0 inflight=0 registered_reads=0\n\
        read_latency_us le8=0 le16=2 inf=0\n\
        write_latency_us le8=1 le16=0 inf=0\n\
        encryption off\n\
        code 4+2 extra_reads=1 early_reads=5120 late_leg_reads=4980\n\
        leg0 reads=2570 writes=1536 errors=0 late=812 requeues=0 recoveries=0 inflight=0 \
        dirty=0 resynced=0\n\
        leg1 reads=0 writes=0 errors=7 late=0 requeues=1 recoveries=0 inflight=0 dirty=4 \
        resynced=0 altered=2\n\
        leg2 reads=2570 writes=1536 errors=0 late=800 requeues=0 recoveries=0 inflight=0 \
        dirty=0 resynced=0\n\
        leg3 reads=2570 writes=1536 errors=0 late=801 requeues=0 recoveries=0 inflight=0 \
        dirty=0 resynced=0\n\
        leg4 reads=2570 writes=1536 errors=0 late=790 requeues=0 recoveries=2 inflight=0 \
        dirty=0 resynced=8\n\
        leg5 reads=2570 writes=1536 errors=0 late=1777 requeues=0 recoveries=0 inflight=2 \
        dirty=1 resynced=0 new=1\n\
        queue0 reads=2575 writes=770 read_bytes=10547200\n\
        queue1 reads=2545 writes=766 read_bytes=10424320\n";

    #[test]
    fn stats_of_a_disk_over_several_servers() {
        let s = parse_stats(STATS_4_2).unwrap();
        assert_eq!(
            s.code,
            Some(CodeLine {
                code: "4+2".into(),
                extra_reads: 1,
                early_reads: 5120,
                late_leg_reads: 4980
            })
        );
        assert_eq!(s.legs.len(), 6);
        assert_eq!(
            s.legs[1],
            LegStats {
                leg: 1,
                reads: 0,
                writes: 0,
                errors: 7,
                late: 0,
                requeues: 1,
                recoveries: 0,
                inflight: 0,
                dirty: Some(4),
                resynced: Some(0),
                altered: Some(2)
            }
        );
        assert_eq!(
            (s.legs[5].leg, s.legs[5].late, s.legs[5].inflight),
            (5, 1777, 2)
        );
        assert_eq!((s.legs[4].dirty, s.legs[4].resynced), (Some(0), Some(8)));
        assert_eq!((s.legs[5].dirty, s.legs[5].resynced), (Some(1), Some(0)));
        // The rest as on a plain disk.
        assert_eq!(s.total("reads"), Some(5120));
        assert_eq!(s.encryption, Some(Encryption::Off));
        assert_eq!(s.queues.len(), 2);
        // A plain disk's: no code line, no legs.
        let plain = parse_stats(STATS_PAIR).unwrap();
        assert_eq!((plain.code, plain.legs), (None, vec![]));
    }

    #[test]
    fn stats_of_legs_of_an_older_module() {
        // No `dirty` nor `resynced`: the other counters, those `None`.
        let s = parse_stats(
            "code 2+1 extra_reads=0 early_reads=0 late_leg_reads=0\n\
             leg0 reads=9 writes=4 errors=0 late=3 requeues=0 recoveries=1 inflight=0\n\
             leg1 reads=9 writes=4 errors=0 late=0 requeues=0 recoveries=0 inflight=1 dirty=2\n",
        )
        .unwrap();
        assert_eq!(
            s.legs[0],
            LegStats {
                leg: 0,
                reads: 9,
                writes: 4,
                errors: 0,
                late: 3,
                requeues: 0,
                recoveries: 1,
                inflight: 0,
                dirty: None,
                resynced: None,
                altered: None
            }
        );
        // Each of the two on its own.
        assert_eq!((s.legs[1].dirty, s.legs[1].resynced), (Some(2), None));
    }

    #[test]
    fn stats_of_legs_bad_lines() {
        for (line, why) in [
            ("code", "no code in \"code\""),
            (
                "code extra_reads=1 early_reads=0 late_leg_reads=0",
                "no code in ",
            ),
            (
                "code 4+2 extra_reads=1 early_reads=0",
                "no late_leg_reads= in ",
            ),
            (
                "code 4+2 extra_reads=1 early_reads=x late_leg_reads=0",
                "early_reads=x is not a number",
            ),
            (
                "code 4+2 extra_reads=1 early_reads=0 late_leg_reads=0 junk",
                "\"junk\" is not key=value",
            ),
            (
                "leg0 reads=1 writes=1 errors=0 requeues=0 recoveries=0 inflight=0",
                "no late= in ",
            ),
            ("leg3 reads=-1", "reads=-1 is not a number"),
            (
                "leg0 reads=1 writes=1 errors=0 late=0 requeues=0 recoveries=0 inflight=0 dirty=x",
                "dirty=x is not a number",
            ),
            (
                "leg3 192.0.2.2:7471 connected",
                "\"192.0.2.2:7471\" is not key=value",
            ),
        ] {
            let e = parse_stats(line).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("unexpected stats line: {why}")),
                "{line:?}: {e}"
            );
        }
        // `legs ...`, `legx ...`: not leg lines, skipped.
        assert_eq!(parse_stats("legs 1\nlegx a\n").unwrap(), Stats::default());
    }

    #[test]
    fn swaps() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/rswap0                             partition\t8388604\t\t1024\t\t100\n\
                    /swapfile                               file\t\t1048572\t\t0\t\t-2\n";
        let e = parse_swaps(text);
        assert_eq!(e.len(), 2);
        assert_eq!(
            e[0],
            SwapEntry {
                filename: "/dev/rswap0".into(),
                size_kib: 8388604,
                used_kib: 1024,
                priority: 100
            }
        );
        assert_eq!(e[1].priority, -2);
    }

    #[test]
    fn secrets() {
        let hex = "00112233445566778899aabbccddeeff";
        let s = parse_secret(format!("  {hex}\n\n").as_bytes()).unwrap();
        assert_eq!(s.digits(), hex);
        assert_eq!(s.len_bytes(), 16);
        assert_eq!(format!("{s:?}"), "Secret(16 bytes)");
        let upper = hex.to_uppercase().repeat(4);
        assert_eq!(parse_secret(upper.as_bytes()).unwrap().len_bytes(), 64);
        for (content, e) in [
            ("".to_string(), SecretError::Empty),
            (" \n".to_string(), SecretError::Empty),
            (format!("{hex}g"), SecretError::NotHex),
            (format!("{hex} {hex}"), SecretError::NotHex),
            (format!("0x{hex}"), SecretError::NotHex),
            (format!("# comment\n{hex}"), SecretError::NotHex),
            (format!("{hex}0"), SecretError::OddDigits),
            (hex[..30].to_string(), SecretError::Length),
            (hex.repeat(4) + "00", SecretError::Length),
        ] {
            assert_eq!(parse_secret(content.as_bytes()), Err(e), "{content:?}");
        }
        assert_eq!(parse_secret(b"\xff\xfe"), Err(SecretError::NotHex));
    }

    #[test]
    fn secret_bytes() {
        let s = parse_secret(b"000102030405060708090a0B0c0D0e0F\n").unwrap();
        let b = s.bytes();
        assert_eq!(b.as_slice(), (0u8..16).collect::<Vec<_>>().as_slice());
        assert_eq!(format!("{b:?}"), "SecretBytes(16 bytes)");
        let s = parse_secret("ff".repeat(64).as_bytes()).unwrap();
        assert_eq!(s.bytes().as_slice(), [0xff; 64]);
    }

    #[test]
    fn secret_attr() {
        assert_eq!(parse_secret_attr("(set)\n"), Some(true));
        assert_eq!(parse_secret_attr("(unset)"), Some(false));
        assert_eq!(parse_secret_attr(""), None);
        assert_eq!(parse_secret_attr("yes"), None);
    }

    #[test]
    fn bool_attr() {
        assert_eq!(parse_bool_attr("1\n"), Some(true));
        assert_eq!(parse_bool_attr("0"), Some(false));
        assert_eq!(parse_bool_attr(""), None);
        assert_eq!(parse_bool_attr("yes"), None);
    }

    /// `stats` of an enabled target, with this encryption line.
    fn stats(encryption: &str) -> String {
        format!(
            "total reads=5 writes=9 read_bytes=20480 write_bytes=36864 errors=0 requeues=0 \
             recoveries=0 inflight=0\n\
             latency_us le8=0 le16=3 inf=0\n\
             {encryption}\n\
             queue0 reads=5 writes=9 read_bytes=20480 write_bytes=36864 errors=0 requeues=0 \
             recoveries=0 inflight=0\n"
        )
    }

    #[test]
    fn stats_encryption() {
        assert_eq!(
            parse_stats_encryption(&stats("encryption off")),
            Ok(Some(Encryption::Off))
        );
        assert_eq!(Encryption::Off.auth_failures(), None);
        let on = parse_stats_encryption(&stats(
            "encryption aes-256-gcm sealed=9 opened=5 auth_failures=2",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            on,
            Encryption::On {
                cipher: "aes-256-gcm".into(),
                sealed: 9,
                opened: 5,
                auth_failures: 2
            }
        );
        assert_eq!(on.auth_failures(), Some(2));
        // A newer module's fields and cipher.
        let newer = parse_stats_encryption(&stats(
            "encryption xchacha auth_failures=0 rekeys=1 opened=0 sealed=0",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(newer.auth_failures(), Some(0));
        // No line: disabled (empty stats), or a module older than encryption.
        assert_eq!(parse_stats_encryption(""), Ok(None));
        let old = stats("encryption off").replace("encryption off\n", "");
        assert_eq!(parse_stats_encryption(&old), Ok(None));
        // `encryption` only as the line's first word.
        assert_eq!(
            parse_stats_encryption("queue0 encryption=1\nencryptions off\n"),
            Ok(None)
        );
    }

    #[test]
    fn stats_encryption_bad_lines() {
        for (line, want) in [
            ("encryption", "no cipher in \"encryption\""),
            (
                "encryption sealed=1 opened=1 auth_failures=0",
                "no cipher in ",
            ),
            (
                "encryption aes-256-gcm sealed=1 opened=1",
                "no auth_failures= in ",
            ),
            (
                "encryption aes-256-gcm sealed=1 opened=x auth_failures=0",
                "opened=x is not a number",
            ),
            (
                "encryption aes-256-gcm sealed=1 opened=1 auth_failures=-1",
                "auth_failures=-1 is not a number",
            ),
            (
                "encryption aes-256-gcm sealed=1 opened=1 auth_failures=0 bogus",
                "\"bogus\" is not key=value",
            ),
        ] {
            let e = parse_stats_encryption(&stats(line)).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with(&format!("unexpected stats line: {want}")),
                "{line:?}: {e}"
            );
        }
    }

    /// The `stats` of a module with the read and write histograms, as configuration.md
    /// shows it (fewer buckets), with a page too full for its last queues.
    const STATS_PAIR: &str = "total reads=5120 writes=1536 read_bytes=20971520 \
        write_bytes=6291456 errors=1 requeues=2 recoveries=3 inflight=4 registered_reads=0\n\
        read_latency_us le8=0 le16=2 le32=5 inf=1\n\
        write_latency_us le8=1 le16=0 le32=0 inf=0\n\
        encryption off\n\
        queue0 reads=2575 writes=770 read_bytes=10547200\n\
        queue1 reads=2545 writes=766 read_bytes=10424320\n\
        queues 2..63: not shown, the page is full\n";

    #[test]
    fn stats_with_read_and_write_histograms() {
        let s = parse_stats(STATS_PAIR).unwrap();
        assert_eq!(s.total("reads"), Some(5120));
        assert_eq!(s.total("registered_reads"), Some(0));
        assert_eq!(s.total("nothing"), None);
        assert_eq!(s.total.len(), 9);
        assert_eq!(
            s.read_latency,
            Some(Histogram {
                buckets: vec![(Some(8), 0), (Some(16), 2), (Some(32), 5), (None, 1)]
            })
        );
        assert_eq!(s.read_latency.as_ref().map(Histogram::count), Some(8));
        assert_eq!(s.write_latency.as_ref().map(Histogram::count), Some(1));
        assert_eq!(s.latency, None);
        assert_eq!(s.encryption, Some(Encryption::Off));
        assert_eq!(s.queues.len(), 2);
        assert_eq!(s.queues[1].0, 1);
        assert_eq!(s.queues[1].1[2], ("read_bytes".to_string(), 10424320));
    }

    #[test]
    fn stats_with_one_histogram_of_an_older_module() {
        let s = parse_stats(&stats("encryption off")).unwrap();
        assert_eq!(s.read_latency, None);
        assert_eq!(s.write_latency, None);
        assert_eq!(
            s.latency,
            Some(Histogram {
                buckets: vec![(Some(8), 0), (Some(16), 3), (None, 0)]
            })
        );
        assert_eq!(s.total("writes"), Some(9));
        // A disabled target's: empty.
        assert_eq!(parse_stats("").unwrap(), Stats::default());
    }

    #[test]
    fn stats_bad_lines() {
        for (line, why) in [
            ("total reads=x", "reads=x is not a number"),
            ("total reads", "\"reads\" is not key=value"),
            (
                "read_latency_us le8=1 le8=2 inf=0",
                "le8= is not a rising leN",
            ),
            (
                "read_latency_us le16=1 le8=2 inf=0",
                "le8= is not a rising leN",
            ),
            (
                "read_latency_us le8=1 lt16=2 inf=0",
                "lt16= is not a rising leN",
            ),
            ("write_latency_us le8=1 le16=2", "no inf= at the end"),
            ("latency_us inf=0 le8=1", "le8= after inf="),
            ("latency_us", "no inf= at the end"),
            ("queue3 reads=-1", "reads=-1 is not a number"),
        ] {
            let e = parse_stats(line).unwrap_err().to_string();
            assert!(e.contains(why), "{line}: {e}");
        }
    }

    #[test]
    fn modules_dep() {
        let dep = "kernel/fs/ext4/ext4.ko.xz: kernel/fs/jbd2/jbd2.ko.xz\n\
                   updates/dkms/rswap.ko.zst: kernel/drivers/infiniband/core/ib_core.ko.xz\n\
                   extra/rswapx.ko:\n";
        assert!(lists_module(dep, "rswap"));
        assert!(lists_module(dep, "ext4"));
        // Only as a dependency, or a longer name: no.
        assert!(!lists_module(dep, "jbd2"));
        assert!(!lists_module(dep, "rswa"));
        assert!(lists_module("rswap.ko:\n", "rswap"));
        assert!(!lists_module("", "rswap"));
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(1000), "1000B");
        assert_eq!(human_size(4096), "4K");
        assert_eq!(human_size(8 << 30), "8G");
        assert_eq!(human_size(3 << 29), "1.5G");
        assert_eq!(human_size(1 << 40), "1T");
    }

    #[test]
    fn durations() {
        for (secs, want) in [
            (0.0, "0s"),
            (0.999, "0s"),
            (1.5, "1s"),
            (59.9, "59s"),
            (60.0, "1m00s"),
            (65.0, "1m05s"),
            (3599.0, "59m59s"),
            (3600.0, "1h00m"),
            (7385.0, "2h03m"),
            (86400.0, "1d00h"),
            (273_600.0, "3d04h"),
            (-1.0, "0s"),
            (f64::NAN, "0s"),
            (f64::INFINITY, "0s"),
        ] {
            assert_eq!(human_seconds(secs), want, "{secs}");
        }
    }
}
