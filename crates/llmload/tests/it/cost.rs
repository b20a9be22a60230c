//! The cost per million tokens end to end (`--gpu-cost-per-hour`, `--gpus`): closed rounds and
//! embeddings on the simulator, the figure recomputed from the rounds the run recorded, its
//! range from the throughput's interval, the same in cases.csv, report.md, the terminal and
//! `llmload report`; bad prices refused. Arithmetic on what was recorded, never on how long
//! anything took.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{assert_refused, json, llmload, run_against, Simulator};
use serde_json::Value;
use std::path::Path;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

/// The cost of `case` at `per_hour` × `gpus`: the window the sum of its rounds' spans, the
/// tokens theirs, the range the throughput's interval turned over.
fn assert_cost(case: &Value, per_hour: f64, gpus: u32, kind: &str) {
    let cost = &case["cost"];
    let rounds = case["rounds"].as_array().expect("rounds");
    let window: f64 = rounds.iter().map(|r| f(&r["duration_s"])).sum();
    let tokens: u64 = rounds
        .iter()
        .map(|r| r["output_tokens"].as_u64().expect("tokens"))
        .sum();
    assert!(window > 0.0 && tokens > 0, "{case}");
    let per_second = per_hour * f64::from(gpus) / 3600.0;
    assert!(close(f(&cost["window_s"]), window), "{cost}");
    assert!(
        close(f(&cost["window_cost"]), per_second * window),
        "{cost}"
    );
    assert_eq!(cost["tokens"], tokens, "{cost}");
    assert_eq!(cost["tokens_kind"], kind, "{cost}");
    assert_eq!(cost["tokens_verified"], true, "{cost}");
    #[expect(clippy::cast_precision_loss, reason = "a few thousand tokens")]
    let per_million = per_second * window / tokens as f64 * 1e6;
    assert!(close(f(&cost["per_million_tokens"]), per_million), "{cost}");
    let throughput = &case["throughput_tps"]["ci"];
    let (low, high) = (f(&throughput["interval"][0]), f(&throughput["interval"][1]));
    assert!(
        close(f(&cost["interval"][0]), per_second / high * 1e6),
        "{cost}"
    );
    assert!(
        close(f(&cost["interval"][1]), per_second / low * 1e6),
        "{cost}"
    );
    assert_eq!(cost["level"], throughput["level"], "{cost}");
}

/// `llmload run` on `url` with `args`, which must succeed; its folder and summary.
fn measured(out: &Path, name: &str, url: &str, args: &[&str]) -> (std::path::PathBuf, Value) {
    let (run, dir) = run_against(out, name, url, args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let summary = json(&dir.join("summary.json"));
    (dir, summary)
}

/// cases.csv's rows under its header's names.
fn csv_rows(dir: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("cases.csv")).expect("cases.csv");
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header")
        .split(',')
        .map(str::to_owned)
        .collect();
    // The cases' cells here hold no commas or quotes.
    lines
        .map(|row| {
            header
                .iter()
                .cloned()
                .zip(row.split(',').map(str::to_owned))
                .collect()
        })
        .collect()
}

#[test]
fn closed_rounds_cost_the_gpus_price_over_their_spans_per_million_tokens_in_every_view() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (dir, summary) = measured(
        out.path(),
        "cost",
        &sim.url,
        &[
            "--input-tokens",
            "32",
            "--concurrency",
            "1,2",
            "--output-tokens",
            "24",
            "--rounds",
            "3",
            "--gpu-cost-per-hour",
            "2.5",
            "--gpus",
            "2",
        ],
    );
    let cases = summary["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2);
    for case in cases {
        assert_cost(case, 2.5, 2, "output");
    }
    // cases.csv: the same figures.
    let rows = csv_rows(&dir);
    for (row, case) in rows.iter().zip(cases) {
        assert_eq!(row["gpu_cost_per_hour"], "2.5");
        assert_eq!(row["gpus"], "2");
        assert_eq!(row["cost_tokens_kind"], "output");
        let cell: f64 = row["cost_per_million_tokens"].parse().expect("a figure");
        assert!(
            close(cell, f(&case["cost"]["per_million_tokens"])),
            "{row:?}"
        );
        let low: f64 = row["cost_per_million_tokens_low"].parse().expect("a bound");
        assert!(close(low, f(&case["cost"]["interval"][0])), "{row:?}");
    }
    // report.md and the terminal: the section, a row per case.
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("Cost per million tokens"), "{report}");
    assert!(report.contains("2 × 2.5 "), "{report}");
    assert!(report.contains("(output tokens)"), "{report}");
    let shown = llmload(&["report", dir.to_str().expect("UTF-8")]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown.stdout.contains("Cost per million tokens"),
        "{}",
        shown.stdout
    );
    // `llmload report --json` rebuilds the same costs from the records.
    let rebuilt = llmload(&["report", dir.to_str().expect("UTF-8"), "--json"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    let rebuilt: Value = serde_json::from_str(&rebuilt.stdout).expect("JSON");
    for (case, again) in cases
        .iter()
        .zip(rebuilt["cases"].as_array().expect("cases"))
    {
        assert_eq!(case["cost"], again["cost"]);
    }
}

#[test]
fn embeddings_cost_per_million_input_tokens_and_a_run_without_a_price_has_no_cost() {
    let sim = Simulator::start(&[]);
    let out = tempfile::tempdir().expect("temp dir");
    let (_, summary) = measured(
        out.path(),
        "embeddings",
        &sim.url,
        &[
            "--api",
            "embeddings",
            "--input-tokens",
            "48",
            "--batch-size",
            "4",
            "--concurrency",
            "2",
            "--rounds",
            "3",
            "--gpu-cost-per-hour",
            "1.2",
        ],
    );
    let case = &summary["cases"][0];
    assert_cost(case, 1.2, 1, "input");
    // 3 rounds × 2 requests × 4 inputs × 48 tokens, as the server counted them.
    assert_eq!(case["cost"]["tokens"], 3 * 2 * 4 * 48);

    let out = tempfile::tempdir().expect("temp dir");
    let (dir, summary) = measured(out.path(), "plain", &sim.url, &["--rounds", "1"]);
    assert!(summary["cases"][0].get("cost").is_none(), "{summary}");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(!report.contains("Cost per million tokens"));
}

#[test]
fn a_price_that_is_no_price_is_refused_in_one_line() {
    let url = ["--url", "http://127.0.0.1:9"];
    for (flags, said) in [
        (&["--gpus", "2"][..], "--gpus is for --gpu-cost-per-hour"),
        (&["--gpu-cost-per-hour", "0"][..], "a price above 0"),
        (&["--gpu-cost-per-hour=-3"][..], "a price above 0"),
        (&["--gpu-cost-per-hour", "NaN"][..], "a price above 0"),
        (
            &["--gpu-cost-per-hour", "2", "--gpus", "0"][..],
            "--gpus must be at least 1",
        ),
    ] {
        let mut argv = url.to_vec();
        argv.extend_from_slice(flags);
        assert_refused(&argv, said);
    }
}
