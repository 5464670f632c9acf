// SPDX-License-Identifier: GPL-2.0

//! Admission of a connect request: pure decisions, no resources (unit-tested).

use crate::size::round_up;
use crate::wire::{ConnectRequest, RejectCode};

/// Regions are handed out in whole 4 KiB pages.
pub(crate) const PAGE: u64 = 4096;

/// What the server already holds for the requesting client id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Existing {
    /// Nothing: a new client.
    None,
    /// A region with at least one live queue.
    Live {
        /// The `queue_count` of the live queues.
        queue_count: u16,
        /// The region's length.
        length: u64,
    },
    /// A region whose queues are all gone, inside its grace period.
    Grace {
        /// The region's length.
        length: u64,
    },
}

/// What to do with an admitted request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Allocate a new region of `length` bytes, charging `charge` bytes to the pool.
    NewRegion {
        /// Region length (requested size rounded up to 4 KiB).
        length: u64,
        /// Bytes taken from the pool (length rounded up to the allocation unit).
        charge: u64,
    },
    /// Another queue of a live client: share its region.
    JoinLive,
    /// The first queue back within the grace period: same region, epoch + 1.
    Revive,
}

/// Pool and limits the decision depends on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Clients holding a region now (live or in grace).
    pub(crate) clients: usize,
    /// `--max-clients`.
    pub(crate) max_clients: usize,
    /// `--max-queues`: the largest `queue_count` a request may announce.
    pub(crate) max_queues: u16,
    /// Pool bytes not yet handed out.
    pub(crate) remaining: u64,
    /// Allocation unit (4 KiB, or the hugepage size).
    pub(crate) unit: u64,
}

impl Limits {
    /// The largest region that could be handed out now (the reject's `max_size`).
    pub(crate) fn max_size(&self) -> u64 {
        let unit = self.unit.max(PAGE);
        self.remaining / unit * unit
    }
}

/// Who holds the region of the requesting client id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    /// The client id has no region (none live, none in its grace period).
    Nobody,
    /// A region whose owner is not known: restored from metadata written before
    /// instances were recorded.
    Unknown,
    /// A region owned by this instance.
    Instance(u64),
}

/// How a request's instance stands to the region of its client id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ownership {
    /// No region: a region made for the request is the instance's.
    NoRegion,
    /// The region is the instance's.
    Owner,
    /// The region's owner is unknown: the instance claims it once admitted.
    Claim,
}

/// Decides whether `instance` may reach the region `holder` holds: only its owner
/// may, and while the region exists (live, or in its grace period) any other
/// instance of the client id is refused with `InUse`. Checked before anything of the
/// region is touched.
pub(crate) fn ownership(holder: Holder, instance: u64) -> Result<Ownership, RejectCode> {
    match holder {
        Holder::Nobody => Ok(Ownership::NoRegion),
        Holder::Unknown => Ok(Ownership::Claim),
        Holder::Instance(owner) if owner == instance => Ok(Ownership::Owner),
        Holder::Instance(_) => Err(RejectCode::InUse),
    }
}

