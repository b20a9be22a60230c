//! Soak runs end to end against the simulator with replayed GPU telemetry: the measurement window
//! cut into windows after the warmup time, every measured request in exactly one window, GPU
//! figures from the readings of each window, and the drift statement in the summary and the
//! human output.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{attempt_dir, json, json_lines, llmload, Invocation, Simulator};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A replay trace: one reading every 0.25 s for 40 s, the GPU heating by 1 °C and drawing 5 W
/// more each second.
fn heating_trace(dir: &Path) -> String {
    let path = dir.join("trace.jsonl");
    let mut text = String::new();
    for i in 0..160 {
        let t = f64::from(i) * 0.25;
        let line = json!({"t_s": t, "gpu": 0, "temperature_c": 60.0 + t,
            "power_w": 200.0 + 5.0 * t, "power_limit_w": 300.0});
        let _ = writeln!(text, "{line}");
    }
    std::fs::write(&path, text).expect("write trace");
    path.to_str().expect("UTF-8").to_owned()
}

fn soak(out: &Path, url: &str, telemetry: &str, extra: &[&str]) -> (Invocation, PathBuf) {
    let mut args = vec![
        "run",
        "--url",
        url,
        "--out",
        out.to_str().expect("UTF-8"),
        "--name",
        "soak",
        "--telemetry",
        telemetry,
        "--arrival",
        "closed-continuous",
        "--concurrency",
        "2",
        "--input-tokens",
        "32",
        "--output-tokens",
        "24",
    ];
    args.extend_from_slice(extra);
    let run = llmload(&args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let dir = attempt_dir(out, "soak");
    (run, dir)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

#[test]
fn a_six_second_soak_has_five_windows_after_the_warmup_and_states_its_drift() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let replay = format!("replay:{}", heating_trace(out.path()));
    let (run, dir) = soak(
        out.path(),
        &sim.url,
        &replay,
        &[
            "--duration",
            "6s",
            "--warmup-time",
            "1s",
            "--series-window",
            "1s",
        ],
    );
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    let series = &case["series"];
    assert_eq!(series["window_s"], 1.0);
    let windows = series["windows"].as_array().expect("windows");
    assert_eq!(windows.len(), 5, "6 s less 1 s of warmup: {series}");
    assert!(windows.iter().all(|w| w["full"] == true), "{series}");

    // The windows start where the warmup time ends and follow each other.
    let window = &case["load"]["window_s"];
    assert!((f(&windows[0]["span_s"][0]) - f(&window[0])).abs() < 1e-9);
    assert!((f(&windows[4]["span_s"][1]) - f(&window[1])).abs() < 1e-9);

    // Every measured request is in exactly one window; warmups are in none.
    let records = json_lines(&dir.join("requests.jsonl"));
    let measured: Vec<&Value> = records
        .iter()
        .filter(|r| r["phase"] == "measured")
        .collect();
    assert!(
        records.iter().any(|r| r["phase"] == "warmup"),
        "the warmup time ran"
    );
    let sum = |key: &str| {
        windows
            .iter()
            .map(|w| w[key].as_u64().expect("count"))
            .sum::<u64>()
    };
    assert_eq!(sum("requests"), measured.len() as u64);
    assert_eq!(sum("ok"), case["counts"]["ok"].as_u64().expect("ok"));
    for (i, w) in windows.iter().enumerate() {
        let (a, b) = (f(&w["span_s"][0]), f(&w["span_s"][1]));
        // The last window also takes a request sent on its closing edge.
        let last = i + 1 == windows.len();
        let sent_here = measured
            .iter()
            .map(|r| f(&r["sent_s"]))
            .filter(|&t| t >= a && (t < b || last))
            .count() as u64;
        assert_eq!(w["requests"].as_u64(), Some(sent_here), "{w}");
        assert!(f(&w["throughput_tps"]) > 0.0, "{w}");
        assert!(w["ttft_ms"]["n"].as_u64().expect("n") > 0, "{w}");
    }

    // GPU figures: the readings of each window, from telemetry.jsonl.
    let readings = json_lines(&dir.join("telemetry.jsonl"));
    let first = &windows[0];
    let (a, b) = (f(&first["span_s"][0]), f(&first["span_s"][1]));
    let inside: Vec<f64> = readings
        .iter()
        .filter(|r| f(&r["t_s"]) >= a && f(&r["t_s"]) < b)
        .map(|r| f(&r["temperature_c"]))
        .collect();
    assert_eq!(first["gpu"]["readings"], inside.len() as u64, "{first}");
    let mean = inside.iter().sum::<f64>() / inside.len() as f64;
    assert!((f(&first["gpu"]["temperature_c_mean"]) - mean).abs() < 1e-9);
    assert!(f(&windows[4]["gpu"]["temperature_c_max"]) > f(&first["gpu"]["temperature_c_max"]));
    assert!(f(&windows[4]["gpu"]["power_w_mean"]) > f(&first["gpu"]["power_w_mean"]));

    // Drift: first against last full window, with the change and the sample sizes.
    let drift = &series["drift"];
    assert_eq!(
        (
            drift["first_window"].as_u64(),
            drift["last_window"].as_u64()
        ),
        (Some(1), Some(5))
    );
    let tps = &drift["throughput_tps"];
    let (t1, t5) = (
        f(&windows[0]["throughput_tps"]),
        f(&windows[4]["throughput_tps"]),
    );
    assert!(
        (f(&tps["change_pct"]) - (t5 - t1) / t1 * 100.0).abs() < 1e-9,
        "{drift}"
    );
    assert_eq!(drift["ttft_p50_ms"]["n_first"], windows[0]["ttft_ms"]["n"]);
    let statement = series["drift_statement"].as_str().expect("statement");
    assert!(
        statement.starts_with("Drift, first against last full window (windows 1 and 5 of 1s)"),
        "{statement}"
    );
    assert!(run.stdout.contains(statement), "{}", run.stdout);
    assert!(run.stdout.contains("Soak series, case"), "{}", run.stdout);

    assert_report_rebuilds_the_series(&dir, series);
}

/// `llmload report` rebuilds the same series from the records and the readings, and the same
/// report.md.
fn assert_report_rebuilds_the_series(dir: &Path, series: &Value) {
    let report_md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    std::fs::remove_file(dir.join("report.md")).expect("remove report.md");
    let rebuilt = llmload(&["report", dir.to_str().expect("UTF-8"), "--json"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    let again: Value = serde_json::from_str(&rebuilt.stdout).expect("report --json");
    assert_eq!(again["cases"][0]["series"], *series);
    let rebuilt_md = std::fs::read_to_string(dir.join("report.md")).expect("rebuilt report.md");
    assert_eq!(rebuilt_md, report_md);
}

#[test]
fn fewer_than_two_full_windows_say_there_is_not_enough_to_state_drift() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = soak(
        out.path(),
        &sim.url,
        "off",
        &["--duration", "2s", "--series-window", "1500ms"],
    );
    let series = &json(&dir.join("summary.json"))["cases"][0]["series"];
    let windows = series["windows"].as_array().expect("windows");
    assert_eq!(windows.len(), 2, "{series}");
    assert_eq!(
        (windows[0]["full"].as_bool(), windows[1]["full"].as_bool()),
        (Some(true), Some(false))
    );
    assert!(
        windows.iter().all(|w| w.get("gpu").is_none()),
        "telemetry was off"
    );
    assert!(series["drift"].is_null());
    let statement = series["drift_statement"].as_str().expect("statement");
    assert!(
        statement.contains("not enough windows to state drift"),
        "{statement}"
    );
    assert!(run.stdout.contains(statement), "{}", run.stdout);
}

#[test]
fn without_a_series_window_there_is_no_series_and_rounds_refuse_one() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (_, dir) = soak(out.path(), &sim.url, "off", &["--requests", "6"]);
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert!(case.get("series").is_none(), "{case}");
    // A timed loop nobody asked to soak: no series, and no soak table printed.
    let timed = out.path().join("timed");
    let (run, dir) = soak(&timed, &sim.url, "off", &["--duration", "2s"]);
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert!(case.get("series").is_none(), "{case}");
    assert!(case["load"].is_object(), "a window case: {case}");
    assert!(!run.stdout.contains("Soak series"), "{}", run.stdout);

    let run = llmload(&[
        "run",
        "--url",
        &sim.url,
        "--series-window",
        "1s",
        "--telemetry",
        "off",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("--series-window"), "{}", run.stderr);
}
