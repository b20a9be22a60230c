//! One attempt's curve at one prompt length and load shape, against the budget: the largest
//! load that keeps it, the measured case that supports that, and a wanted load's verdict.

use super::support::{evaluate, Kind, Support};
use super::wanted::{self, WantedAnswer};
use super::{command, shown, Measured, Question};
use crate::summary::CaseSummary;
use serde::Serialize;

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
    /// The sweep's recommended cap (0.7 × `C_sat`), when the attempt is a sweep that found one.
    pub sweep_cap: Option<f64>,
    /// The low end of the cap's range (from `C_sat`'s), when the sweep gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_cap_low: Option<f64>,
    /// Its high end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_cap_high: Option<f64>,
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

/// The answer of attempt `m` for `cases` (one prompt length, one kind of load).
pub(super) fn answer(
    question: &Question,
    m: &Measured,
    kind: Kind,
    cases: &[&CaseSummary],
) -> CurveAnswer {
    let mut points: Vec<Support> = Vec::new();
    let mut notes = Vec::new();
    for case in cases {
        let samples = m.ttft_samples.get(&case.id).map(|s| {
            let scheduled = case
                .load
                .as_ref()
                .is_some_and(|l| l.ttft_from_scheduled_ms.is_some());
            if scheduled {
                &s.scheduled[..]
            } else {
                &s.sent[..]
            }
        });
        match evaluate(question, kind, case, samples) {
            Some(mut p) => {
                super::between::apply(question, m, kind, case, &mut p);
                points.push(p);
            }
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
    let cap = sweep.map(|s| &s.analysis.recommended_cap);
    let sweep_cap = cap.and_then(|c| c.value);
    let recommended_load = match (support.as_ref().map(|s| s.load), sweep_cap) {
        (Some(l), Some(cap)) => Some(l.min(cap)),
        (l, _) => l,
    };
    let wanted = question
        .wanted
        .and_then(|w| wanted::answer(question, m, kind, &points, w));
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
        sweep_cap_low: cap.and_then(|c| c.low),
        sweep_cap_high: cap.and_then(|c| c.high),
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
