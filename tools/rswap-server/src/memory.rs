// SPDX-License-Identifier: GPL-2.0

//! The server's memory: the mappings behind the regions (anonymous, hugepages, or a
//! file of the state directory), kept out of core dumps and locked when asked; the
//! process's own memory locked (`mlockall`); and the state directory's files
//! (`fallocate`, `flock`, the file system's type). The system calls go through rustix.

use std::fs::File;
use std::io;
use std::ptr::{self, NonNull};
use std::rc::Rc;

use rustix::fs::{FallocateFlags, FlockOperation};
use rustix::io::Errno;
use rustix::mm::{Advice, MapFlags, MlockAllFlags, ProtFlags};

/// A failed system call as an error naming it: `what: the OS error`.
fn failed(what: &str) -> impl FnOnce(Errno) -> io::Error + '_ {
    move |e| {
        let e = io::Error::from(e);
        io::Error::new(e.kind(), format!("{what}: {e}"))
    }
}

/// A memory mapping: anonymous and private, or a shared mapping of a file.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps `len` anonymous, private bytes (hugepages if `huge`).
    pub(crate) fn anon(len: usize, huge: bool) -> io::Result<Self> {
        let mut flags = MapFlags::PRIVATE;
        if huge {
            flags |= MapFlags::HUGETLB;
        }
        // SAFETY: a fresh anonymous mapping; the kernel picks the address, so no
        // existing memory is affected.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                flags,
            )
        }
        .map_err(failed(if huge {
            "mmap(MAP_HUGETLB) (are hugepages reserved? see /proc/sys/vm/nr_hugepages)"
        } else {
            "mmap"
        }))?;
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap: NULL"))?;
        Ok(Self { ptr, len })
    }

    /// Maps the first `len` bytes of `file` shared, read-write.
    fn shared(file: &File, len: usize) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::other("mmap: empty file"));
        }
        // SAFETY: a fresh shared mapping of an open file; the kernel picks the
        // address. The mapping stays valid after the descriptor is closed.
        let p = unsafe {
            rustix::mm::mmap(
                ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                file,
                0,
            )
        }
        .map_err(failed("mmap(MAP_SHARED)"))?;
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap: NULL"))?;
        Ok(Self { ptr, len })
    }

    /// The mapping's first byte.
    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The mapping's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Excludes the mapping from core dumps (`MADV_DONTDUMP`): a client's memory
    /// must not end up in a dump of the server.
    fn dont_dump(&self) -> io::Result<()> {
        // SAFETY: advice on our own mapping [ptr, ptr + len); it changes no memory
        // contents.
        unsafe { rustix::mm::madvise(self.ptr.as_ptr().cast(), self.len, Advice::LinuxDontDump) }
            .map_err(failed("madvise(MADV_DONTDUMP)"))
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: we own the mapping [ptr, ptr + len) and nothing references it now.
        // A failure leaves the mapping in place; nothing else can be done.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// The memory behind a client's region: anonymous (the default) or a shared
/// mapping of a file in the state directory (`--state-dir`), which outlives the
/// server process. It can be registered (`rdma::RemoteRegion::new`) on any device,
/// again after a restart; the server never reads or writes it itself.
pub struct RegionMemory {
    map: Rc<Mapping>,
}

/// What did not take on a new [`RegionMemory`]: the mapping is usable, the server
/// logs these.
#[derive(Debug, Default)]
pub struct MapWarnings {
    /// `madvise(MADV_DONTDUMP)` failed: the region may appear in a core dump.
    pub dont_dump: Option<io::Error>,
    /// `mlock` failed (only asked for file mappings): the region may be swapped out.
    pub lock: Option<io::Error>,
}

impl RegionMemory {
    /// Maps `len` anonymous, private bytes (hugepages if `huge`) and excludes them
    /// from core dumps; a failure of the latter is returned, not fatal.
    pub fn anon(len: usize, huge: bool) -> io::Result<(Self, MapWarnings)> {
        let map = Mapping::anon(len, huge)?;
        let warnings = MapWarnings {
            dont_dump: map.dont_dump().err(),
            lock: None,
        };
        Ok((Self { map: Rc::new(map) }, warnings))
    }

    /// Maps the first `len` bytes of `file` shared and excludes them from core
    /// dumps. With `lock`, also locks them in memory. Neither failing fails the
    /// mapping: the failures are returned.
    pub fn shared(file: &File, len: usize, lock: bool) -> io::Result<(Self, MapWarnings)> {
        let map = Mapping::shared(file, len)?;
        let dont_dump = map.dont_dump().err();
        let lock = if lock {
            // SAFETY: locks pages of our own mapping; no memory contents change.
            unsafe { rustix::mm::mlock(map.ptr.as_ptr().cast(), len) }
                .map_err(failed("mlock"))
                .err()
        } else {
            None
        };
        Ok((Self { map: Rc::new(map) }, MapWarnings { dont_dump, lock }))
    }

    /// The mapping, for a registration that pins it.
    pub(crate) fn mapping(&self) -> &Rc<Mapping> {
        &self.map
    }

    /// The mapping's address (what peers use as `remote_addr`).
    #[cfg(test)]
    pub fn addr(&self) -> u64 {
        self.map.ptr.as_ptr().addr() as u64
    }

    /// The mapping's length in bytes.
    pub fn len(&self) -> usize {
        self.map.len
    }
}

/// Locks all current and future memory of the process (`mlockall`).
pub fn lock_all_memory() -> io::Result<()> {
    rustix::mm::mlockall(MlockAllFlags::CURRENT | MlockAllFlags::FUTURE).map_err(io::Error::from)
}

/// Allocates the blocks of `file`'s first `len` bytes (`fallocate(2)`, mode 0), so
/// a full tmpfs fails here rather than when the memory is first touched. A file
/// system without fallocate (`EOPNOTSUPP`) is not an error.
pub fn fallocate(file: &File, len: u64) -> io::Result<()> {
    match rustix::fs::fallocate(file, FallocateFlags::empty(), 0, len) {
        Ok(()) | Err(Errno::OPNOTSUPP) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Takes an exclusive `flock(2)` on `file` without waiting; `WouldBlock` when
/// another process holds it. Released when the file is closed.
pub fn try_lock_file(file: &File) -> io::Result<()> {
    rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive).map_err(io::Error::from)
}

/// Magic number (`f_type`), block size and size in blocks (`f_blocks`; 0: no limit,
/// as a tmpfs mounted without one reports) of the file system holding `file`.
pub fn fs_type(file: &File) -> io::Result<(u64, u64, u64)> {
    let st = rustix::fs::fstatfs(file).map_err(failed("fstatfs"))?;
    #[allow(
        clippy::unnecessary_cast,
        clippy::cast_sign_loss,
        reason = "f_type, f_bsize and f_blocks differ in type between architectures"
    )]
    Ok((st.f_type as u64, st.f_bsize as u64, st.f_blocks as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` of the mapping of this process that contains `addr`
    /// (`/proc/self/smaps`), split into flags.
    fn vm_flags(addr: u64) -> Vec<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("read /proc/self/smaps");
        let mut inside = false;
        for line in smaps.lines() {
            // A mapping starts with "START-END PERMS ...", both in hex.
            let range = line.split_once(' ').and_then(|(r, _)| r.split_once('-'));
            if let Some((start, end)) = range {
                if let (Ok(start), Ok(end)) =
                    (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
                {
                    inside = (start..end).contains(&addr);
                    continue;
                }
            }
            if let (true, Some(flags)) = (inside, line.strip_prefix("VmFlags:")) {
                return flags.split_whitespace().map(str::to_string).collect();
            }
        }
        panic!("no mapping with VmFlags contains {addr:#x}");
    }

    fn excluded_from_dumps(addr: u64) -> bool {
        vm_flags(addr).iter().any(|f| f == "dd")
    }

    #[test]
    fn flags_of_ordinary_memory_lack_dd() {
        // The check below is not vacuous: heap memory is dumped.
        let heap = vec![1u8; 1 << 16];
        assert!(!excluded_from_dumps(heap.as_ptr().addr() as u64));
    }

    #[test]
    fn anonymous_region_is_not_dumped() {
        let (mem, warnings) = RegionMemory::anon(1 << 16, false).expect("mmap");
        assert!(warnings.dont_dump.is_none(), "{warnings:?}");
        assert!(warnings.lock.is_none());
        assert!(excluded_from_dumps(mem.addr()));
        assert!(excluded_from_dumps(mem.addr() + (1 << 16) - 1));
    }

    #[test]
    fn file_region_is_not_dumped() {
        let path = std::env::temp_dir().join(format!("rswap-mapping-{}", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .expect("create");
        let _ = std::fs::remove_file(&path);
        file.set_len(1 << 16).expect("set_len");
        let (mem, warnings) = RegionMemory::shared(&file, 1 << 16, false).expect("mmap");
        assert!(warnings.dont_dump.is_none(), "{warnings:?}");
        assert!(warnings.lock.is_none());
        assert!(excluded_from_dumps(mem.addr()));
    }
}
