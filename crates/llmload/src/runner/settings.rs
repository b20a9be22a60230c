//! The knobs of a run that every case shares ([`RunSettings`]).

use super::ids;
use super::pacer::PacerClock;
use crate::workload::shape::Slo;
use crate::workload::shard::Shard;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The knobs of a run, the same for every case of it.
#[derive(Clone, Debug, Default)]
pub struct RunSettings {
    /// Seed for prompt offsets, sampled lengths and arrival schedules.
    pub seed: u64,
    /// Objectives for goodput over a continuous or open loop's window.
    pub slo: Slo,
    /// A mix of models: the objectives of the models that have their own.
    pub model_slo: Arc<std::collections::BTreeMap<String, Slo>>,
    /// Soak runs: the length of the windows the measurement window is cut into.
    pub series_window: Option<Duration>,
    /// Fields merged into every request body (`--extra-body`).
    pub extra_body: Option<serde_json::Value>,
    /// `--best-effort`: lengths that differ from the request make a response unverified, not
    /// invalid.
    pub best_effort: bool,
    /// `--shard`: the part of each load this process runs (0/1: all of it).
    pub shard: Shard,
    /// `--start-at`: the wall-clock instant the first load begins, waited for.
    pub start_at: Option<SystemTime>,
    /// A shard: the file the load's start is written to the moment the load begins, so that a
    /// shard killed before its summary still says when it began.
    pub start_file: Option<PathBuf>,
    /// The clock open-loop launches keep.
    pub pacer: PacerClock,
    /// Where each request's ids come from; `None` sends none.
    pub ids: Option<Arc<ids::RequestIds>>,
    /// `--cancel-after`: the measured streams the client abandons, and where.
    pub cancel: Option<crate::workload::shape::Cancel>,
    /// `--model` with a mix: the models each request's is drawn from.
    pub mix: Option<Arc<crate::workload::mix::ModelMix>>,
    /// `--canaries`: the canary prompts, in canary rounds after each case's measured rounds.
    pub canaries: Option<crate::config::canaries::Canaries>,
    /// `--profile-server N`: profile the first round of the first case of N or more streams.
    pub profile_server: Option<u32>,
}
