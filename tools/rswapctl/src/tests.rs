// SPDX-License-Identifier: GPL-2.0

//! Tests against a fake configfs: a temporary directory of plain files, where `mkdir`
//! creates the attributes of the settings table with the module's defaults, `enable`
//! brings a fake disk up and down (with its `stats`, encrypted or not as `encrypt` says),
//! `secret` shows only `(set)` or `(unset)` and takes `key:DESC` of a key of the fake
//! keyring (`add_logon_key`), a setting refuses writes while enabled as
//! the module does, and chosen writes fail like the kernel's. The other settings are
//! plain files: the fake disk does not care whether it is synchronous, nor how many poll
//! queues it has.

use crate::cli::{self, Cli};
use crate::keyring::KeySerial;
use crate::parse;
use crate::server_status;
use crate::settings::{self, Kind, ModuleDefault, Up, SETTINGS};
use crate::target::{self, AddOptions, Ctl, Host, Paths};
use clap::{CommandFactory, Parser};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const EINVAL: i32 = 22;
const EBUSY: i32 = 16;
const EEXIST: i32 = 17;

/// The client id the fake module picks at random.
const FAKE_CLIENT_ID: &str = "0x5eed";

/// A 32-byte secret, and its digits as they must never appear in any output.
const SECRET: &str = "6b1f0c93a4d25e7f80b1c2d3e4f5061728394a5b6c7d8e9f0a1b2c3d4e5f60e2";

const CONNECTED: &str = "connected queues=2/2 region=7 epoch=1 length=8589934592 \
                         recovering=0 dead=0 recoveries=3 retried=5";

/// The `stats` of an enabled disk, with this encryption line.
fn stats(encryption: &str) -> String {
    format!(
        "total reads=4 writes=8 read_bytes=16384 write_bytes=32768 errors=0 requeues=0 \
         recoveries=3 inflight=0\n\
         read_latency_us le8=0 le16=3 inf=1\n\
         write_latency_us le8=2 le16=5 inf=1\n\
         {encryption}\n\
         queue0 reads=4 writes=8 read_bytes=16384 write_bytes=32768 errors=0 requeues=0 \
         recoveries=3 inflight=0\n"
    )
}

struct Fake {
    tmp: PathBuf,
    /// A write to this attribute fails with this errno, and sets `last_error` to this
    /// text if there is one.
    fail: Option<(&'static str, i32, Option<&'static str>)>,
    /// This command fails.
    fail_command: Option<&'static str>,
    /// `swapoff` fails because another swapoff took the disk out of /proc/swaps.
    swapoff_elsewhere: bool,
    /// A module older than these attributes (`encrypt`, `sync_swapin`, `poll_queues`, ...):
    /// `mkdir` does not make them.
    older_than: Vec<&'static str>,
    /// `add_key` fails with this errno (a kernel without keyrings: ENOSYS).
    no_keyring: Option<i32>,
    /// A module older than `key:` in `secret`: it refuses it with EINVAL.
    no_key_secret: bool,
    /// The keys added to the fake keyring: description, payload, whether still valid.
    keys: RefCell<Vec<(String, Vec<u8>, bool)>>,
    /// What `warn` printed.
    warnings: RefCell<Vec<String>>,
    writes: RefCell<Vec<String>>,
    commands: RefCell<Vec<String>>,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

impl Fake {
    fn new() -> Fake {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = std::env::temp_dir().join(format!("rswapctl-test-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(tmp.join("rswap")).unwrap();
        fs::create_dir_all(tmp.join("dev")).unwrap();
        fs::write(
            tmp.join("swaps"),
            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
        )
        .unwrap();
        Fake {
            tmp,
            fail: None,
            fail_command: None,
            swapoff_elsewhere: false,
            older_than: Vec::new(),
            no_keyring: None,
            no_key_secret: false,
            keys: RefCell::new(Vec::new()),
            warnings: RefCell::new(Vec::new()),
            writes: RefCell::new(Vec::new()),
            commands: RefCell::new(Vec::new()),
        }
    }

    fn paths(&self) -> Paths {
        Paths {
            configfs: self.tmp.join("rswap"),
            proc_swaps: self.tmp.join("swaps"),
            dev_dir: self.tmp.join("dev"),
            mounts: self.tmp.join("mounts"),
            osrelease: self.tmp.join("osrelease"),
            modules: self.tmp.join("modules"),
            dkms_notes: self.tmp.join("dkms"),
            sys_module: self.tmp.join("module"),
        }
    }

    fn ctl(&self) -> Ctl<'_> {
        let mut ctl = Ctl::new(self.paths(), self);
        ctl.device_wait = Duration::from_millis(200);
        ctl.swapoff_wait = Duration::from_millis(300);
        ctl.busy_wait = Duration::from_millis(300);
        ctl
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.tmp.join("rswap").join(name)
    }

    fn attr(&self, name: &str, attr: &str) -> String {
        fs::read_to_string(self.dir(name).join(attr))
            .unwrap()
            .trim_end()
            .to_string()
    }

    fn dev(&self, device: &str) -> String {
        self.tmp.join("dev").join(device).display().to_string()
    }

    /// A target as the module would show it: enabled ones have disk `rswapN`.
    fn target(&self, name: &str, addr: &str, size: &str, device: Option<&str>) {
        self.mkdir(&self.dir(name)).unwrap();
        let w = |a: &str, v: &str| fs::write(self.dir(name).join(a), format!("{v}\n")).unwrap();
        w("addr", addr);
        w("size", size);
        if let Some(d) = device {
            w("enable", "1");
            w("device", d);
            w("state", CONNECTED);
            fs::write(self.dir(name).join("stats"), stats("encryption off")).unwrap();
        }
    }

    fn swapped_on(&self, device: &str, used_kib: u64, priority: i32) {
        let mut text = fs::read_to_string(self.tmp.join("swaps")).unwrap();
        text.push_str(&format!(
            "{}  partition\t8388604\t\t{used_kib}\t\t{priority}\n",
            self.dev(device)
        ));
        fs::write(self.tmp.join("swaps"), text).unwrap();
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.tmp);
    }
}

impl Host for Fake {
    fn mkdir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)?;
        let settings = SETTINGS.iter().map(|s| {
            // The module's random client id: this one.
            let value = s
                .default
                .shown()
                .unwrap_or_else(|| FAKE_CLIENT_ID.to_string());
            (s.attr, value)
        });
        let others = [
            ("enable", "0"),
            ("state", "disabled"),
            ("device", ""),
            ("stats", ""),
        ];
        for (attr, value) in settings.chain(others.map(|(a, v)| (a, v.to_string()))) {
            if !self.older_than.contains(&attr) {
                fs::write(path.join(attr), format!("{value}\n"))?;
            }
        }
        Ok(())
    }

    fn rmdir(&self, path: &Path) -> io::Result<()> {
        if fs::read_to_string(path.join("enable"))?.trim() == "1" {
            return Err(io::Error::from_raw_os_error(EBUSY));
        }
        fs::remove_dir_all(path)
    }

    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        let attr = path.file_name().unwrap().to_string_lossy().into_owned();
        self.writes
            .borrow_mut()
            .push(format!("{attr}={}", value.trim_end()));
        if let Some((a, errno, last_error)) = self.fail {
            if a == attr {
                if let Some(text) = last_error {
                    fs::write(path.with_file_name("last_error"), format!("{text}\n"))?;
                }
                return Err(io::Error::from_raw_os_error(errno));
            }
        }
        let enabled =
            || fs::read_to_string(path.with_file_name("enable")).is_ok_and(|e| e == "1\n");
        if settings::setting(&attr).is_some_and(|s| !s.while_enabled) && enabled() {
            let why = format!("{attr}: read-only while enabled (write 0 to enable first)\n");
            fs::write(path.with_file_name("last_error"), why)?;
            return Err(io::Error::from_raw_os_error(EBUSY));
        }
        if attr == "secret" || attr == "secrets" {
            // Each entry (one of `secret`, a list of `secrets`).
            let entries: Vec<&str> = match attr.as_str() {
                "secret" => vec![value.trim()],
                _ => value.trim().split(',').map(str::trim).collect(),
            };
            for entry in &entries {
                let Some(desc) = entry.strip_prefix("key:") else {
                    continue;
                };
                // The module copies the payload of a valid logon key of the writer.
                let keys = self.keys.borrow();
                let key = keys.iter().find(|(d, _, valid)| d == desc && *valid);
                let why = match key {
                    _ if self.no_key_secret => Some("a secret is hexadecimal digits"),
                    None => Some("no logon key with that description in the writer's keyrings"),
                    Some((_, payload, _)) if !(16..=64).contains(&payload.len()) => {
                        Some("the key's payload is not 16 to 64 bytes")
                    }
                    Some(_) => None,
                };
                if let Some(why) = why {
                    fs::write(
                        path.with_file_name("last_error"),
                        format!("{attr}: {why}\n"),
                    )?;
                    return Err(io::Error::from_raw_os_error(EINVAL));
                }
            }
            // The module keeps the secrets to itself.
            let shown = match (attr.as_str(), value.trim()) {
                ("secret", "none") => "(unset)".to_string(),
                ("secret", _) => "(set)".to_string(),
                (_, "none") => "(none)".to_string(),
                _ => entries
                    .iter()
                    .map(|e| if *e == "-" { "-" } else { "(set)" })
                    .collect::<Vec<_>>()
                    .join(","),
            };
            fs::write(path, format!("{shown}\n"))?;
            return Ok(());
        }
        if attr == "size" {
            // The module shows the size in bytes.
            fs::write(path, format!("{}\n", bytes(value.trim())))?;
        } else {
            fs::write(path, value)?;
        }
        if attr == "enable" {
            let on = value.trim() == "1";
            fs::write(
                path.with_file_name("device"),
                if on { "rswap0\n" } else { "\n" },
            )?;
            fs::write(
                path.with_file_name("state"),
                if on {
                    format!("{CONNECTED}\n")
                } else {
                    "disabled\n".to_string()
                },
            )?;
            // A module older than encryption has no `encrypt` and no encryption line.
            let encrypt = fs::read_to_string(path.with_file_name("encrypt")).ok();
            let line = match encrypt.as_deref().map(str::trim) {
                None => None,
                Some("1") => Some("encryption aes-256-gcm sealed=0 opened=0 auth_failures=0"),
                Some(_) => Some("encryption off"),
            };
            let stats = match (on, line) {
                (false, _) => String::new(),
                (true, Some(line)) => stats(line),
                (true, None) => stats("").replace("\n\n", "\n"),
            };
            fs::write(path.with_file_name("stats"), stats)?;
        }
        Ok(())
    }

    fn add_logon_key(&self, desc: &str, payload: &[u8]) -> io::Result<KeySerial> {
        if let Some(errno) = self.no_keyring {
            return Err(io::Error::from_raw_os_error(errno));
        }
        let mut keys = self.keys.borrow_mut();
        keys.push((desc.to_string(), payload.to_vec(), true));
        Ok(KeySerial::try_from(keys.len()).unwrap())
    }

    fn invalidate_key(&self, key: KeySerial) -> io::Result<()> {
        let mut keys = self.keys.borrow_mut();
        let i = usize::try_from(key).unwrap() - 1;
        keys[i].2 = false;
        Ok(())
    }

    fn warn(&self, line: &str) {
        self.warnings.borrow_mut().push(line.to_string());
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        self.commands
            .borrow_mut()
            .push(format!("{program} {}", args.join(" ")));
        if program == "swapoff" && self.swapoff_elsewhere {
            // Another swapoff of the disk ended: this one was refused.
            let swaps = fs::read_to_string(self.tmp.join("swaps")).unwrap();
            let kept: Vec<&str> = swaps.lines().filter(|l| !l.starts_with(args[0])).collect();
            fs::write(self.tmp.join("swaps"), kept.join("\n") + "\n").unwrap();
            return Err("exit status: 255".to_string());
        }
        if self.fail_command == Some(program) {
            return Err("exit status: 1".to_string());
        }
        if program == "modprobe" {
            // Loading the module registers its configfs subsystem.
            fs::create_dir_all(self.tmp.join("rswap")).unwrap();
        }
        Ok(())
    }
}

/// `o` with these settings given, by their target-file key, as `add` or a file gives them.
fn with(mut o: AddOptions, given: &[(&str, &str)]) -> AddOptions {
    for (key, value) in given {
        let s = settings::by_key(key).unwrap_or_else(|| panic!("{key}: no such key"));
        if s.kind == Kind::SecretFileList {
            // As if each file held SECRET.
            let secret = || parse::parse_secret(SECRET.as_bytes()).unwrap();
            o.secrets = Some(value.split(',').map(|e| (e != "-").then(secret)).collect());
            continue;
        }
        o.set(s, value)
            .unwrap_or_else(|e| panic!("{key} = {value}: {e}"));
    }
    o
}

/// Whether `add` reads the setting's files rather than writing its value.
fn read_at_add(s: &settings::Setting) -> bool {
    matches!(s.kind, Kind::SecretFile | Kind::SecretFileList)
}

/// `add NAME --server 192.0.2.2:18516 --size 8G`.
/// A size with an optional K, M, G or T suffix in bytes, as the module shows it (as it is
/// if it is not one).
fn bytes(size: &str) -> String {
    let shift = match size.chars().last() {
        Some('K' | 'k') => 10,
        Some('M' | 'm') => 20,
        Some('G' | 'g') => 30,
        Some('T' | 't') => 40,
        _ => 0,
    };
    let digits = if shift > 0 {
        &size[..size.len() - 1]
    } else {
        size
    };
    digits
        .parse::<u64>()
        .map_or(size.to_string(), |n| (n << shift).to_string())
}

fn add_options(name: &str) -> AddOptions {
    let o = AddOptions {
        name: name.to_string(),
        ..AddOptions::default()
    };
    with(o, &[("server", "192.0.2.2:18516"), ("size", "8G")])
}

#[test]
fn add_writes_the_attributes_then_enables() {
    let fake = Fake::new();
    let o = with(
        add_options("mem0"),
        &[
            ("queues", "4"),
            ("client_id", "0x42"),
            ("recovery_ms", "3000"),
            ("keepalive_ms", "1000"),
        ],
    );
    fake.ctl().add(&o).unwrap();
    assert_eq!(
        *fake.writes.borrow(),
        [
            "addr=192.0.2.2",
            "port=18516",
            "size=8G",
            "queues=4",
            "client_id=0x42",
            "recovery_ms=3000",
            "keepalive_ms=1000",
            "enable=1",
        ]
    );
    assert_eq!(fake.attr("mem0", "addr"), "192.0.2.2");
    // The module shows the size in bytes.
    assert_eq!(fake.attr("mem0", "size"), "8589934592");
    assert_eq!(fake.attr("mem0", "enable"), "1");
    assert!(fake.commands.borrow().is_empty());
}

#[test]
fn add_only_writes_what_is_given() {
    let fake = Fake::new();
    let o = with(
        AddOptions {
            name: "mem0".to_string(),
            ..AddOptions::default()
        },
        &[("server", "192.0.2.2"), ("size", "8G")],
    );
    fake.ctl().add(&o).unwrap();
    assert_eq!(
        *fake.writes.borrow(),
        ["addr=192.0.2.2", "size=8G", "enable=1"]
    );
    assert_eq!(fake.attr("mem0", "port"), "7471");
}

#[test]
fn add_swap_runs_mkswap_and_swapon() {
    let fake = Fake::new();
    fs::write(fake.tmp.join("dev/rswap0"), "").unwrap();
    let o = AddOptions {
        swap: true,
        priority: Some(100),
        ..add_options("mem0")
    };
    fake.ctl().add(&o).unwrap();
    let dev = fake.dev("rswap0");
    assert_eq!(
        *fake.commands.borrow(),
        [format!("mkswap {dev}"), format!("swapon -p 100 {dev}")]
    );
}

#[test]
fn add_failure_reports_last_error_and_undoes() {
    let mut fake = Fake::new();
    fake.fail = Some(("size", EINVAL, Some("size must be a multiple of 4096")));
    let o = with(add_options("mem0"), &[("size", "1000")]);
    let f = fake.ctl().add(&o).unwrap_err();
    assert_eq!(
        f.to_string(),
        "rswapctl: add mem0: writing size=1000: Invalid argument\n\
         rswapctl: add mem0: kernel: size must be a multiple of 4096"
    );
    assert!(!fake.dir("mem0").exists());
    assert!(!fake.writes.borrow().iter().any(|w| w.starts_with("enable")));
}

#[test]
fn add_failure_without_last_error_hints_at_dmesg() {
    let mut fake = Fake::new();
    fake.fail = Some(("enable", EINVAL, None));
    let f = fake.ctl().add(&add_options("mem0")).unwrap_err();
    assert_eq!(
        f.to_string(),
        "rswapctl: add mem0: writing enable=1: Invalid argument\n\
         rswapctl: add mem0: see dmesg for the kernel's reason"
    );
    assert!(!fake.dir("mem0").exists());
}

#[test]
fn add_swap_failure_disables_and_removes() {
    let mut fake = Fake::new();
    fake.fail_command = Some("mkswap");
    fs::write(fake.tmp.join("dev/rswap0"), "").unwrap();
    let o = AddOptions {
        swap: true,
        ..add_options("mem0")
    };
    let f = fake.ctl().add(&o).unwrap_err();
    assert_eq!(
        f.to_string(),
        format!(
            "rswapctl: add mem0: mkswap {}: exit status: 1",
            fake.dev("rswap0")
        )
    );
    assert_eq!(fake.writes.borrow().last().unwrap(), "enable=0");
    assert!(!fake.dir("mem0").exists());
}

#[test]
fn add_swap_without_device_node_times_out() {
    let fake = Fake::new();
    let o = AddOptions {
        swap: true,
        ..add_options("mem0")
    };
    let f = fake.ctl().add(&o).unwrap_err();
    assert_eq!(
        f.lines,
        [format!(
            "waiting for {}: not there after 200 ms",
            fake.dev("rswap0")
        )]
    );
    assert!(!fake.dir("mem0").exists());
}

