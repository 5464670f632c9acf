// SPDX-License-Identifier: GPL-2.0

//! HMAC-SHA256 from the kernel crypto API (`hmac(sha256)`), keyed once, for rswap's
//! in-band authentication.
//!
//! The kernel crate has no crypto bindings yet; three C functions (`helpers.c` beside this
//! file) allocate and key the transform, compute a digest and free it. Rust sees the
//! transform only as a pointer.

use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*};

/// `struct crypto_shash`, only ever behind a pointer.
#[repr(C)]
struct CryptoShash {
    _opaque: [u8; 0],
}

extern "C" {
    fn rswap_hmac_sha256_new(key: *const u8, len: u32) -> *mut CryptoShash;
    fn rswap_hmac_sha256(tfm: *mut CryptoShash, data: *const u8, len: u32, out: *mut u8) -> i32;
    fn rswap_hmac_sha256_free(tfm: *mut CryptoShash);
}

/// Bytes of an HMAC-SHA256 digest.
pub(crate) const HMAC_SHA256_LEN: usize = 32;

/// An `hmac(sha256)` transform keyed with one secret.
///
/// # Invariants
///
/// `tfm` came from `rswap_hmac_sha256_new` with its key set, and is freed only by drop.
pub(crate) struct HmacSha256 {
    tfm: NonNull<CryptoShash>,
}

// SAFETY: the transform is not tied to a thread; it is freed from whichever drops it.
unsafe impl Send for HmacSha256 {}
// SAFETY: after the key is set, digests on one transform may run concurrently: each keeps
// its state in a descriptor of its own on the stack.
unsafe impl Sync for HmacSha256 {}

impl HmacSha256 {
    /// A transform keyed with `key`. Sleeps.
    pub(crate) fn new(key: &[u8]) -> Result<Self> {
        let len = u32::try_from(key.len()).map_err(|_| EINVAL)?;
        // SAFETY: `key` is valid for `len` bytes; the function copies the key.
        let tfm = from_err_ptr(unsafe { rswap_hmac_sha256_new(key.as_ptr(), len) })?;
        // INVARIANT: allocated and keyed just now.
        Ok(Self {
            tfm: NonNull::new(tfm).ok_or(ENOMEM)?,
        })
    }

    /// The HMAC of `data`. Does not allocate or sleep.
    pub(crate) fn digest(&self, data: &[u8]) -> Result<[u8; HMAC_SHA256_LEN]> {
        let len = u32::try_from(data.len()).map_err(|_| EINVAL)?;
        let mut out = [0u8; HMAC_SHA256_LEN];
        let tfm = self.tfm.as_ptr();
        // SAFETY: `tfm` is a keyed transform (type invariant); `data` is valid for `len`
        // bytes and `out` for the 32 bytes of a SHA-256 digest.
        let ret = unsafe { rswap_hmac_sha256(tfm, data.as_ptr(), len, out.as_mut_ptr()) };
        kernel::error::to_result(ret)?;
        Ok(out)
    }
}

impl Drop for HmacSha256 {
    fn drop(&mut self) {
        // SAFETY: allocated by `rswap_hmac_sha256_new` (type invariant), freed once here.
        unsafe { rswap_hmac_sha256_free(self.tfm.as_ptr()) };
    }
}
