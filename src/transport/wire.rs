// SPDX-License-Identifier: GPL-2.0

//! The rswap wire format, shared by the kernel module and `rswap-server`.
//!
//! This one file is compiled by both sides: the kernel crate declares it as a
//! module, and `tools/rswap-server` includes it with `#[path]`. It therefore uses
//! only `core`, contains no `unsafe`, and never panics: every read goes through
//! `get`/`try_into` and returns a [`WireError`] on bad input. What only the server
//! sends or reads is left out of kernel modules (`cfg(MODULE)`, which Kbuild sets).
//!
//! All messages are fixed size and little-endian. Every message starts with
//! [`MAGIC`] and [`VERSION`]; a decoder rejects any other version instead of
//! guessing. See `Documentation/wire-format.md` for the byte tables and the test
//! vectors that both sides check.

/// Magic at offset 0 of every message: the bytes `"RSWP"` read as a little-endian `u32`.
pub(crate) const MAGIC: u32 = 0x5057_5352;

/// The only protocol version this file encodes and accepts.
pub(crate) const VERSION: u16 = 1;

/// Why a buffer could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    /// The first four bytes are not [`MAGIC`].
    BadMagic,
    /// The version field is not [`VERSION`].
    BadVersion,
    /// The buffer is shorter than the message.
    Short,
    /// A field holds a value this version does not allow (reserved bits set,
    /// unknown flags or reason code, zero size, queue index out of range).
    BadField,
}

/// Copies `src` into `buf` at `off`; bytes that would fall outside `buf` are dropped.
///
/// Callers pass constant offsets inside fixed-size arrays, which the test vectors
/// check, so nothing is ever dropped in practice; this form cannot panic.
fn put(buf: &mut [u8], off: usize, src: &[u8]) {
    for (dst, byte) in buf.iter_mut().skip(off).zip(src.iter()) {
        *dst = *byte;
    }
}

/// Returns the `N` bytes of `buf` at `off`, or [`WireError::Short`].
fn take<const N: usize>(buf: &[u8], off: usize) -> Result<[u8; N], WireError> {
    let end = off.checked_add(N).ok_or(WireError::Short)?;
    let bytes = buf.get(off..end).ok_or(WireError::Short)?;
    bytes.try_into().map_err(|_| WireError::Short)
}

/// Reads a little-endian `u16` at `off`.
fn get_u16(buf: &[u8], off: usize) -> Result<u16, WireError> {
    take::<2>(buf, off).map(u16::from_le_bytes)
}

/// Reads a little-endian `u32` at `off`.
fn get_u32(buf: &[u8], off: usize) -> Result<u32, WireError> {
    take::<4>(buf, off).map(u32::from_le_bytes)
}

/// Reads a little-endian `u64` at `off`.
fn get_u64(buf: &[u8], off: usize) -> Result<u64, WireError> {
    take::<8>(buf, off).map(u64::from_le_bytes)
}

/// Checks the length, magic and version common to every message of `size` bytes.
fn check_header(buf: &[u8], size: usize) -> Result<(), WireError> {
    if buf.len() < size {
        return Err(WireError::Short);
    }
    if get_u32(buf, 0)? != MAGIC {
        return Err(WireError::BadMagic);
    }
    if get_u16(buf, 4)? != VERSION {
        return Err(WireError::BadVersion);
    }
    Ok(())
}

/// Writes the common header (magic, version) and the 16-bit field at offset 6.
fn put_header(buf: &mut [u8], field6: u16) {
    put(buf, 0, &MAGIC.to_le_bytes());
    put(buf, 4, &VERSION.to_le_bytes());
    put(buf, 6, &field6.to_le_bytes());
}

/// Client to server: the private data of the rdma_cm connect request of one queue.
///
/// Layout (32 bytes): 0 magic u32, 4 version u16, 6 flags u16 (0), 8 client_id u64,
/// 16 queue_index u16, 18 queue_count u16, 20 reserved u32 (0), 24 requested_size u64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnectRequest {
    /// Identifies the client across its queues and reconnects.
    pub(crate) client_id: u64,
    /// Which of the client's queues this connection is (`< queue_count`).
    pub(crate) queue_index: u16,
    /// How many queues the client opens; must agree across its live queues.
    pub(crate) queue_count: u16,
    /// Size of the region the client asks for, in bytes (non-zero).
    pub(crate) requested_size: u64,
}

