// SPDX-License-Identifier: GPL-2.0

//! The handshake of a queue, as the server carries it out: a connect request is
//! admitted (`admission.rs`), challenged or rejected; an admitted one gets its region
//! and a QP and is accepted; its descriptor, signed, goes with the accept if the client
//! asked for that (iWARP: MPA lets the initiator send first), else in a SEND once the
//! connection is established.

use super::*;

/// RNR retries of the descriptor SEND: a client that has not posted its receive
/// gets a few retries, then the send fails and the queue is closed.
const RNR_RETRY: u8 = 6;

/// `desc` as queue of `client_id` is sent it: with the server's proof for a proven
/// client (made with a wrong key if `wrong_key`, for `--test-wrong-server-proof`),
/// unsigned (zeros) for the others. `proven` is dropped, and its secret wiped, here.
fn sign_descriptor(
    proven: Option<Proven>,
    wrong_key: bool,
    client_id: u64,
    desc: RegionDescriptor,
) -> RegionDescriptor {
    match proven {
        Some(p) if wrong_key => p.with_wrong_key().sign(client_id, desc),
        Some(p) => p.sign(client_id, desc),
        None => desc,
    }
}

impl Server {
    /// Answers with `refusal` (see `admission.rs`).
    fn refuse(&mut self, id: CmId, req: Option<&ConnectRequest>, refusal: Refusal) {
        let Refusal {
            version,
            code,
            why,
            detail,
            authenticated,
        } = refusal;
        self.reject_as(id, version, code, authenticated, req, &why, &detail);
    }

    /// Rejects a request that got past authentication.
    fn reject(&mut self, id: CmId, code: RejectCode, req: &ConnectRequest, why: &str) {
        self.reject_as(id, wire::VERSION, code, true, Some(req), why, &[]);
    }

    /// Whether the log line of an unauthenticated connect request may be logged now
    /// (`Some`: with how many were dropped before it; see `ratelimit.rs`).
    fn connect_log(&mut self) -> Option<u64> {
        self.connect_log.admit(Instant::now())
    }

