//! What one exchange observed: its marks on the connection, its token events, its counters and
//! how it ended, kept in the order the bytes arrived.

use super::super::pooling::Pooled;
use super::super::server_timings::Reported;
use super::super::Counters;
use super::{Failure, Setup, TokenEvents};
use crate::tokenizer::Tokenizer;
use tokio::time::Instant;

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
    /// `--cancel-after N` tokens: the stream is abandoned once this many have arrived.
    pub abandon_at: u32,
    /// `--cancel-after DURATION`: the stream is abandoned this many ms after its send.
    pub abandon_in: Option<u64>,
    /// When the client abandoned the stream (`--cancel-after`), if it did.
    pub abandoned: Option<Instant>,
    /// Tokens streamed so far.
    pub(super) streamed: u32,
    /// Usage on every chunk was asked for: a chunk's usage counts the tokens so far.
    pub(super) usage_per_chunk: bool,
    /// Tokens of reasoning (thinking before the answer), where the stream tells them apart.
    pub reasoning_tokens: u32,
    /// The first answer token, when the stream carried reasoning before it.
    pub first_answer: Option<Instant>,
    /// The streamed text, kept only to be counted by the client's tokenizer after the stream.
    pub text: Option<StreamText>,
    /// How the client counted the stream's tokens, when it did (a note for the record).
    pub counted_by_client: Option<String>,
    /// A session's answer text, kept when its body asked (within the same bound as `text`).
    pub answer: Option<String>,
    /// With `answer`: its length in bytes after each token event.
    pub answer_ends: Vec<u32>,
    /// Where the time went on the connection, once the request had one.
    pub timing: Option<Timing>,
    /// When a chunk said its `finish_reason`, or the last event after it: a stream that ends
    /// cleanly there without `[DONE]` is complete at this moment.
    pub finished: Option<Instant>,
    /// The stream ended after its `finish_reason` without `[DONE]`, and was taken as complete.
    pub ended_without_done: bool,
    /// The `X-Request-Id` the server sent back in the response head, made safe to keep.
    pub server_request_id: Option<String>,
    /// The server's own timings of the response, from the last event that carried them.
    pub server: Option<Reported>,
    /// A pooling API (embeddings, rerank): the inputs the request carried.
    pub inputs: u32,
    /// A pooling API: what its answer held, once it was read whole.
    pub pooled: Option<Pooled>,
    /// When the client stopped reading it (its end, failure, timeout or cancel), however it
    /// ended: a request that failed occupied its connection until then.
    pub ended: Option<Instant>,
    /// Which of several `--url`s served it (0-based, in the order given); `None` with one.
    pub replica: Option<u16>,
}

/// Where one exchange's time went on its connection: the setup of a new connection (before
/// `sent`), then the marks of the exchange itself, each taken once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// A new connection's setup; `None` on a kept-alive one.
    pub setup: Option<Setup>,
    /// The request went on a kept-alive connection.
    pub reused: bool,
    /// When the request's last byte was handed to the kernel.
    pub written: Option<Instant>,
    /// When the response head was whole (the receive stamp of its last bytes).
    pub head: Option<Instant>,
    /// When the first event of the body (any event) arrived.
    pub first_event: Option<Instant>,
}

/// A stream's text and where each token-carrying chunk of it ended, for the client's tokenizer.
#[derive(Clone, Debug, Default)]
pub struct StreamText {
    /// The text of the token-carrying chunks, in order.
    pub text: String,
    /// The byte offset in `text` where each token-carrying chunk ended (4 bytes a chunk: the
    /// text is bounded far below 4 GiB).
    pub ends: Vec<u32>,
    /// The server reported its tokens per chunk: nothing to count.
    pub counted_by_server: bool,
    /// The text outgrew its bound and was dropped.
    pub overflowed: bool,
}

/// The most text kept per stream for counting: this many bytes per token asked for (no token of
/// any published vocabulary is longer).
pub(super) const TEXT_BYTES_PER_TOKEN: usize = 64;

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
            abandon_at: u32::MAX,
            abandon_in: None,
            abandoned: None,
            streamed: 0,
            usage_per_chunk: false,
            reasoning_tokens: 0,
            first_answer: None,
            text: None,
            counted_by_client: None,
            answer: None,
            answer_ends: Vec::new(),
            timing: None,
            server_request_id: None,
            server: None,
            finished: None,
            ended_without_done: false,
            inputs: 0,
            pooled: None,
            ended: None,
            replica: None,
        }
    }

    /// Counts the stream's tokens with the client's tokenizer, chunk by chunk, where the server
    /// did not say how many each chunk carried: each token-carrying event gets the tokens whose
    /// text ended in it (an event whose text completes none is dropped).
    pub fn count_with(&mut self, tokenizer: &Tokenizer) {
        let Some(text) = self.text.take() else {
            return;
        };
        if text.counted_by_server || text.ends.len() != self.token_events.len() {
            return;
        }
        if text.overflowed {
            self.counted_by_client = Some(format!(
                "the stream's text outgrew what is kept for counting: one token per chunk, not \
                 counted by {}",
                tokenizer.source
            ));
            return;
        }
        let Some(counts) = tokenizer.split(&text.text, &text.ends) else {
            return;
        };
        let before = self.streamed;
        self.token_events.recount(&counts);
        self.streamed = self.streamed_tokens();
        self.counted_by_client = Some(format!(
            "tokens counted by the client's tokenizer ({}): {} in {} chunks (the server did not \
             say how many each chunk carried)",
            tokenizer.source, self.streamed, before
        ));
    }

    /// An event arrived `now`: the marks before it are kept in order on the wire. A read without
    /// a kernel stamp is timed when it returned, which can be after a later read's stamp, so
    /// nothing before this event (the head, the first event, the first answer, the token events)
    /// may be later than it.
    pub(super) fn arrived(&mut self, now: Instant) {
        if let Some(timing) = &mut self.timing {
            timing.first_event.get_or_insert(now);
            for at in [&mut timing.head, &mut timing.first_event]
                .into_iter()
                .flatten()
            {
                *at = (*at).min(now);
            }
        }
        if let Some(first) = &mut self.first_answer {
            *first = (*first).min(now);
        }
        self.token_events.arrived_by(now);
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
