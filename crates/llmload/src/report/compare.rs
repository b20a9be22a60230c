//! `llmload compare DIR DIR…`: attempts side by side, per matching case (same input tokens,
//! concurrency and output tokens), with ratios of median TTFT, median complete response and
//! aggregate throughput to the first attempt. Each row is one attempt's own figures: attempts
//! are never pooled. Incomplete cases are labelled and get no ratio; a case that an attempt did
//! not run says so.

use crate::fmt::{seconds, thousands};
use crate::summary::{CaseSummary, Summary};
use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::PathBuf;

/// (input tokens, concurrency, output tokens): what makes two attempts' cases the same case.
type Key = (u32, u32, u32);

fn key(case: &CaseSummary) -> Key {
    (case.input_tokens, case.concurrency, case.output_tokens)
}

/// "A", "B", … then "#27", "#28", …
fn letter(i: usize) -> String {
    match u8::try_from(i) {
        Ok(i) if i < 26 => char::from(b'A' + i).to_string(),
        _ => format!("#{}", i + 1),
    }
}

/// Renders the attempts and one row per attempt for every case any of them ran.
pub fn render(attempts: &[Summary]) -> String {
    let mut out = String::new();
    attempts_table(&mut out, attempts);
    let keys: BTreeSet<Key> = attempts
        .iter()
        .flat_map(|s| s.cases.iter().map(key))
        .collect();
    let _ = writeln!(
        out,
        "\n| Input tokens per request | Concurrent requests | Output tokens | Attempt | Median TTFT | × A | Median complete response | × A | Aggregate output throughput | × A | Responses (n) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|"
    );
    let mut single = Vec::new();
    for k in &keys {
        let cases: Vec<Option<&CaseSummary>> = attempts
            .iter()
            .map(|s| s.cases.iter().find(|c| key(c) == *k))
            .collect();
        if attempts.len() > 1 && cases.iter().filter(|c| c.is_some()).count() == 1 {
            let only = cases.iter().position(Option::is_some).unwrap_or(0);
            single.push(format!("{} (only in {})", case_name(k), letter(only)));
        }
        let base = cases[0].filter(|c| c.complete);
        for (i, case) in cases.iter().enumerate() {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                thousands(k.0),
                k.1,
                thousands(k.2),
                letter(i),
                cells(*case, base),
            );
        }
    }
    out.push_str(
        "\n× A: this attempt's figure divided by attempt A's, for cases complete in both (TTFT and \
         complete response: below 1 is faster; throughput: above 1 is more). Figures are each \
         attempt's own, never pooled.\n",
    );
    if !single.is_empty() {
        let _ = writeln!(out, "\nCases in only one attempt: {}.", single.join(", "));
    }
    out
}

