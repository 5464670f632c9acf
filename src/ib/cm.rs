// SPDX-License-Identifier: GPL-2.0

//! rdma_cm connections: address and route resolution, connect, disconnect.

use core::ptr::NonNull;
use kernel::{error::to_result, ffi, prelude::*, sync::Arc};

use crate::kernel_ext::SockAddr;

use super::{
    bindings,
    device::Device,
    qp::{Qp, QpCaps},
    rdma_device::RdmaDevice,
};

/// What the RDMA connection manager reports about a connection.
#[derive(Debug)]
pub(crate) enum CmEvent<'a> {
    /// `rdma_resolve_addr` finished.
    AddrResolved,
    /// `rdma_resolve_route` finished.
    RouteResolved,
    /// The connection is up; `private_data` is what the peer's accept carried (over
    /// InfiniBand and RoCE padded to the CM's fixed size, may be empty).
    Established {
        /// The peer's private data.
        private_data: &'a [u8],
    },
    /// The peer refused the connection; `private_data` is what it said why.
    Rejected {
        /// The CM's reject status.
        status: i32,
        /// The peer's private data (may be empty).
        private_data: &'a [u8],
    },
    /// The connection went down.
    Disconnected,
    /// The RDMA device under the connection is being removed.
    DeviceRemoval,
    /// Resolution or connection failed: `what` names the step, `status` is an errno.
    Failed {
        /// The failing step.
        what: &'static str,
        /// The status the CM reported.
        status: i32,
    },
    /// Anything else (time-wait exit, address change, ...).
    Other,
}

/// Receives the events of a [`CmId`]. Runs in process context (the CM's workqueue), with
/// the CM's per-id handler lock held, so it must not wait for anything that destroys
/// the id.
pub(crate) trait CmHandler: Send + Sync + 'static {
    /// One event.
    fn event(&self, ev: CmEvent<'_>);

    /// What the id's QP is called in the kernel log (its asynchronous events).
    fn log_name(&self) -> Option<&CStr> {
        None
    }
}

/// Connection parameters sent with a connect request.
pub(crate) struct ConnectParams<'a> {
    /// Private data for the peer (at most 56 bytes on InfiniBand and RoCE).
    pub(crate) private_data: &'a [u8],
    /// Outstanding RDMA READs this side may have in flight (initiator depth).
    pub(crate) initiator_depth: u8,
}

/// An rdma_cm identifier (`struct rdma_cm_id`) with its event handler and, once created,
/// its QP; on drop the QP is drained and destroyed, then the id.
///
/// # Invariants
///
/// `id` came from `rdma_create_id` with `Arc::as_ptr(&handler)` as its context and has
/// not been destroyed; `handler` lives at least as long as the id; `qp` is the id's QP.
pub(crate) struct CmId<H: CmHandler> {
    id: NonNull<bindings::rdma_cm_id>,
    qp: Option<Qp>,
    handler: Arc<H>,
}

// SAFETY: rdma_cm ids may be used and destroyed from any thread.
unsafe impl<H: CmHandler> Send for CmId<H> {}
// SAFETY: the operations exposed through `&CmId` are thread safe in rdma_cm (they take the
// id's own locks).
unsafe impl<H: CmHandler> Sync for CmId<H> {}

impl<H: CmHandler> CmId<H> {
    /// Creates an id for an RC connection (port space TCP) whose events go to `handler`.
    pub(crate) fn new(handler: Arc<H>) -> Result<Self> {
        let ctx = Arc::as_ptr(&handler).cast_mut().cast::<ffi::c_void>();
        // SAFETY: `cm_handler::<H>` matches `rdma_cm_event_handler`; `ctx` points to the
        // handler, which the returned value keeps alive until after `rdma_destroy_id`.
        let raw = unsafe { bindings::rswap_rdma_create_id(Some(cm_handler::<H>), ctx) };
        let id = NonNull::new(kernel::error::from_err_ptr(raw)?).ok_or(ENOMEM)?;
        // INVARIANT: `id` is fresh, has no QP, and its context is the handler we keep.
        Ok(Self {
            id,
            qp: None,
            handler,
        })
    }

