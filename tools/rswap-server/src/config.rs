// SPDX-License-Identifier: GPL-2.0

//! Command lines of `rswap-server` and `rswap-testclient`, parsed into plain structs.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

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
    /// `--help` (or `-h`) was given.
    Help,
    /// `--version` was given.
    Version,
}

/// The line `--version` prints: the program, its version and the wire protocol version
/// it speaks, e.g. `rswap-server 0.1.0 (wire protocol 2)`.
pub(crate) fn version_line(program: &str) -> String {
    format!(
        "{program} {} (wire protocol {})",
        env!("CARGO_PKG_VERSION"),
        crate::wire::VERSION
    )
}

/// The longest `--status-socket` path: a Unix socket address holds 108 bytes, the
/// last one the terminating NUL.
pub(crate) const STATUS_SOCKET_MAX: usize = 107;

/// Splits `--opt=value` / `--opt value` pairs and flags.
struct Args<I: Iterator<Item = String>> {
    it: I,
}

impl<I: Iterator<Item = String>> Args<I> {
    /// Next option name and its inline value, if any.
    fn next_opt(&mut self) -> Option<Result<(String, Option<String>), String>> {
        let arg = self.it.next()?;
        // The one short option: `-h`, as everywhere.
        if arg == "-h" {
            return Some(Ok(("--help".to_string(), None)));
        }
        if !arg.starts_with("--") || arg.len() == 2 {
            return Some(Err(format!("unexpected argument {arg:?} (see --help)")));
        }
        Some(Ok(match arg.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (arg, None),
        }))
    }

    fn value(&mut self, opt: &str, inline: Option<String>) -> Result<String, String> {
        match inline {
            Some(v) => Ok(v),
            None => self
                .it
                .next()
                .ok_or_else(|| format!("{opt} needs a value (see --help)")),
        }
    }
}

fn no_value(opt: &str, inline: Option<String>) -> Result<(), String> {
    match inline {
        Some(_) => Err(format!("{opt} takes no value")),
        None => Ok(()),
    }
}

/// rswap's port: the kernel module's default, and where `--listen` / `--connect` go
/// when the address has no `:PORT`. Not perftest's 18515, so both can run on one host.
pub(crate) const DEFAULT_PORT: u16 = 7471;

/// `IP:PORT`, or an IP alone (IPv6 bare or in brackets, with a scope id or not) on
/// [`DEFAULT_PORT`].
fn parse_addr(opt: &str, v: &str) -> Result<SocketAddr, String> {
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
                "{opt}: invalid address {v:?} (expected IP or IP:PORT, e.g. 192.0.2.1, \
                 192.0.2.1:7471 or [::1]:7471; the port defaults to {DEFAULT_PORT})"
            )
        })
}

