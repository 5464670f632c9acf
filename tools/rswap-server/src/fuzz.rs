// SPDX-License-Identifier: GPL-2.0

//! Property-based fuzzing (proptest) of what the server parses from outside: the metadata
//! files of its state directory (`store.rs`), the scan of that directory, the allow-list
//! (`allowlist.rs`), the connect request of protocol version 2 as the server decodes it,
//! and the command lines of `rswap-server` and `rswap-testclient` (`config.rs`,
//! `size.rs`). The wire decoders, the same `src/transport/wire.rs` the server compiles,
//! are fuzzed in depth in `tests/unit`.
//!
//! Every test is named `fuzz_*` and runs `PROPTEST_CASES` cases (proptest's default, 256,
//! in `make check`). A million per test:
//!
//! ```text
//! PROPTEST_CASES=1000000 cargo test --release fuzz_
//! ```
//!
//! See `Documentation/testing.md` for the properties and the time that takes.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::path::PathBuf;
use std::time::Duration;

use proptest::prelude::*;

use crate::allowlist::AllowList;
use crate::config::{
    parse_client_args, parse_server_args, Parsed, ServerConfig, DEFAULT_GRACE_SECS,
    DEFAULT_KEEPALIVE_MS, DEFAULT_MAX_CLIENTS, DEFAULT_MAX_PENDING_PER_SOURCE, DEFAULT_MAX_QUEUES,
    GRACE_SECS_MAX, KEEPALIVE_MS_RANGE, STATUS_SOCKET_MAX,
};
use crate::crypto::Secret;
use crate::log::Level;
use crate::policy::PAGE;
use crate::size::{format_size, parse_size};
use crate::store::{decide, Kind, Listing, Meta, Verdict};
use crate::wire::{self, Auth, ConnectRequest, Reject, WireError};

// --- metadata files ----------------------------------------------------------------------

/// Largest metadata file `Meta::parse` reads (`store.rs`'s `META_MAX`).
const META_MAX: usize = 1024;

/// FNV-1a 64 of `bytes`, written here from its definition to re-checksum mutated files.
fn fnv1a_64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The invariants of a region's metadata (`Documentation/memory-server.md`).
fn meta_ok(m: &Meta) -> bool {
    m.region_id != 0
        && m.length != 0
        && m.length % PAGE == 0
        && m.map_length >= m.length
        && m.map_length % PAGE == 0
        && m.epoch != 0
        && m.queue_count != 0
}

/// Whatever `Meta::parse` makes of any bytes: no panic, and an accepted file holds valid
/// metadata and is byte for byte the encoding of it (so nothing in it was ignored).
fn check_meta_parse(b: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(m) = Meta::parse(b) {
        prop_assert!(meta_ok(&m), "{:?}", m);
        let text = m.encode();
        prop_assert_eq!(text.as_bytes(), b, "accepted a non-canonical file");
    }
    Ok(())
}

/// Lengths: a few pages, or anything up to the largest multiple of 4 KiB.
fn pages() -> impl Strategy<Value = u64> {
    prop_oneof![1..=1024u64, 1..=u64::MAX / PAGE]
}

/// Metadata `Meta::parse` must accept.
fn valid_meta() -> BoxedStrategy<Meta> {
    (
        any::<u64>(),
        1..=u64::MAX,
        pages(),
        prop_oneof![Just(0u64), 0..=512u64, any::<u64>()],
        1..=u32::MAX,
        1..=u16::MAX,
        prop::option::of(any::<u64>()),
    )
        .prop_map(
            |(client_id, region_id, pages, extra, epoch, queue_count, instance)| {
                let extra = extra % (u64::MAX / PAGE - pages + 1);
                Meta {
                    client_id,
                    region_id,
                    length: pages * PAGE,
                    map_length: (pages + extra) * PAGE,
                    epoch,
                    queue_count,
                    instance,
                }
            },
        )
        .boxed()
}

/// Any metadata, valid or not (`encode` writes whatever it is given).
fn any_meta() -> impl Strategy<Value = Meta> {
    let small = || prop_oneof![0..=8193u64, any::<u64>()];
    (
        any::<u64>(),
        prop_oneof![Just(0u64), any::<u64>()],
        small(),
        small(),
        prop_oneof![0..=2u32, any::<u32>()],
        prop_oneof![0..=2u16, any::<u16>()],
        prop::option::of(any::<u64>()),
    )
        .prop_map(
            |(client_id, region_id, length, map_length, epoch, queue_count, instance)| Meta {
                client_id,
                region_id,
                length,
                map_length,
                epoch,
                queue_count,
                instance,
            },
        )
}

/// One edit of a byte string: replace, insert or delete the byte at a position.
#[derive(Debug, Clone)]
enum Edit {
    Xor(usize, u8),
    Insert(usize, u8),
    Delete(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let byte = prop_oneof![Just(b'\n'), Just(b'='), Just(b'0'), Just(b' '), any::<u8>()];
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(i, m)| Edit::Xor(i, m)),
        (any::<usize>(), byte).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
    ]
}

fn apply(b: &mut Vec<u8>, e: &Edit) {
    match *e {
        Edit::Xor(i, m) if !b.is_empty() => {
            let n = b.len();
            b[i % n] ^= m;
        }
        Edit::Insert(i, x) => b.insert(i % (b.len() + 1), x),
        Edit::Delete(i) if !b.is_empty() => {
            let n = b.len();
            b.remove(i % n);
        }
        _ => {}
    }
}

/// A field value as a metadata file might hold it: with a sign or leading zero, out of
/// range, empty, or anything.
fn field_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|v| v.to_string()),
        (0..=3u64).prop_map(|p| (p * PAGE).to_string()),
        "[+\\-0 ]?[0-9]{1,21}",
        "[0-9a-z= ]{0,8}",
    ]
}

