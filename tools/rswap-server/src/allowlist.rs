// SPDX-License-Identifier: GPL-2.0

//! The allow-list (`rswap-server --allow-list FILE`): which client ids may connect,
//! with which secret, from which addresses.
//!
//! One client per line, `CLIENT_ID SECRET [ADDR[,ADDR...]]`, fields separated by
//! spaces or tabs; `#` starts a comment, blank lines are skipped. CLIENT_ID is decimal
//! or `0x` hex and not 0; SECRET is 32 to 128 hex digits (16 to 64 bytes); the
//! optional third field lists the IPv4 or IPv6 addresses the client may connect from
//! (any address when it is absent). The file holds secrets, so it must not be
//! readable or writable by group or others, and no error message ever quotes a field
//! of it: a line that is wrong is named by its number and what is wrong with it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read as _;
use std::net::IpAddr;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use zeroize::Zeroizing;

use crate::config::parse_id;
use crate::crypto::Secret;

/// An allow-list file is never larger than this (about 4000 lines of the longest
/// kind); a larger one is refused rather than read.
const FILE_MAX: u64 = 1 << 20;

/// The permission bits of group and others: none may be set on the file.
const GROUP_OTHER_BITS: u32 = 0o077;

/// One client of the allow-list.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The client id (never 0).
    pub(crate) client_id: u64,
    /// The client's secret.
    pub(crate) secret: Secret,
    /// The addresses the client may connect from (IPv4-mapped IPv6 addresses as
    /// IPv4); `None`: any.
    pub(crate) addrs: Option<Vec<IpAddr>>,
    /// The line it was read from, for duplicate reports.
    line: usize,
}

impl Entry {
    /// Whether the client may connect from `peer` (`None`: the connection's address is
    /// not IP, which only an entry without addresses admits).
    pub(crate) fn admits(&self, peer: Option<IpAddr>) -> bool {
        match (&self.addrs, peer) {
            (None, _) => true,
            (Some(list), Some(ip)) => list.contains(&ip.to_canonical()),
            (Some(_), None) => false,
        }
    }
}

/// What changed from one allow-list to the next, by client id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    /// Listed now, not before.
    pub(crate) added: Vec<u64>,
    /// Listed before, not now.
    pub(crate) removed: Vec<u64>,
    /// Listed in both, with another secret or other addresses.
    pub(crate) changed: Vec<u64>,
}

/// The clients of an allow-list, by client id.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowList {
    entries: BTreeMap<u64, Entry>,
}

/// Parses the third field: comma-separated addresses. The error names the position
/// of a bad address, never its text.
fn parse_addrs(field: &str) -> Result<Vec<IpAddr>, String> {
    let mut out = Vec::new();
    for (i, a) in field.split(',').enumerate() {
        if a.is_empty() {
            return Err(format!("address {} of the list is empty", i + 1));
        }
        let ip: IpAddr = a.parse().map_err(|_| {
            format!(
                "address {} of the list is not an IPv4 or IPv6 address (no port, no zone)",
                i + 1
            )
        })?;
        let ip = ip.to_canonical();
        if !out.contains(&ip) {
            out.push(ip);
        }
    }
    Ok(out)
}

/// Parses one line with content (comments stripped, not blank) into an entry.
fn parse_line(content: &str, line: usize) -> Result<Entry, String> {
    let fields: Vec<&str> = content.split_ascii_whitespace().collect();
    let (id, secret, addrs) = match fields.as_slice() {
        [id, secret] => (id, secret, None),
        [id, secret, addrs] => (id, secret, Some(addrs)),
        other => {
            return Err(format!(
                "expected CLIENT_ID SECRET [ADDR[,ADDR...]], found {} fields",
                other.len()
            ))
        }
    };
    let client_id = parse_id(id).ok_or("the client id is not a decimal or 0x-hex 64-bit number")?;
    if client_id == 0 {
        return Err("client id 0 is not allowed".into());
    }
    let secret = Secret::from_hex(secret).map_err(|e| e.to_string())?;
    let addrs = addrs.map(|a| parse_addrs(a)).transpose()?;
    Ok(Entry {
        client_id,
        secret,
        addrs,
        line,
    })
}

