// SPDX-License-Identifier: GPL-2.0

//! Admission of a connect request, decided without any I/O: from its private data and
//! a view of what the server holds, either what to do with the client's region or the
//! reject to answer, with the words the log gives for it. The server (`server/connect.rs`)
//! carries the answer out; authentication (`auth.rs`, `challenge.rs`) and the pool's
//! rules (`policy.rs`) are the steps this one strings together. Unit-tested.
//!
//! The order of the checks is the order a request meets them: the protocol version and
//! the fields, the pending connects of its source (`pending.rs`), authentication, then
//! the region's owner, the RDMA device, and the pool.

use std::borrow::Cow;

use crate::policy::{self, Admit, Existing, Holder, Limits, Ownership};
use crate::wire::{self, ConnectRequest, RejectCode, WireError, VERSION_1};

/// A connect request refused: the reject to send and what the log says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The protocol version the reject is written in: the client's, so that a
    /// version-1 client can read why.
    pub(crate) version: u16,
    /// The reject's reason.
    pub(crate) code: RejectCode,
    /// Why, for the log's `why=` (never a secret).
    pub(crate) why: Cow<'static, str>,
    /// More keys and values for the log line.
    pub(crate) detail: Vec<(&'static str, String)>,
    /// The request got past authentication (a proof, or a request without one that
    /// an `--insecure` server admits): only then does the reject say what the pool has
    /// left (`max_size`); before, an unauthenticated peer learns nothing of it.
    pub(crate) authenticated: bool,
}

impl Refusal {
    /// A reject in the server's protocol version, to a peer not authenticated (yet).
    pub(crate) fn new(code: RejectCode, why: impl Into<Cow<'static, str>>) -> Self {
        Self {
            version: wire::VERSION,
            code,
            why: why.into(),
            detail: Vec::new(),
            authenticated: false,
        }
    }

    /// This reject, to a request that got past authentication.
    pub(crate) fn authenticated(self) -> Self {
        Self {
            authenticated: true,
            ..self
        }
    }
}

/// Reads a connect request from its private data. A version-1 client is answered in
/// version 1 (`BadVersion`), so that it can say why.
pub(crate) fn parse(private_data: &[u8]) -> Result<ConnectRequest, Refusal> {
    if wire::version_of(private_data) == Some(VERSION_1) {
        return Err(Refusal {
            version: VERSION_1,
            ..Refusal::new(
                RejectCode::BadVersion,
                "protocol version 1 (no authentication); this server speaks version 2",
            )
        });
    }
    ConnectRequest::decode(private_data).map_err(|e| {
        let (code, why) = match e {
            WireError::BadVersion => (RejectCode::BadVersion, "unknown protocol version"),
            WireError::BadMagic => (RejectCode::BadRequest, "bad magic"),
            WireError::Short => (RejectCode::BadRequest, "private data too short"),
            WireError::BadField => (RejectCode::BadRequest, "invalid field"),
        };
        Refusal::new(code, why)
    })
}

/// The refusal of a connect from a source address that has `pending` connects not
/// established yet (`--max-pending-per-source`).
pub(crate) fn too_many_pending(pending: usize) -> Refusal {
    Refusal::new(
        RejectCode::TooManyClients,
        format!(
            "--max-pending-per-source reached: {pending} connects from this address not established yet"
        ),
    )
}

/// What the server holds for the requesting client id, as admission sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held {
    /// The instance that owns the region; `None` for a region restored from metadata
    /// written before owners were recorded.
    pub(crate) owner: Option<u64>,
    /// The region is registered on another device than the one of the connection.
    pub(crate) other_device: bool,
    /// At least one of the client's queues is live (else it is in its grace period).
    pub(crate) live: bool,
    /// The `queue_count` of the client's queues.
    pub(crate) queue_count: u16,
    /// The region's length.
    pub(crate) length: u64,
}

/// A connect request admitted after authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Admitted {
    /// What to do with the client's region.
    pub(crate) admit: Admit,
    /// How the request's instance stands to the region.
    pub(crate) ownership: Ownership,
}

/// Decides on an authenticated request of `instance`: `held` is what the server holds
/// for its client id, `device` the connection's RDMA device if it has one (given back
/// with the decision), and `lim` the pool and its limits now.
pub(crate) fn admit<D>(
    req: &ConnectRequest,
    instance: u64,
    held: Option<&Held>,
    device: Option<D>,
    lim: Limits,
) -> Result<(Admitted, D), Refusal> {
    decide(req, instance, held, device, lim).map_err(Refusal::authenticated)
}

