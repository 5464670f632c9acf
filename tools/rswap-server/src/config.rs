// SPDX-License-Identifier: GPL-2.0

//! Command lines of `rswap-server` and `rswap-testclient`: clap (derive) definitions,
//! parsed into plain structs. Every value is checked by its value parser; the rules that
//! tie options together are checked after clap, so that each error stays one line.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, ArgAction, Command, CommandFactory, FromArgMatches, Parser};

use crate::crypto::Secret;
use crate::log::Level;
use crate::policy::PAGE;
use crate::size::parse_size;
use crate::wire::RejectCode;

/// Result of parsing a command line.
#[derive(Debug, PartialEq)]
pub(crate) enum Parsed<T> {
    /// Run with this configuration.
    Run(T),
    /// `--help` or `-h` was given: print this text.
    Help(String),
    /// `--version` or `-V` was given.
    Version,
    /// `--generate DIR` (hidden, for the package build): write the man page and the
    /// shell completions into DIR.
    Generate(PathBuf),
}

impl<T> Parsed<T> {
    /// The configuration to run made into another by `f`; the other outcomes as they
    /// are.
    fn and_then<U>(self, f: impl FnOnce(T) -> Result<U, String>) -> Result<Parsed<U>, String> {
        Ok(match self {
            Self::Run(t) => Parsed::Run(f(t)?),
            Self::Help(text) => Parsed::Help(text),
            Self::Version => Parsed::Version,
            Self::Generate(dir) => Parsed::Generate(dir),
        })
    }
}

/// The line `--version` prints: the program, its version and the wire protocol version
/// it speaks, e.g. `rswap-server 0.1.0 (wire protocol 2)`.
pub(crate) fn version_line(program: &str) -> String {
    format!("{program} {}", version())
}

/// The version clap shows: `0.1.0 (wire protocol 2)`.
fn version() -> String {
    format!(
        "{} (wire protocol {})",
        env!("RSWAP_SERVER_VERSION"),
        crate::wire::VERSION
    )
}

/// The longest `--status-socket` path: a Unix socket address holds 108 bytes, the
/// last one the terminating NUL.
pub(crate) const STATUS_SOCKET_MAX: usize = 107;

/// rswap's port: the kernel module's default, and where `--listen` / `--connect` go
/// when the address has no `:PORT`. Not perftest's 18515, so both can run on one host.
pub(crate) const DEFAULT_PORT: u16 = 7471;

/// `IP:PORT`, or an IP alone (IPv6 bare or in brackets, with a scope id or not) on
/// [`DEFAULT_PORT`].
fn parse_addr(v: &str) -> Result<SocketAddr, String> {
    let bare = v
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(v);
    v.parse()
        .ok()
        .or_else(|| {
            v.parse::<Ipv4Addr>()
                .ok()
                .map(|ip| SocketAddr::from((ip, DEFAULT_PORT)))
        })
        .or_else(|| format!("[{bare}]:{DEFAULT_PORT}").parse().ok())
        .ok_or_else(|| {
            format!(
                "invalid address {v:?} (expected IP or IP:PORT, e.g. 192.0.2.1, \
                 192.0.2.1:7471 or [::1]:7471; the port defaults to {DEFAULT_PORT})"
            )
        })
}

fn parse_num<T: std::str::FromStr>(v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("invalid number {v:?}"))
}

/// A number that must be at least 1.
fn parse_positive<T: std::str::FromStr + Default + PartialEq>(v: &str) -> Result<T, String> {
    let n = parse_num(v)?;
    if n == T::default() {
        return Err("must be at least 1".into());
    }
    Ok(n)
}

/// A path that must not be empty.
fn parse_path(v: &str) -> Result<PathBuf, String> {
    if v.is_empty() {
        return Err("empty path".into());
    }
    Ok(PathBuf::from(v))
}

/// `--status-socket`: a path that fits a Unix socket address.
fn parse_socket_path(v: &str) -> Result<PathBuf, String> {
    if v.len() > STATUS_SOCKET_MAX {
        return Err(format!(
            "the path is {} bytes long; a Unix socket path may have at most {STATUS_SOCKET_MAX}",
            v.len()
        ));
    }
    parse_path(v)
}

/// `--size` of the server: the pool, rounded down to 4 KiB, at least 4 KiB.
fn parse_pool(v: &str) -> Result<u64, String> {
    let n = parse_size(v)? / PAGE * PAGE;
    if n == 0 {
        return Err(format!("{v:?} is less than 4K"));
    }
    Ok(n)
}

/// `--max-queues`: 1 to 65535.
fn parse_max_queues(v: &str) -> Result<u16, String> {
    let n: u64 = parse_num(v)?;
    u16::try_from(n)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| "must be between 1 and 65535".into())
}

/// `--keepalive-ms`: 0 (off) or within [`KEEPALIVE_MS_RANGE`].
fn parse_keepalive_ms(v: &str) -> Result<u64, String> {
    let n = parse_num(v)?;
    if n != 0 && !KEEPALIVE_MS_RANGE.contains(&n) {
        return Err(format!(
            "must be 0 (off) or between {} and {}",
            KEEPALIVE_MS_RANGE.start(),
            KEEPALIVE_MS_RANGE.end()
        ));
    }
    Ok(n)
}

/// `--grace`: 0 to [`GRACE_SECS_MAX`] seconds.
fn parse_grace(v: &str) -> Result<u64, String> {
    let n = parse_num(v)?;
    if n > GRACE_SECS_MAX {
        return Err(format!(
            "must be at most {GRACE_SECS_MAX} seconds (366 days)"
        ));
    }
    Ok(n)
}

/// `--log-level`: one of the four names (offered to shell completion).
fn level_parser() -> impl TypedValueParser<Value = Level> {
    PossibleValuesParser::new(["error", "warn", "info", "debug"])
        .try_map(|s| Level::parse(&s).ok_or("unknown level"))
}

/// The server's configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerConfig {
    /// Address to listen on.
    pub(crate) listen: SocketAddr,
    /// The pool: total bytes the server may hand out (a multiple of 4 KiB).
    pub(crate) size: u64,
    /// Most clients (live or in grace) at once.
    pub(crate) max_clients: usize,
    /// Largest `queue_count` a connect request may announce.
    pub(crate) max_queues: u16,
    /// Most connects from one source address that have not reached ESTABLISHED.
    pub(crate) max_pending_per_source: usize,
    /// How long a region outlives its client's last queue.
    pub(crate) grace: Duration,
    /// Keep-alive period: every established queue is probed this often (zero: off).
    pub(crate) keepalive: Duration,
    /// Back regions with hugepages.
    pub(crate) hugepages: bool,
    /// Lock all of the server's memory (`mlockall`) so it is never swapped out.
    pub(crate) mlock: bool,
    /// Most verbose log level printed.
    pub(crate) log_level: Level,
    /// Keep regions as files here, so they outlive the process (`--state-dir`).
    pub(crate) state_dir: Option<PathBuf>,
    /// Accept a state directory on a disk file system (`--state-dir-on-disk`).
    pub(crate) state_dir_on_disk: bool,
    /// The clients that may connect, with their secrets (`--allow-list`).
    pub(crate) allow_list: Option<PathBuf>,
    /// Admit clients without an allow-list entry without authentication
    /// (`--insecure`).
    pub(crate) insecure: bool,
    /// Serve the status and the metrics on a Unix socket here (`--status-socket`).
    pub(crate) status_socket: Option<PathBuf>,
    /// For tests only: sign every descriptor with a wrong key, so that clients must
    /// refuse it (`--test-wrong-server-proof`).
    pub(crate) test_wrong_server_proof: bool,
}

/// Default `--max-clients`.
pub(crate) const DEFAULT_MAX_CLIENTS: usize = 64;
/// Default `--max-queues`: the kernel client's most queues per device.
pub(crate) const DEFAULT_MAX_QUEUES: u16 = 64;
/// Default `--max-pending-per-source`.
pub(crate) const DEFAULT_MAX_PENDING_PER_SOURCE: usize = 64;
/// Default `--grace` in seconds.
pub(crate) const DEFAULT_GRACE_SECS: u64 = 60;
/// The longest `--grace` in seconds: 366 days. A region kept longer for a client that
/// does not come back is a leak; and a longer one could overflow the clock.
pub(crate) const GRACE_SECS_MAX: u64 = 366 * 24 * 3600;
/// Default `--keepalive-ms`.
pub(crate) const DEFAULT_KEEPALIVE_MS: u64 = 5000;
/// The shortest and longest `--keepalive-ms` other than 0 (off).
pub(crate) const KEEPALIVE_MS_RANGE: std::ops::RangeInclusive<u64> = 1000..=600_000;

/// The heading of the options for tests in `--help`.
const TESTS_HEADING: &str = "For tests only (never on a server that real clients use)";

