//! The safety guard with replayed GPU telemetry: a campaign stops itself at the harness's
//! thresholds, says which one fired with the triggering sample, keeps only complete cases in the
//! results table, and loses no started request — against the simulator and a real llama-server.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{attempt_dir, json, json_lines, llmload, LlamaServer, Simulator, SERIAL};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::PoisonError;

/// Writes a replay trace: one reading every 0.25 s for `seconds`, from `reading(t)`.
fn trace(dir: &Path, seconds: f64, reading: impl Fn(f64) -> (f64, f64)) -> String {
    let path = dir.join("trace.jsonl");
    let mut text = String::new();
    let mut t = 0.0;
    while t <= seconds {
        let (temperature_c, margin_c) = reading(t);
        let line = json!({"t_s": t, "gpu": 0, "temperature_c": temperature_c, "margin_c": margin_c,
            "power_w": 280.0, "power_limit_w": 300.0, "sw_thermal_slowdown": false,
            "hw_thermal_slowdown": false, "sw_power_cap": true});
        let _ = writeln!(text, "{line}");
        t += 0.25;
    }
    std::fs::write(&path, text).expect("write trace");
    path.to_str().expect("UTF-8").to_owned()
}

/// Six near-identical cases on a `cpu-tiny` simulator (input 60…65 tokens, 2 concurrent, 400
/// output tokens, one warmup and one round each).
fn six_cases(url: &str, out: &Path, telemetry: &str) -> common::Invocation {
    llmload(&[
        "run",
        "--url",
        url,
        "--input-tokens",
        "60,61,62,63,64,65",
        "--concurrency",
        "2",
        "--output-tokens",
        "400",
        "--rounds",
        "1",
        "--out",
        out.to_str().expect("UTF-8"),
        "--name",
        "six",
        "--telemetry",
        telemetry,
        "--stop-temp",
        "90",
        "--stop-margin",
        "2",
    ])
}

/// Seconds one of those cases takes here, measured with a one-case run.
fn case_seconds(url: &str) -> f64 {
    let out = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--url",
        url,
        "--input-tokens",
        "60",
        "--concurrency",
        "2",
        "--output-tokens",
        "400",
        "--rounds",
        "1",
        "--out",
        out.path().to_str().expect("UTF-8"),
        "--name",
        "one",
        "--telemetry",
        "off",
        "-q",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = json_lines(&attempt_dir(out.path(), "one").join("requests.jsonl"));
    records
        .iter()
        .filter_map(|r| r["done_s"].as_f64())
        .fold(0.0, f64::max)
}

fn outcome_matches_records(summary: &Value, records: &[Value]) {
    let ok = records
        .iter()
        .filter(|r| r["phase"] == "measured" && r["status"] == "ok")
        .count();
    assert_eq!(summary["outcome"]["responses_completed"], ok as u64);
    let complete_rounds: u64 = summary["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .flat_map(|c| c["rounds"].as_array().expect("rounds"))
        .filter(|r| r["complete"] == true)
        .count() as u64;
    assert_eq!(summary["outcome"]["rounds_completed"], complete_rounds);
}

#[test]
fn crossing_90_during_the_fourth_case_stops_the_campaign_there() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let case = case_seconds(&sim.url);
    let dir = tempfile::tempdir().expect("temp dir");
    let crossing = 3.5 * case;
    let replay = trace(dir.path(), crossing + 30.0, |t| {
        (if t < crossing { 70.0 + t } else { 90.0 }, 3.0)
    });
    let run = six_cases(&sim.url, dir.path(), &format!("replay:{replay}"));
    assert_eq!(
        run.code, 4,
        "stopped by the guard: {}{}",
        run.stdout, run.stderr
    );

    let attempt = attempt_dir(dir.path(), "six");
    let summary = json(&attempt.join("summary.json"));
    let outcome = &summary["outcome"];
    assert_eq!(outcome["status"], "stopped");
    assert_eq!(outcome["cases_completed"], 3, "{outcome}");
    assert_eq!(outcome["cases_total"], 6);
    let reason = outcome["reason"].as_str().expect("reason");
    assert!(
        reason.contains("temperature") && reason.contains("90 °C"),
        "{reason}"
    );
    assert!(reason.contains("margin 3 °C"), "{reason}");
    assert_eq!(outcome["stop_sample"]["temperature_c"], 90.0);
    assert_eq!(outcome["stop_sample"]["margin_c"], 3.0);

    let cases = summary["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 4, "the fourth case started and none after it");
    assert!(cases[..3].iter().all(|c| c["complete"] == true));
    assert_eq!(cases[3]["complete"], false);
    let records = json_lines(&attempt.join("requests.jsonl"));
    outcome_matches_records(&summary, &records);
    assert!(records
        .iter()
        .all(|r| r["case"] != "in64-c2-out400" && r["case"] != "in65-c2-out400"));

    let rows: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("| 6"))
        .collect();
    assert_eq!(
        rows.len(),
        3,
        "only complete cases in the table: {}",
        run.stdout
    );
    assert!(run.stdout.contains("Incomplete cases") && run.stdout.contains("63 input tokens"));
    assert!(
        run.stdout.contains("highest sampled temperature 90 °C"),
        "{}",
        run.stdout
    );
    let readings = json_lines(&attempt.join("telemetry.jsonl"));
    assert_eq!(summary["telemetry"]["readings"], readings.len() as u64);
}