impl ConnectRequest {
    /// Encoded size in bytes.
    pub(crate) const SIZE: usize = 32;

    /// Encodes the request into `out`.
    pub(crate) fn encode(&self, out: &mut [u8; Self::SIZE]) {
        *out = [0; Self::SIZE];
        put_header(out, 0);
        put(out, 8, &self.client_id.to_le_bytes());
        put(out, 16, &self.queue_index.to_le_bytes());
        put(out, 18, &self.queue_count.to_le_bytes());
        put(out, 24, &self.requested_size.to_le_bytes());
    }

    /// Decodes a request from the start of `buf` (trailing bytes are ignored:
    /// transports may pad private data).
    ///
    /// Rejects non-zero flags or reserved bytes, a zero `requested_size`, a zero
    /// `queue_count` and a `queue_index` not below `queue_count` with
    /// [`WireError::BadField`].
    #[cfg(not(MODULE))]
    pub(crate) fn decode(buf: &[u8]) -> Result<Self, WireError> {
        check_header(buf, Self::SIZE)?;
        if get_u16(buf, 6)? != 0 || get_u32(buf, 20)? != 0 {
            return Err(WireError::BadField);
        }
        let req = Self {
            client_id: get_u64(buf, 8)?,
            queue_index: get_u16(buf, 16)?,
            queue_count: get_u16(buf, 18)?,
            requested_size: get_u64(buf, 24)?,
        };
        if req.requested_size == 0 || req.queue_count == 0 || req.queue_index >= req.queue_count {
            return Err(WireError::BadField);
        }
        Ok(req)
    }
}

/// Why the server refused a connect request (the `reason` of [`RejectReason`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RejectCode {
    /// The request's version is not one the server speaks.
    BadVersion,
    /// The requested size exceeds what the server can still hand out.
    TooLarge,
    /// The server could not allocate or register the memory.
    NoMemory,
    /// The request is malformed or inconsistent with the client's region.
    BadRequest,
    /// The server already serves as many clients as it may.
    TooManyClients,
    /// `queue_count` disagrees with the client's other live queues.
    QueueMismatch,
}

impl RejectCode {
    /// The code's value on the wire.
    #[cfg(not(MODULE))]
    pub(crate) fn to_u16(self) -> u16 {
        match self {
            Self::BadVersion => 1,
            Self::TooLarge => 2,
            Self::NoMemory => 3,
            Self::BadRequest => 4,
            Self::TooManyClients => 5,
            Self::QueueMismatch => 6,
        }
    }

    /// The code for a wire value; unknown values give [`WireError::BadField`].
    pub(crate) fn from_u16(value: u16) -> Result<Self, WireError> {
        match value {
            1 => Ok(Self::BadVersion),
            2 => Ok(Self::TooLarge),
            3 => Ok(Self::NoMemory),
            4 => Ok(Self::BadRequest),
            5 => Ok(Self::TooManyClients),
            6 => Ok(Self::QueueMismatch),
            _ => Err(WireError::BadField),
        }
    }

    /// A short stable name, as used in logs and on command lines.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::BadVersion => "BadVersion",
            Self::TooLarge => "TooLarge",
            Self::NoMemory => "NoMemory",
            Self::BadRequest => "BadRequest",
            Self::TooManyClients => "TooManyClients",
            Self::QueueMismatch => "QueueMismatch",
        }
    }
}

/// Server to client: the private data of an rdma_cm reject.
///
/// Layout (16 bytes): 0 magic u32, 4 version u16, 6 reason u16, 8 max_size u64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RejectReason {
    /// Why the request was refused.
    pub(crate) code: RejectCode,
    /// The largest region size the server could hand out at the time, in bytes.
    pub(crate) max_size: u64,
}

impl RejectReason {
    /// Encoded size in bytes.
    pub(crate) const SIZE: usize = 16;

    /// Encodes the reject into `out`.
    #[cfg(not(MODULE))]
    pub(crate) fn encode(&self, out: &mut [u8; Self::SIZE]) {
        *out = [0; Self::SIZE];
        put_header(out, self.code.to_u16());
        put(out, 8, &self.max_size.to_le_bytes());
    }

