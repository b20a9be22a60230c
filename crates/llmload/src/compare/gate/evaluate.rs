//! Every rule on every case that BASE and a later attempt both ran: each check's between-run
//! term (from `--history` and the rounds' trend, [`super::drift`]), its verdict, and the
//! server's pace beside it ([`super::pace`]).

use super::{check_series_with, drift, pace, Change, Check, Figure, GateVerdict, Rule};
use crate::compare::identity::{matched, CaseKey, KeyedAttempt};
use crate::summary::models::ModelSummary;
use crate::summary::CaseSummary;
use std::collections::BTreeMap;

/// Every rule on every case that BASE (the first attempt) and each later attempt both ran, and
/// in a mix of models on each model both have. Cases of one side only are no checks: the
/// comparison lists them.
pub fn evaluate(rules: &[Rule], attempts: &[KeyedAttempt]) -> Vec<Check> {
    evaluate_with(rules, attempts, &[])
}

/// [`evaluate`] with earlier attempts of the same cases (`history`), whose spread between runs
/// enters each check's interval ([`drift`]).
pub fn evaluate_with(
    rules: &[Rule],
    attempts: &[KeyedAttempt],
    history: &[KeyedAttempt],
) -> Vec<Check> {
    let earlier: BTreeMap<CaseKey, Vec<&CaseSummary>> = matched(history)
        .into_iter()
        .map(|(key, cases)| {
            (
                key,
                cases.into_iter().flatten().filter(|c| c.complete).collect(),
            )
        })
        .collect();
    let level = crate::stats::interval::level();
    let mut checks = Vec::new();
    for (key, cases) in matched(attempts) {
        let Some(Some(base)) = cases.first() else {
            continue;
        };
        let history = earlier.get(&key).map_or(&[][..], Vec::as_slice);
        for (i, new) in cases.iter().enumerate().skip(1) {
            let Some(new) = new else { continue };
            let check = |rule: &Rule, model: Option<&str>, verdict: GateVerdict| Check {
                case: base.id.clone(),
                model: model.map(str::to_owned),
                key: key.clone(),
                new: i,
                server_pace: model
                    .is_none()
                    .then(|| server_pace(rule, &verdict, base, new))
                    .flatten(),
                rule: rule.clone(),
                verdict,
            };
            for rule in rules {
                let series = attempts.get(i).and_then(|a| a.summary.repeats.as_ref());
                let between = between_runs(rule, (base, new), history, level);
                let verdict = check_series_with(
                    rule,
                    (base, attempts[0].summary.repeats.as_ref()),
                    (new, series),
                    between,
                );
                checks.push(check(rule, None, verdict));
            }
            for (model, base_m, new_m) in shared_models(base, new) {
                let (b, n) = (base.for_model(base_m), new.for_model(new_m));
                for rule in rules {
                    let between = between_runs(rule, (&b, &n), &[], level);
                    checks.push(check(
                        rule,
                        Some(model),
                        check_series_with(rule, (&b, None), (&n, None), between),
                    ));
                }
            }
        }
    }
    checks
}

/// The between-run term of `rule` on `base` against `new`, from the `history` of the case
/// (earlier attempts) and the trend of their rounds; `None` where BASE has no figure.
fn between_runs(
    rule: &Rule,
    (base, new): (&CaseSummary, &CaseSummary),
    history: &[&CaseSummary],
    level: f64,
) -> Option<drift::BetweenRuns> {
    let figure = rule.metric.figure(base)?;
    let earlier: Vec<Figure> = history
        .iter()
        .filter_map(|c| rule.metric.figure(c))
        .collect();
    Some(drift::assess(
        rule.bound,
        (base, &figure),
        new,
        &earlier,
        level,
    ))
}

/// The server's pace behind `rule`'s metric from `base` to `new`, held against the verdict's
/// change.
fn server_pace(
    rule: &Rule,
    verdict: &GateVerdict,
    base: &CaseSummary,
    new: &CaseSummary,
) -> Option<pace::PaceShift> {
    let c = verdict.comparison()?;
    let percent = match rule.bound {
        Change::Percent(_) => c.change,
        Change::Absolute(_) if c.base.value != 0.0 => c.change / c.base.value.abs() * 100.0,
        Change::Absolute(_) => return None,
    };
    let decided = matches!(
        verdict,
        GateVerdict::Regressed(_) | GateVerdict::Improved(_)
    );
    pace::shift(rule.metric, base, new, percent, decided)
}

/// The models both cases ran in their mix, by name, with each side's figures.
fn shared_models<'a>(
    base: &'a CaseSummary,
    new: &'a CaseSummary,
) -> Vec<(&'a str, &'a ModelSummary, &'a ModelSummary)> {
    let (Some(b), Some(n)) = (&base.models, &new.models) else {
        return Vec::new();
    };
    b.iter()
        .filter_map(|bm| {
            let nm = n.iter().find(|nm| nm.model == bm.model)?;
            Some((bm.model.as_str(), bm, nm))
        })
        .collect()
}
