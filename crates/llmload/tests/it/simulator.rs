//! llmload against its own simulator: the default run reproduces the seeds' table, and every
//! fault the simulator can inject becomes the right kind of record while the run goes on and no
//! record is lost.

use crate::common;

use common::{
    assert_ids_and_server_timings, assert_phases, attempt_dir, json, json_lines, llmload,
    Invocation, Simulator,
};
use serde_json::Value;

/// The seeds' table: (input, concurrency, median TTFT s, median complete s, throughput tok/s).
const SEEDS: [(u64, u64, f64, f64, f64); 4] = [
    (2048, 1, 0.19, 1.49, 171.22),
    (2048, 4, 0.70, 3.26, 312.65),
    (8192, 1, 0.85, 2.37, 107.84),
    (8192, 4, 2.49, 6.56, 154.86),
];

fn within(measured: f64, expected: f64, tolerance: f64) -> bool {
    (measured - expected).abs() <= expected * tolerance
}

#[test]
fn default_run_reproduces_the_seeds_table_and_says_it_is_simulated() {
    let out = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--out",
        out.path().to_str().expect("UTF-8"),
        "--name",
        "seeds",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("SIMULATED"), "{}", run.stdout);
    assert!(run.stderr.contains("SIMULATED"), "{}", run.stderr);
    let dir = attempt_dir(out.path(), "seeds");
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["simulated"], true);
    assert_eq!(
        json(&dir.join("campaign.json"))["target"]["simulated"],
        true
    );
    for (input, concurrency, ttft_s, e2e_s, tps) in SEEDS {
        let case = summary["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .find(|c| c["input_tokens"] == input && c["concurrency"] == concurrency)
            .expect("case present");
        let ttft = case["ttft_ms"]["median"].as_f64().expect("ttft") / 1e3;
        let e2e = case["e2e_ms"]["median"].as_f64().expect("e2e") / 1e3;
        let throughput = case["throughput_tps"]["mean"].as_f64().expect("throughput");
        assert!(
            within(ttft, ttft_s, 0.15),
            "{input}/{concurrency}: TTFT {ttft} vs {ttft_s}"
        );
        assert!(
            within(e2e, e2e_s, 0.15),
            "{input}/{concurrency}: complete {e2e} vs {e2e_s}"
        );
        assert!(
            within(throughput, tps, 0.15),
            "{input}/{concurrency}: {throughput} vs {tps}"
        );
        assert_eq!(case["counts"]["ok"], concurrency * 3);
    }
}

/// A small campaign against a `cpu-tiny` simulator with `faults`: warmup 1, 2 rounds of 4,
/// 64 input and 16 output tokens. Returns the invocation and every record.
#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
fn faulted_run(faults: &[&str], extra: &[&str]) -> (Invocation, Vec<Value>) {
    let mut sim_args = vec!["--profile", "cpu-tiny", "--slots", "4"];
    for f in faults {
        sim_args.extend(["--fault", f]);
    }
    let sim = Simulator::start(&sim_args);
    let out = tempfile::tempdir().expect("temp dir");
    let mut args = vec![
        "run",
        "--url",
        &sim.url,
        "--input-tokens",
        "64",
        "--concurrency",
        "4",
        "--output-tokens",
        "16",
        "--rounds",
        "2",
        "--out",
        out.path().to_str().expect("UTF-8"),
        "--name",
        "f",
    ];
    args.extend(extra);
    let run = llmload(&args);
    let records = json_lines(&attempt_dir(out.path(), "f").join("requests.jsonl"));
    assert_eq!(
        records.len(),
        9,
        "1 warmup + 2 rounds × 4, none lost: {records:?}"
    );
    (run, records)
}

/// The records of the request the server numbered `serial` (0 = the warmup) can't be known from
/// the client side, so faults are selected by index and counted by kind.
fn by_status<'a>(records: &'a [Value], status: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["status"] == status).collect()
}

