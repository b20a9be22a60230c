//! One streamed exchange with the target: send, timestamp every received chunk, decode events.
//!
//! Times are taken with the monotonic clock on receipt of the bytes, before any parsing; `sent`
//! is taken when the request's bytes are handed to an open connection, so connecting is not part
//! of any latency. A failure (refused connection, HTTP error, timeout, broken or malformed
//! stream, cancellation) is data: the exchange keeps what it saw up to that point and says what
//! went wrong. Plain `http://` targets are driven by [`super::http1`] (one kept-alive connection
//! per in-flight stream, read in place); `https://` goes through `reqwest`.

use super::http1::{self, BodyDecoder, Origin};
use super::sse::SseDecoder;
pub use super::token_events::TokenEvents;
use super::{Api, Body, Counters, EventError};
use crate::record::ErrorKind;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How an exchange failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The server answered with a non-success status.
    #[error("HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The start of the response body.
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
            Failure::Cancelled => ErrorKind::Cancelled,
        }
    }
}

/// What was observed during one exchange.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// When the request was handed to the connection.
    pub sent: Instant,
    /// Receipt time of each event that carried generated tokens, with how many it carried.
    pub token_events: TokenEvents,
    /// Receipt time of the final event.
    pub done: Option<Instant>,
    /// Counters reported by the server.
    pub counters: Counters,
    /// Why the exchange did not complete, if it did not.
    pub failure: Option<Failure>,
    /// The request was sent a second time because its kept-alive connection had been closed.
    pub retried: bool,
    /// The most tokens read before the stream is cut off as an overrun.
    pub token_cap: u32,
    /// Tokens streamed so far.
    streamed: u32,
    /// Usage on every chunk was asked for: a chunk's usage counts the tokens so far.
    usage_per_chunk: bool,
    /// Tokens of reasoning (thinking before the answer), where the stream tells them apart.
    pub reasoning_tokens: u32,
    /// The first answer token, when the stream carried reasoning before it.
    pub first_answer: Option<Instant>,
}

impl Default for Exchange {
    fn default() -> Self {
        Self::new()
    }
}

impl Exchange {
    /// An exchange about to be sent now.
    pub fn new() -> Exchange {
        Exchange {
            sent: Instant::now(),
            token_events: TokenEvents::new(Instant::now()),
            done: None,
            counters: Counters::default(),
            failure: None,
            retried: false,
            token_cap: u32::MAX,
            streamed: 0,
            usage_per_chunk: false,
            reasoning_tokens: 0,
            first_answer: None,
        }
    }

    /// Receipt time of the first event carrying a generated token.
    pub fn first_token(&self) -> Option<Instant> {
        self.token_events.iter().next().map(|(t, _)| t)
    }

    /// Generated tokens seen in the stream.
    pub fn streamed_tokens(&self) -> u32 {
        self.token_events
            .iter()
            .fold(0u32, |sum, (_, k)| sum.saturating_add(k))
    }
}

/// A configured target endpoint.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The HTTP client (connection pool, headers, TLS) for everything but plain-HTTP streams.
    pub client: reqwest::Client,
    /// Base URL without a trailing slash.
    pub base_url: String,
    /// The API to speak.
    pub api: Api,
    /// Per-request limit from send to final event.
    pub timeout: Duration,
    /// The limit for each setup request (`/health`, `/props`, `/v1/models`, `/tokenize`, …) and
    /// each `/metrics` scrape, connection included.
    pub setup_timeout: Duration,
    /// Plain `http://` targets: the direct streaming connections.
    origin: Option<Arc<Origin>>,
}

/// Why an endpoint could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A header value that HTTP does not allow.
    #[error("{0} holds characters not allowed in an HTTP header")]
    Header(String),
    /// The HTTP client could not be built.
    #[error("building the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

impl From<BuildError> for crate::error::Error {
    fn from(e: BuildError) -> Self {
        match e {
            BuildError::Header(_) => crate::error::ConfigError(e.to_string()).into(),
            BuildError::Client(_) => crate::error::Error::Internal(e.to_string()),
        }
    }
}

