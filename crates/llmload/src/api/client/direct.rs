//! The exchange on the target's own connections, `http://` and `https://` alike: the request
//! on a kept-alive connection when there is one (sent once more on a new connection when the
//! server had closed it unseen), the response head, then the body read in place into events,
//! every read timed by the kernel's receive stamp ([`super::super::conn`]).

use super::{on_event, Exchange, Failure, StreamText, Timing};
use crate::api::conn::Conn;
use crate::api::http1::{self, BodyDecoder, Origin, Outgoing};
use crate::api::sse::{Event, SseDecoder};
use crate::api::{tls, Api};
use crate::record::CancelAfter;
use std::fmt::Write as _;
use std::time::Duration;
use tokio::time::Instant;

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

/// The exchange of `request` (from [`Origin::request`]): on a kept-alive connection if there is
/// one, sent once more on a new connection if the server had closed it unseen. The request is
/// let go once the response's head has come (a stream in flight holds no copy of what it sent).
pub(super) async fn read_direct(
    origin: &Origin,
    api: Api,
    request: Outgoing,
    exchange: &mut Exchange,
) -> Result<(), Failure> {
    let mut request = Some(request);
    let mut retry = false;
    // One `converse` in the loop, not one per try: the future stays the size of one.
    let kept = loop {
        let connected = if retry {
            // The retry goes on a new connection: another kept one may be as stale.
            origin.fresh_connection().await.map(|conn| (conn, false))
        } else {
            origin.connection().await
        };
        let (conn, reused) = connected.map_err(|e| cannot_connect(origin, &e))?;
        let responses = conn.responses();
        match converse(conn, reused, api, &mut request, exchange).await {
            Err(Broken::Stale) if !retry => {
                // The server closed it after the check found it open (the rare race).
                origin.closed_after(responses);
                retry = true;
                *exchange = Exchange {
                    retried: true,
                    token_cap: exchange.token_cap,
                    abandon_at: exchange.abandon_at,
                    abandon_in: exchange.abandon_in,
                    usage_per_chunk: exchange.usage_per_chunk,
                    inputs: exchange.inputs,
                    text: exchange.text.take().map(|_| StreamText::default()),
                    answer: exchange.answer.take().map(|_| String::new()),
                    ..Exchange::new()
                };
            }
            Err(Broken::Stale) => {
                return Err(Failure::Disconnected(
                    "the server closed the connection before answering".into(),
                ))
            }
            Err(Broken::Failed(failure)) => return Err(failure),
            Ok(kept) => break kept,
        }
    };
    if let Some(conn) = kept {
        origin.keep(conn);
    }
    Ok(())
}

/// A connection (or its TLS handshake) that failed, with what to do when the certificate was
/// refused.
fn cannot_connect(origin: &Origin, error: &std::io::Error) -> Failure {
    Failure::Connect(format!(
        "cannot connect to {}: {error}{}",
        origin.address,
        tls::hint(error)
    ))
}

/// One request on one connection; the connection back when it can carry another.
async fn converse(
    mut conn: Conn,
    reused: bool,
    api: Api,
    request: &mut Option<Outgoing>,
    exchange: &mut Exchange,
) -> Result<Option<Conn>, Broken> {
    // The connection is open (its handshake done, over TLS): its setup is reported apart, and
    // every latency counts from here.
    let timing = Timing {
        setup: conn.take_setup(),
        reused,
        ..Timing::default()
    };
    exchange.sent = Instant::now();
    exchange.timing = Some(timing);
    // `--cancel-after DURATION`: from the send, the read is dropped there, and the connection
    // with it (closed, as a user's client closes it). (One `talk` either way: a stream's future
    // is as large as its largest state, and 10,000 of them are in flight at once.)
    let abandon = exchange.abandon_in;
    let at = exchange.sent + Duration::from_millis(abandon.unwrap_or(0));
    let talked = talk(conn, reused, api, request, exchange, timing);
    let Some(ms) = abandon else {
        return talked.await;
    };
    tokio::select! {
        biased;
        talked = talked => talked,
        () = tokio::time::sleep_until(at) => {
            Err(Broken::Failed(Failure::Abandoned(CancelAfter::Ms(ms))))
        }
    }
}

