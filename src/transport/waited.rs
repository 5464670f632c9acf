// SPDX-License-Identifier: GPL-2.0

//! I/O that a task issues and waits for, outside any block request: what a disk moves on
//! its own, such as a leg's resynchronisation. A [`WaitedIo`] has a slot with pages of its
//! own; the slot goes to the transport while its work request is posted, exactly as a
//! request's does ([`super::io`]), and comes back with the completion, which wakes the
//! task. Nothing is allocated to issue or complete one.

use core::ptr::NonNull;
use kernel::{
    new_condvar, new_spinlock_irq,
    prelude::*,
    sync::{Arc, CondVar, SpinLockIrq},
    time::msecs_to_jiffies,
};

use super::{
    io::{Dir, IoDesc, IoError, IoOwner, IoSlot, Refusal},
    queue::Queue,
};
use crate::kernel_ext::{IntoRaw, SgTable};

/// How often a task waiting for a polled queue's I/O polls it (nobody else does).
const POLL_MS: u32 = 10;

/// A waited I/O's slot, with the queue it was issued on and where it goes back.
struct Held<const N: usize> {
    slot: IoSlot<(), N>,
    queue: Arc<Queue>,
    done: Arc<Done<N>>,
}

/// Where the completion puts the slot back, and wakes the task.
#[pin_data]
struct Done<const N: usize> {
    /// The slot and whether its I/O succeeded, once it completed.
    #[pin]
    back: SpinLockIrq<Option<(KBox<Held<N>>, bool)>>,
    #[pin]
    changed: CondVar,
}

/// A waited I/O while the transport owns it.
struct Posted<const N: usize>(KBox<Held<N>>);

// SAFETY: the slot is a field of a boxed `Held`, which stays in place while the box is
// given up; `from_raw` finds the same box from the field's address.
unsafe impl<const N: usize> IntoRaw for Posted<N> {
    type Target = IoSlot<(), N>;

    fn into_raw(self) -> NonNull<IoSlot<(), N>> {
        let held = KBox::into_raw(self.0);
        // SAFETY: `held` is a valid, exclusively owned `Held` (just given up by its box).
        let slot = unsafe { &raw mut (*held).slot };
        // SAFETY: a field of a non-null pointer is not null.
        unsafe { NonNull::new_unchecked(slot) }
    }

    unsafe fn from_raw(slot: NonNull<IoSlot<(), N>>) -> Self {
        // SAFETY: `slot` is the `slot` field of the `Held` that `into_raw` gave up (the
        // caller's guarantee), so its container is that box's value.
        let held = unsafe { kernel::container_of!(slot.as_ptr(), Held<N>, slot) };
        // SAFETY: `held` came from `KBox::into_raw` and is taken back once (the caller's
        // guarantee).
        Self(unsafe { KBox::from_raw(held) })
    }
}

impl<const N: usize> IoOwner for Posted<N> {
    type Slot = IoSlot<(), N>;

    fn slot(&mut self) -> &mut IoSlot<(), N> {
        &mut self.0.slot
    }

    fn queue(&self) -> &Arc<Queue> {
        &self.0.queue
    }

    fn complete(self, result: core::result::Result<(), IoError>) {
        let done = self.0.done.clone();
        *done.back.lock() = Some((self.0, result.is_ok()));
        done.changed.notify_all();
    }
}

/// One I/O at a time, issued by a task that waits for it, into or from pages of its own.
///
/// # Invariants
///
/// `held` is `Some` except while [`WaitedIo::run`] has the slot posted.
pub(crate) struct WaitedIo<const N: usize> {
    held: Option<KBox<Held<N>>>,
    done: Arc<Done<N>>,
}

impl<const N: usize> WaitedIo<N> {
    /// An I/O slot with `pages` pages of its own, to be issued on `queue` (or others).
    /// Sleeps.
    pub(crate) fn new(queue: &Arc<Queue>, pages: usize) -> Result<Self> {
        let done = Arc::pin_init(
            pin_init!(Done {
                back <- new_spinlock_irq!(None, "rswap::transport::waited::Done::back"),
                changed <- new_condvar!("rswap::transport::waited::Done::changed"),
            }),
            GFP_KERNEL,
        )?;
        let mut held = KBox::new(
            Held {
                slot: IoSlot::default(),
                queue: queue.clone(),
                done: done.clone(),
            },
            GFP_KERNEL,
        )?;
        held.slot.table().ok_or(EINVAL)?.reserve_own_pages(pages)?;
        Ok(Self {
            held: Some(held),
            done,
        })
    }

    /// The slot's scatterlist, with its own pages to fill or read.
    pub(crate) fn table(&mut self) -> Result<&mut SgTable<N>> {
        self.held
            .as_mut()
            .and_then(|h| h.slot.table())
            .ok_or(EINVAL)
    }

    /// Moves the first `bytes` of its own pages `dir` at byte `offset` of `queue`'s region,
    /// and waits until that is done. `EBUSY` if the queue is out of a resource now (try
    /// again soon), `EAGAIN` if it is recovering, `EIO` if it is dead or the I/O failed.
    /// Sleeps.
    pub(crate) fn run(&mut self, queue: &Arc<Queue>, dir: Dir, offset: u64, bytes: u32) -> Result {
        super::fault::waited_io()?;
        let nents = self.table()?.use_own_bytes(bytes as usize);
        if nents == 0 {
            return Err(EINVAL);
        }
        let mut held = self.held.take().ok_or(EINVAL)?;
        held.queue = queue.clone();
        let desc = IoDesc {
            dir,
            offset,
            bytes,
            nents,
        };
        if let Err((why, Posted(held))) = Queue::submit(queue, Posted(held), desc) {
            // INVARIANT: the slot is back.
            self.held = Some(held);
            return Err(match why {
                Refusal::Busy => EBUSY,
                Refusal::Wait => EAGAIN,
                Refusal::Fail(_) => EIO,
            });
        }
        // The transport completes every I/O it took, once (its link's teardown flushes
        // them): the slot comes back.
        loop {
            let mut back = self.done.back.lock();
            if let Some((held, ok)) = back.take() {
                drop(back);
                // INVARIANT: the slot is back.
                self.held = Some(held);
                return if ok { Ok(()) } else { Err(EIO) };
            }
            // A signal (none comes to a kernel thread) changes nothing: wait on.
            let _ = self
                .done
                .changed
                .wait_interruptible_timeout(&mut back, msecs_to_jiffies(POLL_MS));
            drop(back);
            queue.poll();
        }
    }
}
