//! `--canaries`: each case's canaries against their references, as a table shared by every
//! view, with what the divergences look like and the check's verdict.

use super::page::{Block, Section};
use super::table::Table;
use crate::summary::canaries::CanarySummary;
use std::fmt::Write;

/// The table's columns.
pub const COLUMNS: [&str; 6] = [
    "Case",
    "Beside",
    "Compared",
    "Diverged",
    "First divergence",
    "Looks like",
];

/// What the table's figures are, in one paragraph.
pub const NOTE: &str = "Canaries (--canaries): fixed prompts of 64 tokens decoded greedily \
    (temperature 0, a fixed seed where the API takes one), 32 tokens each, sent alone before \
    the load for their reference outputs, then after each case's measured rounds in canary \
    rounds, each prompt twice, with the case's load beside it. Beside: the other requests sent \
    with each canary (the case's concurrency less one). Compared: the canaries that ended \
    complete, as their reference did. Diverged: those whose text differed from the reference's, \
    with Wilson's interval of the share. First divergence: the earliest token event (from 0) \
    whose text differed. A divergence in the first quarter of the output or its first 4 events \
    is early and looks like corruption, unless each prompt diverged to the same other output \
    every time (stable: a batch's numerics flipping a near tie); a later one is the usual batch \
    non-invariance of floating point. Canary rounds are in no figure of the load.";

/// The table: one row per case with canaries, in run order.
pub fn table(summary: &crate::summary::Summary) -> Table {
    let mut table = Table::new(COLUMNS);
    for case in &summary.cases {
        if let Some(c) = &case.canaries {
            table.push(row(&case.id, c));
        }
    }
    table
}

/// The diverging share with its interval and the check, e.g. `2 of 4 (50 %, [15, 85] 95 %)`.
pub fn diverged(c: &CanarySummary) -> String {
    let share = match (c.share, c.interval) {
        (Some(s), Some([low, high])) => format!(
            " ({:.0} %, [{:.0}, {:.0}] {:.0} %)",
            s * 100.0,
            low * 100.0,
            high * 100.0,
            c.level * 100.0
        ),
        _ => String::new(),
    };
    let check = match c.fail_above {
        Some(bound) if c.check_failed => format!("; above --canary-fail {bound}: FAILED"),
        Some(bound) => format!("; within --canary-fail {bound}"),
        None => String::new(),
    };
    format!("{} of {}{share}{check}", c.diverged, c.compared)
}

fn row(id: &str, c: &CanarySummary) -> [String; 6] {
    let first = c.first_divergence.map_or_else(
        || "–".to_owned(),
        |at| {
            let positions: Vec<String> = c.diverging.iter().map(|d| d.at.to_string()).collect();
            format!("event {at} (all: {})", positions.join(", "))
        },
    );
    let mut compared = c.compared.to_string();
    if c.failed + c.uncompared > 0 {
        let _ = write!(
            compared,
            " of {} ({} failed, {} without a reference)",
            c.sent, c.failed, c.uncompared
        );
    }
    [
        id.to_owned(),
        c.beside.to_string(),
        compared,
        diverged(c),
        first,
        c.verdict.sentence().to_owned(),
    ]
}

/// The page's canary section: a banner when a check failed, the table and its note; none when
/// no case has canaries.
pub fn section(report: &super::Report) -> Option<Section<'_>> {
    let table = table(&report.summary);
    if table.is_empty() {
        return None;
    }
    let mut section = Section::new("canaries", "Output canaries");
    let failed: Vec<&str> = report
        .summary
        .cases
        .iter()
        .filter(|c| c.canaries.as_ref().is_some_and(|c| c.check_failed))
        .map(|c| c.id.as_str())
        .collect();
    if !failed.is_empty() {
        section.push(Block::Banner {
            id: "canaries-failed",
            text: format!(
                "Output under load differs from the output alone beyond --canary-fail in {}: \
                 the check failed (exit code 6).",
                failed.join(", ")
            ),
        });
    }
    section.push(Block::Table(table));
    section.note(NOTE);
    Some(section)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::canaries::{Divergence, Verdict};

    fn summary(diverged: u32, fail_above: Option<f64>) -> CanarySummary {
        let mut s = CanarySummary {
            sent: 4,
            failed: 0,
            uncompared: 0,
            compared: 4,
            diverged,
            share: Some(f64::from(diverged) / 4.0),
            interval: Some([0.15, 0.85]),
            level: 0.95,
            early: 0,
            repeated: 0,
            varied: 0,
            beside: 8,
            first_divergence: (diverged > 0).then_some(10),
            verdict: if diverged > 0 {
                Verdict::Late
            } else {
                Verdict::Same
            },
            diverging: (0..diverged)
                .map(|prompt| Divergence {
                    prompt,
                    at: 10 + prompt,
                    events: 32,
                    early: false,
                })
                .collect(),
            fail_above: None,
            check_failed: false,
        };
        s.check(fail_above);
        s
    }

    #[test]
    fn rows_say_the_share_the_positions_and_the_check() {
        let r = row("c", &summary(2, Some(0.25)));
        assert_eq!(r[1], "8");
        assert_eq!(
            r[3],
            "2 of 4 (50 %, [15, 85] 95 %); above --canary-fail 0.25: FAILED"
        );
        assert_eq!(r[4], "event 10 (all: 10, 11)");
        assert!(r[5].starts_with("diverged late"));
        let r = row("c", &summary(0, None));
        assert_eq!(
            (r[3].as_str(), r[4].as_str()),
            ("0 of 4 (0 %, [15, 85] 95 %)", "–")
        );
    }
}