/// [`admit`]'s decision, its refusals not yet marked as to an authenticated request.
fn decide<D>(
    req: &ConnectRequest,
    instance: u64,
    held: Option<&Held>,
    device: Option<D>,
    lim: Limits,
) -> Result<(Admitted, D), Refusal> {
    // One owner per region: another instance may not touch it.
    let holder = match held {
        None => Holder::Nobody,
        Some(h) => h.owner.map_or(Holder::Unknown, Holder::Instance),
    };
    let ownership = policy::ownership(holder, instance).map_err(|code| {
        let owner = match holder {
            Holder::Instance(o) => o.to_string(),
            Holder::Nobody | Holder::Unknown => "unknown".into(),
        };
        Refusal {
            detail: vec![("instance", instance.to_string()), ("owner", owner)],
            ..Refusal::new(code, "region held by another instance of this client id")
        }
    })?;
    let Some(device) = device else {
        return Err(Refusal::new(
            RejectCode::BadRequest,
            "no RDMA device for the connection",
        ));
    };
    let existing = match held {
        None => Existing::None,
        Some(h) if h.other_device => {
            return Err(Refusal::new(
                RejectCode::BadRequest,
                "region is on another device",
            ));
        }
        Some(h) if !h.live => Existing::Grace { length: h.length },
        Some(h) => Existing::Live {
            queue_count: h.queue_count,
            length: h.length,
        },
    };
    let admit = policy::admit(req, existing, lim).map_err(|code| {
        let why = match code {
            RejectCode::TooLarge => "not enough memory left in the pool",
            RejectCode::TooManyClients => "--max-clients reached",
            RejectCode::QueueMismatch => "queue_count differs from the live queues",
            RejectCode::BadRequest if req.queue_count > lim.max_queues => {
                "queue_count above --max-queues"
            }
            _ => "size differs from the client's region, or invalid queue",
        };
        Refusal::new(code, why)
    })?;
    Ok((Admitted { admit, ownership }, device))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::req;
    use crate::policy::PAGE;
    use crate::wire::RejectReason;

    const MIB: u64 = 1 << 20;

    fn lim() -> Limits {
        Limits {
            clients: 0,
            max_clients: 4,
            max_queues: 8,
            remaining: 64 * MIB,
            unit: PAGE,
        }
    }

    fn held(owner: Option<u64>, live: bool) -> Held {
        Held {
            owner,
            other_device: false,
            live,
            queue_count: 2,
            length: 4 * MIB,
        }
    }

    fn refused(r: Result<(Admitted, ()), Refusal>) -> (RejectCode, String) {
        let r = r.expect_err("admitted");
        assert_eq!(r.version, wire::VERSION);
        assert!(r.authenticated, "{r:?}");
        (r.code, r.why.into_owned())
    }

    /// Bytes whose header says protocol version 1 (a version-1 reject, encoded).
    fn version_1_bytes() -> [u8; RejectReason::SIZE] {
        let mut v1 = [0u8; RejectReason::SIZE];
        RejectReason {
            code: RejectCode::TooLarge,
            max_size: 0,
        }
        .encode_as(VERSION_1, &mut v1);
        v1
    }

    #[test]
    fn parse_answers_version_1_in_version_1() {
        let v1 = version_1_bytes();
        let r = parse(&v1).expect_err("a version-1 request parsed");
        assert_eq!((r.version, r.code), (VERSION_1, RejectCode::BadVersion));
        assert!(r.why.starts_with("protocol version 1"), "{}", r.why);
    }

    #[test]
    fn parse_maps_each_decoding_error() {
        let mut good = [0u8; ConnectRequest::SIZE];
        req(MIB, 0, 1).encode(&mut good);
        assert_eq!(parse(&good), Ok(req(MIB, 0, 1)));
        let mut bad_version = good;
        bad_version[4] = 9;
        let mut bad_magic = good;
        bad_magic[0] ^= 1;
        let mut bad_field = good;
        bad_field[20] = 2; // an unknown flag
        for (data, code, why) in [
            (
                &bad_version[..],
                RejectCode::BadVersion,
                "unknown protocol version",
            ),
            (&bad_magic[..], RejectCode::BadRequest, "bad magic"),
            (
                &good[..10],
                RejectCode::BadRequest,
                "private data too short",
            ),
            (&[][..], RejectCode::BadRequest, "private data too short"),
            (&bad_field[..], RejectCode::BadRequest, "invalid field"),
        ] {
            assert_eq!(parse(data), Err(Refusal::new(code, why)), "{why}");
        }
    }

    /// Only a request past authentication learns what the pool has left: every
    /// refusal before it (version, fields, pending connects) is marked as to an
    /// unauthenticated peer, every one of `admit` as to an authenticated one.
    #[test]
    fn only_refusals_after_authentication_show_the_pool() {
        let v1 = version_1_bytes();
        let mut bad_version = [0u8; ConnectRequest::SIZE];
        req(MIB, 0, 1).encode(&mut bad_version);
        bad_version[4] = 9;
        for data in [&v1[..], &bad_version[..], &[][..], &[0x52; 56][..]] {
            let r = parse(data).expect_err("parsed");
            assert!(!r.authenticated, "{r:?}");
        }
        assert!(!too_many_pending(3).authenticated);
        assert!(!Refusal::new(RejectCode::AuthFailed, "wrong proof").authenticated);
        let full = Limits {
            remaining: MIB,
            ..lim()
        };
        let r = admit(&req(2 * MIB, 0, 1), 1, None, Some(()), full).expect_err("admitted");
        assert_eq!(r.code, RejectCode::TooLarge);
        assert!(r.authenticated);
    }

    #[test]
    fn pending_cap_names_the_count() {
        let r = too_many_pending(64);
        assert_eq!(r.code, RejectCode::TooManyClients);
        assert_eq!(
            r.why,
            "--max-pending-per-source reached: 64 connects from this address not established yet"
        );
    }

    #[test]
    fn another_instance_is_refused_naming_both() {
        let r = admit(
            &req(4 * MIB, 0, 2),
            9,
            Some(&held(Some(5), true)),
            Some(()),
            lim(),
        )
        .expect_err("another instance admitted");
        assert_eq!(r.code, RejectCode::InUse);
        assert_eq!(r.why, "region held by another instance of this client id");
        assert_eq!(
            r.detail,
            [("instance", "9".to_string()), ("owner", "5".to_string())]
        );
        // Before the device is looked at.
        let r = admit(
            &req(4 * MIB, 0, 2),
            9,
            Some(&held(Some(5), false)),
            None::<()>,
            lim(),
        );
        assert_eq!(r.map_err(|r| r.code), Err(RejectCode::InUse));
    }

    #[test]
    fn the_device_must_be_there_and_the_region_on_it() {
        let r = admit(&req(MIB, 0, 1), 1, None, None::<()>, lim());
        assert_eq!(
            refused(r),
            (
                RejectCode::BadRequest,
                "no RDMA device for the connection".into()
            )
        );
        let other = Held {
            other_device: true,
            ..held(Some(1), true)
        };
        let r = admit(&req(4 * MIB, 0, 2), 1, Some(&other), Some(()), lim());
        assert_eq!(
            refused(r),
            (RejectCode::BadRequest, "region is on another device".into())
        );
    }

    #[test]
    fn the_pool_rules_with_their_words() {
        let full = Limits {
            remaining: MIB,
            ..lim()
        };
        let crowded = Limits {
            clients: 4,
            ..lim()
        };
        for (r, code, why) in [
            (
                admit(&req(2 * MIB, 0, 1), 1, None, Some(()), full),
                RejectCode::TooLarge,
                "not enough memory left in the pool",
            ),
            (
                admit(&req(MIB, 0, 1), 1, None, Some(()), crowded),
                RejectCode::TooManyClients,
                "--max-clients reached",
            ),
            (
                admit(
                    &req(4 * MIB, 0, 3),
                    1,
                    Some(&held(Some(1), true)),
                    Some(()),
                    lim(),
                ),
                RejectCode::QueueMismatch,
                "queue_count differs from the live queues",
            ),
            (
                admit(&req(MIB, 0, 9), 1, None, Some(()), lim()),
                RejectCode::BadRequest,
                "queue_count above --max-queues",
            ),
            (
                admit(
                    &req(MIB, 0, 2),
                    1,
                    Some(&held(Some(1), false)),
                    Some(()),
                    lim(),
                ),
                RejectCode::BadRequest,
                "size differs from the client's region, or invalid queue",
            ),
            (
                admit(&req(0, 0, 1), 1, None, Some(()), lim()),
                RejectCode::BadRequest,
                "size differs from the client's region, or invalid queue",
            ),
        ] {
            assert_eq!(refused(r), (code, why.into()), "{why}");
        }
    }

    #[test]
    fn admitted_requests() {
        // A restored region of unknown owner: the first instance admitted claims it.
        for (r, instance, held, want, ownership) in [
            (
                req(MIB + 1, 0, 1),
                1,
                None,
                Admit::NewRegion {
                    length: MIB + PAGE,
                    charge: MIB + PAGE,
                },
                Ownership::NoRegion,
            ),
            (
                req(4 * MIB, 1, 2),
                1,
                Some(held(Some(1), true)),
                Admit::JoinLive,
                Ownership::Owner,
            ),
            (
                req(4 * MIB, 0, 2),
                3,
                Some(held(None, false)),
                Admit::Revive,
                Ownership::Claim,
            ),
        ] {
            let got = admit(&r, instance, held.as_ref(), Some(()), lim());
            let want = Admitted {
                admit: want,
                ownership,
            };
            assert_eq!(got, Ok((want, ())), "{r:?}");
        }
    }
}
