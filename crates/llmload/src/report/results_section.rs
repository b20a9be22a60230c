//! The page's Results section: the tables of every kind of case that completed (closed rounds,
//! continuous and open loops, embeddings and rerank, multi-turn sessions), each with what its
//! figures are; and where no case completed, one sentence that says so and where the failures
//! are.

use super::results::{details, named, reference, window};
use crate::report::charts::lengths::Lengths;
use crate::report::page::{Block, Chart, Section};
use crate::report::table::Mark;
use crate::report::text::{interval_note, no_complete_case, per_token_note, DESCRIPTIVE_NOTE};
use crate::report::{pooling, sessions, Report};
use crate::summary::{CaseSummary, Summary};

/// What the reference table's figures are.
const REFERENCE_NOTE: &str = "Complete cases only. TTFT: request sent → first event carrying \
    a generated token; complete response: sent → final event; medians and p99 over the n \
    responses. Requests/s: ok responses ÷ Σ the rounds' spans (first send → last completion). \
    Output throughput: mean over rounds of Σ output tokens ÷ (last completion − first send); \
    total throughput counts the input tokens too. Mean, min and max of each figure are under \
    \"Distributions\" and in cases.csv.";

/// The Results section; every attempt has one.
pub fn section(report: &Report) -> Option<Section<'_>> {
    let summary = &report.summary;
    let mut section = Section::new("results", "Results");
    if summary.ab.is_some() && summary.cases.is_empty() {
        section.paragraph(
            "Each arm's results, block by block, are its own attempt beside this report: A/ and \
             B/ (report.md, report.html, requests.jsonl).",
        );
        return Some(section);
    }
    let lengths = Lengths::of(report);
    let reference = named(reference(summary), summary, &lengths);
    let window = window(summary);
    let pooled = pooling::table(summary);
    let sessions = complete_sessions(summary);
    if reference.is_empty() && window.is_empty() && pooled.is_empty() && sessions.is_empty() {
        let listed = if summary.cases.iter().any(|c| !c.complete) {
            "listed under \"Incomplete cases\" below"
        } else {
            "in no table"
        };
        section.paragraph(no_complete_case(summary, listed));
        return Some(section);
    }
    if !reference.is_empty() {
        section.push(Block::Table(reference));
        section.note(REFERENCE_NOTE);
        section.note(interval_note(summary));
    }
    if !window.is_empty() {
        section.table(
            "Continuous and open-loop cases (figures over the measurement window)",
            window,
        );
        section.note(interval_note(summary));
        section.note(send_lag_note(summary));
    }
    if !pooled.is_empty() {
        section.table("Embeddings and rerank cases", pooled);
        section.note(pooling::NOTE);
    }
    sessions_blocks(&mut section, report, &sessions);
    let details = details(summary);
    if !details.is_empty() {
        section.table("Distributions", details);
        section.note(per_token_note(summary));
    }
    if section.blocks.iter().any(|b| match b {
        Block::Table(t) => t
            .rows
            .iter()
            .flat_map(|r| &r.cells)
            .any(|c| c.marks.contains(&Mark::Descriptive)),
        _ => false,
    }) {
        section.note(DESCRIPTIVE_NOTE);
    }
    Some(section)
}

/// The cases that ran multi-turn sessions and completed.
fn complete_sessions(summary: &Summary) -> Vec<&CaseSummary> {
    summary
        .cases
        .iter()
        .filter(|c| c.complete && c.sessions.is_some())
        .collect()
}

/// Multi-turn sessions: per case, its sessions in a paragraph and its table by turn, then the
/// chart by turn.
fn sessions_blocks<'a>(section: &mut Section<'a>, report: &'a Report, cases: &[&CaseSummary]) {
    if cases.is_empty() {
        return;
    }
    section.push(Block::Heading("Multi-turn sessions".into()));
    section.note(
        "Each turn sends the whole history and a new message; figures over the ok responses of \
         each turn; a session is complete when all its turns are ok, and only complete sessions \
         enter the session figures.",
    );
    for case in cases {
        let Some(s) = &case.sessions else { continue };
        section.paragraph(format!("{}: {}", case.id, sessions::overview(s)));
        section.push(Block::Table(sessions::turns(s)));
    }
    section.push(Block::Chart(Chart {
        id: Some("sessions-chart"),
        title: sessions::CHART_TITLE.into(),
        draw: Box::new(move || sessions::chart(&report.summary)),
    }));
}

/// The send lag note of open loops: the priority the pacer thread ran at; empty without one.
fn send_lag_note(summary: &Summary) -> String {
    let mut priorities: Vec<&str> = summary
        .cases
        .iter()
        .filter_map(|c| c.load.as_ref()?.pacer_priority.as_deref())
        .collect();
    priorities.dedup();
    if priorities.is_empty() {
        return String::new();
    }
    format!(
        "Send lag: sent − scheduled. The open-loop pacer thread ran at {} priority (real-time \
         and raised need privileges; at normal priority a busy machine may wake it late, and \
         that shows as send lag).",
        priorities.join(" / ")
    )
}
