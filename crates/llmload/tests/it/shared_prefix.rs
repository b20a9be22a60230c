//! A shared system prompt (`--system-prompt-tokens S`): every prompt opens with the same S
//! tokens and is still exactly N long; the server may serve those S tokens, and no others, from
//! its prefix cache; the summary reports the hit rate its counters show. Against the simulator
//! (token IDs and chat text) and a real llama-server.

use crate::common;

use common::{count as n, json, llmload, measured, run_against, LlamaServer, Simulator, SERIAL};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

fn run(out: &Path, name: &str, url: &str, extra: &[&str]) -> (common::Invocation, PathBuf) {
    let mut args = vec!["--output-tokens", "8"];
    args.extend_from_slice(extra);
    run_against(out, name, url, &args)
}

/// Every measured response is ok, exactly `input` prompt tokens, and took no more than `shared`
/// from the cache; returns Σ cached tokens.
fn check_responses(records: &[Value], input: u64, shared: u64) -> u64 {
    assert!(!records.is_empty());
    let mut cached = 0;
    for r in records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(n(&r["prompt_tokens"]), input, "{r}");
        assert_eq!(n(&r["shared_tokens"]), shared, "{r}");
        let c = n(&r["cached_tokens"]);
        assert!(
            c <= shared,
            "only the shared part may come from the cache: {r}"
        );
        cached += c;
    }
    cached
}

#[test]
fn the_shared_part_is_served_from_the_simulators_cache_and_nothing_else() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run(
        out.path(),
        "shared",
        &sim.url,
        &[
            "--input-tokens",
            "256",
            "--concurrency",
            "2",
            "--rounds",
            "3",
            "--system-prompt-tokens",
            "128",
        ],
    );
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 6);
    let cached = check_responses(&records, 256, 128);
    let case = &json(&dir.join("summary.json"))["cases"][0];
    let hits = &case["prefix_cache"];
    assert_eq!(n(&hits["shared_tokens"]), 128);
    assert_eq!(n(&hits["n"]), 6);
    assert_eq!(n(&hits["cached_tokens"]), cached);
    let rate = hits["hit_rate"].as_f64().expect("a rate");
    assert!((rate - cached as f64 / (6.0 * 128.0)).abs() < 1e-9);
    // The warmup put the shared part in the cache: every measured request finds some of it.
    assert_eq!(n(&hits["responses_hit"]), 6, "{hits}");
    assert!(
        rate > 0.5,
        "the simulator caches whole blocks of the shared part: {rate}"
    );
    let table = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(table.contains("prefix cache"), "{table}");
}

#[test]
fn without_a_shared_part_nothing_comes_from_the_cache_and_no_hit_rate_is_claimed() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run(
        out.path(),
        "unique",
        &sim.url,
        &[
            "--input-tokens",
            "256",
            "--concurrency",
            "2",
            "--rounds",
            "2",
        ],
    );
    assert_eq!(result.code, 0, "{}", result.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 4);
    for r in &records {
        assert_eq!(n(&r["cached_tokens"]), 0, "{r}");
        assert!(r.get("shared_tokens").is_none(), "{r}");
    }
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert!(case.get("prefix_cache").is_none(), "{case}");
}

#[test]
fn chat_prompts_keep_their_exact_length_after_a_shared_text() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run(
        out.path(),
        "chat",
        &sim.url,
        &[
            "--api",
            "chat",
            "--input-tokens",
            "200",
            "--concurrency",
            "2",
            "--rounds",
            "2",
            "--system-prompt-tokens",
            "96",
        ],
    );
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 4);
    let cached = check_responses(&records, 200, 96);
    assert!(cached > 0, "the shared text reached the cache");
}

#[test]
fn a_shared_part_that_leaves_no_room_is_refused() {
    let result = llmload(&[
        "run",
        "--url",
        "http://127.0.0.1:9",
        "--input-tokens",
        "64,256",
        "--system-prompt-tokens",
        "60",
    ]);
    assert_eq!(result.code, 2, "{}", result.stderr);
    assert!(
        result.stderr.contains("--system-prompt-tokens 60") && result.stderr.contains("64"),
        "{}",
        result.stderr
    );
    assert_eq!(result.stderr.trim().lines().count(), 1, "{}", result.stderr);
}

#[test]
fn llama_server_serves_the_shared_part_from_its_slots() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    // Gemma 3 uses sliding-window attention: llama.cpp reuses a slot's cached prefix only when
    // it keeps the full window cache (`--swa-full`); without it the measured hit rate is 0.
    let server = LlamaServer::start_with(&["--swa-full"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run(
        out.path(),
        "llama",
        &server.url,
        &[
            "--input-tokens",
            "256",
            "--concurrency",
            "2",
            "--rounds",
            "2",
            "--system-prompt-tokens",
            "128",
            "--timeout",
            "5m",
        ],
    );
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 4);
    let cached = check_responses(&records, 256, 128);
    let hits = &json(&dir.join("summary.json"))["cases"][0]["prefix_cache"];
    assert_eq!(n(&hits["cached_tokens"]), cached);
    // Each slot that ran an earlier request holds the shared part; the second round at least
    // lands on such slots.
    assert!(n(&hits["responses_hit"]) >= 2, "{hits}");
}