fn parse_num<T: std::str::FromStr>(opt: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{opt}: invalid number {v:?}"))
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
/// Default `--keepalive-ms`.
pub(crate) const DEFAULT_KEEPALIVE_MS: u64 = 5000;
/// The shortest and longest `--keepalive-ms` other than 0 (off).
pub(crate) const KEEPALIVE_MS_RANGE: std::ops::RangeInclusive<u64> = 1000..=600_000;

/// `rswap-server --help`.
pub(crate) const SERVER_HELP: &str = "\
rswap-server: hand out registered remote memory to rswap clients over rdma_cm.

Usage: rswap-server --listen ADDR[:PORT] --size SIZE --allow-list FILE [options]
       rswap-server --listen ADDR[:PORT] --size SIZE --insecure [options]
       rswap-server --version | --help | -h

Each client (identified by the client id in its connect request) gets one memory
region of exactly the size it asks for (rounded up to 4 KiB), registered for
REMOTE_READ | REMOTE_WRITE in a protection domain of its own. All queues
(connections) of a client share that region and its rkey; every queue receives
the region descriptor in one SEND once it is established. The data path is
one-sided: the server does nothing per I/O.

Clients authenticate with a secret they share with the server (an HMAC-SHA256
challenge and response on every queue, and the server proves itself in the region
descriptor), and a region belongs to one instance of its client: another instance
with the same client id is refused (InUse) while the region exists.

Options:
  --listen ADDR[:PORT] address to listen on with rdma_cm (RC, port space TCP), e.g.
                       192.0.2.1:7471 or [fe80::1%2]:7471; the port defaults to
                       7471, rswap's (the kernel module's default). Required.
  --allow-list FILE    the clients that may connect: one per line,
                         CLIENT_ID SECRET [ADDR[,ADDR...]]
                       CLIENT_ID decimal or 0x hex (not 0), SECRET 32 to 128 hex
                       digits (16 to 64 bytes), optionally the IPv4/IPv6 addresses
                       the client may connect from (any if absent); '#' comments and
                       blank lines allowed. The file must not be readable or
                       writable by group or others (chmod 600). A bad line stops the
                       start with FILE:LINE and what is wrong. A listed client id
                       must prove its secret on every connect (AuthFailed if it
                       cannot, AuthRequired if it does not try).
  --insecure           admit clients that are not in the allow-list without
                       authentication (logged as a warning at start). Without
                       --allow-list, --insecure is required: the server refuses to
                       start with neither.
  --size SIZE          total memory the server may hand out to all clients together
                       (a pool; rounded down to 4 KiB). Suffixes K, M, G, T (binary).
                       A request larger than what remains is rejected (TooLarge).
                       Required.
  --max-clients N      most clients holding a region at once, counting clients in
                       their grace period (default 64); more are rejected
                       (TooManyClients).
  --max-queues N       most queues (connections) one client may announce in its
                       queue_count, 1..65535 (default 64, the kernel client's
                       maximum); a request announcing more is rejected
                       (BadRequest).
  --max-pending-per-source N
                       most connect requests from one source address that the
                       server has accepted but that have not reached ESTABLISHED
                       yet (default 64); more are rejected (TooManyClients) until
                       some are established or gone.
  --grace SECS         keep a client's region this long after its last queue
                       disconnected (default 60); a reconnect of the same client id
                       within it gets the same region and data back (epoch + 1).
                       0 frees the region at once.
  --keepalive-ms N     probe every established queue every N milliseconds with a
                       zero-length RDMA WRITE (default 5000; 0: off; otherwise
                       1000..600000). A queue whose probe fails, or has not
                       completed by the next probe, is closed as if it had
                       disconnected: a client host that crashed or lost power is
                       noticed within one to two periods, and its region is then
                       kept for --grace.
  --hugepages          back regions with hugepages (MAP_HUGETLB); regions are then
                       charged to the pool in whole hugepages. Fails at start when
                       no hugepages are reserved (vm.nr_hugepages).
  --no-mlock           do not lock the server's own memory. By default the server
                       calls mlockall(MCL_CURRENT | MCL_FUTURE) at start, so its code,
                       heap and stack are never swapped out: a server whose pages sit
                       on a swap device it serves (a client on the same host) could
                       otherwise wait on its own clients. A failure is logged and the
                       server runs on.
  --state-dir DIR      keep every region's memory in a file in DIR (plus a small
                       metadata file), so regions outlive the server process: a
                       restarted server (after SIGKILL, a crash, SIGTERM or an
                       upgrade) maps them again, with the same region ids, and each
                       client that reconnects within --grace of the start gets its
                       region and data back. DIR should be on tmpfs (or hugetlbfs
                       with --hugepages) large enough for the whole pool: memory
                       that survives the process but not a reboot. Created (mode
                       0700) if missing; one server per DIR. Incomplete or
                       inconsistent entries are logged and deleted at start.
  --status-socket PATH serve the server's status on a Unix stream socket at PATH
                       (recommended: /run/rswap/server.sock, where `rswapctl
                       server-status` looks by default). Created with mode 0600
                       (a missing directory with mode 0755); a stale socket file
                       is replaced; removed at exit. A client sends one line,
                       `status` (JSON: the pool and every client's region, queues,
                       state and last activity) or `metrics` (Prometheus text
                       format 0.0.4), gets the answer and the connection is
                       closed. Never any secret.
  --log-level LVL      error, warn, info (default) or debug. Logs are one line each,
                       key=value, on stderr.
  --version            print the version and the wire protocol version and exit.
  --help, -h           print this help and exit.

