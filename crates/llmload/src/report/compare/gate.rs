//! The gate's section of `llmload compare`: every check (a rule on a case of BASE against the
//! same case of a later attempt) with both figures and their n, then the verdict, each failing
//! check again in one line that stands on its own (case, metric, both figures with n, change,
//! rule).

use super::letter;
use crate::fmt::seconds;
use crate::summary::gate::{Change, Check, Comparison, Figure, Kind, Rule, Verdict};
use std::fmt::Write;

/// The gate's section: the rules, every check, the verdict.
pub fn render(rules: &[Rule], checks: &[Check]) -> String {
    let mut out = String::new();
    let quoted: Vec<String> = rules.iter().map(|r| format!("`{}`", r.text)).collect();
    let _ = writeln!(
        out,
        "\n## Gate\n\nRules: {}. Each later attempt (NEW) is checked against A (BASE), on every \
         case both ran; cases of one attempt only are listed above and not checked.\n",
        quoted.join(", ")
    );
    out.push_str(
        "| Case | NEW | Rule | BASE | NEW figure | Change | Verdict |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for c in checks {
        let kind = c.rule.metric.kind();
        let (base, new, change, verdict) = match &c.verdict {
            Verdict::Passed(x) => (
                figure(kind, &x.base),
                figure(kind, &x.new),
                change(kind, &c.rule, x),
                "passed",
            ),
            Verdict::Failed(x) => (
                figure(kind, &x.base),
                figure(kind, &x.new),
                change(kind, &c.rule, x),
                "**FAILED**",
            ),
            Verdict::NotCompared { reason } => {
                ("–".into(), "–".into(), "–".into(), reason.as_str())
            }
            Verdict::Unfinished { .. } => (
                "–".into(),
                "–".into(),
                "–".into(),
                "**FAILED** (complete in BASE, incomplete in NEW)",
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {base} | {new} | {change} | {verdict} |",
            super::cell(&c.case),
            letter(c.new),
            c.rule.text,
        );
    }
    let failed: Vec<&Check> = checks.iter().filter(|c| c.verdict.fails()).collect();
    let unchecked = checks
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::NotCompared { .. }))
        .count();
    if failed.is_empty() {
        let _ = writeln!(
            out,
            "\nGate passed: {} of {} checks held, {unchecked} not compared.",
            checks.len() - unchecked,
            checks.len()
        );
        return out;
    }
    let _ = writeln!(
        out,
        "\nGate FAILED: {} of {} checks broke their rule ({unchecked} not compared):\n",
        failed.len(),
        checks.len()
    );
    for c in failed {
        let _ = writeln!(out, "- {}", failure_line(c));
    }
    out
}

/// One failing check in words: case, metric, BASE figure (n), NEW figure (n), change, rule.
pub fn failure_line(c: &Check) -> String {
    let kind = c.rule.metric.kind();
    let x = match &c.verdict {
        Verdict::Failed(x) => x,
        Verdict::Unfinished { reason } => {
            return format!(
                "{} ({}): {} not compared against {}: {reason}, breaks `{}`",
                c.case,
                c.key.describe(),
                c.rule.metric,
                letter(c.new),
                c.rule.text
            )
        }
        _ => return String::new(),
    };
    format!(
        "{} ({}): {} A {} → {} {}, {}, breaks `{}`",
        c.case,
        c.key.describe(),
        c.rule.metric,
        figure(kind, &x.base),
        letter(c.new),
        figure(kind, &x.new),
        change(kind, &c.rule, x),
        c.rule.text
    )
}

/// A figure with its n ("20.1 ms (n = 6 responses)").
fn figure(kind: Kind, f: &Figure) -> String {
    let value = match kind {
        Kind::Time => seconds(Some(f.value)),
        Kind::Throughput => format!("{:.2} tokens/s", f.value),
        Kind::Goodput => format!("{:.3} requests/s", f.value),
        Kind::Share => format!("{:.2} %", f.value * 100.0),
    };
    format!("{value} (n = {} {})", f.n, f.of)
}

/// The change in the unit of the rule's bound: percent, or the metric's unit.
fn change(kind: Kind, rule: &Rule, x: &Comparison) -> String {
    if matches!(rule.bound, Change::Percent(_)) {
        return if x.change.is_infinite() {
            "from 0".into()
        } else {
            format!("{:+.1} %", x.change)
        };
    }
    match kind {
        Kind::Time => format!("{:+.1} ms", x.change),
        Kind::Throughput => format!("{:+.2} tokens/s", x.change),
        Kind::Goodput => format!("{:+.3} requests/s", x.change),
        Kind::Share => format!("{:+.2} pp", x.change * 100.0),
    }
}

/// The gate as JSON: whether it passed, counts, and every check with its figures.
pub fn to_json(checks: &[Check]) -> serde_json::Value {
    let count = |f: fn(&Verdict) -> bool| checks.iter().filter(|c| f(&c.verdict)).count();
    let failed = count(Verdict::fails);
    serde_json::json!({
        "passed": failed == 0,
        "checks_total": checks.len(),
        "checks_failed": failed,
        "checks_not_compared": count(|v| matches!(v, Verdict::NotCompared { .. })),
        "checks": checks,
    })
}