/// Decides on `req` given what exists for its client id.
pub(crate) fn admit(
    req: &ConnectRequest,
    existing: Existing,
    lim: Limits,
) -> Result<Admit, RejectCode> {
    if req.requested_size == 0 || req.queue_count == 0 || req.queue_index >= req.queue_count {
        return Err(RejectCode::BadRequest);
    }
    // Checked for every client, known or not: a client cannot raise its count
    // past the cap by reconnecting within its grace period.
    if req.queue_count > lim.max_queues {
        return Err(RejectCode::BadRequest);
    }
    let length = round_up(req.requested_size, PAGE);
    match existing {
        Existing::Live {
            queue_count,
            length: have,
        } => {
            if req.queue_count != queue_count {
                Err(RejectCode::QueueMismatch)
            } else if length != Some(have) {
                Err(RejectCode::BadRequest)
            } else {
                Ok(Admit::JoinLive)
            }
        }
        Existing::Grace { length: have } => {
            if length == Some(have) {
                Ok(Admit::Revive)
            } else {
                Err(RejectCode::BadRequest)
            }
        }
        Existing::None => {
            if lim.clients >= lim.max_clients {
                return Err(RejectCode::TooManyClients);
            }
            let length = length.ok_or(RejectCode::TooLarge)?;
            let charge = round_up(length, lim.unit.max(PAGE)).ok_or(RejectCode::TooLarge)?;
            if charge > lim.remaining {
                return Err(RejectCode::TooLarge);
            }
            Ok(Admit::NewRegion { length, charge })
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// A request of client 7, instance 1, without authentication.
    pub(crate) fn req(size: u64, index: u16, count: u16) -> ConnectRequest {
        ConnectRequest {
            client_id: 7,
            queue_index: index,
            queue_count: count,
            requested_size: size,
            reply_descriptor: false,
            auth: crate::wire::Auth::None { instance: 1 },
        }
    }

    #[test]
    fn one_owner_per_region() {
        assert_eq!(ownership(Holder::Nobody, 5), Ok(Ownership::NoRegion));
        assert_eq!(ownership(Holder::Instance(5), 5), Ok(Ownership::Owner));
        assert_eq!(ownership(Holder::Instance(5), 6), Err(RejectCode::InUse));
        assert_eq!(ownership(Holder::Instance(0), 1), Err(RejectCode::InUse));
        assert_eq!(
            ownership(Holder::Instance(u64::MAX), 0),
            Err(RejectCode::InUse)
        );
        // A region restored from old metadata goes to the first instance admitted.
        assert_eq!(ownership(Holder::Unknown, 6), Ok(Ownership::Claim));
        assert_eq!(ownership(Holder::Unknown, 0), Ok(Ownership::Claim));
    }

    fn lim(remaining: u64) -> Limits {
        Limits {
            clients: 0,
            max_clients: 4,
            max_queues: 8,
            remaining,
            unit: PAGE,
        }
    }

    #[test]
    fn new_region_rounds_to_pages() {
        assert_eq!(
            admit(&req(1, 0, 1), Existing::None, lim(MIB)),
            Ok(Admit::NewRegion {
                length: 4096,
                charge: 4096
            })
        );
        assert_eq!(
            admit(&req(4 * MIB, 1, 2), Existing::None, lim(4 * MIB)),
            Ok(Admit::NewRegion {
                length: 4 * MIB,
                charge: 4 * MIB
            })
        );
    }

    #[test]
    fn too_large_and_max_size() {
        let l = lim(4 * MIB);
        assert_eq!(
            admit(&req(4 * MIB + 1, 0, 1), Existing::None, l),
            Err(RejectCode::TooLarge)
        );
        assert_eq!(
            admit(&req(u64::MAX, 0, 1), Existing::None, l),
            Err(RejectCode::TooLarge)
        );
        assert_eq!(l.max_size(), 4 * MIB);
        let huge = Limits {
            unit: 2 * MIB,
            remaining: 5 * MIB,
            ..l
        };
        assert_eq!(huge.max_size(), 4 * MIB);
        // 1 MiB asked, but a 2 MiB hugepage is charged.
        assert_eq!(
            admit(&req(MIB, 0, 1), Existing::None, huge),
            Ok(Admit::NewRegion {
                length: MIB,
                charge: 2 * MIB
            })
        );
        assert_eq!(
            admit(&req(5 * MIB, 0, 1), Existing::None, huge),
            Err(RejectCode::TooLarge)
        );
    }

    #[test]
    fn bad_requests() {
        assert_eq!(
            admit(&req(0, 0, 1), Existing::None, lim(MIB)),
            Err(RejectCode::BadRequest)
        );
        assert_eq!(
            admit(&req(4096, 1, 1), Existing::None, lim(MIB)),
            Err(RejectCode::BadRequest)
        );
        assert_eq!(
            admit(&req(4096, 0, 0), Existing::None, lim(MIB)),
            Err(RejectCode::BadRequest)
        );
    }

    #[test]
    fn queue_count_capped() {
        let grace = Existing::Grace { length: MIB };
        let live = Existing::Live {
            queue_count: 8,
            length: MIB,
        };
        for existing in [Existing::None, grace, live] {
            assert_eq!(
                admit(&req(MIB, 0, 9), existing, lim(MIB)),
                Err(RejectCode::BadRequest),
                "{existing:?}"
            );
            assert_eq!(
                admit(&req(MIB, 8, 9), existing, lim(MIB)),
                Err(RejectCode::BadRequest),
                "{existing:?}"
            );
            assert!(
                admit(&req(MIB, 7, 8), existing, lim(MIB)).is_ok(),
                "{existing:?}"
            );
        }
        let wide = Limits {
            max_queues: u16::MAX,
            ..lim(MIB)
        };
        assert!(admit(&req(MIB, u16::MAX - 1, u16::MAX), Existing::None, wide).is_ok());
    }

    #[test]
    fn too_many_clients() {
        let l = Limits {
            clients: 4,
            ..lim(MIB)
        };
        assert_eq!(
            admit(&req(4096, 0, 1), Existing::None, l),
            Err(RejectCode::TooManyClients)
        );
        // Existing clients are not counted against themselves.
        let live = Existing::Live {
            queue_count: 1,
            length: 4096,
        };
        assert_eq!(admit(&req(4096, 0, 1), live, l), Ok(Admit::JoinLive));
    }

    #[test]
    fn live_queues_must_agree() {
        let live = Existing::Live {
            queue_count: 2,
            length: MIB,
        };
        assert_eq!(admit(&req(MIB, 1, 2), live, lim(0)), Ok(Admit::JoinLive));
        assert_eq!(
            admit(&req(MIB, 0, 3), live, lim(0)),
            Err(RejectCode::QueueMismatch)
        );
        assert_eq!(
            admit(&req(2 * MIB, 1, 2), live, lim(0)),
            Err(RejectCode::BadRequest)
        );
        // Within the page rounding the size still matches.
        assert_eq!(
            admit(&req(MIB - 100, 1, 2), live, lim(0)),
            Ok(Admit::JoinLive)
        );
    }

    #[test]
    fn grace_revives_same_size_only() {
        let grace = Existing::Grace { length: MIB };
        // A reconnect may change its queue count: no queue of it is live.
        assert_eq!(admit(&req(MIB, 0, 4), grace, lim(0)), Ok(Admit::Revive));
        assert_eq!(
            admit(&req(2 * MIB, 0, 1), grace, lim(0)),
            Err(RejectCode::BadRequest)
        );
    }
}
