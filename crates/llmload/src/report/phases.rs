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
        .filter_map(|c| c.phases.as_deref().map(|p| (c, p)))
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

/// Geometry of the page's bar chart. Across, in percent of its width, so that the bars fill the
/// column at any window width while the text keeps its size; down, in px.
const LEFT: f64 = 1.0;
const SPAN: f64 = 98.0;
/// Text size, px, at every window width (the chart is never scaled).
const FONT: f64 = 14.0;
/// A line of a case id, px.
const LINE: f64 = 17.0;
const TOP: f64 = 24.0;
const BAR: f64 = 18.0;
/// Below a bar, before the next case's id, px.
const GAP: f64 = 10.0;
/// At [`FONT`], this many characters fit a line of the chart in an 800 px window: longer case
/// ids take more lines.
const ID_CHARS: usize = 72;

/// The chart of `report.html` as an `<svg>` element: a stacked bar per case under its id, the
/// send at a common line; none when no case's records carry phases. Its legend is [`legend`].
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
    let scale = Scale {
        per_ms: SPAN / (before + after).max(1e-9),
        sent_x: LEFT + before * SPAN / (before + after).max(1e-9),
    };
    let mut rows = String::new();
    let mut bottom = TOP;
    for bar in &bars {
        bottom = row(&mut rows, bar, bottom, scale);
    }
    let below = bottom + 8.0;
    let mut svg = format!(
        "<svg class=\"fluid\" width=\"100%\" height=\"{:.0}\" font-family=\"sans-serif\" \
         font-size=\"{FONT}\">\n\
         <text class=\"sent\" x=\"{:.2}%\" dx=\"4\" y=\"{:.1}\">sent</text>\n{rows}",
        below + 10.0,
        scale.sent_x,
        TOP - 8.0
    );
    // The scale's ends, one at each side, so that they never meet: the longest setup before
    // the send, the longest last token after it.
    if before > 0.0 {
        let _ = write!(
            svg,
            "<text class=\"scale\" x=\"{LEFT}%\" y=\"{below:.1}\">setup: up to {} before the \
             send</text>",
            ms(Some(before)),
        );
    }
    let _ = write!(
        svg,
        "<text class=\"scale\" x=\"{:.0}%\" y=\"{below:.1}\" text-anchor=\"end\">{} after the \
         send</text>\n</svg>",
        LEFT + SPAN,
        ms(Some(after)),
    );
    Some(svg)
}

/// Across the chart: percent of its width per ms, and where the send is, percent.
#[derive(Clone, Copy)]
struct Scale {
    per_ms: f64,
    sent_x: f64,
}

/// Writes `bar`'s row from `y` down: its case id, whole, in as many lines as it needs, then its
/// segments and the send across them. Returns where the next row starts.
fn row(svg: &mut String, bar: &Bar, y: f64, scale: Scale) -> f64 {
    let top = open_row(svg, "phase-bar", bar.id, y);
    // The setup ends at the send; the marks start there.
    let setup_start = scale.sent_x - (bar.setup[0] + bar.setup[1]) * scale.per_ms;
    let mut spans = vec![
        (0, setup_start, bar.setup[0]),
        (1, setup_start + bar.setup[0] * scale.per_ms, bar.setup[1]),
    ];
    let mut from = 0.0;
    for (k, mark) in bar.marks.iter().enumerate() {
        spans.push((k + 2, scale.sent_x + from * scale.per_ms, mark - from));
        from = *mark;
    }
    for (k, x, length) in spans {
        let (class, name, colour) = SEGMENTS[k];
        let _ = write!(
            svg,
            "<rect class=\"{class}\" x=\"{x:.2}%\" y=\"{top:.1}\" width=\"{:.2}%\" \
             height=\"{BAR}\" fill=\"{colour}\"><title>{} {name}: {}</title></rect>",
            length * scale.per_ms,
            escape(bar.id),
            ms(Some(length))
        );
    }
    // The send, across the bar only, so that it crosses no case id.
    let _ = writeln!(
        svg,
        "<line x1=\"{x:.2}%\" y1=\"{:.1}\" x2=\"{x:.2}%\" y2=\"{:.1}\" stroke=\"#222\" \
         stroke-dasharray=\"4 3\"/></g>",
        top - 3.0,
        top + BAR + 3.0,
        x = scale.sent_x,
    );
    top + BAR + GAP
}

