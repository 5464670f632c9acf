// SPDX-License-Identifier: GPL-2.0

//! The name a session's kernel log lines carry (its disk's, e.g. `rswap0`).

use core::{ffi::CStr, fmt};

/// A short name, copied into every queue of a session so that each log line says which
/// disk it is about. Longer names are cut at [`Name::MAX`] bytes.
///
/// The byte after the name is always 0, so it is also a C string.
#[derive(Clone, Copy)]
pub(crate) struct Name {
    buf: [u8; Name::MAX + 1],
    len: u8,
}

impl Name {
    /// The longest name kept.
    pub(crate) const MAX: usize = 16;

    /// A name holding `args` as formatted (cut to [`Self::MAX`] bytes).
    pub(crate) fn new(args: fmt::Arguments<'_>) -> Self {
        let mut name = Self {
            buf: [0; Self::MAX + 1],
            len: 0,
        };
        let _ = fmt::write(&mut name, args);
        name
    }

    fn as_str(&self) -> &str {
        let bytes = self.buf.get(..usize::from(self.len)).unwrap_or(&[]);
        core::str::from_utf8(bytes).unwrap_or("?")
    }

    /// The name as a C string.
    pub(crate) fn as_cstr(&self) -> &CStr {
        let bytes = self.buf.get(..=usize::from(self.len)).unwrap_or(b"\0");
        CStr::from_bytes_with_nul(bytes).unwrap_or(c"?")
    }
}

impl fmt::Write for Name {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            let mut tmp = [0u8; 4];
            let enc = c.encode_utf8(&mut tmp).as_bytes();
            let start = usize::from(self.len);
            // The last byte stays 0.
            let Some(dst) = self
                .buf
                .get_mut(..Self::MAX)
                .and_then(|b| b.get_mut(start..start + enc.len()))
            else {
                break;
            };
            dst.copy_from_slice(enc);
            // `len` stays below `MAX`, which fits in a `u8`.
            self.len += enc.len() as u8;
        }
        Ok(())
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl kernel::fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
