// SPDX-License-Identifier: GPL-2.0

//! `rswapctl server-status`: asks a memory server for its status (or its metrics) on
//! the server's status socket (`rswap-server --status-socket PATH`), and the JSON
//! model of the status it answers. The protocol: one request line, `status` or
//! `metrics`; one answer, then the server closes the connection; an answer that is
//! one line starting with `error: ` is a refusal.

use crate::target::{errno_text, Failure};
use serde::Deserialize;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// Where the server's status socket is unless `--socket` says otherwise (the path
/// `Documentation/memory-server.md` recommends for `--status-socket`).
pub const DEFAULT_SOCKET: &str = "/run/rswap/server.sock";

/// How long the server may take to take the request and to answer.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// An answer longer than this is not an answer of rswap-server.
const ANSWER_MAX: u64 = 256 << 20;

/// What `server-status` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// The status as JSON.
    Status,
    /// The metrics in the Prometheus text format.
    Metrics,
}

impl Request {
    fn line(self) -> &'static str {
        match self {
            Request::Status => "status\n",
            Request::Metrics => "metrics\n",
        }
    }
}

/// A hint for a socket that cannot be reached, by the error's kind.
fn hint(e: &io::Error, socket: &Path) -> String {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => format!(
            " (is rswap-server running with --status-socket {}?)",
            socket.display()
        ),
        io::ErrorKind::PermissionDenied => {
            " (the socket is the server's user's only: run as that user, e.g. root)".to_string()
        }
        _ => String::new(),
    }
}

/// Sends `request` to the server at `socket` and returns its answer. A failure names
/// the socket.
pub fn query(socket: &Path, request: Request, timeout: Duration) -> Result<String, Failure> {
    let fail = |what: String| Failure::new("server-status", "", what);
    let at = socket.display();
    let mut stream = UnixStream::connect(socket).map_err(|e| {
        fail(format!(
            "cannot connect to {at}: {}{}",
            errno_text(&e),
            hint(&e, socket)
        ))
    })?;
    let talk = |stream: &mut UnixStream| -> io::Result<Vec<u8>> {
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.write_all(request.line().as_bytes())?;
        let mut answer = Vec::new();
        stream.take(ANSWER_MAX + 1).read_to_end(&mut answer)?;
        Ok(answer)
    };
    let answer = talk(&mut stream).map_err(|e| {
        let e = if e.kind() == io::ErrorKind::WouldBlock {
            format!("no answer within {} s", timeout.as_secs())
        } else {
            errno_text(&e)
        };
        fail(format!("{at}: {e}"))
    })?;
    if answer.len() as u64 > ANSWER_MAX {
        return Err(fail(format!(
            "{at}: the answer is longer than {ANSWER_MAX} bytes"
        )));
    }
    let text = String::from_utf8(answer)
        .map_err(|_| fail(format!("{at}: the answer is not UTF-8 text")))?;
    if text.is_empty() {
        return Err(fail(format!(
            "{at}: the server closed the connection without an answer"
        )));
    }
    if let Some(refusal) = text.strip_prefix("error: ") {
        return Err(fail(format!(
            "{at}: the server says: {}",
            refusal.trim_end()
        )));
    }
    Ok(text)
}

/// The status JSON, as far as `server-status` shows it (other fields are ignored).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ServerStatus {
    /// The server itself.
    pub server: ServerInfo,
    /// Its pool.
    pub pool: PoolInfo,
    /// The clients holding a region, by client id.
    pub clients: Vec<ClientStatus>,
}

/// `server`: the server itself.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ServerInfo {
    /// The server's version.
    pub version: String,
    /// The wire protocol version it speaks.
    pub wire_protocol: u16,
    /// Its `--listen` address.
    pub listen: String,
    /// Seconds since it started.
    pub uptime_seconds: f64,
}

/// `pool`: the memory the server hands out.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PoolInfo {
    /// `--size`.
    pub size_bytes: u64,
    /// Held by regions, live or in their grace period.
    pub used_bytes: u64,
    /// Left for new regions.
    pub left_bytes: u64,
    /// `--max-clients`.
    pub max_clients: u64,
}

/// One element of `clients`: a client holding a region.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ClientStatus {
    /// The client id.
    pub client_id: u64,
    /// Its region's id.
    pub region_id: u64,
    /// The region's length in bytes.
    pub length: u64,
    /// The region's epoch.
    pub epoch: u32,
    /// `live` or `grace`.
    pub state: String,
    /// In `grace`: seconds until the region is freed.
    pub grace_left_seconds: Option<f64>,
    /// Seconds since its queues were last heard from; null if never.
    pub last_seen_seconds: Option<f64>,
    /// The queues the client announced.
    pub queue_count: u32,
    /// Its live queues.
    pub queues_live: u32,
    /// Each live queue.
    pub queues: Vec<QueueStatus>,
    /// The instance owning the region, if known.
    pub owner_instance: Option<u64>,
}

/// One live queue of a client.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct QueueStatus {
    /// Its queue index.
    pub index: u16,
    /// The client's address, `ADDR:PORT`.
    pub peer: String,
}

/// Parses the server's status answer.
pub fn parse_status(text: &str) -> Result<ServerStatus, String> {
    serde_json::from_str(text).map_err(|e| format!("the status is not what rswapctl expects: {e}"))
}
