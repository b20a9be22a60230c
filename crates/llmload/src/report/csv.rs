//! `cases.csv`: one row per case, every distribution with its sample size, for spreadsheets and
//! scripts. Numbers are written at full precision; an empty cell means "no sample". The table is
//! built here and written by the table model, fields quoted as RFC 4180 says whenever they hold
//! a comma, a quote or a line break.

use super::table::Table;

pub mod ab;
mod hardware;
mod models;
use crate::stats::{Distribution, Spread};
use crate::summary::phases::PhaseSummary;
use crate::summary::{CaseSummary, Summary};

/// The distributions of a case, in column order, with their column prefixes.
const DISTRIBUTIONS: [&str; 6] = [
    "ttft_ms",
    "e2e_ms",
    "itl_ms",
    "chunk_gap_ms",
    "tpot_ms",
    "decode_rate_tps",
];

/// The statistics written for each distribution: its figures, then the bounds of the
/// intervals of the median and p99 and how they were computed (empty where there is none).
const STATISTICS: [&str; 15] = [
    "n",
    "median",
    "p90",
    "p95",
    "p99",
    "mean",
    "min",
    "max",
    "sd",
    "descriptive",
    "median_ci_low",
    "median_ci_high",
    "p99_ci_low",
    "p99_ci_high",
    "ci",
];

/// The phases of a case (`summary::phases`), in column order, with their column prefixes.
const PHASES: [&str; 6] = [
    "connect_ms",
    "tls_ms",
    "write_ms",
    "head_ms",
    "first_event_ms",
    "last_token_ms",
];

/// The statistics written for each phase.
const PHASE_STATISTICS: [&str; 4] = ["n", "median", "p90", "p99"];

/// Renders one header line and one line per case.
pub fn render(summary: &Summary) -> String {
    table(summary).csv()
}

/// The table of `cases.csv`: every figure of every case, in run order, at full precision.
pub fn table(summary: &Summary) -> Table {
    let mut table = Table::new(header());
    for case in &summary.cases {
        let mut cells = row(summary, case);
        cells.extend(vec![String::new(); models::COLUMNS.len()]);
        table.push(cells);
        for m in case.models.iter().flatten() {
            table.push(models::row(summary, case, m));
        }
    }
    table
}

