// SPDX-License-Identifier: GPL-2.0

//! Property-based fuzzing (proptest) of the parsers the module runs on bytes it does not
//! control: the wire decoders (`src/transport/wire.rs`, also the server's), the configfs
//! value parsers (`src/config_parse.rs`) and the request bounds (`src/transport/remote.rs`).
//!
//! Every test is named `fuzz_*` and runs `PROPTEST_CASES` cases (proptest's default, 256,
//! in `make check`). A million per test:
//!
//! ```text
//! PROPTEST_CASES=1000000 cargo test --release fuzz_
//! ```
//!
//! See `Documentation/testing.md` for the properties and the time that takes.
//!
//! The wire decoders of version 2 (`ConnectRequest` of each kind: hello, proof, no
//! authentication; `Reject`, a refusal or a challenge; `RegionDescriptor` with the server's
//! proof) are compared with a model written here from `Documentation/wire-format.md`
//! (length, then magic, then version, then fields), so the exact error is checked as well
//! as the absence of panics. Every byte of a message is significant and decoding is
//! canonical: whatever a decoder accepts re-encodes to the very bytes it read. Hence a
//! flipped byte never goes unnoticed: it is refused, or decodes to another value that
//! encodes to the flipped bytes. The bytes the two proofs are computed over are compared
//! with the layout of that document's table, and `mac_eq` with `==`.

use core::fmt::Debug;
use core::ops::Range;

use proptest::prelude::*;
use proptest::sample::Index;
use std::format;
use std::string::{String, ToString as _};
use std::vec::Vec;

use crate::config_parse::{self as parse, MAX_SIZE, MIN_SIZE};
use crate::remote::{OutOfRange, RemoteRegion};
use crate::wire::{
    client_proof_input, mac_eq, server_proof_input, Auth, ConnectRequest, RegionDescriptor, Reject,
    RejectCode, RejectReason, WireError,
};

// --- wire format -------------------------------------------------------------------------

/// Little-endian value of `b[r]` (at most 8 bytes).
fn le(b: &[u8], r: Range<usize>) -> u64 {
    b[r].iter().rev().fold(0, |v, &x| (v << 8) | u64::from(x))
}

/// The `N` bytes of `b` at `off`, as they are.
fn raw<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&b[off..off + N]);
    out
}

/// The checks every message starts with, in the documented order: length, magic "RSWP",
/// version 2 (any other version, 1 included, is refused).
fn model_header(b: &[u8], size: usize) -> Result<(), WireError> {
    if b.len() < size {
        Err(WireError::Short)
    } else if b[..4] != *b"RSWP" {
        Err(WireError::BadMagic)
    } else if b[4..6] != [2, 0] {
        Err(WireError::BadVersion)
    } else {
        Ok(())
    }
}

/// A wire message, with its decoder under test and a model of that decoder.
trait Msg: Copy + PartialEq + Debug {
    const SIZE: usize;
    fn decode(b: &[u8]) -> Result<Self, WireError>;
    fn encode_vec(&self) -> Vec<u8>;
    /// What `decode` must return, from the byte table of `Documentation/wire-format.md`.
    fn model(b: &[u8]) -> Result<Self, WireError>;
}

impl Msg for ConnectRequest {
    const SIZE: usize = ConnectRequest::SIZE;
    fn decode(b: &[u8]) -> Result<Self, WireError> {
        ConnectRequest::decode(b)
    }
    fn encode_vec(&self) -> Vec<u8> {
        let mut out = [0; ConnectRequest::SIZE];
        self.encode(&mut out);
        out.to_vec()
    }
    fn model(b: &[u8]) -> Result<Self, WireError> {
        model_header(b, 56)?;
        let (kind, flags) = (le(b, 6..8), le(b, 20..24));
        let (index, count, size) = (le(b, 16..18), le(b, 18..20), le(b, 24..32));
        // The 24 bytes at offset 32, by kind.
        let auth = match kind {
            1 => Auth::Hello {
                client_nonce: raw(b, 32),
                instance: le(b, 48..56),
            },
            2 => Auth::Proof {
                server_nonce: le(b, 32..40),
                mac: raw(b, 40),
            },
            3 if b[32..48].iter().all(|&x| x == 0) => Auth::None {
                instance: le(b, 48..56),
            },
            _ => return Err(WireError::BadField),
        };
        // Flag bit 0 asks for the descriptor with the accept; no other bit is defined.
        if flags > 1 || size == 0 || count == 0 || index >= count {
            return Err(WireError::BadField);
        }
        Ok(Self {
            client_id: le(b, 8..16),
            queue_index: index as u16,
            queue_count: count as u16,
            requested_size: size,
            reply_descriptor: flags == 1,
            auth,
        })
    }
}

