//! The prefix-cache hit rate of a shared system prompt, from the servers' own counters, over a
//! case's `ok` responses.

use crate::record::Record;
use serde::{Deserialize, Serialize};

/// The prefix-cache hit rate of a shared system prompt, from the servers' own counters
/// (`cache_n`, `cached_tokens`) on the `ok` responses that reported them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefixCache {
    /// Tokens of the shared system prompt.
    pub shared_tokens: u32,
    /// Responses whose server reported its cached tokens.
    pub n: u32,
    /// Σ cached prompt tokens over those responses.
    pub cached_tokens: u64,
    /// `cached_tokens / (n × shared_tokens)`: the share of shared tokens served from the cache.
    pub hit_rate: f64,
    /// Responses that took at least one token from the cache.
    pub responses_hit: u32,
}

impl PrefixCache {
    /// Over the `ok` responses among `records` that opened with a shared system prompt; `None`
    /// without one, or when no server reported its cached tokens.
    pub fn of(records: &[&Record]) -> Option<PrefixCache> {
        let mut acc = PrefixAcc::default();
        for r in records {
            acc.add(r);
        }
        acc.finish()
    }
}

/// Σ of the prefix-cache counters, one `ok` record at a time.
#[derive(Clone, Debug, Default)]
pub(super) struct PrefixAcc {
    shared: u32,
    n: u32,
    cached_tokens: u64,
    hit: u32,
}

impl PrefixAcc {
    pub(super) fn add(&mut self, r: &Record) {
        // A session's turn may take its whole history from the cache: its hits are by turn.
        if r.session.is_some() {
            return;
        }
        self.shared = self.shared.max(r.shared_tokens);
        if let (true, Some(c)) = (r.shared_tokens > 0, r.cached_tokens) {
            self.n += 1;
            self.cached_tokens += u64::from(c);
            self.hit += u32::from(c > 0);
        }
    }

    pub(super) fn finish(self) -> Option<PrefixCache> {
        (self.shared > 0 && self.n > 0).then(|| PrefixCache {
            shared_tokens: self.shared,
            n: self.n,
            cached_tokens: self.cached_tokens,
            hit_rate: self.cached_tokens as f64 / (f64::from(self.n) * f64::from(self.shared)),
            responses_hit: self.hit,
        })
    }
}
