// SPDX-License-Identifier: GPL-2.0

//! [`TextBuf`]: a message kept in a fixed buffer, for text that must be recorded where
//! nothing may be allocated (a connect failing during recovery, under memory pressure).

use core::fmt;

/// Up to `N` bytes of text; what does not fit is cut, at a character boundary.
#[derive(Clone, Copy)]
pub(crate) struct TextBuf<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> TextBuf<N> {
    /// An empty buffer.
    pub(crate) const fn new() -> Self {
        Self {
            buf: [0; N],
            len: 0,
        }
    }

    /// The text kept.
    pub(crate) fn text(&self) -> &str {
        // `write_str` only ever stores whole characters.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }

    /// Forgets the text.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}

impl<const N: usize> fmt::Write for TextBuf<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut n = s.len().min(N - self.len);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}
