//! One streamed exchange with the target: send, timestamp every received chunk, decode events.
//!
//! Times are taken with the monotonic clock on receipt of the bytes, before any parsing; `sent`
//! is taken when the request's bytes are handed to an open connection, so connecting (and a TLS
//! handshake) is not part of any latency. A failure (refused connection, HTTP error, timeout,
//! broken or malformed stream, cancellation) is data: the exchange keeps what it saw up to that
//! point and says what went wrong. Streams go on llmload's own HTTP/1.1 connections
//! ([`direct`], over [`super::http1`] and [`super::conn`]), `http://` and `https://` alike; the
//! setup requests and `/metrics` go over the same code with connections of their own
//! ([`super::fetch`]).

mod direct;
mod exchange;

use exchange::TEXT_BYTES_PER_TOKEN;
pub use exchange::{Exchange, StreamText, Timing};

pub use super::conn::Setup;
use super::http1::{self, Origin};
pub use super::tls::TlsOptions;
pub use super::token_events::TokenEvents;
use super::{session_key, tls, Api, Body, EventError, RequestId};
use crate::record::{CancelAfter, ErrorKind};
use crate::tokenizer::Tokenizer;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How an exchange failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The server answered with a non-success status.
    #[error("HTTP {}{}", super::fetch::Status(*status), said(body))]
    Http {
        /// The status code.
        status: u16,
        /// What the response body said, reduced to one line ([`super::error_body::reduce`]).
        body: String,
    },
    /// No connection could be made.
    #[error("{0}")]
    Connect(String),
    /// The exchange took longer than the request timeout.
    #[error("no complete response within {0:?}")]
    Timeout(Duration),
    /// The stream broke or ended before its final event.
    #[error("{0}")]
    Disconnected(String),
    /// An event was not what the API promises.
    #[error("{0}")]
    Malformed(String),
    /// The server reported an error inside the stream.
    #[error("{0}")]
    Server(String),
    /// The stream carried more tokens than asked for, past the slack allowed: reading stopped.
    #[error("{0}")]
    Overrun(String),
    /// The run was stopped while the exchange was in flight.
    #[error("cancelled by a stop of the run")]
    Cancelled,
    /// The client abandoned the stream where it was told to (`--cancel-after`).
    #[error("abandoned by the client after {0} (--cancel-after): its connection closed")]
    Abandoned(CancelAfter),
}

/// An error body after the status: `: what it said`, or that it was empty.
fn said(body: &str) -> String {
    if body.is_empty() {
        ", with an empty body".into()
    } else {
        format!(": {body}")
    }
}

impl Failure {
    /// The kind as written in records.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Failure::Http { .. } => ErrorKind::Http,
            Failure::Connect(_) => ErrorKind::Connect,
            Failure::Timeout(_) => ErrorKind::Timeout,
            Failure::Disconnected(_) => ErrorKind::Disconnected,
            Failure::Malformed(_) => ErrorKind::Malformed,
            Failure::Server(_) => ErrorKind::ServerError,
            Failure::Overrun(_) => ErrorKind::Invalid,
            Failure::Cancelled | Failure::Abandoned(_) => ErrorKind::Cancelled,
        }
    }
}

/// A configured target endpoint.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// Where the setup requests go: the streams' origin with connections of its own.
    pub setup: Arc<Origin>,
    /// Base URL without a trailing slash.
    pub base_url: String,
    /// The API to speak.
    pub api: Api,
    /// Per-request limit from send to final event.
    pub timeout: Duration,
    /// The limit for each setup request (`/health`, `/props`, `/v1/models`, `/tokenize`, …) and
    /// each `/metrics` scrape, connection included.
    pub setup_timeout: Duration,
    /// Where streams go: the kept-alive connections.
    origin: Arc<Origin>,
    /// The client's tokenizer (`--tokenizer`): streams are counted with it where the server does
    /// not say how many tokens each chunk carries.
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// Which of a request's ids go in its headers: those the user's `--header` does not set.
    ids: IdHeaders,
    /// `--session-header NAME`: a request of a session carries its session id in this header.
    pub session_header: Option<String>,
}