    /// Decodes a reject from the start of `buf` (trailing bytes are ignored).
    pub(crate) fn decode(buf: &[u8]) -> Result<Self, WireError> {
        check_header(buf, Self::SIZE)?;
        Ok(Self {
            code: RejectCode::from_u16(get_u16(buf, 6)?)?,
            max_size: get_u64(buf, 8)?,
        })
    }
}

/// Server to client: the region a client may access, sent in one SEND on every
/// queue once the connection is established.
///
/// Layout (48 bytes): 0 magic u32, 4 version u16, 6 flags u16, 8 region_id u64,
/// 16 epoch u32, 20 rkey u32, 24 remote_addr u64, 32 length u64, 40 reserved u64 (0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RegionDescriptor {
    /// Bit set of `RegionDescriptor::FLAG_*`.
    pub(crate) flags: u16,
    /// Server-unique identifier of the region; stays the same across reconnects.
    pub(crate) region_id: u64,
    /// 1 for a new region, incremented each time the region is handed back after
    /// all of the client's queues were gone.
    pub(crate) epoch: u32,
    /// The remote key for RDMA READ/WRITE into the region.
    pub(crate) rkey: u32,
    /// The region's start address for RDMA operations.
    pub(crate) remote_addr: u64,
    /// The region's length in bytes (non-zero).
    pub(crate) length: u64,
}

impl RegionDescriptor {
    /// Encoded size in bytes.
    pub(crate) const SIZE: usize = 48;

    /// Flag: this is a reconnect that got its earlier region (and data) back.
    pub(crate) const FLAG_REUSED: u16 = 1 << 0;

    /// All flags version 1 defines.
    pub(crate) const FLAGS_KNOWN: u16 = Self::FLAG_REUSED;

    /// Whether [`Self::FLAG_REUSED`] is set.
    pub(crate) fn reused(&self) -> bool {
        self.flags & Self::FLAG_REUSED != 0
    }

    /// Whether `other` describes the same memory with the same data: the same region id
    /// and length. A region id names one region's memory for its whole life, across
    /// server restarts that keep it (`rswap-server --state-dir`), and is never reused for
    /// other memory; a server that freed or lost the region hands out a different one.
    /// The address and key may differ (a restarted server registers the memory anew), and
    /// so may the epoch and flags (a reconnect after all queues were gone bumps the
    /// epoch).
    pub(crate) fn same_region(&self, other: &Self) -> bool {
        self.region_id == other.region_id && self.length == other.length
    }

    /// Encodes the descriptor into `out`.
    #[cfg(not(MODULE))]
    pub(crate) fn encode(&self, out: &mut [u8; Self::SIZE]) {
        *out = [0; Self::SIZE];
        put_header(out, self.flags);
        put(out, 8, &self.region_id.to_le_bytes());
        put(out, 16, &self.epoch.to_le_bytes());
        put(out, 20, &self.rkey.to_le_bytes());
        put(out, 24, &self.remote_addr.to_le_bytes());
        put(out, 32, &self.length.to_le_bytes());
    }