/// The command line of `rswap-server`, as clap reads it.
#[derive(Debug, Parser)]
#[command(
    name = "rswap-server",
    about = "Hand out registered remote memory to rswap clients over rdma_cm.",
    long_about = SERVER_ABOUT,
    after_long_help = SERVER_AFTER,
    override_usage = SERVER_USAGE
)]
struct ServerArgs {
    /// Address to listen on with rdma_cm (RC, port space TCP), e.g. 192.0.2.1:7471 or
    /// [fe80::1%2]:7471; the port defaults to 7471, rswap's (the kernel module's
    /// default).
    #[arg(long, value_name = "ADDR[:PORT]", value_parser = parse_addr,
          allow_hyphen_values = true)]
    listen: Option<SocketAddr>,

    /// The clients that may connect, with their secrets.
    ///
    /// One client per line: CLIENT_ID SECRET [ADDR[,ADDR...]], CLIENT_ID decimal or 0x
    /// hex (not 0), SECRET 32 to 128 hex digits (16 to 64 bytes), optionally the
    /// IPv4/IPv6 addresses the client may connect from (any if absent); '#' comments
    /// and blank lines allowed. The file must not be readable or writable by group or
    /// others (chmod 600). A bad line stops the start with FILE:LINE and what is wrong.
    /// A listed client id must prove its secret on every connect (AuthFailed if it
    /// cannot, AuthRequired if it does not try).
    #[arg(long, value_name = "FILE", value_parser = parse_path, allow_hyphen_values = true,
          value_hint = clap::ValueHint::FilePath)]
    allow_list: Option<PathBuf>,

    /// Admit clients that are not in the allow-list without authentication.
    ///
    /// Logged as a warning at start. Without --allow-list, --insecure is required: the
    /// server refuses to start with neither.
    #[arg(long)]
    insecure: bool,

    /// Total memory the server may hand out to all clients together (a pool; rounded
    /// down to 4 KiB). Suffixes K, M, G, T (binary).
    ///
    /// A request larger than what remains is rejected (TooLarge).
    #[arg(long, value_name = "SIZE", value_parser = parse_pool, allow_hyphen_values = true)]
    size: Option<u64>,

    /// Most clients holding a region at once, counting clients in their grace period.
    ///
    /// More are rejected (TooManyClients).
    #[arg(long, value_name = "N", value_parser = parse_positive::<usize>,
          allow_hyphen_values = true, default_value_t = DEFAULT_MAX_CLIENTS)]
    max_clients: usize,

    /// Most queues (connections) one client may announce in its queue_count, 1..65535
    /// (the default is the kernel client's maximum).
    ///
    /// A request announcing more is rejected (BadRequest).
    #[arg(long, value_name = "N", value_parser = parse_max_queues, allow_hyphen_values = true,
          default_value_t = DEFAULT_MAX_QUEUES)]
    max_queues: u16,

    /// Most connect requests from one source address that the server has accepted but
    /// that have not reached ESTABLISHED yet.
    ///
    /// More are rejected (TooManyClients) until some are established or gone.
    #[arg(long, value_name = "N", value_parser = parse_positive::<usize>,
          allow_hyphen_values = true, default_value_t = DEFAULT_MAX_PENDING_PER_SOURCE)]
    max_pending_per_source: usize,

    /// Keep a client's region this long after its last queue disconnected (0 frees the
    /// region at once; at most 31622400, 366 days).
    ///
    /// A reconnect of the same client id within it gets the same region and data back
    /// (epoch + 1).
    #[arg(long, value_name = "SECS", value_parser = parse_grace,
          allow_hyphen_values = true, default_value_t = DEFAULT_GRACE_SECS)]
    grace: u64,

    /// Probe every established queue every N milliseconds with a zero-length RDMA
    /// WRITE (0: off; otherwise 1000..600000).
    ///
    /// A queue whose probe fails, or has not completed by the next probe, is closed as
    /// if it had disconnected: a client host that crashed or lost power is noticed
    /// within one to two periods, and its region is then kept for --grace.
    #[arg(long, value_name = "N", value_parser = parse_keepalive_ms,
          allow_hyphen_values = true, default_value_t = DEFAULT_KEEPALIVE_MS)]
    keepalive_ms: u64,

    /// Back regions with hugepages (MAP_HUGETLB).
    ///
    /// Regions are then charged to the pool in whole hugepages. Fails at start when no
    /// hugepages are reserved (vm.nr_hugepages).
    #[arg(long)]
    hugepages: bool,

    /// Do not lock the server's own memory.
    ///
    /// By default the server calls mlockall(MCL_CURRENT | MCL_FUTURE) at start, so its
    /// code, heap and stack are never swapped out: a server whose pages sit on a swap
    /// device it serves (a client on the same host) could otherwise wait on its own
    /// clients. A failure is logged and the server runs on.
    #[arg(long)]
    no_mlock: bool,

    /// Keep every region's memory in a file in DIR, so that regions outlive the server
    /// process.
    ///
    /// Each region has a memory file and a small metadata file. A restarted server
    /// (after SIGKILL, a crash, SIGTERM or an upgrade) maps them again, with the same
    /// region ids, and each client that reconnects within --grace of the start gets its
    /// region and data back. DIR should be on tmpfs (or hugetlbfs with --hugepages)
    /// large enough for the whole pool: memory that survives the process but not a
    /// reboot. Created (mode 0700) if missing; one server per DIR. Incomplete or
    /// inconsistent entries are logged and deleted at start.
    ///
    /// Refused at start: a DIR on a disk file system (unless --state-dir-on-disk), that
    /// group or others may write, or that is not the server user's. A file system smaller
    /// than --size is logged (state_dir_small): new regions fail once it is full.
    #[arg(long, value_name = "DIR", value_parser = parse_path, allow_hyphen_values = true,
          value_hint = clap::ValueHint::DirPath)]
    state_dir: Option<PathBuf>,

    /// Accept a --state-dir on a disk file system (not tmpfs or hugetlbfs).
    ///
    /// The kernel then writes the regions' memory, the clients' swapped pages, to that
    /// disk in plaintext (unless a client encrypts), where it stays in the free blocks
    /// and backups after the regions are freed. Logged as a warning at start.
    #[arg(long)]
    state_dir_on_disk: bool,

    /// Serve the server's status on a Unix stream socket at PATH (recommended:
    /// /run/rswap/server.sock, where `rswapctl server-status` looks by default).
    ///
    /// Created with mode 0600 (a missing directory with mode 0755); a stale socket file
    /// is replaced; removed at exit. A client sends one line, `status` (JSON: the pool
    /// and every client's region, queues, state and last activity) or `metrics`
    /// (Prometheus text format 0.0.4), gets the answer and the connection is closed.
    /// Never any secret.
    #[arg(long, value_name = "PATH", value_parser = parse_socket_path,
          allow_hyphen_values = true, value_hint = clap::ValueHint::FilePath)]
    status_socket: Option<PathBuf>,

    /// The most verbose messages logged. Logs are one line each, key=value, on stderr.
    #[arg(long, value_name = "LVL", value_parser = level_parser(), allow_hyphen_values = true,
          default_value = "info")]
    log_level: Level,

    /// Sign every region descriptor with a wrong key (the client's secret with its first
    /// byte flipped) while checking client proofs normally.
    ///
    /// A test can so see a client refuse a server whose proof is wrong: every
    /// authenticated client then refuses its descriptor. Logged as a warning at start.
    #[arg(long, help_heading = TESTS_HEADING)]
    test_wrong_server_proof: bool,

    #[command(flatten)]
    flags: Flags,
}

const SERVER_USAGE: &str = "\
rswap-server --listen ADDR[:PORT] --size SIZE --allow-list FILE [OPTIONS]
       rswap-server --listen ADDR[:PORT] --size SIZE --insecure [OPTIONS]
       rswap-server --version | -V | --help | -h";

const SERVER_ABOUT: &str = "\
Hand out registered remote memory to rswap clients over rdma_cm.

Each client (identified by the client id in its connect request) gets one memory region \
of exactly the size it asks for (rounded up to 4 KiB), registered for REMOTE_READ | \
REMOTE_WRITE in a protection domain of its own. All queues (connections) of a client share \
that region and its rkey; every queue receives the region descriptor in one SEND once it \
is established. The data path is one-sided: the server does nothing per I/O.

Clients authenticate with a secret they share with the server (an HMAC-SHA256 challenge \
and response on every queue, and the server proves itself in the region descriptor), and \
a region belongs to one instance of its client: another instance with the same client id \
is refused (InUse) while the region exists.";

const SERVER_AFTER: &str = "\
SIGINT or SIGTERM disconnects all clients, deregisters and frees all regions and exits \
with status 0; with --state-dir it keeps the regions' files instead, for the next server \
(SIGKILL and crashes keep them too; a reboot of a tmpfs loses them). SIGUSR1 disconnects \
all clients but keeps their regions for the grace period: clients reconnect and find \
their data (rswap does so by itself). SIGHUP reads the --allow-list FILE again: clients \
added are admitted, a changed secret is required from the next connect on, a removed \
client's queues are closed (its region is freed after the grace period); a file that does \
not load is refused whole (logged with FILE:LINE) and the allow-list in use stays.

