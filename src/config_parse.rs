// SPDX-License-Identifier: GPL-2.0

//! Parsing of configfs values. Pure logic (only `core`), shared with the host unit tests
//! (`tests/unit`), so every rule below is tested without a kernel.

/// Why a value was refused (the text goes into the kernel log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Invalid(pub(crate) &'static str);

/// The value as text: UTF-8, one trailing newline allowed, not empty.
pub(crate) fn text(page: &[u8]) -> Result<&str, Invalid> {
    let s = core::str::from_utf8(page).map_err(|_| Invalid("not UTF-8 text"))?;
    let s = s.strip_suffix('\n').unwrap_or(s).trim();
    if s.is_empty() {
        return Err(Invalid("empty value"));
    }
    Ok(s)
}

/// An unsigned decimal number within `min..=max`.
pub(crate) fn number(s: &str, min: u64, max: u64) -> Result<u64, Invalid> {
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Invalid("not a decimal number"));
    }
    let v: u64 = s.parse().map_err(|_| Invalid("number too large"))?;
    if v < min || v > max {
        return Err(Invalid("number out of range"));
    }
    Ok(v)
}

/// A keep-alive period in milliseconds: 0 (off) or 1000..=600000. Shorter periods are
/// refused: one lost packet costs the transport about half a second to resend.
pub(crate) fn keepalive_ms(s: &str) -> Result<u64, Invalid> {
    match number(s, 0, 600_000)? {
        1..=999 => Err(Invalid("below 1000 ms (0 turns the keep-alive off)")),
        v => Ok(v),
    }
}

/// A client id: decimal, or hexadecimal with `0x`; not zero.
pub(crate) fn client_id(s: &str) -> Result<u64, Invalid> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        // `from_str_radix` alone would take a sign ("0x+1").
        Some(hex)
            if !hex.is_empty() && hex.len() <= 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            u64::from_str_radix(hex, 16).map_err(|_| Invalid("not a hexadecimal number"))?
        }
        Some(_) => return Err(Invalid("not a hexadecimal number")),
        None => number(s, 0, u64::MAX)?,
    };
    if v == 0 {
        return Err(Invalid("client id 0 is reserved"));
    }
    Ok(v)
}

/// The smallest and largest remote size accepted.
pub(crate) const MIN_SIZE: u64 = 1 << 20;
/// See [`MIN_SIZE`].
pub(crate) const MAX_SIZE: u64 = 1 << 40;

/// A size in bytes with an optional binary suffix (K, M, G, T), a multiple of 4 KiB,
/// between [`MIN_SIZE`] and [`MAX_SIZE`].
pub(crate) fn size(s: &str) -> Result<u64, Invalid> {
    let (digits, shift) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 10),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 20),
        Some(b'g' | b'G') => (&s[..s.len() - 1], 30),
        Some(b't' | b'T') => (&s[..s.len() - 1], 40),
        _ => (s, 0),
    };
    if digits.is_empty() {
        return Err(Invalid("not a size (e.g. 512M)"));
    }
    let n = number(digits, 0, u64::MAX).map_err(|_| Invalid("not a size (e.g. 512M)"))?;
    let bytes = n
        .checked_shl(shift)
        .filter(|b| b >> shift == n)
        .ok_or(Invalid("size too large"))?;
    if bytes % 4096 != 0 {
        return Err(Invalid("size must be a multiple of 4096"));
    }
    if !(MIN_SIZE..=MAX_SIZE).contains(&bytes) {
        return Err(Invalid("size must be between 1M and 1T"));
    }
    Ok(bytes)
}

/// `0`/`1` (also `n`/`y`, `off`/`on`).
pub(crate) fn boolean(s: &str) -> Result<bool, Invalid> {
    match s {
        "1" | "y" | "Y" | "on" | "yes" => Ok(true),
        "0" | "n" | "N" | "off" | "no" => Ok(false),
        _ => Err(Invalid("not a boolean (0 or 1)")),
    }
}

/// Most servers a target names in `servers`, and most entries of any list setting: the
/// legs of the widest code (8 + 2).
pub(crate) const MAX_SERVERS: usize = 10;

/// The entries of a comma-separated list: 1 to [`MAX_SERVERS`], none empty, each without
/// the spaces around it.
pub(crate) fn list(s: &str) -> Result<impl Iterator<Item = &str>, Invalid> {
    if s.split(',').any(|e| e.trim().is_empty()) {
        return Err(Invalid("an empty entry in the list"));
    }
    if s.split(',').count() > MAX_SERVERS {
        return Err(Invalid("more than 10 entries"));
    }
    Ok(s.split(',').map(str::trim))
}

