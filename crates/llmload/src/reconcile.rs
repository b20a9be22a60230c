//! `llmload reconcile ATTEMPT OTHER`: another tool's result for the same server and workload set
//! beside llmload's records, figure by figure, and the gap explained term by term: the other
//! tool's figure; llmload's records computed with the other tool's definition
//! (`llmload_as_other`); llmload's own figure; then what separates them. `llmload_as_other −
//! llmload` is the **definition**; `other − llmload_as_other` the **measurement** (set against
//! both figures' intervals: within them it is noise between two runs, beyond them the clients
//! measured differently); and the **workload** checks say whether the two runs sent the same
//! thing (requests, prompt and output lengths, concurrency).

pub mod aiperf;
pub mod dialect;
pub mod guidellm;
pub mod other;
pub mod render;
pub mod shape;
pub mod shares;
mod terms;
pub mod vllm;
mod workload;

use crate::record::{Phase, Record, Status};
use crate::stats::interval::{self, Interval, Stat};
use crate::stats::{percentile, Spread};
use crate::summary::CaseSummary;
use dialect::Dialect;
use serde::Serialize;
use shape::OtherRun;
use std::path::Path;
pub use workload::WorkloadCheck;
use workload::{close, median, workload};

/// The whole reconciliation of one case.
#[derive(Clone, Debug, Serialize)]
pub struct Reconciliation {
    /// The other tool, as its file says.
    pub other_tool: String,
    /// Whose definitions the other figures follow.
    pub dialect: Dialect,
    /// The case of the attempt set against it.
    pub case: String,
    /// Whether the other file holds per-request values: without them the workload cannot be
    /// checked and the other figures have no interval.
    pub detailed: bool,
    /// What reading the other file noticed that bears on the comparison.
    pub notes: Vec<String>,
    /// Did the two runs send the same thing?
    pub workload: Vec<WorkloadCheck>,
    /// Figure by figure.
    pub metrics: Vec<MetricRow>,
    /// The confidence level of every interval.
    pub level: f64,
}

/// One figure on each side and what separates them.
#[derive(Clone, Debug, Serialize)]
pub struct MetricRow {
    /// `ttft_mean_ms`, `tpot_median_ms`, `output_throughput_tps`, ….
    pub name: String,
    /// The other tool's figure, as its file gives it.
    pub other: Option<f64>,
    /// Its interval, from its per-request values (a detailed file).
    pub other_interval: Option<Interval>,
    /// llmload's records under the other tool's definition.
    pub llmload_as_other: Option<f64>,
    /// Its interval.
    pub llmload_as_other_interval: Option<Interval>,
    /// llmload's own figure, by its own definition.
    pub llmload: Option<f64>,
    /// The values behind `llmload_as_other` (responses, or gaps for ITL).
    pub n: usize,
    /// What separates the figures, in order: definition, workload, measurement.
    pub terms: Vec<Term>,
    /// The gap (other − llmload) cut into shares in ms that sum to it exactly; empty where a
    /// side has no figure or the figure is no time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<shares::Share>,
}

/// One explained part of a gap.
#[derive(Clone, Debug, Serialize)]
pub struct Term {
    /// `definition`, `workload` or `measurement`.
    pub kind: &'static str,
    /// Its size in the figure's unit, where it has one.
    pub amount: Option<f64>,
    /// What it is, in words.
    pub text: String,
}

/// Reconciles the attempt `dir` with the other tool's `other` result; `case` picks the case
/// where the attempt has several, `benchmark` (from 1) the run where the other file has several.
pub fn reconcile(
    dir: &Path,
    other: &Path,
    case: Option<&str>,
    benchmark: Option<usize>,
) -> crate::error::Result<Reconciliation> {
    let runs = other::read(other).map_err(crate::config::ConfigError)?;
    let report = crate::attempt::load::read(dir)?;
    let summary = &report.summary;
    let (chosen, run) = choose(&summary.cases, &runs, case, benchmark)?;
    // The records whole (the report keeps only what its page draws of each), of the case alone:
    // one case's are far fewer than the file's.
    let kept = measured_ok(dir, summary, Some(&chosen.id))?;
    let records: Vec<&Record> = kept.iter().collect();
    if records.is_empty() {
        return Err(crate::config::ConfigError(format!(
            "case {} of {} has no measured ok response to reconcile",
            chosen.id,
            dir.display()
        ))
        .into());
    }
    Ok(build(run, chosen, &records))
}

