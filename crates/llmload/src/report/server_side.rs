//! The server's side, per case: the table of `report.md` that puts the medians of what the
//! server said of its own responses (queue, prefill, its TTFT) beside the client's TTFT, and the
//! delivery between them; and the client's TTFT cut into its parts (connection and write,
//! queue, prefill, residual), as a table and as the stacked bars of `report.html`.

use super::markup::escape;
use super::phases::ms;
use super::table::{Cell, Table};
use crate::fmt::thousands;
use crate::stats::Distribution;
use crate::summary::server_side::TtftParts;
use crate::summary::Summary;
use std::fmt::Write as _;

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
        "Prefill per prompt token",
        "Decode per token",
    ]);
    let median = |d: Option<&Distribution>| Cell::figure(ms(d.map(|d| d.median)), d.map(|d| d.n));
    // The server's pace: fractions of a ms, with three decimals.
    let pace = |d: Option<&Distribution>| {
        Cell::figure(
            d.map_or_else(|| "–".to_owned(), |d| format!("{:.3} ms", d.median)),
            d.map(|d| d.n),
        )
    };
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
            pace(
                s.pace
                    .as_ref()
                    .and_then(|p| p.prefill_ms_per_token.as_ref()),
            ),
            pace(s.pace.as_ref().and_then(|p| p.decode_ms_per_token.as_ref())),
        ]);
    }
    table
}

/// The parts of the TTFT, in the order a request passes them: name, colour, the part's mean.
fn parts(p: &TtftParts) -> [(&'static str, &'static str, Option<f64>); 4] {
    [
        ("Connection and write", "#8da0cb", p.write_ms),
        ("Server queue", "#e78ac3", p.queue_ms),
        ("Prefill", "#66c2a5", p.prefill_ms),
        ("Residual", "#bbbbbb", Some(p.residual_ms)),
    ]
}

/// The cases whose parts of the TTFT are known, with them.
fn with_parts(summary: &Summary) -> impl Iterator<Item = (&str, &TtftParts)> {
    summary.cases.iter().filter_map(|c| {
        c.server
            .as_ref()
            .and_then(|s| s.ttft_parts.as_ref())
            .map(|p| (c.id.as_str(), p))
    })
}

/// The table of the TTFT's parts, a row per case whose server reported its timings: the means
/// of each part over the same responses, which add up to the client's mean TTFT.
pub fn parts_table(summary: &Summary) -> Table {
    let mut table = Table::new([
        "Case",
        "Responses (n)",
        "Connection and write",
        "Server queue",
        "Prefill",
        "Residual",
        "Client TTFT (mean)",
    ]);
    for (id, p) in with_parts(summary) {
        let n = Some(crate::num::index(u64::from(p.responses)));
        let mut row = vec![
            Cell::new(id.to_owned()),
            Cell::count(thousands(p.responses), p.responses),
        ];
        row.extend(parts(p).iter().map(|&(_, _, v)| Cell::figure(ms(v), n)));
        row.push(Cell::figure(ms(Some(p.client_ttft_ms)), n));
        table.push(row);
    }
    table
}

/// Why a part is missing, a line per case and part.
pub fn parts_notes(summary: &Summary) -> Vec<String> {
    with_parts(summary)
        .flat_map(|(id, p)| p.unavailable.iter().map(move |u| format!("{id}: {u}.")))
        .collect()
}

