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
    /// Gaps between events, of the responses whose events are not one token each: those of
    /// the others are their ITL gaps, kept once in `itl` ([`PerToken::chunk_gaps`] joins them).
    chunk_gap: Samples,
    /// Time per output token.
    pub tpot: Samples,
    /// Decode rates (1 / TPOT).
    pub decode_rate: Samples,
}

impl PerToken {
    /// Adds an `ok` response, its samples labelled with `label`.
    pub fn add(&mut self, r: &Record, label: Label) {
        if !self.itl.add(r, label) {
            r.chunk_gaps_ms().for_each(|v| self.chunk_gap.push(v));
        }
        if let Some(t) = r.tpot_ms() {
            self.tpot.push_in(t, label);
            if t > 0.0 {
                self.decode_rate.push_in(1e3 / t, label);
            }
        }
    }

    /// The gaps between events of every response: those kept apart, and the ITL gaps of the
    /// responses whose events carried one token each (the same values).
    pub fn chunk_gaps(&self) -> Samples {
        let mut all = self.itl.values();
        all.merge(self.chunk_gap.clone());
        all
    }

    /// Adds every response of `other`.
    pub fn merge(&mut self, other: PerToken) {
        self.itl.merge(other.itl);
        self.chunk_gap.merge(other.chunk_gap);
        self.tpot.merge(other.tpot);
        self.decode_rate.merge(other.decode_rate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Status;

    fn response(event_ms: Vec<f64>, event_tokens: Vec<u32>, output_tokens: u32) -> Record {
        let sink = crate::api::client::Exchange::new();
        let meta = crate::record::test_meta();
        let mut r = crate::runner::exchange::record(meta, &sink, sink.sent, false);
        r.status = Status::Ok;
        r.token_events = crate::num::count(event_ms.len());
        r.output_tokens = Some(output_tokens);
        r.event_ms = event_ms;
        r.event_tokens = event_tokens;
        r
    }

    #[test]
    fn gaps_between_events_are_kept_once_where_they_are_the_itl_gaps() {
        let mut figures = PerToken::default();
        let label = Label::ROUND_ONE;
        // One token per event (counted by the server): its event gaps are its ITL gaps.
        figures.add(&response(vec![100.0, 110.0, 125.0], vec![], 3), label);
        // Three tokens in its last event, said so: its event gaps are its own.
        figures.add(
            &response(vec![100.0, 110.0, 140.0], vec![1, 1, 3], 5),
            label,
        );
        // More tokens than events, unsaid: no ITL, event gaps only.
        figures.add(&response(vec![0.0, 40.0], vec![], 8), label);
        assert_eq!(
            figures.chunk_gap.len(),
            3,
            "only the two responses not one token each"
        );
        // Every response's gaps between events, each once: 10, 15 | 10, 30 | 40.
        let all = figures.chunk_gaps().distribution().expect("gaps");
        assert_eq!(
            (all.n, all.min, all.median, all.max, all.mean),
            (5, 10.0, 15.0, 40.0, 21.0)
        );
        let (itl, _) = figures.itl.finish();
        assert_eq!(itl.expect("itl").n, 2 + 4);
    }
}
