//! A mix of models (`--model NAME:WEIGHT,…`): a case's figures per model, gathered from the same
//! measured records as the case's own and by the same rules, so that each model's counts add up
//! to the case's and its distributions hold exactly its responses' samples. Whether the case's
//! path buffers is the case's to say: a model's buffered responses are left out or kept as the
//! case's are.
//!
//! Throughput per model is its share of the case's output over the case's time: over closed
//! rounds, its `ok` responses' output tokens over the summed spans of the case's rounds (so the
//! models' figures add up to the case's tokens over the same time); over a window, the tokens of
//! its responses received inside the window over the window's length, as the case's own.

use super::bursts::{Delivery, Held};
use super::counts::Counts;
use super::per_token::PerToken;
use super::tally::Tally;
use crate::record::Record;
use crate::stats::{Distribution, Samples};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One model's figures in a case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    /// The model's name, as the requests named it.
    pub model: String,
    /// Its share of the case's measured requests.
    pub share: f64,
    /// Its requests' outcomes.
    pub counts: Counts,
    /// Time to first token, ms, over its `ok` responses.
    pub ttft_ms: Option<Distribution>,
    /// Complete-response time, ms.
    pub e2e_ms: Option<Distribution>,
    /// Inter-token latency, ms.
    pub itl_ms: Option<Distribution>,
    /// Time per output token after the first, ms.
    pub tpot_ms: Option<Distribution>,
    /// Per-sequence decode rate, tokens/s.
    pub decode_rate_tps: Option<Distribution>,
    /// Output tokens of its `ok` responses.
    pub output_tokens: u64,
    /// Its output tokens per second of the case's time: over closed rounds, `output_tokens`
    /// over the summed spans of the case's rounds; over a window, its tokens received inside
    /// the window over the window's length. Absent for sessions.
    pub output_tps: Option<f64>,
    /// Over a window: its `ok` responses completed inside it, per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_rps: Option<f64>,
    /// Over a window with objectives: those of them that met every objective, per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_rps: Option<f64>,
    /// Over a window with objectives: the share of them that met every objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_met_share: Option<f64>,
    /// Its first failed or invalid response's kind and message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Why its first unverified `ok` response was not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_unverified: Option<String>,
}

/// One model's figures so far.
#[derive(Clone, Debug, Default)]
struct OneModel {
    tally: Tally,
    ttft: Samples,
    e2e: Samples,
    per_token: PerToken,
    held: Held,
    output_tokens: u64,
}

/// The figures of each part of a case, by the key each record gives (`key`): its model, or the
/// replica it went to; empty when no record gave one.
#[derive(Clone, Debug)]
pub struct Split<K> {
    key: fn(&Record) -> Option<K>,
    parts: BTreeMap<K, OneModel>,
}

/// The figures of each model of a case, by name.
pub type ModelFigures = Split<String>;

/// The figures of each replica of a case (several `--url`), by replica.
pub type ReplicaFigures = Split<u16>;

impl Default for ModelFigures {
    fn default() -> Self {
        Split {
            key: |r| r.model.clone(),
            parts: BTreeMap::new(),
        }
    }
}

impl Default for ReplicaFigures {
    fn default() -> Self {
        Split {
            key: |r| r.replica,
            parts: BTreeMap::new(),
        }
    }
}

impl<K: Ord> Split<K> {
    /// Counts one measured record under its key, if it has one.
    pub fn count(&mut self, r: &Record) {
        if let Some(key) = (self.key)(r) {
            self.parts.entry(key).or_default().tally.add(r);
        }
    }

    /// Adds an `ok` response already counted, `buffered` its delivery where it came in bursts.
    pub fn add_ok(&mut self, r: &Record, buffered: Option<&Delivery>) {
        let Some(m) = (self.key)(r).and_then(|k| self.parts.get_mut(&k)) else {
            return;
        };
        let label = super::label(r, m.tally.counts.ok);
        let ttft = if buffered.is_none_or(Delivery::keeps_ttft) {
            &mut m.ttft
        } else {
            &mut m.held.ttft
        };
        r.ttft_ms.into_iter().for_each(|v| ttft.push_in(v, label));
        r.e2e_ms.into_iter().for_each(|v| m.e2e.push_in(v, label));
        if buffered.is_some() {
            m.held.per_token.add(r, label);
        } else {
            m.per_token.add(r, label);
        }
        m.output_tokens += u64::from(r.generated_tokens());
    }

    /// Each part's summary in key order, its `model` empty: `streams` says whether the case's
    /// path streams (the buffered responses' figures are then kept), `span_s` the summed spans
    /// of its rounds. `None` when no record gave a key.
    pub fn finish_parts(
        self,
        streams: bool,
        span_s: Option<f64>,
    ) -> Option<Vec<(K, ModelSummary)>> {
        if self.parts.is_empty() {
            return None;
        }
        let total: u32 = self.parts.values().map(|m| m.tally.counts.measured()).sum();
        let summaries = self
            .parts
            .into_iter()
            .map(|(key, mut m)| {
                if streams {
                    let held = std::mem::take(&mut m.held);
                    m.ttft.merge(held.ttft);
                    m.per_token.merge(held.per_token);
                }
                let (itl_ms, _) = m.per_token.itl.finish();
                let measured = m.tally.counts.measured();
                let summary = ModelSummary {
                    model: String::new(),
                    share: if total > 0 {
                        f64::from(measured) / f64::from(total)
                    } else {
                        0.0
                    },
                    ttft_ms: m.ttft.distribution(),
                    e2e_ms: m.e2e.distribution(),
                    itl_ms,
                    tpot_ms: m.per_token.tpot.distribution(),
                    decode_rate_tps: m.per_token.decode_rate.distribution(),
                    output_tokens: m.output_tokens,
                    output_tps: span_s.map(|s| m.output_tokens as f64 / s),
                    completed_rps: None,
                    goodput_rps: None,
                    slo_met_share: None,
                    counts: m.tally.counts,
                    first_error: m.tally.first_error,
                    first_unverified: m.tally.first_unverified,
                };
                (key, summary)
            })
            .collect();
        Some(summaries)
    }
}

impl ModelFigures {
    /// Each model's summary, in name order (see [`Split::finish_parts`]); `None` when no
    /// record named a model.
    pub fn finish(self, streams: bool, span_s: Option<f64>) -> Option<Vec<ModelSummary>> {
        let parts = self.finish_parts(streams, span_s)?;
        Some(
            parts
                .into_iter()
                .map(|(model, summary)| ModelSummary { model, ..summary })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests;
