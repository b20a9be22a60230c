//! The wire under a streamed exchange: HTTP/1.1 over one kept-alive connection per in-flight
//! stream (plain TCP, or TLS over it: [`super::conn`]), written for the hot path of a benchmark
//! client.
//!
//! One task owns its connection and reads it directly: no connection task, no body channel, no
//! copy between the socket buffer and the SSE decoder. A read that returns less than the buffer
//! holds has drained the socket, so readiness is cleared without a second `recv` that would only
//! say "would block": one system call per arrival of bytes. Chunked and length-delimited bodies
//! are decoded incrementally, in place.
//!
//! Bytes are timed by the kernel: every connection asks for receive timestamps (`SO_TIMESTAMPNS`),
//! and each read converts the stamp of the latest segment it took into an `Instant`. A token's
//! time is then when it reached this machine, not when llmload got round to reading it, so a busy
//! client does not add its own delay to the latencies it reports; how late it read is kept apart
//! ([`ReadLag`]) for the self-check. The stamped read is the connection's ([`super::conn`]); it
//! is named here too, where the wire is.

pub use super::conn::{read, LagTally, ReadLag, READ_BUFFER, READ_LAG};
use super::conn::{Conn, TlsPeer};
use rustls::ClientConfig;
use std::fmt::Write as _;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

mod body;
pub use body::BodyDecoder;

/// A streamed generation's request, written as its head and then its body: the body is the one
/// the runner built, shared, not copied behind the head.
#[derive(Debug)]
pub struct Outgoing {
    /// The request line and header lines, through the blank line.
    pub head: Vec<u8>,
    /// The JSON body.
    pub body: bytes::Bytes,
}

#[cfg(test)]
impl Outgoing {
    /// The request's bytes in one piece, as they go on the wire (for tests: the client sends the
    /// two parts without joining them).
    pub fn joined(&self) -> Vec<u8> {
        [self.head.as_slice(), &self.body].concat()
    }
}

/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;

/// Where streamed requests go (`http://` or `https://`), and the header lines every request
/// carries.
#[derive(Debug)]
pub struct Origin {
    /// `host:port` to connect to.
    pub address: String,
    /// Path of the base URL (empty or starting with `/`, no trailing slash).
    pub prefix: String,
    /// `Host:` and the configured header lines, each ending in CRLF.
    pub header_lines: String,
    /// `https://`: who the TLS connections go to.
    tls: Option<TlsPeer>,
    /// Connections whose last response ended cleanly, ready for the next request.
    idle: Mutex<Vec<Conn>>,
    /// The server was seen closing a connection after its first response: none is kept.
    closes_after_response: AtomicBool,
}