    fn as_raw(&self) -> *mut bindings::rdma_cm_id {
        self.id.as_ptr()
    }

    /// The handler events go to.
    pub(crate) fn handler(&self) -> &Arc<H> {
        &self.handler
    }

    /// Starts resolving the address `dst` (with its port), from the source address `src`
    /// if given (else whichever the routing picks); `AddrResolved` or `Failed` follows.
    pub(crate) fn resolve_addr(
        &self,
        src: Option<&SockAddr>,
        dst: &SockAddr,
        timeout_ms: u32,
    ) -> Result {
        let src = src.map_or(core::ptr::null_mut(), |a| a.as_sockaddr().cast_mut());
        // SAFETY: the id is valid (type invariant); the addresses are valid for the call
        // and the CM copies them (it does not write through `src`, whose parameter is not
        // `const` only for history's sake).
        to_result(unsafe {
            bindings::rdma_resolve_addr(self.as_raw(), src, dst.as_sockaddr(), timeout_ms as usize)
        })
    }

    /// Starts resolving the route; `RouteResolved` or `Failed` follows.
    pub(crate) fn resolve_route(&self, timeout_ms: u32) -> Result {
        let timeout = timeout_ms as usize;
        // SAFETY: the id is valid and its address is resolved (the caller waited for it).
        to_result(unsafe { bindings::rdma_resolve_route(self.as_raw(), timeout) })
    }

    /// The device the resolved address lives on.
    pub(crate) fn device(&self) -> Option<&Device> {
        // SAFETY: the id is valid; `device` is set by address resolution and stays until
        // the id is destroyed or the device is removed (rswap's IB client tears its
        // connections down before a removal completes).
        let dev = unsafe { (*self.as_raw()).device };
        // SAFETY: a non-null device of a resolved id is valid while the id exists.
        (!dev.is_null()).then(|| unsafe { Device::from_raw(dev) })
    }

    /// Creates the id's QP on `dev`, with a PD and a CQ of its own (on completion vector
    /// `vector_hint` if it can), once the route is resolved. `EINVAL` if the id has no
    /// route on `dev`'s device or has a QP already.
    pub(crate) fn create_qp(
        &mut self,
        dev: &Arc<RdmaDevice>,
        caps: &QpCaps,
        vector_hint: u32,
    ) -> Result<&Qp> {
        let on_dev = self
            .device()
            .is_some_and(|d| d.as_raw() == dev.device().as_raw());
        if self.qp.is_some() || !on_dev {
            return Err(EINVAL);
        }
        let name = self.handler.log_name();
        // SAFETY: the id is valid, has a resolved route on `dev`'s device and no QP; the
        // QP is stored in `self.qp`, which drop destroys before the id; `name`, if any,
        // lives in the handler, which this id keeps until after it destroys the QP.
        let qp = unsafe { Qp::create(self.id, dev, caps, vector_hint, name)? };
        // INVARIANT: `qp` is the id's QP.
        Ok(self.qp.insert(qp))
    }

    /// The QP, once created.
    pub(crate) fn qp(&self) -> Option<&Qp> {
        self.qp.as_ref()
    }

    /// Moves the QP (if any) to the error state and waits until every work request posted
    /// on it has completed, flushed. Sleeps. For teardown: the caller must post nothing
    /// more (it holds the id mutably, and the QP is destroyed with it).
    pub(crate) fn drain(&mut self) {
        if let Some(qp) = &self.qp {
            qp.drain();
        }
    }