/// One server of a list: `HOST`, `HOST:PORT`, `[IPV6]` or `[IPV6]:PORT` (an IPv6 address
/// with a port is in brackets; one without may be bare). Returns the host's text, which
/// the caller parses as an address, and the port if the entry gives one (1 to 65535).
pub(crate) fn server_entry(s: &str) -> Result<(&str, Option<u16>), Invalid> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or(Invalid(
            "an IPv6 address opened with '[' is closed with ']'",
        ))?;
        match after {
            "" => (host, None),
            _ => (
                host,
                Some(
                    after
                        .strip_prefix(':')
                        .ok_or(Invalid("after an IPv6 address in brackets comes :PORT"))?,
                ),
            ),
        }
    } else {
        match s.split_once(':') {
            Some((host, port)) if !port.contains(':') => (host, Some(port)),
            _ => (s, None),
        }
    };
    if host.is_empty() {
        return Err(Invalid("a server with no address"));
    }
    let port = match port {
        Some(p) => Some(
            u16::try_from(number(p, 1, 65535).map_err(|_| Invalid("a port is 1 to 65535"))?)
                .map_err(|_| Invalid("a port is 1 to 65535"))?,
        ),
        None => None,
    };
    Ok((host, port))
}

/// What `replace` takes: `LEG SERVER`, a leg number (below [`MAX_SERVERS`]) and one
/// server as a list of servers gives it (see [`server_entry`]), which is returned
/// unparsed.
pub(crate) fn replacement(s: &str) -> Result<(usize, &str), Invalid> {
    const USAGE: Invalid = Invalid("LEG SERVER: a leg number and the server to put in its place");
    let mut words = s.split_whitespace();
    let (Some(leg), Some(server), None) = (words.next(), words.next(), words.next()) else {
        return Err(USAGE);
    };
    let leg = number(leg, 0, MAX_SERVERS as u64 - 1).map_err(|_| Invalid("a leg is 0 to 9"))?;
    Ok((leg as usize, server))
}

/// Shortest secret, in bytes (the wire format's `SECRET_MIN_LEN`).
pub(crate) const SECRET_MIN: usize = 16;
/// Longest secret, in bytes (the wire format's `SECRET_MAX_LEN`).
pub(crate) const SECRET_MAX: usize = 64;

/// A client's secret: the key both ends of the authentication use. Its bytes are wiped
/// when it is dropped, and its `Debug` form does not show them.
#[derive(Clone)]
pub(crate) struct Secret {
    bytes: [u8; SECRET_MAX],
    len: usize,
}

impl Secret {
    /// The secret's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&[])
    }
}

impl core::fmt::Debug for Secret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Secret({} bytes)", self.len)
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.bytes.fill(0);
        // Keeps the wipe of memory that is about to die from being optimised away.
        core::hint::black_box(&self.bytes);
    }
}

impl Secret {
    /// A secret of the bytes `fill` writes at the start of a buffer of [`SECRET_MAX`]
    /// bytes (the secret's own: nothing else holds a copy); `fill` returns how many bytes
    /// the secret is, which may be more than it could write. Refused unless 16 to 64.
    /// Used for a key's payload (see [`key_description`]).
    pub(crate) fn read(
        fill: impl FnOnce(&mut [u8]) -> Result<usize, Invalid>,
    ) -> Result<Secret, Invalid> {
        let mut out = Secret {
            bytes: [0; SECRET_MAX],
            len: 0,
        };
        let len = fill(&mut out.bytes)?;
        if !(SECRET_MIN..=SECRET_MAX).contains(&len) {
            // `out` is dropped: what `fill` wrote is wiped.
            return Err(Invalid("the key's payload is not 16 to 64 bytes"));
        }
        out.len = len;
        Ok(out)
    }
}

/// What a secret naming a key starts with: `key:DESCRIPTION`.
pub(crate) const KEY_PREFIX: &str = "key:";

