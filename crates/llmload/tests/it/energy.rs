//! The energy of each case's measurement window end to end: the simulator under closed rounds and
//! a continuous loop with replayed GPU power, the figures in summary.json, cases.csv and
//! report.md, `llmload report` taking the same ones from telemetry.jsonl, and readings too
//! sparse for a figure saying so. Every assertion is arithmetic on the replayed powers and on
//! the windows the run recorded, never on how long anything took.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{attempt_dir, json, llmload, Simulator};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A replay file: GPU 0 at 200 W and GPU 1 at 100 W, a reading each every `step` s for 120 s,
/// but none after the first and before `hole_until` s.
fn constant_power(dir: &Path, step: f64, hole_until: f64) -> String {
    let path = dir.join("power.jsonl");
    let mut text = String::new();
    let mut i = 0u32;
    while f64::from(i) * step <= 120.0 {
        let t = f64::from(i) * step;
        i += 1;
        if t > 0.0 && t < hole_until {
            continue;
        }
        for (gpu, power_w) in [(0u32, 200.0), (1, 100.0)] {
            let line = json!({"t_s": t, "gpu": gpu, "temperature_c": 60.0, "power_w": power_w});
            let _ = writeln!(text, "{line}");
        }
    }
    std::fs::write(&path, text).expect("write the replay file");
    format!("replay:{}", path.display())
}

/// Runs llmload on the simulator with `--telemetry telemetry` and `extra`; the attempt folder.
fn run(url: &str, out: &Path, telemetry: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec![
        "run",
        "--url",
        url,
        "--out",
        out.to_str().expect("UTF-8"),
        "--name",
        "energy",
        "--telemetry",
        telemetry,
        "--input-tokens",
        "32",
        "--concurrency",
        "2",
        "--output-tokens",
        "24",
        "-q",
    ];
    args.extend_from_slice(extra);
    let run = llmload(&args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    attempt_dir(out, "energy")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// The cells of cases.csv's first row under its header's names.
fn csv_row(dir: &Path) -> std::collections::HashMap<String, String> {
    let text = std::fs::read_to_string(dir.join("cases.csv")).expect("cases.csv");
    let mut lines = text.lines();
    let header = lines.next().expect("a header");
    let row = lines.next().expect("a row");
    // The fixture's cells hold no commas or quotes.
    header
        .split(',')
        .map(str::to_owned)
        .zip(row.split(',').map(str::to_owned))
        .collect()
}

/// The energy of a case with 300 W in all: 300 W × its window, its GPUs apart, its tokens per
/// joule, a plausible count of readings 0.1 s apart, and the CSV and report.md saying so.
fn assert_300_watts(dir: &Path, case: &Value, tokens: u64) {
    let e = &case["energy"];
    assert!(e["unavailable"].is_null(), "{e}");
    let window = f(&e["window_s"]);
    assert!(window > 0.0, "{e}");
    let total = f(&e["total_j"]);
    assert!(close(total, 300.0 * window), "{total} J over {window} s");
    assert!(close(f(&e["mean_power_w"]), 300.0), "{e}");
    assert!(close(f(&e["gpus"][0]["joules"]), 200.0 * window), "{e}");
    assert!(close(f(&e["gpus"][1]["joules"]), 100.0 * window), "{e}");
    assert_eq!(e["output_tokens"], tokens);
    assert!(tokens > 0);
    #[expect(clippy::cast_precision_loss, reason = "a few hundred tokens")]
    let per_joule = tokens as f64 / total;
    assert!(close(f(&e["output_tokens_per_joule"]), per_joule), "{e}");
    let responses = e["responses"].as_u64().expect("responses");
    assert!(responses > 0, "{e}");
    #[expect(clippy::cast_precision_loss, reason = "a few dozen responses")]
    let per_request = total / responses as f64;
    assert!(close(f(&e["joules_per_request"]), per_request), "{e}");
    assert_eq!(e["tokens_verified"], true);
    for gpu in e["gpus"].as_array().expect("GPUs") {
        let n = f(&gpu["readings"]);
        // Each span has the readings inside it (one per 0.1 s) and one on each side.
        assert!(
            n >= 2.0 && n <= window / 0.1 + 3.0 * 2.0 + 1.0,
            "{n} readings over {window} s"
        );
    }
    let method = e["method"].as_str().expect("the method");
    assert!(method.starts_with("trapezoid over ") && method.contains("edges interpolated"));

    let row = csv_row(dir);
    assert!(close(row["energy_j"].parse().expect("energy_j"), total));
    assert!(close(
        row["output_tokens_per_joule"].parse().expect("tokens/J"),
        per_joule
    ));
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("Energy over each case's measurement window"),
        "{report}"
    );
    assert!(report.contains(method), "{report}");
    assert!(report.contains("300.0 W"), "{report}");
}

/// `llmload report DIR --json` gives the run's energy back from telemetry.jsonl.
fn assert_rebuilds_the_same_energy(dir: &Path, summary: &Value) {
    let rebuilt = llmload(&["report", dir.to_str().expect("UTF-8"), "--json"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    let rebuilt: Value = serde_json::from_str(&rebuilt.stdout).expect("JSON");
    for (run, again) in summary["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .zip(rebuilt["cases"].as_array().expect("cases"))
    {
        assert_eq!(run["energy"], again["energy"]);
    }
}

#[test]
fn closed_rounds_at_300_watts_take_300_watts_times_their_rounds() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let telemetry = constant_power(out.path(), 0.1, 0.0);
    let dir = run(&sim.url, out.path(), &telemetry, &["--rounds", "3"]);
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    let rounds = case["rounds"].as_array().expect("rounds");
    // The window is the union of the rounds: the spans of the rounds' throughput.
    let spans: f64 = rounds.iter().map(|r| f(&r["duration_s"])).sum();
    assert!(close(f(&case["energy"]["window_s"]), spans), "{case}");
    let tokens: u64 = rounds
        .iter()
        .map(|r| r["output_tokens"].as_u64().expect("tokens"))
        .sum();
    // The responses behind the joules per request: the rounds' ok ones.
    let responses: u64 = rounds
        .iter()
        .map(|r| r["responses_ok"].as_u64().expect("responses"))
        .sum();
    assert_eq!(case["energy"]["responses"], responses, "{case}");
    assert_300_watts(&dir, case, tokens);
    assert_rebuilds_the_same_energy(&dir, &summary);
}

#[test]
fn a_continuous_loop_at_300_watts_takes_300_watts_times_its_window() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let telemetry = constant_power(out.path(), 0.1, 0.0);
    let dir = run(
        &sim.url,
        out.path(),
        &telemetry,
        &[
            "--arrival",
            "closed-continuous",
            "--duration",
            "2s",
            "--warmup-time",
            "0.5s",
        ],
    );
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    let load = &case["load"];
    let window = f(&load["window_s"][1]) - f(&load["window_s"][0]);
    assert!(close(f(&case["energy"]["window_s"]), window), "{case}");
    let tokens = (f(&load["throughput_tps"]) * window).round();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a whole, positive count of tokens"
    )]
    assert_300_watts(&dir, case, tokens as u64);
    assert_rebuilds_the_same_energy(&dir, &summary);
}

