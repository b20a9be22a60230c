//! The results tables of the reports, complete cases only: the reference table ("Qwen3-8B
//! streaming API results") of the closed-round cases, and the table of continuous and open-loop
//! cases with their figures over the measurement window, which the reference table (per-round
//! throughput at a fixed concurrency) cannot hold.

use super::table::{Cell, Mark, Table};
use crate::fmt::{seconds, thousands};
use crate::stats::Distribution;
use crate::summary::{CaseSummary, Summary};
use crate::workload::image::ImageSpec;

/// Column names of the reference table.
pub const REFERENCE_COLUMNS: [&str; 9] = [
    "Input tokens per request",
    "Concurrent requests",
    "Median TTFT",
    "Median complete response",
    "ITL p50 / p99",
    "TPOT p50 / p99",
    "Aggregate output throughput",
    "Responses (n)",
    "Rounds",
];

/// Column names of the table of continuous and open-loop cases.
pub const WINDOW_COLUMNS: [&str; 12] = [
    "Load",
    "Input tokens (mean)",
    "Output tokens (mean)",
    "Achieved concurrency (mean / peak)",
    "Median TTFT",
    "p99 TTFT from scheduled",
    "ITL p50 / p99",
    "TPOT p50 / p99",
    "Send lag p99",
    "Throughput",
    "Goodput",
    "Responses (n)",
];

/// The reference table, one row per complete closed-round case: input tokens, concurrency,
/// median TTFT, median complete response, ITL and TPOT (p50 / p99), throughput, responses,
/// rounds. Window cases
/// (continuous, open loop) have their own table ([`window`]).
pub fn reference(summary: &Summary) -> Table {
    let mut table = Table::new(REFERENCE_COLUMNS);
    for case in summary
        .cases
        .iter()
        .filter(|c| c.complete && c.is_rounds() && c.generates())
    {
        let throughput = case.throughput_tps.as_ref();
        table.push([
            Cell::new(with_images(case, thousands(case.input_tokens))),
            Cell::new(case.concurrency.to_string()),
            statistic(case.ttft_ms.as_ref(), |d| d.median, "median"),
            statistic(case.e2e_ms.as_ref(), |d| d.median, "median"),
            p50_p99(case.itl_ms.as_ref()),
            p50_p99(case.tpot_ms.as_ref()),
            Cell::figure(
                throughput.map_or("–".into(), |t| {
                    let pm = plus_minus(t.mean, t.ci.as_ref().and_then(|c| c.interval));
                    let pm = pm.map_or_else(String::new, |pm| format!(" {pm}"));
                    format!("{:.2} tokens/s{pm}", t.mean)
                }),
                throughput.map(|t| t.n),
            ),
            responses(case),
            Cell::new(case.rounds.len().to_string()),
        ]);
    }
    table
}

/// The table of complete continuous and open-loop cases: figures over the measurement window.
pub fn window(summary: &Summary) -> Table {
    let mut table = Table::new(WINDOW_COLUMNS);
    for case in summary.cases.iter().filter(|c| c.complete && c.generates()) {
        let Some(load) = case.load.as_ref() else {
            continue;
        };
        table.push([
            Cell::new(super::text::window_load(load)),
            Cell::new(with_images(case, thousands(case.input_tokens))),
            Cell::new(case.output_tokens.to_string()),
            Cell::new(format!(
                "{:.2} / {}",
                load.achieved_concurrency_mean, load.achieved_concurrency_peak
            )),
            statistic(case.ttft_ms.as_ref(), |d| d.median, "median"),
            statistic(load.ttft_from_scheduled_ms.as_ref(), |d| d.p99, "p99"),
            p50_p99(case.itl_ms.as_ref()),
            p50_p99(case.tpot_ms.as_ref()),
            statistic(load.send_lag_ms.as_ref(), |d| d.p99, "p99"),
            Cell::new({
                let pm = plus_minus(
                    load.throughput_tps,
                    load.throughput_ci.as_ref().and_then(|c| c.interval),
                );
                let pm = pm.map_or_else(String::new, |pm| format!(" {pm}"));
                format!("{:.2} tokens/s{pm}", load.throughput_tps)
            }),
            Cell::new(
                load.goodput_rps
                    .map_or("–".into(), |g| format!("{g:.2} req/s")),
            ),
            responses(case),
        ]);
    }
    table
}

/// An input cell's text, with the case's images after it: "512 + 2 images of 224×224".
pub(crate) fn with_images(case: &CaseSummary, input: String) -> String {
    match case.images {
        Some(images) => format!("{input} + {}", ImageSpec::from(images).words()),
        None => input,
    }
}

/// A statistic of a distribution of milliseconds, as a time, over the distribution's n, with
/// its interval's relative half-width where it has one ("196 ms ±6%").
pub fn statistic(d: Option<&Distribution>, of: fn(&Distribution) -> f64, name: &str) -> Cell {
    let text = seconds(d.map(of));
    let pm = d.and_then(|d| plus_minus(of(d), d.ci.as_ref()?.of(name)));
    Cell::figure(
        pm.map_or_else(|| text.clone(), |pm| format!("{text} {pm}")),
        d.map(|d| d.n),
    )
}

/// The larger side of `interval` around `point` as a share of it: "±6%", "±2.5%"; `None`
/// without an interval (or a point of 0).
pub fn plus_minus(point: f64, interval: Option<crate::stats::Interval>) -> Option<String> {
    let i = interval?;
    if point == 0.0 || !point.is_finite() {
        return None;
    }
    let share = (point - i.low).max(i.high - point).max(0.0) / point.abs() * 100.0;
    Some(if share >= 10.0 {
        format!("±{share:.0}%")
    } else {
        format!("±{share:.1}%")
    })
}