impl Origin {
    /// The origin of `base_url`, `http://` or `https://` (which needs `tls`, the client
    /// configuration); `None` for anything else.
    pub fn parse(
        base_url: &str,
        headers: &[(String, String)],
        tls: Option<&Arc<ClientConfig>>,
    ) -> Option<Origin> {
        let (rest, default_port, secure) = match base_url.strip_prefix("https://") {
            Some(rest) => (rest, 443, true),
            None => (base_url.strip_prefix("http://")?, 80, false),
        };
        let (authority, prefix) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority.is_empty() || authority.contains('@') {
            return None;
        }
        let (host, address) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (host, authority.to_owned()),
            _ => (authority, format!("{authority}:{default_port}")),
        };
        let tls = if secure {
            Some(TlsPeer {
                config: tls?.clone(),
                name: super::tls::server_name(host)?,
            })
        } else {
            None
        };
        let mut header_lines = format!("Host: {authority}\r\n");
        for (name, value) in headers {
            let _ = write!(header_lines, "{name}: {value}\r\n");
        }
        Some(Origin {
            address,
            prefix: prefix.trim_end_matches('/').to_owned(),
            header_lines,
            tls,
            idle: Mutex::new(Vec::new()),
            closes_after_response: AtomicBool::new(false),
        })
    }

    /// An idle kept-alive connection that the server has not closed (and `true`), or a new one.
    /// Some servers (llama-server) close a connection after each stream without saying so: a
    /// kept connection whose peer has since closed it (or sent bytes nobody asked for) is
    /// dropped here rather than failing the next request, and once one is found closed after its
    /// first response, no connection is kept any more ([`Origin::keep`]).
    pub async fn connection(&self) -> io::Result<(Conn, bool)> {
        loop {
            let reused = self.idle.lock().ok().and_then(|mut idle| idle.pop());
            let Some(mut conn) = reused else {
                break;
            };
            if conn.is_reusable() {
                return Ok((conn, true));
            }
            self.closed_after(conn.responses());
        }
        Ok((self.fresh_connection().await?, false))
    }

    /// Keeps no connection from now on: the server is known to close each one after a streamed
    /// response (llama-server, told by its `/props` at setup), so that no request is ever
    /// written on a connection whose close has not arrived yet.
    pub fn keep_none(&self) {
        self.closes_after_response.store(true, Ordering::Relaxed);
    }

    /// Whether no connection is kept ([`Origin::keep_none`], or learnt).
    pub fn keeps_none(&self) -> bool {
        self.closes_after_response.load(Ordering::Relaxed)
    }

    /// Learns from a kept connection the server closed after `responses` responses: closed after
    /// its first, it says the server closes every connection after a response.
    pub fn closed_after(&self, responses: u32) {
        if responses <= 1 {
            self.closes_after_response.store(true, Ordering::Relaxed);
        }
    }

    /// Whether connections are TLS (`https://`).
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// A new connection, never a kept one; over TLS, with its handshake done.
    pub async fn fresh_connection(&self) -> io::Result<Conn> {
        Conn::open(&self.address, self.tls.as_ref()).await
    }

    /// Keeps a connection whose response ended cleanly for the next request, unless the server
    /// closes connections after a response: its close may not have arrived yet when the next
    /// request takes the connection, which would then be sent twice.
    pub fn keep(&self, mut conn: Conn) {
        conn.served();
        if self.closes_after_response.load(Ordering::Relaxed) {
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(conn);
        }
    }

    /// A streamed generation: a `POST` of `body` (JSON) to `path`, with `lines` (header lines of
    /// this request alone, each ending in CRLF) after the origin's. The body is not copied: it
    /// goes out after the head, from where it already lies.
    pub fn request(&self, path: &str, body: bytes::Bytes, lines: &str) -> Outgoing {
        Outgoing {
            head: self.head(
                Method::Post,
                path,
                "text/event-stream",
                Some(body.len()),
                lines,
                0,
            ),
            body,
        }
    }

    /// The bytes of a request: `method` of `path` (under the base URL's path), with `body` as
    /// JSON where there is one. Every request llmload sends, streamed or not, is written here.
    pub fn request_for(
        &self,
        method: Method,
        path: &str,
        accept: &str,
        body: Option<&[u8]>,
    ) -> Vec<u8> {
        self.request_with(method, path, accept, body, "")
    }

    /// As [`Origin::request_for`], with `lines` (header lines, each ending in CRLF) after the
    /// origin's.
    fn request_with(
        &self,
        method: Method,
        path: &str,
        accept: &str,
        body: Option<&[u8]>,
        lines: &str,
    ) -> Vec<u8> {
        let length = body.map(<[u8]>::len);
        let mut request = self.head(method, path, accept, length, lines, length.unwrap_or(0));
        if let Some(body) = body {
            request.extend_from_slice(body);
        }
        request
    }

    /// The head of a request (its request line and header lines, through the blank line) for a
    /// body of `body_len` bytes where there is one, with `room` bytes to spare after it.
    fn head(
        &self,
        method: Method,
        path: &str,
        accept: &str,
        body_len: Option<usize>,
        lines: &str,
        room: usize,
    ) -> Vec<u8> {
        let mut request = Vec::with_capacity(room + self.header_lines.len() + lines.len() + 256);
        request.extend_from_slice(method.name().as_bytes());
        request.push(b' ');
        request.extend_from_slice(self.prefix.as_bytes());
        request.extend_from_slice(path.as_bytes());
        request.extend_from_slice(b" HTTP/1.1\r\n");
        request.extend_from_slice(self.header_lines.as_bytes());
        request.extend_from_slice(lines.as_bytes());
        let _ = write!(ByteWriter(&mut request), "Accept: {accept}\r\n");
        if let Some(length) = body_len {
            let _ = write!(
                ByteWriter(&mut request),
                "Content-Type: application/json\r\nContent-Length: {length}\r\n"
            );
        }
        request.extend_from_slice(b"\r\n");
        request
    }

    /// The same origin with a pool of connections of its own (setup requests and scrapes keep
    /// theirs apart from the streams', so they never hand a measured request a warm connection).
    #[must_use]
    pub fn sibling(&self) -> Origin {
        Origin {
            address: self.address.clone(),
            prefix: self.prefix.clone(),
            header_lines: self.header_lines.clone(),
            tls: self.tls.clone(),
            idle: Mutex::new(Vec::new()),
            closes_after_response: AtomicBool::new(false),
        }
    }
}

/// The methods llmload sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
}

impl Method {
    /// The method as written on the request line.
    pub fn name(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// `write!` into a byte buffer.
struct ByteWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Whether `name` can be a header field's name (an HTTP token).
pub fn is_field_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `value` can be a header field's value as llmload writes it: visible ASCII, spaces
/// and tabs (no line break, no control character, nothing a server might read another way).
pub fn is_field_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

/// Raises this process's open-files limit to its hard limit, so that 10,000 streams (a socket
/// each) fit; returns the limit in force. Failing to raise it is not an error: connections
/// beyond the limit fail as connect errors, counted like any other.
pub fn raise_open_files_limit() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX).unwrap_or(0)
}

/// How the response body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// `Content-Length`.
    Length(u64),
    /// Until the server closes the connection.
    Close,
}

