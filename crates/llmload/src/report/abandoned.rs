//! The lines on streams the client abandoned as planned (`--cancel-after`): per case, how many
//! were drawn, abandoned and ended first, and the other responses' figures with an abandonment
//! during them and without.

use crate::fmt::seconds;
use crate::summary::abandoned::{Abandonment, Others};
use crate::summary::Summary;
use std::fmt::Write as _;

/// One line per case with abandoned streams, each starting with "- "; empty when no case had a
/// request drawn to be abandoned.
pub fn section(summary: &Summary) -> String {
    let mut out = String::new();
    for case in &summary.cases {
        let Some(a) = &case.abandoned else {
            continue;
        };
        if out.is_empty() {
            out.push_str(
                "\nAbandoned streams (--cancel-after: the client closed them as a user would; \
                 counted apart, in no figure above):\n",
            );
        }
        let _ = writeln!(out, "- {}: {}", case.id, line(a));
    }
    out
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
