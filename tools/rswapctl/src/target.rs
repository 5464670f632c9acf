// SPDX-License-Identifier: GPL-2.0

//! The operations on rswap targets in configfs: add, remove, replace, list, status.

use crate::keyring::{self, KeySerial};
use crate::parse::{self, Secret, SwapEntry, TargetState};
use crate::settings::{Kind, Setting, Shown, Up, COUNTERS, SETTINGS};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

/// What changes the system: configfs directories and attributes, and the swap commands.
/// The default methods do the real thing; the unit tests replace them with a fake
/// configfs made of plain files.
pub trait Host {
    fn mkdir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)
    }

    fn rmdir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }

    /// Writes an attribute, as `echo VALUE > FILE` does: one write(2) whose error is the
    /// kernel's answer.
    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        fs::write(path, value)
    }

    /// Adds a `logon` key with this description and payload to this process's keyring
    /// (see [`keyring::add_logon_key`]); returns its serial number.
    fn add_logon_key(&self, desc: &str, payload: &[u8]) -> io::Result<KeySerial> {
        keyring::add_logon_key(desc, payload)
    }

    /// Invalidates a key [`Host::add_logon_key`] added.
    fn invalidate_key(&self, key: KeySerial) -> io::Result<()> {
        keyring::invalidate_key(key)
    }

    /// Prints a warning, one line, on standard error.
    fn warn(&self, line: &str) {
        eprintln!("{line}");
    }

    /// Runs `program args...`; `Err` says why it failed (its own output goes to the
    /// terminal).
    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        match Command::new(program).args(args).status() {
            Ok(st) if st.success() => Ok(()),
            Ok(st) => Err(st.to_string()),
            Err(e) => Err(format!("cannot run it: {}", errno_text(&e))),
        }
    }
}

/// The real system.
pub struct RealHost;

impl Host for RealHost {}

/// Where things are.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The rswap configfs subsystem, `/sys/kernel/config/rswap`.
    pub configfs: PathBuf,
    /// `/proc/swaps`.
    pub proc_swaps: PathBuf,
    /// Where the disks appear, `/dev`.
    pub dev_dir: PathBuf,
    /// The mounted file systems, `/proc/self/mounts`.
    pub mounts: PathBuf,
    /// The running kernel's release, `/proc/sys/kernel/osrelease`.
    pub osrelease: PathBuf,
    /// The kernels' modules, `/lib/modules` (`RELEASE/modules.dep` lists them).
    pub modules: PathBuf,
    /// Where rswap-dkms says why it has no module for a kernel (`no-module-RELEASE`),
    /// `/var/lib/rswap-dkms`.
    pub dkms_notes: PathBuf,
    /// The module's sysfs directory, `/sys/module/rswap` (its `version`).
    pub sys_module: PathBuf,
}

impl Default for Paths {
    fn default() -> Self {
        Paths {
            configfs: PathBuf::from("/sys/kernel/config/rswap"),
            proc_swaps: PathBuf::from("/proc/swaps"),
            dev_dir: PathBuf::from("/dev"),
            mounts: PathBuf::from("/proc/self/mounts"),
            osrelease: PathBuf::from("/proc/sys/kernel/osrelease"),
            modules: PathBuf::from("/lib/modules"),
            dkms_notes: PathBuf::from("/var/lib/rswap-dkms"),
            sys_module: PathBuf::from("/sys/module/rswap"),
        }
    }
}

/// An operation that failed: printed as lines `rswapctl: OP NAME: ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub op: &'static str,
    pub name: String,
    /// The first line says what failed; more lines the kernel's reason and failed undo.
    pub lines: Vec<String>,
}

impl Failure {
    pub fn new(op: &'static str, name: &str, what: impl fmt::Display) -> Self {
        Failure {
            op,
            name: name.to_string(),
            lines: vec![what.to_string()],
        }
    }

    fn prefix(&self) -> String {
        if self.name.is_empty() {
            format!("rswapctl: {}: ", self.op)
        } else {
            format!("rswapctl: {} {}: ", self.op, self.name)
        }
    }

    /// Adds the kernel's reason: the target's `last_error` attribute where the module has
    /// one, else a hint to look at the kernel log.
    fn kernel_reason(mut self, dir: &Path) -> Self {
        let reason = fs::read_to_string(dir.join("last_error")).ok();
        match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
            Some(r) => self.lines.push(format!("kernel: {r}")),
            None => self
                .lines
                .push("see dmesg for the kernel's reason".to_string()),
        }
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = self.prefix();
        for (i, line) in self.lines.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{prefix}{line}")?;
        }
        Ok(())
    }
}

/// The text of an errno, without Rust's ` (os error N)`.
pub fn errno_text(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// A memory server's address as the module's `addr` attribute takes it: IPv4, or IPv6
/// with an optional zone (`fe80::2%eth0`, needed for a link-local address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerAddr {
    pub ip: IpAddr,
    /// The zone of a link-local IPv6 address: an interface name or index.
    pub zone: Option<String>,
}

impl fmt::Display for ServerAddr {
    /// The attribute's form: `192.0.2.2`, `fd00::2`, `fe80::2%eth0` (no brackets).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.ip)?;
        if let Some(z) = &self.zone {
            write!(f, "%{z}")?;
        }
        Ok(())
    }
}

/// An interface name as the kernel allows one (IFNAMSIZ - 1 bytes, no `/`, `:` or
/// whitespace), or an interface index.
fn valid_zone(z: &str) -> bool {
    !z.is_empty()
        && z.len() < 16
        && z.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'/' && b != b':' && b != b'%')
}

