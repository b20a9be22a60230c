//! End to end through a real OpenAI-compatible gateway: `LiteLLM`'s proxy, started by
//! `scripts/start-litellm.sh` with a master key, in front of a real llama-server (Gemma 3 270M).
//! What llmload sends reaches llama-server and every counter it checks comes back, so runs on the
//! completions and chat APIs are as exact and as verified as against llama-server itself; the
//! master key is checked at setup and written nowhere; the upstream's prefix-cache counter and its
//! errors come back through the gateway.
//!
//! `LiteLLM` takes a while to install and start, so these tests are their own group: `cargo test`
//! lists them as ignored, and `scripts/test.sh` (which installs `LiteLLM` first) runs them with
//! `--include-ignored`.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{json, json_lines, llmload, run_against, Invocation, LlamaServer, Started, SERIAL};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::PoisonError;

/// The model name the gateway lists and routes to llama-server.
const MODEL: &str = "gemma3-270m";

/// `LiteLLM`'s proxy in front of a llama-server of its own; both stop when dropped (the gateway by
/// SIGTERM, llama-server as `LlamaServer` does).
struct Gateway {
    url: String,
    key: String,
    pid: String,
    _upstream: LlamaServer,
}

impl Gateway {
    fn start(upstream_flags: &[&str]) -> Gateway {
        let upstream = LlamaServer::start_with(upstream_flags);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_nanos();
        let key = format!("sk-llmload-gateway-{}-{nanos}", std::process::id());
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/start-litellm.sh");
        let started = Started::run(
            Command::new(script)
                .args([upstream.url.as_str(), MODEL])
                .env("LITELLM_MASTER_KEY", &key)
                .env("LLMLOAD_LITELLM_LIFETIME", "900"),
        );
        Gateway {
            url: started.get("LITELLM_URL"),
            key,
            pid: started.get("LITELLM_PID"),
            _upstream: upstream,
        }
    }

    /// `llmload run` through the gateway with its key: the invocation and the attempt folder.
    fn run(&self, out: &Path, name: &str, extra: &[&str]) -> (Invocation, PathBuf) {
        let mut args = vec!["--api-key", self.key.as_str(), "--timeout", "5m"];
        args.extend_from_slice(extra);
        run_against(out, name, &self.url, &args)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.pid]).status();
    }
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("a count: {v}"))
}

/// A closed case of 2 concurrent requests, 1 round, 8 output tokens: a warmup and 2 measured.
const SMALL: [&str; 8] = [
    "--concurrency",
    "2",
    "--rounds",
    "1",
    "--output-tokens",
    "8",
    "--input-tokens",
    "32",
];

/// Checks the records of a run through the gateway: every response ok and verified (every
/// counter came back), prompts exactly as long as asked by llama-server's own count, nothing
/// from the cache, exactly the output asked; the stream carried no more tokens than that, and a
/// response whose chunks carried fewer (two tokens in one chunk) says so.
fn assert_exact_and_verified(run: &Invocation, dir: &Path) {
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let records = json_lines(&dir.join("requests.jsonl"));
    let measured = records.iter().filter(|r| r["phase"] == "measured").count();
    assert_eq!((records.len(), measured), (3, 2), "{records:?}");
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["prompt_tokens"], r["input_tokens"], "{r}");
        assert_eq!(r["cached_tokens"], 0, "{r}");
        assert_eq!(r["output_tokens"], 8, "{r}");
        let streamed = n(&r["streamed_tokens"]);
        assert!((1..=8).contains(&streamed), "{r}");
        let noted = r["notes"].as_array().is_some_and(|notes| {
            notes
                .iter()
                .any(|m| m.as_str().is_some_and(|m| m.contains("token events for 8")))
        });
        assert_eq!(noted, streamed < 8, "{r}");
    }
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["outcome"]["status"], "completed", "{summary}");
    assert_eq!(summary["cases"][0]["counts"]["unverified"], 0, "{summary}");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(!report.contains("Unverified"), "{report}");
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable folder") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The key in no file under `out` (which holds `attempts` attempts' files) and in no output.
fn assert_key_nowhere(key: &str, out: &Path, attempts: usize, runs: &[&Invocation]) {
    let files = files_under(out);
    assert!(
        files.len() >= 5 * attempts,
        "{attempts} attempts' files: {files:?}"
    );
    for file in files {
        let bytes = std::fs::read(&file).expect("readable file");
        assert!(
            !String::from_utf8_lossy(&bytes).contains(key),
            "the master key is in {}",
            file.display()
        );
    }
    for run in runs {
        assert!(!run.stdout.contains(key) && !run.stderr.contains(key));
    }
}

