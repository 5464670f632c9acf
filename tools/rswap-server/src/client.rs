// SPDX-License-Identifier: GPL-2.0

//! `rswap-testclient`: connects like the kernel module will (authenticating with a
//! secret, or without one), checks the descriptors and the server's proof, and moves
//! data with one-sided RDMA. For the tests of authentication it can also replay a
//! proof (`--replay`) and flood the server with bogus attempts (`--flood`, for random
//! client ids or with `--flood-id` for its own), from any local address (`--source`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

use crate::config::{self, ClientConfig};
use crate::crypto::{self, Secret};
use crate::rdma::{CmId, Device, EventChannel, EventKind, LocalBuf, Pd, QpCaps, RdmaOp};
use crate::size::round_up;
use crate::wire::{
    self, Auth, ConnectRequest, RegionDescriptor, Reject, RejectReason, WireError, CLIENT_MAC_LEN,
    SERVER_MAC_LEN, VERSION_1,
};

const CLIENT_QP: QpCaps = QpCaps {
    max_send_wr: 16,
    max_recv_wr: 4,
    max_inline: 0,
};

/// Route/address resolution timeout handed to librdmacm, in milliseconds.
const RESOLVE_MS: i32 = 5000;

/// Entry point of `rswap-testclient`.
pub fn main() -> ExitCode {
    let parsed = config::parse_client_args(std::env::args().skip(1));
    let cfg = match config::command_line("rswap-testclient", parsed, config::client_command, "1") {
        Ok(cfg) => cfg,
        Err(status) => return status,
    };
    match run(&cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rswap-testclient: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The byte at `off` of the pattern for `seed`: splitmix64 of the 8-byte word index,
/// so any chunk can be produced independently.
pub(crate) fn pattern_byte(seed: u64, off: u64) -> u8 {
    let word = pattern_word(seed, off / 8);
    word.to_le_bytes()
        .get((off % 8) as usize)
        .copied()
        .unwrap_or(0)
}

fn pattern_word(seed: u64, index: u64) -> u64 {
    let mut z = seed
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(index.wrapping_add(1).wrapping_mul(0xbf58_476d_1ce4_e5b9));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fills `buf` with the pattern for `seed` starting at region offset `off`.
pub(crate) fn fill_pattern(buf: &mut [u8], seed: u64, off: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern_byte(seed, off + i as u64);
    }
}

/// One connected queue.
struct Queue {
    /// The connection.
    id: CmId,
    /// The region descriptor it received (its proof checked, if authenticated).
    desc: RegionDescriptor,
    /// The private data of the proof that connected it (authenticated queues).
    proof: Option<Vec<u8>>,
}

/// What one connection attempt ended in.
enum Attempt {
    /// Connected, with the region descriptor received.
    Established(Box<Queue>),
    /// Refused, with the server's reason.
    Refused(RejectReason),
    /// Answered with a challenge (the answer to a hello).
    Challenge(u64),
}

/// The outcome of connecting one queue.
enum Connected {
    /// Connected, the descriptor checked.
    Queue(Box<Queue>),
    /// Refused by the server, with its reason.
    Rejected(RejectReason),
}

fn expect_event(
    chan: &EventChannel,
    want: EventKind,
    timeout: Duration,
    what: &str,
) -> Result<crate::rdma::Event, String> {
    let ev = chan
        .wait_event(timeout)
        .map_err(|e| format!("{what}: {e}"))?
        .ok_or_else(|| format!("{what}: no rdma_cm event within {timeout:?}"))?;
    if ev.kind == want {
        Ok(ev)
    } else {
        Err(format!(
            "{what}: got {} (status {}) instead of {}",
            ev.kind.name(),
            ev.status,
            want.name()
        ))
    }
}

/// Copies `src` into `buf` at `off` (what does not fit is dropped).
fn put(buf: &mut [u8], off: usize, src: &[u8]) {
    for (d, s) in buf.iter_mut().skip(off).zip(src) {
        *d = *s;
    }
}

/// The private data of `req` as `--proto-version` says: version 2's 56 bytes (with
/// another version number if asked), or for version 1 the 32 bytes of a version-1
/// request (version 2's first 32 with version 1 and no kind).
fn request_bytes(cfg: &ClientConfig, req: &ConnectRequest) -> Vec<u8> {
    let mut out = [0u8; ConnectRequest::SIZE];
    req.encode(&mut out);
    put(&mut out, 4, &cfg.proto_version.to_le_bytes());
    if cfg.proto_version == VERSION_1 {
        put(&mut out, 6, &[0, 0]);
        return out.get(..V1_REQUEST_SIZE).unwrap_or(&out).to_vec();
    }
    out.to_vec()
}

/// Bytes of a version-1 connect request.
const V1_REQUEST_SIZE: usize = 32;

/// Decodes the private data of a reject, also one framed as version 1 (whose layout
/// is the same), which a server sends to a version-1 request.
fn decode_reject(buf: &[u8]) -> Result<Reject, WireError> {
    if wire::version_of(buf) != Some(VERSION_1) {
        return Reject::decode(buf);
    }
    let mut v2 = [0u8; Reject::SIZE];
    put(&mut v2, 0, buf.get(..Reject::SIZE).ok_or(WireError::Short)?);
    put(&mut v2, 4, &wire::VERSION.to_le_bytes());
    match Reject::decode(&v2)? {
        r @ Reject::Refused(_) => Ok(r),
        Reject::Challenge { .. } => Err(WireError::BadField),
    }
}

/// One connection of queue `index` with `private` as the connect's private data:
/// resolve, QP, receive posted, connect, and the answer.
fn attempt(
    cfg: &ClientConfig,
    chan: &EventChannel,
    pd: &mut Option<Pd>,
    index: u16,
    private: &[u8],
) -> Result<Attempt, String> {
    let q = format!("queue {index}");
    let mut id = chan.create_id().map_err(|e| format!("{q}: {e}"))?;
    id.resolve_addr(cfg.source, cfg.connect, RESOLVE_MS)
        .map_err(|e| match cfg.source {
            Some(src) => format!("{q}: from --source {src}: {e}"),
            None => format!("{q}: {e}"),
        })?;
    expect_event(chan, EventKind::AddrResolved, cfg.timeout, &q).map_err(|e| match cfg.source {
        Some(src) => format!("{e} (is --source {src} an address of this host's RDMA device?)"),
        None => e,
    })?;
    id.resolve_route(RESOLVE_MS)
        .map_err(|e| format!("{q}: {e}"))?;
    expect_event(chan, EventKind::RouteResolved, cfg.timeout, &q)?;
    let dev: Device = id
        .device()
        .ok_or_else(|| format!("{q}: no RDMA device for {}", cfg.connect))?;
    if pd.is_none() {
        *pd = Some(Pd::new(&dev).map_err(|e| format!("{q}: {e}"))?);
    }
    let the_pd = pd.as_ref().ok_or("no PD")?;
    id.create_qp(the_pd, CLIENT_QP)
        .map_err(|e| format!("{q}: {e}"))?;
    // The receive for a descriptor in a SEND is posted before connecting.
    if !cfg.descriptor_in_accept {
        id.post_recv(RegionDescriptor::SIZE)
            .map_err(|e| format!("{q}: {e}"))?;
    }
    id.connect(private).map_err(|e| format!("{q}: {e}"))?;
    let ev = chan
        .wait_event(cfg.timeout)
        .map_err(|e| format!("{q}: {e}"))?
        .ok_or_else(|| format!("{q}: no answer to the connect within {:?}", cfg.timeout))?;
    let accepted = match ev.kind {
        EventKind::Established => ev.private_data,
        EventKind::Rejected => {
            let rej = decode_reject(&ev.private_data).map_err(|e| {
                format!(
                    "{q}: rejected (status {}) without a valid reason ({e:?}, {} bytes)",
                    ev.status,
                    ev.private_data.len()
                )
            })?;
            return Ok(match rej {
                Reject::Refused(r) => Attempt::Refused(r),
                Reject::Challenge { server_nonce } => Attempt::Challenge(server_nonce),
            });
        }
        other => {
            return Err(format!(
                "{q}: connect failed: {} (status {})",
                other.name(),
                ev.status
            ));
        }
    };
    let desc = if cfg.descriptor_in_accept {
        // Over InfiniBand and RoCE the CM pads the accept's private data.
        RegionDescriptor::decode(&accepted).map_err(|e| {
            format!(
                "{q}: no valid region descriptor in the accept ({e:?}): {:02x?}",
                accepted
            )
        })?
    } else {
        let c = id
            .wait_completion(cfg.timeout)
            .map_err(|e| format!("{q}: {e}"))?
            .ok_or_else(|| format!("{q}: no region descriptor within {:?}", cfg.timeout))?;
        if !c.is_recv || !c.ok {
            return Err(format!(
                "{q}: receive of the descriptor failed: {}",
                c.status
            ));
        }
        let desc = RegionDescriptor::decode(&c.data)
            .map_err(|e| format!("{q}: invalid region descriptor ({e:?}): {:02x?}", c.data))?;
        if c.data.len() != RegionDescriptor::SIZE {
            return Err(format!(
                "{q}: descriptor is {} bytes, expected {}",
                c.data.len(),
                RegionDescriptor::SIZE
            ));
        }
        desc
    };
    Ok(Attempt::Established(Box::new(Queue {
        id,
        desc,
        proof: None,
    })))
}

/// The connect request of queue `index` with `auth`.
fn request(cfg: &ClientConfig, index: u16, auth: Auth) -> ConnectRequest {
    ConnectRequest {
        client_id: cfg.client_id,
        queue_index: index,
        queue_count: cfg.queue_count,
        requested_size: cfg.size,
        reply_descriptor: cfg.descriptor_in_accept,
        auth,
    }
}

/// Connects queue `index`: with a secret, a hello, the server's challenge, the proof,
/// and the server's proof in the descriptor checked; without, one request without
/// authentication (and a descriptor without a proof).
fn connect_queue(
    cfg: &ClientConfig,
    chan: &EventChannel,
    pd: &mut Option<Pd>,
    index: u16,
    secret: Option<&Secret>,
) -> Result<Connected, String> {
    let q = format!("queue {index}");
    let Some(secret) = secret else {
        let req = request(
            cfg,
            index,
            Auth::None {
                instance: cfg.instance,
            },
        );
        return match attempt(cfg, chan, pd, index, &request_bytes(cfg, &req))? {
            Attempt::Established(queue) => {
                if queue.desc.mac != [0; SERVER_MAC_LEN] {
                    return Err(format!(
                        "{q}: the descriptor carries a proof although the connection is not authenticated"
                    ));
                }
                Ok(Connected::Queue(queue))
            }
            Attempt::Refused(r) => Ok(Connected::Rejected(r)),
            Attempt::Challenge(_) => Err(format!(
                "{q}: the server sent a challenge to a request without authentication"
            )),
        };
    };
    let client_nonce =
        crypto::random_nonce().map_err(|e| format!("{q}: no random client nonce: {e}"))?;
    let hello = request(
        cfg,
        index,
        Auth::Hello {
            client_nonce,
            instance: cfg.instance,
        },
    );
    let server_nonce = match attempt(cfg, chan, pd, index, &request_bytes(cfg, &hello))? {
        Attempt::Challenge(n) => n,
        Attempt::Refused(r) => return Ok(Connected::Rejected(r)),
        Attempt::Established(_) => {
            return Err(format!(
                "{q}: the server accepted a hello instead of challenging it"
            ))
        }
    };
    if let Some(from) = cfg.forge_from {
        forge_proofs(cfg, chan, pd, &hello, server_nonce, from)?;
    }
    let mac = crypto::client_mac(secret, &hello, cfg.instance, &client_nonce, server_nonce);
    let proof = request(cfg, index, Auth::Proof { server_nonce, mac });
    let proof_bytes = request_bytes(cfg, &proof);
    match attempt(cfg, chan, pd, index, &proof_bytes)? {
        Attempt::Established(mut queue) => {
            let want = crypto::server_mac(
                secret,
                cfg.client_id,
                &client_nonce,
                server_nonce,
                &queue.desc,
            );
            if !wire::mac_eq(&want, &queue.desc.mac) {
                return Err(format!(
                    "{q}: the server's proof in the region descriptor is wrong: this server does not know the client's secret (or the descriptor was altered); the region is not used"
                ));
            }
            queue.proof = Some(proof_bytes);
            Ok(Connected::Queue(queue))
        }
        Attempt::Refused(r) => Ok(Connected::Rejected(r)),
        Attempt::Challenge(_) => Err(format!(
            "{q}: the server answered a proof with another challenge"
        )),
    }
}

/// `--test-forge-proofs-from`: proofs with a random MAC that name `server_nonce`, the
/// challenge of `hello`, from `from` and from the client's own address, as a host that
/// saw the nonce go by would send them; each must be refused. Prints `queue=I forged=2
/// refused=REASON,REASON`.
fn forge_proofs(
    cfg: &ClientConfig,
    chan: &EventChannel,
    pd: &mut Option<Pd>,
    hello: &ConnectRequest,
    server_nonce: u64,
    from: IpAddr,
) -> Result<(), String> {
    let q = format!("queue {}", hello.queue_index);
    let mut reasons = Vec::new();
    for source in [Some(from), cfg.source] {
        let mut mac = [0u8; CLIENT_MAC_LEN];
        put(
            &mut mac,
            0,
            &crypto::random_nonce().map_err(|e| format!("{q}: no random numbers: {e}"))?,
        );
        let forged = ConnectRequest {
            auth: Auth::Proof { server_nonce, mac },
            ..*hello
        };
        let by = ClientConfig {
            source,
            ..cfg.clone()
        };
        match attempt(
            &by,
            chan,
            pd,
            hello.queue_index,
            &request_bytes(cfg, &forged),
        )? {
            Attempt::Refused(r) => reasons.push(r.code.name()),
            Attempt::Established(_) => {
                return Err(format!("{q}: the server accepted a forged proof"));
            }
            Attempt::Challenge(_) => {
                return Err(format!(
                    "{q}: the server answered a forged proof with a challenge"
                ));
            }
        }
    }
    println!(
        "queue={} forged={} refused={}",
        hello.queue_index,
        reasons.len(),
        reasons.join(",")
    );
    Ok(())
}

fn print_desc(index: u16, d: &RegionDescriptor, authenticated: bool) {
    println!(
        "queue={index} region_id={} epoch={} rkey={:#x} remote_addr={:#x} length={} flags={:#x} reused={} auth={}",
        d.region_id,
        d.epoch,
        d.rkey,
        d.remote_addr,
        d.length,
        d.flags,
        u8::from(d.reused()),
        if authenticated { "mutual" } else { "none" }
    );
}

/// `d` without its proof: what all queues of a client must agree on.
fn unsigned(d: &RegionDescriptor) -> RegionDescriptor {
    RegionDescriptor {
        mac: [0; SERVER_MAC_LEN],
        ..*d
    }
}

/// The secret of `--secret` or `--secret-file` (hex, surrounding whitespace
/// ignored). No message quotes the file's contents.
fn load_secret(cfg: &ClientConfig) -> Result<Option<Secret>, String> {
    if let Some(s) = &cfg.secret {
        return Ok(Some(s.clone()));
    }
    let Some(path) = &cfg.secret_file else {
        return Ok(None);
    };
    // Wiped once parsed, like the secret itself.
    let text = Zeroizing::new(
        std::fs::read_to_string(path)
            .map_err(|e| format!("--secret-file {}: cannot read: {e}", path.display()))?,
    );
    Secret::from_hex(text.trim())
        .map(Some)
        .map_err(|e| format!("--secret-file {}: {e}", path.display()))
}

/// Prints a reject's line and decides the exit: success only if it was expected.
fn report_reject(cfg: &ClientConfig, index: u16, rej: &RejectReason) -> Result<(), String> {
    println!(
        "reason={} code={} max_size={}",
        rej.code.name(),
        rej.code.to_u16(),
        rej.max_size
    );
    match cfg.expect_reject {
        Some(want) if want == rej.code => Ok(()),
        Some(want) => Err(format!(
            "queue {index}: rejected with {} instead of {}",
            rej.code.name(),
            want.name()
        )),
        None => Err(format!(
            "queue {index}: rejected: {} (max_size={})",
            rej.code.name(),
            rej.max_size
        )),
    }
}

fn run(cfg: &ClientConfig) -> Result<(), String> {
    let secret = load_secret(cfg)?;
    let chan = EventChannel::new()
        .map_err(|e| format!("cannot open rdma_cm (is rdma_ucm loaded?): {e}"))?;
    if let Some(n) = cfg.flood {
        return flood(cfg, &chan, n);
    }
    if cfg.replay {
        let secret = secret.ok_or("--replay needs a secret (--secret or --secret-file)")?;
        return replay(cfg, &chan, &secret);
    }
    let mut pd = None;
    let mut queues: Vec<Queue> = Vec::new();
    for index in 0..cfg.queues {
        match connect_queue(cfg, &chan, &mut pd, index, secret.as_ref())? {
            Connected::Queue(q) => queues.push(*q),
            Connected::Rejected(rej) => return report_reject(cfg, index, &rej),
        }
    }
    if let Some(want) = cfg.expect_reject {
        return Err(format!(
            "expected a reject ({}) but all {} queues connected",
            want.name(),
            cfg.queues
        ));
    }
    // Every queue must carry the same, sensible descriptor (each with its own proof).
    let first = queues
        .first()
        .map(|q| unsigned(&q.desc))
        .ok_or("no queue")?;
    let want_len = round_up(cfg.size, 4096).ok_or("size overflows")?;
    for (i, q) in queues.iter().enumerate() {
        if cfg.print_descriptor || (cfg.write_pattern.is_none() && cfg.verify_pattern.is_none()) {
            print_desc(
                u16::try_from(i).unwrap_or(u16::MAX),
                &q.desc,
                secret.is_some(),
            );
        }
        if unsigned(&q.desc) != first {
            return Err(format!(
                "queue {i}: descriptor differs from queue 0: {:?} vs {:?}",
                q.desc, first
            ));
        }
    }
    if first.length != want_len {
        return Err(format!(
            "region length {} but {} was requested (rounded to 4 KiB)",
            first.length, want_len
        ));
    }
    if first.reused() != (first.epoch > 1) {
        return Err(format!(
            "REUSED flag {} does not match epoch {}",
            first.reused(),
            first.epoch
        ));
    }
    let pd = pd.ok_or("no PD")?;
    let len = usize::try_from(first.length).map_err(|_| "region too large for this host")?;
    if let Some(seed) = cfg.write_pattern {
        let q = queues.first_mut().ok_or("no queue")?;
        let t = Instant::now();
        transfer(cfg, &pd, q, len, seed, RdmaOp::Write)?;
        println!(
            "write_pattern seed={seed} bytes={len} queue=0 ms={}",
            t.elapsed().as_millis()
        );
    }
    if let Some(seed) = cfg.verify_pattern {
        let last = queues.len() - 1;
        let q = queues.last_mut().ok_or("no queue")?;
        let t = Instant::now();
        transfer(cfg, &pd, q, len, seed, RdmaOp::Read)?;
        println!(
            "verify_pattern seed={seed} bytes={len} queue={last} ms={} result=ok",
            t.elapsed().as_millis()
        );
    }
    if !cfg.hold.is_zero() {
        hold(&chan, cfg.hold)?;
    }
    for q in &mut queues {
        let _ = q.id.disconnect();
    }
    Ok(())
}

/// How long a deliberate disconnect may take to be confirmed.
const DISCONNECT_WAIT: Duration = Duration::from_secs(5);

/// Disconnects `id` and waits (a little) for rdma_cm to confirm it, so that its
/// `DISCONNECTED` event does not reach a later connection attempt.
fn disconnect_and_wait(chan: &EventChannel, mut id: CmId, timeout: Duration) {
    if id.disconnect().is_err() {
        return;
    }
    let end = Instant::now() + timeout.min(DISCONNECT_WAIT);
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        match chan.wait_event(left) {
            Ok(Some(ev)) if ev.kind != EventKind::Disconnected => {}
            _ => return,
        }
    }
}

/// `--replay`: connects queue 0 with the secret, disconnects it, then sends the very
/// same proof again on a new connection. Prints queue 0's descriptor line and
/// `replay=rejected reason=R code=N` (success) or `replay=accepted ...` (failure).
fn replay(cfg: &ClientConfig, chan: &EventChannel, secret: &Secret) -> Result<(), String> {
    let mut pd = None;
    let q = match connect_queue(cfg, chan, &mut pd, 0, Some(secret))? {
        Connected::Queue(q) => q,
        Connected::Rejected(rej) => {
            return Err(format!(
                "queue 0: rejected before the replay: {} (max_size={})",
                rej.code.name(),
                rej.max_size
            ))
        }
    };
    let Queue { id, desc, proof } = *q;
    print_desc(0, &desc, true);
    let proof = proof.ok_or("queue 0 connected without a proof")?;
    disconnect_and_wait(chan, id, cfg.timeout);
    match attempt(cfg, chan, &mut pd, 0, &proof)? {
        Attempt::Refused(rej) => {
            println!(
                "replay=rejected reason={} code={}",
                rej.code.name(),
                rej.code.to_u16()
            );
            Ok(())
        }
        Attempt::Established(q) => {
            println!("replay=accepted region_id={}", q.desc.region_id);
            disconnect_and_wait(chan, q.id, cfg.timeout);
            Err("the server accepted a replayed proof".into())
        }
        Attempt::Challenge(_) => {
            println!("replay=challenged");
            Err("the server answered a replayed proof with a challenge".into())
        }
    }
}

/// What one bogus attempt of `--flood` ended in.
enum FloodOutcome {
    /// Refused (at the hello, or at the proof after a challenge).
    Rejected {
        /// The reject's reason.
        reason: &'static str,
        /// Whether the hello was answered with a challenge first.
        challenged: bool,
    },
    /// Connected: the server admitted a bogus client.
    Accepted {
        /// Whether the hello was answered with a challenge first.
        challenged: bool,
    },
}

/// One bogus attempt: a hello for a random client id (`--client-id` with
/// `--flood-id`) and, if the server challenges it, a proof with a random MAC.
fn flood_one(
    cfg: &ClientConfig,
    chan: &EventChannel,
    pd: &mut Option<Pd>,
) -> Result<FloodOutcome, String> {
    let random = |e: getrandom::Error| format!("no random numbers: {e}");
    let client_id = if cfg.flood_id {
        cfg.client_id
    } else {
        crypto::random_u64().map_err(random)?.max(1)
    };
    let client_nonce = crypto::random_nonce().map_err(random)?;
    let hello = ConnectRequest {
        client_id,
        queue_index: 0,
        queue_count: cfg.queue_count,
        requested_size: cfg.size,
        reply_descriptor: false,
        auth: Auth::Hello {
            client_nonce,
            instance: cfg.instance,
        },
    };
    let server_nonce = match attempt(cfg, chan, pd, 0, &request_bytes(cfg, &hello))? {
        Attempt::Refused(r) => {
            return Ok(FloodOutcome::Rejected {
                reason: r.code.name(),
                challenged: false,
            })
        }
        Attempt::Established(q) => {
            disconnect_and_wait(chan, q.id, cfg.timeout);
            return Ok(FloodOutcome::Accepted { challenged: false });
        }
        Attempt::Challenge(n) => n,
    };
    let mut mac = [0u8; CLIENT_MAC_LEN];
    put(&mut mac, 0, &crypto::random_nonce().map_err(random)?);
    let proof = ConnectRequest {
        auth: Auth::Proof { server_nonce, mac },
        ..hello
    };
    match attempt(cfg, chan, pd, 0, &request_bytes(cfg, &proof))? {
        Attempt::Refused(r) => Ok(FloodOutcome::Rejected {
            reason: r.code.name(),
            challenged: true,
        }),
        Attempt::Established(q) => {
            disconnect_and_wait(chan, q.id, cfg.timeout);
            Ok(FloodOutcome::Accepted { challenged: true })
        }
        Attempt::Challenge(_) => Err("a proof was answered with another challenge".into()),
    }
}

/// `--flood N`: N bogus attempts as fast as they go, one after the other; prints
/// `flood attempts=N challenged=C rejected=R accepted=A errors=E reasons=..`. Fails if
/// any was accepted, or if none got an answer.
fn flood(cfg: &ClientConfig, chan: &EventChannel, n: u64) -> Result<(), String> {
    let mut pd = None;
    let (mut challenged, mut rejected, mut accepted, mut errors) = (0u64, 0u64, 0u64, 0u64);
    let mut reasons: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut first_error = None;
    let t = Instant::now();
    for _ in 0..n {
        match flood_one(cfg, chan, &mut pd) {
            Ok(FloodOutcome::Rejected {
                reason,
                challenged: c,
            }) => {
                rejected += 1;
                challenged += u64::from(c);
                *reasons.entry(reason).or_default() += 1;
            }
            Ok(FloodOutcome::Accepted { challenged: c }) => {
                accepted += 1;
                challenged += u64::from(c);
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(e);
            }
        }
    }
    let reasons = if reasons.is_empty() {
        "none".to_string()
    } else {
        reasons
            .iter()
            .map(|(r, k)| format!("{r}:{k}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    println!(
        "flood attempts={n} challenged={challenged} rejected={rejected} accepted={accepted} errors={errors} reasons={reasons} ms={}",
        t.elapsed().as_millis()
    );
    if let Some(e) = &first_error {
        eprintln!("rswap-testclient: flood: first error: {e}");
    }
    if accepted > 0 {
        return Err(format!(
            "the server accepted {accepted} bogus connection attempts"
        ));
    }
    if errors == n {
        return Err("no flood attempt got an answer".into());
    }
    Ok(())
}

/// Stays connected for `d`; fails if the server disconnects a queue meanwhile.
fn hold(chan: &EventChannel, d: Duration) -> Result<(), String> {
    let end = Instant::now() + d;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        if let Some(ev) = chan.wait_event(left).map_err(|e| e.to_string())? {
            if ev.kind == EventKind::Disconnected {
                return Err("the server disconnected a queue while holding".into());
            }
        }
    }
}

/// Writes or reads-and-verifies the whole region in chunks through `q`.
fn transfer(
    cfg: &ClientConfig,
    pd: &Pd,
    q: &mut Queue,
    len: usize,
    seed: u64,
    op: RdmaOp,
) -> Result<(), String> {
    let chunk = cfg.chunk.min(len);
    let mut buf = LocalBuf::new(pd, chunk).map_err(|e| format!("local buffer: {e}"))?;
    let mut off = 0usize;
    while off < len {
        let n = chunk.min(len - off);
        if op == RdmaOp::Write {
            let bytes = buf.bytes_mut().map_err(|e| e.to_string())?;
            fill_pattern(bytes.get_mut(..n).ok_or("chunk")?, seed, off as u64);
        }
        q.id.rdma_sync(
            op,
            &mut buf,
            0,
            n,
            q.desc.remote_addr + off as u64,
            q.desc.rkey,
            cfg.timeout,
        )
        .map_err(|e| format!("at offset {off}: {e}"))?;
        if op == RdmaOp::Read {
            let bytes = buf.bytes().map_err(|e| e.to_string())?;
            let got = bytes.get(..n).ok_or("chunk")?;
            if let Some((i, b)) = got
                .iter()
                .enumerate()
                .find(|&(i, &b)| b != pattern_byte(seed, (off + i) as u64))
            {
                let at = (off + i) as u64;
                return Err(format!(
                    "pattern mismatch at offset {at}: got {b:#04x}, expected {:#04x} (seed {seed})",
                    pattern_byte(seed, at)
                ));
            }
        }
        off += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_deterministic_and_seeded() {
        let mut a = [0u8; 64];
        let mut b = [0u8; 64];
        fill_pattern(&mut a, 1, 4096);
        fill_pattern(&mut b, 1, 4096);
        assert_eq!(a, b);
        fill_pattern(&mut b, 2, 4096);
        assert_ne!(a, b, "seed changes the pattern");
        fill_pattern(&mut b, 1, 0);
        assert_ne!(a, b, "offset changes the pattern");
        // Chunks line up with single bytes.
        for (i, &x) in a.iter().enumerate() {
            assert_eq!(x, pattern_byte(1, 4096 + i as u64));
        }
        // Fresh (zeroed) memory does not match by accident.
        assert!(a.iter().any(|&x| x != 0));
    }
}
