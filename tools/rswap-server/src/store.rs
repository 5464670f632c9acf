// SPDX-License-Identifier: GPL-2.0

//! The state directory (`--state-dir`): regions that outlive the server process.
//!
//! Every region is two files in the directory, named by its region id in 16
//! lowercase hex digits:
//!
//! - `region-<id>.mem`: the memory, exactly `map_length` bytes, created with
//!   `O_CREAT | O_EXCL`, sized with `ftruncate` + `fallocate` and mapped shared;
//! - `region-<id>.meta`: the metadata ([`Meta`]), replaced atomically (written to
//!   `region-<id>.meta.tmp`, fsynced, renamed over, directory fsynced). Format 2
//!   records the instance that owns the region; format 1 (written before instances
//!   existed) is still read, as a region whose owner is unknown.
//!
//! A region is created memory file first, metadata last, and deleted metadata
//! first, memory last; so a complete pair is always a region the server handed
//! out, and a crash in between leaves a lone memory file, which the next start
//! removes. A file `lock` holds an exclusive `flock` while a server uses the
//! directory.
//!
//! Nothing here needs RDMA: [`decide`] (which entries to restore, which to remove)
//! and the metadata format are unit-tested on the host.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::memory;
use crate::policy::PAGE;

/// Version of the metadata format of a region whose owner instance is known.
pub(crate) const FORMAT_VERSION: u32 = 2;
/// The format before owner instances: still read (the owner is then unknown), and
/// written for such a region until an instance claims it. Any other version is refused.
pub(crate) const FORMAT_VERSION_1: u32 = 1;
/// First word of a metadata file.
const MAGIC: &str = "rswap-region";
/// A metadata file is never larger than this; a larger one is corrupt.
const META_MAX: usize = 1024;
/// The lock file's name.
pub(crate) const LOCK_NAME: &str = "lock";

/// What the state directory keeps about one region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    /// The client the region belongs to.
    pub(crate) client_id: u64,
    /// The region's id (never 0; also in the file names).
    pub(crate) region_id: u64,
    /// Registered length: what the client asked for, rounded up to 4 KiB.
    pub(crate) length: u64,
    /// Size of the memory file (length rounded up to the allocation unit); what
    /// the region is charged to the pool.
    pub(crate) map_length: u64,
    /// The epoch last handed out (>= 1).
    pub(crate) epoch: u32,
    /// The queue count the client last announced (>= 1).
    pub(crate) queue_count: u16,
    /// The instance of the client that owns the region; `None` for a region from a
    /// format-1 file that no instance has claimed yet.
    pub(crate) instance: Option<u64>,
}

/// FNV-1a, 64 bits: the metadata's checksum (catches bit flips and truncation
/// inside a line; not a defence against anyone).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Fields in the order they appear; format 2 adds [`INSTANCE_FIELD`] after them.
const FIELDS: [&str; 6] = [
    "client_id",
    "region_id",
    "length",
    "map_length",
    "epoch",
    "queue_count",
];
/// The field format 2 adds, last.
const INSTANCE_FIELD: &str = "instance";

impl Meta {
    /// The metadata file's contents: text, one `key=value` per line.
    ///
    /// ```text
    /// rswap-region 2
    /// client_id=7
    /// region_id=12345678901234567890
    /// length=4194304
    /// map_length=4194304
    /// epoch=2
    /// queue_count=4
    /// instance=1
    /// checksum=0123456789abcdef
    /// ```
    ///
    /// `checksum` is FNV-1a 64 of every byte before it, in 16 lowercase hex digits.
    /// A region whose owner is unknown is written in format 1: the same without the
    /// `instance` line.
    pub(crate) fn encode(&self) -> String {
        let values = [
            self.client_id,
            self.region_id,
            self.length,
            self.map_length,
            u64::from(self.epoch),
            u64::from(self.queue_count),
        ];
        let version = match self.instance {
            Some(_) => FORMAT_VERSION,
            None => FORMAT_VERSION_1,
        };
        let mut text = format!("{MAGIC} {version}\n");
        for (k, v) in FIELDS.iter().zip(values) {
            text.push_str(&format!("{k}={v}\n"));
        }
        if let Some(instance) = self.instance {
            text.push_str(&format!("{INSTANCE_FIELD}={instance}\n"));
        }
        let sum = fnv1a(text.as_bytes());
        text.push_str(&format!("checksum={sum:016x}\n"));
        text
    }

