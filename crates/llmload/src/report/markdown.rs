//! The reference table ("Qwen3-8B streaming API results") in Markdown: complete cases only, with
//! sample sizes; incomplete cases listed apart with what they did complete.

use crate::fmt::{seconds, thousands};
use crate::summary::{CaseSummary, Summary};
use std::fmt::Write;

/// Which distributions had more samples than are kept exactly, so that their percentiles come
/// from a histogram; empty when none had.
pub(crate) fn histogram_note(summary: &Summary) -> String {
    let mut parts = Vec::new();
    let mut error = 0.0_f64;
    for case in &summary.cases {
        let load = case.load.as_ref();
        let named = [
            ("TTFT", case.ttft_ms.as_ref()),
            ("complete response", case.e2e_ms.as_ref()),
            ("ITL", case.itl_ms.as_ref()),
            ("chunk gaps", case.chunk_gap_ms.as_ref()),
            ("TPOT", case.tpot_ms.as_ref()),
            ("decode rate", case.decode_rate_tps.as_ref()),
            ("send lag", load.and_then(|l| l.send_lag_ms.as_ref())),
            (
                "TTFT from scheduled",
                load.and_then(|l| l.ttft_from_scheduled_ms.as_ref()),
            ),
            (
                "E2E from scheduled",
                load.and_then(|l| l.e2e_from_scheduled_ms.as_ref()),
            ),
        ];
        let binned: Vec<String> = named
            .iter()
            .filter_map(|(name, d)| {
                let d = (*d)?;
                error = error.max(d.relative_error?);
                Some(format!("{name} (n = {})", d.n))
            })
            .collect();
        if !binned.is_empty() {
            parts.push(format!("{}: {}", case.id, binned.join(", ")));
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "\nPercentiles read from a histogram (more than {} samples; each within {} % of the exact \
         value; n, mean, min and max exact): {}.\n",
        thousands(crate::num::count(crate::stats::EXACT_LIMIT)),
        error * 100.0,
        parts.join("; ")
    )
}

/// Whether the attempt has closed-round cases (or none at all), which the rounds table is for:
/// continuous and open-loop cases have their own table, and no rounds.
pub(crate) fn has_rounds(summary: &Summary) -> bool {
    summary.cases.is_empty() || summary.cases.iter().any(CaseSummary::is_rounds)
}

/// "3 of 4 cases complete, 7 complete rounds, 11 responses ok" (rounds only where cases have
/// them).
pub(crate) fn outcome_counts(summary: &Summary) -> String {
    let o = &summary.outcome;
    let rounds = if has_rounds(summary) {
        format!(", {} complete rounds", o.rounds_completed)
    } else {
        String::new()
    };
    format!(
        "{} of {} cases complete{rounds}, {} responses ok",
        o.cases_completed, o.cases_total, o.responses_completed
    )
}

/// Renders the results table, the incomplete cases and the outcome.
pub fn render(summary: &Summary) -> String {
    let mut out = String::new();
    let model = summary.model.as_deref().unwrap_or("(not named)");
    let target = if summary.simulated {
        format!(
            "SIMULATED target (built-in engine simulator at {})",
            summary.target_url
        )
    } else {
        summary.target_url.clone()
    };
    let _ = writeln!(out, "Target: {target}, API {}, model {model}", summary.api);
    let _ = writeln!(out, "Attempt: {}", summary.attempt_id);
    out.push_str(&counting_lines(summary));
    out.push('\n');
    if has_rounds(summary) {
        out.push_str(
            "| Input tokens per request | Concurrent requests | Median TTFT | Median complete response | Aggregate output throughput | Responses (n) | Rounds |\n\
             |---|---|---|---|---|---|---|\n",
        );
        for row in reference_rows(summary) {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        out.push_str(
            "\nTTFT: request sent → first event carrying a generated token. Complete response: sent → final event. \
             Both are medians over the n responses. Throughput: mean over rounds of Σ output tokens ÷ (last completion − first send).\n",
        );
    }
    out.push_str(&load_table(summary));
    out.push_str(&sweep_section(summary));
    out.push_str(&super::soak::render(summary));
    out.push_str(&super::energy::markdown(summary));
    out.push_str(&prefix_cache_section(summary));
    out.push_str(&super::sessions::markdown(summary));
    out.push_str(&reasoning_section(summary));
    out.push_str(&super::phases::markdown(summary));
    out.push_str(&unverified_note(summary));
    out.push_str(&histogram_note(summary));
    out.push_str(&super::shards::markdown(summary));
    let incomplete: Vec<&CaseSummary> = summary.cases.iter().filter(|c| !c.complete).collect();
    if !incomplete.is_empty() {
        out.push_str("\nIncomplete cases (not in the table above):\n");
        for case in incomplete {
            let _ = writeln!(out, "- {}", incomplete_line(case));
        }
    }
    let o = &summary.outcome;
    let _ = writeln!(
        out,
        "\nOutcome: {:?}: {}{}",
        o.status,
        outcome_counts(summary),
        o.reason
            .as_ref()
            .map_or(String::new(), |r| format!(" — {r}")),
    );
    if let Some(check) = &summary.client_check {
        let _ = writeln!(out, "{}", check.line());
    }
    if let Some(t) = &summary.telemetry {
        let _ = writeln!(out, "{}", telemetry_line(t));
        if let Some(m) = &t.server_metrics {
            let peaks: Vec<String> = m
                .peak
                .iter()
                .map(|(k, v)| {
                    if v.fract() == 0.0 {
                        format!("{k} {v}")
                    } else {
                        format!("{k} {v:.3}")
                    }
                })
                .collect();
            let grown: Vec<String> = m.delta.iter().map(|(k, v)| format!("{k} +{v}")).collect();
            let _ = writeln!(
                out,
                "Server /metrics: {} scrapes; peaks: {}; counters grew during the run: {}.",
                m.scrapes,
                peaks.join(", "),
                if grown.is_empty() {
                    "–".to_owned()
                } else {
                    grown.join(", ")
                }
            );
        }
    }
    out
}

/// The cells of the reference table, one row per complete closed-round case: input tokens,
/// concurrency, median TTFT, median complete response, throughput, responses, rounds. Window
/// cases (continuous, open loop) have their own table.
pub(crate) fn reference_rows(summary: &Summary) -> Vec<[String; 7]> {
    let closed = summary.cases.iter().filter(|c| c.complete && c.is_rounds());
    closed
        .map(|case| {
            [
                thousands(case.input_tokens),
                case.concurrency.to_string(),
                seconds(case.ttft_ms.as_ref().map(|d| d.median)),
                seconds(case.e2e_ms.as_ref().map(|d| d.median)),
                case.throughput_tps
                    .as_ref()
                    .map_or("–".into(), |t| format!("{:.2} tokens/s", t.mean)),
                responses(case),
                case.rounds.len().to_string(),
            ]
        })
        .collect()
}

/// The responses a row rests on: the `ok` ones, and how many of those are unverified.
fn responses(case: &CaseSummary) -> String {
    match case.counts.unverified {
        0 => case.counts.ok.to_string(),
        u => format!("{} ({u} unverified)", case.counts.ok),
    }
}

/// A sentence on unverified responses when a table rests on any: what they are and what was
/// not checked. Empty otherwise.
pub(crate) fn unverified_note(summary: &Summary) -> String {
    let (unverified, ok) =
        summary
            .cases
            .iter()
            .filter(|c| c.complete)
            .fold((0u32, 0u32), |(u, n), c| {
                (
                    u.saturating_add(c.counts.unverified),
                    n.saturating_add(c.counts.ok),
                )
            });
    if unverified == 0 {
        return String::new();
    }
    let mut reasons: Vec<String> = Vec::new();
    for case in summary.cases.iter().filter(|c| c.complete) {
        if let Some(why) = &case.first_unverified {
            let line = format!("{}: {why}", case.id);
            if reasons.len() < 3 && !reasons.iter().any(|r| r.ends_with(why.as_str())) {
                reasons.push(line);
            }
        }
    }
    let mut note = format!(
        "\nUnverified: {unverified} of the {ok} ok responses behind the tables were not checked \
         against the server's own counters (prompt tokens, cached tokens, generated tokens): their \
         prompt length, cache use or output length may differ from the request. Each record's \
         notes say why."
    );
    if !reasons.is_empty() {
        note.push_str(" For example, ");
        note.push_str(&reasons.join(" — "));
        if !note.ends_with('.') {
            note.push('.');
        }
    }
    note.push('\n');
    note
}

/// The lines on how tokens were counted, and on best-effort mode: empty for a summary that
/// does not say (older attempts).
pub(crate) fn counting_lines(summary: &Summary) -> String {
    let Some(counting) = &summary.counting else {
        return String::new();
    };
    let mut out = format!(
        "Counting: prompts by {}; generated tokens by {}.\n",
        counting.prompts, counting.outputs
    );
    if counting.best_effort {
        out.push_str(
            "Best effort: outputs are as long as the server made them and lengths that differ \
             from the request are not errors; every response the server's counters do not \
             confirm is unverified.\n",
        );
    }
    out
}

/// Column names of the table of continuous and open-loop cases.
pub(crate) const LOAD_COLUMNS: [&str; 10] = [
    "Load",
    "Input tokens (mean)",
    "Output tokens (mean)",
    "Achieved concurrency (mean / peak)",
    "Median TTFT",
    "p99 TTFT from scheduled",
    "Send lag p99",
    "Throughput",
    "Goodput",
    "Responses (n)",
];

/// The cells of the table of complete continuous and open-loop cases: figures over the
/// measurement window, which the reference table (per-round throughput at a fixed concurrency)
/// cannot hold.
pub(crate) fn load_rows(summary: &Summary) -> Vec<[String; 10]> {
    let cases = summary.cases.iter().filter(|c| c.complete);
    cases
        .filter_map(|case| {
            let load = case.load.as_ref()?;
            let nominal = match (load.nominal_rate_rps, load.nominal_concurrency) {
                (Some(rate), _) => format!("{} at {rate} req/s", load.shape),
                (None, Some(c)) => format!("{} × {c}", load.shape),
                (None, None) => load.shape.to_string(),
            };
            Some([
                nominal,
                thousands(case.input_tokens),
                case.output_tokens.to_string(),
                format!(
                    "{:.2} / {}",
                    load.achieved_concurrency_mean, load.achieved_concurrency_peak
                ),
                seconds(case.ttft_ms.as_ref().map(|d| d.median)),
                seconds(load.ttft_from_scheduled_ms.as_ref().map(|d| d.p99)),
                seconds(load.send_lag_ms.as_ref().map(|d| d.p99)),
                format!("{:.2} tokens/s", load.throughput_tps),
                load.goodput_rps
                    .map_or("–".into(), |g| format!("{g:.2} req/s")),
                responses(case),
            ])
        })
        .collect()
}

/// Continuous and open-loop cases in their own table.
fn load_table(summary: &Summary) -> String {
    let rows = load_rows(summary);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nContinuous and open-loop cases (figures over the measurement window):\n\n{}",
        super::markdown_table(&LOAD_COLUMNS, &rows)
    );
    let mut priorities: Vec<&str> = summary
        .cases
        .iter()
        .filter_map(|c| c.load.as_ref()?.pacer_priority.as_deref())
        .collect();
    priorities.dedup();
    if !priorities.is_empty() {
        let _ = writeln!(
            out,
            "\nSend lag: sent − scheduled. The open-loop pacer thread ran at {} priority \
             (real-time and raised need privileges; at normal priority a busy machine may wake \
             it late, and that shows as send lag).",
            priorities.join(" / ")
        );
    }
    out
}

/// A sweep's curve and what it supports (`C_sat`, knee, recommended cap, largest load within the
/// SLO), each finding with how it was found.
fn sweep_section(summary: &Summary) -> String {
    let Some(sweep) = &summary.sweep else {
        return String::new();
    };
    let mut out = format!(
        "\nSweep over {} (saturation analysis):\n\n{}",
        sweep.axis.as_str().replace('_', " "),
        super::saturation::render(&sweep.analysis, sweep.axis)
    );
    if let Some(why) = &sweep.stopped_because {
        let _ = writeln!(out, "The sweep stopped adding load: {why}.");
    }
    out
}

/// The attempt's GPU telemetry in one line.
pub(crate) fn telemetry_line(t: &crate::telemetry::TelemetrySummary) -> String {
    if t.readings == 0 {
        return format!("GPU telemetry: no readings ({}).", t.source);
    }
    let share = |s: Option<f64>| {
        s.map_or("not reported".into(), |s| {
            format!("{:.0}% of readings", s * 100.0)
        })
    };
    format!(
        "GPU telemetry ({}): {} readings, highest sampled temperature {} °C, lowest T.Limit margin {}; SW thermal slowdown {}, HW thermal slowdown {}, power cap {}.",
        t.source,
        t.readings,
        t.max_temperature_c.map_or("–".into(), |m| m.to_string()),
        t.min_margin_c.map_or("not reported".into(), |m| format!("{m} °C")),
        share(t.sw_thermal_slowdown_share),
        share(t.hw_thermal_slowdown_share),
        share(t.sw_power_cap_share),
    )
}

/// What an incomplete case did complete, in one line.
pub(crate) fn incomplete_line(case: &CaseSummary) -> String {
    let c = &case.counts;
    let kinds: Vec<String> = c.by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let done = completion(case);
    format!(
        "{} input tokens × {} × {} output: {done}, {} responses ok, {} invalid, {} failed, {} cancelled{}",
        thousands(case.input_tokens),
        load_words(case),
        case.output_tokens,
        c.ok,
        c.invalid,
        c.error,
        c.cancelled,
        if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) },
    ) + &case
        .first_error
        .as_ref()
        .map_or_else(String::new, |e| format!("; first: {e}"))
        + &case
            .incomplete_reason
            .as_ref()
            .map_or_else(String::new, |why| format!("; {why}"))
}

