//! A mix of models: each case's figures per model and over all its models, in one table that
//! `report.md`, `report.html` and the terminal write alike, and the sentence that says how its
//! throughput is computed.

use super::results::{p50_p99, statistic};
use super::table::{Cell, Mark, Table};
use crate::summary::models::ModelSummary;
use crate::summary::{CaseSummary, Counts, Summary};

/// Column names of the per-model table.
pub const COLUMNS: [&str; 10] = [
    "Case",
    "Model",
    "Share of requests",
    "Median TTFT",
    "Median complete response",
    "ITL p50 / p99",
    "TPOT p50 / p99",
    "Output throughput",
    "Goodput",
    "Responses (n)",
];

/// What every model of a mix is, for the table's "all models" row.
const ALL: &str = "(all models)";

/// One row per model of each case that ran a mix, then the case's own row over all its models;
/// an incomplete case is named so. Empty when no case ran a mix.
pub fn table(summary: &Summary) -> Table {
    let mut table = Table::new(COLUMNS);
    for case in &summary.cases {
        let Some(models) = case.models.as_ref() else {
            continue;
        };
        let name = if case.complete {
            case.id.clone()
        } else {
            format!("{} (incomplete)", case.id)
        };
        for m in models {
            table.push([
                Cell::new(name.clone()),
                Cell::new(m.model.clone()),
                Cell::figure(
                    format!("{:.1}%", m.share * 100.0),
                    Some(m.counts.measured() as usize),
                ),
                statistic(m.ttft_ms.as_ref(), |d| d.median, "median"),
                statistic(m.e2e_ms.as_ref(), |d| d.median, "median"),
                p50_p99(m.itl_ms.as_ref()),
                p50_p99(m.tpot_ms.as_ref()),
                Cell::new(tokens_per_s(m.output_tps)),
                Cell::new(goodput(m.goodput_rps, m.slo_met_share)),
                responses(&m.counts),
            ]);
        }
        table.push(all_row(name, case, models));
    }
    table
}

/// The case's own figures over all its models, its throughput the models' added up (the same
/// definition, so that the rows above it add up to it).
fn all_row(name: String, case: &CaseSummary, models: &[ModelSummary]) -> Vec<Cell> {
    let tps: Option<f64> = models.iter().map(|m| m.output_tps).sum();
    let load = case.load.as_ref();
    vec![
        Cell::new(name),
        Cell::new(ALL),
        Cell::figure("100%", Some(case.counts.measured() as usize)),
        statistic(case.ttft_ms.as_ref(), |d| d.median, "median"),
        statistic(case.e2e_ms.as_ref(), |d| d.median, "median"),
        p50_p99(case.itl_ms.as_ref()),
        p50_p99(case.tpot_ms.as_ref()),
        Cell::new(tokens_per_s(tps)),
        Cell::new(goodput(
            load.and_then(|l| l.goodput_rps),
            load.and_then(|l| l.slo_met_share),
        )),
        responses(&case.counts),
    ]
}

/// How the table's figures are computed, in one paragraph; empty without a mix.
pub fn note(summary: &Summary) -> String {
    if !summary.cases.iter().any(|c| c.models.is_some()) {
        return String::new();
    }
    "Per model: each model's figures over the responses of the requests that named it, by the \
     same rules as the case's (the (all models) row). Output throughput: a model's output \
     tokens over the case's time, the summed spans of its rounds (first send to last completion \
     of each) or its measurement window, so that the models' add up to the (all models) row; \
     over rounds of unequal spans that differs from the results table's mean of the rounds' \
     throughputs. Goodput: over a window with objectives, the responses that met every one, \
     per second (and their share).\n"
        .into()
}

/// Output tokens per second, or "–".
fn tokens_per_s(tps: Option<f64>) -> String {
    tps.map_or_else(|| "–".into(), |t| format!("{t:.2} tokens/s"))
}

/// Goodput and the share of responses meeting every objective, or "–" without objectives.
fn goodput(rps: Option<f64>, met: Option<f64>) -> String {
    match (rps, met) {
        (Some(g), Some(m)) => format!("{g:.2} req/s ({:.0}% met)", m * 100.0),
        (Some(g), None) => format!("{g:.2} req/s"),
        _ => "–".into(),
    }
}

/// The `ok` responses a row rests on, with the failed ones and the unverified ones as marks.
fn responses(c: &Counts) -> Cell {
    let failed = c.invalid + c.error + c.cancelled;
    let text = if failed > 0 {
        format!("{} ({failed} not ok)", c.ok)
    } else {
        c.ok.to_string()
    };
    let cell = Cell::count(text, c.ok);
    match c.unverified {
        0 => cell,
        u => cell.marked(Mark::Unverified(u)),
    }
}

/// The page's section on a mix of models; none without one.
pub fn section(report: &super::Report) -> Option<super::page::Section<'_>> {
    let mut section = super::page::Section::new("models", "Per model");
    let table = table(&report.summary);
    if table.is_empty() {
        return None;
    }
    section.push(super::page::Block::Table(table));
    section.note(note(&report.summary));
    Some(section)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn a_row_per_model_then_the_case_over_all_of_them() {
        let summary = fixture::mixed_models().summary;
        let table = table(&summary);
        let mut rows = table.rows.iter();
        for case in &summary.cases {
            let models = case.models.as_ref().expect("every case ran the mix");
            let mut total = 0.0;
            for m in models {
                let row = rows.next().expect("a model's row");
                assert_eq!(row.cells.len(), COLUMNS.len());
                assert_eq!(row.cells[1].text, m.model);
                assert_eq!(row.cells[2].n, Some(u64::from(m.counts.measured())));
                let ttft = m.ttft_ms.as_ref().map(|d| d.n as u64);
                assert_eq!(row.cells[3].n, ttft, "{}", m.model);
                assert_eq!(row.cells[9].n, Some(u64::from(m.counts.ok)));
                total += m.output_tps.expect("rounds have spans");
            }
            let all = rows.next().expect("the case's row");
            assert_eq!(all.cells[1].text, ALL);
            assert_eq!(all.cells[9].n, Some(u64::from(case.counts.ok)));
            assert_eq!(all.cells[7].text, format!("{total:.2} tokens/s"));
            assert_eq!(all.cells[0].text.contains("incomplete"), !case.complete);
        }
        assert!(rows.next().is_none());
        assert!(note(&summary).contains("add up to the (all models) row"));
    }

    #[test]
    fn without_a_mix_there_is_no_table_and_no_note() {
        let summary = fixture::report().summary;
        assert!(table(&summary).is_empty());
        assert!(note(&summary).is_empty());
    }

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(table(&fixture::mixed_models().summary).markdown());
    }
}