For tests only (never on a server that real clients use):
  --test-wrong-server-proof
                       sign every region descriptor with a wrong key (the client's
                       secret with its first byte flipped) while checking client
                       proofs normally, so that a test can see a client refuse a
                       server whose proof is wrong: every authenticated client then
                       refuses its descriptor. Logged as a warning at start.

SIGINT or SIGTERM disconnects all clients, deregisters and frees all regions and
exits with status 0; with --state-dir it keeps the regions' files instead, for the
next server (SIGKILL and crashes keep them too; a reboot of a tmpfs loses them).
SIGUSR1 disconnects all clients but keeps their regions for the grace period:
clients reconnect and find their data (rswap does so by itself).
A bad option or an address that cannot be bound exits with
status 2 or 1 and one line on stderr.
";

/// Parses the server's arguments (without the program name).
pub(crate) fn parse_server_args(
    args: impl IntoIterator<Item = String>,
) -> Result<Parsed<ServerConfig>, String> {
    let mut a = Args {
        it: args.into_iter(),
    };
    let mut listen = None;
    let mut size = None;
    let mut max_clients = DEFAULT_MAX_CLIENTS;
    let mut max_queues = DEFAULT_MAX_QUEUES;
    let mut max_pending_per_source = DEFAULT_MAX_PENDING_PER_SOURCE;
    let mut grace = DEFAULT_GRACE_SECS;
    let mut keepalive_ms = DEFAULT_KEEPALIVE_MS;
    let mut hugepages = false;
    let mut mlock = true;
    let mut log_level = Level::Info;
    let mut state_dir = None;
    let mut allow_list = None;
    let mut insecure = false;
    let mut status_socket = None;
    let mut test_wrong_server_proof = false;
    while let Some(opt) = a.next_opt() {
        let (opt, inline) = opt?;
        match opt.as_str() {
            "--help" => return Ok(Parsed::Help),
            "--version" => return Ok(Parsed::Version),
            "--status-socket" => {
                let v = a.value(&opt, inline)?;
                if v.is_empty() {
                    return Err("--status-socket: empty path".into());
                }
                if v.len() > STATUS_SOCKET_MAX {
                    return Err(format!(
                        "--status-socket: the path is {} bytes long; a Unix socket path may have at most {STATUS_SOCKET_MAX}",
                        v.len()
                    ));
                }
                status_socket = Some(PathBuf::from(v));
            }
            "--allow-list" => {
                let v = a.value(&opt, inline)?;
                if v.is_empty() {
                    return Err("--allow-list: empty path".into());
                }
                allow_list = Some(PathBuf::from(v));
            }
            "--insecure" => {
                no_value(&opt, inline)?;
                insecure = true;
            }
            "--test-wrong-server-proof" => {
                no_value(&opt, inline)?;
                test_wrong_server_proof = true;
            }
            "--state-dir" => {
                let v = a.value(&opt, inline)?;
                if v.is_empty() {
                    return Err("--state-dir: empty path".into());
                }
                state_dir = Some(PathBuf::from(v));
            }
            "--listen" => listen = Some(parse_addr(&opt, &a.value(&opt, inline)?)?),
            "--size" => {
                let v = a.value(&opt, inline)?;
                let n = parse_size(&v).map_err(|e| format!("--size: {e}"))?;
                let n = n / PAGE * PAGE;
                if n == 0 {
                    return Err(format!("--size: {v:?} is less than 4K"));
                }
                size = Some(n);
            }
            "--max-clients" => {
                max_clients = parse_num(&opt, &a.value(&opt, inline)?)?;
                if max_clients == 0 {
                    return Err("--max-clients must be at least 1".into());
                }
            }
            "--max-queues" => {
                let n: u64 = parse_num(&opt, &a.value(&opt, inline)?)?;
                max_queues = u16::try_from(n)
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or("--max-queues must be between 1 and 65535")?;
            }
            "--max-pending-per-source" => {
                max_pending_per_source = parse_num(&opt, &a.value(&opt, inline)?)?;
                if max_pending_per_source == 0 {
                    return Err("--max-pending-per-source must be at least 1".into());
                }
            }
            "--grace" => grace = parse_num(&opt, &a.value(&opt, inline)?)?,
            "--keepalive-ms" => {
                keepalive_ms = parse_num(&opt, &a.value(&opt, inline)?)?;
                if keepalive_ms != 0 && !KEEPALIVE_MS_RANGE.contains(&keepalive_ms) {
                    return Err(format!(
                        "--keepalive-ms must be 0 (off) or between {} and {}",
                        KEEPALIVE_MS_RANGE.start(),
                        KEEPALIVE_MS_RANGE.end()
                    ));
                }
            }
            "--hugepages" => {
                no_value(&opt, inline)?;
                hugepages = true;
            }
            "--no-mlock" => {
                no_value(&opt, inline)?;
                mlock = false;
            }
            "--log-level" => {
                let v = a.value(&opt, inline)?;
                log_level = Level::parse(&v).ok_or_else(|| {
                    format!("--log-level: unknown level {v:?} (error, warn, info or debug)")
                })?;
            }
            _ => return Err(format!("unknown option {opt:?} (see --help)")),
        }
    }
    let listen = listen.ok_or("--listen ADDR[:PORT] is required (see --help)")?;
    let size = size.ok_or("--size SIZE is required (see --help)")?;
    if allow_list.is_none() && !insecure {
        return Err(NO_ALLOW_LIST.into());
    }
    Ok(Parsed::Run(ServerConfig {
        listen,
        size,
        max_clients,
        max_queues,
        max_pending_per_source,
        grace: Duration::from_secs(grace),
        keepalive: Duration::from_millis(keepalive_ms),
        hugepages,
        mlock,
        log_level,
        state_dir,
        allow_list,
        insecure,
        status_socket,
        test_wrong_server_proof,
    }))
}

