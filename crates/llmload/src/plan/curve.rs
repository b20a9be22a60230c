//! One attempt's curve at one prompt length and load shape, against the budget: the largest
//! load that keeps it, the measured case that supports that, and a wanted load's verdict.

use super::{command, shown, Measured, Question};
use crate::summary::CaseSummary;
use serde::Serialize;

/// The load shape of a case: what its load axis means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Closed rounds: C requests together.
    Rounds,
    /// Closed continuous: C kept in flight.
    Continuous,
    /// Open loop: arrivals per second.
    Open,
}

impl Kind {
    /// The kind of `case`.
    pub fn of(case: &CaseSummary) -> Kind {
        match &case.load {
            None => Kind::Rounds,
            Some(l) if l.nominal_rate_rps.is_some() => Kind::Open,
            Some(_) => Kind::Continuous,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Rounds => "closed rounds",
            Kind::Continuous => "closed continuous",
            Kind::Open => "open loop",
        }
    }

    fn load(self, value: f64) -> String {
        let number = crate::fmt::number(value);
        match self {
            Kind::Open => format!("{number} requests/s"),
            _ => format!("concurrency {number}"),
        }
    }

    fn load_of(self, case: &CaseSummary) -> f64 {
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

/// A load the user wants to run at.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Wanted {
    /// Simultaneous generations.
    Concurrency(u32),
    /// Arrivals per second.
    RateRps(f64),
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
    /// The percentile has fewer than five samples beyond it: it describes the sample only.
    pub descriptive: bool,
    /// Whether the case keeps every budget.
    pub meets: bool,
    /// Why not, when it does not.
    pub why_not: Option<String>,
}

/// A wanted load against the curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WantedAnswer {
    /// The load.
    pub load: f64,
    /// `meets`, `misses`, `interpolated`, `unknown` or `not-measured`.
    pub verdict: &'static str,
    /// The answer in words.
    pub text: String,
    /// What to run when the curve does not answer.
    pub command: Option<String>,
}

/// One attempt's answer for one prompt length and load shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CurveAnswer {
    /// The attempt folder.
    pub attempt: String,
    /// Its id.
    pub attempt_id: String,
    /// Whether the attempt measured the built-in simulator.
    pub simulated: bool,
    /// `closed rounds`, `closed continuous` or `open loop`.
    pub shape: &'static str,
    /// The loads measured, in order (complete cases and failed ones).
    pub loads: Vec<f64>,
    /// The largest load that, with every smaller measured load, keeps the budget.
    pub largest_load: Option<f64>,
    /// The case measured at that load.
    pub support: Option<Support>,
    /// The first measured load above it, which misses the budget.
    pub first_miss: Option<Support>,
    /// `inside` (the limit lies between two measured loads), `above` (every measured load keeps
    /// the budget: the limit is higher), `none` (the smallest measured load misses it).
    pub limit: &'static str,
    /// The sweep's recommended cap (0.8 × `C_sat`), when the attempt is a sweep that found one.
    pub sweep_cap: Option<f64>,
    /// The load to run at: the largest keeping the budget, or the sweep's cap when lower.
    pub recommended_load: Option<f64>,
    /// What else the reader must know, in words.
    pub notes: Vec<String>,
    /// The wanted load, when one was asked on this kind of load.
    pub wanted: Option<WantedAnswer>,
    /// What to run to narrow or extend the answer.
    pub command: Option<String>,
}

impl CurveAnswer {
    /// Whether the curve answers the length's question: a limit inside the measured loads, or
    /// a server that misses the budget with one request at a time.
    pub fn covered(&self) -> bool {
        let single = self.loads.first() == Some(&1.0) && self.shape != "open loop";
        let limit = self.limit == "inside" || (self.limit == "none" && single);
        limit && self.wanted.as_ref().is_none_or(|w| w.command.is_none())
    }

    /// The commands this answer suggests.
    pub fn commands(&self) -> impl Iterator<Item = &String> {
        self.command
            .iter()
            .chain(self.wanted.as_ref().and_then(|w| w.command.as_ref()))
    }
}

