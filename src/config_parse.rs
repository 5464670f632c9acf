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
        for bad in ["key:", "key:rswap", "key::mem0", "key:rswap:\0"] {
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
}
