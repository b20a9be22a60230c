//! Records: one per request, warmups and failures included, appended to `requests.jsonl` the
//! moment the request ends, so that nothing measured is lost when a run stops or a server fails.
//!
//! Each record carries its times (seconds since the attempt started), the server's counters and
//! the verdict of checking them against what was asked: a response whose prompt was not processed
//! in full, came from the cache, or has the wrong length is `invalid` and kept out of statistics.

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

pub mod canary;
mod phase;
pub use phase::{Arm, Phase};
mod check;
mod graph;
mod server;

pub use graph::GraphCall;
pub use server::{Drafts, PrefixReset, ServerCall, ServerProfile, ServerTimings, TimingSource};

/// Seconds since the attempt started.
pub type Seconds = f64;

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if hands the field by reference"
)]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Complete, and every counter the server reported matches the request.
    Ok,
    /// Complete, but a counter contradicts the request (see `error`).
    Invalid,
    /// Did not complete (see `error_kind`).
    Error,
    /// Stopped in flight by a stop of the run.
    Cancelled,
    /// Abandoned by the client on purpose (`--cancel-after`), as a user closes a stream: the
    /// connection closed at the planned point. Neither an error nor a response; counted apart.
    Abandoned,
    /// A best-effort response far short of the output asked for (a quarter of it or less,
    /// [`FAR_SHORT`]) and of its case's other responses: a stream the server cut, counted apart
    /// and in no figure. Its case decides (`summary::short`), so records are written `ok`; this
    /// is the status of the copy of a case's figures that counts it short, and of such responses
    /// in records written by earlier versions (read back, judged by their case the same way).
    Short,
}

/// A best-effort response is short when its output is at most 1/`FAR_SHORT` of the tokens
/// asked for.
pub const FAR_SHORT: u32 = 4;

/// Whether `generated` tokens are far short of the `asked` ones ([`FAR_SHORT`]).
pub fn far_short(generated: u32, asked: u32) -> bool {
    generated < asked && u64::from(generated) * u64::from(FAR_SHORT) <= u64::from(asked)
}

/// `--cancel-after`: where the client abandons a stream it was told to (its connection closed,
/// as a user's client would).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelAfter {
    /// Once this many generated tokens have arrived.
    Tokens(u32),
    /// This many ms after the request was sent.
    Ms(u64),
}

impl std::fmt::Display for CancelAfter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CancelAfter::Tokens(1) => f.write_str("1 token"),
            CancelAfter::Tokens(n) => write!(f, "{n} tokens"),
            CancelAfter::Ms(ms) => write!(f, "{ms} ms"),
        }
    }
}

