//! The results tables of the reports, complete cases only: the reference table ("Qwen3-8B
//! streaming API results") of the closed-round cases, and the table of continuous and open-loop
//! cases with their figures over the measurement window, which the reference table (per-round
//! throughput at a fixed concurrency) cannot hold.

use super::table::{Cell, Mark, Table};
use crate::fmt::{seconds, thousands};
use crate::stats::Distribution;
use crate::summary::{CaseSummary, Summary};

/// Column names of the reference table.
pub const REFERENCE_COLUMNS: [&str; 7] = [
    "Input tokens per request",
    "Concurrent requests",
    "Median TTFT",
    "Median complete response",
    "Aggregate output throughput",
    "Responses (n)",
    "Rounds",
];

/// Column names of the table of continuous and open-loop cases.
pub const WINDOW_COLUMNS: [&str; 10] = [
    "Load",
    "Input tokens (mean)",
    "Output tokens (mean)",
    "Achieved concurrency (mean / peak)",
    "Median TTFT",
    "p99 TTFT from scheduled",
    "Send lag p99",
    "Throughput",
    "Goodput",
    "Responses (n)",
];

/// The reference table, one row per complete closed-round case: input tokens, concurrency,
/// median TTFT, median complete response, throughput, responses, rounds. Window cases
/// (continuous, open loop) have their own table ([`window`]).
pub fn reference(summary: &Summary) -> Table {
    let mut table = Table::new(REFERENCE_COLUMNS);
    for case in summary.cases.iter().filter(|c| c.complete && c.is_rounds()) {
        let throughput = case.throughput_tps.as_ref();
        table.push([
            Cell::new(thousands(case.input_tokens)),
            Cell::new(case.concurrency.to_string()),
            statistic(case.ttft_ms.as_ref(), |d| d.median),
            statistic(case.e2e_ms.as_ref(), |d| d.median),
            Cell::figure(
                throughput.map_or("–".into(), |t| format!("{:.2} tokens/s", t.mean)),
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
    for case in summary.cases.iter().filter(|c| c.complete) {
        let Some(load) = case.load.as_ref() else {
            continue;
        };
        let nominal = match (load.nominal_rate_rps, load.nominal_concurrency) {
            (Some(rate), _) => format!("{} at {rate} req/s", load.shape),
            (None, Some(c)) => format!("{} × {c}", load.shape),
            (None, None) => load.shape.to_string(),
        };
        table.push([
            Cell::new(nominal),
            Cell::new(thousands(case.input_tokens)),
            Cell::new(case.output_tokens.to_string()),
            Cell::new(format!(
                "{:.2} / {}",
                load.achieved_concurrency_mean, load.achieved_concurrency_peak
            )),
            statistic(case.ttft_ms.as_ref(), |d| d.median),
            statistic(load.ttft_from_scheduled_ms.as_ref(), |d| d.p99),
            statistic(load.send_lag_ms.as_ref(), |d| d.p99),
            Cell::new(format!("{:.2} tokens/s", load.throughput_tps)),
            Cell::new(
                load.goodput_rps
                    .map_or("–".into(), |g| format!("{g:.2} req/s")),
            ),
            responses(case),
        ]);
    }
    table
}

/// A statistic of a distribution of milliseconds, as a time, over the distribution's n.
fn statistic(d: Option<&Distribution>, of: fn(&Distribution) -> f64) -> Cell {
    Cell::figure(seconds(d.map(of)), d.map(|d| d.n))
}

/// The responses a row rests on: the `ok` ones, marked with how many of those are unverified.
fn responses(case: &CaseSummary) -> Cell {
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
            assert_eq!(row.cells[5].n, Some(u64::from(case.counts.ok)));
        }
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