    /// Rejects with `code` in a reject of protocol `version`, and logs it with `why`
    /// and `detail` (never a secret). Only a request that got past authentication
    /// (`authenticated`) learns what the pool has left; the log lines of the others
    /// are rate-limited.
    #[expect(
        clippy::too_many_arguments,
        reason = "the reject's fields and the log line's, passed through"
    )]
    fn reject_as(
        &mut self,
        mut id: CmId,
        version: u16,
        code: RejectCode,
        authenticated: bool,
        req: Option<&ConnectRequest>,
        why: &str,
        detail: &[(&str, String)],
    ) {
        // What the pool has left is nobody's business until they authenticated.
        let max_size = if authenticated {
            self.limits().max_size()
        } else {
            0
        };
        let mut buf = [0u8; RejectReason::SIZE];
        RejectReason { code, max_size }.encode_as(version, &mut buf);
        let sent = id.reject(&buf);
        self.counters.rejected(code);
        let suppressed = if authenticated {
            Some(0)
        } else {
            self.connect_log()
        };
        let Some(suppressed) = suppressed else {
            return;
        };
        let mut line = log::warn("connect_rejected")
            .kv("peer", id.peer())
            .kv("reason", code.name())
            .kv("max_size", max_size)
            .kv("why", why);
        if let Some(r) = req {
            line = line
                .kv("client_id", r.client_id)
                .kv("queue", r.queue_index)
                .kv("queue_count", r.queue_count)
                .kv("requested", r.requested_size)
                .kv("auth", auth::kind_name(&r.auth));
        }
        for (k, v) in detail {
            line = line.kv(k, v);
        }
        if let Err(e) = sent {
            line = line.kv("error", e);
        }
        if suppressed > 0 {
            line = line.kv("suppressed", suppressed);
        }
        line.emit();
        // Dropping the id destroys it.
    }

    /// Answers a hello with a challenge: a reject carrying the server nonce. No QP is
    /// made and nothing of any region is sent.
    fn challenge(&mut self, mut id: CmId, req: &ConnectRequest, server_nonce: u64, evicted: usize) {
        let mut buf = [0u8; Reject::SIZE];
        Reject::encode_challenge(server_nonce, &mut buf);
        let sent = id.reject(&buf);
        self.counters.challenges += 1;
        let Some(suppressed) = self.connect_log() else {
            return;
        };
        let mut line = log::info("auth_challenge")
            .kv("peer", id.peer())
            .kv("client_id", req.client_id)
            .kv("queue", req.queue_index)
            .kv("queue_count", req.queue_count)
            .kv("requested", req.requested_size);
        if let wire::Auth::Hello { instance, .. } = req.auth {
            line = line.kv("instance", instance);
        }
        line = line.kv("outstanding", self.gate.outstanding());
        if evicted > 0 {
            line = line.kv("evicted", evicted);
        }
        if let Err(e) = sent {
            line = line.kv("error", e);
        }
        if suppressed > 0 {
            line = line.kv("suppressed", suppressed);
        }
        line.emit();
    }

    pub(super) fn on_connect_request(&mut self, id: CmId, ev: &Event) {
        let key = id.key();
        self.connect_request(id, ev);
        // Every path that did not make the connection a queue has rejected or
        // destroyed it by now: it is not pending any more. A queue stays pending
        // until ESTABLISHED (on_established) or until it is dropped (drop_queue).
        if !self.queues.contains_key(&key) {
            self.pending.end(&key);
        }
    }

    fn connect_request(&mut self, mut id: CmId, ev: &Event) {
        let req = match admission::parse(&ev.private_data) {
            Ok(r) => r,
            Err(r) => return self.refuse(id, None, r),
        };
        // Before anything is allocated for the request.
        if let Err(at) = self.pending.start(id.key(), id.peer_ip()) {
            return self.refuse(id, Some(&req), admission::too_many_pending(at.pending));
        }
        // Authentication, before anything about regions is looked at.
        let (instance, mut proven) =
            match self
                .gate
                .check(&req, id.peer_ip(), Instant::now(), crypto::random_u64)
            {
                Decision::Challenge {
                    server_nonce,
                    evicted,
                } => return self.challenge(id, &req, server_nonce, evicted),
                Decision::Refuse { code, why } => {
                    return self.refuse(id, Some(&req), Refusal::new(code, why));
                }
                Decision::Admit { instance, proven } => (instance, proven),
            };
        let device = id.device();
        let held = self.clients.get(&req.client_id).map(|c| Held {
            owner: c.owner,
            other_device: c
                .reg
                .as_ref()
                .zip(device.as_ref())
                .is_some_and(|(r, d)| !d.same(&r.device)),
            live: !c.queues.is_empty(),
            queue_count: c.queue_count,
            length: c.length,
        });
        let held = held.as_ref();
        let (Admitted { admit, ownership }, device) =
            match admission::admit(&req, instance, held, device, self.limits()) {
                Ok(a) => a,
                Err(r) => return self.refuse(id, Some(&req), r),
            };
        match admit {
            Admit::NewRegion { length, charge } => {
                match self.new_client(&req, instance, &device, length, charge) {
                    Ok(c) => {
                        self.used += c.charge;
                        self.counters.regions_allocated += 1;
                        log::info("region_allocated")
                            .kv("client_id", req.client_id)
                            .kv("region_id", c.region_id)
                            .kv("length", c.length)
                            .kv("device", device.name())
                            .kv("pool_left", self.remaining())
                            .emit();
                        if let Some(r) = &c.reg {
                            regions::log_access(req.client_id, c.region_id, &r.region);
                        }
                        self.clients.insert(req.client_id, c);
                    }
                    Err(e) => {
                        return self.reject(id, RejectCode::NoMemory, &req, &e);
                    }
                }
            }
            Admit::Revive => {
                if let Err(e) = self.register_restored(req.client_id, &device) {
                    return self.reject(id, RejectCode::NoMemory, &req, &e);
                }
                if let Some(c) = self.clients.get_mut(&req.client_id) {
                    c.epoch = c.epoch.wrapping_add(1).max(1);
                    c.queue_count = req.queue_count;
                    c.grace_until = None;
                    log::info("region_reused")
                        .kv("client_id", req.client_id)
                        .kv("region_id", c.region_id)
                        .kv("epoch", c.epoch)
                        .emit();
                }
                self.persist(req.client_id);
            }
            Admit::JoinLive => {}
        }
        // A queue index that is still live is a stale connection the client has
        // already given up on: replace it.
        let stale = self
            .clients
            .get(&req.client_id)
            .and_then(|c| c.queues.get(&req.queue_index).copied());
        if let Some(old) = stale {
            self.drop_queue(old, "replaced by a new connection of the same queue", None);
        }
        let Some(pd) = self
            .clients
            .get(&req.client_id)
            .and_then(|c| c.reg.as_ref())
            .map(|r| r.pd.clone())
        else {
            return;
        };
        let peer = id.peer();
        if let Err(e) = id.create_qp(&pd, SERVER_QP) {
            self.reject(id, RejectCode::NoMemory, &req, &format!("queue setup: {e}"));
            self.grace_if_idle(req.client_id);
            return;
        }
        let auth_proof = proven.is_some();
        let mut reply = [0u8; RegionDescriptor::SIZE];
        let mut in_accept = None;
        if req.reply_descriptor {
            let Some(desc) = self.signed_descriptor(req.client_id, &mut proven) else {
                self.reject(id, RejectCode::NoMemory, &req, "region not registered");
                self.grace_if_idle(req.client_id);
                return;
            };
            desc.encode(&mut reply);
            in_accept = Some(desc);
        }
        let private_data = if in_accept.is_some() { &reply[..] } else { &[] };
        if let Err(e) = id.accept(
            ev.initiator_depth,
            ev.responder_resources,
            RNR_RETRY,
            private_data,
        ) {
            log::error("accept_failed")
                .kv("client_id", req.client_id)
                .kv("queue", req.queue_index)
                .kv("peer", &peer)
                .kv("error", e)
                .emit();
            drop(id);
            self.grace_if_idle(req.client_id);
            return;
        }
        let Some(client) = self.clients.get_mut(&req.client_id) else {
            return;
        };
        let key = id.key();
        client.queues.insert(req.queue_index, key);
        client.last_seen = Some(Instant::now());
        let claimed = ownership == Ownership::Claim && client.owner.is_none();
        if claimed {
            client.owner = Some(instance);
            log::info("region_claimed")
                .kv("client_id", req.client_id)
                .kv("region_id", client.region_id)
                .kv("instance", instance)
                .emit();
        }
        self.counters.connects_accepted += 1;
        log::info("queue_accepted")
            .kv("client_id", req.client_id)
            .kv("queue", req.queue_index)
            .kv("queue_count", req.queue_count)
            .kv("region_id", client.region_id)
            .kv("epoch", client.epoch)
            .kv("instance", instance)
            .kv("auth", if auth_proof { "proof" } else { "none" })
            .kv("peer", &peer)
            .emit();
        self.queues.insert(
            key,
            Queue {
                id,
                client_id: req.client_id,
                queue_index: req.queue_index,
                peer,
                send_pending: false,
                probe: Probe::default(),
                proven,
                in_accept,
            },
        );
        if claimed {
            self.persist(req.client_id);
        }
    }

    /// The descriptor of `client_id`'s region as its queue is sent it: signed with
    /// `proven`, which is taken (and its secret wiped) here; `None` if the region is not
    /// registered.
    fn signed_descriptor(
        &self,
        client_id: u64,
        proven: &mut Option<Proven>,
    ) -> Option<RegionDescriptor> {
        let desc = self.clients.get(&client_id).and_then(Client::descriptor)?;
        let wrong_key = proven.is_some() && self.cfg.test_wrong_server_proof;
        Some(sign_descriptor(proven.take(), wrong_key, client_id, desc))
    }

    pub(super) fn on_established(&mut self, key: IdKey) {
        self.pending.end(&key);
        let Some(client_id) = self.queues.get(&key).map(|q| q.client_id) else {
            return;
        };
        self.seen(client_id);
        let Some(q) = self.queues.get_mut(&key) else {
            return;
        };
        if let Some(desc) = q.in_accept.take() {
            // The client has its descriptor already: nothing to send.
            q.probe.established();
            self.log_descriptor(key, &desc, "accept");
            return;
        }
        // An authenticated client gets the server's proof; the others zeros. The secret
        // is not needed after this: it leaves the queue here.
        let mut proven = q.proven.take();
        let Some(desc) = self.signed_descriptor(client_id, &mut proven) else {
            self.close_queue(key, "region not registered");
            return;
        };
        let Some(q) = self.queues.get_mut(&key) else {
            return;
        };
        let mut buf = [0u8; RegionDescriptor::SIZE];
        desc.encode(&mut buf);
        match q.id.post_send_inline(&buf) {
            Ok(()) => {
                q.send_pending = true;
                q.probe.established();
                self.log_descriptor(key, &desc, "send");
            }
            Err(e) => {
                log::error("descriptor_send_failed")
                    .kv("client_id", q.client_id)
                    .kv("queue", q.queue_index)
                    .kv("error", e)
                    .emit();
                self.close_queue(key, "descriptor send failed");
            }
        }
    }

    /// Logs that queue `key` was given `desc`, `via` the accept or a SEND.
    fn log_descriptor(&self, key: IdKey, desc: &RegionDescriptor, via: &str) {
        let Some(q) = self.queues.get(&key) else {
            return;
        };
        let proven = desc.mac != [0; SERVER_MAC_LEN];
        let mut line = log::info("descriptor_posted")
            .kv("client_id", q.client_id)
            .kv("queue", q.queue_index)
            .kv("region_id", desc.region_id)
            .kv("epoch", desc.epoch)
            .kv("length", desc.length)
            .kv("reused", u8::from(desc.reused()))
            .kv("via", via)
            .kv("proof", u8::from(proven));
        if proven && self.cfg.test_wrong_server_proof {
            line = line.kv("proof_key", "wrong");
        }
        line.emit();
    }
}

