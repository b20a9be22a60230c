//! The gate's section of `llmload compare`: every check (a rule on a case of BASE against the
//! same case of a later attempt) with both figures and their n, then the verdict, each failing
//! check again in one line that stands on its own (case, metric, both figures with n, change,
//! rule).

use super::letter;
use crate::compare::gate::change::ToDecide;
use crate::compare::gate::{Change, Check, Comparison, Figure, GateVerdict, Kind, Rule};
use crate::fmt::seconds;
use std::fmt::Write;

/// The gate's section: the rules, every check, the verdict (`strict`: inconclusive checks
/// fail it too).
pub fn render(rules: &[Rule], checks: &[Check], strict: bool) -> String {
    let mut out = String::new();
    let quoted: Vec<String> = rules.iter().map(|r| format!("`{}`", r.text)).collect();
    let level = checks
        .iter()
        .find_map(|c| c.verdict.comparison().map(|x| x.level))
        .unwrap_or_else(crate::stats::interval::level);
    let level = crate::fmt::number(level * 100.0);
    let _ = writeln!(
        out,
        "\n## Gate\n\nRules: {}. Each later attempt (NEW) is checked against A (BASE), on every \
         case both ran; cases of one attempt only are listed above and not checked. Each figure \
         and each change has its {level} % confidence interval in brackets; a rule is \
         *regressed* only when the whole interval of the change is beyond its bound, *no \
         change* when it lies on the good side, *inconclusive* when it straddles the bound. \
         *Between runs* says whether the variation from one run to the next is known (repeats, \
         --history, a steady trend across the rounds) and, where it is, that it is in the \
         interval; *server's pace* is the server's own time per token, BASE to NEW, beside the \
         client's change.\n",
        quoted.join(", ")
    );
    out.push_str(
        "| Case | NEW | Rule | BASE | NEW figure | Change | Verdict | Between runs | Server's pace \
         |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in checks {
        row(&mut out, c);
    }
    let count = |name: &str| checks.iter().filter(|c| c.verdict.name() == name).count();
    let failed: Vec<&Check> = checks.iter().filter(|c| c.verdict.fails(strict)).collect();
    let _ = writeln!(
        out,
        "\n{} regressed, {} inconclusive, {} no change, {} improved, {} not compared{}.",
        count("regressed") + count("unfinished"),
        count("inconclusive"),
        count("no-change"),
        count("improved"),
        count("not-compared"),
        if strict {
            " (inconclusive checks fail the gate: --fail-on inconclusive)"
        } else {
            ""
        }
    );
    let noisy: Vec<String> = checks
        .iter()
        .filter_map(|c| {
            let x = c.verdict.comparison().filter(|x| x.below_noise)?;
            Some(format!(
                "`{}` on {}: BASE's own noise floor is ±{}",
                c.rule.text,
                c.subject(),
                amount(c.rule.metric.kind(), &c.rule, x.noise_floor?)
            ))
        })
        .collect();
    if !noisy.is_empty() {
        let _ = writeln!(
            out,
            "\nBounds inside the noise floor, on checks that did not pass (at this size such a \
             rule cannot pass as no change; measure more rounds, a longer window, or --repeat): \
             {}.",
            noisy.join("; ")
        );
    }
    if failed.is_empty() {
        out.push_str(&passed(count("not-compared"), checks.len()));
        return out;
    }
    let _ = writeln!(
        out,
        "\nGate FAILED: {} of {} checks:\n",
        failed.len(),
        checks.len()
    );
    for c in failed {
        let _ = writeln!(out, "- {}", failure_line(c));
    }
    out
}

