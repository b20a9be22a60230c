//! The page's section on incomplete cases: what each did complete, in a line, and where the
//! records are at hand, the distinct errors of its first failed requests.

use super::page::{Block, Section};
use super::partial::partial_figures;
use super::text::incomplete_line;
use super::{Report, FAILED_SHOWN};
use crate::record::{ErrorKind, Status};
use std::collections::BTreeSet;

/// The incomplete cases, listed apart from the results; none when every case completed.
pub fn section(report: &Report) -> Option<Section<'_>> {
    let incomplete: Vec<_> = report
        .summary
        .cases
        .iter()
        .filter(|c| !c.complete)
        .collect();
    if incomplete.is_empty() {
        return None;
    }
    let mut section = Section::new("incomplete", "Incomplete cases");
    section.note("Not in the results' tables; every request is in requests.jsonl.");
    let lines = incomplete.iter().map(|c| incomplete_line(c)).collect();
    section.push(Block::List(lines));
    let partial: Vec<String> = incomplete
        .iter()
        .filter_map(|c| partial_figures(c))
        .collect();
    if !partial.is_empty() {
        section.push(Block::Heading(
            "What they measured before they stopped".into(),
        ));
        section.push(Block::List(partial));
    }
    let errors: Vec<String> = incomplete
        .iter()
        .flat_map(|c| {
            errors(report, &c.id)
                .into_iter()
                .map(move |e| format!("{}: {e}", c.id))
        })
        .collect();
    if !errors.is_empty() {
        section.push(Block::Heading(format!(
            "Their errors (distinct, among each case's first {FAILED_SHOWN} failed requests)"
        )));
        section.push(Block::List(errors));
    }
    Some(section)
}

/// The distinct errors of a case's first failed requests (up to `FAILED_SHOWN`), at most five.
fn errors(report: &Report, id: &str) -> Vec<String> {
    let distinct: BTreeSet<String> = report
        .measured(id)
        .into_iter()
        .filter(|r| !matches!(r.status, Status::Ok | Status::Abandoned))
        .take(FAILED_SHOWN)
        .map(|r| {
            format!(
                "{}: {}",
                r.error_kind.map_or("?", ErrorKind::as_str),
                r.error.as_deref().unwrap_or("")
            )
        })
        .collect();
    distinct.into_iter().take(5).collect()
}
