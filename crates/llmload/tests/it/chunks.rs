//! Engines' dialects, played by the simulator:
//!
//! - tokens, not chunks: a server that streams several tokens per chunk (vLLM under speculative
//!   decoding or a stream interval, a gateway that re-chunks) and reports usage on every chunk
//!   (`stream_options.continuous_usage_stats`) is counted token by token;
//! - a hosted endpoint that cannot be forced or counted (no usage, no `/tokenize`, `ignore_eos`
//!   ignored, several tokens per chunk): refused with a clear line, or measured in best-effort
//!   mode with the client's tokenizer, every response labelled unverified with its reason;
//! - reasoning models: reasoning deltas (`reasoning_content`) are told apart from the answer,
//!   and `chat_template_kwargs` reaches the server.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{json, json_lines, llmload, run_against, Simulator, WORDS_TOKENIZER};

const OUTPUT: u64 = 32;
const K: u64 = 4;

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().expect("a number")
}

#[test]
fn multi_token_chunks_are_counted_per_token_and_their_gaps_kept_apart() {
    let sim = Simulator::start(&[
        "--schedule",
        "fixed:ttft_ms=20,itl_ms=2",
        "--fault",
        "multi-token:k=4",
    ]);
    let out = tempfile::tempdir().expect("temp dir");
    for api in ["completions", "chat"] {
        let (run, dir) = run_against(
            out.path(),
            api,
            &sim.url,
            &[
                "--api",
                api,
                "--input-tokens",
                "64",
                "--concurrency",
                "2",
                "--output-tokens",
                "32",
                "--rounds",
                "2",
                "--warmup",
                "0",
            ],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        let campaign = json(&dir.join("campaign.json"));
        assert_eq!(
            campaign["target"]["server"]["models"]["data"][0]["owned_by"],
            "llmload-sim"
        );
        let records = json_lines(&dir.join("requests.jsonl"));
        assert_eq!(records.len(), 4);
        for r in &records {
            assert_eq!(r["status"], "ok", "{r}");
            assert_eq!(r["verified"], true, "{r}");
            // Eight chunks of four tokens: counted as 32 tokens, not 8.
            assert_eq!(r["streamed_tokens"], OUTPUT, "{r}");
            assert_eq!(r["token_events"], OUTPUT / K, "{r}");
            let per_event: Vec<u64> = r["event_tokens"]
                .as_array()
                .expect("tokens per event are recorded")
                .iter()
                .map(|k| k.as_u64().expect("count"))
                .collect();
            assert_eq!(per_event, vec![K; 8], "{r}");
        }
        let case = &json(&dir.join("summary.json"))["cases"][0];
        // Per-token ITL: every gap between chunks is shared by the K tokens of the later chunk
        // (the first chunk's tokens come with the first token, at TTFT).
        let gaps = OUTPUT / K - 1;
        assert_eq!(case["chunk_gap_ms"]["n"], 4 * gaps, "{case}");
        assert_eq!(case["itl_ms"]["n"], 4 * gaps * K, "{case}");
        let (itl, gap) = (&case["itl_ms"], &case["chunk_gap_ms"]);
        assert!(
            (f(&itl["max"]) * 4.0 - f(&gap["max"])).abs() < 0.01,
            "ITL is the chunk gap over the chunk's tokens: {itl} {gap}"
        );
    }
}

#[test]
fn reasoning_is_told_apart_from_the_answer_and_chat_template_kwargs_reach_the_server() {
    let sim = Simulator::start(&[
        "--schedule",
        "fixed:ttft_ms=20,itl_ms=2",
        "--fault",
        "reasoning:tokens=8",
    ]);
    let out = tempfile::tempdir().expect("temp dir");
    let common = [
        "--api",
        "chat",
        "--input-tokens",
        "64",
        "--concurrency",
        "2",
        "--output-tokens",
        "16",
        "--rounds",
        "1",
        "--warmup",
        "0",
    ];
    let (run, dir) = run_against(out.path(), "thinking", &sim.url, &common);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["streamed_tokens"], 16, "reasoning counts as output: {r}");
        assert_eq!(r["reasoning_tokens"], 8, "{r}");
        // The ninth token is the first of the answer: never before the first token.
        assert!(f(&r["answer_ms"]) >= f(&r["ttft_ms"]), "{r}");
    }
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_eq!(case["reasoning"]["responses"], 2, "{case}");
    assert_eq!(case["reasoning"]["tokens"]["median"], 8.0, "{case}");
    assert_eq!(case["reasoning"]["time_to_answer_ms"]["n"], 2, "{case}");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("2 of 2 ok responses reasoned"), "{report}");

    // With thinking turned off in the chat template, the model answers at once.
    let mut off = common.to_vec();
    off.extend([
        "--extra-body",
        r#"{"chat_template_kwargs": {"enable_thinking": false}}"#,
    ]);
    let (run, dir) = run_against(out.path(), "no-thinking", &sim.url, &off);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for r in &json_lines(&dir.join("requests.jsonl")) {
        assert!(r.get("reasoning_tokens").is_none(), "{r}");
        assert!(r.get("answer_ms").is_none(), "{r}");
    }
    assert!(json(&dir.join("summary.json"))["cases"][0]
        .get("reasoning")
        .is_none());
}