/// The reject reasons that refuse, by wire value and name, from the table of
/// `Documentation/wire-format.md`.
const REASONS: [(u16, RejectCode, &str); 9] = [
    (1, RejectCode::BadVersion, "BadVersion"),
    (2, RejectCode::TooLarge, "TooLarge"),
    (3, RejectCode::NoMemory, "NoMemory"),
    (4, RejectCode::BadRequest, "BadRequest"),
    (5, RejectCode::TooManyClients, "TooManyClients"),
    (6, RejectCode::QueueMismatch, "QueueMismatch"),
    (8, RejectCode::AuthFailed, "AuthFailed"),
    (9, RejectCode::AuthRequired, "AuthRequired"),
    (10, RejectCode::InUse, "InUse"),
];

/// The reason of a challenge: not a refusal, and not a `RejectCode`.
const CHALLENGE: u16 = 7;

/// The reject of a reason value, with `value` (offset 8) as its max_size or server nonce;
/// `None` for a value the table does not have.
fn model_reason(reason: u64, value: u64) -> Option<Reject> {
    if reason == u64::from(CHALLENGE) {
        return Some(Reject::Challenge {
            server_nonce: value,
        });
    }
    let code = REASONS.iter().find(|r| u64::from(r.0) == reason)?.1;
    Some(Reject::Refused(RejectReason {
        code,
        max_size: value,
    }))
}

impl Msg for Reject {
    const SIZE: usize = Reject::SIZE;
    fn decode(b: &[u8]) -> Result<Self, WireError> {
        Reject::decode(b)
    }
    fn encode_vec(&self) -> Vec<u8> {
        let mut out = [0; Reject::SIZE];
        match self {
            Reject::Refused(r) => r.encode(&mut out),
            Reject::Challenge { server_nonce } => Reject::encode_challenge(*server_nonce, &mut out),
        }
        out.to_vec()
    }
    fn model(b: &[u8]) -> Result<Self, WireError> {
        model_header(b, 16)?;
        model_reason(le(b, 6..8), le(b, 8..16)).ok_or(WireError::BadField)
    }
}

impl Msg for RegionDescriptor {
    const SIZE: usize = RegionDescriptor::SIZE;
    fn decode(b: &[u8]) -> Result<Self, WireError> {
        RegionDescriptor::decode(b)
    }
    fn encode_vec(&self) -> Vec<u8> {
        let mut out = [0; RegionDescriptor::SIZE];
        self.encode(&mut out);
        out.to_vec()
    }
    fn model(b: &[u8]) -> Result<Self, WireError> {
        model_header(b, 80)?;
        let (flags, epoch, length) = (le(b, 6..8), le(b, 16..20), le(b, 32..40));
        // Only bit 0 (REUSED) is defined. wire.rs checks what its doc comment says: not
        // that length is a multiple of 4096, nor that REUSED goes with epoch > 1. The mac
        // is returned as it came (checking it is the caller's).
        if flags & !1 != 0 || le(b, 40..48) != 0 || epoch == 0 || length == 0 {
            return Err(WireError::BadField);
        }
        Ok(Self {
            flags: flags as u16,
            region_id: le(b, 8..16),
            epoch: epoch as u32,
            rkey: le(b, 20..24) as u32,
            remote_addr: le(b, 24..32),
            length,
            mac: raw(b, 48),
        })
    }
}

/// What every decode of any buffer must satisfy: no panic, the model's result, trailing
/// bytes ignored, and anything accepted is the canonical encoding of its value.
fn check_decode<M: Msg>(b: &[u8]) -> Result<(), TestCaseError> {
    let got = M::decode(b);
    prop_assert_eq!(got, M::model(b), "bytes {:02x?}", b);
    if let Some(head) = b.get(..M::SIZE) {
        prop_assert_eq!(M::decode(head), got, "the tail changed the result");
    }
    if let Ok(v) = got {
        prop_assert_eq!(
            &v.encode_vec()[..],
            &b[..M::SIZE],
            "accepted a non-canonical form"
        );
    }
    Ok(())
}

/// A flipped byte (`mask != 0` at `off`) of a valid message is refused, or decodes to
/// another value whose encoding is exactly the flipped bytes.
fn check_flip<M: Msg>(v: M, off: usize, mask: u8) -> Result<(), TestCaseError> {
    let mut b = v.encode_vec();
    b[off % M::SIZE] ^= mask;
    match M::decode(&b) {
        Err(e) => {
            // A flip in the header is named for the header field it hit.
            let want = match off % M::SIZE {
                0..=3 => Some(WireError::BadMagic),
                4..=5 => Some(WireError::BadVersion),
                _ => None,
            };
            prop_assert!(want.is_none_or(|w| w == e), "{:?} for a header flip", e);
        }
        Ok(w) => {
            prop_assert_ne!(w, v, "a flipped byte went unnoticed");
            prop_assert_eq!(w.encode_vec(), b, "silent misparse");
        }
    }
    Ok(())
}

