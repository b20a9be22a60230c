//! The page's section on session graphs (`--dag`): per case, the sessions' time to the final
//! answer's first token (TTFAT), the waits they kept, the session concurrency achieved, first
//! calls' TTFT against later ones', and the prefix cache against the tokens each call could
//! have had from it; a table per call id and per session, and the calls whose cache missed,
//! by name.

use super::page::{Block, Section};
use super::table::{Cell, Table};
use super::Report;
use crate::fmt::{seconds, thousands};
use crate::stats::Distribution;
use crate::summary::graph::{GraphSummary, MISS_BELOW};

/// A share as the section writes it.
fn share(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{:.1}%", v * 100.0))
}

/// `p50 X (p90 Y, n = N)` of a distribution of ms, or `–`.
fn spread(d: Option<&Distribution>) -> String {
    d.map_or_else(
        || "–".into(),
        |d| {
            format!(
                "p50 {} (p90 {}, n = {})",
                seconds(Some(d.median)),
                seconds(Some(d.p90)),
                d.n
            )
        },
    )
}

/// A case's figures in sentences.
fn overview(configured: u32, g: &GraphSummary) -> Vec<String> {
    let mut lines = vec![format!(
        "{} of {} sessions complete (every call ok); TTFAT {}; waits kept per session {}.",
        g.complete,
        g.sessions,
        spread(g.ttfat_ms.as_ref()),
        spread(g.waits_ms.as_ref()),
    )];
    if let Some(achieved) = g.sessions_in_flight {
        let asked = if configured > 0 {
            format!(" against {configured} configured")
        } else {
            String::new()
        };
        lines.push(format!(
            "Sessions in flight over the case's span: {achieved:.2} on average{asked}."
        ));
        if !g.in_flight_slices.is_empty() {
            let slices: Vec<String> = g
                .in_flight_slices
                .iter()
                .map(|m| format!("{m:.1}"))
                .collect();
            lines.push(format!(
                "In each twentieth of the span, from first send to last end: {}.",
                slices.join(", ")
            ));
        }
    }
    if let Some(i) = &g.interactivity_tps {
        lines.push(format!(
            "Output tokens per second of session span: p50 {:.1}, lowest {:.1} (n = {}).",
            i.median, i.min, i.n
        ));
    }
    lines.push(format!(
        "TTFT of first calls {}; of later calls {}.",
        spread(g.first_call_ttft_ms.as_ref()),
        spread(g.later_call_ttft_ms.as_ref()),
    ));
    lines.push(format!(
        "Prefix cache against the eligible context (the tokens of the call each extends): {} \
         of {} tokens served ({}).",
        thousands(g.cached_tokens),
        thousands(g.eligible_tokens),
        share(g.eligible_hit_rate)
    ));
    lines
}

/// The table per call id.
fn calls(g: &GraphSummary) -> Table {
    let mut table = Table::new([
        "Call",
        "Responses (n)",
        "TTFT p50",
        "TTFT p90",
        "Prompt tokens p50",
        "Eligible p50",
        "Cached / eligible",
    ]);
    for c in &g.by_call {
        let ttft = c.ttft_ms.as_ref();
        let n = ttft.map(|d| d.n);
        let median = |d: Option<&Distribution>| {
            Cell::figure(
                d.map_or_else(|| "–".into(), |d| format!("{:.0}", d.median)),
                d.map(|d| d.n),
            )
        };
        table.push([
            Cell::new(crate::console::printable(&c.call).into_owned()),
            Cell::count(thousands(c.n), c.n),
            Cell::figure(seconds(ttft.map(|d| d.median)), n),
            Cell::figure(seconds(ttft.map(|d| d.p90)), n),
            median(c.prompt_tokens.as_ref()),
            median(c.eligible_tokens.as_ref()),
            Cell::new(share(c.eligible_hit_rate)),
        ]);
    }
    table
}

/// The table per session.
fn sessions(g: &GraphSummary) -> Table {
    let mut table = Table::new([
        "Session",
        "Id",
        "Calls ok / sent",
        "TTFAT",
        "Span",
        "Cached / eligible",
    ]);
    for s in &g.by_session {
        table.push([
            crate::console::printable(&s.name).into_owned(),
            s.id.to_string(),
            format!("{} / {}", s.ok, s.sent),
            seconds(s.ttfat_ms),
            seconds(Some(s.span_ms)),
            share(s.eligible_hit_rate),
        ]);
    }
    table
}

/// The section; none when no case replayed a graph.
pub(super) fn section(report: &Report) -> Option<Section<'_>> {
    let cases: Vec<_> = report
        .summary
        .cases
        .iter()
        .filter_map(|c| Some((c, c.sessions.as_ref()?.graph.as_ref()?)))
        .collect();
    if cases.is_empty() {
        return None;
    }
    let mut section = Section::new("graphs", "Session graphs");
    section.note(format!(
        "Each call starts when the calls it waits for have ended, plus its wait; TTFAT runs from \
         a session's first send to its final answer's first token. Figures over ok calls; \
         session figures over complete sessions only. A call whose cache served under {:.0}% of \
         its eligible context is named below.",
        MISS_BELOW * 100.0
    ));
    for (case, g) in cases {
        section.push(Block::Heading(case.id.clone()));
        for line in overview(case.concurrency, g) {
            section.paragraph(line);
        }
        section.push(Block::Table(calls(g)));
        section.push(Block::Table(sessions(g)));
        named_calls(
            &mut section,
            (&g.misses, g.miss_count),
            "missed the cache they were eligible for",
            |m| {
                format!(
                    "{} of {} eligible tokens from the cache",
                    m.cached_tokens, m.eligible_tokens
                )
            },
        );
        named_calls(
            &mut section,
            (&g.beyond, g.beyond_count),
            "were served more from the cache than their context held (a prompt the cache \
             should not have known, or a server's count that is off)",
            |m| {
                format!(
                    "{} tokens from the cache, {} cacheable",
                    m.cached_tokens, m.eligible_tokens
                )
            },
        );
    }
    Some(section)
}

/// The calls `listed` (of `count` in all) by name, each with `what` of it, after a sentence
/// saying they `did`; nothing when there are none.
fn named_calls(
    section: &mut Section<'_>,
    (listed, count): (&[crate::summary::graph::CacheMiss], u32),
    did: &str,
    what: impl Fn(&crate::summary::graph::CacheMiss) -> String,
) {
    if count == 0 {
        return;
    }
    let mut lines: Vec<String> = listed
        .iter()
        .map(|m| {
            format!(
                "session {}, call {}: {}",
                crate::console::printable(&m.session),
                crate::console::printable(&m.call),
                what(m)
            )
        })
        .collect();
    if count as usize > lines.len() {
        lines.push(format!("and {} more", count as usize - lines.len()));
    }
    section.paragraph(format!("{count} call(s) {did}:"));
    section.push(Block::List(lines));
}