A bad option exits with status 2 and one line on stderr; an address that cannot be bound \
exits with status 1 and one line on stderr.";

/// `-V` and `-h` as both programs take them: `-h` prints the whole help, as `--help`.
#[derive(Debug, clap::Args)]
struct Flags {
    /// Print the version and the wire protocol version, and exit.
    #[arg(short = 'V', long, action = ArgAction::Version)]
    version: (),

    /// Print this help and exit.
    #[arg(short = 'h', long, action = ArgAction::HelpLong)]
    help: (),
}

/// What both programs' commands share: the version with the wire protocol, [`Flags`]
/// instead of clap's own, and help text at most 100 columns wide.
fn common(cmd: Command) -> Command {
    cmd.version(version())
        .disable_help_flag(true)
        .disable_version_flag(true)
        .max_term_width(100)
}

/// The server's command, as `--help`, the man page and the completions show it.
pub(crate) fn server_command() -> Command {
    common(ServerArgs::command())
}

/// Parses the server's arguments (without the program name).
pub(crate) fn parse_server_args(
    args: impl IntoIterator<Item = String>,
) -> Result<Parsed<ServerConfig>, String> {
    parse_clap(server_command(), args)?.and_then(server_config)
}

/// The server's configuration from its arguments, checked against each other.
fn server_config(a: ServerArgs) -> Result<ServerConfig, String> {
    let listen = a
        .listen
        .ok_or("--listen ADDR[:PORT] is required (see --help)")?;
    let size = a.size.ok_or("--size SIZE is required (see --help)")?;
    if a.allow_list.is_none() && !a.insecure {
        return Err(NO_ALLOW_LIST.into());
    }
    if a.state_dir_on_disk && a.state_dir.is_none() {
        return Err("--state-dir-on-disk needs --state-dir DIR".into());
    }
    Ok(ServerConfig {
        listen,
        size,
        max_clients: a.max_clients,
        max_queues: a.max_queues,
        max_pending_per_source: a.max_pending_per_source,
        grace: Duration::from_secs(a.grace),
        keepalive: Duration::from_millis(a.keepalive_ms),
        hugepages: a.hugepages,
        mlock: !a.no_mlock,
        log_level: a.log_level,
        state_dir: a.state_dir,
        state_dir_on_disk: a.state_dir_on_disk,
        allow_list: a.allow_list,
        insecure: a.insecure,
        status_socket: a.status_socket,
        test_wrong_server_proof: a.test_wrong_server_proof,
    })
}

/// The error of a server command line with neither `--allow-list` nor `--insecure`.
pub(crate) const NO_ALLOW_LIST: &str = "no --allow-list FILE given: clients could not be authenticated; give --allow-list FILE (see --help), or --insecure to admit clients without authentication";

/// The hidden option of both programs, for the package build: `--generate DIR` writes
/// the man page and the shell completions into DIR. Not part of the command the man
/// page and the completions describe (clap_complete would list it).
const GENERATE: &str = "generate";

/// Runs clap over `args` for `cmd`; an error comes back as one line.
fn parse_clap<T: FromArgMatches>(
    cmd: Command,
    args: impl IntoIterator<Item = String>,
) -> Result<Parsed<T>, String> {
    let args: Vec<String> = args.into_iter().collect();
    let cmd = cmd.arg(
        Arg::new(GENERATE)
            .long(GENERATE)
            .hide(true)
            .value_name("DIR")
            .value_parser(parse_path),
    );
    refuse_short_words(&cmd, &args)?;
    let name = cmd.get_name().to_string();
    match cmd.try_get_matches_from(std::iter::once(name).chain(args)) {
        Ok(m) => match m.get_one::<PathBuf>(GENERATE) {
            Some(dir) => Ok(Parsed::Generate(dir.clone())),
            None => T::from_arg_matches(&m)
                .map(Parsed::Run)
                .map_err(|e| one_line(&e)),
        },
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp => {
                let mut text = e.to_string();
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                Ok(Parsed::Help(text))
            }
            ErrorKind::DisplayVersion => Ok(Parsed::Version),
            _ => Err(one_line(&e)),
        },
    }
}

/// The only short options are `-h` and `-V`, and a word such as `-help` is a mistake;
/// clap would read it as `-h -e -l -p` and print the help. Refused here where an option
/// may stand (not as the value of an option before it), up to the first `-h`/`-V`.
fn refuse_short_words(cmd: &Command, args: &[String]) -> Result<(), String> {
    let takes_value = |long: &str| {
        cmd.get_arguments()
            .any(|a| a.get_long() == Some(long) && a.get_action().takes_values())
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.strip_prefix("--") {
            Some("" | "help" | "version") => break,
            Some(long) if takes_value(long) => {
                it.next();
            }
            Some(_) => {}
            None if a == "-h" || a == "-V" => break,
            None if a.starts_with('-') && a.len() > 2 => {
                return Err(format!("unexpected argument '{a}' found (see --help)"));
            }
            None => {}
        }
    }
    Ok(())
}

/// A clap error as one line, in the form of the server's other errors: `--opt: what is
/// wrong`, `--opt needs a value`, `--opt takes no value`.
fn one_line(e: &clap::Error) -> String {
    use std::error::Error;
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let strings = |kind| match e.get(kind) {
        Some(ContextValue::Strings(v)) => v.clone(),
        Some(ContextValue::String(v)) => vec![v.clone()],
        _ => Vec::new(),
    };
    // The option as clap shows it (`--size <SIZE>`), and its name alone.
    let Some(arg) = strings(ContextKind::InvalidArg).into_iter().next() else {
        return first.to_string();
    };
    let name = arg.split(' ').next().unwrap_or(&arg);
    let valid = strings(ContextKind::ValidValue);
    // clap reports a missing value as the empty one.
    let value = strings(ContextKind::InvalidValue).join(" ");
    match e.kind() {
        ErrorKind::InvalidValue if value.is_empty() => {
            format!("{name} needs a value (see --help)")
        }
        ErrorKind::InvalidValue if !valid.is_empty() => {
            format!("{name}: invalid value {value:?} ({})", valid.join(", "))
        }
        ErrorKind::ValueValidation => match e.source() {
            Some(why) => format!("{name}: {why}"),
            None => first.to_string(),
        },
        ErrorKind::TooManyValues => format!("{name} takes no value"),
        ErrorKind::UnknownArgument => format!("{first} (see --help)"),
        _ => first.to_string(),
    }
}

/// What the test client does once its queues are connected. No `==`: it may hold a
/// secret.
#[derive(Debug, Clone)]
pub(crate) struct ClientConfig {
    /// Server address.
    pub(crate) connect: SocketAddr,
    /// Client id sent with every queue.
    pub(crate) client_id: u64,
    /// Requested region size in bytes (0 is sent as is, to test rejection).
    pub(crate) size: u64,
    /// Queues to open.
    pub(crate) queues: u16,
    /// `queue_count` to announce (default: `queues`).
    pub(crate) queue_count: u16,
    /// Protocol version to put in the requests (default: the wire version).
    pub(crate) proto_version: u16,
    /// Write the pattern with this seed over the region through queue 0.
    pub(crate) write_pattern: Option<u64>,
    /// Read back and check the pattern with this seed through the last queue.
    pub(crate) verify_pattern: Option<u64>,
    /// Succeed only if the connect is rejected with this reason.
    pub(crate) expect_reject: Option<RejectCode>,
    /// Print the descriptor of every queue.
    pub(crate) print_descriptor: bool,
    /// Ask for the descriptor in the accept's private data, not in a SEND
    /// (`--descriptor-in-accept`, what the kernel client does on iWARP).
    pub(crate) descriptor_in_accept: bool,
    /// Keep the queues connected this long before exiting.
    pub(crate) hold: Duration,
    /// Limit for every connection step and every RDMA operation.
    pub(crate) timeout: Duration,
    /// Bytes per RDMA operation.
    pub(crate) chunk: usize,
    /// The client's secret (`--secret`): authenticate every queue with it.
    pub(crate) secret: Option<Secret>,
    /// A file holding the secret in hex (`--secret-file`), read at start.
    pub(crate) secret_file: Option<PathBuf>,
    /// The instance id sent in the requests (`--instance`).
    pub(crate) instance: u64,
    /// After connecting queue 0, send its proof again on a new connection.
    pub(crate) replay: bool,
    /// Make this many bogus connection attempts instead of connecting (`--flood`).
    pub(crate) flood: Option<u64>,
    /// Every flood hello names `client_id` rather than a random id (`--flood-id`).
    pub(crate) flood_id: bool,
    /// Connect from this local address (`--source`; default: the routing table's).
    pub(crate) source: Option<IpAddr>,
    /// Before each proof, forged proofs naming its challenge from this address and
    /// from the client's own (`--test-forge-proofs-from`).
    pub(crate) forge_from: Option<IpAddr>,
}