/// Metadata files whose checksum is right but whose body is anything near the format:
/// the text of valid metadata with, each with a small chance, a field's value replaced
/// ([`field_value`]), a key or the first line changed, and a few byte edits. They get past
/// the checksum, so the field and structure checks behind it are reached.
fn rechecksummed() -> impl Strategy<Value = Vec<u8>> {
    let change = || prop::option::weighted(0.15, field_value());
    (
        valid_meta(),
        [
            change(),
            change(),
            change(),
            change(),
            change(),
            change(),
            change(),
            change(),
        ],
        prop::collection::vec(edit(), 0..=2),
        prop::option::weighted(0.05, "[ -~]{0,16}"),
        prop_oneof![12 => Just(true), 1 => Just(false)],
    )
        .prop_map(|(m, changes, edits, garbage, with_sum)| {
            let text = m.encode();
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            lines.pop(); // the checksum line: computed below
            for (line, change) in lines.iter_mut().zip(changes) {
                if let Some(v) = change {
                    // The value, or for the first line the version.
                    let sep = line.rfind(['=', ' ']).map_or(0, |i| i + 1);
                    line.replace_range(sep.., &v);
                }
            }
            if let Some(g) = garbage {
                lines.insert(g.len() % (lines.len() + 1), g);
            }
            let mut body = lines.join("\n").into_bytes();
            body.push(b'\n');
            for e in &edits {
                apply(&mut body, e);
            }
            if with_sum {
                let sum = fnv1a_64(&body);
                body.extend(format!("checksum={sum:016x}\n").into_bytes());
            }
            body
        })
}

proptest! {
    /// Arbitrary bytes, empty to past the size limit.
    #[test]
    fn fuzz_meta_any_bytes(b in prop::collection::vec(any::<u8>(), 0..=META_MAX + 64)) {
        check_meta_parse(&b)?;
    }

    /// Text of the right shape with a valid checksum.
    #[test]
    fn fuzz_meta_rechecksummed(b in rechecksummed()) {
        check_meta_parse(&b)?;
    }

    /// Metadata is accepted exactly when it keeps the invariants, and then to the same
    /// value.
    #[test]
    fn fuzz_meta_round_trip(m in prop_oneof![valid_meta(), any_meta()]) {
        let got = Meta::parse(m.encode().as_bytes());
        if meta_ok(&m) {
            prop_assert_eq!(got, Ok(m));
        } else {
            prop_assert!(got.is_err(), "{:?} accepted", m);
        }
    }

    /// Any one byte of a valid file changed (to any other value) is refused: the parser or
    /// the checksum sees it (FNV-1a maps a one-byte change to another sum, always), and so
    /// is the file cut short anywhere.
    #[test]
    fn fuzz_meta_byte_flip_and_truncation(m in valid_meta(), i in any::<usize>(), mask in 1..=255u8) {
        let good = m.encode().into_bytes();
        let mut b = good.clone();
        apply(&mut b, &Edit::Xor(i, mask));
        prop_assert!(Meta::parse(&b).is_err(), "{:?}", String::from_utf8_lossy(&b));
        prop_assert!(Meta::parse(&good[..i % good.len()]).is_err());
    }

    /// One byte inserted into or deleted from a valid file is refused (by the parser, or
    /// by the checksum but for a 2^-64 chance).
    #[test]
    fn fuzz_meta_insert_delete(m in valid_meta(), e in edit()) {
        let mut b = m.encode().into_bytes();
        apply(&mut b, &e);
        prop_assert!(Meta::parse(&b).is_err(), "{:?}: {:?}", e, String::from_utf8_lossy(&b));
    }
}

// --- scan of the state directory ---------------------------------------------------------

fn region_file(id: u64, ext: &str) -> String {
    format!("region-{id:016x}.{ext}")
}

/// Region ids of a directory: few, so files pair up; 0 included.
fn dir_id() -> impl Strategy<Value = u64> {
    prop_oneof![0..=3u64, Just(u64::MAX), any::<u64>()]
}

/// A directory entry's name: a region file, the lock, a near miss, or anything.
fn dir_name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (dir_id(), prop_oneof![Just("mem"), Just("meta"), Just("meta.tmp")])
            .prop_map(|(id, ext)| region_file(id, ext)),
        1 => Just("lock".to_string()),
        1 => "region-[0-9a-fA-F+]{15,17}\\.(mem|meta|meta\\.tmp|memx|)",
        1 => any::<String>(),
    ]
}

/// A directory entry.
fn listing() -> impl Strategy<Value = Listing> {
    let kind = prop_oneof![6 => Just(Kind::File), 1 => Just(Kind::Dir), 1 => Just(Kind::Other)];
    let len = prop_oneof![(0..=4u64).prop_map(|p| p * PAGE), any::<u64>()];
    (dir_name(), kind, len).prop_map(|(name, kind, len)| Listing { name, kind, len })
}

/// What reading a metadata file gives: valid metadata (of a directory id), corrupt bytes,
/// or an error (`None`).
fn meta_contents() -> impl Strategy<Value = Option<Vec<u8>>> {
    let meta = (valid_meta(), dir_id()).prop_map(|(m, id)| {
        let m = Meta {
            region_id: id.max(1),
            ..m
        };
        m.encode().into_bytes()
    });
    prop_oneof![
        4 => meta.prop_map(Some),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(Some),
        1 => Just(None),
    ]
}

/// Files of a state directory with what reading them gives: a region as the server
/// leaves it (its memory file of the size the metadata names; sometimes a left-over
/// `.meta.tmp`, or one of the pair changed: gone, of another kind or size, other
/// metadata), or any entry.
type Files = Vec<(Listing, Option<Vec<u8>>)>;

