// SPDX-License-Identifier: GPL-2.0

//! A preallocated scatterlist table (`struct scatterlist[N]`), with pages of its own.
//!
//! The block layer fills it from a request's segments and the RDMA layer maps it for DMA:
//! the type sits here so that neither layer has to know the other. Or its holder fills
//! pages the table owns (an encrypted write's ciphertext) and points the table at them.

use kernel::{
    page::{Page, PAGE_SIZE},
    prelude::*,
    types::Opaque,
};

use super::{IoSink, IoSource};

extern "C" {
    fn rswap_sg_set_pages(
        sgl: *mut kernel::bindings::scatterlist,
        // `struct page **`; `struct page` holds types the FFI-safety lint rejects.
        pages: *const *mut kernel::ffi::c_void,
        n: u32,
        last: u32,
    );
}

/// `N` scatterlist entries, embedded in per-request data so that nothing is allocated
/// when a request is issued, and the pages of its own that it may point at.
///
/// The kernel crate's `scatterlist::SGEntry` only borrows entries of an existing table;
/// this type owns the storage.
///
/// # Invariants
///
/// `own` is only ever pushed to (never shrunk, no page replaced) until drop, so an entry
/// pointed at one of its pages stays valid for the table's life.
pub(crate) struct SgTable<const N: usize> {
    entries: [Opaque<kernel::bindings::scatterlist>; N],
    own: KVec<Page>,
}

// SAFETY: the table is plain memory owned by its holder, with pages it owns.
unsafe impl<const N: usize> Send for SgTable<N> {}

impl<const N: usize> SgTable<N> {
    /// An all-zero table with no pages of its own.
    pub(crate) const fn new() -> Self {
        Self {
            entries: [const { Opaque::zeroed() }; N],
            own: KVec::new(),
        }
    }

    /// Allocates `n` pages of the table's own, at most `N` in all (see
    /// [`Self::own_pages`]). Sleeps.
    pub(crate) fn reserve_own_pages(&mut self, n: usize) -> Result {
        if self.own.len() + n > N {
            return Err(EINVAL);
        }
        self.own.reserve(n, GFP_KERNEL)?;
        for _ in 0..n {
            // INVARIANT: pushed, never removed.
            self.own.push(Page::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
        }
        Ok(())
    }

    /// The table's own pages, to fill (they are the holder's alone while it borrows the
    /// table mutably).
    pub(crate) fn own_pages(&mut self) -> impl Iterator<Item = OwnPage<'_>> + '_ {
        self.own.iter_mut().map(OwnPage)
    }

    /// Points the first `n` entries at the first `n` of the table's own pages, each whole,
    /// and returns how many (0 if it has fewer pages).
    pub(crate) fn use_own_pages(&mut self, n: usize) -> usize {
        self.use_own_bytes(n * PAGE_SIZE)
    }

    /// Points the table at the first `bytes` of its own pages (an entry per page, the last
    /// one short if `bytes` ends inside it), and returns how many entries (0 if it has
    /// fewer pages than that, or `bytes` is 0).
    pub(crate) fn use_own_bytes(&mut self, bytes: usize) -> usize {
        let n = bytes.div_ceil(PAGE_SIZE);
        let Some(pages) = self.own.get(..n).filter(|_| n > 0) else {
            return 0;
        };
        let last = bytes - (n - 1) * PAGE_SIZE;
        let raw: [*mut kernel::ffi::c_void; N] = core::array::from_fn(|i| {
            pages
                .get(i)
                .map_or(core::ptr::null_mut(), |p| p.as_ptr().cast())
        });
        // SAFETY: the table has `N >= n` entries (`own` holds at most `N` pages) and
        // `&mut self` keeps everyone else off it; `raw` holds `n` of the table's own pages,
        // which stay allocated as long as the table (type invariant); `last` is 1 to
        // `PAGE_SIZE`.
        unsafe { rswap_sg_set_pages(self.as_raw(), raw.as_ptr(), n as u32, last as u32) };
        n
    }

    /// The first entry, for the wrappers that fill or map the table. The caller needs
    /// `&mut self`, so nothing else touches the table meanwhile.
    pub(crate) fn as_raw(&mut self) -> *mut kernel::bindings::scatterlist {
        // CAST: `Opaque<T>` is a transparent `T`, and the array is contiguous.
        self.entries.as_mut_ptr().cast()
    }

    /// The first entry, for wrappers that only read the table (its DMA addresses once
    /// mapped). Nothing may write through it while the table is borrowed mutably.
    pub(crate) fn as_ptr(&self) -> *mut kernel::bindings::scatterlist {
        // CAST: `Opaque<T>` is a transparent `T` that allows interior mutation, and the
        // array is contiguous.
        self.entries
            .as_ptr()
            .cast::<kernel::bindings::scatterlist>()
            .cast_mut()
    }
}

impl<const N: usize> Default for SgTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// One of the pages an [`SgTable`] owns, borrowed with the table.
pub(crate) struct OwnPage<'a>(&'a mut Page);

impl OwnPage<'_> {
    /// The page (what both [`IoSink::page`] and [`IoSource::page`] give).
    pub(crate) fn page(&self) -> &Page {
        self.0
    }
}

// SAFETY: the page is the table's, borrowed exclusively with it: nobody else reads or
// writes it meanwhile, and it stays allocated (the table never lets go of it).
unsafe impl IoSink for OwnPage<'_> {
    fn page(&self) -> &Page {
        OwnPage::page(self)
    }
}

// SAFETY: as for `IoSink`: the page is the table's, borrowed exclusively with it.
unsafe impl IoSource for OwnPage<'_> {
    fn page(&self) -> &Page {
        OwnPage::page(self)
    }
}
