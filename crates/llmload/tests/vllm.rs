//! End to end against a real vLLM (the CPU build, a tiny random-weight Gemma 3 with the real
//! Gemma 3 tokenizer), started by `scripts/start-vllm.sh`: closed campaigns on the completions
//! and chat APIs, an open loop, the server's context checked before the run, the API picked from
//! what the server is, and a shared system prompt against vLLM's prefix cache.
//!
//! vLLM takes minutes to install and start, so these tests are their own group: `cargo test`
//! lists them as ignored, and `scripts/test.sh` (which installs vLLM first) runs them with
//! `--include-ignored`. `scripts/vllm-tests.sh URL` runs the same checks against any vLLM (or
//! `SGLang`) server, such as a GPU one.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

mod common;

use common::{json, json_lines, llmload, run_against, Started, SERIAL};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::PoisonError;

/// A vLLM server started by the project's script, stopped (SIGTERM, the whole server) when
/// dropped; or one given by `LLMLOAD_VLLM_URL`, left running.
struct Vllm {
    url: String,
    pid: Option<String>,
}

impl Vllm {
    fn start(prefix_caching: bool) -> Vllm {
        if let Ok(url) = std::env::var("LLMLOAD_VLLM_URL") {
            return Vllm { url, pid: None };
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/start-vllm.sh");
        let mut command = Command::new(script);
        if prefix_caching {
            command.arg("--prefix-caching");
        }
        let started = Started::run(command.env("LLMLOAD_VLLM_LIFETIME", "1200"));
        Vllm {
            url: started.get("VLLM_URL"),
            pid: Some(started.get("VLLM_PID")),
        }
    }
}

impl Drop for Vllm {
    fn drop(&mut self) {
        if let Some(pid) = &self.pid {
            let _ = Command::new("kill").args(["-TERM", pid]).status();
        }
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().expect("a number")
}

/// Checks a closed campaign's records: every response ok and verified, prompts of exactly the
/// length asked by vLLM's own count, nothing from the cache, exactly the output asked, counted
/// token by token.
fn assert_exact_and_verified(dir: &Path, measured: usize) {
    let records = json_lines(&dir.join("requests.jsonl"));
    let measured_records: Vec<&Value> = records
        .iter()
        .filter(|r| r["phase"] == "measured")
        .collect();
    assert_eq!(measured_records.len(), measured);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["prompt_tokens"], r["input_tokens"], "{r}");
        assert_eq!(r["cached_tokens"], 0, "{r}");
        assert_eq!(r["output_tokens"], r["requested_output_tokens"], "{r}");
        assert_eq!(r["streamed_tokens"], r["output_tokens"], "{r}");
    }
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["outcome"]["status"], "completed", "{summary}");
}

#[test]
#[ignore = "needs vLLM: scripts/test.sh installs it and runs this group with --include-ignored"]
fn vllm_campaigns_open_loop_and_checks_without_prefix_caching() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let vllm = Vllm::start(false);
    let out = tempfile::tempdir().expect("temp dir");
    let campaign = [
        "--input-tokens",
        "64,256",
        "--concurrency",
        "1,2",
        "--output-tokens",
        "16",
        "--rounds",
        "2",
    ];

    // No --api: vLLM is not llama-server, and lists its models: the completions API.
    let (run, dir) = run_against(out.path(), "auto", &vllm.url, &campaign);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let written = json(&dir.join("campaign.json"));
    assert_eq!(written["target"]["api"], "completions");
    assert_eq!(
        written["target"]["server"]["models"]["data"][0]["owned_by"],
        "vllm"
    );
    // Two rounds of (1 + 2) requests, at two prompt lengths.
    assert_exact_and_verified(&dir, 12);
    let summary = json(&dir.join("summary.json"));
    let metrics = &summary["telemetry"]["server_metrics"];
    assert!(
        f(&metrics["delta"]["vllm:generation_tokens_total"]) >= 12.0 * 16.0,
        "the run's own tokens, at least the measured ones: {metrics}"
    );

    let mut chat = campaign.to_vec();
    chat.extend(["--api", "chat"]);
    let (run, dir) = run_against(out.path(), "chat", &vllm.url, &chat);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_exact_and_verified(&dir, 12);

    let open = [
        "--arrival",
        "poisson",
        "--rate",
        "4",
        "--requests",
        "16",
        "--input-tokens",
        "choice:32,128",
        "--output-tokens",
        "8",
        "--seed",
        "3",
    ];
    let (run, dir) = run_against(out.path(), "open", &vllm.url, &open);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_exact_and_verified(&dir, 16);
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_eq!(case["load"]["shape"], "poisson", "{case}");
    assert_eq!(case["load"]["requests_launched"], 16, "{case}");
    assert!(
        !run.stdout
            .contains("| Input tokens per request | Concurrent requests |"),
        "an open loop has no rounds table: {}",
        run.stdout
    );

    // vLLM says its context (max_model_len): a case past it never starts.
    let limit = written["target"]["server"]["models"]["data"][0]["max_model_len"]
        .as_u64()
        .expect("vLLM reports max_model_len");
    let input = (limit - 8).to_string();
    let out_dir = out.path().to_str().expect("UTF-8 path");
    let run = llmload(&[
        "run",
        "--url",
        &vllm.url,
        "--out",
        out_dir,
        "--input-tokens",
        &input,
        "--output-tokens",
        "16",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("max_model_len"), "{}", run.stderr);
    // llama.cpp's native API is not vLLM's: one line naming the right one.
    let run = llmload(&[
        "run",
        "--url",
        &vllm.url,
        "--out",
        out_dir,
        "--api",
        "llamacpp",
        "--input-tokens",
        "64",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("--api completions"), "{}", run.stderr);
}

#[test]
#[ignore = "needs vLLM: scripts/test.sh installs it and runs this group with --include-ignored"]
fn vllm_prefix_cache_serves_the_shared_system_prompt_and_nothing_else() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let vllm = Vllm::start(true);
    let out = tempfile::tempdir().expect("temp dir");
    // vLLM's CPU build caches whole blocks of 128 tokens: a 256-token shared prompt is two.
    let (run, dir) = run_against(
        out.path(),
        "shared",
        &vllm.url,
        &[
            "--api",
            "completions",
            "--system-prompt-tokens",
            "256",
            "--input-tokens",
            "512",
            "--concurrency",
            "1",
            "--output-tokens",
            "8",
            "--rounds",
            "4",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = json_lines(&dir.join("requests.jsonl"));
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        let cached = r["cached_tokens"].as_u64().expect("cached tokens");
        assert!(
            cached <= 256,
            "only the shared part may come from the cache: {r}"
        );
    }
    // After the warmup, every request finds the shared prompt in the cache.
    let case = &json(&dir.join("summary.json"))["cases"][0];
    let prefix = &case["prefix_cache"];
    assert_eq!(prefix["shared_tokens"], 256, "{case}");
    assert_eq!(prefix["n"], 4, "{case}");
    assert_eq!(prefix["responses_hit"], 4, "{case}");
    assert!((f(&prefix["hit_rate"]) - 1.0).abs() < 1e-9, "{case}");
}
