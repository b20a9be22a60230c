//! `llmload compare DIR DIR…`: attempts side by side, per matching case, with ratios of median
//! TTFT, median complete response and aggregate throughput to the first attempt. Cases match on
//! their whole key (`compare::identity`: API, load shape and its parameters, length specs,
//! shared prefix); a case of some attempts only is listed, never dropped. Each row is one
//! attempt's own figures: attempts are never pooled. Incomplete cases are labelled and get no
//! ratio. With rules, the gate's section follows (`output/gate.rs`).

mod gate;
mod models;
mod pace;
mod phases;

use crate::compare::gate::Check;
use crate::compare::identity::{matched, CaseKey, KeyedAttempt};
use crate::fmt::seconds;
use crate::summary::{CaseSummary, Summary};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

pub use gate::render as render_gate;

/// "A", "B", … then "#27", "#28", …
fn letter(i: usize) -> String {
    match u8::try_from(i) {
        Ok(i) if i < 26 => char::from(b'A' + i).to_string(),
        _ => format!("#{}", i + 1),
    }
}

/// Renders the attempts and one row per attempt for every case any of them ran.
pub fn render(attempts: &[KeyedAttempt]) -> String {
    let mut out = String::new();
    for line in differences(attempts) {
        let _ = writeln!(out, "{line}\n");
    }
    let summaries: Vec<&Summary> = attempts.iter().map(|a| &a.summary).collect();
    attempts_table(&mut out, &summaries);
    let _ = writeln!(
        out,
        "\n| Input tokens per request | Concurrent requests | Output tokens | Load | Attempt | Median TTFT | × A | Median complete response | × A | Aggregate output throughput | × A | Responses (n) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let rows = matched(attempts);
    let apis_differ = differ(attempts, |s| &s.api);
    for (k, cases) in &rows {
        let base = cases[0].filter(|c| c.complete);
        let load = if apis_differ {
            format!("{} ({} API)", k.load_label(), k.api)
        } else {
            k.load_label()
        };
        for (i, case) in cases.iter().enumerate() {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                cell(&k.input.label()),
                k.load.concurrency_label(),
                cell(&k.output.label()),
                cell(&load),
                letter(i),
                cells(*case, base),
            );
        }
        for (model, views) in models::by_model(cases) {
            let base = views[0].as_ref().filter(|c| c.complete);
            for (i, view) in views.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | ↳ model {} | {} | {} |",
                    cell(&k.input.label()),
                    k.load.concurrency_label(),
                    cell(&k.output.label()),
                    cell(&model),
                    letter(i),
                    cells(view.as_ref(), base),
                );
            }
        }
    }
    out.push_str(
        "\n× A: this attempt's figure divided by attempt A's, for cases complete in both (TTFT and \
         complete response: below 1 is faster; throughput: above 1 is more). ±: the larger side \
         of the figure's confidence interval, as a share of it; whether a change is more than \
         noise is the gate's to say (--fail-if). Figures are each attempt's own, never pooled. Cases match on everything that defines them: the API, the \
         load shape and its parameters, the length specs and the shared prompt tokens.\n",
    );
    if rows
        .iter()
        .any(|(_, cases)| cases.iter().flatten().any(|c| c.models.is_some()))
    {
        out.push_str(
            "\n↳ model: a mix of models, each model's own figures, matched by name between the \
             attempts and to attempt A's same model; its throughput is its output tokens over \
             the case's time (the summed spans of the rounds, or the window), which has no \
             interval.\n",
        );
    }
    for (present, keys) in one_sided(&rows, attempts.len()) {
        let names: Vec<String> = keys.iter().map(|k| k.describe()).collect();
        let _ = writeln!(out, "\nOnly in {present}: {}.", names.join("; "));
    }
    phases::render(&mut out, &rows);
    pace::render(&mut out, &rows);
    out
}

/// Whether the attempts' summaries disagree on `field`.
fn differ(attempts: &[KeyedAttempt], field: fn(&Summary) -> &String) -> bool {
    attempts
        .windows(2)
        .any(|w| field(&w[0].summary) != field(&w[1].summary))
}