impl Endpoint {
    /// An endpoint at `base_url`; `headers` (key, extra headers) go on every streamed request and
    /// must be the client's default headers too.
    pub fn new(
        client: reqwest::Client,
        base_url: &str,
        api: Api,
        timeout: Duration,
        headers: &reqwest::header::HeaderMap,
    ) -> Endpoint {
        let base_url = base_url.trim_end_matches('/').to_owned();
        let lines: Vec<(String, String)> = headers
            .iter()
            .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
            .collect();
        // A header that is not visible ASCII cannot be written by hand: leave it to reqwest.
        let plain = lines.len() == headers.len();
        Endpoint {
            client,
            origin: Origin::parse(&base_url, &lines)
                .filter(|_| plain)
                .map(Arc::new),
            base_url,
            api,
            timeout,
            setup_timeout: timeout,
        }
    }

    /// An endpoint at `base_url` with its own HTTP client: `authorization` and `headers`
    /// (name, value) on every request; the per-request and the setup timeout. The header values
    /// must be valid (the config checks them).
    pub fn build(
        base_url: &str,
        api: Api,
        (timeout, setup_timeout): (Duration, Duration),
        authorization: Option<&str>,
        headers: &[(String, String)],
    ) -> Result<Endpoint, BuildError> {
        use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
        let mut map = HeaderMap::new();
        if let Some(value) = authorization {
            let mut value =
                HeaderValue::from_str(value).map_err(|_| BuildError::Header("--api-key".into()))?;
            value.set_sensitive(true);
            map.insert(AUTHORIZATION, value);
        }
        for (name, value) in headers {
            let invalid = || BuildError::Header(format!("--header {name}"));
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
            map.insert(name, HeaderValue::from_str(value).map_err(|_| invalid())?);
        }
        // No redirect is followed: a redirect would carry the key and the headers to another
        // host, and its answers would be recorded as the target's.
        let client = reqwest::Client::builder()
            .default_headers(map.clone())
            .tcp_nodelay(true)
            .pool_max_idle_per_host(usize::MAX)
            .connect_timeout(timeout.min(setup_timeout))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(BuildError::Client)?;
        let mut endpoint = Endpoint::new(client, base_url, api, timeout, &map);
        endpoint.setup_timeout = setup_timeout;
        Ok(endpoint)
    }

    /// Sends one streaming request and reads it to its end, its failure, its timeout or `cancel`.
    pub async fn stream(&self, body: &Body, cancel: &CancellationToken) -> Exchange {
        let mut exchange = Exchange::new();
        exchange.token_cap = token_cap(body.output_tokens);
        exchange.usage_per_chunk = body.usage_per_chunk;
        // One allocation for the whole stream's timestamps: the length was asked for.
        exchange
            .token_events
            .reserve(body.output_tokens.min(1 << 16) as usize);
        let deadline = exchange.sent + self.timeout;
        let read = async {
            if let Some(origin) = &self.origin {
                read_plain(origin, self.api, &body.json, &mut exchange).await
            } else {
                let request = self
                    .client
                    .post(format!("{}{}", self.base_url, self.api.path()))
                    .header(reqwest::header::ACCEPT, "text/event-stream")
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.json.clone());
                read_stream(self.api, request, &mut exchange).await
            }
        };
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Failure::Cancelled),
            read = tokio::time::timeout_at(deadline, read) => {
                read.unwrap_or(Err(Failure::Timeout(self.timeout)))
            }
        };
        exchange.failure = outcome.err();
        exchange
    }
}

/// Whether a `Content-Type` is an event stream (or one a streaming server may send instead:
/// some gateways label SSE as plain text or JSON lines).
fn is_event_stream(content_type: &str) -> bool {
    let kind = content_type.to_ascii_lowercase();
    [
        "text/event-stream",
        "text/plain",
        "application/x-ndjson",
        "application/octet-stream",
    ]
    .iter()
    .any(|k| kind.starts_with(k))
}

/// A success status whose body is not an event stream (an HTML page, a JSON answer from a
/// server that ignored `stream: true`).
fn not_a_stream(status: u16, content_type: &str, body: &str) -> Failure {
    Failure::Malformed(format!(
        "the server answered {status} with Content-Type {content_type:?}, not an event stream: \
         {body:?}"
    ))
}

/// Tokens a response may stream for `requested` before it is cut off: the request's count and a
/// little slack (a tenth, at least 16), so that a server that ignores the limit cannot grow a
/// stream's memory without bound.
pub fn token_cap(requested: u32) -> u32 {
    requested.saturating_add((requested / 10).max(16))
}