/// Which of a request's ids llmload writes in its headers: a header the user gave
/// (`--header X-Request-Id:…`, `--header traceparent:…`) goes on every request in their place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IdHeaders {
    /// `X-Request-Id`.
    request_id: bool,
    /// `traceparent`.
    traceparent: bool,
}

impl IdHeaders {
    /// The header lines of `id`, each ending in CRLF: those not given by the user, and only
    /// values HTTP allows.
    fn lines(self, id: &RequestId) -> String {
        let mut lines = String::new();
        let mut add = |name: &str, value: &str| {
            if http1::is_field_value(value) {
                lines.push_str(name);
                lines.push_str(": ");
                lines.push_str(value);
                lines.push_str("\r\n");
            }
        };
        if self.request_id {
            add("X-Request-Id", &id.id);
        }
        if let Some(traceparent) = id.traceparent.as_deref().filter(|_| self.traceparent) {
            add("traceparent", traceparent);
        }
        lines
    }
}

/// Why an endpoint could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A header value that HTTP does not allow.
    #[error("{0} holds characters not allowed in an HTTP header")]
    Header(String),
    /// Not an `http://` or `https://` URL with a host.
    #[error("--url {0}: not an http:// or https:// URL with a host")]
    Url(String),
    /// The TLS configuration could not be made (a bad `--ca-cert`).
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
}

impl From<BuildError> for crate::error::Error {
    fn from(e: BuildError) -> Self {
        crate::error::ConfigError(e.to_string()).into()
    }
}

impl Endpoint {
    /// Keeps no connection for the streams: the server closes each after a streamed response
    /// ([`Origin::keep_none`]).
    pub fn keep_no_connection(&self) {
        self.origin.keep_none();
    }

    /// Whether the streams keep no connection ([`Endpoint::keep_no_connection`], or learnt).
    pub fn keeps_no_connection(&self) -> bool {
        self.origin.keeps_none()
    }