/// Default `--instance`: the same for every run, so that a test that reconnects with a
/// new process is the same instance of its client.
pub(crate) const DEFAULT_INSTANCE: u64 = 1;

/// The command line of `rswap-testclient`, as clap reads it.
#[derive(Debug, Parser)]
#[command(
    name = "rswap-testclient",
    about = "Connect to rswap-server like the kernel module would, and test it.",
    long_about = CLIENT_ABOUT,
    after_help = "Exit status: 0 success, 1 failure, 2 usage error.",
    override_usage = CLIENT_USAGE
)]
struct ClientArgs {
    /// Server address (the port defaults to 7471).
    #[arg(long, value_name = "ADDR[:PORT]", value_parser = parse_addr,
          allow_hyphen_values = true)]
    connect: Option<SocketAddr>,

    /// Client id (decimal or 0x hex).
    #[arg(long, value_name = "ID", value_parser = parse_u64_any, allow_hyphen_values = true)]
    client_id: Option<u64>,

    /// Requested region size, suffixes K/M/G/T.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    size: Option<u64>,

    /// Connections to open.
    #[arg(long, value_name = "N", value_parser = parse_positive::<u16>,
          allow_hyphen_values = true, default_value_t = 1)]
    queues: u16,

    /// queue_count to announce (default: --queues); for tests.
    #[arg(long, value_name = "N", value_parser = parse_num::<u16>, allow_hyphen_values = true)]
    queue_count: Option<u16>,

    /// The client's secret, 32 to 128 hex digits (16 to 64 bytes).
    #[arg(long, value_name = "HEX", allow_hyphen_values = true)]
    secret: Option<String>,

    /// Read the secret (hex, surrounding whitespace ignored) from FILE; better than
    /// --secret, which other users can see.
    #[arg(long, value_name = "FILE", value_parser = parse_path, allow_hyphen_values = true,
          value_hint = clap::ValueHint::FilePath)]
    secret_file: Option<PathBuf>,

    /// The instance id to send (decimal or 0x hex).
    ///
    /// A region belongs to one instance of its client id: another instance is refused
    /// with InUse while it exists.
    #[arg(long, value_name = "N", value_parser = parse_u64_any, allow_hyphen_values = true,
          default_value_t = DEFAULT_INSTANCE)]
    instance: u64,

    /// With a secret: connect queue 0, disconnect, then send the same proof again on a
    /// new connection.
    ///
    /// Prints replay=rejected reason=R (exit 0) or replay=accepted (exit 1).
    #[arg(long)]
    replay: bool,

    /// Make N bogus connection attempts as fast as possible.
    ///
    /// A hello for a random client id, and a proof with a random MAC for those that get
    /// a challenge. Prints flood attempts=N challenged=C rejected=R accepted=A errors=E
    /// reasons=NAME:COUNT,... ms=T; exits 1 if any was accepted or none got an answer.
    #[arg(long, value_name = "N", value_parser = parse_positive::<u64>,
          allow_hyphen_values = true)]
    flood: Option<u64>,

    /// With --flood: every hello names --client-id instead of a random id.
    ///
    /// A listed id is then challenged every time and each challenge answered by a
    /// proof with a random MAC (refused, AuthFailed).
    #[arg(long)]
    flood_id: bool,

    /// Connect from this local IP address (the source address of rdma_resolve_addr)
    /// instead of the one the routing table picks, in every mode.
    ///
    /// E.g. to flood from a second address of the host. Of the same family as
    /// --connect; an IPv6 source takes --connect's scope id.
    #[arg(long, value_name = "ADDR", value_parser = parse_source, allow_hyphen_values = true)]
    source: Option<IpAddr>,

    /// Test only, with a secret: before each proof, send forged proofs that name its
    /// challenge (a random MAC) from ADDR and from the client's own address, as a host
    /// that saw the server nonce go by would.
    ///
    /// Each must be refused, and the client's own proof is then sent. Prints
    /// queue=I forged=2 refused=REASON,REASON per queue.
    #[arg(long, value_name = "ADDR", value_parser = parse_source, allow_hyphen_values = true)]
    test_forge_proofs_from: Option<IpAddr>,

    /// Protocol version to send (1 sends a 32-byte version-1 request); for tests.
    #[arg(long, value_name = "V", value_parser = parse_num::<u16>, allow_hyphen_values = true,
          default_value_t = crate::wire::VERSION)]
    proto_version: u16,

    /// RDMA WRITE a pattern derived from SEED over the whole region, through queue 0.
    #[arg(long, value_name = "SEED", value_parser = parse_u64_any, allow_hyphen_values = true)]
    write_pattern: Option<u64>,

    /// RDMA READ the whole region through the last queue and compare every byte with
    /// the pattern of SEED; a mismatch exits 1 with the first bad offset.
    #[arg(long, value_name = "SEED", value_parser = parse_u64_any, allow_hyphen_values = true)]
    verify_pattern: Option<u64>,

    /// Exit 0 only if the connect is rejected with reason R (BadVersion, TooLarge,
    /// NoMemory, BadRequest, TooManyClients, QueueMismatch, AuthFailed, AuthRequired,
    /// InUse or its number).
    ///
    /// Prints reason=.. code=.. max_size=..
    #[arg(long, value_name = "R", value_parser = parse_reason, allow_hyphen_values = true)]
    expect_reject: Option<RejectCode>,

    /// Print the descriptor lines (default when no other mode).
    #[arg(long)]
    print_descriptor: bool,

    /// Ask the server to send the region descriptor with its accept (as the kernel
    /// client does on iWARP) instead of in a SEND once connected.
    #[arg(long)]
    descriptor_in_accept: bool,

    /// Stay connected SECS seconds before disconnecting.
    #[arg(long, value_name = "SECS", value_parser = parse_num::<u64>,
          allow_hyphen_values = true, default_value_t = 0)]
    hold: u64,

    /// Limit for each connect step and RDMA operation, in seconds.
    #[arg(long, value_name = "SECS", value_parser = parse_positive::<u64>,
          allow_hyphen_values = true, default_value_t = 30)]
    timeout: u64,

    /// Bytes per RDMA operation, 1 to 1G.
    #[arg(long, value_name = "SIZE", value_parser = parse_chunk, allow_hyphen_values = true,
          default_value = "64K")]
    chunk: usize,

    #[command(flatten)]
    flags: Flags,
}

const CLIENT_USAGE: &str = "\
rswap-testclient --connect ADDR[:PORT] --client-id ID --size SIZE [OPTIONS]
       rswap-testclient --version | -V | --help | -h";

const CLIENT_ABOUT: &str = "\
Connect to rswap-server like the kernel module would, and test it.

Opens --queues connections (queue 0 first), each with a receive posted before connecting, \
and checks that every queue receives the same valid region descriptor. Prints one line per \
queue: queue=I region_id=.. epoch=.. rkey=.. remote_addr=.. length=.. flags=.. \
reused=0|1 auth=mutual|none.

With a secret (--secret or --secret-file) every queue connects twice: a hello, which the \
server answers with a challenge, then the proof; the server's proof in the descriptor is \
checked (a wrong one fails with a clear message). Without a secret the request carries no \
authentication, which only a server started with --insecure admits.";

/// The test client's command, as `--help`, the man page and the completions show it.
pub(crate) fn client_command() -> Command {
    common(ClientArgs::command())
}

/// A client id (or another 64-bit number) written in decimal or `0x` hex.
pub(crate) fn parse_id(v: &str) -> Option<u64> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

fn parse_u64_any(v: &str) -> Result<u64, String> {
    parse_id(v).ok_or_else(|| format!("invalid number {v:?}"))
}

fn parse_reason(v: &str) -> Result<RejectCode, String> {
    if let Ok(n) = v.parse::<u16>() {
        return RejectCode::from_u16(n).map_err(|_| format!("unknown reason {v}"));
    }
    // The codes are small numbers; 7 (the challenge) is none.
    (1..=16u16)
        .filter_map(|n| RejectCode::from_u16(n).ok())
        .find(|c| c.name().eq_ignore_ascii_case(v))
        .ok_or_else(|| format!("unknown reason {v:?}"))
}

fn parse_source(v: &str) -> Result<IpAddr, String> {
    v.parse().map_err(|_| {
        format!("invalid address {v:?} (expected an IP address, e.g. 192.0.2.2 or 2001:db8::2)")
    })
}

/// `--chunk`: a size from 1 byte to 1 GiB.
fn parse_chunk(v: &str) -> Result<usize, String> {
    usize::try_from(parse_size(v)?)
        .ok()
        .filter(|&c| c > 0 && c <= 1 << 30)
        .ok_or_else(|| "must be between 1 and 1G".into())
}