/// The cases of the attempt `dir` in `dialect`: its measured ok responses (a series': those of
/// its complete repeats), case by case.
pub fn in_dialect(
    dir: &Path,
    dialect: dialect::Dialect,
) -> crate::error::Result<Vec<dialect::DialectCase>> {
    let report = crate::attempt::load::read(dir)?;
    let ids: Vec<String> = report.summary.cases.iter().map(|c| c.id.clone()).collect();
    let kept = measured_ok(dir, &report.summary, None)?;
    Ok(dialect::cases(dialect, &ids, &kept))
}

/// The measured `ok` records of the attempt `dir` whose `summary` is given (a series': those of
/// its complete repeats; none its case counted short), of case `only` where one is named.
fn measured_ok(
    dir: &Path,
    summary: &crate::summary::Summary,
    only: Option<&str>,
) -> crate::error::Result<Vec<Record>> {
    let complete = summary.repeats.as_ref().map(|s| s.complete.clone());
    // The cases that counted their far-short responses short: those are in no figure.
    let counted_short: Vec<&str> = summary
        .cases
        .iter()
        .filter(|c| c.far_short.as_ref().is_some_and(|f| f.short))
        .map(|c| c.id.as_str())
        .collect();
    let mut kept = Vec::new();
    crate::attempt::records::for_each_record(&dir.join("requests.jsonl"), |r| {
        let in_series = complete
            .as_ref()
            .is_none_or(|c| r.repeat.is_some_and(|k| c.contains(&k)));
        let in_case = only.is_none_or(|id| r.case == id);
        let short = counted_short.contains(&r.case.as_str())
            && crate::summary::short::far_short_share(&r).is_some();
        if in_series && in_case && !short && r.phase == Phase::Measured && r.status == Status::Ok {
            kept.push(r);
        }
    })?;
    Ok(kept)
}

/// Whether `case` is the workload `run` ran: its concurrency and its median lengths, where the
/// run gives them.
fn fits(case: &CaseSummary, run: &OtherRun) -> bool {
    let (prompts, outputs) = run.lengths();
    run.concurrency
        .is_none_or(|m| u64::from(case.concurrency) == m)
        && median(&prompts).is_none_or(|i| close(f64::from(case.input_tokens), i))
        && median(&outputs).is_none_or(|o| close(f64::from(case.output_tokens), o))
}

