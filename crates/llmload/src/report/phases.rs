//! Where the time goes, per case: the table of `report.md`, and the chart of `report.html`, a
//! stacked bar per case of the median phases, a new connection's setup drawn apart, before the
//! send.
//!
//! The bar stacks the medians of marks that every response passes in order (head ≤ first event
//! ≤ first token ≤ last token, all from `sent`), so over the same responses each segment is
//! non-negative; a segment is drawn from the previous mark at the least, never backwards.

use super::markup::escape;
use super::table::{Cell, Table};
use crate::fmt::thousands;
use crate::stats::Distribution;
use crate::summary::phases::PhaseSummary;
use crate::summary::{CaseSummary, Summary};
use std::fmt::Write;

/// The cases whose responses carry their phases, with them.
fn cases(summary: &Summary) -> impl Iterator<Item = (&CaseSummary, &PhaseSummary)> {
    summary
        .cases
        .iter()
        .filter_map(|c| c.phases.as_ref().map(|p| (c, p)))
}

fn median(d: Option<&Distribution>) -> Option<f64> {
    d.map(|d| d.median)
}

/// A time in ms as the phases table writes it: microseconds show below a millisecond.
pub fn ms(value: Option<f64>) -> String {
    match value {
        None => "–".into(),
        Some(v) if v < 1.0 => format!("{v:.3} ms"),
        Some(v) if v < 100.0 => format!("{v:.1} ms"),
        Some(v) => format!("{:.2} s", v / 1e3),
    }
}

/// The table of where the time goes, a row per case whose records carry phases: the responses
/// and connections, then the medians of each phase; no row when no case's records carry phases.
pub fn table(summary: &Summary) -> Table {
    let mut table = Table::new([
        "Case",
        "Responses (n)",
        "New connections",
        "Kept-alive",
        "Connect",
        "TLS",
        "Request written",
        "Response head",
        "First event",
        "First token",
        "Last token",
    ]);
    let phase = |d: Option<&Distribution>| Cell::figure(ms(median(d)), d.map(|d| d.n));
    for (case, p) in cases(summary) {
        table.push([
            Cell::new(case.id.clone()),
            Cell::count(thousands(p.responses), p.responses),
            Cell::count(thousands(p.new_connections), p.new_connections),
            Cell::count(thousands(p.reused_connections), p.reused_connections),
            phase(p.connect_ms.as_ref()),
            phase(p.tls_ms.as_ref()),
            phase(p.write_ms.as_ref()),
            phase(p.head_ms.as_ref()),
            phase(p.first_event_ms.as_ref()),
            phase(case.ttft_ms.as_ref()),
            phase(p.last_token_ms.as_ref()),
        ]);
    }
    table
}

/// One segment of a bar: its class, its name in the legend, and its colour.
const SEGMENTS: [(&str, &str, &str); 6] = [
    ("connect", "connect (new connections)", "#8c8c8c"),
    ("tls", "TLS handshake (new connections)", "#bcbd22"),
    ("head", "sent → response head", "#1f77b4"),
    ("event", "response head → first event", "#9edae5"),
    ("first-token", "first event → first token", "#ff7f0e"),
    ("decode", "first token → last token", "#2ca02c"),
];

/// A case's bar: the setup before the send (connect, TLS), then the marks after it, ms.
struct Bar<'a> {
    id: &'a str,
    setup: [f64; 2],
    marks: [f64; 4],
}

impl Bar<'_> {
    fn of<'a>(case: &'a CaseSummary, p: &PhaseSummary) -> Bar<'a> {
        let mut marks = [
            median(p.head_ms.as_ref()),
            median(p.first_event_ms.as_ref()),
            median(case.ttft_ms.as_ref()),
            median(p.last_token_ms.as_ref()),
        ]
        .map(|m| m.unwrap_or(0.0));
        for i in 1..marks.len() {
            marks[i] = marks[i].max(marks[i - 1]);
        }
        Bar {
            id: &case.id,
            setup: [
                median(p.connect_ms.as_ref()).unwrap_or(0.0),
                median(p.tls_ms.as_ref()).unwrap_or(0.0),
            ],
            marks,
        }
    }
}

/// Geometry of the page's bar chart, px.
const WIDTH: f64 = 900.0;
const LABEL: f64 = 180.0;
const ROW: f64 = 30.0;
const TOP: f64 = 50.0;

