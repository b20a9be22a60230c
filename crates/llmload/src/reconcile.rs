//! `llmload reconcile ATTEMPT OTHER`: another tool's result for the same server and workload set
//! beside llmload's records, figure by figure, and the gap explained term by term: the other
//! tool's figure; llmload's records computed with the other tool's definition
//! (`llmload_as_other`); llmload's own figure; then what separates them. `llmload_as_other −
//! llmload` is the **definition**; `other − llmload_as_other` the **measurement** (set against
//! both figures' intervals: within them it is noise between two runs, beyond them the clients
//! measured differently); and the **workload** checks say whether the two runs sent the same
//! thing (requests, prompt and output lengths, concurrency).

pub mod dialect;
pub mod render;
pub mod vllm;

use crate::record::{Phase, Record, Status};
use crate::stats::interval::{self, Interval};
use crate::stats::{percentile, Spread};
use crate::summary::CaseSummary;
use serde::Serialize;
use std::path::Path;
use vllm::{AsVllm, VllmResult};

/// The whole reconciliation of one case.
#[derive(Clone, Debug, Serialize)]
pub struct Reconciliation {
    /// The other tool, as its file says.
    pub other_tool: String,
    /// The case of the attempt set against it.
    pub case: String,
    /// Whether the other file holds its per-request lists (`--save-detailed`): without them
    /// the workload cannot be checked and the other figures have no interval.
    pub detailed: bool,
    /// Did the two runs send the same thing?
    pub workload: Vec<WorkloadCheck>,
    /// Figure by figure.
    pub metrics: Vec<MetricRow>,
    /// The confidence level of every interval.
    pub level: f64,
}

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

/// Reconciles the attempt `dir` with the other tool's `other` file; `case` picks the case where
/// the attempt has several.
pub fn reconcile(
    dir: &Path,
    other: &Path,
    case: Option<&str>,
) -> crate::error::Result<Reconciliation> {
    let result = VllmResult::read(other).map_err(crate::config::ConfigError)?;
    let report = crate::attempt::load::read(dir)?;
    let summary = &report.summary;
    let chosen = choose_case(&summary.cases, &result, case)?;
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
    Ok(build(&result, chosen, &records))
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
/// its complete repeats), of case `only` where one is named.
fn measured_ok(
    dir: &Path,
    summary: &crate::summary::Summary,
    only: Option<&str>,
) -> crate::error::Result<Vec<Record>> {
    let complete = summary.repeats.as_ref().map(|s| s.complete.clone());
    let mut kept = Vec::new();
    crate::attempt::records::for_each_record(&dir.join("requests.jsonl"), |r| {
        let in_series = complete
            .as_ref()
            .is_none_or(|c| r.repeat.is_some_and(|k| c.contains(&k)));
        let in_case = only.is_none_or(|id| r.case == id);
        if in_series && in_case && r.phase == Phase::Measured && r.status == Status::Ok {
            kept.push(r);
        }
    })?;
    Ok(kept)
}

/// The case of `cases` to set against `result`: `wanted`, the only one, or the only one of the
/// other run's concurrency and lengths.
fn choose_case<'a>(
    cases: &'a [CaseSummary],
    result: &VllmResult,
    wanted: Option<&str>,
) -> crate::error::Result<&'a CaseSummary> {
    let ids = || {
        cases
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let usage = |text: String| crate::error::Error::from(crate::config::ConfigError(text));
    if let Some(id) = wanted {
        return cases.iter().find(|c| c.id == id).ok_or_else(|| {
            usage(format!(
                "--case {id}: no such case (the attempt has {})",
                ids()
            ))
        });
    }
    if let [only] = cases {
        return Ok(only);
    }
    let input = median(&result.input_lens);
    let output = median(&result.output_lens);
    let fits: Vec<&CaseSummary> = cases
        .iter()
        .filter(|c| {
            result
                .max_concurrency
                .is_none_or(|m| u64::from(c.concurrency) == m)
        })
        .filter(|c| input.is_none_or(|i| close(f64::from(c.input_tokens), i)))
        .filter(|c| output.is_none_or(|o| close(f64::from(c.output_tokens), o)))
        .collect();
    match fits.as_slice() {
        [one] => Ok(one),
        _ => Err(usage(format!(
            "the attempt has several cases and {} fit the other run's concurrency and lengths: \
             name one with --case ({})",
            fits.len(),
            ids()
        ))),
    }
}

