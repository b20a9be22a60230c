//! The regression gate of `llmload compare --fail-if`: rules `METRIC OP CHANGE` (from flags or a
//! thresholds file), each checked on every case that the first attempt (BASE) and a later one
//! (NEW) both ran, complete on both sides. A check compares two given figures; it never runs
//! anything. docs/usage.md states the grammar.

use crate::compare::identity::CaseKey;
use crate::error::ConfigError;
use crate::stats::interval::{Basis, Ci, Method, Unit};
use crate::stats::{Interval, Intervals};
use crate::summary::CaseSummary;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// What a metric measures, which decides the units an absolute change may be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A latency, in ms.
    Time,
    /// Output tokens per second.
    Throughput,
    /// Requests per second.
    Goodput,
    /// A share of requests, in percentage points.
    Share,
}

/// A percentile of a latency distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Percentile {
    /// The median.
    P50,
    /// 90th.
    P90,
    /// 95th.
    P95,
    /// 99th.
    P99,
}

/// A latency distribution of a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Latency {
    /// Time to first token.
    Ttft,
    /// Time per output token.
    Tpot,
    /// Inter-token latency.
    Itl,
    /// Complete-response time.
    E2e,
    /// A new connection's setup (before the send), over the responses on new connections.
    Connect,
    /// The response head, from the send.
    Head,
    /// The first event of the body, from the send.
    FirstEvent,
}

/// A figure a rule can be about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// A percentile of a latency, ms.
    Latency(Latency, Percentile),
    /// Aggregate output throughput, tokens/s.
    Throughput,
    /// Responses meeting every objective, per second (continuous and open loops with an SLO).
    Goodput,
    /// Failed and invalid responses over the measured requests that ended.
    ErrorRate,
}

const LATENCIES: [(&str, Latency); 7] = [
    ("ttft", Latency::Ttft),
    ("tpot", Latency::Tpot),
    ("itl", Latency::Itl),
    ("e2e", Latency::E2e),
    ("connect", Latency::Connect),
    ("head", Latency::Head),
    ("first_event", Latency::FirstEvent),
];
const PERCENTILES: [(&str, Percentile); 4] = [
    ("p50", Percentile::P50),
    ("p90", Percentile::P90),
    ("p95", Percentile::P95),
    ("p99", Percentile::P99),
];

/// The metric names, as the usage error lists them.
const METRICS: &str = "ttft_, tpot_, itl_, e2e_, connect_, head_ or first_event_ with p50, \
                       p90, p95 or p99; throughput; goodput; error_rate";

impl Metric {
    /// What the metric measures.
    pub fn kind(self) -> Kind {
        match self {
            Metric::Latency(..) => Kind::Time,
            Metric::Throughput => Kind::Throughput,
            Metric::Goodput => Kind::Goodput,
            Metric::ErrorRate => Kind::Share,
        }
    }

    /// The figure of `case`, and how many samples it rests on; `None` when the case has none.
    pub fn figure(self, case: &CaseSummary) -> Option<Figure> {
        match self {
            Metric::Latency(latency, p) => {
                let phases = case.phases.as_ref();
                let d = match latency {
                    Latency::Ttft => case.ttft_ms.as_ref(),
                    Latency::Tpot => case.tpot_ms.as_ref(),
                    Latency::Itl => case.itl_ms.as_ref(),
                    Latency::E2e => case.e2e_ms.as_ref(),
                    Latency::Connect => phases.and_then(|p| p.connect_ms.as_ref()),
                    Latency::Head => phases.and_then(|p| p.head_ms.as_ref()),
                    Latency::FirstEvent => phases.and_then(|p| p.first_event_ms.as_ref()),
                }?;
                let (value, name) = match p {
                    Percentile::P50 => (d.median, "median"),
                    Percentile::P90 => (d.p90, "p90"),
                    Percentile::P95 => (d.p95, "p95"),
                    Percentile::P99 => (d.p99, "p99"),
                };
                let of = match latency {
                    Latency::Itl => "token gaps",
                    Latency::Connect => "new connections",
                    _ => "responses",
                };
                Some(Figure::new(value, d.n, of).with(d.ci.as_ref(), name))
            }
            Metric::Throughput => {
                let t = case.throughput_tps.as_ref()?;
                Some(
                    // A loop's rate is over its window's blocks, or a series' repeats.
                    match (&case.load, &t.ci) {
                        (Some(_), Some(ci)) => {
                            Figure::new(t.mean, ci.basis.units, ci.basis.unit.plural())
                        }
                        (Some(_), None) => {
                            Figure::new(t.mean, case.counts.ok as usize, "responses")
                        }
                        (None, _) => Figure::new(t.mean, t.n, "rounds"),
                    }
                    .with_ci(t.ci.as_ref()),
                )
            }
            Metric::Goodput => {
                let load = case.load.as_ref()?;
                let goodput = load.goodput_rps?;
                let figure = match &load.goodput_ci {
                    Some(ci) => Figure::new(goodput, ci.basis.units, ci.basis.unit.plural()),
                    None => Figure::new(goodput, case.counts.ok as usize, "responses"),
                };
                Some(figure.with_ci(load.goodput_ci.as_ref()))
            }
            Metric::ErrorRate => {
                let c = &case.counts;
                let failed = c.invalid.saturating_add(c.error);
                let ended = c.ok.saturating_add(failed);
                (ended > 0).then(|| {
                    let level = crate::stats::interval::level();
                    Figure {
                        interval: Some(crate::stats::interval::wilson(failed, ended, level)),
                        basis: Some(Basis {
                            level,
                            method: Method::Wilson,
                            unit: Unit::Response,
                            units: ended as usize,
                        }),
                        ..Figure::new(
                            f64::from(failed) / f64::from(ended),
                            ended as usize,
                            "requests",
                        )
                    }
                })
            }
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Latency(l, p) => {
                let l = LATENCIES.iter().find(|(_, x)| x == l).map_or("?", |x| x.0);
                let p = PERCENTILES
                    .iter()
                    .find(|(_, x)| x == p)
                    .map_or("?", |x| x.0);
                write!(f, "{l}_{p}")
            }
            Metric::Throughput => f.write_str("throughput"),
            Metric::Goodput => f.write_str("goodput"),
            Metric::ErrorRate => f.write_str("error_rate"),
        }
    }
}

