//! Embeddings and rerank end to end: against the built-in simulator (closed rounds and a
//! closed-continuous load, every view of the attempt) and against a real llama-server started
//! with `--embeddings --pooling mean` and with `--reranking`, every response ok and verified by
//! the server's own count, one result per input.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{
    assert_refused, json, json_lines, llmload, run_against, sweep_against, LlamaServer, Simulator,
    SERIAL,
};
use serde_json::Value;
use std::path::Path;
use std::sync::PoisonError;

/// Checks every record of a pooling attempt: ok and verified, one result per input, the
/// server's count the batch × `input` tokens, no token event, a latency; returns the measured
/// ones.
fn assert_answers(dir: &Path, input: u64, dimension: Option<u64>) -> Vec<Value> {
    let records = json_lines(&dir.join("requests.jsonl"));
    assert!(!records.is_empty());
    for r in &records {
        assert_eq!(
            (r["status"].as_str(), r["verified"].as_bool()),
            (Some("ok"), Some(true)),
            "{r}"
        );
        let pooling = &r["pooling"];
        let inputs = pooling["inputs"].as_u64().expect("inputs");
        assert_eq!(pooling["results"].as_u64(), Some(inputs), "{r}");
        assert_eq!(r["input_tokens"].as_u64(), Some(input), "{r}");
        assert_eq!(r["prompt_tokens"].as_u64(), Some(inputs * input), "{r}");
        assert_eq!(pooling["tokens"], r["prompt_tokens"], "{r}");
        assert_eq!(pooling["dimension"].as_u64(), dimension, "{r}");
        assert!(
            r["ttft_ms"].is_null() && r["first_token_s"].is_null(),
            "{r}"
        );
        assert_eq!(r["event_ms"].as_array().map(Vec::len), Some(0), "{r}");
        assert!(r["e2e_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{r}");
    }
    records
        .into_iter()
        .filter(|r| r["phase"] == "measured")
        .collect()
}

/// Checks a complete pooling case of `summary`: its batch, the inputs and tokens of its `ok`
/// answers, inputs/s and input tokens/s, and no generation figure.
fn assert_case(case: &Value, batch: u64, input: u64) {
    let ok = case["counts"]["ok"].as_u64().expect("ok");
    assert!(ok > 0 && case["complete"] == true, "{case}");
    assert_eq!(case["counts"]["unverified"], 0, "{case}");
    let pooling = &case["pooling"];
    assert_eq!(pooling["batch"].as_u64(), Some(batch), "{case}");
    assert_eq!(pooling["inputs"].as_u64(), Some(ok * batch), "{case}");
    assert_eq!(
        pooling["tokens"].as_u64(),
        Some(ok * batch * input),
        "{case}"
    );
    let tokens_per_s = case["throughput_tps"]["mean"].as_f64().expect("throughput");
    let inputs_per_s = pooling["inputs_per_s"]["mean"].as_f64().expect("inputs/s");
    assert!(tokens_per_s > 0.0, "{case}");
    assert!(
        (inputs_per_s * input as f64 - tokens_per_s).abs() < 1e-6 * tokens_per_s,
        "{case}"
    );
    for absent in ["ttft_ms", "itl_ms", "tpot_ms", "decode_rate_tps"] {
        assert!(case[absent].is_null(), "{absent}: {case}");
    }
    assert!(case["e2e_ms"]["n"].as_u64() == Some(ok), "{case}");
}

#[test]
fn embeddings_on_the_simulator_are_exact_and_every_view_shows_them_as_such() {
    let sim = Simulator::start(&[]);
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = run_against(
        out.path(),
        "embeddings",
        &sim.url,
        &[
            "--api",
            "embeddings",
            "--input-tokens",
            "48",
            "--batch-size",
            "1,4",
            "--concurrency",
            "2",
            "--rounds",
            "2",
            "--seed",
            "5",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let measured = assert_answers(&dir, 48, Some(64));
    assert_eq!(measured.len(), 8);
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["api"], "embeddings");
    let cases = summary["cases"].as_array().expect("cases");
    let ids: Vec<&str> = cases.iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(ids, ["in48-c2-b1", "in48-c2-b4"]);
    assert_case(&cases[0], 1, 48);
    assert_case(&cases[1], 4, 48);
    assert_eq!(cases[1]["pooling"]["dimension"], 64);

    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("### Embeddings and rerank cases"),
        "{report}"
    );
    assert!(report.contains("| in48-c2-b4 | 4 | 48 | c=2 |"), "{report}");
    assert!(report.contains("do not apply to these cases"), "{report}");
    assert!(!report.contains("Median TTFT"), "{report}");
    assert!(!report.contains("NaN"), "{report}");
    assert!(run.stdout.contains("Inputs/s"), "{}", run.stdout);
    assert!(
        run.stderr.contains("median latency") && !run.stderr.contains("median TTFT"),
        "{}",
        run.stderr
    );
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(
        html.contains("<h3>Embeddings and rerank cases</h3>")
            && html.contains("no-generation-charts")
    );
    assert!(!html.contains("NaN") && !html.contains("Median TTFT"));
    let csv = std::fs::read_to_string(dir.join("cases.csv")).expect("cases.csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let row: Vec<&str> = lines.nth(1).expect("second case").split(',').collect();
    assert_eq!(row[at("batch_size")], "4");
    assert_eq!(row[at("dimension")], "64");
    assert_eq!(row[at("ttft_ms_n")], "");
    assert!(row[at("inputs_per_s_mean")].parse::<f64>().is_ok());

    // The figures rebuilt from the records are the run's.
    let rebuilt = llmload(&["report", dir.to_str().expect("UTF-8 path")]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    assert_eq!(json(&dir.join("summary.json"))["cases"], summary["cases"]);
}

#[test]
fn rerank_in_a_closed_continuous_load_counts_its_window_in_input_tokens() {
    let sim = Simulator::start(&[]);
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = run_against(
        out.path(),
        "rerank",
        &sim.url,
        &[
            "--api",
            "rerank",
            "--input-tokens",
            "40",
            "--batch-size",
            "3",
            "--arrival",
            "closed-continuous",
            "--concurrency",
            "2",
            "--requests",
            "8",
            "--seed",
            "6",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let measured = assert_answers(&dir, 40, None);
    assert!(measured.len() >= 8, "{}", measured.len());
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    assert_eq!(case["id"], "in40-cc2-b3");
    assert_case(case, 3, 40);
    let load = &case["load"];
    assert!(
        load["throughput_tps"].as_f64().is_some_and(|t| t > 0.0),
        "{load}"
    );
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("closed-continuous × 2"), "{report}");
    assert!(!report.contains("Achieved concurrency"), "{report}");
}

#[test]
fn a_sweep_of_embeddings_reads_its_knee_from_the_latency() {
    let sim = Simulator::start(&[]);
    let out = tempfile::tempdir().expect("temp dir");
    let args = [
        "--api",
        "embeddings",
        "--input-tokens",
        "32",
        "--batch-size",
        "2",
        "--concurrency",
        "1,2,4",
        "--rounds",
        "2",
        "--seed",
        "7",
    ];
    let (run, dir) = sweep_against(out.path(), "sweep", &sim.url, &args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let summary = json(&dir.join("summary.json"));
    let points = summary["sweep"]["analysis"]["points"]
        .as_array()
        .expect("points");
    assert_eq!(points.len(), 3, "{points:?}");
    for p in points {
        assert!(p["ttft_p99_ms"].is_null() && p["throughput_tps"].as_f64() > Some(0.0));
        assert!(p["e2e_p50_ms"].as_f64() <= p["e2e_p99_ms"].as_f64(), "{p}");
        assert_eq!(
            p["e2e_n"].as_f64(),
            p["load"].as_f64().map(|load| 2.0 * load),
            "{p}"
        );
    }
    let knee = summary["sweep"]["analysis"]["knee"]["method"].to_string();
    assert!(knee.contains("log latency"), "{knee}");
    assert!(run.stdout.contains("latency p99") && !run.stdout.contains("TTFT p99"));
    // A TTFT budget is no question for these cases: said in one line.
    let dir = dir.to_str().expect("UTF-8 path");
    let plan = llmload(&[
        "plan",
        dir,
        "--prompt-tokens",
        "32",
        "--output-tokens",
        "4",
        "--ttft",
        "1s",
    ]);
    assert_eq!(plan.code, 1, "{}", plan.stdout);
    assert!(
        plan.stderr.contains("which have no TTFT"),
        "{}",
        plan.stderr
    );
    // The gate compares the latency and says why TTFT is not compared.
    let gate = [
        "compare",
        dir,
        dir,
        "--fail-if",
        "ttft_p99 > +10%",
        "--fail-if",
        "e2e_p99 > +50%",
    ];
    let compare = llmload(&gate);
    assert_eq!(compare.code, 0, "{}\n{}", compare.stdout, compare.stderr);
    let said = "not compared (does not apply in BASE: embeddings and rerank stream no tokens)";
    assert_eq!(
        compare.stdout.matches(said).count(),
        3,
        "{}",
        compare.stdout
    );
    assert!(
        compare.stdout.contains("(n = 8 responses)"),
        "{}",
        compare.stdout
    );
}

#[test]
fn options_that_do_not_apply_to_pooling_are_refused_in_one_line() {
    for (args, said) in [
        (
            &["--api", "embeddings", "--output-tokens", "8"][..],
            "--output-tokens does not apply to --api embeddings",
        ),
        (&["--batch-size", "4"][..], "--batch-size applies to"),
        (
            &["--api", "rerank", "--turns", "2"][..],
            "--api rerank does not take --turns",
        ),
        (
            &["--api", "embeddings", "--cancel-after", "4"][..],
            "does not take --cancel-after",
        ),
        (
            &["--api", "embeddings", "--batch-size", "0"][..],
            "--batch-size takes one or more counts",
        ),
    ] {
        assert_refused(args, said);
    }
}

#[test]
fn llama_server_embeddings_and_rerank_are_ok_and_verified_by_its_own_count() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let out = tempfile::tempdir().expect("temp dir");
    // 2 rounds of 2 requests of `batch` inputs of 32 tokens each, on `api`.
    let run = |api: &str, batch: &str, url: &str| {
        let args = [
            "--api",
            api,
            "--input-tokens",
            "32",
            "--batch-size",
            batch,
            "--concurrency",
            "2",
            "--rounds",
            "2",
            "--timeout",
            "5m",
        ];
        let (run, dir) = run_against(out.path(), api, url, &args);
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        dir
    };
    {
        let server = LlamaServer::start_with(&["--embeddings", "--pooling", "mean"]);
        let dir = run("embeddings", "1,4", &server.url);
        // Gemma 3 270M's hidden size.
        assert_eq!(assert_answers(&dir, 32, Some(640)).len(), 8);
        let summary = json(&dir.join("summary.json"));
        assert_case(&summary["cases"][0], 1, 32);
        assert_case(&summary["cases"][1], 4, 32);
    }
    {
        // A server started without either: refused at setup, in one line, before any case.
        let server = LlamaServer::start();
        for (api, flag) in [("embeddings", "--embeddings"), ("rerank", "--reranking")] {
            let dir = out.path().join("refused");
            let args = [
                "run",
                "--url",
                &server.url,
                "--api",
                api,
                "--telemetry",
                "off",
            ];
            let refused = common::llmload_with_env(
                &[&args[..], &["--out", dir.to_str().expect("UTF-8")]].concat(),
                &[],
            );
            assert_eq!(refused.code, 1, "{api}: {}", refused.stderr);
            let said = format!("error: --api {api}: probe request failed: HTTP 501");
            assert!(refused.stderr.starts_with(&said), "{}", refused.stderr);
            assert!(refused.stderr.contains(flag), "{}", refused.stderr);
            assert_eq!(
                refused.stderr.trim().lines().count(),
                1,
                "{}",
                refused.stderr
            );
            assert!(!dir.exists(), "no attempt folder");
        }
    }
    let server = LlamaServer::start_with(&["--reranking"]);
    let dir = run("rerank", "3", &server.url);
    assert_eq!(assert_answers(&dir, 32, None).len(), 4);
    assert_case(&json(&dir.join("summary.json"))["cases"][0], 3, 32);
    let summary = json(&dir.join("summary.json"));
    let counting = &summary["counting"]["prompts"];
    assert!(
        counting
            .as_str()
            .is_some_and(|c| c.contains("(query, document) pair")),
        "{counting}"
    );
}
