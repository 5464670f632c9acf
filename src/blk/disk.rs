// SPDX-License-Identifier: GPL-2.0

//! A blk-mq disk (`struct gendisk`) with its tag set.

use core::ptr::NonNull;
use kernel::{
    block::SECTOR_SHIFT, error::to_result, page::PAGE_SIZE, prelude::*, str::CStr, sync::Arc,
};

use super::{
    bindings, events::DiskEvents, openers::Openers, operations::Operations, tag_set::TagSet,
};

/// What a disk looks like.
pub(crate) struct DiskParams<'a> {
    /// The name under /dev, e.g. `rswap0`.
    pub(crate) name: &'a CStr,
    /// Capacity in bytes (a multiple of `block_size`).
    pub(crate) capacity: u64,
    /// Logical and physical block size.
    pub(crate) block_size: u32,
    /// Hardware queues for all I/O.
    pub(crate) hw_queues: u32,
    /// Hardware queues for polled I/O only, after those (see [`TagSet::new`]).
    pub(crate) poll_queues: u32,
    /// Tags per hardware queue.
    pub(crate) queue_depth: u32,
    /// Milliseconds a request may take before it times out (the queue's `io_timeout`).
    pub(crate) io_timeout_ms: u32,
    /// Segments per request.
    pub(crate) max_segments: u32,
    /// Largest request in bytes.
    pub(crate) max_request_bytes: u32,
    /// No request crosses a multiple of this many bytes (0: no such boundary).
    pub(crate) chunk_bytes: u32,
    /// Every segment of every request is one whole page (`dma_alignment` of a page),
    /// for a driver that processes requests page by page ([`super::OwnedRequest::pages`]).
    pub(crate) whole_pages: bool,
    /// The disk declares itself synchronous (`BLK_FEAT_SYNCHRONOUS`, as brd and zram do):
    /// a swap area on it reads swapped-out pages back one by one, waiting for each,
    /// without the swap cache's readahead, and writes each page out on its own.
    pub(crate) synchronous: bool,
    /// The segments of a request are page-contiguous: every one but the first starts at
    /// a page boundary and every one but the last ends at one (a virt boundary of a
    /// page), for a driver that maps a request's pages as one range.
    pub(crate) page_contiguous: bool,
    /// Where the driver sends the disk's change events (see [`DiskEvents`]), if it does.
    pub(crate) events: Option<Arc<DiskEvents>>,
}

/// A live disk, visible under /dev until dropped.
///
/// Its `block_device_operations` name this module as owner, so while the disk is open
/// (mounted, swapped on, an open file descriptor) the module cannot be unloaded; they
/// count the openers in [`Openers`], which [`Disk::shut`] consults.
///
/// # Invariants
///
/// `gd` was allocated on `tag_set` and added; its `private_data` is `openers`, one
/// reference of which it owns. Drop deletes and puts the disk, then the tag set is freed
/// (field order).
#[pin_data(PinnedDrop)]
pub(crate) struct Disk<T: Operations> {
    gd: NonNull<kernel::bindings::gendisk>,
    openers: Arc<Openers>,
    events: Option<Arc<DiskEvents>>,
    #[pin]
    tag_set: TagSet<T>,
}

// SAFETY: gendisk operations used here are thread safe.
unsafe impl<T: Operations> Send for Disk<T> {}
// SAFETY: as above.
unsafe impl<T: Operations> Sync for Disk<T> {}

