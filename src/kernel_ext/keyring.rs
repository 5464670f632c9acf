// SPDX-License-Identifier: GPL-2.0

//! Secrets from the kernel's keyrings: the payload of a `logon` key, read the way dm-crypt
//! reads its `:logon:` keys, so that a secret need not pass through a configfs write page
//! (which configfs frees without clearing).
//!
//! The kernel crate has no key bindings yet; one C function (`helpers.c` beside this file)
//! does `request_key` and copies the payload under the key's semaphore.

use kernel::{
    error::{code, Error},
    prelude::*,
    str::CString,
};

extern "C" {
    fn rswap_logon_key_read(desc: *const u8, buf: *mut u8, len: u32) -> i32;
}

/// Why a `logon` key could not be read: the kernel's errno.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyError(Error);

impl KeyError {
    /// What went wrong, for a refusal's message.
    pub(crate) fn reason(&self) -> &'static str {
        match self.0 {
            e if e == code::ENOKEY => "no logon key with that description in the writer's keyrings",
            e if e == code::EKEYREVOKED => "the key is revoked",
            e if e == code::EKEYEXPIRED => "the key has expired",
            e if e == code::EKEYREJECTED => "the key was rejected",
            e if e == code::EACCES => "the key may not be searched by the writer",
            e if e == code::EOPNOTSUPP => "this kernel has no keyrings (CONFIG_KEYS)",
            e if e == code::ENOMEM => "out of memory",
            e if e == code::EINTR || e == code::ERESTARTSYS => "interrupted by a signal",
            _ => "the key could not be read",
        }
    }
}

/// Copies the payload of the `logon` key with description `desc`, found in the calling
/// task's keyrings (thread, process, session), into `buf` if it fits. Returns the
/// payload's length, which may be more than `buf.len()`: then nothing was copied. A
/// payload's bytes are copied straight into `buf`, with no copy in between. Sleeps.
pub(crate) fn read_logon_key(desc: &str, buf: &mut [u8]) -> Result<usize, KeyError> {
    let desc = CString::try_from_fmt(fmt!("{}", desc)).map_err(KeyError)?;
    let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
    // SAFETY: `desc` is a NUL-terminated string that lives across the call; `buf` is
    // valid for writes of `len` bytes (at most `buf.len()`), and the function writes no
    // more than `len` bytes to it and keeps no pointer to either.
    let ret = unsafe { rswap_logon_key_read(desc.as_char_ptr().cast(), buf.as_mut_ptr(), len) };
    if ret < 0 {
        return Err(KeyError(Error::from_errno(ret)));
    }
    usize::try_from(ret).map_err(|_| KeyError(EINVAL))
}