/// Why one try on a connection ended without a result.
enum Broken {
    /// A kept-alive connection had been closed by the server before it saw the request.
    Stale,
    /// Anything else.
    Failed(Failure),
}

impl From<Failure> for Broken {
    fn from(failure: Failure) -> Broken {
        Broken::Failed(failure)
    }
}

/// The plain-HTTP exchange: on a kept-alive connection if there is one, sent once more on a new
/// connection if the server had closed it unseen.
async fn read_plain(
    origin: &Origin,
    api: Api,
    body: &[u8],
    exchange: &mut Exchange,
) -> Result<(), Failure> {
    let request = origin.request(api.path(), body);
    let connect = || async {
        let (stream, reused) = origin
            .connection()
            .await
            .map_err(|e| Failure::Connect(format!("cannot connect to {}: {e}", origin.address)))?;
        Ok::<_, Failure>((stream, reused))
    };
    let (stream, reused) = connect().await?;
    let kept = match converse(stream, reused, api, &request, exchange).await {
        Err(Broken::Stale) => {
            exchange.retried = true;
            *exchange = Exchange {
                retried: true,
                token_cap: exchange.token_cap,
                usage_per_chunk: exchange.usage_per_chunk,
                ..Exchange::new()
            };
            // The retry goes on a new connection: another kept one may be as stale.
            let stream = origin.fresh_connection().await.map_err(|e| {
                Failure::Connect(format!("cannot connect to {}: {e}", origin.address))
            })?;
            match converse(stream, false, api, &request, exchange).await {
                Err(Broken::Stale) => Err(Failure::Disconnected(
                    "the server closed the connection before answering".into(),
                )),
                Err(Broken::Failed(failure)) => Err(failure),
                Ok(kept) => Ok(kept),
            }
        }
        Err(Broken::Failed(failure)) => Err(failure),
        Ok(kept) => Ok(kept),
    }?;
    if let Some(stream) = kept {
        origin.keep(stream);
    }
    Ok(())
}

/// One request on one connection; the connection back when it can carry another.
async fn converse(
    mut stream: TcpStream,
    reused: bool,
    api: Api,
    request: &[u8],
    exchange: &mut Exchange,
) -> Result<Option<TcpStream>, Broken> {
    exchange.sent = Instant::now();
    if let Err(e) = http1::send(&mut stream, request).await {
        let failure = Failure::Disconnected(format!("request failed: {e}"));
        return Err(stale_or(reused, failure));
    }
    let mut buffer = vec![0u8; http1::READ_BUFFER];
    let (head, filled, arrived) = read_head(&stream, &mut buffer, reused).await?;
    let mut reader = BodyReader {
        decoder: BodyDecoder::new(head.framing),
        sse: SseDecoder::new(),
        error: None,
    };
    if !(200..300).contains(&head.status) {
        let body = reader
            .error_body(&stream, &buffer[head.length..filled])
            .await;
        return Err(Failure::Http {
            status: head.status,
            body,
        }
        .into());
    }
    if let Some(kind) = head.content_type.as_deref().filter(|k| !is_event_stream(k)) {
        let body = reader
            .error_body(&stream, &buffer[head.length..filled])
            .await;
        return Err(not_a_stream(head.status, kind, &body).into());
    }
    reader.feed(api, &buffer[head.length..filled], arrived, exchange)?;
    buffer.truncate(http1::READ_BUFFER);
    while exchange.done.is_none() && !reader.decoder.done() {
        let (n, now) = http1::read(&stream, &mut buffer)
            .await
            .map_err(|e| Failure::Disconnected(format!("stream broke: {e}")))?;
        if n == 0 {
            reader.finish(api, now, exchange)?;
            break;
        }
        reader.feed(api, &buffer[..n], now, exchange)?;
    }
    if reader.decoder.done() && exchange.done.is_none() {
        reader.finish(api, Instant::now(), exchange)?;
    }
    if exchange.done.is_none() {
        return Err(Failure::Disconnected("stream ended before its final event".into()).into());
    }
    // Let the connection see its end of body so it can be kept alive for the next request.
    let end = Instant::now() + Duration::from_millis(50);
    while !reader.decoder.done() {
        match tokio::time::timeout_at(end, http1::read(&stream, &mut buffer)).await {
            Ok(Ok((n, _))) if n > 0 => reader.skip(&buffer[..n]),
            _ => return Ok(None),
        }
    }
    Ok(head.keep_alive.then_some(stream))
}

