// SPDX-License-Identifier: GPL-2.0

//! The target settings: one row per configfs attribute a target is configured with, as
//! the module (`src/configfs.rs`, `src/config_parse.rs`) has it. The table drives the
//! keys of the target files (`conf`), the flags of `rswapctl add` (`cli`), what `add`
//! writes and `up` compares (`target`), the fields `list` and `status` show, and the
//! fake configfs of the unit tests. A new setting is one row here (and its lines in
//! Documentation/rswapctl.md). [`COUNTERS`] does the same for the counters of a target's
//! `stats`: the `stats` object of `list --json` and the families of `rswapctl metrics`.

use crate::parse::{parse_bool_attr, parse_secret_attr};
use crate::target;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// How a setting's value is given and checked. `rswapctl` checks the form and the
/// module's range before it creates anything; the module checks again (and what depends
/// on the machine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `ADDR[:PORT]` (see [`target::parse_server`]): writes `addr`, and `port` when given.
    Server,
    /// A host's IPv4 or IPv6 address (with an optional `%zone`), or `any`.
    HostOrAny,
    /// A decimal number in `min..=max`; also 0 when `zero` (0 turns it off).
    Number {
        min: u64,
        max: u64,
        zero: bool,
        /// What the number counts, for the error: `a number of queues`.
        what: &'static str,
    },
    /// A size: a number with an optional K, M, G or T suffix (the module checks the
    /// range and the 4 KiB multiple).
    Size,
    /// A client id: decimal or 0x hex, not 0.
    ClientId,
    /// A flag of `add`, `yes` or `no` in a target file: on writes 1, off writes nothing
    /// (the module's default, off, stays).
    Switch,
    /// A file holding the secret (`parse::parse_secret`), an absolute path in a target
    /// file; its digits go to the attribute through their own write, and are never shown.
    SecretFile,
    /// An erasure code `K+R`: k of 1, 2, 4 or 8, r of 0, 1 or 2.
    Code,
    /// A comma-separated list of 1 to 10 servers, each `ADDR[:PORT]` as [`Kind::Server`]
    /// takes it.
    ServerList,
    /// A comma-separated list of secret files (each as [`Kind::SecretFile`]) or `-`, one
    /// per server; read like the secret file, and never shown (the attribute shows `(set)`
    /// or `-` for each).
    SecretFileList,
}

impl Kind {
    /// A number that is also 0 (off).
    const fn or_off(self) -> Kind {
        match self {
            Kind::Number { min, max, what, .. } => Kind::Number {
                min,
                max,
                zero: true,
                what,
            },
            other => other,
        }
    }
}

/// A setting's value when the target is created (at `mkdir`), as the module has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleDefault {
    /// None, and `enable` refuses to start without one: shown as `(unset)`.
    Required,
    /// None, shown as this word (`(unset)`, `(any)`).
    Unset(&'static str),
    /// This value, as the attribute shows it.
    Value(&'static str),
    /// The number of possible CPU ids (the kernel's `nr_cpu_ids`), 1..64.
    Cpus,
    /// A random number other than 0 for each target, shown in 0x hex.
    Random,
}

impl ModuleDefault {
    /// The attribute's text for a default that is one fixed text (`None` for `Random`).
    pub fn shown(&self) -> Option<String> {
        match self {
            ModuleDefault::Required => Some("(unset)".to_string()),
            ModuleDefault::Unset(word) | ModuleDefault::Value(word) => Some(word.to_string()),
            ModuleDefault::Cpus => Some(possible_cpus().clamp(1, 64).to_string()),
            ModuleDefault::Random => None,
        }
    }
}

/// How `up` decides that a target that is up already is up as its file asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Up {
    /// It does not look at this setting.
    Ignore,
    /// A switch the file turns on must be on: `exists but is not WORD` otherwise.
    On(&'static str),
    /// The attribute must show the value the file gives (the module's default when the
    /// module has no such attribute): `exists but has ATTR HAVE, not WANT` otherwise.
    Equal,
}

/// A setting newer than the oldest modules: on a module without its attribute, `add`
/// refuses a value other than the default before it writes anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Since {
    /// `(it is older than FEATURE)`.
    pub feature: &'static str,
    /// `not adding the target HOW`.
    pub without: &'static str,
}