/// The error of a server command line with neither `--allow-list` nor `--insecure`.
pub(crate) const NO_ALLOW_LIST: &str = "no --allow-list FILE given: clients could not be authenticated; give --allow-list FILE (see --help), or --insecure to admit clients without authentication";

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
}

/// Default `--instance`: the same for every run, so that a test that reconnects with a
/// new process is the same instance of its client.
pub(crate) const DEFAULT_INSTANCE: u64 = 1;

/// `rswap-testclient --help`.
pub(crate) const CLIENT_HELP: &str = "\
rswap-testclient: connect to rswap-server like the kernel module would, and test it.

Usage: rswap-testclient --connect ADDR[:PORT] --client-id ID --size SIZE [options]
       rswap-testclient --version | --help | -h

Opens --queues connections (queue 0 first), each with a receive posted before
connecting, and checks that every queue receives the same valid region
descriptor. Prints one line per queue: queue=I region_id=.. epoch=.. rkey=..
remote_addr=.. length=.. flags=.. reused=0|1 auth=mutual|none.

With a secret (--secret or --secret-file) every queue connects twice: a hello,
which the server answers with a challenge, then the proof; the server's proof in
the descriptor is checked (a wrong one fails with a clear message). Without a
secret the request carries no authentication, which only a server started with
--insecure admits.