fn attempts_table(out: &mut String, attempts: &[Summary]) {
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

fn case_name(k: &Key) -> String {
    format!(
        "{} input tokens × {} concurrent × {} output",
        thousands(k.0),
        k.1,
        thousands(k.2)
    )
}

/// The figure and ratio cells of one attempt's case, against the first attempt's `base`.
fn cells(case: Option<&CaseSummary>, base: Option<&CaseSummary>) -> String {
    let Some(case) = case else {
        return "not in this attempt | | | | | | –".into();
    };
    if !case.complete {
        let complete = case.rounds.iter().filter(|r| r.complete).count();
        return format!(
            "incomplete ({complete} of {} rounds complete) | | | | | | {}",
            case.rounds_planned, case.counts.ok
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
    format!(
        "{} | {} | {} | {} | {} | {} | {}",
        seconds(ttft),
        ratio(ttft, |c| c.ttft_ms.as_ref().map(|d| d.median)),
        seconds(e2e),
        ratio(e2e, |c| c.e2e_ms.as_ref().map(|d| d.median)),
        tps.map_or("–".into(), |t| format!("{t:.2} tokens/s")),
        ratio(tps, |c| c.throughput_tps.as_ref().map(|t| t.mean)),
        case.counts.ok,
    )
}

/// The comparison as JSON: the attempts (lettered as in the tables), then every case any of
/// them ran with each attempt's own figures and ratios to attempt A — `null` where a figure or
/// ratio does not exist (absent or incomplete cases, a missing base).
pub fn to_json(dirs: &[PathBuf], attempts: &[Summary]) -> serde_json::Value {
    use serde_json::json;
    let keys: BTreeSet<Key> = attempts
        .iter()
        .flat_map(|s| s.cases.iter().map(key))
        .collect();
    let list: Vec<serde_json::Value> = attempts
        .iter()
        .enumerate()
        .map(|(i, s)| {
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
    let figures = |c: &CaseSummary| {
        (
            c.ttft_ms.as_ref().map(|d| d.median),
            c.e2e_ms.as_ref().map(|d| d.median),
            c.throughput_tps.as_ref().map(|t| t.mean),
        )
    };
    let ratio = |v: Option<f64>, b: Option<f64>| match (v, b) {
        (Some(v), Some(b)) if b > 0.0 => Some(v / b),
        _ => None,
    };
    let cases: Vec<serde_json::Value> = keys
        .iter()
        .map(|k| {
            let found: Vec<Option<&CaseSummary>> = attempts
                .iter()
                .map(|s| s.cases.iter().find(|c| key(c) == *k))
                .collect();
            let base = found[0].filter(|c| c.complete).map(figures);
            let rows: Vec<serde_json::Value> = found
                .iter()
                .enumerate()
                .map(|(i, case)| match case {
                    None => json!({"label": letter(i), "status": "absent"}),
                    Some(c) if !c.complete => json!({
                        "label": letter(i), "status": "incomplete",
                        "rounds_complete": c.rounds.iter().filter(|r| r.complete).count(),
                        "rounds_planned": c.rounds_planned, "responses_ok": c.counts.ok,
                    }),
                    Some(c) => {
                        let (ttft, e2e, tps) = figures(c);
                        json!({
                            "label": letter(i), "status": "complete", "case_id": c.id,
                            "ttft_median_ms": ttft, "e2e_median_ms": e2e, "throughput_tps": tps,
                            "ttft_ratio": ratio(ttft, base.and_then(|b| b.0)),
                            "e2e_ratio": ratio(e2e, base.and_then(|b| b.1)),
                            "throughput_ratio": ratio(tps, base.and_then(|b| b.2)),
                            "responses_ok": c.counts.ok,
                        })
                    }
                })
                .collect();
            json!({"input_tokens": k.0, "concurrency": k.1, "output_tokens": k.2, "attempts": rows})
        })
        .collect();
    json!({"ratios_to": "A", "attempts": list, "cases": cases})
}

/// Text for a Markdown table cell: pipes and line breaks would break the table.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    fn second_attempt() -> Summary {
        let mut s = fixture::report().summary;
        s.attempt_id = "20250102T000000Z-beef".into();
        s.cases.retain(|c| c.id != "in64-c1-out4");
        for c in &mut s.cases {
            if let Some(d) = c.ttft_ms.as_mut() {
                d.median *= 2.0;
            }
        }
        s
    }

    #[test]
    fn matching_cases_get_ratios_and_the_rest_are_labelled() {
        let out = render(&[fixture::report().summary, second_attempt()]);
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("| 64 | 2 |"))
            .collect();
        assert_eq!(rows.len(), 2, "{out}");
        assert!(rows[0].contains("| A | 13.5 ms | 1.00 |"), "{}", rows[0]);
        assert!(rows[1].contains("| B | 27.0 ms | 2.00 |"), "{}", rows[1]);
        assert!(
            out.contains("| 64 | 1 | 4 | B | not in this attempt"),
            "{out}"
        );
        assert!(out.contains("only in A"), "{out}");
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
    fn snapshot() {
        insta::assert_snapshot!(render(&[fixture::report().summary, second_attempt()]));
    }

    #[test]
    fn json_has_the_same_rows_and_ratios() {
        let attempts = [fixture::report().summary, second_attempt()];
        let dirs = [PathBuf::from("a"), PathBuf::from("b")];
        let value = to_json(&dirs, &attempts);
        assert_eq!(value["attempts"][1]["label"], "B");
        assert_eq!(value["attempts"][1]["dir"], "b");
        let cases = value["cases"].as_array().expect("cases");
        let case = |input: u64, c: u64| {
            cases
                .iter()
                .find(|v| v["input_tokens"] == input && v["concurrency"] == c)
                .expect("case")
        };
        let b = &case(64, 2)["attempts"][1];
        assert_eq!(b["status"], "complete");
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
    fn letters_run_out_into_numbers() {
        assert_eq!(letter(0), "A");
        assert_eq!(letter(25), "Z");
        assert_eq!(letter(26), "#27");
    }
}
