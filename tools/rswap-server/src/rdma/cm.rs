// SPDX-License-Identifier: GPL-2.0

//! rdma_cm: the event channel, its events and the ids (connection management:
//! listen, resolve, accept, connect, reject, disconnect).

use std::cell::RefCell;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::BorrowedFd;
use std::ptr::{self, NonNull};
use std::rc::Rc;
use std::time::Duration;

use super::verbs::{Device, QpParts};
use super::{c_string, check, last_err, sys};
use crate::os::poll_readable;

/// One list from `rdma_get_devices`; holding it keeps librdmacm's device contexts
/// open (it counts a reference on each), so our PDs never outlive their context.
struct DeviceList {
    raw: NonNull<*mut sys::ibv_context>,
}

impl DeviceList {
    fn get() -> io::Result<Self> {
        let mut n = 0;
        // SAFETY: `n` is a valid out pointer; the list is freed in Drop.
        let raw = unsafe { sys::rdma_get_devices(&mut n) };
        NonNull::new(raw)
            .map(|raw| Self { raw })
            .ok_or_else(|| last_err("rdma_get_devices"))
    }

    fn contains(&self, ctx: *mut sys::ibv_context) -> bool {
        let mut i = 0;
        loop {
            // SAFETY: the list is a NULL-terminated array owned by self; we stop at NULL.
            let entry = unsafe { *self.raw.as_ptr().add(i) };
            if entry.is_null() {
                return false;
            }
            if entry == ctx {
                return true;
            }
            i += 1;
        }
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the list came from rdma_get_devices and is freed exactly once.
        unsafe { sys::rdma_free_devices(self.raw.as_ptr()) };
    }
}

pub(super) struct ChannelInner {
    raw: NonNull<sys::rdma_event_channel>,
    devices: RefCell<Vec<DeviceList>>,
}

impl Drop for ChannelInner {
    fn drop(&mut self) {
        // Every Device/Pd/CmId holds an Rc of us, so they are all gone by now.
        self.devices.borrow_mut().clear();
        // SAFETY: the channel was created by rdma_create_event_channel, no id uses it.
        unsafe { sys::rdma_destroy_event_channel(self.raw.as_ptr()) };
    }
}

/// An rdma_cm event channel: the source of all connection events.
pub struct EventChannel {
    inner: Rc<ChannelInner>,
}

/// Identifies a [`CmId`] in events; stable while the id exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdKey(usize);