fn header() -> Vec<String> {
    let mut columns: Vec<String> = [
        "attempt_id",
        "simulated",
        "case",
        "input_tokens",
        "concurrency",
        "output_tokens",
        "complete",
        "rounds_planned",
        "rounds_run",
        "rounds_complete",
        "ok",
        "invalid",
        "error",
        "cancelled",
        "unverified",
        "by_kind",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    for name in DISTRIBUTIONS {
        columns.extend(STATISTICS.iter().map(|s| format!("{name}_{s}")));
    }
    columns.extend(
        ["n", "mean", "min", "max", "sd", "ci_low", "ci_high", "ci"]
            .iter()
            .map(|s| format!("throughput_tps_{s}")),
    );
    columns.extend(["requests_per_s", "total_tps"].map(String::from));
    columns.extend(
        [
            "energy_window_s",
            "energy_j",
            "energy_readings",
            "output_tokens_per_joule",
            "joules_per_request",
        ]
        .map(String::from),
    );
    columns.extend(hardware::COST_COLUMNS.map(String::from));
    columns.extend(
        [
            "phase_responses",
            "new_connections",
            "reused_connections",
            "reused_share",
        ]
        .map(String::from),
    );
    for name in PHASES {
        columns.extend(PHASE_STATISTICS.iter().map(|s| format!("{name}_{s}")));
    }
    columns.extend(SESSION_COLUMNS.map(String::from));
    columns.extend(SERVER_COLUMNS.map(String::from));
    for name in SERVER_DISTRIBUTIONS {
        columns.extend(PHASE_STATISTICS.iter().map(|s| format!("{name}_{s}")));
    }
    columns.extend(TTFT_PART_COLUMNS.map(String::from));
    columns.extend(SPECULATIVE_COLUMNS.map(String::from));
    // Last, so that the columns before keep their places.
    columns.push("abandoned".into());
    columns.push("short".into());
    columns.extend(POOLING_COLUMNS.map(String::from));
    columns.extend(models::COLUMNS.map(String::from));
    columns
}

/// The columns of the case's part before the per-model ones.
fn case_width() -> usize {
    header().len() - models::COLUMNS.len()
}

/// The server's own account: its responses, sources, and how many had a TTFT past the client's.
const SERVER_COLUMNS: [&str; 3] = [
    "server_responses",
    "server_sources",
    "server_ttft_exceeds_client",
];

/// The distributions of the server's own account, with their column prefixes.
const SERVER_DISTRIBUTIONS: [&str; 5] = [
    "server_queue_ms",
    "server_prefill_ms",
    "server_ttft_ms",
    "server_decode_ms",
    "server_delivery_ms",
];

/// The client's TTFT part by part: means over the same responses (empty where a part is
/// unavailable, the reasons joined by `;`).
const TTFT_PART_COLUMNS: [&str; 7] = [
    "ttft_parts_responses",
    "ttft_parts_client_ms",
    "ttft_parts_write_ms",
    "ttft_parts_queue_ms",
    "ttft_parts_prefill_ms",
    "ttft_parts_residual_ms",
    "ttft_parts_unavailable",
];

/// Speculative decoding: the server's drafted and accepted tokens and their pooled share.
const SPECULATIVE_COLUMNS: [&str; 3] = [
    "server_drafted_tokens",
    "server_accepted_tokens",
    "server_acceptance_rate",
];

/// The server's own account of a case, its TTFT's parts and its drafts; empty where the server
/// reported no timings.
fn server_cells(s: Option<&crate::summary::server_side::ServerSideSummary>) -> Vec<String> {
    let width = SERVER_COLUMNS.len()
        + SERVER_DISTRIBUTIONS.len() * PHASE_STATISTICS.len()
        + TTFT_PART_COLUMNS.len()
        + SPECULATIVE_COLUMNS.len();
    let Some(s) = s else {
        return vec![String::new(); width];
    };
    let figure = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    let sources: Vec<&str> = s.sources.iter().map(|source| source.name()).collect();
    let mut cells = vec![
        s.responses.to_string(),
        sources.join(";"),
        s.ttft_exceeds_client.to_string(),
    ];
    for d in [
        &s.queue_ms,
        &s.prefill_ms,
        &s.ttft_ms,
        &s.decode_ms,
        &s.delivery_ms,
    ] {
        cells.extend(quantile_cells(d.as_ref()));
    }
    match &s.ttft_parts {
        None => cells.extend(vec![String::new(); TTFT_PART_COLUMNS.len()]),
        Some(p) => {
            cells.extend([
                p.responses.to_string(),
                p.client_ttft_ms.to_string(),
                figure(p.write_ms),
                figure(p.queue_ms),
                figure(p.prefill_ms),
                p.residual_ms.to_string(),
                p.unavailable.join(";"),
            ]);
        }
    }
    match &s.speculative {
        None => cells.extend(vec![String::new(); SPECULATIVE_COLUMNS.len()]),
        Some(d) => cells.extend([
            d.drafted.to_string(),
            d.accepted.to_string(),
            figure(d.acceptance_rate),
        ]),
    }
    cells
}

/// The columns of a case of sessions; the by-turn ones list `turn=value` pairs joined by `;`.
const SESSION_COLUMNS: [&str; 10] = [
    "session_turns",
    "sessions_started",
    "sessions_complete",
    "sessions_incomplete",
    "session_duration_s_median",
    "session_active_s_median",
    "session_prompt_tokens_median",
    "turn_ttft_ms_median",
    "turn_prompt_tokens_median",
    "turn_cache_hit_rate",
];

/// The cells of [`SESSION_COLUMNS`]; empty for a case without sessions.
fn session_cells(s: Option<&crate::summary::sessions::SessionSummary>) -> [String; 10] {
    let Some(s) = s else {
        return Default::default();
    };
    let median = |d: Option<&Distribution>| d.map_or_else(String::new, |d| d.median.to_string());
    let by_turn = |f: &dyn Fn(&crate::summary::sessions::TurnSummary) -> Option<f64>| {
        let pairs: Vec<String> = s
            .by_turn
            .iter()
            .filter_map(|t| f(t).map(|v| format!("{}={v}", t.turn)))
            .collect();
        pairs.join(";")
    };
    [
        s.turns.to_string(),
        s.started.to_string(),
        s.completed.to_string(),
        s.incomplete.to_string(),
        median(s.duration_s.as_ref()),
        median(s.active_s.as_ref()),
        median(s.prompt_tokens.as_ref()),
        by_turn(&|t| t.ttft_ms.as_ref().map(|d| d.median)),
        by_turn(&|t| t.prompt_tokens.as_ref().map(|d| d.median)),
        by_turn(&|t| t.hit_rate),
    ]
}

fn row(summary: &Summary, case: &CaseSummary) -> Vec<String> {
    let rounds = [
        case.rounds_planned.to_string(),
        case.rounds.len().to_string(),
        case.rounds
            .iter()
            .filter(|r| r.complete)
            .count()
            .to_string(),
    ];
    let mut cells = head_cells(summary, case, rounds, &case.counts);
    for distribution in [
        &case.ttft_ms,
        &case.e2e_ms,
        &case.itl_ms,
        &case.chunk_gap_ms,
        &case.tpot_ms,
        &case.decode_rate_tps,
    ] {
        cells.extend(distribution_cells(distribution.as_ref()));
    }
    cells.extend(spread_cells(case.throughput_tps.as_ref()));
    let rates = super::results::Rates::of(case);
    let figure = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    cells.extend([figure(rates.requests_per_s), figure(rates.total_tps)]);
    cells.extend(hardware::energy_cells(case.energy.as_ref()));
    cells.extend(hardware::cost_cells(case.cost.as_ref()));
    cells.extend(phase_cells(case.phases.as_deref()));
    cells.extend(session_cells(case.sessions.as_deref()));
    cells.extend(server_cells(case.server.as_deref()));
    cells.extend(tail_cells(&case.counts, case.pooling.as_ref()));
    cells
}

/// Embeddings and rerank cases: inputs per request, the vectors' length, and inputs per second
/// (mean and interval); empty for generation cases.
const POOLING_COLUMNS: [&str; 5] = [
    "batch_size",
    "dimension",
    "inputs_per_s_mean",
    "inputs_per_s_ci_low",
    "inputs_per_s_ci_high",
];

/// The columns after the case's figures: `abandoned`, `short`, then [`POOLING_COLUMNS`].
const TAIL_WIDTH: usize = 2 + POOLING_COLUMNS.len();

/// The last cells of a case's (or a model's) figures: the counts `abandoned` and `short`, then
/// the pooling columns (empty for a generation case, and on a model's row).
fn tail_cells(
    c: &crate::summary::Counts,
    p: Option<&crate::summary::pooling::PoolingSummary>,
) -> Vec<String> {
    let mut cells = vec![c.abandoned.to_string(), c.short.to_string()];
    let Some(p) = p else {
        cells.resize(TAIL_WIDTH, String::new());
        return cells;
    };
    let rate = p.inputs_per_s.as_ref();
    let interval = rate.and_then(|r| r.ci.as_ref()?.interval);
    let text = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    cells.extend([
        p.batch.to_string(),
        p.dimension.map_or_else(String::new, |d| d.to_string()),
        text(rate.map(|r| r.mean)),
        text(interval.map(|i| i.low)),
        text(interval.map(|i| i.high)),
    ]);
    cells
}

/// The first cells of a row: the attempt and the case, its `rounds` cells, then the counts `c`.
fn head_cells(
    summary: &Summary,
    case: &CaseSummary,
    rounds: [String; 3],
    c: &crate::summary::Counts,
) -> Vec<String> {
    let by_kind: Vec<String> = c.by_kind.iter().map(|(k, n)| format!("{k}={n}")).collect();
    let mut cells = vec![
        summary.attempt_id.clone(),
        summary.simulated.to_string(),
        case.id.clone(),
        case.input_tokens.to_string(),
        case.concurrency.to_string(),
        case.output_tokens.to_string(),
        case.complete.to_string(),
    ];
    cells.extend(rounds);
    cells.extend([
        c.ok.to_string(),
        c.invalid.to_string(),
        c.error.to_string(),
        c.cancelled.to_string(),
        c.unverified.to_string(),
        by_kind.join(";"),
    ]);
    cells
}

/// How many `ok` responses carried phases, how many of them went on a new connection and on a
/// kept-alive one, the kept-alive share, then n, median, p90 and p99 of each phase; empty when
/// the records carry no phases.
fn phase_cells(p: Option<&PhaseSummary>) -> Vec<String> {
    let Some(p) = p else {
        return vec![String::new(); 4 + PHASES.len() * PHASE_STATISTICS.len()];
    };
    let mut cells = vec![
        p.responses.to_string(),
        p.new_connections.to_string(),
        p.reused_connections.to_string(),
        p.reused_share().map_or_else(String::new, |s| s.to_string()),
    ];
    for d in [
        &p.connect_ms,
        &p.tls_ms,
        &p.write_ms,
        &p.head_ms,
        &p.first_event_ms,
        &p.last_token_ms,
    ] {
        cells.extend(quantile_cells(d.as_ref()));
    }
    cells
}

/// n, median, p90 and p99 of `d` ([`PHASE_STATISTICS`]); empty cells without one.
fn quantile_cells(d: Option<&Distribution>) -> Vec<String> {
    match d {
        None => vec![String::new(); PHASE_STATISTICS.len()],
        Some(d) => vec![
            d.n.to_string(),
            d.median.to_string(),
            d.p90.to_string(),
            d.p99.to_string(),
        ],
    }
}

fn distribution_cells(d: Option<&Distribution>) -> Vec<String> {
    match d {
        None => vec![String::new(); STATISTICS.len()],
        Some(d) => {
            let mut cells = vec![d.n.to_string()];
            cells.extend(
                [d.median, d.p90, d.p95, d.p99, d.mean, d.min, d.max, d.sd]
                    .iter()
                    .map(f64::to_string),
            );
            cells.push(d.descriptive.join(" "));
            let ci = d.ci.as_ref();
            for i in [ci.and_then(|c| c.median), ci.and_then(|c| c.p99)] {
                cells.push(i.map_or_else(String::new, |i| i.low.to_string()));
                cells.push(i.map_or_else(String::new, |i| i.high.to_string()));
            }
            cells.push(ci.map_or_else(String::new, |c| method(&c.basis)));
            cells
        }
    }
}

/// How an interval was computed, in a cell without commas: "order statistics over 24
/// responses at 95 %".
fn method(b: &crate::stats::interval::Basis) -> String {
    format!(
        "{} over {} {} at {} %",
        b.method.words(),
        b.units,
        b.unit.plural(),
        crate::fmt::number(b.level * 100.0)
    )
}

fn spread_cells(s: Option<&Spread>) -> Vec<String> {
    match s {
        None => vec![String::new(); 8],
        Some(s) => {
            let mut cells = vec![s.n.to_string()];
            cells.extend([s.mean, s.min, s.max, s.sd].iter().map(f64::to_string));
            let i = s.ci.as_ref().and_then(|c| c.interval);
            cells.push(i.map_or_else(String::new, |i| i.low.to_string()));
            cells.push(i.map_or_else(String::new, |i| i.high.to_string()));
            cells.push(
                s.ci.as_ref()
                    .filter(|c| c.interval.is_some())
                    .map_or_else(String::new, |c| method(&c.basis)),
            );
            cells
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn every_row_has_as_many_cells_as_the_header() {
        let summary = fixture::report().summary;
        assert_eq!(row(&summary, &summary.cases[0]).len(), case_width());
        let csv = render(&summary);
        assert_eq!(csv.lines().count(), 1 + summary.cases.len());
        assert!(table(&summary)
            .rows
            .iter()
            .all(|r| r.cells.len() == header().len()));
    }

    #[test]
    fn a_mix_adds_a_row_per_model_after_its_case_with_the_models_figures() {
        let summary = fixture::mixed_models().summary;
        let table = table(&summary);
        let models: usize = summary
            .cases
            .iter()
            .flat_map(|c| &c.models)
            .map(Vec::len)
            .sum();
        assert_eq!(table.rows.len(), summary.cases.len() + models);
        let columns = header();
        let cell = |row: usize, name: &str| {
            let i = columns.iter().position(|c| c == name).expect(name);
            table.rows[row].cells[i].text.clone()
        };
        // in64-c2-out4: its row, then base's and adapter-a's.
        let case = &summary.cases[1];
        let (base, adapter) = {
            let m = case.models.as_ref().expect("models");
            (&m[1], &m[0])
        };
        assert_eq!(
            (adapter.model.as_str(), base.model.as_str()),
            ("adapter-a", "base")
        );
        let row = 1 + summary.cases[0].models.as_ref().map_or(0, Vec::len) + 1;
        assert_eq!(cell(row - 1, "case"), case.id);
        assert_eq!(cell(row - 1, "model"), "");
        assert_eq!(cell(row, "model"), "adapter-a");
        assert_eq!(cell(row, "ok"), adapter.counts.ok.to_string());
        let ttft = adapter.ttft_ms.as_ref().expect("ttft");
        assert_eq!(cell(row, "ttft_ms_n"), ttft.n.to_string());
        assert_eq!(cell(row, "ttft_ms_median"), ttft.median.to_string());
        assert_eq!(cell(row, "chunk_gap_ms_n"), "");
        assert_eq!(cell(row, "throughput_tps_mean"), "");
        assert_eq!(cell(row, "model_share"), adapter.share.to_string());
        let tps = adapter.output_tps.expect("over the rounds' spans");
        assert_eq!(cell(row, "model_output_tps"), tps.to_string());
        assert_eq!(cell(row + 1, "model"), "base");
    }

    #[test]
    fn phase_columns_hold_the_counts_the_share_and_each_phase() {
        let summary = fixture::report().summary;
        let case = &summary.cases[0];
        let phases = case.phases.as_ref().expect("the fixture has phases");
        let cells: std::collections::HashMap<String, String> =
            header().into_iter().zip(row(&summary, case)).collect();
        assert_eq!(cells["phase_responses"], phases.responses.to_string());
        let share = f64::from(phases.reused_connections) / f64::from(phases.responses);
        assert_eq!(cells["reused_share"], share.to_string());
        let head = phases.head_ms.as_ref().expect("head");
        assert_eq!(cells["head_ms_n"], head.n.to_string());
        assert_eq!(cells["head_ms_median"], head.median.to_string());
        assert_eq!(cells["tls_ms_n"], "", "no TLS in the fixture");
        let mut without = summary.clone();
        without.cases[0].phases = None;
        let empty = row(&without, &without.cases[0]);
        // The phases' columns come before the server's and the abandoned count.
        let width = 4 + PHASES.len() * PHASE_STATISTICS.len();
        let phases_at = header()
            .iter()
            .position(|c| c == "phase_responses")
            .expect("phase columns");
        assert!(empty[phases_at..phases_at + width]
            .iter()
            .all(String::is_empty));
    }

    #[test]
    fn server_columns_hold_its_account_and_the_ttft_s_parts() {
        use crate::summary::server_side::{ServerSideSummary, TtftParts};
        let mut summary = fixture::report().summary;
        let one = |v: f64| crate::stats::Distribution::from_samples(&mut [v]);
        summary.cases[0].server = Some(Box::new(ServerSideSummary {
            responses: 2,
            sources: vec![crate::record::TimingSource::LlamaServer],
            ttft_exceeds_client: 0,
            queue_ms: None,
            prefill_ms: one(20.0),
            ttft_ms: one(20.0),
            decode_ms: one(90.0),
            delivery_ms: one(5.0),
            ttft_parts: Some(TtftParts::example()),
            speculative: None,
            pace: None,
        }));
        let case = &summary.cases[0];
        let cells: std::collections::HashMap<String, String> =
            header().into_iter().zip(row(&summary, case)).collect();
        assert_eq!(cells["server_sources"], "llama-server timings");
        assert_eq!(cells["server_queue_ms_n"], "");
        assert_eq!(cells["server_prefill_ms_median"], "20");
        assert_eq!(cells["ttft_parts_queue_ms"], "");
        assert_eq!(cells["ttft_parts_residual_ms"], "4.5");
        assert_eq!(
            cells["ttft_parts_unavailable"],
            "server queue: the server did not report it"
        );
    }

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(render(&fixture::report().summary));
    }
}