/// Arbitrary bytes, empty to `max` long.
fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..=max)
}

/// Buffers near a valid message of `size` bytes, so the field checks are reached (random
/// bytes almost never carry the magic): the encoding of a value from `values`, or the
/// magic and version 2 (sometimes 1) followed by bytes that are mostly zero or small (so
/// reserved fields, kinds, flags and reasons often pass); then zero to three random byte
/// changes anywhere, and a length that is mostly `size` but may be shorter or longer
/// (arbitrary tail).
fn near_valid<M: Msg>(values: impl Strategy<Value = M>) -> impl Strategy<Value = Vec<u8>> {
    let size = M::SIZE;
    let byte = prop_oneof![3 => Just(0u8), 1 => Just(1u8), 1 => 2..=10u8, 2 => any::<u8>()];
    let version = prop_oneof![4 => Just(2u8), 1 => Just(1u8)];
    let start = prop_oneof![
        values.prop_map(|v| v.encode_vec()),
        (version, prop::collection::vec(byte, size - 6)).prop_map(|(version, body)| {
            let mut b = b"RSWP".to_vec();
            b.extend([version, 0]);
            b.extend(body);
            b
        }),
    ];
    let len = prop_oneof![3 => Just(size), 1 => 0..=2 * size + 8];
    (
        start,
        prop::collection::vec((0..size, 1..=255u8), 0..=3),
        len,
        bytes(2 * size + 8),
    )
        .prop_map(move |(mut b, flips, len, tail)| {
            for (off, mask) in flips {
                b[off] ^= mask;
            }
            b.extend(tail);
            b.truncate(len);
            b
        })
}

/// 16 bytes of a nonce or MAC: sometimes all zero (what kind 3 has there), mostly any.
fn bytes16() -> impl Strategy<Value = [u8; 16]> {
    prop_oneof![1 => Just([0u8; 16]), 3 => any::<[u8; 16]>()]
}

/// The authentication of a request, of each of the three kinds.
fn any_auth() -> impl Strategy<Value = Auth> {
    prop_oneof![
        (bytes16(), any::<u64>()).prop_map(|(client_nonce, instance)| Auth::Hello {
            client_nonce,
            instance
        }),
        (any::<u64>(), bytes16()).prop_map(|(server_nonce, mac)| Auth::Proof { server_nonce, mac }),
        any::<u64>().prop_map(|instance| Auth::None { instance }),
    ]
}

/// Any request, valid or not (`encode` writes whatever it is given).
fn any_request() -> impl Strategy<Value = ConnectRequest> {
    let small = prop_oneof![0..=4u16, any::<u16>()];
    let size = prop_oneof![Just(0u64), any::<u64>()];
    (
        any::<u64>(),
        small.clone(),
        small,
        size,
        any::<bool>(),
        any_auth(),
    )
        .prop_map(|(id, index, count, size, reply, auth)| ConnectRequest {
            client_id: id,
            queue_index: index,
            queue_count: count,
            requested_size: size,
            reply_descriptor: reply,
            auth,
        })
}

/// A request `decode` must accept: `queue_index < queue_count`, non-zero size, any kind.
fn valid_request() -> impl Strategy<Value = ConnectRequest> {
    (
        any::<u64>(),
        1..=u16::MAX,
        any::<u16>(),
        1..=u64::MAX,
        any::<bool>(),
        any_auth(),
    )
        .prop_map(|(id, count, i, size, reply, auth)| ConnectRequest {
            client_id: id,
            queue_index: i % count,
            queue_count: count,
            requested_size: size,
            reply_descriptor: reply,
            auth,
        })
}

/// Any reject: a refusal with any of the codes, or a challenge.
fn any_reject() -> impl Strategy<Value = Reject> {
    prop_oneof![
        3 => (0..REASONS.len(), any::<u64>()).prop_map(|(i, max_size)| {
            Reject::Refused(RejectReason {
                code: REASONS[i].1,
                max_size,
            })
        }),
        1 => any::<u64>().prop_map(|server_nonce| Reject::Challenge { server_nonce }),
    ]
}

/// The server's proof in a descriptor: sometimes all zero (no authentication), mostly any.
fn descriptor_mac() -> impl Strategy<Value = [u8; 32]> {
    prop_oneof![1 => Just([0u8; 32]), 3 => any::<[u8; 32]>()]
}

