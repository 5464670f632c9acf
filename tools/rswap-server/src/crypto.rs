// SPDX-License-Identifier: GPL-2.0

//! The cryptography of authentication (wire version 2): client secrets, the two
//! HMAC-SHA256 proofs of `Documentation/wire-format.md`, and random nonces from the
//! kernel's CSPRNG. Shared by the server and `rswap-testclient`.
//!
//! HMAC and SHA-256 are the RustCrypto `hmac` and `sha2` crates; randomness is
//! `getrandom(2)` through the `getrandom` crate, with no fallback: a caller that
//! cannot get random bytes must refuse what it was about to do.

use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::Sha256;
use zeroize::Zeroize as _;

use crate::wire::{
    self, ConnectRequest, RegionDescriptor, CLIENT_MAC_LEN, NONCE_LEN, SECRET_MAX_LEN,
    SECRET_MIN_LEN, SERVER_MAC_LEN,
};

/// A client's secret: 16 to 64 bytes, the key of both proofs.
///
/// Its `Debug` shows only the length, so that a secret never reaches a log line or an
/// error message by way of `{:?}`. Its bytes are wiped when it is dropped (every copy:
/// a clone is a secret of its own). It has no `==`, whose derived form would compare
/// in time that depends on the bytes; tests compare with [`Secret::ct_eq`].
#[derive(Clone)]
pub(crate) struct Secret(Vec<u8>);

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl zeroize::ZeroizeOnDrop for Secret {}

/// Why a text is not a secret. The message never contains the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SecretError {
    /// A character other than `0-9`, `a-f`, `A-F`.
    NotHex,
    /// An odd number of hex digits, or a length outside 16..=64 bytes; the digits
    /// counted.
    Length(usize),
}

impl std::fmt::Display for SecretError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotHex => write!(f, "the secret is not hexadecimal (0-9, a-f)"),
            Self::Length(n) => write!(
                f,
                "the secret has {n} hex digits; it must be {} to {} bytes ({} to {} hex digits, an even number)",
                SECRET_MIN_LEN,
                SECRET_MAX_LEN,
                2 * SECRET_MIN_LEN,
                2 * SECRET_MAX_LEN
            ),
        }
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// The value of one hex digit.
fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

impl Secret {
    /// Parses a secret written as 32 to 128 hex digits (either case, nothing else).
    pub(crate) fn from_hex(text: &str) -> Result<Self, SecretError> {
        let digits = text.as_bytes();
        if !digits.iter().all(|&b| hex_digit(b).is_some()) {
            return Err(SecretError::NotHex);
        }
        let n = digits.len();
        if n % 2 != 0 || !(2 * SECRET_MIN_LEN..=2 * SECRET_MAX_LEN).contains(&n) {
            return Err(SecretError::Length(n));
        }
        let bytes = digits
            .chunks_exact(2)
            .map(|p| {
                let hi = p.first().copied().and_then(hex_digit).unwrap_or(0);
                let lo = p.get(1).copied().and_then(hex_digit).unwrap_or(0);
                hi << 4 | lo
            })
            .collect();
        Ok(Self(bytes))
    }

    /// A secret of these bytes, if their number is allowed.
    #[cfg(test)]
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Self> {
        (SECRET_MIN_LEN..=SECRET_MAX_LEN)
            .contains(&bytes.len())
            .then(|| Self(bytes.to_vec()))
    }

    /// The secret's length in bytes.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether `self` and `other` are the same secret, compared in time that does not
    /// depend on where they differ (only on their lengths).
    pub(crate) fn ct_eq(&self, other: &Self) -> bool {
        wire::mac_eq(&self.0, &other.0)
    }

    /// The secret with its first byte flipped: a wrong key that is still a valid
    /// secret, for `--test-wrong-server-proof`.
    pub(crate) fn spoiled(&self) -> Self {
        let mut s = self.clone();
        if let Some(b) = s.0.first_mut() {
            *b ^= 0xff;
        }
        s
    }

    /// HMAC-SHA256 of `data` keyed with the secret.
    fn hmac(&self, data: &[u8]) -> [u8; 32] {
        hmac_sha256(&self.0, data)
    }
}

