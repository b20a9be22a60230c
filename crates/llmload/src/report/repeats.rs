//! The section on a series of repeats (`--repeat N`), shared by `report.md`, the terminal and
//! `report.html`: how many repeats are complete of those planned, each incomplete one with its
//! reason, and per case the variation of the headline figures between the complete repeats.

use super::table::{Cell, Mark, Table};
use crate::fmt::seconds;
use crate::summary::repeats::{Series, Variation, FIGURES, HEADLINE};
use crate::summary::Summary;
use std::fmt::Write as _;

/// The table's columns.
pub const COLUMNS: [&str; 7] = ["Case", "Figure", "n", "Mean", "SD", "CV", "Range"];

/// What the table's figures are, in one paragraph.
pub const NOTE: &str = "Between repeats: over the n complete repeats, each repeat's own figure for the case (its \
    median, p99, or throughput over its rounds or its window, as a run of one repeat gives it), \
    then the mean of those values, their sample standard deviation (n − 1), the coefficient of variation (SD ÷ \
    mean) and their range (smallest–largest). A repeat in which the case is incomplete gives no value; with one \
    value there is no SD.";

/// The series' counts in one line: "2 of 3 repeats complete (1, 3); …".
pub fn headline(series: &Series) -> String {
    let list = |ks: &[u32]| {
        let ks: Vec<String> = ks.iter().map(ToString::to_string).collect();
        ks.join(", ")
    };
    let complete = if series.complete.is_empty() {
        String::new()
    } else {
        format!(" (repeat {})", list(&series.complete))
    };
    let mut line = format!(
        "Series: {} of {} repeats complete{complete}. The figures above combine the records of \
         the complete repeats alone",
        series.complete.len(),
        series.planned
    );
    if let Some(k) = series.running() {
        let _ = write!(line, "; repeat {k} is running");
    }
    line.push('.');
    line
}

/// One sentence per incomplete repeat (one for all those that never began): which and why;
/// none is combined.
pub fn incomplete(series: &Series) -> Vec<String> {
    series
        .incomplete
        .iter()
        .map(|i| {
            format!(
                "{}, not combined: {}.",
                i.which(),
                i.reason.trim_end_matches('.')
            )
        })
        .collect()
}

/// The variation of the headline figures between the complete repeats: a row per case and
/// figure, in run order.
pub fn table(series: &Series) -> Table {
    let mut table = Table::new(COLUMNS);
    for between in &series.between {
        for (name, label, _) in FIGURES.iter().take(HEADLINE) {
            let Some(v) = between.figures.get(*name) else {
                continue;
            };
            let value = |x: f64| value(name, x);
            let mut mean = Cell::new(value(v.mean));
            if is_descriptive(series, &between.id, name) {
                mean = mean.marked(Mark::Descriptive);
            }
            table.push([
                Cell::new(between.id.clone()),
                Cell::new(*label),
                Cell::figure(v.n.to_string(), Some(v.n)),
                mean,
                Cell::new(v.sd.map_or_else(|| "–".to_owned(), value)),
                Cell::new(cv(v)),
                Cell::new(range(&value(v.min), &value(v.max))),
            ]);
        }
    }
    table
}

/// The section's lines in order (the headline, the incomplete repeats), and the table; `None`
/// without a series.
pub fn section(summary: &Summary) -> Option<(Vec<String>, Table)> {
    let series = summary.repeats.as_ref()?;
    let mut lines = vec![headline(series)];
    lines.extend(incomplete(series));
    Some((lines, table(series)))
}

/// A figure's value as the views write it: latencies in ms or s, throughput in tokens/s.
fn value(name: &str, x: f64) -> String {
    if name.ends_with("_ms") {
        seconds(Some(x))
    } else {
        format!("{x:.2} tokens/s")
    }
}

/// "3.6–4.3 ms": the unit once where both ends have the same.
fn range(min: &str, max: &str) -> String {
    match (min.split_once(' '), max.split_once(' ')) {
        (Some((low, unit)), Some((_, same))) if unit == same => format!("{low}–{max}"),
        _ => format!("{min} – {max}"),
    }
}

fn cv(v: &Variation) -> String {
    v.cv.map_or_else(|| "–".to_owned(), |cv| format!("{:.1} %", cv * 100.0))
}

/// Whether `name` is a p99 that some complete repeat's TTFT or complete-response distribution
/// of case `id` marks descriptive (too few samples beyond it).
fn is_descriptive(series: &Series, id: &str, name: &str) -> bool {
    let distribution = |c: &crate::summary::CaseSummary| match name {
        "ttft_p99_ms" => c.ttft_ms.clone(),
        "e2e_p99_ms" => c.e2e_ms.clone(),
        _ => None,
    };
    series
        .complete_runs()
        .filter_map(|r| r.cases.iter().find(|c| c.id == id))
        .filter_map(distribution)
        .any(|d| d.descriptive.iter().any(|p| p == "p99"))
}

/// The page's section on a series of repeats: the counts, the incomplete repeats with why, the
/// variation between the complete ones; none without a series.
pub fn page_section(report: &super::Report) -> Option<super::page::Section<'_>> {
    let (lines, between) = section(&report.summary)?;
    let mut page = super::page::Section::new("repeats", "Repeats");
    let mut lines = lines.into_iter();
    if let Some(headline) = lines.next() {
        page.paragraph(headline);
    }
    let rest: Vec<String> = lines.collect();
    if !rest.is_empty() {
        page.push(super::page::Block::List(rest));
    }
    if !between.is_empty() {
        page.table("Between the complete repeats", between);
        page.note(NOTE);
    }
    Some(page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::summary::repeats::{Incomplete, RepeatRun};

    fn series() -> Series {
        let cases = fixture::report().summary.cases;
        let run = |repeat, complete| RepeatRun {
            repeat,
            complete,
            cases: cases.clone(),
        };
        let mut series = Series {
            planned: 3,
            complete: vec![1, 2],
            incomplete: vec![Incomplete {
                through: None,
                repeat: 3,
                reason: "stopped by the interrupted rule at request: SIGTERM".into(),
            }],
            runs: vec![run(1, true), run(2, true), run(3, false)],
            between: Vec::new(),
        };
        series.compare_repeats();
        series
    }

    #[test]
    fn the_section_counts_the_repeats_and_names_the_incomplete_one() {
        let s = series();
        assert_eq!(
            headline(&s),
            "Series: 2 of 3 repeats complete (repeat 1, 2). The figures above combine the \
             records of the complete repeats alone."
        );
        assert_eq!(
            incomplete(&s),
            vec![
                "Repeat 3, not combined: stopped by the interrupted rule at request: \
                 SIGTERM."
            ]
        );
    }

    #[test]
    fn the_table_has_a_row_per_complete_case_and_headline_figure() {
        let t = table(&series());
        // Three of the fixture's four cases are complete, each with its four headline figures.
        assert_eq!(t.rows.len(), 3 * HEADLINE);
        let first = &t.rows[0].cells;
        assert_eq!(first[1].text, "TTFT p50");
        assert_eq!(first[2].n, Some(2));
        // Two identical repeats: no spread at all.
        assert_eq!(first[4].text, "0.0 ms");
        assert_eq!(first[5].text, "0.0 %");
        // The fixture's p99 rests on a handful of responses.
        assert!(t.rows[1].cells[3].marks.contains(&Mark::Descriptive));
        assert!(t.rows[3].cells[3].text.ends_with("tokens/s"));
    }
}
