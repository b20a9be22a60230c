//! The server's side, per case: the table of `report.md` that puts the medians of what the
//! server said of its own responses (queue, prefill, its TTFT) beside the client's TTFT, and the
//! delivery between them.

use super::phases::ms;
use super::table::{Cell, Table};
use crate::fmt::thousands;
use crate::stats::Distribution;
use crate::summary::Summary;

/// The table of the server's side, a row per case whose server reported its timings; no row
/// when none did.
pub fn table(summary: &Summary) -> Table {
    let mut table = Table::new([
        "Case",
        "Responses (n)",
        "Source",
        "Queue",
        "Prefill",
        "Server TTFT",
        "Delivery",
        "Client TTFT",
        "Server TTFT > client",
    ]);
    let median = |d: Option<&Distribution>| Cell::figure(ms(d.map(|d| d.median)), d.map(|d| d.n));
    for case in &summary.cases {
        let Some(s) = &case.server else {
            continue;
        };
        let sources: Vec<&str> = s.sources.iter().map(|source| source.name()).collect();
        table.push([
            Cell::new(case.id.clone()),
            Cell::count(thousands(s.responses), s.responses),
            Cell::new(sources.join(", ")),
            median(s.queue_ms.as_ref()),
            median(s.prefill_ms.as_ref()),
            median(s.ttft_ms.as_ref()),
            median(s.delivery_ms.as_ref()),
            median(case.ttft_ms.as_ref()),
            Cell::count(thousands(s.ttft_exceeds_client), s.ttft_exceeds_client),
        ]);
    }
    table
}
