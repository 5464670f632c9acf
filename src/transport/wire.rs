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

/// The only protocol version this file encodes and accepts: 2, with in-band
/// authentication.
pub(crate) const VERSION: u16 = 2;

/// The version before authentication. A version-1 client's request is refused, with a
/// reject in version 1's framing ([`RejectReason::encode_as`]) so that it can say why.
#[cfg(not(MODULE))]
pub(crate) const VERSION_1: u16 = 1;

/// Bytes of a client's nonce.
pub(crate) const NONCE_LEN: usize = 16;

/// Bytes of the client's proof: HMAC-SHA256 cut to its first 16 bytes (rdma_cm carries
/// at most 56 bytes of private data in a connect request over IB and RoCE).
pub(crate) const CLIENT_MAC_LEN: usize = 16;

/// Bytes of the server's proof in the region descriptor: all of HMAC-SHA256.
pub(crate) const SERVER_MAC_LEN: usize = 32;

/// Shortest secret a client may have, in bytes. (The kernel's configfs parser has the
/// same limits, `config_parse::SECRET_MIN`/`SECRET_MAX`; a host test ties them.)
#[cfg(not(MODULE))]
pub(crate) const SECRET_MIN_LEN: usize = 16;

/// Longest secret a client may have, in bytes (HMAC-SHA256's block size).
#[cfg(not(MODULE))]
pub(crate) const SECRET_MAX_LEN: usize = 64;

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
    /// unknown kind, flags or reason code, zero size, queue index out of range).
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

/// The version field of a message that starts with [`MAGIC`], whatever its length
/// otherwise: what the server answers a request of another version in.
#[cfg(not(MODULE))]
pub(crate) fn version_of(buf: &[u8]) -> Option<u16> {
    (get_u32(buf, 0).ok()? == MAGIC)
        .then(|| get_u16(buf, 4).ok())
        .flatten()
}

/// Writes the common header (magic, `version`) and the 16-bit field at offset 6.
fn put_header(buf: &mut [u8], version: u16, field6: u16) {
    put(buf, 0, &MAGIC.to_le_bytes());
    put(buf, 4, &version.to_le_bytes());
    put(buf, 6, &field6.to_le_bytes());
}

/// How a connect request authenticates (its `kind` and the 24 bytes at offset 32).
///
/// A client with a secret connects twice: a [`Auth::Hello`], which the server answers
/// with a [`Reject::Challenge`] (no QP is made, nothing of a region is sent), then a
/// [`Auth::Proof`] for that challenge, which the server checks before anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// Kind 1: asks for a challenge.
    Hello {
        /// The client's fresh random nonce; the server's proof covers it.
        client_nonce: [u8; NONCE_LEN],
        /// Which instance of the client this is (one per configured target): a region
        /// has one owner instance.
        instance: u64,
    },
    /// Kind 2: answers the server's challenge.
    Proof {
        /// The challenge being answered.
        server_nonce: u64,
        /// HMAC-SHA256 with the client's secret over [`client_proof_input`], cut to
        /// [`CLIENT_MAC_LEN`] bytes.
        mac: [u8; CLIENT_MAC_LEN],
    },
    /// Kind 3: a client without a secret; only a server started with `--insecure`
    /// admits it, and never for a client id that has a secret there.
    None {
        /// As in [`Auth::Hello`].
        instance: u64,
    },
}

impl Auth {
    /// The `kind` field.
    fn kind(&self) -> u16 {
        match self {
            Self::Hello { .. } => 1,
            Self::Proof { .. } => 2,
            Self::None { .. } => 3,
        }
    }
}

/// Client to server: the private data of the rdma_cm connect request of one queue.
///
/// Layout (56 bytes): 0 magic u32, 4 version u16, 6 kind u16, 8 client_id u64,
/// 16 queue_index u16, 18 queue_count u16, 20 flags u32, 24 requested_size u64,
/// then by kind: Hello 32 client_nonce \[16\], 48 instance u64; Proof 32 server_nonce
/// u64, 40 mac \[16\]; None 32 reserved \[16\] (0), 48 instance u64.
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
    /// Flag [`REQUEST_REPLY_DESCRIPTOR`]: the server is to send the region descriptor as
    /// the private data of its accept instead of in a SEND.
    pub(crate) reply_descriptor: bool,
    /// How this request authenticates.
    pub(crate) auth: Auth,
}

