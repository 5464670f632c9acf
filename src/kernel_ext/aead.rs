// SPDX-License-Identifier: GPL-2.0

//! AES-GCM of whole pages from the kernel crypto API (`gcm(aes)`), for encrypted targets.
//!
//! [`AesGcm`] is a synchronous transform keyed once; [`PageCipher`] is one preallocated
//! request on it, which seals (encrypts and authenticates) or opens (decrypts and
//! verifies) one page at a time without allocating or sleeping, so it can run in
//! `queue_rq` and in completions (softirq). As with [`super::HmacSha256`], a few C
//! functions (`helpers.c` beside this file) do what Rust cannot call: the Rust side sees
//! the transform and the request only as pointers.

use core::ptr::NonNull;
use kernel::{error::from_err_ptr, ffi::c_void, prelude::*, sync::Arc};

use super::{IoSink, IoSource};

// `struct page *` is `*mut c_void` in these declarations: `struct page` holds types that
// the FFI-safety lint rejects, and the C side only passes the pointer on.

/// `struct crypto_aead`, only ever behind a pointer.
#[repr(C)]
struct CryptoAead {
    _opaque: [u8; 0],
}

/// `struct rswap_aead_req` of `helpers.h`, only ever behind a pointer.
#[repr(C)]
struct AeadReq {
    _opaque: [u8; 0],
}

extern "C" {
    fn rswap_aes_gcm_new(key: *const u8, len: u32) -> *mut CryptoAead;
    fn rswap_aes_gcm_free(tfm: *mut CryptoAead);
    fn rswap_aes_gcm_driver(tfm: *mut CryptoAead) -> *const kernel::ffi::c_char;
    fn rswap_aead_req_new(tfm: *mut CryptoAead) -> *mut AeadReq;
    fn rswap_aead_req_free(r: *mut AeadReq);
    fn rswap_aead_seal(
        r: *mut AeadReq,
        src: *mut c_void,
        dst: *mut c_void,
        nonce: u64,
        block: u64,
        tag: *mut u8,
    ) -> i32;
    fn rswap_aead_open(
        r: *mut AeadReq,
        page: *mut c_void,
        nonce: u64,
        block: u64,
        tag: *const u8,
    ) -> i32;
}

/// Bytes of the authentication tag of a sealed page (`RSWAP_AEAD_TAG_LEN`).
pub(crate) const TAG_LEN: usize = 16;

/// The tag that authenticates one sealed page.
pub(crate) type Tag = [u8; TAG_LEN];

/// Bytes of an AES-256 key.
const KEY_LEN: usize = 32;

/// A synchronous `gcm(aes)` transform with a random 256-bit key that only the kernel
/// ever holds (it is not kept anywhere but in the transform).
///
/// # Invariants
///
/// `tfm` came from `rswap_aes_gcm_new` with its key and tag size set, and is freed only
/// by drop.
pub(crate) struct AesGcm {
    tfm: NonNull<CryptoAead>,
}

// SAFETY: the transform is not tied to a thread; it is freed from whichever drops it.
unsafe impl Send for AesGcm {}
// SAFETY: after the key is set, requests on one transform may run concurrently: each
// keeps its state in a request of its own.
unsafe impl Sync for AesGcm {}

impl AesGcm {
    /// A transform keyed with fresh random bytes, once the kernel's random number
    /// generator is seeded. Sleeps.
    pub(crate) fn with_random_key() -> Result<Self> {
        let mut key = [0u8; KEY_LEN];
        super::random_key_bytes(&mut key)?;
        // SAFETY: `key` is valid for `KEY_LEN` bytes; the function copies it.
        let tfm = from_err_ptr(unsafe { rswap_aes_gcm_new(key.as_ptr(), KEY_LEN as u32) });
        // The transform has its own copy (expanded); wipe this one.
        // SAFETY: `key` is a live local array; a volatile write is not optimised away.
        unsafe { core::ptr::write_volatile(&mut key, [0u8; KEY_LEN]) };
        // INVARIANT: allocated and keyed just now.
        Ok(Self {
            tfm: NonNull::new(tfm?).ok_or(ENOMEM)?,
        })
    }

