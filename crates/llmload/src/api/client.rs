//! One streamed exchange with the target: send, timestamp every received chunk, decode events.
//!
//! Times are taken with the monotonic clock on receipt of the bytes, before any parsing. A failure
//! (refused connection, HTTP error, timeout, broken or malformed stream, cancellation) is data:
//! the exchange keeps what it saw up to that point and says what went wrong.

use super::sse::SseDecoder;
use super::{Api, Counters, EventError};
use std::time::Duration;
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
    /// The run was stopped while the exchange was in flight.
    #[error("cancelled by a stop of the run")]
    Cancelled,
}

impl Failure {
    /// The kind as written in records.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Http { .. } => "http",
            Failure::Connect(_) => "connect",
            Failure::Timeout(_) => "timeout",
            Failure::Disconnected(_) => "disconnected",
            Failure::Malformed(_) => "malformed",
            Failure::Server(_) => "server_error",
            Failure::Cancelled => "cancelled",
        }
    }
}

/// What was observed during one exchange.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// When the request was handed to the connection.
    pub sent: Instant,
    /// Receipt time of each event that carried generated tokens, with how many it carried.
    pub token_events: Vec<(Instant, u32)>,
    /// Receipt time of the final event.
    pub done: Option<Instant>,
    /// Counters reported by the server.
    pub counters: Counters,
    /// Why the exchange did not complete, if it did not.
    pub failure: Option<Failure>,
    /// The request was sent a second time because its kept-alive connection had been closed.
    pub retried: bool,
}

impl Exchange {
    /// Receipt time of the first event carrying a generated token.
    pub fn first_token(&self) -> Option<Instant> {
        self.token_events.first().map(|&(t, _)| t)
    }

    /// Generated tokens seen in the stream.
    pub fn streamed_tokens(&self) -> u32 {
        self.token_events.iter().map(|&(_, k)| k).sum()
    }
}

/// A configured target endpoint.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The HTTP client (connection pool, headers, TLS).
    pub client: reqwest::Client,
    /// Base URL without a trailing slash.
    pub base_url: String,
    /// The API to speak.
    pub api: Api,
    /// Per-request limit from send to final event.
    pub timeout: Duration,
}

impl Endpoint {
    /// Sends one streaming request and reads it to its end, its failure, its timeout or `cancel`.
    pub async fn stream(&self, body: &serde_json::Value, cancel: &CancellationToken) -> Exchange {
        let request = self
            .client
            .post(format!("{}{}", self.base_url, self.api.path()))
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        let mut exchange = Exchange {
            sent: Instant::now(),
            token_events: Vec::new(),
            done: None,
            counters: Counters::default(),
            failure: None,
            retried: false,
        };
        let deadline = exchange.sent + self.timeout;
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Failure::Cancelled),
            read = tokio::time::timeout_at(deadline, read_stream(self.api, request, &mut exchange)) => {
                read.unwrap_or(Err(Failure::Timeout(self.timeout)))
            }
        };
        exchange.failure = outcome.err();
        exchange
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
            let retry = retry.expect("checked above");
            retry.send().await.map_err(send_failure)?
        }
        Err(e) => return Err(send_failure(e)),
    };
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        let body: String = body.chars().take(300).collect();
        return Err(Failure::Http {
            status: status.as_u16(),
            body: body.trim().to_owned(),
        });
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
        decoder.feed(&bytes, &mut |data| {
            on_event(api, data, now, exchange, &mut error)
        });
        if error.is_some() || exchange.done.is_some() {
            break;
        }
    }
    if let Some(error) = error {
        return Err(match error {
            EventError::Malformed(m) => Failure::Malformed(m),
            EventError::Server(m) => Failure::Server(m),
        });
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

fn on_event(
    api: Api,
    data: &[u8],
    now: Instant,
    exchange: &mut Exchange,
    error: &mut Option<EventError>,
) {
    if error.is_some() || exchange.done.is_some() {
        return;
    }
    match api.parse_event(data) {
        Ok(event) => {
            if event.tokens > 0 {
                exchange.token_events.push((now, event.tokens));
            }
            exchange.counters.merge(event.counters);
            if event.done {
                exchange.done = Some(now);
            }
        }
        Err(e) => *error = Some(e),
    }
}

/// The error hyper gives when a pooled connection turns out to be closed before any response.
fn is_stale_connection(error: &reqwest::Error) -> bool {
    !error.is_connect()
        && !error.is_timeout()
        && root_cause(error).contains("connection closed before message completed")
}

fn send_failure(error: reqwest::Error) -> Failure {
    let cause = root_cause(&error);
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
