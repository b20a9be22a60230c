//! The capacity section: the one line that answers, the bracket's two loads with their
//! throughput, Little's-law figures and cost, every load measured with each objective's
//! verdict, interval and blocks, the saturation point and the cap, how the verdicts were
//! reached, and the command that goes on when the search is undecided.

use super::page::{Block, Section};
use super::table::{Cell, Table};
use crate::fmt::number;
use crate::summary::capacity::{Capacity, LoadAnswer, LoadUnit, RuleVerdict};
use std::fmt::Write as _;

/// A share as a percentage, to 0.1 %.
pub(super) fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// One objective's verdict in a cell: `meets 100.0% [70.1%, 100.0%] of 7 blocks`.
fn verdict_text(v: &RuleVerdict) -> String {
    let over = if v.statistic.starts_with("share of blocks") {
        format!("of {} blocks", v.blocks)
    } else if v.statistic.starts_with("share of responses within") {
        format!("of {} responses within ({} segments)", v.requests, v.blocks)
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
            Cell::new(match (&p.remeasured, p.out_of_reach) {
                (Some(again), _) => {
                    format!(
                        "{} (re-measured: {})",
                        p.verdict.word(),
                        again.verdict.word()
                    )
                }
                (None, true) => format!("{} (out of reach)", p.verdict.word()),
                (None, false) => p.verdict.word().to_owned(),
            }),
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
        let _ = write!(
            text,
            " Little's law: requests/s × (think time + response time) = {} users, beside the {} \
             run.",
            number(little),
            number(users)
        );
    }
    if let Some(again) = &a.remeasured {
        let texts: Vec<String> = again
            .verdicts
            .iter()
            .map(|v| format!("{} {}", v.rule, verdict_text(v)))
            .collect();
        let _ = write!(
            text,
            " Re-measured beside the other end, {} blocks: {} ({}).",
            again.blocks,
            again.verdict.word(),
            texts.join("; ")
        );
    }
    if let Some(cost) = a.cost_per_million_output_tokens {
        let _ = write!(text, " Cost: {cost:.2} per million output tokens.");
    }
    if let Some(per_joule) = a.output_tokens_per_joule {
        let _ = write!(
            text,
            " Energy: {per_joule:.2} output tokens per joule (GPU power over its blocks' windows)."
        );
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
         blocks that meet it, of an open loop's responses within the bound, or of the responses \
         that failed).",
        number(capacity.confidence * 100.0)
    ));
    section.paragraph(match (capacity.saturation, capacity.recommended_cap) {
        (Some(sat), Some(cap)) => format!(
            "Saturation (C_sat, fitted to the loads' throughput): {}{} ({}); recommended cap: \
             {} ({}).",
            number(sat),
            capacity
                .saturation_range
                .map_or_else(String::new, |[l, h]| format!(
                    " (range {}–{})",
                    number(l),
                    number(h)
                )),
            capacity.saturation_method,
            number(cap),
            capacity.cap_method
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

/// An undecided answer with both ends of its bracket and a load between them, for tests.
#[cfg(test)]
pub(crate) fn example() -> Capacity {
    use crate::summary::capacity::SloVerdict;
    let verdict = |verdict, estimate: f64| RuleVerdict {
        rule: "ttft_p90<30ms".into(),
        verdict,
        statistic: "share of blocks that meet TTFT p90 < 30 ms".into(),
        estimate,
        low: (estimate - 0.4).max(0.0),
        high: (estimate + 0.4).min(1.0),
        threshold: 0.5,
        blocks: 7,
        requests: 350,
        pooled: Some(estimate),
    };
    let at = |load: f64, v: SloVerdict, estimate: f64| LoadAnswer {
        load,
        concurrency: load,
        rate_rps: 8.0 * load,
        users: None,
        users_littles_law: None,
        output_tps: 128.0 * load,
        response_ms: 110.0,
        cost_per_million_output_tokens: Some(1.5),
        output_tokens_per_joule: Some(2.25),
        verdicts: vec![verdict(v, estimate)],
        verdict: v,
        blocks: 7,
        reused_blocks: 0,
        out_of_reach: false,
        remeasured: None,
    };
    Capacity {
        unit: LoadUnit::Concurrency,
        confidence: 0.95,
        slo: vec!["ttft_p90<30ms".into()],
        decided: false,
        answer: "Not decided to the resolution: 8 concurrent generations meet TTFT p90 < 30 ms \
                 and 11 do not."
            .into(),
        max_passing: Some(at(8.0, SloVerdict::Meets, 1.0)),
        first_failing: Some(at(11.0, SloVerdict::Fails, 0.0)),
        probes: vec![
            at(8.0, SloVerdict::Meets, 1.0),
            LoadAnswer {
                out_of_reach: true,
                ..at(9.0, SloVerdict::Undecided, 0.5)
            },
            at(11.0, SloVerdict::Fails, 0.0),
        ],
        saturation: None,
        saturation_range: None,
        recommended_cap: None,
        cap_method: String::new(),
        saturation_method: "2 loads measured; at least 3 are needed".into(),
        stopped_because: "the budget of 10m is spent".into(),
        continue_with: Some("llmload capacity --slo 'ttft_p90<30ms' --resume out/c/x".into()),
        method: vec!["Each load is measured in blocks.".into()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Report;

    #[test]
    fn the_section_leads_with_the_answer_and_lists_every_load() {
        let mut summary = crate::fixture::report().summary;
        summary.capacity = Some(example());
        let report = Report::of(&summary);
        let section = section(&report).expect("a capacity section");
        assert_eq!(section.id, "capacity");
        let Some(Block::Paragraph(first)) = section.blocks.first() else {
            panic!("the answer comes first");
        };
        assert!(
            first.starts_with("Not decided to the resolution: 8"),
            "{first}"
        );
        let rows: Vec<usize> = section
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t.rows.len()),
                _ => None,
            })
            .collect();
        assert_eq!(rows, [3], "one row per load measured");
        let text = crate::report::markdown::write(&[section]);
        assert!(
            text.contains("undecided 50.0% [10.0%, 90.0%] of 7 blocks"),
            "{text}"
        );
        assert!(
            text.contains("Cost: 1.50 per million output tokens"),
            "{text}"
        );
        assert!(text.contains("| undecided (out of reach) |"), "{text}");
        assert!(
            text.contains("Energy: 2.25 output tokens per joule"),
            "{text}"
        );
        assert!(text.contains("--resume out/c/x"), "{text}");
        assert!(text.contains("Saturation: not placed"), "{text}");
    }

    #[test]
    fn an_open_loops_cell_counts_responses_within_the_bound_not_failures() {
        let verdict = RuleVerdict {
            rule: "ttft_p90<50ms".into(),
            verdict: crate::summary::capacity::SloVerdict::Meets,
            statistic: "share of responses within the bound of TTFT p90 < 50 ms (batch means \
                        over consecutive segments)"
                .into(),
            estimate: 0.966,
            low: 0.922,
            high: 1.0,
            threshold: 0.9,
            blocks: 14,
            requests: 701,
            pooled: Some(0.966),
        };
        assert_eq!(
            verdict_text(&verdict),
            "meets 96.6% [92.2%, 100.0%] of 701 responses within (14 segments)"
        );
    }

    #[test]
    fn a_re_measured_end_shows_both_verdicts_in_its_row_and_its_sentence() {
        let mut capacity = example();
        let again = crate::summary::capacity::Remeasurement {
            verdict: crate::summary::capacity::SloVerdict::Fails,
            verdicts: vec![RuleVerdict {
                verdict: crate::summary::capacity::SloVerdict::Fails,
                estimate: 0.0,
                low: 0.0,
                high: 0.4,
                ..capacity.probes[0].verdicts[0].clone()
            }],
            blocks: 7,
            reused_blocks: 0,
        };
        assert!(!capacity.moved(), "nothing re-measured yet");
        for end in [capacity.max_passing.as_mut(), capacity.probes.first_mut()] {
            end.expect("the passing end").remeasured = Some(again.clone());
        }
        assert!(capacity.moved(), "the passing end now fails");
        let mut summary = crate::fixture::report().summary;
        summary.capacity = Some(capacity);
        let report = Report::of(&summary);
        let text = crate::report::markdown::write(&[section(&report).expect("a section")]);
        assert!(
            text.contains("| 8 | meets (re-measured: fails) |"),
            "{text}"
        );
        assert!(
            text.contains(
                "Re-measured beside the other end, 7 blocks: fails (ttft_p90\\<30ms fails 0.0% \
                 [0.0%, 40.0%] of 7 blocks)."
            ),
            "{text}"
        );
    }

    #[test]
    fn a_summary_without_a_search_has_no_section() {
        let report = Report::of(&crate::fixture::report().summary);
        assert!(section(&report).is_none());
    }
}
