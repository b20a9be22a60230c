//! Settings: every option of a run, all optional, as the command line and the TOML campaign file
//! give them (the file's keys are the flag names). Flags and file are each read into
//! [`Settings`]; [`Settings::over`] lays the flags over the file, and
//! [`Config::resolve`](super::Config::resolve) validates the result.

use super::{bad, ConfigError};
use crate::api::Api;
use crate::workload::length::{self, Length};
use crate::workload::shape::Arrival;
use crate::workload::stages::{self, LevelKind, Stage};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A run's options as given, all optional: the flags, or the campaign file (keys are the flag
/// names).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// `--url`: the server; none for the built-in simulator.
    pub url: Option<String>,
    /// `--api`: the API to drive (`llamacpp`, `completions`, `chat`).
    pub api: Option<Api>,
    /// `--model`: the model name sent on the completions and chat APIs.
    pub model: Option<String>,
    /// `--api-key`: the bearer token (never written to disk).
    pub api_key: Option<String>,
    /// `--header`: extra request headers, `NAME:VALUE`.
    #[serde(default)]
    pub headers: Vec<String>,
    /// `--timeout`: the limit for one request.
    pub timeout: Option<String>,
    /// `--setup-timeout`: the limit for each setup request and `/metrics` scrape.
    pub setup_timeout: Option<String>,
    /// `--ca-cert`: a PEM file of certificates trusted besides the system's.
    pub ca_cert: Option<PathBuf>,
    /// `--insecure`: the server's certificate is not checked.
    pub insecure: Option<bool>,
    /// `--show-header`: header names whose values may be written and printed.
    #[serde(default)]
    pub show_headers: Vec<String>,
    /// `--extra-body`: fields merged into every request body (a JSON object; a table in the
    /// campaign file).
    pub extra_body: Option<serde_json::Value>,
    /// `--input-tokens`: prompt lengths.
    pub input_tokens: Option<Lengths>,
    /// `--concurrency`: simultaneous requests, one case each.
    pub concurrency: Option<Vec<u32>>,
    /// `--output-tokens`: generated tokens per request.
    pub output_tokens: Option<Lengths>,
    /// `--arrival`: how requests are launched.
    pub arrival: Option<Arrival>,
    /// `--rate`: open-loop arrivals per second, one case each.
    pub rate: Option<Vec<f64>>,
    /// `--burstiness`: gamma arrivals' coefficient of variation.
    pub burstiness: Option<f64>,
    /// `--duration`: how long a continuous or open loop launches requests.
    pub duration: Option<String>,
    /// `--requests`: how many requests a continuous or open loop launches.
    pub requests: Option<u64>,
    /// `--max-in-flight`: the open loop's cap on requests in flight.
    pub max_in_flight: Option<u32>,
    /// `--warmup-time`: launches in this first stretch are warmup.
    pub warmup_time: Option<String>,
    /// `--system-prompt-tokens`: a shared system prompt of this many tokens.
    pub system_prompt_tokens: Option<u32>,
    /// `--series-window`: the soak series' window length.
    pub series_window: Option<String>,
    /// `--slo-ttft`: the goodput objective for time to first token.
    pub slo_ttft: Option<String>,
    /// `--slo-tpot`: the goodput objective for time per output token.
    pub slo_tpot: Option<String>,
    /// `--slo-e2e`: the goodput objective for the complete response.
    pub slo_e2e: Option<String>,
    /// `--trace`: a trace to replay.
    pub trace: Option<PathBuf>,
    /// `--trace-block-tokens`: tokens per `hash_ids` block of a trace.
    pub trace_block_tokens: Option<u32>,
    /// `--dataset`: prompts from a dataset file.
    pub dataset: Option<PathBuf>,
    /// `--dataset-lengths`: how dataset prompts are sized.
    pub dataset_lengths: Option<crate::workload::dataset::Lengths>,
    /// `--dataset-output`: where a dataset run's output lengths come from.
    pub dataset_output: Option<crate::workload::dataset::Output>,
    /// `--stages`: a staged load (the flag's text, or the file's `[[stages]]` tables).
    pub stages: Option<StagesSetting>,
    /// `--turns`: multi-turn sessions of this many turns.
    pub turns: Option<u32>,
    /// `--turn-input`: tokens of each new user message after the first turn.
    pub turn_input: Option<u32>,
    /// `--think-time`: between a turn's answer and the next turn (`2s`, `exp:2s`,
    /// `uniform:1s..3s`).
    pub think_time: Option<String>,
    /// `--history`: how previous answers stand in a session's history.
    pub history: Option<crate::workload::session::History>,
    /// `--sessions`: sessions per case.
    pub sessions: Option<u64>,
    /// `--rounds`: measured rounds per case.
    pub rounds: Option<u32>,
    /// `--warmup`: unmeasured requests per case.
    pub warmup: Option<u32>,
    /// `--seed`: the seed for prompts, lengths and schedules.
    pub seed: Option<u64>,
    /// `--out`: the results folder.
    pub out: Option<PathBuf>,
    /// `--name`: the campaign name.
    pub name: Option<String>,
    /// `--corpus`: the text prompts are built from.
    pub corpus: Option<PathBuf>,
    /// `--tokenizer`: the model's `tokenizer.json`, for counting on the client.
    pub tokenizer: Option<PathBuf>,
    /// `--best-effort`: run against a server that cannot be forced or counted.
    pub best_effort: Option<bool>,
    /// `--telemetry`: where GPU readings come from.
    pub telemetry: Option<String>,
    /// `--telemetry-interval`: the time between GPU readings.
    pub telemetry_interval: Option<String>,
    /// `--stop-temp`: stop at this GPU temperature, °C.
    pub stop_temp: Option<f64>,
    /// `--stop-margin`: stop at this T.Limit margin, °C.
    pub stop_margin: Option<f64>,
    /// `--max-duration`: stop after this long.
    pub max_duration: Option<String>,
    /// `--max-errors`: stop after this many failed or invalid responses.
    pub max_errors: Option<u32>,
    /// `--max-error-rate`: stop above this share of failed or invalid responses.
    pub max_error_rate: Option<f64>,
    /// `--cool-down-below`: before each case, wait until every GPU is below this, °C.
    pub cool_down_below: Option<f64>,
    /// `--cool-down-timeout`: the longest a cool-down waits.
    pub cool_down_timeout: Option<String>,
    /// `--quiet`: only the results table on stdout.
    pub quiet: Option<bool>,
    /// `--shard I/N`: run shard I (from 0) of N of one attempt.
    pub shard: Option<String>,
    /// `--attempt-id`: the id every shard of one attempt shares.
    pub attempt_id: Option<String>,
    /// `--start-at`: when the load begins (RFC 3339, or `+DURATION` from now).
    pub start_at: Option<String>,
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
        let mut show_headers = under.show_headers;
        show_headers.extend(self.show_headers);
        macro_rules! pick {
            ($($field:ident),* $(,)?) => {
                Settings { headers, show_headers, $($field: self.$field.or(under.$field),)* }
            };
        }
        pick!(
            url,
            api,
            model,
            api_key,
            timeout,
            setup_timeout,
            ca_cert,
            insecure,
            extra_body,
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
            trace_block_tokens,
            dataset,
            dataset_lengths,
            dataset_output,
            stages,
            turns,
            turn_input,
            think_time,
            history,
            sessions,
            rounds,
            warmup,
            seed,
            out,
            name,
            corpus,
            tokenizer,
            best_effort,
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
            shard,
            attempt_id,
            start_at,
        )
    }
}

