//! `llmload plan`: the capacity questions — typical and maximum prompt length, output
//! length, simultaneous generations, acceptable time to first token — answered from measured
//! attempts (sweeps, or runs over several loads), after the report stage of the pipeline.
//!
//! Each attempt's curve is answered on its own, never pooled with another's. The answer is the
//! largest measured load that, with every smaller measured load, keeps the budget, and the case
//! that supports it. Where the measurements do not cover the question, the answer says so and
//! gives the `llmload sweep` command that would; nothing is extrapolated, and the one
//! interpolation made (a wanted load between two measured loads that both keep the budget) is
//! labelled as such.

use crate::attempt::load;
use crate::error::Context;
use crate::fmt::thousands;
use crate::stats::Distribution;
use crate::summary::{CaseSummary, Summary};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod between;
mod curve;
mod render;
mod support;
mod wanted;

pub use curve::CurveAnswer;
pub use render::render;
pub use support::Support;
pub use wanted::{Wanted, WantedAnswer};

/// The percentile at which the budgets must hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Percentile {
    /// The median.
    P50,
    /// The 90th percentile.
    P90,
    /// The 95th percentile.
    P95,
    /// The 99th percentile.
    #[default]
    P99,
}

impl Percentile {
    /// Its value in `d`, and whether it only describes the sample (fewer than five samples
    /// beyond it, on either side for the median).
    pub fn of(self, d: &Distribution) -> (f64, bool) {
        let value = match self {
            Percentile::P50 => d.median,
            Percentile::P90 => d.p90,
            Percentile::P95 => d.p95,
            Percentile::P99 => d.p99,
        };
        (value, crate::stats::is_descriptive(d.n, self.q()))
    }

    /// Its quantile, 0–1.
    pub fn q(self) -> f64 {
        match self {
            Percentile::P50 => 0.50,
            Percentile::P90 => 0.90,
            Percentile::P95 => 0.95,
            Percentile::P99 => 0.99,
        }
    }

    /// `p99`, `p50`, …
    pub fn name(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P90 => "p90",
            Percentile::P95 => "p95",
            Percentile::P99 => "p99",
        }
    }
}

/// The question, as the flags put it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Question {
    /// Typical prompt length, tokens.
    pub prompt_tokens: u32,
    /// Longest prompt to serve, tokens.
    pub max_prompt_tokens: Option<u32>,
    /// Generated tokens per response.
    pub output_tokens: u32,
    /// Acceptable time to first token, ms, at `percentile`.
    pub ttft_ms: f64,
    /// Acceptable time per output token, ms, at `percentile`.
    pub tpot_ms: Option<f64>,
    /// Where the budgets must hold.
    pub percentile: Percentile,
    /// A load to check against the budget.
    pub wanted: Option<Wanted>,
}

/// One measured attempt: its folder and its summary, recomputed from its records.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The attempt folder, as given.
    pub dir: PathBuf,
    /// Its summary.
    pub summary: Summary,
    /// The `--url` it measured, credentials removed; `None` for the built-in simulator (which
    /// a command without `--url` starts again).
    pub url: Option<String>,
    /// The server's slots, as its `/props` said at setup (`total_slots`), when it said.
    pub slots: Option<u32>,
    /// Per case id, the TTFTs of its measured `ok` responses: the samples of its percentiles.
    pub ttft_samples: BTreeMap<String, TtftSamples>,
    /// Earlier attempts of the same cases (`--history`), for the spread between runs.
    pub history: Vec<Summary>,
}

impl Measured {
    /// The attempt in `dir`: its summary recomputed from its records, and the URL it measured.
    fn read(dir: &Path) -> crate::error::Result<Measured> {
        let report = load::read(dir)?;
        let campaign = crate::attempt::campaign::read_campaign(dir)?;
        let given = campaign
            .config
            .other
            .get("url")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        let slots = campaign.target.server["props"]["total_slots"]
            .as_u64()
            .and_then(|s| u32::try_from(s).ok())
            .filter(|&s| s > 0);
        let ttft_samples = ttft_samples(&report);
        let summary = report.summary;
        if !summary.cases.is_empty() && !summary.cases.iter().any(CaseSummary::generates) {
            return Err(crate::error::Error::Target(format!(
                "its cases are {} requests, which have no TTFT: llmload plan answers a TTFT \
                 budget of generation cases (a sweep of these reports its latency knee and \
                 C_sat)",
                summary.api
            )));
        }
        // An attempt whose campaign does not say names its target, unless it was simulated.
        let url = given
            .or_else(|| (!summary.simulated).then(|| summary.target_url.clone()))
            .map(|u| crate::secrets::redact_url(&u));
        Ok(Measured {
            dir: dir.to_path_buf(),
            summary,
            url,
            slots,
            ttft_samples,
            history: Vec::new(),
        })
    }
}

/// A case's TTFTs (ms), each sorted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TtftSamples {
    /// From the send.
    pub sent: Vec<f64>,
    /// From the scheduled time (open loops).
    pub scheduled: Vec<f64>,
}

