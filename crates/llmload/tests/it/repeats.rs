//! A series of repeats (`run --repeat N`) against the simulator and a real llama-server: each
//! repeat is recorded apart, only the complete ones are combined into the cases, a repeat
//! stopped by a guard rule, SIGTERM or a kill is listed with its reason and never combined, and
//! `llmload report` rebuilds the same series from the records. Counts and classifications only,
//! never a timing.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{
    attempt_so_far, count, json, json_lines, llmload, run_against, spawn_quiet, LlamaServer,
    Simulator, SERIAL,
};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

/// Two cases (prompts of 32 and 64 tokens), 2 concurrent, 8 output tokens, 2 rounds and 1
/// warmup each: 5 generation requests a case, 10 a repeat.
const SMALL: [&str; 12] = [
    "--input-tokens",
    "32,64",
    "--concurrency",
    "2",
    "--output-tokens",
    "8",
    "--rounds",
    "2",
    "--warmup",
    "1",
    "--seed",
    "7",
];

/// `llmload report DIR --json`: the summary rebuilt from the records.
fn rebuilt(dir: &Path) -> Value {
    let report = llmload(&["report", dir.to_str().expect("UTF-8 path"), "--json"]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    serde_json::from_str(&report.stdout).expect("JSON")
}

/// The numbers in a JSON array.
fn numbers(v: &Value) -> Vec<u64> {
    v.as_array().expect("an array").iter().map(count).collect()
}

/// The `ok` counts of `cases`, by position.
fn ok_counts(cases: &Value) -> Vec<u64> {
    let cases = cases.as_array().expect("cases");
    cases.iter().map(|c| count(&c["counts"]["ok"])).collect()
}

/// The measured records of repeat `k`.
fn measured_of(records: &[Value], k: u64) -> Vec<&Value> {
    records
        .iter()
        .filter(|r| r["phase"] == "measured" && r["repeat"] == k)
        .collect()
}

/// What `report` rebuilds is what the run wrote: the series and the combined cases.
fn assert_rebuilt_alike(dir: &Path, summary: &Value) {
    let again = rebuilt(dir);
    assert_eq!(again["repeats"], summary["repeats"]);
    assert_eq!(again["cases"], summary["cases"]);
    assert_eq!(again["outcome"], summary["outcome"]);
}

#[test]
fn three_repeats_are_recorded_apart_and_combined_into_the_same_cases() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let mut args = SMALL.to_vec();
    args.extend(["--repeat", "3"]);
    let (run, dir) = run_against(out.path(), "three", &sim.url, &args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let campaign = json(&dir.join("campaign.json"));
    assert_eq!(campaign["config"]["repeat"], 3);
    let summary = json(&dir.join("summary.json"));
    let series = &summary["repeats"];
    assert_eq!(series["planned"], 3);
    assert_eq!(numbers(&series["complete"]), [1, 2, 3]);
    assert_eq!(series["incomplete"], Value::Array(Vec::new()));
    let runs = series["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3);
    let ids = |cases: &Value| -> Vec<String> {
        let cases = cases.as_array().expect("cases");
        cases.iter().map(|c| c["id"].to_string()).collect()
    };
    for (k, run) in (1..).zip(runs) {
        assert_eq!(run["repeat"], k);
        assert_eq!(run["complete"], true, "{run}");
        assert_eq!(ids(&run["cases"]), ids(&summary["cases"]), "same case ids");
        assert_eq!(ok_counts(&run["cases"]), [4, 4], "repeat {k}");
    }
    // Every record names its repeat; each repeat sent its warmups and its rounds.
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 30);
    for k in 1..=3 {
        let of_k: Vec<&Value> = records.iter().filter(|r| r["repeat"] == k).collect();
        let warmups = of_k.iter().filter(|r| r["phase"] == "warmup").count();
        assert_eq!((of_k.len(), warmups), (10, 2), "repeat {k}");
    }
    // The cases pool every repeat: their rounds, their responses.
    assert_eq!(ok_counts(&summary["cases"]), [12, 12]);
    for case in summary["cases"].as_array().expect("cases") {
        assert_eq!(case["complete"], true, "{case}");
        assert_eq!(case["rounds_planned"], 6);
        let from: Vec<u64> = case["rounds"]
            .as_array()
            .expect("rounds")
            .iter()
            .map(|r| count(&r["repeat"]))
            .collect();
        assert_eq!(from, [1, 1, 2, 2, 3, 3]);
    }
    assert_eq!(summary["outcome"]["status"], "completed");
    assert_eq!(summary["outcome"]["responses_completed"], 24);
    // The variation between the repeats, per case, over all three.
    let between = series["between"].as_array().expect("between");
    assert_eq!(between.len(), 2);
    for case in between {
        for figure in ["ttft_p50_ms", "ttft_p99_ms", "e2e_p50_ms", "throughput_tps"] {
            let v = &case["figures"][figure];
            assert_eq!(v["n"], 3, "{figure}: {v}");
            let at = |key: &str| v[key].as_f64().unwrap_or_else(|| panic!("{key}: {v}"));
            assert!(at("min") <= at("mean") && at("mean") <= at("max"), "{v}");
            assert!(at("sd") >= 0.0 && at("cv") >= 0.0, "{v}");
        }
    }
    assert_rebuilt_alike(&dir, &summary);
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("Series: 3 of 3 repeats complete (repeat 1, 2, 3)"),
        "{report}"
    );
    assert!(
        report.contains("| in32-c2-out8 | TTFT p50 | 3 |"),
        "{report}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(html.contains("<section id=\"repeats\">\n<h2>Repeats</h2>"));
}