/// The kind of an rdma_cm event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// `RDMA_CM_EVENT_ADDR_RESOLVED`.
    AddrResolved,
    /// `RDMA_CM_EVENT_ADDR_ERROR`.
    AddrError,
    /// `RDMA_CM_EVENT_ROUTE_RESOLVED`.
    RouteResolved,
    /// `RDMA_CM_EVENT_ROUTE_ERROR`.
    RouteError,
    /// `RDMA_CM_EVENT_CONNECT_REQUEST` (the event carries the new id).
    ConnectRequest,
    /// `RDMA_CM_EVENT_CONNECT_ERROR`.
    ConnectError,
    /// `RDMA_CM_EVENT_UNREACHABLE`.
    Unreachable,
    /// `RDMA_CM_EVENT_REJECTED`.
    Rejected,
    /// `RDMA_CM_EVENT_ESTABLISHED`.
    Established,
    /// `RDMA_CM_EVENT_DISCONNECTED`.
    Disconnected,
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`.
    DeviceRemoval,
    /// `RDMA_CM_EVENT_TIMEWAIT_EXIT`.
    TimewaitExit,
    /// Any other event, with its raw type and name.
    Other(u32),
}

impl EventKind {
    fn from_raw(v: u32) -> Self {
        match v {
            sys::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => Self::AddrResolved,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR => Self::AddrError,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => Self::RouteResolved,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR => Self::RouteError,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST => Self::ConnectRequest,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR => Self::ConnectError,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE => Self::Unreachable,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => Self::Rejected,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => Self::Established,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => Self::Disconnected,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => Self::DeviceRemoval,
            sys::rdma_cm_event_type_RDMA_CM_EVENT_TIMEWAIT_EXIT => Self::TimewaitExit,
            other => Self::Other(other),
        }
    }

    /// librdmacm's name for the event.
    pub fn name(self) -> String {
        let raw = match self {
            Self::AddrResolved => sys::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED,
            Self::AddrError => sys::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR,
            Self::RouteResolved => sys::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED,
            Self::RouteError => sys::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR,
            Self::ConnectRequest => sys::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST,
            Self::ConnectError => sys::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR,
            Self::Unreachable => sys::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE,
            Self::Rejected => sys::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED,
            Self::Established => sys::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED,
            Self::Disconnected => sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED,
            Self::DeviceRemoval => sys::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL,
            Self::TimewaitExit => sys::rdma_cm_event_type_RDMA_CM_EVENT_TIMEWAIT_EXIT,
            Self::Other(v) => v,
        };
        // SAFETY: rdma_event_str returns a static string for any value.
        unsafe { c_string(sys::rdma_event_str(raw)) }
    }
}

/// One rdma_cm event, copied out of librdmacm and already acknowledged.
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The event's status (an errno or a transport-specific reject code).
    pub status: i32,
    /// The id the event is about (for `ConnectRequest`: the new id).
    pub id: IdKey,
    /// The listening id, for `ConnectRequest`.
    pub listen_id: Option<IdKey>,
    /// Connection private data (connect request, reject, establish).
    pub private_data: Vec<u8>,
    /// Connection depths as seen from our side (the CM already swapped the peer's):
    /// RDMA READs we may have outstanding.
    pub initiator_depth: u8,
    /// RDMA READs of the peer we must be able to serve.
    pub responder_resources: u8,
    /// For `ConnectRequest`: the new connection's id, now owned by the caller.
    pub new_id: Option<CmId>,
}

impl EventChannel {
    /// Creates an event channel (opens /dev/infiniband/rdma_cm).
    pub fn new() -> io::Result<Self> {
        // SAFETY: no arguments; the result is checked for NULL.
        let raw = unsafe { sys::rdma_create_event_channel() };
        let raw = NonNull::new(raw).ok_or_else(|| last_err("rdma_create_event_channel"))?;
        Ok(Self {
            inner: Rc::new(ChannelInner {
                raw,
                devices: RefCell::new(Vec::new()),
            }),
        })
    }

    /// The channel's file descriptor, readable when an event is pending.
    pub fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the channel is valid while self lives; fd is a plain field, and the
        // descriptor stays open until the channel is destroyed (after the borrow).
        unsafe { BorrowedFd::borrow_raw((*self.inner.raw.as_ptr()).fd) }
    }

    /// Creates a new, unbound id on this channel (RC, port space TCP).
    pub fn create_id(&self) -> io::Result<CmId> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid channel, valid out pointer, no context pointer.
        let ret = unsafe {
            sys::rdma_create_id(
                self.inner.raw.as_ptr(),
                &mut raw,
                ptr::null_mut(),
                sys::rdma_port_space_RDMA_PS_TCP,
            )
        };
        check(ret, "rdma_create_id")?;
        let raw = NonNull::new(raw).ok_or_else(|| io::Error::other("rdma_create_id: NULL id"))?;
        Ok(CmId {
            raw,
            qp: None,
            chan: Rc::clone(&self.inner),
        })
    }

    /// Reads the next event, blocking until there is one, and acknowledges it.
    pub fn get_event(&self) -> io::Result<Event> {
        let mut ev = ptr::null_mut();
        // SAFETY: valid channel and out pointer.
        let ret = unsafe { sys::rdma_get_cm_event(self.inner.raw.as_ptr(), &mut ev) };
        check(ret, "rdma_get_cm_event")?;
        let mut info = sys::rswap_event_info::default();
        // SAFETY: `ev` is the event just returned; `info` is a valid out struct.
        unsafe { sys::rswap_event_info(ev, &mut info) };
        let private_data = if info.private_data.is_null() {
            Vec::new()
        } else {
            // SAFETY: librdmacm keeps private_data_len bytes valid until the ack below.
            unsafe {
                std::slice::from_raw_parts(
                    info.private_data.cast::<u8>(),
                    usize::from(info.private_data_len),
                )
            }
            .to_vec()
        };
        let kind = EventKind::from_raw(u32::try_from(info.event).unwrap_or(u32::MAX));
        // SAFETY: `ev` came from rdma_get_cm_event and is acked exactly once; nothing
        // of it is used afterwards (the ids stay valid: acking does not free them).
        unsafe { sys::rdma_ack_cm_event(ev) };
        let id = IdKey(info.id.addr());
        let new_id = match (kind, NonNull::new(info.id)) {
            (EventKind::ConnectRequest, Some(raw)) => Some(CmId {
                raw,
                qp: None,
                chan: Rc::clone(&self.inner),
            }),
            _ => None,
        };
        Ok(Event {
            kind,
            status: info.status,
            id,
            listen_id: NonNull::new(info.listen_id).map(|p| IdKey(p.as_ptr().addr())),
            private_data,
            initiator_depth: info.initiator_depth,
            responder_resources: info.responder_resources,
            new_id,
        })
    }

    /// Waits up to `timeout` for an event; `Ok(None)` on timeout.
    pub fn wait_event(&self, timeout: Duration) -> io::Result<Option<Event>> {
        let ready = poll_readable(&[self.fd()], Some(timeout))?;
        if ready.first().copied().unwrap_or(false) {
            self.get_event().map(Some)
        } else {
            Ok(None)
        }
    }
}

/// An rdma_cm id, optionally with a QP (and its CQ) attached.
pub struct CmId {
    pub(super) raw: NonNull<sys::rdma_cm_id>,
    pub(super) qp: Option<QpParts>,
    pub(super) chan: Rc<ChannelInner>,
}

/// The fields of a socket address the C helpers take: family 4 or 6, address bytes,
/// port, IPv6 scope id.
fn sockaddr_parts(addr: SocketAddr) -> (i32, [u8; 16], u16, u32) {
    let mut bytes = [0u8; 16];
    match addr {
        SocketAddr::V4(a) => {
            bytes[..4].copy_from_slice(&a.ip().octets());
            (4, bytes, a.port(), 0)
        }
        SocketAddr::V6(a) => (6, a.ip().octets(), a.port(), a.scope_id()),
    }
}

impl CmId {
    /// The key events use for this id.
    pub fn key(&self) -> IdKey {
        IdKey(self.raw.as_ptr().addr())
    }

    /// The device the id is bound to, if any (pinned open while the handle lives).
    pub fn device(&self) -> Option<Device> {
        // SAFETY: the id is valid while self lives.
        let ctx = NonNull::new(unsafe { sys::rswap_id_verbs(self.raw.as_ptr()) })?;
        let known = self
            .chan
            .devices
            .borrow()
            .iter()
            .any(|l| l.contains(ctx.as_ptr()));
        if !known {
            let list = DeviceList::get().ok()?;
            if !list.contains(ctx.as_ptr()) {
                return None;
            }
            self.chan.devices.borrow_mut().push(list);
        }
        Some(Device {
            ctx,
            _chan: Rc::clone(&self.chan),
        })
    }

    /// The peer's address as text.
    pub fn peer(&self) -> String {
        let mut buf = [0 as std::os::raw::c_char; 80];
        // SAFETY: valid id; the helper writes at most buf.len() bytes, NUL-terminated.
        unsafe { sys::rswap_id_peer(self.raw.as_ptr(), buf.as_mut_ptr(), buf.len()) };
        // SAFETY: the helper always NUL-terminates a non-empty buffer.
        unsafe { c_string(buf.as_ptr()) }
    }

    /// The peer's IP address (an IPv4-mapped IPv6 address as IPv4), or `None` when
    /// the id's address is not IP.
    pub fn peer_ip(&self) -> Option<IpAddr> {
        let mut b = [0u8; 16];
        // SAFETY: valid id; the helper writes at most 16 bytes into `b`.
        let family = unsafe { sys::rswap_id_peer_ip(self.raw.as_ptr(), b.as_mut_ptr()) };
        match family {
            4 => Some(IpAddr::from([b[0], b[1], b[2], b[3]])),
            6 => Some(IpAddr::from(b).to_canonical()),
            _ => None,
        }
    }

    /// Binds to `addr` and listens.
    pub fn listen(&mut self, addr: SocketAddr, backlog: i32) -> io::Result<()> {
        let (family, bytes, port, scope) = sockaddr_parts(addr);
        // SAFETY: valid id; `bytes` holds 16 bytes, of which the helper reads 4 or 16.
        let ret =
            unsafe { sys::rswap_bind_addr(self.raw.as_ptr(), family, bytes.as_ptr(), port, scope) };
        check(ret, "rdma_bind_addr")?;
        // SAFETY: valid, bound id.
        check(
            unsafe { sys::rdma_listen(self.raw.as_ptr(), backlog) },
            "rdma_listen",
        )
    }

    /// Starts resolving `addr` (event `AddrResolved` or `AddrError` follows), from
    /// the source address `src` if given (bound with port 0; an IPv6 source takes
    /// `addr`'s scope id), else from the one the routing table picks.
    pub fn resolve_addr(
        &mut self,
        src: Option<IpAddr>,
        addr: SocketAddr,
        timeout_ms: i32,
    ) -> io::Result<()> {
        let (family, bytes, port, scope) = sockaddr_parts(addr);
        let (src_family, src_bytes) = match src {
            None => (0, [0u8; 16]),
            Some(ip) => {
                let (f, b, _, _) = sockaddr_parts(SocketAddr::new(ip, 0));
                (f, b)
            }
        };
        // SAFETY: valid id; `src_bytes` and `bytes` hold 16 bytes each, of which the
        // helper reads 4 or 16 (none of `src_bytes` when `src_family` is 0).
        let ret = unsafe {
            sys::rswap_resolve_addr(
                self.raw.as_ptr(),
                src_family,
                src_bytes.as_ptr(),
                family,
                bytes.as_ptr(),
                port,
                scope,
                timeout_ms,
            )
        };
        check(ret, "rdma_resolve_addr")
    }

    /// Starts resolving the route (event `RouteResolved` or `RouteError` follows).
    pub fn resolve_route(&mut self, timeout_ms: i32) -> io::Result<()> {
        // SAFETY: valid id.
        check(
            unsafe { sys::rdma_resolve_route(self.raw.as_ptr(), timeout_ms) },
            "rdma_resolve_route",
        )
    }

    /// Accepts a connect request with the depths of its event (clamped to the
    /// device), so the peer gets the RDMA READ depth it asked for, and `private_data`
    /// (at most 196 bytes over InfiniBand and RoCE). `rnr_retry` bounds how long our
    /// SENDs wait for the peer's receive.
    pub fn accept(
        &mut self,
        initiator_depth: u8,
        responder_resources: u8,
        rnr_retry: u8,
        private_data: &[u8],
    ) -> io::Result<()> {
        self.qp_ptr()?;
        let len = u8::try_from(private_data.len())
            .map_err(|_| io::Error::other("private data too long"))?;
        // SAFETY: valid id with a QP; `private_data` is valid for `len` bytes for the
        // call (librdmacm copies it).
        let ret = unsafe {
            sys::rswap_accept(
                self.raw.as_ptr(),
                initiator_depth,
                responder_resources,
                rnr_retry,
                private_data.as_ptr().cast(),
                len,
            )
        };
        check(ret, "rdma_accept")
    }

    /// Connects with `private_data` (at most 255 bytes; the transport may allow less).
    pub fn connect(&mut self, private_data: &[u8]) -> io::Result<()> {
        self.qp_ptr()?;
        let len = u8::try_from(private_data.len())
            .map_err(|_| io::Error::other("private data too long"))?;
        // SAFETY: valid id with a QP; the data is copied by the call.
        let ret =
            unsafe { sys::rswap_connect(self.raw.as_ptr(), private_data.as_ptr().cast(), len) };
        check(ret, "rdma_connect")
    }

    /// Rejects a connect request with `private_data`.
    pub fn reject(&mut self, private_data: &[u8]) -> io::Result<()> {
        let len = u8::try_from(private_data.len())
            .map_err(|_| io::Error::other("private data too long"))?;
        // SAFETY: valid id; the data is copied by the call.
        let ret = unsafe { sys::rdma_reject(self.raw.as_ptr(), private_data.as_ptr().cast(), len) };
        check(ret, "rdma_reject")
    }

    /// Starts a disconnect (the peer sees `Disconnected`).
    pub fn disconnect(&mut self) -> io::Result<()> {
        // SAFETY: valid id.
        check(
            unsafe { sys::rdma_disconnect(self.raw.as_ptr()) },
            "rdma_disconnect",
        )
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        if let Some(parts) = self.qp.take() {
            // SAFETY: the QP was created on this id; destroying it stops all device
            // access to the receive buffer and flushes outstanding work.
            unsafe { sys::rdma_destroy_qp(self.raw.as_ptr()) };
            // SAFETY: the CQ was created for this QP, which is now gone.
            unsafe { sys::ibv_destroy_cq(parts.cq.as_ptr()) };
            drop(parts);
        }
        // SAFETY: we own the id; every event of it was acked in get_event.
        unsafe { sys::rdma_destroy_id(self.raw.as_ptr()) };
    }
}