/// Per case, the TTFTs of its measured `ok` responses, as the summary's TTFT figures count them.
pub(crate) fn ttft_samples(report: &crate::report::Report) -> BTreeMap<String, TtftSamples> {
    let mut out: BTreeMap<String, TtftSamples> = BTreeMap::new();
    // The cases that counted their far-short responses short leave them out of every figure.
    let short: Vec<&str> = (report.summary.cases.iter())
        .filter(|c| c.far_short.as_ref().is_some_and(|f| f.short))
        .map(|c| c.id.as_str())
        .collect();
    for r in &report.records {
        if r.phase != crate::record::Phase::Measured
            || r.status != crate::record::Status::Ok
            || (short.contains(&r.case.as_str())
                && crate::summary::short::far_short_share(r).is_some())
        {
            continue;
        }
        let case = out.entry(r.case.clone()).or_default();
        case.sent.extend(r.ttft_ms);
        if let (Some(s), Some(t)) = (r.scheduled_s, r.first_token_s) {
            case.scheduled.push((t - s) * 1e3);
        }
    }
    for case in out.values_mut() {
        case.sent.sort_by(f64::total_cmp);
        case.scheduled.sort_by(f64::total_cmp);
    }
    out
}

/// The answers for one prompt length.
#[derive(Clone, Debug, Serialize)]
pub struct LengthAnswer {
    /// `typical` or `maximum`.
    pub role: &'static str,
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// One answer per attempt and load shape that measured this length; never pooled.
    pub curves: Vec<CurveAnswer>,
    /// Why no attempt answers for this length, when none does.
    pub gap: Option<String>,
    /// What to run when the measurements do not cover this length.
    pub command: Option<String>,
}

/// The whole answer.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// What was asked.
    pub question: Question,
    /// The typical length, then the maximum.
    pub lengths: Vec<LengthAnswer>,
    /// A cap that keeps the budget even when every request carries the longest prompt: the
    /// smaller of the lengths' answers, when both were answered on the same kind of load.
    pub cap_for_longest: Option<f64>,
    /// Whether the measurements answer every question asked.
    pub covered: bool,
    /// Commands that would measure what is missing, each once.
    pub commands: Vec<String>,
}

/// `llmload plan`: loads every attempt in `dirs` and answers `question`.
pub fn plan(dirs: &[PathBuf], question: &Question) -> crate::error::Result<Plan> {
    plan_with_history(dirs, &[], question)
}

/// [`plan`] with earlier attempts of the same cases (`history`), whose spread between runs
/// widens each answer's interval to that of a re-measurement.
pub fn plan_with_history(
    dirs: &[PathBuf],
    history: &[PathBuf],
    question: &Question,
) -> crate::error::Result<Plan> {
    let earlier = history
        .iter()
        .map(|dir| {
            load::read(dir)
                .map(|r| r.summary)
                .with_context(|| format!("attempt {} (--history)", dir.display()))
        })
        .collect::<crate::error::Result<Vec<Summary>>>()?;
    let measured = dirs
        .iter()
        .map(|dir| {
            Measured::read(dir)
                .map(|m| Measured {
                    history: earlier.clone(),
                    ..m
                })
                .with_context(|| format!("attempt {}", dir.display()))
        })
        .collect::<crate::error::Result<Vec<Measured>>>()?;
    Ok(answer(question, &measured))
}

/// Answers `question` from `measured` attempts.
pub fn answer(question: &Question, measured: &[Measured]) -> Plan {
    let mut lengths = vec![length(
        question,
        measured,
        "typical",
        question.prompt_tokens,
    )];
    if let Some(max) = question
        .max_prompt_tokens
        .filter(|&m| m != question.prompt_tokens)
    {
        lengths.push(length(question, measured, "maximum", max));
    }
    let cap_for_longest = cap_for_longest(&lengths);
    let covered = lengths
        .iter()
        .all(|l| l.curves.iter().any(CurveAnswer::covered));
    let mut commands: Vec<String> = Vec::new();
    for command in lengths.iter().flat_map(|l| {
        l.command
            .iter()
            .chain(l.curves.iter().flat_map(CurveAnswer::commands))
    }) {
        if !commands.contains(command) {
            commands.push(command.clone());
        }
    }
    Plan {
        question: question.clone(),
        lengths,
        cap_for_longest,
        covered,
        commands,
    }
}

