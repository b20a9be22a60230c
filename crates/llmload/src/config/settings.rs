//! Settings: every option of a run, all optional, as the command line and the TOML campaign file
//! give them (the file's keys are the flag names). Flags and file are each read into
//! [`Settings`]; [`Settings::over`] lays the flags over the file, and
//! [`Config::resolve`](super::Config::resolve) validates the result.

use super::{bad, ConfigError};
use crate::api::Api;
use crate::workload::length::{self, Length};
use crate::workload::shape::Arrival;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A run's options as given, all optional: the flags, or the campaign file (keys are the flag
/// names).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub url: Option<String>,
    pub api: Option<Api>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    #[serde(default)]
    pub headers: Vec<String>,
    pub timeout: Option<String>,
    pub input_tokens: Option<Lengths>,
    pub concurrency: Option<Vec<u32>>,
    pub output_tokens: Option<Lengths>,
    pub arrival: Option<Arrival>,
    pub rate: Option<Vec<f64>>,
    pub burstiness: Option<f64>,
    pub duration: Option<String>,
    pub requests: Option<u64>,
    pub max_in_flight: Option<u32>,
    pub warmup_time: Option<String>,
    pub system_prompt_tokens: Option<u32>,
    pub series_window: Option<String>,
    pub slo_ttft: Option<String>,
    pub slo_tpot: Option<String>,
    pub slo_e2e: Option<String>,
    pub trace: Option<PathBuf>,
    pub rounds: Option<u32>,
    pub warmup: Option<u32>,
    pub seed: Option<u64>,
    pub out: Option<PathBuf>,
    pub name: Option<String>,
    pub corpus: Option<PathBuf>,
    pub telemetry: Option<String>,
    pub telemetry_interval: Option<String>,
    pub stop_temp: Option<f64>,
    pub stop_margin: Option<f64>,
    pub max_duration: Option<String>,
    pub max_errors: Option<u32>,
    pub max_error_rate: Option<f64>,
    pub cool_down_below: Option<f64>,
    pub cool_down_timeout: Option<String>,
    pub quiet: Option<bool>,
}

impl Settings {
    /// Reads a campaign file.
    pub fn read(path: &Path) -> Result<Settings, ConfigError> {
        read_file(path)
    }

    /// These settings over `under`: each value given here wins; header lines add up (`under`'s
    /// first).
    #[must_use]
    pub fn over(self, under: Settings) -> Settings {
        let mut headers = under.headers;
        headers.extend(self.headers);
        macro_rules! pick {
            ($($field:ident),* $(,)?) => {
                Settings { headers, $($field: self.$field.or(under.$field),)* }
            };
        }
        pick!(
            url,
            api,
            model,
            api_key,
            timeout,
            input_tokens,
            concurrency,
            output_tokens,
            arrival,
            rate,
            burstiness,
            duration,
            requests,
            max_in_flight,
            warmup_time,
            system_prompt_tokens,
            series_window,
            slo_ttft,
            slo_tpot,
            slo_e2e,
            trace,
            rounds,
            warmup,
            seed,
            out,
            name,
            corpus,
            telemetry,
            telemetry_interval,
            stop_temp,
            stop_margin,
            max_duration,
            max_errors,
            max_error_rate,
            cool_down_below,
            cool_down_timeout,
            quiet,
        )
    }
}

/// Lengths: `[128, 512]`, `"choice:32,256"` or a list mixing both.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Lengths {
    One(LengthItem),
    List(Vec<LengthItem>),
}

/// One item of [`Lengths`]: a token count or a length's text (`512`, `choice:32,256`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum LengthItem {
    /// A fixed length.
    Tokens(u32),
    /// A list or distribution, as the flags write it.
    Spec(String),
}

impl Lengths {
    /// The lengths of flag texts (`--input-tokens 128,512`); `None` when none was given.
    pub fn from_flags(texts: &[String]) -> Option<Lengths> {
        (!texts.is_empty())
            .then(|| Lengths::List(texts.iter().cloned().map(LengthItem::Spec).collect()))
    }

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

fn read_file(path: &Path) -> Result<Settings, ConfigError> {
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
    given: Option<Lengths>,
    default: &str,
) -> Result<Vec<Length>, ConfigError> {
    let texts = given.map_or_else(|| vec![default.to_owned()], Lengths::texts);
    let mut out = Vec::new();
    for text in &texts {
        out.extend(length::parse_list(text).map_err(|e| ConfigError(format!("--{what} {e}")))?);
    }
    if out.is_empty() {
        return bad(format!("--{what} needs one or more values above 0"));
    }
    Ok(out)
}