fn dir_files() -> impl Strategy<Value = Files> {
    let file = |name: String, len: u64| Listing {
        name,
        kind: Kind::File,
        len,
    };
    let region = (
        valid_meta(),
        dir_id(),
        0..=2u64,
        any::<bool>(),
        0..=12u8,
        listing(),
        meta_contents(),
    )
        .prop_map(move |(m, id, client, tmp, spoil, other, contents)| {
            let m = Meta {
                region_id: id.max(1),
                client_id: client,
                length: PAGE,
                map_length: PAGE * (1 + id % 3),
                ..m
            };
            let mut files = vec![
                (file(region_file(m.region_id, "mem"), m.map_length), None),
                (
                    file(region_file(m.region_id, "meta"), 200),
                    Some(m.encode().into_bytes()),
                ),
            ];
            if tmp {
                files.push((file(region_file(m.region_id, "meta.tmp"), 9), None));
            }
            match spoil {
                0 => drop(files.remove(0)),
                1 => drop(files.remove(1)),
                2 => files[0].0.len += PAGE,
                3 => files[0].0.kind = other.kind,
                4 => files[1].0.kind = other.kind,
                5 => files[1].1 = contents,
                6 => files.push((other, contents)),
                _ => {}
            }
            files
        });
    let stray = (listing(), meta_contents()).prop_map(|f| vec![f]);
    prop::collection::vec(prop_oneof![region, stray], 0..=5).prop_map(|groups| {
        // A directory has each name once.
        let mut seen = std::collections::BTreeSet::new();
        groups
            .into_iter()
            .flatten()
            .filter(|(l, _)| seen.insert(l.name.clone()))
            .collect()
    })
}

proptest! {
    /// `decide` on any directory: no panic; every entry but the lock is in exactly one
    /// verdict (a stranger is ignored, never deleted; the lock is never touched); a
    /// restored region has its regular metadata and memory files, the memory file of the
    /// size its metadata names, metadata that parses to it; one region per client at
    /// most; verdicts in the documented order.
    #[test]
    fn fuzz_store_decide(dir in dir_files()) {
        let entries: Vec<Listing> = dir.iter().map(|(l, _)| l.clone()).collect();
        let files: BTreeMap<&str, Option<&Vec<u8>>> =
            dir.iter().map(|(l, c)| (l.name.as_str(), c.as_ref())).collect();
        let read = |name: &str| -> io::Result<Vec<u8>> {
            files
                .get(name)
                .copied()
                .flatten()
                .cloned()
                .ok_or_else(|| io::Error::from(io::ErrorKind::PermissionDenied))
        };
        let verdicts = decide(&entries, read);
        let mut named: Vec<String> = Vec::new();
        let mut clients = std::collections::BTreeSet::new();
        for v in &verdicts {
            match v {
                Verdict::Ignore { name, .. } => named.push(name.clone()),
                Verdict::Discard { files, .. } => named.extend(files.iter().cloned()),
                // Kept: its metadata (which could not be read) and its memory file.
                Verdict::Unreadable { region_id, name, .. } => {
                    let mem = region_file(*region_id, "mem");
                    prop_assert!(entries.iter().any(|e| e.name == mem && e.kind == Kind::File));
                    prop_assert_eq!(name, &region_file(*region_id, "meta"));
                    prop_assert!(read(name).is_err());
                    named.push(name.clone());
                    named.push(mem);
                }
                Verdict::Restore(m) => {
                    prop_assert!(meta_ok(m), "{:?}", m);
                    prop_assert!(clients.insert(m.client_id), "two regions of {}", m.client_id);
                    let (meta, mem) = (region_file(m.region_id, "meta"), region_file(m.region_id, "mem"));
                    let find = |n: &str| entries.iter().find(|e| e.name == n);
                    let (Some(lm), Some(lf)) = (find(&meta), find(&mem)) else {
                        return Err(TestCaseError::fail(format!("{m:?} without its files")));
                    };
                    prop_assert!(lm.kind == Kind::File && lf.kind == Kind::File);
                    prop_assert_eq!(lf.len, m.map_length);
                    prop_assert_eq!(read(&meta).map(|b| Meta::parse(&b)).ok(), Some(Ok(*m)));
                    named.push(meta);
                    named.push(mem);
                }
            }
        }
        named.sort();
        let mut want: Vec<String> =
            entries.iter().map(|e| e.name.clone()).filter(|n| n != "lock").collect();
        want.sort();
        prop_assert_eq!(named, want);
        let order: Vec<(u8, u64)> = verdicts
            .iter()
            .map(|v| match v {
                Verdict::Ignore { .. } => (0, 0),
                Verdict::Discard { region_id, .. } => (1, *region_id),
                Verdict::Restore(m) => (2, m.region_id),
                Verdict::Unreadable { region_id, .. } => (3, *region_id),
            })
            .collect();
        prop_assert!(order.is_sorted(), "{:?}", order);
    }
}

// --- command lines -----------------------------------------------------------------------

const SERVER_OPTS: [&str; 20] = [
    "--help",
    "-h",
    "--version",
    "-V",
    "--status-socket",
    "--listen",
    "--size",
    "--max-clients",
    "--max-queues",
    "--max-pending-per-source",
    "--grace",
    "--keepalive-ms",
    "--hugepages",
    "--no-mlock",
    "--log-level",
    "--state-dir",
    "--state-dir-on-disk",
    "--allow-list",
    "--insecure",
    "--test-wrong-server-proof",
];

const SERVER_REQUIRED: [&str; 5] = ["--listen", "192.0.2.1:7471", "--size", "1G", "--insecure"];

