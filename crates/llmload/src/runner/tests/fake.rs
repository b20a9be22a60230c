//! A scripted transport: each request plays a timeline on tokio's clock (its head after a
//! while, tokens at given gaps, then its end, a failure, or nothing at all), within the same
//! bounds as the real client's exchanges (a stop first, then the per-request deadline). Under a
//! paused clock every instant it takes is exact, and it logs each call's send and end.

use crate::api::client::{bounded, Exchange, Failure, Pending, Timing, Transport};
use crate::api::{Body, Counters};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What one request does, each step timed from the one before, starting at its send.
#[derive(Clone, Debug)]
pub(super) struct Script {
    /// The response head arrives this long after the send.
    pub head: Duration,
    /// Each token event, one token each, this long after the step before it.
    pub gaps: Vec<Duration>,
    /// After the last token.
    pub end: End,
}

/// How a scripted request ends.
#[derive(Clone, Debug)]
pub(super) enum End {
    /// The final event, this long after the last token, with the counters the request asked
    /// for (its prompt's tokens, none cached, the tokens streamed).
    Done(Duration),
    /// This failure, this long after the last token.
    Fail(Duration, Failure),
    /// Never: the deadline or a stop ends it.
    Hang,
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

impl Script {
    /// A complete response: the head and first token `ttft` ms after the send, `tokens` tokens
    /// in all, `gap` ms apart, the final event with the last.
    pub(super) fn ok(ttft: u64, tokens: u32, gap: u64) -> Script {
        let mut gaps = vec![ms(0)];
        gaps.extend((1..tokens).map(|_| ms(gap)));
        Script {
            head: ms(ttft),
            gaps,
            end: End::Done(ms(0)),
        }
    }

    /// A complete response of `tokens` tokens that takes `total` ms from send to end, its
    /// tokens evenly apart (`total` a multiple of `tokens`).
    pub(super) fn lasting(total: u64, tokens: u32) -> Script {
        let gap = total / u64::from(tokens);
        Script::ok(gap, tokens, gap)
    }

    /// An HTTP error `after` ms after the send, before any token.
    pub(super) fn http_error(after: u64, status: u16) -> Script {
        Script {
            head: ms(after),
            gaps: Vec::new(),
            end: End::Fail(
                ms(0),
                Failure::Http {
                    status,
                    body: "scripted".into(),
                },
            ),
        }
    }

    /// A request whose head comes `head` ms after the send and then nothing.
    pub(super) fn hang(head: u64) -> Script {
        Script {
            head: ms(head),
            gaps: Vec::new(),
            end: End::Hang,
        }
    }
}

/// One call, as the fake saw it.
#[derive(Clone, Debug)]
pub(super) struct Call {
    /// When it was sent.
    pub sent: Instant,
    /// When it ended (complete, failed, timed out or stopped).
    pub ended: Instant,
    /// Why it did not complete.
    pub failure: Option<Failure>,
    /// The model its body named, if any.
    pub model: Option<String>,
}

type Scripter = Box<dyn Fn(usize) -> Script + Send + Sync>;

/// The fake: the `n`-th call (from 0, in the order calls arrive) plays `script(n)`.
pub(super) struct Fake {
    script: Scripter,
    timeout: Duration,
    calls: AtomicUsize,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    log: Mutex<Vec<(usize, Call)>>,
}

impl Fake {
    /// A fake whose `n`-th call plays `script(n)`, each within `timeout`.
    pub(super) fn new(
        timeout: Duration,
        script: impl Fn(usize) -> Script + Send + Sync + 'static,
    ) -> Fake {
        Fake {
            script: Box::new(script),
            timeout,
            calls: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            most_in_flight: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
        }
    }

    /// Every ended call, in the order they were made.
    pub(super) fn calls(&self) -> Vec<Call> {
        let mut log = self.log.lock().expect("the log").clone();
        log.sort_by_key(|(n, _)| *n);
        log.into_iter().map(|(_, call)| call).collect()
    }

    /// The most calls that were in flight at once.
    pub(super) fn most_in_flight(&self) -> usize {
        self.most_in_flight.load(Ordering::SeqCst)
    }

    /// Calls made so far, ended or not.
    pub(super) fn made(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Transport for Fake {
    fn exchange<'a>(&'a self, body: Body, cancel: &'a CancellationToken) -> Pending<'a> {
        Box::pin(async move {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_in_flight.fetch_max(now, Ordering::SeqCst);
            let script = (self.script)(n);
            let mut exchange = Exchange::new();
            let sent = exchange.sent;
            let failure = {
                let read = std::pin::pin!(play(&script, &body, &mut exchange));
                bounded(read, cancel, sent, self.timeout).await.err()
            };
            exchange.failure = failure;
            exchange.ended = Some(Instant::now());
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            let named: Option<serde_json::Value> = serde_json::from_slice(&body.json).ok();
            let call = Call {
                sent,
                ended: Instant::now(),
                failure: exchange.failure.clone(),
                model: named.and_then(|b| b["model"].as_str().map(str::to_owned)),
            };
            self.log.lock().expect("the log").push((n, call));
            exchange
        })
    }
}

/// Plays `script` into `exchange`.
async fn play(script: &Script, body: &Body, exchange: &mut Exchange) -> Result<(), Failure> {
    let mut at = exchange.sent + script.head;
    tokio::time::sleep_until(at).await;
    exchange.timing = Some(Timing {
        reused: true,
        written: Some(exchange.sent),
        head: Some(Instant::now()),
        ..Timing::default()
    });
    for gap in &script.gaps {
        at += *gap;
        tokio::time::sleep_until(at).await;
        exchange.token_events.push(Instant::now(), 1);
    }
    match &script.end {
        End::Done(gap) => {
            tokio::time::sleep_until(at + *gap).await;
            let prompt: serde_json::Value =
                serde_json::from_slice(&body.json).expect("a JSON body");
            exchange.counters = Counters {
                prompt_tokens: prompt["prompt"]
                    .as_array()
                    .map(|p| crate::num::count(p.len())),
                cached_tokens: Some(0),
                output_tokens: Some(exchange.streamed_tokens()),
            };
            exchange.done = Some(Instant::now());
            Ok(())
        }
        End::Fail(gap, failure) => {
            tokio::time::sleep_until(at + *gap).await;
            Err(failure.clone())
        }
        End::Hang => std::future::pending().await,
    }
}
