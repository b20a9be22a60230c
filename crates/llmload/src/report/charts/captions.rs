//! The sentences of the charts' captions that count: how many samples a point rests on, in the
//! unit it was measured over (responses; rounds of closed rounds; the one measurement window of
//! a continuous or open loop), and what was left out, each noun in its number.

use crate::report::plot::{count, Noun};
use crate::summary::{CaseSummary, Summary};
use std::fmt::Write;

pub(super) const RESPONSE: Noun = ("response", "responses");
pub(super) const ROUND: Noun = ("round", "rounds");
pub(super) const CASE: Noun = ("case", "cases");
pub(super) const POINT: Noun = ("point", "points");

/// "n = 3 rounds", "n = 1 round" or "n = 2–8 responses" over the values `ns`.
pub(super) fn sizes(ns: impl Iterator<Item = usize>, noun: Noun) -> String {
    let ns: Vec<usize> = ns.collect();
    match (ns.iter().min(), ns.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("n = {}", count(*lo, noun)),
        (Some(lo), Some(hi)) => format!("n = {lo}–{hi} {}", noun.1),
        _ => "no samples".into(),
    }
}

/// The responses each point's TTFT rests on, and the cases: "n = 2–8 responses (3 cases)".
pub(super) fn responses(cases: &[&CaseSummary]) -> String {
    format!(
        "{} ({})",
        sizes(
            cases.iter().filter_map(|c| c.ttft_ms.as_ref()).map(|d| d.n),
            RESPONSE
        ),
        count(cases.len(), CASE)
    )
}

/// What a point's throughput rests on: the rounds of closed rounds, the one measurement
/// window (of n responses) of continuous and open loops.
pub(super) fn throughput_samples(cases: &[&CaseSummary]) -> String {
    let rounds: Vec<usize> = cases
        .iter()
        .filter(|c| c.load.is_none())
        .filter_map(|c| c.throughput_tps.as_ref().map(|t| t.n))
        .collect();
    let windows: Vec<usize> = cases
        .iter()
        .filter(|c| c.load.is_some())
        .map(|c| c.counts.ok as usize)
        .collect();
    let window = |ns: Vec<usize>| {
        format!(
            "one measurement window ({})",
            sizes(ns.into_iter(), RESPONSE)
        )
    };
    match (rounds.is_empty(), windows.is_empty()) {
        (false, true) => sizes(rounds.into_iter(), ROUND),
        (true, false) => window(windows),
        (false, false) => format!(
            "closed rounds: {}; continuous and open loops: {}",
            sizes(rounds.into_iter(), ROUND),
            window(windows)
        ),
        (true, true) => "no throughput figure".into(),
    }
}

/// How each case's throughput was taken, for the kinds of load among `cases`.
pub(super) fn throughput_method(cases: &[&CaseSummary]) -> &'static str {
    let rounds = cases.iter().any(|c| c.load.is_none());
    let windows = cases.iter().any(|c| c.load.is_some());
    match (rounds, windows) {
        (_, false) => {
            "mean over its rounds of Σ output tokens ÷ (last completion − first send); the \
             whiskers span the slowest and fastest round"
        }
        (false, true) => "Σ output tokens received in its measurement window ÷ the window",
        (true, true) => {
            "closed rounds: mean over the rounds of Σ output tokens ÷ (last completion − first \
             send), the whiskers spanning the slowest and fastest round; continuous and open \
             loops: Σ output tokens received in the measurement window ÷ the window"
        }
    }
}

/// The cases left out of the charts over load, and why, as sentences after the caption's.
pub(super) fn left_out(summary: &Summary) -> String {
    let mut text = match summary.cases.iter().filter(|c| !c.complete).count() {
        0 => String::new(),
        k => format!(
            " {} left out.",
            count(k, ("incomplete case", "incomplete cases"))
        ),
    };
    let sessions = summary
        .cases
        .iter()
        .filter(|c| c.sessions.is_some())
        .count();
    if sessions > 0 {
        let _ = write!(
            text,
            " {} of multi-turn sessions {} charted by turn instead.",
            count(sessions, CASE),
            if sessions == 1 { "is" } else { "are" }
        );
    }
    text
}

/// The confidence level of the intervals drawn, in words ("95 %").
pub(super) fn level() -> String {
    format!(
        "{} %",
        crate::fmt::number(crate::stats::interval::level() * 100.0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn sample_sizes_read_as_a_range_in_the_noun_s_number() {
        assert_eq!(sizes([3, 3].into_iter(), ROUND), "n = 3 rounds");
        assert_eq!(sizes([1].into_iter(), ROUND), "n = 1 round");
        assert_eq!(sizes([2, 8, 4].into_iter(), RESPONSE), "n = 2–8 responses");
        assert_eq!(sizes(std::iter::empty(), RESPONSE), "no samples");
    }

    #[test]
    fn an_open_loop_point_rests_on_its_window_s_responses_never_on_rounds() {
        let summary = fixture::report().summary;
        let mut open = summary.cases[0].clone();
        open.load = Some(Box::new(fixture::open_loop(19)));
        open.counts.ok = 19;
        let closed = &summary.cases[0];
        let rounds = closed.throughput_tps.as_ref().expect("rounds").n;
        assert_eq!(
            throughput_samples(&[&open]),
            "one measurement window (n = 19 responses)"
        );
        assert!(!throughput_method(&[&open]).contains("round"));
        assert_eq!(
            throughput_samples(&[closed]),
            sizes([rounds].into_iter(), ROUND)
        );
        assert!(throughput_samples(&[closed, &open]).starts_with("closed rounds: n = "));
    }
}