/// Parses the test client's arguments (without the program name).
pub(crate) fn parse_client_args(
    args: impl IntoIterator<Item = String>,
) -> Result<Parsed<ClientConfig>, String> {
    parse_clap(client_command(), args)?.and_then(client_config)
}

/// The test client's configuration from its arguments, checked against each other.
fn client_config(a: ClientArgs) -> Result<ClientConfig, String> {
    // The value is never quoted in an error: it is a secret.
    let secret = a
        .secret
        .map(|v| Secret::from_hex(&zeroize::Zeroizing::new(v)))
        .transpose()
        .map_err(|e| format!("--secret: {e}"))?;
    if secret.is_some() && a.secret_file.is_some() {
        return Err("--secret and --secret-file exclude each other".into());
    }
    if a.replay && secret.is_none() && a.secret_file.is_none() {
        return Err("--replay needs a secret (--secret or --secret-file)".into());
    }
    if a.replay && a.flood.is_some() {
        return Err("--replay and --flood exclude each other".into());
    }
    if a.flood_id && a.flood.is_none() {
        return Err("--flood-id needs --flood N".into());
    }
    if a.test_forge_proofs_from.is_some() && secret.is_none() && a.secret_file.is_none() {
        return Err("--test-forge-proofs-from needs a secret (--secret or --secret-file)".into());
    }
    let connect = a
        .connect
        .ok_or("--connect ADDR[:PORT] is required (see --help)")?;
    if [a.source, a.test_forge_proofs_from]
        .iter()
        .flatten()
        .any(|s| s.is_ipv4() != connect.is_ipv4())
    {
        return Err(
            "--source (or --test-forge-proofs-from) and --connect must both be IPv4 addresses or both IPv6 addresses".into(),
        );
    }
    Ok(ClientConfig {
        connect,
        client_id: a
            .client_id
            .ok_or("--client-id ID is required (see --help)")?,
        size: a.size.ok_or("--size SIZE is required (see --help)")?,
        queues: a.queues,
        queue_count: a.queue_count.unwrap_or(a.queues),
        proto_version: a.proto_version,
        write_pattern: a.write_pattern,
        verify_pattern: a.verify_pattern,
        expect_reject: a.expect_reject,
        print_descriptor: a.print_descriptor,
        descriptor_in_accept: a.descriptor_in_accept,
        hold: Duration::from_secs(a.hold),
        timeout: Duration::from_secs(a.timeout),
        chunk: a.chunk,
        secret,
        secret_file: a.secret_file,
        instance: a.instance,
        replay: a.replay,
        flood: a.flood,
        flood_id: a.flood_id,
        source: a.source,
        forge_from: a.test_forge_proofs_from,
    })
}

/// The command line of `program` parsed into `parsed`, acted upon: `Ok` with the
/// configuration to run, or `Err` with the exit status once the help, the version or
/// `--generate` (with `cmd`'s man page in `section`) is done, or a usage error
/// printed (one line, status 2).
pub(crate) fn command_line<T>(
    program: &str,
    parsed: Result<Parsed<T>, String>,
    cmd: fn() -> Command,
    section: &str,
) -> Result<T, ExitCode> {
    match parsed {
        Ok(Parsed::Run(cfg)) => Ok(cfg),
        Ok(Parsed::Help(text)) => {
            print!("{text}");
            Err(ExitCode::SUCCESS)
        }
        Ok(Parsed::Version) => {
            println!("{}", version_line(program));
            Err(ExitCode::SUCCESS)
        }
        Ok(Parsed::Generate(dir)) => Err(match generate(cmd(), section, &dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{program}: {e}");
                ExitCode::FAILURE
            }
        }),
        Err(e) => {
            eprintln!("{program}: {e}");
            Err(ExitCode::from(2))
        }
    }
}

