// SPDX-License-Identifier: GPL-2.0

//! Confidential swap: an encrypted disk seals every 4 KiB block (AES-256-GCM) before its
//! RDMA WRITE and opens it after its RDMA READ, so the memory server holds only
//! ciphertext and cannot change a block unnoticed.
//!
//! The key is random per `enable` and lives only in the kernel's transform. What proves a
//! block is kept here, never on the server: for each block, the nonce it was last sealed
//! under and its tag ([`BlockSeal`], 24 bytes per 4 KiB, i.e. 6 MiB per GiB of disk). The
//! block's number is the associated data. So a block the server altered, one it moved
//! from another offset and an old version it replays all fail the tag: the read ends with
//! an I/O error and is counted, and its pages are zeroed, never handed up.
//!
//! Nonces come from one counter per disk, so none is used twice under a key. A write's
//! seals are published when its RDMA WRITE completes. So that the seal of a block always
//! names what the server holds, a write *claims* its blocks from its sealing to its end
//! (one bit per block): a second write of a claimed block, from any queue, waits (blk-mq
//! issues it again), and so does a read, which could otherwise fetch a half-placed write.
//! A read already under way when a write of its block starts or ends may fetch either
//! version: if it does not verify and its block's seal changed meanwhile, it is read
//! again rather than reported as forged. A block never written reads as zeros without
//! looking at the server's bytes.
//!
//! Each request has its own preallocated [`RequestCrypt`]: a crypto request and the seals
//! of its write in flight. A write is sealed into bounce pages (a write must not change
//! the caller's pages), which are its scatterlist's own pages, preallocated with it
//! (`kernel_ext::SgTable::reserve_own_pages`). Reads are opened in place in the request's pages. Both run where the request is:
//! sealing in `queue_rq`, opening in the completion (softirqs disabled), with a synchronous
//! transform; nothing allocates or sleeps.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{
    alloc::KVVec,
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc,
    time::{Instant, Monotonic},
};

use crate::{
    blk::{Filled, RqPages, Sent},
    kernel_ext::{AeadTag, AesGcm, IoSink, OpenError, PageCipher, ReclaimWorkqueue},
};

/// The largest request of an encrypted disk, in pages: also the bounce pages of each
/// request (32 KiB of memory per tag).
pub(super) const CRYPT_PAGES: usize = 8;

/// Bytes of one block (one page).
const BLOCK: u64 = PAGE_SIZE as u64;

/// A [`BlockSeal`] nonce: the block was never written.
const NEVER_WRITTEN: u64 = 0;
/// A [`BlockSeal`] nonce: the last write of the block failed, so what the server holds is
/// unknown (no nonce reaches it: one per write would take centuries).
const WRITE_FAILED: u64 = u64::MAX;

/// What the client keeps to verify one block: the nonce it was last sealed under (or
/// [`NEVER_WRITTEN`], [`WRITE_FAILED`]) and the two halves of its tag.
#[derive(Default)]
struct BlockSeal {
    nonce: AtomicU64,
    tag: [AtomicU64; 2],
}

impl BlockSeal {
    fn store(&self, nonce: u64, tag: &AeadTag) {
        let (lo, hi) = split(tag);
        self.tag[0].store(lo, Ordering::Relaxed);
        self.tag[1].store(hi, Ordering::Relaxed);
        // Last, with release: a reader that sees this nonce sees its tag.
        self.nonce.store(nonce, Ordering::Release);
    }

    fn load(&self) -> (u64, AeadTag) {
        let nonce = self.nonce.load(Ordering::Acquire);
        let lo = self.tag[0].load(Ordering::Relaxed);
        let hi = self.tag[1].load(Ordering::Relaxed);
        (nonce, join(lo, hi))
    }
}

fn split(tag: &AeadTag) -> (u64, u64) {
    let mut lo = [0u8; 8];
    let mut hi = [0u8; 8];
    lo.copy_from_slice(&tag[..8]);
    hi.copy_from_slice(&tag[8..]);
    (u64::from_le_bytes(lo), u64::from_le_bytes(hi))
}

