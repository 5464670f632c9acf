// SPDX-License-Identifier: GPL-2.0

//! The event loop: one `poll(2)` over the rdma_cm channel, the signals and the status
//! socket; the rdma_cm events; the queues' completions and keep-alive probes; closing
//! queues; SIGUSR1 and shutdown.

use super::*;

/// How often pending descriptor SENDs are reaped.
const SEND_POLL: Duration = Duration::from_millis(20);

/// `why=` of a queue closed because its keep-alive probe did not complete in time.
const WHY_KEEPALIVE_TIMEOUT: &str = status::snapshot::KEEPALIVE_TIMEOUT;

/// `why=` of a queue closed because its keep-alive probe failed (or could not be posted).
const WHY_KEEPALIVE_FAILED: &str = status::snapshot::KEEPALIVE_FAILED;

/// Why a queue is to be closed: the `why=` of its `queue_closed` line and one more
/// key and value, if any.
struct Closing {
    why: &'static str,
    detail: Option<(&'static str, String)>,
}

/// What draining a queue's completions found.
struct Reaped {
    /// Why the queue must be closed, if it must (the first reason).
    closing: Option<Closing>,
    /// The peer acknowledged something (the descriptor, a probe): it was seen.
    seen: bool,
}

impl Queue {
    /// Drains the queue's completions (its descriptor SEND and keep-alive probes).
    fn reap(&mut self) -> Reaped {
        let mut closing = None;
        let mut seen = false;
        // At most the SEND and one probe are outstanding; the bound only keeps a
        // misbehaving CQ from holding up the loop.
        for _ in 0..SERVER_QP.max_send_wr + SERVER_QP.max_recv_wr {
            let c = match self.id.poll() {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => {
                    self.send_pending = false;
                    self.probe.close();
                    log::error("poll_cq_failed")
                        .kv("client_id", self.client_id)
                        .kv("queue", self.queue_index)
                        .kv("error", &e)
                        .emit();
                    return Reaped {
                        closing: closing.or(Some(Closing {
                            why: "ibv_poll_cq failed",
                            detail: Some(("error", e.to_string())),
                        })),
                        seen,
                    };
                }
            };
            if c.is_send {
                self.send_pending = false;
                if c.ok {
                    seen = true;
                    log::debug("descriptor_delivered")
                        .kv("client_id", self.client_id)
                        .kv("queue", self.queue_index)
                        .emit();
                } else {
                    log::warn("descriptor_not_delivered")
                        .kv("client_id", self.client_id)
                        .kv("queue", self.queue_index)
                        .kv("status", &c.status)
                        .emit();
                    // A probe behind the SEND is flushed: not a second reason.
                    self.probe.close();
                    closing.get_or_insert(Closing {
                        why: "descriptor SEND failed",
                        detail: None,
                    });
                }
            } else if c.is_probe {
                match self.probe.completed(c.ok) {
                    Reply::Alive => {
                        seen = true;
                        log::debug("keepalive_ok")
                            .kv("client_id", self.client_id)
                            .kv("queue", self.queue_index)
                            .emit();
                    }
                    Reply::Dead => {
                        closing.get_or_insert(Closing {
                            why: WHY_KEEPALIVE_FAILED,
                            detail: Some(("status", c.status)),
                        });
                    }
                    Reply::Ignore => log::debug("keepalive_ignored")
                        .kv("client_id", self.client_id)
                        .kv("queue", self.queue_index)
                        .kv("status", &c.status)
                        .emit(),
                }
            }
        }
        Reaped { closing, seen }
    }
}

impl Server {
    pub(super) fn event_loop(
        &mut self,
        signals: &SignalFd,
        mut status: Option<&mut StatusService>,
    ) -> Result<(), String> {
        // systemd's watchdog (WatchdogSec=): fed from here, so that a loop that stops
        // turning is restarted.
        let mut watchdog = notify::Watchdog::from_env();
        loop {
            if let Some(w) = watchdog.as_mut() {
                w.feed(Instant::now(), notify::notify);
            }
            let mut fds = vec![
                (self.chan.fd(), Interest::Read),
                (signals.fd(), Interest::Read),
            ];
            let mut timeout = self.next_timeout();
            if let Some(w) = &watchdog {
                let left = w.deadline().saturating_duration_since(Instant::now());
                timeout = Some(timeout.map_or(left, |d| d.min(left)));
            }
            if let Some(st) = status.as_deref() {
                fds.extend(st.poll_fds());
                if let Some(t) = st.deadline() {
                    let left = t.saturating_duration_since(Instant::now());
                    timeout = Some(timeout.map_or(left, |d| d.min(left)));
                }
            }
            let ready = os::poll_fds(&fds, timeout).map_err(|e| format!("poll: {e}"))?;
            if ready.get(1).copied().unwrap_or(false) {
                match signals.read().map_err(|e| format!("signalfd: {e}"))? {
                    Some(libc::SIGUSR1) => self.disconnect_all(),
                    Some(libc::SIGHUP) => self.reload_allow_list(),
                    Some(sig) => {
                        log::info("shutdown").kv("signal", sig).emit();
                        return Ok(());
                    }
                    None => {}
                }
            }
            if ready.first().copied().unwrap_or(false) {
                let ev = self.chan.get_event().map_err(|e| format!("rdma_cm: {e}"))?;
                self.handle(ev)?;
            }
            // Completions first: a probe that completed by now is not overdue.
            self.reap_completions();
            self.keepalive_round(Instant::now());
            self.expire(Instant::now());
            if let Some(n) = self.connect_log.flush(Instant::now()) {
                log::warn("connect_log_suppressed")
                    .kv("lines", n)
                    .kv(
                        "why",
                        "rate limit of the lines of unauthenticated connect requests",
                    )
                    .emit();
            }
            // Last: the state answered is the state after this wake-up's work.
            if let Some(st) = status.as_deref_mut() {
                let now = Instant::now();
                let status_ready = ready.iter().skip(2).any(|&r| r);
                if status_ready || st.deadline().is_some_and(|t| t <= now) {
                    st.service(now, &mut || self.snapshot(Instant::now()));
                }
            }
        }
    }

