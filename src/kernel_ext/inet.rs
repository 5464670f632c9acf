// SPDX-License-Identifier: GPL-2.0

//! Socket addresses of servers and clients, IPv4 or IPv6, parsed and printed as the
//! kernel does for nvme-rdma (`inet_pton_with_scope`, `%pISpc`).

use core::fmt;
use kernel::{bindings, prelude::*};

extern "C" {
    fn rswap_inet_parse(text: *const u8, out: *mut bindings::__kernel_sockaddr_storage) -> i32;
    fn rswap_inet_set_port(addr: *mut bindings::__kernel_sockaddr_storage, port: u16);
    fn rswap_inet_print(
        addr: *const bindings::__kernel_sockaddr_storage,
        port: bool,
        buf: *mut u8,
        len: usize,
    ) -> i32;
}

/// The longest address text taken: an IPv6 address with a `%scope` (an interface name or
/// number).
const TEXT_MAX: usize = 64;

/// An IPv4 or IPv6 address with a port (`struct sockaddr_storage`).
///
/// # Invariants
///
/// The family is `AF_INET` or `AF_INET6`: every value comes from [`SockAddr::parse`].
#[derive(Clone, Copy)]
pub(crate) struct SockAddr(bindings::__kernel_sockaddr_storage);

// SAFETY: plain bytes; the pointer member of `sockaddr_storage`'s union is there only
// for its alignment and is never read.
unsafe impl Send for SockAddr {}
// SAFETY: as for `Send`; the value is never changed through a shared reference.
unsafe impl Sync for SockAddr {}

/// Why [`SockAddr::parse`] refused a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BadAddr {
    /// Not an IPv4 or IPv6 address.
    Syntax,
    /// An address of no single host: any, broadcast or multicast.
    NotAHost,
}

impl SockAddr {
    fn zeroed() -> bindings::__kernel_sockaddr_storage {
        // SAFETY: a plain C structure of integers and byte arrays: all zeroes is a valid
        // value (family 0, unspecified).
        unsafe { core::mem::zeroed() }
    }

    /// Parses `text` (a dotted quad, or IPv6 with an optional `%scope`), port 0.
    pub(crate) fn parse(text: &str) -> core::result::Result<Self, BadAddr> {
        let mut buf = [0u8; TEXT_MAX + 1];
        if text.len() > TEXT_MAX || text.bytes().any(|b| b == 0) {
            return Err(BadAddr::Syntax);
        }
        buf[..text.len()].copy_from_slice(text.as_bytes());
        let mut out = Self::zeroed();
        // SAFETY: `buf` is NUL-terminated (one byte more than any text taken); `out` is a
        // whole `sockaddr_storage`.
        match unsafe { rswap_inet_parse(buf.as_ptr(), &mut out) } {
            0 => Ok(Self(out)),
            e if e == EADDRNOTAVAIL.to_errno() => Err(BadAddr::NotAHost),
            _ => Err(BadAddr::Syntax),
        }
    }

    /// The same address with port `port`.
    pub(crate) fn with_port(mut self, port: u16) -> Self {
        // SAFETY: an IPv4 or IPv6 address (type invariant), written in place.
        unsafe { rswap_inet_set_port(&mut self.0, port) };
        self
    }

    /// The address as the RDMA connection manager takes it; valid while `self` is.
    pub(crate) fn as_sockaddr(&self) -> *const bindings::sockaddr {
        (&raw const self.0).cast()
    }

    /// Displays the address with its port (`192.0.2.2:7471`, `[fd00::2]:7471`).
    pub(crate) fn with_port_shown(&self) -> WithPort<'_> {
        WithPort(self)
    }

    fn print(&self, port: bool, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; TEXT_MAX + 16];
        // SAFETY: an IPv4 or IPv6 address (type invariant); `buf` is writable for its
        // length, and `scnprintf` writes at most that, NUL included.
        let n = unsafe { rswap_inet_print(&self.0, port, buf.as_mut_ptr(), buf.len()) };
        let text = buf.get(..usize::try_from(n).unwrap_or(0)).unwrap_or(&[]);
        f.write_str(core::str::from_utf8(text).unwrap_or("?"))
    }
}

/// The same family, address, scope and port: every byte of the two `sockaddr_storage`s,
/// which [`SockAddr::parse`] starts from zeroes, so the bytes no field uses are equal.
impl PartialEq for SockAddr {
    fn eq(&self, other: &Self) -> bool {
        let len = core::mem::size_of::<bindings::__kernel_sockaddr_storage>();
        // SAFETY: each pointer is to a whole `sockaddr_storage` of `len` initialised bytes
        // (plain integers and byte arrays), borrowed for this call.
        let (a, b) = unsafe {
            (
                core::slice::from_raw_parts((&raw const self.0).cast::<u8>(), len),
                core::slice::from_raw_parts((&raw const other.0).cast::<u8>(), len),
            )
        };
        a == b
    }
}

impl Eq for SockAddr {}

/// An address shown with its port ([`SockAddr::with_port_shown`]).
pub(crate) struct WithPort<'a>(&'a SockAddr);

impl fmt::Display for WithPort<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.print(true, f)
    }
}

impl kernel::fmt::Display for WithPort<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.print(true, f)
    }
}

/// The address without its port (`192.0.2.2`, `fd00::2`, `fe80::1%2`).
impl fmt::Display for SockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.print(false, f)
    }
}

impl kernel::fmt::Display for SockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.print(false, f)
    }
}
