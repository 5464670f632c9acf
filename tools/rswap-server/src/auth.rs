// SPDX-License-Identifier: GPL-2.0

//! Authentication of connect requests (wire version 2): what the server answers a
//! hello, a proof or a request without authentication, before anything about
//! regions is looked at.
//!
//! - A hello (kind 1) from a listed client id and an allowed address gets a
//!   challenge: a random server nonce, remembered with the hello ([`Challenges`]).
//! - A proof (kind 2) that names a fresh challenge, matches its hello, comes from
//!   the hello's address and carries the right MAC uses the challenge up and is
//!   admitted as the hello's instance, with what the server needs to prove itself
//!   ([`Proven`]). A proof that fails any of these leaves the challenge to its owner.
//! - A request without authentication (kind 3) is admitted only by a server started
//!   with `--insecure`, and never for a client id that has a secret.
//!
//! Pure but for the random source it is given: unit-tested without RDMA.

use std::net::IpAddr;
use std::time::Instant;

use crate::allowlist::AllowList;
use crate::challenge::{Challenge, Challenges, Taken};
use crate::crypto::{self, Proven};
use crate::wire::{self, Auth, ConnectRequest, RejectCode};

/// How often a server nonce that collides with an outstanding one is drawn again.
const NONCE_DRAWS: usize = 4;

/// What to do with a connect request, as far as authentication goes.
#[derive(Debug, Clone)]
pub(crate) enum Decision {
    /// Answer the hello with a challenge of this server nonce (a reject with
    /// reason 7); `evicted` older challenges made room for it.
    Challenge {
        /// The nonce to send.
        server_nonce: u64,
        /// How many outstanding challenges were evicted for it.
        evicted: usize,
    },
    /// Go on to admission as `instance`.
    Admit {
        /// The instance the request speaks for (the hello's, for a proof).
        instance: u64,
        /// For a proven client: what the server's proof in the descriptor needs.
        proven: Option<Proven>,
    },
    /// Refuse with `code`; `why` for the log.
    Refuse {
        /// The reject's reason.
        code: RejectCode,
        /// Why, for the log (never a secret).
        why: &'static str,
    },
}

/// `why=` of an unknown client id's hello.
pub(crate) const WHY_NOT_LISTED: &str = "client id not in the allow-list";

/// The name of a request's kind of authentication, for logs.
pub(crate) fn kind_name(auth: &Auth) -> &'static str {
    match auth {
        Auth::Hello { .. } => "hello",
        Auth::Proof { .. } => "proof",
        Auth::None { .. } => "none",
    }
}

/// The server's authentication state: the allow-list, whether clients without a
/// secret are admitted, and the outstanding challenges.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    allow: AllowList,
    insecure: bool,
    challenges: Challenges,
}

impl Gate {
    /// A gate for `allow`; `insecure` admits clients without a secret that are not in
    /// it.
    pub(crate) fn new(allow: AllowList, insecure: bool) -> Self {
        Self {
            allow,
            insecure,
            challenges: Challenges::default(),
        }
    }

    /// The allow-list.
    pub(crate) fn allow(&self) -> &AllowList {
        &self.allow
    }

    /// Replaces the allow-list (a reload): every check from now on, also of a proof
    /// whose hello came before, uses `allow`. Outstanding challenges are kept: the
    /// proof of one whose client id is no longer listed is refused, and one whose
    /// secret changed must be made with the new secret.
    pub(crate) fn set_allow(&mut self, allow: AllowList) {
        self.allow = allow;
    }

    /// How many challenges are outstanding.
    pub(crate) fn outstanding(&self) -> usize {
        self.challenges.len()
    }