/// Evaluates `case` against the budgets; `None` when it was stopped before it could say.
fn evaluate(question: &Question, kind: Kind, case: &CaseSummary) -> Option<Support> {
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
    Some(Support {
        case_id: case.id.clone(),
        load: kind.load_of(case),
        n: ttft.map_or(0, |d| d.n),
        rounds: case.rounds.len(),
        ttft_p50_ms: ttft.map(|d| d.median),
        ttft_ms: at.map(|a| a.0),
        tpot_ms: tpot,
        throughput_tps: case.throughput_tps.as_ref().map(|t| t.mean),
        descriptive: at.is_some_and(|a| a.1),
        meets: why_not.is_none(),
        why_not,
    })
}

/// The answer of attempt `m` for `cases` (one prompt length, one kind of load).
pub fn answer(
    question: &Question,
    m: &Measured,
    kind: Kind,
    cases: &[&CaseSummary],
) -> CurveAnswer {
    let mut points: Vec<Support> = Vec::new();
    let mut notes = Vec::new();
    for case in cases {
        match evaluate(question, kind, case) {
            Some(p) => points.push(p),
            None => notes.push(format!(
                "{} ({}) was stopped before it completed; left out",
                case.id,
                kind.load(kind.load_of(case))
            )),
        }
    }
    points.sort_by(|a, b| a.load.total_cmp(&b.load));
    let kept = points.iter().take_while(|p| p.meets).count();
    let support = kept.checked_sub(1).map(|i| points[i].clone());
    let first_miss = points.get(kept).cloned();
    if let Some(again) = points[kept..].iter().skip(1).find(|p| p.meets) {
        notes.push(format!(
            "{} keeps the budget again, but a smaller load did not: not counted",
            kind.load(again.load)
        ));
    }
    let loads: Vec<f64> = points.iter().map(|p| p.load).collect();
    let (limit, command) = limit(
        question,
        m,
        kind,
        &loads,
        support.as_ref(),
        first_miss.as_ref(),
    );
    let sweep =
        m.summary.sweep.as_ref().filter(|s| {
            (s.axis == crate::summary::sweep::Axis::Concurrency) == (kind != Kind::Open)
        });
    let sweep_cap = sweep.and_then(|s| s.analysis.recommended_cap.value);
    let recommended_load = match (support.as_ref().map(|s| s.load), sweep_cap) {
        (Some(l), Some(cap)) => Some(l.min(cap)),
        (l, _) => l,
    };
    let wanted = question
        .wanted
        .and_then(|w| wanted(question, m, kind, &points, w));
    CurveAnswer {
        attempt: shown(&m.dir),
        attempt_id: m.summary.attempt_id.clone(),
        simulated: m.summary.simulated,
        shape: kind.name(),
        loads,
        largest_load: support.as_ref().map(|s| s.load),
        support,
        first_miss,
        limit,
        sweep_cap,
        recommended_load,
        notes,
        wanted,
        command,
    }
}

/// Where the limit lies, and what to run to find or narrow it.
fn limit(
    question: &Question,
    m: &Measured,
    kind: Kind,
    loads: &[f64],
    support: Option<&Support>,
    first_miss: Option<&Support>,
) -> (&'static str, Option<String>) {
    let prompt = m
        .summary
        .cases
        .iter()
        .find(|c| first_miss.or(support).is_some_and(|p| p.case_id == c.id))
        .map_or(question.prompt_tokens, |c| c.input_tokens);
    let run = |loads: &[f64]| {
        Some(command(
            std::slice::from_ref(m),
            question,
            prompt,
            kind,
            loads,
        ))
    };
    match (support, first_miss) {
        (Some(s), None) => (
            "above",
            run(&[s.load, s.load * 2.0, s.load * 4.0, s.load * 8.0]),
        ),
        (Some(s), Some(miss)) => {
            // Between two measured concurrencies with room for more: narrow it.
            // A sweep takes two loads or more: the two measured ones bracket those between.
            let between: Vec<f64> = match kind {
                Kind::Open => vec![f64::midpoint(s.load, miss.load)],
                _ => ((crate::num::to_u32(s.load).saturating_add(1))
                    ..crate::num::to_u32(miss.load))
                    .map(f64::from)
                    .collect(),
            };
            let narrow = between.len() <= 8 && !between.is_empty();
            let loads: Vec<f64> = std::iter::once(s.load)
                .chain(between)
                .chain(std::iter::once(miss.load))
                .collect();
            ("inside", if narrow { run(&loads) } else { None })
        }
        (None, Some(miss)) => {
            let single = kind != Kind::Open && miss.load <= 1.0;
            let lower: Vec<f64> = match kind {
                Kind::Open => vec![miss.load / 4.0, miss.load / 2.0],
                _ => (0..8)
                    .map(|i| f64::from(1u32 << i))
                    .filter(|&c| c < miss.load)
                    .collect(),
            };
            ("none", if single { None } else { run(&lower) })
        }
        (None, None) => (
            "none",
            run(if loads.is_empty() {
                &[1.0, 2.0, 4.0, 8.0]
            } else {
                loads
            }),
        ),
    }
}