const CLIENT_OPTS: [&str; 26] = [
    "--help",
    "-h",
    "--version",
    "-V",
    "--connect",
    "--client-id",
    "--size",
    "--queues",
    "--queue-count",
    "--proto-version",
    "--write-pattern",
    "--verify-pattern",
    "--expect-reject",
    "--print-descriptor",
    "--hold",
    "--timeout",
    "--chunk",
    "--bogus",
    "--secret",
    "--secret-file",
    "--instance",
    "--replay",
    "--flood",
    "--flood-id",
    "--source",
    "--test-forge-proofs-from",
];

const CLIENT_REQUIRED: [&str; 6] = [
    "--connect",
    "192.0.2.1:7471",
    "--client-id",
    "1",
    "--size",
    "4M",
];

/// An option's value: a number, a size, an address, a level or reason, or anything.
fn arg_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|v| v.to_string()),
        "[0-9]{0,21}[kKmMgGtTx]?",
        "0[xX][+\\-]?[0-9a-fA-F]{0,17}",
        "(\\[[0-9a-f:]{2,12}(%[0-9]{1,2})?\\]|[0-9]{1,3}(\\.[0-9]{1,3}){0,3}):[0-9]{0,6}",
        "error|warn|info|debug|toolarge|QueueMismatch|AuthFailed|inuse|[0-9]",
        "[0-9a-fA-F]{30,34}|[0-9a-f]{126,130}",
        "[ -~]{0,12}",
        any::<String>(),
    ]
}

/// Arguments built from `opts` (the parser's own options): `--opt`, `--opt=value` or a
/// bare value, or anything at all; half the time after the `required` ones.
fn argv(
    opts: &'static [&'static str],
    required: &'static [&'static str],
) -> impl Strategy<Value = Vec<String>> {
    let opt = proptest::sample::select(opts);
    let arg = prop_oneof![
        4 => opt.clone().prop_map(str::to_string),
        4 => (opt, arg_value()).prop_map(|(o, v)| format!("{o}={v}")),
        4 => arg_value(),
        1 => "--[a-z\\-=\n]{0,10}",
    ];
    // Often after the required options, so that whole command lines are reached.
    let required: Vec<String> = required.iter().map(|s| s.to_string()).collect();
    (any::<bool>(), prop::collection::vec(arg, 0..=14)).prop_map(move |(with, rest)| {
        let mut v = if with { required.clone() } else { Vec::new() };
        v.extend(rest);
        v
    })
}

fn level_name(l: Level) -> &'static str {
    match l {
        Level::Error => "error",
        Level::Warn => "warn",
        Level::Info => "info",
        Level::Debug => "debug",
    }
}

/// An address `--listen` must take back from its text (IPv6 with or without a scope id;
/// no flow label, which the text form does not carry).
fn socket_addr() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>())
            .prop_map(|(a, p)| SocketAddr::new(IpAddr::V4(Ipv4Addr::from(a)), p)),
        (
            any::<[u16; 8]>(),
            any::<u16>(),
            prop_oneof![Just(0u32), any::<u32>()]
        )
            .prop_map(|(a, p, scope)| SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a),
                p,
                0,
                scope
            ))),
    ]
}

/// A server configuration, the size given as any number of bytes of at least 4 KiB
/// (the parser rounds it down) and the options that may be left out as `None`.
#[derive(Debug, Clone)]
struct ServerArgs {
    listen: SocketAddr,
    size: u64,
    max_clients: Option<usize>,
    max_queues: Option<u16>,
    max_pending_per_source: Option<usize>,
    grace: Option<u64>,
    keepalive_ms: Option<u64>,
    hugepages: bool,
    no_mlock: bool,
    log_level: Option<Level>,
    state_dir: Option<String>,
    state_dir_on_disk: bool,
    allow_list: Option<String>,
    insecure: bool,
    status_socket: Option<String>,
    test_wrong_server_proof: bool,
}

fn server_args() -> impl Strategy<Value = ServerArgs> {
    let level = prop_oneof![
        Just(Level::Error),
        Just(Level::Warn),
        Just(Level::Info),
        Just(Level::Debug)
    ];
    let keepalive = prop_oneof![Just(0u64), KEEPALIVE_MS_RANGE];
    (
        (socket_addr(), PAGE..=u64::MAX),
        (
            prop::option::of(1..=usize::MAX),
            prop::option::of(1..=u16::MAX),
            prop::option::of(1..=usize::MAX),
            prop::option::of(0..=GRACE_SECS_MAX),
            prop::option::of(keepalive),
        ),
        (any::<bool>(), any::<bool>(), prop::option::of(level)),
        prop::option::of("(?s).{1,16}"),
        (
            prop::option::of("(?s).{1,16}"),
            any::<bool>(),
            prop::option::of("(?s).{1,16}"),
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (listen, size),
                (max_clients, max_queues, max_pending_per_source, grace, keepalive_ms),
                (h, n, log_level),
                dir,
                (allow_list, insecure, status_socket, test_wrong_server_proof, on_disk),
            )| {
                // One of the two is required.
                let insecure = insecure || allow_list.is_none();
                // Only with a state directory.
                let state_dir_on_disk = on_disk && dir.is_some();
                ServerArgs {
                    listen,
                    size,
                    max_clients,
                    max_queues,
                    max_pending_per_source,
                    grace,
                    keepalive_ms,
                    hugepages: h,
                    no_mlock: n,
                    log_level,
                    state_dir: dir,
                    state_dir_on_disk,
                    allow_list,
                    insecure,
                    status_socket,
                    test_wrong_server_proof,
                }
            },
        )
}