/// Any descriptor, valid or not.
fn any_descriptor() -> impl Strategy<Value = RegionDescriptor> {
    let flags = prop_oneof![0..=3u16, any::<u16>()];
    let epoch = prop_oneof![0..=2u32, any::<u32>()];
    let length = prop_oneof![Just(0u64), any::<u64>()];
    (
        flags,
        any::<u64>(),
        epoch,
        any::<u32>(),
        any::<u64>(),
        length,
        descriptor_mac(),
    )
        .prop_map(
            |(flags, region_id, epoch, rkey, remote_addr, length, mac)| RegionDescriptor {
                flags,
                region_id,
                epoch,
                rkey,
                remote_addr,
                length,
                mac,
            },
        )
}

/// A descriptor `decode` must accept: known flags only, non-zero epoch and length, any
/// proof.
fn valid_descriptor() -> impl Strategy<Value = RegionDescriptor> {
    (
        0..=1u16,
        any::<u64>(),
        1..=u32::MAX,
        any::<u32>(),
        any::<u64>(),
        1..=u64::MAX,
        descriptor_mac(),
    )
        .prop_map(
            |(flags, region_id, epoch, rkey, remote_addr, length, mac)| RegionDescriptor {
                flags,
                region_id,
                epoch,
                rkey,
                remote_addr,
                length,
                mac,
            },
        )
}

/// `encode` then `decode`, with `pad` appended (rdma_cm pads private data).
fn round_trip<M: Msg>(v: &M, pad: &[u8]) -> Result<M, WireError> {
    let mut b = v.encode_vec();
    b.extend_from_slice(pad);
    M::decode(&b)
}

/// The bytes of the client's proof, from the table "The proofs" of
/// `Documentation/wire-format.md`: its fields one after the other, 68 bytes.
fn model_client_proof_input(
    req: &ConnectRequest,
    instance: u64,
    client_nonce: &[u8; 16],
    server_nonce: u64,
) -> Vec<u8> {
    let mut b = b"rswap-v2-client\0".to_vec();
    b.extend(req.client_id.to_le_bytes());
    b.extend(req.queue_index.to_le_bytes());
    b.extend(req.queue_count.to_le_bytes());
    b.extend(req.requested_size.to_le_bytes());
    b.extend(instance.to_le_bytes());
    b.extend(client_nonce);
    b.extend(server_nonce.to_le_bytes());
    b
}

/// The bytes of the server's proof, from the same table: 96 bytes.
fn model_server_proof_input(
    client_id: u64,
    client_nonce: &[u8; 16],
    server_nonce: u64,
    body: &[u8; 48],
) -> Vec<u8> {
    let mut b = b"rswap-v2-server\0".to_vec();
    b.extend(client_id.to_le_bytes());
    b.extend(client_nonce);
    b.extend(server_nonce.to_le_bytes());
    b.extend(body);
    b
}

/// Pairs of byte strings for `mac_eq`: equal or one byte apart, random of the same length,
/// a string and a prefix of it (itself included), anything.
fn mac_pair() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    let mask = prop_oneof![Just(0u8), 1..=255u8];
    prop_oneof![
        (bytes(64), any::<Index>(), mask).prop_map(|(a, i, mask)| {
            let mut b = a.clone();
            if !b.is_empty() {
                b[i.index(a.len())] ^= mask;
            }
            (a, b)
        }),
        (0..=64usize).prop_flat_map(|n| {
            (
                prop::collection::vec(any::<u8>(), n),
                prop::collection::vec(any::<u8>(), n),
            )
        }),
        (bytes(64), any::<Index>()).prop_map(|(a, i)| {
            let b = a[..i.index(a.len() + 1)].to_vec();
            (a, b)
        }),
        (bytes(64), bytes(64)),
    ]
}

