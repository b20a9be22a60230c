//! A case's measured rounds, one record at a time: each round's requests, `ok` responses, span
//! and tokens, and its summary.

use crate::record::{Record, Status};
use crate::workload::shape::Case;
use serde::{Deserialize, Serialize};

/// One measured round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundSummary {
    /// `--repeat`: the repeat of the series the round belongs to (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Round number (1-based; within its repeat).
    pub round: u32,
    /// Every request of the round ended `ok`, or abandoned as planned (`--cancel-after`).
    pub complete: bool,
    /// Requests that ended `ok`.
    pub responses_ok: u32,
    /// Σ output tokens of its `ok` responses (embeddings and rerank: Σ prompt tokens the
    /// server processed, the tokens of their work).
    pub output_tokens: u64,
    /// Last completion − first send, in seconds.
    pub duration_s: f64,
    /// `output_tokens / duration_s`.
    pub throughput_tps: f64,
}

/// A round's figures so far.
#[derive(Clone, Debug)]
pub(super) struct RoundAcc {
    requests: u32,
    ok: u32,
    abandoned: u32,
    first_send: f64,
    last_done: f64,
    output_tokens: u64,
}

impl Default for RoundAcc {
    fn default() -> RoundAcc {
        RoundAcc {
            requests: 0,
            ok: 0,
            abandoned: 0,
            first_send: f64::INFINITY,
            last_done: f64::NEG_INFINITY,
            output_tokens: 0,
        }
    }
}

impl RoundAcc {
    /// Adds one measured record of the round.
    pub(super) fn add(&mut self, r: &Record) {
        self.requests += 1;
        self.first_send = self.first_send.min(r.sent_s);
        self.abandoned += u32::from(r.status == Status::Abandoned);
        if r.status == Status::Ok {
            self.ok += 1;
            self.last_done = r.done_s.map_or(self.last_done, |d| self.last_done.max(d));
            self.output_tokens += u64::from(r.work_tokens());
        }
    }

    /// First send to last `ok` completion; `None` without an `ok` response.
    pub(super) fn span(&self) -> Option<(f64, f64)> {
        self.last_done
            .is_finite()
            .then(|| (self.first_send, self.last_done.max(self.first_send)))
    }

    /// The round's summary, `(repeat, round)` its key (repeat 0: none).
    pub(super) fn summary(&self, case: &Case, (repeat, round): (u32, u32)) -> RoundSummary {
        let duration_s = (self.last_done - self.first_send).max(0.0);
        RoundSummary {
            repeat: (repeat > 0).then_some(repeat),
            round,
            complete: self.ok + self.abandoned == self.requests
                && self.requests == case.concurrency,
            responses_ok: self.ok,
            output_tokens: self.output_tokens,
            duration_s,
            throughput_tps: if duration_s > 0.0 {
                self.output_tokens as f64 / duration_s
            } else {
                0.0
            },
        }
    }
}