    /// Decides on `req` from `peer` at `now`; `random` draws server nonces (an error:
    /// no randomness, and the request is refused).
    pub(crate) fn check<E>(
        &mut self,
        req: &ConnectRequest,
        peer: Option<IpAddr>,
        now: Instant,
        mut random: impl FnMut() -> Result<u64, E>,
    ) -> Decision {
        let refuse = |code, why| Decision::Refuse { code, why };
        match req.auth {
            Auth::Hello {
                client_nonce,
                instance,
            } => {
                // Also with --insecure: a client with a secret wants the server to prove
                // itself, which it cannot without the secret.
                let Some(entry) = self.allow.get(req.client_id) else {
                    return refuse(RejectCode::AuthFailed, WHY_NOT_LISTED);
                };
                if !entry.admits(peer) {
                    return refuse(
                        RejectCode::AuthFailed,
                        "source address not allowed for this client id",
                    );
                }
                let challenge = Challenge {
                    client_id: req.client_id,
                    queue_index: req.queue_index,
                    queue_count: req.queue_count,
                    requested_size: req.requested_size,
                    client_nonce,
                    instance,
                    peer,
                    issued: now,
                };
                for _ in 0..NONCE_DRAWS {
                    let Ok(server_nonce) = random() else {
                        return refuse(
                            RejectCode::NoMemory,
                            "no random numbers for a challenge (getrandom failed)",
                        );
                    };
                    if let Ok(evicted) = self.challenges.issue(server_nonce, challenge.clone()) {
                        return Decision::Challenge {
                            server_nonce,
                            evicted,
                        };
                    }
                }
                refuse(
                    RejectCode::NoMemory,
                    "the random source repeats itself (server nonces collide)",
                )
            }
            Auth::Proof { server_nonce, mac } => {
                // Looked up, not taken: only a proof that passes every check below
                // uses the challenge up, so that one naming the owner's nonce (sent in
                // clear) from elsewhere, or with a wrong MAC, cannot spend it.
                let c = match self.challenges.lookup(server_nonce, now) {
                    Taken::Valid(c) => c,
                    Taken::Expired => {
                        return refuse(RejectCode::AuthFailed, "challenge expired");
                    }
                    Taken::Unknown => {
                        return refuse(
                            RejectCode::AuthFailed,
                            "unknown challenge (never issued, already used or evicted)",
                        );
                    }
                };
                if (c.client_id, c.queue_index, c.queue_count, c.requested_size)
                    != (
                        req.client_id,
                        req.queue_index,
                        req.queue_count,
                        req.requested_size,
                    )
                {
                    return refuse(
                        RejectCode::BadRequest,
                        "proof differs from its hello (client id, queue, queue count or size)",
                    );
                }
                if c.peer != peer {
                    return refuse(
                        RejectCode::AuthFailed,
                        "proof from another address than its hello",
                    );
                }
                let Some(entry) = self.allow.get(c.client_id) else {
                    return refuse(RejectCode::AuthFailed, WHY_NOT_LISTED);
                };
                let want = crypto::client_mac(
                    &entry.secret,
                    req,
                    c.instance,
                    &c.client_nonce,
                    server_nonce,
                );
                if !wire::mac_eq(&want, &mac) {
                    return refuse(RejectCode::AuthFailed, "wrong proof");
                }
                self.challenges.take(server_nonce, now);
                Decision::Admit {
                    instance: c.instance,
                    proven: Some(Proven {
                        secret: entry.secret.clone(),
                        client_nonce: c.client_nonce,
                        server_nonce,
                    }),
                }
            }
            Auth::None { instance } => {
                if self.allow.get(req.client_id).is_some() {
                    refuse(
                        RejectCode::AuthRequired,
                        "client id has a secret: a request without authentication is refused",
                    )
                } else if !self.insecure {
                    refuse(
                        RejectCode::AuthRequired,
                        "request without authentication, and the server is not --insecure",
                    )
                } else {
                    Decision::Admit {
                        instance,
                        proven: None,
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::challenge::{LIFETIME, MAX_PER_SOURCE_ID, MAX_TOTAL};
    use crate::crypto::Secret;
    use crate::wire::NONCE_LEN;
    use std::time::Duration;

    const S1: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const CN: [u8; NONCE_LEN] = [9; NONCE_LEN];

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().expect("ip"))
    }

    fn gate(insecure: bool) -> Gate {
        let text = format!("1 {S1}\n2 {S1} 192.0.2.2\n");
        Gate::new(
            AllowList::parse(&text, "allow").expect("allow-list"),
            insecure,
        )
    }

    fn req(client_id: u64, auth: Auth) -> ConnectRequest {
        ConnectRequest {
            client_id,
            queue_index: 1,
            queue_count: 2,
            requested_size: 1 << 20,
            reply_descriptor: false,
            auth,
        }
    }

    fn hello(client_id: u64) -> ConnectRequest {
        req(
            client_id,
            Auth::Hello {
                client_nonce: CN,
                instance: 77,
            },
        )
    }

    /// A counter as the random source.
    fn counter(start: u64) -> impl FnMut() -> Result<u64, ()> {
        let mut n = start;
        move || {
            n += 1;
            Ok(n)
        }
    }

    /// The proof a client with secret S1 sends for `hello` and `server_nonce`.
    fn proof(hello: &ConnectRequest, server_nonce: u64) -> ConnectRequest {
        proof_with(S1, hello, server_nonce)
    }

    /// The proof a client with secret `hex` sends for `hello` and `server_nonce`.
    fn proof_with(hex: &str, hello: &ConnectRequest, server_nonce: u64) -> ConnectRequest {
        let secret = Secret::from_hex(hex).expect("hex");
        let mac = crypto::client_mac(&secret, hello, 77, &CN, server_nonce);
        ConnectRequest {
            auth: Auth::Proof { server_nonce, mac },
            ..*hello
        }
    }

    fn refused(v: &Decision) -> Option<(RejectCode, &'static str)> {
        match v {
            Decision::Refuse { code, why } => Some((*code, why)),
            _ => None,
        }
    }

    fn challenged(v: &Decision) -> u64 {
        match v {
            Decision::Challenge { server_nonce, .. } => *server_nonce,
            other => panic!("{other:?} instead of a challenge"),
        }
    }

    #[test]
    fn hello_proof_admits_with_the_hellos_instance() {
        let t0 = Instant::now();
        let peer = ip("192.0.2.9");
        let mut g = gate(false);
        let h = hello(1);
        let n = challenged(&g.check(&h, peer, t0, counter(100)));
        assert_eq!(n, 101);
        assert_eq!(g.outstanding(), 1);
        let p = proof(&h, n);
        match g.check(&p, peer, t0 + Duration::from_secs(1), counter(0)) {
            Decision::Admit {
                instance,
                proven: Some(pr),
            } => {
                assert_eq!(instance, 77);
                assert_eq!(pr.client_nonce, CN);
                assert_eq!(pr.server_nonce, n);
                assert!(pr.secret.ct_eq(&Secret::from_hex(S1).expect("hex")));
            }
            other => panic!("{other:?}"),
        }
        // The very same proof again: its challenge is used up.
        assert_eq!(
            refused(&g.check(&p, peer, t0, counter(0))).map(|r| r.0),
            Some(RejectCode::AuthFailed)
        );
        assert_eq!(g.outstanding(), 0);
    }

    #[test]
    fn hello_refusals() {
        let t0 = Instant::now();
        for insecure in [false, true] {
            let mut g = gate(insecure);
            // Not listed: AuthFailed even when --insecure.
            assert_eq!(
                refused(&g.check(&hello(3), ip("192.0.2.2"), t0, counter(0))),
                Some((RejectCode::AuthFailed, WHY_NOT_LISTED))
            );
            // Listed with addresses: only from those.
            assert_eq!(
                refused(&g.check(&hello(2), ip("192.0.2.3"), t0, counter(0))).map(|r| r.0),
                Some(RejectCode::AuthFailed)
            );
            assert_eq!(
                refused(&g.check(&hello(2), None, t0, counter(0))).map(|r| r.0),
                Some(RejectCode::AuthFailed)
            );
            challenged(&g.check(&hello(2), ip("::ffff:192.0.2.2"), t0, counter(0)));
            assert_eq!(g.outstanding(), 1);
        }
        // No randomness: refused, nothing remembered.
        let mut g = gate(false);
        let v = g.check(&hello(1), None, t0, || Err::<u64, _>("no entropy"));
        assert_eq!(refused(&v).map(|r| r.0), Some(RejectCode::NoMemory));
        assert_eq!(g.outstanding(), 0);
        // A source that repeats itself: a collision is drawn again, then refused.
        let mut g = gate(false);
        assert_eq!(
            challenged(&g.check(&hello(1), None, t0, || Ok::<_, ()>(5))),
            5
        );
        let v = g.check(&hello(1), None, t0, || Ok::<_, ()>(5));
        assert_eq!(refused(&v).map(|r| r.0), Some(RejectCode::NoMemory));
        let mut draws = [5u64, 5, 6].into_iter();
        let v = g.check(&hello(1), None, t0, || draws.next().ok_or(()));
        assert_eq!(challenged(&v), 6);
    }

    #[test]
    fn proof_refusals() {
        let t0 = Instant::now();
        let peer = ip("192.0.2.9");
        let mut g = gate(true);
        let h = hello(1);
        // Each challenge under a new nonce: those refused proofs leave are still there.
        let nonces = std::cell::Cell::new(1000u64);
        let issue = |g: &mut Gate| {
            nonces.set(nonces.get() + 1);
            challenged(&g.check(&h, peer, t0, counter(nonces.get() - 1)))
        };

        // Unknown nonce.
        let v = g.check(&proof(&h, 4242), peer, t0, counter(0));
        assert_eq!(refused(&v).map(|r| r.0), Some(RejectCode::AuthFailed));
        // Expired: older than the lifetime.
        let n = issue(&mut g);
        let late = t0 + LIFETIME + Duration::from_millis(1);
        assert_eq!(
            refused(&g.check(&proof(&h, n), peer, late, counter(0))),
            Some((RejectCode::AuthFailed, "challenge expired"))
        );
        // Fields differing from the hello's: BadRequest, and the challenge is left to
        // the right proof.
        for other in [
            ConnectRequest { client_id: 2, ..h },
            ConnectRequest {
                queue_index: 0,
                ..h
            },
            ConnectRequest {
                queue_count: 3,
                ..h
            },
            ConnectRequest {
                requested_size: 2 << 20,
                ..h
            },
        ] {
            let n = issue(&mut g);
            let p = proof(&other, n);
            assert_eq!(
                refused(&g.check(&p, peer, t0, counter(0))).map(|r| r.0),
                Some(RejectCode::BadRequest),
                "{other:?}"
            );
            let p = proof(&h, n);
            assert!(
                matches!(
                    g.check(&p, peer, t0, counter(0)),
                    Decision::Admit { instance: 77, .. }
                ),
                "the right proof after {other:?}"
            );
            assert_eq!(
                refused(&g.check(&p, peer, t0, counter(0))).map(|r| r.0),
                Some(RejectCode::AuthFailed),
                "single use"
            );
        }
        // Another source address than the hello's.
        let n = issue(&mut g);
        assert_eq!(
            refused(&g.check(&proof(&h, n), ip("192.0.2.10"), t0, counter(0))),
            Some((
                RejectCode::AuthFailed,
                "proof from another address than its hello"
            ))
        );
        // A wrong MAC (one bit), or a MAC made with another secret or instance.
        let n = issue(&mut g);
        let mut p = proof(&h, n);
        if let Auth::Proof { mac, .. } = &mut p.auth {
            mac[15] ^= 1;
        }
        assert_eq!(
            refused(&g.check(&p, peer, t0, counter(0))),
            Some((RejectCode::AuthFailed, "wrong proof"))
        );
        let n = issue(&mut g);
        let p = proof_with(&"11".repeat(32), &h, n);
        assert_eq!(
            refused(&g.check(&p, peer, t0, counter(0))),
            Some((RejectCode::AuthFailed, "wrong proof"))
        );
        // The challenges of the last three refused proofs are left to the right ones.
        assert_eq!(g.outstanding(), 3);
    }

    /// Whoever saw the owner's challenge go by (its nonce travels in clear) sends
    /// proofs naming it: from another address, from the owner's address with a wrong
    /// MAC, with other fields. Each is refused, and the owner's proof is admitted.
    #[test]
    fn a_proof_that_fails_does_not_spend_the_owners_challenge() {
        let t0 = Instant::now();
        let (a, b) = (ip("198.51.100.1"), ip("198.51.100.2"));
        let mut g = gate(false);
        let h = hello(1);
        let n = challenged(&g.check(&h, a, t0, counter(0)));
        let forge = |r: &ConnectRequest| ConnectRequest {
            auth: Auth::Proof {
                server_nonce: n,
                mac: [0x5a; wire::CLIENT_MAC_LEN],
            },
            ..*r
        };
        let forged = [
            (forge(&h), b, RejectCode::AuthFailed),
            (forge(&h), a, RejectCode::AuthFailed),
            (proof(&h, n), b, RejectCode::AuthFailed),
            (
                forge(&ConnectRequest { client_id: 2, ..h }),
                b,
                RejectCode::BadRequest,
            ),
            (
                forge(&ConnectRequest {
                    requested_size: 2 << 20,
                    ..h
                }),
                a,
                RejectCode::BadRequest,
            ),
        ];
        for (p, from, code) in &forged {
            let v = g.check(p, *from, t0, counter(0));
            assert_eq!(refused(&v).map(|r| r.0), Some(*code), "{p:?} from {from:?}");
            assert_eq!(g.outstanding(), 1, "{p:?} spent the owner's challenge");
        }
        match g.check(&proof(&h, n), a, t0 + Duration::from_secs(1), counter(0)) {
            Decision::Admit {
                instance: 77,
                proven: Some(_),
            } => {}
            other => panic!("the owner's proof after forged ones: {other:?}"),
        }
        // The proof that passed used it up.
        assert_eq!(g.outstanding(), 0);
        assert_eq!(
            refused(&g.check(&proof(&h, n), a, t0, counter(0))).map(|r| r.0),
            Some(RejectCode::AuthFailed)
        );
    }

    /// A reload: a removed client id is refused from its next hello on, and a proof for
    /// a challenge issued before the reload is checked against the new secret.
    #[test]
    fn a_new_allow_list_applies_to_the_next_request() {
        let t0 = Instant::now();
        let peer = ip("192.0.2.9");
        let mut g = gate(false);
        let h = hello(1);
        let n = challenged(&g.check(&h, peer, t0, counter(0)));
        let s2 = "11".repeat(32);
        let rotated = format!("1 {s2}\n3 {S1}\n");
        g.set_allow(AllowList::parse(&rotated, "allow").expect("allow-list"));
        // The old secret's proof is wrong now; the new one's is right.
        assert_eq!(
            refused(&g.check(&proof(&h, n), peer, t0, counter(0))),
            Some((RejectCode::AuthFailed, "wrong proof"))
        );
        assert!(matches!(
            g.check(&proof_with(&s2, &h, n), peer, t0, counter(0)),
            Decision::Admit { instance: 77, .. }
        ));
        // Client 2 is gone, client 3 is new.
        assert_eq!(
            refused(&g.check(&hello(2), ip("192.0.2.2"), t0, counter(10))),
            Some((RejectCode::AuthFailed, WHY_NOT_LISTED))
        );
        challenged(&g.check(&hello(3), peer, t0, counter(20)));
        assert_eq!(g.allow().len(), 2);
    }

    #[test]
    fn flood_of_hellos_is_bounded() {
        let t0 = Instant::now();
        let mut g = gate(false);
        let mut rng = counter(0);
        for _ in 0..10 * MAX_PER_SOURCE_ID {
            challenged(&g.check(&hello(1), None, t0, &mut rng));
        }
        assert_eq!(g.outstanding(), MAX_PER_SOURCE_ID);
    }

    /// The owner's hello from A; a flood of hellos from B; the owner's proof.
    fn owner_admitted_after_flood(flood: impl Fn(u64) -> ConnectRequest) {
        let t0 = Instant::now();
        let (a, b) = (ip("198.51.100.1"), ip("198.51.100.2"));
        let mut g = gate(false);
        let mut rng = counter(0);
        let h = hello(1);
        let n = challenged(&g.check(&h, a, t0, &mut rng));
        for i in 0..10_000u64 {
            let at = t0 + Duration::from_micros(i);
            let _ = g.check(&flood(i), b, at, &mut rng);
            assert!(g.outstanding() <= MAX_TOTAL);
        }
        assert!(g.outstanding() <= 1 + MAX_PER_SOURCE_ID);
        match g.check(&proof(&h, n), a, t0 + Duration::from_secs(1), counter(0)) {
            Decision::Admit {
                instance: 77,
                proven: Some(_),
            } => {}
            other => panic!("the owner's proof after the flood: {other:?}"),
        }
    }

    #[test]
    fn flood_of_the_owners_id_from_another_address_does_not_lock_it_out() {
        // Client 1 has no address restriction: B's hellos are all challenged.
        owner_admitted_after_flood(|_| hello(1));
    }

    #[test]
    fn flood_of_random_ids_from_another_address_does_not_lock_it_out() {
        // Unlisted ids are refused before any challenge is issued.
        owner_admitted_after_flood(|i| hello(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 4));
    }

    #[test]
    fn without_authentication() {
        let t0 = Instant::now();
        let none = |id| req(id, Auth::None { instance: 5 });
        // Not --insecure: nobody.
        let mut g = gate(false);
        for id in [1, 3] {
            assert_eq!(
                refused(&g.check(&none(id), None, t0, counter(0))).map(|r| r.0),
                Some(RejectCode::AuthRequired)
            );
        }
        // --insecure: unlisted ids only.
        let mut g = gate(true);
        assert_eq!(
            refused(&g.check(&none(1), None, t0, counter(0))).map(|r| r.0),
            Some(RejectCode::AuthRequired)
        );
        match g.check(&none(3), None, t0, counter(0)) {
            Decision::Admit {
                instance: 5,
                proven: None,
            } => {}
            other => panic!("{other:?}"),
        }
        // --insecure without an allow-list.
        let mut g = Gate::new(AllowList::default(), true);
        assert!(matches!(
            g.check(&none(1), None, t0, counter(0)),
            Decision::Admit { instance: 5, .. }
        ));
        assert_eq!(
            refused(&g.check(&hello(1), None, t0, counter(0))).map(|r| r.0),
            Some(RejectCode::AuthFailed)
        );
    }
}
