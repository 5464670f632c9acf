// SPDX-License-Identifier: GPL-2.0

//! The command line: clap definitions, the table and text output, the man page and the
//! shell completions.

use crate::conf;
use crate::metrics;
use crate::monitor;
use crate::parse::{human_seconds, human_size};
use crate::server_status::{self, ServerStatus};
use crate::settings::{Kind, Setting, SETTINGS};
use crate::target::{self, AddOptions, Ctl, Failure, Host, Paths, TargetInfo, TargetStatus};
use clap::{Arg, ArgAction, ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use clap_complete::Shell;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Manage rswap targets: remote memory over RDMA as swap disks (/dev/rswapN), and ask a
/// memory server for its status.
#[derive(Debug, Parser)]
#[command(name = "rswapctl", version, arg_required_else_help = true)]
pub struct Cli {
    /// The rswap configfs directory.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        default_value = "/sys/kernel/config/rswap"
    )]
    pub configfs: PathBuf,

    /// The list of active swap areas.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        default_value = "/proc/swaps"
    )]
    pub proc_swaps: PathBuf,

    /// Where the disks' nodes appear (for tests).
    #[arg(
        long,
        global = true,
        hide = true,
        value_name = "DIR",
        default_value = "/dev"
    )]
    pub dev_dir: PathBuf,

    /// The mounted file systems (for tests).
    #[arg(
        long,
        global = true,
        hide = true,
        value_name = "FILE",
        default_value = "/proc/self/mounts"
    )]
    pub mounts: PathBuf,

    /// The running kernel's release (for tests).
    #[arg(
        long,
        global = true,
        hide = true,
        value_name = "FILE",
        default_value = "/proc/sys/kernel/osrelease"
    )]
    pub osrelease: PathBuf,

    /// The kernels' module directories (for tests).
    #[arg(
        long,
        global = true,
        hide = true,
        value_name = "DIR",
        default_value = "/lib/modules"
    )]
    pub modules_dir: PathBuf,

    /// Where rswap-dkms notes why a kernel has no module (for tests).
    #[arg(
        long,
        global = true,
        hide = true,
        value_name = "DIR",
        default_value = "/var/lib/rswap-dkms"
    )]
    pub dkms_notes: PathBuf,

    /// The module's sysfs directory (for tests).
    #[arg(
        long,
        global = true,
        hide = true,
        value_name = "DIR",
        default_value = "/sys/module/rswap"
    )]
    pub sys_module: PathBuf,

    /// Write man pages for rswapctl and its subcommands into DIR, then exit.
    #[arg(long, hide = true, value_name = "DIR")]
    pub generate_man: Option<PathBuf>,

    /// Write rswapctl's shell completions into DIR (rswapctl.bash, _rswapctl for zsh,
    /// rswapctl.fish), then exit.
    #[arg(long, hide = true, value_name = "DIR")]
    pub generate_completions: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Create a target, connect it to its memory server and (--swap) swap on its disk.
    ///
    /// Creates /sys/kernel/config/rswap/NAME, writes addr, port, size and the given
    /// options (the secret of --secret-file too), then enable=1. On a failure, disables
    /// and removes the target again.
    Add {
        /// The target's name (its configfs directory).
        name: String,
        /// The settings' flags, from the table.
        #[command(flatten)]
        settings: SettingArgs,
        /// Run mkswap and swapon on the disk once it appears.
        #[arg(long)]
        swap: bool,
        /// The swap priority (swapon -p).
        #[arg(long, value_name = "N", requires = "swap", allow_hyphen_values = true,
              value_parser = clap::value_parser!(i32).range(-1..=32767))]
        priority: Option<i32>,
    },
    /// Swap off a target's disk if it is swapped on, disable it and remove it.
    Remove {
        /// The target's name.
        name: String,
    },
    /// Bring up the target of a configuration file (/etc/rswap/targets/NAME.conf).
    ///
    /// Reads and checks the whole file first (a bad line is an error naming FILE:LINE,
    /// and nothing is done), mounts configfs and loads the rswap module if needed, then
    /// does what `add` does with the file's settings, mkswap and swapon included with
    /// `swap = yes`. A target that is already up (enabled, and swapped on, encrypted and
    /// synchronous if it should be, with the file's poll_queues if it gives them) is left
    /// alone: success. Used by rswap@NAME.service at boot.
    Up {
        /// The target's name: its file is DIR/NAME.conf, its configfs directory NAME.
        name: String,
        /// Where the target files are.
        #[arg(long, value_name = "DIR", default_value = conf::DEFAULT_DIR)]
        config_dir: PathBuf,
        /// While the server does not answer (writing enable fails), try again every 2
        /// seconds for up to SECS seconds; 0: once.
        #[arg(long, value_name = "SECS", default_value_t = 0)]
        wait: u64,
    },
    /// Take a target down as `remove` does (swapoff first); one that is not there is
    /// success. Used by rswap@NAME.service at shutdown.
    Down {
        /// The target's name.
        name: String,
    },
    /// Put a new, empty memory server in place of a lost one of a disk over several
    /// servers.
    ///
    /// Writes `LEG SERVER` to /sys/kernel/config/rswap/NAME/replace. The kernel puts
    /// SERVER in place of leg LEG's server, which must be out of the disk (its server
    /// lost), and rebuilds the leg on it from the other legs in the background: `dirty=`
    /// of the leg in `rswapctl status NAME` counts the groups left. It refuses a leg
    /// still in the disk, a server another leg has, a disabled target or a code without
    /// parity, with its reason. Then, if DIR/NAME.conf has a `servers` line, its entry LEG
    /// becomes SERVER; the rest of the file stays as it was.
    Replace {
        /// The target's name.
        name: String,
        /// The leg whose server is replaced: its index in `servers`, from 0.
        #[arg(value_parser = clap::value_parser!(u32).range(0..=9))]
        leg: u32,
        /// The new server: ADDR, ADDR:PORT or [IPV6]:PORT, as --server takes it.
        #[arg(value_parser = new_server)]
        server: String,
        /// Where the target files are: DIR/NAME.conf's `servers` is updated.
        #[arg(long, value_name = "DIR", default_value = conf::DEFAULT_DIR)]
        config_dir: PathBuf,
    },
    /// One line per target: NAME DEVICE SERVER SIZE STATE RECOVERIES USED SECRET ENC
    /// SYNC.
    List {
        /// A JSON array of objects instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Every target's state and counters in the Prometheus text format.
    ///
    /// For node_exporter's textfile collector (rswap-metrics.timer writes them there) or
    /// any scraper: families rswap_target_*, labelled target and client_id (decimal),
    /// with the read and write latency histograms in seconds.
    Metrics,
    /// Print the targets' events as they happen, one line each.
    ///
    /// Listens to the kernel's uevents (NETLINK_KOBJECT_UEVENT) and prints one line per
    /// event of a target's queue: TIME TARGET DEVICE queue=N EVENT state=STATE, the event
    /// recovering (the queue's connection failed, it reconnects), reconnected or dead
    /// (it gave up: its I/O fails), and the target's state after it. TIME is when
    /// rswapctl received it, in UTC. Runs until interrupted.
    Monitor {
        /// One JSON object per line instead (time, target, device, queue, event, state).
        #[arg(long)]
        json: bool,
        /// Exit after N events.
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },
    /// A target's fields and every attribute's raw value.
    Status {
        /// The target's name.
        name: String,
        /// A JSON object instead of key: value lines.
        #[arg(long)]
        json: bool,
    },
    /// A memory server's clients: CLIENT_ID REGION SIZE QUEUES STATE LAST_SEEN.
    ///
    /// Asks the rswap-server on this host through its status socket (rswap-server
    /// --status-socket PATH; only the server's user, normally root, may connect). One row
    /// per client holding a region: its id (hex), region id, region size, live queues of
    /// those it announced, `live` or `grace(TIME LEFT)`, and the time since its queues
    /// were last heard from (connect, keep-alive answer, disconnect).
    ServerStatus {
        /// The server's status socket.
        #[arg(long, value_name = "PATH", default_value = server_status::DEFAULT_SOCKET)]
        socket: PathBuf,
        /// The server's status JSON (pool, clients, queues with their peers, counters)
        /// instead of the table.
        #[arg(long, conflicts_with = "metrics")]
        json: bool,
        /// The server's metrics in the Prometheus text format instead of the table (for
        /// node_exporter's textfile collector, or any scraper).
        #[arg(long)]
        metrics: bool,
    },
}

