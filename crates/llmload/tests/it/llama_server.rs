//! End to end against a real llama-server (Gemma 3 270M, 4 slots): the reference campaign in small,
//! with each API, checked through the records it leaves.

use crate::common;

use common::{
    assert_ids_and_server_timings, attempt_dir, json, json_lines, llmload, LlamaServer, SERIAL,
};
use serde_json::Value;
use std::sync::PoisonError;

const INPUTS: [u64; 2] = [128, 512];
const CONCURRENCY: [u64; 2] = [1, 4];
const OUTPUT: u64 = 32;
const ROUNDS: u64 = 3;

/// Runs the small campaign with `api` against a fresh llama-server; returns the invocation,
/// the attempt folder and the temporary folder that holds it.
#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
fn run_campaign(api: &str) -> (common::Invocation, std::path::PathBuf, tempfile::TempDir) {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let out_dir = out.path().to_str().expect("UTF-8 path");
    let run = llmload(&[
        "run",
        "--url",
        &server.url,
        "--api",
        api,
        "--input-tokens",
        "128,512",
        "--concurrency",
        "1,4",
        "--output-tokens",
        "32",
        "--rounds",
        "3",
        "--out",
        out_dir,
        "--name",
        api,
        "--timeout",
        "5m",
    ]);
    let dir = attempt_dir(out.path(), api);
    (run, dir, out)
}

#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
fn campaign(api: &str) {
    let (run, dir, _out) = run_campaign(api);
    assert_eq!(
        run.code, 0,
        "llmload failed:\n{}\n{}",
        run.stdout, run.stderr
    );

    let records = json_lines(&dir.join("requests.jsonl"));
    let measured: Vec<&Value> = records
        .iter()
        .filter(|r| r["phase"] == "measured")
        .collect();
    let warmups = records.len() - measured.len();
    assert_eq!(measured.len(), 30, "2 inputs × (1 + 4) × 3 rounds");
    assert_eq!(warmups, 4, "one warmup per case");
    for r in &measured {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["prompt_tokens"], r["input_tokens"], "{r}");
        assert_eq!(r["cached_tokens"], 0, "{r}");
        assert_eq!(r["output_tokens"], OUTPUT, "{r}");
        let ttft = r["ttft_ms"].as_f64().expect("ttft");
        let e2e = r["e2e_ms"].as_f64().expect("e2e");
        assert!(ttft > 0.0 && e2e > ttft, "{r}");
        assert!(
            r["event_ms"].as_array().expect("event times").len() as u64 >= OUTPUT - 1,
            "{r}"
        );
    }
    // Every response, warmups included, carries llama-server's own timings (on the final event
    // of /completion, beside the final usage on /v1/completions), its TTFT within the client's.
    let timed = assert_ids_and_server_timings(&records, "llama-server timings");
    assert_eq!(timed, 34, "{api}");

    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["outcome"]["status"], "completed");
    assert_eq!(summary["outcome"]["responses_completed"], 30);
    assert_eq!(summary["outcome"]["rounds_completed"], 12);
    let cases = summary["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 4);
    let check_case = |input: u64, concurrency: u64| {
        let case = cases
            .iter()
            .find(|c| c["input_tokens"] == input && c["concurrency"] == concurrency)
            .expect("case present");
        assert_eq!(case["complete"], true, "{case}");
        let n = concurrency * ROUNDS;
        for metric in ["ttft_ms", "e2e_ms", "tpot_ms"] {
            assert_eq!(case[metric]["n"], n, "{metric} of {case}");
        }
        assert_eq!(case["itl_ms"]["n"], n * (OUTPUT - 1), "{case}");
        assert_eq!(case["throughput_tps"]["n"], ROUNDS, "{case}");
        // llama-server's own account of every response, and the delivery between the two.
        assert_eq!(case["server"]["responses"], n, "{case}");
        assert_eq!(case["server"]["delivery_ms"]["n"], n, "{case}");
        // The TTFT part by part: write and prefill measured, no queue from llama-server, and
        // the parts with the residual adding up to the client's mean TTFT.
        let parts = &case["server"]["ttft_parts"];
        assert_eq!(parts["responses"], n, "{case}");
        assert!(parts["queue_ms"].is_null(), "{parts}");
        assert!(
            parts["unavailable"][0]
                .as_str()
                .is_some_and(|u| u.contains("no queue time")),
            "{parts}"
        );
        let part = |k: &str| parts[k].as_f64().unwrap_or_else(|| panic!("{k}: {parts}"));
        let sum = part("write_ms") + part("prefill_ms") + part("residual_ms");
        assert!((sum - part("client_ttft_ms")).abs() < 1e-6, "{parts}");
        assert!(case["throughput_tps"]["mean"].as_f64().expect("throughput") > 0.0);
        // Order statistics, not timings: no case is compared with another (a timing comparison
        // belongs in a benchmark, not in a test that shares two cores with other work).
        let ttft = |field: &str| case["ttft_ms"][field].as_f64().expect("TTFT figure");
        assert!(
            0.0 < ttft("min") && ttft("min") <= ttft("median") && ttft("median") <= ttft("max"),
            "{case}"
        );
    };
    for input in INPUTS {
        for c in CONCURRENCY {
            check_case(input, c);
        }
    }

    let table_rows = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("| 128 |") || l.starts_with("| 512 |"));
    assert_eq!(table_rows.count(), 4, "{}", run.stdout);
    let campaign = json(&dir.join("campaign.json"));
    assert_eq!(campaign["target"]["server"]["props"]["total_slots"], 4);
    assert_eq!(campaign["target"]["simulated"], false);
}

