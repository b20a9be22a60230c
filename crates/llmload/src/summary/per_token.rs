//! A case's per-token figures: ITL, the gaps between events, TPOT and the decode rate. A case
//! keeps two sets: its streamed responses', and its buffered responses' held apart until the
//! case says whether its path buffers ([`super::bursts::MIN_PATH_SHARE`]).

use super::itl::ItlFigures;
use crate::record::Record;
use crate::stats::{Label, Samples};

/// Per-token figures of some of a case's `ok` responses.
#[derive(Clone, Debug, Default)]
pub struct PerToken {
    /// Per-token gaps.
    pub itl: ItlFigures,
    /// Gaps between events.
    pub chunk_gap: Samples,
    /// Time per output token.
    pub tpot: Samples,
    /// Decode rates (1 / TPOT).
    pub decode_rate: Samples,
}

impl PerToken {
    /// Adds an `ok` response, its samples labelled with `label`.
    pub fn add(&mut self, r: &Record, label: Label) {
        self.itl.add(r, label);
        r.chunk_gaps_ms().for_each(|v| self.chunk_gap.push(v));
        if let Some(t) = r.tpot_ms() {
            self.tpot.push_in(t, label);
            if t > 0.0 {
                self.decode_rate.push_in(1e3 / t, label);
            }
        }
    }

    /// Adds every response of `other`.
    pub fn merge(&mut self, other: PerToken) {
        self.itl.merge(other.itl);
        self.chunk_gap.merge(other.chunk_gap);
        self.tpot.merge(other.tpot);
        self.decode_rate.merge(other.decode_rate);
    }
}
