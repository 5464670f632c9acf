// SPDX-License-Identifier: GPL-2.0

//! The two keyring calls `rswapctl` makes to hand a target's secret to the module without
//! writing it to configfs: add a `logon` key to this process's keyring (`add_key(2)`),
//! and invalidate it once the module has copied it (`keyctl(KEYCTL_INVALIDATE)`).
//!
//! `logon` keys, unlike `user` keys, cannot be read back from userspace: only the kernel
//! reads their payload. The `linux-keyutils` crate adds `user` keys only, hence these two
//! system calls.

use std::ffi::CString;
use std::io;

/// A key's serial number.
pub type KeySerial = i32;

/// Adds a `logon` key with description `desc` (which must be qualified, `PREFIX:NAME`)
/// and payload `payload` to this process's keyring, creating that keyring if need be.
/// Returns the key's serial number. The kernel keeps its own copy of the payload.
pub fn add_logon_key(desc: &str, payload: &[u8]) -> io::Result<KeySerial> {
    let desc = CString::new(desc).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: the type and description are NUL-terminated strings and `payload` is valid
    // for `payload.len()` bytes, all for the duration of the call, which only reads them.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            c"logon".as_ptr(),
            desc.as_ptr(),
            payload.as_ptr(),
            payload.len(),
            libc::KEY_SPEC_PROCESS_KEYRING,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    KeySerial::try_from(ret).map_err(|_| io::Error::from_raw_os_error(libc::ERANGE))
}

/// Invalidates key `key`: it is unlinked from every keyring at once and its payload freed
/// (cleared) by the kernel's key garbage collector.
pub fn invalidate_key(key: KeySerial) -> io::Result<()> {
    // SAFETY: KEYCTL_INVALIDATE takes a key serial number and no pointer.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            libc::c_long::from(libc::KEYCTL_INVALIDATE),
            libc::c_long::from(key),
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `KEYCTL_READ` of `key`: its payload, or the error (a `logon` key's is EOPNOTSUPP).
    fn read_key(key: KeySerial) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; 128];
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the call.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_keyctl,
                libc::c_long::from(libc::KEYCTL_READ),
                libc::c_long::from(key),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if ret < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.truncate(usize::try_from(ret).unwrap_or(0));
        Ok(buf)
    }

    #[test]
    fn descriptions_with_nul_are_refused() {
        let e = add_logon_key("rswap:a\0b", &[1; 32]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    }

    /// On a kernel with keyrings (where the system calls are allowed): a logon key is
    /// added, cannot be read back, and is gone once invalidated.
    #[test]
    fn logon_key_added_unreadable_then_invalidated() {
        let desc = format!("rswap:rswapctl-test:{}", std::process::id());
        let key = match add_logon_key(&desc, &[0x5a; 32]) {
            Ok(key) => key,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
                eprintln!("no keyrings here ({e}): skipped");
                return;
            }
            Err(e) => panic!("add_key: {e}"),
        };
        assert!(key > 0);
        assert_eq!(
            read_key(key).unwrap_err().raw_os_error(),
            Some(libc::EOPNOTSUPP)
        );
        invalidate_key(key).unwrap();
        // Gone: invalidating it again finds no key.
        let e = invalidate_key(key).unwrap_err();
        assert!(
            matches!(e.raw_os_error(), Some(libc::ENOKEY | libc::EKEYREVOKED)),
            "{e}"
        );
        // An unqualified description is refused by the kernel (logon_vet_description).
        let e = add_logon_key("rswap", &[0x5a; 32]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    }
}