#[test]
fn the_margin_reaching_2_first_names_the_margin() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let replay = trace(dir.path(), 60.0, |t| {
        (80.0, if t < 1.5 { 6.0 } else { 2.0 })
    });
    let run = six_cases(&sim.url, dir.path(), &format!("replay:{replay}"));
    assert_eq!(run.code, 4, "{}", run.stderr);
    let summary = json(&attempt_dir(dir.path(), "six").join("summary.json"));
    let reason = summary["outcome"]["reason"].as_str().expect("reason");
    assert!(
        reason.contains("margin rule") && reason.contains("2 °C"),
        "{reason}"
    );
    assert!(reason.contains("temperature 80 °C"), "{reason}");
    assert_eq!(summary["outcome"]["stop_sample"]["margin_c"], 2.0);
}

#[test]
fn without_a_gpu_auto_telemetry_says_so_once_and_runs_on() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--url",
        &sim.url,
        "--input-tokens",
        "32,64",
        "--concurrency",
        "1",
        "--output-tokens",
        "4",
        "--rounds",
        "1",
        "--out",
        out.path().to_str().expect("UTF-8"),
        "--telemetry",
        "auto",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("no GPU telemetry available").count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn a_stop_mid_round_on_llama_server_leaves_every_started_request_recorded() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    // 4 × 512 prompt tokens take seconds on a CPU: the stop at 1.5 s lands inside round 1.
    let replay = trace(dir.path(), 120.0, |t| {
        (if t < 1.5 { 75.0 } else { 92.0 }, 10.0)
    });
    let run = llmload(&[
        "run",
        "--url",
        &server.url,
        "--input-tokens",
        "512",
        "--concurrency",
        "4",
        "--output-tokens",
        "32",
        "--rounds",
        "3",
        "--warmup",
        "0",
        "--out",
        dir.path().to_str().expect("UTF-8"),
        "--name",
        "stop",
        "--telemetry",
        &format!("replay:{replay}"),
        "--stop-temp",
        "90",
        "-q",
    ]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    let attempt = attempt_dir(dir.path(), "stop");
    let records = json_lines(&attempt.join("requests.jsonl"));
    let rounds: std::collections::BTreeSet<u64> =
        records.iter().filter_map(|r| r["round"].as_u64()).collect();
    assert_eq!(
        records.len(),
        4 * rounds.len(),
        "every started request recorded: {records:?}"
    );
    assert!(
        records
            .iter()
            .all(|r| r["status"] == "ok" || r["status"] == "cancelled"),
        "{records:?}"
    );
    assert!(
        records.iter().any(|r| r["status"] == "cancelled"),
        "the stop came mid-round: {records:?}"
    );
    let summary = json(&attempt.join("summary.json"));
    assert_eq!(summary["outcome"]["status"], "stopped");
    outcome_matches_records(&summary, &records);
}