#[test]
fn server_counters_are_reported_as_their_growth_during_the_run() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let args = [
        "--input-tokens",
        "32",
        "--concurrency",
        "2",
        "--output-tokens",
        "8",
        "--rounds",
        "2",
        "--warmup",
        "1",
    ];
    // Two runs against one server: its counters' totals grow across both, each run's growth
    // is at most what that run generated (a warmup and four measured requests of 8 tokens).
    for name in ["first", "second"] {
        let (run, dir) = run_against(out.path(), name, &sim.url, &args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let summary = json(&dir.join("summary.json"));
        let metrics = &summary["telemetry"]["server_metrics"];
        assert!(
            metrics["scrapes"].as_u64().is_some_and(|n| n >= 2),
            "{metrics}"
        );
        let grown = f(&metrics["delta"]["llamacpp:tokens_predicted_total"]);
        assert!(grown > 0.0 && grown <= 40.0, "{metrics}");
        assert!(
            metrics["peak"]
                .get("llamacpp:tokens_predicted_total")
                .is_none(),
            "a counter is not a gauge: {metrics}"
        );
    }
}

#[test]
fn a_server_that_cannot_be_forced_or_counted_gives_a_labelled_unverified_result() {
    // A hosted endpoint: no usage, no /tokenize, ignore_eos ignored (the model stops after 20
    // of the 32 tokens asked), four tokens per chunk.
    let sim = Simulator::start(&[
        "--hosted",
        "--schedule",
        "fixed:ttft_ms=20,itl_ms=2",
        "--fault",
        "multi-token:k=4",
        "--fault",
        "early-eos:after=20",
    ]);
    let out = tempfile::tempdir().expect("temp dir");
    let tokenizer = out.path().join("tokenizer.json");
    std::fs::write(&tokenizer, WORDS_TOKENIZER).expect("write the tokenizer");
    let tokenizer = tokenizer.to_str().expect("UTF-8 path");
    let common = [
        "--input-tokens",
        "64",
        "--concurrency",
        "2",
        "--output-tokens",
        "32",
        "--rounds",
        "2",
        "--warmup",
        "0",
    ];
    let run_in = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--url",
            &sim.url,
            "--out",
            out.path().to_str().expect("UTF-8 path"),
            "--name",
            name,
            "--telemetry",
            "off",
        ];
        args.extend_from_slice(&common);
        args.extend_from_slice(extra);
        llmload(&args)
    };
    // Strict, the default: refused before anything is measured, with the way out named.
    let strict = run_in("strict", &[]);
    assert_eq!(strict.code, 1, "{}", strict.stderr);
    assert_eq!(strict.stderr.trim().lines().count(), 1, "{}", strict.stderr);
    assert!(strict.stderr.contains("--best-effort"), "{}", strict.stderr);
    assert!(!out.path().join("strict").exists());
    // Best effort without a tokenizer: nothing can size the prompts on this server.
    let bare = run_in("bare", &["--best-effort"]);
    assert_eq!(bare.code, 1, "{}", bare.stderr);
    assert!(bare.stderr.contains("--tokenizer FILE"), "{}", bare.stderr);

    for api in ["completions", "chat"] {
        let run = run_in(
            api,
            &["--api", api, "--best-effort", "--tokenizer", tokenizer],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        check_best_effort_attempt(&common::attempt_dir(out.path(), api), &run.stdout);
    }
}

/// Checks a best-effort attempt against the hosted simulator of
/// `a_server_that_cannot_be_forced_or_counted_gives_a_labelled_unverified_result`: four `ok`
/// responses, each unverified, counted by the client's tokenizer, labelled in every view.
fn check_best_effort_attempt(dir: &std::path::Path, stdout: &str) {
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 4);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], false, "{r}");
        assert!(r["output_tokens"].is_null(), "no usage: {r}");
        // Five chunks of four tokens, counted by the client's tokenizer: 20, not 5.
        assert_eq!(r["streamed_tokens"], 20, "{r}");
        assert_eq!(r["token_events"], 5, "{r}");
        assert_eq!(r["event_tokens"], serde_json::json!([4, 4, 4, 4, 4]), "{r}");
        let notes = r["notes"].to_string();
        assert!(
            notes.contains("stream carried 20 tokens, 32 were requested"),
            "{r}"
        );
        assert!(
            notes.contains("tokens counted by the client's tokenizer"),
            "{r}"
        );
    }
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["simulated"], true);
    assert_eq!(summary["counting"]["best_effort"], true, "{summary}");
    assert!(summary["counting"]["prompts"]
        .as_str()
        .is_some_and(|p| p.starts_with("the client's tokenizer")));
    let case = &summary["cases"][0];
    assert_eq!(case["counts"]["ok"], 4, "{case}");
    assert_eq!(case["counts"]["unverified"], 4, "{case}");
    assert!(case["first_unverified"].is_string(), "{case}");
    // ITL per token: each chunk gap shared by the four tokens of the later chunk.
    assert_eq!(case["chunk_gap_ms"]["n"], 4 * 4, "{case}");
    assert_eq!(case["itl_ms"]["n"], 4 * 4 * 4, "{case}");
    let (itl, gap) = (&case["itl_ms"], &case["chunk_gap_ms"]);
    assert!(
        (f(&itl["max"]) * 4.0 - f(&gap["max"])).abs() < 0.01,
        "ITL is the chunk gap over the chunk's tokens: {itl} {gap}"
    );
    // Labelled wherever the figures are: terminal, report.md, report.html.
    assert!(stdout.contains("4 (4 unverified)"), "{}", stdout);
    assert!(stdout.contains("Best effort:"), "{}", stdout);
    for file in ["report.md", "report.html"] {
        let text = std::fs::read_to_string(dir.join(file)).expect(file);
        assert!(text.contains("4 (4 unverified)"), "{file}: {text}");
        assert!(text.contains("Best effort:"), "{file}");
        assert!(
            text.contains("Unverified: 4 of the 4 ok responses"),
            "{file}"
        );
    }
}
