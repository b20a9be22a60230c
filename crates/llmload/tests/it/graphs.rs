//! Session graphs (`--dag`) end to end on the built-in simulator: the repository's example (four
//! sessions of a plan, three research calls fanned out after it, an answer after all three)
//! replayed with every call verified, the research calls overlapping, each call waiting for its
//! last parent and its wait, each prompt extending its context's; the summary's TTFAT per
//! session; and the usage errors.

use crate::common;

use common::{count as n, json, llmload, measured};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The repository's example graph.
fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/agents.jsonl")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

#[test]
fn the_example_graph_replays_fanned_out_verified_and_gives_ttfat_per_session() {
    let out = tempfile::tempdir().expect("temp dir");
    let example = example();
    let result = llmload(&[
        "run",
        "--out",
        out.path().to_str().expect("UTF-8 path"),
        "--name",
        "g",
        "--telemetry",
        "off",
        "-q",
        "--dag",
        example.to_str().expect("UTF-8 path"),
        "--concurrency",
        "4",
        "--history",
        "placeholder",
    ]);
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let dir = common::attempt_dir(out.path(), "g");
    let records = measured(&dir);
    assert_eq!(records.len(), 20, "4 sessions of 5 calls");
    let mut sessions: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for r in &records {
        assert_eq!(
            (&r["status"], &r["verified"]),
            (&"ok".into(), &true.into()),
            "{r}"
        );
        let g = &r["graph"];
        let session = g["session"].as_str().expect("a session").to_owned();
        let call = g["call"].as_str().expect("a call").to_owned();
        sessions.entry(session).or_default().insert(call, r.clone());
    }
    assert_eq!(sessions.len(), 4);
    for (name, calls) in &sessions {
        let plan = &calls["plan"];
        let done = |r: &Value| f(&r["done_s"]);
        // The plan's 96 tokens and its 16-token answer (placeholder) are every other call's
        // context, the cache's eligible tokens; each adds its own.
        let context = n(&plan["prompt_tokens"]) + 16;
        assert_eq!(n(&plan["prompt_tokens"]), 96, "{name}");
        let research: Vec<&Value> = (1..=3).map(|k| &calls[&format!("research-{k}")]).collect();
        for r in &research {
            assert_eq!(n(&r["history_tokens"]), context, "{r}");
            assert_eq!(n(&r["prompt_tokens"]), context + 24, "{r}");
            assert!(n(&r["cached_tokens"]) <= context, "{r}");
            // Due 100 ms after the plan ended, and sent no earlier.
            let due = f(&r["scheduled_s"]);
            assert!((due - done(plan) - 0.100).abs() < 1e-6, "{r}");
            assert!(f(&r["sent_s"]) >= due, "{r}");
        }
        // The three overlap: each was sent before any of them ended.
        let last_sent = research.iter().map(|r| f(&r["sent_s"])).fold(0.0, f64::max);
        let first_done = research
            .iter()
            .map(|r| done(r))
            .fold(f64::INFINITY, f64::min);
        assert!(
            last_sent < first_done,
            "{name}: the research calls did not overlap"
        );
        let answer = &calls["answer"];
        let last = research.iter().map(|r| done(r)).fold(0.0, f64::max);
        assert!(
            (f(&answer["scheduled_s"]) - last - 0.200).abs() < 1e-6,
            "{answer}"
        );
        assert!(f(&answer["sent_s"]) >= f(&answer["scheduled_s"]));
        assert_eq!(n(&answer["history_tokens"]), context, "{answer}");
        assert_eq!(n(&answer["prompt_tokens"]), context + 48, "{answer}");
        assert_eq!(answer["graph"]["final_answer"], true);
        assert_eq!(answer["graph"]["after"].as_array().map(Vec::len), Some(3));
    }
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    assert_eq!(case["complete"], true, "{case}");
    let g = &case["sessions"]["graph"];
    assert_eq!((n(&g["sessions"]), n(&g["complete"])), (4, 4), "{g}");
    assert_eq!(n(&g["ttfat_ms"]["n"]), 4, "{g}");
    let rows = g["by_session"].as_array().expect("sessions");
    assert_eq!(rows.len(), 4);
    for row in rows {
        let calls = &sessions[row["name"].as_str().expect("a name")];
        // TTFAT: the session's first send to its answer's first token.
        let want = (f(&calls["answer"]["first_token_s"]) - f(&calls["plan"]["sent_s"])) * 1e3;
        assert!((f(&row["ttfat_ms"]) - want).abs() < 1e-3, "{row}");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("Session graphs") && report.contains("TTFAT"),
        "{report}"
    );
}

#[test]
fn a_graph_that_cannot_run_is_refused_in_one_line() {
    let example = example();
    let example = example.to_str().unwrap_or_default();
    common::assert_refused(
        &["--dag", "/nonexistent/graph.jsonl"],
        "--dag cannot read /nonexistent/graph.jsonl",
    );
    common::assert_refused(
        &["--dag", example, "--turns", "3"],
        "--dag sets each call's length and wait: --turns",
    );
    common::assert_refused(
        &["--dag-time-scale", "2"],
        "--dag-time-scale and --dag-max-wait need --dag FILE",
    );
    common::assert_refused(
        &["--dag", example, "--dag-time-scale=-1"],
        "--dag-time-scale must be from 0 to 1000",
    );
}
