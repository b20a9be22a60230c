//! The server's side, per case: the distributions of what the server said of its own `ok`
//! responses (queue, prefill, its TTFT, decode) and of the delivery, the client's TTFT less the
//! server's: the time the server does not account for (writing the request, the server's work
//! before it counts, the first token's way back).
//!
//! A response whose server TTFT exceeds the client's is counted apart and enters no delivery: a
//! negative time is a clock or attribution error, not a delivery.

use crate::record::{Record, Status, TimingSource};
use crate::stats::{Distribution, Label, Samples};
use serde::{Deserialize, Serialize};

/// The server's own timings of a case's `ok` responses that carry them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerSideSummary {
    /// `ok` responses whose record carries the server's timings.
    pub responses: u32,
    /// Where the timings came from, each source once.
    pub sources: Vec<TimingSource>,
    /// Of those, the responses whose server TTFT exceeds the client's.
    pub ttft_exceeds_client: u32,
    /// The server's queue, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<Distribution>,
    /// The server's prefill, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_ms: Option<Distribution>,
    /// The server's TTFT, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<Distribution>,
    /// The server's decode, first token to last, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_ms: Option<Distribution>,
    /// The client's TTFT less the server's, ms, over the responses with both (and the server's
    /// no longer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_ms: Option<Distribution>,
}

/// A case's server side so far, one measured record at a time.
#[derive(Debug, Default)]
pub struct ServerSideFigures {
    responses: u32,
    sources: Vec<TimingSource>,
    exceeds: u32,
    queue: Samples,
    prefill: Samples,
    ttft: Samples,
    decode: Samples,
    delivery: Samples,
}

impl ServerSideFigures {
    /// Adds one measured record: only an `ok` one that carries the server's timings counts;
    /// `label`: what its samples belong to, for the intervals.
    pub fn add(&mut self, r: &Record, label: Label) {
        let Some(s) = r.server.as_ref().filter(|_| r.status == Status::Ok) else {
            return;
        };
        self.responses += 1;
        if !self.sources.contains(&s.source) {
            self.sources.push(s.source);
        }
        self.exceeds += u32::from(s.ttft_exceeds_client);
        let delivery = r
            .ttft_ms
            .zip(s.ttft_ms)
            .map(|(client, server)| client - server)
            .filter(|d| *d >= 0.0);
        Samples::push_each(
            [
                (&mut self.queue, s.queue_ms),
                (&mut self.prefill, s.prefill_ms),
                (&mut self.ttft, s.ttft_ms),
                (&mut self.decode, s.decode_ms),
                (&mut self.delivery, delivery),
            ],
            label,
        );
    }

    /// The case's server side; `None` when no `ok` response carried the server's timings.
    pub fn finish(self) -> Option<ServerSideSummary> {
        (self.responses > 0).then(|| ServerSideSummary {
            responses: self.responses,
            sources: self.sources,
            ttft_exceeds_client: self.exceeds,
            queue_ms: self.queue.distribution(),
            prefill_ms: self.prefill.distribution(),
            ttft_ms: self.ttft.distribution(),
            decode_ms: self.decode.distribution(),
            delivery_ms: self.delivery.distribution(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ok_record, ServerTimings};

    const LABEL: Label = Label::ROUND_ONE;

    /// An `ok` record of TTFT 10 ms whose server reported `ttft_ms` (vLLM: with a queue).
    fn timed(ttft_ms: f64) -> Record {
        let mut r = ok_record(0.0, None, vec![10.0, 12.0, 14.0]);
        let mut s = ServerTimings::new(TimingSource::Vllm);
        (s.queue_ms, s.prefill_ms, s.ttft_ms, s.decode_ms) =
            (Some(1.0), Some(ttft_ms - 1.0), Some(ttft_ms), Some(4.0));
        s.check_against(r.ttft_ms);
        r.server = Some(s);
        r
    }

    #[test]
    fn each_part_is_a_distribution_and_a_server_ttft_past_the_client_s_is_counted_apart() {
        let mut figures = ServerSideFigures::default();
        for ttft in [6.0, 8.0, 9.0] {
            figures.add(&timed(ttft), LABEL);
        }
        figures.add(&timed(12.0), LABEL);
        let s = figures.finish().expect("server side");
        assert_eq!((s.responses, s.ttft_exceeds_client), (4, 1));
        assert_eq!(s.sources, [TimingSource::Vllm]);
        for d in [&s.queue_ms, &s.prefill_ms, &s.ttft_ms, &s.decode_ms] {
            assert_eq!(d.as_ref().map(|d| d.n), Some(4));
        }
        let delivery = s.delivery_ms.expect("delivery");
        assert_eq!(delivery.n, 3, "the flagged response has none");
        assert!(delivery.min >= 0.0 && delivery.max <= 4.0, "{delivery:?}");
    }

    #[test]
    fn only_ok_records_with_the_server_s_timings_count() {
        let mut figures = ServerSideFigures::default();
        figures.add(&ok_record(0.0, None, vec![10.0]), LABEL);
        let mut failed = timed(5.0);
        failed.status = Status::Error;
        figures.add(&failed, LABEL);
        assert_eq!(figures.finish(), None);
    }
}
