//! The `sweep` section of `summary.json`: the stop rules in force, why the sweep stopped, and the
//! saturation analysis of the curve it measured.

use crate::summary::saturation::Analysis;
use serde::{Deserialize, Serialize};

/// When a sweep stops adding load.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StopRules {
    /// Stop once a point's p99 TTFT (from scheduled in an open loop) exceeds this.
    #[serde(rename = "ttft_p99_ms")]
    pub ttft_p99_ms: Option<f64>,
    /// Stop once a point's share of failed or invalid responses exceeds this.
    pub error_share: Option<f64>,
    /// Throughput "still rising" means at least this relative gain over the best so far.
    pub min_gain: f64,
    /// A listed sweep stops after two loads in a row without that gain.
    pub stop_when_flat: bool,
}

/// The `sweep` section of `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSection {
    /// The load axis the sweep stepped.
    pub axis: Axis,
    /// Stop conditions in force.
    pub stop_rules: StopRules,
    /// Why the sweep stopped adding load, if a stop condition did.
    pub stopped_because: Option<String>,
    /// `sweep --auto`: why it stopped refining `C_sat`'s range (narrow enough, every load in it
    /// measured, or its budget of loads spent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refinement: Option<String>,
    /// The curve and what it supports.
    pub analysis: Analysis,
}

/// The load axis of a sweep or a capacity curve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Axis {
    /// Requests in flight (closed loops).
    #[serde(rename = "concurrency")]
    Concurrency,
    /// Arrivals per second (open loops).
    #[serde(rename = "rate_rps")]
    RateRps,
}

impl Axis {
    /// The name `summary.json` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Axis::Concurrency => "concurrency",
            Axis::RateRps => "rate_rps",
        }
    }
}

impl std::fmt::Display for Axis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