#[test]
fn add_existing_target_is_left_alone() {
    let fake = Fake::new();
    fake.target("mem0", "192.0.2.9", "4096", Some("rswap3"));
    let f = fake.ctl().add(&add_options("mem0")).unwrap_err();
    assert_eq!(
        f.lines,
        [format!(
            "mkdir {}: {}",
            fake.dir("mem0").display(),
            crate::target::errno_text(&io::Error::from_raw_os_error(EEXIST))
        )]
    );
    assert_eq!(fake.attr("mem0", "addr"), "192.0.2.9");
}

#[test]
fn add_rejects_bad_names() {
    let fake = Fake::new();
    for name in ["", ".", "..", "a/b"] {
        assert!(fake.ctl().add(&add_options(name)).is_err());
    }
    assert!(fake.writes.borrow().is_empty());
}

#[test]
fn add_without_configfs_says_so() {
    let fake = Fake::new();
    let mut paths = fake.paths();
    paths.configfs = fake.tmp.join("missing");
    let f = Ctl::new(paths, &fake)
        .add(&add_options("mem0"))
        .unwrap_err();
    assert!(f.lines[0]
        .ends_with("No such file or directory (is the rswap module loaded and configfs mounted?)"));
}

#[test]
fn remove_disables_and_removes() {
    let fake = Fake::new();
    fake.target("mem0", "192.0.2.2", "8589934592", Some("rswap0"));
    fake.ctl().remove("mem0").unwrap();
    assert_eq!(*fake.writes.borrow(), ["enable=0"]);
    assert!(fake.commands.borrow().is_empty());
    assert!(!fake.dir("mem0").exists());
}

#[test]
fn remove_swaps_off_first() {
    let fake = Fake::new();
    fake.target("mem0", "192.0.2.2", "8589934592", Some("rswap0"));
    fake.swapped_on("rswap0", 0, -2);
    fake.ctl().remove("mem0").unwrap();
    assert_eq!(
        *fake.commands.borrow(),
        [format!("swapoff {}", fake.dev("rswap0"))]
    );
    assert!(!fake.dir("mem0").exists());
}

#[test]
fn remove_failures() {
    let mut fake = Fake::new();
    fake.target("mem0", "192.0.2.2", "8589934592", Some("rswap0"));
    fake.fail = Some(("enable", EBUSY, Some("rswap0 is open; close it first")));
    let f = fake.ctl().remove("mem0").unwrap_err();
    assert_eq!(
        f.to_string(),
        "rswapctl: remove mem0: writing enable=0: Device or resource busy\n\
         rswapctl: remove mem0: kernel: rswap0 is open; close it first"
    );
    assert!(fake.dir("mem0").exists());

    let f = fake.ctl().remove("nope").unwrap_err();
    assert_eq!(
        f.to_string(),
        format!(
            "rswapctl: remove nope: {}: No such file or directory",
            fake.dir("nope").display()
        )
    );

    fake.fail = None;
    fake.swapped_on("rswap0", 0, -2);
    fake.fail_command = Some("swapoff");
    let f = fake.ctl().remove("mem0").unwrap_err();
    assert_eq!(
        f.lines,
        [format!("swapoff {}: exit status: 1", fake.dev("rswap0"))]
    );
    assert_eq!(fake.attr("mem0", "enable"), "1");
}

/// `a` enabled, swapped on, with a secret, not encrypted and not synchronous; `b`
/// disabled, on a module without the `secret`, `encrypt` and `sync_swapin` attributes.
fn two_targets() -> Fake {
    let fake = Fake::new();
    fake.target("b", "192.0.2.3", "(unset)", None);
    fs::remove_file(fake.dir("b").join("secret")).unwrap();
    fs::remove_file(fake.dir("b").join("encrypt")).unwrap();
    fs::remove_file(fake.dir("b").join("sync_swapin")).unwrap();
    fs::remove_file(fake.dir("b").join("poll_queues")).unwrap();
    fs::remove_file(fake.dir("b").join("io_timeout_ms")).unwrap();
    for attr in ["code", "servers", "secrets", "extra_reads", "rebuild_mbps"] {
        fs::remove_file(fake.dir("b").join(attr)).unwrap();
    }
    fake.target("a", "192.0.2.2", "8589934592", Some("rswap0"));
    fs::write(fake.dir("a").join("secret"), "(set)\n").unwrap();
    fake.swapped_on("rswap0", 2048, 100);
    fake
}

fn run(fake: &Fake, args: &[&str]) -> Result<String, String> {
    let p = fake.paths();
    let mut argv: Vec<String> = ["rswapctl", "--configfs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    argv.push(p.configfs.display().to_string());
    argv.extend(["--proc-swaps".into(), p.proc_swaps.display().to_string()]);
    argv.extend(["--dev-dir".into(), p.dev_dir.display().to_string()]);
    argv.extend(["--mounts".into(), p.mounts.display().to_string()]);
    argv.extend(["--osrelease".into(), p.osrelease.display().to_string()]);
    argv.extend(["--modules-dir".into(), p.modules.display().to_string()]);
    argv.extend(["--dkms-notes".into(), p.dkms_notes.display().to_string()]);
    argv.extend(["--sys-module".into(), p.sys_module.display().to_string()]);
    argv.extend(args.iter().map(|s| s.to_string()));
    let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    cli::run(cli, fake, &mut out).map_err(|f| f.to_string())?;
    Ok(String::from_utf8(out).unwrap())
}

/// The cells of one column of the `list` table, its header first (no cell is blank).
fn column<'t>(table: &'t str, header: &str) -> Vec<&'t str> {
    let mut lines = table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>());
    let head = lines.next().unwrap();
    let i = head.iter().position(|h| *h == header).unwrap();
    std::iter::once(head[i])
        .chain(lines.map(|row| row[i]))
        .collect()
}

#[test]
fn list_json() {
    let fake = two_targets();
    let text = run(&fake, &["list", "--json"]).unwrap();
    let out: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = out[0]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut fields = target::fields();
    fields.sort();
    assert_eq!(keys, fields);
    let cpus = settings::possible_cpus().clamp(1, 64);
    // The `stats` of the fake disk (the module's read and write histograms).
    let stats = json!({
        "reads": 4, "writes": 8, "read_bytes": 16384, "write_bytes": 32768,
        "errors": 0, "requeues": 0, "recoveries": 3, "inflight": 0,
        "registered_reads": null,
        "read_latency_us": [
            {"le_us": 8, "count": 0}, {"le_us": 16, "count": 3},
            {"le_us": null, "count": 1}
        ],
        "write_latency_us": [
            {"le_us": 8, "count": 2}, {"le_us": 16, "count": 5},
            {"le_us": null, "count": 1}
        ],
        "latency_us": null,
        "late_binding": null,
        "queues": [{
            "queue": 0, "reads": 4, "writes": 8, "read_bytes": 16384,
            "write_bytes": 32768, "errors": 0, "requeues": 0,
            "recoveries": 3, "inflight": 0
        }]
    });
    let mut want = json!([
        {
            "name": "a", "device": "rswap0", "addr": "192.0.2.2", "port": 7471,
            "size_bytes": 8589934592u64, "secret": true, "state": "connected",
            "queues_live": 2, "queues_total": 2, "recovering": 0, "dead": 0,
            "recoveries": 3, "retried": 5, "region": 7, "epoch": 1,
            "swap_used_bytes": 2048 * 1024, "swap_priority": 100,
            "encrypt": false, "sync_swapin": false, "poll_queues": 0,
            "auth_failures": null, "src_addr": null, "queues": cpus,
            "queue_depth": 128, "client_id": "0x5eed", "timeout_ms": 5000,
            "recovery_ms": 60000, "keepalive_ms": 5000, "io_timeout_ms": 30000,
            "code": "1+0", "servers": null, "secrets": null, "extra_reads": 1,
            "rebuild_mbps": 200, "stats": null, "legs": []
        },
        {
            "name": "b", "device": null, "addr": "192.0.2.3", "port": 7471,
            "size_bytes": null, "secret": null, "state": "disabled",
            "queues_live": null, "queues_total": null, "recovering": null,
            "dead": null, "recoveries": null, "retried": null, "region": null,
            "epoch": null, "swap_used_bytes": null, "swap_priority": null,
            "encrypt": null, "sync_swapin": null, "poll_queues": null,
            "auth_failures": null, "src_addr": null, "queues": cpus,
            "queue_depth": 128, "client_id": "0x5eed", "timeout_ms": 5000,
            "recovery_ms": 60000, "keepalive_ms": 5000, "io_timeout_ms": null,
            "code": null, "servers": null, "secrets": null, "extra_reads": null,
            "rebuild_mbps": null, "stats": null, "legs": null
        }
    ]);
    want[0]["stats"] = stats;
    assert_eq!(out, want);
    // A bucket's bound before its count.
    assert!(text.find("\"le_us\"") < text.find("\"count\""), "{text}");
}

#[test]
fn list_table() {
    let fake = two_targets();
    assert_eq!(
        run(&fake, &["list"]).unwrap(),
        "NAME  DEVICE  SERVER          SIZE  STATE      RECOVERIES  USED  SECRET  ENC  SYNC
\
         a     rswap0  192.0.2.2:7471  8G    connected  3           2M    yes     no   no
\
         b     -       192.0.2.3:7471  -     disabled   -           -     -       -    -
"
    );
}

#[test]
fn list_empty_and_missing() {
    let fake = Fake::new();
    assert_eq!(run(&fake, &["list", "--json"]).unwrap(), "[]\n");
    fs::remove_dir(fake.tmp.join("rswap")).unwrap();
    let e = run(&fake, &["list"]).unwrap_err();
    assert!(e.starts_with("rswapctl: list: "), "{e}");
}

#[test]
fn status_json_has_fields_and_attributes() {
    let fake = two_targets();
    let out: Value =
        serde_json::from_str(&run(&fake, &["status", "a", "--json"]).unwrap()).unwrap();
    assert_eq!(out["state"], "connected");
    assert_eq!(out["swap_priority"], 100);
    assert_eq!(out["recoveries"], 3);
    assert_eq!(out["secret"], true);
    assert_eq!(out["encrypt"], false);
    assert_eq!(out["sync_swapin"], false);
    assert_eq!(out["poll_queues"], 0);
    assert_eq!(out["auth_failures"], Value::Null);
    let attrs = out["attributes"].as_object().unwrap();
    // Every setting's, then enable, state, device and stats.
    assert_eq!(attrs.len(), SETTINGS.len() + 4);
    assert_eq!(attrs["encrypt"], "0");
    assert_eq!(attrs["sync_swapin"], "0");
    assert_eq!(attrs["poll_queues"], "0");
    assert!(
        attrs["stats"]
            .as_str()
            .unwrap()
            .contains("\nencryption off\n"),
        "{attrs:?}"
    );
    assert_eq!(attrs["addr"], "192.0.2.2");
    assert_eq!(attrs["client_id"], "0x5eed");
    assert_eq!(attrs["secret"], "(set)");
    assert_eq!(attrs["state"], CONNECTED);
    assert_eq!(attrs["device"], "rswap0");
}

#[test]
fn status_text() {
    let fake = two_targets();
    let out = run(&fake, &["status", "b"]).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "name: b");
    // Every field but `legs`, which has no line on a target without legs.
    assert_eq!(lines[target::fields().len() - 3], "swap_priority: -");
    assert_eq!(lines[target::fields().len() - 2], "stats: -");
    assert!(lines[target::fields().len() - 1].starts_with("attr."));
    assert!(!out.contains("\nleg"), "{out}");
    assert!(lines.contains(&"device: -"));
    assert!(lines.contains(&"secret: -"));
    assert!(lines.contains(&"encrypt: -"));
    assert!(lines.contains(&"sync_swapin: -"));
    assert!(lines.contains(&"poll_queues: -"));
    assert!(lines.contains(&"io_timeout_ms: -"));
    assert!(lines.contains(&"auth_failures: -"));
    assert!(lines.contains(&"state: disabled"));
    assert!(lines.contains(&"port: 7471"));
    let attrs: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("attr."))
        .copied()
        .collect();
    // All but secret, encrypt, sync_swapin, poll_queues, io_timeout_ms and the five of
    // erasure-coded disks, then enable, state, device, stats.
    assert_eq!(attrs.len(), SETTINGS.len() - 10 + 4);
    assert_eq!(attrs[0], "attr.addr: 192.0.2.3");
    assert_eq!(attrs[attrs.len() - 2], "attr.device: ");
    assert_eq!(attrs[attrs.len() - 1], "attr.stats: ");
    let e = run(&fake, &["status", "zz"]).unwrap_err();
    assert!(e.starts_with("rswapctl: status zz: "), "{e}");
    let out = run(&fake, &["status", "a"]).unwrap();
    // The settings in configuration.md's order, as fields and as attributes.
    assert!(
        out.contains("\npoll_queues: 0\nclient_id: 0x5eed\nsecret: true\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "\nkeepalive_ms: 5000\nio_timeout_ms: 30000\nencrypt: false\nsync_swapin: false\n\
             extra_reads: 1\nrebuild_mbps: 200\nstate: connected\n"
        ),
        "{out}"
    );
    // The stats object on one line.
    let line = out.lines().find(|l| l.starts_with("stats: {")).unwrap();
    let stats: Value = serde_json::from_str(&line["stats: ".len()..]).unwrap();
    assert_eq!((&stats["reads"], &stats["writes"]), (&json!(4), &json!(8)));
    let attrs: Vec<&str> = out.lines().filter(|l| l.starts_with("attr.")).collect();
    assert_eq!(attrs.len(), SETTINGS.len() + 4);
    let queues = format!("attr.queues: {}", settings::possible_cpus().clamp(1, 64));
    assert_eq!(
        attrs[4..9],
        [
            queues.as_str(),
            "attr.queue_depth: 128",
            "attr.poll_queues: 0",
            "attr.client_id: 0x5eed",
            "attr.secret: (set)",
        ]
    );
    assert_eq!(
        attrs[9..12],
        [
            "attr.code: 1+0",
            "attr.servers: (none)",
            "attr.secrets: (none)"
        ]
    );
    assert_eq!(
        attrs[15..18],
        [
            "attr.io_timeout_ms: 30000",
            "attr.encrypt: 0",
            "attr.sync_swapin: 0"
        ]
    );
}