/// On a kept-alive connection, a failure before any answer means the server had closed it unseen.
fn stale_or(reused: bool, failure: Failure) -> Broken {
    if reused {
        Broken::Stale
    } else {
        Broken::Failed(failure)
    }
}

/// Reads until the response head is whole, growing `buffer` as needed: the head, the bytes read
/// so far and when the latest of them arrived.
async fn read_head(
    stream: &TcpStream,
    buffer: &mut Vec<u8>,
    reused: bool,
) -> Result<(http1::Head, usize, Instant), Broken> {
    let mut filled = 0;
    loop {
        let (n, arrived) = match http1::read(stream, &mut buffer[filled..]).await {
            Ok((0, _)) | Err(_) if filled == 0 => {
                let failure = Failure::Disconnected(
                    "the server closed the connection before answering".into(),
                );
                return Err(stale_or(reused, failure));
            }
            Ok((0, _)) => {
                let failure =
                    Failure::Disconnected("connection closed inside the response head".into());
                return Err(failure.into());
            }
            Ok(read) => read,
            Err(e) => return Err(Failure::Disconnected(format!("stream broke: {e}")).into()),
        };
        filled += n;
        match http1::parse_head(&buffer[..filled]).map_err(Failure::Malformed)? {
            Some(head) => return Ok((head, filled, arrived)),
            None if filled == buffer.len() => buffer.resize(filled * 2, 0),
            None => {}
        }
    }
}

/// A response body on its way to events.
struct BodyReader {
    decoder: BodyDecoder,
    sse: SseDecoder,
    error: Option<Failure>,
}

impl BodyReader {
    /// Decodes bytes received at `now` into events of `exchange`.
    fn feed(
        &mut self,
        api: Api,
        bytes: &[u8],
        now: Instant,
        exchange: &mut Exchange,
    ) -> Result<(), Failure> {
        let (sse, error) = (&mut self.sse, &mut self.error);
        let mut too_long = None;
        self.decoder
            .feed(bytes, &mut |data| {
                let fed = sse.feed(data, &mut |event| {
                    on_event(api, event, now, exchange, error);
                });
                too_long = too_long.or(fed.err());
            })
            .map_err(Failure::Malformed)?;
        if let Some(e) = too_long {
            return Err(Failure::Malformed(e.to_string()));
        }
        self.check()
    }

    /// The body ended: a last event without its blank line still counts.
    fn finish(&mut self, api: Api, now: Instant, exchange: &mut Exchange) -> Result<(), Failure> {
        let error = &mut self.error;
        self.sse
            .finish(&mut |event| on_event(api, event, now, exchange, error));
        self.check()
    }

    /// Reads past the rest of the body (after the final event).
    fn skip(&mut self, bytes: &[u8]) {
        if self.decoder.feed(bytes, &mut |_| {}).is_err() {
            self.decoder = BodyDecoder::new(http1::Framing::Close);
        }
    }

    fn check(&mut self) -> Result<(), Failure> {
        self.error.take().map_or(Ok(()), Err)
    }

    /// The start of an error response's body (what the server said), read for at most a second.
    async fn error_body(&mut self, stream: &TcpStream, first: &[u8]) -> String {
        let mut text = Vec::new();
        let keep = |text: &mut Vec<u8>, data: &[u8]| {
            text.extend_from_slice(&data[..data.len().min(4096)]);
        };
        let _ = self.decoder.feed(first, &mut |d| keep(&mut text, d));
        let end = Instant::now() + Duration::from_secs(1);
        let mut buffer = vec![0u8; http1::READ_BUFFER];
        while !self.decoder.done() && text.len() < 4096 {
            match tokio::time::timeout_at(end, http1::read(stream, &mut buffer)).await {
                Ok(Ok((n, _))) if n > 0 => {
                    let _ = self.decoder.feed(&buffer[..n], &mut |d| keep(&mut text, d));
                }
                _ => break,
            }
        }
        let body: String = String::from_utf8_lossy(&text).chars().take(300).collect();
        body.trim().to_owned()
    }
}