/// [`ConnectRequest`] flag: the region descriptor rides in the accept's private data.
///
/// An iWARP client sets it. MPA has the connection's initiator send the first frame: a
/// responder's SEND right behind its MPA reply can reach the initiator before it has
/// taken the reply off the socket, and soft-iWARP then fails the connect (`EPROTO`,
/// reported as a connect error `-EINVAL`). With the descriptor in the reply, the server
/// sends nothing before the client does.
pub(crate) const REQUEST_REPLY_DESCRIPTOR: u32 = 1;

impl ConnectRequest {
    /// Encoded size in bytes: all that rdma_cm carries in an IB or RoCE connect request.
    pub(crate) const SIZE: usize = 56;

    /// Encodes the request into `out`.
    pub(crate) fn encode(&self, out: &mut [u8; Self::SIZE]) {
        *out = [0; Self::SIZE];
        put_header(out, VERSION, self.auth.kind());
        put(out, 8, &self.client_id.to_le_bytes());
        put(out, 16, &self.queue_index.to_le_bytes());
        put(out, 18, &self.queue_count.to_le_bytes());
        let flags = if self.reply_descriptor {
            REQUEST_REPLY_DESCRIPTOR
        } else {
            0
        };
        put(out, 20, &flags.to_le_bytes());
        put(out, 24, &self.requested_size.to_le_bytes());
        match &self.auth {
            Auth::Hello {
                client_nonce,
                instance,
            } => {
                put(out, 32, client_nonce);
                put(out, 48, &instance.to_le_bytes());
            }
            Auth::Proof { server_nonce, mac } => {
                put(out, 32, &server_nonce.to_le_bytes());
                put(out, 40, mac);
            }
            Auth::None { instance } => put(out, 48, &instance.to_le_bytes()),
        }
    }

    /// Decodes a request from the start of `buf` (trailing bytes are ignored:
    /// transports may pad private data).
    ///
    /// Rejects an unknown kind or flag, non-zero reserved bytes, a zero `requested_size`, a zero
    /// `queue_count` and a `queue_index` not below `queue_count` with
    /// [`WireError::BadField`].
    #[cfg(not(MODULE))]
    pub(crate) fn decode(buf: &[u8]) -> Result<Self, WireError> {
        check_header(buf, Self::SIZE)?;
        let flags = get_u32(buf, 20)?;
        if flags & !REQUEST_REPLY_DESCRIPTOR != 0 {
            return Err(WireError::BadField);
        }
        let auth = match get_u16(buf, 6)? {
            1 => Auth::Hello {
                client_nonce: take(buf, 32)?,
                instance: get_u64(buf, 48)?,
            },
            2 => Auth::Proof {
                server_nonce: get_u64(buf, 32)?,
                mac: take(buf, 40)?,
            },
            3 if take::<16>(buf, 32)? == [0; 16] => Auth::None {
                instance: get_u64(buf, 48)?,
            },
            _ => return Err(WireError::BadField),
        };
        let req = Self {
            client_id: get_u64(buf, 8)?,
            queue_index: get_u16(buf, 16)?,
            queue_count: get_u16(buf, 18)?,
            requested_size: get_u64(buf, 24)?,
            reply_descriptor: flags & REQUEST_REPLY_DESCRIPTOR != 0,
            auth,
        };
        if req.requested_size == 0 || req.queue_count == 0 || req.queue_index >= req.queue_count {
            return Err(WireError::BadField);
        }
        Ok(req)
    }
}

/// Label that starts the bytes of a client's proof.
const CLIENT_LABEL: &[u8; 16] = b"rswap-v2-client\0";
/// Label that starts the bytes of the server's proof.
const SERVER_LABEL: &[u8; 16] = b"rswap-v2-server\0";

/// Bytes of [`client_proof_input`].
pub(crate) const CLIENT_PROOF_INPUT_LEN: usize = 68;
/// Bytes of [`server_proof_input`].
pub(crate) const SERVER_PROOF_INPUT_LEN: usize = 96;

