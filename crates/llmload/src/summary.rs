//! Records → per-case figures and the attempt's outcome (`summary.json`), as docs/measurement.md
//! defines them. Only `ok` responses enter distributions; a case is complete only when every
//! planned round completed with every response `ok`.
//!
//! A case's figures are [`CaseSummary`] (`case.rs`), gathered as its requests end by
//! [`CaseFigures`] (`case_figures.rs`); a windowed load's are [`load::LoadSummary`], worked out
//! in [`window`]. This file holds what sits above the cases: the attempt's [`Outcome`] and
//! [`Summary`], `summary.json` itself.

pub mod ab;
pub mod abandoned;
pub mod bursts;
pub mod canaries;
pub mod capacity;
mod case;
mod case_cost;
mod case_energy;
mod case_figures;
pub mod client_check;
pub mod cost;
mod counts;
mod dataset;
pub use counts::Counts;
pub mod energy;
pub mod itl;
mod label;
pub use label::label;
pub mod graph;
pub mod lengths;
pub mod load;
pub mod models;
pub mod pace;
pub mod per_token;
pub mod phases;
pub mod pooling;
mod prefix_cache;
pub mod repeats;
pub mod replicas;
mod rounds;
pub mod saturation;
pub mod server_side;
pub mod sessions;
pub mod shards;
pub mod short;
pub mod soak;
pub mod speculative;
pub mod sweep;
mod tally;
pub mod window;

pub use case::{CaseSummary, Reasoning};
pub use case_figures::CaseFigures;
pub use dataset::DatasetUsed;
pub use prefix_cache::PrefixCache;
pub use rounds::RoundSummary;

use serde::{Deserialize, Serialize};

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeStatus {
    /// Every case completed.
    Completed,
    /// Stopped before the end (interrupted, or a guard fired).
    Stopped,
    /// Ran to the end, but some case is incomplete, or the run could not go on.
    Failed,
    /// Written while the run is going (after each case). A summary that still says so after
    /// the run is over belongs to a run that ended without writing its last one (killed).
    Running,
}

/// The attempt's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Completed, stopped or failed.
    pub status: OutcomeStatus,
    /// Complete cases.
    pub cases_completed: u32,
    /// Cases planned.
    pub cases_total: u32,
    /// Complete measured rounds, over all cases.
    pub rounds_completed: u32,
    /// `ok` measured responses, over all cases.
    pub responses_completed: u32,
    /// Why the attempt stopped or failed, in words.
    pub reason: Option<String>,
    /// The reading or event that triggered the stop, where there is one.
    pub stop_sample: Option<serde_json::Value>,
}

/// Where a run is, for its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Cases are still to run: the summary on disk says so until the run is over.
    Going,
    /// The run is over: stopped by a rule or a signal, failed, or neither.
    Ended {
        /// What stopped it, in words.
        stop: Option<String>,
        /// What failed, in words.
        failure: Option<String>,
    },
}

impl RunState {
    /// A run over without a stop or a failure of its own.
    pub const DONE: RunState = RunState::Ended {
        stop: None,
        failure: None,
    };
}

impl Outcome {
    /// The outcome of `cases` out of `cases_total`, given where the run is.
    pub fn new(cases: &[CaseSummary], cases_total: u32, state: RunState) -> Outcome {
        let cases_completed = crate::num::count(cases.iter().filter(|c| c.complete).count());
        let (status, reason) = match state {
            RunState::Going => (
                OutcomeStatus::Running,
                Some(format!(
                    "running: {} of {cases_total} cases run so far",
                    cases.len()
                )),
            ),
            RunState::Ended {
                stop: Some(stop), ..
            } => (OutcomeStatus::Stopped, Some(stop)),
            RunState::Ended { failure, .. } => {
                let status = if failure.is_some() || cases_completed < cases_total {
                    OutcomeStatus::Failed
                } else {
                    OutcomeStatus::Completed
                };
                let incomplete = (cases_completed < cases_total).then(|| {
                    format!(
                        "{} of {cases_total} cases incomplete",
                        cases_total - cases_completed
                    )
                });
                (status, failure.or(incomplete))
            }
        };
        Outcome {
            status,
            cases_completed,
            cases_total,
            rounds_completed: crate::num::count(
                cases
                    .iter()
                    .flat_map(|c| &c.rounds)
                    .filter(|r| r.complete)
                    .count(),
            ),
            responses_completed: cases.iter().map(|c| c.counts.ok).sum(),
            reason,
            stop_sample: None,
        }
    }
}

/// `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Layout version of this file.
    pub schema_version: u32,
    /// The attempt this summarises.
    pub attempt_id: String,
    /// Target URL (or the simulator's); with several `--url`, the first.
    pub target_url: String,
    /// Several `--url`: each replica's base URL, in the order given; a case's `replicas` name
    /// them by index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<String>,
    /// API driven.
    pub api: String,
    /// Model, as sent or as the server named it.
    pub model: Option<String>,
    /// Whether the target was the built-in simulator.
    pub simulated: bool,
    /// Per-case figures, in run order.
    pub cases: Vec<CaseSummary>,
    /// How the attempt ended.
    pub outcome: Outcome,
    /// GPU readings of the attempt, when telemetry was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::TelemetrySummary>,
    /// `llmload sweep`: the saturation analysis of the measured curve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<sweep::SweepSection>,
    /// Whether llmload itself kept up (its CPU, its timers, its send lag) during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_check: Option<client_check::ClientCheck>,
    /// How the tokens behind the figures were counted, and whether the run was best effort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counting: Option<Counting>,
    /// A shard's run (`--shard I/N`): which part of which attempt, how it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<shards::ShardRun>,
    /// A merged attempt: its shards, their start lags and clock offsets, what is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<shards::ShardsSection>,
    /// `--repeat N`: the series, each repeat's own figures and the variation between them; the
    /// cases above then combine the complete repeats alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<repeats::Series>,
    /// `llmload capacity`: the largest load that meets every objective and the first that
    /// does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<capacity::Capacity>,
    /// `llmload ab`: both arms side by side and the paired gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<ab::AbSection>,
}

/// How prompt and generated tokens were counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counting {
    /// How prompt lengths were set.
    pub prompts: String,
    /// How the tokens of each streamed chunk were counted.
    pub outputs: String,
    /// `--best-effort`: lengths that differ from the request make a response unverified, not
    /// invalid.
    pub best_effort: bool,
    /// Engine fields left out of every request, and why (`--drop-field`, or refused by the
    /// server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<String>,
    /// `--dataset`: the file the prompts came from, by name (never its path), length and digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetUsed>,
}
