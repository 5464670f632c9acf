// SPDX-License-Identifier: GPL-2.0

//! DMA mapping for RDMA: heap buffers (control messages, pages), and the scatterlists of
//! block requests.

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{error::to_result, prelude::*, sync::Arc};

use super::{bindings, device::Device, pd::Pd, rdma_device::RdmaDevice};
use crate::kernel_ext::SgTable;

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

/// A DMA-mapped scatterlist, borrowed from the [`SgDma`] that mapped it: the pages an
/// RDMA READ's sink is registered from on iWARP.
///
/// # Invariants
///
/// The first `count` entries at `sgl` are mapped for DMA (their DMA address and length
/// are set) and stay so while the borrow `'a` lasts.
pub(crate) struct MappedSg<'a> {
    sgl: NonNull<bindings::scatterlist>,
    count: i32,
    _table: PhantomData<&'a ()>,
}

impl MappedSg<'_> {
    /// The first entry, for the registration work request.
    pub(super) fn as_raw(&self) -> *mut bindings::scatterlist {
        self.sgl.as_ptr()
    }

    /// How many entries are mapped.
    pub(super) fn count(&self) -> i32 {
        self.count
    }
}

/// What a live mapping of an [`SgDma`] needs to be undone.
struct Mapped {
    dev: NonNull<bindings::ib_device>,
    nents: i32,
    nsges: usize,
    dir: Direction,
}

/// The DMA side of one block request, preallocated with it: a scatterlist of `N` entries
/// that the block layer fills, and, while it is mapped on a device, the SGEs that
/// describe it to that device.
///
/// The table, the mapping and the SGEs live together, so the mapping is always undone on
/// the table it was made from.
///
/// # Invariants
///
/// If `mapped` is set, the first `mapped.nents` entries of `table` are mapped for
/// `mapped.dir` on `mapped.dev`, and the first `mapped.nsges` of `sges` describe them.
pub(crate) struct SgDma<const N: usize> {
    table: SgTable<N>,
    sges: [Sge; N],
    mapped: Option<Mapped>,
}

// SAFETY: the device pointer is only compared and used to unmap with proof that the
// device is valid; the rest is plain memory.
unsafe impl<const N: usize> Send for SgDma<N> {}

impl<const N: usize> Default for SgDma<N> {
    fn default() -> Self {
        Self {
            table: SgTable::new(),
            sges: core::array::from_fn(|_| Sge::default()),
            mapped: None,
        }
    }
}

impl<const N: usize> SgDma<N> {
    /// The scatterlist, to be filled; `None` while it is mapped.
    pub(crate) fn table(&mut self) -> Option<&mut SgTable<N>> {
        match self.mapped {
            None => Some(&mut self.table),
            Some(_) => None,
        }
    }

    /// Maps the first `nents` entries of the table for `dir` on `pd`'s device, and
    /// describes them as SGEs with `pd`'s local DMA key: for work requests on the QP of
    /// `pd` ([`super::Qp::pd`]). `EBUSY` if already mapped, `ENOMEM` if the mapping failed.
    pub(crate) fn map(&mut self, pd: &Pd, nents: usize, dir: Direction) -> Result {
        if self.mapped.is_some() {
            return Err(EBUSY);
        }
        if nents == 0 || nents > N {
            return Err(EINVAL);
        }
        let n = i32::try_from(nents).map_err(|_| EINVAL)?;
        let raw_dev = pd.rdma_device().device().as_raw();
        // SAFETY: the device is valid while `pd` (which holds it) is borrowed; the table
        // holds `nents` entries filled by the block layer and `sges` has room for `nents`
        // SGEs.
        let mapped = unsafe {
            bindings::rswap_ib_dma_map_sg_sges(
                raw_dev,
                self.table.as_raw(),
                n,
                dir.as_raw(),
                self.sges.as_mut_ptr().cast(),
                pd.local_dma_lkey(),
            )
        };
        let nsges = usize::try_from(mapped).map_err(|_| ENOMEM)?;
        if nsges == 0 {
            return Err(ENOMEM);
        }
        // INVARIANT: just mapped on `raw_dev`, `nsges` SGEs written.
        self.mapped = Some(Mapped {
            dev: NonNull::new(raw_dev).ok_or(EINVAL)?,
            nents: n,
            nsges,
            dir,
        });
        Ok(())
    }

