//! End to end against a real vLLM (the CPU build, a tiny random-weight Gemma 3 with the real
//! Gemma 3 tokenizer), started by `scripts/start-vllm.sh`: closed campaigns on the completions
//! and chat APIs, an open loop, the server's context checked before the run, the API picked from
//! what the server is, a shared system prompt against vLLM's prefix cache, multi-turn chat
//! sessions whose history (and nothing more) that cache serves, a mix of the model and two real
//! LoRA adapters reported per adapter, and on every record the request's id said back and vLLM's
//! own per-request timings.
//!
//! vLLM takes minutes to install and start, so these tests are their own group: `cargo test`
//! lists them as ignored, and `scripts/test.sh` (which installs vLLM first) runs them with
//! `--include-ignored`. `scripts/vllm-tests.sh URL` runs the same checks against any vLLM (or
//! `SGLang`) server, such as a GPU one.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

mod cancel;
use crate::common;
mod lora;

use common::{
    assert_ids_and_server_timings, count as n, json, json_lines, llmload, measured, run_against,
    Started, SERIAL,
};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::PoisonError;

/// A vLLM server started by the project's script, stopped (SIGTERM, the whole server) when
/// dropped; or one given by `LLMLOAD_VLLM_URL`, left running.
struct Vllm {
    url: String,
    pid: Option<String>,
    /// The served model's `tokenizer.json`: in the model folder of a server started here, else
    /// `LLMLOAD_VLLM_TOKENIZER`.
    tokenizer: Option<String>,
}

impl Vllm {
    /// A server with prefix caching on or off; `lora`: with the two LoRA adapters of
    /// `scripts/start-vllm.sh --lora`.
    /// `profile`: with its torch profiler writing to that folder (`--profiler-config`).
    fn start(prefix_caching: bool, lora: bool, profile: Option<&Path>) -> Vllm {
        if let Ok(url) = std::env::var("LLMLOAD_VLLM_URL") {
            return Vllm {
                url,
                pid: None,
                tokenizer: std::env::var("LLMLOAD_VLLM_TOKENIZER").ok(),
            };
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/start-vllm.sh");
        let mut command = Command::new(script);
        if prefix_caching {
            command.arg("--prefix-caching");
        }
        if lora {
            command.arg("--lora");
        }
        if let Some(dir) = profile {
            let config = serde_json::json!({"profiler": "torch", "torch_profiler_dir": dir});
            command.args(["--profiler-config", &config.to_string()]);
        }
        let started = Started::run(command.env("LLMLOAD_VLLM_LIFETIME", "1200"));
        Vllm {
            url: started.get("VLLM_URL"),
            pid: Some(started.get("VLLM_PID")),
            tokenizer: Some(format!("{}/tokenizer.json", started.get("VLLM_MODEL"))),
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
    assert_exact_and_verified_by(dir, measured, true);
}

/// As [`assert_exact_and_verified`]; where the stream says how many tokens each chunk carries
/// (`counted`, usage on every chunk), each response's events carry all of its tokens, else at
/// most that many, and a response with fewer says so.
fn assert_exact_and_verified_by(dir: &Path, measured: usize, counted: bool) {
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
        if counted {
            assert_eq!(r["streamed_tokens"], r["output_tokens"], "{r}");
        } else {
            let (streamed, output) = (f(&r["streamed_tokens"]), f(&r["output_tokens"]));
            assert!(streamed >= 1.0 && streamed <= output, "{r}");
            let said = r["notes"].as_array().is_some_and(|notes| {
                notes
                    .iter()
                    .any(|n| n.as_str().is_some_and(|n| n.contains("token events for")))
            });
            assert_eq!(said, streamed < output, "{r}");
        }
    }
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["outcome"]["status"], "completed", "{summary}");
    assert_server_timings(&records);
    // Each case's server side: vLLM's queue, prefill and TTFT, and the delivery, over every
    // measured response.
    for case in summary["cases"].as_array().expect("cases") {
        let server = &case["server"];
        if server.is_null() && std::env::var("LLMLOAD_VLLM_URL").is_ok() {
            continue;
        }
        assert_eq!(server["responses"], case["counts"]["ok"], "{case}");
        for part in ["queue_ms", "prefill_ms", "ttft_ms", "delivery_ms"] {
            assert_eq!(server[part]["n"], case["counts"]["ok"], "{part}: {case}");
        }
        // vLLM reports its queue: every part present, none unavailable.
        let parts = &server["ttft_parts"];
        for part in ["write_ms", "queue_ms", "prefill_ms", "residual_ms"] {
            assert!(parts[part].is_number(), "{part}: {parts}");
        }
        assert!(parts["unavailable"].is_null(), "{parts}");
    }
}

/// Checks that every record carries vLLM's per-request metrics (`scripts/start-vllm.sh` starts it
/// with `--enable-per-request-metrics`), the server's TTFT within the client's on every one, and
/// its own id said back (`--enable-request-id-headers`). A server given by `LLMLOAD_VLLM_URL` is
/// checked only where it reports them.
fn assert_server_timings(records: &[Value]) {
    if std::env::var("LLMLOAD_VLLM_URL").is_ok() && records[0].get("server").is_none() {
        return;
    }
    let timed = assert_ids_and_server_timings(records, "vllm per-request metrics");
    assert_eq!(timed, records.len(), "every record has the server's TTFT");
    for r in records {
        assert_eq!(r["server_request_id"], r["request_id"], "{r}");
        let raw = &r["server"]["raw"];
        for field in [
            "queue_time_ms",
            "time_to_first_token_ms",
            "generation_time_ms",
        ] {
            assert!(raw[field].as_f64().is_some(), "{field}: {r}");
        }
    }
}

/// The Responses API: exact and verified, the counts from `response.completed`, vLLM's metrics
/// in its response. A delta may carry two tokens and says nothing of how many (no usage on every
/// chunk here), so the stream's events may be fewer than the tokens: each such response says so.
fn assert_responses_api(vllm: &Vllm, out: &Path, campaign: &[&str]) {
    let mut responses = campaign.to_vec();
    responses.extend(["--api", "responses"]);
    let (run, dir) = run_against(out, "responses", &vllm.url, &responses);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_exact_and_verified_by(&dir, 12, false);
    assert_eq!(
        json(&dir.join("campaign.json"))["target"]["api"],
        "responses"
    );
}

#[test]
#[ignore = "needs vLLM: scripts/test.sh installs it and runs this group with --include-ignored"]
fn vllm_campaigns_open_loop_and_checks_without_prefix_caching() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let profiles = tempfile::tempdir().expect("temp dir");
    let vllm = Vllm::start(false, true, Some(profiles.path()));
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