/// What the client's proof authenticates: the label `"rswap-v2-client\0"`, then
/// client_id u64, queue_index u16, queue_count u16, requested_size u64 (of `req`; its
/// `auth` is not part of it), instance u64, the client's nonce and the server's nonce
/// u64, all little-endian. The proof is HMAC-SHA256 over these 68 bytes with the client's
/// secret as the key, cut to [`CLIENT_MAC_LEN`] bytes.
pub(crate) fn client_proof_input(
    req: &ConnectRequest,
    instance: u64,
    client_nonce: &[u8; NONCE_LEN],
    server_nonce: u64,
) -> [u8; CLIENT_PROOF_INPUT_LEN] {
    let mut out = [0u8; CLIENT_PROOF_INPUT_LEN];
    put(&mut out, 0, CLIENT_LABEL);
    put(&mut out, 16, &req.client_id.to_le_bytes());
    put(&mut out, 24, &req.queue_index.to_le_bytes());
    put(&mut out, 26, &req.queue_count.to_le_bytes());
    put(&mut out, 28, &req.requested_size.to_le_bytes());
    put(&mut out, 36, &instance.to_le_bytes());
    put(&mut out, 44, client_nonce);
    put(&mut out, 60, &server_nonce.to_le_bytes());
    out
}

/// What the server's proof authenticates: the label `"rswap-v2-server\0"`, then
/// client_id u64, the client's nonce, the server's nonce u64, and the descriptor's first
/// 48 bytes ([`RegionDescriptor::body`]). The proof is HMAC-SHA256 over these 96 bytes
/// with the client's secret as the key, all 32 bytes.
pub(crate) fn server_proof_input(
    client_id: u64,
    client_nonce: &[u8; NONCE_LEN],
    server_nonce: u64,
    body: &[u8; RegionDescriptor::BODY],
) -> [u8; SERVER_PROOF_INPUT_LEN] {
    let mut out = [0u8; SERVER_PROOF_INPUT_LEN];
    put(&mut out, 0, SERVER_LABEL);
    put(&mut out, 16, &client_id.to_le_bytes());
    put(&mut out, 24, client_nonce);
    put(&mut out, 40, &server_nonce.to_le_bytes());
    put(&mut out, 48, body);
    out
}

/// Compares two MACs in time that does not depend on where they differ.
pub(crate) fn mac_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
    /// Authentication failed: an unknown client id, a wrong proof, a challenge that is
    /// unknown, used or expired, or a source address the client may not come from.
    AuthFailed,
    /// The client has no secret, and the server admits only clients with one.
    AuthRequired,
    /// The client id's region belongs to another instance of the client, which is live
    /// or within its grace period.
    InUse,
}

/// The `reason` value of a [`Reject::Challenge`]: not a refusal.
const REASON_CHALLENGE: u16 = 7;

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
            Self::AuthFailed => 8,
            Self::AuthRequired => 9,
            Self::InUse => 10,
        }
    }

    /// The code for a wire value; unknown values (and 7, the challenge) give
    /// [`WireError::BadField`].
    pub(crate) fn from_u16(value: u16) -> Result<Self, WireError> {
        match value {
            1 => Ok(Self::BadVersion),
            2 => Ok(Self::TooLarge),
            3 => Ok(Self::NoMemory),
            4 => Ok(Self::BadRequest),
            5 => Ok(Self::TooManyClients),
            6 => Ok(Self::QueueMismatch),
            8 => Ok(Self::AuthFailed),
            9 => Ok(Self::AuthRequired),
            10 => Ok(Self::InUse),
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
            Self::AuthFailed => "AuthFailed",
            Self::AuthRequired => "AuthRequired",
            Self::InUse => "InUse",
        }
    }
}

/// Server to client: the private data of an rdma_cm reject that refuses.
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
    #[cfg(not(MODULE))]
    pub(crate) const SIZE: usize = 16;

    /// Encodes the reject into `out`.
    #[cfg(not(MODULE))]
    pub(crate) fn encode(&self, out: &mut [u8; Self::SIZE]) {
        self.encode_as(VERSION, out);
    }

    /// Encodes the reject into `out` with `version` in its header: the layout is the
    /// same in versions 1 and 2, so a version-1 client can read why it was refused.
    #[cfg(not(MODULE))]
    pub(crate) fn encode_as(&self, version: u16, out: &mut [u8; Self::SIZE]) {
        *out = [0; Self::SIZE];
        put_header(out, version, self.code.to_u16());
        put(out, 8, &self.max_size.to_le_bytes());
    }
}

/// Server to client: what the private data of an rdma_cm reject says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reject {
    /// The server refuses the connection.
    Refused(RejectReason),
    /// Not a refusal: the answer to a [`Auth::Hello`]. Layout (16 bytes): 0 magic u32,
    /// 4 version u16, 6 reason u16 = 7, 8 server_nonce u64.
    Challenge {
        /// The server's nonce, to answer with an [`Auth::Proof`] within a few seconds,
        /// once.
        server_nonce: u64,
    },
}