proptest! {
    #[test]
    fn fuzz_wire_connect_request_any_bytes(b in bytes(4 * ConnectRequest::SIZE)) {
        check_decode::<ConnectRequest>(&b)?;
    }

    #[test]
    fn fuzz_wire_connect_request_near_valid(b in near_valid(prop_oneof![valid_request(), any_request()])) {
        check_decode::<ConnectRequest>(&b)?;
    }

    /// Accepted exactly when the documented constraints hold, and then to the same value,
    /// whatever the kind.
    #[test]
    fn fuzz_wire_connect_request_round_trip(
        v in prop_oneof![valid_request(), any_request()],
        pad in bytes(64),
    ) {
        let valid = v.requested_size != 0 && v.queue_count != 0 && v.queue_index < v.queue_count;
        let want = if valid { Ok(v) } else { Err(WireError::BadField) };
        prop_assert_eq!(round_trip(&v, &pad), want);
    }

    #[test]
    fn fuzz_wire_connect_request_byte_flip(
        v in valid_request(),
        off in 0..ConnectRequest::SIZE,
        mask in 1..=255u8,
    ) {
        check_flip(v, off, mask)?;
    }

    #[test]
    fn fuzz_wire_reject_any_bytes(b in bytes(4 * Reject::SIZE)) {
        check_decode::<Reject>(&b)?;
    }

    #[test]
    fn fuzz_wire_reject_near_valid(b in near_valid(any_reject())) {
        check_decode::<Reject>(&b)?;
    }

    /// Every reject (all nine codes, any `max_size`; a challenge, any nonce) comes back
    /// unchanged. A refusal to a version-1 client is the same bytes with version 1, which
    /// this version refuses to decode.
    #[test]
    fn fuzz_wire_reject_round_trip(v in any_reject(), pad in bytes(148)) {
        prop_assert_eq!(round_trip(&v, &pad), Ok(v));
        if let Reject::Refused(r) = v {
            let (mut v2, mut v1) = ([0; RejectReason::SIZE], [0; RejectReason::SIZE]);
            r.encode_as(2, &mut v2);
            r.encode_as(1, &mut v1);
            prop_assert_eq!(&v2[..], &v.encode_vec()[..]);
            v2[4] = 1;
            prop_assert_eq!(v1, v2);
            prop_assert_eq!(Reject::decode(&v1), Err(WireError::BadVersion));
        }
    }

    #[test]
    fn fuzz_wire_reject_byte_flip(v in any_reject(), off in 0..Reject::SIZE, mask in 1..=255u8) {
        check_flip(v, off, mask)?;
    }

    #[test]
    fn fuzz_wire_descriptor_any_bytes(b in bytes(4 * RegionDescriptor::SIZE)) {
        check_decode::<RegionDescriptor>(&b)?;
    }

    #[test]
    fn fuzz_wire_descriptor_near_valid(b in near_valid(prop_oneof![valid_descriptor(), any_descriptor()])) {
        check_decode::<RegionDescriptor>(&b)?;
    }

    /// Accepted exactly when the documented constraints hold (the proof may be anything),
    /// and then to the same value; `body` is the encoding's first 48 bytes, the proof the
    /// rest.
    #[test]
    fn fuzz_wire_descriptor_round_trip(
        v in prop_oneof![valid_descriptor(), any_descriptor()],
        pad in bytes(64),
    ) {
        let valid = v.flags & !RegionDescriptor::FLAGS_KNOWN == 0 && v.epoch != 0 && v.length != 0;
        let want = if valid { Ok(v) } else { Err(WireError::BadField) };
        prop_assert_eq!(round_trip(&v, &pad), want);
        prop_assert_eq!(v.reused(), v.flags & RegionDescriptor::FLAG_REUSED != 0);
        let b = v.encode_vec();
        prop_assert_eq!(&v.body()[..], &b[..48]);
        prop_assert_eq!(&v.mac[..], &b[48..]);
    }

    #[test]
    fn fuzz_wire_descriptor_byte_flip(
        v in valid_descriptor(),
        off in 0..RegionDescriptor::SIZE,
        mask in 1..=255u8,
    ) {
        check_flip(v, off, mask)?;
    }

    /// The proof inputs hold the documented fields at the documented offsets. The client's
    /// does not depend on the request's kind (a proof request carries its hello's fields);
    /// the server's covers a descriptor's first 48 bytes.
    #[test]
    fn fuzz_wire_proof_inputs(
        req in any_request(),
        auth in any_auth(),
        instance in any::<u64>(),
        client_nonce in bytes16(),
        server_nonce in any::<u64>(),
        body in any::<[u8; 48]>(),
        desc in any_descriptor(),
    ) {
        let want = model_client_proof_input(&req, instance, &client_nonce, server_nonce);
        prop_assert_eq!(want.len(), 68);
        let got = client_proof_input(&req, instance, &client_nonce, server_nonce);
        prop_assert_eq!(&got[..], &want[..]);
        let other = ConnectRequest { auth, ..req };
        prop_assert_eq!(client_proof_input(&other, instance, &client_nonce, server_nonce), got);

        let id = req.client_id;
        let want = model_server_proof_input(id, &client_nonce, server_nonce, &body);
        prop_assert_eq!(want.len(), 96);
        let got = server_proof_input(id, &client_nonce, server_nonce, &body);
        prop_assert_eq!(&got[..], &want[..]);
        let got = server_proof_input(id, &client_nonce, server_nonce, &desc.body());
        prop_assert_eq!(&got[48..], &desc.encode_vec()[..48]);
    }

    /// `mac_eq` is `==`: on strings of the same length, and a string of another length
    /// (a truncated MAC) never matches.
    #[test]
    fn fuzz_wire_mac_eq((a, b) in mac_pair()) {
        prop_assert_eq!(mac_eq(&a, &b), a == b, "{:02x?} {:02x?}", a, b);
        prop_assert_eq!(mac_eq(&b, &a), a == b);
        prop_assert!(mac_eq(&a, &a));
    }
}