#[test]
fn a_repeat_stopped_by_a_guard_rule_is_listed_and_never_combined() {
    // Serial 16 is the first measured request of the second case of repeat 2 (10 a repeat,
    // 5 a case, the warmup first).
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--fault", "http500:index=16"]);
    let out = tempfile::tempdir().expect("temp dir");
    let mut args = SMALL.to_vec();
    args.extend(["--repeat", "3", "--max-errors", "1"]);
    let (run, dir) = run_against(out.path(), "guarded", &sim.url, &args);
    assert_eq!(run.code, 4, "stopped: {}\n{}", run.stdout, run.stderr);
    let summary = json(&dir.join("summary.json"));
    let series = &summary["repeats"];
    assert_eq!(numbers(&series["complete"]), [1]);
    let incomplete = series["incomplete"].as_array().expect("incomplete");
    let listed: Vec<u64> = incomplete.iter().map(|i| count(&i["repeat"])).collect();
    assert_eq!(listed, [2, 3]);
    let why = incomplete[0]["reason"].as_str().expect("a reason");
    assert!(why.contains("errors rule"), "{why}");
    assert_eq!(
        incomplete[1]["reason"],
        "not run (the series ended in repeat 2)"
    );
    let runs = series["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "repeat 3 never began");
    assert_eq!(runs[1]["complete"], false);
    // Repeat 2 left its records, the failure among them; none of them is combined.
    let records = json_lines(&dir.join("requests.jsonl"));
    let second = measured_of(&records, 2);
    assert!(second.iter().any(|r| r["status"] == "error"), "the fault");
    assert_eq!(ok_counts(&summary["cases"]), ok_counts(&runs[0]["cases"]));
    assert_eq!(ok_counts(&summary["cases"]), [4, 4]);
    for case in summary["cases"].as_array().expect("cases") {
        assert_eq!(case["counts"]["error"], 0, "{case}");
        assert_eq!(case["rounds_planned"], 2);
        assert!(case["rounds"]
            .as_array()
            .expect("rounds")
            .iter()
            .all(|r| r["repeat"] == 1));
    }
    assert_eq!(summary["outcome"]["status"], "stopped");
    let between = &series["between"][0]["figures"]["ttft_p50_ms"];
    assert_eq!(
        (&between["n"], &between["sd"]),
        (&Value::from(1), &Value::Null)
    );
    assert_rebuilt_alike(&dir, &summary);
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("Series: 1 of 3 repeats complete (repeat 1)"));
    assert!(report.contains("- Repeat 2, not combined: stopped by the errors rule"));
}

/// Starts a series of `repeats` against `url` whose repeats last a while (300 rounds of one
/// request), waits (two minutes at most) until a record of repeat 2 is written, and sends
/// `signal` to it; returns the child and the attempt folder.
fn signal_in_second_repeat(
    out: &Path,
    url: &str,
    signal: &str,
) -> (std::process::Child, std::path::PathBuf) {
    let mut child = spawn_quiet([
        "run",
        "--url",
        url,
        "--out",
        out.to_str().expect("UTF-8 path"),
        "--name",
        "signalled",
        "--telemetry",
        "off",
        "-q",
        "--input-tokens",
        "32",
        "--concurrency",
        "1",
        "--output-tokens",
        "4",
        "--rounds",
        "300",
        "--repeat",
        "3",
    ]);
    let deadline = Instant::now() + Duration::from_secs(120);
    let dir = loop {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("no record of repeat 2");
        }
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("the run ended ({status}) before repeat 2");
        }
        std::thread::sleep(Duration::from_millis(20));
        let Some(dir) = attempt_so_far(out, "signalled") else {
            continue;
        };
        let text = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap_or_default();
        if text.lines().any(|l| l.contains("\"repeat\":2")) {
            break dir;
        }
    };
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    (child, dir)
}

