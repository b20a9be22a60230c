//! The line printed when a case ends (beside the live line of [`super`]): its counts and its
//! headline figures, with its first failure in the server's words.

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
    if let Some(load) = &case.load {
        let stage = load.stage.as_ref().map_or_else(String::new, |_| {
            format!(" [{}]", crate::report::text::window_load(load))
        });
        return format!(
            "case {done}/{total} {}{stage}: {} ok, {} failed; {:.2} tokens/s over the window; in flight \
             {:.2} on average, {} at peak (nominal: {}); send lag p99 {}",
            case.id,
            case.counts.ok,
            case.counts.error + case.counts.cancelled + case.counts.invalid,
            load.throughput_tps,
            load.achieved_concurrency_mean,
            load.achieved_concurrency_peak,
            nominal(load),
            load.send_lag_ms
                .as_ref()
                .map_or_else(|| "–".to_owned(), |d| format!("{:.3} ms", d.p99)),
        );
    }
    let ttft = case
        .ttft_ms
        .as_ref()
        .map_or("–".into(), |d| format!("{:.1} ms", d.median));
    if let Some(s) = &case.sessions {
        return format!(
            "case {done}/{total} {}: {} of {} sessions complete ({} turns each), {} ok, {} \
             invalid, {} failed; median TTFT {ttft}",
            case.id,
            s.completed,
            s.started,
            s.turns,
            case.counts.ok,
            case.counts.invalid,
            case.counts.error + case.counts.cancelled,
        );
    }
    let tps = case
        .throughput_tps
        .as_ref()
        .map_or("–".into(), |t| format!("{:.2}", t.mean));
    let figures = match &case.pooling {
        Some(p) => {
            let latency = case
                .e2e_ms
                .as_ref()
                .map_or("–".into(), |d| format!("{:.1} ms", d.median));
            let inputs = p
                .inputs_per_s
                .as_ref()
                .map_or("–".into(), |r| format!("{:.2}", r.mean));
            format!("median latency {latency}, {inputs} inputs/s, {tps} input tokens/s")
        }
        None => format!("median TTFT {ttft}, {tps} tokens/s"),
    };
    format!(
        "case {done}/{total} {}: {}/{} rounds complete, {} ok, {} invalid, {} failed; {figures}",
        case.id,
        case.rounds.iter().filter(|r| r.complete).count(),
        case.rounds_planned,
        case.counts.ok,
        case.counts.invalid,
        case.counts.error + case.counts.cancelled,
    )
}