#[test]
#[ignore = "needs LiteLLM: scripts/test.sh installs it and runs this group with --include-ignored"]
fn completions_and_chat_through_the_gateway_are_exact_verified_and_keep_the_key_secret() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let gateway = Gateway::start(&[]);
    let out = tempfile::tempdir().expect("temp dir");
    let out_dir = out.path().to_str().expect("UTF-8 path");

    // Without the key, setup stops at the first request, with one line and no attempt folder.
    let mut args = vec!["run", "--url", &gateway.url, "--out", out_dir];
    args.extend_from_slice(&["--name", "keyless"]);
    args.extend_from_slice(&SMALL);
    let keyless = llmload(&args);
    assert_eq!(keyless.code, 1, "{}", keyless.stderr);
    assert_eq!(
        keyless.stderr.trim().lines().count(),
        1,
        "{}",
        keyless.stderr
    );
    assert!(
        keyless.stderr.contains("401") && keyless.stderr.contains("check --api-key"),
        "{}",
        keyless.stderr
    );
    assert!(!out.path().join("keyless").exists());
    // A key the gateway does not know: its model list is refused, and the line says with what.
    let mut args = vec!["run", "--url", &gateway.url, "--out", out_dir];
    args.extend_from_slice(&["--name", "wrong-key", "--api-key", "not-the-key"]);
    args.extend_from_slice(&SMALL);
    let wrong = llmload(&args);
    assert_eq!(wrong.code, 1, "{}", wrong.stderr);
    assert_eq!(wrong.stderr.trim().lines().count(), 1, "{}", wrong.stderr);
    assert!(
        wrong.stderr.contains("GET /v1/models answered 4"),
        "{}",
        wrong.stderr
    );
    assert!(!wrong.stderr.contains("not-the-key"), "{}", wrong.stderr);

    // No --api: the gateway is not llama-server (no /props through it) and lists its models.
    let (completions, dir) = gateway.run(out.path(), "completions", &SMALL);
    assert_exact_and_verified(&completions, &dir);
    let target = &json(&dir.join("campaign.json"))["target"];
    assert_eq!(target["api"], "completions", "{target}");
    assert_eq!(target["model"], MODEL, "{target}");
    let listed = &target["server"]["models"]["data"][0];
    assert_eq!(listed["owned_by"], "openai", "{target}");
    assert!(target["server"]["props"].is_null(), "{target}");

    let mut chat = SMALL.to_vec();
    chat.extend(["--api", "chat"]);
    let (chat, dir) = gateway.run(out.path(), "chat", &chat);
    assert_exact_and_verified(&chat, &dir);

    assert_key_nowhere(
        &gateway.key,
        out.path(),
        2,
        &[&keyless, &completions, &chat],
    );
}

/// Anthropic's Messages API through the gateway: `LiteLLM` forwards `/v1/messages` to the
/// upstream as it came (`scripts/start-litellm.sh` declares it a supported endpoint), keeping
/// only Anthropic's own fields, so the upstream is told to ignore end-of-sequence itself
/// (`--ignore-eos`); the prompts are counted by `/v1/messages/count_tokens`, which the gateway
/// asks the upstream; the key goes as `x-api-key` and is written nowhere. llama-server reuses
/// the chat template's opening from its cache on this API whatever the request asks, and only
/// that may come from it.
#[test]
#[ignore = "needs LiteLLM: scripts/test.sh installs it and runs this group with --include-ignored"]
fn anthropic_messages_pass_through_the_gateway_exact_and_verified() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let gateway = Gateway::start(&["--ignore-eos"]);
    let out = tempfile::tempdir().expect("temp dir");
    let mut args = SMALL.to_vec();
    args.extend(["--api", "messages"]);
    let (run, dir) = gateway.run(out.path(), "messages", &args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("/v1/messages/count_tokens"),
        "{}",
        run.stdout
    );
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 3, "{records:?}");
    for r in &records {
        assert_eq!(
            (r["status"].as_str(), r["verified"].as_bool()),
            (Some("ok"), Some(true)),
            "{r}"
        );
        assert_eq!(r["prompt_tokens"], r["input_tokens"], "{r}");
        assert_eq!(r["output_tokens"], 8, "{r}");
        assert_eq!(r["token_events"], 8, "{r}");
        assert!(n(&r["cached_tokens"]) <= 4, "{r}");
    }
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["outcome"]["status"], "completed", "{summary}");
    assert_eq!(
        json(&dir.join("campaign.json"))["target"]["api"],
        "messages"
    );
    assert_key_nowhere(&gateway.key, out.path(), 1, &[&run]);
}