/// One target setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The configfs attribute.
    pub attr: &'static str,
    /// The target-file key; the flag of `add` is `--` and the key with `-` for `_`.
    /// `None`: set through another one (`port`, by `server`), or not by `rswapctl`.
    pub key: Option<&'static str>,
    /// The flag's value in `--help` (`N`, `MS`); unused for a switch.
    pub value_name: &'static str,
    pub kind: Kind,
    pub default: ModuleDefault,
    /// The field of `list --json` and `status` (and its line there).
    pub field: &'static str,
    /// The column of `list` (`yes`/`no` of a switch or of whether a secret is set).
    pub column: Option<&'static str>,
    /// Whether the module takes a new value while the target is enabled (none does:
    /// `EBUSY`, disable it first).
    pub while_enabled: bool,
    pub since: Option<Since>,
    /// The required setting (its attribute) that this one may be given instead of: one
    /// of the two is needed, both are refused.
    pub instead_of: Option<&'static str>,
    pub up: Up,
    /// The flag's help, without the range and default (added from the row).
    pub help: &'static str,
    /// A value rswapctl takes and one it refuses, for the tests.
    pub sample: (&'static str, &'static str),
}

impl Setting {
    const fn new(attr: &'static str, kind: Kind, default: ModuleDefault) -> Setting {
        Setting {
            attr,
            key: Some(attr),
            value_name: "N",
            kind,
            default,
            field: attr,
            column: None,
            while_enabled: false,
            since: None,
            instead_of: None,
            up: Up::Ignore,
            help: "",
            sample: ("", ""),
        }
    }

    const fn key(self, key: Option<&'static str>) -> Setting {
        Setting { key, ..self }
    }

    const fn value(self, value_name: &'static str, help: &'static str) -> Setting {
        Setting {
            value_name,
            help,
            ..self
        }
    }

    const fn field(self, field: &'static str) -> Setting {
        Setting { field, ..self }
    }

    const fn column(self, column: &'static str) -> Setting {
        Setting {
            column: Some(column),
            ..self
        }
    }

    const fn since(self, feature: &'static str, without: &'static str) -> Setting {
        Setting {
            since: Some(Since { feature, without }),
            ..self
        }
    }

    const fn instead_of(self, attr: &'static str) -> Setting {
        Setting {
            instead_of: Some(attr),
            ..self
        }
    }

    const fn live(self) -> Setting {
        Setting {
            while_enabled: true,
            ..self
        }
    }

    const fn up(self, up: Up) -> Setting {
        Setting { up, ..self }
    }

    const fn sample(self, good: &'static str, bad: &'static str) -> Setting {
        Setting {
            sample: (good, bad),
            ..self
        }
    }

    /// The flag of `add` (without `--`).
    pub fn flag(&self) -> Option<String> {
        self.key.map(|k| k.replace('_', "-"))
    }

    /// Whether `value` (as given) is the module's default: `any` of an address that may be
    /// any, a number that is the default.
    pub fn is_default(&self, value: &str) -> bool {
        (self.kind == Kind::HostOrAny && value == "any")
            || self.default.shown().as_deref() == Some(value)
    }

    /// Whether a target file and `add` must give it.
    pub fn required(&self) -> bool {
        self.default == ModuleDefault::Required
    }

    /// Checks a value as given (a flag's, a target file's): the text to write, or why
    /// it is refused.
    pub fn check(&self, v: &str) -> Result<String, String> {
        match self.kind {
            Kind::Server => target::parse_server(v).map(|_| v.to_string()),
            Kind::HostOrAny => match v {
                "any" => Ok(v.to_string()),
                _ => target::parse_server_addr(v).map(|a| a.to_string()),
            },
            Kind::Number { .. } => self.number(v).map(|n| n.to_string()),
            Kind::Size => size(v),
            Kind::ClientId => client_id(v),
            Kind::Switch => yes_no(v).map(|on| if on { "1" } else { "0" }.to_string()),
            Kind::SecretFile => Ok(v.to_string()),
            Kind::Code => code(v)
                .map(|(k, r)| format!("{k}+{r}"))
                .map_err(|e| format!("{v:?} is not {}: {e}", self.accepted())),
            Kind::ServerList => server_list(v),
            Kind::SecretFileList => secret_file_list(v),
        }
    }

    fn number(&self, v: &str) -> Result<u64, String> {
        let Kind::Number { min, max, zero, .. } = self.kind else {
            return Err(format!("{v:?} is not a number"));
        };
        let digits = v.bytes().all(|b| b.is_ascii_digit());
        match v.parse::<u64>() {
            Ok(n) if digits && ((n == 0 && zero) || (min..=max).contains(&n)) => Ok(n),
            _ => Err(format!("{v:?} is not {}", self.accepted())),
        }
    }