/// How far an incomplete case got: its sessions, its rounds, or the requests an open or
/// continuous load launched.
pub(crate) fn completion(case: &CaseSummary) -> String {
    match (&case.sessions, &case.load) {
        (Some(s), _) => format!(
            "{} of {} sessions of {} turns complete",
            s.completed, s.started, s.turns
        ),
        (None, Some(load)) => format!("{} requests launched", load.requests_launched),
        (None, None) => format!(
            "{} of {} rounds complete",
            case.rounds.iter().filter(|r| r.complete).count(),
            case.rounds_planned
        ),
    }
}

/// A case's load in a few words: the arrival rate of an open loop (sessions or requests per
/// second), else the requests (or sessions) in parallel.
pub(super) fn load_words(case: &CaseSummary) -> String {
    use crate::summary::window::LoadShape;
    let load = case.load.as_ref().map(|l| (l.shape, l.nominal_rate_rps));
    match (&case.sessions, load) {
        (Some(s), _) => s.rate_rps.map_or_else(
            || format!("{} sessions in parallel", case.concurrency),
            |r| format!("{r} sessions/s"),
        ),
        (None, Some((LoadShape::Trace, _))) => "a trace's arrivals".into(),
        (None, Some((_, Some(r)))) => format!("{r} requests/s"),
        _ => format!("{} concurrent", case.concurrency),
    }
}