/// The chart of the TTFT's parts: a stacked bar per case, its parts' means end to end, the
/// residual last; `None` when no case's server reported its timings.
pub fn parts_bars(summary: &Summary) -> Option<String> {
    let rows: Vec<(&str, &TtftParts)> = with_parts(summary).collect();
    let widest = rows
        .iter()
        .map(|(_, p)| {
            parts(p)
                .iter()
                .filter_map(|s| s.2)
                .map(|v| v.max(0.0))
                .sum::<f64>()
        })
        .fold(0.0, f64::max);
    if rows.is_empty() || widest <= 0.0 {
        return None;
    }
    let (left, span, bar) = (1.0, 98.0, 18.0);
    let mut body = String::new();
    let mut y = 6.0;
    for (id, p) in &rows {
        let top = super::phases::open_row(&mut body, "ttft-bar", id, y);
        let mut x = left;
        for (name, colour, value) in parts(p) {
            let Some(v) = value.filter(|v| *v > 0.0) else {
                continue;
            };
            let width = v / widest * span;
            let _ = write!(
                body,
                "<rect class=\"ttft-part\" x=\"{x:.2}%\" y=\"{top:.1}\" width=\"{width:.2}%\" \
                 height=\"{bar}\" fill=\"{colour}\"><title>{} {name}: {}</title></rect>",
                escape(id),
                ms(Some(v))
            );
            x += width;
        }
        body.push_str("</g>\n");
        y = top + bar + 10.0;
    }
    let mut legend = String::from("<ul class=\"legend\">");
    for (name, colour, _) in parts(rows[0].1) {
        let _ = write!(
            legend,
            "<li><span class=\"swatch\" style=\"background:{colour}\"></span>{name}</li>"
        );
    }
    legend.push_str("</ul>");
    Some(format!(
        "{legend}\n<svg class=\"fluid\" width=\"100%\" height=\"{:.0}\" font-family=\"sans-serif\" \
         font-size=\"14\">\n{body}<text class=\"scale\" x=\"{:.0}%\" y=\"{:.1}\" \
         text-anchor=\"end\">{} at full width</text>\n</svg>",
        y + 14.0,
        left + span,
        y + 4.0,
        ms(Some(widest))
    ))
}

/// The page's section on the server's own account: its table, the TTFT part by part (a table,
/// why a part is missing, and the chart of stacked bars); none when no case's server reported
/// its timings.
pub fn section(report: &super::Report) -> Option<super::page::Section<'_>> {
    use super::page::{Block, Chart, Section};
    let summary = &report.summary;
    let table = table(summary);
    if table.is_empty() {
        return None;
    }
    let mut section = Section::new("server", "The server's own account");
    section.note(
        "Medians over the ok responses whose server reported its timings, on the server's \
         clock; delivery is the client's TTFT less the server's, over the responses whose \
         server TTFT is within it. The server's own pace: prefill per prompt token it \
         processed and decode per generated token after the first, medians of each response's \
         ratio: the reference a comparison holds the client's figures against.",
    );
    section.push(Block::Table(table));
    let parts = parts_table(summary);
    if parts.is_empty() {
        return Some(section);
    }
    section.table("The TTFT part by part", parts);
    section.note(
        "Means over the same responses, so that they add up to the client's mean TTFT: \
         connection and write from the client's stamps, queue and prefill from the server's, \
         and the residual, the client's TTFT less those: the server's time before it counts \
         and the first token's way back.",
    );
    let notes: Vec<String> = parts_notes(summary)
        .into_iter()
        .map(|note| format!("Unavailable: {note}"))
        .collect();
    if !notes.is_empty() {
        section.push(Block::List(notes));
    }
    section.push(Block::Chart(Chart {
        id: Some("ttft-parts-bars"),
        title: "The TTFT part by part, per case".into(),
        draw: Box::new(move || {
            let bars = parts_bars(&report.summary)?;
            Some(super::plot::Figure {
                title: "The TTFT part by part, per case".into(),
                svg: Ok(bars),
                caption: "Per case, the means over the ok responses whose server reported its \
                timings, end to end: the connection and the request's write (the client's \
                stamps), the server's queue and prefill (the server's clock), and the residual, \
                the client's TTFT less those. Together they make the client's mean TTFT. A part \
                the server does not report is absent and its time is in the residual."
                    .into(),
            })
        }),
    }));
    Some(section)
}