    /// Decodes a descriptor from the start of `buf` (trailing bytes are ignored).
    ///
    /// Rejects unknown flags, non-zero reserved bytes, a zero epoch and a zero
    /// length with [`WireError::BadField`].
    pub(crate) fn decode(buf: &[u8]) -> Result<Self, WireError> {
        check_header(buf, Self::SIZE)?;
        let desc = Self {
            flags: get_u16(buf, 6)?,
            region_id: get_u64(buf, 8)?,
            epoch: get_u32(buf, 16)?,
            rkey: get_u32(buf, 20)?,
            remote_addr: get_u64(buf, 24)?,
            length: get_u64(buf, 32)?,
        };
        if desc.flags & !Self::FLAGS_KNOWN != 0
            || get_u64(buf, 40)? != 0
            || desc.epoch == 0
            || desc.length == 0
        {
            return Err(WireError::BadField);
        }
        Ok(desc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQ: ConnectRequest = ConnectRequest {
        client_id: 0x0102_0304_0506_0708,
        queue_index: 3,
        queue_count: 4,
        requested_size: 0x0400_0000,
    };
    const REQ_BYTES: [u8; 32] = [
        0x52, 0x53, 0x57, 0x50, 0x01, 0x00, 0x00, 0x00, // magic "RSWP", version 1, flags 0
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // client_id
        0x03, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, // queue 3 of 4, reserved
        0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, // requested_size 64 MiB
    ];

    const REJ: RejectReason = RejectReason {
        code: RejectCode::TooLarge,
        max_size: 0x0000_0001_8000_0000,
    };
    const REJ_BYTES: [u8; 16] = [
        0x52, 0x53, 0x57, 0x50, 0x01, 0x00, 0x02, 0x00, // magic, version 1, TooLarge
        0x00, 0x00, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00, // max_size 6 GiB
    ];

    const DESC: RegionDescriptor = RegionDescriptor {
        flags: RegionDescriptor::FLAG_REUSED,
        region_id: 0x1122_3344_5566_7788,
        epoch: 2,
        rkey: 0xdead_beef,
        remote_addr: 0x7f00_1234_5000,
        length: 0x0060_0000,
    };
    const DESC_BYTES: [u8; 48] = [
        0x52, 0x53, 0x57, 0x50, 0x01, 0x00, 0x01, 0x00, // magic, version 1, flags REUSED
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // region_id
        0x02, 0x00, 0x00, 0x00, 0xef, 0xbe, 0xad, 0xde, // epoch 2, rkey
        0x00, 0x50, 0x34, 0x12, 0x00, 0x7f, 0x00, 0x00, // remote_addr
        0x00, 0x00, 0x60, 0x00, 0x00, 0x00, 0x00, 0x00, // length 6 MiB
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // reserved
    ];

    /// Returns `bytes` with the byte at `off` replaced by `value`.
    fn with<const N: usize>(mut bytes: [u8; N], off: usize, value: u8) -> [u8; N] {
        if let Some(b) = bytes.get_mut(off) {
            *b = value;
        }
        bytes
    }

    #[test]
    fn same_region_is_the_region_id_and_length() {
        let revived = RegionDescriptor {
            flags: 0,
            epoch: 7,
            ..DESC
        };
        assert!(DESC.same_region(&revived));
        // A server restarted with its state directory registers the memory anew.
        let restored = RegionDescriptor {
            remote_addr: DESC.remote_addr + 4096,
            rkey: 1,
            epoch: 2,
            ..DESC
        };
        assert!(DESC.same_region(&restored));
        for other in [
            RegionDescriptor {
                region_id: DESC.region_id + 1,
                ..DESC
            },
            RegionDescriptor {
                length: DESC.length * 2,
                ..DESC
            },
        ] {
            assert!(!DESC.same_region(&other), "{other:?}");
        }
    }

    #[test]
    fn magic_spells_rswp() {
        assert_eq!(&MAGIC.to_le_bytes(), b"RSWP");
    }

    #[test]
    fn connect_request_vector() {
        let mut out = [0xaa; ConnectRequest::SIZE];
        REQ.encode(&mut out);
        assert_eq!(out, REQ_BYTES);
        assert_eq!(ConnectRequest::decode(&REQ_BYTES), Ok(REQ));
    }

    #[test]
    fn connect_request_round_trip_and_padding() {
        let req = ConnectRequest {
            client_id: u64::MAX,
            queue_index: 0,
            queue_count: u16::MAX,
            requested_size: u64::MAX,
        };
        let mut out = [0; ConnectRequest::SIZE];
        req.encode(&mut out);
        assert_eq!(ConnectRequest::decode(&out), Ok(req));
        // rdma_cm pads private data (56 bytes over IB/RoCE): trailing bytes are ignored.
        let mut padded = [0u8; 56];
        put(&mut padded, 0, &out);
        assert_eq!(ConnectRequest::decode(&padded), Ok(req));
    }

    #[test]
    fn connect_request_rejects() {
        let d = ConnectRequest::decode;
        assert_eq!(d(&with(REQ_BYTES, 0, 0x51)), Err(WireError::BadMagic));
        assert_eq!(d(&with(REQ_BYTES, 4, 2)), Err(WireError::BadVersion));
        assert_eq!(d(&with(REQ_BYTES, 4, 0)), Err(WireError::BadVersion));
        assert_eq!(d(&with(REQ_BYTES, 5, 1)), Err(WireError::BadVersion));
        assert_eq!(d(REQ_BYTES.get(..31).unwrap_or(&[])), Err(WireError::Short));
        assert_eq!(d(&[]), Err(WireError::Short));
        assert_eq!(d(&with(REQ_BYTES, 6, 1)), Err(WireError::BadField), "flags");
        assert_eq!(
            d(&with(REQ_BYTES, 23, 1)),
            Err(WireError::BadField),
            "reserved"
        );
        // queue_index 4 of 4, queue_count 0, size 0.
        assert_eq!(d(&with(REQ_BYTES, 16, 4)), Err(WireError::BadField));
        assert_eq!(d(&with(REQ_BYTES, 18, 0)), Err(WireError::BadField));
        assert_eq!(d(&with(REQ_BYTES, 27, 0)), Err(WireError::BadField));
    }

    #[test]
    fn reject_vector() {
        let mut out = [0xaa; RejectReason::SIZE];
        REJ.encode(&mut out);
        assert_eq!(out, REJ_BYTES);
        assert_eq!(RejectReason::decode(&REJ_BYTES), Ok(REJ));
    }

    #[test]
    fn reject_codes_round_trip() {
        for value in 1..=6u16 {
            let code = RejectCode::from_u16(value);
            assert_eq!(code.map(RejectCode::to_u16), Ok(value));
            let rej = RejectReason {
                code: code.unwrap_or(RejectCode::BadRequest),
                max_size: u64::from(value) << 40,
            };
            let mut out = [0; RejectReason::SIZE];
            rej.encode(&mut out);
            assert_eq!(RejectReason::decode(&out), Ok(rej));
        }
    }

    #[test]
    fn reject_rejects() {
        let d = RejectReason::decode;
        assert_eq!(d(&with(REJ_BYTES, 3, 0)), Err(WireError::BadMagic));
        assert_eq!(d(&with(REJ_BYTES, 4, 9)), Err(WireError::BadVersion));
        assert_eq!(d(REJ_BYTES.get(..15).unwrap_or(&[])), Err(WireError::Short));
        assert_eq!(
            d(&with(REJ_BYTES, 6, 0)),
            Err(WireError::BadField),
            "reason 0"
        );
        assert_eq!(
            d(&with(REJ_BYTES, 6, 7)),
            Err(WireError::BadField),
            "reason 7"
        );
    }

    #[test]
    fn descriptor_vector() {
        let mut out = [0xaa; RegionDescriptor::SIZE];
        DESC.encode(&mut out);
        assert_eq!(out, DESC_BYTES);
        assert_eq!(RegionDescriptor::decode(&DESC_BYTES), Ok(DESC));
        assert!(DESC.reused());
    }

    #[test]
    fn descriptor_round_trip() {
        let desc = RegionDescriptor {
            flags: 0,
            region_id: 1,
            epoch: u32::MAX,
            rkey: 0,
            remote_addr: u64::MAX,
            length: 4096,
        };
        let mut out = [0; RegionDescriptor::SIZE];
        desc.encode(&mut out);
        assert_eq!(RegionDescriptor::decode(&out), Ok(desc));
        assert!(!desc.reused());
    }

    #[test]
    fn descriptor_rejects() {
        let d = RegionDescriptor::decode;
        assert_eq!(d(&with(DESC_BYTES, 1, 0)), Err(WireError::BadMagic));
        assert_eq!(d(&with(DESC_BYTES, 4, 2)), Err(WireError::BadVersion));
        assert_eq!(
            d(DESC_BYTES.get(..47).unwrap_or(&[])),
            Err(WireError::Short)
        );
        assert_eq!(
            d(&with(DESC_BYTES, 6, 3)),
            Err(WireError::BadField),
            "flags"
        );
        assert_eq!(
            d(&with(DESC_BYTES, 47, 1)),
            Err(WireError::BadField),
            "reserved"
        );
        assert_eq!(
            d(&with(DESC_BYTES, 16, 0)),
            Err(WireError::BadField),
            "epoch"
        );
        assert_eq!(
            d(&with(DESC_BYTES, 34, 0)),
            Err(WireError::BadField),
            "length"
        );
    }
}
