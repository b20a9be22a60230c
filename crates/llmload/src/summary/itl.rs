//! Inter-token latency, only where it is known per token. A response's gaps between events are
//! per-token gaps only when the events say how many tokens each carried (llama.cpp's token
//! lists, usage on every chunk, the client's tokenizer) or when the server's count equals the
//! events (one token each). A server that sends several tokens per chunk without saying how many
//! gives gaps between chunks: those are kept as `chunk_gap_ms`, never called ITL, and the case
//! says why its ITL is missing; TPOT stays the per-token figure.

use crate::record::Record;
use crate::stats::{Distribution, Label, Samples};

/// A case's per-token gaps, and the responses whose tokens per event are unknown.
#[derive(Clone, Debug, Default)]
pub struct ItlFigures {
    /// The gaps of the responses whose events carried one token each (their gaps between
    /// events too).
    gaps: Samples,
    /// The gaps of the responses some of whose events carried several tokens.
    split: Samples,
    known: u32,
    unknown: u32,
    /// Of the unknown: the server's tokens and the events they came in.
    unknown_tokens: u64,
    unknown_events: u64,
    /// Of the unknown: responses without any count from the server.
    uncounted: u32,
}

impl ItlFigures {
    /// Adds an `ok` response, its gaps labelled with `label`. True when its gaps between events
    /// are its ITL gaps (one token per event), which the caller then need not keep twice.
    pub fn add(&mut self, r: &Record, label: Label) -> bool {
        if r.event_ms.len() < 2 {
            return false;
        }
        if r.tokens_per_event_known() {
            self.known += 1;
            let one_each = r.event_tokens.iter().skip(1).all(|&k| k <= 1);
            let gaps = if one_each {
                &mut self.gaps
            } else {
                &mut self.split
            };
            r.itl_ms().for_each(|v| gaps.push_in(v, label));
            return one_each;
        }
        self.unknown += 1;
        match r.output_tokens {
            Some(n) => {
                self.unknown_tokens += u64::from(n);
                self.unknown_events += u64::from(r.token_events);
            }
            None => self.uncounted += 1,
        }
        false
    }

    /// The values of the gaps of the responses whose events carried one token each, without
    /// what they belong to.
    pub fn values(&self) -> Samples {
        self.gaps.values()
    }

    /// Adds every response of `other`.
    pub fn merge(&mut self, other: ItlFigures) {
        self.gaps.merge(other.gaps);
        self.split.merge(other.split);
        self.known += other.known;
        self.unknown += other.unknown;
        self.unknown_tokens += other.unknown_tokens;
        self.unknown_events += other.unknown_events;
        self.uncounted += other.uncounted;
    }

    /// The distribution of per-token gaps, and why responses are missing from it (absent when
    /// none is).
    pub fn finish(mut self) -> (Option<Distribution>, Option<String>) {
        self.gaps.merge(std::mem::take(&mut self.split));
        let reason = (self.unknown > 0).then(|| {
            let all = self.known + self.unknown;
            let mut why = Vec::new();
            let counted = self.unknown - self.uncounted;
            if counted > 0 {
                why.push(format!(
                    "{counted} carried more tokens ({}) than events ({}) without saying how many \
                     each held",
                    self.unknown_tokens, self.unknown_events
                ));
            }
            if self.uncounted > 0 {
                why.push(format!(
                    "{} had no token count from the server",
                    self.uncounted
                ));
            }
            format!(
                "per-token ITL unknown for {} of {all} responses: {}; the gaps between events \
                 are chunk_gap_ms, and TPOT is the per-token figure",
                self.unknown,
                why.join(", ")
            )
        });
        (self.gaps.distribution(), reason)
    }
}
