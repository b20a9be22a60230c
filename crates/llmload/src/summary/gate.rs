//! The regression gate of `llmload compare --fail-if`: rules `METRIC OP CHANGE` (from flags or a
//! thresholds file), each checked on every case that the first attempt (BASE) and a later one
//! (NEW) both ran, complete on both sides. A check compares two given figures; it never runs
//! anything. docs/usage.md states the grammar.

use crate::error::ConfigError;
use crate::stats::interval::{Basis, Ci, Method, Unit};
use crate::stats::{Interval, Intervals};
use crate::summary::identity::{matched, CaseKey, KeyedAttempt};
use crate::summary::repeats::Series;
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
                    match case.load {
                        Some(_) => Figure::new(t.mean, case.counts.ok as usize, "responses"),
                        None => Figure::new(t.mean, t.n, "rounds"),
                    }
                    .with_ci(t.ci.as_ref()),
                )
            }
            Metric::Goodput => {
                let load = case.load.as_ref()?;
                let goodput = load.goodput_rps?;
                Some(
                    Figure::new(goodput, case.counts.ok as usize, "responses")
                        .with_ci(load.goodput_ci.as_ref()),
                )
            }
            Metric::ErrorRate => {
                let c = &case.counts;
                let failed = c.invalid.saturating_add(c.error);
                let ended = c.ok.saturating_add(failed);
                (ended > 0).then(|| {
                    let level = crate::stats::interval::level();
                    Figure {
                        interval: Some(wilson(failed, ended, level)),
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

/// Wilson's score interval of a share `k` of `n` at `level`.
fn wilson(k: u32, n: u32, level: f64) -> Interval {
    let z = change::z(level);
    let (k, n) = (f64::from(k), f64::from(n));
    let p = k / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Interval {
        low: (centre - half).max(0.0),
        high: (centre + half).min(1.0),
    }
    .holding(p)
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

/// Both figures, the change in the rule's unit, its interval and what it would take to decide.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// BASE's figure.
    pub base: Figure,
    /// NEW's figure.
    pub new: Figure,
    /// The change in the unit of the rule's bound: percent of BASE (±infinity, written as
    /// `null`, from a BASE of 0), or NEW − BASE in the metric's unit.
    pub change: f64,
    /// The change's confidence interval, in the same unit; absent where a side has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// The confidence level.
    pub level: f64,
    /// How the interval was found.
    pub test: String,
    /// Why there is no interval (a figure too thin to test).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The smallest change the base's own noise lets the gate tell from none, in the rule's
    /// unit (the half-width between two copies of BASE).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_floor: Option<f64>,
    /// Whether the rule's bound is inside the noise floor: it can then never pass as no change.
    pub below_noise: bool,
    /// Inconclusive: how many times the samples on both sides would likely decide.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples_to_decide: Option<f64>,
}

/// How one rule came out on one case.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// The change is beyond the rule's bound with the stated confidence: the gate fails.
    Regressed(Comparison),
    /// The change is beyond the bound the other way with the stated confidence.
    Improved(Comparison),
    /// The change's interval lies on the good side of the bound.
    NoChange(Comparison),
    /// The interval straddles the bound, or a figure is too thin for one: more samples would
    /// tell. Fails the gate only with `--fail-on inconclusive`.
    Inconclusive(Comparison),
    /// Not compared, and why (a figure absent on one side, a case incomplete in BASE).
    NotCompared {
        /// Why, in words.
        reason: String,
    },
    /// The case is complete in BASE and not in NEW: the new attempt did not finish what the
    /// base did (failures, a stop), which fails the gate whatever the rule.
    Unfinished {
        /// Why, in words.
        reason: String,
    },
}

impl Verdict {
    /// Whether this verdict fails the gate (`strict`: inconclusive ones too).
    pub fn fails(&self, strict: bool) -> bool {
        match self {
            Verdict::Regressed(_) | Verdict::Unfinished { .. } => true,
            Verdict::Inconclusive(_) => strict,
            _ => false,
        }
    }

    /// The comparison behind a verdict that compared.
    pub fn comparison(&self) -> Option<&Comparison> {
        match self {
            Verdict::Regressed(c)
            | Verdict::Improved(c)
            | Verdict::NoChange(c)
            | Verdict::Inconclusive(c) => Some(c),
            _ => None,
        }
    }

    /// The verdict's name, as `--json` writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Regressed(_) => "regressed",
            Verdict::Improved(_) => "improved",
            Verdict::NoChange(_) => "no-change",
            Verdict::Inconclusive(_) => "inconclusive",
            Verdict::NotCompared { .. } => "not-compared",
            Verdict::Unfinished { .. } => "unfinished",
        }
    }
}

/// Checks `rule` on a case of BASE against the same case of NEW. Latency, throughput and goodput
/// are compared only where both cases are complete; the error rate wherever both have requests
/// that ended, since a case with failures is never complete. A case complete in BASE and not in
/// NEW fails every rule but the error rate's, which is compared.
pub fn check(rule: &Rule, base: &CaseSummary, new: &CaseSummary) -> Verdict {
    if rule.metric != Metric::ErrorRate && base.complete && !new.complete {
        return Verdict::Unfinished {
            reason: "complete in BASE, incomplete in NEW".into(),
        };
    }
    if rule.metric != Metric::ErrorRate {
        let sides = [(base, "BASE"), (new, "NEW")];
        let incomplete: Vec<&str> = sides
            .iter()
            .filter(|(c, _)| !c.complete)
            .map(|(_, s)| *s)
            .collect();
        if !incomplete.is_empty() {
            let reason = format!("not compared (incomplete in {})", incomplete.join(" and "));
            return Verdict::NotCompared { reason };
        }
    }
    let (b, n) = match (rule.metric.figure(base), rule.metric.figure(new)) {
        (Some(b), Some(n)) => (b, n),
        (b, _) => {
            let side = if b.is_none() { "BASE" } else { "NEW" };
            let reason = format!("not compared (absent in {side})");
            return Verdict::NotCompared { reason };
        }
    };
    judge(rule, b, n)
}

/// [`check`] where BASE and NEW may be series of repeats: where both have at least two
/// complete repeats of the case, the change's interval comes from the variation between their
/// repeats (Welch's t), which holds what changes from one run to the next; else from the
/// figures' own intervals.
pub fn check_series(
    rule: &Rule,
    (base, base_series): (&CaseSummary, Option<&Series>),
    (new, new_series): (&CaseSummary, Option<&Series>),
) -> Verdict {
    let verdict = check(rule, base, new);
    let Some(comparison) = verdict.comparison() else {
        return verdict;
    };
    // A repeat's figure too thin to stand for its percentile (a p99 of 12 responses is their
    // maximum) is no figure to test: the pooled figures' intervals say so instead.
    // (The tails only, as a distribution's `descriptive` marks them: a median is never thin.)
    let q = match rule.metric {
        Metric::Latency(_, Percentile::P90) => Some(0.9),
        Metric::Latency(_, Percentile::P95) => Some(0.95),
        Metric::Latency(_, Percentile::P99) => Some(0.99),
        _ => None,
    };
    let values = |series: Option<&Series>, id: &str| {
        series.map_or_else(Vec::new, |s| {
            s.values(id, |c| {
                rule.metric
                    .figure(c)
                    .filter(|f| q.is_none_or(|q| !crate::stats::is_descriptive(f.n, q)))
                    .map(|f| f.value)
            })
        })
    };
    let (vb, vn) = (values(base_series, &base.id), values(new_series, &new.id));
    let level = crate::stats::interval::level();
    let Some(interval) = change::between_repeats(rule.bound, &vb, &vn, level) else {
        return verdict;
    };
    let point = comparison.change;
    let interval = interval.holding(point);
    let noise_floor =
        change::between_repeats(rule.bound, &vb, &vb, level).map(|i| (i.high - i.low) / 2.0);
    let call = change::call(rule.op, rule.bound, interval);
    let comparison = Comparison {
        interval: Some(interval),
        test: format!(
            "Welch's t over the repeats' figures (BASE: {} repeats; NEW: {} repeats)",
            vb.len(),
            vn.len()
        ),
        reason: None,
        below_noise: noise_floor.is_some_and(|f| change::bound_value(rule.bound).abs() < f),
        noise_floor,
        samples_to_decide: (call == change::Call::Inconclusive)
            .then(|| change::samples_to_decide(point, rule.bound, interval))
            .flatten(),
        ..comparison.clone()
    };
    verdict_of(call, comparison)
}

/// The verdict a call makes, holding `comparison`.
fn verdict_of(call: change::Call, comparison: Comparison) -> Verdict {
    match call {
        change::Call::Regressed => Verdict::Regressed(comparison),
        change::Call::Improved => Verdict::Improved(comparison),
        change::Call::NoChange => Verdict::NoChange(comparison),
        change::Call::Inconclusive => Verdict::Inconclusive(comparison),
    }
}

/// The verdict of `rule` on the figures `b` (BASE) and `n` (NEW).
pub fn judge(rule: &Rule, b: Figure, n: Figure) -> Verdict {
    let change = match rule.bound {
        Change::Percent(_) if b.value == 0.0 => match n.value {
            0.0 => 0.0,
            v if v > 0.0 => f64::INFINITY,
            _ => f64::NEG_INFINITY,
        },
        Change::Percent(_) => (n.value - b.value) / b.value.abs() * 100.0,
        Change::Absolute(_) => n.value - b.value,
    };
    let level = crate::stats::interval::level();
    let interval = change::interval(rule.bound, &b, &n, level).map(|i| i.holding(change));
    let noise_floor = change::noise_floor(rule.bound, &b, level);
    let side = |f: &Figure| {
        f.basis
            .map_or_else(|| "no interval".to_owned(), |basis| basis.described())
    };
    let test = format!(
        "the two sides' intervals combined as independent (BASE: {}; NEW: {})",
        side(&b),
        side(&n)
    );
    let reason = match (&b.no_interval, &n.no_interval) {
        (Some(why), _) if interval.is_none() => Some(format!("BASE: {why}")),
        (_, Some(why)) if interval.is_none() => Some(format!("NEW: {why}")),
        _ if interval.is_none() => Some("no interval for the change".into()),
        _ => None,
    };
    let call = interval.map_or(change::Call::Inconclusive, |i| {
        change::call(rule.op, rule.bound, i)
    });
    let samples_to_decide = match (call, interval) {
        (change::Call::Inconclusive, Some(i)) => change::samples_to_decide(change, rule.bound, i),
        _ => None,
    };
    let comparison = Comparison {
        base: b,
        new: n,
        change,
        interval,
        level,
        test,
        reason,
        below_noise: noise_floor.is_some_and(|f| change::bound_value(rule.bound).abs() < f),
        noise_floor,
        samples_to_decide,
    };
    verdict_of(call, comparison)
}

/// One rule on one case of one NEW attempt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    /// The case id (BASE's).
    pub case: String,
    /// The case's key.
    pub key: CaseKey,
    /// The NEW attempt's index among the compared ones (1 for B).
    pub new: usize,
    /// The rule.
    pub rule: Rule,
    /// The outcome.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Every rule on every case that BASE (the first attempt) and each later attempt both ran.
/// Cases of one side only are no checks: the comparison lists them.
pub fn evaluate(rules: &[Rule], attempts: &[KeyedAttempt]) -> Vec<Check> {
    let mut checks = Vec::new();
    for (key, cases) in matched(attempts) {
        let Some(Some(base)) = cases.first() else {
            continue;
        };
        for (i, new) in cases.iter().enumerate().skip(1) {
            let Some(new) = new else { continue };
            for rule in rules {
                checks.push(Check {
                    case: base.id.clone(),
                    key: key.clone(),
                    new: i,
                    rule: rule.clone(),
                    verdict: check_series(
                        rule,
                        (base, attempts[0].summary.repeats.as_ref()),
                        (
                            new,
                            attempts.get(i).and_then(|a| a.summary.repeats.as_ref()),
                        ),
                    ),
                });
            }
        }
    }
    checks
}

pub mod change;

#[cfg(test)]
mod tests;