#[test]
#[expect(
    clippy::print_stderr,
    reason = "says why the test does nothing on this machine"
)]
fn nvml_asked_for_where_there_is_none_is_one_error_line_and_no_attempt() {
    if llmload::telemetry::nvml::open().is_ok() {
        eprintln!("NVML loads here: this test is for machines without it");
        return;
    }
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--url",
        &sim.url,
        "--input-tokens",
        "32",
        "--concurrency",
        "1",
        "--output-tokens",
        "4",
        "--rounds",
        "1",
        "--out",
        out.path().to_str().expect("UTF-8"),
        "--telemetry",
        "nvml",
        "-q",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.trim().lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with("error: --telemetry nvml: ") && lines[0].contains("NVML"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"));
    assert!(
        std::fs::read_dir(out.path())
            .expect("out exists")
            .next()
            .is_none(),
        "no attempt folder for a run that did not start"
    );
}

#[test]
fn ctrl_c_stops_the_run_as_interrupted_and_keeps_every_started_request() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    // Two cases of rounds that each take seconds: the interrupt lands inside the first.
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_llmload"))
        .args([
            "run",
            "--url",
            &sim.url,
            "--out",
            out.path().to_str().expect("UTF-8"),
            "--name",
            "interrupted",
            "--telemetry",
            "off",
            "--input-tokens",
            "64",
            "--concurrency",
            "2,4",
            "--output-tokens",
            "600",
            "--rounds",
            "3",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start llmload");
    let dir = out.path().join("interrupted");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // Wait until the measured round has started (the warmup record is written), then interrupt.
    loop {
        let started = std::fs::read_dir(&dir)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
            .map(|e| e.path().join("requests.jsonl"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .is_some_and(|t| t.lines().count() >= 1);
        if started {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let output = child.wait_with_output().expect("llmload ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    let dir = attempt_dir(out.path(), "interrupted");
    let summary = json(&dir.join("summary.json"));
    let outcome = &summary["outcome"];
    assert_eq!(outcome["status"], "stopped", "{outcome}");
    assert!(
        outcome["reason"]
            .as_str()
            .is_some_and(|r| r == "stopped by SIGINT (Ctrl-C)"),
        "{outcome}"
    );
    // Every measured request that was started is on disk, ended or cancelled, and the counts
    // match the records.
    let records: Vec<Value> = json_lines(&dir.join("requests.jsonl"))
        .into_iter()
        .filter(|r| r["phase"] == "measured")
        .collect();
    assert!(!records.is_empty());
    assert!(records.iter().any(|r| r["status"] == "cancelled"));
    let case = &summary["cases"][0];
    assert_eq!(case["complete"], false);
    let counts = &case["counts"];
    let counted: u64 = ["ok", "invalid", "error", "cancelled"]
        .iter()
        .map(|k| counts[k].as_u64().expect("a count"))
        .sum();
    assert_eq!(counted, records.len() as u64);
    assert_eq!(
        summary["cases"].as_array().map(Vec::len),
        Some(1),
        "the second case never ran"
    );
}

/// One small case on `url` with `extra` flags, into `out/cool`.
fn cool_case(url: &str, out: &Path, extra: &[&str]) -> common::Invocation {
    let mut args = vec![
        "run",
        "--url",
        url,
        "--input-tokens",
        "60",
        "--concurrency",
        "1",
        "--output-tokens",
        "8",
        "--rounds",
        "1",
        "--out",
        out.to_str().expect("UTF-8"),
        "--name",
        "cool",
    ];
    args.extend_from_slice(extra);
    llmload(&args)
}

#[test]
fn the_cool_down_waits_for_the_first_reading_before_the_first_case() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let dir = tempfile::tempdir().expect("temp dir");
    // No reading in the first second, then a hot GPU until 2 s, then a cool one.
    let path = dir.path().join("late.jsonl");
    let mut text = String::new();
    for i in 4..=40 {
        let t = f64::from(i) * 0.25;
        let temperature_c = if t < 2.0 { 85.0 } else { 50.0 };
        let line = json!({"t_s": t, "gpu": 0, "temperature_c": temperature_c, "margin_c": 20.0,
            "power_w": 200.0, "power_limit_w": 300.0, "sw_thermal_slowdown": false,
            "hw_thermal_slowdown": false, "sw_power_cap": false});
        let _ = writeln!(text, "{line}");
    }
    std::fs::write(&path, text).expect("write trace");
    let replay = format!("replay:{}", path.display());
    let out = dir.path().join("late");
    let run = cool_case(
        &sim.url,
        &out,
        &["--telemetry", &replay, "--cool-down-below", "60"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = json_lines(&attempt_dir(&out, "cool").join("requests.jsonl"));
    let first = records
        .iter()
        .filter_map(|r| r["sent_s"].as_f64())
        .fold(f64::INFINITY, f64::min);
    // Played from the attempt's start, the first reading below 60 °C is at 2 s: nothing sooner.
    assert!(
        first >= 2.0,
        "the first request was sent at {first} s: {records:?}"
    );

    // Readings that never come: the case starts after a few intervals, and says why.
    let path = dir.path().join("never.jsonl");
    let line = json!({"t_s": 600.0, "gpu": 0, "temperature_c": 50.0, "margin_c": 20.0,
        "power_w": 200.0, "power_limit_w": 300.0, "sw_thermal_slowdown": false,
        "hw_thermal_slowdown": false, "sw_power_cap": false});
    std::fs::write(&path, format!("{line}\n")).expect("write trace");
    let replay = format!("replay:{}", path.display());
    let run = cool_case(
        &sim.url,
        &dir.path().join("never"),
        &[
            "--telemetry",
            &replay,
            "--cool-down-below",
            "60",
            "--telemetry-interval",
            "0.2s",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("cool-down: no GPU reading within 5s; the case starts without it"),
        "{}",
        run.stderr
    );
    // And no telemetry at all: a usage error, not a silent skip.
    let run = cool_case(
        &sim.url,
        &dir.path().join("off"),
        &["--telemetry", "off", "--cool-down-below", "60"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--cool-down-below needs GPU readings"),
        "{}",
        run.stderr
    );
}

/// The most requests in flight at once among `records`, from each one's own interval: its send
/// to its final event, or (a failed or cancelled one) to when the client stopped waiting for it.
fn records_peak(records: &[Value]) -> u64 {
    let f = |v: &Value| v.as_f64();
    let mut edges: Vec<(f64, i64)> = Vec::new();
    for r in records {
        let sent = f(&r["sent_s"]).expect("sent_s");
        let last_event = r["event_ms"]
            .as_array()
            .and_then(|e| e.last())
            .and_then(Value::as_f64)
            .map_or(sent, |ms| sent + ms / 1e3);
        let end = f(&r["done_s"])
            .or_else(|| f(&r["ended_s"]).map(|e| e.max(last_event)))
            .unwrap_or(last_event);
        edges.extend([(sent, 1), (end, -1)]);
    }
    // An end before a start at the same instant: back-to-back requests do not overlap.
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (0_i64, 0_i64);
    for (_, step) in edges {
        now += step;
        peak = peak.max(now);
    }
    u64::try_from(peak).expect("a count")
}

/// Ctrl-C (SIGINT) during an open loop far above a 2-slot simulator's capacity: the summary's
/// peak in flight is the records' own (the cancelled requests counted until they stopped), stderr
/// counts them as the summary does and names the signal plainly, and with stderr piped a
/// heartbeat line came every second meanwhile.
#[test]
fn sigint_of_an_overloaded_open_loop_keeps_the_records_peak_and_the_summarys_counts() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    // Four times slower than the profile: about one response a second from its 2 slots.
    let sim = Simulator::start(&["--slots", "2", "--time-scale", "0.25"]);
    let out = tempfile::tempdir().expect("temp dir");
    let stderr_path = out.path().join("stderr.txt");
    let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
    let mut child = Command::new(env!("CARGO_BIN_EXE_llmload"))
        .args([
            "run",
            "--url",
            &sim.url,
            "--out",
            out.path().to_str().expect("UTF-8 path"),
            "--name",
            "overload",
            "--telemetry",
            "off",
            "--warmup",
            "0",
            "--arrival",
            "poisson",
            "--rate",
            "30",
            "--duration",
            "10m",
            "--input-tokens",
            "32",
            "--output-tokens",
            "64",
            "--heartbeat",
            "1s",
        ])
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start llmload");
    let deadline = Instant::now() + Duration::from_secs(120);
    // Until a response has ended and a few seconds of arrivals have piled up behind the slots.
    let dir = common::until_recorded(out.path(), "overload", "\"status\":\"ok\"", deadline);
    std::thread::sleep(Duration::from_secs(3));
    let code = common::signal_and_wait(&mut child, "-INT", deadline);
    let stderr = std::fs::read_to_string(&stderr_path).expect("stderr");
    assert_eq!(code, Some(4), "a stop by a signal: {stderr}");
    let records: Vec<Value> = json_lines(&dir.join("requests.jsonl"));
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    let peak = records_peak(&records);
    assert!(peak > 20, "far above the 2 slots: {peak}");
    assert_eq!(
        case["load"]["achieved_concurrency_peak"].as_u64(),
        Some(peak),
        "{}",
        case["load"]
    );
    let cancelled = records
        .iter()
        .filter(|r| r["status"] == "cancelled")
        .count();
    assert!(cancelled > 10, "{cancelled}");
    assert_eq!(case["counts"]["cancelled"].as_u64(), Some(cancelled as u64));
    assert!(
        stderr.contains(&format!("0 failed, {cancelled} cancelled")),
        "stderr counts as the summary does: {stderr}"
    );
    let reason = summary["outcome"]["reason"].as_str().expect("a reason");
    assert_eq!(reason, "stopped by SIGINT (Ctrl-C)");
    assert!(!stderr.contains("interrupted rule"), "{stderr}");
    // The heartbeat: the case, its requests and those in flight, elapsed time.
    let beats: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("progress: case 1/1 in32-poisson-r30-out64 · "))
        .collect();
    assert!(beats.len() >= 2, "{stderr}");
    assert!(
        beats
            .iter()
            .any(|b| b.contains(" in flight") && b.contains("elapsed ")),
        "{beats:?}"
    );
    // The rebuilt summary says the same peak.
    let rebuilt = llmload(&["report", dir.to_str().expect("UTF-8"), "--json"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    let rebuilt: Value = serde_json::from_str(&rebuilt.stdout).expect("JSON");
    assert_eq!(
        rebuilt["cases"][0]["load"]["achieved_concurrency_peak"].as_u64(),
        Some(peak)
    );
}
