//! The page's notes on the figures: the responses not checked against the server's counters,
//! each case whose tokens arrived in bursts or whose responses fell far short, and the
//! percentiles read from a histogram.

use super::page::Section;
use super::text::{case_sentences, histogram_note, unverified_note};
use super::Report;

/// The notes; none when there is nothing to say.
pub fn section(report: &Report) -> Option<Section<'_>> {
    let summary = &report.summary;
    let mut section = Section::new("notes", "Notes on the figures");
    section.paragraph(unverified_note(summary));
    for line in summary.cases.iter().flat_map(case_sentences) {
        section.paragraph(line);
    }
    section.paragraph(histogram_note(summary));
    section.unless_empty()
}
