//! The capacity section: the one line that answers, the bracket's two loads with their
//! throughput, Little's-law figures and cost, every load measured with each objective's
//! verdict, interval and blocks, the saturation point and the cap, how the verdicts were
//! reached, and the command that goes on when the search is undecided.

use super::page::{Block, Section};
use super::table::{Cell, Table};
use crate::fmt::number;
use crate::summary::capacity::{Capacity, LoadAnswer, LoadUnit, RuleVerdict};

/// A share as a percentage, to 0.1 %.
fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// One objective's verdict in a cell: `meets 100.0% [70.1%, 100.0%] of 7 blocks`.
fn verdict_text(v: &RuleVerdict) -> String {
    let over = if v.statistic.starts_with("share of blocks") {
        format!("of {} blocks", v.blocks)
    } else {
        format!("of {} responses failed", v.requests)
    };
    format!(
        "{} {} [{}, {}] {over}",
        v.verdict.word(),
        percent(v.estimate),
        percent(v.low),
        percent(v.high)
    )
}

/// The table of every load measured.
fn probes(capacity: &Capacity) -> Table {
    let load = match capacity.unit {
        LoadUnit::Concurrency => "concurrency",
        LoadUnit::Users => "users",
        LoadUnit::RateRps => "rate (req/s)",
    };
    let mut head = vec![
        load.to_owned(),
        "verdict".to_owned(),
        "in flight".to_owned(),
        "req/s".to_owned(),
        "output tok/s".to_owned(),
    ];
    head.extend(capacity.slo.iter().cloned());
    let mut table = Table::new(head);
    for p in &capacity.probes {
        let mut cells = vec![
            Cell::new(number(p.load)),
            Cell::new(p.verdict.word()),
            Cell::new(number(p.concurrency)),
            Cell::new(format!("{:.2}", p.rate_rps)),
            Cell::new(format!("{:.1}", p.output_tps)),
        ];
        cells.extend(
            p.verdicts
                .iter()
                .map(|v| Cell::figure(verdict_text(v), Some(v.requests))),
        );
        table.push(cells);
    }
    table
}

/// One of the bracket's loads in a sentence.
fn at(name: &str, a: &LoadAnswer, unit: LoadUnit) -> String {
    let mut text = format!(
        "{name}: {} — {} requests/s, {} output tokens/s, {} requests in flight on average, \
         mean response {} ({} blocks{}).",
        unit.words(a.load),
        format_args!("{:.2}", a.rate_rps),
        format_args!("{:.1}", a.output_tps),
        number(a.concurrency),
        crate::fmt::seconds(Some(a.response_ms)),
        a.blocks,
        if a.reused_blocks > 0 {
            format!(", {} reused", a.reused_blocks)
        } else {
            String::new()
        }
    );
    if let (Some(users), Some(little)) = (a.users, a.users_littles_law) {
        text.push_str(&format!(
            " Little's law: requests/s × (think time + response time) = {} users, beside the {} \
             run.",
            number(little),
            number(users)
        ));
    }
    if let Some(cost) = a.cost_per_million_output_tokens {
        text.push_str(&format!(" Cost: {cost:.2} per million output tokens."));
    }
    text
}

/// The section, when the attempt is a capacity search.
pub fn section(report: &super::Report) -> Option<Section<'_>> {
    let capacity = report.summary.capacity.as_ref()?;
    let mut section = Section::new("capacity", "Capacity");
    section.push(Block::Paragraph(capacity.answer.clone()));
    let mut bracket = Vec::new();
    if let Some(a) = &capacity.max_passing {
        bracket.push(at(
            "Largest load that meets every objective",
            a,
            capacity.unit,
        ));
    }
    if let Some(a) = &capacity.first_failing {
        bracket.push(at("First load that does not", a, capacity.unit));
    }
    if !bracket.is_empty() {
        section.push(Block::List(bracket));
    }
    section.table("Loads measured", probes(capacity));
    section.note(format!(
        "Each objective's cell: its verdict at {} %, the estimate and its interval (the share of \
         blocks that meet it, or the share of responses that failed).",
        number(capacity.confidence * 100.0)
    ));
    section.paragraph(match (capacity.saturation, capacity.recommended_cap) {
        (Some(sat), Some(cap)) => format!(
            "Saturation (C_sat, fitted to the loads' throughput): {}; recommended cap: {} \
             (0.7 × C_sat).",
            number(sat),
            number(cap)
        ),
        _ => format!(
            "Saturation: not placed by the loads measured ({}).",
            capacity.saturation_method
        ),
    });
    for line in &capacity.method {
        section.note(line);
    }
    section.note(format!("The search stopped: {}.", capacity.stopped_because));
    if let Some(command) = &capacity.continue_with {
        section.paragraph(format!("To go on, reusing what was measured: {command}"));
    }
    Some(section)
}
