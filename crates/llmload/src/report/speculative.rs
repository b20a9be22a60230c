//! Speculative decoding, per case: what the server's draft proposed and what its target model
//! accepted, from the server's own counts; a section only where some server reported drafting.

use super::capacity::percent;
use super::page::Section;
use super::table::{Cell, Table};
use crate::fmt::thousands;
use crate::summary::speculative::SpeculativeSummary;
use crate::summary::Summary;

/// The table: a row per case whose server reported its drafts.
pub fn table(summary: &Summary) -> Table {
    let mut table = Table::new([
        "Case",
        "Responses (n)",
        "Drafted tokens",
        "Accepted",
        "Acceptance (pooled)",
        "Per response: median [interval]",
        "Range",
    ]);
    for case in &summary.cases {
        let Some(s) = case.server.as_ref().and_then(|s| s.speculative.as_ref()) else {
            continue;
        };
        table.push(row(&case.id, s));
    }
    table
}

fn row(id: &str, s: &SpeculativeSummary) -> Vec<Cell> {
    let d = s.per_response.as_ref();
    let n = d.map(|d| d.n);
    let median = d.map_or_else(
        || "–".to_owned(),
        |d| {
            let ci = d.ci.as_ref().and_then(|ci| ci.median.as_ref());
            ci.map_or_else(
                || percent(d.median),
                |ci| {
                    format!(
                        "{} [{}, {}]",
                        percent(d.median),
                        percent(ci.low),
                        percent(ci.high)
                    )
                },
            )
        },
    );
    let range = d.map_or_else(
        || "–".to_owned(),
        |d| format!("{}–{}", percent(d.min), percent(d.max)),
    );
    vec![
        Cell::new(id.to_owned()),
        Cell::count(thousands(s.responses), s.responses),
        Cell::new(thousands(s.drafted)),
        Cell::new(thousands(s.accepted)),
        Cell::new(s.acceptance_rate.map_or_else(|| "–".to_owned(), percent)),
        Cell::figure(median, n),
        Cell::figure(range, n),
    ]
}

/// The page's section; none where no server reported drafting.
pub fn section(report: &super::Report) -> Option<Section<'_>> {
    let table = table(&report.summary);
    if table.is_empty() {
        return None;
    }
    let mut section = Section::new("speculative", "Speculative decoding");
    section.note(
        "The server's own counts for each ok response (llama-server's draft_n and \
         draft_n_accepted): the tokens its draft proposed and those its target model accepted. \
         The pooled acceptance is accepted ÷ drafted over all the case's responses; each \
         response's own share is a distribution beside it, with the interval of its median. \
         Nothing is claimed for a case whose server reported no drafting.",
    );
    section.push(super::page::Block::Table(table));
    let mixed: Vec<String> = report
        .summary
        .cases
        .iter()
        .filter_map(|c| {
            let s = c.server.as_ref()?.speculative.as_ref()?;
            (s.without > 0).then(|| {
                format!(
                    "{}: {} ok responses reported the server's timings without drafts; they \
                     are not in its figures.",
                    c.id, s.without
                )
            })
        })
        .collect();
    if !mixed.is_empty() {
        section.push(super::page::Block::List(mixed));
    }
    Some(section)
}
