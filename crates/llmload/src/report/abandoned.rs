//! The lines on streams the client abandoned as planned (`--cancel-after`): per case, how many
//! were drawn, abandoned and ended first, and the other responses' figures with an abandonment
//! during them and without.

use crate::fmt::seconds;
use crate::summary::abandoned::{Abandonment, Others};
use crate::summary::Summary;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The page's section on abandoned streams: a line per case with some, then what the server's
/// own counter says of them; none when no case had a request drawn to be abandoned.
pub fn section(report: &super::Report) -> Option<super::page::Section<'_>> {
    let summary = &report.summary;
    let lines: Vec<String> = summary
        .cases
        .iter()
        .filter_map(|case| Some(format!("{}: {}", case.id, line(case.abandoned.as_ref()?))))
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut section = super::page::Section::new("abandoned", "Abandoned streams");
    section.note(
        "--cancel-after: the client closed them as a user would; counted apart, in no figure \
         of the results.",
    );
    section.push(super::page::Block::List(lines));
    if let Some(delta) = summary
        .telemetry
        .as_ref()
        .and_then(|t| t.server_metrics.as_ref())
        .map(|m| &m.delta)
    {
        section.note(server_count(summary, delta));
    }
    Some(section)
}

/// Counters of generated tokens, as servers name them.
const GENERATED: [&str; 2] = [
    "vllm:generation_tokens_total",
    "llamacpp:tokens_predicted_total",
];

/// What the server's own generated-token counter says of the abandoned streams: its growth over
/// the run less what the other requests received leaves what it generated for the abandoned
/// ones, beside what they received and what they asked. Empty without such a counter.
fn server_count(summary: &Summary, delta: &BTreeMap<String, f64>) -> String {
    let Some((name, grown)) = GENERATED
        .iter()
        .find_map(|n| delta.get(*n).map(|v| (*n, *v)))
    else {
        return String::new();
    };
    let (mut others, mut received, mut asked, mut streams) = (0u64, 0u64, 0u64, 0u32);
    for case in &summary.cases {
        if let Some(a) = &case.abandoned {
            others += a.others_generated_tokens;
            received += a.tokens_received;
            asked += u64::from(a.abandoned) * u64::from(case.output_tokens);
            streams += a.abandoned;
        }
    }
    let grown = crate::num::to_u64(grown.round());
    let left = grown.saturating_sub(others);
    let asked = if asked > 0 {
        format!(", of {asked} they asked for")
    } else {
        String::new()
    };
    format!(
        "The server's own count (`{name}`, first to last scrape): {grown} tokens generated \
         during the run, {others} of them received by the other requests here (warmups \
         included), which leaves {left} for the {streams} abandoned streams{asked}; they \
         received {received} before their close (another client of the server during the run \
         would add its tokens to the count)."
    )
}

/// What one case's abandonment was, in words.
pub fn line(a: &Abandonment) -> String {
    let mut text = format!(
        "{} of {} drawn abandoned after {} ({} tokens received in all; closed at median {}), {} \
         ended before the point",
        a.abandoned,
        a.planned,
        a.after,
        a.tokens_received,
        seconds(a.closed_at_ms.as_ref().map(|d| d.median)),
        a.ended_first
    );
    let _ = write!(
        text,
        "; the other ok responses: {} with a stream abandoned while they were in flight, {} \
         without",
        group(&a.during),
        group(&a.clear)
    );
    if let Some(partial) = &a.partial {
        let _ = write!(text, " ({partial})");
    }
    text
}

/// A group's size and medians.
fn group(o: &Others) -> String {
    if o.n == 0 {
        return "none".into();
    }
    format!(
        "{} (TTFT median {}, TPOT median {})",
        o.n,
        seconds(o.ttft_ms.as_ref().map(|d| d.median)),
        seconds(o.tpot_ms.as_ref().map(|d| d.median))
    )
}