/// HMAC-SHA256 of `data` with `key` (any length).
pub(crate) fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    // HMAC takes keys of any length: `new_from_slice` cannot fail for it.
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// The client's proof: HMAC-SHA256 over [`wire::client_proof_input`], cut to
/// [`CLIENT_MAC_LEN`] bytes. `req` gives the client id, queue and size (its `auth`
/// is not part of it); `instance` and `client_nonce` are the hello's.
pub(crate) fn client_mac(
    secret: &Secret,
    req: &ConnectRequest,
    instance: u64,
    client_nonce: &[u8; NONCE_LEN],
    server_nonce: u64,
) -> [u8; CLIENT_MAC_LEN] {
    let full = secret.hmac(&wire::client_proof_input(
        req,
        instance,
        client_nonce,
        server_nonce,
    ));
    let mut out = [0u8; CLIENT_MAC_LEN];
    for (o, b) in out.iter_mut().zip(full) {
        *o = b;
    }
    out
}

/// The server's proof for a descriptor: HMAC-SHA256 over
/// [`wire::server_proof_input`] of its [`RegionDescriptor::body`].
pub(crate) fn server_mac(
    secret: &Secret,
    client_id: u64,
    client_nonce: &[u8; NONCE_LEN],
    server_nonce: u64,
    desc: &RegionDescriptor,
) -> [u8; SERVER_MAC_LEN] {
    secret.hmac(&wire::server_proof_input(
        client_id,
        client_nonce,
        server_nonce,
        &desc.body(),
    ))
}

/// What is needed to prove the server to a client that authenticated: its secret and
/// the nonces of the hello and the challenge. Kept with each authenticated queue until
/// its descriptor is signed, then dropped (which wipes the secret).
#[derive(Debug, Clone)]
pub(crate) struct Proven {
    /// The client's secret.
    pub(crate) secret: Secret,
    /// The hello's nonce.
    pub(crate) client_nonce: [u8; NONCE_LEN],
    /// The challenge's nonce.
    pub(crate) server_nonce: u64,
}

impl Proven {
    /// The same with a wrong key (the secret with its first byte flipped), for
    /// `--test-wrong-server-proof`.
    pub(crate) fn with_wrong_key(self) -> Self {
        Self {
            secret: self.secret.spoiled(),
            ..self
        }
    }

    /// `desc` with the server's proof for `client_id` in its `mac`.
    pub(crate) fn sign(&self, client_id: u64, desc: RegionDescriptor) -> RegionDescriptor {
        RegionDescriptor {
            mac: server_mac(
                &self.secret,
                client_id,
                &self.client_nonce,
                self.server_nonce,
                &desc,
            ),
            ..desc
        }
    }
}

/// A random `u64` from the kernel's CSPRNG; an error when there is none (never a
/// weaker substitute).
pub(crate) fn random_u64() -> Result<u64, getrandom::Error> {
    getrandom::u64()
}