/// What the reader must know before the tables: attempts that drove different APIs (no case of
/// one can match a case of the other) or measured different targets.
pub fn differences(attempts: &[KeyedAttempt]) -> Vec<String> {
    let list = |field: fn(&Summary) -> &String| {
        attempts
            .iter()
            .enumerate()
            .map(|(i, a)| format!("{} {}", letter(i), field(&a.summary)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut lines = Vec::new();
    if differ(attempts, |s| &s.api) {
        lines.push(format!(
            "**The attempts drove different APIs** ({}): cases match only within one API.",
            list(|s| &s.api)
        ));
    }
    if differ(attempts, |s| &s.target_url) {
        lines.push(format!(
            "**The attempts measured different targets** ({}).",
            list(|s| &s.target_url)
        ));
    }
    lines
}

/// The keys that not every attempt ran, grouped by the attempts that did ("A", "A and C").
fn one_sided<'a>(
    rows: &'a [(CaseKey, Vec<Option<&CaseSummary>>)],
    attempts: usize,
) -> BTreeMap<String, Vec<&'a CaseKey>> {
    let mut groups: BTreeMap<String, Vec<&CaseKey>> = BTreeMap::new();
    for (k, cases) in rows {
        let present: Vec<String> = cases
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_some())
            .map(|(i, _)| letter(i))
            .collect();
        if attempts > 1 && present.len() < attempts {
            groups.entry(present.join(" and ")).or_default().push(k);
        }
    }
    groups
}

fn attempts_table(out: &mut String, attempts: &[&Summary]) {
    out.push_str("| | Attempt | Target | API | Model | Outcome |\n|---|---|---|---|---|---|\n");
    for (i, s) in attempts.iter().enumerate() {
        let o = &s.outcome;
        let target = if s.simulated {
            format!("SIMULATED ({})", s.target_url)
        } else {
            s.target_url.clone()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:?}: {} of {} cases complete |",
            letter(i),
            cell(&s.attempt_id),
            cell(&target),
            cell(&s.api),
            cell(s.model.as_deref().unwrap_or("(not named)")),
            o.status,
            o.cases_completed,
            o.cases_total,
        );
    }
}

/// The figure and ratio cells of one attempt's case, against the first attempt's `base`.
fn cells(case: Option<&CaseSummary>, base: Option<&CaseSummary>) -> String {
    let Some(case) = case else {
        return "not in this attempt | | | | | | –".into();
    };
    if !case.complete {
        return format!(
            "incomplete ({}) | | | | | | {}",
            crate::report::text::completion(case),
            case.counts.ok
        );
    }
    let ttft = case.ttft_ms.as_ref().map(|d| d.median);
    let e2e = case.e2e_ms.as_ref().map(|d| d.median);
    let tps = case.throughput_tps.as_ref().map(|t| t.mean);
    let ratio = |value: Option<f64>, of: fn(&CaseSummary) -> Option<f64>| match (
        value,
        base.and_then(of),
    ) {
        (Some(v), Some(b)) if b > 0.0 => format!("{:.2}", v / b),
        _ => "–".into(),
    };
    // Each figure with its interval's larger side, as in the results tables.
    let pm = |value: Option<f64>, interval: Option<crate::stats::Interval>| {
        value
            .and_then(|v| crate::report::results::plus_minus(v, interval))
            .map_or_else(String::new, |pm| format!(" {pm}"))
    };
    let median_ci = |d: Option<&crate::stats::Distribution>| d?.ci.as_ref()?.median;
    format!(
        "{}{} | {} | {}{} | {} | {}{} | {} | {}",
        seconds(ttft),
        pm(ttft, median_ci(case.ttft_ms.as_ref())),
        ratio(ttft, |c| c.ttft_ms.as_ref().map(|d| d.median)),
        seconds(e2e),
        pm(e2e, median_ci(case.e2e_ms.as_ref())),
        ratio(e2e, |c| c.e2e_ms.as_ref().map(|d| d.median)),
        tps.map_or("–".into(), |t| format!("{t:.2} tokens/s")),
        pm(
            tps,
            case.throughput_tps
                .as_ref()
                .and_then(|t| t.ci.as_ref()?.interval)
        ),
        ratio(tps, |c| c.throughput_tps.as_ref().map(|t| t.mean)),
        case.counts.ok,
    )
}