/// `--stages`: the flag's text (`10s:rate=2,30s:ramp:rate=8`) or the campaign file's
/// `[[stages]]` tables.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum StagesSetting {
    /// As the flag writes it.
    Text(String),
    /// One table per stage.
    Tables(Vec<StageTable>),
}

/// One `[[stages]]` table: `duration`, one of `rate` and `concurrency`, and `ramp`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageTable {
    /// How long the stage lasts (`30s`).
    pub duration: String,
    /// Open loop: arrivals per second held, or reached at the end of a ramp.
    pub rate: Option<f64>,
    /// Closed-continuous: requests in flight held, or reached at the end of a ramp.
    pub concurrency: Option<u32>,
    /// A linear change from the previous stage's level over this stage.
    #[serde(default)]
    pub ramp: bool,
}

impl StagesSetting {
    /// The stages, not yet validated.
    pub fn stages(&self) -> Result<Vec<Stage>, ConfigError> {
        let tables = match self {
            StagesSetting::Text(text) => {
                return stages::parse(text).map_err(|e| ConfigError(format!("--stages {e}")));
            }
            StagesSetting::Tables(tables) => tables,
        };
        tables
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let n = i + 1;
                let duration = humantime::parse_duration(t.duration.trim()).map_err(|e| {
                    ConfigError(format!("stage {n}: duration {:?}: {e}", t.duration))
                })?;
                let (kind, level) = match (t.rate, t.concurrency) {
                    (Some(r), None) => (LevelKind::Rate, r),
                    (None, Some(c)) => (LevelKind::Concurrency, f64::from(c)),
                    _ => return bad(format!("stage {n}: give one of rate and concurrency")),
                };
                Ok(Stage {
                    duration,
                    kind,
                    level,
                    ramp: t.ramp,
                })
            })
            .collect()
    }
}

/// Lengths: `[128, 512]`, `"choice:32,256"` or a list mixing both.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Lengths {
    /// One length or list, as a flag writes it.
    One(LengthItem),
    /// Several.
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

/// The largest campaign file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

fn read_file(path: &Path) -> Result<Settings, ConfigError> {
    let size = std::fs::metadata(path)
        .or_else(|e| bad(format!("cannot read {}: {e}", path.display())))?
        .len();
    if size > MAX_FILE_BYTES {
        return bad(format!(
            "{}: {size} bytes, more than a campaign file's {MAX_FILE_BYTES}",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .or_else(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    toml::from_str(&text).or_else(|e| {
        let message: String = e.message().trim().chars().take(300).collect();
        let Some(span) = e.span() else {
            return bad(format!("{}: {message}", path.display()));
        };
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        let content: String = text
            .lines()
            .nth(line - 1)
            .unwrap_or("")
            .trim()
            .chars()
            .take(120)
            .collect();
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
