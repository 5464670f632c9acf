// SPDX-License-Identifier: GPL-2.0

//! The status socket's protocol: a client sends one line, `status` or `metrics`, and
//! gets one answer, after which the server closes the connection. Anything else gets
//! one line starting with `error: `.

use super::json::format_status;
use super::metrics::format_metrics;
use super::snapshot::Snapshot;

/// The longest request line accepted, in bytes, without its newline.
pub(crate) const REQUEST_MAX: usize = 64;

/// What a client asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    /// The status as JSON.
    Status,
    /// The metrics in the Prometheus text format.
    Metrics,
}

impl Request {
    /// The request's word on the wire (and in the log).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Metrics => "metrics",
        }
    }
}

/// Parses a request line, as read up to its newline (or the end of the stream). Blanks
/// and a `\r` around the word are ignored. The error is the one line to answer with.
pub(crate) fn parse_request(line: &[u8]) -> Result<Request, String> {
    if line.len() > REQUEST_MAX {
        return Err(format!(
            "error: request longer than {REQUEST_MAX} bytes (send \"status\" or \"metrics\")\n"
        ));
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Err("error: the request is not text (send \"status\" or \"metrics\")\n".into());
    };
    match text.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\r') {
        "status" => Ok(Request::Status),
        "metrics" => Ok(Request::Metrics),
        // Debug quoting: whatever the client sent stays on one line.
        other => Err(format!(
            "error: unknown request {other:?} (send \"status\" or \"metrics\")\n"
        )),
    }
}

/// The answer to a request.
pub(crate) fn answer(request: Request, snapshot: &Snapshot) -> String {
    match request {
        Request::Status => format_status(snapshot),
        Request::Metrics => format_metrics(snapshot),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::snapshot::sample;

    #[test]
    fn requests() {
        for (line, want) in [
            (&b"status"[..], Request::Status),
            (b"metrics", Request::Metrics),
            (b"metrics\r", Request::Metrics),
            (b"  status \t", Request::Status),
        ] {
            assert_eq!(parse_request(line), Ok(want), "{line:?}");
        }
        assert_eq!(Request::Status.name(), "status");
        assert_eq!(Request::Metrics.name(), "metrics");
    }

    #[test]
    fn bad_requests_get_one_error_line() {
        for (line, want) in [
            (&b""[..], "error: unknown request \"\""),
            (b"STATUS", "error: unknown request \"STATUS\""),
            (
                b"status metrics",
                "error: unknown request \"status metrics\"",
            ),
            (
                b"GET /metrics HTTP/1.1\r",
                "error: unknown request \"GET /metrics HTTP/1.1\"",
            ),
            (
                b"st\x1bat\nus",
                "error: unknown request \"st\\u{1b}at\\nus\"",
            ),
            (b"\xff\xfe", "error: the request is not text"),
        ] {
            let e = parse_request(line).expect_err("accepted");
            assert!(e.starts_with(want), "{line:?}: {e:?}");
            assert!(e.ends_with('\n') && e.matches('\n').count() == 1, "{e:?}");
        }
        let long = vec![b'a'; REQUEST_MAX + 1];
        let e = parse_request(&long).expect_err("accepted");
        assert_eq!(
            e,
            "error: request longer than 64 bytes (send \"status\" or \"metrics\")\n"
        );
        assert!(parse_request(&long[..REQUEST_MAX]).is_err_and(|e| e.contains("unknown")));
    }

    #[test]
    fn answers() {
        let s = sample();
        assert_eq!(answer(Request::Status, &s), format_status(&s));
        assert_eq!(answer(Request::Metrics, &s), format_metrics(&s));
    }
}
