//! `campaign.json`: what was asked (the config, secrets left out), the cases planned, the target
//! as it answered, and the host. One set of types writes the file and reads it back.
//!
//! Of the config, the fields that an attempt's readers use are typed; every other field of the
//! options model is carried through as written (`other`), so that a file rewritten from what was
//! read (a merge) keeps them. A case written before shapes were recorded ran closed rounds of
//! the campaign's rounds, the only shape there was then, at fixed lengths.

use super::{Attempt, SCHEMA_VERSION};
use crate::api::Api;
use crate::config::Config;
use crate::error::Context;
use crate::report::CampaignLimits;
use crate::workload::dataset::{Lengths, Output};
use crate::workload::shape::CasePlan;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod case;
pub use case::{CampaignCase, CaseBound, CaseLoad, LengthSpec};

/// The file's name in the attempt folder.
pub const CAMPAIGN_FILE: &str = "campaign.json";

/// How record times relate to `started_at`, as the file says it.
const TIME_ORIGIN: &str = "record times (*_s) are seconds since started_at, on the monotonic clock";

/// `campaign.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Campaign {
    /// Layout version of the attempt's files.
    pub schema_version: u32,
    /// The program that wrote the attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Tool>,
    /// The attempt's id.
    pub attempt_id: String,
    /// Wall-clock start, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// How record times relate to `started_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_origin: Option<String>,
    /// The resolved config.
    pub config: CampaignConfig,
    /// What every shard of one attempt must share (see `views::fingerprint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_fingerprint: Option<String>,
    /// The cases, in run order.
    pub cases: Vec<CampaignCase>,
    /// What was measured.
    pub target: CampaignTarget,
    /// The machine the client ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// A merged attempt: the shards it was joined from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<MergedFrom>,
}

impl Campaign {
    /// The campaign of a run of `config` in `attempt` against `target`, with the cases planned so
    /// far and the config's `fingerprint`.
    pub fn new(
        config: &Config,
        attempt: &Attempt,
        target: CampaignTarget,
        plans: &[CasePlan],
        fingerprint: String,
    ) -> crate::error::Result<Campaign> {
        Ok(Campaign {
            schema_version: SCHEMA_VERSION,
            tool: Some(Tool::this()),
            attempt_id: attempt.id.clone(),
            started_at: Some(attempt.started_at.clone()),
            time_origin: Some(TIME_ORIGIN.to_owned()),
            config: CampaignConfig::of(config).context("writing campaign.json")?,
            config_fingerprint: Some(fingerprint),
            cases: plans.iter().map(CampaignCase::from).collect(),
            target,
            host: Some(Host::this()),
            merged_from: None,
        })
    }

    /// Writes the campaign as `campaign.json` into the attempt folder. It goes through a JSON
    /// value, whose keys are sorted: the file's keys are in that order at every level.
    pub fn write(&self, attempt: &Attempt) -> crate::error::Result<()> {
        let value = serde_json::to_value(self).context("writing campaign.json")?;
        attempt.write_json(CAMPAIGN_FILE, &value)
    }
}

/// `campaign.json` of the attempt in `dir`.
pub fn read_campaign(dir: &Path) -> crate::error::Result<Campaign> {
    let path = dir.join(CAMPAIGN_FILE);
    let text =
        crate::files::read_text(&path).with_context(|| format!("reading {}", path.display()))?;
    super::check_schema(&path, &text)?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not an llmload campaign", path.display()))
}

/// The program that wrote an attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    /// `llmload`.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Tool {
    /// This program.
    pub fn this() -> Tool {
        Tool {
            name: "llmload".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// The resolved config, as the options model writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CampaignConfig {
    /// The campaign's name (its folder under `--out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Measured rounds per case.
    pub rounds: u32,
    /// Single warmup requests before each case's load.
    #[serde(default = "one")]
    pub warmup: u32,
    /// `--repeat N`: the campaign ran N times as one series; absent for a single run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Seed for prompt offsets.
    #[serde(default)]
    pub seed: u64,
    /// Objectives for goodput, in milliseconds.
    #[serde(default)]
    pub slo: SloMs,
    /// A mix of models: the objectives of the models that have their own, in milliseconds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub model_slo: BTreeMap<String, SloMs>,
    /// Tokens of the shared system prompt that open every prompt; 0 for none.
    #[serde(default)]
    pub system_prompt_tokens: u32,
    /// `--dataset`: where the prompts came from, and how they were used.
    #[serde(default)]
    pub dataset: Option<CampaignDataset>,
    /// The guard's thresholds.
    #[serde(default)]
    pub limits: GuardLimits,
    /// Time between live GPU readings, seconds (for the energy's sparseness rule).
    #[serde(default = "one_second")]
    pub telemetry_interval_s: f64,
    /// `--gpu-cost-per-hour` and `--gpus`, for each case's cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<crate::summary::cost::Price>,
    /// `--canaries`, `--canary-fail`: the canaries beside the rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canaries: Option<crate::config::canaries::Canaries>,
    /// `--shard`, `--attempt-id`, `--start-at`; absent from a merged attempt's campaign.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharding: Option<CampaignSharding>,
    /// `--model` with a mix: each model, its weight and its share of the requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<crate::workload::mix::ModelMix>,
    /// Every other field of the config, as written.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl CampaignConfig {
    /// `config` as `campaign.json` holds it: the options model's own serialisation.
    pub fn of(config: &Config) -> serde_json::Result<CampaignConfig> {
        serde_json::to_value(config).and_then(serde_json::from_value)
    }
}

fn one() -> u32 {
    1
}

fn one_second() -> f64 {
    1.0
}

/// The goodput objectives as `campaign.json` writes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SloMs {
    /// Time to first token, ms.
    pub ttft_ms: Option<f64>,
    /// Time per output token, ms.
    pub tpot_ms: Option<f64>,
    /// Complete-response time, ms.
    pub e2e_ms: Option<f64>,
}