#[test]
fn server_addresses() {
    let ok = |s: &str| {
        let (a, p) = target::parse_server(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        (a.to_string(), p)
    };
    assert_eq!(ok("192.0.2.2"), ("192.0.2.2".to_string(), None));
    assert_eq!(ok("192.0.2.2:7471"), ("192.0.2.2".to_string(), Some(7471)));
    assert_eq!(ok("fd00::2"), ("fd00::2".to_string(), None));
    assert_eq!(ok("[fd00::2]"), ("fd00::2".to_string(), None));
    assert_eq!(ok("[fd00:0::2]:7471"), ("fd00::2".to_string(), Some(7471)));
    assert_eq!(
        ok("[fe80::2%eth0]:1"),
        ("fe80::2%eth0".to_string(), Some(1))
    );
    assert_eq!(ok("fe80::2%3"), ("fe80::2%3".to_string(), None));
    for bad in [
        "",
        "host:1",
        "192.0.2.2:",
        "192.0.2.2:+1",
        "192.0.2.2:0",
        "[192.0.2.2]:1",
        "[fd00::2",
        "[fd00::2]1",
        "[fd00::2]:",
        "[fd00::2]:70000",
        "fd00::2:7471:",
        "fe80::2%",
        "fe80::2%a/b",
        "fe80::2%averyverylongname0",
        "192.0.2.2%eth0",
    ] {
        assert!(target::parse_server(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn command_line() {
    Cli::command().debug_assert();
    let fake = Fake::new();
    run(
        &fake,
        &[
            "add",
            "m",
            "--server",
            "192.0.2.2:1",
            "--size",
            "1G",
            "--recovery-ms",
            "0",
        ],
    )
    .unwrap();
    assert_eq!(
        *fake.writes.borrow(),
        [
            "addr=192.0.2.2",
            "port=1",
            "size=1G",
            "recovery_ms=0",
            "enable=1"
        ]
    );
    run(
        &fake,
        &["add", "v6", "--server", "[fd00::2]:7471", "--size", "1G"],
    )
    .unwrap();
    assert_eq!(
        fake.writes.borrow()[5..],
        ["addr=fd00::2", "port=7471", "size=1G", "enable=1"]
    );
    for bad in [
        &["add", "m", "--server", "host:1", "--size", "1G"][..],
        &["add", "m", "--server", "192.0.2.2:0", "--size", "1G"],
        &["add", "m", "--server", "192.0.2.2:70000", "--size", "1G"],
        &[
            "add",
            "m",
            "--server",
            "192.0.2.2",
            "--size",
            "1G",
            "--priority",
            "1",
        ],
        &["add", "m", "--size", "1G"],
        &["remove"],
    ] {
        assert!(run(&fake, bad).is_err(), "{bad:?}");
    }
    run(&fake, &["remove", "m"]).unwrap();
    assert!(!fake.dir("m").exists());
}

#[test]
fn man_pages() {
    let fake = Fake::new();
    let dir = fake.tmp.join("man");
    fs::create_dir(&dir).unwrap();
    run(&fake, &["--generate-man", dir.to_str().unwrap()]).unwrap();
    for page in [
        "rswapctl.1",
        "rswapctl-add.1",
        "rswapctl-list.1",
        "rswapctl-replace.1",
    ] {
        let text = fs::read_to_string(dir.join(page)).unwrap();
        assert!(text.contains(".TH"), "{page}");
    }
    let add = fs::read_to_string(dir.join("rswapctl-add.1")).unwrap();
    assert!(
        add.contains("\\fB\\-\\-secret\\-file\\fR \\fI<FILE>\\fR"),
        "{add}"
    );
}

/// The write of `secret` that hands target `name` the secret through the keyring.
fn key_write(name: &str) -> String {
    format!("secret=key:rswap:{name}:{}", std::process::id())
}

/// The secret reached target `name` as a logon key of this process, invalidated since:
/// not one of its digits was written to configfs, and nothing was warned.
fn assert_secret_through_the_keyring(fake: &Fake, name: &str) {
    let want = parse::parse_secret(SECRET.as_bytes()).unwrap().bytes();
    let desc = format!("rswap:{name}:{}", std::process::id());
    assert_eq!(
        *fake.keys.borrow(),
        [(desc, want.as_slice().to_vec(), false)]
    );
    for w in fake.writes.borrow().iter() {
        // Any 8 digits of the secret in a row.
        let leaked = SECRET
            .as_bytes()
            .windows(8)
            .any(|d| w.as_bytes().windows(8).any(|x| x.eq_ignore_ascii_case(d)));
        assert!(!leaked, "{w}");
    }
    assert!(fake.warnings.borrow().is_empty(), "{:?}", fake.warnings);
}

/// Writes a secret file with this content and mode into the fake's directory.
fn secret_file(fake: &Fake, file: &str, content: &str, mode: u32) -> PathBuf {
    let path = fake.tmp.join(file);
    fs::write(&path, content).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn add_with_secret_file<'a>(file: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "add",
        "mem0",
        "--server",
        "192.0.2.2",
        "--size",
        "8G",
        "--secret-file",
        file,
    ];
    args.extend(more);
    args
}

#[test]
fn add_writes_the_secret_before_enable_and_never_shows_it() {
    let fake = Fake::new();
    let file = secret_file(&fake, "mem0.secret", &format!("{SECRET}\n"), 0o600);
    let file = file.to_str().unwrap();
    run(
        &fake,
        &add_with_secret_file(file, &["--client-id", "0x42", "--keepalive-ms", "1000"]),
    )
    .unwrap();
    assert_eq!(
        *fake.writes.borrow(),
        [
            "addr=192.0.2.2",
            "size=8G",
            "client_id=0x42",
            "keepalive_ms=1000",
            &key_write("mem0"),
            "enable=1",
        ]
    );
    assert_eq!(fake.attr("mem0", "secret"), "(set)");
    assert_secret_through_the_keyring(&fake, "mem0");
    let mut shown = String::new();
    for args in [
        &["list"][..],
        &["list", "--json"],
        &["status", "mem0"],
        &["status", "mem0", "--json"],
    ] {
        shown += &run(&fake, args).unwrap();
    }
    assert!(!shown.contains(SECRET), "{shown}");
    let status: Value =
        serde_json::from_str(&run(&fake, &["status", "mem0", "--json"]).unwrap()).unwrap();
    assert_eq!(status["secret"], true);
    assert_eq!(status["attributes"]["secret"], "(set)");
    let list: Value = serde_json::from_str(&run(&fake, &["list", "--json"]).unwrap()).unwrap();
    assert_eq!(list[0]["secret"], true);
}

#[test]
fn add_secret_write_failure_does_not_show_the_secret() {
    let mut fake = Fake::new();
    fake.fail = Some((
        "secret",
        EINVAL,
        Some("secret: a secret is 16 to 64 bytes (32 to 128 hexadecimal digits)"),
    ));
    let o = AddOptions {
        secret: Some(parse::parse_secret(SECRET.as_bytes()).unwrap()),
        ..add_options("mem0")
    };
    let debug = format!("{o:?}");
    assert!(debug.contains("secret: Some(Secret(32 bytes))"), "{debug}");
    assert!(!debug.contains(SECRET), "{debug}");
    let f = fake.ctl().add(&o).unwrap_err();
    assert_eq!(
        f.to_string(),
        "rswapctl: add mem0: writing secret: Invalid argument\n\
         rswapctl: add mem0: kernel: secret: a secret is 16 to 64 bytes (32 to 128 hexadecimal digits)"
    );
    assert!(!format!("{f:?}").contains(SECRET));
    assert!(!fake.dir("mem0").exists());
    assert!(!fake.writes.borrow().iter().any(|w| w.starts_with("enable")));

    // The same through the command line, and when the server refuses the secret.
    let file = secret_file(&fake, "mem0.secret", SECRET, 0o400);
    let e = run(&fake, &add_with_secret_file(file.to_str().unwrap(), &[])).unwrap_err();
    assert!(
        e.starts_with("rswapctl: add mem0: writing secret: Invalid argument\n"),
        "{e}"
    );
    assert!(!e.contains(SECRET), "{e}");
    fake.fail = Some((
        "enable",
        EINVAL,
        Some("enable failed: the server rejected the connection: AuthFailed"),
    ));
    let e = run(&fake, &add_with_secret_file(file.to_str().unwrap(), &[])).unwrap_err();
    assert_eq!(
        e,
        "rswapctl: add mem0: writing enable=1: Invalid argument\n\
         rswapctl: add mem0: kernel: enable failed: the server rejected the connection: AuthFailed"
    );
    assert!(!fake.dir("mem0").exists());
}

/// `add --secret-file` on a kernel or module that cannot take the secret from the
/// keyring: the digits are written, with one line of warning saying why.
#[test]
fn add_writes_the_digits_with_a_warning_when_the_keyring_is_no_way() {
    let desc = format!("rswap:mem0:{}", std::process::id());
    let mut fake = Fake::new();
    fake.no_key_secret = true;
    digits_with_a_warning(
        fake,
        &format!("the module refused key:{desc} (secret: a secret is hexadecimal digits)"),
    );
    let mut fake = Fake::new();
    fake.no_keyring = Some(38); // ENOSYS
    digits_with_a_warning(
        fake,
        "cannot add the secret to the keyring (Function not implemented)",
    );
}

/// `add --secret-file` on `fake`: the digits written, the key (if one was added) gone,
/// and this reason in the one warning.
fn digits_with_a_warning(fake: Fake, why: &str) {
    let file = secret_file(&fake, "mem0.secret", SECRET, 0o600);
    run(&fake, &add_with_secret_file(file.to_str().unwrap(), &[])).unwrap();
    let writes = fake.writes.borrow();
    let secrets: Vec<&String> = writes.iter().filter(|w| w.starts_with("secret=")).collect();
    let tried = fake.no_keyring.is_none();
    let want = if tried {
        vec![key_write("mem0"), format!("secret={SECRET}")]
    } else {
        vec![format!("secret={SECRET}")]
    };
    assert_eq!(secrets, want.iter().collect::<Vec<_>>(), "{why}");
    assert_eq!(writes.last().unwrap(), "enable=1", "{why}");
    assert_eq!(fake.attr("mem0", "secret"), "(set)", "{why}");
    assert!(fake.keys.borrow().iter().all(|k| !k.2), "{why}");
    assert_eq!(fake.keys.borrow().len(), usize::from(tried), "{why}");
    assert_eq!(
        *fake.warnings.borrow(),
        [format!(
            "rswapctl: add mem0: warning: {why}; writing the secret's digits instead \
             (they stay in a kernel buffer freed without clearing)"
        )]
    );
}

/// A refusal of `key:` other than EINVAL is a failure: no digits written instead, and the
/// key is gone all the same.
#[test]
fn add_fails_when_the_module_refuses_the_key_otherwise() {
    let mut fake = Fake::new();
    fake.fail = Some((
        "secret",
        EBUSY,
        Some("secret: read-only while enabled (write 0 to enable first)"),
    ));
    let file = secret_file(&fake, "mem0.secret", SECRET, 0o600);
    let e = run(&fake, &add_with_secret_file(file.to_str().unwrap(), &[])).unwrap_err();
    assert_eq!(
        e,
        "rswapctl: add mem0: writing secret: Device or resource busy\n\
         rswapctl: add mem0: kernel: secret: read-only while enabled (write 0 to enable first)"
    );
    let writes = fake.writes.borrow();
    assert_eq!(writes.last().unwrap(), &key_write("mem0"));
    assert!(!writes.iter().any(|w| w.contains(SECRET)), "{writes:?}");
    assert!(fake.keys.borrow().iter().all(|k| !k.2));
    assert!(fake.warnings.borrow().is_empty());
    assert!(!fake.dir("mem0").exists());
}

#[test]
fn add_refuses_a_secret_file_others_may_read_or_write() {
    let fake = Fake::new();
    for mode in [0o644, 0o640, 0o604, 0o620, 0o602, 0o660, 0o610, 0o666] {
        let file = secret_file(&fake, "mem0.secret", SECRET, mode);
        let e = run(&fake, &add_with_secret_file(file.to_str().unwrap(), &[])).unwrap_err();
        assert_eq!(
            e,
            format!(
                "rswapctl: add mem0: secret file {}: mode {mode:04o} lets group or others \
                 read or write it (chmod 600 it)",
                file.display()
            )
        );
    }
    assert!(!fake.dir("mem0").exists());
    assert!(fake.writes.borrow().is_empty());
    for mode in [0o600, 0o400, 0o700] {
        let file = secret_file(&fake, "mem0.secret", SECRET, mode);
        run(&fake, &add_with_secret_file(file.to_str().unwrap(), &[])).unwrap();
        run(&fake, &["remove", "mem0"]).unwrap();
    }
}

#[test]
fn add_refuses_malformed_or_unreadable_secret_files() {
    let fake = Fake::new();
    let half = &SECRET[..30];
    for (content, why) in [
        ("".to_string(), "it is empty"),
        ("\n \n".to_string(), "it is empty"),
        (
            format!("{SECRET}z"),
            "it is not only hexadecimal digits (one secret, no comments)",
        ),
        (
            format!("# mem0\n{SECRET}\n"),
            "it is not only hexadecimal digits (one secret, no comments)",
        ),
        (
            format!("0x{SECRET}"),
            "it is not only hexadecimal digits (one secret, no comments)",
        ),
        (
            format!("{SECRET}\n{SECRET}\n"),
            "it is not only hexadecimal digits (one secret, no comments)",
        ),
        (
            format!("{SECRET}0"),
            "it has an odd number of hexadecimal digits",
        ),
        (
            half.to_string(),
            "a secret is 16 to 64 bytes (32 to 128 hexadecimal digits)",
        ),
        (
            SECRET.repeat(2) + "00",
            "a secret is 16 to 64 bytes (32 to 128 hexadecimal digits)",
        ),
    ] {
        let file = secret_file(&fake, "mem0.secret", &content, 0o600);
        let e = run(&fake, &add_with_secret_file(file.to_str().unwrap(), &[])).unwrap_err();
        assert_eq!(
            e,
            format!(
                "rswapctl: add mem0: secret file {}: not a secret: {why}",
                file.display()
            ),
            "{content:?}"
        );
        assert!(!e.contains(half), "{e}");
    }
    let file = secret_file(&fake, "big.secret", &"0".repeat(5000), 0o600);
    let e = run(&fake, &add_with_secret_file(file.to_str().unwrap(), &[])).unwrap_err();
    assert!(e.ends_with(": longer than 4096 bytes; not a secret"), "{e}");

    let missing = fake.tmp.join("missing.secret");
    let e = run(&fake, &add_with_secret_file(missing.to_str().unwrap(), &[])).unwrap_err();
    assert_eq!(
        e,
        format!(
            "rswapctl: add mem0: secret file {}: No such file or directory",
            missing.display()
        )
    );
    // `-` is a file name like any other, not standard input.
    let e = run(&fake, &add_with_secret_file("-", &[])).unwrap_err();
    assert_eq!(
        e,
        "rswapctl: add mem0: secret file -: No such file or directory"
    );
    let dir = fake.tmp.join("secret.d");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    let e = run(&fake, &add_with_secret_file(dir.to_str().unwrap(), &[])).unwrap_err();
    assert!(e.ends_with(": Is a directory"), "{e}");

    assert!(!fake.dir("mem0").exists());
    assert!(fake.writes.borrow().is_empty());
}

#[test]
fn list_and_status_say_whether_a_secret_is_set() {
    let fake = Fake::new();
    fake.target("set", "192.0.2.2", "4096", None);
    fs::write(fake.dir("set").join("secret"), "(set)\n").unwrap();
    fake.target("unset", "192.0.2.2", "4096", None);
    fake.target("old", "192.0.2.2", "4096", None);
    fs::remove_file(fake.dir("old").join("secret")).unwrap();
    fake.target("new", "192.0.2.2", "4096", None);
    fs::write(fake.dir("new").join("secret"), format!("{SECRET}\n")).unwrap();
    let list: Value = serde_json::from_str(&run(&fake, &["list", "--json"]).unwrap()).unwrap();
    let secrets: Vec<(&str, &Value)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), &t["secret"]))
        .collect();
    assert_eq!(
        secrets,
        [
            ("new", &Value::Null),
            ("old", &Value::Null),
            ("set", &json!(true)),
            ("unset", &json!(false))
        ]
    );
    let table = run(&fake, &["list"]).unwrap();
    let column = column(&table, "SECRET");
    assert_eq!(column, ["SECRET", "-", "-", "yes", "no"]);
    for (name, want) in [
        ("set", json!(true)),
        ("unset", json!(false)),
        ("old", Value::Null),
    ] {
        let st: Value =
            serde_json::from_str(&run(&fake, &["status", name, "--json"]).unwrap()).unwrap();
        assert_eq!(st["secret"], want, "{name}");
        let text = run(&fake, &["status", name]).unwrap();
        let line = if want.is_null() {
            "secret: -".to_string()
        } else {
            format!("secret: {want}")
        };
        assert!(text.lines().any(|l| l == line), "{text}");
    }
    // A module that showed more than `(set)` would not have it passed on.
    let mut shown = run(&fake, &["list"]).unwrap() + &run(&fake, &["list", "--json"]).unwrap();
    shown += &run(&fake, &["status", "new"]).unwrap();
    shown += &run(&fake, &["status", "new", "--json"]).unwrap();
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("attr.secret: (not shown)\n"), "{shown}");
}

/// A status as rswap-server answers it: client 0x2601 live with two queues, 0x2602 in
/// its grace period (restored, never seen since). The server's own test checks that it
/// writes exactly this for its sample status, so the two cannot drift apart.
const SERVER_STATUS: &str = include_str!("../../testdata/server-status.json");

const SERVER_STATUS_TABLE: &str = "\
CLIENT_ID  REGION                SIZE  QUEUES  STATE       LAST_SEEN
0x2601     18000000000000000001  4M    2/2     live        1s
0x2602     7                     2M    0/1     grace(25s)  -
";

#[test]
fn server_status_model_and_table() {
    let status = server_status::parse_status(SERVER_STATUS).unwrap();
    assert_eq!(status.server.listen, "192.0.2.1:7471");
    assert_eq!(status.server.wire_protocol, 2);
    assert_eq!(status.pool.left_bytes, 10 << 20);
    assert_eq!(status.clients.len(), 2);
    let a = &status.clients[0];
    // 64-bit ids exactly.
    assert_eq!(a.region_id, 18_000_000_000_000_000_001);
    assert_eq!(a.queues[1].peer, "192.0.2.1:40002");
    assert_eq!(a.owner_instance, Some(1));
    assert_eq!(status.clients[1].owner_instance, None);
    assert_eq!(cli::server_status_table(&status), SERVER_STATUS_TABLE);
}

/// A fake status socket in the fake's directory: answers each connection's request
/// line with what `answer` returns for it, `n` connections, then stops. Returns the
/// socket's path and the requests it got.
fn fake_server(
    fake: &Fake,
    n: usize,
    answer: fn(&str) -> String,
) -> (PathBuf, std::thread::JoinHandle<Vec<String>>) {
    use std::io::{BufRead, BufReader, Write};
    let path = fake.tmp.join("server.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let h = std::thread::spawn(move || {
        let mut got = Vec::new();
        for _ in 0..n {
            let (mut s, _) = listener.accept().unwrap();
            let mut line = String::new();
            BufReader::new(&mut s).read_line(&mut line).unwrap();
            let _ = s.write_all(answer(&line).as_bytes());
            got.push(line);
        }
        got
    });
    (path, h)
}

#[test]
fn server_status_over_a_socket() {
    let fake = Fake::new();
    let (path, h) = fake_server(&fake, 3, |req| match req {
        "status\n" => SERVER_STATUS.to_string(),
        "metrics\n" => "# HELP rswap_server_clients x\nrswap_server_clients 2\n".to_string(),
        _ => "error: unknown request\n".to_string(),
    });
    let sock = path.to_str().unwrap();
    let table = run(&fake, &["server-status", "--socket", sock]).unwrap();
    assert_eq!(table, SERVER_STATUS_TABLE);
    // --json: the answer as it came.
    let json = run(&fake, &["server-status", "--socket", sock, "--json"]).unwrap();
    assert_eq!(json, SERVER_STATUS);
    let metrics = run(&fake, &["server-status", "--metrics", "--socket", sock]).unwrap();
    assert_eq!(
        metrics,
        "# HELP rswap_server_clients x\nrswap_server_clients 2\n"
    );
    assert_eq!(h.join().unwrap(), ["status\n", "status\n", "metrics\n"]);
}