Options:
  --connect ADDR[:PORT] server address (the port defaults to 7471). Required.
  --client-id ID        client id (decimal or 0x hex). Required.
  --size SIZE           requested region size, suffixes K/M/G/T. Required.
  --queues N            connections to open (default 1).
  --queue-count N       queue_count to announce (default: --queues); for tests.
  --secret HEX          the client's secret, 32 to 128 hex digits (16 to 64 bytes).
  --secret-file FILE    read the secret (hex, surrounding whitespace ignored) from
                        FILE; better than --secret, which other users can see.
  --instance N          the instance id to send (decimal or 0x hex; default 1). A
                        region belongs to one instance of its client id: another
                        instance is refused with InUse while it exists.
  --replay              with a secret: connect queue 0, disconnect, then send the
                        same proof again on a new connection and print
                        replay=rejected reason=R (exit 0) or replay=accepted (exit 1).
  --flood N             make N bogus connection attempts as fast as possible (a
                        hello for a random client id, and a proof with a random MAC
                        for those that get a challenge) and print
                        flood attempts=N challenged=C rejected=R accepted=A
                        errors=E reasons=NAME:COUNT,... ms=T; exit 1 if any was
                        accepted or none got an answer.
  --flood-id            with --flood: every hello names --client-id instead of a
                        random id, so that a listed id is challenged every time and
                        each challenge is used up by a proof with a random MAC
                        (refused, AuthFailed).
  --source ADDR         connect from this local IP address (the source address of
                        rdma_resolve_addr) instead of the one the routing table
                        picks, in every mode: e.g. to flood from a second address of
                        the host. Of the same family as --connect; an IPv6 source
                        takes --connect's scope id.
  --proto-version V     protocol version to send (default 2; 1 sends a 32-byte
                        version-1 request); for tests.
  --write-pattern SEED  RDMA WRITE a pattern derived from SEED over the whole
                        region, through queue 0.
  --verify-pattern SEED RDMA READ the whole region through the last queue and
                        compare every byte with the pattern of SEED; a mismatch
                        exits 1 with the first bad offset.
  --expect-reject R     exit 0 only if the connect is rejected with reason R
                        (BadVersion, TooLarge, NoMemory, BadRequest,
                        TooManyClients, QueueMismatch, AuthFailed,
                        AuthRequired, InUse or its number); prints
                        reason=.. code=.. max_size=..
  --print-descriptor    print the descriptor lines (default when no other mode).
  --hold SECS           stay connected SECS seconds before disconnecting.
  --timeout SECS        limit for each connect step and RDMA operation (default 30).
  --chunk SIZE          bytes per RDMA operation (default 64K).
  --version             print the version and the wire protocol version and exit.
  --help, -h            print this help and exit.
Exit status: 0 success, 1 failure, 2 usage error.
";

/// A client id (or another 64-bit number) written in decimal or `0x` hex.
pub(crate) fn parse_id(v: &str) -> Option<u64> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

fn parse_u64_any(opt: &str, v: &str) -> Result<u64, String> {
    parse_id(v).ok_or_else(|| format!("{opt}: invalid number {v:?}"))
}

fn parse_reason(v: &str) -> Result<RejectCode, String> {
    if let Ok(n) = v.parse::<u16>() {
        return RejectCode::from_u16(n).map_err(|_| format!("--expect-reject: unknown reason {v}"));
    }
    // The codes are small numbers; 7 (the challenge) is none.
    (1..=16u16)
        .filter_map(|n| RejectCode::from_u16(n).ok())
        .find(|c| c.name().eq_ignore_ascii_case(v))
        .ok_or_else(|| format!("--expect-reject: unknown reason {v:?}"))
}

