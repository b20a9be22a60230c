//! A sweep's curve and findings: the tables of each load, the findings with how each was found,
//! and the page's section of a sweep.

use super::table::{Cell, Mark, Table};
use crate::fmt::number;
use crate::summary::saturation::{Analysis, Finding, Point};
use crate::summary::sweep::{Axis, SweepSection};

/// A finding's value with its range: `8 (range 8–10)`; `not placed (6 or more)` (or `(6 or
/// fewer)`) where its range is bounded on one side only, whatever point fitted best (see
/// [`Finding::placed`]); or `none`. Every view writes a finding through this one function.
pub fn value(f: &Finding) -> String {
    match (f.placed(), f.low, f.high) {
        (Some(v), _, _) => format!("{}{}", number(v), range(f)),
        (None, Some(l), None) => format!("not placed ({} or more)", number(l)),
        (None, None, Some(h)) => format!("not placed ({} or fewer)", number(h)),
        (None, Some(l), Some(h)) => format!("not placed ({}–{})", number(l), number(h)),
        (None, None, None) => "none".into(),
    }
}

/// A placed finding's range as the value's suffix (` (range 8–10)`); empty when it has none or
/// is not placed.
pub fn range(f: &Finding) -> String {
    match (f.placed(), f.low, f.high) {
        (Some(_), Some(l), Some(h)) => format!(" (range {}–{})", number(l), number(h)),
        _ => String::new(),
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
        assert_eq!(value(&finding(Some(8.0), None, None)), "8");
        assert_eq!(
            value(&finding(None, Some(16.0), None)),
            "not placed (16 or more)"
        );
        assert_eq!(value(&finding(None, None, None)), "none");
    }

    /// A best fit at 6 whose range runs from 1 (or up to 9) without an end on the other side is
    /// not headlined: every view reads "not placed", and the chart draws no line at 6.
    #[test]
    fn a_range_unbounded_on_one_side_is_never_headlined() {
        for (f, text) in [
            (
                finding(Some(6.0), Some(1.0), None),
                "not placed (1 or more)",
            ),
            (
                finding(Some(6.0), None, Some(9.0)),
                "not placed (9 or fewer)",
            ),
        ] {
            assert_eq!(value(&f), text);
            assert_eq!(range(&f), "");
            assert_eq!(f.placed(), None);
        }
        let mut report = crate::fixture::sweep_report();
        let sweep = report.summary.sweep.as_mut().expect("a sweep");
        sweep.analysis.saturation = Finding {
            method: "a flat curve".into(),
            ..finding(Some(6.0), Some(1.0), None)
        };
        let section = section(&report).expect("a sweep section");
        let lines: Vec<&String> = section
            .blocks
            .iter()
            .filter_map(|b| match b {
                crate::report::page::Block::List(lines) => Some(lines),
                _ => None,
            })
            .flatten()
            .collect();
        let saturation = lines
            .iter()
            .find(|l| l.starts_with("Saturation (C_sat): "))
            .expect("the C_sat line");
        assert!(
            saturation.starts_with("Saturation (C_sat): not placed (1 or more)"),
            "{saturation}"
        );
        let marks = super::super::marks::Marks::of(&report.summary).expect("marks");
        assert_eq!(marks.saturation, None);
        let caption = marks.caption();
        assert!(caption.contains("not placed (1 or more)"), "{caption}");
        assert!(!caption.contains("C_sat = 6"), "{caption}");
    }
}