impl Reject {
    /// Encoded size in bytes, either form.
    pub(crate) const SIZE: usize = 16;

    /// Encodes a challenge into `out`.
    #[cfg(not(MODULE))]
    pub(crate) fn encode_challenge(server_nonce: u64, out: &mut [u8; Self::SIZE]) {
        *out = [0; Self::SIZE];
        put_header(out, VERSION, REASON_CHALLENGE);
        put(out, 8, &server_nonce.to_le_bytes());
    }

    /// Decodes a reject from the start of `buf` (trailing bytes are ignored: rdma_cm pads
    /// them).
    pub(crate) fn decode(buf: &[u8]) -> Result<Self, WireError> {
        check_header(buf, Self::SIZE)?;
        let reason = get_u16(buf, 6)?;
        let value = get_u64(buf, 8)?;
        if reason == REASON_CHALLENGE {
            return Ok(Self::Challenge {
                server_nonce: value,
            });
        }
        Ok(Self::Refused(RejectReason {
            code: RejectCode::from_u16(reason)?,
            max_size: value,
        }))
    }
}

/// Server to client: the region a client may access, sent in one SEND on every
/// queue once the connection is established, with the server's proof.
///
/// Layout (80 bytes): 0 magic u32, 4 version u16, 6 flags u16, 8 region_id u64,
/// 16 epoch u32, 20 rkey u32, 24 remote_addr u64, 32 length u64, 40 reserved u64 (0),
/// 48 mac \[32\] (HMAC-SHA256 over [`server_proof_input`]; zero for a client without a
/// secret).
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
    /// The server's proof.
    pub(crate) mac: [u8; SERVER_MAC_LEN],
}

impl RegionDescriptor {
    /// Encoded size in bytes.
    pub(crate) const SIZE: usize = 80;

    /// Bytes before the proof: what the proof covers.
    pub(crate) const BODY: usize = 48;

    /// Flag: this is a reconnect that got its earlier region (and data) back.
    pub(crate) const FLAG_REUSED: u16 = 1 << 0;

    /// All flags version 2 defines.
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

    /// The first [`Self::BODY`] bytes of the encoding: everything but the proof.
    pub(crate) fn body(&self) -> [u8; Self::BODY] {
        let mut out = [0; Self::BODY];
        put_header(&mut out, VERSION, self.flags);
        put(&mut out, 8, &self.region_id.to_le_bytes());
        put(&mut out, 16, &self.epoch.to_le_bytes());
        put(&mut out, 20, &self.rkey.to_le_bytes());
        put(&mut out, 24, &self.remote_addr.to_le_bytes());
        put(&mut out, 32, &self.length.to_le_bytes());
        out
    }

    /// Encodes the descriptor into `out`.
    #[cfg(not(MODULE))]
    pub(crate) fn encode(&self, out: &mut [u8; Self::SIZE]) {
        *out = [0; Self::SIZE];
        put(out, 0, &self.body());
        put(out, Self::BODY, &self.mac);
    }

