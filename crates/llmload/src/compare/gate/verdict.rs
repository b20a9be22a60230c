//! One rule on one case: the change from BASE to NEW, its interval (from the two figures' own
//! intervals, or between two series of repeats), and the verdict it gives.

use super::change::{self, Extra, ToDecide};
use super::drift::BetweenRuns;
use super::{Change, Figure, Latency, Metric, Percentile, Rule};
use crate::stats::Interval;
use crate::summary::repeats::Series;
use crate::summary::CaseSummary;
use serde::Serialize;

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
    /// Whether the rule's bound is inside the noise floor and the check did not pass: at this
    /// size it cannot pass as no change.
    pub below_noise: bool,
    /// Inconclusive, where more rounds would likely decide: how many times the rounds (or the
    /// window) on both sides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples_to_decide: Option<f64>,
    /// Inconclusive: what would likely decide it, in the unit that would (rounds, repeats), or
    /// that it is too close to the bound to decide at any affordable size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_decide: Option<ToDecide>,
    /// The variation between runs: whether it is known, its size, and whether it entered the
    /// interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub between_runs: Option<BetweenRuns>,
}

impl Comparison {
    /// Sets what would decide an inconclusive `call` (`between`: the between-run share of the
    /// change's variance; `repeats`: repeats a side behind the interval), and whether the bound
    /// is inside a noise floor the check did not pass.
    fn decide(mut self, call: change::Call, bound: Change, between: f64, repeats: usize) -> Self {
        self.to_decide = match (call, self.interval) {
            (change::Call::Inconclusive, Some(i)) => {
                change::to_decide(self.change, bound, i, between, repeats)
            }
            _ => None,
        };
        self.samples_to_decide = match self.to_decide {
            Some(ToDecide::Rounds { factor }) => Some(factor),
            _ => None,
        };
        // A check that passed (no change, improved) was told apart whatever the floor.
        let passed = matches!(call, change::Call::NoChange | change::Call::Improved);
        self.below_noise = !passed
            && self
                .noise_floor
                .is_some_and(|f| change::bound_value(bound).abs() < f);
        self
    }
}

/// How one rule came out on one case.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum GateVerdict {
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

impl GateVerdict {
    /// Whether this verdict fails the gate (`strict`: inconclusive ones too).
    pub fn fails(&self, strict: bool) -> bool {
        match self {
            GateVerdict::Regressed(_) | GateVerdict::Unfinished { .. } => true,
            GateVerdict::Inconclusive(_) => strict,
            _ => false,
        }
    }

    /// The comparison behind a verdict that compared.
    pub fn comparison(&self) -> Option<&Comparison> {
        match self {
            GateVerdict::Regressed(c)
            | GateVerdict::Improved(c)
            | GateVerdict::NoChange(c)
            | GateVerdict::Inconclusive(c) => Some(c),
            _ => None,
        }
    }

    /// The verdict's name, as `--json` writes it.
    pub fn name(&self) -> &'static str {
        match self {
            GateVerdict::Regressed(_) => "regressed",
            GateVerdict::Improved(_) => "improved",
            GateVerdict::NoChange(_) => "no-change",
            GateVerdict::Inconclusive(_) => "inconclusive",
            GateVerdict::NotCompared { .. } => "not-compared",
            GateVerdict::Unfinished { .. } => "unfinished",
        }
    }
}

/// Checks `rule` on a case of BASE against the same case of NEW. Latency, throughput and goodput
/// are compared only where both cases are complete; the error rate wherever both have requests
/// that ended, since a case with failures is never complete. A case complete in BASE and not in
/// NEW fails every rule but the error rate's, which is compared.
pub fn check(rule: &Rule, base: &CaseSummary, new: &CaseSummary) -> GateVerdict {
    check_with(rule, base, new, None)
}

