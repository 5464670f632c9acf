// SPDX-License-Identifier: GPL-2.0

//! A blk-mq disk (`struct gendisk`) with its tag set.

use core::ptr::NonNull;
use kernel::{block::SECTOR_SHIFT, error::to_result, prelude::*, str::CStr, sync::Arc};

use super::{bindings, operations::Operations, tag_set::TagSet};

/// What a disk looks like.
pub(crate) struct DiskParams<'a> {
    /// The name under /dev, e.g. `rswap0`.
    pub(crate) name: &'a CStr,
    /// Capacity in bytes (a multiple of `block_size`).
    pub(crate) capacity: u64,
    /// Logical and physical block size.
    pub(crate) block_size: u32,
    /// Hardware queues.
    pub(crate) hw_queues: u32,
    /// Tags per hardware queue.
    pub(crate) queue_depth: u32,
    /// Segments per request.
    pub(crate) max_segments: u32,
    /// Largest request in bytes.
    pub(crate) max_request_bytes: u32,
}

/// A live disk, visible under /dev until dropped.
///
/// Its `block_device_operations` name this module as owner, so while the disk is open
/// (mounted, swapped on, an open file descriptor) the module cannot be unloaded.
///
/// # Invariants
///
/// `gd` was allocated on `tag_set` and added; drop deletes and puts it, then the tag set
/// is freed (field order).
#[pin_data(PinnedDrop)]
pub(crate) struct Disk<T: Operations> {
    gd: NonNull<kernel::bindings::gendisk>,
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
        let depth = params.queue_depth;
        let name = params.name;
        let capacity_sectors = params.capacity >> SECTOR_SHIFT;
        KBox::try_pin_init(
            try_pin_init!(&this in Self {
                tag_set <- TagSet::new(hw_queues, depth, driver),
                gd: {
                    // SAFETY: `this` is being initialised; `tag_set` was initialised above.
                    let set = unsafe { (*this.as_ptr()).tag_set.as_raw() };
                    let mut lim = kernel::bindings::queue_limits {
                        logical_block_size: block_size,
                        physical_block_size: block_size,
                        io_min: block_size,
                        max_hw_sectors: max_sectors,
                        max_segments,
                        ..Default::default()
                    };
                    // SAFETY: `set` is an allocated tag set, `lim` is valid for the call.
                    let gd = unsafe {
                        bindings::rswap_blk_mq_alloc_disk(set, &mut lim, core::ptr::null_mut())
                    };
                    let gd = NonNull::new(kernel::error::from_err_ptr(gd)?).ok_or(ENOMEM)?;
                    // SAFETY: `gd` is a fresh disk; `name` is NUL-terminated.
                    unsafe {
                        bindings::rswap_blk_disk_setup(gd.as_ptr(), name.as_char_ptr(), capacity_sectors)
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
                    gd
                },
            }),
            GFP_KERNEL,
        )
    }

    /// Whether anything holds the disk open (swapon, a mount, a file descriptor).
    pub(crate) fn is_open(&self) -> bool {
        // SAFETY: the disk is valid (type invariant).
        unsafe { bindings::rswap_blk_disk_openers(self.gd.as_ptr()) > 0 }
    }
}

#[pinned_drop]
impl<T: Operations> PinnedDrop for Disk<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: by the type invariant the disk was added; deleting waits for I/O in
        // flight to end and stops new I/O; the final put frees it once the last opener
        // closes it (the module stays pinned until then through the fops owner).
        unsafe {
            kernel::bindings::del_gendisk(self.gd.as_ptr());
            kernel::bindings::put_disk(self.gd.as_ptr());
        }
    }
}