impl std::str::FromStr for ServerAddr {
    type Err = String;

    fn from_str(a: &str) -> Result<Self, String> {
        parse_server_addr(a)
    }
}

/// A host's address as `addr` and `src_addr` take it: IPv4, or IPv6 with an optional zone.
pub fn parse_server_addr(a: &str) -> Result<ServerAddr, String> {
    if let Ok(v4) = a.parse::<Ipv4Addr>() {
        return Ok(ServerAddr {
            ip: IpAddr::V4(v4),
            zone: None,
        });
    }
    let (ip, zone) = match a.split_once('%') {
        Some((ip, z)) => (ip, Some(z)),
        None => (a, None),
    };
    let v6: Ipv6Addr = ip
        .parse()
        .map_err(|_| format!("{a:?} is not an IPv4 or IPv6 address"))?;
    if let Some(z) = zone {
        if !valid_zone(z) {
            return Err(format!("{z:?} is not an interface name or index"));
        }
    }
    Ok(ServerAddr {
        ip: IpAddr::V6(v6),
        zone: zone.map(str::to_string),
    })
}

/// `ADDR[:PORT]` of `--server`: `192.0.2.2`, `192.0.2.2:7471`, `fd00::2`, `[fd00::2]:7471`,
/// `[fe80::2%eth0]:7471`; a port 1..65535. An IPv6 address with a port needs brackets.
pub fn parse_server(s: &str) -> Result<(ServerAddr, Option<u16>), String> {
    let (addr, port) = if let Some(rest) = s.strip_prefix('[') {
        let Some((a, after)) = rest.split_once(']') else {
            return Err(format!("{s:?}: no ']' after the IPv6 address"));
        };
        let port = match after {
            "" => None,
            p => match p.strip_prefix(':') {
                Some(p) => Some(p),
                None => return Err(format!("{s:?}: expected ':PORT' after ']'")),
            },
        };
        if a.parse::<Ipv4Addr>().is_ok() {
            return Err(format!("{s:?}: brackets are for IPv6 addresses"));
        }
        (a, port)
    } else if s.matches(':').count() > 1 {
        // Two colons or more: a bare IPv6 address, no port.
        (s, None)
    } else {
        match s.rsplit_once(':') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        }
    };
    let addr = parse_server_addr(addr)?;
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => return Err(format!("{p:?} is not a port (1..65535)")),
        },
    };
    Ok((addr, port))
}

/// A secret file longer than this is not a secret file (128 digits and some whitespace).
const SECRET_FILE_MAX: u64 = 4096;

/// Reads a secret file (`add --secret-file`): it must not be readable or writable by group
/// or others (like an ssh key), and hold 32 to 128 hexadecimal digits, whitespace around
/// them trimmed. The error says why, never what the file holds.
pub fn read_secret_file(path: &Path) -> Result<Secret, String> {
    let what = |why: String| format!("secret file {}: {why}", path.display());
    let file = fs::File::open(path).map_err(|e| what(errno_text(&e)))?;
    // The mode of the file opened, not of whatever the path names a moment later.
    let mode = file
        .metadata()
        .map_err(|e| what(errno_text(&e)))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(what(format!(
            "mode {:04o} lets group or others read or write it (chmod 600 it)",
            mode & 0o7777
        )));
    }
    let mut content = Vec::with_capacity(SECRET_FILE_MAX as usize + 1);
    let read = file
        .take(SECRET_FILE_MAX + 1)
        .read_to_end(&mut content)
        .map_err(|e| what(errno_text(&e)));
    let secret = match read {
        Err(e) => Err(e),
        Ok(n) if n as u64 > SECRET_FILE_MAX => Err(what(format!(
            "longer than {SECRET_FILE_MAX} bytes; not a secret"
        ))),
        Ok(_) => parse::parse_secret(&content).map_err(|e| what(format!("not a secret: {e}"))),
    };
    parse::wipe(&mut content);
    secret
}

/// Reads a list of secret files (`add --secret-files`, checked by its row): each entry's
/// secret as [`read_secret_file`] reads it, `None` for `-`.
pub fn read_secret_files(list: &str) -> Result<Vec<Option<Secret>>, String> {
    list.split(',')
        .map(str::trim)
        .map(|e| match e {
            "-" => Ok(None),
            path => read_secret_file(Path::new(path)).map(Some),
        })
        .collect()
}

/// What `rswapctl add` sets.
#[derive(Debug, Clone, Default)]
pub struct AddOptions {
    pub name: String,
    /// The attributes to write and their values, as checked by their [`Setting`]; `add`
    /// writes them in the table's order. One not given keeps the module's default.
    pub values: BTreeMap<&'static str, String>,
    /// Written to the `secret` attribute; its `Debug` does not show it.
    pub secret: Option<Secret>,
    /// Written to the `secrets` attribute (`None`: `-`, that server takes `secret`).
    pub secrets: Option<Vec<Option<Secret>>>,
    pub swap: bool,
    pub priority: Option<i32>,
}

impl AddOptions {
    /// The value given for attribute `attr`.
    pub fn get(&self, attr: &str) -> Option<&str> {
        self.values.get(attr).map(String::as_str)
    }