/// The answers of every attempt that measured `prompt_tokens` (× the output length asked).
fn length(
    question: &Question,
    measured: &[Measured],
    role: &'static str,
    prompt_tokens: u32,
) -> LengthAnswer {
    let mut curves = Vec::new();
    for m in measured {
        for kind in [
            support::Kind::Rounds,
            support::Kind::Continuous,
            support::Kind::Open,
        ] {
            let cases: Vec<&CaseSummary> = m
                .summary
                .cases
                .iter()
                .filter(|c| {
                    c.input_tokens == prompt_tokens
                        && c.output_tokens == question.output_tokens
                        && support::Kind::of(c) == kind
                })
                .collect();
            if !cases.is_empty() {
                curves.push(curve::answer(question, m, kind, &cases));
            }
        }
    }
    let (gap, command) = if curves.is_empty() {
        (
            Some(format!(
                "no attempt measured {}-token prompts with {} output tokens (measured: {})",
                thousands(prompt_tokens),
                thousands(question.output_tokens),
                lengths_measured(measured)
            )),
            Some(command(
                measured,
                question,
                prompt_tokens,
                support::Kind::Rounds,
                &[1.0, 2.0, 4.0, 8.0, 16.0],
            )),
        )
    } else {
        (None, None)
    };
    LengthAnswer {
        role,
        prompt_tokens,
        curves,
        gap,
        command,
    }
}

/// "2,048 × 256, 8,192 × 256" or "nothing".
fn lengths_measured(measured: &[Measured]) -> String {
    let mut pairs: Vec<(u32, u32)> = measured
        .iter()
        .flat_map(|m| m.summary.cases.iter())
        .map(|c| (c.input_tokens, c.output_tokens))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    if pairs.is_empty() {
        return "nothing".into();
    }
    let names: Vec<String> = pairs
        .iter()
        .map(|&(i, o)| format!("{} × {}", thousands(i), thousands(o)))
        .collect();
    format!("prompt × output tokens {}", names.join(", "))
}

/// The smaller of the typical and maximum lengths' recommended loads, per kind of load, when
/// both lengths were answered on that kind.
fn cap_for_longest(lengths: &[LengthAnswer]) -> Option<f64> {
    let [typical, maximum] = lengths else {
        return None;
    };
    let best = |l: &LengthAnswer, kind: &str| {
        l.curves
            .iter()
            .filter(|c| c.shape == kind)
            .filter_map(|c| c.recommended_load)
            .reduce(f64::min)
    };
    typical
        .curves
        .iter()
        .map(|c| c.shape)
        .find_map(|kind| Some(best(typical, kind)?.min(best(maximum, kind)?)))
}

/// The `llmload sweep` command that measures `loads` of `prompt_tokens` against the attempts'
/// target: `--url` when they all measured the same one (credentials removed), a `--url URL` to
/// fill in when they measured different ones, none for the built-in simulator.
pub(crate) fn command(
    measured: &[Measured],
    question: &Question,
    prompt_tokens: u32,
    kind: support::Kind,
    loads: &[f64],
) -> String {
    let mut text = String::from("llmload sweep");
    let first = measured.first().map(|m| &m.summary);
    let same =
        |f: fn(&Summary) -> &str| first.filter(|s| measured.iter().all(|m| f(&m.summary) == f(s)));
    let mut urls = measured.iter().map(|m| m.url.as_deref());
    let first_url = urls.next().flatten();
    if urls.any(|u| u != first_url) {
        text.push_str(" --url URL");
    } else if let Some(url) = first_url {
        let _ = write!(text, " --url {url}");
    }
    if let Some(s) = same(|s| s.api.as_str()).filter(|s| s.api != "llamacpp") {
        let _ = write!(text, " --api {}", s.api);
    }
    let _ = write!(
        text,
        " --input-tokens {prompt_tokens} --output-tokens {}",
        question.output_tokens
    );
    let list: Vec<String> = loads.iter().map(|&l| crate::fmt::number(l)).collect();
    match kind {
        support::Kind::Rounds => {
            let _ = write!(text, " --concurrency {}", list.join(","));
        }
        support::Kind::Continuous => {
            let _ = write!(
                text,
                " --arrival closed-continuous --concurrency {}",
                list.join(",")
            );
        }
        support::Kind::Open => {
            let _ = write!(text, " --arrival poisson --rate {}", list.join(","));
        }
    }
    if question.percentile == Percentile::P99 {
        let _ = write!(text, " --stop-ttft-p99 {}", duration(question.ttft_ms));
    }
    text
}

/// Milliseconds as a duration flag: `2s`, `500ms`.
pub(crate) fn duration(ms: f64) -> String {
    if ms >= 1000.0 && (ms / 1000.0).fract() == 0.0 {
        format!("{}s", ms / 1000.0)
    } else {
        format!("{}ms", crate::fmt::number(ms))
    }
}

/// The question's `--ttft` and `--tpot` in milliseconds, from flag text (`2s`, `500ms`).
pub fn parse_budget(flag: &str, text: &str) -> Result<f64, crate::config::ConfigError> {
    crate::num::duration(text)
        .map(|d| d.as_secs_f64() * 1e3)
        .map_err(|e| crate::config::ConfigError(format!("--{flag} {text:?}: {e}")))
        .and_then(|ms| {
            if ms > 0.0 {
                Ok(ms)
            } else {
                Err(crate::config::ConfigError(format!(
                    "--{flag} must be more than zero"
                )))
            }
        })
}

/// The attempt folder as the answer names it.
pub(crate) fn shown(dir: &Path) -> String {
    dir.display().to_string()
}

#[cfg(test)]
mod tests;