impl<T: Operations> Disk<T> {
    /// Creates the tag set and the disk and adds it (it appears under /dev).
    pub(crate) fn new(params: &DiskParams<'_>, driver: Arc<T>) -> Result<Pin<KBox<Self>>> {
        let block_size = params.block_size;
        if !block_size.is_power_of_two() || !(512..=4096).contains(&block_size) {
            return Err(EINVAL);
        }
        if params.capacity % u64::from(block_size) != 0 || params.capacity == 0 {
            return Err(EINVAL);
        }
        let max_segments = u16::try_from(params.max_segments.max(1)).unwrap_or(u16::MAX);
        let max_sectors =
            (params.max_request_bytes >> SECTOR_SHIFT).max(block_size >> SECTOR_SHIFT);
        let hw_queues = params.hw_queues;
        let poll_queues = params.poll_queues;
        let whole_pages = params.whole_pages;
        let chunk_sectors = params.chunk_bytes >> SECTOR_SHIFT;
        let features = if params.synchronous {
            bindings::RSWAP_BLK_FEAT_SYNCHRONOUS
        } else {
            0
        };
        let page_contiguous = params.page_contiguous;
        if whole_pages && block_size as usize != PAGE_SIZE {
            return Err(EINVAL);
        }
        let depth = params.queue_depth;
        let io_timeout_ms = params.io_timeout_ms;
        let name = params.name;
        let capacity_sectors = params.capacity >> SECTOR_SHIFT;
        let events = params.events.clone();
        let openers = Arc::pin_init(Openers::new(), GFP_KERNEL)?;
        // The disk's reference, taken back in `drop`.
        let disk_ref = Arc::into_raw(openers.clone());
        let disk = KBox::try_pin_init(
            try_pin_init!(&this in Self {
                tag_set <- TagSet::new(hw_queues, poll_queues, depth, io_timeout_ms, driver),
                gd: {
                    // SAFETY: `this` is being initialised; `tag_set` was initialised above.
                    let set = unsafe { (*this.as_ptr()).tag_set.as_raw() };
                    let mut lim = kernel::bindings::queue_limits {
                        logical_block_size: block_size,
                        physical_block_size: block_size,
                        io_min: block_size,
                        max_hw_sectors: max_sectors,
                        chunk_sectors,
                        max_segments,
                        dma_alignment: if whole_pages { PAGE_SIZE as u32 - 1 } else { 0 },
                        features,
                        virt_boundary_mask: if page_contiguous { PAGE_SIZE - 1 } else { 0 },
                        ..Default::default()
                    };
                    // SAFETY: `set` is an allocated tag set, `lim` is valid for the call.
                    let gd = unsafe {
                        bindings::rswap_blk_mq_alloc_disk(set, &mut lim, core::ptr::null_mut())
                    };
                    let gd = NonNull::new(kernel::error::from_err_ptr(gd)?).ok_or(ENOMEM)?;
                    // SAFETY: `gd` is a fresh disk; `name` is NUL-terminated; `disk_ref`
                    // is a reference to an `Openers` that the disk owns from now on.
                    unsafe {
                        bindings::rswap_blk_disk_setup(
                            gd.as_ptr(),
                            name.as_char_ptr(),
                            capacity_sectors,
                            disk_ref.cast_mut().cast(),
                        )
                    };
                    // SAFETY: `gd` is allocated and set up.
                    let ret = unsafe {
                        kernel::bindings::device_add_disk(
                            core::ptr::null_mut(),
                            gd.as_ptr(),
                            core::ptr::null_mut(),
                        )
                    };
                    if let Err(e) = to_result(ret) {
                        // SAFETY: the disk was never added; putting it frees it.
                        unsafe { kernel::bindings::put_disk(gd.as_ptr()) };
                        return Err(e);
                    }
                    if let Some(events) = &events {
                        events.attach(gd);
                    }
                    gd
                },
                openers,
                events,
            }),
            GFP_KERNEL,
        );
        if disk.is_err() {
            // SAFETY: no disk was added, so nothing else uses the reference taken above.
            drop(unsafe { Arc::from_raw(disk_ref) });
        }
        disk
    }

    /// Makes the disk refuse every open from now on, unless something holds it open
    /// (swapon, a mount, a file descriptor): then `EBUSY`. Race-free against an open.
    pub(crate) fn shut(&self) -> Result {
        self.openers.shut()
    }
}

#[pinned_drop]
impl<T: Operations> PinnedDrop for Disk<T> {
    fn drop(self: Pin<&mut Self>) {
        if let Some(events) = &self.events {
            events.detach();
        }
        self.openers.force_shut();
        // SAFETY: by the type invariant the disk was added; deleting waits for I/O in
        // flight and for an open in progress to end, and stops new I/O.
        unsafe { kernel::bindings::del_gendisk(self.gd.as_ptr()) };
        // Nothing opens the disk any more. Its reference to the openers goes, unless an
        // opener is left (its release still needs them): the owner of a disk shuts it
        // before dropping it, so that is a bug, and a leak beats a use after free.
        let left = self.openers.force_shut();
        if left > 0 {
            // SAFETY: the disk is valid until the put below; its name is NUL-terminated.
            let name = unsafe { CStr::from_char_ptr((*self.gd.as_ptr()).disk_name.as_ptr()) };
            pr_warn!("{}: deleted with {} openers left\n", name, left);
        }
        // SAFETY: as above; the final put frees the disk once the last opener closes it
        // (the module stays pinned until then through the fops owner).
        unsafe { kernel::bindings::put_disk(self.gd.as_ptr()) };
        if left == 0 {
            // SAFETY: the reference handed to the disk in `new` (type invariant); the
            // disk is deleted and no opener is left to use it.
            drop(unsafe { Arc::from_raw(Arc::as_ptr(&self.openers)) });
        }
    }
}