#[test]
fn llamacpp_api_campaign_is_complete_and_verified() {
    campaign("llamacpp");
}

#[test]
fn completions_api_campaign_is_complete_and_verified() {
    campaign("completions");
}

/// Chat prompts are text: llmload searches a text that the server's own template and tokenizer
/// count as exactly N. This llama-server build sometimes counts one token fewer on the chat path
/// for such a text (see the issue notes); llmload must then say so (`invalid`, with the counts),
/// never report it as verified. Everything else is as strict as for the other APIs.
#[test]
fn chat_api_campaign_is_verified_and_flags_every_miscount() {
    let (run, dir, _out) = run_campaign("chat");
    assert!(
        run.code == 0 || run.code == 3,
        "llmload failed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    let records = json_lines(&dir.join("requests.jsonl"));
    let measured: Vec<&Value> = records
        .iter()
        .filter(|r| r["phase"] == "measured")
        .collect();
    assert_eq!(measured.len(), 30, "2 inputs × (1 + 4) × 3 rounds");
    assert_eq!(records.len() - measured.len(), 4, "one warmup per case");
    let mut miscounted = 0;
    for r in &measured {
        assert_eq!(r["cached_tokens"], 0, "{r}");
        assert_eq!(r["output_tokens"], OUTPUT, "{r}");
        let counted = r["prompt_tokens"].as_i64().expect("prompt count");
        let asked = r["input_tokens"].as_i64().expect("requested length");
        if r["status"] == "invalid" {
            miscounted += 1;
            assert_eq!((counted - asked).abs(), 1, "{r}");
            assert!(
                r["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("prompt tokens")),
                "{r}"
            );
        } else {
            assert_eq!(
                (r["status"].as_str(), r["verified"].as_bool()),
                (Some("ok"), Some(true)),
                "{r}"
            );
            assert_eq!(counted, asked, "{r}");
        }
    }
    assert!(
        miscounted <= 3,
        "{miscounted} of 30 chat prompts miscounted"
    );
    // The chat stream's final usage chunk carries llama-server's timings too.
    let all_ok = records.iter().filter(|r| r["status"] == "ok").count();
    assert_eq!(
        assert_ids_and_server_timings(&records, "llama-server timings"),
        all_ok
    );
    let summary = json(&dir.join("summary.json"));
    let ok = measured.iter().filter(|r| r["status"] == "ok").count();
    assert_eq!(summary["outcome"]["responses_completed"], ok as u64);
    let expected = if miscounted == 0 {
        "completed"
    } else {
        "failed"
    };
    assert_eq!(summary["outcome"]["status"], expected);
}