/// One check's row of the gate's table: figures, change, verdict, between runs, server's pace.
fn row(out: &mut String, c: &Check) {
    let kind = c.rule.metric.kind();
    let (base, new, change, verdict) = match &c.verdict {
        GateVerdict::NotCompared { reason } => ("–".into(), "–".into(), "–".into(), reason.clone()),
        GateVerdict::Unfinished { .. } => (
            "–".into(),
            "–".into(),
            "–".into(),
            "**REGRESSED** (complete in BASE, incomplete in NEW)".into(),
        ),
        v => {
            let Some(x) = v.comparison() else { return };
            (
                figure(kind, &x.base),
                figure(kind, &x.new),
                change(kind, &c.rule, x),
                verdict_text(v, x),
            )
        }
    };
    let between = c
        .verdict
        .comparison()
        .and_then(|x| x.between_runs.as_ref())
        .map_or_else(|| "–".to_owned(), |b| super::cell(&b.sentence));
    let pace = c
        .server_pace
        .as_ref()
        .map_or_else(|| "–".to_owned(), |p| super::cell(&p.sentence));
    let _ = writeln!(
        out,
        "| {} | {} | `{}` | {base} | {new} | {change} | {verdict} | {between} | {pace} |",
        super::cell(&c.subject()),
        letter(c.new),
        c.rule.text,
    );
}

/// The gate's last line where nothing failed, `not_compared` of its `checks` not compared:
/// it passed, or (where nothing could be compared) it cannot tell.
fn passed(not_compared: usize, checks: usize) -> String {
    match not_compared {
        0 => "\nGate passed.\n".into(),
        n if n == checks => format!(
            "\nGate cannot tell: none of the {n} checks could be compared (each row says why); \
             nothing failed.\n"
        ),
        n => format!("\nGate passed ({n} of {checks} checks not compared).\n"),
    }
}

/// A compared verdict in words, with how many more samples would likely decide an
/// inconclusive one, or why it cannot be tested.
fn verdict_text(v: &GateVerdict, x: &Comparison) -> String {
    match v {
        GateVerdict::Regressed(_) => "**REGRESSED**".into(),
        GateVerdict::Improved(_) => "improved".into(),
        GateVerdict::NoChange(_) => "no change".into(),
        _ => match (&x.reason, x.to_decide) {
            (Some(why), _) => format!("inconclusive: {why}"),
            (None, Some(ToDecide::Rounds { factor })) => format!(
                "inconclusive (about {factor:.1}× the rounds on both sides would likely decide)"
            ),
            (None, Some(ToDecide::Repeats { count })) => format!(
                "inconclusive (the spread between runs dominates: about {count} repeats a side, \
                 or an interleaved `llmload ab`, would likely decide)"
            ),
            (None, Some(ToDecide::TooClose)) => "inconclusive (this change is too close to the \
                 bound to decide at any affordable size)"
                .into(),
            (None, None) => "inconclusive (the change sits on the bound)".into(),
        },
    }
}

/// One failing check in words: case, metric, BASE figure (n), NEW figure (n), change, rule.
pub(super) fn failure_line(c: &Check) -> String {
    let kind = c.rule.metric.kind();
    let x = match &c.verdict {
        GateVerdict::Unfinished { reason } => {
            return format!(
                "{} ({}): {} not compared against {}: {reason}, breaks `{}`",
                c.subject(),
                c.key.describe(),
                c.rule.metric,
                letter(c.new),
                c.rule.text
            )
        }
        v => match v.comparison() {
            Some(x) => x,
            None => return String::new(),
        },
    };
    // Beside the change: whether the variation between runs is known, and the server's pace.
    let context: Vec<&str> = [
        x.between_runs.as_ref().map(|b| b.sentence.as_str()),
        c.server_pace.as_ref().map(|p| p.sentence.as_str()),
    ]
    .into_iter()
    .flatten()
    .collect();
    let context = if context.is_empty() {
        String::new()
    } else {
        format!(" ({})", context.join("; "))
    };
    format!(
        "{} ({}): {} A {} → {} {}, {}{context}: {} `{}`",
        c.subject(),
        c.key.describe(),
        c.rule.metric,
        figure(kind, &x.base),
        letter(c.new),
        figure(kind, &x.new),
        change(kind, &c.rule, x),
        verdict_text(&c.verdict, x),
        c.rule.text
    )
}