    /// The state as the status socket reports it.
    fn snapshot(&self, now: Instant) -> Snapshot {
        let clients = self
            .clients
            .iter()
            .map(|(&client_id, c)| ClientInfo {
                client_id,
                region_id: c.region_id,
                length: c.length,
                epoch: c.epoch,
                queue_count: c.queue_count,
                queues: c
                    .queues
                    .iter()
                    .map(|(&index, key)| QueueInfo {
                        index,
                        peer: self
                            .queues
                            .get(key)
                            .map_or_else(|| "?".into(), |q| q.peer.clone()),
                    })
                    .collect(),
                grace_left: c.grace_until.map(|t| t.saturating_duration_since(now)),
                last_seen: c.last_seen.map(|t| now.saturating_duration_since(t)),
                owner: c.owner,
            })
            .collect();
        Snapshot {
            version: env!("RSWAP_SERVER_VERSION"),
            wire_version: wire::VERSION,
            listen: self.cfg.listen.to_string(),
            started: self.started.0,
            uptime: now.saturating_duration_since(self.started.1),
            pool: Pool {
                size: self.cfg.size,
                used: self.used,
                max_clients: self.cfg.max_clients,
            },
            queues: self.queues.len(),
            clients,
            counters: self.counters.clone(),
        }
    }

    /// Client `client_id` showed activity on one of its queues.
    pub(super) fn seen(&mut self, client_id: u64) {
        if let Some(c) = self.clients.get_mut(&client_id) {
            c.last_seen = Some(Instant::now());
        }
    }

