//! A sweep's curve and findings: the tables of each load, the findings with how each was found,
//! and the page's section of a sweep.

use super::table::{Cell, Mark, Table};
use crate::fmt::number;
use crate::summary::saturation::{Analysis, Finding, Point};
use crate::summary::sweep::{Axis, SweepSection};

/// A finding's value with its range: `8 (range 8–10)`, `8 (range 6 or more)`, `not placed
/// (6 or more)` where only its lower end is known, or `none`.
pub fn value(f: &Finding) -> String {
    match (f.value, f.low) {
        (Some(v), _) => format!("{}{}", number(v), range(f)),
        (None, Some(l)) => format!("not placed ({} or more)", number(l)),
        (None, None) => "none".into(),
    }
}

/// A finding's range as the value's suffix (` (range 8–10)`); empty when it has none.
pub fn range(f: &Finding) -> String {
    match (f.value, f.low, f.high) {
        (None, _, _) | (_, None, None) => String::new(),
        (_, Some(l), Some(h)) => format!(" (range {}–{})", number(l), number(h)),
        (_, Some(l), None) => format!(" (range {} or more)", number(l)),
        (_, None, Some(h)) => format!(" (range up to {})", number(h)),
    }
}

/// The loads whose throughput fell below a smaller load's beyond noise, in one sentence; `None`
/// when throughput never fell.
pub fn dips(analysis: &Analysis) -> Option<String> {
    if analysis.throughput_dips.is_empty() {
        return None;
    }
    let each: Vec<String> = analysis
        .throughput_dips
        .iter()
        .map(|d| {
            format!(
                "at {} ({:.1} tokens/s, below {:.1} at {}; {})",
                number(d.load),
                d.throughput_tps,
                d.below_tps,
                number(d.below_load),
                if d.explained {
                    "as the model predicts: the last wave of a round is part-full"
                } else {
                    "not what the model predicts: measure it again, or look at the server"
                }
            )
        })
        .collect();
    Some(format!(
        "Throughput falls, beyond the rounds' spread: {}.",
        each.join("; ")
    ))
}

/// How the sweep ended, as sentences: why it stopped adding load, and why `--auto` stopped
/// refining `C_sat`'s range.
pub fn ending(sweep: &SweepSection) -> Vec<String> {
    let stopped = sweep
        .stopped_because
        .iter()
        .map(|why| format!("The sweep stopped adding load: {why}."));
    let refined = sweep
        .refinement
        .iter()
        .map(|why| format!("--auto stopped refining: {why}."));
    stopped.chain(refined).collect()
}

/// The findings, named, in the order the reports give them.
pub fn findings(analysis: &Analysis) -> [(&'static str, &Finding); 4] {
    [
        ("Saturation (C_sat)", &analysis.saturation),
        ("Latency knee", &analysis.knee),
        ("Recommended cap", &analysis.recommended_cap),
        ("Largest load meeting the SLO", &analysis.slo_max_load),
    ]
}

/// Whether a p99 over `n` samples is only descriptive.
fn thin(n: Option<usize>) -> bool {
    n.is_some_and(|n| crate::stats::is_descriptive(n, 0.99))
}

/// A p99 in milliseconds over `n` samples, marked when it is only descriptive.
fn p99_ms(v: Option<f64>, n: Option<usize>) -> Cell {
    let cell = Cell::figure(
        v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1} ms")),
        n,
    );
    if v.is_some() && thin(n) {
        cell.marked(Mark::Descriptive)
    } else {
        cell
    }
}

/// The latency columns of a curve: TTFT p50 and p99 with TPOT p99, or for embeddings and
/// rerank (no token stream) the latency's p50 and p99 alone.
fn latency_columns(analysis: &Analysis) -> Vec<&'static str> {
    if is_pooling(analysis) {
        vec!["latency p50", "latency p99"]
    } else {
        vec!["TTFT p50", "TTFT p99", "TPOT p99"]
    }
}

/// Whether the curve is of embeddings or rerank cases.
fn is_pooling(analysis: &Analysis) -> bool {
    !analysis.points.is_empty() && analysis.points.iter().all(|p| p.e2e_p50_ms.is_some())
}