    /// Sets setting `s` to `v` (a flag's or a target file's value), checked as its row
    /// says: `server` sets `addr` and (with a port) `port`; a switch turned off keeps
    /// the module's default, as one not given. Not for the secret file, which is read.
    pub fn set(&mut self, s: &'static Setting, v: &str) -> Result<(), String> {
        let checked = s.check(v)?;
        match s.kind {
            Kind::Server => {
                let (addr, port) = parse_server(v)?;
                self.values.insert(s.attr, addr.to_string());
                if let Some(p) = port {
                    self.values.insert("port", p.to_string());
                }
            }
            Kind::Switch if checked == "0" => {
                self.values.remove(s.attr);
            }
            Kind::SecretFile | Kind::SecretFileList => {
                return Err(format!("{}: read, not set", s.attr))
            }
            _ => {
                self.values.insert(s.attr, checked);
            }
        }
        Ok(())
    }
}

/// One target as `list --json` and `status --json` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetInfo {
    pub name: String,
    pub device: Option<String>,
    /// Each setting's field, from its attribute as [`Setting::shown`] reads it; null if
    /// the module has no such attribute.
    #[serde(flatten)]
    pub settings: Shown,
    pub state: String,
    pub queues_live: Option<u32>,
    pub queues_total: Option<u32>,
    pub recovering: Option<u32>,
    pub dead: Option<u32>,
    pub recoveries: Option<u64>,
    pub retried: Option<u64>,
    pub region: Option<u64>,
    pub epoch: Option<u64>,
    /// Blocks read back that did not open (`auth_failures=` of the `encryption` line of
    /// `stats`); null when encryption is off, the target disabled or the line missing.
    pub auth_failures: Option<u64>,
    pub swap_used_bytes: Option<u64>,
    pub swap_priority: Option<i32>,
    /// The target's `stats` attribute; null when it is disabled (its `stats` is empty)
    /// or the attribute does not parse.
    pub stats: Option<StatsInfo>,
    /// The servers of a disk over several servers, one per leg line of `state`, with
    /// their counters from `stats`: empty for a plain target (whose `state` has no leg
    /// lines), null while disabled or when a leg line does not parse.
    pub legs: Option<Vec<LegInfo>>,
}

/// A leg (server) of a disk over several servers, as `list --json` and `status --json`
/// show it: from its `state` line, then its `stats` line (each of those null when
/// `stats` has no line for the leg or does not parse).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LegInfo {
    /// Its index in `servers`.
    pub leg: u32,
    pub server: String,
    /// `out` once out of the disk, else its queues' state word (`connected`, ...).
    pub state: String,
    pub queues_live: u32,
    pub queues_total: u32,
    pub region: u64,
    pub epoch: u64,
    pub reads: Option<u64>,
    pub writes: Option<u64>,
    pub errors: Option<u64>,
    pub late: Option<u64>,
    pub requeues: Option<u64>,
    pub recoveries: Option<u64>,
    pub inflight: Option<u64>,
    /// Its groups waiting to be rebuilt on it, and those rebuilt since `enable`; also
    /// null from a module that does not show them.
    pub dirty: Option<u64>,
    pub resynced: Option<u64>,
    /// Blocks of an encrypted disk that verified only once rebuilt without its fragment
    /// (its server altered its memory); null from a module that does not show them.
    pub altered: Option<u64>,
}

impl LegInfo {
    /// A leg from its `state` line and (if `stats` has it) its `stats` line.
    fn new(s: &parse::LegState, c: Option<&parse::LegStats>) -> Self {
        LegInfo {
            leg: s.leg,
            server: s.server.clone(),
            state: s.state.clone(),
            queues_live: s.queues_live,
            queues_total: s.queues_total,
            region: s.region,
            epoch: s.epoch,
            reads: c.map(|c| c.reads),
            writes: c.map(|c| c.writes),
            errors: c.map(|c| c.errors),
            late: c.map(|c| c.late),
            requeues: c.map(|c| c.requeues),
            recoveries: c.map(|c| c.recoveries),
            inflight: c.map(|c| c.inflight),
            dirty: c.and_then(|c| c.dirty),
            resynced: c.and_then(|c| c.resynced),
            altered: c.and_then(|c| c.altered),
        }
    }
}

impl TargetInfo {
    /// Its memory server as `list` shows it: `192.0.2.2:7471`, `[fd00::2]:7471`.
    pub fn server(&self) -> Option<String> {
        let addr = self.settings.get("addr").as_str()?;
        Some(match self.settings.get("port").as_u64() {
            Some(p) if addr.contains(':') => format!("[{addr}]:{p}"),
            Some(p) => format!("{addr}:{p}"),
            None => addr.to_string(),
        })
    }

    /// `(up, all)` legs of a disk over several servers: those whose state word is
    /// `connected` (all their queues live, as the module's `legs_up` counts them); `None`
    /// for a target without legs.
    pub fn legs_up(&self) -> Option<(usize, usize)> {
        let legs = self.legs.as_ref().filter(|l| !l.is_empty())?;
        let up = legs.iter().filter(|l| l.state == "connected").count();
        Some((up, legs.len()))
    }
}

/// The `stats` object of `list --json` and `status --json`: the fields of the `total`
/// line (those of [`COUNTERS`] first, in its order, null when missing; then any other),
/// the latency histograms (`read_latency_us`, `write_latency_us`, and `latency_us` of a
/// module older than those two; each null or a list of `{"le_us": BOUND, "count": N}`,
/// not cumulative, the last bound null), `late_binding` (the `code` line of a disk over
/// several servers: `code`, `extra_reads`, `early_reads`, `late_leg_reads`; null on a
/// plain disk), then `queues`: per queue its `queue` index and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsInfo(pub parse::Stats);

/// A bucket of a latency histogram in `stats`.
#[derive(Serialize)]
struct Bucket {
    le_us: Option<u64>,
    count: u64,
}

