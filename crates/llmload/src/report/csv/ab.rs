//! The `cases.csv` of an `llmload ab` comparison: one row per case and figure, both arms'
//! figures, the paired change with its interval, and each rule's verdict on it. The arms'
//! own `cases.csv` (in `A/` and `B/`) hold every figure of every case.

use crate::report::table::Table;
use crate::summary::ab::{AbSection, PairedCheck};

/// The columns, in order.
const COLUMNS: [&str; 15] = [
    "case",
    "metric",
    "a",
    "b",
    "change",
    "change_low",
    "change_high",
    "pairs",
    "b_higher",
    "b_lower",
    "pairs_planned",
    "method",
    "level",
    "rules",
    "verdicts",
];

/// Renders the comparison's table: a header line and one line per case and figure.
pub fn render(section: &AbSection) -> String {
    let mut table = Table::new(COLUMNS);
    for case in &section.cases {
        for figure in &case.figures {
            let change = &figure.change;
            let checks: Vec<&PairedCheck> = section
                .checks
                .iter()
                .filter(|c| c.case == case.case && metric_of(&c.rule) == figure.metric)
                .collect();
            table.push([
                case.case.clone(),
                figure.metric.clone(),
                figure.a.to_string(),
                figure.b.to_string(),
                change.change.to_string(),
                change
                    .interval
                    .map(|i| i.low.to_string())
                    .unwrap_or_default(),
                change
                    .interval
                    .map(|i| i.high.to_string())
                    .unwrap_or_default(),
                change.pairs.to_string(),
                change.b_higher.map(|n| n.to_string()).unwrap_or_default(),
                change.b_lower.map(|n| n.to_string()).unwrap_or_default(),
                case.pairs_planned.to_string(),
                change
                    .method
                    .map(|m| m.words().to_owned())
                    .unwrap_or_default(),
                change.level.to_string(),
                join(checks.iter().map(|c| c.rule.clone())),
                join(checks.iter().map(|c| c.verdict.name().to_owned())),
            ]);
        }
    }
    table.csv()
}

/// The figure a rule names: its leading name (`ttft_p50` of `ttft_p50 > +10%`).
fn metric_of(rule: &str) -> &str {
    let end = rule
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rule.len());
    &rule[..end]
}

/// Several values in one cell, separated by semicolons.
fn join(values: impl Iterator<Item = String>) -> String {
    values.collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_names_its_figure_with_or_without_spaces() {
        assert_eq!(metric_of("ttft_p50 > +10%"), "ttft_p50");
        assert_eq!(metric_of("e2e_p99>+5%"), "e2e_p99");
        assert_eq!(metric_of("throughput"), "throughput");
    }
}