/// Parses the test client's arguments (without the program name).
pub(crate) fn parse_client_args(
    args: impl IntoIterator<Item = String>,
) -> Result<Parsed<ClientConfig>, String> {
    let mut a = Args {
        it: args.into_iter(),
    };
    let (mut connect, mut client_id, mut size) = (None, None, None);
    let mut queues: u16 = 1;
    let mut queue_count = None;
    let mut proto_version = crate::wire::VERSION;
    let (mut write_pattern, mut verify_pattern, mut expect_reject) = (None, None, None);
    let mut print_descriptor = false;
    let (mut hold, mut timeout) = (0u64, 30u64);
    let mut chunk: u64 = 64 << 10;
    let (mut secret, mut secret_file) = (None, None);
    let mut instance = DEFAULT_INSTANCE;
    let (mut replay, mut flood, mut flood_id) = (false, None, false);
    let mut source: Option<IpAddr> = None;
    while let Some(opt) = a.next_opt() {
        let (opt, inline) = opt?;
        match opt.as_str() {
            "--help" => return Ok(Parsed::Help),
            "--version" => return Ok(Parsed::Version),
            // The value is never quoted in an error: it is a secret.
            "--secret" => {
                let v = a.value(&opt, inline)?;
                secret = Some(Secret::from_hex(&v).map_err(|e| format!("--secret: {e}"))?);
            }
            "--secret-file" => {
                let v = a.value(&opt, inline)?;
                if v.is_empty() {
                    return Err("--secret-file: empty path".into());
                }
                secret_file = Some(PathBuf::from(v));
            }
            "--instance" => instance = parse_u64_any(&opt, &a.value(&opt, inline)?)?,
            "--replay" => {
                no_value(&opt, inline)?;
                replay = true;
            }
            "--flood" => {
                let n: u64 = parse_num(&opt, &a.value(&opt, inline)?)?;
                if n == 0 {
                    return Err("--flood must be at least 1".into());
                }
                flood = Some(n);
            }
            "--flood-id" => {
                no_value(&opt, inline)?;
                flood_id = true;
            }
            "--source" => {
                let v = a.value(&opt, inline)?;
                source = Some(v.parse().map_err(|_| {
                    format!("--source: invalid address {v:?} (expected an IP address, e.g. 192.0.2.2 or 2001:db8::2)")
                })?);
            }
            "--connect" => connect = Some(parse_addr(&opt, &a.value(&opt, inline)?)?),
            "--client-id" => client_id = Some(parse_u64_any(&opt, &a.value(&opt, inline)?)?),
            "--size" => {
                size =
                    Some(parse_size(&a.value(&opt, inline)?).map_err(|e| format!("--size: {e}"))?)
            }
            "--queues" => queues = parse_num(&opt, &a.value(&opt, inline)?)?,
            "--queue-count" => queue_count = Some(parse_num(&opt, &a.value(&opt, inline)?)?),
            "--proto-version" => proto_version = parse_num(&opt, &a.value(&opt, inline)?)?,
            "--write-pattern" => {
                write_pattern = Some(parse_u64_any(&opt, &a.value(&opt, inline)?)?)
            }
            "--verify-pattern" => {
                verify_pattern = Some(parse_u64_any(&opt, &a.value(&opt, inline)?)?)
            }
            "--expect-reject" => expect_reject = Some(parse_reason(&a.value(&opt, inline)?)?),
            "--print-descriptor" => {
                no_value(&opt, inline)?;
                print_descriptor = true;
            }
            "--hold" => hold = parse_num(&opt, &a.value(&opt, inline)?)?,
            "--timeout" => timeout = parse_num(&opt, &a.value(&opt, inline)?)?,
            "--chunk" => {
                chunk = parse_size(&a.value(&opt, inline)?).map_err(|e| format!("--chunk: {e}"))?
            }
            _ => return Err(format!("unknown option {opt:?} (see --help)")),
        }
    }
    if queues == 0 {
        return Err("--queues must be at least 1".into());
    }
    if timeout == 0 {
        return Err("--timeout must be at least 1".into());
    }
    let chunk = usize::try_from(chunk)
        .ok()
        .filter(|&c| c > 0 && c <= 1 << 30)
        .ok_or("--chunk must be between 1 and 1G")?;
    if secret.is_some() && secret_file.is_some() {
        return Err("--secret and --secret-file exclude each other".into());
    }
    if replay && secret.is_none() && secret_file.is_none() {
        return Err("--replay needs a secret (--secret or --secret-file)".into());
    }
    if replay && flood.is_some() {
        return Err("--replay and --flood exclude each other".into());
    }
    if flood_id && flood.is_none() {
        return Err("--flood-id needs --flood N".into());
    }
    let connect = connect.ok_or("--connect ADDR[:PORT] is required (see --help)")?;
    if source.is_some_and(|s| s.is_ipv4() != connect.is_ipv4()) {
        return Err(
            "--source and --connect must both be IPv4 addresses or both IPv6 addresses".into(),
        );
    }
    Ok(Parsed::Run(ClientConfig {
        connect,
        client_id: client_id.ok_or("--client-id ID is required (see --help)")?,
        size: size.ok_or("--size SIZE is required (see --help)")?,
        queues,
        queue_count: queue_count.unwrap_or(queues),
        proto_version,
        write_pattern,
        verify_pattern,
        expect_reject,
        print_descriptor,
        hold: Duration::from_secs(hold),
        timeout: Duration::from_secs(timeout),
        chunk,
        secret,
        secret_file,
        instance,
        replay,
        flood,
        flood_id,
        source,
    }))
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
        let tests = SERVER_HELP
            .find("For tests only")
            .expect("a heading for tests in --help");
        let opt = SERVER_HELP
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
        assert_eq!(srv(&["--help"]), Ok(Parsed::Help));
        assert_eq!(srv(&["--size", "1G", "--help"]), Ok(Parsed::Help));
        // -h is --help, wherever an option may stand; without --insecure too.
        assert_eq!(srv_raw(&["-h"]), Ok(Parsed::Help));
        assert_eq!(srv(&["--listen", "1.2.3.4:5", "-h"]), Ok(Parsed::Help));
        assert_eq!(
            srv(&["--size", "1G", "-h", "--frobnicate"]),
            Ok(Parsed::Help)
        );
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
            assert!(SERVER_HELP.contains(opt), "{opt} not in --help");
        }
    }

    #[test]
    fn version() {
        assert_eq!(srv_raw(&["--version"]), Ok(Parsed::Version));
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
                env!("CARGO_PKG_VERSION"),
                crate::wire::VERSION
            )
        );
        assert!(line.ends_with("(wire protocol 2)"), "{line}");
        assert!(!line.contains('\n'));
        assert!(CLIENT_HELP.contains("--version") && CLIENT_HELP.contains("-h"));
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
                "--max-queues must be between 1 and 65535"
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
            "--max-pending-per-source must be at least 1",
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
        for v in ["1", "999", "600001", "18446744073709551615"] {
            err(
                &["--listen", "1.2.3.4:5", "--size", "1G", "--keepalive-ms", v],
                "--keepalive-ms must be 0 (off) or between 1000 and 600000",
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
            "unknown level",
        );
        err(
            &["--listen", "1.2.3.4:5", "--size", "1G", "--hugepages=yes"],
            "takes no value",
        );
        err(
            &["--listen", "1.2.3.4:5", "--size", "1G", "--frobnicate"],
            "unknown option \"--frobnicate\"",
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
            (vec!["--flood", "0"], "--flood must be at least 1"),
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
            assert!(CLIENT_HELP.contains(opt), "{opt} not in --help");
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
        err(&["--client-id", "0xzz"], "invalid number");
        err(&["--chunk", "0"], "--chunk");
        err(&["--bogus"], "unknown option");
        assert!(cli(&["--client-id", "1", "--size", "1M"]).is_err());
        assert!(matches!(cli(&["--help"]), Ok(Parsed::Help)));
        assert!(matches!(cli(&["-h"]), Ok(Parsed::Help)));
        assert!(cli(&["-v"]).is_err_and(|e| e.contains("unexpected argument")));
    }
}