#[test]
fn sigterm_in_the_second_repeat_leaves_it_out_of_the_combined_cases() {
    let sim = Simulator::start(&["--schedule", "fixed:ttft_ms=2,itl_ms=1"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (mut child, dir) = signal_in_second_repeat(out.path(), &sim.url, "-TERM");
    let status = child.wait().expect("reaped");
    assert_eq!(status.code(), Some(4), "a stop by a signal");
    let summary = json(&dir.join("summary.json"));
    let series = &summary["repeats"];
    assert_eq!(numbers(&series["complete"]), [1]);
    let why = series["incomplete"][0]["reason"].as_str().expect("reason");
    assert_eq!(series["incomplete"][0]["repeat"], 2);
    assert!(why.contains("SIGTERM"), "{why}");
    assert_eq!(series["incomplete"][1]["repeat"], 3);
    // The combined case holds repeat 1 alone: its 300 rounds, every one complete.
    let case = &summary["cases"][0];
    assert_eq!(case["counts"]["ok"], 300);
    assert_eq!(case["complete"], true);
    let records = json_lines(&dir.join("requests.jsonl"));
    assert!(
        !measured_of(&records, 2).is_empty(),
        "repeat 2 left records"
    );
    assert_eq!(series["runs"][1]["complete"], false);
    assert_rebuilt_alike(&dir, &summary);
}

#[test]
fn a_series_killed_in_its_second_repeat_is_rebuilt_with_the_first_alone() {
    let sim = Simulator::start(&["--schedule", "fixed:ttft_ms=2,itl_ms=1"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (mut child, dir) = signal_in_second_repeat(out.path(), &sim.url, "-KILL");
    child.wait().expect("reaped");
    // The summary the run left says it was still running, in repeat 2.
    let left = json(&dir.join("summary.json"));
    assert_eq!(left["outcome"]["status"], "running");
    let summary = rebuilt(&dir);
    let series = &summary["repeats"];
    assert_eq!(numbers(&series["complete"]), [1]);
    let incomplete = series["incomplete"].as_array().expect("incomplete");
    assert_eq!(incomplete.len(), 2);
    let why = incomplete[0]["reason"].as_str().expect("reason");
    assert!(why.contains("without closing this repeat"), "{why}");
    assert_eq!(summary["cases"][0]["counts"]["ok"], 300);
    assert_eq!(summary["outcome"]["status"], "failed");
    let reason = summary["outcome"]["reason"].as_str().expect("reason");
    assert!(reason.contains("1 of 3 repeats complete"), "{reason}");
}

/// A float in a JSON value.
fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn an_open_loop_series_takes_its_rates_repeat_by_repeat_and_pools_its_latencies() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "8"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = run_against(
        out.path(),
        "open",
        &sim.url,
        &[
            "--arrival",
            "poisson",
            "--rate",
            "20",
            "--requests",
            "30",
            "--input-tokens",
            "32",
            "--output-tokens",
            "8",
            "--slo-ttft",
            "5s",
            "--seed",
            "3",
            "--repeat",
            "3",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let summary = json(&dir.join("summary.json"));
    let series = &summary["repeats"];
    assert_eq!(numbers(&series["complete"]), [1, 2, 3]);
    let records = json_lines(&dir.join("requests.jsonl"));
    let runs = series["runs"].as_array().expect("runs");
    let loads: Vec<&Value> = runs.iter().map(|r| &r["cases"][0]["load"]).collect();
    for (k, load) in (1..).zip(&loads) {
        assert_eq!(measured_of(&records, k).len(), 30, "repeat {k}");
        assert_eq!(load["shape"], "poisson", "{load}");
        assert_eq!(load["send_lag_ms"]["n"], 30, "{load}");
    }
    // Each repeat's window comes after the one before.
    for pair in loads.windows(2) {
        assert!(
            f(&pair[0]["window_s"][1]) <= f(&pair[1]["window_s"][0]),
            "{pair:?}"
        );
    }
    let case = &summary["cases"][0];
    assert_eq!(case["complete"], true, "{case}");
    assert_eq!(case["counts"]["ok"], 90);
    let load = &case["load"];
    // The series' rates: the mean of the repeats' own, with an interval over the repeats.
    for rate in ["throughput_tps", "completed_rps", "goodput_rps"] {
        let each: Vec<f64> = loads.iter().map(|l| f(&l[rate])).collect();
        let mean = each.iter().sum::<f64>() / 3.0;
        assert!((f(&load[rate]) - mean).abs() < 1e-9, "{rate}: {load}");
    }
    for ci in ["throughput_ci", "completed_ci", "goodput_ci"] {
        assert_eq!(load[ci]["unit"], "repeat", "{ci}: {load}");
        assert_eq!(load[ci]["units"], 3, "{ci}: {load}");
    }
    let (lo, hi) = (
        f(&load["throughput_ci"]["interval"][0]),
        f(&load["throughput_ci"]["interval"][1]),
    );
    assert!(
        lo <= f(&load["throughput_tps"]) && f(&load["throughput_tps"]) <= hi,
        "{load}"
    );
    assert_eq!(case["throughput_tps"]["n"], 3, "{case}");
    assert_eq!(load["requests_launched"], 90);
    assert_eq!(load["window_s"][0], loads[0]["window_s"][0]);
    assert_eq!(load["window_s"][1], loads[2]["window_s"][1]);
    // The latencies pool every repeat's responses.
    assert_eq!(load["send_lag_ms"]["n"], 90, "{load}");
    assert_eq!(load["ttft_from_scheduled_ms"]["n"], 90, "{load}");
    assert_eq!(case["ttft_ms"]["n"], 90, "{case}");
    assert_eq!(series["between"][0]["figures"]["throughput_tps"]["n"], 3);
    assert_rebuilt_alike(&dir, &summary);
}

#[test]
fn a_continuous_series_is_complete_in_each_repeat() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = run_against(
        out.path(),
        "continuous",
        &sim.url,
        &[
            "--arrival",
            "closed-continuous",
            "--concurrency",
            "2",
            "--requests",
            "8",
            "--input-tokens",
            "32",
            "--output-tokens",
            "8",
            "--repeat",
            "2",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let summary = json(&dir.join("summary.json"));
    assert_eq!(numbers(&summary["repeats"]["complete"]), [1, 2]);
    let case = &summary["cases"][0];
    assert_eq!(case["complete"], true, "{case}");
    assert_eq!(case["load"]["shape"], "closed-continuous");
    assert_eq!(case["load"]["throughput_ci"]["units"], 2);
    assert_eq!(case["counts"]["ok"], 16);
    assert_rebuilt_alike(&dir, &summary);
}

/// A usage error: exit code 2 and one line on stderr naming `--repeat`.
fn assert_refused(args: &[&str]) {
    let run = llmload(args);
    assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: {}", run.stderr);
    assert!(lines[0].contains("--repeat"), "{args:?}: {}", lines[0]);
}

#[test]
fn what_a_series_cannot_be_is_refused_in_one_line() {
    let url = ["--url", "http://127.0.0.1:9"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut args = vec!["run", url[0], url[1]];
        args.extend_from_slice(extra);
        args
    };
    assert_refused(&with(&["--repeat", "0"]));
    assert_refused(&with(&["--repeat", "2", "--stages", "2s:rate=1"]));
    assert_refused(&with(&["--repeat", "2", "--turns", "2"]));
    assert_refused(&with(&[
        "--repeat",
        "2",
        "--shard",
        "0/2",
        "--attempt-id",
        "a",
        "--start-at",
        "+10s",
    ]));
    let mut sweep = with(&["--repeat", "2"]);
    sweep[0] = "sweep";
    assert_refused(&sweep);
}

#[test]
fn llama_server_two_repeats_record_apart_and_combine() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = run_against(
        out.path(),
        "llama",
        &server.url,
        &[
            "--input-tokens",
            "64",
            "--concurrency",
            "2",
            "--output-tokens",
            "8",
            "--rounds",
            "1",
            "--repeat",
            "2",
            "--timeout",
            "5m",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let summary = json(&dir.join("summary.json"));
    let series = &summary["repeats"];
    assert_eq!(numbers(&series["complete"]), [1, 2]);
    let records = json_lines(&dir.join("requests.jsonl"));
    for k in 1..=2 {
        let of_k = measured_of(&records, k);
        assert_eq!(of_k.len(), 2, "repeat {k}");
        assert!(of_k
            .iter()
            .all(|r| r["status"] == "ok" && r["verified"] == true));
    }
    let case = &summary["cases"][0];
    assert_eq!(case["counts"]["ok"], 4);
    assert_eq!(case["rounds_planned"], 2);
    assert_eq!(case["complete"], true);
    assert_eq!(series["between"][0]["figures"]["ttft_p50_ms"]["n"], 2);
    assert_rebuilt_alike(&dir, &summary);
}