impl ServerArgs {
    /// The command line, each option as `--opt=value` or `--opt value` (`inline`), in the
    /// order `order` sorts them into.
    fn argv(&self, inline: &[bool], order: &[u8]) -> Vec<String> {
        let mut opts: Vec<(&str, Option<String>)> = vec![
            ("--listen", Some(self.listen.to_string())),
            ("--size", Some(self.size.to_string())),
        ];
        let mut some = |o: &'static str, v: Option<String>| opts.push((o, v));
        if let Some(v) = self.max_clients {
            some("--max-clients", Some(v.to_string()));
        }
        if let Some(v) = self.max_queues {
            some("--max-queues", Some(v.to_string()));
        }
        if let Some(v) = self.max_pending_per_source {
            some("--max-pending-per-source", Some(v.to_string()));
        }
        if let Some(v) = self.grace {
            some("--grace", Some(v.to_string()));
        }
        if let Some(v) = self.keepalive_ms {
            some("--keepalive-ms", Some(v.to_string()));
        }
        if self.hugepages {
            some("--hugepages", None);
        }
        if self.no_mlock {
            some("--no-mlock", None);
        }
        if let Some(l) = self.log_level {
            some("--log-level", Some(level_name(l).to_string()));
        }
        if let Some(d) = &self.state_dir {
            some("--state-dir", Some(d.clone()));
        }
        if self.state_dir_on_disk {
            some("--state-dir-on-disk", None);
        }
        if let Some(f) = &self.allow_list {
            some("--allow-list", Some(f.clone()));
        }
        if self.insecure {
            some("--insecure", None);
        }
        if let Some(p) = &self.status_socket {
            some("--status-socket", Some(p.clone()));
        }
        if self.test_wrong_server_proof {
            some("--test-wrong-server-proof", None);
        }
        let mut keyed: Vec<(u8, usize)> = (0..opts.len()).map(|i| (order[i], i)).collect();
        keyed.sort();
        let mut out = Vec::new();
        for (_, i) in keyed {
            let (o, v) = &opts[i];
            match v {
                None => out.push(o.to_string()),
                Some(v) if inline[i] => out.push(format!("{o}={v}")),
                Some(v) => out.extend([o.to_string(), v.clone()]),
            }
        }
        out
    }

    /// The configuration the parser must return.
    fn config(&self) -> ServerConfig {
        ServerConfig {
            listen: self.listen,
            size: self.size / PAGE * PAGE,
            max_clients: self.max_clients.unwrap_or(DEFAULT_MAX_CLIENTS),
            max_queues: self.max_queues.unwrap_or(DEFAULT_MAX_QUEUES),
            max_pending_per_source: self
                .max_pending_per_source
                .unwrap_or(DEFAULT_MAX_PENDING_PER_SOURCE),
            grace: Duration::from_secs(self.grace.unwrap_or(DEFAULT_GRACE_SECS)),
            keepalive: Duration::from_millis(self.keepalive_ms.unwrap_or(DEFAULT_KEEPALIVE_MS)),
            hugepages: self.hugepages,
            mlock: !self.no_mlock,
            log_level: self.log_level.unwrap_or(Level::Info),
            state_dir: self.state_dir.as_ref().map(PathBuf::from),
            state_dir_on_disk: self.state_dir_on_disk,
            allow_list: self.allow_list.as_ref().map(PathBuf::from),
            insecure: self.insecure,
            status_socket: self.status_socket.as_ref().map(PathBuf::from),
            test_wrong_server_proof: self.test_wrong_server_proof,
        }
    }
}