    /// What the setting takes, for `--help` and errors: `a number of queues (1..64)`.
    pub fn accepted(&self) -> String {
        match self.kind {
            Kind::Number {
                min,
                max,
                zero,
                what,
            } if zero => format!("{what} (0, {min}..{max})"),
            Kind::Number { min, max, what, .. } => format!("{what} ({min}..{max})"),
            Kind::Server => "ADDR[:PORT]".to_string(),
            Kind::HostOrAny => "an IPv4 or IPv6 address, or any".to_string(),
            Kind::Size => "a size (a number with an optional K, M, G or T suffix)".to_string(),
            Kind::ClientId => "a client id (1..2^64-1, decimal or 0x hex)".to_string(),
            Kind::Switch => "yes or no".to_string(),
            Kind::SecretFile => "a secret file".to_string(),
            Kind::Code => "a code K+R (k 1, 2, 4 or 8; r 0, 1 or 2)".to_string(),
            Kind::ServerList => "a list of 1 to 10 servers, ADDR[:PORT],...".to_string(),
            Kind::SecretFileList => "a list of secret files or -, FILE,...".to_string(),
        }
    }

    /// The default in words, for `--help`; `None` for a required setting.
    pub fn default_text(&self) -> Option<String> {
        match (self.default, self.kind) {
            (ModuleDefault::Required, _) => None,
            (ModuleDefault::Cpus, _) => Some("the number of CPUs".to_string()),
            (ModuleDefault::Random, _) => Some("random".to_string()),
            (ModuleDefault::Value("0"), Kind::Switch) => Some("off".to_string()),
            (ModuleDefault::Unset("(unset)"), _) => Some("none".to_string()),
            (ModuleDefault::Unset(word), _) => Some(word.trim_matches(['(', ')']).to_string()),
            (ModuleDefault::Value(v), _) => Some(v.to_string()),
        }
    }

    /// The flag's help: the row's, then what it takes and the module's default.
    pub fn help_text(&self) -> String {
        let mut text = self.help.to_string();
        if let Kind::Number { .. } = self.kind {
            text.push_str(&format!(" {}: {}.", self.value_name, self.accepted()));
        }
        if self.kind == Kind::Server {
            if let Some(port) = setting("port").and_then(Setting::default_text) {
                text.push_str(&format!(" Without a port, the module's default ({port})."));
            }
        }
        if let Some(d) = self.default_text() {
            text.push_str(&format!(" Default: the module's ({d})."));
        }
        text
    }

    /// The field's value for the attribute's text (`None`: the module has no such
    /// attribute): null when it is not set, or not what the module shows.
    pub fn shown(&self, attr: Option<&str>) -> Value {
        let Some(text) = attr.map(str::trim) else {
            return Value::Null;
        };
        let unset = match self.default {
            ModuleDefault::Required => Some("(unset)"),
            ModuleDefault::Unset(word) => Some(word),
            _ => None,
        };
        match self.kind {
            Kind::Number { .. } | Kind::Size => {
                text.parse::<u64>().map_or(Value::Null, Value::from)
            }
            Kind::Switch => parse_bool_attr(text).map_or(Value::Null, Value::Bool),
            Kind::SecretFile => parse_secret_attr(text).map_or(Value::Null, Value::Bool),
            Kind::Server
            | Kind::HostOrAny
            | Kind::ClientId
            | Kind::Code
            | Kind::ServerList
            | Kind::SecretFileList => {
                if text.is_empty() || Some(text) == unset {
                    Value::Null
                } else {
                    Value::String(text.to_string())
                }
            }
        }
    }
}

/// A code `K+R` as the module takes it, or why not.
fn code(v: &str) -> Result<(u8, u8), &'static str> {
    let (k, r) = v.split_once('+').ok_or("no '+'")?;
    let number = |t: &str| {
        t.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| t.parse::<u8>().ok())
            .flatten()
    };
    match (number(k), number(r)) {
        (Some(k @ (1 | 2 | 4 | 8)), Some(r @ 0..=2)) => Ok((k, r)),
        (Some(_), Some(0..=2)) => Err("k must be 1, 2, 4 or 8"),
        (Some(_), Some(_)) => Err("r must be 0, 1 or 2"),
        _ => Err("K and R are numbers"),
    }
}