/// [`check`] with the between-run term `between` (known or not) in the interval.
pub fn check_with(
    rule: &Rule,
    base: &CaseSummary,
    new: &CaseSummary,
    between: Option<BetweenRuns>,
) -> GateVerdict {
    if rule.metric != Metric::ErrorRate && base.complete && !new.complete {
        return GateVerdict::Unfinished {
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
            return GateVerdict::NotCompared { reason };
        }
    }
    let (b, n) = match (rule.metric.figure(base), rule.metric.figure(new)) {
        (Some(b), Some(n)) => (b, n),
        (b, _) => {
            let (side, case) = if b.is_none() {
                ("BASE", base)
            } else {
                ("NEW", new)
            };
            let per_token = matches!(
                rule.metric,
                Metric::Latency(Latency::Itl | Latency::Tpot | Latency::Ttft, _)
            );
            let reason = if per_token && case.pooling.is_some() {
                format!(
                    "not compared (does not apply in {side}: embeddings and rerank stream no \
                     tokens)"
                )
            } else if per_token
                && case
                    .bursts
                    .as_ref()
                    .is_some_and(crate::summary::bursts::Bursts::held_out)
            {
                format!(
                    "not compared (not measurable in {side}: its tokens arrived in bursts, \
                     through a path that buffers the stream)"
                )
            } else {
                format!("not compared (absent in {side})")
            };
            return GateVerdict::NotCompared { reason };
        }
    };
    judge_with(rule, b, n, between)
}

/// [`check`] where BASE and NEW may be series of repeats: where both have at least two
/// complete repeats of the case, the change's interval comes from the variation between their
/// repeats (Welch's t), which holds what changes from one run to the next; else from the
/// figures' own intervals.
pub fn check_series(
    rule: &Rule,
    base: (&CaseSummary, Option<&Series>),
    new: (&CaseSummary, Option<&Series>),
) -> GateVerdict {
    check_series_with(rule, base, new, None)
}

/// [`check_series`] with the between-run term `between` for figures that are not series of
/// repeats (a Welch interval over repeats holds its own).
pub fn check_series_with(
    rule: &Rule,
    (base, base_series): (&CaseSummary, Option<&Series>),
    (new, new_series): (&CaseSummary, Option<&Series>),
    between: Option<BetweenRuns>,
) -> GateVerdict {
    let verdict = check_with(rule, base, new, between);
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
        noise_floor,
        between_runs: Some(BetweenRuns::repeats(rule.bound, &vb, &vn)),
        ..comparison.clone()
    }
    // Every unit of a Welch interval is a run: only more repeats narrow it.
    .decide(call, rule.bound, 1.0, vb.len().min(vn.len()));
    verdict_of(call, comparison)
}

/// The verdict a call makes, holding `comparison`.
fn verdict_of(call: change::Call, comparison: Comparison) -> GateVerdict {
    match call {
        change::Call::Regressed => GateVerdict::Regressed(comparison),
        change::Call::Improved => GateVerdict::Improved(comparison),
        change::Call::NoChange => GateVerdict::NoChange(comparison),
        change::Call::Inconclusive => GateVerdict::Inconclusive(comparison),
    }
}

/// The verdict of `rule` on the figures `b` (BASE) and `n` (NEW).
pub fn judge(rule: &Rule, b: Figure, n: Figure) -> GateVerdict {
    judge_with(rule, b, n, None)
}

/// [`judge`] with the between-run term `between`: where it is known, its variance joins the
/// change's, so that a regression must exceed it too.
pub fn judge_with(rule: &Rule, b: Figure, n: Figure, between: Option<BetweenRuns>) -> GateVerdict {
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
    let extra = between.as_ref().map_or(Extra::NONE, |t| Extra {
        variance: t.variance,
        df: t.df,
    });
    let interval =
        change::interval_with(rule.bound, &b, &n, level, extra).map(|i| i.holding(change));
    let noise_floor = change::noise_floor(rule.bound, &b, level, extra);
    let within = change::within_variance(rule.bound, &b, &n, level).unwrap_or(0.0);
    let share = if extra.variance > 0.0 {
        extra.variance / (within + extra.variance)
    } else {
        0.0
    };
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
    let comparison = Comparison {
        base: b,
        new: n,
        change,
        interval,
        level,
        test,
        reason,
        below_noise: false,
        noise_floor,
        samples_to_decide: None,
        to_decide: None,
        between_runs: between,
    }
    .decide(call, rule.bound, share, 1);
    verdict_of(call, comparison)
}
