// SPDX-License-Identifier: GPL-2.0

//! A preallocated scatterlist table (`struct scatterlist[N]`).
//!
//! The block layer fills it from a request's segments and the RDMA layer maps it for DMA:
//! the type sits here so that neither layer has to know the other.

use kernel::{page::Page, types::Opaque};

extern "C" {
    fn rswap_sg_set_pages(
        sgl: *mut kernel::bindings::scatterlist,
        // `struct page **`; `struct page` holds types the FFI-safety lint rejects.
        pages: *const *mut kernel::ffi::c_void,
        n: u32,
    );
}

/// `N` scatterlist entries, embedded in per-request data so that nothing is allocated
/// when a request is issued.
///
/// The kernel crate's `scatterlist::SGEntry` only borrows entries of an existing table;
/// this type owns the storage.
#[repr(transparent)]
pub(crate) struct SgTable<const N: usize>([Opaque<kernel::bindings::scatterlist>; N]);

// SAFETY: the table is plain memory owned by its holder; it holds no references.
unsafe impl<const N: usize> Send for SgTable<N> {}

impl<const N: usize> SgTable<N> {
    /// An all-zero table.
    pub(crate) const fn new() -> Self {
        Self([const { Opaque::zeroed() }; N])
    }

    /// The first entry, for the wrappers that fill or map the table. The caller needs
    /// `&mut self`, so nothing else touches the table meanwhile.
    pub(crate) fn as_raw(&mut self) -> *mut kernel::bindings::scatterlist {
        // CAST: `Opaque<T>` is a transparent `T`, and the array is contiguous.
        self.0.as_mut_ptr().cast()
    }

    /// The first entry, for wrappers that only read the table (its DMA addresses once
    /// mapped). Nothing may write through it while the table is borrowed mutably.
    pub(crate) fn as_ptr(&self) -> *mut kernel::bindings::scatterlist {
        // CAST: `Opaque<T>` is a transparent `T` that allows interior mutation, and the
        // array is contiguous.
        self.0
            .as_ptr()
            .cast::<kernel::bindings::scatterlist>()
            .cast_mut()
    }

    /// Points the first `pages.len()` entries at `pages`, each whole, and returns how many
    /// (0 if more than `N`).
    ///
    /// # Safety
    ///
    /// Each page must stay allocated for as long as these entries are used (mapped for
    /// DMA, or filled anew).
    pub(crate) unsafe fn set_pages(&mut self, pages: &[Page]) -> usize {
        let n = pages.len();
        if n > N {
            return 0;
        }
        let raw: [*mut kernel::ffi::c_void; N] = core::array::from_fn(|i| {
            pages
                .get(i)
                .map_or(core::ptr::null_mut(), |p| p.as_ptr().cast())
        });
        // SAFETY: the table has `N >= n` entries and `&mut self` keeps everyone else off
        // it; `raw` holds `n` valid pages, which the caller keeps allocated.
        unsafe { rswap_sg_set_pages(self.as_raw(), raw.as_ptr(), n as u32) };
        n
    }
}

impl<const N: usize> Default for SgTable<N> {
    fn default() -> Self {
        Self::new()
    }
}