/// A comma-separated list of 1 to 10 `what` (`servers`), each entry checked by `entry`:
/// the list without the spaces around its entries, or why not.
fn list_of(
    v: &str,
    what: &str,
    entry: impl Fn(&str) -> Result<(), String>,
) -> Result<String, String> {
    let entries: Vec<&str> = v.split(',').map(str::trim).collect();
    if entries.len() > 10 {
        return Err(format!("{v:?} is not a list of at most 10 {what}"));
    }
    for (i, e) in entries.iter().enumerate() {
        let why = match entry(e) {
            _ if e.is_empty() => "is empty".to_string(),
            Ok(()) => continue,
            Err(why) => format!(": {why}"),
        };
        let sep = if why.starts_with(':') { "" } else { " " };
        return Err(format!(
            "{v:?} is not a list of {what}: entry {}{sep}{why}",
            i + 1
        ));
    }
    Ok(entries.join(","))
}

/// A list of servers as the module takes it (entries as `--server` takes them).
fn server_list(v: &str) -> Result<String, String> {
    list_of(v, "servers", |e| target::parse_server(e).map(|_| ()))
}

/// A list of secret files (absolute paths) or `-`.
fn secret_file_list(v: &str) -> Result<String, String> {
    list_of(v, "secret files", |e| match e {
        "-" => Ok(()),
        e if std::path::Path::new(e).is_absolute() => Ok(()),
        e => Err(format!("{e:?} is not an absolute path")),
    })
}

/// `Kind::Number`, the module's range.
const fn number(min: u64, max: u64, what: &'static str) -> Kind {
    Kind::Number {
        min,
        max,
        zero: false,
        what,
    }
}

/// `Kind::Number` of milliseconds, the module's range.
const fn ms(min: u64, max: u64) -> Kind {
    number(min, max, "a number of milliseconds")
}

