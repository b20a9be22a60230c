//! Cases of embeddings and rerank requests (`--api embeddings`, `--api rerank`): a batch of
//! inputs per request, answered once. Nothing is generated or streamed, so a pooling case has
//! no TTFT, inter-token latency, TPOT or decode rate; its figures are the latency of each
//! request (send → the answer's last byte, `e2e_ms`), its throughput in prompt tokens the server
//! processed per second (`throughput_tps`, as the case's throughput is for every case), and the
//! inputs per second those tokens make.

use crate::record::{Record, Status};
use crate::stats::Spread;
use serde::{Deserialize, Serialize};

/// What a pooling case's `ok` answers held, and its inputs per second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolingSummary {
    /// Inputs per request (`--batch-size`; documents per query, for rerank).
    pub batch: u32,
    /// Inputs of the `ok` answers.
    pub inputs: u64,
    /// Prompt tokens the server processed for them (its count; the tokens sent where it gave
    /// none).
    pub tokens: u64,
    /// Embeddings: the length of every vector, where all the answers had one length; absent
    /// for rerank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimension: Option<u32>,
    /// Inputs per second: the case's throughput (`throughput_tps`) over the mean prompt tokens
    /// per input, its spread and interval scaled alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_per_s: Option<Spread>,
}

/// A pooling case's answers so far.
#[derive(Clone, Debug, Default)]
pub struct PoolingFigures {
    batch: Option<u32>,
    inputs: u64,
    tokens: u64,
    dimension: Option<u32>,
    dimensions_differ: bool,
}

impl PoolingFigures {
    /// Adds one measured record (generation records leave the figures alone).
    pub fn add(&mut self, r: &Record) {
        let Some(p) = &r.pooling else {
            return;
        };
        self.batch.get_or_insert(p.inputs);
        if r.status != Status::Ok {
            return;
        }
        self.inputs += u64::from(p.inputs);
        self.tokens += u64::from(r.work_tokens());
        match (self.dimension, p.dimension) {
            (None, Some(d)) if !self.dimensions_differ => self.dimension = Some(d),
            (Some(seen), Some(d)) if seen != d => {
                self.dimension = None;
                self.dimensions_differ = true;
            }
            _ => {}
        }
    }

    /// The summary; `None` for a generation case.
    pub fn finish(self) -> Option<PoolingSummary> {
        Some(PoolingSummary {
            batch: self.batch?,
            inputs: self.inputs,
            tokens: self.tokens,
            dimension: self.dimension,
            inputs_per_s: None,
        })
    }
}

impl PoolingSummary {
    /// Mean prompt tokens per input of the `ok` answers; `None` without one.
    pub fn tokens_per_input(&self) -> Option<f64> {
        (self.inputs > 0 && self.tokens > 0).then(|| self.tokens as f64 / self.inputs as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ok_record, Pooling};

    fn answer(inputs: u32, tokens: u32, dimension: Option<u32>) -> Record {
        let mut r = ok_record(0.0, None, Vec::new());
        r.prompt_tokens = Some(tokens);
        r.pooling = Some(Pooling {
            inputs,
            tokens,
            results: Some(inputs),
            dimension,
        });
        r
    }

    #[test]
    fn inputs_tokens_and_dimension_add_up_over_ok_answers() {
        let mut figures = PoolingFigures::default();
        figures.add(&answer(4, 64, Some(8)));
        figures.add(&answer(4, 64, Some(8)));
        let mut failed = answer(4, 64, Some(8));
        failed.status = Status::Error;
        figures.add(&failed);
        let summary = figures.finish().expect("a pooling case");
        assert_eq!((summary.batch, summary.inputs, summary.tokens), (4, 8, 128));
        assert_eq!(summary.dimension, Some(8));
        assert_eq!(summary.tokens_per_input(), Some(16.0));

        let mut mixed = PoolingFigures::default();
        mixed.add(&answer(1, 16, Some(8)));
        mixed.add(&answer(1, 16, Some(4)));
        mixed.add(&answer(1, 16, Some(8)));
        assert_eq!(mixed.finish().expect("pooling").dimension, None);
        assert!(PoolingFigures::default().finish().is_none());
    }

    #[test]
    fn inputs_per_second_are_the_throughput_over_the_tokens_per_input() {
        let mut figures = PoolingFigures::default();
        figures.add(&answer(2, 64, None));
        let mut case = crate::fixture::report().summary.cases[0].clone();
        case.pooling = figures.finish();
        case.throughput_tps = Spread::of(&[320.0, 480.0]);
        case.settle_pooling();
        let per_s = case.pooling.and_then(|p| p.inputs_per_s).expect("set");
        assert_eq!((per_s.mean, per_s.min, per_s.max), (12.5, 10.0, 15.0));
    }
}