/// The description of the key that `s` names (`key:DESCRIPTION`), or `None` if `s` does
/// not start with `key:`. A `logon` key's description is qualified, `PREFIX:NAME` (a `:`
/// after at least one character), as the kernel requires of that key type.
pub(crate) fn key_description(s: &str) -> Option<Result<&str, Invalid>> {
    let desc = s.strip_prefix(KEY_PREFIX)?;
    Some(match desc.find(':') {
        _ if desc.is_empty() => Err(Invalid("key: names no key (key:DESCRIPTION)")),
        _ if desc.contains('\0') => Err(Invalid("a key's description has a NUL character")),
        // A list of secrets is split at commas (`secrets`): no key's name has one.
        _ if desc.contains(',') => Err(Invalid("a key's description has a ','")),
        Some(0) | None => Err(Invalid(
            "a logon key's description is PREFIX:NAME (a ':' after at least one character)",
        )),
        Some(_) => Ok(desc),
    })
}

/// A secret written as hexadecimal digits: 16 to 64 bytes (32 to 128 digits), upper or
/// lower case.
pub(crate) fn secret(s: &str) -> Result<Secret, Invalid> {
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Invalid("a secret is hexadecimal digits"));
    }
    let (len, odd) = (s.len() / 2, s.len() & 1);
    if odd != 0 {
        return Err(Invalid("a secret has an even number of hexadecimal digits"));
    }
    if !(SECRET_MIN..=SECRET_MAX).contains(&len) {
        return Err(Invalid(
            "a secret is 16 to 64 bytes (32 to 128 hexadecimal digits)",
        ));
    }
    let mut out = Secret {
        bytes: [0; SECRET_MAX],
        len,
    };
    for (dst, pair) in out.bytes.iter_mut().zip(s.as_bytes().chunks_exact(2)) {
        let digits = core::str::from_utf8(pair).map_err(|_| Invalid("not hexadecimal"))?;
        *dst = u8::from_str_radix(digits, 16).map_err(|_| Invalid("not hexadecimal"))?;
    }
    Ok(out)
}

/// An erasure code `k + r`: k data fragments and r parity fragments a block.
///
/// # Invariants
///
/// `k` is 1, 2, 4 or 8 and `r` is 0, 1 or 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Code {
    k: u8,
    r: u8,
}

impl Code {
    /// The plain disk: one server, no parity.
    pub(crate) const PLAIN: Self = Self { k: 1, r: 0 };

    /// `K+R` (e.g. `4+2`): k of 1, 2, 4 or 8 (a fragment is then a multiple of 512
    /// bytes, as the RAID-6 library needs), r of 0, 1 or 2.
    pub(crate) fn parse(s: &str) -> Result<Self, Invalid> {
        let (k, r) = s
            .split_once('+')
            .ok_or(Invalid("not a code (K+R, e.g. 4+2)"))?;
        let k = number(k, 0, 255).map_err(|_| Invalid("not a code (K+R, e.g. 4+2)"))?;
        let r = number(r, 0, 255).map_err(|_| Invalid("not a code (K+R, e.g. 4+2)"))?;
        let k = match k {
            1 | 2 | 4 | 8 => k as u8,
            _ => return Err(Invalid("k must be 1, 2, 4 or 8")),
        };
        let r = match r {
            0..=2 => r as u8,
            _ => return Err(Invalid("r must be 0, 1 or 2")),
        };
        // INVARIANT: checked just above.
        Ok(Self { k, r })
    }

    /// Data fragments a block.
    pub(crate) fn k(self) -> u8 {
        self.k
    }

    /// Parity fragments a block.
    pub(crate) fn r(self) -> u8 {
        self.r
    }

    /// Legs (servers): k + r.
    pub(crate) fn legs(self) -> u8 {
        self.k + self.r
    }
}

impl core::fmt::Display for Code {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}+{}", self.k, self.r)
    }
}

/// Why a target's servers, secrets and code do not fit together: `enable` refuses it
/// with this text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LegsRefusal {
    /// Neither `addr` nor `servers` is set.
    NoServer,
    /// Both `addr` and `servers` are set.
    AddrAndServers,
    /// `servers` has not k + r entries (`given` 0: the target has `addr` only).
    ServerCount { code: Code, given: usize },
    /// `secrets` has another number of entries than the code has legs.
    SecretCount { need: u8, given: usize },
    /// `extra_reads` is more than the code's parity fragments.
    ExtraReads { extra: u8, code: Code },
}