/// The `code` line of `stats` in JSON.
struct LateBinding<'a>(&'a parse::CodeLine);

impl Serialize for LateBinding<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("code", &c.code)?;
        map.serialize_entry("extra_reads", &c.extra_reads)?;
        map.serialize_entry("early_reads", &c.early_reads)?;
        map.serialize_entry("late_leg_reads", &c.late_leg_reads)?;
        map.end()
    }
}

fn histogram_json(h: Option<&parse::Histogram>) -> Option<Vec<Bucket>> {
    h.map(|h| {
        h.buckets
            .iter()
            .map(|&(le_us, count)| Bucket { le_us, count })
            .collect()
    })
}

impl Serialize for StatsInfo {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = &self.0;
        let mut map = serializer.serialize_map(None)?;
        for c in COUNTERS {
            map.serialize_entry(c.key, &s.total(c.key))?;
        }
        for (k, v) in &s.total {
            if !COUNTERS.iter().any(|c| c.key == k) {
                map.serialize_entry(k, v)?;
            }
        }
        map.serialize_entry("read_latency_us", &histogram_json(s.read_latency.as_ref()))?;
        map.serialize_entry(
            "write_latency_us",
            &histogram_json(s.write_latency.as_ref()),
        )?;
        map.serialize_entry("latency_us", &histogram_json(s.latency.as_ref()))?;
        map.serialize_entry("late_binding", &s.code.as_ref().map(LateBinding))?;
        let queues: Vec<Value> = s
            .queues
            .iter()
            .map(|(q, fields)| {
                let mut o = serde_json::Map::new();
                o.insert("queue".to_string(), Value::from(*q));
                o.extend(fields.iter().map(|(k, v)| (k.clone(), Value::from(*v))));
                Value::Object(o)
            })
            .collect();
        map.serialize_entry("queues", &queues)?;
        map.end()
    }
}

/// The fields of [`TargetInfo`] in their order (`status` prints them so).
pub fn fields() -> Vec<&'static str> {
    let mut fields = vec!["name", "device"];
    fields.extend(SETTINGS.iter().map(|s| s.field));
    fields.extend([
        "state",
        "queues_live",
        "queues_total",
        "recovering",
        "dead",
        "recoveries",
        "retried",
        "region",
        "epoch",
        "auth_failures",
        "swap_used_bytes",
        "swap_priority",
        "stats",
        "legs",
    ]);
    fields
}

/// `status --json`: the target's fields and every attribute's raw value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetStatus {
    #[serde(flatten)]
    pub info: TargetInfo,
    pub attributes: BTreeMap<String, String>,
}

/// The attributes `status` shows first: the settings, then these; any other file in the
/// directory follows in name order.
const ATTRIBUTES_AFTER_SETTINGS: [&str; 3] = ["enable", "state", "device"];

fn check_name(op: &'static str, name: &str) -> Result<(), Failure> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(Failure::new(
            op,
            name,
            "invalid target name (empty, \".\", \"..\" or with \"/\")",
        ));
    }
    Ok(())
}

/// The tool's operations on one configfs root.
pub struct Ctl<'a> {
    pub paths: Paths,
    pub host: &'a dyn Host,
    /// How long `add --swap` waits for the disk's node to appear.
    pub device_wait: Duration,
    /// How long `remove` waits for another swapoff of the disk to end, when its own fails.
    pub swapoff_wait: Duration,
    /// How long `remove` tries `enable` = 0 again while the disk is busy (still open).
    pub busy_wait: Duration,
}

/// EBUSY, the kernel's answer to `enable` = 0 while the disk is open.
const EBUSY: i32 = 16;

/// Polls `done` every 100 ms until it holds (true) or `limit` has passed (false).
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        thread::sleep(Duration::from_millis(100));
    }
}

impl<'a> Ctl<'a> {
    pub fn new(paths: Paths, host: &'a dyn Host) -> Self {
        Ctl {
            paths,
            host,
            device_wait: Duration::from_secs(10),
            swapoff_wait: Duration::from_secs(300),
            busy_wait: Duration::from_secs(10),
        }
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.paths.configfs.join(name)
    }

    fn dev_path(&self, device: &str) -> PathBuf {
        self.paths.dev_dir.join(device)
    }

    fn swaps(&self) -> Vec<SwapEntry> {
        fs::read_to_string(&self.paths.proc_swaps)
            .map(|t| parse::parse_swaps(&t))
            .unwrap_or_default()
    }

