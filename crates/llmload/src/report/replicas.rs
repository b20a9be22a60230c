//! Several `--url`: each case's figures per replica beside the case's own, in one table every
//! view writes alike, and a banner naming each replica whose requests failed.

use super::page::{Block, Section};
use super::results::{p50_p99, statistic};
use super::table::{Cell, Table};
use crate::summary::replicas::ReplicaSummary;
use crate::summary::{CaseSummary, Summary};

/// Column names of the per-replica table.
pub const COLUMNS: [&str; 8] = [
    "Case",
    "Replica",
    "Share of requests",
    "Median TTFT",
    "Median complete response",
    "TPOT p50 / p99",
    "Output throughput",
    "Responses ok / sent",
];

/// The row of the case over every replica.
const ALL: &str = "(all replicas)";

/// A replica's name: its index and URL.
fn name(summary: &Summary, replica: u16) -> String {
    summary
        .replicas
        .get(usize::from(replica))
        .map_or_else(|| format!("{replica}"), |url| format!("{replica}: {url}"))
}

/// One row per replica of each case that went to several, then the case's own row.
pub fn table(summary: &Summary) -> Table {
    let mut table = Table::new(COLUMNS);
    for case in &summary.cases {
        let Some(replicas) = case.replicas.as_ref() else {
            continue;
        };
        let id = if case.complete {
            case.id.clone()
        } else {
            format!("{} (incomplete)", case.id)
        };
        for r in replicas {
            table.push(row(id.clone(), name(summary, r.replica), r));
        }
        table.push(all_row(id, case, replicas));
    }
    table
}

fn row(id: String, replica: String, r: &ReplicaSummary) -> Vec<Cell> {
    vec![
        Cell::new(id),
        Cell::new(replica),
        Cell::figure(
            format!("{:.1}%", r.share * 100.0),
            Some(r.counts.measured() as usize),
        ),
        statistic(r.ttft_ms.as_ref(), |d| d.median, "median"),
        statistic(r.e2e_ms.as_ref(), |d| d.median, "median"),
        p50_p99(r.tpot_ms.as_ref()),
        Cell::new(tokens_per_s(r.output_tps)),
        Cell::count(
            format!("{} / {}", r.counts.ok, r.counts.measured()),
            r.counts.ok,
        ),
    ]
}

/// The case's own figures; its throughput the replicas' added up (the same definition).
fn all_row(id: String, case: &CaseSummary, replicas: &[ReplicaSummary]) -> Vec<Cell> {
    let tps: Option<f64> = replicas.iter().map(|r| r.output_tps).sum();
    vec![
        Cell::new(id),
        Cell::new(ALL),
        Cell::figure("100%", Some(case.counts.measured() as usize)),
        statistic(case.ttft_ms.as_ref(), |d| d.median, "median"),
        statistic(case.e2e_ms.as_ref(), |d| d.median, "median"),
        p50_p99(case.tpot_ms.as_ref()),
        Cell::new(tokens_per_s(tps)),
        Cell::count(
            format!("{} / {}", case.counts.ok, case.counts.measured()),
            case.counts.ok,
        ),
    ]
}

/// Output tokens per second, or "–".
fn tokens_per_s(tps: Option<f64>) -> String {
    tps.map_or_else(|| "–".into(), |t| format!("{t:.2} tokens/s"))
}

/// How the table is computed, in one paragraph.
pub const NOTE: &str = "Per replica (several --url): each replica's figures over the \
    responses of the requests sent to it, by the same rules as the case's (the (all replicas) \
    row), so that the replicas' requests, responses and output tokens add up to the case's. \
    Output throughput: a replica's output tokens over the case's time (the summed spans of its \
    rounds), so that the replicas' add up to the (all replicas) row. Which replica a request \
    went to is each record's `replica`; a session's requests all go to one replica under \
    --balance session-sticky.";

/// The sentences naming each replica whose requests did not all end `ok`, per case.
pub fn failures(summary: &Summary) -> Vec<String> {
    let mut lines = Vec::new();
    for case in &summary.cases {
        for r in case.replicas.iter().flatten().filter(|r| r.failed() > 0) {
            let first = r
                .first_error
                .as_deref()
                .map_or_else(String::new, |e| format!("; first: {e}"));
            lines.push(format!(
                "Replica {} failed {} of its {} requests in {}{first}. The other replicas' \
                 figures stand on their own rows.",
                name(summary, r.replica),
                r.failed(),
                r.counts.measured(),
                case.id
            ));
        }
    }
    lines
}

/// The page's section on replicas; none with one `--url`.
pub fn section(report: &super::Report) -> Option<Section<'_>> {
    let table = table(&report.summary);
    if table.is_empty() {
        return None;
    }
    let mut section = Section::new("replicas", "Per replica");
    let failures = failures(&report.summary);
    if !failures.is_empty() {
        section.push(Block::Banner {
            id: "replica-failed",
            text: failures.join(" "),
        });
    }
    section.push(Block::Table(table));
    section.note(NOTE);
    Some(section)
}