/// The median and p99 of a distribution of milliseconds in one cell ("5.0 / 9.8 ms"), over the
/// distribution's n, marked when the p99 has too few samples beyond it; "–" without one.
pub fn p50_p99(d: Option<&Distribution>) -> Cell {
    let Some(d) = d else {
        return Cell::new("–");
    };
    let (p50, p99) = (seconds(Some(d.median)), seconds(Some(d.p99)));
    // One unit for both where they share it.
    let text = match (p50.strip_suffix(" ms"), p99.strip_suffix(" ms")) {
        (Some(a), Some(b)) => format!("{a} / {b} ms"),
        _ => match (p50.strip_suffix(" s"), p99.strip_suffix(" s")) {
            (Some(a), Some(b)) => format!("{a} / {b} s"),
            _ => format!("{p50} / {p99}"),
        },
    };
    let ci = d.ci.as_ref();
    let text = match ci.and_then(|ci| plus_minus(d.median, ci.median)) {
        Some(p50) => {
            let p99 = ci
                .and_then(|ci| plus_minus(d.p99, ci.p99))
                .unwrap_or_else(|| "–".into());
            format!("{text} ({p50} / {p99})")
        }
        None => text,
    };
    let cell = Cell::figure(text, Some(d.n));
    if crate::stats::is_descriptive(d.n, 0.99) {
        cell.marked(Mark::Descriptive)
    } else {
        cell
    }
}

/// The responses a row rests on: the `ok` ones, marked with how many of those are unverified.
pub(crate) fn responses(case: &CaseSummary) -> Cell {
    let cell = Cell::count(case.counts.ok.to_string(), case.counts.ok);
    match case.counts.unverified {
        0 => cell,
        u => cell.marked(Mark::Unverified(u)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn a_row_holds_the_figures_of_its_case_with_their_sample_sizes() {
        let summary = fixture::report().summary;
        let table = reference(&summary);
        let complete: Vec<&CaseSummary> = summary
            .cases
            .iter()
            .filter(|c| c.complete && c.is_rounds())
            .collect();
        assert_eq!(table.rows.len(), complete.len());
        for (row, case) in table.rows.iter().zip(complete) {
            assert_eq!(row.cells.len(), table.columns.len());
            let ttft = case.ttft_ms.as_ref().expect("a complete case has TTFT");
            assert_eq!(row.cells[2].text, seconds(Some(ttft.median)));
            assert_eq!(row.cells[2].n, Some(ttft.n as u64));
            assert_eq!(row.cells[7].n, Some(u64::from(case.counts.ok)));
        }
    }

    #[test]
    fn itl_and_tpot_are_p50_and_p99_in_one_cell_or_a_dash_without_them() {
        let summary = fixture::report().summary;
        let case = &summary.cases[0];
        let itl = case.itl_ms.as_ref().expect("the fixture has ITL");
        let row = &reference(&summary).rows[0];
        let cell = &row.cells[4];
        assert_eq!(
            cell.text,
            format!("{:.1} / {:.1} ms", itl.median, itl.p99),
            "{cell}"
        );
        assert_eq!(cell.n, Some(itl.n as u64));
        assert_eq!(cell.marks, vec![Mark::Descriptive], "n = {}", itl.n);
        let tpot = case.tpot_ms.as_ref().expect("the fixture has TPOT");
        assert!(row.cells[5]
            .text
            .starts_with(&format!("{:.1} / ", tpot.median)));

        let mut many = itl.clone();
        many.n = 500;
        assert!(
            p50_p99(Some(&many)).marks.is_empty(),
            "5 samples beyond p99"
        );
        many.median = 150.0;
        many.p99 = 2500.0;
        assert_eq!(p50_p99(Some(&many)).text, "0.15 / 2.50 s");
        many.median = 50.0;
        assert_eq!(p50_p99(Some(&many)).text, "50.0 ms / 2.50 s");

        let mut without = summary.clone();
        without.cases[0].itl_ms = None;
        without.cases[0].tpot_ms = None;
        let row = &reference(&without).rows[0];
        assert_eq!(row.cells[4].to_string(), "–");
        assert_eq!(row.cells[5].to_string(), "–");
        assert_eq!(row.cells[4].n, None);
    }

    #[test]
    fn a_rate_is_written_rounded_not_as_a_raw_float() {
        use crate::summary::window::{window_figures, LoadShape};
        let mut summary = fixture::report().summary;
        let mut load = window_figures(&[], (0.0, 1.0), &crate::workload::shape::Slo::default());
        load.shape = LoadShape::Trace;
        load.nominal_rate_rps = Some(5.993_690_851_735_016);
        summary.cases[0].load = Some(load.clone());
        load.shape = LoadShape::Poisson;
        load.nominal_rate_rps = Some(0.15 * 3.0);
        summary.cases[1].load = Some(load);
        let table = window(&summary);
        assert_eq!(table.rows[0].cells[0].text, "trace at 5.994 req/s");
        assert_eq!(table.rows[1].cells[0].text, "poisson at 0.45 req/s");
    }

    #[test]
    fn unverified_responses_are_a_mark_of_the_responses_cell() {
        let mut case = fixture::report().summary.cases[0].clone();
        case.counts.unverified = 2;
        let cell = responses(&case);
        assert_eq!(cell.marks, vec![Mark::Unverified(2)]);
        assert_eq!(
            cell.to_string(),
            format!("{} (2 unverified)", case.counts.ok)
        );
    }
}