/// The parts of a response head the client needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// Status code.
    pub status: u16,
    /// How the body is delimited.
    pub framing: Framing,
    /// The connection may carry another request after this response.
    pub keep_alive: bool,
    /// Bytes of `buffer` the head took.
    pub length: usize,
    /// The `Content-Type`, when the server sent one (at most 200 bytes of it).
    pub content_type: Option<String>,
    /// The `Location` of a redirect (at most 200 bytes of it).
    pub location: Option<String>,
    /// The `Date` (at most 200 bytes of it).
    pub date: Option<String>,
    /// The `X-Request-Id` the server sent back ([`echoed_id`]).
    pub request_id: Option<String>,
}

/// The most characters of a server's `X-Request-Id` kept.
pub const ECHOED_ID_LEN: usize = 128;

/// A request id as a server sent it back, made safe to keep: printable ASCII alone (any other
/// byte becomes `?`), at most [`ECHOED_ID_LEN`] characters, surrounding spaces trimmed; `None`
/// when nothing is left. A server's text is never trusted.
pub fn echoed_id(value: &[u8]) -> Option<String> {
    let id: String = value
        .trim_ascii()
        .iter()
        .take(ECHOED_ID_LEN)
        .map(|&b| {
            if (b' '..=b'~').contains(&b) {
                b as char
            } else {
                '?'
            }
        })
        .collect();
    (!id.is_empty()).then_some(id)
}

/// Whether a head is an interim one (`100 Continue`, `103 Early Hints`): the response proper
/// follows it on the same connection. (`101` switches protocols: never interim here.)
pub fn is_interim(status: u16) -> bool {
    (100..200).contains(&status) && status != 101
}

/// Whether a `Transfer-Encoding` field's codings end chunked; refused when they name any other
/// than `chunked` and `identity` (`gzip, chunked`: a compressed stream, which llmload never
/// asks for and cannot time as its events arrive).
fn transfer_coded(value: &str) -> Result<bool, String> {
    let codings: Vec<String> = value
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty())
        .collect();
    if codings.iter().any(|c| c != "chunked" && c != "identity") {
        let shown: String = value.chars().take(40).collect();
        return Err(format!(
            "Transfer-Encoding {shown}: an encoding llmload does not support (it asks for none; \
             a compressed stream cannot be timed as its events arrive)"
        ));
    }
    Ok(codings.last().is_some_and(|c| c == "chunked"))
}

/// Parses a response head at the start of `buffer`: `Ok(None)` while it is incomplete.
pub fn parse_head(buffer: &[u8]) -> Result<Option<Head>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(buffer) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buffer.len() < MAX_HEAD => return Ok(None),
        Ok(httparse::Status::Partial) => return Err("response head too large".into()),
        Err(e) => return Err(format!("not an HTTP response: {e}")),
    };
    let status = response.code.unwrap_or(0);
    let mut framing = Framing::Close;
    let mut length_given: Option<&[u8]> = None;
    let mut keep_alive = response.version == Some(1);
    let mut content_type = None;
    let (mut location, mut date, mut request_id) = (None, None, None);
    for header in response.headers.iter() {
        let value = std::str::from_utf8(header.value).unwrap_or("").trim();
        if header.name.eq_ignore_ascii_case("transfer-encoding") {
            if transfer_coded(value)? {
                framing = Framing::Chunked;
            }
        } else if header.name.eq_ignore_ascii_case("content-length") {
            // Two lengths that disagree are how responses are smuggled: no body is read.
            if length_given.is_some_and(|first| first != value.as_bytes()) {
                return Err("two Content-Length fields that disagree".into());
            }
            length_given = Some(value.as_bytes());
            if framing != Framing::Chunked {
                framing = Framing::Length(value.parse().map_err(|_| "bad Content-Length")?);
            }
        } else if header.name.eq_ignore_ascii_case("content-encoding") {
            if !value.eq_ignore_ascii_case("identity") {
                let shown: String = value.chars().take(40).collect();
                return Err(format!(
                    "Content-Encoding {shown}: llmload asks for none (a compressed stream cannot \
                     be timed as its events arrive)"
                ));
            }
        } else if header.name.eq_ignore_ascii_case("content-type") {
            content_type = Some(value.chars().take(200).collect());
        } else if header.name.eq_ignore_ascii_case("location") {
            location = Some(value.chars().take(200).collect());
        } else if header.name.eq_ignore_ascii_case("date") {
            date = Some(value.chars().take(200).collect());
        } else if header.name.eq_ignore_ascii_case("x-request-id") {
            request_id = echoed_id(header.value);
        } else if header.name.eq_ignore_ascii_case("connection") {
            let value = value.to_ascii_lowercase();
            keep_alive = value.contains("keep-alive") || (keep_alive && !value.contains("close"));
        }
    }
    // These carry no body whatever their fields say.
    if matches!(status, 204 | 304) || (100..200).contains(&status) {
        framing = Framing::Length(0);
    }
    keep_alive &= framing != Framing::Close;
    Ok(Some(Head {
        status,
        framing,
        keep_alive,
        length,
        content_type,
        location,
        date,
        request_id,
    }))
}

#[cfg(test)]
mod tests;