#[test]
fn server_status_failures_name_the_socket() {
    let fake = Fake::new();
    let missing = fake.tmp.join("none.sock");
    let e = run(
        &fake,
        &["server-status", "--socket", missing.to_str().unwrap()],
    )
    .unwrap_err();
    assert_eq!(
        e,
        format!(
            "rswapctl: server-status: cannot connect to {0}: No such file or directory \
             (is rswap-server running with --status-socket {0}?)",
            missing.display()
        )
    );
    // A refusal, a half answer, no answer.
    for (answer, want) in [
        (
            (|_: &str| "error: too many status connections at once; try again\n".to_string())
                as fn(&str) -> String,
            ": the server says: too many status connections at once; try again",
        ),
        (
            |_: &str| SERVER_STATUS[..100].to_string(),
            ": the status is not what rswapctl expects: ",
        ),
        (
            |_: &str| String::new(),
            ": the server closed the connection without an answer",
        ),
    ] {
        let (path, h) = fake_server(&fake, 1, answer);
        let e = run(
            &fake,
            &["server-status", "--socket", path.to_str().unwrap()],
        )
        .unwrap_err();
        h.join().unwrap();
        fs::remove_file(&path).unwrap();
        let prefix = format!("rswapctl: server-status: {}{want}", path.display());
        assert!(e.starts_with(&prefix), "{e:?} lacks {prefix:?}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // --json and --metrics exclude each other.
    assert!(run(&fake, &["server-status", "--json", "--metrics"]).is_err());
}

#[test]
fn server_status_defaults_and_man_page() {
    let cli = Cli::try_parse_from(["rswapctl", "server-status"]).unwrap();
    match cli.command {
        Some(cli::Cmd::ServerStatus {
            socket,
            json,
            metrics,
        }) => {
            assert_eq!(socket, PathBuf::from("/run/rswap/server.sock"));
            assert!(!json && !metrics);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server_status::DEFAULT_SOCKET, "/run/rswap/server.sock");
    let fake = Fake::new();
    let dir = fake.tmp.join("man");
    fs::create_dir(&dir).unwrap();
    run(&fake, &["--generate-man", dir.to_str().unwrap()]).unwrap();
    let page = fs::read_to_string(dir.join("rswapctl-server-status.1")).unwrap();
    for want in [
        "\\-\\-socket",
        "/run/rswap/server.sock",
        "\\-\\-json",
        "\\-\\-metrics",
    ] {
        assert!(page.contains(want), "{want} not in\n{page}");
    }
    let main = fs::read_to_string(dir.join("rswapctl.1")).unwrap();
    assert!(main.contains("server\\-status"), "{main}");
}

// --- target files and up/down --------------------------------------------------------

use crate::conf::{keys, parse_target_config};

const FULL_CONF: &str = "\
# the memory server in rack 2
server = 192.0.2.2:18516
size = 8G
client_id = 0x1001
secret_file = /etc/rswap/swap0.secret
queues = 4
poll_queues = 1
recovery_ms = 3000
keepalive_ms = 2000

swap = yes
priority = 100
";

#[test]
fn conf_parses_every_key() {
    let c = parse_target_config("swap0", "swap0.conf", FULL_CONF).unwrap();
    let o = &c.options;
    assert_eq!(o.name, "swap0");
    for (attr, value) in [
        ("addr", "192.0.2.2"),
        ("port", "18516"),
        ("size", "8G"),
        ("client_id", "0x1001"),
        ("queues", "4"),
        ("poll_queues", "1"),
        ("recovery_ms", "3000"),
        ("keepalive_ms", "2000"),
    ] {
        assert_eq!(o.get(attr), Some(value), "{attr}");
    }
    assert_eq!(o.values.len(), 8, "{o:?}");
    assert!(o.swap);
    assert_eq!(o.priority, Some(100));
    assert_eq!(
        c.secret_file,
        Some(PathBuf::from("/etc/rswap/swap0.secret"))
    );
    assert!(o.secret.is_none());
    // An IPv6 server, as --server takes it.
    let c = parse_target_config("v6", "v6.conf", "server = [fd00::2]:7471\nsize = 8G\n").unwrap();
    assert_eq!(c.options.get("addr"), Some("fd00::2"));
    assert_eq!(c.options.get("port"), Some("7471"));
}

#[test]
fn conf_minimal_and_spacing() {
    let c =
        parse_target_config("t", "t.conf", "  server=192.0.2.9 \n\tsize =\t64M\n  # x\n").unwrap();
    assert_eq!(c.options.get("size"), Some("64M"));
    assert!(!c.options.swap);
    // Nothing else: every other attribute keeps the module's default.
    assert_eq!(
        c.options.values.keys().copied().collect::<Vec<_>>(),
        ["addr", "size"]
    );
    assert_eq!(c.secret_file, None);
    let c =
        parse_target_config("t", "t.conf", "server = 192.0.2.9\nsize = 1G\nswap = no\n").unwrap();
    assert!(!c.options.swap);
}

#[test]
fn conf_errors_name_file_and_line() {
    let base = "server = 192.0.2.2\nsize = 8G\n";
    for (extra, want) in [
        ("sise = 8G", "f.conf:3: unknown key \"sise\""),
        ("size = 4G", "f.conf:3: size given twice (first on line 2)"),
        ("just words", "f.conf:3: not a `key = value` line"),
        ("queues =", "f.conf:3: queues: empty value"),
        ("queues = -1", "f.conf:3: queues: \"-1\" is not a number"),
        (
            "recovery_ms = 1e3",
            "f.conf:3: recovery_ms: \"1e3\" is not a number",
        ),
        ("keepalive_ms = 99999999999", "f.conf:3: keepalive_ms:"),
        (
            "client_id = 0",
            "f.conf:3: client_id: \"0\" is not a client id",
        ),
        (
            "client_id = 0xg1",
            "f.conf:3: client_id: \"0xg1\" is not a client id",
        ),
        (
            "secret_file = rel/path",
            "f.conf:3: secret_file: \"rel/path\" is not an absolute path",
        ),
        ("swap = maybe", "f.conf:3: swap: \"maybe\" is not yes or no"),
        (
            "swap = yes\npriority = 40000",
            "f.conf:4: priority: \"40000\" is not a swap priority",
        ),
        ("priority = 5", "f.conf:3: priority is only for swap = yes"),
        (
            "# c\n\nSERVER = 1.2.3.4",
            "f.conf:5: unknown key \"SERVER\"",
        ),
    ] {
        let text = format!("{base}{extra}\n");
        let e = parse_target_config("t", "f.conf", &text).unwrap_err();
        assert!(e.starts_with(want), "{extra:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    for (line, want) in [
        (
            "server = 192.0.2.2:0",
            "f.conf:1: server: \"0\" is not a port",
        ),
        (
            "server = 192.0.2.2:70000",
            "f.conf:1: server: \"70000\" is not a port",
        ),
        ("server = example.org:1", "f.conf:1: server:"),
    ] {
        let e = parse_target_config("t", "f.conf", &format!("{line}\nsize = 8G\n")).unwrap_err();
        assert!(e.starts_with(want), "{line:?}: {e}");
    }
    for (size, ok) in [
        ("8G", true),
        ("4096", true),
        ("64m", true),
        ("G", false),
        ("8GG", false),
        ("8 G", false),
        ("-8G", false),
        ("8P", false),
    ] {
        let r = parse_target_config(
            "t",
            "f.conf",
            &format!("server = 192.0.2.2\nsize = {size}\n"),
        );
        assert_eq!(r.is_ok(), ok, "{size:?}: {r:?}");
        if !ok {
            assert!(r.unwrap_err().starts_with("f.conf:2: size: "));
        }
    }
    assert_eq!(
        parse_target_config("t", "f.conf", "size = 8G\n").unwrap_err(),
        "f.conf: no `server = ...` line or `servers = ...` (required)"
    );
    assert_eq!(
        parse_target_config("t", "f.conf", "# empty\nserver = 192.0.2.2\n").unwrap_err(),
        "f.conf: no `size = ...` line (required)"
    );
}

/// A tiny deterministic generator (xorshift), so the fuzz test below needs no crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
}

/// Random files made of valid and broken lines: the parser never panics, an error
/// always names the file (and a line within the file when it has one), and a file it
/// accepts has a server and a size.
#[test]
fn conf_fuzz() {
    let cases: u64 = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let values = [
        "",
        "0",
        "1",
        "-1",
        "yes",
        "no",
        "8G",
        "0x10",
        "192.0.2.2",
        "192.0.2.2:7471",
        "[::1]:1",
        "/etc/x",
        "x=y",
        "\u{e9}\u{e9}",
        "99999999999999999999",
        " 5 ",
        "#",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..cases {
        let n = rng.next() % 12;
        let mut text = String::new();
        for _ in 0..n {
            let line = match rng.next() % 6 {
                0 => format!("{} = {}", rng.pick(&keys()), rng.pick(&values)),
                1 => format!("{}={}", rng.pick(&keys()), rng.pick(&values)),
                2 => format!("# {}", rng.pick(&values)),
                3 => String::new(),
                4 => format!(
                    "{} = {}",
                    rng.pick(&["bogus", "Size", "server ", " ="]),
                    rng.pick(&values)
                ),
                _ => rng.pick(&values).to_string(),
            };
            text.push_str(&line);
            text.push('\n');
        }
        let lines = text.lines().count();
        match parse_target_config("t", "fz.conf", &text) {
            Ok(c) => {
                assert!(
                    c.options.get("addr").is_some() && c.options.get("size").is_some(),
                    "{text:?}"
                );
                assert!(c.options.priority.is_none() || c.options.swap, "{text:?}");
            }
            Err(e) => {
                assert!(e.starts_with("fz.conf"), "{e}");
                if let Some(rest) = e
                    .strip_prefix("fz.conf:")
                    .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
                {
                    let no: usize = rest.split(':').next().unwrap().parse().unwrap();
                    assert!(no >= 1 && no <= lines, "{e} in {text:?}");
                }
            }
        }
    }
}

fn conf_dir(fake: &Fake, name: &str, text: &str) -> PathBuf {
    let dir = fake.tmp.join("targets");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(format!("{name}.conf")), text).unwrap();
    dir
}

fn up_args<'a>(dir: &'a str, name: &'a str) -> Vec<&'a str> {
    vec!["up", name, "--config-dir", dir]
}

#[test]
fn up_adds_from_the_file_and_is_idempotent() {
    let fake = Fake::new();
    let secret = secret_file(&fake, "s.secret", SECRET, 0o600);
    let text = format!(
        "server = 192.0.2.2:18516\nsize = 8G\nclient_id = 0x1001\nsecret_file = {}\nqueues = 4\nswap = yes\npriority = 5\n",
        secret.display()
    );
    let dir = conf_dir(&fake, "swap0", &text);
    let d = dir.display().to_string();
    fs::write(fake.tmp.join("dev/rswap0"), "").unwrap();
    let out = run(&fake, &up_args(&d, "swap0")).unwrap();
    assert_eq!(out, "swap0: up, /dev/rswap0, swapped on\n");
    assert_eq!(
        *fake.writes.borrow(),
        [
            "addr=192.0.2.2",
            "port=18516",
            "size=8G",
            "queues=4",
            "client_id=0x1001",
            &key_write("swap0"),
            "enable=1"
        ]
    );
    assert_secret_through_the_keyring(&fake, "swap0");
    let dev = fake.dev("rswap0");
    assert_eq!(
        *fake.commands.borrow(),
        [format!("mkswap {dev}"), format!("swapon -p 5 {dev}")]
    );
    // Up already: nothing is written or run again.
    fake.swapped_on("rswap0", 0, 5);
    assert_eq!(
        run(&fake, &up_args(&d, "swap0")).unwrap(),
        "swap0: already up\n"
    );
    assert_eq!(fake.writes.borrow().len(), 7);
    assert_eq!(fake.commands.borrow().len(), 2);
    // Down swaps off first, then removes; a second down finds nothing: success.
    assert_eq!(run(&fake, &["down", "swap0"]).unwrap(), "swap0: down\n");
    assert_eq!(fake.commands.borrow()[2], format!("swapoff {dev}"));
    assert!(!fake.dir("swap0").exists());
    assert_eq!(
        run(&fake, &["down", "swap0"]).unwrap(),
        "swap0: not there\n"
    );
}

#[test]
fn up_refuses_a_target_that_exists_but_is_not_up() {
    let fake = Fake::new();
    let dir = conf_dir(&fake, "t", "server = 192.0.2.2\nsize = 8G\nswap = yes\n");
    let d = dir.display().to_string();
    fake.target("t", "192.0.2.2", "8589934592", None);
    let e = run(&fake, &up_args(&d, "t")).unwrap_err();
    assert!(
        e.starts_with("rswapctl: up t: ")
            && e.contains("exists but is not enabled (rswapctl down t first)"),
        "{e}"
    );
    fake.write(&fake.dir("t").join("enable"), "1\n").unwrap();
    let e = run(&fake, &up_args(&d, "t")).unwrap_err();
    assert!(e.contains("exists but is not swapped on"), "{e}");
    assert!(fake.commands.borrow().is_empty());
}

#[test]
fn up_with_a_bad_file_does_nothing() {
    let fake = Fake::new();
    let dir = conf_dir(&fake, "t", "server = 192.0.2.2\nsize = 8G\nqueue = 4\n");
    let d = dir.display().to_string();
    let e = run(&fake, &up_args(&d, "t")).unwrap_err();
    assert_eq!(
        e,
        format!(
            "rswapctl: up t: {d}/t.conf:3: unknown key \"queue\" (known: {})",
            keys().join(", ")
        )
    );
    // A missing file, a secret file others may read, a bad name.
    let e = run(&fake, &up_args(&d, "nope")).unwrap_err();
    assert_eq!(
        e,
        format!("rswapctl: up nope: {d}/nope.conf: No such file or directory")
    );
    let secret = secret_file(&fake, "open.secret", SECRET, 0o644);
    conf_dir(
        &fake,
        "s",
        &format!(
            "server = 192.0.2.2\nsize = 8G\nsecret_file = {}\n",
            secret.display()
        ),
    );
    let e = run(&fake, &up_args(&d, "s")).unwrap_err();
    assert!(e.contains("mode 0644") && !e.contains(SECRET), "{e}");
    for bad in ["", ".hidden", "a/b", ".."] {
        assert!(run(&fake, &up_args(&d, bad))
            .unwrap_err()
            .contains("invalid target name"));
    }
    assert!(fake.writes.borrow().is_empty() && fake.commands.borrow().is_empty());
    assert_eq!(fs::read_dir(fake.tmp.join("rswap")).unwrap().count(), 0);
}

#[test]
fn up_mounts_configfs_and_loads_the_module() {
    let fake = Fake::new();
    let dir = conf_dir(&fake, "t", "server = 192.0.2.2\nsize = 8G\n");
    let d = dir.display().to_string();
    fs::remove_dir(fake.tmp.join("rswap")).unwrap();
    // Not mounted: mount, then modprobe.
    fs::write(fake.tmp.join("mounts"), "sysfs /sys sysfs rw 0 0\n").unwrap();
    assert_eq!(
        run(&fake, &up_args(&d, "t")).unwrap(),
        "t: up, /dev/rswap0\n"
    );
    let tmp = fake.tmp.display().to_string();
    assert_eq!(
        *fake.commands.borrow(),
        [
            format!("mount -t configfs configfs {tmp}"),
            "modprobe rswap".to_string()
        ]
    );
    run(&fake, &["down", "t"]).unwrap();
    // Mounted: only modprobe.
    fs::remove_dir(fake.tmp.join("rswap")).unwrap();
    fake.commands.borrow_mut().clear();
    fs::write(
        fake.tmp.join("mounts"),
        format!("configfs {tmp} configfs rw 0 0\n"),
    )
    .unwrap();
    run(&fake, &up_args(&d, "t")).unwrap();
    assert_eq!(*fake.commands.borrow(), ["modprobe rswap"]);
    // No module at all: says so, creates nothing.
    run(&fake, &["down", "t"]).unwrap();
    fs::remove_dir(fake.tmp.join("rswap")).unwrap();
    let mut fake2 = Fake::new();
    fs::remove_dir(fake2.tmp.join("rswap")).unwrap();
    fs::write(
        fake2.tmp.join("mounts"),
        format!("configfs {} configfs rw 0 0\n", fake2.tmp.display()),
    )
    .unwrap();
    fake2.fail_command = Some("modprobe");
    let dir2 = conf_dir(&fake2, "t", "server = 192.0.2.2\nsize = 8G\n");
    let up = |fake: &Fake| run(fake, &up_args(&dir2.display().to_string(), "t")).unwrap_err();
    // The running kernel has no rswap.ko (modules.dep lists none): says so, and where to
    // look.
    fs::write(fake2.tmp.join("osrelease"), "7.4.1+bpo-amd64\n").unwrap();
    let modules = fake2.tmp.join("modules/7.4.1+bpo-amd64");
    fs::create_dir_all(&modules).unwrap();
    fs::write(
        modules.join("modules.dep"),
        "kernel/fs/ext4/ext4.ko.xz: kernel/fs/jbd2/jbd2.ko.xz\n",
    )
    .unwrap();
    assert_eq!(
        up(&fake2),
        "rswapctl: up t: no rswap.ko for kernel 7.4.1+bpo-amd64: rswap-dkms has not built it \
         (`dkms status rswap` lists the kernels it built it for; `dkms autoinstall` builds \
         it for the running kernel)"
    );
    // rswap-dkms noted why at install time: that reason.
    fs::create_dir_all(fake2.tmp.join("dkms")).unwrap();
    let why = "rswap-dkms 0.1.0 builds rswap.ko for kernels matching ^7\\.3\\. only";
    fs::write(
        fake2.tmp.join("dkms/no-module-7.4.1+bpo-amd64"),
        format!("{why}\n"),
    )
    .unwrap();
    assert_eq!(
        up(&fake2),
        format!("rswapctl: up t: no rswap.ko for kernel 7.4.1+bpo-amd64: {why}")
    );
    // The module is there (compressed) but does not load.
    fs::write(
        modules.join("modules.dep"),
        "updates/dkms/rswap.ko.xz: kernel/drivers/infiniband/core/ib_core.ko.xz\n",
    )
    .unwrap();
    assert!(
        up(&fake2).starts_with(
            "rswapctl: up t: modprobe rswap: exit status: 1 (the module is there but did not \
             load: see dmesg"
        ),
        "{}",
        up(&fake2)
    );
    // down without the module: nothing there, success.
    assert_eq!(run(&fake2, &["down", "t"]).unwrap(), "t: not there\n");
}

#[test]
fn is_mounted_reads_proc_mounts() {
    let m = "configfs /sys/kernel/config configfs rw,nosuid 0 0\n\
             tmpfs /mnt/with\\040space tmpfs rw 0 0\n";
    assert!(parse::is_mounted(
        m,
        Path::new("/sys/kernel/config"),
        "configfs"
    ));
    assert!(!parse::is_mounted(
        m,
        Path::new("/sys/kernel/config"),
        "tmpfs"
    ));
    assert!(!parse::is_mounted(m, Path::new("/sys/kernel"), "configfs"));
    assert!(parse::is_mounted(m, Path::new("/mnt/with space"), "tmpfs"));
}

#[test]
fn up_retries_a_failed_connect_until_the_wait_is_over() {
    let mut fake = Fake::new();
    fake.fail = Some(("enable", 111, Some("connect: connection refused")));
    let o = parse_target_config("t", "t.conf", "server = 192.0.2.2:1\nsize = 8G\n")
        .unwrap()
        .options;
    let (wait, every) = (Duration::from_millis(1500), Duration::from_millis(250));
    let start = std::time::Instant::now();
    let mut retried_at = Vec::new();
    let e = fake
        .ctl()
        .up(&o, wait, every, &mut |f| {
            retried_at.push(start.elapsed());
            assert!(f
                .to_string()
                .starts_with("rswapctl: up t: writing enable=1: "));
        })
        .unwrap_err();
    let ended = start.elapsed();
    // Tried again while the next try would start within the wait, then not. Only
    // what holds on a loaded machine too is asserted (this clock starts before up's,
    // and a try may start late): retries at least `every` apart, each followed by a
    // sleep and another try, so at most wait / every of them (6; on an idle machine 5
    // or 6), and the last try ended when a further one could not start in time.
    let most = (wait.as_millis() / every.as_millis()) as usize;
    assert!(
        !retried_at.is_empty() && retried_at.len() <= most,
        "{retried_at:?}"
    );
    for pair in retried_at.windows(2) {
        assert!(pair[1] >= pair[0] + every, "{retried_at:?}");
    }
    assert!(
        *retried_at.last().unwrap() + every <= ended,
        "{retried_at:?} {ended:?}"
    );
    assert!(ended + every > wait, "{ended:?}");
    assert_eq!(e.op, "up");
    assert!(
        e.to_string()
            .contains("kernel: connect: connection refused"),
        "{e}"
    );
    // Every attempt was undone: no half target.
    assert!(!fake.dir("t").exists());
    assert_eq!(
        fake.writes
            .borrow()
            .iter()
            .filter(|w| *w == "enable=1")
            .count(),
        retried_at.len() + 1
    );
    // A failure that is not the connect is not tried again.
    fake.fail = Some(("size", EINVAL, None));
    fake.writes.borrow_mut().clear();
    let mut tries = 0;
    fake.ctl()
        .up(
            &o,
            Duration::from_secs(5),
            Duration::from_millis(10),
            &mut |_| tries += 1,
        )
        .unwrap_err();
    assert_eq!(tries, 0);
    assert!(!fake.dir("t").exists());
}

#[test]
fn up_and_down_command_lines() {
    let cli = Cli::try_parse_from(["rswapctl", "up", "swap0"]).unwrap();
    match cli.command {
        Some(cli::Cmd::Up {
            name,
            config_dir,
            wait,
        }) => {
            assert_eq!(name, "swap0");
            assert_eq!(config_dir, PathBuf::from("/etc/rswap/targets"));
            assert_eq!(wait, 0);
        }
        other => panic!("{other:?}"),
    }
    let cli = Cli::try_parse_from(["rswapctl", "up", "--wait", "60", "s"]).unwrap();
    assert!(matches!(cli.command, Some(cli::Cmd::Up { wait: 60, .. })));
    assert!(Cli::try_parse_from(["rswapctl", "down"]).is_err());
    assert!(Cli::try_parse_from(["rswapctl", "up", "s", "--wait", "-1"]).is_err());
}

#[test]
fn down_waits_for_another_swapoff_of_the_disk() {
    let mut fake = Fake::new();
    fake.target("t", "192.0.2.2", "8589934592", Some("rswap0"));
    fake.swapped_on("rswap0", 0, 5);
    fake.swapoff_elsewhere = true;
    assert_eq!(run(&fake, &["down", "t"]).unwrap(), "t: down\n");
    assert!(!fake.dir("t").exists());
    // A swapoff that fails with the disk still swapped on: the failure, after the wait.
    let mut fake = Fake::new();
    fake.target("t", "192.0.2.2", "8589934592", Some("rswap0"));
    fake.swapped_on("rswap0", 0, 5);
    fake.fail_command = Some("swapoff");
    let start = std::time::Instant::now();
    let e = fake.ctl().down("t").unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        e.to_string(),
        format!(
            "rswapctl: down t: swapoff {}: exit status: 1",
            fake.dev("rswap0")
        )
    );
    assert_eq!(fake.attr("t", "enable"), "1");
}

#[test]
fn remove_tries_disable_again_while_the_disk_is_busy() {
    let mut fake = Fake::new();
    fake.target("t", "192.0.2.2", "8589934592", Some("rswap0"));
    fake.fail = Some(("enable", EBUSY, None));
    let start = std::time::Instant::now();
    let e = fake.ctl().remove("t").unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert!(
        fake.writes.borrow().len() >= 3,
        "{:?}",
        fake.writes.borrow()
    );
    assert!(
        e.to_string()
            .starts_with("rswapctl: remove t: writing enable=0: Device or resource busy"),
        "{e}"
    );
    // Any other error at once.
    fake.fail = Some(("enable", EINVAL, None));
    fake.writes.borrow_mut().clear();
    fake.ctl().remove("t").unwrap_err();
    assert_eq!(fake.writes.borrow().len(), 1);
}

// --- encryption ----------------------------------------------------------------------

#[test]
fn status_shows_the_auth_failures_of_the_stats() {
    let fake = Fake::new();
    fake.target("enc", "192.0.2.2", "4096", Some("rswap0"));
    fs::write(fake.dir("enc").join("encrypt"), "1\n").unwrap();
    fs::write(
        fake.dir("enc").join("stats"),
        stats("encryption aes-256-gcm sealed=10 opened=7 auth_failures=3"),
    )
    .unwrap();
    // Enabled, encryption off; enabled on a module without the line; disabled.
    fake.target("off", "192.0.2.2", "4096", Some("rswap1"));
    fake.target("old", "192.0.2.2", "4096", Some("rswap2"));
    fs::remove_file(fake.dir("old").join("encrypt")).unwrap();
    fs::write(
        fake.dir("old").join("stats"),
        stats("").replace("\n\n", "\n"),
    )
    .unwrap();
    fake.target("down", "192.0.2.2", "4096", None);
    fs::write(fake.dir("down").join("encrypt"), "1\n").unwrap();
    for (name, encrypt, auth_failures) in [
        ("enc", json!(true), json!(3)),
        ("off", json!(false), Value::Null),
        ("old", Value::Null, Value::Null),
        ("down", json!(true), Value::Null),
    ] {
        let st: Value =
            serde_json::from_str(&run(&fake, &["status", name, "--json"]).unwrap()).unwrap();
        assert_eq!(
            (&st["encrypt"], &st["auth_failures"]),
            (&encrypt, &auth_failures),
            "{name}"
        );
    }
    let text = run(&fake, &["status", "enc"]).unwrap();
    assert!(text.contains("\nauth_failures: 3\n"), "{text}");
    let table = run(&fake, &["list"]).unwrap();
    assert_eq!(column(&table, "ENC"), ["ENC", "yes", "yes", "no", "-"]);
    // A disk that `add --encrypt` enabled has opened nothing yet: 0, not null.
    run(
        &fake,
        &[
            "add",
            "new",
            "--server",
            "192.0.2.2",
            "--size",
            "8G",
            "--encrypt",
        ],
    )
    .unwrap();
    let st: Value =
        serde_json::from_str(&run(&fake, &["status", "new", "--json"]).unwrap()).unwrap();
    assert_eq!(
        (&st["encrypt"], &st["auth_failures"]),
        (&json!(true), &json!(0))
    );
    let text = run(&fake, &["status", "new"]).unwrap();
    assert!(text.contains("\nauth_failures: 0\n"), "{text}");
}

// --- every setting, from the settings table -------------------------------------------

/// The settings `add` and the target files take: all but `port`, which `server` sets.
fn keyed() -> impl Iterator<Item = &'static settings::Setting> {
    SETTINGS.iter().filter(|s| s.key.is_some())
}

/// What `add` writes for setting `s` given as `value`: `ATTR=VALUE`.
fn written(s: &settings::Setting, value: &str) -> Vec<String> {
    match s.kind {
        Kind::Server => {
            let (addr, port) = value.rsplit_once(':').unwrap();
            vec![format!("addr={addr}"), format!("port={port}")]
        }
        Kind::Switch => vec![format!("{}=1", s.attr)],
        Kind::SecretFile => vec![key_write("mem0")],
        // Each file a key; `-` as it is.
        Kind::SecretFileList => {
            let pid = std::process::id();
            let entries: Vec<String> = value
                .split(',')
                .enumerate()
                .map(|(i, e)| match (i, e) {
                    (_, "-") => "-".to_string(),
                    (0, _) => format!("key:rswap:mem0:{pid}"),
                    (i, _) => format!("key:rswap:mem0:{pid}:{}", i + 1),
                })
                .collect();
            vec![format!("secrets={}", entries.join(","))]
        }
        _ => vec![format!("{}={value}", s.attr)],
    }
}

/// What the module's attributes show once `add` wrote `written(s, value)`.
fn shows(s: &settings::Setting, value: &str) -> Vec<(&'static str, String)> {
    written(s, value)
        .iter()
        .map(|w| {
            let (attr, v) = w.split_once('=').unwrap();
            let s = settings::setting(attr).unwrap();
            let shown = match s.kind {
                Kind::Size => bytes(v),
                Kind::SecretFile => "(set)".to_string(),
                Kind::SecretFileList => v
                    .split(',')
                    .map(|e| if e == "-" { "-" } else { "(set)" })
                    .collect::<Vec<_>>()
                    .join(","),
                _ => v.to_string(),
            };
            (s.attr, shown)
        })
        .collect()
}

/// The field of `list --json` and `status --json` of setting `s` whose attribute shows
/// `shown`.
fn field_for(s: &settings::Setting, shown: &str) -> Value {
    match s.kind {
        Kind::Number { .. } | Kind::Size => json!(shown.parse::<u64>().unwrap()),
        Kind::Switch => json!(shown == "1"),
        Kind::SecretFile => json!(shown == "(set)"),
        Kind::Server
        | Kind::HostOrAny
        | Kind::ClientId
        | Kind::Code
        | Kind::ServerList
        | Kind::SecretFileList => json!(shown),
    }
}

/// `field: value` as `status` prints a field (`-` for null).
fn status_line(field: &str, value: &Value) -> String {
    match value {
        Value::Null => format!("\n{field}: -\n"),
        Value::String(v) => format!("\n{field}: {v}\n"),
        v => format!("\n{field}: {v}\n"),
    }
}

/// The settings every target of the tests has: a server and a size; no server when
/// `given` has a setting given instead of it (`servers`).
fn base<'a>(given: &[(&str, &str)]) -> Vec<(&'a str, &'a str)> {
    let instead = |attr: &str| {
        given
            .iter()
            .any(|(k, _)| settings::by_key(k).is_some_and(|s| s.instead_of == Some(attr)))
    };
    let mut base = vec![("server", "192.0.2.2"), ("size", "8G")];
    base.retain(|(k, _)| !settings::by_key(k).is_some_and(|s| instead(s.attr)));
    base
}