/// `RejectCode::from_u16` and `Reject::decode`, for every `u16` reason: the documented
/// nine codes (1-6, 8-10) are refusals and round trip through `to_u16` with the documented
/// names; 7 is the challenge, which is no `RejectCode`; anything else is `BadField`.
#[test]
fn fuzz_wire_reject_codes_all_u16() {
    for value in 0..=u16::MAX {
        let want = REASONS.iter().find(|r| r.0 == value).map(|r| r.1);
        assert_eq!(
            RejectCode::from_u16(value),
            want.ok_or(WireError::BadField),
            "{value}"
        );
        if let Some(code) = want {
            assert_eq!(code.to_u16(), value);
        }
        let nonce = 0xa1a2_a3a4_a5a6_a7a8 ^ u64::from(value);
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(b"RSWP");
        b[4] = 2;
        b[6..8].copy_from_slice(&value.to_le_bytes());
        b[8..].copy_from_slice(&nonce.to_le_bytes());
        let got = Reject::decode(&b);
        assert_eq!(
            got,
            model_reason(value.into(), nonce).ok_or(WireError::BadField)
        );
        let is_challenge = matches!(got, Ok(Reject::Challenge { .. }));
        assert_eq!(is_challenge, value == CHALLENGE, "{value}");
    }
    for (i, (_, code, name)) in REASONS.iter().enumerate() {
        assert_eq!(code.name(), *name);
        for (_, other, other_name) in &REASONS[i + 1..] {
            assert_ne!(code, other);
            assert_ne!(name, other_name);
        }
    }
}

// --- configfs values ---------------------------------------------------------------------

/// Text as a configfs write brings it: arbitrary bytes, or bytes of what the parsers expect
/// (digits, hex, dots, suffixes, signs, white space, newlines) so their checks are reached.
fn page() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        bytes(40),
        "[ \t\n]{0,2}[0-9a-fA-FxXkKmMgGtT.+\\-]{0,24}[ \t\n]{0,2}".prop_map(String::into_bytes),
        any::<String>().prop_map(String::into_bytes),
    ]
}

/// Strings for the value parsers, shaped like each kind of value, or anything.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{0,22}[kKmMgGtTpP]?",
        "[1-9][0-9]{0,4}(000|096|[kKmMgGtT])",
        "0{0,3}[0-9]{0,4}(\\.0{0,3}[0-9]{0,4}){0,4}\\.?",
        "[0-9]{1,3}(\\.[0-9]{1,3}){3}",
        "(0[xX])?[+\\-]?[0-9a-fA-F]{0,18}",
        "[0-9a-fA-FxX.+\\- ]{0,24}",
        "1|y|Y|on|yes|0|n|N|off|no|true|ON|",
        any::<String>(),
    ]
}

/// `s` is a run of 1 or more ASCII digits whose value is `v` (leading zeros allowed).
fn is_decimal(s: &str, v: u64) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit())
        && s.trim_start_matches('0') == if v == 0 { String::new() } else { v.to_string() }
}

/// A value in `lo..=hi` (`lo <= hi`) picked by `x`.
fn pick(lo: u64, hi: u64, x: u64) -> u64 {
    let span = u128::from(hi - lo) + 1;
    lo + (u128::from(x) % span) as u64
}