fn assert_one_failure(faults: &[&str], extra: &[&str], status: &str, kind: &str) -> Value {
    let (run, records) = faulted_run(faults, extra);
    assert_eq!(
        run.code, 3,
        "an incomplete case exits 3: {}{}",
        run.stdout, run.stderr
    );
    let failed = by_status(&records, status);
    assert_eq!(failed.len(), 1, "{records:?}");
    assert_eq!(failed[0]["error_kind"], kind, "{}", failed[0]);
    assert_eq!(
        by_status(&records, "ok").len(),
        8,
        "the run went on: {records:?}"
    );
    assert!(run.stdout.contains("Incomplete cases"), "{}", run.stdout);
    failed[0].clone()
}

#[test]
fn http_errors_are_recorded_with_their_status() {
    for code in ["429", "500", "503"] {
        let r = assert_one_failure(&[&format!("http{code}:index=3")], &[], "error", "http");
        assert!(r["error"].as_str().expect("message").contains(code), "{r}");
    }
}

#[test]
fn dropped_connection_is_disconnected_and_keeps_what_arrived() {
    let r = assert_one_failure(&["drop:index=4,after=5"], &[], "error", "disconnected");
    assert_eq!(r["streamed_tokens"], 5, "{r}");
    assert!(r["ttft_ms"].is_number(), "{r}");
}

#[test]
fn stall_past_the_timeout_is_a_timeout() {
    let r = assert_one_failure(
        &["stall:index=2,after=3,ms=60000"],
        &["--timeout", "2s"],
        "error",
        "timeout",
    );
    assert_eq!(r["streamed_tokens"], 3, "{r}");
}

#[test]
fn malformed_event_is_malformed() {
    assert_one_failure(&["malformed:index=5,after=2"], &[], "error", "malformed");
}

#[test]
fn early_eos_and_fake_cache_hits_are_invalid() {
    let r = assert_one_failure(&["early-eos:index=1,after=4"], &[], "invalid", "invalid");
    assert_eq!(r["output_tokens"], 4, "{r}");
    let r = assert_one_failure(&["fake-cache:index=6,tokens=32"], &[], "invalid", "invalid");
    assert_eq!(r["cached_tokens"], 32, "{r}");
    assert!(
        r["error"].as_str().expect("reason").contains("cache"),
        "{r}"
    );
}

#[test]
fn multi_token_events_are_counted_and_split() {
    let (run, records) = faulted_run(&["multi-token:k=4"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(
            (r["token_events"].as_u64(), r["streamed_tokens"].as_u64()),
            (Some(4), Some(16))
        );
        assert_eq!(r["event_tokens"], serde_json::json!([4, 4, 4, 4]), "{r}");
    }
}

#[test]
fn slow_first_byte_shows_in_ttft() {
    let (run, records) = faulted_run(&["slow-first-byte:index=7,ms=400"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let slow: Vec<&Value> = records
        .iter()
        .filter(|r| r["ttft_ms"].as_f64() > Some(400.0))
        .collect();
    assert_eq!(slow.len(), 1, "{records:?}");
}

#[test]
fn every_request_failing_still_runs_every_case_and_exits_3() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--fault", "http500"]);
    let out = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--url",
        &sim.url,
        "--input-tokens",
        "32,64",
        "--concurrency",
        "1,2",
        "--output-tokens",
        "8",
        "--rounds",
        "2",
        "--out",
        out.path().to_str().expect("UTF-8"),
        "--name",
        "f",
        "-q",
    ]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    let dir = attempt_dir(out.path(), "f");
    assert_eq!(
        json_lines(&dir.join("requests.jsonl")).len(),
        4 + 2 * (1 + 2) * 2
    );
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["outcome"]["status"], "failed");
    assert_eq!(summary["outcome"]["cases_completed"], 0);
    assert_eq!(summary["cases"].as_array().map(Vec::len), Some(4));
}