proptest! {
    /// Any argument vector: no panic; a configuration that is returned keeps the rules
    /// `--help` states; an error is a message.
    #[test]
    fn fuzz_server_args(args in argv(&SERVER_OPTS, &SERVER_REQUIRED)) {
        match parse_server_args(args.clone()) {
            Ok(Parsed::Run(c)) => {
                prop_assert!(c.size >= PAGE && c.size % PAGE == 0, "{:?}", c);
                prop_assert!(c.max_clients >= 1);
                prop_assert!(c.max_queues >= 1);
                prop_assert!(c.max_pending_per_source >= 1);
                prop_assert!(c.grace.as_secs() <= GRACE_SECS_MAX);
                let ka = u64::try_from(c.keepalive.as_millis()).unwrap_or(u64::MAX);
                prop_assert!(ka == 0 || KEEPALIVE_MS_RANGE.contains(&ka));
                prop_assert!(c.state_dir.as_ref().is_none_or(|d| !d.as_os_str().is_empty()));
                prop_assert!(c.allow_list.as_ref().is_none_or(|d| !d.as_os_str().is_empty()));
                let socket_len = c.status_socket.as_ref().map(|p| p.as_os_str().len());
                prop_assert!(socket_len.is_none_or(|n| n > 0 && n <= STATUS_SOCKET_MAX));
                // Never started without authentication unless --insecure was asked for.
                prop_assert!(c.allow_list.is_some() || c.insecure);
                prop_assert!(!c.state_dir_on_disk || c.state_dir.is_some());
            }
            Ok(Parsed::Help(_)) => prop_assert!(args.iter().any(|a| a == "-h" || a.split('=').next() == Some("--help"))),
            Ok(Parsed::Version) => prop_assert!(args.iter().any(|a| a == "-V" || a.split('=').next() == Some("--version"))),
            Ok(Parsed::Generate(_)) => prop_assert!(false, "--generate is not among the options: {:?}", args),
            Err(e) => prop_assert!(!e.is_empty()),
        }
    }

    /// Any valid configuration, written as a command line in any order and either form,
    /// parses back to itself (the size rounded down to 4 KiB).
    #[test]
    fn fuzz_server_args_round_trip(
        a in server_args(),
        inline in any::<[bool; 16]>(),
        order in any::<[u8; 16]>(),
    ) {
        let argv = a.argv(&inline, &order);
        prop_assert_eq!(parse_server_args(argv.clone()), Ok(Parsed::Run(a.config())), "{:?}", argv);
    }

    /// Any valid command line with one of its options given a second time (with any
    /// value, or none) is refused, naming that option: neither the first nor the last is
    /// taken.
    #[test]
    fn fuzz_server_args_twice(
        a in server_args(),
        inline in any::<[bool; 16]>(),
        order in any::<[u8; 16]>(),
        pick in any::<prop::sample::Index>(),
        value in prop::option::of(arg_value()),
    ) {
        let mut argv = a.argv(&inline, &order);
        let opts: Vec<String> = argv.iter().filter(|o| o.starts_with("--")).cloned().collect();
        let opt = pick.get(&opts).split('=').next().unwrap_or_default().to_string();
        argv.push(match value {
            Some(v) => format!("{opt}={v}"),
            None => opt.clone(),
        });
        let e = parse_server_args(argv.clone());
        prop_assert!(e.as_ref().is_err_and(|e| e.contains(&opt)), "{:?}: {:?}", argv, e);
    }

    /// Any argument vector: no panic; a configuration that is returned keeps the rules
    /// `--help` states; an error is a message.
    #[test]
    fn fuzz_client_args(args in argv(&CLIENT_OPTS, &CLIENT_REQUIRED)) {
        match parse_client_args(args.clone()) {
            Ok(Parsed::Run(c)) => {
                prop_assert!(c.queues >= 1 && c.timeout >= Duration::from_secs(1), "{:?}", c);
                prop_assert!(c.chunk >= 1 && c.chunk <= 1 << 30);
                prop_assert!(c.secret.is_none() || c.secret_file.is_none());
                prop_assert!(!c.replay || c.secret.is_some() || c.secret_file.is_some());
                prop_assert!(!c.replay || c.flood.is_none());
                prop_assert!(c.flood.is_none_or(|n| n >= 1));
                prop_assert!(!c.flood_id || c.flood.is_some());
                prop_assert!(c.source.is_none_or(|s| s.is_ipv4() == c.connect.is_ipv4()));
                prop_assert!(c.forge_from.is_none_or(|s| s.is_ipv4() == c.connect.is_ipv4()));
                prop_assert!(c.forge_from.is_none() || c.secret.is_some() || c.secret_file.is_some());
            }
            Ok(Parsed::Help(_)) => prop_assert!(args.iter().any(|a| a == "-h" || a.split('=').next() == Some("--help"))),
            Ok(Parsed::Version) => prop_assert!(args.iter().any(|a| a == "-V" || a.split('=').next() == Some("--version"))),
            Ok(Parsed::Generate(_)) => prop_assert!(false, "--generate is not among the options: {:?}", args),
            Err(e) => prop_assert!(!e.is_empty()),
        }
    }

    /// "A bad option ... exits with status 2 ... and one line on stderr" (`--help`): the
    /// error of any argument vector is one line.
    #[test]
    fn fuzz_args_error_is_one_line(args in argv(&SERVER_OPTS, &SERVER_REQUIRED), cargs in argv(&CLIENT_OPTS, &CLIENT_REQUIRED)) {
        if let Err(e) = parse_server_args(args.clone()) {
            prop_assert!(!e.contains('\n'), "{:?}: {:?}", args, e);
        }
        if let Err(e) = parse_client_args(cargs.clone()) {
            prop_assert!(!e.contains('\n'), "{:?}: {:?}", cargs, e);
        }
    }

    /// `parse_size` (`--size`, `--chunk`): accepted means digits and an optional K/M/G/T
    /// (either case) whose value is returned; `format_size` of any value parses back.
    #[test]
    fn fuzz_parse_size(s in arg_value(), n in any::<u64>()) {
        if let Ok(v) = parse_size(&s) {
            let (digits, shift) = match s.as_bytes().last().map(u8::to_ascii_uppercase) {
                Some(b'K') => (&s[..s.len() - 1], 10),
                Some(b'M') => (&s[..s.len() - 1], 20),
                Some(b'G') => (&s[..s.len() - 1], 30),
                Some(b'T') => (&s[..s.len() - 1], 40),
                _ => (&s[..], 0),
            };
            let ok = !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && digits.parse::<u128>().ok() == Some(u128::from(v) >> shift)
                && (u128::from(v) >> shift) << shift == u128::from(v);
            prop_assert!(ok, "{:?} -> {}", s, v);
        }
        prop_assert_eq!(parse_size(&format_size(n)), Ok(n));
    }
}

// --- the allow-list ----------------------------------------------------------------------

/// The file name the allow-list fuzzers parse under.
const ALLOW: &str = "allow";

/// An entry as the allow-list fuzzer expects it: client id, secret, addresses.
type WantEntry = (u64, Vec<u8>, Option<Vec<IpAddr>>);

/// One line of a generated allow-list: its text and what the parser must make of it
/// (`None`: a line in error).
#[derive(Debug, Clone)]
struct AllowLine {
    text: String,
    /// `Some(None)`: no entry (blank or comment); `Some(Some(..))`: this entry.
    expect: Option<Option<WantEntry>>,
}

/// A client id as text, with its value if it is a valid one (not 0).
fn allow_id() -> impl Strategy<Value = (String, Option<u64>)> {
    prop_oneof![
        4 => (1..=u64::MAX, any::<bool>()).prop_map(|(v, hex)| {
            let t = if hex { format!("0x{v:x}") } else { v.to_string() };
            (t, Some(v))
        }),
        4 => (1..=4u64).prop_map(|v| (v.to_string(), Some(v))),
        1 => prop_oneof![Just("0"), Just("0x0"), Just("0x"), Just("-1"), Just("18446744073709551616")]
            .prop_map(|t| (t.to_string(), None)),
        1 => "[g-wyz][0-9a-z]{0,6}".prop_map(|t| (t, None)),
    ]
}