impl AllowList {
    /// Parses the text of an allow-list; `name` (the file's name) starts every error
    /// message, as `NAME:LINE: what is wrong`.
    pub(crate) fn parse(text: &str, name: &str) -> Result<Self, String> {
        let mut entries: BTreeMap<u64, Entry> = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let content = raw.split_once('#').map_or(raw, |(before, _)| before);
            if content.trim_ascii().is_empty() {
                continue;
            }
            let entry = parse_line(content, line).map_err(|e| format!("{name}:{line}: {e}"))?;
            if let Some(first) = entries.get(&entry.client_id) {
                return Err(format!(
                    "{name}:{line}: client id {} is listed twice (first on line {})",
                    entry.client_id, first.line
                ));
            }
            entries.insert(entry.client_id, entry);
        }
        Ok(Self { entries })
    }

    /// Reads and parses the allow-list file at `path`, after checking that it is a
    /// regular file that group and others can neither read nor write.
    pub(crate) fn load(path: &Path) -> Result<Self, String> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| format!("{name}: cannot open: {e}"))?;
        let md = file
            .metadata()
            .map_err(|e| format!("{name}: cannot stat: {e}"))?;
        if !md.is_file() {
            return Err(format!("{name}: not a regular file"));
        }
        check_mode(md.mode(), &name)?;
        if md.len() > FILE_MAX {
            return Err(format!("{name}: larger than {FILE_MAX} bytes"));
        }
        // The file holds every secret in hex: its bytes are wiped once parsed (room for
        // all of it up front, so that reading does not leave copies behind).
        let room = usize::try_from(md.len()).unwrap_or(0).saturating_add(1);
        let mut bytes = Zeroizing::new(Vec::with_capacity(room));
        file.take(FILE_MAX + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{name}: cannot read: {e}"))?;
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > FILE_MAX {
            return Err(format!("{name}: larger than {FILE_MAX} bytes"));
        }
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            let at = e.valid_up_to();
            let line = bytes
                .get(..at)
                .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
                + 1;
            format!("{name}:{line}: not UTF-8 text")
        })?;
        Self::parse(text, &name)
    }

    /// The entry of `client_id`, if it is listed.
    pub(crate) fn get(&self, client_id: u64) -> Option<&Entry> {
        self.entries.get(&client_id)
    }

    /// How many clients are listed.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// What changed from `self` to `new` (secrets compared in constant time).
    pub(crate) fn changes(&self, new: &Self) -> Changes {
        let mut c = Changes::default();
        for (id, e) in &new.entries {
            match self.entries.get(id) {
                None => c.added.push(*id),
                Some(old) if !old.secret.ct_eq(&e.secret) || old.addrs != e.addrs => {
                    c.changed.push(*id);
                }
                Some(_) => {}
            }
        }
        c.removed = self
            .entries
            .keys()
            .filter(|id| !new.entries.contains_key(id))
            .copied()
            .collect();
        c
    }
}