impl CampaignConfig {
    /// The objectives of the models that have their own, as the runner holds them.
    pub fn model_objectives(
        &self,
    ) -> std::sync::Arc<BTreeMap<String, crate::workload::shape::Slo>> {
        std::sync::Arc::new(
            self.model_slo
                .iter()
                .map(|(model, slo)| (model.clone(), slo.slo()))
                .collect(),
        )
    }
}

impl SloMs {
    /// The objectives as the runner holds them.
    pub fn slo(&self) -> crate::workload::shape::Slo {
        let duration = |ms: Option<f64>| {
            ms.filter(|ms| ms.is_finite() && *ms >= 0.0)
                .map(|ms| std::time::Duration::from_secs_f64(ms / 1e3))
        };
        crate::workload::shape::Slo {
            ttft: duration(self.ttft_ms),
            tpot: duration(self.tpot_ms),
            e2e: duration(self.e2e_ms),
        }
    }
}

/// A dataset run's prompts, as `campaign.json` records them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CampaignDataset {
    /// The dataset file.
    pub path: PathBuf,
    /// How its prompts were sized.
    pub lengths: Lengths,
    /// Where the requested output lengths came from.
    pub output: Output,
    /// Its other fields, as written.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl CampaignDataset {
    /// The prompts in words, for the comparison key: the file's name and how it was used.
    pub fn describe(&self) -> String {
        let name = self
            .path
            .file_name()
            .map_or_else(|| "(unnamed)".into(), |n| n.to_string_lossy().into_owned());
        format!(
            "dataset {name}, {}, output {}",
            self.lengths.as_str(),
            self.output.as_str()
        )
    }
}

/// The guard's stop rules, as `campaign.json` writes them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardLimits {
    /// Stop temperature, °C.
    #[serde(default)]
    pub stop_temp_c: Option<f64>,
    /// Stop T.Limit margin, °C.
    #[serde(default)]
    pub stop_margin_c: Option<f64>,
    /// The other rules, as written.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl GuardLimits {
    /// The temperature thresholds the views show.
    pub fn thresholds(&self) -> CampaignLimits {
        CampaignLimits {
            stop_temp_c: self.stop_temp_c,
            stop_margin_c: self.stop_margin_c,
        }
    }
}

/// `--shard`, `--attempt-id` and `--start-at`, as `campaign.json` writes them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CampaignSharding {
    /// Which shard of how many; 0/1 for a whole attempt.
    #[serde(default)]
    pub shard: crate::workload::shard::Shard,
    /// The id every shard of one attempt shares.
    #[serde(default)]
    pub attempt_id: Option<String>,
    /// When every shard's load begins, RFC 3339.
    #[serde(default)]
    pub start_at: Option<String>,
    /// Its other fields, as written.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The target of `campaign.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CampaignTarget {
    /// Base URL.
    pub url: String,
    /// API driven.
    pub api: Api,
    /// Model, as sent or as the server named it.
    #[serde(default)]
    pub model: Option<String>,
    /// Whether the target was the built-in simulator.
    #[serde(default)]
    pub simulated: bool,
    /// What the server said of itself, as it said it.
    #[serde(default)]
    pub server: Value,
    /// Engine fields left out of every generation body (`--drop-field`, or refused by the
    /// server at setup under `--best-effort`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_fields: Vec<String>,
    /// Several `--url`: each replica's base URL, in the order given (the first is `url`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<String>,
}

impl CampaignTarget {
    /// `target` as the run found it; `simulated` when it was the built-in simulator.
    pub fn of(target: &crate::target::Target, simulated: bool) -> CampaignTarget {
        CampaignTarget {
            url: target.endpoint.base_url.clone(),
            api: target.endpoint.api,
            model: target.model.clone(),
            simulated,
            server: target.server.clone(),
            dropped_fields: target.drop_fields.clone(),
            replicas: target.replicas.iter().map(|e| e.base_url.clone()).collect(),
        }
    }
}

/// What can be read about the client's machine without privileges.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// CPU model.
    pub cpu: Option<String>,
    /// Logical CPUs available to the process.
    pub logical_cpus: Option<usize>,
    /// Total memory, MiB.
    pub memory_mib: Option<u64>,
    /// Operating system.
    pub os: String,
    /// CPU architecture.
    pub arch: String,
    /// Kernel release.
    pub kernel: Option<String>,
}

impl Host {
    /// This machine.
    pub fn this() -> Host {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let cpu = read("/proc/cpuinfo").and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        });
        let memory_mib = read("/proc/meminfo").and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
                .map(|kb| kb / 1024)
        });
        let os = read("/etc/os-release").and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_owned())
        });
        Host {
            cpu,
            logical_cpus: std::thread::available_parallelism()
                .map(std::num::NonZero::get)
                .ok(),
            memory_mib,
            os: os.unwrap_or_else(|| std::env::consts::OS.to_owned()),
            arch: std::env::consts::ARCH.to_owned(),
            kernel: read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_owned()),
        }
    }
}

/// The shards a merged attempt was joined from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedFrom {
    /// The id the shards shared.
    pub attempt_id: String,
    /// How many shards the attempt was split into.
    pub shards: u32,
    /// The shard folders, as given to `llmload merge`.
    pub dirs: Vec<String>,
}

#[cfg(test)]
mod tests;