/// The chart of `report.html` as an `<svg>` element: a stacked bar per case, the send at a
/// common line; none when no case's records carry phases.
pub fn bars(summary: &Summary) -> Option<String> {
    let bars: Vec<Bar> = cases(summary).map(|(c, p)| Bar::of(c, p)).collect();
    if bars.is_empty() {
        return None;
    }
    let before = bars
        .iter()
        .map(|b| b.setup[0] + b.setup[1])
        .fold(0.0, f64::max);
    let after = bars.iter().map(|b| b.marks[3]).fold(0.0, f64::max);
    let scale = (WIDTH - LABEL - 20.0) / (before + after).max(1e-9);
    let sent_x = LABEL + before * scale;
    let height = TOP + ROW * bars.len() as f64 + 30.0;
    let mut svg = format!(
        "<svg viewBox=\"0 0 {WIDTH} {height}\" \
         width=\"{WIDTH}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n"
    );
    legend(&mut svg);
    for (row, bar) in bars.iter().enumerate() {
        let y = TOP + ROW * row as f64;
        let _ = write!(
            svg,
            "<g class=\"phase-bar\"><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LABEL - 8.0,
            y + 14.0,
            escape(bar.id)
        );
        // The setup ends at the send; the marks start there.
        let setup_start = sent_x - (bar.setup[0] + bar.setup[1]) * scale;
        let mut spans = vec![
            (0, setup_start, bar.setup[0]),
            (1, setup_start + bar.setup[0] * scale, bar.setup[1]),
        ];
        let mut from = 0.0;
        for (k, mark) in bar.marks.iter().enumerate() {
            spans.push((k + 2, sent_x + from * scale, mark - from));
            from = *mark;
        }
        for (k, x, length) in spans {
            let (class, name, colour) = SEGMENTS[k];
            let _ = write!(
                svg,
                "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"18\" \
                 fill=\"{colour}\"><title>{} {name}: {}</title></rect>",
                length * scale,
                escape(bar.id),
                ms(Some(length))
            );
        }
        svg.push_str("</g>\n");
    }
    let bottom = TOP + ROW * bars.len() as f64;
    let _ = write!(
        svg,
        "<line x1=\"{sent_x:.1}\" y1=\"{:.1}\" x2=\"{sent_x:.1}\" y2=\"{bottom:.1}\" \
         stroke=\"#222\" stroke-dasharray=\"4 3\"/>\
         <text x=\"{sent_x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">sent</text>\
         <text x=\"{LABEL}\" y=\"{:.1}\">−{}</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n</svg>",
        TOP - 6.0,
        bottom + 16.0,
        bottom + 16.0,
        ms(Some(before)),
        WIDTH - 20.0,
        bottom + 16.0,
        ms(Some(after)),
    );
    Some(svg)
}

fn legend(svg: &mut String) {
    let mut x = 10.0;
    for (class, name, colour) in SEGMENTS {
        let _ = write!(
            svg,
            "<rect class=\"legend-{class}\" x=\"{x:.1}\" y=\"8\" width=\"12\" height=\"12\" \
             fill=\"{colour}\"/><text x=\"{:.1}\" y=\"18\">{}</text>",
            x + 16.0,
            escape(name)
        );
        x += 22.0 + 6.5 * name.chars().count() as f64;
    }
    svg.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn each_case_with_phases_has_a_bar_of_every_segment_in_the_order_of_the_marks() {
        let summary = fixture::report().summary;
        let page = bars(&summary).unwrap_or_default();
        let with_phases = summary.cases.iter().filter(|c| c.phases.is_some()).count();
        assert!(with_phases > 0, "the fixture carries phases");
        assert_eq!(page.matches("<g class=\"phase-bar\">").count(), with_phases);
        for (class, _, _) in SEGMENTS {
            assert_eq!(
                page.matches(&format!("<rect class=\"{class}\"")).count(),
                with_phases,
                "{class}"
            );
        }
        // Within a bar, the segments follow each other from left to right.
        for bar in page.split("<g class=\"phase-bar\">").skip(1) {
            let xs: Vec<f64> = bar
                .split("<rect class=")
                .skip(1)
                .map(|r| {
                    let start = r.find("x=\"").expect("x") + 3;
                    r[start..start + r[start..].find('"').expect("end")]
                        .parse()
                        .expect("a number")
                })
                .collect();
            assert_eq!(xs.len(), SEGMENTS.len());
            assert!(xs.windows(2).all(|w| w[0] <= w[1]), "{xs:?}");
        }
        assert!(page.contains(">sent</text>"));
    }

    #[test]
    fn without_phases_there_is_no_section() {
        let mut summary = fixture::report().summary;
        for case in &mut summary.cases {
            case.phases = None;
        }
        assert_eq!(bars(&summary), None);
        assert!(table(&summary).is_empty());
    }

    #[test]
    fn the_table_has_a_row_per_case_with_phases() {
        let summary = fixture::report().summary;
        let table = table(&summary).markdown();
        let rows = table.lines().filter(|l| l.starts_with("| in")).count();
        assert_eq!(
            rows,
            summary.cases.iter().filter(|c| c.phases.is_some()).count()
        );
    }
}