    fn next_timeout(&self) -> Option<Duration> {
        let now = Instant::now();
        let grace = self
            .clients
            .values()
            .filter_map(|c| c.grace_until)
            .min()
            .map(|t| t.saturating_duration_since(now));
        let send = self
            .queues
            .values()
            .any(|q| q.send_pending)
            .then_some(SEND_POLL);
        // Rounds only matter while there are queues; a round missed meanwhile runs
        // at the next wake-up and finds nothing to probe.
        let keepalive = self
            .keepalive
            .deadline()
            .filter(|_| !self.queues.is_empty())
            .map(|t| t.saturating_duration_since(now));
        let suppressed = self
            .connect_log
            .deadline()
            .map(|t| t.saturating_duration_since(now));
        [grace, send, keepalive, suppressed]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle(&mut self, mut ev: Event) -> Result<(), String> {
        log::debug("cm_event")
            .kv("type", ev.kind.name())
            .kv("status", ev.status)
            .emit();
        let is_listener = self.listener.as_ref().map(CmId::key) == Some(ev.id);
        match ev.kind {
            EventKind::ConnectRequest => {
                let ours = self.listener.as_ref().map(CmId::key);
                if ev.listen_id.is_some() && ev.listen_id != ours {
                    log::warn("connect_request_ignored")
                        .kv("why", "not for our listener")
                        .emit();
                } else if let Some(id) = ev.new_id.take() {
                    self.on_connect_request(id, &ev);
                }
            }
            EventKind::Established => self.on_established(ev.id),
            EventKind::DeviceRemoval if is_listener => {
                return Err("the RDMA device of the listening address was removed".into());
            }
            EventKind::Disconnected
            | EventKind::ConnectError
            | EventKind::Unreachable
            | EventKind::Rejected
            | EventKind::DeviceRemoval => {
                // A peer that disconnects was there.
                if matches!(ev.kind, EventKind::Disconnected) {
                    if let Some(client_id) = self.queues.get(&ev.id).map(|q| q.client_id) {
                        self.seen(client_id);
                    }
                }
                let why = ev.kind.name();
                self.close_queue(ev.id, &why);
            }
            _ => {}
        }
        Ok(())
    }

    /// Reaps the completions of every queue that has work outstanding and closes
    /// the queues whose descriptor SEND or keep-alive probe failed.
    fn reap_completions(&mut self) {
        let mut dead: Vec<(IdKey, Closing)> = Vec::new();
        let mut seen: Vec<u64> = Vec::new();
        for (key, q) in self
            .queues
            .iter_mut()
            .filter(|(_, q)| q.send_pending || q.probe.outstanding())
        {
            let r = q.reap();
            if r.seen {
                seen.push(q.client_id);
            }
            if let Some(c) = r.closing {
                dead.push((*key, c));
            }
        }
        for client_id in seen {
            self.seen(client_id);
        }
        for (key, c) in dead {
            self.close_queue_with(key, c.why, c.detail);
        }
    }

    /// A keep-alive round, if one is due: closes every queue whose previous probe
    /// has not completed and posts a new probe on every other established queue.
    fn keepalive_round(&mut self, now: Instant) {
        if !self.keepalive.due(now) {
            return;
        }
        let period_ms = self.cfg.keepalive.as_millis().to_string();
        let mut dead = Vec::new();
        for (key, q) in &mut self.queues {
            match q.probe.round() {
                Round::Skip => {}
                Round::Dead => dead.push((
                    *key,
                    Closing {
                        why: WHY_KEEPALIVE_TIMEOUT,
                        detail: Some(("keepalive_ms", period_ms.clone())),
                    },
                )),
                Round::Post => {
                    if let Err(e) = q.id.post_rdma_write_zero() {
                        q.probe.close();
                        dead.push((
                            *key,
                            Closing {
                                why: WHY_KEEPALIVE_FAILED,
                                detail: Some(("error", e.to_string())),
                            },
                        ));
                    }
                }
            }
        }
        for (key, c) in dead {
            self.close_queue_with(key, c.why, c.detail);
        }
    }

    /// Removes a queue from its client (starting the grace period if it was the
    /// last one), disconnects and destroys it.
    pub(super) fn close_queue(&mut self, key: IdKey, why: &str) {
        self.close_queue_with(key, why, None);
    }

    /// Like close_queue, with one more key and value for the `queue_closed` line.
    fn close_queue_with(&mut self, key: IdKey, why: &str, detail: Option<(&str, String)>) {
        if let Some(client_id) = self.drop_queue(key, why, detail) {
            self.counters.queue_closed(why);
            self.grace_if_idle(client_id);
        }
    }

    /// Like close_queue_with, without starting the grace period. Returns the
    /// client id, or `None` when the queue is already gone (then nothing is logged).
    pub(super) fn drop_queue(
        &mut self,
        key: IdKey,
        why: &str,
        detail: Option<(&str, String)>,
    ) -> Option<u64> {
        self.pending.end(&key);
        let mut q = self.queues.remove(&key)?;
        if let Some(c) = self.clients.get_mut(&q.client_id) {
            if c.queues.get(&q.queue_index) == Some(&key) {
                c.queues.remove(&q.queue_index);
            }
        }
        // Errors here only mean the connection is already down.
        let _ = q.id.disconnect();
        let mut line = log::info("queue_closed")
            .kv("client_id", q.client_id)
            .kv("queue", q.queue_index)
            .kv("peer", &q.peer)
            .kv("why", why);
        if let Some((k, v)) = detail {
            line = line.kv(k, v);
        }
        line.emit();
        Some(q.client_id)
    }

    /// SIGUSR1: closes every queue but keeps every region for its grace period, so
    /// clients reconnect and find their data (maintenance, and the clients' recovery
    /// tests).
    fn disconnect_all(&mut self) {
        let keys: Vec<IdKey> = self.queues.keys().copied().collect();
        log::info("disconnect_all").kv("queues", keys.len()).emit();
        for key in keys {
            self.close_queue(key, "SIGUSR1");
        }
    }

    pub(super) fn shutdown(&mut self) {
        notify::notify("STOPPING=1\nSTATUS=shutting down");
        // Stop accepting first, then close every queue, then free every region
        // (with a state directory: keep every region's files).
        self.listener = None;
        let keys: Vec<IdKey> = self.queues.keys().copied().collect();
        for key in keys {
            self.drop_queue(key, "server shutdown", None);
        }
        let ids: Vec<u64> = self.clients.keys().copied().collect();
        for id in ids {
            if self.store.is_some() {
                self.keep_client(id, "server shutdown");
            } else {
                self.free_client(id, "server shutdown");
            }
        }
        log::info("stopped").emit();
    }
}