/// The comparison as JSON: the attempts (lettered as in the tables), what differs between them,
/// then every case any of them ran (its key, and each attempt's own figures and ratios to
/// attempt A — `null` where a figure or ratio does not exist: absent or incomplete cases, a
/// missing base), and with rules the gate.
pub fn to_json(
    dirs: &[PathBuf],
    attempts: &[KeyedAttempt],
    gate: Option<(&[Check], bool)>,
) -> serde_json::Value {
    use serde_json::json;
    let list: Vec<serde_json::Value> = attempts
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let s = &a.summary;
            json!({
                "label": letter(i),
                "dir": dirs.get(i).map(|d| d.display().to_string()),
                "attempt_id": s.attempt_id,
                "target_url": s.target_url,
                "api": s.api,
                "model": s.model,
                "simulated": s.simulated,
                "outcome": s.outcome,
            })
        })
        .collect();
    let cases: Vec<serde_json::Value> = matched(attempts)
        .iter()
        .map(|(k, found)| {
            let base = found[0].filter(|c| c.complete).map(figures);
            let rows: Vec<serde_json::Value> = found
                .iter()
                .enumerate()
                .map(|(i, case)| case_json(&letter(i), *case, base))
                .collect();
            let models = models::to_json(found);
            let mut case = json!({
                "input_tokens": k.input.nominal, "input_length": k.input.spec,
                "concurrency": found.iter().flatten().next().map(|c| c.concurrency),
                "output_tokens": k.output.nominal, "output_length": k.output.spec,
                "load": k.load, "shared_prefix_tokens": k.shared_prefix_tokens, "api": k.api,
                "prompts": k.prompts,
                "attempts": rows,
            });
            if !models.is_empty() {
                case["mix"] = json!(k.models);
                case["models"] = json!(models);
            }
            case
        })
        .collect();
    let mut value = json!({
        "ratios_to": "A",
        "attempts": list,
        "differences": {
            "api": differ(attempts, |s| &s.api),
            "target": differ(attempts, |s| &s.target_url),
        },
        "cases": cases,
    });
    if let Some((checks, strict)) = gate {
        value["gate"] = gate::to_json(checks, strict);
    }
    value
}

/// Median TTFT, median complete response and aggregate throughput of a case.
fn figures(c: &CaseSummary) -> (Option<f64>, Option<f64>, Option<f64>) {
    (
        c.ttft_ms.as_ref().map(|d| d.median),
        c.e2e_ms.as_ref().map(|d| d.median),
        c.throughput_tps.as_ref().map(|t| t.mean),
    )
}

/// One attempt's row of a case in the JSON, against the base's figures.
fn case_json(
    label: &str,
    case: Option<&CaseSummary>,
    base: Option<(Option<f64>, Option<f64>, Option<f64>)>,
) -> serde_json::Value {
    use serde_json::json;
    let ratio = |v: Option<f64>, b: Option<f64>| match (v, b) {
        (Some(v), Some(b)) if b > 0.0 => Some(v / b),
        _ => None,
    };
    match case {
        None => json!({"label": label, "status": "absent"}),
        Some(c) if !c.complete => json!({
            "label": label, "status": "incomplete",
            "rounds_complete": c.rounds.iter().filter(|r| r.complete).count(),
            "rounds_planned": c.rounds_planned, "responses_ok": c.counts.ok,
        }),
        Some(c) => {
            let (ttft, e2e, tps) = figures(c);
            json!({
                "label": label, "status": "complete", "case_id": c.id,
                "ttft_median_ms": ttft, "e2e_median_ms": e2e, "throughput_tps": tps,
                "ttft_median_ci": c.ttft_ms.as_ref().and_then(|d| d.ci.as_ref()?.median),
                "e2e_median_ci": c.e2e_ms.as_ref().and_then(|d| d.ci.as_ref()?.median),
                "throughput_ci": c.throughput_tps.as_ref().and_then(|t| t.ci.as_ref()?.interval),
                "ttft_ratio": ratio(ttft, base.and_then(|b| b.0)),
                "e2e_ratio": ratio(e2e, base.and_then(|b| b.1)),
                "throughput_ratio": ratio(tps, base.and_then(|b| b.2)),
                "responses_ok": c.counts.ok,
                "phases": phases::to_json(c),
                "server_pace": c.server.as_ref().and_then(|s| s.pace.as_ref()),
            })
        }
    }
}

