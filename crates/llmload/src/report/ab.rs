//! The A/B section (`llmload ab`): per case, both arms side by side with the paired change of
//! each figure and its interval; then every rule's verdict on the pairs, and how the pairs were
//! made.

use super::page::{Block, Section};
use super::table::Table;
use crate::summary::ab::{AbCase, AbSection, PairedChange, PairedCheck, PairedVerdict};

/// A figure in its unit: ms for times, tok/s for throughput.
fn value(metric: &str, v: f64) -> String {
    if metric == "throughput" {
        format!("{} tok/s", crate::fmt::number(v))
    } else {
        format!("{} ms", crate::fmt::number(v))
    }
}

/// A change in percent with its interval: `+12.3 % [+8.1, +16.6]`, or why there is none.
fn change_text(change: &PairedChange, unit: &str) -> String {
    let point = format!("{:+.1}{unit}", change.change);
    match change.interval {
        Some(i) => format!("{point} [{:+.1}, {:+.1}]", i.low, i.high),
        None => format!("{point} (no interval)"),
    }
}

/// The method in words, and how many pairs went each way where the attempt says: "sign test
/// over pairs, 95 %; B higher in 20, lower in 4".
fn method_text(change: &PairedChange) -> String {
    let method = change.method.map_or_else(
        || "too few pairs".to_owned(),
        |m| {
            format!(
                "{}, {} %",
                m.words(),
                crate::fmt::number(change.level * 100.0)
            )
        },
    );
    match (change.b_higher, change.b_lower) {
        (Some(higher), Some(lower)) => format!("{method}; B higher in {higher}, lower in {lower}"),
        _ => method,
    }
}

/// One case's table: each figure in A, in B, the paired change B vs A and its interval, the
/// pairs it rests on and how the interval was found.
fn case_table(case: &AbCase) -> Table {
    let mut table = Table::new([
        "Figure",
        "A",
        "B",
        "Paired change B vs A",
        "Pairs",
        "Interval",
    ]);
    for f in &case.figures {
        table.push([
            f.metric.clone(),
            value(&f.metric, f.a),
            value(&f.metric, f.b),
            change_text(&f.change, " %"),
            f.change.pairs.to_string(),
            method_text(&f.change),
        ]);
    }
    table
}

/// The verdict in words, with why where it cannot tell.
fn verdict_text(check: &PairedCheck) -> String {
    match &check.verdict {
        PairedVerdict::Inconclusive { why, .. } => format!("inconclusive: {why}"),
        PairedVerdict::NotCompared { reason } => format!("not compared: {reason}"),
        PairedVerdict::Unfinished { reason } => format!("unfinished: {reason}"),
        v => v.name().to_owned(),
    }
}

/// The unit a rule's change is written in: percent, or its metric's own.
fn rule_unit(rule: &str) -> &'static str {
    if rule.ends_with('%') {
        " %"
    } else if rule.starts_with("throughput") {
        " tok/s"
    } else if rule.starts_with("goodput") {
        " req/s"
    } else if rule.starts_with("error_rate") {
        " (share)"
    } else {
        " ms"
    }
}

/// The gate's table: each rule on each case, its paired change, the pairs and the verdict.
fn checks_table(section: &AbSection) -> Table {
    let mut table = Table::new(["Rule", "Case", "Paired change", "Pairs", "Verdict"]);
    for check in &section.checks {
        let unit = rule_unit(&check.rule);
        table.push([
            check.rule.clone(),
            check.case.clone(),
            check
                .change
                .as_ref()
                .map_or_else(|| "–".to_owned(), |c| change_text(c, unit)),
            check.change.as_ref().map_or(0, |c| c.pairs).to_string(),
            verdict_text(check),
        ]);
    }
    table
}

/// What the arms were and how the pairs were made, in sentences.
fn method_sentences(section: &AbSection) -> Vec<String> {
    let mut lines = vec![format!(
        "A (base): {}. B (candidate): {}{}.",
        section.base_url,
        section.candidate_url,
        if section.candidate_differs.is_empty() {
            String::new()
        } else {
            format!(", with its own {}", section.candidate_differs.join(" and "))
        }
    )];
    lines.push(format!(
        "Both arms ran interleaved in one attempt, in {}; each pair of adjacent blocks holds \
         one block of each arm, in a random balanced order (ABBA or BAAB, drawn from seed {}). \
         A figure of an arm is the median of its blocks' figures; the change is B's figure \
         against A's within each pair (the median of the pairs' ratios or differences), so \
         that what the machine did over the attempt falls on both arms. Its interval is the \
         sign test's, which a few pairs caught in a burst of other work move no more than any \
         other pair. It holds where the machine drifts slower than a pair of blocks and the \
         arms do not interfere beyond that shared drift.",
        section.blocks, section.seed
    ));
    lines
}

