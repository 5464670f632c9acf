// SPDX-License-Identifier: GPL-2.0

//! Verbs: devices, protection domains, memory registrations, and the QP and CQ of a
//! [`CmId`] (created, posted to and polled here).

use std::io;
use std::ptr::{self, NonNull};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::cm::{ChannelInner, CmId};
use super::{c_string, check, last_err, sys, WC_RECV_BIT, WR_PROBE, WR_RDMA, WR_RECV, WR_SEND};
use crate::memory::{Mapping, RegionMemory};

/// An RDMA device context (one `ibv_context` of librdmacm), kept open while held.
#[derive(Clone)]
pub struct Device {
    pub(super) ctx: NonNull<sys::ibv_context>,
    pub(super) _chan: Rc<ChannelInner>,
}

impl Device {
    /// The device's name (for example `rxe0`).
    pub fn name(&self) -> String {
        // SAFETY: the context is open (pinned by the channel's device lists).
        unsafe { c_string(sys::rswap_device_name(self.ctx.as_ptr())) }
    }

    /// Whether two handles are the same device.
    pub fn same(&self, other: &Device) -> bool {
        self.ctx == other.ctx
    }
}

struct PdInner {
    raw: NonNull<sys::ibv_pd>,
    dev: Device,
}

impl Drop for PdInner {
    fn drop(&mut self) {
        // SAFETY: allocated by ibv_alloc_pd; all MRs/QPs using it hold an Rc to us
        // and are gone. A failure (device already removed) leaves nothing to do.
        unsafe { sys::ibv_dealloc_pd(self.raw.as_ptr()) };
    }
}

/// A protection domain. Memory registered in it is reachable only through QPs of the
/// same PD.
#[derive(Clone)]
pub struct Pd {
    inner: Rc<PdInner>,
}

impl Pd {
    /// Allocates a protection domain on `dev`.
    pub fn new(dev: &Device) -> io::Result<Self> {
        // SAFETY: the context is open while `dev` lives.
        let raw = unsafe { sys::ibv_alloc_pd(dev.ctx.as_ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| last_err("ibv_alloc_pd"))?;
        Ok(Self {
            inner: Rc::new(PdInner {
                raw,
                dev: dev.clone(),
            }),
        })
    }

    /// The device the PD belongs to.
    pub fn device(&self) -> &Device {
        &self.inner.dev
    }
}

/// Registers `map` in `pd` with `access`.
fn reg_mr(pd: &Pd, map: &Mapping, len: usize, access: u32) -> io::Result<NonNull<sys::ibv_mr>> {
    let access = i32::try_from(access).map_err(|_| io::Error::other("bad access flags"))?;
    // SAFETY: [ptr, ptr + len) lies in the mapping (len <= map.len()); the caller keeps
    // the mapping alive until ibv_dereg_mr.
    let mr = unsafe {
        sys::rswap_reg_mr(
            pd.inner.raw.as_ptr(),
            map.ptr().as_ptr().cast(),
            len.min(map.len()),
            access,
        )
    };
    NonNull::new(mr).ok_or_else(|| last_err("ibv_reg_mr"))
}

/// Memory a remote peer reads and writes with one-sided RDMA; registered with only
/// `LOCAL_WRITE | REMOTE_READ | REMOTE_WRITE`. The server never reads or writes it
/// itself, so no Rust reference to its bytes is ever created.
pub struct RemoteRegion {
    mr: NonNull<sys::ibv_mr>,
    len: usize,
    // Dropped after the MR is deregistered (see Drop), in this order.
    map: Rc<Mapping>,
    _pd: Rc<PdInner>,
}

impl RemoteRegion {
    /// Registers the first `len` bytes of `mem` in `pd`.
    pub fn new(pd: &Pd, mem: &RegionMemory, len: usize) -> io::Result<Self> {
        let access = sys::ibv_access_flags_IBV_ACCESS_LOCAL_WRITE
            | sys::ibv_access_flags_IBV_ACCESS_REMOTE_READ
            | sys::ibv_access_flags_IBV_ACCESS_REMOTE_WRITE;
        let mr = reg_mr(pd, mem.mapping(), len, access)?;
        Ok(Self {
            mr,
            len: len.min(mem.mapping().len()),
            map: Rc::clone(mem.mapping()),
            _pd: Rc::clone(&pd.inner),
        })
    }

    /// The remote key.
    pub fn rkey(&self) -> u32 {
        // SAFETY: the MR is registered while self lives.
        unsafe { sys::rswap_mr_rkey(self.mr.as_ptr()) }
    }