#[test]
#[ignore = "needs LiteLLM: scripts/test.sh installs it and runs this group with --include-ignored"]
fn the_upstream_s_cache_counter_and_errors_come_back_through_the_gateway() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    // Gemma 3's sliding-window attention: llama-server reuses a cached prefix with --swa-full.
    let gateway = Gateway::start(&["--swa-full"]);
    let out = tempfile::tempdir().expect("temp dir");

    // A shared system prompt: the upstream's cache counter comes back through the gateway
    // (llama-server serves cached tokens, and says so). With no /tokenize there, each prompt is
    // fitted by probe requests of that very prompt, which llama-server keeps in a slot: the
    // measured request may then find more than the shared part cached, and llmload must flag
    // it invalid, never pass it as ok.
    let (run, dir) = gateway.run(
        out.path(),
        "shared",
        &[
            "--input-tokens",
            "64",
            "--system-prompt-tokens",
            "32",
            "--concurrency",
            "1",
            "--rounds",
            "2",
            "--output-tokens",
            "8",
        ],
    );
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 3, "{records:?}");
    let mut invalid = 0;
    for r in &records {
        assert_eq!(r["prompt_tokens"], 64, "{r}");
        assert_eq!(r["output_tokens"], 8, "{r}");
        assert_eq!(r["verified"], true, "{r}");
        if n(&r["cached_tokens"]) <= 32 {
            assert_eq!(r["status"], "ok", "{r}");
        } else {
            invalid += 1;
            assert_eq!(r["status"], "invalid", "{r}");
            let error = r["error"].as_str().expect("why invalid");
            assert!(error.contains("more than the 32 shared"), "{r}");
        }
    }
    assert!(
        records.iter().any(|r| n(&r["cached_tokens"]) > 0),
        "the upstream's cache counter: {records:?}"
    );
    let expected = if invalid == 0 { 0 } else { 3 };
    assert_eq!(run.code, expected, "{}\n{}", run.stdout, run.stderr);

    assert_shared_prompt_counted_by_the_client(&gateway, out.path());

    // llama-server refuses a bad grammar; its message comes back inside the gateway's. The
    // first request to meet it is the probe that measures the chat template's overhead, at
    // setup: the run stops there with one line, before any attempt folder.
    let refused = llmload(&[
        "run",
        "--url",
        &gateway.url,
        "--api-key",
        &gateway.key,
        "--out",
        out.path().to_str().expect("UTF-8 path"),
        "--name",
        "refused",
        "--input-tokens",
        "32",
        "--output-tokens",
        "8",
        "--extra-body",
        r#"{"grammar": "root ::= ((("}"#,
    ]);
    assert_eq!(refused.code, 1, "{}\n{}", refused.stdout, refused.stderr);
    assert_eq!(
        refused.stderr.trim().lines().count(),
        1,
        "{}",
        refused.stderr
    );
    for part in ["HTTP 400", "OpenAIException", "failed to parse grammar"] {
        assert!(refused.stderr.contains(part), "{part}: {}", refused.stderr);
    }
    assert!(!out.path().join("refused").exists());
}

/// The Gemma 3 tokenizer as a `tokenizer.json`: the one the project's vLLM model carries, taken
/// from the same GGUF the upstream llama-server serves (`scripts/setup-vllm.sh`, cached).
fn gemma_tokenizer() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/setup-vllm.sh");
    let output = Command::new(script).output().expect("run setup-vllm.sh");
    assert!(output.status.success(), "setup-vllm.sh failed");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let model = stdout
        .lines()
        .find_map(|l| l.strip_prefix("VLLM_MODEL="))
        .expect("setup-vllm.sh names the model folder");
    Path::new(model).join("tokenizer.json")
}

/// With the model's `tokenizer.json`, the client counts the prompts itself (one probe measures
/// the tokens the API adds around a text): no probe sends a measured prompt, so the cache can
/// serve the shared part and nothing more. Every response is ok, exact by the upstream's own
/// count, and verified.
fn assert_shared_prompt_counted_by_the_client(gateway: &Gateway, out: &Path) {
    let tokenizer = gemma_tokenizer();
    let (run, dir) = gateway.run(
        out,
        "shared-tokenizer",
        &[
            "--input-tokens",
            "64",
            "--system-prompt-tokens",
            "32",
            "--concurrency",
            "1",
            "--rounds",
            "2",
            "--output-tokens",
            "8",
            "--tokenizer",
            tokenizer.to_str().expect("UTF-8 path"),
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let summary = json(&dir.join("summary.json"));
    assert!(
        summary["counting"]["prompts"]
            .as_str()
            .is_some_and(|p| p.starts_with("the client's tokenizer")),
        "{summary}"
    );
    for r in &json_lines(&dir.join("requests.jsonl")) {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["prompt_tokens"], 64, "{r}");
        assert!(n(&r["cached_tokens"]) <= 32, "{r}");
    }
}
