// SPDX-License-Identifier: GPL-2.0

//! Pages of an I/O, as whoever holds the I/O may use them: what the crypto wrappers take
//! instead of a bare page, so that their callers need no `unsafe`.

use kernel::{
    page::{Page, PAGE_SIZE},
    prelude::*,
};

extern "C" {
    // `struct page *`: `struct page` holds types the FFI-safety lint rejects.
    fn rswap_page_combine(
        dst: *mut kernel::ffi::c_void,
        dst_off: u32,
        src: *mut kernel::ffi::c_void,
        src_off: u32,
        len: u32,
        xor: bool,
    );
}

/// How [`IoSink::combine`] puts a source's bytes into its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Combine {
    /// Copy them over.
    Copy,
    /// XOR them in (parity).
    Xor,
}

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

    /// Copies or XORs `len` bytes at `src_off` of `src`, a page of an I/O this caller
    /// holds too, into bytes `dst_off..dst_off + len` of this page. Any context, softirq
    /// included. `EINVAL` if a range is outside its page, or overlaps the other in this
    /// same page.
    fn combine(
        &self,
        dst_off: usize,
        src: &Page,
        src_off: usize,
        len: usize,
        how: Combine,
    ) -> Result {
        let fits = |off: usize| off.checked_add(len).is_some_and(|end| end <= PAGE_SIZE);
        if !fits(dst_off) || !fits(src_off) {
            return Err(EINVAL);
        }
        let overlap = dst_off < src_off + len && src_off < dst_off + len;
        if core::ptr::eq(src, self.page()) && overlap {
            return Err(EINVAL);
        }
        // SAFETY: both pages are valid while borrowed and the ranges are inside them (just
        // checked, both below `PAGE_SIZE`, so the casts are exact); this page is written by
        // its holder alone (the trait's contract), never where it is read from (`src`, if it
        // is this page, in another range); `src` is a page of an
        // I/O the caller holds (a source, whose concurrent writer accepts a mix of bytes, or
        // another sink), so it stays allocated.
        unsafe {
            rswap_page_combine(
                self.page().as_ptr().cast(),
                dst_off as u32,
                src.as_ptr().cast(),
                src_off as u32,
                len as u32,
                how == Combine::Xor,
            )
        };
        Ok(())
    }

    /// Fills the page with zeros.
    fn zero(&self) -> Result {
        // SAFETY: nobody else reads or writes the page while `self` is borrowed (the
        // trait's contract), and the range is the page.
        unsafe { self.page().fill_zero_raw(0, PAGE_SIZE) }
    }
}
