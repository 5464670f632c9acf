// SPDX-License-Identifier: GPL-2.0

//! Kernel facilities the kernel crate does not wrap yet, used by more than one layer:
//! neither RDMA nor blk-mq specific.

mod aead;
mod alloc_scope;
mod configfs;
#[cfg(rswap_fault_injection)]
mod countdown;
mod hmac;
mod inet;
mod io_page;
mod keyring;
mod owned;
mod raid;
mod scatterlist;
mod text;
mod workqueue;

pub(crate) use aead::{AesGcm, OpenError, PageCipher, Tag as AeadTag};
#[cfg(rswap_fault_injection)]
pub(crate) use alloc_scope::current_uses_reserves;
pub(crate) use alloc_scope::{NoIoScope, ReserveScope};
pub(crate) use configfs::{DependableSubsystem, ItemDependency};
#[cfg(rswap_fault_injection)]
pub(crate) use countdown::Countdown;
pub(crate) use hmac::HmacSha256;
pub(crate) use inet::{BadAddr, SockAddr};
pub(crate) use io_page::{Combine, IoSink, IoSource};
pub(crate) use keyring::read_logon_key;
pub(crate) use owned::IntoRaw;
pub(crate) use raid::{Fragment, Lost, Raid6, Raid6Scratch};
pub(crate) use scatterlist::{OwnPage, SgTable};
pub(crate) use text::TextBuf;
pub(crate) use workqueue::{flush_delayed_work, EmbeddedWork, ReclaimWorkqueue};

/// A random 64-bit number (`get_random_u64`).
pub(crate) fn random_u64() -> u64 {
    // SAFETY: `get_random_u64` has no preconditions.
    unsafe { kernel::bindings::get_random_u64() }
}

/// Fills `buf` with random bytes (`get_random_bytes`).
pub(crate) fn random_bytes(buf: &mut [u8]) {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    unsafe { kernel::bindings::get_random_bytes(buf.as_mut_ptr().cast(), buf.len()) };
}

/// Fills `buf` with random bytes once the kernel's random number generator is seeded
/// (`get_random_bytes_wait`): for keys, which must not come from an unseeded generator
/// early after boot. Sleeps until then; `ERESTARTSYS` if a signal comes first.
pub(crate) fn random_key_bytes(buf: &mut [u8]) -> kernel::error::Result {
    // SAFETY: no preconditions; sleeps, which the callers may.
    kernel::error::to_result(unsafe { kernel::bindings::wait_for_random_bytes() })?;
    random_bytes(buf);
    Ok(())
}

/// The number of possible CPU ids (an upper bound on online CPUs).
pub(crate) fn nr_cpus() -> u32 {
    kernel::cpu::nr_cpu_ids()
}