/// Within 2 % of each other.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.02 * a.abs().max(b.abs())
}

/// The median of `values`, `None` without any.
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    (!sorted.is_empty()).then(|| percentile(&sorted, 0.5))
}

/// A statistic of a list of values and its interval.
#[derive(Clone, Copy)]
enum Stat {
    Mean,
    Quantile(f64),
}

impl Stat {
    fn of(self, values: &[f64]) -> Option<(f64, Option<Interval>)> {
        if values.is_empty() {
            return None;
        }
        let level = interval::level();
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(match self {
            Stat::Mean => (
                Spread::of(values).map_or(0.0, |s| s.mean),
                interval::t_interval(values, level),
            ),
            Stat::Quantile(q) => (
                percentile(&sorted, q),
                interval::order_statistic(&sorted, q, level),
            ),
        })
    }
}

/// The values behind each figure on the three sides: the other tool's (ms, from its lists),
/// llmload's records under its definition, llmload's own.
struct Values {
    ttft: [Vec<f64>; 3],
    tpot: [Vec<f64>; 3],
    itl: [Vec<f64>; 3],
    latency: [Vec<f64>; 3],
}

impl Values {
    fn of(result: &VllmResult, records: &[&Record], as_vllm: &[AsVllm]) -> Values {
        let ok = result.succeeded();
        let other_ms = |list: &[f64]| -> Vec<f64> {
            ok.iter()
                .filter_map(|&i| list.get(i))
                .map(|s| s * 1e3)
                .collect()
        };
        let other_tpot: Vec<f64> = ok
            .iter()
            .filter_map(|&i| {
                let n = *result.output_lens.get(i)?;
                let (t, l) = (*result.ttfts.get(i)?, *result.latencies.get(i)?);
                (n > 1.0).then(|| (l - t) * 1e3 / (n - 1.0))
            })
            .collect();
        let other_itl: Vec<f64> = ok
            .iter()
            .filter_map(|&i| result.itls.get(i))
            .flatten()
            .map(|s| s * 1e3)
            .collect();
        Values {
            ttft: [
                other_ms(&result.ttfts),
                as_vllm.iter().map(|v| v.ttft_ms).collect(),
                records.iter().filter_map(|r| r.ttft_ms).collect(),
            ],
            tpot: [
                other_tpot,
                as_vllm.iter().filter_map(|v| v.tpot_ms).collect(),
                records.iter().filter_map(|r| r.tpot_ms()).collect(),
            ],
            itl: [
                other_itl,
                as_vllm
                    .iter()
                    .flat_map(|v| v.itls_ms.iter().copied())
                    .collect(),
                records.iter().flat_map(|r| r.itl_ms()).collect(),
            ],
            latency: [
                other_ms(&result.latencies),
                as_vllm.iter().map(|v| v.latency_ms).collect(),
                records.iter().filter_map(|r| r.e2e_ms).collect(),
            ],
        }
    }
}

/// One figure to reconcile: its name, the statistic, the other file's own figure, and the
/// values on the three sides.
type Spec<'a> = (&'static str, Stat, Option<f64>, &'a [Vec<f64>; 3]);

/// The reconciliation of `result` with `case`'s measured ok `records`.
fn build(result: &VllmResult, case: &CaseSummary, records: &[&Record]) -> Reconciliation {
    let as_vllm: Vec<AsVllm> = records.iter().filter_map(|r| vllm::as_vllm(r)).collect();
    let v = Values::of(result, records, &as_vllm);
    let role_chunks = records
        .iter()
        .zip(&as_vllm)
        .filter(|(r, v)| {
            r.event_ms
                .first()
                .is_some_and(|&t| v.ttft_ms < t - vllm::ROUNDING_MS)
        })
        .count();
    let workload = workload(result, case, records);
    let differs: Vec<String> = workload
        .iter()
        .filter(|w| !w.same)
        .map(|w| w.what.clone())
        .collect();
    let definition = Definitions {
        role_chunks,
        responses: records.len(),
        multi_token_events: records
            .iter()
            .filter(|r| !r.event_tokens.is_empty())
            .count(),
    };
    let (median, p99) = (Stat::Quantile(0.5), Stat::Quantile(0.99));
    let specs: [Spec; 9] = [
        ("ttft_mean_ms", Stat::Mean, result.mean_ttft_ms, &v.ttft),
        ("ttft_median_ms", median, result.median_ttft_ms, &v.ttft),
        ("ttft_p99_ms", p99, result.p99_ttft_ms, &v.ttft),
        ("tpot_mean_ms", Stat::Mean, result.mean_tpot_ms, &v.tpot),
        ("tpot_median_ms", median, result.median_tpot_ms, &v.tpot),
        ("itl_mean_ms", Stat::Mean, result.mean_itl_ms, &v.itl),
        ("itl_median_ms", median, result.median_itl_ms, &v.itl),
        ("e2el_mean_ms", Stat::Mean, result.mean_e2el_ms, &v.latency),
        ("e2el_median_ms", median, result.median_e2el_ms, &v.latency),
    ];
    let mut metrics: Vec<MetricRow> = specs
        .iter()
        .map(|spec| metric(spec, &definition, &differs))
        .collect();
    metrics.push(throughput(result, case, records, &definition, &differs));
    Reconciliation {
        other_tool: format!(
            "vllm bench serve ({})",
            result.backend.as_deref().unwrap_or("backend not given")
        ),
        case: case.id.clone(),
        detailed: result.is_detailed(),
        workload,
        metrics,
        level: interval::level(),
    }
}