/// [`converse`] once the request's `sent` is taken: write it, read the answer. The request is
/// dropped once the head has come: only a connection found stale before then sends it again.
async fn talk(
    mut conn: Conn,
    reused: bool,
    api: Api,
    request: &mut Option<Outgoing>,
    exchange: &mut Exchange,
    mut timing: Timing,
) -> Result<Option<Conn>, Broken> {
    let Some(outgoing) = request.as_ref() else {
        return Err(Failure::Disconnected("the request was already answered".into()).into());
    };
    if let Err(e) = conn.send_parts(&outgoing.head, &outgoing.body).await {
        let failure = Failure::Disconnected(format!("request failed: {e}"));
        return Err(stale_or(reused, failure));
    }
    timing.written = Some(Instant::now());
    exchange.timing = Some(timing);
    // The head's bytes (and the body's first) are gathered as they come; the body's later reads
    // go through the thread's shared buffer, so a stream waiting for its next token holds no
    // read buffer of its own.
    let (head, buffer, arrived) = read_head(&mut conn, reused).await?;
    *request = None;
    timing.head = Some(arrived);
    exchange.server_request_id.clone_from(&head.request_id);
    exchange.timing = Some(timing);
    let mut reader = BodyReader {
        decoder: BodyDecoder::new(head.framing),
        sse: SseDecoder::new(),
        error: None,
    };
    // 204 and 205 are successes that carry no body: for a generation, an answer of nothing.
    if !(200..300).contains(&head.status) || matches!(head.status, 204 | 205) {
        let body = Box::pin(reader.error_body(&mut conn, &buffer[head.length..])).await;
        return Err(Failure::Http {
            status: head.status,
            body,
        }
        .into());
    }
    if api.is_pooling() {
        let first = &buffer[head.length..];
        // Boxed, as the error bodies are: a stream's future need not make room for them.
        Box::pin(read_answer(
            &mut conn,
            &mut reader.decoder,
            first,
            arrived,
            api,
            exchange,
        ))
        .await?;
        return Ok((head.keep_alive && !reader.decoder.overran()).then_some(conn));
    }
    if let Some(kind) = head.content_type.as_deref().filter(|k| !is_event_stream(k)) {
        let body = Box::pin(reader.error_body(&mut conn, &buffer[head.length..])).await;
        return Err(not_a_stream(head.status, kind, &body).into());
    }
    reader.feed(api, &buffer[head.length..], arrived, exchange)?;
    drop(buffer);
    while exchange.done.is_none() && !reader.decoder.done() {
        // Fed where the bytes lie; `false` at the end of the stream.
        let fed = conn
            .read_with(|bytes, now| {
                if bytes.is_empty() {
                    reader.finish(api, now, exchange).map(|()| false)
                } else {
                    reader.feed(api, bytes, now, exchange).map(|()| true)
                }
            })
            .await
            .map_err(|e| {
                Failure::Disconnected(format!("stream broke: {e}{}", reader.last_words(exchange)))
            })?;
        if !fed? {
            break;
        }
    }
    if reader.decoder.done() && exchange.done.is_none() {
        reader.finish(api, Instant::now(), exchange)?;
    }
    if exchange.done.is_none() && exchange.abandoned.is_none() {
        // A stream that ends cleanly after its `finish_reason` (and the usage chunk, where the
        // server sent one) without `[DONE]` is complete there: some servers never send it.
        if let Some(finished) = exchange.finished {
            exchange.done = Some(finished);
            exchange.ended_without_done = true;
        }
    }
    if exchange.done.is_none() {
        return Err(Failure::Disconnected(format!(
            "stream ended before its final event{}",
            reader.last_words(exchange)
        ))
        .into());
    }
    // Let the connection see its end of body so it can be kept alive for the next request.
    let end = Instant::now() + Duration::from_millis(50);
    while !reader.decoder.done() {
        let skipped = conn.read_with(|bytes, _| {
            reader.skip(bytes);
            !bytes.is_empty()
        });
        if !matches!(tokio::time::timeout_at(end, skipped).await, Ok(Ok(true))) {
            return Ok(None);
        }
    }
    // Kept only if the server lets it be (no `Connection: close`) and sent nothing past the body.
    Ok((head.keep_alive && !reader.decoder.overran()).then_some(conn))
}

/// The most bytes a pooling answer may hold (a batch of vectors written as JSON numbers).
pub(super) const MAX_ANSWER: usize = 256 << 20;

/// A pooling API's answer (embeddings, rerank), its first bytes `first` (received at
/// `arrived`): the whole body read within [`MAX_ANSWER`], its `done` the receive stamp of its
/// last bytes, then what it holds.
async fn read_answer(
    conn: &mut Conn,
    decoder: &mut BodyDecoder,
    first: &[u8],
    arrived: Instant,
    api: Api,
    exchange: &mut Exchange,
) -> Result<(), Failure> {
    let mut body: Vec<u8> = Vec::new();
    let mut over = false;
    let keep = |body: &mut Vec<u8>, over: &mut bool, data: &[u8]| {
        if body.len() + data.len() > MAX_ANSWER {
            *over = true;
        } else {
            body.extend_from_slice(data);
        }
    };
    decoder
        .feed(first, &mut |d| keep(&mut body, &mut over, d))
        .map_err(Failure::Malformed)?;
    let mut last = arrived;
    let mut buffer = vec![0u8; http1::READ_BUFFER];
    let close_framed = !decoder.done() && decoder.is_close_framed();
    while !decoder.done() && !over {
        let (n, now) = conn
            .read(&mut buffer)
            .await
            .map_err(|e| Failure::Disconnected(format!("the answer broke: {e}")))?;
        if n == 0 {
            if close_framed {
                break;
            }
            return Err(Failure::Disconnected(
                "connection closed inside the answer".into(),
            ));
        }
        last = now;
        decoder
            .feed(&buffer[..n], &mut |d| keep(&mut body, &mut over, d))
            .map_err(Failure::Malformed)?;
    }
    if over {
        return Err(Failure::Malformed(format!(
            "the answer is larger than {} MiB; reading stopped there",
            MAX_ANSWER >> 20
        )));
    }
    if let Some(timing) = &mut exchange.timing {
        timing.first_event.get_or_insert(arrived);
    }
    exchange.done = Some(last);
    let pooled = crate::api::pooling::parse_answer(&body, exchange.inputs, api == Api::Rerank)
        .map_err(Failure::Malformed)?;
    exchange.counters = pooled.counters;
    exchange.pooled = Some(pooled);
    Ok(())
}