impl FromStr for Metric {
    type Err = String;

    fn from_str(name: &str) -> Result<Metric, String> {
        match name {
            "throughput" => return Ok(Metric::Throughput),
            "goodput" => return Ok(Metric::Goodput),
            "error_rate" => return Ok(Metric::ErrorRate),
            _ => {}
        }
        name.rsplit_once('_')
            .and_then(|(l, p)| {
                let l = LATENCIES.iter().find(|(n, _)| *n == l)?.1;
                let p = PERCENTILES.iter().find(|(n, _)| *n == p)?.1;
                Some(Metric::Latency(l, p))
            })
            .ok_or_else(|| format!("unknown metric `{name}` (metrics: {METRICS})"))
    }
}

/// A figure, the samples behind it and its interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    /// The value, in the metric's unit (ms, tokens/s, requests/s, or a share 0–1).
    pub value: f64,
    /// Samples behind it.
    pub n: usize,
    /// What `n` counts: responses, token gaps, rounds or requests.
    pub of: &'static str,
    /// Its confidence interval, where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// How the interval was computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basis: Option<Basis>,
    /// Why it has no interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_interval: Option<String>,
}

impl Figure {
    fn new(value: f64, n: usize, of: &'static str) -> Figure {
        Figure {
            value,
            n,
            of,
            interval: None,
            basis: None,
            no_interval: None,
        }
    }

    /// The figure with the interval `ci` found for it (its figure named `name`), or why none.
    fn with(self, ci: Option<&Intervals>, name: &str) -> Figure {
        let Some(ci) = ci else {
            return Figure {
                no_interval: Some("its summary holds no intervals".into()),
                ..self
            };
        };
        let interval = ci.of(name);
        let no_interval = interval.is_none().then(|| {
            let label = if name == "median" { "p50" } else { name };
            format!(
                "its {label} rests on {} {}: too few for a {} % interval",
                self.n,
                self.of,
                crate::fmt::number(ci.basis.level * 100.0)
            )
        });
        Figure {
            interval,
            basis: Some(ci.basis),
            no_interval,
            ..self
        }
    }

    /// The figure with the interval of one figure `ci`, or why none.
    fn with_ci(self, ci: Option<&Ci>) -> Figure {
        let Some(ci) = ci else {
            return Figure {
                no_interval: Some("its summary holds no interval for it".into()),
                ..self
            };
        };
        Figure {
            interval: ci.interval,
            basis: Some(ci.basis),
            no_interval: ci
                .interval
                .is_none()
                .then(|| ci.note.clone().unwrap_or_else(|| "no interval".into())),
            ..self
        }
    }
}

/// Which way a change breaks a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Op {
    /// The rule fails when the change is above its bound.
    #[serde(rename = ">")]
    Above,
    /// The rule fails when the change is below its bound.
    #[serde(rename = "<")]
    Below,
}

/// A bound on the change from BASE to NEW.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "unit", content = "value", rename_all = "kebab-case")]
pub enum Change {
    /// (NEW − BASE) / BASE, in percent.
    Percent(f64),
    /// NEW − BASE in the metric's unit: ms, tokens/s, requests/s, or percentage points.
    Absolute(f64),
}