/// One request, as written to `requests.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Case id, e.g. `in2048-c4-out256`.
    pub case: String,
    /// Warmup or measured.
    pub phase: Phase,
    /// Measured round number (1-based); absent for warmups.
    pub round: Option<u32>,
    /// Index of the request within its round (or warmup sequence).
    pub index: u32,
    /// Open loop: when the arrival process said the request should start.
    pub scheduled_s: Option<Seconds>,
    /// When the request was handed to the connection.
    pub sent_s: Seconds,
    /// When the first event carrying a generated token arrived.
    pub first_token_s: Option<Seconds>,
    /// When the final event arrived.
    pub done_s: Option<Seconds>,
    /// A request that did not complete: when the client stopped waiting for it (its failure,
    /// its timeout, or the run's stop); absent for a complete one, and in records written
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_s: Option<Seconds>,
    /// Time to first token, from `sent`.
    pub ttft_ms: Option<f64>,
    /// Complete-response time, from `sent`.
    pub e2e_ms: Option<f64>,
    /// Prompt tokens requested.
    pub input_tokens: u32,
    /// Output tokens requested.
    pub requested_output_tokens: u32,
    /// Prompt tokens the server counted (cached included).
    pub prompt_tokens: Option<u32>,
    /// Prompt tokens the server took from its cache.
    pub cached_tokens: Option<u32>,
    /// Tokens of the shared system prompt the prompt opened with: the only ones the server may
    /// take from its cache (absent: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shared_tokens: u32,
    /// `--dataset`: the entry the prompt came from (0-based, in file order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_entry: Option<u64>,
    /// Tokens the server says it generated.
    pub output_tokens: Option<u32>,
    /// Events that carried at least one generated token.
    pub token_events: u32,
    /// Generated tokens counted in the stream itself.
    pub streamed_tokens: u32,
    /// How the request ended.
    pub status: Status,
    /// Whether the server reported every counter needed to verify the response.
    pub verified: bool,
    /// `http`, `connect`, `timeout`, `disconnected`, `malformed`, `server_error`, `cancelled`,
    /// or `invalid` for a response that failed verification.
    pub error_kind: Option<ErrorKind>,
    /// What went wrong, in words.
    pub error: Option<String>,
    /// Remarks that do not change the status (e.g. stream count ≠ server count).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Receipt time of each token-carrying event, in ms since `sent`.
    pub event_ms: Vec<f64>,
    /// Tokens per event, present only when some event carried more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub event_tokens: Vec<u32>,
    /// Reasoning tokens (a reasoning model's thinking, told apart by the stream), when any.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u32,
    /// With reasoning: time from `sent` to the first answer token, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_ms: Option<f64>,
    /// Where the time went on the connection; absent when the request never had one (it could
    /// not connect), and in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<Phases>,
    /// The id llmload sent in the request's `X-Request-Id` header (unique within the attempt,
    /// over its shards); absent from records written before ids were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The `X-Request-Id` the server sent back, where it sent one: printable ASCII (anything else
    /// replaced by `?`), at most 128 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_request_id: Option<String>,
    /// The server's own timings of the request, where it reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerTimings>,
    /// A merged attempt: the shard (from 0) that sent the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
    /// Several `--url`: the replica (from 0, in the order given) the request went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u16>,
    /// `--repeat`: the repeat of the series the request belongs to (from 1); absent from a run
    /// without `--repeat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// `llmload ab`: the arm the request was sent in; absent from other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<Arm>,
    /// Multi-turn sessions: the session's id within the attempt (from 0); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// Multi-turn sessions: the turn's index in its session, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Multi-turn sessions: the turns its session was to have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// Multi-turn sessions: the prompt tokens before the turn's new user message (the history,
    /// shared prefix included), the most the server may serve from its cache; absent when the
    /// server could not show them (the response is then unverified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_tokens: Option<u32>,
    /// `--dag`: the call's place in its session graph; absent otherwise (boxed: most records
    /// have none, and a record's size counts where many are held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<Box<GraphCall>>,
    /// `--cancel-after`: the point at which the client was to abandon this request's stream
    /// (`abandoned` when it got there, `ok` when the response ended first); absent for the
    /// requests it was to read to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_after: Option<CancelAfter>,
    /// `--model` with a mix: the model the request named (drawn for it from the seed); absent
    /// for a run of one model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Embeddings and rerank (`--api embeddings`, `--api rerank`): the batch the request
    /// carried and what its answer held; absent for a generation request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooling: Option<Pooling>,
    /// Chat with images (`--images`): the images after the prompt's text and what they cost;
    /// `input_tokens` is the text's length, and the server's `prompt_tokens` is checked against
    /// the two together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Images>,
    /// `--canaries`: the canary prompt, its output and its comparison with the reference;
    /// absent from every other request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<Box<canary::Canary>>,
}

/// An embeddings or rerank request: several inputs (documents, for rerank) of `input_tokens`
/// each, answered at once, with no token generated and nothing streamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pooling {
    /// Inputs the request carried.
    pub inputs: u32,
    /// Prompt tokens the server was to process for the whole request: `inputs` ×
    /// `input_tokens` (for rerank, each (query, document) pair is an input of `input_tokens`).
    pub tokens: u32,
    /// Results the answer held (vectors, or scores); absent when no answer was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<u32>,
    /// Embeddings: the length of the vectors, all alike; absent for rerank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimension: Option<u32>,
}

/// The images of a chat request (`--images`): how many, their size, and the prompt tokens they
/// cost together as the server's counts showed at setup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Images {
    /// Images after the prompt's text.
    pub count: u32,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// Prompt tokens the images cost together; absent where the server's counts did not show
    /// what an image costs (the response is then unverified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
}

/// Where a request stands in a multi-turn session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnMeta {
    /// The session's id within the attempt.
    pub session: u64,
    /// The turn, from 1.
    pub turn: u32,
    /// The session's turns.
    pub turns: u32,
    /// Prompt tokens before the new user message (may come from the cache); `None` when the
    /// server could not show them.
    pub history_tokens: Option<u32>,
}

