//! Config: the TOML campaign file (keys are the flag names) and the length lists that flags and
//! file share, read into the same shapes as the flags.

use super::{bad, ConfigError};
use crate::api::Api;
use crate::workload::length::{self, Length};
use crate::workload::shape::Arrival;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The campaign file: the flags' names, all optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CampaignFile {
    pub(super) url: Option<String>,
    pub(super) api: Option<Api>,
    pub(super) model: Option<String>,
    pub(super) api_key: Option<String>,
    #[serde(default)]
    pub(super) headers: Vec<String>,
    pub(super) timeout: Option<String>,
    pub(super) input_tokens: Option<Lengths>,
    pub(super) concurrency: Option<Vec<u32>>,
    pub(super) output_tokens: Option<Lengths>,
    pub(super) arrival: Option<Arrival>,
    pub(super) rate: Option<Vec<f64>>,
    pub(super) burstiness: Option<f64>,
    pub(super) duration: Option<String>,
    pub(super) requests: Option<u64>,
    pub(super) max_in_flight: Option<u32>,
    pub(super) warmup_time: Option<String>,
    pub(super) system_prompt_tokens: Option<u32>,
    pub(super) series_window: Option<String>,
    pub(super) slo_ttft: Option<String>,
    pub(super) slo_tpot: Option<String>,
    pub(super) slo_e2e: Option<String>,
    pub(super) trace: Option<PathBuf>,
    pub(super) rounds: Option<u32>,
    pub(super) warmup: Option<u32>,
    pub(super) seed: Option<u64>,
    pub(super) out: Option<PathBuf>,
    pub(super) name: Option<String>,
    pub(super) corpus: Option<PathBuf>,
    pub(super) telemetry: Option<String>,
    pub(super) telemetry_interval: Option<String>,
    pub(super) stop_temp: Option<f64>,
    pub(super) stop_margin: Option<f64>,
    pub(super) max_duration: Option<String>,
    pub(super) max_errors: Option<u32>,
    pub(super) max_error_rate: Option<f64>,
    pub(super) cool_down_below: Option<f64>,
    pub(super) cool_down_timeout: Option<String>,
}

/// Lengths in a campaign file: `[128, 512]`, `"choice:32,256"` or a list mixing both.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Lengths {
    One(LengthItem),
    List(Vec<LengthItem>),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum LengthItem {
    Tokens(u32),
    Spec(String),
}

impl Lengths {
    fn texts(self) -> Vec<String> {
        let items = match self {
            Lengths::One(item) => vec![item],
            Lengths::List(items) => items,
        };
        items
            .into_iter()
            .map(|item| match item {
                LengthItem::Tokens(n) => n.to_string(),
                LengthItem::Spec(s) => s,
            })
            .collect()
    }
}

pub(super) fn read_file(path: &Path) -> Result<CampaignFile, ConfigError> {
    let text = std::fs::read_to_string(path)
        .or_else(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    toml::from_str(&text).or_else(|e| {
        let message = e.message().trim().to_owned();
        let Some(span) = e.span() else {
            return bad(format!("{}: {message}", path.display()));
        };
        let line = text[..span.start].matches('\n').count() + 1;
        let content = text.lines().nth(line - 1).unwrap_or("").trim();
        bad(format!(
            "{}:{line}: {message} (in `{content}`)",
            path.display()
        ))
    })
}

pub(super) fn lengths(
    what: &str,
    flag: &[String],
    file: Option<Lengths>,
    default: &str,
) -> Result<Vec<Length>, ConfigError> {
    let texts = if flag.is_empty() {
        file.map_or_else(|| vec![default.to_owned()], Lengths::texts)
    } else {
        flag.to_vec()
    };
    let mut out = Vec::new();
    for text in &texts {
        out.extend(length::parse_list(text).map_err(|e| ConfigError(format!("--{what} {e}")))?);
    }
    if out.is_empty() {
        return bad(format!("--{what} needs one or more values above 0"));
    }
    Ok(out)
}