/// Hex of `bytes`, each digit in either case as `upper` says.
fn hex_of(bytes: &[u8], upper: &[bool]) -> String {
    let lower: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    lower
        .chars()
        .zip(upper.iter().cycle())
        .map(|(c, &u)| if u { c.to_ascii_uppercase() } else { c })
        .collect()
}

/// A secret as text, with its bytes if it is a valid one.
fn allow_secret() -> impl Strategy<Value = (String, Option<Vec<u8>>)> {
    let upper = prop::collection::vec(any::<bool>(), 1..8);
    prop_oneof![
        4 => (prop::collection::vec(any::<u8>(), 16..=64), upper.clone())
            .prop_map(|(b, u)| (hex_of(&b, &u), Some(b))),
        1 => (prop_oneof![1..=15usize, 65..=80usize], any::<[u8; 80]>(), upper.clone())
            .prop_map(|(n, b, u)| (hex_of(b.get(..n).unwrap_or(&b), &u), None)),
        1 => (prop::collection::vec(any::<u8>(), 16..=64), upper, "[g-z]")
            .prop_map(|(b, u, odd)| {
                // An odd number of digits, or a non-hex character in it.
                let mut t = hex_of(&b, &u);
                if odd == "g" { t.pop(); } else { t.insert(t.len() / 2, odd.chars().next().unwrap_or('z')); }
                (t, None)
            }),
    ]
}

/// An address list as text, with its addresses (canonical, first of each) if valid.
fn allow_addrs() -> impl Strategy<Value = (String, Option<Vec<IpAddr>>)> {
    let ip = prop_oneof![
        any::<[u8; 4]>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
        any::<[u16; 8]>().prop_map(|a| IpAddr::V6(Ipv6Addr::from(a))),
        any::<[u8; 4]>().prop_map(|a| IpAddr::V6(Ipv4Addr::from(a).to_ipv6_mapped())),
        (0..=2u8).prop_map(|i| IpAddr::V4(Ipv4Addr::new(192, 0, 2, i))),
    ];
    prop_oneof![
        4 => prop::collection::vec(ip, 1..=4).prop_map(|ips| {
            let text = ips.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(",");
            let mut want: Vec<IpAddr> = Vec::new();
            for i in ips {
                let c = i.to_canonical();
                if !want.contains(&c) {
                    want.push(c);
                }
            }
            (text, Some(want))
        }),
        1 => prop_oneof![
            Just("192.0.2.1,".to_string()),
            Just(",::1".to_string()),
            Just("192.0.2.1:7471".to_string()),
            Just("fe80::1%2".to_string()),
            // Never an address: starts with a letter that is no hex digit.
            "[g-z][a-z.:]{0,11}",
        ].prop_map(|t| (t, None)),
    ]
}

/// A line of an allow-list: blank, a comment, an entry (maybe with a comment after it,
/// fields separated by any blanks), or a line with the wrong number of fields.
fn allow_line() -> impl Strategy<Value = AllowLine> {
    let sep = prop_oneof![Just(" "), Just("\t"), Just("  "), Just(" \t ")];
    let comment = prop::option::of("[ -~]{0,20}".prop_map(|c| format!(" #{c}")));
    let entry = (
        allow_id(),
        allow_secret(),
        prop::option::of(allow_addrs()),
        sep.clone(),
        sep,
        comment,
        prop_oneof![Just(""), Just(" "), Just("\t")],
    )
        .prop_map(|((it, iv), (st, sv), addrs, s1, s2, comment, lead)| {
            let mut text = format!("{lead}{it}{s1}{st}");
            let mut addrs_ok = Some(None);
            if let Some((at, av)) = addrs {
                text.push_str(s2);
                text.push_str(&at);
                addrs_ok = av.map(Some);
            }
            text.push_str(&comment.unwrap_or_default());
            let expect = match (iv, sv, addrs_ok) {
                (Some(id), Some(secret), Some(addrs)) => Some(Some((id, secret, addrs))),
                _ => None,
            };
            AllowLine { text, expect }
        });
    prop_oneof![
        1 => prop_oneof![Just(""), Just("   "), Just("\t")].prop_map(|t| AllowLine {
            text: t.to_string(),
            expect: Some(None),
        }),
        1 => "[ -~]{0,30}".prop_map(|c| AllowLine {
            text: format!("#{c}"),
            expect: Some(None),
        }),
        8 => entry,
        1 => "[0-9a-f]{1,10}( [0-9a-f]{1,10} [0-9.]{1,10} [a-z]{1,4}){0,1}".prop_map(|t| {
            // One field, or four.
            AllowLine { text: t, expect: None }
        }),
    ]
}

