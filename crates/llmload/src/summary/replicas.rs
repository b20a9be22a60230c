//! Several `--url`: a case's figures per replica, gathered from the same measured records as
//! the case's own and by the same rules ([`super::models::Split`]), so that the replicas'
//! counts and output tokens add up to the case's, and each replica's distributions hold exactly
//! its responses' samples. A replica whose requests failed is named by its counts and its first
//! error, beside the others' figures.

use super::counts::Counts;
use super::models::ReplicaFigures;
use crate::stats::Distribution;
use serde::{Deserialize, Serialize};

/// One replica's figures in a case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaSummary {
    /// The replica, from 0, in the order of `--url` (its URL: the summary's `replicas`).
    pub replica: u16,
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
    /// Output tokens of its `ok` responses.
    pub output_tokens: u64,
    /// Its output tokens per second of the case's time (closed rounds: over the summed spans
    /// of the case's rounds, so that the replicas' add up to the case's tokens over that time).
    pub output_tps: Option<f64>,
    /// Its first failed or invalid response's kind and message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Why its first unverified `ok` response was not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_unverified: Option<String>,
}

impl ReplicaSummary {
    /// Its requests that did not end `ok` (abandoned as planned aside).
    pub fn failed(&self) -> u32 {
        self.counts
            .measured()
            .saturating_sub(self.counts.ok + self.counts.abandoned)
    }
}

/// Each replica's summary, in replica order; `None` when no record went to a replica (one URL).
pub fn finish(
    figures: ReplicaFigures,
    streams: bool,
    span_s: Option<f64>,
) -> Option<Vec<ReplicaSummary>> {
    let parts = figures.finish_parts(streams, span_s)?;
    Some(
        parts
            .into_iter()
            .map(|(replica, m)| ReplicaSummary {
                replica,
                share: m.share,
                counts: m.counts,
                ttft_ms: m.ttft_ms,
                e2e_ms: m.e2e_ms,
                itl_ms: m.itl_ms,
                tpot_ms: m.tpot_ms,
                output_tokens: m.output_tokens,
                output_tps: m.output_tps,
                first_error: m.first_error,
                first_unverified: m.first_unverified,
            })
            .collect(),
    )
}