    /// The address peers use for RDMA (the virtual address of the mapping).
    pub fn addr(&self) -> u64 {
        self.map.ptr().as_ptr().addr() as u64
    }

    /// Registered length in bytes.
    pub fn size(&self) -> usize {
        self.len
    }
}

impl Drop for RemoteRegion {
    fn drop(&mut self) {
        // SAFETY: registered in new(); deregistered exactly once, before the mapping
        // and the PD (fields) are dropped.
        unsafe { sys::ibv_dereg_mr(self.mr.as_ptr()) };
    }
}

/// A local buffer for RDMA READ/WRITE and receives, registered with `LOCAL_WRITE` only.
///
/// The adapter touches it only while a [`CmId`] method that holds `&mut` of it (or
/// owns it) runs, so the byte accessors never race with the device. If an operation
/// times out, the buffer is poisoned: its bytes are no longer handed out and it is
/// leaked rather than unmapped.
pub struct LocalBuf {
    mr: NonNull<sys::ibv_mr>,
    len: usize,
    poisoned: bool,
    map: Option<Mapping>,
    pd: Rc<PdInner>,
}

impl LocalBuf {
    /// Maps and registers `len` bytes in `pd`.
    pub fn new(pd: &Pd, len: usize) -> io::Result<Self> {
        let map = Mapping::anon(len.max(1), false)?;
        let mr = reg_mr(pd, &map, len, sys::ibv_access_flags_IBV_ACCESS_LOCAL_WRITE)?;
        Ok(Self {
            mr,
            len,
            poisoned: false,
            map: Some(map),
            pd: Rc::clone(&pd.inner),
        })
    }

    fn poisoned_err() -> io::Error {
        io::Error::other("buffer poisoned by a timed-out RDMA operation")
    }

    /// The buffer's bytes.
    pub fn bytes(&self) -> io::Result<&[u8]> {
        match (&self.map, self.poisoned) {
            // SAFETY: the mapping holds `len` initialised (zero-filled) bytes; no
            // operation is in flight (they complete inside &mut self methods).
            (Some(m), false) => {
                Ok(unsafe { std::slice::from_raw_parts(m.ptr().as_ptr(), self.len) })
            }
            _ => Err(Self::poisoned_err()),
        }
    }

    /// The buffer's bytes, writable.
    pub fn bytes_mut(&mut self) -> io::Result<&mut [u8]> {
        match (&self.map, self.poisoned) {
            (Some(m), false) => {
                // SAFETY: as in bytes(), and &mut self makes this the only reference.
                let bytes = unsafe { std::slice::from_raw_parts_mut(m.ptr().as_ptr(), self.len) };
                Ok(bytes)
            }
            _ => Err(Self::poisoned_err()),
        }
    }

    fn lkey(&self) -> u32 {
        // SAFETY: the MR is registered while self lives.
        unsafe { sys::rswap_mr_lkey(self.mr.as_ptr()) }
    }

    fn base(&self) -> *mut u8 {
        self.map
            .as_ref()
            .map_or(ptr::null_mut(), |m| m.ptr().as_ptr())
    }
}

impl Drop for LocalBuf {
    fn drop(&mut self) {
        if self.poisoned {
            // The device may still write into it: leak the memory and the MR.
            std::mem::forget(self.map.take());
            return;
        }
        // SAFETY: registered in new(); no operation in flight; deregistered once,
        // before the mapping is unmapped.
        unsafe { sys::ibv_dereg_mr(self.mr.as_ptr()) };
    }
}

/// Sizes of a QP and its CQ.
#[derive(Debug, Clone, Copy)]
pub struct QpCaps {
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth.
    pub max_recv_wr: u32,
    /// Largest inline SEND in bytes.
    pub max_inline: u32,
}

pub(super) struct QpParts {
    pub(super) cq: NonNull<sys::ibv_cq>,
    pd: Rc<PdInner>,
    recv_buf: Option<LocalBuf>,
    recv_posted: bool,
}

/// A work completion.
#[derive(Debug, Clone)]
pub struct Completion {
    /// Whether the work request succeeded.
    pub ok: bool,
    /// The verbs status string (`success`, `remote access error`, ...).
    pub status: String,
    /// True for the descriptor receive.
    pub is_recv: bool,
    /// True for the descriptor SEND.
    pub is_send: bool,
    /// True for a keep-alive probe ([`CmId::post_rdma_write_zero`]).
    pub is_probe: bool,
    /// For a successful receive: the bytes received.
    pub data: Vec<u8>,
}

/// Direction of a synchronous one-sided operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdmaOp {
    /// Local buffer to remote memory.
    Write,
    /// Remote memory to local buffer.
    Read,
}