/// The page's A/B section; none for an attempt that is not `llmload ab`'s.
pub fn section(report: &super::Report) -> Option<Section<'_>> {
    let ab = report.summary.ab.as_ref()?;
    let mut section = Section::new("ab", "A/B, interleaved");
    for line in method_sentences(ab) {
        section.paragraph(line);
    }
    for case in &ab.cases {
        section.push(Block::Heading(format!(
            "{}: {} of {} pairs, order {}",
            case.case, case.pairs_run, case.pairs_planned, case.order
        )));
        section.push(Block::Table(case_table(case)));
    }
    if !ab.checks.is_empty() {
        section.push(Block::Heading("The paired gate".into()));
        section.push(Block::Table(checks_table(ab)));
        let failing = ab
            .checks
            .iter()
            .filter(|c| c.verdict.fails(ab.fail_on_inconclusive))
            .count();
        section.note(if failing == 0 {
            "The gate passes: no rule regressed.".to_owned()
        } else {
            format!("The gate fails: {failing} check(s) broke (exit code 5).")
        });
    }
    Some(section)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::ab::{PairedMethod, PairedVerdict};

    fn change(change: f64, low: f64, high: f64) -> PairedChange {
        PairedChange {
            change,
            interval: Some(crate::stats::Interval { low, high }),
            pairs: 12,
            b_higher: Some(10),
            b_lower: Some(2),
            method: Some(PairedMethod::SignTest),
            level: 0.95,
        }
    }

    #[test]
    fn each_case_shows_both_arms_the_paired_change_and_each_rules_verdict() {
        let section = AbSection {
            base_url: "http://a".into(),
            candidate_url: "http://b".into(),
            candidate_differs: vec!["model tuned".into()],
            seed: 9,
            block_rounds: 1,
            blocks: "blocks of 1 round".into(),
            level: 0.95,
            cases: vec![AbCase {
                case: "in64-c1-out8".into(),
                order: "ABBA BAAB".into(),
                pairs_planned: 4,
                pairs_run: 4,
                figures: vec![crate::summary::ab::ArmsFigure {
                    metric: "ttft_p50".into(),
                    a: 100.0,
                    b: 150.0,
                    change: change(50.0, 40.0, 61.0),
                }],
            }],
            checks: vec![
                PairedCheck {
                    case: "in64-c1-out8".into(),
                    rule: "ttft_p50 > +10%".into(),
                    change: Some(change(50.0, 40.0, 61.0)),
                    left_out: Vec::new(),
                    verdict: PairedVerdict::Regressed,
                },
                PairedCheck {
                    case: "in64-c1-out8".into(),
                    rule: "e2e_p50 > +20ms".into(),
                    change: Some(change(12.0, -3.0, 27.0)),
                    left_out: Vec::new(),
                    verdict: PairedVerdict::Inconclusive {
                        pairs_to_decide: Some(40),
                        why: "cannot tell: about 40 pairs would likely decide".into(),
                    },
                },
            ],
            fail_on_inconclusive: false,
        };
        assert!(section.failed());
        let case = case_table(&section.cases[0]).markdown();
        assert!(case.contains(
            "| ttft_p50 | 100 ms | 150 ms | +50.0 % [+40.0, +61.0] | 12 | sign test over pairs, \
             95 %; B higher in 10, lower in 2 |"
        ));
        let gate = checks_table(&section).markdown();
        assert!(gate.contains("| ttft_p50 > +10% | in64-c1-out8 | +50.0 % [+40.0, +61.0]"));
        assert!(gate.contains("| +12.0 ms [-3.0, +27.0] | 12 | inconclusive: cannot tell"));
        let said = method_sentences(&section).join(" ");
        assert!(said.contains("with its own model tuned") && said.contains("seed 9"));
        assert!(said.contains("sign test"), "{said}");
    }
}
