//! A continuous or open-loop case's figures over its measurement window as `summary.json` holds
//! them ([`LoadSummary`]), and the name of its load ([`LoadShape`]). How they are worked out from
//! the records is `window.rs`'s.

use crate::record::Seconds;
use crate::stats::interval::Ci;
use crate::stats::Distribution;
use crate::workload::schedule::Process;
use crate::workload::stages::StageLabel;
use serde::{Deserialize, Serialize};

/// Window figures of one continuous or open-loop case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadSummary {
    /// `closed-continuous` or the arrival process.
    pub shape: LoadShape,
    /// Requests asked to be in flight (closed continuous) or the in-flight cap (open loop).
    pub nominal_concurrency: Option<u32>,
    /// Arrivals per second asked for (open loop).
    pub nominal_rate_rps: Option<f64>,
    /// Start and end of the measurement window, seconds since the attempt started: warmup
    /// before it and the drain after it are excluded from throughput and goodput.
    pub window_s: [Seconds; 2],
    /// Requests launched, warmup included.
    pub requests_launched: u32,
    /// Measured `ok` responses that completed inside the window, per second.
    pub completed_rps: f64,
    /// Output tokens (of `ok` responses) received inside the window / window length.
    pub throughput_tps: f64,
    /// Measured `ok` responses completed inside the window that met every SLO, per second; absent
    /// when no SLO was given.
    pub goodput_rps: Option<f64>,
    /// Share of measured `ok` responses (inside the window) meeting every SLO.
    pub slo_met_share: Option<f64>,
    /// Time-averaged requests in flight over the window.
    pub achieved_concurrency_mean: f64,
    /// Most requests in flight at once during the window.
    pub achieved_concurrency_peak: u32,
    /// Open loop: sent − scheduled, ms (waiting for the in-flight cap included).
    pub send_lag_ms: Option<Distribution>,
    /// Open loop: the scheduling priority the pacer thread got (`real-time`, `raised` or
    /// `normal`; the first two need privileges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacer_priority: Option<String>,
    /// Open loop: first token − scheduled, ms.
    pub ttft_from_scheduled_ms: Option<Distribution>,
    /// Open loop: final event − scheduled, ms.
    pub e2e_from_scheduled_ms: Option<Distribution>,
    /// A staged load: which stage this case is, its levels, and whether it ramps (its figures
    /// are then over a changing load). For a ramp, `nominal_rate_rps` is its mean rate and
    /// `nominal_concurrency` its higher level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<StageLabel>,
    /// The interval of `throughput_tps`, over blocks of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_ci: Option<Ci>,
    /// The interval of `completed_rps`, over blocks of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_ci: Option<Ci>,
    /// The interval of `goodput_rps`, over blocks of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_ci: Option<Ci>,
    /// A stage of a staged load: its own measured `ok` responses, whose tokens its
    /// `throughput_tps` counts over their span (they may end after the stage's time, when the
    /// window would count none of them); absent for other loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_responses: Option<OwnResponses>,
    /// A stage of a staged load: output tokens received inside the stage's time / its length,
    /// the figure other loads report as `throughput_tps`; absent for other loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_throughput_tps: Option<f64>,
}

/// A load's own measured `ok` responses: their tokens of work, and the span from the first one's
/// send to the last one's completion.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OwnResponses {
    /// Responses.
    pub responses: u32,
    /// Their output tokens (embeddings and rerank: the prompt tokens processed).
    pub tokens: f64,
    /// First send and last completion, seconds since the attempt started.
    pub span_s: [Seconds; 2],
}

impl OwnResponses {
    /// Their tokens per second over their span; `None` when the span is empty.
    pub fn tokens_per_s(&self) -> Option<f64> {
        let length = self.span_s[1] - self.span_s[0];
        (length > 0.0).then(|| self.tokens / length)
    }
}

/// A stage's throughput is its own responses' tokens over their span: a stage whose responses
/// ended after its time (an overloaded server drains later) would count none of their tokens in
/// its window and show a collapse that did not happen. The window's figure is kept beside it,
/// and its interval (over blocks of the window) dropped. Other loads keep the window's figures.
pub fn settle_stage(load: &mut LoadSummary) {
    if load.stage.is_none() {
        load.own_responses = None;
        return;
    }
    if let Some(own) = load.own_responses.and_then(|o| o.tokens_per_s()) {
        load.window_throughput_tps = Some(load.throughput_tps);
        load.throughput_tps = own;
        load.throughput_ci = None;
    }
}

/// The load of a continuous or open-loop case, as `summary.json` names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadShape {
    /// C requests kept in flight.
    ClosedContinuous,
    /// Poisson arrivals.
    Poisson,
    /// Gamma arrivals (`--burstiness`).
    Gamma,
    /// Equally spaced arrivals.
    Constant,
    /// Arrivals from a trace.
    Trace,
    /// An open loop whose process was not recorded.
    #[default]
    Open,
}

impl LoadShape {
    /// The shape's name.
    pub fn as_str(self) -> &'static str {
        match self {
            LoadShape::ClosedContinuous => "closed-continuous",
            LoadShape::Poisson => "poisson",
            LoadShape::Gamma => "gamma",
            LoadShape::Constant => "constant",
            LoadShape::Trace => "trace",
            LoadShape::Open => "open",
        }
    }

    /// The shape of an open loop with `process`.
    pub fn of(process: &Process) -> LoadShape {
        match process {
            Process::Poisson => LoadShape::Poisson,
            Process::Gamma { .. } => LoadShape::Gamma,
            Process::Constant => LoadShape::Constant,
        }
    }
}

impl std::fmt::Display for LoadShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