/// A random client nonce from the kernel's CSPRNG.
pub(crate) fn random_nonce() -> Result<[u8; NONCE_LEN], getrandom::Error> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::fill(&mut n)?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Auth;

    /// Whatever holds a secret, or what it was mixed into, wipes itself when dropped:
    /// the secret, and the parts of the HMAC state (with the `zeroize` features of
    /// `hmac` and `sha2`): the two keyed SHA-256 states and the block buffer of an
    /// `Hmac<Sha256>`, and its output.
    #[test]
    fn secrets_and_hmac_state_are_wiped_on_drop() {
        use hmac::digest::block_api::{Buffer, EagerHash};
        fn wiped<T: zeroize::ZeroizeOnDrop>() {}
        wiped::<Secret>();
        wiped::<<Sha256 as EagerHash>::Core>();
        wiped::<Buffer<hmac::block_api::HmacCore<Sha256>>>();
        wiped::<hmac::digest::CtOutput<Hmac<Sha256>>>();
    }

    /// The secret of the test vectors: bytes 0x00..=0x1f.
    fn doc_secret() -> Secret {
        let bytes: Vec<u8> = (0u8..32).collect();
        Secret::from_bytes(&bytes).expect("32 bytes")
    }

    const NONCE: [u8; NONCE_LEN] = [
        0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e,
        0x1f,
    ];
    const INSTANCE: u64 = 0x1112_1314_1516_1718;
    const SERVER_NONCE: u64 = 0xa1a2_a3a4_a5a6_a7a8;
    const CLIENT_ID: u64 = 0x0102_0304_0506_0708;

    /// The proof request of the test vectors (`mac` 20..2f, which the proof ignores).
    fn doc_proof() -> ConnectRequest {
        let mut mac = [0u8; CLIENT_MAC_LEN];
        for (i, m) in mac.iter_mut().enumerate() {
            *m = 0x20 + i as u8;
        }
        ConnectRequest {
            client_id: CLIENT_ID,
            queue_index: 3,
            queue_count: 4,
            requested_size: 0x0400_0000,
            reply_descriptor: false,
            auth: Auth::Proof {
                server_nonce: SERVER_NONCE,
                mac,
            },
        }
    }

    /// The descriptor of the test vectors.
    fn doc_desc() -> RegionDescriptor {
        let mut mac = [0u8; SERVER_MAC_LEN];
        for (i, m) in mac.iter_mut().enumerate() {
            *m = 0x30 + i as u8;
        }
        RegionDescriptor {
            flags: RegionDescriptor::FLAG_REUSED,
            region_id: 0x1122_3344_5566_7788,
            epoch: 2,
            rkey: 0xdead_beef,
            remote_addr: 0x7f00_1234_5000,
            length: 0x0060_0000,
            mac,
        }
    }

    /// The known-answer vectors at the end of `Documentation/wire-format.md`.
    #[test]
    fn doc_vectors() {
        let s = doc_secret();
        assert_eq!(
            client_mac(&s, &doc_proof(), INSTANCE, &NONCE, SERVER_NONCE),
            [
                0x7d, 0xa6, 0x4f, 0x84, 0x21, 0x0f, 0x83, 0x9f, 0x40, 0x0c, 0xa2, 0x3c, 0xb1, 0x5c,
                0x0d, 0x60
            ]
        );
        assert_eq!(
            server_mac(&s, CLIENT_ID, &NONCE, SERVER_NONCE, &doc_desc()),
            [
                0x2f, 0xc6, 0xcf, 0x0e, 0xb1, 0xce, 0x0b, 0x1a, 0x21, 0x7f, 0xfa, 0x4f, 0x19, 0x90,
                0x63, 0xb0, 0xf5, 0x46, 0x10, 0x83, 0x07, 0xc5, 0x7a, 0x79, 0x07, 0xb6, 0xc0, 0x91,
                0xc3, 0x14, 0xea, 0xc2
            ]
        );
        // The server's proof covers the body only: the mac already in it is ignored.
        let signed = Proven {
            secret: s,
            client_nonce: NONCE,
            server_nonce: SERVER_NONCE,
        }
        .sign(
            CLIENT_ID,
            RegionDescriptor {
                mac: [0; SERVER_MAC_LEN],
                ..doc_desc()
            },
        );
        assert_eq!(signed.mac.first(), Some(&0x2f));
        assert_eq!(signed.body(), doc_desc().body());
    }

    /// RFC 4231 test cases 1 and 6 (a key longer than the block), for the HMAC itself.
    #[test]
    fn hmac_sha256_rfc4231() {
        assert_eq!(
            hmac_sha256(&[0x0b; 20], b"Hi There"),
            [
                0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53, 0x5c, 0xa8, 0xaf, 0xce, 0xaf, 0x0b,
                0xf1, 0x2b, 0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83, 0x3d, 0xa7, 0x26, 0xe9, 0x37, 0x6c,
                0x2e, 0x32, 0xcf, 0xf7
            ]
        );
        assert_eq!(
            hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            [
                0x60, 0xe4, 0x31, 0x59, 0x1e, 0xe0, 0xb6, 0x7f, 0x0d, 0x8a, 0x26, 0xaa, 0xcb, 0xf5,
                0xb7, 0x7f, 0x8e, 0x0b, 0xc6, 0x21, 0x37, 0x28, 0xc5, 0x14, 0x05, 0x46, 0x04, 0x0f,
                0x0e, 0xe3, 0x7f, 0x54
            ]
        );
    }

    /// Every input of a proof changes it.
    #[test]
    fn proofs_cover_their_inputs() {
        let s = doc_secret();
        let req = doc_proof();
        let base = client_mac(&s, &req, INSTANCE, &NONCE, SERVER_NONCE);
        let s2 = Secret::from_hex(&format!("{}01", "00".repeat(31))).expect("32 bytes");
        let variants = [
            client_mac(&s2, &req, INSTANCE, &NONCE, SERVER_NONCE),
            client_mac(&s, &req, INSTANCE + 1, &NONCE, SERVER_NONCE),
            client_mac(&s, &req, INSTANCE, &[0; NONCE_LEN], SERVER_NONCE),
            client_mac(&s, &req, INSTANCE, &NONCE, SERVER_NONCE ^ 1),
            client_mac(
                &s,
                &ConnectRequest {
                    queue_index: 2,
                    ..req
                },
                INSTANCE,
                &NONCE,
                SERVER_NONCE,
            ),
            client_mac(
                &s,
                &ConnectRequest {
                    requested_size: 4096,
                    ..req
                },
                INSTANCE,
                &NONCE,
                SERVER_NONCE,
            ),
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(*v, base, "variant {i}");
        }
        let d = doc_desc();
        let base = server_mac(&s, CLIENT_ID, &NONCE, SERVER_NONCE, &d);
        for other in [
            RegionDescriptor { rkey: 1, ..d },
            RegionDescriptor { epoch: 3, ..d },
            RegionDescriptor {
                remote_addr: 0,
                ..d
            },
        ] {
            assert_ne!(
                server_mac(&s, CLIENT_ID, &NONCE, SERVER_NONCE, &other),
                base
            );
        }
        assert_ne!(
            server_mac(&s, CLIENT_ID + 1, &NONCE, SERVER_NONCE, &d),
            base
        );
    }

    #[test]
    fn secret_from_hex() {
        let s =
            Secret::from_hex("000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F")
                .expect("32 bytes");
        assert!(s.ct_eq(&doc_secret()));
        assert_eq!(s.len(), 32);
        assert_eq!(Secret::from_hex(&"ab".repeat(16)).map(|s| s.len()), Ok(16));
        assert_eq!(Secret::from_hex(&"ab".repeat(64)).map(|s| s.len()), Ok(64));
        assert_eq!(
            Secret::from_hex(&"ab".repeat(15)).err(),
            Some(SecretError::Length(30))
        );
        assert_eq!(
            Secret::from_hex(&"ab".repeat(65)).err(),
            Some(SecretError::Length(130))
        );
        assert_eq!(
            Secret::from_hex(&format!("{}a", "ab".repeat(16))).err(),
            Some(SecretError::Length(33))
        );
        for bad in [" ", "0x", "+1", "g"] {
            let padded = format!("{}{bad}", "ab".repeat(16));
            let e = Secret::from_hex(&padded);
            assert!(e.is_err(), "{padded:?}");
        }
        assert_eq!(
            Secret::from_hex(&format!("{}zz", "ab".repeat(16))).err(),
            Some(SecretError::NotHex)
        );
        // Neither Debug nor an error message shows the secret.
        let hex = "5ec2e75ec2e75ec2e75ec2e75ec2e75e";
        let s = Secret::from_hex(hex).expect("16 bytes");
        assert_eq!(format!("{s:?}"), "Secret(16 bytes)");
        for e in [SecretError::NotHex, SecretError::Length(33)] {
            assert!(!e.to_string().contains("5ec2"), "{e}");
        }
    }

    /// `--test-wrong-server-proof`'s key: the first byte flipped, nothing else; and
    /// `ct_eq` tells secrets apart by any byte or the length.
    #[test]
    fn spoiled_secret() {
        let s = doc_secret();
        let w = s.spoiled();
        assert!(!w.ct_eq(&s));
        assert_eq!(w.len(), s.len());
        assert_eq!(w.0.first(), Some(&0xff));
        assert_eq!(w.0.get(1..), s.0.get(1..));
        assert!(w.spoiled().ct_eq(&s));
        let short = Secret::from_bytes(&s.0[..16]).expect("16 bytes");
        assert!(!short.ct_eq(&s) && !s.ct_eq(&short));
        // The wrong key makes another server proof.
        let d = doc_desc();
        assert_ne!(
            server_mac(&w, CLIENT_ID, &NONCE, SERVER_NONCE, &d),
            server_mac(&s, CLIENT_ID, &NONCE, SERVER_NONCE, &d)
        );
    }

    #[test]
    fn randomness() {
        let a = random_u64().expect("getrandom");
        let b = random_u64().expect("getrandom");
        assert_ne!(a, b);
        let n = random_nonce().expect("getrandom");
        assert_ne!(n, random_nonce().expect("getrandom"));
    }
}