/// One figure on the three sides, with its terms.
fn metric(
    &(name, stat, said, [other, as_other, ours]): &Spec,
    definition: &Definitions,
    differs: &[String],
) -> MetricRow {
    let other_stat = stat.of(other);
    let as_stat = stat.of(as_other);
    let mut row = MetricRow {
        name: name.to_owned(),
        other: said.or(other_stat.map(|s| s.0)),
        other_interval: other_stat.and_then(|s| s.1),
        llmload_as_other: as_stat.map(|s| s.0),
        llmload_as_other_interval: as_stat.and_then(|s| s.1),
        llmload: stat.of(ours).map(|s| s.0),
        n: as_other.len(),
        terms: Vec::new(),
    };
    row.terms = terms(&row, definition, differs);
    row
}

/// What the records say of how the two definitions differ on them.
struct Definitions {
    /// Responses whose first event came before their first token (a chat stream's role chunk).
    role_chunks: usize,
    /// Responses.
    responses: usize,
    /// Responses with an event of several tokens.
    multi_token_events: usize,
}

/// The workload on each side: what was sent and how much of it succeeded.
fn workload(result: &VllmResult, case: &CaseSummary, records: &[&Record]) -> Vec<WorkloadCheck> {
    let ok = result.succeeded();
    let pick =
        |list: &[f64]| -> Vec<f64> { ok.iter().filter_map(|&i| list.get(i)).copied().collect() };
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
            other: result
                .completed
                .map(|c| c as f64)
                .or((!ok.is_empty()).then(|| count(ok.len()))),
            llmload: Some(count(records.len())),
            same: false,
        },
        WorkloadCheck {
            what: "concurrency".into(),
            other: result.max_concurrency.map(|c| c as f64),
            llmload: Some(f64::from(case.concurrency)),
            same: false,
        },
    ];
    if result.is_detailed() {
        checks.push(WorkloadCheck {
            what: "prompt tokens (median)".into(),
            other: median(&pick(&result.input_lens)),
            llmload: median(&ours_prompt),
            same: false,
        });
        checks.push(WorkloadCheck {
            what: "output tokens (median)".into(),
            other: median(&pick(&result.output_lens)),
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

/// Output throughput: vLLM's over its whole benchmark; llmload's records over the same span
/// (first send to last token); llmload's own over its rounds or window.
fn throughput(
    result: &VllmResult,
    case: &CaseSummary,
    records: &[&Record],
    definition: &Definitions,
    differs: &[String],
) -> MetricRow {
    let start = records
        .iter()
        .map(|r| r.sent_s)
        .fold(f64::INFINITY, f64::min);
    let end = records
        .iter()
        .map(|r| r.sent_s + r.event_ms.last().copied().unwrap_or(0.0) / 1e3)
        .fold(f64::NEG_INFINITY, f64::max);
    let tokens: f64 = records
        .iter()
        .map(|r| f64::from(r.generated_tokens()))
        .sum();
    let as_other = (end > start).then(|| tokens / (end - start));
    let mut row = MetricRow {
        name: "output_throughput_tps".into(),
        other: result.output_throughput,
        other_interval: None,
        llmload_as_other: as_other,
        llmload_as_other_interval: None,
        llmload: case.throughput_tps.as_ref().map(|s| s.mean),
        n: records.len(),
        terms: Vec::new(),
    };
    row.terms = terms(&row, definition, differs);
    row
}

/// The terms of `row`'s gap.
fn terms(row: &MetricRow, d: &Definitions, differs: &[String]) -> Vec<Term> {
    let mut out = Vec::new();
    if let (Some(as_other), Some(ours)) = (row.llmload_as_other, row.llmload) {
        out.push(Term {
            kind: "definition",
            amount: Some(as_other - ours),
            text: definition_text(&row.name, d),
        });
    }
    if !differs.is_empty() {
        out.push(Term {
            kind: "workload",
            amount: None,
            text: format!(
                "the two runs did not send the same workload ({} differ): the figures are of \
                 different loads",
                differs.join(", ")
            ),
        });
    }
    if let (Some(other), Some(as_other)) = (row.other, row.llmload_as_other) {
        out.push(Term {
            kind: "measurement",
            amount: Some(other - as_other),
            text: measurement_text(row),
        });
    }
    out
}

/// Why llmload's own definition gives another figure than the other tool's on the same records.
fn definition_text(name: &str, d: &Definitions) -> String {
    let role = if d.role_chunks > 0 {
        format!(
            "vLLM's first token is the first chunk with choices, which in {} of {} responses \
             was the role-only chunk before any token; llmload's is the first chunk carrying a \
             token",
            d.role_chunks, d.responses
        )
    } else {
        "both take the first chunk, which carried a token in every response".to_owned()
    };
    let chunks = if d.multi_token_events > 0 {
        format!(
            "vLLM takes one gap per chunk, llmload splits a chunk of k tokens into k gaps (in {} \
             of {} responses a chunk carried several)",
            d.multi_token_events, d.responses
        )
    } else {
        "every chunk carried one token, so one gap per chunk is one per token".to_owned()
    };
    let base = name.trim_end_matches("_ms");
    match base.split('_').next().unwrap_or("") {
        "ttft" => role,
        "tpot" => format!(
            "vLLM's TPOT runs from its first token to the last token chunk, llmload's from its \
             first token to the final event (the usage chunk or the stream's end); {role}"
        ),
        "itl" => format!(
            "{chunks}; vLLM also counts the gap from a role-only chunk to the first token. \
             llmload's ITL is over every token gap of the responses whose tokens per event are \
             known"
        ),
        "e2el" => "vLLM's latency ends at the last token chunk, llmload's complete time at the \
                   final event (the usage chunk or the stream's end)"
            .to_owned(),
        _ => "vLLM divides every output token by the benchmark's whole span (first send to \
              last token: the ramp-up and the tail of one request alone included); llmload's \
              own throughput is over its rounds, or its window without warmup and drain"
            .to_owned(),
    }
}

/// What the gap between the other tool's figure and llmload's under its definition is.
fn measurement_text(row: &MetricRow) -> String {
    let level = interval::level() * 100.0;
    match (row.other_interval, row.llmload_as_other_interval) {
        (Some(a), Some(b)) if a.low <= b.high && b.low <= a.high => format!(
            "the two figures' {level:.0} % intervals overlap ([{:.3}, {:.3}] and [{:.3}, {:.3}]): \
             the rest is the variation between two runs, not a difference of measurement",
            a.low, a.high, b.low, b.high
        ),
        (Some(a), Some(b)) => format!(
            "beyond the variation between runs (the {level:.0} % intervals [{:.3}, {:.3}] and \
             [{:.3}, {:.3}] do not overlap): the clients stamp different moments (vLLM's when its \
             Python loop has parsed an event, llmload's when the kernel received it, so the \
             other client's own delay is in its figure), or the server was in another state \
             during the other run",
            a.low, a.high, b.low, b.high
        ),
        (None, Some(b)) if row.other.is_some_and(|o| b.low <= o && o <= b.high) => format!(
            "the other figure lies inside llmload's {level:.0} % interval [{:.3}, {:.3}]: \
             within the variation between runs",
            b.low, b.high
        ),
        (None, Some(b)) => format!(
            "the other figure lies outside llmload's {level:.0} % interval [{:.3}, {:.3}] (the \
             other file gives no per-request values for an interval of its own): client \
             overhead or a different server state",
            b.low, b.high
        ),
        _ => {
            "not tested: too few values for an interval, or none given by the other file".to_owned()
        }
    }
}

#[cfg(test)]
mod tests;