    /// Parses and checks a metadata file. The error says what is wrong, in a few
    /// words, for the log.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Self, String> {
        if bytes.is_empty() {
            return Err("empty".into());
        }
        if bytes.len() > META_MAX {
            return Err(format!("larger than {META_MAX} bytes"));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| "not text".to_string())?;
        let body = text
            .strip_suffix('\n')
            .ok_or("truncated (no final newline)")?;
        let mut lines = body.split('\n');
        let head = lines.next().unwrap_or_default();
        let version = head
            .strip_prefix(MAGIC)
            .and_then(|v| v.strip_prefix(' '))
            .ok_or("not an rswap region metadata file")?;
        let version = parse_dec(version).ok_or("bad format version")?;
        let with_instance = match version {
            v if v == u64::from(FORMAT_VERSION) => true,
            v if v == u64::from(FORMAT_VERSION_1) => false,
            _ => return Err(format!("unknown format version {version}")),
        };
        let mut field = |key: &str| -> Result<u64, String> {
            let line = lines
                .next()
                .ok_or_else(|| format!("truncated (no {key})"))?;
            let v = line
                .strip_prefix(key)
                .and_then(|v| v.strip_prefix('='))
                .ok_or_else(|| format!("expected {key}=, found {line:?}"))?;
            parse_dec(v).ok_or_else(|| format!("bad {key} {v:?}"))
        };
        let mut values = [0u64; FIELDS.len()];
        for (key, slot) in FIELDS.iter().zip(values.iter_mut()) {
            *slot = field(key)?;
        }
        let instance = if with_instance {
            Some(field(INSTANCE_FIELD)?)
        } else {
            None
        };
        let line = lines.next().ok_or("truncated (no checksum)")?;
        let sum = line
            .strip_prefix("checksum=")
            .filter(|h| h.len() == 16 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(|| format!("bad checksum line {line:?}"))?;
        if lines.next().is_some() {
            return Err("extra lines after the checksum".into());
        }
        let covered = text.len() - line.len() - 1;
        if fnv1a(text.as_bytes().get(..covered).unwrap_or_default()) != sum {
            return Err("checksum mismatch".into());
        }
        let [client_id, region_id, length, map_length, epoch, queue_count] = values;
        let meta = Self {
            client_id,
            region_id,
            length,
            map_length,
            epoch: u32::try_from(epoch).map_err(|_| format!("bad epoch {epoch}"))?,
            queue_count: u16::try_from(queue_count)
                .map_err(|_| format!("bad queue_count {queue_count}"))?,
            instance,
        };
        meta.check()?;
        Ok(meta)
    }

    /// The invariants every region has.
    fn check(&self) -> Result<(), String> {
        if self.region_id == 0 {
            return Err("region_id 0".into());
        }
        if self.length == 0 || self.length % PAGE != 0 {
            return Err(format!("bad length {}", self.length));
        }
        if self.map_length < self.length || self.map_length % PAGE != 0 {
            return Err(format!(
                "bad map_length {} for length {}",
                self.map_length, self.length
            ));
        }
        if self.epoch == 0 {
            return Err("epoch 0".into());
        }
        if self.queue_count == 0 {
            return Err("queue_count 0".into());
        }
        Ok(())
    }
}

/// Strict decimal: digits only, no sign, no leading zeros (but "0"), fits u64.
fn parse_dec(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

/// Which file of a region a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Mem,
    Meta,
    MetaTmp,
}

fn file_name(region_id: u64, part: Part) -> String {
    let ext = match part {
        Part::Mem => "mem",
        Part::Meta => "meta",
        Part::MetaTmp => "meta.tmp",
    };
    format!("region-{region_id:016x}.{ext}")
}

/// The region id and part of a file name we create; `None` for anything else.
fn parse_name(name: &str) -> Option<(u64, Part)> {
    let rest = name.strip_prefix("region-")?;
    let (hex, ext) = rest.split_at_checked(16)?;
    if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let part = match ext {
        ".mem" => Part::Mem,
        ".meta" => Part::Meta,
        ".meta.tmp" => Part::MetaTmp,
        _ => return None,
    };
    Some((u64::from_str_radix(hex, 16).ok()?, part))
}

/// The kind of a directory entry (symbolic links are not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else: symbolic link, device, socket, fifo.
    Other,
}

/// One directory entry, as [`decide`] sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listing {
    /// File name.
    pub(crate) name: String,
    /// What it is.
    pub(crate) kind: Kind,
    /// Size in bytes.
    pub(crate) len: u64,
}

/// What to do with (part of) the state directory's contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A complete, consistent region: map it and serve it again.
    Restore(Meta),
    /// An incomplete or inconsistent region: log `why` and delete `files`.
    Discard {
        /// The region id from the file names.
        region_id: u64,
        /// The files to delete.
        files: Vec<String>,
        /// Why, for the log.
        why: String,
    },
    /// A file that is not ours: log and leave it alone.
    Ignore {
        /// The file name.
        name: String,
        /// Why, for the log.
        why: String,
    },
    /// A region whose metadata could not be read (`EMFILE`, `EIO`, ...: nothing says
    /// its files are bad). Its files are left alone, and the server does not start.
    Unreadable {
        /// The region id from the file names.
        region_id: u64,
        /// The metadata file's name.
        name: String,
        /// The error.
        why: String,
    },
}

/// How often [`Store::scan`] tries to read a metadata file.
pub(crate) const META_READ_TRIES: u32 = 3;
/// The pause between two tries.
const META_READ_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

/// `read` tried up to `tries` times, with `pause` between tries, until it succeeds or
/// fails with `NotFound` (the file is gone: trying again cannot help).
pub(crate) fn retrying<T>(
    tries: u32,
    mut pause: impl FnMut(),
    mut read: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    let mut n = 1;
    loop {
        match read() {
            Err(e) if e.kind() != io::ErrorKind::NotFound && n < tries => {
                n += 1;
                pause();
            }
            other => return other,
        }
    }
}

/// The files one region id has in the directory.
#[derive(Default)]
struct Group {
    mem: Option<Listing>,
    meta: Option<Listing>,
    tmp: Option<Listing>,
}

