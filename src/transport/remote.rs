// SPDX-License-Identifier: GPL-2.0

//! Where a block request lands in the server's region: the bounds-checked mapping from a
//! byte range of the disk to a remote address. Pure logic (only `core`), shared with the
//! host unit tests (`tests/unit`).

/// The remote memory region a server handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RemoteRegion {
    /// The region's first byte in the server's address space.
    pub(crate) addr: u64,
    /// Its length in bytes.
    pub(crate) len: u64,
    /// The key that grants RDMA access to it.
    pub(crate) rkey: u32,
}

/// A request outside the region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutOfRange;

impl RemoteRegion {
    /// The remote address of `len` bytes at disk byte `offset`, if they lie inside the
    /// region and are not empty.
    pub(crate) fn remote_addr(&self, offset: u64, len: u64) -> Result<u64, OutOfRange> {
        if len == 0 {
            return Err(OutOfRange);
        }
        let end = offset.checked_add(len).ok_or(OutOfRange)?;
        if end > self.len {
            return Err(OutOfRange);
        }
        self.addr.checked_add(offset).ok_or(OutOfRange)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: RemoteRegion = RemoteRegion {
        addr: 0x7f00_0000_0000,
        len: 1 << 20,
        rkey: 7,
    };

    #[test]
    fn inside() {
        assert_eq!(R.remote_addr(0, 4096), Ok(0x7f00_0000_0000));
        assert_eq!(R.remote_addr(4096, 4096), Ok(0x7f00_0000_1000));
        assert_eq!(R.remote_addr((1 << 20) - 4096, 4096), Ok(0x7f00_000f_f000));
    }

    #[test]
    fn outside() {
        assert_eq!(R.remote_addr(1 << 20, 4096), Err(OutOfRange));
        assert_eq!(R.remote_addr((1 << 20) - 4096, 8192), Err(OutOfRange));
        assert_eq!(R.remote_addr(u64::MAX - 10, 4096), Err(OutOfRange));
        assert_eq!(R.remote_addr(0, 0), Err(OutOfRange));
    }

    #[test]
    fn address_overflow() {
        let r = RemoteRegion {
            addr: u64::MAX - 100,
            len: 1 << 20,
            rkey: 1,
        };
        assert_eq!(r.remote_addr(4096, 4096), Err(OutOfRange));
    }
}
