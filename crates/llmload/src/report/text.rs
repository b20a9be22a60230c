//! The sentences of the reports, in plain text, that more than one format writes alike (the
//! Markdown report and the terminal, the HTML page, the timeline's caption, `llmload compare`):
//! how tokens were counted, the unverified responses, percentiles read from a histogram, the
//! outcome's counts, an incomplete case in one line, GPU telemetry in one line.

use crate::fmt::thousands;
use crate::summary::{CaseSummary, Summary};
use std::fmt::Write as _;

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

/// What a p99 marked "descriptive" is, under the tables that mark one.
pub const DESCRIPTIVE_NOTE: &str = "A p99 marked descriptive has fewer than 5 samples beyond it \
     (n below 500): it describes this sample and promises nothing of the next.";

/// The sentences under the results tables on ITL and TPOT: what they are, what a descriptive
/// p99 is (when a cell is marked so), and which complete cases have no ITL and why.
pub(crate) fn per_token_note(summary: &Summary) -> String {
    let complete: Vec<&CaseSummary> = summary
        .cases
        .iter()
        .filter(|c| c.complete && c.generates())
        .collect();
    let mut out = String::from(
        "ITL: inter-token latency, the gaps between a response's tokens (an event of k tokens \
         gives k gaps of its gap ÷ k), over every gap of the case. TPOT: time per output token \
         after the first, (complete response − TTFT) ÷ (output tokens − 1), over the responses.",
    );
    // Where the summary says why responses were left out of ITL, it is said for each case.
    for case in &complete {
        if let Some(why) = &case.itl_unknown {
            let _ = write!(out, " {}: {why}.", case.id);
        }
    }
    let without: Vec<&str> = complete
        .iter()
        .filter(|c| {
            c.itl_ms.is_none()
                && c.counts.ok > 0
                && c.itl_unknown.is_none()
                && !c
                    .bursts
                    .as_ref()
                    .is_some_and(crate::summary::bursts::Bursts::held_out)
        })
        .map(|c| c.id.as_str())
        .collect();
    if !without.is_empty() {
        let _ = write!(
            out,
            " No ITL (–) for {}: their records hold no per-token gaps; TPOT is the per-token \
             figure.",
            without.join(", ")
        );
    }
    out.push('\n');
    out
}

/// For a case whose tokens arrived in bursts, or whose best-effort responses fell far short of
/// the output asked for, the sentences that say so with the evidence.
pub(crate) fn case_sentences(c: &CaseSummary) -> impl Iterator<Item = String> + '_ {
    let bursts = c.bursts.as_ref().map(|b| b.sentence(&c.id));
    let short = c.far_short.as_ref().map(|f| f.sentence(&c.id));
    bursts.into_iter().chain(short)
}

/// The sentence under the results tables on their ± figures: what they are, and how the
/// intervals of the complete cases' TTFT were computed (each method and unit once, with the
/// cases it served); empty when no figure has an interval.
pub(crate) fn interval_note(summary: &Summary) -> String {
    let mut methods: Vec<(String, Vec<&str>)> = Vec::new();
    for case in summary.cases.iter().filter(|c| c.complete) {
        let Some(ci) = case.ttft_ms.as_ref().and_then(|d| d.ci.as_ref()) else {
            continue;
        };
        let how = format!(
            "{} over {}{}",
            ci.basis.method.words(),
            ci.basis.unit.plural(),
            ci.note
                .as_deref()
                .and_then(|n| n.split(':').next())
                .map_or_else(String::new, |n| format!(" ({n})"))
        );
        match methods.iter_mut().find(|(m, _)| *m == how) {
            Some((_, ids)) => ids.push(&case.id),
            None => methods.push((how, vec![case.id.as_str()])),
        }
    }
    if methods.is_empty() {
        return String::new();
    }
    let level = crate::fmt::number(crate::stats::interval::level() * 100.0);
    let how: Vec<String> = methods
        .iter()
        .map(|(m, ids)| {
            if methods.len() == 1 {
                m.clone()
            } else {
                format!("{m} for {}", ids.join(", "))
            }
        })
        .collect();
    format!(
        "±: the larger side of the figure's {level} % confidence interval, as a share of it \
         (none where the samples are too few for one); TTFT's from {}. Every interval, its method \
         and its units are in summary.json (`ci`).\n",
        how.join("; ")
    )
}

