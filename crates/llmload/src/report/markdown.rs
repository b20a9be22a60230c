//! `report.md`, and what the terminal prints of a run: the reference table ("Qwen3-8B streaming
//! API results") in Markdown, complete cases only, with sample sizes; the other tables and
//! sections of the summary; incomplete cases listed apart with what they did complete; the
//! outcome. The tables come from the table model ([`super::table`]) and its builders, the
//! sentences shared with the other formats from [`super::text`]; this file only writes them.

use super::text::{
    case_notes, counting_lines, histogram_note, incomplete_line, interval_note, no_complete_case,
    outcome_counts, per_token_note, telemetry_line, unverified_note,
};
use super::{energy, phases, repeats, results, saturation, server_side, sessions, shards};
use crate::fmt::{number, seconds, span};
use crate::summary::{CaseSummary, Summary};
use std::fmt::Write;

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
    let reference = results::reference(summary);
    let pooled = super::pooling::table(summary);
    if reference.is_empty() && results::window(summary).is_empty() && pooled.is_empty() {
        out.push_str(&no_complete_case(
            summary,
            "listed under \"Incomplete cases\" below",
        ));
    } else if !reference.is_empty() {
        out.push_str(&reference.markdown());
        out.push_str(
            "\nTTFT: request sent → first event carrying a generated token. Complete response: sent → final event. \
             Both are medians over the n responses. Throughput: mean over rounds of Σ output tokens ÷ (last completion − first send).\n",
        );
        out.push_str(&per_token_note(summary));
        out.push_str(&interval_note(summary));
    }
    out.push_str(&load_table(summary));
    if !pooled.is_empty() {
        let _ = write!(
            out,
            "\nEmbeddings and rerank cases:\n\n{}\n{}\n",
            pooled.markdown(),
            super::pooling::NOTE
        );
    }
    out.push_str(&models_section(summary));
    out.push_str(&repeats_section(summary));
    out.push_str(&sweep_section(summary));
    out.push_str(&soak_section(summary));
    out.push_str(&energy_section(summary));
    out.push_str(&prefix_cache_section(summary));
    out.push_str(&sessions_section(summary));
    out.push_str(&reasoning_section(summary));
    out.push_str(&super::abandoned::section(summary));
    out.push_str(&phases_section(summary));
    out.push_str(&server_section(summary));
    out.push_str(&unverified_note(summary));
    out.push_str(&case_notes(summary));
    out.push_str(&histogram_note(summary));
    out.push_str(&shards_section(summary));
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
            let _ = writeln!(out, "{}", server_metrics_line(m));
        }
    }
    out
}

/// What the server's `/metrics` showed: the scrapes, the gauges' peaks, the counters' growth,
/// and the LoRA adapters it reported running.
fn server_metrics_line(m: &crate::telemetry::server_metrics::ServerMetricsSummary) -> String {
    let peaks: Vec<String> = m
        .peak
        .iter()
        .map(|(k, v)| format!("{k} {}", number(*v)))
        .collect();
    let grown: Vec<String> = m
        .delta
        .iter()
        .map(|(k, v)| format!("{k} +{}", number(*v)))
        .collect();
    let lora = if m.lora_running.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = m.lora_running.iter().map(String::as_str).collect();
        format!(
            "; LoRA adapters it reported running (vllm:lora_requests_info): {}",
            names.join(", ")
        )
    };
    format!(
        "Server /metrics: {} scrapes; peaks: {}; counters grew during the run: {}{lora}.",
        m.scrapes,
        peaks.join(", "),
        if grown.is_empty() {
            "–".to_owned()
        } else {
            grown.join(", ")
        }
    )
}

/// A mix of models: each case's figures per model and over all of them; empty without one.
fn models_section(summary: &Summary) -> String {
    let table = super::models::table(summary);
    if table.is_empty() {
        return String::new();
    }
    format!(
        "\nPer model (a mix of models in one load):\n\n{}\n{}",
        table.markdown(),
        super::models::note(summary)
    )
}

