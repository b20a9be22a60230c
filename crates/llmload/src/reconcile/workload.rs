//! The workload on each side of a reconciliation: what was sent, and how much of it
//! succeeded, compared property by property.

use super::shape::OtherRun;
use crate::record::Record;
use crate::stats::percentile;
use crate::summary::CaseSummary;
use serde::Serialize;

/// One property of the workload, on each side.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadCheck {
    /// What is compared, e.g. `requests succeeded`, `prompt tokens (median)`.
    pub what: String,
    /// The other tool's.
    pub other: Option<f64>,
    /// llmload's.
    pub llmload: Option<f64>,
    /// They agree (within 2 % for lengths, exactly for counts).
    pub same: bool,
}

/// Within 2 % of each other.
pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.02 * a.abs().max(b.abs())
}

/// The median of `values`, `None` without any.
pub(super) fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    (!sorted.is_empty()).then(|| percentile(&sorted, 0.5))
}

/// The workload on each side: what was sent and how much of it succeeded.
pub(super) fn workload(
    run: &OtherRun,
    case: &CaseSummary,
    records: &[&Record],
) -> Vec<WorkloadCheck> {
    let ours_prompt: Vec<f64> = records
        .iter()
        .map(|r| f64::from(r.prompt_tokens.unwrap_or(r.input_tokens)))
        .collect();
    let ours_output: Vec<f64> = records
        .iter()
        .map(|r| f64::from(r.generated_tokens()))
        .collect();
    let count = |n: usize| crate::num::count(n).into();
    let mut checks = vec![
        WorkloadCheck {
            what: "requests succeeded".into(),
            other: run.completed.map(|c| c as f64),
            llmload: Some(count(records.len())),
            same: false,
        },
        WorkloadCheck {
            what: "concurrency".into(),
            other: run.concurrency.map(|c| c as f64),
            llmload: Some(f64::from(case.concurrency)),
            same: false,
        },
    ];
    let (prompts, outputs) = run.lengths();
    if run.is_detailed() {
        checks.push(WorkloadCheck {
            what: "prompt tokens (median)".into(),
            other: median(&prompts),
            llmload: median(&ours_prompt),
            same: false,
        });
        checks.push(WorkloadCheck {
            what: "output tokens (median)".into(),
            other: median(&outputs),
            llmload: median(&ours_output),
            same: false,
        });
    }
    for check in &mut checks {
        check.same = match (check.other, check.llmload) {
            (Some(a), Some(b)) if check.what.contains("tokens") => close(a, b),
            (Some(a), Some(b)) => (a - b).abs() < 0.5,
            _ => true,
        };
    }
    checks
}