/// Text for a Markdown table cell: pipes and line breaks would break the table.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    /// An attempt as compare reads it, keyed from the fixture's campaign.
    fn keyed(summary: Summary) -> KeyedAttempt {
        KeyedAttempt {
            summary,
            keys: crate::compare::keys::keys(&fixture::campaign()),
        }
    }

    fn first_attempt() -> KeyedAttempt {
        keyed(fixture::report().summary)
    }

    fn second_attempt() -> KeyedAttempt {
        let mut s = fixture::report().summary;
        s.attempt_id = "20250102T000000Z-beef".into();
        s.cases.retain(|c| c.id != "in64-c1-out4");
        for c in &mut s.cases {
            if let Some(d) = c.ttft_ms.as_mut() {
                d.median *= 2.0;
            }
        }
        keyed(s)
    }

    #[test]
    fn matching_cases_get_ratios_and_the_rest_are_labelled() {
        let out = render(&[first_attempt(), second_attempt()]);
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("| 64 | 2 |"))
            .collect();
        assert_eq!(rows.len(), 2, "{out}");
        assert!(rows[0].contains("| A | 13.5 ms | 1.00 |"), "{}", rows[0]);
        assert!(rows[1].contains("| B | 27.0 ms | 2.00 |"), "{}", rows[1]);
        assert!(
            out.contains("| 64 | 1 | 4 | closed rounds | B | not in this attempt"),
            "{out}"
        );
        assert!(
            out.contains("Only in A: 64 input tokens × 1 concurrent × 4 output tokens"),
            "{out}"
        );
        assert!(!out.contains("different"), "same API and target: {out}");
        let incomplete: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("| 256 | 2 |"))
            .collect();
        assert!(incomplete
            .iter()
            .all(|l| l.contains("incomplete (1 of 2 rounds complete)")));
        assert!(!incomplete.iter().any(|l| l.contains("tokens/s")));
    }

    #[test]
    fn a_case_under_another_load_shape_is_listed_on_its_side_never_matched() {
        let mut second = second_attempt();
        let key = second.keys.get_mut("in64-c2-out4").expect("case");
        key.load = crate::compare::identity::LoadKey::ClosedContinuous { concurrency: 2 };
        second.summary.api = "chat".into();
        second.summary.target_url = "http://elsewhere".into();
        let out = render(&[first_attempt(), second]);
        assert!(
            out.starts_with("**The attempts drove different APIs** (A llamacpp, B chat)"),
            "{out}"
        );
        assert!(
            out.contains("**The attempts measured different targets**"),
            "{out}"
        );
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("| 64 | 2 |"))
            .collect();
        assert_eq!(rows.len(), 4, "two cases, one row per attempt each: {out}");
        assert!(
            rows.iter().any(|l| l.contains("closed continuous")),
            "{out}"
        );
        assert!(
            out.contains(
                "Only in B: 64 input tokens × 2 concurrent × 4 output tokens (closed continuous"
            ),
            "{out}"
        );
    }

    #[test]
    fn each_attempt_has_its_own_phase_figures_per_matching_case() {
        let mut second = second_attempt();
        for c in &mut second.summary.cases {
            if let Some(head) = c.phases.as_mut().and_then(|p| p.head_ms.as_mut()) {
                head.median = 40.0;
            }
        }
        let out = render(&[first_attempt(), second]);
        let section = &out[out.find("Where the time goes").expect("a phases section")..];
        let rows: Vec<&str> = section
            .lines()
            .filter(|l| l.starts_with("| in64-c2-out4 |"))
            .collect();
        assert_eq!(rows.len(), 2, "{section}");
        let a = &fixture::report().summary.cases;
        let case = a.iter().find(|c| c.id == "in64-c2-out4").expect("case");
        let p = case.phases.as_ref().expect("phases");
        let share = p.reused_share().expect("a share") * 100.0;
        assert!(
            rows[0].contains(&format!("| A | {} | {share:.0} % |", p.responses)),
            "{}",
            rows[0]
        );
        assert!(rows[1].contains("| 40.0 ms |"), "{}", rows[1]);
        assert!(
            section.contains("| in64-c1-out4 | B | not in this attempt |"),
            "{section}"
        );
        let value = to_json(
            &[PathBuf::from("a"), PathBuf::from("b")],
            &[first_attempt()],
            None,
        );
        let phases = &value["cases"][0]["attempts"][0]["phases"];
        assert!(phases["reused_share"].is_f64(), "{value}");
    }

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(render(&[first_attempt(), second_attempt()]));
    }

    #[test]
    fn json_has_the_same_rows_and_ratios() {
        let attempts = [first_attempt(), second_attempt()];
        let dirs = [PathBuf::from("a"), PathBuf::from("b")];
        let value = to_json(&dirs, &attempts, None);
        assert_eq!(value["attempts"][1]["label"], "B");
        assert_eq!(value["attempts"][1]["dir"], "b");
        assert!(value.get("gate").is_none(), "no rules, no gate");
        let cases = value["cases"].as_array().expect("cases");
        let case = |input: u64, c: u64| {
            cases
                .iter()
                .find(|v| v["input_tokens"] == input && v["concurrency"] == c)
                .expect("case")
        };
        let b = &case(64, 2)["attempts"][1];
        assert_eq!(b["status"], "complete");
        assert_eq!(case(64, 2)["load"]["shape"], "rounds");
        assert!((b["ttft_ratio"].as_f64().expect("ratio") - 2.0).abs() < 1e-12);
        assert_eq!(case(64, 1)["attempts"][1]["status"], "absent");
        let incomplete = &case(256, 2)["attempts"][0];
        assert_eq!(incomplete["status"], "incomplete");
        assert!(
            incomplete.get("throughput_tps").is_none(),
            "no figures for it"
        );
    }

    #[test]
    fn the_gate_calls_thin_figures_inconclusive_and_fails_on_them_only_when_asked() {
        let attempts = [first_attempt(), second_attempt()];
        let rules: Vec<crate::compare::gate::Rule> = ["ttft_p50 > +50%", "goodput < -5%"]
            .iter()
            .map(|r| r.parse().expect("rule"))
            .collect();
        let checks = crate::compare::gate::evaluate(&rules, &attempts);
        assert_eq!(checks.len(), 6, "two rules × three shared cases");
        // TTFT doubled, but on 4 responses a side: no interval, so no regression is claimed.
        let out = render_gate(&rules, &checks, false);
        assert!(
            out.contains("0 regressed, 2 inconclusive, 0 no change, 0 improved, 4 not compared."),
            "{out}"
        );
        assert!(
            out.contains("Gate passed (4 of 6 checks not compared)."),
            "{out}"
        );
        assert!(
            out.contains(
                "inconclusive: BASE: its p50 rests on 4 responses: too few for a 95 % interval"
            ),
            "{out}"
        );
        let strict = render_gate(&rules, &checks, true);
        let failures: Vec<&str> = strict.lines().filter(|l| l.starts_with("- ")).collect();
        assert_eq!(failures.len(), 2, "{strict}");
        assert!(
            failures[0].starts_with("- in64-c2-out4 (64 input tokens × 2 concurrent"),
            "{strict}"
        );
        assert!(
            failures[0].contains(
                "ttft_p50 A 13.5 ms (n = 4 responses) → B 27.0 ms (n = 4 responses), +100.0 %"
            ),
            "{strict}"
        );
        assert!(
            out.contains("not compared (absent in BASE)"),
            "closed rounds have no goodput"
        );
        // Each compared check says whether the variation between runs is known: here it is not.
        let compared = checks
            .iter()
            .filter(|c| c.verdict.comparison().is_some())
            .count();
        assert_eq!(
            out.matches("between runs: unknown (one attempt a side, no --history")
                .count(),
            compared,
            "{out}"
        );
        assert!(
            out.contains("not compared (incomplete in BASE and NEW)"),
            "{out}"
        );
        let value = to_json(
            &[PathBuf::from("a"), PathBuf::from("b")],
            &attempts,
            Some((&checks, false)),
        );
        assert_eq!(value["gate"]["passed"], true);
        assert_eq!(value["gate"]["checks_inconclusive"], 2);
        assert_eq!(value["gate"]["checks"][0]["verdict"], "inconclusive");
        assert_eq!(
            value["gate"]["checks"][0]["between_runs"]["source"],
            "unknown"
        );
        let strict = to_json(
            &[PathBuf::from("a"), PathBuf::from("b")],
            &attempts,
            Some((&checks, true)),
        );
        assert_eq!(strict["gate"]["passed"], false);
        assert_eq!(strict["gate"]["checks_failed"], 2);
    }

    #[test]
    fn letters_run_out_into_numbers() {
        assert_eq!(letter(0), "A");
        assert_eq!(letter(25), "Z");
        assert_eq!(letter(26), "#27");
    }
}