/// A value of a metric of `kind`, in its unit.
fn value(kind: Kind, v: f64) -> String {
    match kind {
        Kind::Time => seconds(Some(v)),
        Kind::Throughput => format!("{v:.2} tokens/s"),
        Kind::Goodput => format!("{v:.3} requests/s"),
        Kind::Share => format!("{:.2} %", v * 100.0),
    }
}

/// A figure with its interval and n ("20.1 ms [18.0 ms, 22.3 ms] (n = 24 responses)").
fn figure(kind: Kind, f: &Figure) -> String {
    let interval = f.interval.map_or_else(String::new, |i| {
        format!(" [{}, {}]", value(kind, i.low), value(kind, i.high))
    });
    format!("{}{interval} (n = {} {})", value(kind, f.value), f.n, f.of)
}

/// An amount of change in the unit of the rule's bound (no sign).
fn amount(kind: Kind, rule: &Rule, v: f64) -> String {
    if matches!(rule.bound, Change::Percent(_)) {
        return format!("{v:.1} %");
    }
    match kind {
        Kind::Time => format!("{v:.1} ms"),
        Kind::Throughput => format!("{v:.2} tokens/s"),
        Kind::Goodput => format!("{v:.3} requests/s"),
        Kind::Share => format!("{:.2} pp", v * 100.0),
    }
}

/// The change in the unit of the rule's bound, with its interval: percent, or the metric's
/// unit.
fn change(kind: Kind, rule: &Rule, x: &Comparison) -> String {
    let one = |v: f64| {
        if matches!(rule.bound, Change::Percent(_)) {
            return if v.is_infinite() {
                "from 0".into()
            } else {
                format!("{v:+.1} %")
            };
        }
        match kind {
            Kind::Time => format!("{v:+.1} ms"),
            Kind::Throughput => format!("{v:+.2} tokens/s"),
            Kind::Goodput => format!("{v:+.3} requests/s"),
            Kind::Share => format!("{:+.2} pp", v * 100.0),
        }
    };
    match x.interval {
        Some(i) if x.change.is_finite() => {
            format!("{} [{}, {}]", one(x.change), one(i.low), one(i.high))
        }
        _ => one(x.change),
    }
}

/// The gate as JSON: whether it passed, counts by verdict, and every check with its figures.
pub(super) fn to_json(checks: &[Check], strict: bool) -> serde_json::Value {
    let count = |name: &str| checks.iter().filter(|c| c.verdict.name() == name).count();
    let failed = checks.iter().filter(|c| c.verdict.fails(strict)).count();
    serde_json::json!({
        "passed": failed == 0,
        "fail_on_inconclusive": strict,
        "checks_total": checks.len(),
        "checks_failed": failed,
        "checks_regressed": count("regressed") + count("unfinished"),
        "checks_inconclusive": count("inconclusive"),
        "checks_no_change": count("no-change"),
        "checks_improved": count("improved"),
        "checks_not_compared": count("not-compared"),
        "checks": checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Interval;

    fn figure(value: f64, half: f64) -> Figure {
        Figure {
            value,
            n: 100,
            of: "responses",
            interval: Some(Interval {
                low: value - half,
                high: value + half,
            }),
            basis: None,
            no_interval: None,
        }
    }

    #[test]
    fn a_change_next_to_its_bound_says_no_affordable_size_decides_it() {
        let rule: Rule = "ttft_p50 > +10%".parse().expect("rule");
        let v = crate::compare::gate::judge(&rule, figure(100.0, 15.0), figure(109.9, 16.5));
        let x = v.comparison().expect("compared");
        assert_eq!(
            verdict_text(&v, x),
            "inconclusive (this change is too close to the bound to decide at any affordable \
             size)"
        );
        let v = crate::compare::gate::judge(&rule, figure(100.0, 8.0), figure(118.0, 9.44));
        let x = v.comparison().expect("compared");
        assert!(
            verdict_text(&v, x).contains("× the rounds on both sides would likely decide"),
            "{}",
            verdict_text(&v, x)
        );
    }
}