    assert_responses_api(&vllm, out.path(), &campaign);
    cancel::assert_cancels(&vllm, out.path());
    lora::assert_lora_mix(&vllm, out.path());

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
        "--traceparent",
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
    assert_client_tokenizer_agrees(&vllm, &written);
    assert_reconciles_with_vllm_bench(&vllm, out.path());
    assert_profiles_a_full_round(&vllm, out.path(), profiles.path());
}

/// `--profile-server 2` on `vllm` (started with its profiler writing to `profiles`, unless it
/// was given): started once `vllm:num_requests_running` read 2, stopped at the round's end, and
/// the traces are in the folder.
fn assert_profiles_a_full_round(vllm: &Vllm, out: &Path, profiles: &Path) {
    let (run, dir) = run_against(
        out,
        "profiled",
        &vllm.url,
        &[
            "--input-tokens",
            "64",
            "--concurrency",
            "2",
            "--output-tokens",
            "32",
            "--rounds",
            "1",
            "--profile-server",
            "2",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let p = &json(&dir.join("summary.json"))["cases"][0]["server_profile"];
    assert_eq!(p["gauge"], "vllm:num_requests_running", "{p}");
    assert!(f(&p["running"]) >= 2.0, "{p}");
    assert_eq!(
        (&p["start"]["done"], &p["stop"]["done"]),
        (&true.into(), &true.into()),
        "{p}"
    );
    if vllm.pid.is_some() {
        let traces = std::fs::read_dir(profiles)
            .expect("the profile folder")
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .ends_with(".pt.trace.json.gz")
            })
            .count();
        assert!(traces > 0, "no trace in {}", profiles.display());
    }
}