/// The module's configfs settings of a target, in configuration.md's order (which is
/// also the order `add` writes them in, `status` shows them and the fields of `--json`).
pub const SETTINGS: &[Setting] = &[
    Setting::new("addr", Kind::Server, ModuleDefault::Required)
        .key(Some("server"))
        .value(
            "ADDR:PORT",
            "The memory server: ADDR:PORT, ADDR an IPv4 address or a bracketed IPv6 one \
             (`[fd00::2]:7471`, `[fe80::2%eth0]:7471`).",
        )
        .sample("192.0.2.7:7000", "192.0.2.7:0"),
    Setting::new("src_addr", Kind::HostOrAny, ModuleDefault::Unset("(any)"))
        .value(
            "ADDR",
            "The address to connect from, on a host with several RDMA ports: an IPv4 or \
             IPv6 address (`fe80::1%eth0`), or any.",
        )
        .since("source addresses", "without it")
        .sample("192.0.2.1", "192.0.2"),
    Setting::new(
        "port",
        number(1, 65535, "a port"),
        ModuleDefault::Value("7471"),
    )
    .key(None),
    Setting::new("size", Kind::Size, ModuleDefault::Required)
        .value(
            "SIZE",
            "Remote memory to ask for: the disk's size, with a K, M, G or T suffix (8G).",
        )
        .field("size_bytes")
        .sample("16G", "8GG"),
    Setting::new(
        "queues",
        number(1, 64, "a number of queues"),
        ModuleDefault::Cpus,
    )
    .value(
        "N",
        "RDMA queues (blk-mq hardware queues, each a connection).",
    )
    .sample("4", "65"),
    Setting::new(
        "queue_depth",
        number(1, 1024, "a number of requests"),
        ModuleDefault::Value("128"),
    )
    .value("N", "Requests in flight per queue.")
    .sample("64", "0"),
    Setting::new(
        "poll_queues",
        number(0, 63, "a number of poll queues"),
        ModuleDefault::Value("0"),
    )
    .value(
        "N",
        "More queues, after the --queues ones, for polled I/O only (io_uring with \
         IORING_SETUP_IOPOLL, fio --hipri), each a connection of its own. At enable the \
         module gives at most one per CPU, and refuses queues + poll queues over 64. \
         Swap does not poll: only for programs that do. An rswap module without them \
         makes N > 0 an error.",
    )
    .since("polled I/O", "without poll queues")
    .up(Up::Equal)
    .sample("2", "64"),
    Setting::new("client_id", Kind::ClientId, ModuleDefault::Random)
        .value(
            "ID",
            "This client's identity at the server, decimal or 0x hex: its line in the \
             server's allow-list.",
        )
        .sample("0x1001", "0"),
    Setting::new("secret", Kind::SecretFile, ModuleDefault::Unset("(unset)"))
        .key(Some("secret_file"))
        .value(
            "FILE",
            "Authenticate to the server with the secret in FILE: 32 to 128 hex digits (16 \
             to 64 bytes; whitespace around them is ignored). FILE must not be readable \
             or writable by group or others (chmod 600). The secret is never printed, \
             and reaches the module as a logon key of the kernel keyring, not through \
             configfs.",
        )
        .column("SECRET")
        .sample("/etc/rswap/t.secret", "rel/t.secret"),
    Setting::new("code", Kind::Code, ModuleDefault::Value("1+0"))
        .value(
            "K+R",
            "The erasure code of a disk over k + r servers (--servers): each page cut into \
             k fragments and r parity fragments, one on each server; any k of them give \
             the page back. 1+0: one server.",
        )
        .since("erasure-coded disks", "without it")
        .up(Up::Equal)
        .sample("4+2", "3+1"),
    Setting::new("servers", Kind::ServerList, ModuleDefault::Unset("(none)"))
        .value(
            "ADDR:PORT,...",
            "The disk's memory servers in order, one per fragment of --code, instead of \
             --server: each ADDR:PORT as --server takes it.",
        )
        .since("erasure-coded disks", "without it")
        .instead_of("addr")
        .sample("192.0.2.7:7000,[fd00::7]:7000", "192.0.2.7:0"),
    Setting::new(
        "secrets",
        Kind::SecretFileList,
        ModuleDefault::Unset("(none)"),
    )
    .key(Some("secret_files"))
    .value(
        "FILE,...",
        "A secret for each server of --servers, in the same order, so that no server \
             holds another's: each a secret file as --secret-file takes it, or - (that \
             server takes --secret-file's). Each reaches the module as a logon key, as \
             --secret-file's does, and is never printed.",
    )
    .since("erasure-coded disks", "without it")
    .sample("/etc/rswap/a.secret,-", "-,rel.secret"),
    Setting::new("timeout_ms", ms(100, 120_000), ModuleDefault::Value("5000"))
        .value(
            "MS",
            "How long each connection step (resolve, route, connect, descriptor) may take.",
        )
        .sample("2000", "99"),
    Setting::new(
        "recovery_ms",
        ms(0, 3_600_000),
        ModuleDefault::Value("60000"),
    )
    .value(
        "MS",
        "How long a failed queue keeps reconnecting before its I/O fails; 0: at once.",
    )
    .sample("3000", "3600001"),
    Setting::new(
        "keepalive_ms",
        ms(1000, 600_000).or_off(),
        ModuleDefault::Value("5000"),
    )
    .value("MS", "How often each queue probes the server; 0: off.")
    .sample("1000", "999"),
    Setting::new(
        "io_timeout_ms",
        ms(100, 3_600_000),
        ModuleDefault::Value("30000"),
    )
    .value(
        "MS",
        "How long a request may take before it times out and its queue reconnects (the \
         disk's io_timeout).",
    )
    .since("request timeouts", "without it")
    .sample("10000", "99"),
    Setting::new("encrypt", Kind::Switch, ModuleDefault::Value("0"))
        .value(
            "",
            "Encrypt the disk: every 4 KiB block is sealed with AES-256-GCM before it \
             leaves this host (a key of this enable only, kept in the kernel; 6 MiB of \
             memory per GiB of disk). What it protects: Documentation/security.md. An \
             rswap module without encryption is an error.",
        )
        .column("ENC")
        .since("encryption", "unencrypted")
        .up(Up::On("encrypted"))
        .sample("yes", "aes"),
    Setting::new("sync_swapin", Kind::Switch, ModuleDefault::Value("0"))
        .value(
            "",
            "Make the disk synchronous (sync_swapin = 1; the block layer's \
             BLK_FEAT_SYNCHRONOUS): swap then reads the one page a fault needs and waits \
             for it, without readahead. Slower for the swap workload `make bench` \
             measures: Documentation/benchmarks.md. An rswap module without it is an \
             error.",
        )
        .column("SYNC")
        .since("synchronous swap-in", "without it")
        .up(Up::On("synchronous"))
        .sample("yes", "on"),
    Setting::new(
        "extra_reads",
        number(0, 2, "a number of parity fragments"),
        ModuleDefault::Value("1"),
    )
    .value(
        "N",
        "Parity fragments a read of a disk over several servers asks for beyond the k it \
         needs, so that it can end without its slowest server.",
    )
    .since("erasure-coded disks", "without it")
    .sample("2", "3"),
    Setting::new(
        "rebuild_mbps",
        number(1, 100_000, "a rate in MiB/s"),
        ModuleDefault::Value("200"),
    )
    .value(
        "MIBS",
        "How fast a disk over several servers rewrites a server's fragments after it \
         comes back or is replaced, at most. Also while the target is enabled.",
    )
    .since("erasure-coded disks", "without it")
    .live()
    .sample("500", "0"),
];

