//! A mix of models in `cases.csv`: after each case's row, one row per model, with the case's
//! parameters, the model's counts and distributions in the case's columns (the columns a model
//! has no figure of left empty), and the model's own columns last (empty on a case's row).

use super::{case_width, distribution_cells, head_cells, tail_cells, TAIL_WIDTH};
use crate::summary::models::ModelSummary;
use crate::summary::{CaseSummary, Summary};

/// The per-model columns, after every case column.
pub(super) const COLUMNS: [&str; 7] = [
    "model",
    "model_share",
    "model_output_tokens",
    "model_output_tps",
    "model_completed_rps",
    "model_goodput_rps",
    "model_slo_met_share",
];

/// The row of model `m` of `case`.
pub(super) fn row(summary: &Summary, case: &CaseSummary, m: &ModelSummary) -> Vec<String> {
    let c = &m.counts;
    let mut cells = head_cells(summary, case, Default::default(), c);
    for distribution in [
        &m.ttft_ms,
        &m.e2e_ms,
        &m.itl_ms,
        &None,
        &m.tpot_ms,
        &m.decode_rate_tps,
    ] {
        cells.extend(distribution_cells(distribution.as_ref()));
    }
    // Throughput, energy, phases, sessions and the server's account are the case's alone.
    cells.resize(case_width() - TAIL_WIDTH, String::new());
    cells.extend(tail_cells(c, None));
    let figure = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    cells.extend([
        m.model.clone(),
        m.share.to_string(),
        m.output_tokens.to_string(),
        figure(m.output_tps),
        figure(m.completed_rps),
        figure(m.goodput_rps),
        figure(m.slo_met_share),
    ]);
    cells
}
