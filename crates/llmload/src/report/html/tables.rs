//! The results tables as `report.html` shows them: the shared tables of [`super::results`], each
//! case named by the lengths it sent ([`Lengths`]) and with its inter-token latency and time per
//! output token (p50 / p99 over n), or "—" and why there is none.

use crate::fmt::{seconds, thousands};
use crate::report::charts::lengths::Lengths;
use crate::report::results;
use crate::report::table::{Cell, Table};
use crate::stats::Distribution;
use crate::summary::{CaseSummary, Summary};

/// The per-token columns after the shared ones.
const COLUMNS: [&str; 2] = ["ITL p50 / p99", "TPOT p50 / p99"];

/// What the per-token columns hold, for the note under the table.
pub const NOTE: &str = "ITL: inter-token latency, the gaps between a response's tokens (an \
    event of k tokens gives k gaps of its gap ÷ k), over every gap of the case; TPOT: time per \
    output token after the first, (complete response − TTFT) ÷ (output tokens − 1), over the \
    responses. Each as p50 / p99 over the n it rests on.";

/// The reference table of complete closed-round cases, with the lengths sent and per-token
/// figures.
pub fn reference(summary: &Summary, lengths: &Lengths) -> Table {
    let cases: Vec<&CaseSummary> = summary
        .cases
        .iter()
        .filter(|c| c.complete && c.is_rounds() && c.generates())
        .collect();
    let mut table = results::reference(summary);
    name_lengths(&mut table, &cases, lengths);
    per_token(table, &cases)
}

/// The table of complete continuous and open-loop cases, with per-token figures.
pub fn window(summary: &Summary) -> Table {
    let cases: Vec<&CaseSummary> = summary
        .cases
        .iter()
        .filter(|c| c.complete && c.load.is_some() && c.generates())
        .collect();
    per_token(results::window(summary), &cases)
}

/// Writes into the input column of each row (one per case of `cases`, in order) the prompt
/// lengths its case sent.
fn name_lengths(table: &mut Table, cases: &[&CaseSummary], lengths: &Lengths) {
    let input = results::REFERENCE_COLUMNS[0];
    let Some(at) = table.columns.iter().position(|c| c == input) else {
        return;
    };
    for (row, case) in table.rows.iter_mut().zip(cases) {
        row.cells[at].text = results::with_images(case, lengths.input(&[case]));
    }
}

/// `table` with the per-token columns written as the page shows them (with their n, or why
/// there is none), in place of the shared table's where it has them, its rows being `cases` in
/// order.
fn per_token(mut table: Table, cases: &[&CaseSummary]) -> Table {
    debug_assert_eq!(table.rows.len(), cases.len(), "a row per case");
    let at: Vec<usize> = COLUMNS
        .iter()
        .map(|name| {
            table
                .columns
                .iter()
                .position(|c| c == name)
                .unwrap_or_else(|| {
                    table.columns.push((*name).to_owned());
                    table.columns.len() - 1
                })
        })
        .collect();
    for (row, case) in table.rows.iter_mut().zip(cases) {
        let cells = [
            figure(case.itl_ms.as_ref(), itl_absent(case)),
            figure(case.tpot_ms.as_ref(), tpot_absent(case)),
        ];
        for (&i, cell) in at.iter().zip(cells) {
            if i < row.cells.len() {
                row.cells[i] = cell;
            } else {
                row.cells.push(cell);
            }
        }
    }
    table
}

/// "5.1 / 9.8 ms (n = 1,204)", or "—" and why there is none.
fn figure(d: Option<&Distribution>, why: Option<&str>) -> Cell {
    match d {
        Some(d) => Cell::figure(
            format!(
                "{} (n = {})",
                p50_p99(d),
                thousands(u32::try_from(d.n).unwrap_or(u32::MAX))
            ),
            Some(d.n),
        ),
        None => Cell::new(why.map_or("—".to_owned(), |why| format!("— ({why})"))),
    }
}

/// "5.1 / 9.8 ms", the unit once where both share it, else "80.2 ms / 0.12 s".
fn p50_p99(d: &Distribution) -> String {
    let (p50, p99) = (seconds(Some(d.median)), seconds(Some(d.p99)));
    match (p50.split_once(' '), p99.split_once(' ')) {
        (Some((a, unit)), Some((b, same))) if unit == same => format!("{a} / {b} {unit}"),
        _ => format!("{p50} / {p99}"),
    }
}

/// Why a case has no inter-token latency: its summary's reason (tokens per event unknown), else
/// what its counts say.
fn itl_absent(case: &CaseSummary) -> Option<&str> {
    if let Some(why) = buffered(case) {
        return Some(why);
    }
    if let Some(why) = &case.itl_unknown {
        return Some(why);
    }
    match (case.counts.ok, case.output_tokens) {
        (0, _) => Some("no ok response"),
        (_, 0 | 1) => Some("one output token: no gap between tokens"),
        _ => None,
    }
}

/// Why a case whose every response arrived in bursts has no per-token figure.
fn buffered(case: &CaseSummary) -> Option<&'static str> {
    case.bursts
        .as_ref()
        .filter(|b| b.all())
        .map(|_| "the tokens arrived in bursts: not measurable through this path")
}

/// Why a case has no time per output token, where its summary says.
fn tpot_absent(case: &CaseSummary) -> Option<&'static str> {
    if let Some(why) = buffered(case) {
        return Some(why);
    }
    match (case.counts.ok, case.output_tokens) {
        (0, _) => Some("no ok response"),
        (_, 0 | 1) => Some("one output token: none after the first"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn each_row_has_its_itl_and_tpot_p50_and_p99_over_n_or_a_dash() {
        let mut summary = fixture::report().summary;
        summary.cases[1].itl_ms = None;
        summary.cases[1].output_tokens = 1;
        let table = reference(&summary, &Lengths::default());
        // In the shared table's own place, once.
        let itl = table
            .columns
            .iter()
            .position(|c| c == COLUMNS[0])
            .expect("the ITL column");
        assert_eq!(table.columns[itl + 1], COLUMNS[1]);
        assert_eq!(
            table
                .columns
                .iter()
                .filter(|c| COLUMNS.contains(&c.as_str()))
                .count(),
            2
        );
        let d = summary.cases[0].tpot_ms.as_ref().expect("TPOT");
        assert_eq!(
            table.rows[0].cells[itl + 1].text,
            format!("{} (n = {})", p50_p99(d), d.n)
        );
        assert_eq!(table.rows[0].cells[itl + 1].n, Some(d.n as u64));
        assert_eq!(
            table.rows[1].cells[itl].text,
            "— (one output token: no gap between tokens)"
        );
        summary.cases[0].itl_ms = None;
        assert_eq!(
            reference(&summary, &Lengths::default()).rows[0].cells[itl].text,
            "—",
            "no reason the summary gives"
        );
    }

    #[test]
    fn both_percentiles_share_their_unit_when_they_can() {
        let mut d = fixture::report().summary.cases[0]
            .ttft_ms
            .clone()
            .expect("TTFT");
        (d.median, d.p99) = (5.14, 9.8);
        assert_eq!(p50_p99(&d), "5.1 / 9.8 ms");
        d.p99 = 120.0;
        assert_eq!(p50_p99(&d), "5.1 ms / 0.12 s");
    }

    #[test]
    fn the_rows_name_the_lengths_their_cases_sent() {
        let report = fixture::mixed_lengths();
        let table = reference(&report.summary, &Lengths::of(&report));
        assert_eq!(table.rows[0].cells[0].text, "64/128");
        assert_eq!(table.rows[1].cells[0].text, "64");
    }
}