impl core::fmt::Display for LegsRefusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Self::NoServer => write!(f, "set addr (or servers) first"),
            Self::AddrAndServers => write!(f, "set addr (one server) or servers, not both"),
            Self::ServerCount { code, given: 0 } => {
                write!(f, "code {} needs {} servers in servers", code, code.legs())
            }
            Self::ServerCount { code, given } => {
                write!(
                    f,
                    "code {} needs {} servers, {} given",
                    code,
                    code.legs(),
                    given
                )
            }
            Self::SecretCount { need, given } => {
                write!(f, "secrets: {} entries needed, {} given", need, given)
            }
            Self::ExtraReads { extra, code } => write!(
                f,
                "extra_reads {} is more than the {} parity fragments of code {}",
                extra,
                code.r(),
                code
            ),
        }
    }
}

/// What `enable` checks of a target's servers: `addr_set` (whether `addr` is set), the
/// entries of `servers` and of `secrets`, and `extra_reads` (ignored for a code without
/// parity). Returns the number of legs.
pub(crate) fn check_legs(
    code: Code,
    addr_set: bool,
    servers: usize,
    secrets: usize,
    extra_reads: u8,
) -> Result<u8, LegsRefusal> {
    let legs = code.legs();
    match (addr_set, servers) {
        (false, 0) => return Err(LegsRefusal::NoServer),
        (true, 1..) => return Err(LegsRefusal::AddrAndServers),
        _ => {}
    }
    if servers != usize::from(legs) && !(servers == 0 && legs == 1) {
        return Err(LegsRefusal::ServerCount {
            code,
            given: servers,
        });
    }
    if secrets != 0 && secrets != usize::from(legs) {
        return Err(LegsRefusal::SecretCount {
            need: legs,
            given: secrets,
        });
    }
    if code.r() > 0 && extra_reads > code.r() {
        return Err(LegsRefusal::ExtraReads {
            extra: extra_reads,
            code,
        });
    }
    Ok(legs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_trims_one_newline() {
        assert_eq!(text(b"abc\n"), Ok("abc"));
        assert_eq!(text(b" 1 \n"), Ok("1"));
        assert!(text(b"\n").is_err());
        assert!(text(&[0xff, 0xfe]).is_err());
    }

    #[test]
    fn keepalive_off_or_in_range() {
        assert_eq!(keepalive_ms("0"), Ok(0));
        assert_eq!(keepalive_ms("1000"), Ok(1000));
        assert_eq!(keepalive_ms("5000"), Ok(5000));
        assert_eq!(keepalive_ms("600000"), Ok(600_000));
        for bad in ["1", "999", "600001", "-1", "5s", ""] {
            assert!(keepalive_ms(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(number("128", 1, 1024), Ok(128));
        assert!(number("0", 1, 1024).is_err());
        assert!(number("1025", 1, 1024).is_err());
        assert!(number("-1", 0, 10).is_err());
        assert!(number("12a", 0, 100).is_err());
        assert!(number("99999999999999999999999", 0, u64::MAX).is_err());
    }

    #[test]
    fn client_ids() {
        assert_eq!(client_id("42"), Ok(42));
        assert_eq!(client_id("0x2a"), Ok(42));
        assert_eq!(client_id("0xFFFFFFFFFFFFFFFF"), Ok(u64::MAX));
        assert!(client_id("0").is_err());
        assert!(client_id("0x").is_err());
        assert!(client_id("0x1ffffffffffffffff").is_err());
        assert!(client_id("0xzz").is_err());
        assert!(client_id("0x+1").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(size("1M"), Ok(1 << 20));
        assert_eq!(size("512M"), Ok(512 << 20));
        assert_eq!(size("8G"), Ok(8 << 30));
        assert_eq!(size("1T"), Ok(1 << 40));
        assert_eq!(size("1048576"), Ok(1 << 20));
        assert_eq!(size("4096k"), Ok(4 << 20));
        for bad in [
            "",
            "M",
            "1",
            "4095K",
            "1000000",
            "2T",
            "512Q",
            "-1M",
            "1.5G",
            "99999999999999999999G",
            "18014398509481984K",
        ] {
            assert!(size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn booleans() {
        assert_eq!(boolean("1"), Ok(true));
        assert_eq!(boolean("0"), Ok(false));
        assert!(boolean("2").is_err());
        assert!(boolean("true").is_err());
    }

    #[test]
    fn secrets() {
        let hex32 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        let s = secret(hex32).expect("32 bytes");
        assert_eq!(
            s.bytes(),
            (0u8..32).collect::<std::vec::Vec<_>>().as_slice()
        );
        assert_eq!(
            secret(&hex32.to_uppercase()).map(|s| s.bytes()[31]),
            Ok(0x1f)
        );
        assert_eq!(std::format!("{s:?}"), "Secret(32 bytes)");
        assert_eq!(secret(&"ab".repeat(16)).map(|s| s.bytes().len()), Ok(16));
        assert_eq!(secret(&"ab".repeat(64)).map(|s| s.bytes().len()), Ok(64));
        for bad in [
            "ab".repeat(15),
            "ab".repeat(65),
            std::format!("{hex32}0"),
            std::format!("{}xy", "ab".repeat(16)),
            std::format!("+{}", "a".repeat(33)),
            std::format!("0x{}", "ab".repeat(16)),
        ] {
            assert!(secret(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn key_descriptions() {
        assert_eq!(key_description("key:rswap:mem0"), Some(Ok("rswap:mem0")));
        assert_eq!(key_description("key:a:"), Some(Ok("a:")));
        assert_eq!(key_description("key:a b:c d"), Some(Ok("a b:c d")));
        assert_eq!(key_description("none"), None);
        assert_eq!(key_description(&"ab".repeat(16)), None);
        assert_eq!(key_description("Key:rswap:mem0"), None);
        for bad in [
            "key:",
            "key:rswap",
            "key::mem0",
            "key:rswap:\0",
            "key:rswap:a,b",
        ] {
            assert!(matches!(key_description(bad), Some(Err(_))), "{bad}");
        }
    }

    #[test]
    fn secrets_read() {
        let fill = |n: usize| {
            move |buf: &mut [u8]| {
                for (i, b) in buf.iter_mut().take(n).enumerate() {
                    *b = i as u8;
                }
                Ok(n)
            }
        };
        let s = Secret::read(fill(32)).expect("32 bytes");
        assert_eq!(
            s.bytes(),
            (0u8..32).collect::<std::vec::Vec<_>>().as_slice()
        );
        assert_eq!(Secret::read(fill(16)).map(|s| s.bytes().len()), Ok(16));
        assert_eq!(Secret::read(fill(64)).map(|s| s.bytes().len()), Ok(64));
        for n in [0, 15, 65, 4096] {
            assert_eq!(
                Secret::read(|_| Ok(n)).map(|s| s.bytes().len()),
                Err(Invalid("the key's payload is not 16 to 64 bytes")),
                "{n}"
            );
        }
        assert_eq!(
            Secret::read(|_| Err(Invalid("no key"))).map(|s| s.bytes().len()),
            Err(Invalid("no key"))
        );
    }

    /// Every code the parser takes.
    fn codes() -> impl Iterator<Item = Code> {
        [1u8, 2, 4, 8]
            .into_iter()
            .flat_map(|k| (0u8..=2).map(move |r| Code { k, r }))
    }

    #[test]
    fn codes_parse() {
        assert_eq!(Code::parse("4+2"), Ok(Code { k: 4, r: 2 }));
        assert_eq!(Code::parse("1+0"), Ok(Code::PLAIN));
        assert_eq!(Code::parse("8+1").map(|c| c.legs()), Ok(9));
        assert_eq!(std::format!("{}", Code { k: 2, r: 1 }), "2+1");
        for c in codes() {
            assert_eq!(Code::parse(&std::format!("{c}")), Ok(c));
        }
        for bad in ["", "4", "4+", "+2", "4-2", "a+b", "4+2+1", " 4+2", "4 + 2"] {
            assert_eq!(
                Code::parse(bad),
                Err(Invalid("not a code (K+R, e.g. 4+2)")),
                "{bad}"
            );
        }
        for bad in ["0+1", "3+1", "16+2", "5+0"] {
            assert_eq!(
                Code::parse(bad),
                Err(Invalid("k must be 1, 2, 4 or 8")),
                "{bad}"
            );
        }
        for bad in ["4+3", "1+9"] {
            assert_eq!(
                Code::parse(bad),
                Err(Invalid("r must be 0, 1 or 2")),
                "{bad}"
            );
        }
    }

    #[test]
    fn lists() {
        let l = |s| list(s).map(|it| it.collect::<std::vec::Vec<_>>());
        assert_eq!(l("a"), Ok(std::vec!["a"]));
        assert_eq!(l("a, b ,c"), Ok(std::vec!["a", "b", "c"]));
        let (ten, eleven) = (["x"; 10].join(","), ["x"; 11].join(","));
        assert_eq!(l(&ten).map(|v| v.len()), Ok(10));
        assert_eq!(l(&eleven), Err(Invalid("more than 10 entries")));
        for bad in ["a,", ",a", "a,,b", "a, ,b"] {
            assert_eq!(l(bad), Err(Invalid("an empty entry in the list")), "{bad}");
        }
    }

    #[test]
    fn server_entries() {
        assert_eq!(server_entry("192.0.2.5"), Ok(("192.0.2.5", None)));
        assert_eq!(
            server_entry("192.0.2.5:7472"),
            Ok(("192.0.2.5", Some(7472)))
        );
        assert_eq!(server_entry("fd00::5"), Ok(("fd00::5", None)));
        assert_eq!(server_entry("fe80::1%eth0"), Ok(("fe80::1%eth0", None)));
        assert_eq!(server_entry("[fd00::5]"), Ok(("fd00::5", None)));
        assert_eq!(server_entry("[fd00::5]:1"), Ok(("fd00::5", Some(1))));
        assert_eq!(
            server_entry("[fe80::1%2]:65535"),
            Ok(("fe80::1%2", Some(65535)))
        );
        for (bad, why) in [
            (":7471", "a server with no address"),
            ("[]:7471", "a server with no address"),
            (
                "[fd00::5",
                "an IPv6 address opened with '[' is closed with ']'",
            ),
            (
                "[fd00::5]7471",
                "after an IPv6 address in brackets comes :PORT",
            ),
            ("192.0.2.5:0", "a port is 1 to 65535"),
            ("192.0.2.5:65536", "a port is 1 to 65535"),
            ("192.0.2.5:", "a port is 1 to 65535"),
            ("192.0.2.5:x", "a port is 1 to 65535"),
            ("[fd00::5]:", "a port is 1 to 65535"),
        ] {
            assert_eq!(server_entry(bad), Err(Invalid(why)), "{bad}");
        }
    }
    #[test]
    fn replacements() {
        assert_eq!(replacement("1 192.0.2.5:7472"), Ok((1, "192.0.2.5:7472")));
        assert_eq!(replacement("9  [fd00::5]:1"), Ok((9, "[fd00::5]:1")));
        let usage = "LEG SERVER: a leg number and the server to put in its place";
        for (bad, why) in [
            ("", usage),
            ("1", usage),
            ("1 192.0.2.5 192.0.2.6", usage),
            ("10 192.0.2.5", "a leg is 0 to 9"),
            ("x 192.0.2.5", "a leg is 0 to 9"),
            ("-1 192.0.2.5", "a leg is 0 to 9"),
        ] {
            assert_eq!(replacement(bad), Err(Invalid(why)), "{bad}");
        }
    }

    #[test]
    fn legs_checked() {
        let c42 = Code { k: 4, r: 2 };
        assert_eq!(check_legs(Code::PLAIN, true, 0, 0, 1), Ok(1));
        assert_eq!(check_legs(Code::PLAIN, false, 1, 0, 1), Ok(1));
        assert_eq!(check_legs(Code::PLAIN, false, 1, 1, 2), Ok(1));
        assert_eq!(check_legs(c42, false, 6, 0, 2), Ok(6));
        assert_eq!(check_legs(c42, false, 6, 6, 0), Ok(6));
        assert_eq!(check_legs(Code { k: 8, r: 0 }, false, 8, 0, 2), Ok(8));
        let refused = |c, a, n, s, e| check_legs(c, a, n, s, e).map_err(|r| std::format!("{r}"));
        for (args, why) in [
            ((Code::PLAIN, false, 0, 0, 1), "set addr (or servers) first"),
            (
                (Code::PLAIN, true, 1, 0, 1),
                "set addr (one server) or servers, not both",
            ),
            (
                (c42, true, 6, 0, 1),
                "set addr (one server) or servers, not both",
            ),
            ((c42, true, 0, 0, 1), "code 4+2 needs 6 servers in servers"),
            ((c42, false, 5, 0, 1), "code 4+2 needs 6 servers, 5 given"),
            (
                (Code::PLAIN, false, 2, 0, 1),
                "code 1+0 needs 1 servers, 2 given",
            ),
            ((c42, false, 6, 4, 1), "secrets: 6 entries needed, 4 given"),
            (
                (Code { k: 4, r: 1 }, false, 5, 0, 2),
                "extra_reads 2 is more than the 1 parity fragments of code 4+1",
            ),
        ] {
            let (c, a, n, s, e) = args;
            assert_eq!(refused(c, a, n, s, e), Err(why.into()), "{why}");
        }
    }
}
