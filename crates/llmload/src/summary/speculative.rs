//! Speculative decoding, per case, as the server reported it for each `ok` response: the draft
//! tokens it proposed and those the target model accepted. The acceptance rate is pooled over
//! tokens (accepted ÷ drafted, all responses together); each response's own rate is a
//! distribution beside it, with its interval, so that one long response cannot hide the spread.
//! Nothing is claimed for a case whose server reported no drafting.

use crate::record::{Record, Status};
use crate::stats::{Distribution, Label, Samples};
use serde::{Deserialize, Serialize};

/// A case's speculative decoding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpeculativeSummary {
    /// `ok` responses whose server reported its drafts.
    pub responses: u32,
    /// `ok` responses with the server's timings but no drafts (a mixed case); 0 normally.
    pub without: u32,
    /// Draft tokens proposed, over the responses.
    pub drafted: u64,
    /// Of those, accepted.
    pub accepted: u64,
    /// `accepted / drafted`, pooled; absent where nothing was drafted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_rate: Option<f64>,
    /// Each response's own `accepted / drafted`, over the responses that drafted any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_response: Option<Distribution>,
}

/// A case's drafts so far.
#[derive(Clone, Debug, Default)]
pub struct SpeculativeFigures {
    responses: u32,
    without: u32,
    drafted: u64,
    accepted: u64,
    rates: Samples,
}

impl SpeculativeFigures {
    /// Adds one measured record: an `ok` one with the server's timings.
    pub fn add(&mut self, r: &Record, label: Label) {
        let Some(s) = r.server.as_ref().filter(|_| r.status == Status::Ok) else {
            return;
        };
        let Some(d) = s.drafts else {
            self.without += 1;
            return;
        };
        self.responses += 1;
        self.drafted = self.drafted.saturating_add(d.drafted);
        self.accepted = self.accepted.saturating_add(d.accepted);
        if d.drafted > 0 {
            #[expect(clippy::cast_precision_loss, reason = "counts far below 2^53")]
            self.rates
                .push_in(d.accepted as f64 / d.drafted as f64, label);
        }
    }

    /// The case's speculative decoding; `None` where no response reported drafts.
    pub fn finish(self) -> Option<SpeculativeSummary> {
        #[expect(clippy::cast_precision_loss, reason = "counts far below 2^53")]
        let rate = (self.drafted > 0).then(|| self.accepted as f64 / self.drafted as f64);
        (self.responses > 0).then(|| SpeculativeSummary {
            responses: self.responses,
            without: self.without,
            drafted: self.drafted,
            accepted: self.accepted,
            acceptance_rate: rate,
            per_response: self.rates.distribution(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ok_record, Drafts, ServerTimings, TimingSource};

    fn drafted(drafts: Option<Drafts>) -> Record {
        let mut r = ok_record(0.0, None, vec![10.0, 12.0]);
        let mut s = ServerTimings::new(TimingSource::LlamaServer);
        s.ttft_ms = Some(5.0);
        s.drafts = drafts;
        r.server = Some(s);
        r
    }

    #[test]
    fn the_rate_is_pooled_over_tokens_and_each_response_s_is_a_distribution() {
        let mut figures = SpeculativeFigures::default();
        for (drafted, accepted) in [(10, 9), (30, 15), (0, 0)] {
            figures.add(&drafted_record(drafted, accepted), Label::ROUND_ONE);
        }
        let s = figures.finish().expect("drafts");
        assert_eq!((s.responses, s.without), (3, 0));
        assert_eq!((s.drafted, s.accepted), (40, 24));
        assert_eq!(s.acceptance_rate, Some(0.6));
        // 0.9 and 0.5: the response that drafted nothing has no rate of its own.
        let d = s.per_response.expect("per response");
        assert_eq!((d.n, d.min, d.max), (2, 0.5, 0.9));
    }

    #[test]
    fn nothing_is_claimed_without_drafts_and_a_mixed_case_says_so() {
        let mut figures = SpeculativeFigures::default();
        figures.add(&drafted(None), Label::ROUND_ONE);
        figures.add(&ok_record(0.0, None, vec![10.0]), Label::ROUND_ONE);
        assert_eq!(figures.finish(), None);
        let mut figures = SpeculativeFigures::default();
        figures.add(&drafted(None), Label::ROUND_ONE);
        figures.add(&drafted_record(4, 4), Label::ROUND_ONE);
        let s = figures.finish().expect("drafts");
        assert_eq!(
            (s.responses, s.without, s.acceptance_rate),
            (1, 1, Some(1.0))
        );
        // Drafting that proposed nothing: no rate to claim.
        let mut figures = SpeculativeFigures::default();
        figures.add(&drafted_record(0, 0), Label::ROUND_ONE);
        let s = figures.finish().expect("drafts");
        assert_eq!((s.acceptance_rate, s.per_response), (None, None));
    }

    fn drafted_record(drafted_n: u64, accepted: u64) -> Record {
        drafted(Some(Drafts {
            drafted: drafted_n,
            accepted,
        }))
    }
}