/// Decides what to do with every entry of a state directory. `read_meta` returns
/// the contents of a metadata file by name (the caller bounds its size). Pure but
/// for `read_meta`; the result is ordered by region id.
pub(crate) fn decide(
    entries: &[Listing],
    mut read_meta: impl FnMut(&str) -> io::Result<Vec<u8>>,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    let mut groups: BTreeMap<u64, Group> = BTreeMap::new();
    for e in entries {
        if e.name == LOCK_NAME {
            continue;
        }
        let Some((id, part)) = parse_name(&e.name) else {
            out.push(Verdict::Ignore {
                name: e.name.clone(),
                why: "not a region file".into(),
            });
            continue;
        };
        if e.kind == Kind::Dir {
            out.push(Verdict::Ignore {
                name: e.name.clone(),
                why: "a directory".into(),
            });
            continue;
        }
        let g = groups.entry(id).or_default();
        let slot = match part {
            Part::Mem => &mut g.mem,
            Part::Meta => &mut g.meta,
            Part::MetaTmp => &mut g.tmp,
        };
        *slot = Some(e.clone());
    }
    let mut candidates: Vec<(Meta, Vec<String>)> = Vec::new();
    for (id, g) in groups {
        if let Some(t) = &g.tmp {
            out.push(Verdict::Discard {
                region_id: id,
                files: vec![t.name.clone()],
                why: "unfinished metadata update".into(),
            });
        }
        let files: Vec<String> = [&g.meta, &g.mem]
            .into_iter()
            .flatten()
            .map(|l| l.name.clone())
            .collect();
        let discard = |why: String| Verdict::Discard {
            region_id: id,
            files: files.clone(),
            why,
        };
        let (meta_l, mem_l) = match (&g.meta, &g.mem) {
            (None, None) => continue,
            (Some(_), None) => {
                out.push(discard("memory file missing".into()));
                continue;
            }
            (None, Some(_)) => {
                out.push(discard("metadata missing (creation did not finish)".into()));
                continue;
            }
            (Some(a), Some(b)) => (a, b),
        };
        if id == 0 {
            out.push(discard("region id 0".into()));
            continue;
        }
        if meta_l.kind != Kind::File {
            out.push(discard("metadata is not a regular file".into()));
            continue;
        }
        if mem_l.kind != Kind::File {
            out.push(discard("memory file is not a regular file".into()));
            continue;
        }
        let meta = match read_meta(&meta_l.name) {
            Ok(bytes) => match Meta::parse(&bytes) {
                Ok(m) => m,
                Err(e) => {
                    out.push(discard(format!("metadata: {e}")));
                    continue;
                }
            },
            // Gone since the listing: as if it had never been there.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                out.push(discard("metadata missing (removed during the scan)".into()));
                continue;
            }
            // Nothing says the region is bad: keep it, and let the operator see why.
            Err(e) => {
                out.push(Verdict::Unreadable {
                    region_id: id,
                    name: meta_l.name.clone(),
                    why: e.to_string(),
                });
                continue;
            }
        };
        if meta.region_id != id {
            out.push(discard(format!(
                "metadata names region {:016x}",
                meta.region_id
            )));
            continue;
        }
        if mem_l.len != meta.map_length {
            out.push(discard(format!(
                "memory file is {} bytes, metadata says {}",
                mem_l.len, meta.map_length
            )));
            continue;
        }
        candidates.push((meta, files));
    }
    // A client has one region at a time; two are an inconsistency nobody can
    // resolve safely, so neither is served.
    let mut per_client: HashMap<u64, usize> = HashMap::new();
    for (m, _) in &candidates {
        *per_client.entry(m.client_id).or_default() += 1;
    }
    for (meta, files) in candidates {
        if per_client.get(&meta.client_id).copied().unwrap_or(0) > 1 {
            out.push(Verdict::Discard {
                region_id: meta.region_id,
                files,
                why: format!("client_id {} has more than one region", meta.client_id),
            });
        } else {
            out.push(Verdict::Restore(meta));
        }
    }
    out.sort_by_key(|v| match v {
        Verdict::Ignore { .. } => (0, 0),
        Verdict::Discard { region_id, .. } => (1, *region_id),
        Verdict::Restore(m) => (2, m.region_id),
        Verdict::Unreadable { region_id, .. } => (3, *region_id),
    });
    out
}

/// An open state directory, locked against other servers.
pub(crate) struct Store {
    dir: PathBuf,
    /// Holds the `flock` while the server runs.
    _lock: File,
    /// File system magic, block size and size in blocks (0: no limit).
    fs: (u64, u64, u64),
}

/// Refuses a state directory that is not the server's own: owned by another user
/// (`uid` is not `euid`), or that group or others may write to (`mode & 0o022`), who
/// could then create, replace or delete region files.
pub(crate) fn check_dir_owner(uid: u32, mode: u32, euid: u32, dir: &str) -> Result<(), String> {
    if uid != euid {
        return Err(format!(
            "--state-dir: {dir} belongs to uid {uid}, not to the server's user (uid {euid}): its owner could read or replace the regions; give the server a directory of its own"
        ));
    }
    if mode & 0o022 != 0 {
        return Err(format!(
            "--state-dir: {dir} has mode {:04o}: group or others may create, replace or delete region files in it; run: chmod 700 {dir}",
            mode & 0o7777
        ));
    }
    Ok(())
}