    /// The mapped scatterlist (`None` when not mapped).
    pub(crate) fn mapped_sg(&self) -> Option<MappedSg<'_>> {
        let m = self.mapped.as_ref()?;
        let count = i32::try_from(m.nsges).ok()?;
        // INVARIANT: while mapped, the first `nsges` entries carry the DMA mapping (type
        // invariant); the mapping is undone only through `&mut self`, after the borrow.
        Some(MappedSg {
            sgl: NonNull::new(self.table.as_ptr())?,
            count,
            _table: PhantomData,
        })
    }

    /// The SGEs of the current mapping (empty when not mapped).
    pub(crate) fn sges(&self) -> &[Sge] {
        let n = self.mapped.as_ref().map_or(0, |m| m.nsges);
        self.sges.get(..n).unwrap_or(&[])
    }

    /// Undoes the mapping, if any. `dev` must be the device it was made on, which the
    /// caller proves valid by holding it (a completion's device, a connection's device);
    /// on any other device the mapping stays (and the table with it: it cannot be filled
    /// again) and a warning is logged.
    pub(crate) fn unmap(&mut self, dev: &Device) {
        let Some(m) = self.mapped.take_if(|m| m.dev.as_ptr() == dev.as_raw()) else {
            if self.mapped.is_some() {
                pr_warn!(
                    "{}: not unmapping a scatterlist mapped on another device\n",
                    dev.name()
                );
            }
            return;
        };
        // SAFETY: the entries are mapped for `dir` on this device (type invariant), which
        // is valid while `dev` is borrowed.
        unsafe {
            bindings::rswap_ib_dma_unmap_sg(
                dev.as_raw(),
                self.table.as_raw(),
                m.nents,
                m.dir.as_raw(),
            )
        };
    }
}

/// A heap buffer of `N` bytes mapped for DMA on one device, unmapped and freed on drop.
///
/// [`DmaBuf`] is the small one every control message uses; a larger `N` (a page, for
/// one-sided I/O of a block's size) works the same way.
///
/// # Invariants
///
/// `addr` is the mapping of `buf` for `dir` on `dev`'s device, which `dev` keeps valid.
pub(crate) struct DmaBuffer<const N: usize> {
    buf: KBox<[u8; N]>,
    addr: u64,
    dev: Arc<RdmaDevice>,
    dir: Direction,
    sge: [Sge; 1],
}

/// The buffer of control messages: room for any message of the wire format.
pub(crate) type DmaBuf = DmaBuffer<128>;

impl<const N: usize> DmaBuffer<N> {
    /// The size of the buffer.
    pub(crate) const SIZE: usize = N;

    /// Allocates a buffer holding `contents` (zero-padded; at most `SIZE` bytes are used)
    /// and maps it for `dir` on `pd`'s device, described with `pd`'s local DMA key: for
    /// work requests on the QP of `pd` ([`super::Qp::pd`]). The contents are written
    /// before mapping.
    pub(crate) fn with_contents(pd: &Pd, dir: Direction, contents: &[u8]) -> Result<Self> {
        let dev = pd.rdma_device();
        let length = u32::try_from(N).map_err(|_| EINVAL)?;
        // Zeroed in place: a page-sized array does not belong on the kernel stack.
        let mut buf = KBox::<[u8; N]>::zeroed(GFP_KERNEL)?;
        let n = contents.len().min(Self::SIZE);
        buf[..n].copy_from_slice(&contents[..n]);
        let mut addr = 0u64;
        // SAFETY: the device is valid while `dev` exists, and `buf` is a live heap
        // allocation of `N` bytes.
        to_result(unsafe {
            bindings::rswap_ib_dma_map_single(
                dev.device().as_raw(),
                buf.as_mut_ptr().cast(),
                N,
                dir.as_raw(),
                &mut addr,
            )
        })?;
        let sge = [Sge(bindings::ib_sge {
            addr,
            length,
            lkey: pd.local_dma_lkey(),
        })];
        // INVARIANT: `addr` maps `buf` for `dir` on `dev`.
        Ok(Self {
            buf,
            addr,
            dev: dev.clone(),
            dir,
            sge,
        })
    }

    /// An SGE covering the whole buffer.
    pub(crate) fn sges(&self) -> &[Sge] {
        &self.sge
    }

    /// The buffer's contents once the device is done with it (after the completion of
    /// the work request that used it): synchronised for the CPU first.
    pub(crate) fn contents_for_cpu(&mut self) -> &[u8; N] {
        // SAFETY: by the type invariant `addr` maps `buf` on the device; the device no
        // longer accesses it (its work request completed).
        unsafe {
            bindings::rswap_ib_dma_sync_single_for_cpu(
                self.dev.device().as_raw(),
                self.addr,
                N,
                self.dir.as_raw(),
            )
        };
        &self.buf
    }
}

impl<const N: usize> Drop for DmaBuffer<N> {
    fn drop(&mut self) {
        // SAFETY: by the type invariant `addr` maps `buf` on the device, still valid.
        unsafe {
            bindings::rswap_ib_dma_unmap_single(
                self.dev.device().as_raw(),
                self.addr,
                N,
                self.dir.as_raw(),
            )
        };
    }
}