/// `vllm bench serve` on `vllm`: 8 prompts of 32 tokens, 8 output tokens, 2 at a time, on the
/// completions API; its detailed result file.
fn vllm_bench(vllm: &Vllm, out: &Path) -> std::path::PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/setup-vllm.sh");
    let paths = Command::new(script).output().expect("setup-vllm.sh");
    let paths = String::from_utf8_lossy(&paths.stdout).into_owned();
    let get = |key: &str| -> String {
        paths
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_owned))
            .unwrap_or_else(|| panic!("setup-vllm.sh gave no {key}: {paths}"))
    };
    let models = Command::new("curl")
        .args(["-sf", &format!("{}/v1/models", vllm.url)])
        .output()
        .expect("curl");
    let models: Value = serde_json::from_slice(&models.stdout).expect("models JSON");
    let served = models["data"][0]["id"].as_str().expect("a served model");
    let tokenizer = vllm
        .tokenizer
        .as_deref()
        .and_then(|t| Path::new(t).parent())
        .map_or_else(|| get("VLLM_MODEL"), |p| p.display().to_string());
    let result_dir = out.join("vllm-bench");
    let bench = Command::new(get("VLLM_PYTHON"))
        .arg(get("VLLM_LAUNCHER"))
        .args([
            "bench",
            "serve",
            "--backend",
            "openai",
            "--base-url",
            &vllm.url,
        ])
        .args([
            "--endpoint",
            "/v1/completions",
            "--model",
            served,
            "--tokenizer",
            &tokenizer,
        ])
        .args(["--dataset-name", "random", "--random-input-len", "32"])
        .args([
            "--random-output-len",
            "8",
            "--random-range-ratio",
            "0",
            "--ignore-eos",
        ])
        .args([
            "--max-concurrency",
            "2",
            "--num-prompts",
            "8",
            "--request-rate",
            "inf",
        ])
        .args(["--num-warmups", "0", "--seed", "1", "--disable-tqdm"])
        .args([
            "--save-result",
            "--save-detailed",
            "--result-filename",
            "r.json",
        ])
        .arg("--result-dir")
        .arg(&result_dir)
        .env("HF_HUB_OFFLINE", "1")
        .env("TRANSFORMERS_OFFLINE", "1")
        .env("VLLM_NO_USAGE_STATS", "1")
        .output()
        .expect("vllm bench serve");
    assert!(
        bench.status.success(),
        "vllm bench serve: {}",
        String::from_utf8_lossy(&bench.stderr)
    );
    result_dir.join("r.json")
}

