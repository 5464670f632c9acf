// SPDX-License-Identifier: GPL-2.0

//! Pages of an I/O, as whoever holds the I/O may use them: what the crypto wrappers take
//! instead of a bare page, so that their callers need no `unsafe`.

use kernel::{
    page::{Page, PAGE_SIZE},
    prelude::*,
};

/// A page that an I/O sends (a write's data), borrowed from its holder.
///
/// # Safety
///
/// While the value is borrowed, the page stays allocated, nobody but its holder reads it
/// through this value, and whoever else writes it meanwhile (a writer changing its buffer
/// under the I/O, as `O_DIRECT` allows) accepts that some mix of its old and new bytes is
/// used, as a DMA transfer of the page would use it.
pub(crate) unsafe trait IoSource {
    /// The page.
    fn page(&self) -> &Page;
}

/// A page that an I/O fills (a read's data), borrowed from its holder.
///
/// # Safety
///
/// While the value is borrowed, the page stays allocated and nobody but its holder reads
/// or writes it.
pub(crate) unsafe trait IoSink {
    /// The page.
    fn page(&self) -> &Page;

    /// Fills the page with zeros.
    fn zero(&self) -> Result {
        // SAFETY: nobody else reads or writes the page while `self` is borrowed (the
        // trait's contract), and the range is the page.
        unsafe { self.page().fill_zero_raw(0, PAGE_SIZE) }
    }
}