/// The flags of `add` that set a target setting: one per row of [`SETTINGS`] with a key.
#[derive(Debug, Clone, Default)]
pub struct SettingArgs {
    /// The settings given and their values, as given (a switch's `yes`).
    pub given: Vec<(&'static Setting, String)>,
}

impl Args for SettingArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        SETTINGS.iter().fold(cmd, |cmd, s| {
            let (Some(id), Some(flag)) = (s.key, s.flag()) else {
                return cmd;
            };
            // `-h` shows the first sentence, `--help` and the man page all of it.
            let first = s.help.split_once(". ").map_or(s.help, |(first, _)| first);
            let arg = Arg::new(id)
                .long(flag)
                .help(first.trim_end_matches('.').to_string())
                .long_help(s.help_text());
            // A setting that may be given instead of this one (`--servers` for
            // `--server`): one of the two is required, not both.
            let other = SETTINGS
                .iter()
                .find(|o| o.instead_of == Some(s.attr))
                .and_then(|o| o.key);
            let arg = match other {
                Some(other) if s.required() => {
                    arg.required_unless_present(other).conflicts_with(other)
                }
                _ => arg.required(s.required()),
            };
            cmd.arg(match s.kind {
                Kind::Switch => arg.action(ArgAction::SetTrue),
                _ => arg
                    .value_name(s.value_name)
                    // A value that looks like a flag is refused as a value, with why.
                    .allow_hyphen_values(true)
                    .value_parser(move |v: &str| s.check(v)),
            })
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SettingArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Vec::new();
        for s in SETTINGS {
            let Some(id) = s.key else {
                continue;
            };
            match s.kind {
                Kind::Switch if m.get_flag(id) => given.push((s, "yes".to_string())),
                Kind::Switch => {}
                _ => given.extend(m.get_one::<String>(id).map(|v| (s, v.clone()))),
            }
        }
        Ok(SettingArgs { given })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// The server of `replace`, as given, if `--server` takes it.
fn new_server(v: &str) -> Result<String, String> {
    target::parse_server(v).map(|_| v.to_string())
}

/// How often `up --wait` tries to connect again.
const RETRY_EVERY: Duration = Duration::from_secs(2);

/// Reads DIR/NAME.conf and, if it names one, its secret file: `add`'s options.
/// Nothing is created before both were read and checked.
pub fn read_target_config(dir: &std::path::Path, name: &str) -> Result<AddOptions, Failure> {
    if name.is_empty() || name.starts_with('.') || name.contains('/') {
        return Err(Failure::new(
            "up",
            name,
            "invalid target name (empty, starting with \".\" or with \"/\")",
        ));
    }
    let path = dir.join(format!("{name}.conf"));
    let file = path.display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Failure::new("up", name, format!("{file}: {}", target::errno_text(&e))))?;
    let cfg =
        conf::parse_target_config(name, &file, &text).map_err(|e| Failure::new("up", name, e))?;
    let mut options = cfg.options;
    options.secret = cfg
        .secret_file
        .map(|f| target::read_secret_file(&f))
        .transpose()
        .map_err(|e| Failure::new("up", name, e))?;
    options.secrets = cfg
        .secret_files
        .map(|list| target::read_secret_files(&list))
        .transpose()
        .map_err(|e| Failure::new("up", name, e))?;
    Ok(options)
}

/// `rswapctl replace`'s update of DIR/NAME.conf: entry `leg` of its `servers` becomes
/// `server`, the rest of the file as it was, written to a new file in the same directory
/// (with the old one's mode and owner) that then takes its place. Returns the file's
/// path if it did so; `None` (nothing done) when there is no such file, or it has no
/// `servers` line, or that entry is `server` already.
pub fn update_target_config(
    dir: &std::path::Path,
    name: &str,
    leg: u32,
    server: &str,
) -> Result<Option<PathBuf>, Failure> {
    // A name `up` refuses has no file.
    if name.is_empty() || name.starts_with('.') || name.contains('/') {
        return Ok(None);
    }
    let path = dir.join(format!("{name}.conf"));
    let file = path.display().to_string();
    let failed = |why: String| Failure::new("replace", name, format!("servers not updated: {why}"));
    let text = match std::fs::read_to_string(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(failed(format!("{file}: {}", target::errno_text(&e)))),
        Ok(text) => text,
    };
    let leg = usize::try_from(leg).unwrap_or(usize::MAX);
    let new = match conf::with_server_replaced(name, &file, &text, leg, server) {
        Ok(Some(new)) if new != text => new,
        Ok(_) => return Ok(None),
        Err(e) => return Err(failed(e)),
    };
    replace_file(&path, &new).map_err(|e| failed(format!("{file}: {}", target::errno_text(&e))))?;
    Ok(Some(path))
}

/// Writes `text` to a new file beside `path` (that of a symbolic link's target), with
/// its mode and owner, and renames it over `path`: a reader sees the old file or the
/// new, never a part, and a failure leaves the old one as it was.
fn replace_file(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let path = std::fs::canonicalize(path)?;
    let (Some(dir), Some(base)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    };
    let old = std::fs::metadata(&path)?;
    let tmp = dir.join(format!(
        ".{}.rswapctl-{}",
        base.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        let new = f.metadata()?;
        if (new.uid(), new.gid()) != (old.uid(), old.gid()) {
            std::os::unix::fs::fchown(&f, Some(old.uid()), Some(old.gid()))?;
        }
        f.set_permissions(old.permissions())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    match written {
        Ok(()) => {
            // The rename on disk too; it is done whether or not this works.
            let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn dash<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// Columns left-aligned to their widest cell, two spaces apart, no trailing blanks.
fn align(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let rows: Vec<Vec<String>> = std::iter::once(header.iter().map(|h| h.to_string()).collect())
        .chain(rows)
        .collect();
    let mut widths = vec![0; header.len()];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The table of `rswapctl list`. The state of a disk over several servers says how many
/// of its legs are up: `degraded(5/6)`.
pub fn table(targets: &[TargetInfo]) -> String {
    // Then a yes/no column for each setting that has one.
    let columns: Vec<&Setting> = SETTINGS.iter().filter(|s| s.column.is_some()).collect();
    let mut header = vec![
        "NAME",
        "DEVICE",
        "SERVER",
        "SIZE",
        "STATE",
        "RECOVERIES",
        "USED",
    ];
    header.extend(columns.iter().filter_map(|s| s.column));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for t in targets {
        let mut row = vec![
            t.name.clone(),
            dash(t.device.as_deref()),
            dash(t.server()),
            dash(t.settings.get("size_bytes").as_u64().map(human_size)),
            match t.legs_up() {
                Some((up, all)) => format!("{}({up}/{all})", t.state),
                None => t.state.clone(),
            },
            dash(t.recoveries),
            dash(t.swap_used_bytes.map(human_size)),
        ];
        row.extend(
            columns
                .iter()
                .map(|s| dash(t.settings.get(s.field).as_bool().map(yes_no))),
        );
        rows.push(row);
    }
    align(&header, rows)
}

/// The table of `rswapctl server-status`: one row per client, as the server lists them
/// (by client id).
pub fn server_status_table(status: &ServerStatus) -> String {
    let header = [
        "CLIENT_ID",
        "REGION",
        "SIZE",
        "QUEUES",
        "STATE",
        "LAST_SEEN",
    ];
    let rows = status
        .clients
        .iter()
        .map(|c| {
            let state = match c.grace_left_seconds {
                Some(left) if c.state == "grace" => format!("grace({})", human_seconds(left)),
                _ => c.state.clone(),
            };
            vec![
                format!("{:#x}", c.client_id),
                c.region_id.to_string(),
                human_size(c.length),
                format!("{}/{}", c.queues_live, c.queue_count),
                state,
                dash(c.last_seen_seconds.map(human_seconds)),
            ]
        })
        .collect();
    align(&header, rows)
}

/// The `key: value` lines of `rswapctl status`: the JSON fields (null as `-`), then each
/// attribute as `attr.NAME: value`. `legs` is a line per leg, `legN: {...}`, and none for
/// a target without legs, whose lines stay as they were before disks had legs.
pub fn status_text(s: &TargetStatus) -> String {
    let mut out = String::new();
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&s.info) {
        for k in target::fields() {
            if k == "legs" {
                for leg in s.info.legs.iter().flatten() {
                    let v = serde_json::to_string(leg).unwrap_or_default();
                    out.push_str(&format!("leg{}: {v}\n", leg.leg));
                }
                continue;
            }
            let v = match fields.get(k) {
                None | Some(serde_json::Value::Null) => "-".to_string(),
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
            };
            out.push_str(&format!("{k}: {v}\n"));
        }
    }
    for (k, v) in target::attribute_order(&s.attributes) {
        out.push_str(&format!("attr.{k}: {v}\n"));
    }
    out
}

fn json<T: serde::Serialize>(v: &T) -> String {
    // Serializing these plain structs cannot fail.
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// Runs a parsed command line, writing its output to `out`.
pub fn run(cli: Cli, host: &dyn Host, out: &mut dyn Write) -> Result<(), Failure> {
    let io_fail = |e: std::io::Error| Failure::new("output", "", target::errno_text(&e));
    let generated = |op: &'static str, dir: &std::path::Path, e: std::io::Error| {
        Failure::new(
            op,
            "",
            format!("{}: {}", dir.display(), target::errno_text(&e)),
        )
    };
    if let Some(dir) = cli.generate_man {
        return clap_mangen::generate_to(Cli::command(), &dir)
            .map_err(|e| generated("generate-man", &dir, e));
    }
    if let Some(dir) = cli.generate_completions {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            clap_complete::generate_to(shell, &mut Cli::command(), "rswapctl", &dir)
                .map_err(|e| generated("generate-completions", &dir, e))?;
        }
        return Ok(());
    }
    if let Some(Cmd::ServerStatus {
        socket,
        json: as_json,
        metrics,
    }) = &cli.command
    {
        let request = if *metrics {
            server_status::Request::Metrics
        } else {
            server_status::Request::Status
        };
        let answer = server_status::query(socket, request, server_status::TIMEOUT)?;
        let text = if *metrics {
            answer
        } else {
            // Checked even when passed on as it is: a half answer is an error.
            let status = server_status::parse_status(&answer).map_err(|e| {
                Failure::new("server-status", "", format!("{}: {e}", socket.display()))
            })?;
            if *as_json {
                answer
            } else {
                server_status_table(&status)
            }
        };
        return out.write_all(text.as_bytes()).map_err(io_fail);
    }
    if let Some(Cmd::Monitor { json, count }) = &cli.command {
        let fail = |e: String| Failure::new("monitor", "", e);
        let fd = monitor::open().map_err(fail)?;
        return monitor::run(&fd, *json, *count, out).map_err(fail);
    }
    let ctl = Ctl::new(
        Paths {
            configfs: cli.configfs,
            proc_swaps: cli.proc_swaps,
            dev_dir: cli.dev_dir,
            mounts: cli.mounts,
            osrelease: cli.osrelease,
            modules: cli.modules_dir,
            dkms_notes: cli.dkms_notes,
            sys_module: cli.sys_module,
        },
        host,
    );
    let Some(command) = cli.command else {
        return Err(Failure::new(
            "usage",
            "",
            "no subcommand (see rswapctl --help)",
        ));
    };
    match command {
        Cmd::Add {
            name,
            settings,
            swap,
            priority,
        } => {
            let mut o = AddOptions {
                name,
                swap,
                priority,
                ..AddOptions::default()
            };
            for (s, value) in settings.given {
                let set = match s.kind {
                    // Read before anything is created; a bad file leaves no trace.
                    Kind::SecretFile => target::read_secret_file(value.as_ref())
                        .map(|secret| o.secret = Some(secret)),
                    Kind::SecretFileList => {
                        target::read_secret_files(&value).map(|secrets| o.secrets = Some(secrets))
                    }
                    _ => o.set(s, &value),
                };
                set.map_err(|e| Failure::new("add", &o.name, e))?;
            }
            ctl.add(&o)
        }
        Cmd::Remove { name } => ctl.remove(&name),
        Cmd::Up {
            name,
            config_dir,
            wait,
        } => {
            let options = read_target_config(&config_dir, &name)?;
            let text = if ctl.up(&options, Duration::from_secs(wait), RETRY_EVERY, &mut |f| {
                eprintln!(
                    "{f}\nrswapctl: up {name}: trying again in {} s",
                    RETRY_EVERY.as_secs()
                )
            })? {
                let device = ctl.read_attr(&name, "device").unwrap_or_default();
                let swap = if options.swap { ", swapped on" } else { "" };
                format!("{name}: up, /dev/{device}{swap}\n")
            } else {
                format!("{name}: already up\n")
            };
            out.write_all(text.as_bytes()).map_err(io_fail)
        }
        Cmd::Down { name } => {
            let text = if ctl.down(&name)? {
                format!("{name}: down\n")
            } else {
                format!("{name}: not there\n")
            };
            out.write_all(text.as_bytes()).map_err(io_fail)
        }
        Cmd::Replace {
            name,
            leg,
            server,
            config_dir,
        } => {
            ctl.replace(&name, leg, &server)?;
            let text = format!(
                "{name}: leg {leg}: replacing its server with {server}; the leg is rebuilt in \
                 the background (dirty= in rswapctl status {name} counts the groups left)\n"
            );
            out.write_all(text.as_bytes()).map_err(io_fail)?;
            match update_target_config(&config_dir, &name, leg, &server)? {
                Some(file) => {
                    let text = format!("{name}: {}: servers updated\n", file.display());
                    out.write_all(text.as_bytes()).map_err(io_fail)
                }
                None => Ok(()),
            }
        }
        Cmd::List { json: as_json } => {
            let targets = ctl.list()?;
            let text = if as_json {
                json(&targets)
            } else {
                table(&targets)
            };
            out.write_all(text.as_bytes()).map_err(io_fail)
        }
        Cmd::Metrics => {
            let text = metrics::render(ctl.module_version().as_deref(), &ctl.list()?);
            out.write_all(text.as_bytes()).map_err(io_fail)
        }
        Cmd::Status {
            name,
            json: as_json,
        } => {
            let status = ctl.status(&name)?;
            let text = if as_json {
                json(&status)
            } else {
                status_text(&status)
            };
            out.write_all(text.as_bytes()).map_err(io_fail)
        }
        // Answered above: they need no configfs.
        Cmd::ServerStatus { .. } | Cmd::Monitor { .. } => Ok(()),
    }
}