/// Where one request's time went on its connection. A new connection's setup (`connect_ms`,
/// `tls_ms`) happens before `sent` and is no part of any latency; the other marks are ms from
/// `sent`, as `ttft_ms` is, each absent when the exchange ended before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// A new connection: from asking for it to its TCP handshake done (the name looked up
    /// first), ms. Absent on a kept-alive connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<f64>,
    /// A new `https://` connection: its TLS handshake, ms. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ms: Option<f64>,
    /// The request's last byte handed to the kernel (when the write returned: a fast server's
    /// head may be stamped before it), ms from `sent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_ms: Option<f64>,
    /// The response head whole, ms from `sent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_ms: Option<f64>,
    /// The first event of the body (any event, token or not), ms from `sent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_event_ms: Option<f64>,
    /// The request went on a kept-alive connection.
    pub reused: bool,
}

/// Why a request did not end `ok`, as `requests.jsonl` and the summary name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Stopped by the run (a guard rule, a signal) before it ended.
    Cancelled,
    /// The connection could not be opened.
    Connect,
    /// The connection closed before the final event.
    Disconnected,
    /// An HTTP status other than 200.
    Http,
    /// Complete, but its counters contradict the request.
    Invalid,
    /// The stream could not be decoded.
    Malformed,
    /// The server reported an error inside the stream.
    ServerError,
    /// No final event within `--timeout`.
    Timeout,
}

impl ErrorKind {
    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Connect => "connect",
            ErrorKind::Disconnected => "disconnected",
            ErrorKind::Http => "http",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Malformed => "malformed",
            ErrorKind::ServerError => "server_error",
            ErrorKind::Timeout => "timeout",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a request was.
#[derive(Clone, Debug)]
pub struct RequestMeta {
    /// Case id.
    pub case: String,
    /// Warmup or measured.
    pub phase: Phase,
    /// Measured round (1-based).
    pub round: Option<u32>,
    /// Index within the round.
    pub index: u32,
    /// Prompt tokens requested.
    pub input_tokens: u32,
    /// Output tokens requested.
    pub output_tokens: u32,
    /// Tokens of the shared system prompt that opens the prompt (0: none); the server may serve
    /// these, and only these, from its cache.
    pub shared_tokens: u32,
    /// Tokens the chat template puts before the user's text, the same in every prompt (0 for
    /// token prompts): a server that reuses its cache though asked not to may serve these.
    pub template_head: u32,
    /// Whether the prompt was built to exactly `input_tokens`; false for a dataset's text sent as
    /// it is, whose length the server's count tells.
    pub exact_input: bool,
    /// `--dataset`: the entry the prompt came from.
    pub dataset_entry: Option<u64>,
    /// Open loop: scheduled start.
    pub scheduled: Option<Instant>,
    /// Continuous and open loops: when the runner launched it (its send is no earlier).
    pub launched: Option<Instant>,
    /// Multi-turn sessions: the session and turn.
    pub turn: Option<TurnMeta>,
    /// `--dag`: the call's place in its session graph (boxed, as the record's).
    pub graph: Option<Box<GraphCall>>,
    /// The id sent in the request's `X-Request-Id` header.
    pub request_id: Option<String>,
    /// `--cancel-after`: where the client abandons this request's stream.
    pub cancel_after: Option<CancelAfter>,
    /// Embeddings and rerank: the inputs the request carries, each of `input_tokens`; 0 for a
    /// generation request.
    pub inputs: u32,
    /// Chat with images: the images after the prompt's text, and what they cost.
    pub images: Option<Images>,
    /// A mix of models: the model the request names.
    pub model: Option<String>,
    /// `--canaries`: the canary this request is (its prompt, whether it is the reference).
    pub canary: Option<Box<canary::Canary>>,
}

impl Record {
    /// Output tokens for throughput: the server's counter, else the stream's count.
    pub fn generated_tokens(&self) -> u32 {
        self.output_tokens.unwrap_or(self.streamed_tokens)
    }

    /// The tokens of the request's work, which a case's throughput counts: the generated
    /// tokens, or for embeddings and rerank the prompt tokens the server processed (its own
    /// count, else the tokens sent).
    pub fn work_tokens(&self) -> u32 {
        match &self.pooling {
            Some(p) => self.prompt_tokens.unwrap_or(p.tokens),
            None => self.generated_tokens(),
        }
    }

    /// Inter-token latencies in ms: an event carrying k tokens contributes k gaps of gap/k.
    pub fn itl_ms(&self) -> impl Iterator<Item = f64> + '_ {
        self.event_ms
            .windows(2)
            .enumerate()
            .flat_map(move |(i, w)| {
                let k = self.event_tokens.get(i + 1).copied().unwrap_or(1).max(1);
                std::iter::repeat_n((w[1] - w[0]) / f64::from(k), k as usize)
            })
    }

