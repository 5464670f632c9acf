// SPDX-License-Identifier: GPL-2.0

//! The kernel's RAID-6 library (`raid6_pq`, the P and Q syndromes md's RAID-6 uses) for a
//! disk with two parity fragments: P and Q of a block's data fragments, and a block
//! rebuilt from any k of its k + 2 fragments. The library's functions are taken with
//! `symbol_request()` when such a disk is enabled (so that rswap.ko loads on a kernel
//! without the module), and given back when it goes.
//!
//! Every function here runs only in task context with interrupts and softirqs on (the
//! library warns otherwise: it may use the FPU): [`Raid6::context_ok`] says whether the
//! caller is there.

use kernel::{
    page::{Page, PAGE_SIZE},
    prelude::*,
};

use super::{IoSink, IoSource};

/// The library's functions (C `struct rswap_raid6`).
#[repr(C)]
struct Fns {
    gen: *const kernel::ffi::c_void,
    recov_2data: *const kernel::ffi::c_void,
    recov_datap: *const kernel::ffi::c_void,
}

extern "C" {
    fn rswap_raid6_get(r: *mut Fns) -> kernel::ffi::c_int;
    fn rswap_raid6_put(r: *mut Fns);
    fn rswap_raid6_context_ok() -> bool;
    // `struct page *`: `struct page` holds types the FFI-safety lint rejects.
    fn rswap_raid6_gen_block(
        r: *const Fns,
        k: kernel::ffi::c_int,
        f: u32,
        page: *mut kernel::ffi::c_void,
        p: *mut kernel::ffi::c_void,
        p_off: u32,
        q: *mut kernel::ffi::c_void,
        q_off: u32,
    );
    fn rswap_raid6_recov_block(
        r: *const Fns,
        k: kernel::ffi::c_int,
        f: u32,
        pages: *const *mut kernel::ffi::c_void,
        offs: *const u32,
        scratch: *const *mut kernel::ffi::c_void,
        faila: kernel::ffi::c_int,
        failb: kernel::ffi::c_int,
    );
}

/// Most data fragments of a block.
const MAX_K: usize = 8;

/// The RAID-6 library, taken.
///
/// # Invariants
///
/// `fns` holds the three functions and a reference to their module each, given back on
/// drop.
pub(crate) struct Raid6 {
    fns: Fns,
}

// SAFETY: the functions may be called from any thread (in task context); the value only
// holds their addresses.
unsafe impl Send for Raid6 {}
// SAFETY: as above; nothing in it changes after `new`.
unsafe impl Sync for Raid6 {}

/// Where a block's fragment is: a page the caller holds and the fragment's offset in it.
pub(crate) struct Fragment<'a> {
    /// The page.
    pub(crate) page: &'a Page,
    /// The fragment's first byte.
    pub(crate) offset: usize,
}

/// What [`Raid6::recover`] rebuilds: two data fragments (`a < b`), or one and P.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lost {
    /// Data fragments `a` and `b`, `a < b`.
    TwoData(u8, u8),
    /// Data fragment `a` and P.
    DataAndP(u8),
}

impl Raid6 {
    /// Takes the library's functions, loading `raid6_pq` if it is not loaded. `ENOENT` if
    /// the kernel has none. Sleeps.
    pub(crate) fn new() -> Result<Self> {
        let mut fns = Fns {
            gen: core::ptr::null(),
            recov_2data: core::ptr::null(),
            recov_datap: core::ptr::null(),
        };
        // SAFETY: `fns` is a valid `struct rswap_raid6` to fill; the helper fills it
        // completely or leaves it empty (and fails).
        kernel::error::to_result(unsafe { rswap_raid6_get(&mut fns) })?;
        // INVARIANT: the helper took all three.
        Ok(Self { fns })
    }

    /// Whether the caller may use the library now: task context, interrupts and softirqs
    /// on.
    pub(crate) fn context_ok() -> bool {
        // SAFETY: reads the current context only.
        unsafe { rswap_raid6_context_ok() }
    }

    /// Checks what the library asks of `k` fragments of `f` bytes: k of 2 to 8, `f` a
    /// multiple of 512 that divides the page.
    fn check(k: usize, f: usize) -> Result {
        if !(2..=MAX_K).contains(&k) || f == 0 || f % 512 != 0 || PAGE_SIZE % f != 0 {
            return Err(EINVAL);
        }
        if !Self::context_ok() {
            return Err(EAGAIN);
        }
        Ok(())
    }