/// `add mem0 --server 192.0.2.2 --size 8G` and these settings, by key (`yes` for a
/// switch), each replacing the base's value of the same key.
fn add_args(given: &[(&str, &str)]) -> Vec<String> {
    let mut keyed = base(given);
    for (key, value) in given {
        match keyed.iter_mut().find(|(k, _)| k == key) {
            Some(kv) => kv.1 = value,
            None => keyed.push((key, value)),
        }
    }
    let mut args = vec!["add".to_string(), "mem0".to_string()];
    for (key, value) in keyed {
        let s = settings::by_key(key).unwrap();
        args.push(format!("--{}", s.flag().unwrap()));
        if s.kind != Kind::Switch {
            args.push(value.to_string());
        }
    }
    args
}

fn run_add(fake: &Fake, given: &[(&str, &str)]) -> Result<String, String> {
    let args = add_args(given);
    run(fake, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A target file of a server, a size and these settings, by key, each replacing the
/// base's line of the same key; and the line of the last one.
fn conf_of(given: &[(&str, &str)]) -> (String, usize) {
    let mut lines = base(given);
    let mut at = 0;
    for (key, value) in given {
        at = match lines.iter().position(|(k, _)| k == key) {
            Some(i) => {
                lines[i].1 = value;
                i + 1
            }
            None => {
                lines.push((key, value));
                lines.len()
            }
        };
    }
    let text = lines.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
    (text, at)
}

#[test]
fn every_setting_is_written_before_enable_and_shown() {
    for s in keyed() {
        let key = s.key.unwrap();
        let fake = Fake::new();
        let good = match s.kind {
            Kind::SecretFile => secret_file(&fake, "t.secret", SECRET, 0o600)
                .display()
                .to_string(),
            Kind::SecretFileList => format!(
                "{},-",
                secret_file(&fake, "t.secret", SECRET, 0o600).display()
            ),
            _ => s.sample.0.to_string(),
        };
        run_add(&fake, &[(key, &good)]).unwrap_or_else(|e| panic!("{key}: {e}"));
        let writes = fake.writes.borrow().clone();
        let (last, before) = writes.split_last().unwrap();
        assert_eq!(last, "enable=1", "{key}");
        for w in written(s, &good) {
            assert!(before.contains(&w), "{key}: {w} not in {writes:?}");
        }
        // In the table's order; the secret through its own write, last.
        let order: Vec<usize> = before
            .iter()
            .filter(|w| !w.starts_with("secret="))
            .map(|w| {
                let (attr, _) = w.split_once('=').unwrap();
                SETTINGS.iter().position(|s| s.attr == attr).unwrap()
            })
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{key}: {writes:?}");
        // Shown as the module shows it: the attribute, the field of list and status, as
        // JSON and as text, and its column.
        let list: Value = serde_json::from_str(&run(&fake, &["list", "--json"]).unwrap()).unwrap();
        let status: Value =
            serde_json::from_str(&run(&fake, &["status", "mem0", "--json"]).unwrap()).unwrap();
        let text = run(&fake, &["status", "mem0"]).unwrap();
        for (attr, shown) in shows(s, &good) {
            let field = settings::setting(attr).unwrap().field;
            let want = field_for(settings::setting(attr).unwrap(), &shown);
            assert_eq!(fake.attr("mem0", attr), shown, "{key}");
            assert_eq!(list[0][field], want, "{key}: {list}");
            assert_eq!(status[field], want, "{key}");
            assert_eq!(status["attributes"][attr], json!(shown), "{key}");
            assert!(text.contains(&status_line(field, &want)), "{key}: {text}");
            assert!(
                text.contains(&format!("\nattr.{attr}: {shown}\n")),
                "{key}: {text}"
            );
        }
        if let Some(header) = s.column {
            let table = run(&fake, &["list"]).unwrap();
            assert_eq!(column(&table, header), [header, "yes"], "{key}");
        }
        // Not given, it is not written: the module's default stays.
        run(&fake, &["remove", "mem0"]).unwrap();
        fake.writes.borrow_mut().clear();
        if !s.required() {
            run_add(&fake, &[]).unwrap();
            let prefix = format!("{}=", s.attr);
            assert!(
                !fake.writes.borrow().iter().any(|w| w.starts_with(&prefix)),
                "{key}"
            );
            let default = s.default.shown().unwrap_or(FAKE_CLIENT_ID.to_string());
            assert_eq!(fake.attr("mem0", s.attr), default, "{key}");
        }
        // A number of the module's default is written as any other.
        if let (Kind::Number { .. }, ModuleDefault::Value(v)) = (s.kind, s.default) {
            run(&fake, &["remove", "mem0"]).unwrap_or_default();
            fake.writes.borrow_mut().clear();
            run_add(&fake, &[(key, v)]).unwrap();
            assert!(
                fake.writes.borrow().contains(&format!("{}={v}", s.attr)),
                "{key}"
            );
        }
    }
}

#[test]
fn every_setting_shows_the_module_default_and_null_without_the_attribute() {
    let fake = Fake::new();
    // As `mkdir` made it; on a module without the settings' attributes; with values the
    // tool does not know.
    fake.mkdir(&fake.dir("fresh")).unwrap();
    fake.mkdir(&fake.dir("old")).unwrap();
    fake.mkdir(&fake.dir("odd")).unwrap();
    for s in SETTINGS {
        fs::remove_file(fake.dir("old").join(s.attr)).unwrap();
        fs::write(fake.dir("odd").join(s.attr), "odd value\n").unwrap();
    }
    let list: Value = serde_json::from_str(&run(&fake, &["list", "--json"]).unwrap()).unwrap();
    let table = run(&fake, &["list"]).unwrap();
    let status = |name: &str| run(&fake, &["status", name]).unwrap();
    let (fresh, old, odd) = (status("fresh"), status("old"), status("odd"));
    for s in SETTINGS {
        let default = match s.default {
            ModuleDefault::Unset(word) if s.kind == Kind::SecretFile => field_for(s, word),
            ModuleDefault::Required | ModuleDefault::Unset(_) => Value::Null,
            ModuleDefault::Random => json!(FAKE_CLIENT_ID),
            ModuleDefault::Cpus => json!(settings::possible_cpus().clamp(1, 64)),
            ModuleDefault::Value(v) => field_for(s, v),
        };
        let odd_value = match s.kind {
            Kind::Server
            | Kind::HostOrAny
            | Kind::ClientId
            | Kind::Code
            | Kind::ServerList
            | Kind::SecretFileList => json!("odd value"),
            _ => Value::Null,
        };
        // In name order: fresh, odd, old.
        assert_eq!(list[0][s.field], default, "{}", s.attr);
        assert_eq!(list[1][s.field], odd_value, "{}", s.attr);
        assert_eq!(list[2][s.field], Value::Null, "{}", s.attr);
        assert!(fresh.contains(&status_line(s.field, &default)), "{fresh}");
        assert!(odd.contains(&status_line(s.field, &odd_value)), "{odd}");
        assert!(old.contains(&status_line(s.field, &Value::Null)), "{old}");
        assert!(!old.contains(&format!("attr.{}:", s.attr)), "{old}");
        if let Some(header) = s.column {
            assert_eq!(column(&table, header), [header, "no", "-", "-"], "{table}");
        }
    }
    // The columns of the settings that have one come last, in the table's order.
    let columns: Vec<&str> = SETTINGS.iter().filter_map(|s| s.column).collect();
    assert!(
        table.lines().next().unwrap().ends_with(&columns.join("  ")),
        "{table}"
    );
}

#[test]
fn every_setting_refuses_a_bad_value_with_the_reason_before_anything_is_created() {
    let fake = Fake::new();
    for s in keyed() {
        let (key, bad) = (s.key.unwrap(), s.sample.1);
        let reason = match s.kind {
            Kind::SecretFile => format!("{bad:?} is not an absolute path"),
            _ => s.check(bad).unwrap_err(),
        };
        assert!(reason.contains(" is not "), "{key}: {reason}");
        // From a target file: the file, its line and the key.
        let (text, line) = conf_of(&[(key, bad)]);
        assert_eq!(
            parse_target_config("t", "t.conf", &text).unwrap_err(),
            format!("t.conf:{line}: {key}: {reason}")
        );
        // Given twice: the second line is refused before its value is looked at.
        let (text, first) = conf_of(&[(key, s.sample.0)]);
        let second = text.lines().count() + 1;
        let e = parse_target_config("t", "t.conf", &format!("{text}{key} = {bad}\n"));
        assert_eq!(
            e.unwrap_err(),
            format!("t.conf:{second}: {key} given twice (first on line {first})")
        );
        // From the command line (a switch takes no value, a secret file is read).
        if s.kind == Kind::Switch || read_at_add(s) {
            continue;
        }
        let flag = s.flag().unwrap();
        let e = run_add(&fake, &[(key, bad)]).unwrap_err();
        assert!(
            e.contains(&format!(
                "invalid value '{bad}' for '--{flag} <{}>': {reason}",
                s.value_name
            )),
            "{key}: {e}"
        );
    }
    assert!(fake.writes.borrow().is_empty());
    assert!(!fake.dir("mem0").exists());
    // The documented message of one of them, word for word.
    assert_eq!(
        conf_with("poll_queues = 64").unwrap_err(),
        "t.conf:3: poll_queues: \"64\" is not a number of poll queues (0..63)"
    );
}

#[test]
fn every_setting_of_a_target_file_is_what_add_writes() {
    for s in keyed().filter(|s| !read_at_add(s)) {
        let key = s.key.unwrap();
        let (text, _) = conf_of(&[(key, s.sample.0)]);
        let o = parse_target_config("t", "t.conf", &text).unwrap().options;
        for w in written(s, s.sample.0) {
            let (attr, value) = w.split_once('=').unwrap();
            assert_eq!(o.get(attr), Some(value), "{key}");
        }
    }
    // A switch: on writes 1; off writes nothing, as when not given.
    for s in SETTINGS.iter().filter(|s| s.kind == Kind::Switch) {
        let key = s.key.unwrap();
        for (value, want) in [
            ("yes", Some("1")),
            ("true", Some("1")),
            ("1", Some("1")),
            ("no", None),
            ("false", None),
            ("0", None),
        ] {
            let o = conf_with(&format!("{key} = {value}")).unwrap();
            assert_eq!(o.get(s.attr), want, "{key} = {value}");
        }
    }
    let c = parse_target_config(
        "t",
        "t.conf",
        &conf_of(&[("secret_file", "/etc/rswap/t.secret")]).0,
    );
    assert_eq!(
        c.unwrap().secret_file,
        Some(PathBuf::from("/etc/rswap/t.secret"))
    );
}

#[test]
fn number_settings_take_the_module_range() {
    let fake = Fake::new();
    for s in SETTINGS {
        let Kind::Number { min, max, zero, .. } = s.kind else {
            continue;
        };
        let mut good = vec![min.to_string(), max.to_string()];
        let mut bad: Vec<String> = ["-1", "+1", "x", "", "1.5", "0x2", "18446744073709551616"]
            .map(String::from)
            .to_vec();
        bad.push((max + 1).to_string());
        if zero {
            good.push("0".to_string());
        }
        if min > 0 && !(zero && min == 1) {
            bad.push((min - 1).to_string());
        }
        for v in &good {
            assert_eq!(s.check(v).as_deref(), Ok(v.as_str()), "{}", s.attr);
        }
        for v in &bad {
            assert_eq!(
                s.check(v),
                Err(format!("{v:?} is not {}", s.accepted())),
                "{}",
                s.attr
            );
        }
        // `--flag VALUE` takes a value that looks like a flag, and says why it is not one.
        let Some(key) = s.key else {
            continue;
        };
        for v in bad.iter().map(String::as_str).chain(["--swap"]) {
            let e = run_add(&fake, &[(key, v)]).unwrap_err();
            assert!(
                e.contains(&format!("{v:?} is not {}", s.accepted())),
                "{key} {v:?}: {e}"
            );
        }
    }
    assert!(fake.writes.borrow().is_empty());
    assert!(!fake.dir("mem0").exists());
}

/// `add` with `o` on a module older than `attr` (it has no such attribute): refused with
/// `why` before anything is written, and nothing is left behind. Without the option
/// (`add_options`) such a module is fine: returns that target as `list` shows it.
fn older_module_refuses(o: &AddOptions, attr: &'static str, why: &str) -> target::TargetInfo {
    let mut fake = Fake::new();
    fake.older_than = vec![attr];
    let f = fake.ctl().add(o).unwrap_err();
    assert_eq!(f.to_string(), format!("rswapctl: add mem0: {why}"));
    assert!(fake.writes.borrow().is_empty());
    assert!(!fake.dir("mem0").exists());
    fake.ctl().add(&add_options("mem0")).unwrap();
    assert!(!fake.dir("mem0").join(attr).exists());
    fake.ctl().list().unwrap().remove(0)
}

/// `add` with `o`, whose write `attr=value` the kernel refuses with `reason`: the error
/// names the write and the kernel's reason, and nothing is enabled or left behind.
fn kernel_refusal_leaves_nothing(o: &AddOptions, write: &str, reason: &'static str) {
    let (attr, _) = write.split_once('=').unwrap();
    let mut fake = Fake::new();
    fake.fail = Some((
        settings::setting(attr).map_or("enable", |s| s.attr),
        EINVAL,
        Some(reason),
    ));
    let f = fake.ctl().add(o).unwrap_err();
    assert_eq!(
        f.to_string(),
        format!(
            "rswapctl: add mem0: writing {write}: Invalid argument\n\
             rswapctl: add mem0: kernel: {reason}"
        )
    );
    // The refused write is the last one (no enable=0 to undo), and none before it enabled.
    let writes = fake.writes.borrow();
    let (last, before) = writes.split_last().unwrap();
    assert_eq!(last, write);
    assert!(
        !before.iter().any(|w| w.starts_with("enable")),
        "{writes:?}"
    );
    assert!(!fake.dir("mem0").exists());
}

#[test]
fn every_setting_refused_by_the_module_leaves_nothing() {
    for s in keyed().filter(|s| !read_at_add(s)) {
        let key = s.key.unwrap();
        let o = with(add_options("mem0"), &[(key, s.sample.0)]);
        kernel_refusal_leaves_nothing(&o, &written(s, s.sample.0)[0], "not accepted");
    }
    // The module refuses more queues than it connects at enable, with its reason.
    let o = with(
        add_options("mem0"),
        &[("queues", "64"), ("poll_queues", "1")],
    );
    kernel_refusal_leaves_nothing(
        &o,
        "enable=1",
        "enable: queues + poll_queues is 65, more than 64 connections",
    );
}

#[test]
fn settings_newer_than_the_module_are_refused_unless_at_its_default() {
    for s in SETTINGS {
        let (Some(key), Some(since)) = (s.key, s.since) else {
            continue;
        };
        let o = with(add_options("mem0"), &[(key, s.sample.0)]);
        let why = format!(
            "{a}: the rswap module loaded has no {a} attribute (it is older than {}); not \
             adding the target {}",
            since.feature,
            since.without,
            a = s.attr
        );
        let older = older_module_refuses(&o, s.attr, &why);
        assert_eq!(older.settings.get(s.field), &Value::Null, "{key}");
        // The module's default is what such a module has: nothing to write, nothing
        // refused (0 poll queues, src_addr any).
        let default = match (s.kind, s.default) {
            (Kind::Number { .. }, ModuleDefault::Value(v)) => Some(v),
            (Kind::HostOrAny, _) => Some("any"),
            _ => None,
        };
        if let Some(v) = default {
            let mut fake = Fake::new();
            fake.older_than = vec![s.attr];
            fake.ctl()
                .add(&with(add_options("mem0"), &[(key, v)]))
                .unwrap();
            assert_eq!(
                *fake.writes.borrow(),
                ["addr=192.0.2.2", "port=18516", "size=8G", "enable=1"]
            );
        }
    }
    // The message as the documentation quotes it.
    let o = with(add_options("mem0"), &[("encrypt", "yes")]);
    older_module_refuses(
        &o,
        "encrypt",
        "encrypt: the rswap module loaded has no encrypt attribute (it is older than \
         encryption); not adding the target unencrypted",
    );
}

/// The target file `t.conf` of a server, a size and then `lines` (from line 3 on).
const CONF_BASE: &str = "server = 192.0.2.2\nsize = 8G\n";

/// `add`'s options from a target file of a server, a size and `lines`.
fn conf_with(lines: &str) -> Result<AddOptions, String> {
    parse_target_config("t", "t.conf", &format!("{CONF_BASE}{lines}\n")).map(|c| c.options)
}

/// `up t` of a target file of a server, a size and `line`: writes `write` between them
/// and enable=1 (the attribute then shows it), and the second time the target is
/// "already up". Then, once down, `t` is up again as `Fake::target` makes one, with the
/// module's defaults: `up` refuses it, "exists but {refused} (rswapctl down t first)".
/// Returns the fake, with that target up, and the file's directory.
fn up_from_a_file_with(line: &str, write: &str, refused: &str) -> (Fake, String) {
    let fake = Fake::new();
    let dir = conf_dir(&fake, "t", &format!("{CONF_BASE}{line}\n"));
    let d = dir.display().to_string();
    assert_eq!(
        run(&fake, &up_args(&d, "t")).unwrap(),
        "t: up, /dev/rswap0\n"
    );
    assert_eq!(
        *fake.writes.borrow(),
        ["addr=192.0.2.2", "size=8G", write, "enable=1"]
    );
    let (attr, value) = write.split_once('=').unwrap();
    assert_eq!(fake.attr("t", attr), value);
    assert_eq!(run(&fake, &up_args(&d, "t")).unwrap(), "t: already up\n");
    // Up, but not as the file asks: not "already up".
    run(&fake, &["down", "t"]).unwrap();
    fake.target("t", "192.0.2.2", "8589934592", Some("rswap0"));
    let e = run(&fake, &up_args(&d, "t")).unwrap_err();
    assert!(
        e.contains(&format!("exists but {refused} (rswapctl down t first)")),
        "{e}"
    );
    (fake, d)
}

#[test]
fn up_compares_the_settings_a_file_gives() {
    for s in SETTINGS.iter().filter(|s| s.up != Up::Ignore) {
        let (key, good) = (s.key.unwrap(), s.sample.0);
        let refused = match s.up {
            Up::On(word) => format!("is not {word}"),
            _ => format!("has {} {}, not {good}", s.attr, s.default.shown().unwrap()),
        };
        up_from_a_file_with(&format!("{key} = {good}"), &written(s, good)[0], &refused);
    }
    // What the documentation says of poll queues, encryption and synchronous swap-in.
    let (fake, d) = up_from_a_file_with(
        "poll_queues = 2",
        "poll_queues=2",
        "has poll_queues 0, not 2",
    );
    // `up t` of a file of `lines` after the base, the target's attributes set to `attrs`
    // (a value of None: the module has no such attribute).
    let up = |lines: &str, attrs: &[(&str, Option<&str>)]| {
        conf_dir(&fake, "t", &format!("{CONF_BASE}{lines}"));
        for (attr, value) in attrs {
            let path = fake.dir("t").join(attr);
            match value {
                Some(v) => fs::write(path, format!("{v}\n")).unwrap(),
                None => fs::remove_file(path).unwrap(),
            }
        }
        run(&fake, &up_args(&d, "t"))
    };
    let already = Ok("t: already up\n".to_string());
    // Enabled with 2: already up. A file without the key does not look at them.
    assert_eq!(
        up("poll_queues = 2\n", &[("poll_queues", Some("2"))]),
        already
    );
    assert_eq!(up("", &[]), already);
    // `poll_queues = 0` asks for none: a target with 2 is not what the file says.
    let e = up("poll_queues = 0\n", &[]).unwrap_err();
    assert!(
        e.contains("exists but has poll_queues 2, not 0 (rswapctl down t first)"),
        "{e}"
    );
    // A module without the attribute has none, as `poll_queues = 0` asks.
    assert_eq!(up("poll_queues = 0\n", &[("poll_queues", None)]), already);
    // Synchronous as asked too, but without the poll queues: that is what it says.
    let synchronous = [("sync_swapin", Some("1")), ("poll_queues", Some("0"))];
    let e = up("sync_swapin = yes\npoll_queues = 1\n", &synchronous).unwrap_err();
    assert!(e.contains("exists but has poll_queues 0, not 1"), "{e}");
    // Encrypted as asked too, but not synchronous: that is what it says.
    let encrypted = [("encrypt", Some("1")), ("sync_swapin", Some("0"))];
    let e = up("encrypt = yes\nsync_swapin = yes\n", &encrypted).unwrap_err();
    assert!(e.contains("exists but is not synchronous"), "{e}");
    // `encrypt = no` and `sync_swapin = no` leave an encrypted, synchronous target alone.
    let both = [("sync_swapin", Some("1"))];
    assert_eq!(up("encrypt = no\nsync_swapin = no\n", &both), already);
    // After `down` (enable=0), every `up` only looked.
    assert_eq!(
        *fake.writes.borrow(),
        [
            "addr=192.0.2.2",
            "size=8G",
            "poll_queues=2",
            "enable=1",
            "enable=0"
        ]
    );
}

/// The man page `name` as `rswapctl --generate-man` writes it.
fn man_page(name: &str) -> String {
    let fake = Fake::new();
    let dir = fake.tmp.join("man");
    fs::create_dir(&dir).unwrap();
    run(&fake, &["--generate-man", dir.to_str().unwrap()]).unwrap();
    fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn man_page_has_every_setting() {
    let add = man_page("rswapctl-add.1");
    for s in keyed() {
        let flag = format!("\\-\\-{}", s.flag().unwrap().replace('-', "\\-"));
        assert!(add.contains(&flag), "{flag} not in {add}");
        if let Kind::Number { min, max, .. } = s.kind {
            assert!(
                add.contains(&format!("{min}..{max}")),
                "{} range not in {add}",
                s.attr
            );
        }
    }
    for word in ["security.md", "BLK_FEAT_SYNCHRONOUS", "IORING_SETUP_IOPOLL"] {
        assert!(add.contains(word), "{word} not in {add}");
    }
    // `add -h`: each setting's first sentence; --help (and the page): all, with the range
    // and the module's default.
    let cmd = Cli::command();
    let add_cmd = cmd.find_subcommand("add").unwrap();
    let arg = add_cmd
        .get_arguments()
        .find(|a| a.get_id() == "poll_queues")
        .unwrap();
    let short = arg.get_help().unwrap().to_string();
    let long = arg.get_long_help().unwrap().to_string();
    assert!(short.ends_with("each a connection of its own"), "{short}");
    assert!(
        long.starts_with(&short)
            && long.ends_with("N: a number of poll queues (0..63). Default: the module's (0)."),
        "{long}"
    );
    let list = man_page("rswapctl-list.1");
    assert!(list.contains("ENC SYNC"), "{list}");
    assert!(!list.contains("POLL"), "{list}");
    let up = man_page("rswapctl-up.1");
    assert!(up.contains("poll_queues"), "{up}");
}

#[test]
fn shell_completions_have_every_command_and_setting() {
    let fake = Fake::new();
    let dir = fake.tmp.join("completions");
    fs::create_dir(&dir).unwrap();
    run(&fake, &["--generate-completions", dir.to_str().unwrap()]).unwrap();
    for file in ["rswapctl.bash", "_rswapctl", "rswapctl.fish"] {
        let text = fs::read_to_string(dir.join(file)).unwrap();
        for command in [
            "add",
            "remove",
            "up",
            "down",
            "replace",
            "list",
            "status",
            "server-status",
        ] {
            assert!(text.contains(command), "{command} not in {file}");
        }
        for s in keyed() {
            let flag = s.flag().unwrap();
            assert!(text.contains(&flag), "{flag} not in {file}");
        }
    }
    // Bash completes the flags of `add`.
    let bash = fs::read_to_string(dir.join("rswapctl.bash")).unwrap();
    assert!(bash.contains("complete -F _rswapctl"), "{bash}");
    let add = bash
        .lines()
        .find(|l| l.contains("opts=") && l.contains("--poll-queues"))
        .unwrap_or_else(|| panic!("no opts line of add in {bash}"));
    assert!(add.contains("--server") && add.contains("--swap"), "{add}");
    // A directory that is not there: an error naming it.
    let missing = fake.tmp.join("missing");
    let e = run(
        &fake,
        &["--generate-completions", missing.to_str().unwrap()],
    )
    .unwrap_err();
    assert!(
        e.starts_with(&format!(
            "rswapctl: generate-completions: {}: ",
            missing.display()
        )),
        "{e}"
    );
}

#[test]
fn the_settings_table() {
    for (i, s) in SETTINGS.iter().enumerate() {
        let rest = &SETTINGS[i + 1..];
        assert!(!rest.iter().any(|o| o.attr == s.attr), "{}", s.attr);
        assert!(!rest.iter().any(|o| o.field == s.field), "{}", s.field);
        assert!(
            s.key.is_none() || !rest.iter().any(|o| o.key == s.key),
            "{:?}",
            s.key
        );
        // The module refuses every write while the target is enabled, but the rate of a
        // rebuild.
        assert_eq!(s.while_enabled, s.attr == "rebuild_mbps", "{}", s.attr);
        // Its default is a value it takes.
        if let (Kind::Number { .. }, ModuleDefault::Value(v)) = (s.kind, s.default) {
            assert_eq!(s.check(v).as_deref(), Ok(v), "{}", s.attr);
        }
        // A key of its own, but not one of rswapctl's.
        assert!(!s.key.is_some_and(|k| k == "swap" || k == "priority"));
    }
    // `queues`: the number of CPUs as the module counts them (nr_cpu_ids), at most 64.
    for (list, n) in [("0\n", Some(1)), ("0-3\n", Some(4)), ("0-3,8-11", Some(12))] {
        assert_eq!(settings::cpus_in_list(list), n, "{list:?}");
    }
    for bad in ["", "x", "0-"] {
        assert_eq!(settings::cpus_in_list(bad), None, "{bad:?}");
    }
    if let Ok(list) = fs::read_to_string("/sys/devices/system/cpu/possible") {
        assert_eq!(
            Some(settings::possible_cpus()),
            settings::cpus_in_list(&list)
        );
    }
    let fake = Fake::new();
    fake.ctl().add(&add_options("t")).unwrap();
    let cpus = settings::possible_cpus().clamp(1, 64).to_string();
    assert_eq!(fake.attr("t", "queues"), cpus);
    // The fake refuses writes while enabled, as the module does, but to a live setting.
    for s in SETTINGS {
        let written = fake.write(&fake.dir("t").join(s.attr), "1\n");
        match s.while_enabled {
            true => written.unwrap(),
            false => assert_eq!(
                written.unwrap_err().raw_os_error(),
                Some(EBUSY),
                "{}",
                s.attr
            ),
        }
    }
    let why = fs::read_to_string(fake.dir("t").join("last_error")).unwrap();
    assert!(
        why.ends_with(": read-only while enabled (write 0 to enable first)\n"),
        "{why}"
    );
}

// --- disks over several servers ------------------------------------------------------

/// The `state` of a 4+2 disk with leg 1 out (5 groups written while it was reconnecting
/// left on it), as the module prints it; leg 3 on an IPv6 server.
const STATE_4_2: &str = "degraded queues=10/12 region=0 epoch=0 length=16777216 \
    recovering=0 dead=2 recoveries=0 retried=3 code=4+2 legs_up=5/6\n\
    leg0 192.0.2.2:7471 connected queues=2/2 region=6104377862120398185 epoch=1 dirty=0\n\
    leg1 192.0.2.3:7471 out queues=0/2 region=1478130930843524612 epoch=1 dirty=5\n\
    leg2 192.0.2.4:7471 connected queues=2/2 region=12370173478124151043 epoch=1 dirty=0\n\
    leg3 [fd00::2]:7471 connected queues=2/2 region=8630591549093106726 epoch=1 dirty=0\n\
    leg4 192.0.2.6:7471 connected queues=2/2 region=5 epoch=1 dirty=0\n\
    leg5 192.0.2.7:7471 connected queues=2/2 region=6 epoch=1 dirty=0\n";

/// Its `stats`; leg 4 came back and had 8 groups rebuilt, leg 5 has no line (as if the
/// page had no room for it).
const STATS_4_2: &str = "total reads=5120 writes=1536 read_bytes=20971520 write_bytes=6291456 \
    errors=0 requeues=0 recoveries=0 inflight=0 registered_reads=0\n\
    read_latency_us le8=0 le16=3 inf=1\n\
    write_latency_us le8=2 le16=5 inf=1\n\
    encryption off\n\
    code 4+2 extra_reads=1 early_reads=5120 late_leg_reads=4980\n\
    leg0 reads=2570 writes=1536 errors=0 late=812 requeues=0 recoveries=0 inflight=0 dirty=0 \
    resynced=0 altered=0\n\
    leg1 reads=40 writes=12 errors=7 late=0 requeues=1 recoveries=0 inflight=0 dirty=5 \
    resynced=0 altered=3\n\
    leg2 reads=2570 writes=1536 errors=0 late=800 requeues=0 recoveries=0 inflight=0 dirty=0 \
    resynced=0 altered=0\n\
    leg3 reads=2570 writes=1536 errors=0 late=801 requeues=0 recoveries=0 inflight=0 dirty=0 \
    resynced=0 altered=0\n\
    leg4 reads=2570 writes=1536 errors=0 late=790 requeues=0 recoveries=2 inflight=0 dirty=0 \
    resynced=8 altered=0\n\
    queue0 reads=5120 writes=1536 read_bytes=20971520 write_bytes=6291456\n";

/// `text` (`state` or `stats`) as a module older than the rebuild of a leg that is back
/// prints it: without the `dirty=`, `resynced=` and `altered=` of its leg lines.
fn without_resync(text: &str) -> String {
    text.lines()
        .map(|l| {
            let words = l.split(' ');
            let new = ["dirty=", "resynced=", "altered="];
            let kept = words.filter(|w| !new.iter().any(|n| w.starts_with(n)));
            kept.collect::<Vec<_>>().join(" ") + "\n"
        })
        .collect()
}

/// `two_targets` and `ec`, a 4+2 disk over six servers, enabled.
fn with_a_disk_over_six_servers() -> Fake {
    let fake = two_targets();
    fake.target("ec", "(unset)", "16777216", Some("rswap1"));
    let w = |a: &str, v: &str| fs::write(fake.dir("ec").join(a), v).unwrap();
    w("code", "4+2\n");
    w(
        "servers",
        "192.0.2.2:7471,192.0.2.3:7471,192.0.2.4:7471,[fd00::2]:7471,192.0.2.6:7471,\
         192.0.2.7:7471\n",
    );
    w("state", STATE_4_2);
    w("stats", STATS_4_2);
    fake
}

#[test]
fn legs_in_list_and_status() {
    let fake = with_a_disk_over_six_servers();
    let out: Value = serde_json::from_str(&run(&fake, &["list", "--json"]).unwrap()).unwrap();
    let ec = &out[2];
    assert_eq!(ec["name"], "ec");
    let legs = ec["legs"].as_array().unwrap();
    assert_eq!(legs.len(), 6);
    assert_eq!(
        legs[1],
        json!({
            "leg": 1, "server": "192.0.2.3:7471", "state": "out", "queues_live": 0,
            "queues_total": 2, "region": 1478130930843524612u64, "epoch": 1,
            "reads": 40, "writes": 12, "errors": 7, "late": 0, "requeues": 1,
            "recoveries": 0, "inflight": 0, "dirty": 5, "resynced": 0, "altered": 3
        })
    );
    assert_eq!(
        (&legs[4]["dirty"], &legs[4]["resynced"]),
        (&json!(0), &json!(8))
    );
    // 64-bit regions exact.
    assert_eq!(legs[2]["region"].as_u64(), Some(12370173478124151043));
    assert_eq!(legs[3]["server"], "[fd00::2]:7471");
    // No stats line for leg 5: its counters null, its state there.
    assert_eq!(
        (&legs[5]["state"], &legs[5]["reads"]),
        (&json!("connected"), &Value::Null)
    );
    assert_eq!(
        (&legs[5]["dirty"], &legs[5]["resynced"], &legs[5]["altered"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(
        ec["stats"]["late_binding"],
        json!({"code": "4+2", "extra_reads": 1, "early_reads": 5120, "late_leg_reads": 4980})
    );
    // The JSON keys in their order.
    let text = run(&fake, &["status", "ec", "--json"]).unwrap();
    assert!(text.find("\"leg\": 0") < text.find("\"server\": \"192.0.2.2:7471\""));
    assert!(text.find("\"stats\"") < text.find("\"legs\""), "{text}");
    // The table: the legs up in the state; the other rows as they were.
    assert_eq!(
        run(&fake, &["list"]).unwrap(),
        "NAME  DEVICE  SERVER          SIZE  STATE          RECOVERIES  USED  SECRET  ENC  SYNC
\
         a     rswap0  192.0.2.2:7471  8G    connected      3           2M    yes     no   no
\
         b     -       192.0.2.3:7471  -     disabled       -           -     -       -    -
\
         ec    rswap1  -               16M   degraded(5/6)  0           -     no      no   no
"
    );
    // status: a line per leg, where `legs` is, before the attributes.
    let out = run(&fake, &["status", "ec"]).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    let first = lines.iter().position(|l| l.starts_with("leg0: ")).unwrap();
    assert!(lines[first - 1].starts_with("stats: {"), "{out}");
    assert_eq!(
        lines[first + 1],
        "leg1: {\"leg\":1,\"server\":\"192.0.2.3:7471\",\"state\":\"out\",\"queues_live\":0,\
         \"queues_total\":2,\"region\":1478130930843524612,\"epoch\":1,\"reads\":40,\
         \"writes\":12,\"errors\":7,\"late\":0,\"requeues\":1,\"recoveries\":0,\"inflight\":0,\
         \"dirty\":5,\"resynced\":0,\"altered\":3}"
    );
    assert!(lines[first + 5].starts_with("leg5: {\"leg\":5,"), "{out}");
    assert!(lines[first + 6].starts_with("attr."), "{out}");
    // A leg line that does not parse: no legs (null), the disk's state still there.
    fs::write(
        fake.dir("ec").join("state"),
        STATE_4_2.replace(" epoch=1 dirty=5\n", " dirty=5\n"),
    )
    .unwrap();
    let out: Value =
        serde_json::from_str(&run(&fake, &["status", "ec", "--json"]).unwrap()).unwrap();
    assert_eq!(
        (&out["state"], &out["legs"]),
        (&json!("degraded"), &Value::Null)
    );
    assert!(!run(&fake, &["status", "ec"]).unwrap().contains("\nleg0: "));
}

#[test]
fn legs_of_an_older_module_in_list() {
    let fake = with_a_disk_over_six_servers();
    for (attr, text) in [("state", STATE_4_2), ("stats", STATS_4_2)] {
        fs::write(fake.dir("ec").join(attr), without_resync(text)).unwrap();
    }
    let out: Value = serde_json::from_str(&run(&fake, &["list", "--json"]).unwrap()).unwrap();
    let leg1 = &out[2]["legs"][1];
    // The other counters as before; `dirty`, `resynced` and `altered` there, null.
    assert_eq!((&leg1["writes"], &leg1["errors"]), (&json!(12), &json!(7)));
    assert_eq!(
        (&leg1["dirty"], &leg1["resynced"], &leg1["altered"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    // No samples in their families.
    let text = run(&fake, &["metrics"]).unwrap();
    check_exposition(&text);
    assert!(text.contains("\n# TYPE rswap_target_leg_dirty_groups gauge\n"));
    assert!(samples(&text, "rswap_target_leg_dirty_groups{").is_empty());
    assert!(samples(&text, "rswap_target_leg_resynced_groups_total{").is_empty());
    assert!(samples(&text, "rswap_target_leg_altered_blocks_total{").is_empty());
    assert_eq!(samples(&text, "rswap_target_leg_reads_total{").len(), 5);
}

#[test]
fn legs_in_metrics() {
    let fake = with_a_disk_over_six_servers();
    let text = run(&fake, &["metrics"]).unwrap();
    check_exposition(&text);
    let ec = format!(r#"target="ec",client_id="{}""#, 0x5eed);
    assert_eq!(
        samples(&text, "rswap_target_leg_info{")[..2],
        [
            format!(r#"rswap_target_leg_info{{{ec},leg="0",server="192.0.2.2:7471"}} 1"#),
            format!(r#"rswap_target_leg_info{{{ec},leg="1",server="192.0.2.3:7471"}} 1"#),
        ]
    );
    assert_eq!(samples(&text, "rswap_target_leg_info{").len(), 6);
    // Leg 5 has no stats line: no counter samples.
    for (family, kind, leg1, leg4) in [
        ("rswap_target_leg_reads_total", "counter", 40, 2570),
        ("rswap_target_leg_writes_total", "counter", 12, 1536),
        ("rswap_target_leg_errors_total", "counter", 7, 0),
        ("rswap_target_leg_late_reads_total", "counter", 0, 790),
        ("rswap_target_leg_dirty_groups", "gauge", 5, 0),
        ("rswap_target_leg_resynced_groups_total", "counter", 0, 8),
        ("rswap_target_leg_altered_blocks_total", "counter", 3, 0),
    ] {
        let s = samples(&text, &format!("{family}{{"));
        assert_eq!(s.len(), 5, "{family}: {s:?}");
        assert_eq!(s[1], format!(r#"{family}{{{ec},leg="1"}} {leg1}"#));
        assert_eq!(s[4], format!(r#"{family}{{{ec},leg="4"}} {leg4}"#));
        assert!(
            text.contains(&format!("# HELP {family} The leg's ")),
            "{family}"
        );
        assert!(
            text.contains(&format!("# TYPE {family} {kind}\n")),
            "{family}"
        );
    }
    // The plain targets' samples are those they had without the disk over six servers.
    let plain = run(&two_targets(), &["metrics"]).unwrap();
    let without_ec: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("target=\"ec\""))
        .collect();
    assert_eq!(without_ec, plain.lines().collect::<Vec<_>>());
}

// --- metrics ---------------------------------------------------------------------------

/// The samples of `text` whose line starts with `prefix`.
fn samples<'t>(text: &'t str, prefix: &str) -> Vec<&'t str> {
    text.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// The exposition format's rules, checked on the text: each family once, HELP then TYPE
/// then its samples (a histogram's `_bucket` with rising `le` ending in `+Inf` and
/// cumulative counts, then `_count` equal to the `+Inf` bucket).
fn check_exposition(text: &str) {
    let mut seen = std::collections::HashSet::new();
    let mut family: Option<(String, String)> = None;
    let mut last_bucket: Option<(f64, u64)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap().to_string();
            assert!(seen.insert(name.clone()), "{name} twice");
            family = Some((name, String::new()));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            let f = family.as_mut().expect("TYPE after HELP");
            assert_eq!(f.0, name, "TYPE right after its HELP");
            f.1 = kind.to_string();
            continue;
        }
        let (name, kind) = family.as_ref().expect("a sample after its TYPE");
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: u64 = value.parse().unwrap();
        let metric = series.split('{').next().unwrap();
        if metric.starts_with("rswap_target_") {
            assert!(series.contains("target=\""), "{line}");
            assert!(series.contains("client_id=\""), "{line}");
        }
        if kind == "histogram" {
            if metric == format!("{name}_bucket") {
                let le = series
                    .split("le=\"")
                    .nth(1)
                    .unwrap()
                    .trim_end_matches("\"}");
                let le: f64 = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                if let Some((prev_le, prev)) = last_bucket {
                    if prev_le.is_finite() {
                        assert!(le > prev_le && value >= prev, "{line}");
                    }
                }
                last_bucket = Some((le, value));
            } else {
                assert_eq!(metric, format!("{name}_count"), "{line}");
                assert_eq!(last_bucket.take(), Some((f64::INFINITY, value)), "{line}");
            }
        } else {
            assert_eq!(metric, name, "{line}");
        }
    }
}

#[test]
fn metrics_of_every_target() {
    let fake = two_targets();
    // Encrypted, on a module with one histogram of reads and writes, its name quoted.
    fake.target("old \"x\"", "fd00::2", "4096", Some("rswap1"));
    fs::write(fake.dir("old \"x\"").join("client_id"), "0x2501\n").unwrap();
    fs::write(
        fake.dir("old \"x\"").join("stats"),
        "total reads=5 writes=9 read_bytes=20480 write_bytes=36864 errors=0 requeues=0 \
         recoveries=0 inflight=2 registered_reads=0\n\
         latency_us le8=0 le16=3 le32=10 inf=1\n\
         encryption aes-256-gcm sealed=9 opened=5 auth_failures=1\n",
    )
    .unwrap();
    let text = run(&fake, &["metrics"]).unwrap();
    check_exposition(&text);
    let a = r#"target="a",client_id="24301""#;
    let old = r#"target="old \"x\"",client_id="9473""#;
    assert_eq!(
        samples(&text, "rswap_target_info{"),
        [
            format!(r#"rswap_target_info{{{a},device="rswap0",server="192.0.2.2:7471"}} 1"#),
            r#"rswap_target_info{target="b",client_id="24301",device="",server="192.0.2.3:7471"} 1"#
                .to_string(),
            format!(r#"rswap_target_info{{{old},device="rswap1",server="[fd00::2]:7471"}} 1"#),
        ]
    );
    // One sample per state word and target; 1 for the one it is in.
    assert_eq!(samples(&text, "rswap_target_state{").len(), 3 * 6);
    assert!(text.contains(r#"rswap_target_state{target="b",client_id="24301",state="disabled"} 1"#));
    assert!(text.contains(&format!(r#"rswap_target_state{{{a},state="connected"}} 1"#)));
    assert!(text.contains(&format!(r#"rswap_target_state{{{a},state="dead"}} 0"#)));
    // From `state`: enabled targets only.
    assert_eq!(
        samples(&text, "rswap_target_queues_live{"),
        [
            format!("rswap_target_queues_live{{{a}}} 2"),
            format!("rswap_target_queues_live{{{old}}} 2"),
        ]
    );
    assert!(text.contains(&format!("rswap_target_queues_dead{{{a}}} 0\n")));
    assert!(text.contains(&format!("rswap_target_queues{{{a}}} 2\n")));
    // Every counter of the table, with its type.
    for c in settings::COUNTERS {
        let kind = match c.kind {
            settings::MetricKind::Counter => "counter",
            settings::MetricKind::Gauge => "gauge",
        };
        assert!(
            text.contains(&format!(
                "# HELP {} {}\n# TYPE {} {kind}\n",
                c.metric, c.help, c.metric
            )),
            "{}",
            c.metric
        );
    }
    assert!(text.contains(&format!("rswap_target_reads_total{{{a}}} 4\n")));
    assert!(text.contains(&format!("rswap_target_write_bytes_total{{{old}}} 36864\n")));
    assert!(text.contains(&format!("rswap_target_inflight{{{old}}} 2\n")));
    // The fake module of `a` has no registered_reads.
    assert_eq!(
        samples(&text, "rswap_target_registered_reads_total{"),
        [format!("rswap_target_registered_reads_total{{{old}}} 0")]
    );
    assert_eq!(
        samples(&text, "rswap_target_auth_failures_total{"),
        [format!("rswap_target_auth_failures_total{{{old}}} 1")]
    );
    // Cumulative buckets in seconds.
    assert_eq!(
        samples(&text, "rswap_target_read_latency_seconds"),
        [
            format!(r#"rswap_target_read_latency_seconds_bucket{{{a},le="0.000008"}} 0"#),
            format!(r#"rswap_target_read_latency_seconds_bucket{{{a},le="0.000016"}} 3"#),
            format!(r#"rswap_target_read_latency_seconds_bucket{{{a},le="+Inf"}} 4"#),
            format!("rswap_target_read_latency_seconds_count{{{a}}} 4"),
        ]
    );
    assert_eq!(
        samples(&text, "rswap_target_write_latency_seconds_count"),
        [format!("rswap_target_write_latency_seconds_count{{{a}}} 8")]
    );
    assert_eq!(
        samples(&text, "rswap_target_latency_seconds"),
        [
            format!(r#"rswap_target_latency_seconds_bucket{{{old},le="0.000008"}} 0"#),
            format!(r#"rswap_target_latency_seconds_bucket{{{old},le="0.000016"}} 3"#),
            format!(r#"rswap_target_latency_seconds_bucket{{{old},le="0.000032"}} 13"#),
            format!(r#"rswap_target_latency_seconds_bucket{{{old},le="+Inf"}} 14"#),
            format!("rswap_target_latency_seconds_count{{{old}}} 14"),
        ]
    );
    // The module shows no version: its family, no sample.
    assert!(!text.contains("\nrswap_module_info{"), "{text}");
    fs::create_dir_all(fake.tmp.join("module")).unwrap();
    fs::write(
        fake.tmp.join("module/version"),
        "0.1.0+git20261127.abc1234\n",
    )
    .unwrap();
    let text = run(&fake, &["metrics"]).unwrap();
    check_exposition(&text);
    assert!(
        text.starts_with(
            "# HELP rswap_module_info The rswap module loaded: its version (the package's); \
             always 1.\n# TYPE rswap_module_info gauge\n\
             rswap_module_info{version=\"0.1.0+git20261127.abc1234\"} 1\n"
        ),
        "{text}"
    );
    // No target: every family, no sample.
    let empty = run(&Fake::new(), &["metrics"]).unwrap();
    check_exposition(&empty);
    assert!(empty.lines().all(|l| l.starts_with("# ")), "{empty}");
    assert_eq!(
        empty.lines().count(),
        text.lines().filter(|l| l.starts_with("# ")).count()
    );
}

#[test]
fn microseconds_as_seconds() {
    use crate::metrics::us_as_seconds;
    assert_eq!(us_as_seconds(8), "0.000008");
    assert_eq!(us_as_seconds(1024), "0.001024");
    assert_eq!(us_as_seconds(1_000_000), "1");
    assert_eq!(us_as_seconds(8_388_608), "8.388608");
    assert_eq!(us_as_seconds(0), "0");
}

#[test]
fn servers_instead_of_server() {
    // A target file with servers and no server: the list as written, without spaces.
    let text = "servers = 192.0.2.5:7471, [fd00::5]\nsize = 8G\ncode = 2+0\n";
    let o = parse_target_config("t", "t.conf", text).unwrap().options;
    assert_eq!(o.get("servers"), Some("192.0.2.5:7471,[fd00::5]"));
    assert_eq!((o.get("code"), o.get("addr")), (Some("2+0"), None));
    // Both, or neither: refused, with the line of the second.
    let both = "server = 192.0.2.2\nservers = 192.0.2.5\nsize = 8G\n";
    assert_eq!(
        parse_target_config("t", "t.conf", both).unwrap_err(),
        "t.conf:2: server or servers, not both"
    );
    assert_eq!(
        parse_target_config("t", "t.conf", "size = 8G\n").unwrap_err(),
        "t.conf: no `server = ...` line or `servers = ...` (required)"
    );
    // The same from the command line.
    let fake = Fake::new();
    run(
        &fake,
        &[
            "add",
            "m",
            "--servers",
            "192.0.2.5,192.0.2.6",
            "--code",
            "2+0",
            "--size",
            "8G",
        ],
    )
    .unwrap();
    let writes = fake.writes.borrow().clone();
    assert!(
        writes.contains(&"servers=192.0.2.5,192.0.2.6".to_string()),
        "{writes:?}"
    );
    assert!(writes.contains(&"code=2+0".to_string()), "{writes:?}");
    assert!(!writes.iter().any(|w| w.starts_with("addr=")), "{writes:?}");
    let e = run(
        &fake,
        &[
            "add",
            "n",
            "--server",
            "192.0.2.2",
            "--servers",
            "192.0.2.5",
            "--size",
            "8G",
        ],
    )
    .unwrap_err();
    assert!(e.contains("cannot be used with"), "{e}");
    let e = run(&fake, &["add", "n", "--size", "8G"]).unwrap_err();
    assert!(e.contains("--server <ADDR:PORT>"), "{e}");
    assert!(!fake.dir("n").exists());
}

#[test]
fn codes_and_server_lists() {
    let code = settings::setting("code").unwrap();
    assert_eq!(code.check("4+2"), Ok("4+2".to_string()));
    assert_eq!(code.check("1+0"), Ok("1+0".to_string()));
    for (bad, why) in [
        ("4+3", "r must be 0, 1 or 2"),
        ("3+1", "k must be 1, 2, 4 or 8"),
        ("16+2", "k must be 1, 2, 4 or 8"),
        ("4", "no '+'"),
        ("4+-2", "K and R are numbers"),
        ("+2", "K and R are numbers"),
    ] {
        assert_eq!(
            code.check(bad),
            Err(format!(
                "{bad:?} is not a code K+R (k 1, 2, 4 or 8; r 0, 1 or 2): {why}"
            ))
        );
    }
    let servers = settings::setting("servers").unwrap();
    assert_eq!(
        servers.check("192.0.2.5 ,fd00::5,[fe80::5%eth0]:7000"),
        Ok("192.0.2.5,fd00::5,[fe80::5%eth0]:7000".to_string())
    );
    let eleven = ["192.0.2.5"; 11].join(",");
    assert_eq!(
        servers.check(&eleven),
        Err(format!("{eleven:?} is not a list of at most 10 servers"))
    );
    assert_eq!(
        servers.check("192.0.2.5,,192.0.2.6"),
        Err("\"192.0.2.5,,192.0.2.6\" is not a list of servers: entry 2 is empty".to_string())
    );
    let e = servers.check("192.0.2.5,192.0.2.6:0").unwrap_err();
    assert!(
        e.starts_with("\"192.0.2.5,192.0.2.6:0\" is not a list of servers: entry 2: "),
        "{e}"
    );
}

// --- replace -------------------------------------------------------------------------

use crate::conf::with_server_replaced;

/// The reason the module gives for a leg that is still in the disk.
const IN_THE_DISK: &str =
    "replace: leg 0: the leg is in the disk; only a leg out of it (its server lost) is replaced";

/// `with_a_disk_over_six_servers` on a module with `replace` (which reads as an empty
/// line).
fn a_disk_with_replace() -> Fake {
    let fake = with_a_disk_over_six_servers();
    fs::write(fake.dir("ec").join("replace"), "\n").unwrap();
    fake
}

/// The target file of `ec`, with comments and blanks around its servers.
const EC_CONF: &str = "\
# ec: a 4+2 disk over six servers
code = 4+2
servers = 192.0.2.2:7471, 192.0.2.3:7471 ,192.0.2.4:7471,[fd00::2]:7471,192.0.2.6:7471,  192.0.2.7:7471
size = 16M

#   servers = 198.51.100.1 (the old rack)
client_id = 0x5701
";

fn replace_args<'a>(dir: &'a str, name: &'a str, leg: &'a str, server: &'a str) -> Vec<&'a str> {
    vec!["replace", name, leg, server, "--config-dir", dir]
}

#[test]
fn replace_writes_leg_and_server_and_updates_the_servers_line() {
    let fake = a_disk_with_replace();
    let dir = conf_dir(&fake, "ec", EC_CONF);
    let conf = dir.join("ec.conf");
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o640)).unwrap();
    let d = dir.display().to_string();
    let out = run(&fake, &replace_args(&d, "ec", "1", "192.0.2.9:7471")).unwrap();
    assert_eq!(
        out,
        format!(
            "ec: leg 1: replacing its server with 192.0.2.9:7471; the leg is rebuilt in the \
             background (dirty= in rswapctl status ec counts the groups left)\n\
             ec: {d}/ec.conf: servers updated\n"
        )
    );
    assert_eq!(*fake.writes.borrow(), ["replace=1 192.0.2.9:7471"]);
    // Only the entry changed, the blanks around it and every other line as they were.
    assert_eq!(
        fs::read_to_string(&conf).unwrap(),
        EC_CONF.replace(" 192.0.2.3:7471 ,", " 192.0.2.9:7471 ,")
    );
    let mode = fs::metadata(&conf).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    // No file left beside it.
    let files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, ["ec.conf"]);
    // The last leg, an IPv6 server without a port; `up` reads the file as updated.
    run(&fake, &replace_args(&d, "ec", "5", "[fd00::9]")).unwrap();
    assert_eq!(fake.writes.borrow()[1], "replace=5 [fd00::9]");
    let text = fs::read_to_string(&conf).unwrap();
    assert!(
        text.contains(",192.0.2.6:7471,  [fd00::9]\nsize = 16M\n"),
        "{text}"
    );
    let o = parse_target_config("ec", "ec.conf", &text).unwrap().options;
    assert_eq!(
        o.get("servers"),
        Some(
            "192.0.2.2:7471,192.0.2.9:7471,192.0.2.4:7471,[fd00::2]:7471,192.0.2.6:7471,[fd00::9]"
        )
    );
    // A file that names the server already is not written again.
    let out = run(&fake, &replace_args(&d, "ec", "5", "[fd00::9]")).unwrap();
    assert!(!out.contains("updated"), "{out}");
    // A file that is a symbolic link: the file it names is updated, the link stays.
    let real = fake.tmp.join("elsewhere.conf");
    fs::rename(&conf, &real).unwrap();
    std::os::unix::fs::symlink(&real, &conf).unwrap();
    run(&fake, &replace_args(&d, "ec", "0", "192.0.2.10")).unwrap();
    assert!(fs::symlink_metadata(&conf)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::read_to_string(&real)
        .unwrap()
        .contains("\nservers = 192.0.2.10, 192.0.2.9:7471 ,"));
}

#[test]
fn replace_refused_says_why_and_leaves_the_file() {
    // Without a reason in last_error: the errno, and where to look.
    let mut fake = a_disk_with_replace();
    let dir = conf_dir(&fake, "ec", EC_CONF);
    let d = dir.display().to_string();
    fake.fail = Some(("replace", EINVAL, None));
    let e = run(&fake, &replace_args(&d, "ec", "1", "192.0.2.9")).unwrap_err();
    assert_eq!(
        e,
        "rswapctl: replace ec: writing replace=1 192.0.2.9: Invalid argument\n\
         rswapctl: replace ec: see dmesg for the kernel's reason"
    );
    // The kernel's reason.
    fake.fail = Some(("replace", EBUSY, Some(IN_THE_DISK)));
    let e = run(&fake, &replace_args(&d, "ec", "0", "192.0.2.9")).unwrap_err();
    assert_eq!(
        e,
        format!(
            "rswapctl: replace ec: writing replace=0 192.0.2.9: Device or resource busy\n\
             rswapctl: replace ec: kernel: {IN_THE_DISK}"
        )
    );
    fake.fail = Some((
        "replace",
        EINVAL,
        Some("replace: the target is not enabled (set servers instead)"),
    ));
    let e = run(&fake, &replace_args(&d, "ec", "1", "192.0.2.9")).unwrap_err();
    assert!(
        e.ends_with("\nrswapctl: replace ec: kernel: replace: the target is not enabled (set servers instead)"),
        "{e}"
    );
    assert_eq!(fs::read_to_string(dir.join("ec.conf")).unwrap(), EC_CONF);
    // No such target; a module without `replace`: nothing written.
    fake.fail = None;
    fake.writes.borrow_mut().clear();
    let e = run(&fake, &replace_args(&d, "nope", "1", "192.0.2.9")).unwrap_err();
    assert_eq!(
        e,
        format!(
            "rswapctl: replace nope: {}: No such file or directory",
            fake.dir("nope").display()
        )
    );
    fs::remove_file(fake.dir("ec").join("replace")).unwrap();
    let e = run(&fake, &replace_args(&d, "ec", "1", "192.0.2.9")).unwrap_err();
    assert_eq!(
        e,
        "rswapctl: replace ec: replace: the rswap module loaded has no replace attribute (it is \
         older than replacing a lost server)"
    );
    assert!(fake.writes.borrow().is_empty());
    assert_eq!(fs::read_to_string(dir.join("ec.conf")).unwrap(), EC_CONF);
}

#[test]
fn replace_command_line() {
    let cli = Cli::try_parse_from(["rswapctl", "replace", "ec", "1", "192.0.2.9:7471"]).unwrap();
    match cli.command {
        Some(cli::Cmd::Replace {
            name,
            leg,
            server,
            config_dir,
        }) => {
            assert_eq!(
                (name.as_str(), leg, server.as_str()),
                ("ec", 1, "192.0.2.9:7471")
            );
            assert_eq!(config_dir, PathBuf::from("/etc/rswap/targets"));
        }
        other => panic!("{other:?}"),
    }
    let fake = a_disk_with_replace();
    for (args, why) in [
        (
            &["replace", "ec", "x", "192.0.2.9"][..],
            "invalid value 'x' for '<LEG>'",
        ),
        (
            &["replace", "ec", "1x", "192.0.2.9"],
            "invalid value '1x' for '<LEG>'",
        ),
        (&["replace", "ec", "10", "192.0.2.9"], "10 is not in 0..=9"),
        (
            &["replace", "ec", "-1", "192.0.2.9"],
            "unexpected argument '-1'",
        ),
        (
            &["replace", "ec", "1"],
            "required arguments were not provided",
        ),
        (
            &["replace", "ec", "1", "host:1"],
            "invalid value 'host:1' for '<SERVER>': \"host\" is not an IPv4 or IPv6 address",
        ),
        (
            &["replace", "ec", "1", "192.0.2.9:0"],
            "\"0\" is not a port",
        ),
    ] {
        let e = run(&fake, args).unwrap_err();
        assert!(e.starts_with("error: ") && e.contains(why), "{args:?}: {e}");
    }
    assert!(fake.writes.borrow().is_empty());
}

#[test]
fn replace_leaves_a_file_without_servers_alone() {
    use std::os::unix::fs::MetadataExt;
    let fake = a_disk_with_replace();
    // No file: nothing said about it.
    let dir = fake.tmp.join("targets");
    fs::create_dir(&dir).unwrap();
    let d = dir.display().to_string();
    let first = "ec: leg 1: replacing its server with 192.0.2.9; the leg is rebuilt in the \
                 background (dirty= in rswapctl status ec counts the groups left)\n";
    assert_eq!(
        run(&fake, &replace_args(&d, "ec", "1", "192.0.2.9")).unwrap(),
        first
    );
    // A file with `server` (the disk's servers are not in it): untouched, not rewritten.
    let text = "# one server\nserver = 192.0.2.3\nsize = 16M\n";
    conf_dir(&fake, "ec", text);
    let conf = dir.join("ec.conf");
    let before = fs::metadata(&conf).unwrap();
    assert_eq!(
        run(&fake, &replace_args(&d, "ec", "1", "192.0.2.9")).unwrap(),
        first
    );
    let after = fs::metadata(&conf).unwrap();
    assert_eq!(fs::read_to_string(&conf).unwrap(), text);
    assert_eq!(
        (before.ino(), before.mtime(), before.mtime_nsec()),
        (after.ino(), after.mtime(), after.mtime_nsec())
    );
    assert_eq!(fake.writes.borrow().len(), 2);
}

#[test]
fn replace_fails_on_a_file_it_cannot_update_after_the_kernel_replaced() {
    let fake = a_disk_with_replace();
    for (text, why) in [
        (
            "servers = 192.0.2.2, 192.0.2.3\ncode = 1+1\nsize = 16M\n",
            "ec.conf:1: servers has 2 entries, none for leg 5 (the first is leg 0)",
        ),
        (
            "servers = 192.0.2.2\ncode = 1+0\nsize = 16M\n",
            "ec.conf:1: servers has 1 entry, none for leg 5 (the first is leg 0)",
        ),
        (
            "servers = 192.0.2.2,192.0.2.3\nsize = 16M\nqueue = 4\n",
            "ec.conf:3: unknown key \"queue\"",
        ),
    ] {
        let dir = conf_dir(&fake, "ec", text);
        let d = dir.display().to_string();
        let e = run(&fake, &replace_args(&d, "ec", "5", "192.0.2.9")).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "rswapctl: replace ec: servers not updated: {d}/{why}"
            )),
            "{e}"
        );
        assert_eq!(fs::read_to_string(dir.join("ec.conf")).unwrap(), text);
        // The kernel was asked (and did it) before.
        assert_eq!(fake.writes.borrow().last().unwrap(), "replace=5 192.0.2.9");
    }
}

#[test]
fn servers_entry_replaced_in_a_target_file() {
    let replaced = |text: &str, leg, server| with_server_replaced("t", "t.conf", text, leg, server);
    let text = "size = 8G\r\ncode = 2+1\r\n\tservers=192.0.2.2,[fd00::3]:7471 , 192.0.2.4 \r\n";
    assert_eq!(
        replaced(text, 0, "192.0.2.9").unwrap().unwrap(),
        text.replace("=192.0.2.2,", "=192.0.2.9,")
    );
    assert_eq!(
        replaced(text, 1, "192.0.2.9:1").unwrap().unwrap(),
        text.replace(",[fd00::3]:7471 ,", ",192.0.2.9:1 ,")
    );
    assert_eq!(
        replaced(text, 2, "[fe80::9%eth0]:7471").unwrap().unwrap(),
        text.replace(" 192.0.2.4 \r\n", " [fe80::9%eth0]:7471 \r\n")
    );
    // No newline at the end.
    let text = "size = 8G\nservers = 192.0.2.2,192.0.2.3";
    assert_eq!(
        replaced(text, 1, "192.0.2.9").unwrap().unwrap(),
        "size = 8G\nservers = 192.0.2.2,192.0.2.9"
    );
    assert_eq!(
        replaced(text, 2, "192.0.2.9").unwrap_err(),
        "t.conf:2: servers has 2 entries, none for leg 2 (the first is leg 0)"
    );
    // No servers: nothing to do; a file `up` refuses: its error.
    assert_eq!(
        replaced("server = 192.0.2.2\nsize = 8G\n", 0, "192.0.2.9"),
        Ok(None)
    );
    assert_eq!(
        replaced("servers = 192.0.2.2\n", 0, "192.0.2.9").unwrap_err(),
        "t.conf: no `size = ...` line (required)"
    );
}