async fn read_stream(
    api: Api,
    request: reqwest::RequestBuilder,
    exchange: &mut Exchange,
) -> Result<(), Failure> {
    let retry = request.try_clone();
    exchange.sent = Instant::now();
    let mut response = match request.send().await {
        Ok(response) => response,
        Err(e) if is_stale_connection(&e) && retry.is_some() => {
            // A server may close a kept-alive connection right after a stream without saying
            // so; the request never reached it. Send it once more on a fresh connection.
            exchange.retried = true;
            exchange.sent = Instant::now();
            match retry {
                Some(retry) => retry.send().await.map_err(|e| send_failure(&e))?,
                None => return Err(send_failure(&e)),
            }
        }
        Err(e) => return Err(send_failure(&e)),
    };
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .chars()
                .take(200)
                .collect::<String>()
        });
    if !status.is_success() {
        let body = bounded_text(&mut response).await;
        return Err(Failure::Http {
            status: status.as_u16(),
            body,
        });
    }
    if let Some(kind) = content_type.filter(|k| !is_event_stream(k)) {
        let body = bounded_text(&mut response).await;
        return Err(not_a_stream(status.as_u16(), &kind, &body));
    }
    let mut decoder = SseDecoder::new();
    let mut error = None;
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| Failure::Disconnected(format!("stream broke: {}", root_cause(&e))))?;
        let now = Instant::now();
        let Some(bytes) = chunk else {
            decoder.finish(&mut |data| on_event(api, data, now, exchange, &mut error));
            break;
        };
        decoder
            .feed(&bytes, &mut |data| {
                on_event(api, data, now, exchange, &mut error);
            })
            .map_err(|e| Failure::Malformed(e.to_string()))?;
        if error.is_some() || exchange.done.is_some() {
            break;
        }
    }
    if let Some(error) = error {
        return Err(error);
    }
    if exchange.done.is_none() {
        return Err(Failure::Disconnected(
            "stream ended before its final event".into(),
        ));
    }
    // Let the connection see its end of body so it can be kept alive for the next request.
    let _ = tokio::time::timeout(Duration::from_millis(50), response.chunk()).await;
    Ok(())
}

/// A whole response body of at most `limit` bytes; an error naming the bound past it (the bytes
/// are not kept). The caller bounds the time.
pub async fn read_body(response: &mut reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    if response
        .content_length()
        .is_some_and(|n| n > u64::try_from(limit).unwrap_or(u64::MAX))
    {
        return Err(format!("the answer is larger than {limit} bytes"));
    }
    let mut body = Vec::new();
    while let Some(bytes) = response.chunk().await.map_err(|e| root_cause(&e))? {
        if body.len() + bytes.len() > limit {
            return Err(format!("the answer is larger than {limit} bytes"));
        }
        body.extend_from_slice(&bytes);
    }
    Ok(body)
}

/// The start of a response body, as error bodies are kept: at most 4 KiB read, for at most a
/// second, 300 characters kept.
async fn bounded_text(response: &mut reqwest::Response) -> String {
    let mut text = Vec::new();
    let end = Instant::now() + Duration::from_secs(1);
    while text.len() < 4096 {
        match tokio::time::timeout_at(end, response.chunk()).await {
            Ok(Ok(Some(bytes))) => text.extend_from_slice(&bytes[..bytes.len().min(4096)]),
            _ => break,
        }
    }
    let body: String = String::from_utf8_lossy(&text).chars().take(300).collect();
    body.trim().to_owned()
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
                if event.reasoning {
                    exchange.reasoning_tokens = exchange.reasoning_tokens.saturating_add(tokens);
                } else if exchange.first_answer.is_none() {
                    exchange.first_answer = Some(now);
                }
            }
            exchange.counters.merge(event.counters);
            if event.done {
                exchange.done = Some(now);
            }
        }
        Err(EventError::Malformed(m)) => *error = Some(Failure::Malformed(m)),
        Err(EventError::Server(m)) => *error = Some(Failure::Server(m)),
    }
}

/// The error hyper gives when a pooled connection turns out to be closed before any response.
fn is_stale_connection(error: &reqwest::Error) -> bool {
    !error.is_connect()
        && !error.is_timeout()
        && root_cause(error).contains("connection closed before message completed")
}

fn send_failure(error: &reqwest::Error) -> Failure {
    let cause = root_cause(error);
    if error.is_connect() {
        Failure::Connect(format!("cannot connect: {cause}"))
    } else {
        Failure::Disconnected(format!("request failed: {cause}"))
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