proptest! {
    /// Any text: no panic; an accepted list has only valid entries; an error names the
    /// file and a line that exists, is one line, and quotes no secret of the input.
    #[test]
    fn fuzz_allow_list_any_text(
        text in prop_oneof![
            any::<String>(),
            prop::collection::vec("[0-9a-fA-Fx,.:# \t]{0,140}", 0..6).prop_map(|l| l.join("\n")),
        ]
    ) {
        match AllowList::parse(&text, ALLOW) {
            Ok(list) => prop_assert!(list.len() <= text.lines().count()),
            Err(e) => {
                prop_assert!(!e.contains('\n'), "{:?}", e);
                let rest = e.strip_prefix("allow:").unwrap_or_default();
                let line: usize = rest.split(':').next().and_then(|n| n.parse().ok()).unwrap_or(0);
                prop_assert!(line >= 1 && line <= text.lines().count(), "{:?}", e);
                for token in text.split_ascii_whitespace().filter(|t| t.len() >= 32) {
                    prop_assert!(!e.contains(token), "{:?} quotes {:?}", e, token);
                }
            }
        }
    }

    /// A list of generated lines: accepted exactly when every line is valid and no id
    /// repeats, then with exactly the entries written; otherwise refused at the first
    /// line in error (a bad line, or the second line of an id), never quoting a secret.
    #[test]
    fn fuzz_allow_list_lines(lines in prop::collection::vec(allow_line(), 0..8), crlf in any::<bool>()) {
        let nl = if crlf { "\r\n" } else { "\n" };
        let text: String = lines.iter().map(|l| format!("{}{nl}", l.text)).collect();
        // The model: the first line in error, else the entries.
        let mut want: BTreeMap<u64, (Vec<u8>, Option<Vec<IpAddr>>)> = BTreeMap::new();
        let mut first_bad = None;
        for (i, l) in lines.iter().enumerate() {
            match &l.expect {
                None => {
                    first_bad = Some(i + 1);
                    break;
                }
                Some(None) => {}
                Some(Some((id, secret, addrs))) => {
                    if want.contains_key(id) {
                        first_bad = Some(i + 1);
                        break;
                    }
                    want.insert(*id, (secret.clone(), addrs.clone()));
                }
            }
        }
        match (AllowList::parse(&text, ALLOW), first_bad) {
            (Ok(list), None) => {
                prop_assert_eq!(list.len(), want.len());
                for (id, (secret, addrs)) in &want {
                    let e = list.get(*id);
                    prop_assert!(e.is_some(), "{} missing", id);
                    let e = e.unwrap_or_else(|| unreachable!());
                    let want_secret = Secret::from_bytes(secret);
                    prop_assert!(want_secret.is_some_and(|w| w.ct_eq(&e.secret)));
                    prop_assert_eq!(&e.addrs, addrs);
                }
            }
            (Err(e), Some(line)) => {
                let prefix = format!("allow:{line}: ");
                prop_assert!(e.starts_with(&prefix), "{:?} is not about line {}", e, line);
                for l in &lines {
                    for token in l.text.split_ascii_whitespace().filter(|t| t.len() >= 32) {
                        prop_assert!(!e.contains(token), "{:?} quotes {:?}", e, token);
                    }
                }
            }
            (got, _) => {
                return Err(TestCaseError::fail(format!(
                    "{got:?}, expected the first error at {first_bad:?}: {text:?}"
                )));
            }
        }
    }
}

// --- connect requests of protocol version 2 ----------------------------------------------

/// Bytes near a connect request: a valid one of any kind (maybe padded, cut short or
/// with bytes changed), or anything.
fn request_bytes() -> impl Strategy<Value = Vec<u8>> {
    let auth = prop_oneof![
        (any::<[u8; 16]>(), any::<u64>()).prop_map(|(client_nonce, instance)| Auth::Hello {
            client_nonce,
            instance
        }),
        (any::<u64>(), any::<[u8; 16]>())
            .prop_map(|(server_nonce, mac)| Auth::Proof { server_nonce, mac }),
        any::<u64>().prop_map(|instance| Auth::None { instance }),
    ];
    let valid = (any::<u64>(), 1..=u16::MAX, any::<u16>(), 1..=u64::MAX, auth).prop_map(
        |(client_id, queue_count, index, requested_size, auth)| {
            let req = ConnectRequest {
                client_id,
                queue_index: index % queue_count,
                queue_count,
                requested_size,
                reply_descriptor: false,
                auth,
            };
            let mut out = [0u8; ConnectRequest::SIZE];
            req.encode(&mut out);
            out.to_vec()
        },
    );
    let mutated = (
        valid.clone(),
        prop::collection::vec(edit(), 0..=3),
        prop::collection::vec(any::<u8>(), 0..=40),
    )
        .prop_map(|(mut b, edits, pad)| {
            for e in &edits {
                apply(&mut b, e);
            }
            b.extend(pad);
            b
        });
    prop_oneof![
        2 => valid,
        4 => mutated,
        2 => prop::collection::vec(any::<u8>(), 0..=96),
        1 => (any::<u16>(), prop::collection::vec(any::<u8>(), 0..=60)).prop_map(|(v, rest)| {
            // The magic, any version, anything after.
            let mut b = wire::MAGIC.to_le_bytes().to_vec();
            b.extend(v.to_le_bytes());
            b.extend(rest);
            b
        }),
    ]
}

proptest! {
    /// `ConnectRequest::decode` (and `version_of`, which the server reads first, and the
    /// client's `Reject::decode`) on any bytes: no panic; an accepted request keeps the
    /// rules the server relies on and is exactly its encoding (nothing in the 56 bytes
    /// is ignored); a version-1 header is never decoded as version 2.
    #[test]
    fn fuzz_connect_request_decode(b in request_bytes()) {
        let version = wire::version_of(&b);
        let _ = Reject::decode(&b);
        match ConnectRequest::decode(&b) {
            Ok(req) => {
                prop_assert_eq!(version, Some(wire::VERSION));
                prop_assert!(req.requested_size > 0 && req.queue_count > 0);
                prop_assert!(req.queue_index < req.queue_count);
                let mut out = [0u8; ConnectRequest::SIZE];
                req.encode(&mut out);
                prop_assert_eq!(&out[..], &b[..ConnectRequest::SIZE]);
            }
            Err(WireError::BadVersion) => {
                prop_assert!(version.is_some_and(|v| v != wire::VERSION), "{:?}", version);
            }
            Err(WireError::Short) => prop_assert!(b.len() < ConnectRequest::SIZE),
            Err(WireError::BadMagic) => prop_assert_eq!(version, None),
            Err(WireError::BadField) => prop_assert_eq!(version, Some(wire::VERSION)),
        }
    }
}