/// A wanted load against `points`; `None` when it is asked on another kind of load.
fn wanted(
    question: &Question,
    m: &Measured,
    kind: Kind,
    points: &[Support],
    wanted: Wanted,
) -> Option<WantedAnswer> {
    let load = match (wanted, kind) {
        (Wanted::Concurrency(c), Kind::Rounds | Kind::Continuous) => f64::from(c),
        (Wanted::RateRps(r), Kind::Open) => r,
        _ => return None,
    };
    let name = kind.load(load);
    let prompt = question.prompt_tokens;
    let run = |loads: Vec<f64>| {
        Some(command(
            std::slice::from_ref(m),
            question,
            prompt,
            kind,
            &loads,
        ))
    };
    let answer = |verdict, text: String, command| WantedAnswer {
        load,
        verdict,
        text,
        command,
    };
    if let Some(p) = points.iter().find(|p| crate::num::same_load(p.load, load)) {
        let text = match &p.why_not {
            None => format!("{name} was measured ({}) and keeps the budget", p.case_id),
            Some(why) => format!(
                "{name} was measured ({}) and misses the budget: {why}",
                p.case_id
            ),
        };
        return Some(answer(if p.meets { "meets" } else { "misses" }, text, None));
    }
    let below = points.iter().rev().find(|p| p.load < load);
    let above = points.iter().find(|p| p.load > load);
    Some(match (below, above) {
        (None, _) | (_, None) => {
            let edge = if below.is_none() {
                "below the smallest"
            } else {
                "beyond the largest"
            };
            let mut loads: Vec<f64> = points.iter().map(|p| p.load).collect();
            loads.push(load);
            loads.sort_by(f64::total_cmp);
            answer(
                "not-measured",
                format!("{name} is {edge} load measured; it is not extrapolated"),
                run(loads),
            )
        }
        (Some(b), Some(_)) if !b.meets => answer(
            "misses",
            format!(
                "{name} was not measured, and the smaller {} already misses the budget ({})",
                kind.load(b.load),
                b.why_not.as_deref().unwrap_or("")
            ),
            None,
        ),
        (Some(b), Some(a)) if a.meets => {
            let share = (load - b.load) / (a.load - b.load);
            let lerp = |x: Option<f64>, y: Option<f64>| Some(x? + (y? - x?) * share);
            let ttft = lerp(b.ttft_ms, a.ttft_ms);
            answer(
                "interpolated",
                format!(
                    "{name} was not measured; it lies between {} and {}, which both keep the \
                     budget. Interpolated linearly between them (an interpolation, not a \
                     measurement): {} TTFT about {}",
                    kind.load(b.load),
                    kind.load(a.load),
                    question.percentile.name(),
                    crate::fmt::seconds(ttft)
                ),
                None,
            )
        }
        (Some(b), Some(a)) => answer(
            "unknown",
            format!(
                "{name} was not measured; it lies between {} (keeps the budget) and {} (misses \
                 it), so the measurements cannot say",
                kind.load(b.load),
                kind.load(a.load)
            ),
            run(vec![b.load, load, a.load]),
        ),
    })
}