/// On a kept-alive connection, a failure before any answer means the server had closed it unseen.
fn stale_or(reused: bool, failure: Failure) -> Broken {
    if reused {
        Broken::Stale
    } else {
        Broken::Failed(failure)
    }
}

/// Reads until the response head is whole: the head, the bytes read so far (the head's and any
/// after it) and when the latest of them arrived.
async fn read_head(
    conn: &mut Conn,
    reused: bool,
) -> Result<(http1::Head, Vec<u8>, Instant), Broken> {
    let mut buffer = Vec::new();
    loop {
        let read = conn
            .read_with(|bytes, at| {
                buffer.extend_from_slice(bytes);
                (bytes.len(), at)
            })
            .await;
        let arrived = match read {
            Ok((0, _)) | Err(_) if buffer.is_empty() => {
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
            Ok((_, arrived)) => arrived,
            Err(e) => return Err(Failure::Disconnected(format!("stream broke: {e}")).into()),
        };
        // Interim heads (100, 103) come before the response proper: skip them.
        while let Some(head) = http1::parse_head(&buffer).map_err(Failure::Malformed)? {
            if !http1::is_interim(head.status) {
                return Ok((head, buffer, arrived));
            }
            buffer.drain(..head.length);
        }
    }
}

/// An event of the stream: an `error` event ends the exchange with the server's account of the
/// failure (its `message` where the data is JSON, else the text); any other is the API's.
fn on_sse_event(
    api: Api,
    event: Event<'_>,
    now: Instant,
    exchange: &mut Exchange,
    error: &mut Option<Failure>,
) {
    if !event.error {
        on_event(api, event.data, now, exchange, error);
        return;
    }
    if error.is_some() || exchange.done.is_some() {
        return;
    }
    let parsed: Option<serde_json::Value> = serde_json::from_slice(event.data).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("message"))
                .or_else(|| v.get("error"))
        })
        .and_then(serde_json::Value::as_str)
        .map_or_else(
            || String::from_utf8_lossy(event.data).into_owned(),
            str::to_owned,
        );
    let message: String = message.chars().take(500).collect();
    *error = Some(Failure::Server(format!(
        "the stream's error event: {message}"
    )));
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
                let fed = sse.feed_events(data, &mut |event| {
                    on_sse_event(api, event, now, exchange, error);
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
            .finish_events(&mut |event| on_sse_event(api, event, now, exchange, error));
        self.check()
    }

    /// Reads past the rest of the body (after the final event).
    fn skip(&mut self, bytes: &[u8]) {
        if self.decoder.feed(bytes, &mut |_| {}).is_err() {
            self.decoder = BodyDecoder::new(http1::Framing::Close);
        }
    }

    /// What a stream that ended early got to: `, after N tokens`, and the plain text the server
    /// wrote outside its events before it closed, where it wrote any (why it stopped).
    fn last_words(&self, exchange: &Exchange) -> String {
        let tokens = exchange.streamed_tokens();
        let mut out = format!(
            ", after {tokens} token{}",
            if tokens == 1 { "" } else { "s" }
        );
        let said = super::super::error_body::reduce(self.sse.stray());
        if !said.is_empty() {
            let _ = write!(out, "; the server wrote before closing: \"{said}\"");
        }
        out
    }

    fn check(&mut self) -> Result<(), Failure> {
        self.error.take().map_or(Ok(()), Err)
    }

    /// The start of an error response's body (what the server said), read for at most a second.
    async fn error_body(&mut self, conn: &mut Conn, first: &[u8]) -> String {
        let mut text = Vec::new();
        let keep = |text: &mut Vec<u8>, data: &[u8]| {
            text.extend_from_slice(&data[..data.len().min(4096)]);
        };
        let _ = self.decoder.feed(first, &mut |d| keep(&mut text, d));
        let end = Instant::now() + Duration::from_secs(1);
        let mut buffer = vec![0u8; http1::READ_BUFFER];
        while !self.decoder.done() && text.len() < 4096 {
            match tokio::time::timeout_at(end, conn.read(&mut buffer)).await {
                Ok(Ok((n, _))) if n > 0 => {
                    let _ = self.decoder.feed(&buffer[..n], &mut |d| keep(&mut text, d));
                }
                _ => break,
            }
        }
        super::super::error_body::reduce(&text)
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

#[cfg(test)]
mod tests;