    /// An endpoint at `base_url` with its own HTTP client: `authorization` and `headers`
    /// (name, value) on every request; the per-request and the setup timeout; how the server's
    /// certificate is checked (`https://`).
    pub fn build(
        base_url: &str,
        api: Api,
        (timeout, setup_timeout): (Duration, Duration),
        authorization: Option<&str>,
        headers: &[(String, String)],
        tls_options: &TlsOptions,
    ) -> Result<Endpoint, BuildError> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        // One field per name (a later one replaces an earlier, `--header Authorization` the
        // key's), written as given.
        let mut lines: Vec<(String, String)> = Vec::new();
        let mut set = |name: &str, value: &str, what: String| {
            if !http1::is_field_name(name) || !http1::is_field_value(value) {
                return Err(BuildError::Header(what));
            }
            lines.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            lines.push((name.to_owned(), value.to_owned()));
            Ok(())
        };
        if let Some(value) = authorization {
            set("Authorization", value, "--api-key".into())?;
        }
        if api == Api::Messages {
            // Anthropic's API takes its key in `x-api-key` (gateways take either) and wants the
            // version it speaks named.
            if let Some(key) = authorization.and_then(|a| a.strip_prefix("Bearer ")) {
                set("x-api-key", key, "--api-key".into())?;
            }
            set(
                "anthropic-version",
                super::anthropic::VERSION,
                "anthropic-version".into(),
            )?;
        }
        for (name, value) in headers {
            set(name, value, format!("--header {name}"))?;
        }
        let given = |name: &str| lines.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        let ids = IdHeaders {
            request_id: !given("X-Request-Id"),
            traceparent: !given("traceparent"),
        };
        let config = tls::client_config(tls_options, base_url.starts_with("https://"))?;
        let origin = Origin::parse(&base_url, &lines, Some(&config))
            .ok_or_else(|| BuildError::Url(crate::secrets::redact_url(&base_url)))?;
        // No redirect is followed (by the setup requests, [`crate::target`]): a redirect would
        // carry the key and the headers to another host, and its answers would be recorded as
        // the target's.
        Ok(Endpoint {
            setup: Arc::new(origin.sibling()),
            base_url,
            api,
            timeout,
            setup_timeout,
            origin: Arc::new(origin),
            tokenizer: None,
            ids,
            session_header: None,
        })
    }

    /// Sends one streaming request and reads it to its end, its failure, its timeout or `cancel`.
    pub async fn stream(&self, body: Body, cancel: &CancellationToken) -> Exchange {
        let mut exchange = Exchange::new();
        exchange.token_cap = token_cap(body.output_tokens);
        match body.cancel_after {
            Some(CancelAfter::Tokens(n)) => exchange.abandon_at = n,
            Some(CancelAfter::Ms(ms)) => exchange.abandon_in = Some(ms),
            None => {}
        }
        if self.tokenizer.is_some() && self.api != Api::Llamacpp {
            // One allocation for the chunks' ends too (a chunk a token, as most servers send).
            let mut text = StreamText::default();
            text.ends.reserve(body.output_tokens.min(1 << 16) as usize);
            exchange.text = Some(text);
        }
        exchange.usage_per_chunk = body.usage_per_chunk;
        exchange.inputs = body.inputs;
        if body.keep_answer {
            exchange.answer = Some(String::new());
        }
        // One allocation for the whole stream's timestamps: the length was asked for.
        exchange
            .token_events
            .reserve(body.output_tokens.min(1 << 16) as usize);
        let (sent, timeout) = (exchange.sent, self.timeout);
        let mut lines = body
            .id
            .as_ref()
            .map(|id| self.ids.lines(id))
            .unwrap_or_default();
        if let (Some(name), Some(session)) = (&self.session_header, body.session) {
            let _ = write!(lines, "{name}: {}\r\n", session_key(session));
        }
        let request = self.origin.request(self.api.path(), body.json, &lines);
        let failure = {
            let read = std::pin::pin!(direct::read_direct(
                &self.origin,
                self.api,
                request,
                &mut exchange
            ));
            bounded(read, cancel, sent, timeout).await.err()
        };
        exchange.failure = failure;
        exchange.ended = Some(Instant::now());
        if matches!(exchange.failure, Some(Failure::Abandoned(_))) {
            exchange.abandoned.get_or_insert_with(Instant::now);
        }
        if let Some(tokenizer) = &self.tokenizer {
            exchange.count_with(tokenizer);
        }
        exchange
    }
}

/// Where the runner's generation requests go: one streamed exchange per call, read to its end,
/// its failure, its deadline (`timeout` after `sent`) or `cancel`, whichever comes first, every
/// time on tokio's clock. [`Endpoint`] is the real one; the runner's tests script a fake.
pub trait Transport: Send + Sync {
    /// Sends `body` and reads its stream to the end (see [`Endpoint::stream`]).
    fn exchange<'a>(&'a self, body: Body, cancel: &'a CancellationToken) -> Pending<'a>;
}

/// An exchange under way.
pub type Pending<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Exchange> + Send + 'a>>;

impl Transport for Endpoint {
    fn exchange<'a>(&'a self, body: Body, cancel: &'a CancellationToken) -> Pending<'a> {
        Box::pin(self.stream(body, cancel))
    }
}