/// Writes `cmd`'s man page (section `section`) and its bash, zsh and fish completions
/// into `dir` (`--generate DIR`, for the package build).
pub(crate) fn generate(cmd: Command, section: &str, dir: &std::path::Path) -> Result<(), String> {
    use clap_complete::Shell;
    let name = cmd.get_name().to_string();
    let fail = |what: &str, e: std::io::Error| format!("{}: {what}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| fail("create", e))?;
    let page = dir.join(format!("{name}.{section}"));
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .section(section)
        .render(&mut out)
        .map_err(|e| fail("render the man page", e))?;
    std::fs::write(&page, out).map_err(|e| fail(&page.display().to_string(), e))?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut cmd.clone(), &name, dir)
            .map_err(|e| fail(&format!("{shell} completion"), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's command line `args` as given.
    fn srv_raw(args: &[&str]) -> Result<Parsed<ServerConfig>, String> {
        parse_server_args(args.iter().map(|s| s.to_string()))
    }

    /// The server's command line `--insecure` then `args` (most tests are not about
    /// authentication).
    fn srv(args: &[&str]) -> Result<Parsed<ServerConfig>, String> {
        parse_server_args(
            std::iter::once("--insecure")
                .chain(args.iter().copied())
                .map(str::to_string),
        )
    }

    fn cli(args: &[&str]) -> Result<Parsed<ClientConfig>, String> {
        parse_client_args(args.iter().map(|s| s.to_string()))
    }

    /// `rswap-server --help`.
    fn server_long_help() -> String {
        server_command().render_long_help().to_string()
    }

    /// `rswap-testclient --help`.
    fn client_long_help() -> String {
        client_command().render_long_help().to_string()
    }

    #[test]
    fn listen_port_defaults_to_7471() {
        for (arg, want) in [
            ("192.0.2.1", "192.0.2.1:7471"),
            ("192.0.2.1:18515", "192.0.2.1:18515"),
            ("::1", "[::1]:7471"),
            ("[::1]", "[::1]:7471"),
            ("[::1]:9", "[::1]:9"),
            ("fe80::1%2", "[fe80::1%2]:7471"),
            ("[fe80::1%2]", "[fe80::1%2]:7471"),
        ] {
            let Ok(Parsed::Run(c)) = srv(&["--listen", arg, "--size", "96M"]) else {
                panic!("{arg} did not parse");
            };
            assert_eq!(c.listen, want.parse().unwrap(), "{arg}");
        }
        assert_eq!(DEFAULT_PORT, 7471);
        let Ok(Parsed::Run(c)) =
            cli(&["--connect", "192.0.2.2", "--client-id", "1", "--size", "1M"])
        else {
            panic!("--connect without a port did not parse");
        };
        assert_eq!(c.connect, "192.0.2.2:7471".parse().unwrap());
    }

    #[test]
    fn server_minimal_and_defaults() {
        let Ok(Parsed::Run(c)) = srv(&["--listen", "192.0.2.1:7471", "--size", "96M"]) else {
            panic!("did not parse");
        };
        assert_eq!(c.listen, "192.0.2.1:7471".parse().unwrap());
        assert_eq!(c.size, 96 << 20);
        assert_eq!(c.max_clients, DEFAULT_MAX_CLIENTS);
        assert_eq!(c.max_queues, 64);
        assert_eq!(c.max_pending_per_source, DEFAULT_MAX_PENDING_PER_SOURCE);
        assert_eq!(c.grace, Duration::from_secs(DEFAULT_GRACE_SECS));
        assert_eq!(c.keepalive, Duration::from_millis(DEFAULT_KEEPALIVE_MS));
        assert!(!c.hugepages);
        assert!(c.mlock);
        assert_eq!(c.log_level, Level::Info);
        assert_eq!(c.state_dir, None);
        assert_eq!(c.allow_list, None);
        assert!(c.insecure);
        assert_eq!(c.status_socket, None);
        assert!(!c.test_wrong_server_proof);
    }

    /// Every option of `cmd` but help, version and the hidden ones, by its long name.
    fn options(cmd: &Command) -> Vec<String> {
        let mut v: Vec<String> = cmd
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| a.get_long())
            .filter(|l| !["help", "version"].contains(l))
            .map(|l| format!("--{l}"))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn server_option_given_twice() {
        // `--listen A --listen B` once took B silently.
        let e = srv(&[
            "--listen",
            "192.0.2.1",
            "--listen",
            "192.0.2.2",
            "--size",
            "1G",
        ]);
        assert_eq!(
            e,
            Err("the argument '--listen <ADDR[:PORT]>' cannot be used multiple times".into())
        );
        // Every option, with a valid value: twice is refused, naming it (srv() gives
        // --insecure, and the base --listen and --size).
        let once = [
            ("--allow-list", Some("a")),
            ("--grace", Some("1")),
            ("--hugepages", None),
            ("--keepalive-ms", Some("0")),
            ("--log-level", Some("debug")),
            ("--max-clients", Some("2")),
            ("--max-pending-per-source", Some("2")),
            ("--max-queues", Some("2")),
            ("--no-mlock", None),
            ("--state-dir", Some("d")),
            ("--state-dir-on-disk", None),
            ("--status-socket", Some("s")),
            ("--test-wrong-server-proof", None),
        ];
        let mut all: Vec<String> = once.iter().map(|(o, _)| o.to_string()).collect();
        all.extend(["--insecure", "--listen", "--size"].map(String::from));
        all.sort();
        assert_eq!(all, options(&server_command()), "an option left out here");
        for (opt, value) in once {
            let mut args = vec!["--listen=192.0.2.1", "--size=1G"];
            for _ in 0..2 {
                args.push(opt);
                args.extend(value);
            }
            let e = srv(&args).expect_err("accepted twice");
            assert!(
                e.starts_with(&format!("the argument '{opt}")) && e.ends_with("multiple times"),
                "{args:?}: {e}"
            );
        }
        for opt in ["--insecure", "--size=2G", "--listen=192.0.2.1"] {
            let e = srv(&["--listen=192.0.2.1", "--size=1G", opt]).expect_err("accepted twice");
            assert!(e.ends_with("cannot be used multiple times"), "{opt}: {e}");
        }
    }

    #[test]
    fn generate_man_and_completions() {
        let dir = std::env::temp_dir().join(format!("rswap-generate-{}", std::process::id()));
        let got = srv_raw(&["--generate", &dir.display().to_string()]);
        assert_eq!(got, Ok(Parsed::Generate(dir.clone())));
        let got = cli(&[&format!("--generate={}", dir.display())]);
        assert!(matches!(got, Ok(Parsed::Generate(d)) if d == dir));
        for (cmd, section) in [(server_command(), "8"), (client_command(), "1")] {
            generate(cmd.clone(), section, &dir).expect("generate");
            let name = cmd.get_name();
            let page =
                std::fs::read_to_string(dir.join(format!("{name}.{section}"))).expect("man page");
            assert!(page.contains(&format!(".TH {name} {section} ")), "{page}");
            let bash = std::fs::read_to_string(dir.join(format!("{name}.bash"))).expect("bash");
            let zsh = std::fs::read_to_string(dir.join(format!("_{name}"))).expect("zsh");
            let fish = std::fs::read_to_string(dir.join(format!("{name}.fish"))).expect("fish");
            for opt in options(&cmd) {
                assert!(
                    page.contains(&opt.replace('-', "\\-")),
                    "{opt} not in the man page"
                );
                assert!(bash.contains(&opt), "{opt} not in the bash completion");
                assert!(zsh.contains(&opt), "{opt} not in the zsh completion");
                let long = opt.trim_start_matches('-');
                assert!(
                    fish.contains(&format!("-l {long}")),
                    "{opt} not in the fish completion"
                );
            }
            // The hidden option stays hidden.
            assert!(!page.contains("generate") && !bash.contains("--generate"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn server_test_wrong_server_proof() {
        let base = ["--listen", "192.0.2.1:7471", "--size", "96M"];
        let Ok(Parsed::Run(c)) = srv(&[&base[..], &["--test-wrong-server-proof"]].concat()) else {
            panic!("--test-wrong-server-proof did not parse");
        };
        assert!(c.test_wrong_server_proof);
        let e = srv(&[&base[..], &["--test-wrong-server-proof=1"]].concat())
            .expect_err("a value accepted");
        assert!(
            e.contains("--test-wrong-server-proof takes no value"),
            "{e}"
        );
        // Listed in --help, under the heading for tests.
        let tests = server_long_help()
            .find("For tests only")
            .expect("a heading for tests in --help");
        let opt = server_long_help()
            .find("--test-wrong-server-proof")
            .expect("in --help");
        assert!(
            opt > tests,
            "--test-wrong-server-proof is not under the tests heading"
        );
    }

    #[test]
    fn server_allow_list_or_insecure() {
        let base = ["--listen", "192.0.2.1:7471", "--size", "96M"];
        // Neither: refused, naming both options, in one line.
        let e = srv_raw(&base).expect_err("started without authentication");
        assert_eq!(e, NO_ALLOW_LIST);
        assert!(e.contains("--allow-list") && e.contains("--insecure") && !e.contains('\n'));
        let with = |extra: &[&str]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            srv_raw(&v)
        };
        let Ok(Parsed::Run(c)) = with(&["--allow-list", "/etc/rswap/allow"]) else {
            panic!("--allow-list did not parse");
        };
        assert_eq!(c.allow_list, Some(PathBuf::from("/etc/rswap/allow")));
        assert!(!c.insecure);
        let Ok(Parsed::Run(c)) = with(&["--insecure", "--allow-list=a"]) else {
            panic!("both did not parse");
        };
        assert_eq!(c.allow_list, Some(PathBuf::from("a")));
        assert!(c.insecure);
        let Ok(Parsed::Run(c)) = with(&["--insecure"]) else {
            panic!("--insecure did not parse");
        };
        assert_eq!((c.allow_list, c.insecure), (None, true));
        for (extra, want) in [
            (&["--allow-list"][..], "needs a value"),
            (&["--allow-list="][..], "--allow-list: empty path"),
            (&["--insecure=yes"][..], "--insecure takes no value"),
        ] {
            let e = with(extra).expect_err("accepted");
            assert!(e.contains(want), "{extra:?}: {e}");
        }
        // The other errors come first: the missing option is named.
        assert!(srv_raw(&["--size", "1G"]).is_err_and(|e| e.contains("--listen")));
    }

    #[test]
    fn server_all_options() {
        let Ok(Parsed::Run(c)) = srv(&[
            "--listen=[::1]:9",
            "--size=10000",
            "--max-clients",
            "3",
            "--max-queues",
            "65535",
            "--max-pending-per-source=7",
            "--grace=5",
            "--keepalive-ms",
            "2500",
            "--hugepages",
            "--no-mlock",
            "--log-level",
            "debug",
            "--state-dir",
            "/run/rswap",
        ]) else {
            panic!("did not parse");
        };
        assert_eq!(c.listen, "[::1]:9".parse().unwrap());
        assert_eq!(c.size, 8192, "rounded down to 4 KiB");
        assert_eq!(c.max_clients, 3);
        assert_eq!(c.max_queues, u16::MAX);
        assert_eq!(c.max_pending_per_source, 7);
        assert_eq!(c.grace, Duration::from_secs(5));
        assert_eq!(c.keepalive, Duration::from_millis(2500));
        assert!(c.hugepages);
        assert!(!c.mlock);
        assert_eq!(c.log_level, Level::Debug);
        assert_eq!(c.state_dir, Some(PathBuf::from("/run/rswap")));
        let Ok(Parsed::Run(c)) = srv(&["--listen=[::1]:9", "--size=1M", "--state-dir=d"]) else {
            panic!("did not parse");
        };
        assert_eq!(c.state_dir, Some(PathBuf::from("d")));
        for (v, ms) in [("0", 0), ("1000", 1000), ("600000", 600_000)] {
            let arg = format!("--keepalive-ms={v}");
            let Ok(Parsed::Run(c)) = srv(&["--listen=[::1]:9", "--size=1M", &arg]) else {
                panic!("{arg} did not parse");
            };
            assert_eq!(c.keepalive, Duration::from_millis(ms), "{arg}");
        }
    }

    #[test]
    fn server_help() {
        assert!(matches!(srv(&["--help"]), Ok(Parsed::Help(_))));
        assert!(matches!(
            srv(&["--size", "1G", "--help"]),
            Ok(Parsed::Help(_))
        ));
        // -h is --help, wherever an option may stand; without --insecure too.
        assert!(matches!(srv_raw(&["-h"]), Ok(Parsed::Help(_))));
        // The same text: -h is not a summary.
        assert_eq!(srv_raw(&["-h"]), srv_raw(&["--help"]));
        assert!(matches!(cli(&["-h"]), Ok(Parsed::Help(h)) if h == client_long_help()));
        assert!(matches!(
            srv(&["--listen", "1.2.3.4:5", "-h"]),
            Ok(Parsed::Help(_))
        ));
        assert!(matches!(
            srv(&["--size", "1G", "-h", "--frobnicate"]),
            Ok(Parsed::Help(_))
        ));
        // ... but not as an option's value.
        let Ok(Parsed::Run(c)) = srv(&["--listen=1.2.3.4:5", "--size=1G", "--state-dir", "-h"])
        else {
            panic!("-h as a value did not parse");
        };
        assert_eq!(c.state_dir, Some(PathBuf::from("-h")));
        // An option before it that is wrong is reported first, as for --help.
        assert!(srv(&["--frobnicate", "-h"]).is_err());
        for opt in [
            "--listen",
            "--size",
            "--max-clients",
            "--max-queues",
            "--max-pending-per-source",
            "--grace",
            "--keepalive-ms",
            "--hugepages",
            "--log-level",
            "--state-dir",
            "--allow-list",
            "--insecure",
            "--status-socket",
            "--version",
            "-h",
        ] {
            assert!(server_long_help().contains(opt), "{opt} not in --help");
        }
    }

    #[test]
    fn version() {
        assert_eq!(srv_raw(&["--version"]), Ok(Parsed::Version));
        // -V too, as clap's other programs (rswapctl).
        assert_eq!(srv_raw(&["-V"]), Ok(Parsed::Version));
        assert!(matches!(cli(&["-V"]), Ok(Parsed::Version)));
        assert_eq!(
            server_command().render_version(),
            format!("{}\n", version_line("rswap-server"))
        );
        assert_eq!(
            srv(&["--listen", "1.2.3.4:5", "--version"]),
            Ok(Parsed::Version)
        );
        assert!(matches!(cli(&["--version"]), Ok(Parsed::Version)));
        assert!(matches!(
            cli(&["--size", "1M", "--version"]),
            Ok(Parsed::Version)
        ));
        let line = version_line("rswap-server");
        assert_eq!(
            line,
            format!(
                "rswap-server {} (wire protocol {})",
                env!("RSWAP_SERVER_VERSION"),
                crate::wire::VERSION
            )
        );
        assert!(line.ends_with("(wire protocol 2)"), "{line}");
        assert!(!line.contains('\n'));
        assert!(client_long_help().contains("--version") && client_long_help().contains("-h"));
    }

    #[test]
    fn server_status_socket() {
        let base = ["--listen", "192.0.2.1:7471", "--size", "96M"];
        let with = |extra: &[&str]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            srv(&v)
        };
        for (extra, want) in [
            (
                &["--status-socket", "/run/rswap/server.sock"][..],
                "/run/rswap/server.sock",
            ),
            (&["--status-socket=s.sock"][..], "s.sock"),
        ] {
            let Ok(Parsed::Run(c)) = with(extra) else {
                panic!("{extra:?} did not parse");
            };
            assert_eq!(c.status_socket, Some(PathBuf::from(want)), "{extra:?}");
        }
        let longest = format!("/{}", "s".repeat(STATUS_SOCKET_MAX - 1));
        let Ok(Parsed::Run(c)) = with(&["--status-socket", &longest]) else {
            panic!("a path of {STATUS_SOCKET_MAX} bytes did not parse");
        };
        assert_eq!(c.status_socket, Some(PathBuf::from(&longest)));
        let too_long = format!("{longest}s");
        for (extra, want) in [
            (vec!["--status-socket"], "--status-socket needs a value"),
            (vec!["--status-socket="], "--status-socket: empty path"),
            (
                vec!["--status-socket", &too_long],
                "--status-socket: the path is 108 bytes long; a Unix socket path may have at most 107",
            ),
        ] {
            let e = with(&extra).expect_err("accepted");
            assert!(e.contains(want), "{extra:?}: {e:?} lacks {want:?}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn server_errors() {
        let err = |args: &[&str], want: &str| {
            let e = srv(args).expect_err("accepted");
            assert!(e.contains(want), "{args:?}: {e:?} lacks {want:?}");
            assert!(!e.contains('\n'), "one line: {e:?}");
        };
        err(&["--size", "1G"], "--listen");
        err(&["--listen", "1.2.3.4:5"], "--size");
        err(&["--listen", "1.2.3.4:", "--size", "1G"], "invalid address");
        err(
            &["--listen", "[1.2.3.4]", "--size", "1G"],
            "invalid address",
        );
        err(&["--listen", "::1:", "--size", "1G"], "invalid address");
        err(&["--listen", "nohost:5", "--size", "1G"], "invalid address");
        err(&["--listen", "1.2.3.4:5", "--size", "1Q"], "--size");
        err(&["--listen", "1.2.3.4:5", "--size", "100"], "less than 4K");
        err(&["--listen", "1.2.3.4:5", "--size", "0"], "less than 4K");
        err(&["--listen", "1.2.3.4:5", "--size"], "needs a value");
        err(
            &[
                "--listen",
                "1.2.3.4:5",
                "--size",
                "1G",
                "--max-clients",
                "0",
            ],
            "at least 1",
        );
        err(
            &[
                "--listen",
                "1.2.3.4:5",
                "--size",
                "1G",
                "--max-clients",
                "x",
            ],
            "invalid number",
        );
        for v in ["0", "65536", "18446744073709551616"] {
            let e = srv(&["--listen=1.2.3.4:5", "--size=1G", "--max-queues", v]);
            let want = if v.len() > 19 {
                "--max-queues: invalid number"
            } else {
                "--max-queues: must be between 1 and 65535"
            };
            assert!(e.as_ref().is_err_and(|e| e.contains(want)), "{v}: {e:?}");
        }
        let Ok(Parsed::Run(c)) = srv(&["--listen=1.2.3.4:5", "--size=1G", "--max-queues=1"]) else {
            panic!("--max-queues=1 did not parse");
        };
        assert_eq!(c.max_queues, 1);
        err(
            &[
                "--listen=1.2.3.4:5",
                "--size=1G",
                "--max-pending-per-source=0",
            ],
            "--max-pending-per-source: must be at least 1",
        );
        err(
            &[
                "--listen=1.2.3.4:5",
                "--size=1G",
                "--max-pending-per-source=-1",
            ],
            "--max-pending-per-source: invalid number",
        );
        err(
            &["--listen", "1.2.3.4:5", "--size", "1G", "--grace", "-1"],
            "invalid number",
        );
        err(
            &[
                "--listen",
                "1.2.3.4:5",
                "--size",
                "1G",
                "--state-dir-on-disk",
            ],
            "--state-dir-on-disk needs --state-dir DIR",
        );
        let Ok(Parsed::Run(c)) = srv(&[
            "--listen",
            "1.2.3.4:5",
            "--size",
            "1G",
            "--state-dir=/srv/s",
            "--state-dir-on-disk",
        ]) else {
            panic!("--state-dir-on-disk did not parse");
        };
        assert!(c.state_dir_on_disk);
        for v in ["31622401", "18446744073709551615"] {
            err(
                &["--listen", "1.2.3.4:5", "--size", "1G", "--grace", v],
                "--grace: must be at most 31622400 seconds (366 days)",
            );
        }
        let Ok(Parsed::Run(c)) = srv(&[
            "--listen",
            "1.2.3.4:5",
            "--size",
            "1G",
            "--grace",
            "31622400",
        ]) else {
            panic!("the longest --grace did not parse");
        };
        // What the server does with it when a client goes idle.
        assert!(std::time::Instant::now().checked_add(c.grace).is_some());
        for v in ["1", "999", "600001", "18446744073709551615"] {
            err(
                &["--listen", "1.2.3.4:5", "--size", "1G", "--keepalive-ms", v],
                "--keepalive-ms: must be 0 (off) or between 1000 and 600000",
            );
        }
        for v in ["-1", "5s", "1e3", ""] {
            err(
                &["--listen", "1.2.3.4:5", "--size", "1G", "--keepalive-ms", v],
                "--keepalive-ms: invalid number",
            );
        }
        err(
            &["--listen", "1.2.3.4:5", "--size", "1G", "--keepalive-ms"],
            "needs a value",
        );
        err(
            &[
                "--listen",
                "1.2.3.4:5",
                "--size",
                "1G",
                "--log-level",
                "loud",
            ],
            "--log-level: invalid value \"loud\" (error, warn, info, debug)",
        );
        err(
            &["--listen", "1.2.3.4:5", "--size", "1G", "--hugepages=yes"],
            "takes no value",
        );
        err(
            &["--listen", "1.2.3.4:5", "--size", "1G", "--frobnicate"],
            "unexpected argument '--frobnicate' found",
        );
        err(
            &["--listen", "1.2.3.4:5", "--size", "1G", "extra"],
            "unexpected argument",
        );
        err(&["-x"], "unexpected argument");
        err(&["-help"], "unexpected argument");
        err(
            &["--listen", "1.2.3.4:5", "--size", "1G", "--state-dir"],
            "needs a value",
        );
        err(
            &["--listen", "1.2.3.4:5", "--size", "1G", "--state-dir="],
            "empty path",
        );
    }

    #[test]
    fn client_parse() {
        let Ok(Parsed::Run(c)) = cli(&[
            "--connect",
            "192.0.2.1:7471",
            "--client-id",
            "0x10",
            "--size",
            "4M",
            "--queues",
            "2",
            "--write-pattern",
            "7",
            "--expect-reject",
            "toolarge",
        ]) else {
            panic!("did not parse");
        };
        assert_eq!(c.client_id, 16);
        assert_eq!(c.size, 4 << 20);
        assert_eq!((c.queues, c.queue_count), (2, 2));
        assert_eq!(c.write_pattern, Some(7));
        assert_eq!(c.expect_reject, Some(RejectCode::TooLarge));
        assert_eq!(c.proto_version, crate::wire::VERSION);
        assert_eq!(c.chunk, 64 << 10);
        let Ok(Parsed::Run(c)) = cli(&[
            "--connect=1.2.3.4:5",
            "--client-id=1",
            "--size=0",
            "--expect-reject=6",
            "--queue-count=3",
        ]) else {
            panic!("did not parse");
        };
        assert_eq!(c.size, 0);
        assert_eq!(c.expect_reject, Some(RejectCode::QueueMismatch));
        assert_eq!((c.queues, c.queue_count), (1, 3));
        assert!(c.secret.is_none() && c.secret_file.is_none());
        assert_eq!(c.instance, DEFAULT_INSTANCE);
        assert!(!c.replay);
        assert_eq!(c.flood, None);
    }

    #[test]
    fn client_authentication_options() {
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        let base = ["--connect", "1.2.3.4:5", "--client-id", "1", "--size", "4M"];
        let with = |extra: &[&str]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            cli(&v)
        };
        let Ok(Parsed::Run(c)) = with(&["--secret", hex, "--instance", "0xabc", "--replay"]) else {
            panic!("did not parse");
        };
        let want = Secret::from_hex(hex).expect("hex");
        assert!(c.secret.is_some_and(|s| s.ct_eq(&want)));
        assert_eq!(c.instance, 0xabc);
        assert!(c.replay);
        let Ok(Parsed::Run(c)) = with(&["--secret-file=/run/s", "--replay", "--instance=0"]) else {
            panic!("did not parse");
        };
        assert_eq!(c.secret_file, Some(PathBuf::from("/run/s")));
        assert_eq!(c.instance, 0);
        let Ok(Parsed::Run(c)) = with(&["--flood", "1000"]) else {
            panic!("did not parse");
        };
        assert_eq!(c.flood, Some(1000));
        assert!(!c.flood_id);
        let Ok(Parsed::Run(c)) = with(&["--flood-id", "--flood=5"]) else {
            panic!("did not parse");
        };
        assert_eq!((c.flood, c.flood_id, c.client_id), (Some(5), true, 1));
        assert_eq!(c.forge_from, None);
        let Ok(Parsed::Run(c)) = with(&["--secret", hex, "--test-forge-proofs-from", "192.0.2.3"])
        else {
            panic!("did not parse");
        };
        assert_eq!(c.forge_from, Some("192.0.2.3".parse().expect("ip")));
        for (reason, code) in [
            ("AuthFailed", RejectCode::AuthFailed),
            ("authrequired", RejectCode::AuthRequired),
            ("InUse", RejectCode::InUse),
            ("10", RejectCode::InUse),
            ("8", RejectCode::AuthFailed),
        ] {
            let Ok(Parsed::Run(c)) = with(&["--expect-reject", reason]) else {
                panic!("{reason} did not parse");
            };
            assert_eq!(c.expect_reject, Some(code), "{reason}");
        }
        let secret_like = "5ec2e75ec2e75ec2e75ec2e75ec2e75e";
        for (extra, want) in [
            (vec!["--secret", &hex[..30]], "30 hex digits"),
            (vec!["--secret", "zz"], "not hexadecimal"),
            (vec!["--secret"], "needs a value"),
            (vec!["--secret-file="], "empty path"),
            (
                vec!["--secret", hex, "--secret-file", "f"],
                "exclude each other",
            ),
            (vec!["--replay"], "--replay needs a secret"),
            (vec!["--replay=1", "--secret", hex], "takes no value"),
            (vec!["--flood", "0"], "--flood: must be at least 1"),
            (vec!["--flood", "x"], "invalid number"),
            (
                vec!["--secret", hex, "--replay", "--flood", "3"],
                "exclude each other",
            ),
            (vec!["--instance", "-1"], "--instance: invalid number"),
            (
                vec!["--secret", &format!("{secret_like}zz")],
                "not hexadecimal",
            ),
            (vec!["--expect-reject", "11"], "unknown reason"),
            (vec!["--flood-id"], "--flood-id needs --flood N"),
            (vec!["--flood-id=1", "--flood", "3"], "takes no value"),
            (
                vec!["--test-forge-proofs-from", "192.0.2.3"],
                "--test-forge-proofs-from needs a secret",
            ),
            (
                vec!["--secret", hex, "--test-forge-proofs-from", "::1"],
                "must both be IPv4",
            ),
        ] {
            let e = with(&extra).expect_err("accepted");
            assert!(e.contains(want), "{extra:?}: {e:?} lacks {want:?}");
            assert!(
                !e.contains("5ec2") && !e.contains(&hex[..30]),
                "secret in {e:?}"
            );
        }
        for opt in [
            "--secret",
            "--secret-file",
            "--instance",
            "--replay",
            "--flood",
            "--flood-id",
            "--source",
        ] {
            assert!(client_long_help().contains(opt), "{opt} not in --help");
        }
    }

    #[test]
    fn client_source() {
        let with = |connect: &str, extra: &[&str]| {
            let mut v = vec!["--connect", connect, "--client-id", "1", "--size", "4M"];
            v.extend_from_slice(extra);
            cli(&v)
        };
        let Ok(Parsed::Run(c)) = with("192.0.2.1:7471", &[]) else {
            panic!("did not parse");
        };
        assert_eq!(c.source, None);
        // With every mode: plain, --replay, --flood.
        for extra in [
            &["--source", "192.0.2.2"][..],
            &["--source=192.0.2.2", "--flood", "10", "--flood-id"][..],
            &[
                "--source",
                "192.0.2.2",
                "--replay",
                "--secret",
                &"ab".repeat(16),
            ][..],
        ] {
            let Ok(Parsed::Run(c)) = with("192.0.2.1:7471", extra) else {
                panic!("{extra:?} did not parse");
            };
            assert_eq!(
                c.source,
                Some("192.0.2.2".parse().expect("ip")),
                "{extra:?}"
            );
        }
        let Ok(Parsed::Run(c)) = with("[fe80::1%2]:7471", &["--source", "fe80::2"]) else {
            panic!("IPv6 did not parse");
        };
        assert_eq!(c.source, Some("fe80::2".parse().expect("ip")));
        for (connect, extra, want) in [
            (
                "192.0.2.1:7471",
                &["--source"][..],
                "--source needs a value",
            ),
            (
                "192.0.2.1:7471",
                &["--source", "192.0.2.2:1"][..],
                "--source: invalid address",
            ),
            (
                "192.0.2.1:7471",
                &["--source", "host"][..],
                "--source: invalid address",
            ),
            (
                "192.0.2.1:7471",
                &["--source", "::1"][..],
                "must both be IPv4",
            ),
            (
                "[::1]:7471",
                &["--source", "127.0.0.1"][..],
                "must both be IPv4",
            ),
        ] {
            let e = with(connect, extra).expect_err("accepted");
            assert!(e.contains(want), "{extra:?}: {e:?} lacks {want:?}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn ids() {
        assert_eq!(parse_id("0"), Some(0));
        assert_eq!(parse_id("0x10"), Some(16));
        assert_eq!(parse_id("0XfF"), Some(255));
        assert_eq!(parse_id("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_id("0xffffffffffffffff"), Some(u64::MAX));
        for bad in [
            "",
            "0x",
            "x1",
            "-1",
            "18446744073709551616",
            "0x1_0",
            " 1",
            "1 ",
        ] {
            assert_eq!(parse_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn client_errors() {
        let base = ["--connect", "1.2.3.4:5", "--client-id", "1", "--size", "4M"];
        let err = |extra: &[&str], want: &str| {
            let mut args: Vec<&str> = base.to_vec();
            args.extend_from_slice(extra);
            let e = cli(&args).expect_err("accepted");
            assert!(e.contains(want), "{extra:?}: {e:?} lacks {want:?}");
        };
        err(&["--queues", "0"], "at least 1");
        err(&["--expect-reject", "Nope"], "unknown reason");
        err(&["--expect-reject", "7"], "unknown reason");
        let e = cli(&["--connect=1.2.3.4:5", "--client-id", "0xzz", "--size=4M"]);
        assert!(e.is_err_and(|e| e.contains("--client-id: invalid number \"0xzz\"")));
        // Each option once: a second one is refused, not taken over the first.
        err(
            &["--client-id", "2"],
            "'--client-id <ID>' cannot be used multiple times",
        );
        err(
            &["--replay", "--replay"],
            "'--replay' cannot be used multiple times",
        );
        err(&["--chunk", "0"], "--chunk");
        err(&["--bogus"], "unexpected argument '--bogus'");
        assert!(cli(&["--client-id", "1", "--size", "1M"]).is_err());
        assert!(matches!(cli(&["--help"]), Ok(Parsed::Help(_))));
        assert!(matches!(cli(&["-h"]), Ok(Parsed::Help(_))));
        assert!(cli(&["-v"]).is_err_and(|e| e.contains("unexpected argument")));
    }
}