/// `vllm bench serve` and llmload send the same workload to one server; `llmload reconcile`
/// sets the two side by side: the same workload on both sides, every figure on each side, and
/// its gap cut into a definition and a measurement term.
fn assert_reconciles_with_vllm_bench(vllm: &Vllm, out: &Path) {
    let other = vllm_bench(vllm, out);
    let (run, dir) = run_against(
        out,
        "reconcile",
        &vllm.url,
        &[
            "--api",
            "completions",
            "--input-tokens",
            "32",
            "--output-tokens",
            "8",
            "--arrival",
            "closed-continuous",
            "--concurrency",
            "2",
            "--requests",
            "8",
            "--warmup",
            "0",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let args = [
        "reconcile",
        dir.to_str().expect("UTF-8"),
        other.to_str().expect("UTF-8"),
    ];
    let reconciled = llmload(&[args[0], args[1], args[2], "--json"]);
    assert_eq!(reconciled.code, 0, "{}", reconciled.stderr);
    let r: Value = serde_json::from_str(&reconciled.stdout).expect("JSON");
    assert_eq!(r["detailed"], true, "{r}");
    for w in r["workload"].as_array().expect("workload") {
        assert_eq!(w["same"], true, "the same workload on both sides: {w}");
    }
    let metrics = r["metrics"].as_array().expect("metrics");
    assert_eq!(metrics.len(), 10, "{r}");
    for m in metrics {
        for side in ["other", "llmload_as_other", "llmload"] {
            assert!(m[side].as_f64().is_some_and(|v| v > 0.0), "{side}: {m}");
        }
        let kinds: Vec<&str> = m["terms"]
            .as_array()
            .expect("terms")
            .iter()
            .filter_map(|t| t["kind"].as_str())
            .collect();
        assert_eq!(kinds, ["definition", "measurement"], "{m}");
    }
    // The completions API has no role chunk: vLLM's first chunk is llmload's first token.
    let ttft = metrics
        .iter()
        .find(|m| m["name"] == "ttft_mean_ms")
        .expect("TTFT");
    assert!(f(&ttft["terms"][0]["amount"]).abs() < 1e-9, "{ttft}");
    // ITL: one gap per chunk after the first, 7 for each of the 8 responses of 8 tokens.
    let itl = metrics
        .iter()
        .find(|m| m["name"] == "itl_mean_ms")
        .expect("ITL");
    assert_eq!(itl["n"], 8 * 7, "{itl}");
    let table = llmload(&args);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table.stdout.contains("| ttft_mean_ms |"),
        "{}",
        table.stdout
    );
}

#[test]
#[ignore = "needs vLLM: scripts/test.sh installs it and runs this group with --include-ignored"]
fn vllm_prefix_cache_serves_the_shared_prompt_and_session_history_and_nothing_else() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let vllm = Vllm::start(true, false, None);
    let out = tempfile::tempdir().expect("temp dir");
    // vLLM's CPU build caches whole blocks of 128 tokens: a 256-token shared prompt is two. On
    // chat, the 256 are the template's opening and the shared text: the template's tokens after
    // the user's text (Gemma's end of turn and the model turn's opening) are not shared, and
    // counting them in would leave the second block incomplete (a hit rate of a half).
    for api in ["completions", "chat"] {
        let (run, dir) = run_against(
            out.path(),
            api,
            &vllm.url,
            &[
                "--api",
                api,
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
            assert_eq!(r["prompt_tokens"], 512, "{r}");
            let cached = r["cached_tokens"].as_u64().expect("cached tokens");
            assert!(
                cached <= 256,
                "only the shared part may come from the cache: {r}"
            );
        }
        // After the warmup, every request finds the whole shared prompt in the cache.
        let case = &json(&dir.join("summary.json"))["cases"][0];
        let prefix = &case["prefix_cache"];
        assert_eq!(prefix["shared_tokens"], 256, "{api}: {case}");
        assert_eq!(prefix["n"], 4, "{api}: {case}");
        assert_eq!(prefix["responses_hit"], 4, "{api}: {case}");
        assert!((f(&prefix["hit_rate"]) - 1.0).abs() < 1e-9, "{api}: {case}");
    }
    for history in ["placeholder", "as-generated"] {
        assert_sessions_cache_their_history(&vllm, out.path(), history);
    }
    assert_graph_calls_hit_their_context(&vllm, out.path());
    assert_reset_empties_the_cache(&vllm, out.path());
}

/// A session graph (`--dag`): a 300-token plan, two research calls fanned out after it and an
/// answer after both, each extending the plan. vLLM's cache serves whole blocks of 128 tokens:
/// of the 316 eligible (the plan's prompt and its 16-token answer) two blocks, 256, where the
/// plan's prompt is still cached; every call verified, each call's figures per call id, and no
/// call named as a miss (under half its eligible context served).
fn assert_graph_calls_hit_their_context(vllm: &Vllm, out: &Path) {
    let graph = out.join("graph.jsonl");
    let mut lines = Vec::new();
    for session in ["s1", "s2"] {
        let call = |name: &str, after: &[&str], new: u32, output: u32| {
            let mut c = serde_json::json!({
                "session": session, "call": name, "new_tokens": new, "output_tokens": output
            });
            if !after.is_empty() {
                c["after"] = after.into();
                c["context"] = "plan".into();
            }
            c.to_string()
        };
        lines.push(call("plan", &[], 300, 16));
        lines.push(call("r1", &["plan"], 24, 8));
        lines.push(call("r2", &["plan"], 24, 8));
        lines.push(call("answer", &["r1", "r2"], 48, 8));
    }
    let lines = lines.join("\n") + "\n";
    std::fs::write(&graph, lines).expect("write the graph");
    let (run, dir) = run_against(
        out,
        "graph",
        &vllm.url,
        &[
            "--dag",
            graph.to_str().expect("UTF-8 path"),
            "--concurrency",
            "2",
            "--history",
            "placeholder",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 8);
    for r in &records {
        assert_eq!(
            (&r["status"], &r["verified"]),
            (&"ok".into(), &true.into()),
            "{r}"
        );
        let call = r["graph"]["call"].as_str().expect("a call");
        let (cached, eligible) = (n(&r["cached_tokens"]), n(&r["history_tokens"]));
        if call == "plan" {
            assert_eq!(n(&r["prompt_tokens"]), 300, "{r}");
            continue;
        }
        assert_eq!(eligible, 316, "the plan's prompt and answer: {r}");
        assert!(cached <= eligible && cached % 128 == 0, "{r}");
        assert!(cached >= 128, "the plan's prompt came from the cache: {r}");
    }
    let graph = &json(&dir.join("summary.json"))["cases"][0]["sessions"]["graph"];
    assert_eq!(graph["complete"], 2, "{graph}");
    assert_eq!(graph["miss_count"], 0, "{graph}");
    let by_call: Vec<&str> = graph["by_call"]
        .as_array()
        .expect("per call")
        .iter()
        .map(|c| c["call"].as_str().expect("a call id"))
        .collect();
    for call in ["plan", "r1", "r2", "answer"] {
        assert!(by_call.contains(&call), "{by_call:?}");
    }
    assert!(f(&graph["eligible_hit_rate"]) >= 0.4, "{graph}");
}

/// Two cases of one shared system prompt, one request each: the second case's request takes the
/// shared part from the cache, unless `--reset-prefix-cache` had vLLM drop it before the case.
fn assert_reset_empties_the_cache(vllm: &Vllm, out: &Path) {
    for reset in [false, true] {
        let name = if reset { "reset" } else { "kept" };
        let mut flags = vec![
            "--system-prompt-tokens",
            "256",
            "--input-tokens",
            "512",
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
            flags.push("--reset-prefix-cache");
        }
        let (run, dir) = run_against(out, name, &vllm.url, &flags);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let records = json_lines(&dir.join("requests.jsonl"));
        let second = records
            .iter()
            .find(|r| r["case"] == "in512-c1-out6")
            .unwrap_or_else(|| panic!("no request of the second case: {records:?}"));
        let cached = second["cached_tokens"].as_u64().expect("cached tokens");
        let case = &json(&dir.join("summary.json"))["cases"][1];
        if reset {
            assert_eq!(cached, 0, "{second}");
            let done = &case["prefix_cache_reset"];
            assert_eq!(done["done"], true, "{case}");
            assert_eq!(done["how"], "POST /reset_prefix_cache", "{case}");
        } else {
            assert_eq!(cached, 256, "the whole shared part, two blocks: {second}");
            assert!(case["prefix_cache_reset"].is_null(), "{case}");
        }
    }
}

/// Two chat sessions of three turns on vLLM with its prefix cache, the history sent back as
/// `history` says: every response verified, every turn's cached tokens within its history, each
/// later turn's prompt its history and exactly the new 24 tokens (vLLM's `/tokenize` of the
/// messages counts the chat template's tokens), and the history's first whole block (the first
/// turn's prompt is 160 tokens) served from the cache.
fn assert_sessions_cache_their_history(vllm: &Vllm, out: &Path, history: &str) {
    let (run, dir) = run_against(
        out,
        &format!("sessions-{history}"),
        &vllm.url,
        &[
            "--api",
            "chat",
            "--input-tokens",
            "160",
            "--turn-input",
            "24",
            "--output-tokens",
            "8",
            "--concurrency",
            "2",
            "--turns",
            "3",
            "--sessions",
            "2",
            "--history",
            history,
        ],
    );
    assert_eq!(run.code, 0, "{history}: {}", run.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 6, "{history}");
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(n(&r["output_tokens"]), 8, "{r}");
        let (cached, past) = (n(&r["cached_tokens"]), n(&r["history_tokens"]));
        assert!(
            cached <= past,
            "only the history may come from the cache: {r}"
        );
        if n(&r["turn"]) == 1 {
            assert_eq!(n(&r["prompt_tokens"]), 160, "{r}");
        } else {
            assert_eq!(n(&r["prompt_tokens"]), past + 24, "{r}");
            assert!(
                past > 160 && cached > 0,
                "the history came from the cache: {r}"
            );
        }
    }
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_eq!(case["sessions"]["completed"], 2, "{history}: {case}");
    let planned = &json(&dir.join("campaign.json"))["cases"][0];
    assert_eq!(planned["history"], history, "{planned}");
}

/// The client's tokenizer (`--tokenizer`) reads the served model's `tokenizer.json` and counts
/// the bundled corpus, and a short text, as the server's `/tokenize` does.
fn assert_client_tokenizer_agrees(vllm: &Vllm, written: &Value) {
    let file = vllm.tokenizer.as_deref().expect(
        "the served model's tokenizer.json: set LLMLOAD_VLLM_TOKENIZER when testing a server \
         given by URL",
    );
    let tokenizer =
        llmload::tokenizer::Tokenizer::load(Path::new(file)).expect("loads tokenizer.json");
    let model = written["target"]["model"].as_str().expect("model name");
    for text in [
        llmload::workload::BUNDLED_CORPUS,
        " the model answers, with tokens",
    ] {
        let answer = Command::new("curl")
            .args([
                "-sS",
                "--max-time",
                "30",
                "-H",
                "Content-Type: application/json",
            ])
            .arg("--data")
            .arg(
                serde_json::json!({"model": model, "prompt": text, "add_special_tokens": false})
                    .to_string(),
            )
            .arg(format!("{}/tokenize", vllm.url))
            .output()
            .expect("run curl");
        let answer: Value = serde_json::from_slice(&answer.stdout).expect("a JSON answer");
        let server = answer["tokens"].as_array().expect("tokens").len();
        assert_eq!(
            u64::from(tokenizer.count(text, false)),
            server as u64,
            "{text:.60}"
        );
    }
}