/// `statfs` magic numbers of the file systems a state directory is meant for.
pub(crate) const TMPFS_MAGIC: u64 = 0x0102_1994;
/// hugetlbfs.
pub(crate) const HUGETLBFS_MAGIC: u64 = 0x9584_58f6;
/// ramfs.
pub(crate) const RAMFS_MAGIC: u64 = 0x8584_58f6;

impl Store {
    /// Opens (creating it, mode 0700, if missing) and locks `dir`.
    pub(crate) fn open(dir: &Path) -> Result<Self, String> {
        let show = dir.display();
        match fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("--state-dir: cannot create {show}: {e}")),
        }
        let md = fs::metadata(dir).map_err(|e| format!("--state-dir: {show}: {e}"))?;
        if !md.is_dir() {
            return Err(format!("--state-dir: {show} is not a directory"));
        }
        check_dir_owner(
            md.uid(),
            md.mode(),
            rustix::process::geteuid().as_raw(),
            &show.to_string(),
        )?;
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(dir.join(LOCK_NAME))
            .map_err(|e| format!("--state-dir: cannot open {show}/{LOCK_NAME}: {e}"))?;
        memory::try_lock_file(&lock).map_err(|e| {
            if e.kind() == io::ErrorKind::WouldBlock {
                format!("--state-dir: {show} is in use by another rswap-server")
            } else {
                format!("--state-dir: cannot lock {show}/{LOCK_NAME}: {e}")
            }
        })?;
        let fs = memory::fs_type(&lock).map_err(|e| format!("--state-dir: {show}: {e}"))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            _lock: lock,
            fs,
        })
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file system's `statfs` magic, block size and size in blocks (0: no limit).
    pub(crate) fn fs_type(&self) -> (u64, u64, u64) {
        self.fs
    }

    /// Lists the directory and decides about every entry (see [`decide`]).
    pub(crate) fn scan(&self) -> io::Result<Vec<Verdict>> {
        let mut entries = Vec::new();
        for e in fs::read_dir(&self.dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            // The entry may vanish meanwhile: then it is simply not listed.
            let Ok(md) = fs::symlink_metadata(e.path()) else {
                continue;
            };
            let ft = md.file_type();
            let kind = if ft.is_file() {
                Kind::File
            } else if ft.is_dir() {
                Kind::Dir
            } else {
                Kind::Other
            };
            entries.push(Listing {
                name,
                kind,
                len: md.len(),
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(decide(&entries, |name| {
            retrying(
                META_READ_TRIES,
                || std::thread::sleep(META_READ_PAUSE),
                || {
                    let f = OpenOptions::new()
                        .read(true)
                        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                        .open(self.dir.join(name))?;
                    let mut buf = Vec::new();
                    f.take(META_MAX as u64 + 1).read_to_end(&mut buf)?;
                    Ok(buf)
                },
            )
        }))
    }

    /// Deletes `files` (names in the directory); already missing is fine.
    pub(crate) fn remove_files(&self, files: &[String]) -> io::Result<()> {
        let mut first_err = None;
        for f in files {
            match fs::remove_file(self.dir.join(f)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    first_err.get_or_insert(io::Error::new(e.kind(), format!("{f}: {e}")));
                }
            }
        }
        self.sync_dir();
        first_err.map_or(Ok(()), Err)
    }

    /// Creates the memory file of a new region: `O_CREAT | O_EXCL` (so an id
    /// already on disk fails with `AlreadyExists`), `len` bytes, blocks allocated.
    pub(crate) fn create_memory(&self, region_id: u64, len: u64) -> io::Result<File> {
        let name = file_name(region_id, Part::Mem);
        let path = self.dir.join(&name);
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)?;
        let sized = f.set_len(len).and_then(|()| memory::fallocate(&f, len));
        if let Err(e) = sized {
            let _ = fs::remove_file(&path);
            return Err(io::Error::new(e.kind(), format!("{name}: {e}")));
        }
        Ok(f)
    }

    /// Opens the memory file of a restored region, checking its size again.
    pub(crate) fn open_memory(&self, region_id: u64, len: u64) -> io::Result<File> {
        let name = file_name(region_id, Part::Mem);
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(self.dir.join(&name))?;
        let have = f.metadata()?.len();
        if have != len {
            return Err(io::Error::other(format!(
                "{name} is {have} bytes, expected {len}"
            )));
        }
        Ok(f)
    }

    /// Writes a region's metadata atomically: temporary file, fsync, rename over
    /// the old one, fsync of the directory.
    pub(crate) fn write_meta(&self, meta: &Meta) -> io::Result<()> {
        let tmp = self.dir.join(file_name(meta.region_id, Part::MetaTmp));
        let dst = self.dir.join(file_name(meta.region_id, Part::Meta));
        let res = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&tmp)?;
            f.write_all(meta.encode().as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, &dst)
        })();
        if res.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        res?;
        self.sync_dir();
        Ok(())
    }

    /// Deletes a region's files: metadata first, so a crash in between leaves a
    /// lone memory file that the next start removes.
    pub(crate) fn remove_region(&self, region_id: u64) -> io::Result<()> {
        self.remove_files(&[
            file_name(region_id, Part::Meta),
            file_name(region_id, Part::Mem),
            file_name(region_id, Part::MetaTmp),
        ])
    }

    /// fsync of the directory, so renames and deletions are durable where that
    /// means anything (not on tmpfs); errors change nothing we could act on.
    fn sync_dir(&self) {
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::random_u64;
    use std::os::unix::fs::PermissionsExt as _;

    /// Metadata of a region whose owner is unknown: written in format 1.
    const META: Meta = Meta {
        client_id: 7,
        region_id: 0x1122_3344_5566_7788,
        length: 4 << 20,
        map_length: 4 << 20,
        epoch: 3,
        queue_count: 2,
        instance: None,
    };

    /// Metadata of a region with its owner: format 2.
    const META2: Meta = Meta {
        instance: Some(0x1234_5678_9abc_def0),
        ..META
    };

    #[test]
    fn meta_round_trip_and_exact_text() {
        let text = META.encode();
        assert!(text.starts_with(
            "rswap-region 1\nclient_id=7\nregion_id=1234605616436508552\nlength=4194304\n\
             map_length=4194304\nepoch=3\nqueue_count=2\nchecksum="
        ));
        assert!(text.ends_with('\n'));
        assert_eq!(Meta::parse(text.as_bytes()), Ok(META));
        // The format-1 example of Documentation/memory-server.md (as written before
        // instances existed; still read).
        let doc1 = Meta {
            epoch: 2,
            queue_count: 4,
            ..META
        };
        let text1 = "rswap-region 1\nclient_id=7\nregion_id=1234605616436508552\nlength=4194304\n\
             map_length=4194304\nepoch=2\nqueue_count=4\nchecksum=70bfbff593af1347\n";
        assert_eq!(doc1.encode(), text1);
        assert_eq!(Meta::parse(text1.as_bytes()), Ok(doc1));
        // The format-2 example.
        let doc2 = Meta {
            instance: Some(0x5eed_0000_0001),
            ..doc1
        };
        assert_eq!(
            doc2.encode(),
            "rswap-region 2\nclient_id=7\nregion_id=1234605616436508552\nlength=4194304\n\
             map_length=4194304\nepoch=2\nqueue_count=4\ninstance=104372000260097\n\
             checksum=46a843abee27b691\n"
        );
        for instance in [None, Some(0), Some(u64::MAX)] {
            let extreme = Meta {
                client_id: u64::MAX,
                region_id: u64::MAX,
                length: u64::MAX - 4095,
                map_length: u64::MAX - 4095,
                epoch: u32::MAX,
                queue_count: u16::MAX,
                instance,
            };
            assert_eq!(Meta::parse(extreme.encode().as_bytes()), Ok(extreme));
        }
    }

    #[test]
    fn meta_format_2_with_the_owner() {
        let text = META2.encode();
        assert!(text.starts_with(
            "rswap-region 2\nclient_id=7\nregion_id=1234605616436508552\nlength=4194304\n\
             map_length=4194304\nepoch=3\nqueue_count=2\ninstance=1311768467463790320\nchecksum="
        ));
        assert_eq!(Meta::parse(text.as_bytes()), Ok(META2));
        for n in 0..text.len() {
            assert!(Meta::parse(&text.as_bytes()[..n]).is_err(), "{n} bytes");
        }
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            let mut b = bytes.to_vec();
            b[i] ^= 0x01;
            assert!(Meta::parse(&b).is_err(), "byte {i} changed");
        }
        // Re-checksummed: a format-2 file without its instance, a format-1 file with
        // one, or a bad instance, are refused by the field checks.
        let resum = |body: &str| format!("{body}checksum={:016x}\n", fnv1a(body.as_bytes()));
        let body = text.split("checksum=").next().unwrap_or_default();
        let expect = |t: String, want: &str| {
            let e = Meta::parse(t.as_bytes()).expect_err("accepted");
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        };
        expect(
            resum(&body.replace("instance=1311768467463790320\n", "")),
            "expected instance=, found \"checksum=",
        );
        expect(
            resum(&body.replace("rswap-region 2", "rswap-region 1")),
            "bad checksum line \"instance=",
        );
        expect(
            resum(&body.replace("instance=1311768467463790320", "instance=-1")),
            "bad instance",
        );
        expect(
            resum(&body.replace(
                "instance=1311768467463790320",
                "instance=18446744073709551616",
            )),
            "bad instance",
        );
        expect(
            resum(&body.replace("instance=", "owner=")),
            "expected instance=",
        );
        expect(
            resum(&body.replace("rswap-region 2", "rswap-region 3")),
            "unknown format version 3",
        );
        // A format-1 file read back is written back in format 1 until an instance
        // claims the region.
        let old = META.encode();
        assert!(old.starts_with("rswap-region 1\n") && !old.contains("instance"));
        assert_eq!(Meta::parse(old.as_bytes()).map(|m| m.instance), Ok(None));
    }

    #[test]
    fn meta_truncated_anywhere_is_refused() {
        let text = META.encode();
        for n in 0..text.len() {
            let r = Meta::parse(&text.as_bytes()[..n]);
            assert!(r.is_err(), "accepted {n} of {} bytes", text.len());
        }
    }

    #[test]
    fn meta_corruption_is_refused() {
        let text = META.encode();
        let bytes = text.as_bytes();
        // Every single-byte change is caught (by the parser or the checksum).
        for i in 0..bytes.len() {
            for x in [0x01u8, 0x02, 0x10, 0x20] {
                let mut b = bytes.to_vec();
                b[i] ^= x;
                assert!(Meta::parse(&b).is_err(), "byte {i} ^ {x:#x} accepted");
            }
        }
        let with = |from: &str, to: &str| {
            // Re-checksummed, so only the field checks can refuse it.
            let body = text.split("checksum=").next().unwrap().replace(from, to);
            format!("{body}checksum={:016x}\n", fnv1a(body.as_bytes()))
        };
        let expect = |t: String, want: &str| {
            let e = Meta::parse(t.as_bytes()).expect_err("accepted");
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        };
        expect(
            with("rswap-region 1", "rswap-region 3"),
            "unknown format version 3",
        );
        expect(
            with("rswap-region 1", "rswap-region 2"),
            "expected instance=, found \"checksum=",
        );
        expect(
            with("rswap-region 1", "rswap-region 01"),
            "bad format version",
        );
        expect(with("rswap-region 1", "something 1"), "not an rswap region");
        expect(with("epoch=3", "epoch=0"), "epoch 0");
        expect(with("epoch=3", "epoch=4294967296"), "bad epoch");
        expect(with("epoch=3", "epoch=+3"), "bad epoch");
        expect(with("epoch=3", "epoch=03"), "bad epoch");
        expect(with("queue_count=2", "queue_count=0"), "queue_count 0");
        expect(
            with("queue_count=2", "queue_count=65536"),
            "bad queue_count",
        );
        expect(with("length=4194304", "length=4194305"), "bad length");
        expect(with("length=4194304", "length=0"), "bad length");
        expect(
            with("map_length=4194304", "map_length=4096"),
            "bad map_length",
        );
        expect(
            with("region_id=1234605616436508552", "region_id=0"),
            "region_id 0",
        );
        expect(with("client_id=7\n", ""), "expected client_id=");
        expect(with("epoch=3", "epoch=3 "), "bad epoch");
        expect(
            with("client_id=7", "client_id=18446744073709551616"),
            "bad client_id",
        );
        let mut extra = text.clone();
        extra.push_str("more=1\n");
        expect(extra, "extra lines");
        expect(text.replace("\n", "\r\n"), "");
        assert!(Meta::parse(&[0xff, 0xfe, b'\n']).is_err());
        assert!(Meta::parse(&vec![b'a'; META_MAX + 1]).is_err());
        assert!(Meta::parse(b"").is_err());
    }

    #[test]
    fn names() {
        assert_eq!(file_name(0xab, Part::Mem), "region-00000000000000ab.mem");
        assert_eq!(
            parse_name("region-00000000000000ab.meta"),
            Some((0xab, Part::Meta))
        );
        assert_eq!(
            parse_name("region-ffffffffffffffff.meta.tmp"),
            Some((u64::MAX, Part::MetaTmp))
        );
        for bad in [
            "region-00000000000000AB.mem",
            "region-0000000000000ab.mem",
            "region-000000000000000ab.mem",
            "region-00000000000000ab.memx",
            "region-00000000000000ab",
            "xregion-00000000000000ab.mem",
            "region-+000000000000ab.mem",
            "lock",
            "",
        ] {
            assert_eq!(parse_name(bad), None, "{bad:?}");
        }
    }

    fn file(name: &str, len: u64) -> Listing {
        Listing {
            name: name.into(),
            kind: Kind::File,
            len,
        }
    }

    /// Runs decide over `entries` with metadata contents from `metas`.
    fn run(entries: &[Listing], metas: &[(&str, Vec<u8>)]) -> Vec<Verdict> {
        decide(entries, |name| {
            metas
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, b)| b.clone())
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        })
    }

    fn region(m: &Meta) -> (Vec<Listing>, (String, Vec<u8>)) {
        let meta_name = file_name(m.region_id, Part::Meta);
        (
            vec![
                file(&file_name(m.region_id, Part::Mem), m.map_length),
                file(&meta_name, 200),
            ],
            (meta_name, m.encode().into_bytes()),
        )
    }

    fn why(v: &Verdict) -> &str {
        match v {
            Verdict::Discard { why, .. }
            | Verdict::Ignore { why, .. }
            | Verdict::Unreadable { why, .. } => why,
            Verdict::Restore(_) => "restore",
        }
    }

    #[test]
    fn scan_restores_complete_regions() {
        let a = META;
        let b = Meta {
            client_id: 8,
            region_id: 5,
            length: 4096,
            map_length: 2 << 20,
            epoch: 1,
            queue_count: 1,
            instance: Some(3),
        };
        let (mut entries, ma) = region(&a);
        let (eb, mb) = region(&b);
        entries.extend(eb);
        entries.push(file(LOCK_NAME, 0));
        let metas = [(ma.0.as_str(), ma.1), (mb.0.as_str(), mb.1)];
        assert_eq!(
            run(&entries, &metas),
            vec![Verdict::Restore(b), Verdict::Restore(a)]
        );
        assert_eq!(run(&[file(LOCK_NAME, 0)], &[]), vec![]);
    }

    #[test]
    fn scan_discards_incomplete_and_inconsistent() {
        let m = META;
        let mem = file_name(m.region_id, Part::Mem);
        let meta = file_name(m.region_id, Part::Meta);
        let good = m.encode().into_bytes();
        let one = |entries: Vec<Listing>, bytes: Vec<u8>| -> Verdict {
            let v = run(&entries, &[(meta.as_str(), bytes)]);
            assert_eq!(v.len(), 1, "{v:?}");
            v.into_iter().next().unwrap()
        };
        let discarded = |v: &Verdict, files: &[&str], want: &str| match v {
            Verdict::Discard {
                region_id,
                files: f,
                why,
            } => {
                assert_eq!(*region_id, m.region_id);
                assert_eq!(f, files);
                assert!(why.contains(want), "{why:?} lacks {want:?}");
            }
            other => panic!("{other:?} instead of a discard ({want})"),
        };
        // Lone files.
        discarded(
            &one(vec![file(&mem, m.map_length)], good.clone()),
            &[&mem],
            "metadata missing",
        );
        discarded(
            &one(vec![file(&meta, 100)], good.clone()),
            &[&meta],
            "memory file missing",
        );
        // Wrong size of the memory file.
        discarded(
            &one(
                vec![file(&mem, m.map_length - 4096), file(&meta, 100)],
                good.clone(),
            ),
            &[&meta, &mem],
            "memory file is 4190208 bytes, metadata says 4194304",
        );
        // Corrupt and truncated metadata.
        let mut bad = good.clone();
        bad[20] ^= 1;
        discarded(
            &one(vec![file(&mem, m.map_length), file(&meta, 100)], bad),
            &[&meta, &mem],
            "metadata:",
        );
        discarded(
            &one(
                vec![file(&mem, m.map_length), file(&meta, 10)],
                good[..10].to_vec(),
            ),
            &[&meta, &mem],
            "metadata: ",
        );
        discarded(
            &one(vec![file(&mem, m.map_length), file(&meta, 0)], vec![]),
            &[&meta, &mem],
            "metadata: empty",
        );
        // Metadata of another region under this name.
        let other = Meta { region_id: 99, ..m };
        discarded(
            &one(
                vec![file(&mem, m.map_length), file(&meta, 100)],
                other.encode().into_bytes(),
            ),
            &[&meta, &mem],
            "metadata names region 0000000000000063",
        );
        // Not regular files.
        let link = Listing {
            kind: Kind::Other,
            ..file(&mem, m.map_length)
        };
        discarded(
            &one(vec![link, file(&meta, 100)], good.clone()),
            &[&meta, &mem],
            "not a regular file",
        );
        // Metadata gone since the listing.
        let v = run(&[file(&mem, m.map_length), file(&meta, 100)], &[]);
        discarded(&v[0], &[&meta, &mem], "removed during the scan");
    }

    /// Metadata that cannot be read for a reason that says nothing about the region
    /// (too many open files, an I/O error): the region is kept, not discarded.
    #[test]
    fn unreadable_metadata_keeps_the_region() {
        let m = META;
        let (mem, meta) = (
            file_name(m.region_id, Part::Mem),
            file_name(m.region_id, Part::Meta),
        );
        for errno in [
            libc::EMFILE,
            libc::ENFILE,
            libc::EIO,
            libc::ENOMEM,
            libc::EACCES,
        ] {
            let v = decide(&[file(&mem, m.map_length), file(&meta, 100)], |_| {
                Err(io::Error::from_raw_os_error(errno))
            });
            match v.as_slice() {
                [Verdict::Unreadable {
                    region_id,
                    name,
                    why,
                }] => {
                    assert_eq!((*region_id, name.as_str()), (m.region_id, meta.as_str()));
                    assert_eq!(why, &io::Error::from_raw_os_error(errno).to_string());
                }
                other => panic!("errno {errno}: {other:?}"),
            }
        }
    }

    #[test]
    fn metadata_reads_are_retried() {
        let eio = || io::Error::from_raw_os_error(libc::EIO);
        // Fails twice, then reads: three tries, two pauses.
        let (mut calls, mut pauses) = (0, 0);
        let r = retrying(
            3,
            || pauses += 1,
            || {
                calls += 1;
                if calls < 3 {
                    Err(eio())
                } else {
                    Ok(7)
                }
            },
        );
        assert_eq!((r.ok(), calls, pauses), (Some(7), 3, 2));
        // Always fails: gives up after the tries, with the error.
        let (mut calls, mut pauses) = (0, 0);
        let r: io::Result<()> = retrying(
            3,
            || pauses += 1,
            || {
                calls += 1;
                Err(eio())
            },
        );
        assert_eq!(
            (r.map_err(|e| e.raw_os_error()), calls, pauses),
            (Err(Some(libc::EIO)), 3, 2)
        );
        // Gone: no retry.
        let mut calls = 0;
        let r: io::Result<()> = retrying(
            3,
            || {},
            || {
                calls += 1;
                Err(io::Error::from(io::ErrorKind::NotFound))
            },
        );
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }

    #[test]
    fn scan_tmp_files_strangers_and_duplicates() {
        let a = META;
        let b = Meta {
            region_id: 42,
            ..META
        };
        let c = Meta {
            client_id: 1,
            region_id: 43,
            ..META
        };
        let (mut entries, ma) = region(&a);
        let (eb, mb) = region(&b);
        let (ec, mc) = region(&c);
        entries.extend(eb);
        entries.extend(ec);
        let tmp = file_name(c.region_id, Part::MetaTmp);
        entries.push(file(&tmp, 3));
        entries.push(file("notes.txt", 3));
        entries.push(Listing {
            name: file_name(77, Part::Mem),
            kind: Kind::Dir,
            len: 0,
        });
        let metas = [
            (ma.0.as_str(), ma.1),
            (mb.0.as_str(), mb.1),
            (mc.0.as_str(), mc.1),
        ];
        let v = run(&entries, &metas);
        let whys: Vec<&str> = v.iter().map(why).collect();
        assert_eq!(
            whys,
            [
                "not a region file",
                "a directory",
                "client_id 7 has more than one region",
                "unfinished metadata update",
                "client_id 7 has more than one region",
                "restore"
            ],
            "{v:?}"
        );
        assert_eq!(v[5], Verdict::Restore(c));
        assert!(
            matches!(&v[3], Verdict::Discard { files, .. } if files == std::slice::from_ref(&tmp))
        );
        // Region id 0 in the file names is never served.
        let zero = Meta {
            region_id: 0,
            ..META
        };
        let entries = [
            file(&file_name(0, Part::Mem), zero.map_length),
            file(&file_name(0, Part::Meta), 100),
        ];
        let v = run(&entries, &[]);
        assert_eq!(v.len(), 1);
        assert_eq!(why(&v[0]), "region id 0");
    }

    /// A scratch directory under the system temp dir, removed on drop.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new(tag: &str) -> Self {
            let p = std::env::temp_dir().join(format!(
                "rswap-store-{tag}-{}-{:x}",
                std::process::id(),
                random_u64()
            ));
            Self(p)
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_state_dir_must_be_the_servers_own() {
        assert_eq!(check_dir_owner(1000, 0o40700, 1000, "d"), Ok(()));
        assert_eq!(check_dir_owner(0, 0o40755, 0, "d"), Ok(()));
        assert_eq!(check_dir_owner(0, 0o41700, 0, "d"), Ok(()));
        let e = check_dir_owner(1000, 0o40700, 0, "/run/x").expect_err("foreign");
        assert!(
            e.contains("/run/x belongs to uid 1000, not to the server's user (uid 0)"),
            "{e}"
        );
        for mode in [0o40720, 0o40702, 0o40777, 0o41777] {
            let e = check_dir_owner(0, mode, 0, "/run/x").expect_err("writable");
            assert!(e.contains(&format!("mode {:04o}", mode & 0o7777)), "{e}");
            assert!(e.contains("chmod 700 /run/x"), "{e}");
        }
        // On disk: a directory others may write to is refused, and left as it is.
        let dir = Scratch::new("mode");
        fs::DirBuilder::new().mode(0o700).create(&dir.0).unwrap();
        fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o777)).unwrap();
        let e = Store::open(&dir.0).err().expect("opened");
        assert!(e.contains("mode 0777"), "{e}");
        assert!(!dir.0.join(LOCK_NAME).exists());
        fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o700)).unwrap();
        assert!(Store::open(&dir.0).is_ok());
    }

    #[test]
    fn store_on_disk() {
        let dir = Scratch::new("disk");
        let store = Store::open(&dir.0).expect("open");
        // A second server cannot use the same directory.
        let e = Store::open(&dir.0).err().expect("second open succeeded");
        assert!(e.contains("in use by another rswap-server"), "{e}");
        let m = Meta {
            length: 8192,
            map_length: 8192,
            ..META2
        };
        let f = store
            .create_memory(m.region_id, m.map_length)
            .expect("create");
        assert_eq!(f.metadata().unwrap().len(), 8192);
        // O_EXCL: the same id cannot be created twice.
        let e = store
            .create_memory(m.region_id, 4096)
            .expect_err("created twice");
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        // No metadata yet: an unfinished creation.
        let v = store.scan().unwrap();
        assert_eq!(v.len(), 1);
        assert!(why(&v[0]).contains("metadata missing"), "{v:?}");
        store.write_meta(&m).expect("meta");
        let later = Meta { epoch: 4, ..m };
        // A region restored from a format-1 file, then claimed: written in format 2.
        let old = Meta {
            instance: None,
            ..m
        };
        store.write_meta(&old).expect("meta, format 1");
        assert_eq!(
            store.scan().unwrap(),
            vec![Verdict::Restore(old)],
            "format 1 is restored"
        );
        store.write_meta(&later).expect("meta again");
        fs::write(dir.0.join("stray"), b"x").unwrap();
        let v = store.scan().unwrap();
        assert_eq!(
            v,
            vec![
                Verdict::Ignore {
                    name: "stray".into(),
                    why: "not a region file".into()
                },
                Verdict::Restore(later)
            ]
        );
        assert!(store.open_memory(m.region_id, 8192).is_ok());
        assert!(store.open_memory(m.region_id, 4096).is_err());
        store.remove_region(m.region_id).expect("remove");
        let names: Vec<String> = fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(names, ["lock", "stray"]);
        store
            .remove_files(&["stray".into(), "gone".into()])
            .unwrap();
        drop(store);
        // The lock goes with the store.
        assert!(Store::open(&dir.0).is_ok());
    }
}