    /// Whether the events say how many tokens each carried: they said so themselves (some
    /// carried more than one), or the server's count equals the events (one each).
    pub fn tokens_per_event_known(&self) -> bool {
        !self.event_tokens.is_empty() || self.output_tokens == Some(self.token_events)
    }

    /// Raw gaps between consecutive token-carrying events, in ms.
    pub fn chunk_gaps_ms(&self) -> impl Iterator<Item = f64> + '_ {
        self.event_ms.windows(2).map(|w| w[1] - w[0])
    }

    /// (time, tokens) of each token-carrying event, seconds since the attempt started: the
    /// tokens of work as they arrived. Embeddings and rerank stream nothing: their work
    /// ([`Record::work_tokens`]) arrives with the answer, at `done_s`.
    pub fn event_times(&self) -> impl Iterator<Item = (Seconds, u32)> + '_ {
        let answered = self
            .pooling
            .and(self.done_s)
            .filter(|_| self.status == Status::Ok)
            .map(|done| (done, self.work_tokens()));
        self.event_ms
            .iter()
            .enumerate()
            .map(|(i, ms)| {
                let tokens = self.event_tokens.get(i).copied().unwrap_or(1);
                (self.sent_s + ms / 1e3, tokens)
            })
            .chain(answered)
    }

    /// The last moment the request occupied the server: its final event, else the later of
    /// its last token event and when the client stopped waiting for it (a failed or cancelled
    /// request is in flight until then), else its send.
    pub fn last_seen(&self) -> Seconds {
        self.done_s.unwrap_or_else(|| {
            let last_event = self.sent_s + self.event_ms.last().copied().unwrap_or(0.0) / 1e3;
            self.ended_s
                .map_or(last_event, |ended| ended.max(last_event))
        })
    }

    /// Time per output token after the first: (complete − TTFT) / (output tokens − 1).
    pub fn tpot_ms(&self) -> Option<f64> {
        let n = self.generated_tokens();
        let decode_ms = self.e2e_ms? - self.ttft_ms?;
        (n > 1).then(|| decode_ms / f64::from(n - 1))
    }
}

/// A measured request of round 1 for tests: one prompt token, one output token, no id.
#[cfg(test)]
pub(crate) fn test_meta() -> RequestMeta {
    RequestMeta {
        case: "c".into(),
        phase: Phase::Measured,
        round: Some(1),
        index: 0,
        input_tokens: 1,
        output_tokens: 1,
        shared_tokens: 0,
        template_head: 0,
        exact_input: true,
        dataset_entry: None,
        scheduled: None,
        launched: None,
        turn: None,
        graph: None,
        canary: None,
        request_id: None,
        cancel_after: None,
        inputs: 0,
        images: None,
        model: None,
    }
}

/// A measured `ok` record for tests: sent at `sent_s`, one token per event at `event_ms` after
/// the send (TTFT the first, complete response the last).
#[cfg(test)]
pub(crate) fn ok_record(
    sent_s: Seconds,
    scheduled_s: Option<Seconds>,
    event_ms: Vec<f64>,
) -> Record {
    let ttft = event_ms.first().copied();
    let e2e = event_ms.last().copied();
    let tokens = crate::num::count(event_ms.len());
    Record {
        case: "c".into(),
        phase: Phase::Measured,
        round: None,
        index: 0,
        scheduled_s,
        sent_s,
        first_token_s: ttft.map(|t| sent_s + t / 1e3),
        done_s: e2e.map(|t| sent_s + t / 1e3),
        ended_s: None,
        ttft_ms: ttft,
        e2e_ms: e2e,
        input_tokens: 8,
        requested_output_tokens: tokens,
        prompt_tokens: Some(8),
        cached_tokens: Some(0),
        shared_tokens: 0,
        dataset_entry: None,
        output_tokens: Some(tokens),
        token_events: tokens,
        streamed_tokens: tokens,
        status: Status::Ok,
        verified: true,
        error_kind: None,
        error: None,
        notes: Vec::new(),
        event_ms,
        event_tokens: Vec::new(),
        reasoning_tokens: 0,
        answer_ms: None,
        phases: None,
        request_id: None,
        server_request_id: None,
        server: None,
        shard: None,
        replica: None,
        repeat: None,
        arm: None,
        session: None,
        turn: None,
        turns: None,
        history_tokens: None,
        graph: None,
        canary: None,
        cancel_after: None,
        pooling: None,
        images: None,
        model: None,
    }
}

#[cfg(test)]
mod tests;