/// The case of `cases` and the run of `runs` to set against each other: those named (`wanted`,
/// `benchmark` from 1), else the only ones, else the only pair that fits.
fn choose<'a, 'b>(
    cases: &'a [CaseSummary],
    runs: &'b [OtherRun],
    wanted: Option<&str>,
    benchmark: Option<usize>,
) -> crate::error::Result<(&'a CaseSummary, &'b OtherRun)> {
    let usage = |text: String| crate::error::Error::from(crate::config::ConfigError(text));
    let ids = || {
        cases
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let runs: Vec<&OtherRun> = match benchmark {
        Some(b) => vec![runs.get(b.wrapping_sub(1)).ok_or_else(|| {
            usage(format!(
                "--benchmark {b}: the other file holds {} (counted from 1)",
                runs.len()
            ))
        })?],
        None => runs.iter().collect(),
    };
    let named: Vec<&CaseSummary> = match wanted {
        Some(id) => vec![cases.iter().find(|c| c.id == id).ok_or_else(|| {
            usage(format!(
                "--case {id}: no such case (the attempt has {})",
                ids()
            ))
        })?],
        None => cases.iter().collect(),
    };
    if let ([case], [run]) = (named.as_slice(), runs.as_slice()) {
        return Ok((case, run));
    }
    let pairs: Vec<(&CaseSummary, &OtherRun)> = named
        .iter()
        .flat_map(|&c| runs.iter().map(move |&r| (c, r)))
        .filter(|(c, r)| fits(c, r))
        .collect();
    match pairs.as_slice() {
        [one] => Ok(*one),
        _ if runs.len() > 1 && named.len() == 1 => Err(usage(format!(
            "the other file holds {} runs and {} fit case {}: name one with --benchmark N \
             (from 1: {})",
            runs.len(),
            pairs.len(),
            named[0].id,
            runs.iter()
                .map(|r| r.tool.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ))),
        _ => Err(usage(format!(
            "the attempt has several cases and {} fit the other run's concurrency and lengths: \
             name one with --case ({})",
            pairs.len(),
            ids()
        ))),
    }
}

/// One response's values of a figure and the weight of each (1, or its tokens for a figure its
/// tool counts once per token).
type Group = (Vec<f64>, f64);

/// The statistic `stat` of the values of `groups` (one per response) and its interval: exact
/// for one value a response weighted alike, else by resampling whole responses.
fn statistic(stat: Stat, groups: &[Group]) -> Option<(f64, Option<Interval>)> {
    let level = interval::level();
    if groups.iter().all(|g| (g.1 - 1.0).abs() < f64::EPSILON) {
        let mut sorted: Vec<f64> = groups.iter().flat_map(|g| g.0.iter().copied()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let point = match stat {
            Stat::Mean => Spread::of(&sorted).map_or(0.0, |s| s.mean),
            Stat::Quantile(q) => percentile(&sorted, q),
        };
        let independent = groups.iter().all(|g| g.0.len() == 1);
        let ci = match (stat, independent) {
            (Stat::Mean, true) => interval::t_interval(&sorted, level),
            (Stat::Quantile(q), true) => interval::order_statistic(&sorted, q, level),
            _ => {
                let units: Vec<Vec<f64>> = groups.iter().map(|g| g.0.clone()).collect();
                interval::bootstrap(&units, &[stat], level)[0]
            }
        };
        return Some((point, ci));
    }
    let mut pairs: Vec<(f64, f64)> = groups
        .iter()
        .flat_map(|g| g.0.iter().map(move |&v| (v, g.1)))
        .collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = pairs.iter().map(|p| p.1).sum();
    if pairs.is_empty() || total <= 0.0 {
        return None;
    }
    let point = match stat {
        Stat::Mean => pairs.iter().map(|p| p.0 * p.1).sum::<f64>() / total,
        Stat::Quantile(q) => crate::stats::weighted_quantile(&pairs, total, q),
    };
    Some((
        point,
        interval::bootstrap_weighted(&pairs, &[stat], level)[0],
    ))
}

/// llmload's own figure a row sets beside the other tool's.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Own {
    Ttft,
    Tpot,
    Itl,
    E2e,
    /// llmload has no figure of that definition.
    Nothing,
}

impl Own {
    /// `r`'s values of the figure (ms).
    fn of(self, r: &Record) -> Vec<f64> {
        match self {
            Own::Ttft => r.ttft_ms.into_iter().collect(),
            Own::Tpot => r.tpot_ms().into_iter().collect(),
            Own::Itl => r.itl_ms().collect(),
            Own::E2e => r.e2e_ms.into_iter().collect(),
            Own::Nothing => Vec::new(),
        }
    }
}

/// The rows of `dialect`: the row's name, the tool's figure, the statistic, llmload's own.
fn rows(dialect: Dialect) -> Vec<(String, &'static str, Stat, Own)> {
    let (mean, median, p99) = match dialect {
        Dialect::Aiperf => ("avg", "p50", "p99"),
        _ => ("mean", "median", "p99"),
    };
    let figures: &[(&'static str, Own, bool)] = match dialect {
        Dialect::Vllm => &[
            ("ttft", Own::Ttft, true),
            ("tpot", Own::Tpot, false),
            ("itl", Own::Itl, false),
            ("e2el", Own::E2e, false),
        ],
        Dialect::Aiperf => &[
            ("time_to_first_token", Own::Ttft, true),
            ("time_to_second_token", Own::Nothing, false),
            ("inter_token_latency", Own::Tpot, false),
            ("inter_chunk_latency", Own::Itl, false),
            ("request_latency", Own::E2e, false),
        ],
        Dialect::GenaiBench => &[
            ("ttft", Own::Ttft, true),
            ("tpot", Own::Tpot, false),
            ("e2e_latency", Own::E2e, false),
        ],
        Dialect::Guidellm => &[
            ("time_to_first_token", Own::Ttft, true),
            ("inter_token_latency", Own::Tpot, false),
            ("time_per_output_token", Own::Nothing, false),
            ("request_latency", Own::E2e, false),
        ],
    };
    let mut out = Vec::new();
    for &(figure, own, tail) in figures {
        out.push((format!("{figure}_{mean}_ms"), figure, Stat::Mean, own));
        out.push((
            format!("{figure}_{median}_ms"),
            figure,
            Stat::Quantile(0.5),
            own,
        ));
        if tail {
            out.push((
                format!("{figure}_{p99}_ms"),
                figure,
                Stat::Quantile(0.99),
                own,
            ));
        }
    }
    out
}

/// The reconciliation of `run` with `case`'s measured ok `records`.
fn build(run: &OtherRun, case: &CaseSummary, records: &[&Record]) -> Reconciliation {
    let dialect = run.dialect;
    let as_other: Vec<Vec<shape::Values>> = records
        .iter()
        .map(|r| dialect::of_response(dialect, r))
        .collect();
    let groups_of = |per: &mut dyn Iterator<Item = &Vec<shape::Values>>, figure: &str| {
        per.flatten()
            .filter(|v| v.figure == figure)
            .map(|v| (v.values.clone(), v.weight))
            .collect::<Vec<Group>>()
    };
    let workload = workload(run, case, records);
    let differs: Vec<String> = workload
        .iter()
        .filter(|w| !w.same)
        .map(|w| w.what.clone())
        .collect();
    let mut definition = terms::Definitions::of(records);
    definition.pace = run.output_throughput.zip(dialect::span_throughput(records));
    let tpot = match dialect {
        Dialect::Vllm | Dialect::GenaiBench => "tpot",
        Dialect::Aiperf | Dialect::Guidellm => "inter_token_latency",
    };
    let as_other_tpot = statistic(Stat::Quantile(0.5), &groups_of(&mut as_other.iter(), tpot));
    let context = shares::Context {
        run,
        records,
        pace: shares::pace_ratio(
            run,
            tpot,
            as_other_tpot.map(|s| s.0),
            dialect::span_throughput(records),
        ),
    };
    let mut metrics: Vec<MetricRow> = rows(dialect)
        .into_iter()
        .map(|(name, figure, stat, own)| {
            let other = groups_of(&mut run.responses.iter().map(|r| &r.values), figure);
            let mine = groups_of(&mut as_other.iter(), figure);
            let ours: Vec<Group> = records.iter().map(|r| (own.of(r), 1.0)).collect();
            let (other_stat, as_stat) = (statistic(stat, &other), statistic(stat, &mine));
            let mut row = MetricRow {
                other: run.figures.get(&name).copied().or(other_stat.map(|s| s.0)),
                other_interval: other_stat.and_then(|s| s.1),
                llmload_as_other: as_stat.map(|s| s.0),
                llmload_as_other_interval: as_stat.and_then(|s| s.1),
                llmload: statistic(stat, &ours).map(|s| s.0),
                n: mine.iter().map(|g| g.0.len()).sum(),
                name,
                terms: Vec::new(),
                shares: Vec::new(),
            };
            row.terms = terms::terms(&row, dialect, figure, &definition, &differs);
            row.shares = shares::shares(&row, figure, stat, own, &context);
            row
        })
        .collect();
    let mut row = MetricRow {
        name: "output_throughput_tps".into(),
        other: run.output_throughput,
        other_interval: None,
        llmload_as_other: dialect::span_throughput(records),
        llmload_as_other_interval: None,
        llmload: case.throughput_tps.as_ref().map(|s| s.mean),
        n: records.len(),
        terms: Vec::new(),
        shares: Vec::new(),
    };
    row.terms = terms::terms(&row, dialect, "throughput", &definition, &differs);
    metrics.push(row);
    Reconciliation {
        other_tool: run.tool.clone(),
        dialect,
        case: case.id.clone(),
        detailed: run.is_detailed(),
        notes: run.notes.clone(),
        workload,
        metrics,
        level: interval::level(),
    }
}

#[cfg(test)]
mod tests;