impl CmId {
    /// Creates an RC QP in `pd` with a CQ of its own.
    pub fn create_qp(&mut self, pd: &Pd, caps: QpCaps) -> io::Result<()> {
        if self.qp.is_some() {
            return Err(io::Error::other("the id already has a QP"));
        }
        let dev = self
            .device()
            .ok_or_else(|| io::Error::other("the id is not bound to a device"))?;
        if !dev.same(pd.device()) {
            return Err(io::Error::other("the PD is on another device than the id"));
        }
        let cqe = i32::try_from(caps.max_send_wr.saturating_add(caps.max_recv_wr))
            .map_err(|_| io::Error::other("CQ too large"))?;
        // SAFETY: open context; no channel/context pointers.
        let cq = unsafe {
            sys::ibv_create_cq(dev.ctx.as_ptr(), cqe, ptr::null_mut(), ptr::null_mut(), 0)
        };
        let cq = NonNull::new(cq).ok_or_else(|| last_err("ibv_create_cq"))?;
        // SAFETY: valid id, PD and CQ on the id's device.
        let ret = unsafe {
            sys::rswap_create_qp(
                self.raw.as_ptr(),
                pd.inner.raw.as_ptr(),
                cq.as_ptr(),
                caps.max_send_wr,
                caps.max_recv_wr,
                caps.max_inline,
            )
        };
        if let Err(e) = check(ret, "rdma_create_qp") {
            // SAFETY: the CQ was just created and nothing uses it.
            unsafe { sys::ibv_destroy_cq(cq.as_ptr()) };
            return Err(e);
        }
        self.qp = Some(QpParts {
            cq,
            pd: Rc::clone(&pd.inner),
            recv_buf: None,
            recv_posted: false,
        });
        Ok(())
    }

    pub(super) fn qp_ptr(&self) -> io::Result<*mut sys::ibv_qp> {
        if self.qp.is_none() {
            return Err(io::Error::other("no QP"));
        }
        // SAFETY: valid id; `qp` was set by rdma_create_qp and lives until destroy.
        Ok(unsafe { (*self.raw.as_ptr()).qp })
    }

    /// Posts `data` as one signalled inline SEND (the bytes are copied by the post).
    pub fn post_send_inline(&mut self, data: &[u8]) -> io::Result<()> {
        let qp = self.qp_ptr()?;
        let len = u32::try_from(data.len()).map_err(|_| io::Error::other("SEND too long"))?;
        // SAFETY: valid QP; an inline SEND copies `data` during the call.
        let ret = unsafe { sys::rswap_post_send_inline(qp, data.as_ptr().cast(), len, WR_SEND) };
        check(ret, "ibv_post_send")
    }

    /// Posts one signalled zero-length RDMA WRITE (no SGE, `remote_addr` and `rkey`
    /// 0), whose completion reports [`Completion::is_probe`]: it succeeds when the
    /// peer's QP acknowledged it and fails when the peer is gone (retries exhausted)
    /// or the QP is in error. It touches no memory on either side.
    pub fn post_rdma_write_zero(&mut self) -> io::Result<()> {
        let qp = self.qp_ptr()?;
        // SAFETY: valid QP; the work request has no SGE, so it references no local
        // memory, and a zero-length RDMA WRITE accesses no remote memory.
        let ret = unsafe { sys::rswap_post_rdma_write_zero(qp, WR_PROBE) };
        check(ret, "ibv_post_send")
    }

    /// Posts one receive of `len` bytes into a buffer the id owns from now on.
    pub fn post_recv(&mut self, len: usize) -> io::Result<()> {
        let qp = self.qp_ptr()?;
        let parts = self.qp.as_mut().ok_or_else(|| io::Error::other("no QP"))?;
        if parts.recv_posted {
            return Err(io::Error::other("a receive is already posted"));
        }
        let buf = LocalBuf::new(
            &Pd {
                inner: Rc::clone(&parts.pd),
            },
            len,
        )?;
        let len32 = u32::try_from(len).map_err(|_| io::Error::other("receive too long"))?;
        // SAFETY: valid QP; the buffer is registered in the QP's PD and is owned by
        // `parts` until the QP is destroyed or the completion has been reaped.
        let ret =
            unsafe { sys::rswap_post_recv(qp, buf.base().cast(), len32, buf.lkey(), WR_RECV) };
        check(ret, "ibv_post_recv")?;
        parts.recv_buf = Some(buf);
        parts.recv_posted = true;
        Ok(())
    }

