//! The line printed when a case ends (beside the live line of [`super`]): its counts, in the
//! summary's words, and its headline figures (times in the tables' units), with its first
//! failure in the server's words.

use crate::fmt::number;
use crate::summary::window::LoadSummary;
use crate::summary::CaseSummary;

fn nominal(load: &LoadSummary) -> String {
    match (load.nominal_rate_rps, load.nominal_concurrency) {
        (Some(rate), Some(cap)) => format!("{} requests/s, at most {cap} in flight", number(rate)),
        (Some(rate), None) => format!("{} requests/s, uncapped", number(rate)),
        (None, Some(c)) => format!("{c} in flight"),
        (None, None) => "none".into(),
    }
}

/// The line printed when a case ends: its counts and headline figures.
pub fn case_line(done: usize, total: usize, case: &CaseSummary) -> String {
    let first = case
        .first_error
        .as_ref()
        .map_or_else(String::new, |e| format!("; first failure: {e}"));
    case_figures(done, total, case) + &crate::report::text::short_words(&case.counts) + &first
}

/// The counts and headline figures of [`case_line`].
fn case_figures(done: usize, total: usize, case: &CaseSummary) -> String {
    let counts = crate::report::partial::count_words(&case.counts);
    if let Some(load) = &case.load {
        let stage = load.stage.as_ref().map_or_else(String::new, |_| {
            format!(" [{}]", crate::report::text::window_load(load))
        });
        let over = if load.window_throughput_tps.is_some() {
            "over its responses' span"
        } else {
            "over the window"
        };
        return format!(
            "case {done}/{total} {}{stage}: {counts}; {:.2} tokens/s {over}; {} launched, in \
             flight {:.2} on average, {} at peak (nominal: {}); send lag p99 {}",
            case.id,
            load.throughput_tps,
            load.requests_launched,
            load.achieved_concurrency_mean,
            load.achieved_concurrency_peak,
            nominal(load),
            crate::fmt::seconds(load.send_lag_ms.as_ref().map(|d| d.p99)),
        );
    }
    let ttft = crate::fmt::seconds(case.ttft_ms.as_ref().map(|d| d.median));
    if let Some(s) = &case.sessions {
        return format!(
            "case {done}/{total} {}: {} of {} sessions complete ({} turns each), {counts}; \
             median TTFT {ttft}",
            case.id, s.completed, s.started, s.turns,
        );
    }
    let tps = case
        .throughput_tps
        .as_ref()
        .map_or("–".into(), |t| format!("{:.2}", t.mean));
    let figures = match &case.pooling {
        Some(p) => {
            let latency = crate::fmt::seconds(case.e2e_ms.as_ref().map(|d| d.median));
            let inputs = p
                .inputs_per_s
                .as_ref()
                .map_or("–".into(), |r| format!("{:.2}", r.mean));
            format!("median latency {latency}, {inputs} inputs/s, {tps} input tokens/s")
        }
        None => format!("median TTFT {ttft}, {tps} tokens/s"),
    };
    format!(
        "case {done}/{total} {}: {}/{} rounds complete, {counts}; {figures}",
        case.id,
        case.rounds.iter().filter(|r| r.complete).count(),
        case.rounds_planned,
    )
}