    /// Starts connecting; `Established`, `Rejected` or `Failed` follows.
    pub(crate) fn connect(&self, params: &ConnectParams<'_>) -> Result {
        let len = u8::try_from(params.private_data.len()).map_err(|_| EINVAL)?;
        let mut raw = bindings::rdma_conn_param {
            private_data: params.private_data.as_ptr().cast(),
            private_data_len: len,
            responder_resources: 0,
            initiator_depth: params.initiator_depth,
            retry_count: 7,
            rnr_retry_count: 7,
            ..Default::default()
        };
        if self.qp.is_none() {
            return Err(EINVAL);
        }
        // SAFETY: the id is valid with a QP; `raw` and the private data it points to are
        // valid for the call (the CM copies them).
        to_result(unsafe { bindings::rdma_connect(self.as_raw(), &mut raw) })
    }

    /// Starts tearing the connection down; the QP moves to the error state, flushing
    /// every posted work request. Harmless on an id that is not connected.
    pub(crate) fn disconnect(&self) {
        // SAFETY: the id is valid; rdma_disconnect tolerates unconnected ids.
        let _ = unsafe { bindings::rdma_disconnect(self.as_raw()) };
    }
}

impl<H: CmHandler> Drop for CmId<H> {
    fn drop(&mut self) {
        // The QP (and with it its CQ) goes first: it needs the id.
        drop(self.qp.take());
        // SAFETY: the id is valid and owned, and has no QP any more. After this returns no
        // handler runs, so `handler` may be dropped.
        unsafe { bindings::rdma_destroy_id(self.as_raw()) };
    }
}

/// The CM's event callback.
///
/// The private data of a connection event (empty if it carries none).
///
/// # Safety
///
/// `event` is valid for `'a` and its parameter union's `conn` member is the valid one
/// (ESTABLISHED, REJECTED, CONNECT_REQUEST).
unsafe fn conn_private_data<'a>(event: *mut bindings::rdma_cm_event) -> &'a [u8] {
    let mut len = 0u8;
    // SAFETY: the caller guarantees `event` and its `conn` member.
    let data = unsafe { bindings::rswap_cm_event_private_data(event, &mut len) };
    if data.is_null() {
        &[]
    } else {
        // SAFETY: the CM keeps `len` bytes at `data` valid as long as the event.
        unsafe { core::slice::from_raw_parts(data.cast::<u8>(), usize::from(len)) }
    }
}

/// # Safety
///
/// Called by the CM with a valid id whose context is an `H` kept alive by the `CmId`.
unsafe extern "C" fn cm_handler<H: CmHandler>(
    id: *mut bindings::rdma_cm_id,
    event: *mut bindings::rdma_cm_event,
) -> ffi::c_int {
    // SAFETY: the context is the handler, alive while the id exists.
    let handler = unsafe { &*(*id).context.cast::<H>() };
    // SAFETY: the CM passes a valid event for the duration of the call.
    let ev = unsafe { &*event };
    let status = ev.status;
    let kind = ev.event;
    let event = match kind {
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => CmEvent::AddrResolved,
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => CmEvent::RouteResolved,
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => CmEvent::Established {
            // SAFETY: for ESTABLISHED the `conn` member of the parameter union is the
            // valid one.
            private_data: unsafe { conn_private_data(event) },
        },
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => CmEvent::Rejected {
            status,
            // SAFETY: for REJECTED the `conn` member of the parameter union is the valid
            // one.
            private_data: unsafe { conn_private_data(event) },
        },
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => CmEvent::Disconnected,
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => CmEvent::DeviceRemoval,
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR => CmEvent::Failed {
            what: "address resolution",
            status,
        },
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR => CmEvent::Failed {
            what: "route resolution",
            status,
        },
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR => CmEvent::Failed {
            what: "connect",
            status,
        },
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE => CmEvent::Failed {
            what: "connect (unreachable)",
            status,
        },
        _ => CmEvent::Other,
    };
    handler.event(event);
    // Never ask the CM to destroy the id: the `CmId` owns it.
    0
}
