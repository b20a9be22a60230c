//! Multi-turn sessions in `report.md`: per case, the sessions that completed and those that did
//! not (by id), the session figures, and a table by turn index (TTFT, prompt tokens, the history
//! a cache may serve and the share of the prompt it served).

use crate::fmt::{seconds, thousands};
use crate::stats::Distribution;
use crate::summary::sessions::SessionSummary;
use crate::summary::Summary;
use std::fmt::Write;

/// A median and a p90 (`–` when absent).
fn quantiles(d: Option<&Distribution>, show: fn(Option<f64>) -> String) -> (String, String) {
    (show(d.map(|d| d.median)), show(d.map(|d| d.p90)))
}

/// A token count as the table writes it.
fn tokens(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.0}"))
}

/// Seconds as the table writes them.
fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.2} s"))
}

/// The report's section on sessions; empty when no case ran any.
pub fn markdown(summary: &Summary) -> String {
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
        let _ = writeln!(out, "\n{}: {}", case.id, overview(s));
        out.push_str(
            "\n| Turn | Responses (n) | TTFT p50 | TTFT p90 | Prompt tokens p50 | History p50 | Cached / prompt | Cache reports (n) |\n\
             |---|---|---|---|---|---|---|---|\n",
        );
        for t in &s.by_turn {
            let (ttft50, ttft90) = quantiles(t.ttft_ms.as_ref(), seconds);
            let _ = writeln!(
                out,
                "| {} | {} | {ttft50} | {ttft90} | {} | {} | {} | {} |",
                t.turn,
                thousands(t.n),
                tokens(t.prompt_tokens.as_ref().map(|d| d.median)),
                tokens(t.history_tokens.as_ref().map(|d| d.median)),
                t.hit_rate
                    .map_or_else(|| "–".into(), |h| format!("{:.1}%", h * 100.0)),
                thousands(t.cache_n),
            );
        }
    }
    out
}

/// The case's sessions in one paragraph.
fn overview(s: &SessionSummary) -> String {
    let mut text = format!(
        "{} sessions of {} turns started, {} complete, {} incomplete",
        thousands(s.started),
        s.turns,
        thousands(s.completed),
        thousands(s.incomplete)
    );
    if !s.incomplete_sessions.is_empty() {
        let ids: Vec<String> = s.incomplete_sessions.iter().map(u64::to_string).collect();
        let more = if (s.incomplete as usize) > ids.len() {
            ", …"
        } else {
            ""
        };
        let _ = write!(text, " (sessions {}{more})", ids.join(", "));
    }
    let (d50, d90) = quantiles(s.duration_s.as_ref(), secs);
    let (a50, a90) = quantiles(s.active_s.as_ref(), secs);
    let (p50, _) = quantiles(s.prompt_tokens.as_ref(), tokens);
    let (o50, _) = quantiles(s.output_tokens.as_ref(), tokens);
    let _ = write!(
        text,
        ". Complete sessions: duration p50 {d50}, p90 {d90} (first send → last answer, think \
         times included); active p50 {a50}, p90 {a90} (Σ of the turns' complete-response \
         times); Σ prompt tokens p50 {p50}; Σ output tokens p50 {o50}."
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::sessions::TurnSummary;

    #[test]
    fn the_section_lists_turns_and_incomplete_sessions() {
        let mut summary = crate::fixture::report().summary;
        assert_eq!(markdown(&summary), "");
        let one = |v: f64| Distribution::from_samples(&mut [v]);
        summary.cases[0].sessions = Some(SessionSummary {
            turns: 2,
            started: 3,
            completed: 2,
            incomplete: 1,
            incomplete_sessions: vec![7],
            duration_s: one(3.5),
            active_s: one(1.25),
            prompt_tokens: one(300.0),
            output_tokens: one(16.0),
            by_turn: vec![TurnSummary {
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
        let text = markdown(&summary);
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
}