/// A point's latency cells, as [`latency_columns`] names them, each written by `cell` from the
/// value and its samples.
fn latency_cells(
    p: &Point,
    pooling: bool,
    cell: impl Fn(Option<f64>, Option<usize>, bool) -> Cell,
) -> Vec<Cell> {
    if pooling {
        vec![
            cell(p.e2e_p50_ms, p.e2e_n, false),
            cell(p.e2e_p99_ms, p.e2e_n, true),
        ]
    } else {
        vec![
            cell(p.ttft_p50_ms, p.ttft_n, false),
            cell(p.ttft_p99_ms, p.ttft_n, true),
            cell(p.tpot_p99_ms, p.tpot_n, true),
        ]
    }
}

/// The curve, one row per load: throughput, TTFT p50 and p99, TPOT p99 (ms) (embeddings and
/// rerank: the latency's p50 and p99), the responses they rest on (n), the requests in flight,
/// the share of errors; a p99 over too few samples is marked.
pub fn curve(analysis: &Analysis, axis: Axis) -> Table {
    let ms = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1} ms"));
    let pooling = is_pooling(analysis);
    let mut columns = vec![axis.to_string(), "throughput".into()];
    columns.extend(latency_columns(analysis).into_iter().map(String::from));
    columns.extend(["n", "in flight (mean / peak)", "errors"].map(String::from));
    let mut table = Table::new(columns);
    for p in &analysis.points {
        let in_flight = match (p.achieved_concurrency_mean, p.achieved_concurrency_peak) {
            (Some(mean), Some(peak)) => format!("{mean:.2} / {peak}"),
            _ => "–".to_owned(),
        };
        let mut row = vec![Cell::new(number(p.load)), throughput(p)];
        row.extend(latency_cells(p, pooling, |v, n, tail| {
            if tail {
                p99_ms(v, n)
            } else {
                Cell::figure(ms(v), n)
            }
        }));
        row.extend([
            p.ttft_n.or(p.e2e_n).map_or_else(
                || Cell::new("–"),
                |n| Cell::count(n.to_string(), crate::num::count(n)),
            ),
            Cell::new(in_flight),
            errors(p),
        ]);
        table.push(row);
    }
    table
}

fn throughput(p: &Point) -> Cell {
    Cell::new(format!("{:.1} tokens/s", p.throughput_tps))
}

fn errors(p: &Point) -> Cell {
    Cell::new(format!("{:.1}%", p.error_share * 100.0))
}

/// The page's section on a sweep: its curve, what the marks mean, each finding with how it was
/// found, the dips, and why the sweep ended; none without a sweep.
pub fn section(report: &super::Report) -> Option<super::page::Section<'_>> {
    let sweep = report.summary.sweep.as_ref()?;
    let a = &sweep.analysis;
    let mut section = super::page::Section::new(
        "sweep",
        format!(
            "Sweep over {} (saturation analysis)",
            sweep.axis.as_str().replace('_', " ")
        ),
    );
    section.push(super::page::Block::Table(curve(a, sweep.axis)));
    if a.points.iter().any(|p| thin(p.ttft_n) || thin(p.tpot_n)) {
        section.note(super::text::DESCRIPTIVE_NOTE);
    }
    let findings = findings(a)
        .into_iter()
        .map(|(name, f)| format!("{name}: {} ({})", value(f), f.method))
        .collect();
    section.push(super::page::Block::List(findings));
    if let Some(dips) = dips(a) {
        section.note(dips);
    }
    for line in ending(sweep) {
        section.note(line);
    }
    Some(section)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(value: Option<f64>, low: Option<f64>, high: Option<f64>) -> Finding {
        Finding {
            value,
            low,
            high,
            method: String::new(),
        }
    }

    #[test]
    fn a_finding_reads_as_its_value_range_or_bound() {
        assert_eq!(
            value(&finding(Some(8.0), Some(8.0), Some(10.0))),
            "8 (range 8–10)"
        );
        assert_eq!(
            value(&finding(Some(8.0), Some(6.0), None)),
            "8 (range 6 or more)"
        );
        assert_eq!(
            value(&finding(None, Some(16.0), None)),
            "not placed (16 or more)"
        );
        assert_eq!(value(&finding(None, None, None)), "none");
    }
}