/// `read` within an exchange's bounds: `cancel` first (a stop wins over everything), then the
/// deadline `timeout` after `sent`, past which it fails as a timeout.
///
/// `read` comes pinned where its caller holds it: taken by value, an `async fn` keeps its
/// argument and the copy it moved on both, which doubled the size of every stream's future.
pub async fn bounded(
    read: std::pin::Pin<&mut impl std::future::Future<Output = Result<(), Failure>>>,
    cancel: &CancellationToken,
    sent: Instant,
    timeout: Duration,
) -> Result<(), Failure> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Failure::Cancelled),
        read = tokio::time::timeout_at(sent + timeout, read) => {
            read.unwrap_or(Err(Failure::Timeout(timeout)))
        }
    }
}

/// Tokens a response may stream for `requested` before it is cut off: the request's count and a
/// little slack (a tenth, at least 16), so that a server that ignores the limit cannot grow a
/// stream's memory without bound.
pub fn token_cap(requested: u32) -> u32 {
    requested.saturating_add((requested / 10).max(16))
}

fn on_event(
    api: Api,
    data: &[u8],
    now: Instant,
    exchange: &mut Exchange,
    error: &mut Option<Failure>,
) {
    if error.is_some() || exchange.done.is_some() {
        return;
    }
    exchange.arrived(now);
    match api.parse_event(data) {
        Ok(event) => {
            let tokens = event.tokens_after(exchange.streamed, exchange.usage_per_chunk);
            if tokens > 0 {
                let streamed = exchange.streamed.saturating_add(tokens);
                if streamed > exchange.token_cap {
                    *error = Some(Failure::Overrun(format!(
                        "the server streamed more than {} tokens (the tokens asked for and the \
                         slack allowed); reading stopped there",
                        exchange.token_cap
                    )));
                    return;
                }
                exchange.streamed = streamed;
                exchange.token_events.push(now, tokens);
                if streamed >= exchange.abandon_at && !event.done {
                    // Read no further: the connection is dropped, and closed, with the read.
                    exchange.abandoned = Some(now);
                    *error = Some(Failure::Abandoned(CancelAfter::Tokens(exchange.abandon_at)));
                }
                if let Some(text) = &mut exchange.text {
                    let counted = exchange.usage_per_chunk && event.so_far.is_some();
                    keep_text(text, api, data, counted, exchange.token_cap);
                }
                if let Some(answer) = &mut exchange.answer {
                    if answer.len() <= answer_bound(exchange.token_cap) {
                        api.answer_text(data, answer);
                        let end = u32::try_from(answer.len()).unwrap_or(u32::MAX);
                        exchange.answer_ends.push(end);
                    }
                }
                if event.reasoning {
                    exchange.reasoning_tokens = exchange.reasoning_tokens.saturating_add(tokens);
                } else if exchange.first_answer.is_none() {
                    exchange.first_answer = Some(now);
                }
            }
            exchange.counters.merge(event.counters);
            if event.server.is_some() {
                exchange.server = event.server;
            }
            if event.finished || exchange.finished.is_some() {
                exchange.finished = Some(now);
            }
            if event.done {
                exchange.done = Some(now);
            }
        }
        Err(EventError::Malformed(m)) => *error = Some(Failure::Malformed(m)),
        Err(EventError::Server(m)) => *error = Some(Failure::Server(m)),
    }
}

/// The most bytes of answer text kept for a stream of at most `cap` tokens.
fn answer_bound(cap: u32) -> usize {
    (cap as usize).saturating_mul(TEXT_BYTES_PER_TOKEN)
}

/// Adds a token-carrying chunk's text to what the client's tokenizer will count, within its bound.
fn keep_text(text: &mut StreamText, api: Api, data: &[u8], counted: bool, cap: u32) {
    text.counted_by_server |= counted;
    if text.counted_by_server || text.overflowed {
        return;
    }
    api.event_text(data, &mut text.text);
    let end = u32::try_from(text.text.len()).ok();
    if let Some(end) = end.filter(|&end| end as usize <= answer_bound(cap)) {
        text.ends.push(end);
    } else {
        text.overflowed = true;
        text.text = String::new();
    }
}

/// The innermost error message, which is the one that says what happened.
pub fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}