#[test]
fn chat_and_completions_prompts_are_exact_on_the_simulator() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    for api in ["chat", "completions"] {
        let out = tempfile::tempdir().expect("temp dir");
        let run = llmload(&[
            "run",
            "--url",
            &sim.url,
            "--api",
            api,
            "--input-tokens",
            "40,300",
            "--concurrency",
            "3",
            "--output-tokens",
            "8",
            "--rounds",
            "2",
            "--out",
            out.path().to_str().expect("UTF-8"),
            "--name",
            api,
            "-q",
        ]);
        assert_eq!(run.code, 0, "{api}: {}{}", run.stdout, run.stderr);
        let records = json_lines(&attempt_dir(out.path(), api).join("requests.jsonl"));
        for r in &records {
            assert_eq!(r["prompt_tokens"], r["input_tokens"], "{r}");
            assert_eq!(r["verified"], true, "{r}");
        }
        // Two warmups and 2 rounds of 3 at each length, each with llama-server's timings beside
        // its final usage, as the simulator plays llama-server.
        assert_eq!(records.len(), 14, "{api}");
        let timed = assert_ids_and_server_timings(&records, "llama-server timings");
        assert_eq!(timed, 14, "{api}");
    }
}

#[test]
fn each_request_says_where_its_time_went_and_connections_are_kept_alive() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "2"]);
    let out = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--url",
        &sim.url,
        "--input-tokens",
        "64",
        "--concurrency",
        "2",
        "--output-tokens",
        "8",
        "--rounds",
        "3",
        "--warmup",
        "0",
        "--out",
        out.path().to_str().expect("UTF-8"),
        "--name",
        "phases",
        "-q",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let dir = attempt_dir(out.path(), "phases");
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 6, "{records:?}");
    // llama.cpp's native API: the final event's timings, and an id of the attempt on each.
    assert_eq!(
        assert_ids_and_server_timings(&records, "llama-server timings"),
        6
    );
    let attempt = dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("attempt id");
    assert!(
        records.iter().all(|r| r["request_id"]
            .as_str()
            .is_some_and(|id| id.starts_with(attempt))),
        "{records:?}"
    );
    // Plain http: no TLS handshake anywhere.
    let reused = records.iter().filter(|r| assert_phases(r, false)).count();
    // The first round opens one connection per request in flight; the next rounds reuse them
    // (the simulator keeps connections alive).
    assert_eq!(reused, 4, "{records:?}");
    let first_round_new = records
        .iter()
        .filter(|r| r["round"] == 1)
        .all(|r| r["phases"]["reused"] == false);
    assert!(first_round_new, "{records:?}");
    let case = &json(&dir.join("summary.json"))["cases"][0];
    let phases = &case["phases"];
    assert_eq!(phases["responses"], 6, "{phases}");
    assert_eq!(phases["new_connections"], 2, "{phases}");
    assert_eq!(phases["reused_connections"], 4, "{phases}");
    assert_eq!(phases["connect_ms"]["n"], 2, "{phases}");
    assert!(phases.get("tls_ms").is_none(), "{phases}");
    for mark in ["write_ms", "head_ms", "first_event_ms", "last_token_ms"] {
        assert_eq!(phases[mark]["n"], 6, "{mark}: {phases}");
    }
    // The server's side of the 6: its prefill and TTFT (llama-server reports no queue), and the
    // delivery of each, the client's TTFT less the server's.
    let server = &case["server"];
    assert_eq!(server["responses"], 6, "{server}");
    assert_eq!(server["ttft_exceeds_client"], 0, "{server}");
    for part in ["prefill_ms", "ttft_ms", "decode_ms", "delivery_ms"] {
        assert_eq!(server[part]["n"], 6, "{part}: {server}");
    }
    assert!(server.get("queue_ms").is_none(), "{server}");
    let markdown = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(markdown.contains("Where the time goes"), "{markdown}");
    assert!(markdown.contains("The server's own account"), "{markdown}");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert_eq!(html.matches("<g class=\"phase-bar\">").count(), 1);
}