    /// The implementation the crypto API picked (e.g. `generic-gcm-aesni`), for the log.
    pub(crate) fn driver(&self) -> &CStr {
        // SAFETY: the transform is valid (type invariant); its algorithm's driver name is
        // a NUL-terminated string that lives as long as the transform holds the algorithm.
        unsafe { CStr::from_char_ptr(rswap_aes_gcm_driver(self.tfm.as_ptr())) }
    }
}

impl Drop for AesGcm {
    fn drop(&mut self) {
        // SAFETY: allocated by `rswap_aes_gcm_new` (type invariant), freed once here; no
        // request on it is left (each holds an `Arc` of this transform).
        unsafe { rswap_aes_gcm_free(self.tfm.as_ptr()) };
    }
}

/// Why a page did not open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// The tag does not match: the page, its nonce or its block was not what was sealed.
    Forged,
    /// The crypto API failed otherwise (this errno).
    Failed(Error),
}

/// One request on an [`AesGcm`] transform, preallocated for one block request: seals and
/// opens pages one at a time, without allocating or sleeping.
///
/// # Invariants
///
/// `req` came from `rswap_aead_req_new` on `_aead`'s transform, which `_aead` keeps alive,
/// and is freed only by drop.
pub(crate) struct PageCipher {
    req: NonNull<AeadReq>,
    _aead: Arc<AesGcm>,
}

// SAFETY: the request is plain memory owned by this value; the transform is `Sync`.
unsafe impl Send for PageCipher {}

impl PageCipher {
    /// A request on `aead`. Sleeps.
    pub(crate) fn new(aead: &Arc<AesGcm>) -> Result<Self> {
        // SAFETY: the transform is valid (type invariant of `AesGcm`).
        let req = unsafe { rswap_aead_req_new(aead.tfm.as_ptr()) };
        // INVARIANT: allocated on `aead`'s transform, which the clone keeps alive.
        Ok(Self {
            req: NonNull::new(req).ok_or(ENOMEM)?,
            _aead: aead.clone(),
        })
    }

    /// Encrypts `src` into `dst` under `nonce` with `block` as associated data, and
    /// returns the tag. `nonce` must never be used twice with one transform (or the key
    /// stream repeats; that is not memory safety, but confidentiality). If `src` changes
    /// meanwhile, some mix of its old and new bytes is sealed: the tag is computed over
    /// the ciphertext in `dst`, so the sealed page opens to exactly that mix.
    pub(crate) fn seal(
        &mut self,
        src: &impl IoSource,
        dst: &impl IoSink,
        nonce: u64,
        block: u64,
    ) -> Result<Tag> {
        let mut tag = [0u8; TAG_LEN];
        // SAFETY: the request is valid on a keyed transform (type invariant) and used by
        // this call alone (`&mut self`); nobody else uses `dst` (`IoSink`), and `src` may
        // be read, its other writers accepting a mix (`IoSource`); both stay allocated
        // during the call; `tag` has room for `TAG_LEN` bytes.
        let ret = unsafe {
            rswap_aead_seal(
                self.req.as_ptr(),
                src.page().as_ptr().cast(),
                dst.page().as_ptr().cast(),
                nonce,
                block,
                tag.as_mut_ptr(),
            )
        };
        kernel::error::to_result(ret)?;
        Ok(tag)
    }

    /// Decrypts `page` in place, if `tag` proves that it is what [`Self::seal`] made with
    /// `nonce` and `block` under this transform; otherwise the page holds garbage.
    pub(crate) fn open(
        &mut self,
        page: &impl IoSink,
        nonce: u64,
        block: u64,
        tag: &Tag,
    ) -> core::result::Result<(), OpenError> {
        // SAFETY: the request is as in `seal`; nobody else reads or writes `page` while it
        // is borrowed (`IoSink`); `tag` is valid for `TAG_LEN` bytes.
        let ret = unsafe {
            rswap_aead_open(
                self.req.as_ptr(),
                page.page().as_ptr().cast(),
                nonce,
                block,
                tag.as_ptr(),
            )
        };
        match kernel::error::to_result(ret) {
            Ok(()) => Ok(()),
            Err(e) if e == EBADMSG => Err(OpenError::Forged),
            Err(e) => Err(OpenError::Failed(e)),
        }
    }
}

impl Drop for PageCipher {
    fn drop(&mut self) {
        // SAFETY: allocated by `rswap_aead_req_new` (type invariant), freed once here,
        // before `_aead` lets go of the transform.
        unsafe { rswap_aead_req_free(self.req.as_ptr()) };
    }
}