#[test]
fn a_gap_of_4_2_seconds_in_the_readings_gives_no_figure_and_says_why() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    // A reading at 0 s, then none until 4.2 s: the case starts inside the hole, and at its end
    // the run waits (up to 2 × 2 s + 0.5 s) for the reading after it, so the hole is inside the
    // readings it rests on, and longer than 2 × the 2 s interval.
    let telemetry = constant_power(out.path(), 0.1, 4.2);
    let dir = run(
        &sim.url,
        out.path(),
        &telemetry,
        &["--rounds", "2", "--telemetry-interval", "2s"],
    );
    let summary = json(&dir.join("summary.json"));
    let e = &summary["cases"][0]["energy"];
    assert!(
        e["total_j"].is_null() && e["output_tokens_per_joule"].is_null(),
        "{e}"
    );
    let why = e["unavailable"].as_str().expect("a reason");
    assert!(
        why.starts_with("GPU 0: a gap of 4.200 s between readings at 0.000 s and 4.200 s"),
        "{why}"
    );
    let row = csv_row(&dir);
    assert_eq!(row["energy_j"], "");
    assert_eq!(row["output_tokens_per_joule"], "");
    assert!(!row["energy_window_s"].is_empty());
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("unavailable: GPU 0: a gap"), "{report}");
    assert_rebuilds_the_same_energy(&dir, &summary);
}

#[test]
fn telemetry_off_gives_no_energy_and_empty_cells() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let dir = run(&sim.url, out.path(), "off", &["--rounds", "1"]);
    let summary = json(&dir.join("summary.json"));
    assert!(summary["cases"][0].get("energy").is_none());
    assert_eq!(csv_row(&dir)["energy_window_s"], "");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(!report.contains("Energy over"), "{report}");
}
