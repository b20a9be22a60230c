//! What a case says in the words the summary uses, wherever it is said: its requests counted
//! as `summary.json` counts them ("13 ok, 0 failed, 119 cancelled"), and for a case that did
//! not complete (a stop, Ctrl-C) the figures of the `ok` responses it did get, marked partial,
//! rather than nothing.

use crate::fmt::{number, seconds};
use crate::summary::{CaseSummary, Counts};
use std::fmt::Write as _;

/// A case's requests as the summary counts them: "13 ok, 0 invalid, 0 failed, 119 cancelled",
/// with the abandoned ones where there are any (the short ones have their own words,
/// [`super::text::short_words`]).
pub fn count_words(c: &Counts) -> String {
    let mut words = format!(
        "{} ok, {} invalid, {} failed, {} cancelled",
        c.ok, c.invalid, c.error, c.cancelled
    );
    if c.abandoned > 0 {
        let _ = write!(words, ", {} abandoned as planned", c.abandoned);
    }
    words
}

/// The partial figures of a case that did not complete but got `ok` responses: "partial, over
/// the 13 ok responses before the stop: TTFT p50 0.21 s, p99 1.30 s; complete response p50
/// 2.10 s; 41.5 tokens/s"; `None` for a complete case or one without an `ok` response. A
/// results table that lists complete cases only shows this line (or a row marked partial)
/// for each such case, so that what was measured before a stop is not lost.
pub fn partial_figures(case: &CaseSummary) -> Option<String> {
    if case.complete || case.counts.ok == 0 {
        return None;
    }
    let mut parts = Vec::new();
    let ttft = case.ttft_ms.as_ref().filter(|_| case.pooling.is_none());
    if let Some(d) = ttft {
        parts.push(format!(
            "TTFT p50 {}, p99 {}",
            seconds(Some(d.median)),
            seconds(Some(d.p99))
        ));
    }
    if let Some(d) = &case.e2e_ms {
        parts.push(format!(
            "complete response p50 {}, p99 {}",
            seconds(Some(d.median)),
            seconds(Some(d.p99))
        ));
    }
    let tokens = match &case.load {
        Some(load) => Some(load.throughput_tps),
        None => case.throughput_tps.as_ref().map(|t| t.mean),
    };
    if let Some(tps) = tokens.filter(|t| *t > 0.0) {
        parts.push(format!("{} tokens/s", number(tps)));
    }
    let figures = if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join("; "))
    };
    Some(format!(
        "{} (incomplete, partial figures over its {} ok responses){figures}",
        case.id, case.counts.ok
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counts_are_the_summarys_words() {
        let counts = Counts {
            ok: 13,
            cancelled: 119,
            ..Counts::default()
        };
        assert_eq!(
            count_words(&counts),
            "13 ok, 0 invalid, 0 failed, 119 cancelled"
        );
        let counts = Counts {
            abandoned: 2,
            ..counts
        };
        assert!(count_words(&counts).ends_with(", 119 cancelled, 2 abandoned as planned"));
    }

    #[test]
    fn an_interrupted_case_with_ok_responses_keeps_their_figures_marked_partial() {
        let report = crate::fixture::report();
        let mut case = report.summary.cases[0].clone();
        assert_eq!(partial_figures(&case), None, "complete: in the tables");
        case.complete = false;
        case.counts.cancelled = 3;
        let line = partial_figures(&case).expect("ok responses before the stop");
        let ttft = case.ttft_ms.as_ref().expect("TTFT");
        assert!(
            line.starts_with(&format!(
                "{} (incomplete, partial figures over its {} ok responses): TTFT p50 {}",
                case.id,
                case.counts.ok,
                seconds(Some(ttft.median))
            )),
            "{line}"
        );
        case.counts.ok = 0;
        assert_eq!(partial_figures(&case), None, "nothing to show");
    }
}