    /// Fits `off..off + f` in a page, 64-byte aligned (the library's SIMD needs it).
    fn fits(off: usize, f: usize) -> Result<u32> {
        if off % 64 != 0 || off + f > PAGE_SIZE {
            return Err(EINVAL);
        }
        u32::try_from(off).map_err(|_| EINVAL)
    }

    /// Writes P and Q of the `k` data fragments of `f` bytes of `data` (fragment `j` at
    /// byte `j * f`) into `p` at `p_off` and `q` at `q_off`. `EAGAIN` outside task
    /// context, `EINVAL` for a size or place the library does not take.
    pub(crate) fn gen(
        &self,
        k: usize,
        f: usize,
        data: &impl IoSource,
        p: (&impl IoSink, usize),
        q: (&impl IoSink, usize),
    ) -> Result {
        Self::check(k, f)?;
        let (p_off, q_off) = (Self::fits(p.1, f)?, Self::fits(q.1, f)?);
        if core::ptr::eq(p.0.page(), q.0.page()) && p_off.abs_diff(q_off) < f as u32 {
            return Err(EINVAL);
        }
        // SAFETY: the functions are held (type invariant); the pages are held by the
        // caller (`IoSource`, `IoSink`: `p` and `q` written by it alone, in ranges checked
        // to be inside their pages and apart), aligned as the library asks (checked), in
        // task context (checked).
        unsafe {
            rswap_raid6_gen_block(
                &self.fns,
                k as i32,
                f as u32,
                data.page().as_ptr().cast(),
                p.0.page().as_ptr().cast(),
                p_off,
                q.0.page().as_ptr().cast(),
                q_off,
            )
        };
        Ok(())
    }

    /// Rebuilds the fragments `lost` of a block of `k` data fragments of `f` bytes,
    /// fragment `j` at byte `j * f` of `block`, from the others there and `[p, q]`
    /// (`p` is ignored when it is lost), through `scratch`. The rebuilt data fragments
    /// are written into `block`.
    pub(crate) fn recover(
        &self,
        scratch: &mut Raid6Scratch,
        k: usize,
        f: usize,
        block: &impl IoSink,
        [p, q]: [Fragment<'_>; 2],
        lost: Lost,
    ) -> Result {
        Self::check(k, f)?;
        let n = k + 2;
        if scratch.pages.len() < n {
            return Err(EINVAL);
        }
        let (a, b) = match lost {
            Lost::TwoData(a, b) if a < b && usize::from(b) < k => (a, b),
            Lost::DataAndP(a) if usize::from(a) < k => (a, k as u8),
            _ => return Err(EINVAL),
        };
        let mut pages = [core::ptr::null_mut(); MAX_K + 2];
        let mut offs = [0u32; MAX_K + 2];
        let mut bufs = [core::ptr::null_mut(); MAX_K + 2];
        for j in 0..k {
            pages[j] = block.page().as_ptr().cast();
            offs[j] = Self::fits(j * f, f)?;
        }
        pages[k] = p.page.as_ptr().cast();
        offs[k] = Self::fits(p.offset, f)?;
        pages[k + 1] = q.page.as_ptr().cast();
        offs[k + 1] = Self::fits(q.offset, f)?;
        for (j, page) in scratch.pages.iter().take(n).enumerate() {
            bufs[j] = page.as_ptr().cast();
        }
        // SAFETY: the functions are held (type invariant); the `n` pages are held by the
        // caller, each read in a range checked to be inside it, and only `block` (its sink)
        // is written, where the lost data fragments go; `scratch` holds `n` page-aligned
        // pages, borrowed exclusively; task context (checked).
        unsafe {
            rswap_raid6_recov_block(
                &self.fns,
                k as i32,
                f as u32,
                pages.as_ptr(),
                offs.as_ptr(),
                bufs.as_ptr(),
                i32::from(a),
                i32::from(b),
            )
        };
        Ok(())
    }
}

impl Drop for Raid6 {
    fn drop(&mut self) {
        // SAFETY: the functions were taken by `new` (type invariant) and are given back
        // once, here.
        unsafe { rswap_raid6_put(&mut self.fns) };
    }
}

/// The k + 2 page-aligned pages a recovery works in: the library's recovery wants whole,
/// aligned buffers, and a fragment is a piece of a page.
pub(crate) struct Raid6Scratch {
    pages: KVec<Page>,
}

impl Raid6Scratch {
    /// Scratch for blocks of `fragments` fragments. Sleeps.
    pub(crate) fn new(fragments: usize) -> Result<Self> {
        let mut pages = KVec::with_capacity(fragments, GFP_KERNEL)?;
        for _ in 0..fragments {
            pages.push(Page::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
        }
        Ok(Self { pages })
    }
}
