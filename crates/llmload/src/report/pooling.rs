//! The table of embeddings and rerank cases, complete ones only: requests answered once, with
//! nothing generated, so latency, inputs per second and input tokens per second stand where a
//! generation case has TTFT, ITL, TPOT and output throughput, and the note under it says so.

use super::results::{p50_p99, plus_minus, responses};
use super::table::{Cell, Table};
use crate::fmt::thousands;
use crate::stats::Spread;
use crate::summary::Summary;

/// Column names of the table.
pub const COLUMNS: [&str; 8] = [
    "Case",
    "Inputs per request",
    "Tokens per input",
    "Load",
    "Latency p50 / p99",
    "Inputs/s",
    "Input tokens/s",
    "Responses (n)",
];

/// What the table holds, and what it cannot.
pub const NOTE: &str = "Embeddings and rerank: each request carries a batch of inputs and is \
    answered once, with no token stream. Latency: request sent → the answer's last byte, p50 / \
    p99 over the responses. Input tokens/s: the prompt tokens the server processed (its own \
    count), over rounds as Σ ÷ (last completion − first send) or over a loop's window; inputs/s: \
    that throughput over the mean tokens per input. TTFT, inter-token latency, TPOT and the \
    decode rate do not apply to these cases and are not shown.";

/// The table, one row per complete embeddings or rerank case.
pub fn table(summary: &Summary) -> Table {
    let mut table = Table::new(COLUMNS);
    for case in summary.cases.iter().filter(|c| c.complete) {
        let Some(pooling) = &case.pooling else {
            continue;
        };
        let load = case.load.as_deref().map_or_else(
            || format!("c={}", case.concurrency),
            super::text::window_load,
        );
        table.push([
            Cell::new(case.id.clone()),
            Cell::new(pooling.batch.to_string()),
            Cell::new(thousands(case.input_tokens)),
            Cell::new(load),
            p50_p99(case.e2e_ms.as_ref()),
            rate(pooling.inputs_per_s.as_ref(), "inputs/s"),
            rate(case.throughput_tps.as_ref(), "tokens/s"),
            responses(case),
        ]);
    }
    table
}

/// A rate with its interval's half-width, over the rounds or windows it rests on; "–" without.
fn rate(spread: Option<&Spread>, unit: &str) -> Cell {
    let Some(s) = spread else {
        return Cell::new("–");
    };
    let pm = plus_minus(s.mean, s.ci.as_ref().and_then(|c| c.interval));
    let pm = pm.map_or_else(String::new, |pm| format!(" {pm}"));
    Cell::figure(format!("{:.2} {unit}{pm}", s.mean), Some(s.n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::pooling::PoolingSummary;

    #[test]
    fn a_pooling_case_has_its_own_row_and_no_generation_figures_anywhere() {
        let mut summary = crate::fixture::report().summary;
        let generation = super::super::results::reference(&summary).rows.len();
        let case = &mut summary.cases[0];
        case.pooling = Some(PoolingSummary {
            batch: 8,
            inputs: 48,
            tokens: 48 * 64,
            dimension: Some(640),
            inputs_per_s: Spread::of(&[10.0, 12.0]),
        });
        case.ttft_ms = None;
        case.itl_ms = None;
        case.tpot_ms = None;
        let id = case.id.clone();
        let t = table(&summary);
        assert_eq!(t.rows.len(), 1);
        let cells: Vec<String> = t.rows[0].cells.iter().map(ToString::to_string).collect();
        assert_eq!(cells[0], id);
        assert_eq!(cells[1], "8");
        assert_eq!(cells[5], "11.00 inputs/s");
        assert!(cells[6].contains(" tokens/s"), "{cells:?}");
        assert!(
            cells.iter().all(|c| !c.contains("NaN") && c != "0 ms"),
            "{cells:?}"
        );
        // The case has left the generation table.
        let reference = super::super::results::reference(&summary);
        assert_eq!(reference.rows.len(), generation - 1);
    }
}