/// Refuses a file mode that lets group or others read, write or execute the file
/// (`mode & 0o077 != 0`), as ssh does with private keys.
pub(crate) fn check_mode(mode: u32, name: &str) -> Result<(), String> {
    if mode & GROUP_OTHER_BITS != 0 {
        return Err(format!(
            "{name}: the allow-list holds secrets but its mode {:04o} lets group or others access it; run: chmod 600 {name}",
            mode & 0o7777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    const S1: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const S2: &str = "5ec2e75ec2e75ec2e75ec2e75ec2e75e";

    #[test]
    fn changes_from_one_list_to_the_next() {
        let old = parse(&format!("1 {S1}\n2 {S1}\n3 {S1} 192.0.2.3\n4 {S2}\n")).expect("old");
        let new = parse(&format!("1 {S1}\n2 {S2}\n3 {S1} 192.0.2.4\n5 {S1}\n")).expect("new");
        assert_eq!(
            old.changes(&new),
            Changes {
                added: vec![5],
                removed: vec![4],
                changed: vec![2, 3],
            }
        );
        assert_eq!(new.changes(&new), Changes::default());
        assert_eq!(AllowList::default().changes(&old).added, vec![1, 2, 3, 4]);
    }

    fn parse(text: &str) -> Result<AllowList, String> {
        AllowList::parse(text, "allow")
    }

    #[test]
    fn good_file() {
        let text = format!(
            "# rswap clients\n\
             \n\
             1 {S1}\n\
             \t0x10\t{S2}  192.0.2.7,2001:db8::1 # the second host\n\
             18446744073709551615 {} ::ffff:198.51.100.3,198.51.100.4,198.51.100.4\r\n\
             # the end\n",
            "AB".repeat(64)
        );
        let l = parse(&text).expect("parses");
        assert_eq!(l.len(), 3);
        let e1 = l.get(1).expect("client 1");
        assert!(e1.secret.ct_eq(&Secret::from_hex(S1).expect("hex")));
        assert_eq!(e1.addrs, None);
        assert!(e1.admits(Some("203.0.113.9".parse().expect("ip"))));
        assert!(e1.admits(None));
        let e16 = l.get(16).expect("client 0x10");
        assert_eq!(
            e16.addrs,
            Some(vec![
                "192.0.2.7".parse().expect("ip"),
                "2001:db8::1".parse().expect("ip")
            ])
        );
        assert!(e16.admits(Some("192.0.2.7".parse().expect("ip"))));
        assert!(e16.admits(Some("::ffff:192.0.2.7".parse().expect("ip"))));
        assert!(e16.admits(Some("2001:db8::1".parse().expect("ip"))));
        assert!(!e16.admits(Some("192.0.2.8".parse().expect("ip"))));
        assert!(!e16.admits(None));
        let emax = l.get(u64::MAX).expect("client u64::MAX");
        // IPv4-mapped addresses are kept as IPv4; duplicates once.
        assert_eq!(
            emax.addrs,
            Some(vec![
                "198.51.100.3".parse().expect("ip"),
                "198.51.100.4".parse().expect("ip")
            ])
        );
        assert!(emax.admits(Some("198.51.100.3".parse().expect("ip"))));
        assert!(l.get(2).is_none());
        // Nothing but comments: an empty list.
        assert_eq!(parse("# none\n\n   \n").map(|l| l.len()), Ok(0));
        assert_eq!(parse("").map(|l| l.len()), Ok(0));
    }

    /// The example of `Documentation/memory-server.md`.
    #[test]
    fn doc_example() {
        let text = "\
# /etc/rswap/allow-list
# client id  secret                                                            addresses
0x5501       3f9c2d4e8a1b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d  192.0.2.11
0x5502       8e21f0a9b8c7d6e5f4a3b2c1d0e9f8a7                                  192.0.2.12,2001:db8::12
7            c0ffeec0ffeec0ffeec0ffeec0ffee00                                  # from anywhere
";
        let l = parse(text).expect("the documented example parses");
        assert_eq!(l.len(), 3);
        assert_eq!(
            l.get(0x5501).map(|e| e.addrs.as_ref().map(Vec::len)),
            Some(Some(1))
        );
        assert_eq!(
            l.get(0x5502).map(|e| e.addrs.as_ref().map(Vec::len)),
            Some(Some(2))
        );
        assert_eq!(l.get(7).map(|e| e.addrs.is_none()), Some(true));
        // Its error examples.
        let e = parse(&format!("1 {S1}\n2 {S2}\n3 {}\n", &S1[..30])).expect_err("short");
        assert_eq!(
            e,
            "allow:3: the secret has 30 hex digits; it must be 16 to 64 bytes (32 to 128 hex digits, an even number)"
        );
    }

    /// Every kind of bad line: the message names the file and line and what is wrong,
    /// and never quotes the line.
    #[test]
    fn bad_lines() {
        let cases: &[(String, &str)] = &[
            ("1".to_string(), "found 1 fields"),
            (format!("1 {S1} 192.0.2.1 extra"), "found 4 fields"),
            (format!("x1 {S1}"), "client id is not a decimal or 0x-hex"),
            (format!("0x {S1}"), "client id is not a decimal or 0x-hex"),
            (format!("-1 {S1}"), "client id is not a decimal or 0x-hex"),
            (
                format!("18446744073709551616 {S1}"),
                "client id is not a decimal or 0x-hex",
            ),
            (format!("0 {S1}"), "client id 0 is not allowed"),
            (format!("0x0 {S1}"), "client id 0 is not allowed"),
            (format!("1 {}", &S1[..30]), "30 hex digits"),
            (format!("1 {S1}{S1}ab"), "130 hex digits"),
            (format!("1 {S1}a"), "65 hex digits"),
            (format!("1 {}zz", &S1[..62]), "not hexadecimal"),
            (format!("1 0x{}", &S1[..62]), "not hexadecimal"),
            (
                format!("1 {S1} 192.0.2.1,"),
                "address 2 of the list is empty",
            ),
            (
                format!("1 {S1} ,192.0.2.1"),
                "address 1 of the list is empty",
            ),
            (
                format!("1 {S1} 192.0.2.1,host"),
                "address 2 of the list is not",
            ),
            (
                format!("1 {S1} 192.0.2.1:7471"),
                "address 1 of the list is not",
            ),
            (format!("1 {S1} fe80::1%2"), "address 1 of the list is not"),
            (
                format!("1 {S1} 192.0.2.256"),
                "address 1 of the list is not",
            ),
        ];
        for (line, want) in cases {
            let text = format!("# header\n\n2 {S2}\n{line}\n");
            let e = parse(&text).expect_err(line);
            assert!(e.starts_with("allow:4: "), "{line:?}: {e:?}");
            assert!(e.contains(want), "{line:?}: {e:?} lacks {want:?}");
            assert!(!e.contains(&S1[..32]) && !e.contains(S2), "secret in {e:?}");
            assert!(!e.contains('\n'), "{e:?}");
        }
        // A duplicate id, however written.
        let e = parse(&format!("1 {S1}\n# c\n0x01 {S2}\n")).expect_err("duplicate");
        assert_eq!(e, "allow:3: client id 1 is listed twice (first on line 1)");
    }

    /// A secret put in the id's place (columns swapped) is not quoted either.
    #[test]
    fn secrets_never_in_errors() {
        for text in [
            format!("{S2} 1"),
            format!("{S2} {S2} 1"),
            format!("1 {S2} {S2}"),
            format!("1 {S2},{S2}"),
        ] {
            let e = parse(&text).expect_err(&text);
            assert!(!e.contains("5ec2"), "{e:?}");
        }
    }

    #[test]
    fn mode_check() {
        assert!(check_mode(0o100600, "f").is_ok());
        assert!(check_mode(0o100400, "f").is_ok());
        assert!(check_mode(0o100700, "f").is_ok());
        for bad in [
            0o100644, 0o100640, 0o100604, 0o100620, 0o100602, 0o100610, 0o100601,
        ] {
            let e = check_mode(bad, "/etc/rswap/allow").expect_err("accepted");
            assert!(e.contains("group or others"), "{e}");
            assert!(e.contains("chmod 600 /etc/rswap/allow"), "{e}");
            assert!(e.contains(&format!("{:04o}", bad & 0o7777)), "{e}");
        }
    }

    /// A scratch file, removed on drop.
    struct Scratch(std::path::PathBuf);
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn load_checks_mode_and_reports_lines() {
        let path = std::env::temp_dir().join(format!(
            "rswap-allow-{}-{:x}",
            std::process::id(),
            crate::crypto::random_u64().expect("getrandom")
        ));
        let f = Scratch(path.clone());
        std::fs::write(&f.0, format!("7 {S1} 192.0.2.1\n")).expect("write");
        let set = |mode| {
            std::fs::set_permissions(&f.0, std::fs::Permissions::from_mode(mode)).expect("chmod")
        };
        set(0o644);
        let e = AllowList::load(&f.0).expect_err("0644 accepted");
        assert!(e.contains("group or others") && e.contains("0644"), "{e}");
        set(0o600);
        let l = AllowList::load(&f.0).expect("loads");
        assert_eq!(l.len(), 1);
        assert!(l.get(7).is_some());
        std::fs::write(&f.0, format!("7 {S1}\n8 {S2}\n\n9 nothex\n")).expect("write");
        let e = AllowList::load(&f.0).expect_err("bad line accepted");
        assert!(e.starts_with(&format!("{}:4: ", path.display())), "{e}");
        std::fs::write(&f.0, b"7 x\n\xff\n").expect("write");
        let e = AllowList::load(&f.0).expect_err("binary accepted");
        assert!(e.ends_with(":2: not UTF-8 text"), "{e}");
        let dir = std::env::temp_dir();
        assert!(AllowList::load(&dir).is_err());
        let e = AllowList::load(Path::new("/nonexistent/rswap-allow")).expect_err("missing");
        assert!(e.contains("cannot open"), "{e}");
    }
}