#[test]
fn llama_server_chat_finds_a_shared_text_of_exactly_s_tokens() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start_with(&["--swa-full"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run(
        out.path(),
        "chat",
        &server.url,
        &[
            "--api",
            "chat",
            "--input-tokens",
            "300",
            "--concurrency",
            "2",
            "--rounds",
            "2",
            "--system-prompt-tokens",
            "128",
            "--timeout",
            "5m",
            // A seed whose shared text, counted alone, ends in a comma that merges with the
            // chat template's closing `<` (Gemma's template here is plain text): sized alone it
            // would be one token short, and 129 tokens would come from the cache.
            "--seed",
            "1",
        ],
    );
    // Word boundaries rarely land on exactly 128 tokens at the first place tried; the run must
    // still build its shared text and measure.
    assert!(
        result.code == 0 || result.code == 3,
        "{}\n{}",
        result.stdout,
        result.stderr
    );
    let records = measured(&dir);
    assert_eq!(records.len(), 4);
    for r in &records {
        assert_eq!(n(&r["shared_tokens"]), 128, "{r}");
        // More than the shared part from the cache is flagged, never passed as ok.
        if n(&r["cached_tokens"]) > 128 {
            assert_eq!(r["status"], "invalid", "{r}");
        }
    }
    // llama-server's chat path has been seen to count one prompt token fewer than its own
    // template and tokenizer give; such a response is flagged invalid, never passed as ok.
    let ok = records.iter().filter(|r| r["status"] == "ok").count();
    assert!(ok >= 3, "{records:?}");
    let hits = &json(&dir.join("summary.json"))["cases"][0]["prefix_cache"];
    assert!(n(&hits["responses_hit"]) >= 2, "{hits}");
}

/// Two cases of one shared system prompt on llama-server (slot actions on): the second case's
/// first request, alone on the server.
fn second_case_first_request(out: &Path, name: &str, url: &str, reset: bool) -> (Value, Value) {
    let mut extra = vec![
        "--input-tokens",
        "96",
        "--system-prompt-tokens",
        "64",
        "--concurrency",
        "1",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--output-tokens",
        "4,6",
    ];
    if reset {
        extra.push("--reset-prefix-cache");
    }
    let (result, dir) = run_against(out, name, url, &extra);
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let records = measured(&dir);
    let first = records
        .iter()
        .find(|r| r["case"] == "in96-c1-out6")
        .unwrap_or_else(|| panic!("no request of the second case: {records:?}"))
        .clone();
    let summary = json(&dir.join("summary.json"));
    (first, summary["cases"][1].clone())
}

#[test]
fn reset_prefix_cache_empties_llama_servers_slots_before_each_case() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let out = tempfile::tempdir().expect("temp dir");
    let slots = out.path().join("slots");
    std::fs::create_dir(&slots).expect("folder");
    // `--swa-full`: see above; `--slot-save-path`: llama-server's slot actions need it.
    let slots = slots.to_str().expect("UTF-8");
    let server = LlamaServer::start_with(&["--swa-full", "--slot-save-path", slots]);
    // Without the reset, the second case's request finds the shared part in a slot.
    let (kept, case) = second_case_first_request(out.path(), "kept", &server.url, false);
    assert!(n(&kept["cached_tokens"]) > 0, "{kept}");
    assert!(case["prefix_cache_reset"].is_null(), "{case}");
    // With it, every slot is erased before the case: nothing comes from the cache.
    let (reset, case) = second_case_first_request(out.path(), "reset", &server.url, true);
    assert_eq!(n(&reset["cached_tokens"]), 0, "{reset}");
    let done = &case["prefix_cache_reset"];
    assert_eq!(done["done"], true, "{case}");
    assert_eq!(done["how"], "POST /slots/N?action=erase for N from 0 to 3");
    assert!(done["refused"].is_null());
}

#[test]
fn a_server_that_will_not_reset_its_prefix_cache_is_named_and_the_case_runs() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run(
        out.path(),
        "refused",
        &sim.url,
        &[
            "--input-tokens",
            "64",
            "--rounds",
            "1",
            "--reset-prefix-cache",
        ],
    );
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    assert!(
        result
            .stderr
            .contains("--reset-prefix-cache: the server did not drop its prefix cache"),
        "{}",
        result.stderr
    );
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_eq!(case["complete"], true, "{case}");
    let refused = &case["prefix_cache_reset"];
    assert_eq!(refused["done"], false, "{case}");
    let why = refused["refused"].as_str().expect("why");
    assert!(why.starts_with("slot 0: 404"), "{why}");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("not dropped: the server refused"),
        "{report}"
    );
}
