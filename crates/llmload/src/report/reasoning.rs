//! The page's section on reasoning models: per case, how many responses reasoned before they
//! answered, their reasoning tokens, and the time to the first answer token.

use super::page::{Block, Section};
use super::Report;
use crate::fmt::seconds;
use crate::stats::Distribution;

/// A line per case whose responses reasoned; none when no case's did.
pub fn section(report: &Report) -> Option<Section<'_>> {
    let median = |d: Option<&Distribution>| d.map(|d| d.median);
    let lines: Vec<String> = report
        .summary
        .cases
        .iter()
        .filter_map(|case| {
            let r = case.reasoning.as_ref()?;
            Some(format!(
                "{}: {} of {} ok responses reasoned; reasoning tokens median {}; time to the \
                 first answer token median {} (n = {})",
                case.id,
                r.responses,
                case.counts.ok,
                median(r.tokens.as_ref()).map_or_else(|| "–".to_owned(), |t| format!("{t:.0}")),
                seconds(median(r.time_to_answer_ms.as_ref())),
                r.time_to_answer_ms.as_ref().map_or(0, |d| d.n),
            ))
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut section = Section::new("reasoning", "Reasoning");
    section.note(
        "Told apart by the stream; TTFT in the results counts the first token of either kind.",
    );
    section.push(Block::List(lines));
    Some(section)
}