/// How Prometheus sees a number of `stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Only grows, from 0 at `enable`.
    Counter,
    /// Goes up and down.
    Gauge,
}

impl MetricKind {
    /// Its name in a `# TYPE` line.
    pub fn name(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
        }
    }
}

/// One field of the `total` line of a target's `stats` attribute: its key in `stats`
/// (and in the `stats` object of `list --json` and `status --json`) and its metric
/// family in `rswapctl metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    pub key: &'static str,
    pub metric: &'static str,
    pub kind: MetricKind,
    /// The family's `# HELP`.
    pub help: &'static str,
}

const fn counter(key: &'static str, metric: &'static str, help: &'static str) -> Counter {
    Counter {
        key,
        metric,
        kind: MetricKind::Counter,
        help,
    }
}

/// The fields of the `total` line of `stats`, in its order (configuration.md,
/// "Counters"). A new field is one row here (and its line in Documentation/rswapctl.md).
pub const COUNTERS: &[Counter] = &[
    counter(
        "reads",
        "rswap_target_reads_total",
        "Read requests completed successfully since the target was enabled.",
    ),
    counter(
        "writes",
        "rswap_target_writes_total",
        "Write requests completed successfully since the target was enabled.",
    ),
    counter(
        "read_bytes",
        "rswap_target_read_bytes_total",
        "Bytes read by successful requests since the target was enabled.",
    ),
    counter(
        "write_bytes",
        "rswap_target_write_bytes_total",
        "Bytes written by successful requests since the target was enabled.",
    ),
    counter(
        "errors",
        "rswap_target_errors_total",
        "Requests that ended with an I/O error since the target was enabled.",
    ),
    counter(
        "requeues",
        "rswap_target_requeues_total",
        "Requests issued again after their queue failed under them.",
    ),
    counter(
        "recoveries",
        "rswap_target_recoveries_total",
        "Successful reconnects of the target's queues.",
    ),
    Counter {
        key: "inflight",
        metric: "rswap_target_inflight",
        kind: MetricKind::Gauge,
        help: "Work requests on the wire now.",
    },
    counter(
        "registered_reads",
        "rswap_target_registered_reads_total",
        "RDMA READs posted into a freshly registered memory region (iWARP).",
    ),
];

/// The setting of configfs attribute `attr`.
pub fn setting(attr: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.attr == attr)
}

/// The setting of target-file key `key`.
pub fn by_key(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == Some(key))
}

/// The settings' fields of one target, in the table's order: `list --json` and `status`
/// show them between `device` and `state`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shown(pub Vec<(&'static str, Value)>);

impl Shown {
    /// The field's value (null if there is no such field).
    pub fn get(&self, field: &str) -> &Value {
        self.0
            .iter()
            .find(|(f, _)| *f == field)
            .map_or(&Value::Null, |(_, v)| v)
    }
}

impl Serialize for Shown {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// `yes` or `no` (also `true`/`false`, `1`/`0`).
pub fn yes_no(v: &str) -> Result<bool, String> {
    match v {
        "yes" | "true" | "1" => Ok(true),
        "no" | "false" | "0" => Ok(false),
        _ => Err(format!("{v:?} is not yes or no")),
    }
}

/// `SIZE`: a number of bytes with an optional K, M, G or T suffix.
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

/// The kernel's `nr_cpu_ids`: the highest possible CPU id plus one
/// (`/sys/devices/system/cpu/possible`, e.g. `0-3`), or the CPUs this process may use.
pub fn possible_cpus() -> u32 {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|t| cpus_in_list(&t))
        .or_else(|| {
            std::thread::available_parallelism()
                .ok()
                .and_then(|n| u32::try_from(n.get()).ok())
        })
        .unwrap_or(1)
}

/// The highest CPU id of a CPU list (`0-3,8`) plus one.
pub fn cpus_in_list(list: &str) -> Option<u32> {
    list.trim()
        .split(',')
        .map(|range| range.rsplit('-').next()?.parse::<u32>().ok())
        .try_fold(0, |most, last| Some(most.max(last? + 1)))
}