#[cfg(test)]
mod tests {
    use super::sign_descriptor;
    use crate::crypto::{self, Proven, Secret};
    use crate::wire::{RegionDescriptor, NONCE_LEN, SERVER_MAC_LEN};

    /// `--test-wrong-server-proof`: the descriptor's MAC is not the right one (which is
    /// what a client checks), and is made with the secret's first byte flipped.
    #[test]
    fn wrong_server_proof_differs_from_the_right_one() {
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        let secret = Secret::from_hex(hex).expect("hex");
        let proven = || Proven {
            secret: secret.clone(),
            client_nonce: [3; NONCE_LEN],
            server_nonce: 0x55,
        };
        let desc = RegionDescriptor {
            flags: 0,
            region_id: 9,
            epoch: 1,
            rkey: 0x1234,
            remote_addr: 0x7f00_0000_0000,
            length: 1 << 20,
            mac: [0; SERVER_MAC_LEN],
        };
        let right = crypto::server_mac(&secret, 7, &[3; NONCE_LEN], 0x55, &desc);
        let signed = sign_descriptor(Some(proven()), false, 7, desc);
        assert_eq!(signed.mac, right);
        let wrong = sign_descriptor(Some(proven()), true, 7, desc);
        assert_ne!(wrong.mac, right);
        assert_eq!(wrong.body(), desc.body(), "only the MAC differs");
        let flipped = Secret::from_hex(&format!("ff{}", &hex[2..])).expect("hex");
        assert_eq!(
            wrong.mac,
            crypto::server_mac(&flipped, 7, &[3; NONCE_LEN], 0x55, &desc)
        );
        // Without authentication there is nothing to sign, wrong or not.
        for wrong_key in [false, true] {
            assert_eq!(
                sign_descriptor(None, wrong_key, 7, desc).mac,
                [0; SERVER_MAC_LEN]
            );
        }
    }
}