/// Opens a bar's group of `class` at `y` with its case `id` above it, whole, in as many lines as
/// it needs; returns where the bar's top is.
pub(super) fn open_row(svg: &mut String, class: &str, id: &str, y: f64) -> f64 {
    let lines = id_lines(id);
    let _ = write!(
        svg,
        "<g class=\"{class}\"><text class=\"case-id\" y=\"{y:.1}\">"
    );
    for line in &lines {
        let _ = write!(
            svg,
            "<tspan x=\"{LEFT}%\" dy=\"{LINE}\">{}</tspan>",
            escape(line)
        );
    }
    svg.push_str("</text>");
    y + LINE * lines.len() as f64 + 6.0
}

/// `id` in lines of at most [`ID_CHARS`] characters, each broken after a `-`, `/` or `,` where
/// one is near the end of the line; every character kept, in order.
fn id_lines(id: &str) -> Vec<String> {
    let mut rest: Vec<char> = id.chars().collect();
    let mut lines = Vec::new();
    while rest.len() > ID_CHARS {
        let at = rest[ID_CHARS / 2..ID_CHARS]
            .iter()
            .rposition(|c| matches!(c, '-' | '/' | ','))
            .map_or(ID_CHARS, |i| ID_CHARS / 2 + i + 1);
        lines.push(rest.drain(..at).collect());
    }
    lines.push(rest.into_iter().collect());
    lines
}

/// The chart's legend, an HTML list that wraps into rows: an entry per segment, in the order
/// of the bar.
pub fn legend() -> String {
    let mut out = String::from("<ul class=\"legend\">");
    for (class, name, colour) in SEGMENTS {
        let _ = write!(
            out,
            "<li class=\"legend-{class}\"><span class=\"swatch\" style=\"background:{colour}\">\
             </span>{}</li>",
            escape(name)
        );
    }
    out.push_str("</ul>");
    out
}

/// The page's section on where the time goes: the table of medians and the chart of a stacked
/// bar per case; none when no case's records carry phases.
pub fn section(report: &super::Report) -> Option<super::page::Section<'_>> {
    let table = table(&report.summary);
    if table.is_empty() {
        return None;
    }
    let mut section = super::page::Section::new("phases", "Where the time goes");
    section.note(
        "Medians over the ok responses; connect and TLS over the new connections, before the \
         send and not part of TTFT; the rest from sent.",
    );
    section.push(super::page::Block::Table(table));
    section.push(super::page::Block::Chart(super::page::Chart {
        id: Some("phases-bars"),
        title: "Where the time goes, per case".into(),
        draw: Box::new(move || {
            let bars = bars(&report.summary)?;
            Some(super::plot::Figure {
                title: "Where the time goes, per case".into(),
                svg: Ok(format!("{}\n{bars}", legend())),
                caption: "Per case, the medians of the ok responses: left of the line, a new \
                connection's setup (connect, then the TLS handshake; medians over the new \
                connections), done before the request is sent and never part of TTFT; right of \
                it, from the send: the response head, the first event, the first token (TTFT) \
                and the last token. Hover over a segment for its length; the table above and \
                summary.json give the figures with their sample sizes."
                    .into(),
            })
        }),
    }));
    Some(section)
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
                    r[start..start + r[start..].find('%').expect("end")]
                        .parse()
                        .expect("a number")
                })
                .collect();
            assert_eq!(xs.len(), SEGMENTS.len());
            assert!(xs.windows(2).all(|w| w[0] <= w[1]), "{xs:?}");
        }
        assert!(page.contains(">sent</text>"));
        let legend = legend();
        for (class, name, _) in SEGMENTS {
            assert!(
                legend.contains(&format!("<li class=\"legend-{class}\">")),
                "{class}"
            );
            assert!(legend.contains(&escape(name)), "{name}");
        }
    }

    #[test]
    fn a_long_case_id_is_written_whole_in_lines_that_fit() {
        assert_eq!(id_lines("in64-c2-out4"), ["in64-c2-out4"]);
        let id = format!("in{}-c4-out16", "choice:32@0.25/".repeat(8));
        let lines = id_lines(&id);
        assert!(lines.len() > 1, "{lines:?}");
        assert!(
            lines.iter().all(|l| l.chars().count() <= ID_CHARS),
            "{lines:?}"
        );
        assert_eq!(lines.concat(), id, "every character, in order");
        assert!(
            lines[0].ends_with('/'),
            "broken after a separator: {lines:?}"
        );
        let unbroken = "x".repeat(2 * ID_CHARS + 1);
        assert_eq!(id_lines(&unbroken).concat(), unbroken);
        let mut summary = fixture::report().summary;
        summary.cases[0].id.clone_from(&id);
        let page = bars(&summary).unwrap_or_default();
        for line in &lines {
            assert!(
                page.contains(&format!(">{}</tspan>", escape(line))),
                "{line}"
            );
        }
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