/// The report's lines on reasoning models: per case, how many responses reasoned before they
/// answered, their reasoning tokens, and the time to the first answer token; empty when no case
/// had any.
fn reasoning_section(summary: &Summary) -> String {
    let mut out = String::new();
    for case in &summary.cases {
        let Some(r) = &case.reasoning else {
            continue;
        };
        if out.is_empty() {
            out.push_str(
                "\nReasoning (told apart by the stream; TTFT above counts the first token of \
                 either kind):\n",
            );
        }
        let median = |d: Option<&crate::stats::Distribution>| d.map(|d| d.median);
        let _ = writeln!(
            out,
            "- {}: {} of {} ok responses reasoned; reasoning tokens median {}; time to the first \
             answer token median {} (n = {})",
            case.id,
            r.responses,
            case.counts.ok,
            median(r.tokens.as_ref()).map_or_else(|| "–".to_owned(), |t| format!("{t:.0}")),
            seconds(median(r.time_to_answer_ms.as_ref())),
            r.time_to_answer_ms.as_ref().map_or(0, |d| d.n),
        );
    }
    out
}

/// The report's lines on a shared system prompt: per case, the share of its tokens the server
/// served from its prefix cache; empty when no case had one.
fn prefix_cache_section(summary: &Summary) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for case in &summary.cases {
        let Some(p) = &case.prefix_cache else {
            continue;
        };
        if out.is_empty() {
            out.push_str(
                "\nShared system prompt: the share of its tokens served from the prefix cache, from \
                 the server's cached-token counters over the ok responses:\n",
            );
        }
        let _ = writeln!(
            out,
            "- {}: {} shared tokens, {:.1}% from the prefix cache (Σ {} of {} tokens); {} of {} \
             responses hit (n = {})",
            case.id,
            p.shared_tokens,
            p.hit_rate * 100.0,
            p.cached_tokens,
            u64::from(p.n) * u64::from(p.shared_tokens),
            p.responses_hit,
            p.n,
            p.n
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_percentiles_are_named_with_their_error() {
        let mut summary = crate::fixture::report().summary;
        assert!(!render(&summary).contains("Percentiles read from a histogram"));
        let case = &mut summary.cases[0];
        let itl = case.itl_ms.as_mut().expect("the fixture has ITL");
        itl.n = 250_000;
        itl.relative_error = Some(0.001);
        let id = case.id.clone();
        let text = render(&summary);
        assert!(
            text.contains(&format!(
                "Percentiles read from a histogram (more than 100,000 samples; each within 0.1 % \
                 of the exact value; n, mean, min and max exact): {id}: ITL (n = 250000)."
            )),
            "{text}"
        );
    }

    #[test]
    fn an_incomplete_case_names_its_load_as_it_was_asked() {
        use crate::summary::sessions::SessionSummary;
        use crate::summary::window::{window_figures, LoadShape};
        let mut case = crate::fixture::report().summary.cases[0].clone();
        case.complete = false;
        let closed = incomplete_line(&case);
        assert!(
            closed.contains(&format!(" × {} concurrent × ", case.concurrency)),
            "{closed}"
        );
        let mut load = window_figures(&[], (0.0, 1.0), &crate::workload::shape::Slo::default());
        load.shape = LoadShape::Poisson;
        load.nominal_rate_rps = Some(20.0);
        load.requests_launched = 3;
        case.load = Some(load.clone());
        case.concurrency = 0;
        let open = incomplete_line(&case);
        assert!(
            open.contains(" × 20 requests/s × 4 output: 3 requests launched, "),
            "{open}"
        );
        load.shape = LoadShape::Trace;
        case.load = Some(load);
        assert!(incomplete_line(&case).contains(" × a trace's arrivals × "));
        case.load = None;
        case.sessions = Some(SessionSummary {
            turns: 3,
            rate_rps: Some(0.5),
            started: 4,
            completed: 1,
            incomplete: 3,
            incomplete_sessions: vec![1, 2, 3],
            duration_s: None,
            active_s: None,
            prompt_tokens: None,
            output_tokens: None,
            by_turn: Vec::new(),
        });
        let sessions = incomplete_line(&case);
        assert!(
            sessions.contains(" × 0.5 sessions/s × ") && !sessions.contains("concurrent"),
            "{sessions}"
        );
        assert!(
            sessions.contains("1 of 4 sessions of 3 turns complete"),
            "{sessions}"
        );
        case.concurrency = 2;
        if let Some(s) = &mut case.sessions {
            s.rate_rps = None;
        }
        assert!(incomplete_line(&case).contains(" × 2 sessions in parallel × "));
    }

    #[test]
    fn numbers_read_like_the_reference_table() {
        assert_eq!(thousands(8192), "8,192");
        assert_eq!(thousands(512), "512");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(seconds(Some(190.4)), "0.19 s");
        assert_eq!(seconds(Some(12.34)), "12.3 ms");
        assert_eq!(seconds(None), "–");
    }
}
