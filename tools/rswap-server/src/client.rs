// SPDX-License-Identifier: GPL-2.0

//! `rswap-testclient`: connects like the kernel module will, checks the
//! descriptors and moves data with one-sided RDMA.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::config::{self, ClientConfig, Parsed};
use crate::rdma::{CmId, Device, EventChannel, EventKind, LocalBuf, Pd, QpCaps, RdmaOp};
use crate::size::round_up;
use crate::wire::{ConnectRequest, RegionDescriptor, RejectReason};

const CLIENT_QP: QpCaps = QpCaps {
    max_send_wr: 16,
    max_recv_wr: 4,
    max_inline: 0,
};

/// Route/address resolution timeout handed to librdmacm, in milliseconds.
const RESOLVE_MS: i32 = 5000;

/// Entry point of `rswap-testclient`.
pub fn main() -> ExitCode {
    let cfg = match config::parse_client_args(std::env::args().skip(1)) {
        Ok(Parsed::Help) => {
            print!("{}", config::CLIENT_HELP);
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Run(cfg)) => cfg,
        Err(e) => {
            eprintln!("rswap-testclient: {e}");
            return ExitCode::from(2);
        }
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
    id: CmId,
    desc: RegionDescriptor,
}

/// The outcome of connecting one queue.
enum Connected {
    Queue(Box<Queue>),
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

fn connect_queue(
    cfg: &ClientConfig,
    chan: &EventChannel,
    pd: &mut Option<Pd>,
    index: u16,
) -> Result<Connected, String> {
    let q = format!("queue {index}");
    let mut id = chan.create_id().map_err(|e| format!("{q}: {e}"))?;
    id.resolve_addr(cfg.connect, RESOLVE_MS)
        .map_err(|e| format!("{q}: {e}"))?;
    expect_event(chan, EventKind::AddrResolved, cfg.timeout, &q)?;
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
    // The receive for the descriptor is posted before connecting.
    id.post_recv(RegionDescriptor::SIZE)
        .map_err(|e| format!("{q}: {e}"))?;
    let mut req = [0u8; ConnectRequest::SIZE];
    ConnectRequest {
        client_id: cfg.client_id,
        queue_index: index,
        queue_count: cfg.queue_count,
        requested_size: cfg.size,
    }
    .encode(&mut req);
    for (dst, src) in req.iter_mut().skip(4).zip(cfg.proto_version.to_le_bytes()) {
        *dst = src;
    }
    id.connect(&req).map_err(|e| format!("{q}: {e}"))?;
    let ev = chan
        .wait_event(cfg.timeout)
        .map_err(|e| format!("{q}: {e}"))?
        .ok_or_else(|| format!("{q}: no answer to the connect within {:?}", cfg.timeout))?;
    match ev.kind {
        EventKind::Established => {}
        EventKind::Rejected => {
            let rej = RejectReason::decode(&ev.private_data).map_err(|e| {
                format!(
                    "{q}: rejected (status {}) without a valid reason ({e:?}, {} bytes)",
                    ev.status,
                    ev.private_data.len()
                )
            })?;
            return Ok(Connected::Rejected(rej));
        }
        other => {
            return Err(format!(
                "{q}: connect failed: {} (status {})",
                other.name(),
                ev.status
            ));
        }
    }
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
    Ok(Connected::Queue(Box::new(Queue { id, desc })))
}

fn print_desc(index: u16, d: &RegionDescriptor) {
    println!(
        "queue={index} region_id={} epoch={} rkey={:#x} remote_addr={:#x} length={} flags={:#x} reused={}",
        d.region_id,
        d.epoch,
        d.rkey,
        d.remote_addr,
        d.length,
        d.flags,
        u8::from(d.reused())
    );
}

fn run(cfg: &ClientConfig) -> Result<(), String> {
    let chan = EventChannel::new()
        .map_err(|e| format!("cannot open rdma_cm (is rdma_ucm loaded?): {e}"))?;
    let mut pd = None;
    let mut queues: Vec<Queue> = Vec::new();
    for index in 0..cfg.queues {
        match connect_queue(cfg, &chan, &mut pd, index)? {
            Connected::Queue(q) => queues.push(*q),
            Connected::Rejected(rej) => {
                println!(
                    "reason={} code={} max_size={}",
                    rej.code.name(),
                    rej.code.to_u16(),
                    rej.max_size
                );
                return match cfg.expect_reject {
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
                };
            }
        }
    }
    if let Some(want) = cfg.expect_reject {
        return Err(format!(
            "expected a reject ({}) but all {} queues connected",
            want.name(),
            cfg.queues
        ));
    }
    // Every queue must carry the same, sensible descriptor.
    let first = queues.first().map(|q| q.desc).ok_or("no queue")?;
    let want_len = round_up(cfg.size, 4096).ok_or("size overflows")?;
    for (i, q) in queues.iter().enumerate() {
        if cfg.print_descriptor || (cfg.write_pattern.is_none() && cfg.verify_pattern.is_none()) {
            print_desc(u16::try_from(i).unwrap_or(u16::MAX), &q.desc);
        }
        if q.desc != first {
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
