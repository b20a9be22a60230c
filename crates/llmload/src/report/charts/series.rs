//! The complete cases of a summary as the charts draw them: one series per input and output
//! length and kind of load, each by load, and the load axis they share (its name, labels and
//! range).

use super::lengths::Lengths;
use crate::report::plot::{tick, upper, whole, COLORS};
use crate::summary::{CaseSummary, Summary};
use plotters::style::RGBColor;

/// Complete cases of one input and output length and one kind of load, by load.
pub(super) struct Series<'a> {
    pub(super) label: String,
    pub(super) color: RGBColor,
    /// The load is an arrival rate (open loop), not a concurrency.
    pub(super) rate: bool,
    pub(super) cases: Vec<&'a CaseSummary>,
}

/// A case's load: its arrival rate in an open loop, else its concurrency.
pub(super) fn load_of(case: &CaseSummary) -> f64 {
    case.load
        .as_ref()
        .and_then(|l| l.nominal_rate_rps)
        .unwrap_or(f64::from(case.concurrency))
}

pub(super) fn is_rate(case: &CaseSummary) -> bool {
    case.load
        .as_ref()
        .is_some_and(|l| l.nominal_rate_rps.is_some())
}

/// The series of `summary`'s complete cases, each named by the lengths its cases sent.
pub(super) fn series<'a>(summary: &'a Summary, lengths: &Lengths) -> Vec<Series<'a>> {
    // Sessions pool turns of growing prompts: their own chart is by turn.
    let mut keys: Vec<(u32, u32, bool)> = summary
        .cases
        .iter()
        .filter(|c| c.complete && c.sessions.is_none() && c.generates())
        .map(|c| (c.input_tokens, c.output_tokens, is_rate(c)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let several_outputs = keys.iter().any(|k| k.1 != keys[0].1);
    let mixed = keys.iter().any(|k| k.2 != keys[0].2);
    keys.iter()
        .enumerate()
        .map(|(i, &(input, output, rate))| {
            let mut cases: Vec<&CaseSummary> = summary
                .cases
                .iter()
                .filter(|c| {
                    c.complete
                        && c.sessions.is_none()
                        && c.generates()
                        && (c.input_tokens, c.output_tokens, is_rate(c)) == (input, output, rate)
                })
                .collect();
            cases.sort_by(|a, b| load_of(a).total_cmp(&load_of(b)));
            let mut label = if several_outputs {
                format!(
                    "{} in / {} out",
                    lengths.input(&cases),
                    lengths.output(&cases)
                )
            } else {
                format!("{} input tokens", lengths.input(&cases))
            };
            if mixed && rate {
                label.push_str(", open loop");
            }
            Series {
                label,
                color: COLORS[i % COLORS.len()],
                rate,
                cases,
            }
        })
        .collect()
}

/// The load axis' name: concurrency, arrival rate, or both when the series mix them.
pub(super) fn load_axis(lines: &[Series]) -> &'static str {
    match (lines.iter().any(|s| s.rate), lines.iter().all(|s| s.rate)) {
        (false, _) => "concurrent requests",
        (true, true) => "arrival rate (requests/s)",
        (true, false) => "concurrent requests; requests/s for open-loop series",
    }
}

/// The load in a chart's title.
/// What the load of `summary`'s charts is called in their titles ("concurrency", "arrival
/// rate"), without drawing them.
pub fn load_name(summary: &Summary, lengths: &Lengths) -> &'static str {
    load_word(&series(summary, lengths))
}

pub(super) fn load_word(lines: &[Series]) -> &'static str {
    match (lines.iter().any(|s| s.rate), lines.iter().all(|s| s.rate)) {
        (false, _) => "concurrency",
        (true, true) => "arrival rate",
        (true, false) => "load",
    }
}

/// Labels of the load axis: whole numbers for concurrencies, any tick for rates.
pub(super) fn load_label(lines: &[Series]) -> fn(&f64) -> String {
    if lines.iter().any(|s| s.rate) {
        tick
    } else {
        whole
    }
}

/// Load axis: from 0 to a little past the largest load.
pub(super) fn load_range(lines: &[Series]) -> std::ops::Range<f64> {
    let max = lines
        .iter()
        .flat_map(|s| &s.cases)
        .map(|c| load_of(c))
        .fold(0.0, f64::max);
    if lines.iter().any(|s| s.rate) {
        0.0..upper(max)
    } else {
        0.0..max.max(1.0) * 1.1 + 0.5
    }
}