fn join(lo: u64, hi: u64) -> AeadTag {
    let mut tag = [0u8; 16];
    tag[..8].copy_from_slice(&lo.to_le_bytes());
    tag[8..].copy_from_slice(&hi.to_le_bytes());
    tag
}

/// The encryption state of one disk.
pub(super) struct DiskCrypt {
    aead: Arc<AesGcm>,
    /// The last nonce handed out.
    nonce: AtomicU64,
    /// One seal per block of the disk.
    seals: KVVec<BlockSeal>,
    /// One bit per block: claimed by a write between its sealing and its end.
    writing: KVVec<AtomicU64>,
    /// Blocks sealed and opened, and reads that failed verification.
    sealed: AtomicU64,
    opened: AtomicU64,
    forged: AtomicU64,
    /// Nanoseconds spent sealing and opening (what encryption costs the CPUs).
    seal_ns: AtomicU64,
    open_ns: AtomicU64,
    /// Where reads are opened, if not in their completion (the `crypt_workqueue` module
    /// parameter).
    workqueue: Option<ReclaimWorkqueue>,
}

/// The blocks of `bytes` at byte `offset`.
fn blocks(offset: u64, bytes: u32) -> core::ops::Range<u64> {
    let first = offset / BLOCK;
    first..first + u64::from(bytes).div_ceil(BLOCK)
}

/// Adds the nanoseconds since `start` to `total`.
fn add_elapsed(total: &AtomicU64, start: Instant<Monotonic>) {
    let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(0);
    total.fetch_add(ns, Ordering::Relaxed);
}

/// The encryption counters of a disk (see [`DiskCrypt::counters`]).
pub(super) struct CryptCounters {
    /// Blocks sealed (written), and opened (read and verified).
    pub(super) sealed: u64,
    pub(super) opened: u64,
    /// Reads that failed verification.
    pub(super) auth_failures: u64,
    /// Nanoseconds spent sealing and opening.
    pub(super) seal_ns: u64,
    pub(super) open_ns: u64,
}

/// Why an encrypted request cannot go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CryptError {
    /// A block of the read did not verify: the server altered, moved or replayed it.
    Forged {
        /// The first such block.
        block: u64,
    },
    /// A write of one of its blocks is under way: issue it again later.
    Busy,
    /// A write of a block of this read started or ended while it was read, and the block
    /// did not verify: read it again.
    Raced,
    /// The request is not whole pages, or beyond the disk, or crypto failed otherwise.
    Failed(&'static str),
}

