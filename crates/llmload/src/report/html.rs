//! `report.html`: one self-contained page that opens offline — no script, no stylesheet, font or
//! image from elsewhere; the charts are inline SVG. It writes the page ([`super::page`]) as HTML,
//! a `<section id=…>` per section, every string escaped ([`super::markup::escape`]), and draws
//! the charts the other formats only name. This file only writes blocks.

use super::markup::escape;
use super::page::{Block, Chart, Section};
use super::Report;
use std::fmt::Write;

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\
h1{margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}\
.banner{background:#fff3cd;border:2px solid #d39e00;padding:.8em 1em;font-weight:600;margin:1em 0}\
table{border-collapse:collapse;margin:1em 0;font-size:.92em}th,td{border:1px solid #ccc;padding:.3em .5em;text-align:right}\
.wide{overflow-x:auto}@media (max-width:1000px){table{font-size:.8em}th,td{padding:.25em .35em}}\
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}td:first-child{overflow-wrap:anywhere}\
figure{margin:1.5em 0}figure svg{max-width:100%;border:1px solid #eee}figure svg:not(.fluid){height:auto}\
.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.3em 1.2em;padding:0;margin:.4em 0;font-size:.92em}\
.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-.1em}\
section{margin:0}figcaption{color:#444;font-size:.92em;margin-top:.4em}\
.note{color:#555;font-size:.92em}code{background:#f3f3f3;padding:0 .2em}\
.cards{display:flex;flex-wrap:wrap;gap:0 1.2em}.card caption{text-align:left;font-weight:600;overflow-wrap:anywhere;max-width:24em}\
.card th{text-align:left;font-weight:normal}";

/// Tables of more columns than this are written as a card per row: a page 800 px wide holds
/// nine columns of figures, not the eleven of "Where the time goes".
const CARD_COLUMNS: usize = 9;

/// Renders the whole page.
pub fn render(report: &Report) -> String {
    write(report, &super::sections(report))
}

/// `sections` as the page of `report`.
pub fn write(report: &Report, sections: &[Section<'_>]) -> String {
    let mut page = String::new();
    let _ = write_into(report, sections, &mut |piece| {
        page.push_str(piece);
        Ok(())
    });
    page
}

/// Writes the whole page of `report` through `emit`, a block at a time: no more than a block
/// (a chart's SVG at most) is held at once.
pub fn render_into(
    report: &Report,
    emit: &mut dyn FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    write_into(report, &super::sections(report), emit)
}

/// `sections` as the page of `report`, through `emit` a block at a time.
fn write_into(
    report: &Report,
    sections: &[Section<'_>],
    emit: &mut dyn FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut out = String::new();
    let title = format!("llmload report: {}", report.summary.attempt_id);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>llmload report</h1>\n",
        escape(&title)
    );
    for section in sections {
        let _ = writeln!(
            out,
            "<section id=\"{}\">\n<h2>{}</h2>",
            escape(section.id),
            escape(&section.heading)
        );
        for block in &section.blocks {
            write_block(&mut out, block);
            emit(&out)?;
            out.clear();
        }
        out.push_str("</section>\n");
    }
    let _ = write!(
        out,
        "<footer class=\"note\"><p>Made by llmload {} from <code>requests.jsonl</code>; \
         <code>llmload report DIR</code> rebuilds it. Every distribution of every case, with its \
         sample size, is in <code>cases.csv</code> beside this file.</p></footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
    );
    emit(&out)
}

/// One block as HTML.
fn write_block(out: &mut String, block: &Block<'_>) {
    match block {
        Block::Heading(text) => {
            let _ = writeln!(out, "<h3>{}</h3>", escape(text));
        }
        // A table in a box of the column's width that scrolls across, should it be wider.
        Block::Table(table) if table.width() > CARD_COLUMNS => out.push_str(&table.html_cards()),
        Block::Table(table) => {
            let _ = writeln!(out, "<div class=\"wide\">\n{}</div>", table.html());
        }
        Block::Paragraph(text) => {
            let _ = writeln!(out, "<p>{}</p>", escape(text));
        }
        Block::Note(text) => {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(text));
        }
        Block::List(items) => {
            out.push_str("<ul>\n");
            for item in items {
                let _ = writeln!(out, "<li>{}</li>", escape(item));
            }
            out.push_str("</ul>\n");
        }
        Block::Banner { id, text } => {
            let _ = writeln!(
                out,
                "<div class=\"banner\" id=\"{}\">{}</div>",
                escape(id),
                escape(text)
            );
        }
        Block::Absent { id, text } => {
            let _ = writeln!(
                out,
                "<p class=\"note\" id=\"{}\">{}</p>",
                escape(id),
                escape(text)
            );
        }
        Block::Chart(chart) => write_chart(out, chart),
    }
}

/// A chart drawn: its heading, its SVG (or why there is none) and its caption.
fn write_chart(out: &mut String, chart: &Chart<'_>) {
    let Some(figure) = (chart.draw)() else {
        return;
    };
    let id = chart
        .id
        .map_or_else(String::new, |id| format!(" id=\"{}\"", escape(id)));
    let _ = write!(out, "<figure{id}>\n<h3>{}</h3>\n", escape(&figure.title));
    match &figure.svg {
        Ok(svg) => out.push_str(svg),
        Err(e) => {
            let _ = write!(out, "<p class=\"note\">{}</p>", escape(&e.to_string()));
        }
    }
    let _ = write!(
        out,
        "\n<figcaption>{}</figcaption>\n</figure>\n",
        escape(&figure.caption)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn the_page_is_self_contained_with_one_svg_per_chart() {
        let html = render(&fixture::report());
        // Four charts, the bars of where the time goes, and no GPU chart without readings.
        assert_eq!(html.matches("<svg").count(), 5);
        assert_eq!(html.matches("<g class=\"phase-bar\">").count(), 4);
        assert_eq!(html.matches("<figure>").count(), 4);
        assert!(html.contains(
            "<h3>GPU telemetry over time</h3>\n<p class=\"note\" id=\"no-telemetry\">No GPU telemetry"
        ));
        assert!(!html.contains("<script"));
        assert!(!html.contains("<link"));
        assert!(!html.contains("src="));
        assert!(!html.contains("url("));
        assert!(!html.contains("@import"));
        // The only address on the page is the target's, in text.
        let rest = html.replace("http://127.0.0.1:9/&lt;sim&gt;", "");
        assert!(!rest.contains("http://") && !rest.contains("https://"));
    }

    #[test]
    fn strings_from_the_records_are_escaped() {
        let html = render(&fixture::report());
        assert!(!html.contains("<b>"));
        assert!(html.contains("&lt;b&gt;&quot;slow&quot;, really&lt;/b&gt; &amp; gone"));
        assert!(html.contains("tiny &amp; &quot;quoted&quot;"));
        assert!(html.contains("id=\"simulated\""));
    }

    #[test]
    fn only_complete_cases_enter_the_table() {
        let html = render(&fixture::report());
        let table =
            &html[html.find("<table>").expect("table")..html.find("</table>").expect("end")];
        assert_eq!(table.matches("<tr>").count(), 1 + 3);
        assert!(html.contains("Incomplete cases"));
    }
}