/// One rule: fail when the change of `metric` from BASE to NEW is beyond `bound` in the
/// direction of `op`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rule {
    /// The metric.
    #[serde(serialize_with = "as_text")]
    pub metric: Metric,
    /// `>` or `<`.
    pub op: Op,
    /// The bound.
    pub bound: Change,
    /// The rule as given, normalised (`ttft_p50 > +10%`).
    pub text: String,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with hands the field by reference"
)]
fn as_text<S: serde::Serializer>(metric: &Metric, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(metric)
}

/// The units an absolute change of a metric of `kind` is written in, and the factor to the
/// metric's own unit.
fn units(kind: Kind) -> &'static [(&'static str, f64)] {
    match kind {
        Kind::Time => &[("ms", 1.0), ("s", 1e3), ("us", 1e-3), ("µs", 1e-3)],
        Kind::Throughput => &[("tok/s", 1.0)],
        Kind::Goodput => &[("req/s", 1.0)],
        Kind::Share => &[("pp", 0.01)],
    }
}

impl FromStr for Rule {
    type Err = String;

    fn from_str(text: &str) -> Result<Rule, String> {
        let at = text
            .find(['>', '<'])
            .ok_or("no `>` or `<` (write METRIC > CHANGE or METRIC < CHANGE)")?;
        let op = if text[at..].starts_with('>') {
            Op::Above
        } else {
            Op::Below
        };
        let (name, bound) = (text[..at].trim(), text[at + 1..].trim());
        if bound.starts_with(['>', '<', '=']) {
            return Err("the operator is `>` or `<` alone".into());
        }
        let metric: Metric = name.parse()?;
        let (sign, rest) = match bound.strip_prefix('-') {
            Some(rest) => (-1.0, rest),
            None => (1.0, bound.strip_prefix('+').unwrap_or(bound)),
        };
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, unit) = (&rest[..end], rest[end..].trim());
        let value: f64 = number
            .parse()
            .map_err(|_| format!("`{bound}` is not a change such as +10% or +20ms"))?;
        let allowed = units(metric.kind());
        let change = if unit == "%" {
            Change::Percent(sign * value)
        } else if let Some((_, factor)) = allowed.iter().find(|(u, _)| *u == unit) {
            Change::Absolute(sign * value * factor)
        } else {
            let names: Vec<&str> = allowed.iter().map(|(u, _)| *u).collect();
            return Err(format!(
                "`{bound}` needs a unit: % (relative to BASE) or {} for {metric}",
                names.join(", ")
            ));
        };
        let op_text = if op == Op::Above { '>' } else { '<' };
        let sign_text = if sign < 0.0 { '-' } else { '+' };
        Ok(Rule {
            metric,
            op,
            bound: change,
            text: format!("{metric} {op_text} {sign_text}{number}{unit}"),
        })
    }
}

/// The rules of `--fail-if` expressions, then of a thresholds file's `fail_if` list; a bad one is
/// a usage error naming it.
pub fn rules(flags: &[String], file: Option<(&str, &str)>) -> Result<Vec<Rule>, ConfigError> {
    let mut out = Vec::new();
    for text in flags {
        out.push(
            text.parse()
                .map_err(|why| ConfigError(format!("--fail-if '{text}': {why}")))?,
        );
    }
    if let Some((path, text)) = file {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Thresholds {
            fail_if: Vec<String>,
        }
        let file: Thresholds = toml::from_str(text).map_err(|e| {
            let message: String = e.message().trim().chars().take(300).collect();
            ConfigError(format!("thresholds file {path}: {message}"))
        })?;
        for (i, text) in file.fail_if.iter().enumerate() {
            out.push(text.parse().map_err(|why| {
                ConfigError(format!(
                    "thresholds file {path}, rule {} '{text}': {why}",
                    i + 1
                ))
            })?);
        }
    }
    Ok(out)
}

/// One rule on one case of one NEW attempt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    /// The case id (BASE's).
    pub case: String,
    /// A mix of models: the model whose figures the check is on (absent: the case's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The case's key.
    pub key: CaseKey,
    /// The NEW attempt's index among the compared ones (1 for B).
    pub new: usize,
    /// The rule.
    pub rule: Rule,
    /// The outcome.
    #[serde(flatten)]
    pub verdict: GateVerdict,
    /// The server's own pace behind the metric, BASE to NEW, held against the client's change;
    /// absent where the records carry no server timings for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_pace: Option<pace::PaceShift>,
}

impl Check {
    /// What it checks, in words: the case id, and the model where it is one model's figures
    /// ("in512-c4-out64, model adapter-a").
    pub fn subject(&self) -> String {
        match &self.model {
            Some(model) => format!("{}, model {model}", self.case),
            None => self.case.clone(),
        }
    }
}

pub mod change;
pub mod drift;
mod evaluate;
pub mod pace;
mod verdict;
pub use evaluate::{evaluate, evaluate_with};
pub use verdict::{
    check, check_series, check_series_with, check_with, judge, judge_with, Comparison, GateVerdict,
};

#[cfg(test)]
mod tests;
