// SPDX-License-Identifier: GPL-2.0

//! DMA mapping for RDMA: single buffers and the scatterlists of block requests.

use kernel::{error::to_result, prelude::*, types::Opaque};

use super::{bindings, Device};

/// Which way data moves through a mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// The device writes memory (RDMA READ results, receives).
    FromDevice,
    /// The device reads memory (RDMA WRITE sources, sends).
    ToDevice,
}

impl Direction {
    fn as_raw(self) -> bindings::dma_data_direction {
        match self {
            Self::FromDevice => bindings::dma_data_direction::DMA_FROM_DEVICE,
            Self::ToDevice => bindings::dma_data_direction::DMA_TO_DEVICE,
        }
    }
}

/// A scatter/gather element (`struct ib_sge`).
#[repr(transparent)]
#[derive(Default)]
pub(crate) struct Sge(pub(super) bindings::ib_sge);

/// A scatterlist entry (`struct scatterlist`), as filled from a block request's segments.
#[repr(transparent)]
pub(crate) struct SgEntry(Opaque<bindings::scatterlist>);

impl SgEntry {
    /// An empty entry, for preallocated per-request tables.
    pub(crate) const fn new() -> Self {
        Self(Opaque::zeroed())
    }

    /// The raw pointer of the first entry of `table`.
    pub(crate) fn table_as_raw(table: &mut [SgEntry]) -> *mut bindings::scatterlist {
        // CAST: `SgEntry` is a transparent `scatterlist`.
        table.as_mut_ptr().cast()
    }
}

/// A scatterlist mapped for DMA on a device.
///
/// Not a guard: the mapping is released with [`SgMapping::unmap`] by whoever owns the
/// work request's completion. It records what unmapping needs.
///
/// # Invariants
///
/// `nents` entries of the table it was created from are mapped for `dir`.
#[derive(Clone, Copy)]
pub(crate) struct SgMapping {
    nents: i32,
    dir: Direction,
}

impl SgMapping {
    /// Maps the first `nents` entries of `table` for `dir` on `dev`, and describes the
    /// mapped memory in `sges` with `lkey`. Returns the mapping and the number of SGEs.
    pub(crate) fn map(
        dev: &Device,
        table: &mut [SgEntry],
        nents: usize,
        dir: Direction,
        sges: &mut [Sge],
        lkey: u32,
    ) -> Result<(Self, usize)> {
        if nents == 0 || nents > table.len() || nents > sges.len() {
            return Err(EINVAL);
        }
        let n = i32::try_from(nents).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is valid; `table` holds `nents` initialised entries (filled from a
        // request) and `sges` has room for `nents` SGEs.
        let mapped = unsafe {
            bindings::rswap_ib_dma_map_sg_sges(
                dev.as_raw(),
                SgEntry::table_as_raw(table),
                n,
                dir.as_raw(),
                sges.as_mut_ptr().cast(),
                lkey,
            )
        };
        let used = usize::try_from(mapped).map_err(|_| ENOMEM)?;
        if used == 0 {
            return Err(ENOMEM);
        }
        // INVARIANT: the `nents` entries were just mapped for `dir`.
        Ok((Self { nents: n, dir }, used))
    }

    /// Releases the mapping.
    ///
    /// `table` must be the table it was created from, unchanged.
    pub(crate) fn unmap(self, dev: &Device, table: &mut [SgEntry]) {
        // SAFETY: by the type invariant the entries are mapped for `dir` on the device the
        // caller passes (the one the work request ran on); `table` is the mapped table.
        unsafe {
            bindings::rswap_ib_dma_unmap_sg(
                dev.as_raw(),
                SgEntry::table_as_raw(table),
                self.nents,
                self.dir.as_raw(),
            )
        };
    }
}

/// A small heap buffer mapped for DMA on one device, unmapped and freed on drop.
///
/// # Invariants
///
/// `addr` is the mapping of `buf` for `dir` on `dev`, which outlives this value (it is
/// owned by a queue whose device outlives it).
pub(crate) struct DmaBuf {
    buf: KBox<[u8; DmaBuf::SIZE]>,
    addr: u64,
    dev: *mut bindings::ib_device,
    dir: Direction,
}

// SAFETY: the buffer is owned; the device pointer is only used to unmap.
unsafe impl Send for DmaBuf {}
// SAFETY: shared access only reads.
unsafe impl Sync for DmaBuf {}

impl DmaBuf {
    /// The size of every `DmaBuf` (room for any control message of the wire format).
    pub(crate) const SIZE: usize = 64;

    /// Allocates a buffer holding `contents` (zero-padded; at most `SIZE` bytes are used)
    /// and maps it for `dir` on `dev`. The contents are written before mapping.
    pub(crate) fn with_contents(dev: &Device, dir: Direction, contents: &[u8]) -> Result<Self> {
        let mut buf = KBox::new([0u8; Self::SIZE], GFP_KERNEL)?;
        let n = contents.len().min(Self::SIZE);
        buf[..n].copy_from_slice(&contents[..n]);
        let mut addr = 0u64;
        // SAFETY: `dev` is valid and `buf` is a live heap allocation of `SIZE` bytes.
        to_result(unsafe {
            bindings::rswap_ib_dma_map_single(
                dev.as_raw(),
                buf.as_mut_ptr().cast(),
                Self::SIZE,
                dir.as_raw(),
                &mut addr,
            )
        })?;
        // INVARIANT: `addr` maps `buf` for `dir` on `dev`.
        Ok(Self {
            buf,
            addr,
            dev: dev.as_raw(),
            dir,
        })
    }

    /// An SGE covering the whole buffer.
    pub(crate) fn sge(&self, lkey: u32) -> Sge {
        Sge(bindings::ib_sge {
            addr: self.addr,
            length: Self::SIZE as u32,
            lkey,
        })
    }

    /// The buffer's contents once the device is done with it (after the completion of
    /// the work request that used it): synchronised for the CPU first.
    pub(crate) fn contents_for_cpu(&mut self) -> &[u8; Self::SIZE] {
        // SAFETY: by the type invariant `addr` maps `buf` on `dev`; the device no longer
        // accesses it (its work request completed).
        unsafe {
            bindings::rswap_ib_dma_sync_single_for_cpu(
                self.dev,
                self.addr,
                Self::SIZE,
                self.dir.as_raw(),
            )
        };
        &self.buf
    }
}

impl Drop for DmaBuf {
    fn drop(&mut self) {
        // SAFETY: by the type invariant `addr` maps `buf` on `dev`, which is still valid.
        unsafe {
            bindings::rswap_ib_dma_unmap_single(self.dev, self.addr, Self::SIZE, self.dir.as_raw())
        };
    }
}