/// The line that stands for the results tables when no case completed: how many were planned,
/// where the failures are (`listed`: where the incomplete cases are listed) and the first one.
pub(crate) fn no_complete_case(summary: &Summary, listed: &str) -> String {
    let first = summary
        .cases
        .iter()
        .find_map(|c| c.first_error.as_deref())
        .map_or_else(String::new, |e| format!("; first failure: {e}"));
    format!(
        "No case completed (0 of {}): each case and its failures are {listed}, every request in \
         requests.jsonl{first}\n",
        summary
            .outcome
            .cases_total
            .max(crate::num::count(summary.cases.len()))
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
    if let Some(dropped) = &counting.dropped {
        let _ = writeln!(out, "Requests {dropped}.");
    }
    if let Some(dataset) = &counting.dataset {
        let _ = writeln!(out, "{}", super::dataset::dataset_line(dataset));
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

/// `, N short (a quarter or less of the output asked and of their peers': …)`, or nothing.
pub(crate) fn short_words(c: &crate::summary::Counts) -> String {
    if c.short == 0 {
        return String::new();
    }
    format!(
        ", {} short (a quarter or less of the output asked and of their peers': cut streams, in \
         no figure)",
        c.short
    )
}

/// What an incomplete case did complete, in one line.
pub(crate) fn incomplete_line(case: &CaseSummary) -> String {
    let c = &case.counts;
    let kinds: Vec<String> = c.by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let done = completion(case);
    let work = match &case.pooling {
        Some(p) => format!("{} inputs per request", p.batch),
        None => format!("{} output", case.output_tokens),
    };
    format!(
        "{} input tokens × {} × {work}: {done}, {} responses ok, {} invalid, {} failed, {} cancelled{}{}{}",
        thousands(case.input_tokens),
        load_words(case),
        c.ok,
        c.invalid,
        c.error,
        c.cancelled,
        if c.abandoned > 0 { format!(", {} abandoned as planned", c.abandoned) } else { String::new() },
        short_words(c),
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

/// A window case's load in a few words: its shape and nominal level ("poisson at 2 req/s",
/// "closed-continuous × 4"), and for a stage of a staged load which stage and its levels
/// ("stage 2/3: poisson, 2 → 8 req/s (ramp)", "stage 1/2: closed-continuous, c=4").
pub fn window_load(load: &crate::summary::window::LoadSummary) -> String {
    use crate::fmt::number;
    use crate::workload::stages::LevelKind;
    if let Some(stage) = &load.stage {
        let levels = if stage.ramp {
            format!("{} → {}", number(stage.from), number(stage.to))
        } else {
            number(stage.to)
        };
        let level = match stage.kind {
            LevelKind::Rate => format!("{levels} req/s"),
            LevelKind::Concurrency => format!("c={levels}"),
        };
        let ramp = if stage.ramp { " (ramp)" } else { "" };
        return format!(
            "stage {}/{}: {}, {level}{ramp}",
            stage.number, stage.of, load.shape
        );
    }
    match (load.nominal_rate_rps, load.nominal_concurrency) {
        (Some(rate), _) => format!("{} at {} req/s", load.shape, number(rate)),
        (None, Some(c)) => format!("{} × {c}", load.shape),
        (None, None) => load.shape.to_string(),
    }
}

/// A case's load in a few words: the arrival rate of an open loop (sessions or requests per
/// second), else the requests (or sessions) in parallel.
pub(super) fn load_words(case: &CaseSummary) -> String {
    use crate::summary::window::LoadShape;
    let load = case.load.as_ref().map(|l| (l.shape, l.nominal_rate_rps));
    if let Some(l) = case.load.as_ref().filter(|l| l.stage.is_some()) {
        return window_load(l);
    }
    match (&case.sessions, load) {
        (Some(s), _) => s.rate_rps.map_or_else(
            || format!("{} sessions in parallel", case.concurrency),
            |r| format!("{} sessions/s", crate::fmt::number(r)),
        ),
        (None, Some((LoadShape::Trace, _))) => "a trace's arrivals".into(),
        (None, Some((_, Some(r)))) => format!("{} requests/s", crate::fmt::number(r)),
        _ => format!("{} concurrent", case.concurrency),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_row_names_its_stage_and_levels() {
        use crate::summary::window::{window_figures, LoadShape};
        use crate::workload::stages::{LevelKind, StageLabel};
        let mut load = window_figures(&[], (0.0, 1.0), &crate::workload::shape::Slo::default());
        load.shape = LoadShape::Poisson;
        load.nominal_rate_rps = Some(5.0);
        assert_eq!(window_load(&load), "poisson at 5 req/s");
        let label = StageLabel {
            number: 2,
            of: 3,
            kind: LevelKind::Rate,
            ramp: true,
            from: 2.0,
            to: 8.0,
            start_s: 10.0,
            duration_s: 30.0,
        };
        load.stage = Some(label.clone());
        assert_eq!(window_load(&load), "stage 2/3: poisson, 2 → 8 req/s (ramp)");
        load.shape = LoadShape::ClosedContinuous;
        load.stage = Some(StageLabel {
            number: 1,
            kind: LevelKind::Concurrency,
            ramp: false,
            from: 4.0,
            to: 4.0,
            ..label
        });
        assert_eq!(window_load(&load), "stage 1/3: closed-continuous, c=4");
        let mut case = crate::fixture::report().summary.cases[0].clone();
        case.complete = false;
        case.load = Some(Box::new(load));
        assert!(
            incomplete_line(&case).contains(" × stage 1/3: closed-continuous, c=4 × "),
            "{}",
            incomplete_line(&case)
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
        case.load = Some(Box::new(load.clone()));
        case.concurrency = 0;
        let open = incomplete_line(&case);
        assert!(
            open.contains(" × 20 requests/s × 4 output: 3 requests launched, "),
            "{open}"
        );
        load.shape = LoadShape::Trace;
        case.load = Some(Box::new(load));
        assert!(incomplete_line(&case).contains(" × a trace's arrivals × "));
        case.load = None;
        case.sessions = Some(Box::new(SessionSummary {
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
            graph: None,
            by_turn: Vec::new(),
        }));
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
}