    /// Decodes a descriptor from the start of `buf` (trailing bytes are ignored).
    ///
    /// Rejects unknown flags, non-zero reserved bytes, a zero epoch and a zero
    /// length with [`WireError::BadField`]. The proof is returned as it came; checking
    /// it is the caller's.
    pub(crate) fn decode(buf: &[u8]) -> Result<Self, WireError> {
        check_header(buf, Self::SIZE)?;
        let desc = Self {
            flags: get_u16(buf, 6)?,
            region_id: get_u64(buf, 8)?,
            epoch: get_u32(buf, 16)?,
            rkey: get_u32(buf, 20)?,
            remote_addr: get_u64(buf, 24)?,
            length: get_u64(buf, 32)?,
            mac: take(buf, Self::BODY)?,
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

    const NONCE: [u8; NONCE_LEN] = [
        0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e,
        0x1f,
    ];
    const MAC: [u8; CLIENT_MAC_LEN] = [
        0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e,
        0x2f,
    ];
    const INSTANCE: u64 = 0x1112_1314_1516_1718;
    const SERVER_NONCE: u64 = 0xa1a2_a3a4_a5a6_a7a8;

    const fn req(auth: Auth) -> ConnectRequest {
        ConnectRequest {
            client_id: 0x0102_0304_0506_0708,
            queue_index: 3,
            queue_count: 4,
            requested_size: 0x0400_0000,
            reply_descriptor: false,
            auth,
        }
    }
    const HELLO: ConnectRequest = req(Auth::Hello {
        client_nonce: NONCE,
        instance: INSTANCE,
    });
    const PROOF: ConnectRequest = req(Auth::Proof {
        server_nonce: SERVER_NONCE,
        mac: MAC,
    });
    const NO_AUTH: ConnectRequest = req(Auth::None { instance: INSTANCE });

    /// The 32 bytes every connect request of the vectors starts with, for `kind`.
    const fn common(kind: u8) -> [u8; 32] {
        [
            0x52, 0x53, 0x57, 0x50, 0x02, 0x00, kind, 0x00, // magic "RSWP", version 2, kind
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // client_id
            0x03, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, // queue 3 of 4, flags 0
            0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, // requested_size 64 MiB
        ]
    }
    fn concat<const N: usize>(parts: &[&[u8]]) -> [u8; N] {
        let mut out = [0u8; N];
        let mut off = 0;
        for p in parts {
            put(&mut out, off, p);
            off += p.len();
        }
        assert_eq!(off, N);
        out
    }
    fn hello_bytes() -> [u8; 56] {
        concat(&[
            &common(1),
            &NONCE,
            &[0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11], // instance
        ])
    }
    fn proof_bytes() -> [u8; 56] {
        concat(&[
            &common(2),
            &[0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1], // server nonce
            &MAC,
        ])
    }
    fn no_auth_bytes() -> [u8; 56] {
        concat(&[
            &common(3),
            &[0; 16],
            &[0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11], // instance
        ])
    }

    const REJ: RejectReason = RejectReason {
        code: RejectCode::TooLarge,
        max_size: 0x0000_0001_8000_0000,
    };
    const REJ_BYTES: [u8; 16] = [
        0x52, 0x53, 0x57, 0x50, 0x02, 0x00, 0x02, 0x00, // magic, version 2, TooLarge
        0x00, 0x00, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00, // max_size 6 GiB
    ];
    const CHALLENGE_BYTES: [u8; 16] = [
        0x52, 0x53, 0x57, 0x50, 0x02, 0x00, 0x07, 0x00, // magic, version 2, challenge
        0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1, // server nonce
    ];

    const DESC_MAC: [u8; SERVER_MAC_LEN] = [
        0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e,
        0x3f, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d,
        0x4e, 0x4f,
    ];
    const DESC: RegionDescriptor = RegionDescriptor {
        flags: RegionDescriptor::FLAG_REUSED,
        region_id: 0x1122_3344_5566_7788,
        epoch: 2,
        rkey: 0xdead_beef,
        remote_addr: 0x7f00_1234_5000,
        length: 0x0060_0000,
        mac: DESC_MAC,
    };
    const DESC_BODY: [u8; 48] = [
        0x52, 0x53, 0x57, 0x50, 0x02, 0x00, 0x01, 0x00, // magic, version 2, flags REUSED
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // region_id
        0x02, 0x00, 0x00, 0x00, 0xef, 0xbe, 0xad, 0xde, // epoch 2, rkey
        0x00, 0x50, 0x34, 0x12, 0x00, 0x7f, 0x00, 0x00, // remote_addr
        0x00, 0x00, 0x60, 0x00, 0x00, 0x00, 0x00, 0x00, // length 6 MiB
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // reserved
    ];
    fn desc_bytes() -> [u8; 80] {
        concat(&[&DESC_BODY, &DESC_MAC])
    }

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
            mac: [0; SERVER_MAC_LEN],
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
    fn connect_request_vectors() {
        for (req, bytes) in [
            (HELLO, hello_bytes()),
            (PROOF, proof_bytes()),
            (NO_AUTH, no_auth_bytes()),
        ] {
            let mut out = [0xaa; ConnectRequest::SIZE];
            req.encode(&mut out);
            assert_eq!(out, bytes, "{req:?}");
            assert_eq!(ConnectRequest::decode(&bytes), Ok(req));
        }
    }

    #[test]
    fn connect_request_round_trip_and_padding() {
        let req = ConnectRequest {
            client_id: u64::MAX,
            queue_index: 0,
            queue_count: u16::MAX,
            requested_size: u64::MAX,
            reply_descriptor: false,
            auth: Auth::Proof {
                server_nonce: u64::MAX,
                mac: [0xff; CLIENT_MAC_LEN],
            },
        };
        let mut out = [0; ConnectRequest::SIZE];
        req.encode(&mut out);
        assert_eq!(ConnectRequest::decode(&out), Ok(req));
        // iWARP carries more private data than IB/RoCE: trailing bytes are ignored.
        let mut padded = [0u8; 96];
        put(&mut padded, 0, &out);
        assert_eq!(ConnectRequest::decode(&padded), Ok(req));
    }

    #[test]
    fn connect_request_reply_descriptor_flag() {
        let req = ConnectRequest {
            reply_descriptor: true,
            ..HELLO
        };
        let mut out = [0u8; ConnectRequest::SIZE];
        req.encode(&mut out);
        assert_eq!(
            out,
            with(hello_bytes(), 20, 1),
            "bit 0 of the flags at offset 20"
        );
        assert_eq!(ConnectRequest::decode(&out), Ok(req));
    }

    #[test]
    fn connect_request_rejects() {
        let d = ConnectRequest::decode;
        let b = hello_bytes();
        assert_eq!(d(&with(b, 0, 0x51)), Err(WireError::BadMagic));
        assert_eq!(d(&with(b, 4, 1)), Err(WireError::BadVersion), "version 1");
        assert_eq!(d(&with(b, 4, 3)), Err(WireError::BadVersion));
        assert_eq!(d(&with(b, 4, 0)), Err(WireError::BadVersion));
        assert_eq!(d(&with(b, 5, 1)), Err(WireError::BadVersion));
        assert_eq!(d(b.get(..55).unwrap_or(&[])), Err(WireError::Short));
        // A version-1 request is 32 bytes: too short for version 2, and still answered
        // in version 1 (the server reads its version first).
        assert_eq!(d(b.get(..32).unwrap_or(&[])), Err(WireError::Short));
        assert_eq!(d(&[]), Err(WireError::Short));
        for kind in [0u8, 4, 0xff] {
            assert_eq!(
                d(&with(b, 6, kind)),
                Err(WireError::BadField),
                "kind {kind}"
            );
        }
        assert_eq!(d(&with(b, 7, 1)), Err(WireError::BadField), "kind 257");
        assert_eq!(d(&with(b, 20, 2)), Err(WireError::BadField), "unknown flag");
        assert_eq!(d(&with(b, 23, 1)), Err(WireError::BadField), "unknown flag");
        assert_eq!(
            d(&with(no_auth_bytes(), 40, 1)),
            Err(WireError::BadField),
            "reserved of kind 3"
        );
        // queue_index 4 of 4, queue_count 0, size 0.
        assert_eq!(d(&with(b, 16, 4)), Err(WireError::BadField));
        assert_eq!(d(&with(b, 18, 0)), Err(WireError::BadField));
        assert_eq!(d(&with(b, 27, 0)), Err(WireError::BadField));
    }

    #[test]
    fn version_of_reads_any_length() {
        let v1: [u8; 8] = [0x52, 0x53, 0x57, 0x50, 0x01, 0x00, 0x00, 0x00];
        assert_eq!(version_of(&v1), Some(VERSION_1));
        assert_eq!(version_of(&hello_bytes()), Some(VERSION));
        assert_eq!(version_of(&with(v1, 0, 0)), None);
        assert_eq!(version_of(v1.get(..5).unwrap_or(&[])), None);
    }

    #[test]
    fn proof_inputs_vector() {
        let input = client_proof_input(&PROOF, INSTANCE, &NONCE, SERVER_NONCE);
        let expect: [u8; CLIENT_PROOF_INPUT_LEN] = concat(&[
            b"rswap-v2-client\0",
            &[0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01], // client_id
            &[0x03, 0x00, 0x04, 0x00],                         // queue 3 of 4
            &[0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00], // requested_size
            &[0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11], // instance
            &NONCE,
            &[0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1], // server nonce
        ]);
        assert_eq!(input, expect);
        // The kind of request does not enter it: the hello's fields and the proof's are
        // the same request.
        assert_eq!(
            client_proof_input(&HELLO, INSTANCE, &NONCE, SERVER_NONCE),
            expect
        );

        let input = server_proof_input(0x0102_0304_0506_0708, &NONCE, SERVER_NONCE, &DESC.body());
        let expect: [u8; SERVER_PROOF_INPUT_LEN] = concat(&[
            b"rswap-v2-server\0",
            &[0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01], // client_id
            &NONCE,
            &[0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1], // server nonce
            &DESC_BODY,
        ]);
        assert_eq!(input, expect);
    }

    #[test]
    fn mac_eq_compares_every_byte() {
        assert!(mac_eq(&MAC, &MAC));
        for i in 0..CLIENT_MAC_LEN {
            assert!(!mac_eq(&MAC, &with(MAC, i, 0)), "byte {i}");
        }
        assert!(!mac_eq(&MAC, MAC.get(..15).unwrap_or(&[])));
    }

    #[test]
    fn reject_vectors() {
        let mut out = [0xaa; RejectReason::SIZE];
        REJ.encode(&mut out);
        assert_eq!(out, REJ_BYTES);
        assert_eq!(Reject::decode(&REJ_BYTES), Ok(Reject::Refused(REJ)));
        // To a version-1 client, in version 1's framing.
        REJ.encode_as(VERSION_1, &mut out);
        assert_eq!(out, with(REJ_BYTES, 4, 1));

        Reject::encode_challenge(SERVER_NONCE, &mut out);
        assert_eq!(out, CHALLENGE_BYTES);
        assert_eq!(
            Reject::decode(&CHALLENGE_BYTES),
            Ok(Reject::Challenge {
                server_nonce: SERVER_NONCE
            })
        );
    }

    #[test]
    fn reject_codes_round_trip() {
        for value in (1..=6u16).chain(8..=10) {
            let code = RejectCode::from_u16(value);
            assert_eq!(code.map(RejectCode::to_u16), Ok(value));
            let rej = RejectReason {
                code: code.unwrap_or(RejectCode::BadRequest),
                max_size: u64::from(value) << 40,
            };
            let mut out = [0; RejectReason::SIZE];
            rej.encode(&mut out);
            assert_eq!(Reject::decode(&out), Ok(Reject::Refused(rej)));
        }
    }

    #[test]
    fn reject_rejects() {
        let d = Reject::decode;
        assert_eq!(d(&with(REJ_BYTES, 3, 0)), Err(WireError::BadMagic));
        assert_eq!(d(&with(REJ_BYTES, 4, 9)), Err(WireError::BadVersion));
        assert_eq!(d(&with(REJ_BYTES, 4, 1)), Err(WireError::BadVersion));
        assert_eq!(d(REJ_BYTES.get(..15).unwrap_or(&[])), Err(WireError::Short));
        for reason in [0u8, 11, 0xff] {
            assert_eq!(
                d(&with(REJ_BYTES, 6, reason)),
                Err(WireError::BadField),
                "reason {reason}"
            );
        }
    }

    #[test]
    fn descriptor_vector() {
        let mut out = [0xaa; RegionDescriptor::SIZE];
        DESC.encode(&mut out);
        assert_eq!(out, desc_bytes());
        assert_eq!(DESC.body(), DESC_BODY);
        assert_eq!(RegionDescriptor::decode(&desc_bytes()), Ok(DESC));
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
            mac: [0xff; SERVER_MAC_LEN],
        };
        let mut out = [0; RegionDescriptor::SIZE];
        desc.encode(&mut out);
        assert_eq!(RegionDescriptor::decode(&out), Ok(desc));
        assert!(!desc.reused());
    }

    #[test]
    fn descriptor_rejects() {
        let d = RegionDescriptor::decode;
        let b = desc_bytes();
        assert_eq!(d(&with(b, 1, 0)), Err(WireError::BadMagic));
        assert_eq!(d(&with(b, 4, 1)), Err(WireError::BadVersion));
        assert_eq!(d(&with(b, 4, 3)), Err(WireError::BadVersion));
        assert_eq!(d(b.get(..79).unwrap_or(&[])), Err(WireError::Short));
        assert_eq!(d(&DESC_BODY), Err(WireError::Short), "version 1's length");
        assert_eq!(d(&with(b, 6, 3)), Err(WireError::BadField), "flags");
        assert_eq!(d(&with(b, 47, 1)), Err(WireError::BadField), "reserved");
        assert_eq!(d(&with(b, 16, 0)), Err(WireError::BadField), "epoch");
        assert_eq!(d(&with(b, 34, 0)), Err(WireError::BadField), "length");
    }
}