impl DiskCrypt {
    /// The state of a disk of `size` bytes, with a fresh random key; reads are opened in a
    /// workqueue of its own if `in_workqueue`. Sleeps.
    pub(super) fn new(size: u64, in_workqueue: bool) -> Result<Self> {
        let workqueue = match in_workqueue {
            true => Some(ReclaimWorkqueue::new(c"rswap_crypt")?),
            false => None,
        };
        let aead = Arc::new(AesGcm::with_random_key()?, GFP_KERNEL)?;
        let blocks = usize::try_from(size / BLOCK).map_err(|_| EINVAL)?;
        let mut seals = KVVec::with_capacity(blocks, GFP_KERNEL)?;
        for _ in 0..blocks {
            seals.push(BlockSeal::default(), GFP_KERNEL)?;
        }
        let mut writing = KVVec::with_capacity(blocks.div_ceil(64), GFP_KERNEL)?;
        for _ in 0..blocks.div_ceil(64) {
            writing.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        Ok(Self {
            aead,
            nonce: AtomicU64::new(0),
            seals,
            writing,
            sealed: AtomicU64::new(0),
            opened: AtomicU64::new(0),
            forged: AtomicU64::new(0),
            seal_ns: AtomicU64::new(0),
            open_ns: AtomicU64::new(0),
            workqueue,
        })
    }

    /// The workqueue reads are opened in, if not in their completion.
    pub(super) fn workqueue(&self) -> Option<&ReclaimWorkqueue> {
        self.workqueue.as_ref()
    }

    /// The implementation of AES-GCM in use.
    pub(super) fn driver(&self) -> &CStr {
        self.aead.driver()
    }

    /// Bytes this state takes besides the per-request state and bounce pages.
    pub(super) fn seal_bytes(&self) -> usize {
        self.seals.len() * core::mem::size_of::<BlockSeal>()
    }

    /// A request's own crypto state. Sleeps.
    pub(super) fn request_state(&self) -> Result<RequestCrypt> {
        Ok(RequestCrypt {
            cipher: PageCipher::new(&self.aead)?,
            pending: [(0, [0; 16]); CRYPT_PAGES],
            count: 0,
            claimed: None,
            read_nonces: [0; CRYPT_PAGES],
        })
    }

    /// The word and bit of `block` in `writing`.
    fn writing_bit(&self, block: u64) -> Option<(&AtomicU64, u64)> {
        let word = self.writing.get(usize::try_from(block / 64).ok()?)?;
        Some((word, 1 << (block % 64)))
    }

    /// Claims `block` for a write; `false` if another write holds it.
    fn claim(&self, block: u64) -> bool {
        self.writing_bit(block)
            .is_some_and(|(w, bit)| w.fetch_or(bit, Ordering::AcqRel) & bit == 0)
    }

    /// Whether a write holds `block`.
    fn is_writing(&self, block: u64) -> bool {
        self.writing_bit(block)
            .is_some_and(|(w, bit)| w.load(Ordering::Acquire) & bit != 0)
    }

    /// Lets go of the blocks `rc` claimed, if any.
    fn release(&self, rc: &mut RequestCrypt) {
        if let Some((first, n)) = rc.claimed.take() {
            for block in first..first + n as u64 {
                if let Some((w, bit)) = self.writing_bit(block) {
                    w.fetch_and(!bit, Ordering::AcqRel);
                }
            }
        }
    }

    /// Claims the `n` blocks from `first` for the write `rc` is, unless it holds them
    /// already (it was issued again); [`CryptError::Busy`] if another write holds one.
    fn claim_all(&self, rc: &mut RequestCrypt, first: u64, n: usize) -> Result<(), CryptError> {
        if rc.claimed.is_some() {
            return Ok(());
        }
        for i in 0..n as u64 {
            if !self.claim(first + i) {
                rc.claimed = Some((first, i as usize));
                self.release(rc);
                return Err(CryptError::Busy);
            }
        }
        rc.claimed = Some((first, n));
        Ok(())
    }

    /// A read of `bytes` at byte `offset` is about to be posted: [`CryptError::Busy`] while
    /// a write holds one of its blocks; otherwise the blocks' nonces are noted in `rc`, to
    /// tell a read that raced a write from a forged block.
    pub(super) fn read_begin(
        &self,
        rc: &mut RequestCrypt,
        offset: u64,
        bytes: u32,
    ) -> Result<(), CryptError> {
        for (block, noted) in blocks(offset, bytes).zip(rc.read_nonces.iter_mut()) {
            if self.is_writing(block) {
                return Err(CryptError::Busy);
            }
            *noted = self
                .seal(block)
                .map_or(0, |s| s.nonce.load(Ordering::Acquire));
        }
        Ok(())
    }

    /// A write of `bytes` at byte `offset` ended with an error, after `rc` sealed it or
    /// before: it may have reached the server or not, so its blocks' seals are withdrawn
    /// (see [`WRITE_FAILED`]), and its claims let go of.
    pub(super) fn write_failed(&self, rc: Option<&mut RequestCrypt>, offset: u64, bytes: u32) {
        self.withdraw(offset, bytes);
        if let Some(rc) = rc {
            self.release(rc);
        }
    }

    /// Withdraws the seals of the blocks of a write at byte `offset` of `bytes` that failed:
    /// it may have reached the server or not.
    fn withdraw(&self, offset: u64, bytes: u32) {
        for block in blocks(offset, bytes) {
            if let Some(seal) = self.seal(block) {
                seal.nonce.store(WRITE_FAILED, Ordering::Release);
            }
        }
    }

    /// The seal of `block`, if the disk has it.
    fn seal(&self, block: u64) -> Option<&BlockSeal> {
        self.seals.get(usize::try_from(block).ok()?)
    }

    /// Seals the pages of a write starting at byte `offset` into the bounce pages `into`,
    /// and returns how many. Their seals wait in `rc` until [`Self::commit`].
    pub(super) fn seal_write<const N: usize>(
        &self,
        rc: &mut RequestCrypt,
        pages: &RqPages<'_, N, Sent>,
        into: impl Iterator<Item = impl IoSink>,
        offset: u64,
    ) -> core::result::Result<usize, CryptError> {
        let first = offset / BLOCK;
        let last = (first + pages.len() as u64).checked_sub(1);
        if pages.len() > CRYPT_PAGES || last.and_then(|b| self.seal(b)).is_none() {
            return Err(CryptError::Failed(
                "outside the disk, empty or too large to encrypt",
            ));
        }
        self.claim_all(rc, first, pages.len())?;
        rc.count = 0;
        let start = Instant::now();
        for (i, (src, dst)) in pages.iter().zip(into).enumerate() {
            let block = first + i as u64;
            let nonce = self.nonce.fetch_add(1, Ordering::Relaxed) + 1;
            let tag = rc
                .cipher
                .seal(&src, &dst, nonce, block)
                .map_err(|_| CryptError::Failed("sealing a page failed"))?;
            rc.pending[i] = (nonce, tag);
            rc.count = i + 1;
        }
        self.sealed.fetch_add(rc.count as u64, Ordering::Relaxed);
        add_elapsed(&self.seal_ns, start);
        Ok(rc.count)
    }

    /// The write `rc` sealed (at byte `offset`) is in the server's memory: its blocks are
    /// verified against the new seals from now on, and free for the next write.
    pub(super) fn commit(&self, rc: &mut RequestCrypt, offset: u64) {
        let first = offset / BLOCK;
        for (i, (nonce, tag)) in rc.pending.iter().take(rc.count).enumerate() {
            if let Some(seal) = self.seal(first + i as u64) {
                seal.store(*nonce, tag);
            }
        }
        self.release(rc);
    }

    /// Opens, in place, the pages of a read at byte `offset` that its RDMA READ filled
    /// with ciphertext. If any does not verify, every page of the request is zeroed and
    /// the first such block is returned.
    pub(super) fn open_read<const N: usize>(
        &self,
        rc: &mut RequestCrypt,
        pages: &RqPages<'_, N, Filled>,
        offset: u64,
    ) -> core::result::Result<(), CryptError> {
        let result = self.open_pages(rc, pages, offset);
        if let Err(CryptError::Forged { .. }) = result {
            self.count_forged();
        }
        result
    }

    /// [`Self::open_read`], but a block that does not verify is not counted: a disk over
    /// several servers may still rebuild it from other fragments.
    pub(super) fn open_pages<const N: usize>(
        &self,
        rc: &mut RequestCrypt,
        pages: &RqPages<'_, N, Filled>,
        offset: u64,
    ) -> core::result::Result<(), CryptError> {
        let first = offset / BLOCK;
        let start = Instant::now();
        let mut result = Ok(());
        for (i, page) in pages.iter().enumerate() {
            result = self.open_block(rc, &page, first + i as u64, i);
            if result.is_err() {
                break;
            }
        }
        match result {
            Ok(()) => self.opened(pages.len(), start),
            Err(_) => {
                // Nothing of a request that failed is handed up, not even its good pages,
                // nor the server's bytes.
                for page in pages.iter() {
                    let _ = page.zero();
                }
            }
        }
        result
    }

    /// Opens, in place, `page`: block `block`, the `i`th of its read (whose nonces
    /// [`Self::read_begin`] noted in `rc`). On an error the page holds garbage, and a
    /// block that does not verify is not counted (see [`Self::count_forged`]): a disk
    /// over several servers may still rebuild it from other fragments.
    pub(super) fn open_block(
        &self,
        rc: &mut RequestCrypt,
        page: &impl IoSink,
        block: u64,
        i: usize,
    ) -> core::result::Result<(), CryptError> {
        let Some(seal) = self.seal(block) else {
            return Err(CryptError::Failed("outside the disk"));
        };
        let (nonce, tag) = seal.load();
        if nonce == WRITE_FAILED {
            return Err(CryptError::Failed("the last write of this block failed"));
        }
        if nonce == NEVER_WRITTEN {
            // Never written: zeros, whatever the server holds.
            return page
                .zero()
                .map_err(|_| CryptError::Failed("zeroing a page failed"));
        }
        match rc.cipher.open(page, nonce, block, &tag) {
            Ok(()) => Ok(()),
            Err(OpenError::Forged) => {
                // A write of the block started or ended since the read was posted: it may
                // have fetched the other version.
                let noted = rc.read_nonces.get(i).copied().unwrap_or(0);
                if self.is_writing(block) || seal.nonce.load(Ordering::Acquire) != noted {
                    return Err(CryptError::Raced);
                }
                Err(CryptError::Forged { block })
            }
            Err(OpenError::Failed(_)) => Err(CryptError::Failed("opening a page failed")),
        }
    }

    /// Whether `page`, the ciphertext of block `block` (the `i`th of a read whose nonces
    /// [`Self::read_begin`] noted in `rc`), is what the disk last wrote there, for a
    /// rebuild that copies it to another server: the page is opened in place (it holds
    /// the plaintext or garbage after) and nothing is counted. A block never written, one
    /// whose last write failed and one written since the read began are taken as they are
    /// (`true`): none of them is read back as data, or the write that changed it rewrites
    /// the copy.
    pub(super) fn verifies(
        &self,
        rc: &mut RequestCrypt,
        page: &impl IoSink,
        block: u64,
        i: usize,
    ) -> core::result::Result<bool, CryptError> {
        match self.open_block(rc, page, block, i) {
            Ok(()) | Err(CryptError::Raced) => Ok(true),
            Err(CryptError::Forged { .. }) => Ok(false),
            Err(_) if self.seal(block).is_some_and(|s| s.load().0 == WRITE_FAILED) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Counts `n` blocks opened since `start`.
    pub(super) fn opened(&self, n: usize, start: Instant<Monotonic>) {
        self.opened.fetch_add(n as u64, Ordering::Relaxed);
        add_elapsed(&self.open_ns, start);
    }

    /// Counts a read that failed verification for good.
    pub(super) fn count_forged(&self) {
        self.forged.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters, for the `stats` attribute.
    pub(super) fn counters(&self) -> CryptCounters {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CryptCounters {
            sealed: get(&self.sealed),
            opened: get(&self.opened),
            auth_failures: get(&self.forged),
            seal_ns: get(&self.seal_ns),
            open_ns: get(&self.open_ns),
        }
    }
}

/// The crypto state of one request, preallocated with it: its crypto request and the
/// seals of the write in flight.
pub(super) struct RequestCrypt {
    cipher: PageCipher,
    pending: [(u64, AeadTag); CRYPT_PAGES],
    count: usize,
    /// The blocks (first, how many) this request's write claimed and holds.
    claimed: Option<(u64, usize)>,
    /// The nonces of this read's blocks when it was posted.
    read_nonces: [u64; CRYPT_PAGES],
}