    fn swap_entry<'s>(&self, swaps: &'s [SwapEntry], device: &str) -> Option<&'s SwapEntry> {
        let path = self.dev_path(device);
        swaps.iter().find(|e| Path::new(&e.filename) == path)
    }

    fn write_attr(
        &self,
        op: &'static str,
        name: &str,
        attr: &str,
        value: &str,
    ) -> Result<(), Failure> {
        // Its error shows the value: the secret goes through `write_secret`.
        debug_assert_ne!(attr, "secret");
        let dir = self.dir(name);
        self.host
            .write(&dir.join(attr), &format!("{value}\n"))
            .map_err(|e| {
                Failure::new(
                    op,
                    name,
                    format!("writing {attr}={value}: {}", errno_text(&e)),
                )
                .kernel_reason(&dir)
            })
    }

    /// Hands the target its secret. Through the keyring: the secret's bytes become a
    /// `logon` key of this process, `secret` is written `key:DESCRIPTION`, and the key is
    /// invalidated at once (the module has copied it). So the secret never passes through
    /// configfs's write page, which the kernel frees without clearing. A kernel without
    /// keyrings, or a module that does not take `key:` (EINVAL), gets the hexadecimal
    /// digits instead, with a warning.
    fn write_secret(&self, op: &'static str, name: &str, secret: &Secret) -> Result<(), Failure> {
        self.write_secrets(op, name, "secret", &[Some(secret)])
    }

    /// Writes attribute `attr` (`secret`, or `secrets`: one entry a server, `-` for
    /// `None`) as [`Self::write_secret`] does: a logon key for each secret (described
    /// `rswap:NAME:PID`, then `:2`, `:3`... for the later ones), all invalidated once
    /// the write is done; the digits, with a warning, where keys cannot be used.
    fn write_secrets(
        &self,
        op: &'static str,
        name: &str,
        attr: &str,
        secrets: &[Option<&Secret>],
    ) -> Result<(), Failure> {
        let dir = self.dir(name);
        let (what, whose) = match attr {
            "secret" => ("the secret", "the secret's"),
            _ => ("the secrets", "the secrets'"),
        };
        let warn = |why: String| {
            self.host.warn(&format!(
                "rswapctl: {op} {name}: warning: {why}; writing {whose} digits instead \
                 (they stay in a kernel buffer freed without clearing)"
            ))
        };
        let failed = |e: &io::Error| {
            Failure::new(op, name, format!("writing {attr}: {}", errno_text(e))).kernel_reason(&dir)
        };
        let mut keys = Vec::new();
        let mut text = String::new();
        let mut added = Ok(());
        for (i, secret) in secrets.iter().enumerate() {
            text.push_str(if i == 0 { "" } else { "," });
            let Some(secret) = secret else {
                text.push('-');
                continue;
            };
            let desc = match i {
                0 => format!("rswap:{name}:{}", std::process::id()),
                i => format!("rswap:{name}:{}:{}", std::process::id(), i + 1),
            };
            match self.host.add_logon_key(&desc, secret.bytes().as_slice()) {
                Ok(key) => keys.push((key, desc.clone())),
                Err(e) => {
                    added = Err(e);
                    break;
                }
            }
            text.push_str(&format!("key:{desc}"));
        }
        text.push('\n');
        let written = added
            .as_ref()
            .map(|()| self.host.write(&dir.join(attr), &text));
        // Whatever the module did, the keys are no longer needed.
        for (key, desc) in keys {
            if let Err(e) = self.host.invalidate_key(key) {
                self.host.warn(&format!(
                    "rswapctl: {op} {name}: warning: invalidating key {key} ({desc}): {}",
                    errno_text(&e)
                ));
            }
        }
        match written {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) if e.raw_os_error() == Some(libc::EINVAL) => warn(format!(
                "the module refused {} ({})",
                text.trim_end(),
                self.read_attr(name, "last_error").unwrap_or_default()
            )),
            Ok(Err(e)) => return Err(failed(&e)),
            Err(e) => warn(format!(
                "cannot add {what} to the keyring ({})",
                errno_text(e)
            )),
        }
        let mut digits = String::new();
        for (i, secret) in secrets.iter().enumerate() {
            digits.push_str(if i == 0 { "" } else { "," });
            digits.push_str(secret.map_or("-", |s| s.digits()));
        }
        digits.push('\n');
        let written = self.host.write(&dir.join(attr), &digits);
        parse::wipe(&mut digits.into_bytes());
        written.map_err(|e| failed(&e))
    }

    fn missing_target(&self, op: &'static str, name: &str, e: &io::Error) -> Failure {
        let dir = self.dir(name);
        if !self.paths.configfs.is_dir() {
            Failure::new(
                op,
                name,
                format!(
                    "{}: {} (is the rswap module loaded and configfs mounted?)",
                    self.paths.configfs.display(),
                    errno_text(e)
                ),
            )
        } else {
            Failure::new(op, name, format!("{}: {}", dir.display(), errno_text(e)))
        }
    }

    /// `rswapctl add`: creates and enables a target, and with `swap` swaps on its disk.
    /// On a failure, undoes what it did.
    pub fn add(&self, o: &AddOptions) -> Result<(), Failure> {
        check_name("add", &o.name)?;
        let dir = self.dir(&o.name);
        if let Err(e) = self.host.mkdir(&dir) {
            let mut f = self.missing_target("add", &o.name, &e);
            f.lines[0] = format!("mkdir {}", f.lines[0]);
            return Err(f);
        }
        let mut enabled = false;
        match self.add_steps(o, &mut enabled) {
            Ok(()) => Ok(()),
            Err(mut f) => {
                if enabled {
                    if let Err(e) = self.host.write(&dir.join("enable"), "0\n") {
                        f.lines
                            .push(format!("undo: writing enable=0: {}", errno_text(&e)));
                    }
                }
                if let Err(e) = self.host.rmdir(&dir) {
                    f.lines
                        .push(format!("undo: rmdir {}: {}", dir.display(), errno_text(&e)));
                }
                Err(f)
            }
        }
    }

    fn add_steps(&self, o: &AddOptions, enabled: &mut bool) -> Result<(), Failure> {
        let name = o.name.as_str();
        // The secrets are read, not values: the same check as for the values below.
        if o.secrets.is_some() && fs::metadata(self.dir(name).join("secrets")).is_err() {
            return Err(Failure::new(
                "add",
                name,
                "secrets: the rswap module loaded has no secrets attribute (it is older than \
                 erasure-coded disks); not adding the target without it",
            ));
        }
        let mut writes: Vec<(&str, &str)> = Vec::new();
        for s in SETTINGS {
            let Some(value) = o.get(s.attr) else {
                continue;
            };
            // Writing a file that is not there would fail with a confusing errno. A
            // module older than the attribute has its default: nothing to write then,
            // and a target asked for more must never come up without it.
            if fs::metadata(self.dir(name).join(s.attr)).is_err() {
                if s.is_default(value) {
                    continue;
                }
                let (older, without) = match s.since {
                    Some(since) => (
                        format!(" (it is older than {})", since.feature),
                        since.without,
                    ),
                    None => (String::new(), "without it"),
                };
                return Err(Failure::new(
                    "add",
                    name,
                    format!(
                        "{a}: the rswap module loaded has no {a} attribute{older}; not \
                         adding the target {without}",
                        a = s.attr
                    ),
                ));
            }
            writes.push((s.attr, value));
        }
        for (attr, value) in writes {
            self.write_attr("add", name, attr, value)?;
        }
        // Through its own write, whose error does not show it.
        if let Some(secret) = &o.secret {
            self.write_secret("add", name, secret)?;
        }
        if let Some(secrets) = &o.secrets {
            let entries: Vec<Option<&Secret>> = secrets.iter().map(Option::as_ref).collect();
            self.write_secrets("add", name, "secrets", &entries)?;
        }
        self.write_attr("add", name, "enable", "1")?;
        *enabled = true;
        if !o.swap {
            return Ok(());
        }
        let dev = self.wait_device(name)?;
        let dev_str = dev.to_string_lossy().into_owned();
        self.host
            .run("mkswap", &[&dev_str])
            .map_err(|e| Failure::new("add", name, format!("mkswap {dev_str}: {e}")))?;
        let prio = o.priority.map(|p| p.to_string());
        let mut args = Vec::new();
        if let Some(p) = &prio {
            args.extend(["-p", p.as_str()]);
        }
        args.push(&dev_str);
        self.host
            .run("swapon", &args)
            .map_err(|e| Failure::new("add", name, format!("swapon {dev_str}: {e}")))
    }

    /// Reads the `device` attribute and waits for its node in the device directory.
    fn wait_device(&self, name: &str) -> Result<PathBuf, Failure> {
        let device = self.read_attr(name, "device").map_err(|e| {
            Failure::new("add", name, format!("reading device: {}", errno_text(&e)))
        })?;
        if device.is_empty() {
            return Err(Failure::new("add", name, "enabled, but device is empty"));
        }
        let dev = self.dev_path(&device);
        let start = Instant::now();
        while !dev.exists() {
            if start.elapsed() >= self.device_wait {
                return Err(Failure::new(
                    "add",
                    name,
                    format!(
                        "waiting for {}: not there after {} ms",
                        dev.display(),
                        self.device_wait.as_millis()
                    ),
                ));
            }
            thread::sleep(Duration::from_millis(50));
        }
        Ok(dev)
    }

    /// `rswapctl remove`: swapoff (if swapped on), disable, rmdir.
    pub fn remove(&self, name: &str) -> Result<(), Failure> {
        check_name("remove", name)?;
        let dir = self.dir(name);
        if let Err(e) = fs::metadata(&dir) {
            return Err(self.missing_target("remove", name, &e));
        }
        let device = self.read_attr(name, "device").unwrap_or_default();
        let listed = |d: &str| self.swap_entry(&self.swaps(), d).is_some();
        if !device.is_empty() && listed(&device) {
            let dev = self.dev_path(&device).to_string_lossy().into_owned();
            if let Err(e) = self.host.run("swapoff", &[&dev]) {
                // Another swapoff of the disk may be under way (systemd's, of the swap
                // unit it made for the disk, at shutdown): the kernel refuses this one
                // then, and the other ends. Wait for the disk to leave /proc/swaps.
                if !wait_until(self.swapoff_wait, || !listed(&device)) {
                    return Err(Failure::new("remove", name, format!("swapoff {dev}: {e}")));
                }
            }
        }
        // Refused (EBUSY) while the disk is open, as for a moment after another swapoff
        // took it out of /proc/swaps: tried again for up to `busy_wait`.
        let enable = dir.join("enable");
        let start = Instant::now();
        while let Err(e) = self.host.write(&enable, "0\n") {
            if e.raw_os_error() != Some(EBUSY) || start.elapsed() >= self.busy_wait {
                return Err(Failure::new(
                    "remove",
                    name,
                    format!("writing enable=0: {}", errno_text(&e)),
                )
                .kernel_reason(&dir));
            }
            thread::sleep(Duration::from_millis(100));
        }
        self.host.rmdir(&dir).map_err(|e| {
            Failure::new(
                "remove",
                name,
                format!("rmdir {}: {}", dir.display(), errno_text(&e)),
            )
            .kernel_reason(&dir)
        })
    }

    /// `rswapctl replace`: writes `LEG SERVER` to the target's `replace`, which puts
    /// `server` in place of leg `leg`'s lost server and rebuilds the leg on it in the
    /// background. The kernel checks both and refuses with its reason in `last_error`
    /// (a leg still in the disk, a server another leg has, a disabled target, ...).
    pub fn replace(&self, name: &str, leg: u32, server: &str) -> Result<(), Failure> {
        check_name("replace", name)?;
        let dir = self.dir(name);
        if let Err(e) = fs::metadata(&dir) {
            return Err(self.missing_target("replace", name, &e));
        }
        // Writing a file that is not there would fail with a confusing errno.
        if fs::metadata(dir.join("replace")).is_err() {
            return Err(Failure::new(
                "replace",
                name,
                "replace: the rswap module loaded has no replace attribute (it is older than \
                 replacing a lost server)",
            ));
        }
        self.write_attr("replace", name, "replace", &format!("{leg} {server}"))
    }

    /// Makes the rswap configfs directory appear: mounts configfs on its parent if
    /// nothing is mounted there, then loads the module (`modprobe rswap`) if the
    /// directory is still missing.
    pub fn ensure_configfs(&self, op: &'static str, name: &str) -> Result<(), Failure> {
        let root = &self.paths.configfs;
        if root.is_dir() {
            return Ok(());
        }
        if let Some(parent) = root.parent().filter(|p| p.is_dir()) {
            let mounts = fs::read_to_string(&self.paths.mounts).unwrap_or_default();
            if !parse::is_mounted(&mounts, parent, "configfs") {
                let at = parent.to_string_lossy().into_owned();
                self.host
                    .run("mount", &["-t", "configfs", "configfs", &at])
                    .map_err(|e| Failure::new(op, name, format!("mount configfs {at}: {e}")))?;
            }
        }
        if !root.is_dir() {
            self.host
                .run("modprobe", &["rswap"])
                .map_err(|e| Failure::new(op, name, self.modprobe_failed(&e)))?;
        }
        if !root.is_dir() {
            return Err(Failure::new(
                op,
                name,
                format!("{}: not there after loading the module", root.display()),
            ));
        }
        Ok(())
    }

    /// Why `modprobe rswap` failed (`error`, its exit): when the running kernel has no
    /// rswap module (its `modules.dep` lists none), `no rswap.ko for kernel RELEASE`
    /// and why, as rswap-dkms noted it at install time if it did; else the error and
    /// where to look.
    pub fn modprobe_failed(&self, error: &str) -> String {
        let release = fs::read_to_string(&self.paths.osrelease)
            .map(|r| r.trim().to_string())
            .unwrap_or_default();
        let dep = fs::read_to_string(self.paths.modules.join(&release).join("modules.dep"))
            .unwrap_or_default();
        if parse::lists_module(&dep, "rswap") {
            return format!(
                "modprobe rswap: {error} (the module is there but did not load: see dmesg; \
                 under Secure Boot, is the DKMS signing key enrolled? See packages.md)"
            );
        }
        let note = fs::read_to_string(self.paths.dkms_notes.join(format!("no-module-{release}")))
            .ok()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty());
        let why = note.unwrap_or_else(|| {
            "rswap-dkms has not built it (`dkms status rswap` lists the kernels it built it \
             for; `dkms autoinstall` builds it for the running kernel)"
                .to_string()
        });
        format!("no rswap.ko for kernel {release}: {why}")
    }

    /// `rswapctl up`: `add`, for a target that may be up already. A target that exists,
    /// is enabled, (with `swap`) swapped on, (with `encrypt`) encrypted, (with
    /// `sync_swapin`) synchronous and (with `poll_queues`) has that many poll queues is
    /// left as it is (`Ok(false)`); one that exists otherwise is an error. While `add`
    /// fails to connect (writing `enable`), it is tried again every `retry_every` until
    /// `wait` has passed; each failed attempt is undone (`add` leaves nothing behind)
    /// and reported to `retrying`. Returns `Ok(true)` when it brought the target up.
    pub fn up(
        &self,
        o: &AddOptions,
        wait: Duration,
        retry_every: Duration,
        retrying: &mut dyn FnMut(&Failure),
    ) -> Result<bool, Failure> {
        check_name("up", &o.name)?;
        self.ensure_configfs("up", &o.name)?;
        if fs::metadata(self.dir(&o.name)).is_ok() {
            let enabled = self.read_attr(&o.name, "enable").unwrap_or_default() == "1";
            let device = self.read_attr(&o.name, "device").unwrap_or_default();
            let swapped = !device.is_empty() && self.swap_entry(&self.swaps(), &device).is_some();
            let why = if !enabled {
                Some("is not enabled".to_string())
            } else if let Some(why) = self.not_as_asked(o) {
                Some(why)
            } else if o.swap && !swapped {
                Some("is not swapped on".to_string())
            } else {
                None
            };
            let Some(why) = why else {
                return Ok(false);
            };
            return Err(Failure::new(
                "up",
                &o.name,
                format!(
                    "{} exists but {why} (rswapctl down {} first)",
                    self.dir(&o.name).display(),
                    o.name
                ),
            ));
        }
        let start = Instant::now();
        loop {
            match self.add(o) {
                Ok(()) => return Ok(true),
                Err(mut f) => {
                    f.op = "up";
                    let connect = f.lines[0].starts_with("writing enable=1");
                    if !connect || start.elapsed() + retry_every > wait {
                        return Err(f);
                    }
                    retrying(&f);
                    thread::sleep(retry_every);
                }
            }
        }
    }

    /// Why a target that is up is not as `o` asks, by the settings `up` compares
    /// ([`Up`]): never "already up" for a file that asks for encryption while the target
    /// is not encrypted, say. A module without the attribute has its default.
    fn not_as_asked(&self, o: &AddOptions) -> Option<String> {
        SETTINGS.iter().find_map(|s| {
            let want = o.get(s.attr)?;
            let have = match self.read_attr(&o.name, s.attr) {
                Ok(v) => v.trim().to_string(),
                Err(_) => s.default.shown().unwrap_or_default(),
            };
            let same = match (want.parse::<u64>(), have.parse::<u64>()) {
                (Ok(w), Ok(h)) => w == h,
                _ => want == have,
            };
            match s.up {
                _ if same => None,
                Up::Ignore => None,
                Up::On(word) => Some(format!("is not {word}")),
                Up::Equal => Some(format!("has {} {have}, not {want}", s.attr)),
            }
        })
    }

    /// `rswapctl down`: `remove`, for a target that may not be there (success).
    /// Returns whether it removed one.
    pub fn down(&self, name: &str) -> Result<bool, Failure> {
        check_name("down", name)?;
        if fs::metadata(self.dir(name)).is_err() {
            return Ok(false);
        }
        self.remove(name).map_err(|mut f| {
            f.op = "down";
            f
        })?;
        Ok(true)
    }

    /// The loaded module's version (`MODULE_VERSION`, the package's); `None` when it is
    /// not loaded or shows none.
    pub fn module_version(&self) -> Option<String> {
        fs::read_to_string(self.paths.sys_module.join("version"))
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    /// An attribute's text without its trailing newline.
    pub fn read_attr(&self, name: &str, attr: &str) -> io::Result<String> {
        let text = fs::read_to_string(self.dir(name).join(attr))?;
        Ok(text.trim_end_matches('\n').to_string())
    }

    /// The targets' names, sorted.
    pub fn names(&self) -> Result<Vec<String>, Failure> {
        let entries = fs::read_dir(&self.paths.configfs).map_err(|e| {
            Failure::new(
                "list",
                "",
                format!(
                    "{}: {} (is the rswap module loaded and configfs mounted?)",
                    self.paths.configfs.display(),
                    errno_text(&e)
                ),
            )
        })?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    fn info_with(&self, name: &str, swaps: &[SwapEntry]) -> TargetInfo {
        let attr = |a: &str| self.read_attr(name, a).ok().map(|v| v.trim().to_string());
        let set = |v: Option<String>| v.filter(|v| !v.is_empty() && v != "(unset)");
        let device = set(attr("device"));
        let state_text = attr("state");
        let state = state_text
            .as_deref()
            .map(parse::parse_state)
            .and_then(Result::ok);
        let st = state.as_ref().and_then(TargetState::enabled);
        let swap = device.as_deref().and_then(|d| self.swap_entry(swaps, d));
        // Read only while enabled: a disabled target's `stats` is empty.
        let stats = st
            .and_then(|_| attr("stats"))
            .and_then(|s| parse::parse_stats(&s).ok());
        let encryption = stats.as_ref().and_then(|s| s.encryption.as_ref());
        let legs = st
            .and(state_text.as_deref())
            .and_then(|t| parse::parse_state_legs(t).ok())
            .map(|legs| {
                let counters = |leg| stats.as_ref()?.legs.iter().find(|c| c.leg == leg);
                legs.iter()
                    .map(|l| LegInfo::new(l, counters(l.leg)))
                    .collect()
            });
        TargetInfo {
            name: name.to_string(),
            device,
            settings: Shown(
                SETTINGS
                    .iter()
                    .map(|s| (s.field, s.shown(attr(s.attr).as_deref())))
                    .collect(),
            ),
            state: state
                .as_ref()
                .map_or("unknown", TargetState::summary)
                .to_string(),
            queues_live: st.map(|s| s.queues_live),
            queues_total: st.map(|s| s.queues_total),
            recovering: st.map(|s| s.recovering),
            dead: st.map(|s| s.dead),
            recoveries: st.map(|s| s.recoveries),
            retried: st.map(|s| s.retried),
            region: st.map(|s| s.region),
            epoch: st.map(|s| s.epoch),
            auth_failures: encryption.and_then(parse::Encryption::auth_failures),
            swap_used_bytes: swap.map(|e| e.used_kib * 1024),
            swap_priority: swap.map(|e| e.priority),
            stats: stats.map(StatsInfo),
            legs,
        }
    }

    /// Every target, in name order.
    pub fn list(&self) -> Result<Vec<TargetInfo>, Failure> {
        let swaps = self.swaps();
        Ok(self
            .names()?
            .iter()
            .map(|n| self.info_with(n, &swaps))
            .collect())
    }

    /// One target with its raw attributes.
    pub fn status(&self, name: &str) -> Result<TargetStatus, Failure> {
        check_name("status", name)?;
        let dir = self.dir(name);
        let entries = fs::read_dir(&dir).map_err(|e| self.missing_target("status", name, &e))?;
        let mut files: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let mut attributes = BTreeMap::new();
        for file in files {
            // A write-only or unreadable attribute shows as empty.
            let mut value = self.read_attr(name, &file).unwrap_or_default();
            // The module shows only whether there is a secret; should it ever show more,
            // it is not passed on.
            if file == "secret" && !value.is_empty() && parse::parse_secret_attr(&value).is_none() {
                value = "(not shown)".to_string();
            }
            attributes.insert(file, value);
        }
        Ok(TargetStatus {
            info: self.info_with(name, &self.swaps()),
            attributes,
        })
    }
}

/// The attributes in display order: the known ones first, then the rest by name.
pub fn attribute_order(attributes: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
    let known: Vec<&str> = SETTINGS
        .iter()
        .map(|s| s.attr)
        .chain(ATTRIBUTES_AFTER_SETTINGS)
        .collect();
    let mut out: Vec<(&str, &str)> = known
        .iter()
        .filter_map(|a| attributes.get_key_value(*a))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for (k, v) in attributes {
        if !known.contains(&k.as_str()) {
            out.push((k, v));
        }
    }
    out
}