    /// Reaps one completion, if there is one (never blocks).
    pub fn poll(&mut self) -> io::Result<Option<Completion>> {
        let parts = self.qp.as_mut().ok_or_else(|| io::Error::other("no QP"))?;
        let mut wc = sys::rswap_wc::default();
        // SAFETY: valid CQ, valid out struct.
        let n = unsafe { sys::rswap_poll_cq(parts.cq.as_ptr(), &mut wc) };
        if n < 0 {
            return Err(io::Error::other("ibv_poll_cq failed"));
        }
        if n == 0 {
            return Ok(None);
        }
        let ok = wc.status == sys::ibv_wc_status_IBV_WC_SUCCESS;
        // SAFETY: returns a static string for any status.
        let status = unsafe { c_string(sys::rswap_wc_status_str(wc.status)) };
        let is_recv = wc.wr_id == WR_RECV;
        let mut data = Vec::new();
        if is_recv {
            // The receive is complete (or flushed): the device is done with the buffer.
            parts.recv_posted = false;
            if ok && wc.opcode & WC_RECV_BIT != 0 {
                if let Some(buf) = &parts.recv_buf {
                    let n = usize::try_from(wc.byte_len).unwrap_or(usize::MAX);
                    data = buf.bytes()?.get(..n).unwrap_or_default().to_vec();
                }
            }
        }
        Ok(Some(Completion {
            ok,
            status,
            is_recv,
            is_send: wc.wr_id == WR_SEND,
            is_probe: wc.wr_id == WR_PROBE,
            data,
        }))
    }

    /// Waits up to `timeout` for one completion (busy-polls with short sleeps).
    pub fn wait_completion(&mut self, timeout: Duration) -> io::Result<Option<Completion>> {
        let start = Instant::now();
        loop {
            if let Some(c) = self.poll()? {
                return Ok(Some(c));
            }
            if start.elapsed() >= timeout {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// Runs one signalled RDMA READ or WRITE of `local[off..off + len]` against
    /// `remote_addr`/`rkey` and waits for its completion.
    ///
    /// `local` must be registered in this id's PD. On timeout the buffer is poisoned.
    #[allow(clippy::too_many_arguments, reason = "one flat one-sided operation")]
    pub fn rdma_sync(
        &mut self,
        op: RdmaOp,
        local: &mut LocalBuf,
        off: usize,
        len: usize,
        remote_addr: u64,
        rkey: u32,
        timeout: Duration,
    ) -> io::Result<()> {
        let qp = self.qp_ptr()?;
        let parts = self.qp.as_ref().ok_or_else(|| io::Error::other("no QP"))?;
        if !Rc::ptr_eq(&parts.pd, &local.pd) {
            return Err(io::Error::other("local buffer is not in the QP's PD"));
        }
        if local.poisoned {
            return Err(LocalBuf::poisoned_err());
        }
        let end = off.checked_add(len).filter(|&e| e <= local.len);
        if end.is_none() {
            return Err(io::Error::other("range outside the local buffer"));
        }
        let len32 = u32::try_from(len).map_err(|_| io::Error::other("operation too long"))?;
        // SAFETY: off + len <= local.len, so the pointer stays inside the mapping.
        let addr = unsafe { local.base().add(off) };
        // SAFETY: valid QP; the SGE lies in `local`, registered in the QP's PD, and
        // `local` is exclusively borrowed until the completion is reaped below (or
        // poisoned on timeout, so it is never handed out or unmapped again).
        let ret = unsafe {
            sys::rswap_post_rdma(
                qp,
                i32::from(op == RdmaOp::Write),
                addr.cast(),
                len32,
                local.lkey(),
                remote_addr,
                rkey,
                WR_RDMA,
            )
        };
        check(ret, "ibv_post_send")?;
        let start = Instant::now();
        loop {
            match self.poll() {
                Ok(Some(c)) if !c.is_recv && !c.is_send && !c.is_probe => {
                    return if c.ok {
                        Ok(())
                    } else {
                        Err(io::Error::other(format!(
                            "RDMA {op:?} failed: {}",
                            c.status
                        )))
                    };
                }
                Ok(_) => {}
                Err(e) => {
                    local.poisoned = true;
                    return Err(e);
                }
            }
            if start.elapsed() >= timeout {
                local.poisoned = true;
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("RDMA {op:?} did not complete in {timeout:?}"),
                ));
            }
            std::thread::yield_now();
        }
    }
}
