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
    /// The client's TTFT cut into its parts, means over the same responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_parts: Option<TtftParts>,
    /// The server's own pace: its time per prompt token and per generated token
    /// ([`super::pace`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<super::pace::Pace>,
    /// Speculative decoding, where the server reported its drafts ([`super::speculative`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<super::speculative::SpeculativeSummary>,
}

/// The client's TTFT cut into parts: the connection and the request's write (the client's own
/// stamps), the server's queue and prefill (the server's clock), and the residual, the client's
/// TTFT less those: the server's time before it counts and the first token's way back. Means
/// over the `ok` responses with a client TTFT and the server's timings (the server's TTFT
/// within the client's), so that the parts add up to the client's mean TTFT exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TtftParts {
    /// The responses the means are over.
    pub responses: u32,
    /// The client's mean TTFT over them, ms.
    pub client_ttft_ms: f64,
    /// From the send to the request's last byte written (a new connection's setup included),
    /// ms; absent where a response lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_ms: Option<f64>,
    /// The server's queue, ms; absent where a response lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<f64>,
    /// The server's prefill, ms; absent where a response lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_ms: Option<f64>,
    /// The client's TTFT less the parts present, ms: never hidden, and negative only where the
    /// clocks disagree.
    pub residual_ms: f64,
    /// The parts absent, each with why (its time is in the residual).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
}

#[cfg(test)]
impl TtftParts {
    /// Parts of 25 ms over 2 responses, the queue unavailable.
    pub fn example() -> TtftParts {
        TtftParts {
            responses: 2,
            client_ttft_ms: 25.0,
            write_ms: Some(0.5),
            queue_ms: None,
            prefill_ms: Some(20.0),
            residual_ms: 4.5,
            unavailable: vec!["server queue: the server did not report it".into()],
        }
    }
}

/// The sums behind [`TtftParts`]: responses, client TTFT, and each part's sum and count.
#[derive(Clone, Debug, Default)]
struct PartSums {
    responses: u32,
    client: f64,
    /// Write, queue, prefill: sum and responses that had it.
    parts: [(f64, u32); 3],
}

impl PartSums {
    fn add(&mut self, client: f64, parts: [Option<f64>; 3]) {
        self.responses += 1;
        self.client += client;
        for (sum, part) in self.parts.iter_mut().zip(parts) {
            if let Some(v) = part {
                sum.0 += v;
                sum.1 += 1;
            }
        }
    }

    fn finish(&self, sources: &[TimingSource]) -> Option<TtftParts> {
        if self.responses == 0 {
            return None;
        }
        let n = f64::from(self.responses);
        let mut unavailable = Vec::new();
        let mut means = [None; 3];
        let names = ["connection and write", "server queue", "prefill"];
        for (k, &(sum, had)) in self.parts.iter().enumerate() {
            if had == self.responses {
                means[k] = Some(sum / n);
                continue;
            }
            let why = match (k, had) {
                (0, 0) => "the records carry no request phases".to_owned(),
                (1, 0) if sources.contains(&TimingSource::LlamaServer) => {
                    "llama-server reports no queue time: a wait for a slot is in the residual"
                        .to_owned()
                }
                (_, 0) => "the server did not report it".to_owned(),
                (_, had) => format!(
                    "present in {had} of {} responses only, so left out",
                    self.responses
                ),
            };
            unavailable.push(format!("{}: {why}", names[k]));
        }
        let client = self.client / n;
        Some(TtftParts {
            responses: self.responses,
            client_ttft_ms: client,
            write_ms: means[0],
            queue_ms: means[1],
            prefill_ms: means[2],
            residual_ms: client - means.iter().flatten().sum::<f64>(),
            unavailable,
        })
    }
}

/// A case's server side so far, one measured record at a time.
#[derive(Clone, Debug, Default)]
pub struct ServerSideFigures {
    responses: u32,
    sources: Vec<TimingSource>,
    exceeds: u32,
    queue: Samples,
    prefill: Samples,
    ttft: Samples,
    decode: Samples,
    delivery: Samples,
    parts: PartSums,
    pace: super::pace::PaceFigures,
    speculative: super::speculative::SpeculativeFigures,
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
        self.pace.add(r, s, label);
        self.speculative.add(r, label);
        let delivery = r
            .ttft_ms
            .zip(s.ttft_ms)
            .map(|(client, server)| client - server)
            .filter(|d| *d >= 0.0);
        if let (Some(client), Some(_)) = (r.ttft_ms, delivery) {
            let write = r.phases.as_ref().and_then(|p| p.write_ms);
            self.parts.add(client, [write, s.queue_ms, s.prefill_ms]);
        }
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
        let ttft_parts = self.parts.finish(&self.sources);
        (self.responses > 0).then(|| ServerSideSummary {
            responses: self.responses,
            sources: self.sources,
            ttft_exceeds_client: self.exceeds,
            queue_ms: self.queue.distribution(),
            prefill_ms: self.prefill.distribution(),
            ttft_ms: self.ttft.distribution(),
            decode_ms: self.decode.distribution(),
            delivery_ms: self.delivery.distribution(),
            ttft_parts,
            pace: self.pace.finish(),
            speculative: self.speculative.finish(),
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
    fn the_parts_of_the_ttft_add_up_to_the_client_s_and_an_absent_one_is_said() {
        let mut figures = ServerSideFigures::default();
        for ttft in [6.0, 8.0] {
            let mut r = timed(ttft);
            r.phases = Some(crate::record::Phases {
                write_ms: Some(0.5),
                ..crate::record::Phases::default()
            });
            figures.add(&r, LABEL);
        }
        // Past the client's TTFT: no parts.
        figures.add(&timed(12.0), LABEL);
        let parts = figures.finish().and_then(|s| s.ttft_parts).expect("parts");
        assert_eq!(parts.responses, 2);
        // Client 10 ms; write 0.5, queue 1, prefill (6 − 1 + 8 − 1) / 2 = 6.
        assert_eq!(
            (parts.write_ms, parts.queue_ms, parts.prefill_ms),
            (Some(0.5), Some(1.0), Some(6.0))
        );
        assert!((parts.residual_ms - 2.5).abs() < 1e-12, "{parts:?}");
        assert!(parts.unavailable.is_empty());
        // llama-server: no queue, and here no phases.
        let mut figures = ServerSideFigures::default();
        let mut r = ok_record(0.0, None, vec![10.0, 12.0]);
        let mut s = ServerTimings::new(TimingSource::LlamaServer);
        (s.prefill_ms, s.ttft_ms) = (Some(7.0), Some(7.0));
        r.server = Some(s);
        figures.add(&r, LABEL);
        let parts = figures.finish().and_then(|s| s.ttft_parts).expect("parts");
        assert_eq!((parts.write_ms, parts.queue_ms), (None, None));
        assert!((parts.residual_ms - 3.0).abs() < 1e-12);
        assert_eq!(parts.unavailable.len(), 2, "{:?}", parts.unavailable);
        assert!(parts.unavailable[1].contains("no queue time"));
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