proptest! {
    /// `text` accepts exactly UTF-8 with something besides white space, and returns that
    /// something: the input is white space, the value, white space.
    #[test]
    fn fuzz_config_text(b in page()) {
        let got = parse::text(&b);
        match core::str::from_utf8(&b) {
            Err(_) => prop_assert!(got.is_err()),
            Ok(s) if s.trim().is_empty() => prop_assert!(got.is_err()),
            Ok(s) => {
                let v = got.map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
                prop_assert_eq!(v, s.trim());
            }
        }
    }

    /// Every attribute as the module parses it (`src/configfs.rs`): `text`, then the
    /// attribute's parser; any bytes, no panic, and what is accepted is in range.
    #[test]
    fn fuzz_config_attribute_pipeline(b in page()) {
        if let Ok(t) = parse::text(&b) {
            for (lo, hi) in [(1, 65535), (1, 64), (1, 1024), (100, 120_000), (0, 3_600_000), (100, 3_600_000)] {
                if let Ok(v) = parse::number(t, lo, hi) {
                    prop_assert!((lo..=hi).contains(&v));
                }
            }
            if let Ok(v) = parse::size(t) {
                prop_assert!((MIN_SIZE..=MAX_SIZE).contains(&v) && v % 4096 == 0);
            }
            if let Ok(v) = parse::client_id(t) {
                prop_assert_ne!(v, 0);
            }
            if let Ok(v) = parse::keepalive_ms(t) {
                prop_assert!(v == 0 || (1000..=600_000).contains(&v));
            }
            if let Ok(v) = parse::secret(t) {
                prop_assert!((parse::SECRET_MIN..=parse::SECRET_MAX).contains(&v.bytes().len()));
            }
            if let Some(Ok(d)) = parse::key_description(t) {
                prop_assert!(t.starts_with(parse::KEY_PREFIX) && t.ends_with(d));
                prop_assert!(d.find(':').is_some_and(|i| i > 0) && !d.contains('\0'));
                prop_assert!(!d.contains(','));
            }
            let _ = parse::boolean(t);
        }
    }

    /// `key:DESCRIPTION`: recognised exactly when the text starts with `key:`, and then
    /// accepted exactly when the description is qualified (`PREFIX:NAME`, a `:` after at
    /// least one character, no NUL and no `,`), returned as it is.
    #[test]
    fn fuzz_config_key_description(s in prop_oneof!["(key:)?[a-z:,]{0,12}", "key:.{0,40}", any::<String>()]) {
        match (s.strip_prefix("key:"), parse::key_description(&s)) {
            (None, got) => prop_assert!(got.is_none(), "{:?}", s),
            (Some(d), Some(Ok(got))) => {
                prop_assert_eq!(got, d);
                prop_assert!(d.find(':').is_some_and(|i| i > 0), "{:?}", s);
                prop_assert!(!d.contains('\0') && !d.contains(','), "{:?}", s);
            }
            (Some(d), Some(Err(_))) => {
                let bad = d.find(':').is_none_or(|i| i == 0) || d.contains('\0') || d.contains(',');
                prop_assert!(bad, "{:?}", s);
            }
            (Some(_), None) => prop_assert!(false, "not recognised: {:?}", s),
        }
    }

    /// `secret`: accepted exactly when an even number, 32 to 128, of hexadecimal digits,
    /// and then the bytes they spell.
    #[test]
    fn fuzz_config_secret(s in prop_oneof!["[0-9a-fA-F]{0,140}", "[0-9a-fA-Fx+ -]{28,132}", any::<String>()]) {
        let hex = s.bytes().all(|b| b.is_ascii_hexdigit());
        let want = hex && s.len() % 2 == 0 && (32..=128).contains(&s.len());
        match parse::secret(&s) {
            Ok(v) => {
                prop_assert!(want, "accepted {:?}", s);
                let spelled: Vec<u8> = (0..s.len() / 2)
                    .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or(0))
                    .collect();
                prop_assert_eq!(v.bytes(), spelled.as_slice());
            }
            Err(_) => prop_assert!(!want, "refused {:?}", s),
        }
    }

    /// `number`: accepted means decimal digits of a value within `min..=max`.
    #[test]
    fn fuzz_config_number_any(s in value(), a in any::<u64>(), b in prop_oneof![Just(u64::MAX), any::<u64>()]) {
        let (min, max) = (a.min(b), a.max(b));
        if let Ok(v) = parse::number(&s, min, max) {
            prop_assert!((min..=max).contains(&v) && is_decimal(&s, v), "{:?} -> {}", s, v);
        }
        // min > max: nothing is accepted.
        if a != b {
            prop_assert!(parse::number(&s, max, min).is_err());
        }
    }

    /// `number`: every value within the bounds is accepted, also with leading zeros; the
    /// values just outside are refused.
    #[test]
    fn fuzz_config_number_round_trip(a in any::<u64>(), b in any::<u64>(), x in any::<u64>(), zeros in 0..3usize) {
        let (min, max) = (a.min(b), a.max(b));
        let v = pick(min, max, x);
        prop_assert_eq!(parse::number(&v.to_string(), min, max), Ok(v));
        prop_assert_eq!(parse::number(&format!("{}{v}", "0".repeat(zeros)), min, max), Ok(v));
        if let Some(below) = min.checked_sub(1) {
            prop_assert!(parse::number(&below.to_string(), min, max).is_err());
        }
        if let Some(above) = max.checked_add(1) {
            prop_assert!(parse::number(&above.to_string(), min, max).is_err());
        }
    }

    /// `keepalive_ms`: accepted exactly for 0 and 1000..=600000, in decimal.
    #[test]
    fn fuzz_config_keepalive(s in value(), v in prop_oneof![0..=700_000u64, any::<u64>()]) {
        if let Ok(got) = parse::keepalive_ms(&s) {
            prop_assert!((got == 0 || (1000..=600_000).contains(&got)) && is_decimal(&s, got));
        }
        let ok = v == 0 || (1000..=600_000).contains(&v);
        prop_assert_eq!(parse::keepalive_ms(&v.to_string()).is_ok(), ok, "{}", v);
        if ok {
            prop_assert_eq!(parse::keepalive_ms(&v.to_string()), Ok(v));
        }
    }

    /// `client_id`: accepted values are not 0; every other value is accepted in decimal and
    /// in hexadecimal (`0x`/`0X`, either case, leading zeros up to 16 digits).
    #[test]
    fn fuzz_config_client_id(s in value(), v in 1..=u64::MAX, upper in any::<bool>(), big_x in any::<bool>()) {
        if let Ok(got) = parse::client_id(&s) {
            prop_assert_ne!(got, 0);
        }
        prop_assert_eq!(parse::client_id(&v.to_string()), Ok(v));
        let hex = if upper { format!("{v:016X}") } else { format!("{v:x}") };
        let prefix = if big_x { "0X" } else { "0x" };
        prop_assert_eq!(parse::client_id(&format!("{prefix}{hex}")), Ok(v));
        prop_assert!(parse::client_id("0").is_err() && parse::client_id("0x0").is_err());
    }

    /// `client_id` accepts only what it documents: decimal digits, or `0x`/`0X` and 1 to 16
    /// hexadecimal digits, of the value returned.
    #[test]
    fn fuzz_config_client_id_syntax(s in value()) {
        if let Ok(v) = parse::client_id(&s) {
            let ok = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(h) => {
                    (1..=16).contains(&h.len())
                        && h.bytes().all(|b| b.is_ascii_hexdigit())
                        && u64::from_str_radix(h, 16) == Ok(v)
                }
                None => is_decimal(&s, v),
            };
            prop_assert!(ok, "{:?} accepted as {}", s, v);
        }
    }

    /// `size`: accepted means digits with an optional K/M/G/T suffix whose value is a
    /// multiple of 4 KiB within `MIN_SIZE..=MAX_SIZE`.
    #[test]
    fn fuzz_config_size_any(s in value()) {
        if let Ok(v) = parse::size(&s) {
            prop_assert!((MIN_SIZE..=MAX_SIZE).contains(&v) && v % 4096 == 0, "{:?} -> {}", s, v);
            let (digits, shift) = match s.as_bytes().last().map(u8::to_ascii_uppercase) {
                Some(b'K') => (&s[..s.len() - 1], 10),
                Some(b'M') => (&s[..s.len() - 1], 20),
                Some(b'G') => (&s[..s.len() - 1], 30),
                Some(b'T') => (&s[..s.len() - 1], 40),
                _ => (&s[..], 0),
            };
            prop_assert!(is_decimal(digits, v >> shift) && (v >> shift) << shift == v, "{:?}", s);
        }
    }

    /// `size`: every multiple of 4 KiB within the bounds is accepted in bytes and in each
    /// unit that divides it; a value that is not a multiple, or out of bounds, is refused.
    #[test]
    fn fuzz_config_size_round_trip(pages in (MIN_SIZE / 4096)..=(MAX_SIZE / 4096), off in 1..4096u64, lower in any::<bool>()) {
        let v = pages * 4096;
        prop_assert_eq!(parse::size(&v.to_string()), Ok(v));
        for (shift, unit) in [(10, "K"), (20, "M"), (30, "G"), (40, "T")] {
            if v % (1 << shift) == 0 {
                let unit = if lower { unit.to_lowercase() } else { unit.to_string() };
                prop_assert_eq!(parse::size(&format!("{}{unit}", v >> shift)), Ok(v));
            }
        }
        prop_assert!(parse::size(&(v - off).to_string()).is_err());
        prop_assert!(parse::size(&(MAX_SIZE + 4096 * (v / 4096 % 1000 + 1)).to_string()).is_err());
        prop_assert!(parse::size(&(v % MIN_SIZE).to_string()).is_err());
    }

    /// `boolean`: exactly the ten documented spellings.
    #[test]
    fn fuzz_config_boolean(s in value()) {
        let want = match s.as_str() {
            "1" | "y" | "Y" | "on" | "yes" => Some(true),
            "0" | "n" | "N" | "off" | "no" => Some(false),
            _ => None,
        };
        prop_assert_eq!(parse::boolean(&s).ok(), want);
    }
}

// --- request bounds ----------------------------------------------------------------------

/// Offsets and lengths near the interesting edges (0, the region's end, `u64::MAX`).
fn edge() -> impl Strategy<Value = u64> {
    prop_oneof![0..=8192u64, (u64::MAX - 8192)..=u64::MAX, any::<u64>()]
}

proptest! {
    /// `remote_addr` maps exactly the non-empty ranges inside the region, to `addr + offset`,
    /// and never overflows.
    #[test]
    fn fuzz_remote_addr(addr in edge(), len in edge(), rkey in any::<u32>(), offset in edge(), n in edge()) {
        let region = RemoteRegion { addr, len, rkey };
        let inside = n != 0
            && u128::from(offset) + u128::from(n) <= u128::from(len)
            && u128::from(addr) + u128::from(offset) <= u128::from(u64::MAX);
        let want = if inside { Ok(addr + offset) } else { Err(OutOfRange) };
        prop_assert_eq!(region.remote_addr(offset, n), want);
    }
}