/// Continuous and open-loop cases in their own table.
fn load_table(summary: &Summary) -> String {
    let table = results::window(summary);
    if table.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nContinuous and open-loop cases (figures over the measurement window):\n\n{}\n{}",
        table.markdown(),
        per_token_note(summary) + &interval_note(summary)
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

/// A series of repeats: how many are complete, the incomplete ones with why, and the variation
/// between the complete ones; empty without a series.
fn repeats_section(summary: &Summary) -> String {
    let Some((lines, table)) = repeats::section(summary) else {
        return String::new();
    };
    let mut lines = lines.into_iter();
    let mut out = format!("\n{}\n", lines.next().unwrap_or_default());
    for line in lines {
        let _ = writeln!(out, "- {line}");
    }
    if !table.is_empty() {
        let _ = write!(
            out,
            "\nBetween the complete repeats:\n\n{}\n{}\n",
            table.markdown(),
            repeats::NOTE
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
        saturation::render(&sweep.analysis, sweep.axis)
    );
    for line in saturation::ending(sweep) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The soak series of every case that has one: a table per case and its drift statement.
fn soak_section(summary: &Summary) -> String {
    let mut out = String::new();
    for case in &summary.cases {
        let Some(s) = &case.series else { continue };
        let _ = writeln!(
            out,
            "\nSoak series, case {}{} (windows of {} from the end of the warmup time; requests \
             by send time, throughput by token receipt):\n",
            case.id,
            if case.complete { "" } else { ", INCOMPLETE" },
            span(s.window_s)
        );
        out.push_str(&super::soak::windows(s).markdown());
        let _ = writeln!(out, "\n{}", s.drift_statement);
    }
    out
}

/// The energy table and its note; empty when no case has an energy.
fn energy_section(summary: &Summary) -> String {
    let table = energy::table(summary);
    if table.is_empty() {
        return String::new();
    }
    format!(
        "\nEnergy over each case's measurement window:\n\n{}\n{}\n",
        table.markdown(),
        energy::NOTE
    )
}

/// The section on sessions: per case, its sessions in a paragraph and its table by turn; empty
/// when no case ran any.
fn sessions_section(summary: &Summary) -> String {
    let mut out = String::new();
    for case in &summary.cases {
        let Some(s) = &case.sessions else {
            continue;
        };
        if out.is_empty() {
            out.push_str(
                "\nMulti-turn sessions (each turn sends the whole history and a new message; \
                 figures over the ok responses of each turn; a session is complete when all its \
                 turns are ok, and only complete sessions enter the session figures):\n",
            );
        }
        let _ = writeln!(out, "\n{}: {}", case.id, sessions::overview(s));
        let _ = write!(out, "\n{}", sessions::turns(s).markdown());
    }
    out
}

/// The table of where the time goes; empty when no case's records carry phases.
fn phases_section(summary: &Summary) -> String {
    let table = phases::table(summary);
    if table.is_empty() {
        return String::new();
    }
    format!(
        "\nWhere the time goes (medians over the ok responses; connect and TLS over the new \
         connections, before the send and not part of TTFT; the rest from sent):\n\n{}",
        table.markdown()
    )
}

/// The table of the server's side; empty when no case's server reported its timings.
fn server_section(summary: &Summary) -> String {
    let table = server_side::table(summary);
    if table.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nThe server's own account (medians over the ok responses whose server reported its \
         timings, on the server's clock; delivery is the client's TTFT less the server's, over \
         the responses whose server TTFT is within it):\n\n{}",
        table.markdown()
    );
    let parts = server_side::parts_table(summary);
    if !parts.is_empty() {
        let _ = write!(
            out,
            "\nThe TTFT part by part (means over the same responses, so that they add up to the \
             client's mean TTFT: connection and write from the client's stamps, queue and \
             prefill from the server's, and the residual, the client's TTFT less those: the \
             server's time before it counts and the first token's way back):\n\n{}",
            parts.markdown()
        );
        for note in server_side::parts_notes(summary) {
            let _ = writeln!(out, "\n- Unavailable: {note}");
        }
    }
    out
}

/// The shard section: which part of which attempt a shard's own attempt is, or a merged
/// attempt's shards; empty for an attempt that is neither.
fn shards_section(summary: &Summary) -> String {
    let mut out = String::new();
    if let Some(run) = &summary.shard {
        let _ = writeln!(out, "\n{}", shards::part_of(run));
    }
    let Some(section) = &summary.shards else {
        return out;
    };
    let _ = write!(out, "\nShards:\n\n{}", shards::table(section).markdown());
    for line in shards::sentences(section) {
        let _ = writeln!(out, "\n{line}");
    }
    out
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
    fn numbers_read_like_the_reference_table() {
        use crate::fmt::thousands;
        assert_eq!(thousands(8192), "8,192");
        assert_eq!(thousands(512), "512");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(seconds(Some(190.4)), "0.19 s");
        assert_eq!(seconds(Some(12.34)), "12.3 ms");
        assert_eq!(seconds(None), "–");
    }

    #[test]
    fn the_section_lists_turns_and_incomplete_sessions() {
        let mut summary = crate::fixture::report().summary;
        assert_eq!(sessions_section(&summary), "");
        let one = |v: f64| crate::stats::Distribution::from_samples(&mut [v]);
        summary.cases[0].sessions = Some(crate::summary::sessions::SessionSummary {
            turns: 2,
            rate_rps: None,
            started: 3,
            completed: 2,
            incomplete: 1,
            incomplete_sessions: vec![7],
            duration_s: one(3.5),
            active_s: one(1.25),
            prompt_tokens: one(300.0),
            output_tokens: one(16.0),
            by_turn: vec![crate::summary::sessions::TurnSummary {
                turn: 2,
                n: 2,
                ttft_ms: one(40.0),
                prompt_tokens: one(200.0),
                history_tokens: one(150.0),
                cache_n: 2,
                cached_tokens: 240,
                hit_rate: Some(0.6),
            }],
        });
        let text = sessions_section(&summary);
        assert!(
            text.contains("3 sessions of 2 turns started, 2 complete, 1 incomplete (sessions 7)"),
            "{text}"
        );
        assert!(text.contains("duration p50 3.50 s"), "{text}");
        assert!(
            text.contains("| 2 | 2 | 40.0 ms | 40.0 ms | 200 | 150 | 60.0% | 2 |"),
            "{text}"
        );
    }

    #[test]
    fn no_complete_case_is_one_line_that_says_where_the_failures_are() {
        let mut summary = crate::fixture::report().summary;
        for case in &mut summary.cases {
            case.complete = false;
        }
        summary.cases[1].first_error = Some("http 500: boom".into());
        let text = render(&summary);
        assert!(!text.contains("| Input tokens per request"), "{text}");
        assert!(!text.contains("|---|".repeat(3).as_str()), "{text}");
        assert!(
            text.contains(
                "No case completed (0 of 4): each case and its failures are listed under \
                 \"Incomplete cases\" below, every request in requests.jsonl; first failure: \
                 http 500: boom\n"
            ),
            "{text}"
        );
        assert!(text.contains("\nIncomplete cases (not in the table above):\n"));
        let quiet = crate::report::terminal::results(&summary, 100);
        assert!(
            quiet.contains("No case completed (0 of 4)")
                && quiet.contains("in report.md")
                && quiet.lines().count() == 2,
            "{quiet}"
        );
    }

    #[test]
    fn the_results_note_names_itl_and_tpot_and_the_cases_without_itl() {
        let mut summary = crate::fixture::report().summary;
        let text = render(&summary);
        assert!(
            text.contains("| ITL p50 / p99 | TPOT p50 / p99 |"),
            "{text}"
        );
        assert!(
            text.contains("ITL: the gaps between a response's tokens"),
            "{text}"
        );
        assert!(text.contains("(descriptive)"), "{text}");
        assert!(!text.contains("No ITL"), "{text}");
        summary.cases[0].itl_ms = None;
        let id = summary.cases[0].id.clone();
        let text = render(&summary);
        assert!(
            text.contains(&format!(
                "No ITL (–) for {id}: their records hold no per-token gaps; TPOT is the per-token \
                 figure."
            )),
            "{text}"
        );
    }

    #[test]
    fn a_summary_without_energy_has_no_section() {
        let summary = crate::fixture::report().summary;
        assert!(summary.cases.iter().all(|c| c.energy.is_none()));
        assert_eq!(energy_section(&summary), "");
    }

    #[test]
    fn the_server_s_own_account_is_a_row_per_case_whose_server_gave_one() {
        use crate::record::TimingSource;
        use crate::summary::server_side::ServerSideSummary;
        let mut summary = crate::fixture::report().summary;
        assert_eq!(
            server_section(&summary),
            "",
            "no server timings, no section"
        );
        let one = |v: f64| crate::stats::Distribution::from_samples(&mut [v]);
        summary.cases[0].server = Some(ServerSideSummary {
            responses: 3,
            sources: vec![TimingSource::Vllm],
            ttft_exceeds_client: 1,
            queue_ms: one(0.5),
            prefill_ms: one(20.0),
            ttft_ms: one(20.5),
            decode_ms: one(100.0),
            delivery_ms: one(4.0),
            ttft_parts: Some(crate::summary::server_side::TtftParts::example()),
        });
        let text = server_section(&summary);
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), 4, "two tables of a header and one case: {text}");
        let parts: Vec<&str> = rows[3].split(" | ").collect();
        assert_eq!(parts.len(), 7, "{text}");
        assert_eq!((parts[3], parts[5]), ("–", "4.5 ms"), "{text}");
        assert!(text.contains("Unavailable: "), "{text}");
        let cells: Vec<&str> = rows[1].split(" | ").collect();
        assert_eq!(cells.len(), 9, "{text}");
        assert_eq!(cells[2], "vllm per-request metrics", "{text}");
        assert!(cells[8].starts_with('1'), "the flagged response: {text}");
    }

    #[test]
    fn without_phases_there_is_no_section() {
        let mut summary = crate::fixture::report().summary;
        for case in &mut summary.cases {
            case.phases = None;
        }
        assert_eq!(phases_section(&summary), "");
    }
}
