// SPDX-License-Identifier: GPL-2.0

//! Byte sizes with binary suffixes: `4096`, `64K`, `512M`, `8G`, `1T`.

/// Parses a size: decimal digits and an optional suffix `K`, `M`, `G` or `T`
/// (binary multiples, either case). Rejects empty input, other characters and
/// values that overflow `u64`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("invalid size {s:?} (expected digits with an optional K/M/G/T suffix)");
    let (digits, shift) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(bad()),
            };
            (s.get(..i).unwrap_or(""), shift)
        }
        _ => (s, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("size {s:?} is too large"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

/// Rounds `n` up to a multiple of `unit` (a power of two); `None` on overflow.
pub fn round_up(n: u64, unit: u64) -> Option<u64> {
    let mask = unit.checked_sub(1)?;
    n.checked_add(mask).map(|v| v & !mask)
}

/// Formats `n` bytes in the largest binary unit that divides it exactly.
pub fn format_size(n: u64) -> String {
    for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n != 0 && n % (1u64 << shift) == 0 {
            return format!("{}{suffix}", n >> shift);
        }
    }
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_suffixes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("8G"), Ok(8 << 30));
        assert_eq!(parse_size("3T"), Ok(3 << 40));
        assert_eq!(parse_size("16777215T"), Ok(16_777_215u64 << 40));
    }

    #[test]
    fn rejects() {
        for s in [
            "", "M", "1.5G", "-1", "1X", "1MB", " 1M", "1M ", "0x10", "1e3", "१",
        ] {
            assert!(parse_size(s).is_err(), "{s:?} accepted");
        }
        assert!(parse_size("16777216T").is_err(), "overflow accepted");
        assert!(parse_size("18446744073709551616").is_err());
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn rounding_and_format() {
        assert_eq!(round_up(1, 4096), Some(4096));
        assert_eq!(round_up(4096, 4096), Some(4096));
        assert_eq!(round_up(4097, 4096), Some(8192));
        assert_eq!(round_up(0, 4096), Some(0));
        assert_eq!(round_up(u64::MAX, 4096), None);
        assert_eq!(format_size(96 << 20), "96M");
        assert_eq!(format_size(4097), "4097");
        assert_eq!(format_size(1 << 30), "1G");
    }
}
