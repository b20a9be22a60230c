//! A measured case against a plan's budget: the case's load shape, its figures at the
//! question's percentile with their interval, and whether it keeps the budget.

use super::Question;
use crate::summary::CaseSummary;
use serde::Serialize;

/// The load shape of a case: what its load axis means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Closed rounds: C requests together.
    Rounds,
    /// Closed continuous: C kept in flight.
    Continuous,
    /// Open loop: arrivals per second.
    Open,
}

impl Kind {
    /// The kind of `case`.
    pub(crate) fn of(case: &CaseSummary) -> Kind {
        match &case.load {
            None => Kind::Rounds,
            Some(l) if l.nominal_rate_rps.is_some() => Kind::Open,
            Some(_) => Kind::Continuous,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Rounds => "closed rounds",
            Kind::Continuous => "closed continuous",
            Kind::Open => "open loop",
        }
    }

    pub(crate) fn load(self, value: f64) -> String {
        let number = crate::fmt::number(value);
        match self {
            Kind::Open => format!("{number} requests/s"),
            _ => format!("concurrency {number}"),
        }
    }

    pub(crate) fn load_of(self, case: &CaseSummary) -> f64 {
        match self {
            Kind::Open => case
                .load
                .as_ref()
                .and_then(|l| l.nominal_rate_rps)
                .unwrap_or(0.0),
            _ => f64::from(case.concurrency),
        }
    }
}

/// A measured case against the budget.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Support {
    /// The case id in the attempt's records.
    pub case_id: String,
    /// Its load (concurrency, or arrivals per second).
    pub load: f64,
    /// Responses its TTFT figures come from.
    pub n: usize,
    /// Measured rounds (closed rounds).
    pub rounds: usize,
    /// Median TTFT, ms (from scheduled in an open loop).
    pub ttft_p50_ms: Option<f64>,
    /// TTFT at the question's percentile, ms.
    pub ttft_ms: Option<f64>,
    /// TPOT at the question's percentile, ms.
    pub tpot_ms: Option<f64>,
    /// Aggregate output throughput, tokens/s.
    pub throughput_tps: Option<f64>,
    /// The 95 % interval of TTFT at the percentile, ms, from the order statistics of the
    /// case's responses; absent when they are too few for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_low_ms: Option<f64>,
    /// Its upper end, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_high_ms: Option<f64>,
    /// The percentile has fewer than five samples beyond it: it describes the sample only.
    pub descriptive: bool,
    /// What the small sample means for the figure, when it is small.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// The server's own median prefill time per prompt token, ms, where its records carry
    /// the server's timings: the reference a re-measurement's pace is held against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_prefill_ms_per_token: Option<f64>,
    /// The server's own median decode time per generated token, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_decode_ms_per_token: Option<f64>,
    /// Whether the TTFT interval holds the spread between runs (repeats, earlier attempts), or
    /// is of one attempt only, in words.
    pub between_runs: String,
    /// Whether the case keeps every budget.
    pub meets: bool,
    /// Why not, when it does not.
    pub why_not: Option<String>,
    /// No response failed and TPOT keeps its budget (or none was given): whatever the case
    /// misses, it misses on TTFT alone.
    #[serde(skip)]
    pub others_hold: bool,
}

/// Evaluates `case` against the budgets, with the interval of its TTFT percentile from the
/// sorted `samples` of its responses' TTFTs (when they are the summary's); `None` when it was
/// stopped before it could say.
pub(super) fn evaluate(
    question: &Question,
    kind: Kind,
    case: &CaseSummary,
    samples: Option<&[f64]>,
) -> Option<Support> {
    let c = &case.counts;
    let failed = c.error + c.invalid;
    if !case.complete && failed == 0 {
        return None;
    }
    let scheduled = case
        .load
        .as_ref()
        .and_then(|l| l.ttft_from_scheduled_ms.as_ref());
    let ttft = scheduled.or(case.ttft_ms.as_ref());
    let at = ttft.map(|d| question.percentile.of(d));
    let tpot = case.tpot_ms.as_ref().map(|d| question.percentile.of(d).0);
    let p = question.percentile.name();
    let why_not = if failed > 0 {
        Some(format!(
            "{failed} of {} responses failed or were invalid",
            failed + c.ok + c.cancelled
        ))
    } else {
        match (at, tpot, question.tpot_ms) {
            (None, _, _) => Some("no TTFT measured".into()),
            (Some((t, _)), _, _) if t > question.ttft_ms => Some(format!(
                "{p} TTFT {} is above {}",
                crate::fmt::seconds(Some(t)),
                crate::fmt::seconds(Some(question.ttft_ms))
            )),
            (_, Some(t), Some(limit)) if t > limit => {
                Some(format!("{p} TPOT {t:.1} ms is above {limit:.1} ms"))
            }
            (_, None, Some(_)) => Some("no TPOT measured".into()),
            _ => None,
        }
    };
    let n = ttft.map_or(0, |d| d.n);
    // The summary's own interval where it has one (computed for the samples' units); else the
    // order statistics of the responses' samples.
    let level = crate::stats::interval::level();
    let interval = ttft
        .and_then(|d| d.ci.as_ref())
        .and_then(|ci| ci.of(p))
        .map(|i| (i.low, i.high))
        .or_else(|| {
            samples
                .filter(|s| s.len() == n)
                .and_then(|s| {
                    crate::stats::interval::order_statistic(s, question.percentile.q(), level)
                })
                .map(|i| (i.low, i.high))
        });
    let descriptive = at.is_some_and(|a| a.1);
    let pace = case.server.as_ref().and_then(|s| s.pace.as_ref());
    Some(Support {
        caveat: caveat(question, n, descriptive, interval.is_some()),
        between_runs: String::new(),
        server_prefill_ms_per_token: pace
            .and_then(|p| p.prefill_ms_per_token.as_ref())
            .map(|d| d.median),
        server_decode_ms_per_token: pace
            .and_then(|p| p.decode_ms_per_token.as_ref())
            .map(|d| d.median),
        ttft_low_ms: interval.map(|i| i.0),
        ttft_high_ms: interval.map(|i| i.1),
        case_id: case.id.clone(),
        load: kind.load_of(case),
        n,
        rounds: case.rounds.len(),
        ttft_p50_ms: ttft.map(|d| d.median),
        ttft_ms: at.map(|a| a.0),
        tpot_ms: tpot,
        throughput_tps: case.throughput_tps.as_ref().map(|t| t.mean),
        descriptive,
        meets: why_not.is_none(),
        why_not,
        others_hold: failed == 0
            && question
                .tpot_ms
                .is_none_or(|limit| tpot.is_some_and(|t| t <= limit)),
    })
}

/// The small-sample caveat of a percentile over `n` responses, when one applies.
fn caveat(question: &Question, n: usize, descriptive: bool, interval: bool) -> Option<String> {
    let p = question.percentile.name();
    match (descriptive, interval) {
        (true, _) => Some(format!(
            "with n = {n} the {p} only describes the sample (fewer than 5 responses beyond it)"
        )),
        (false, false) if n > 0 => Some(format!(
            "n = {n} is too few for a {} % interval of the {p}",
            crate::fmt::number(crate::stats::interval::level() * 100.0)
        )),
        _ => None,
    }
}
