//! The vLLM group's check of a mix of models: the served model and two real LoRA adapters
//! (random weights, built by `scripts/setup-vllm.sh`, served with `--enable-lora`) in one load
//! of 70/20/10, every response ok and verified, per-adapter figures whose counts are the
//! records', and vLLM's own account: its generated-token counter grew by exactly what was asked,
//! and its `vllm:lora_requests_info` reported both adapters running.

use super::common::{count as n, json, json_lines, run_against};
use super::{assert_exact_and_verified, Vllm};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The served model and the adapters `/v1/models` lists under it.
fn served(vllm: &Vllm) -> (String, Vec<String>) {
    let answer = Command::new("curl")
        .args([
            "-sf",
            "--max-time",
            "30",
            &format!("{}/v1/models", vllm.url),
        ])
        .output()
        .expect("curl");
    let models: Value = serde_json::from_slice(&answer.stdout).expect("models JSON");
    let data = models["data"].as_array().expect("a model list");
    let base = data[0]["id"].as_str().expect("the served model").to_owned();
    let adapters = data
        .iter()
        .filter(|m| m["parent"].as_str() == Some(base.as_str()))
        .filter_map(|m| m["id"].as_str().map(str::to_owned))
        .collect();
    (base, adapters)
}

/// 70/20/10 over the model and two adapters, 5 rounds of 4 requests of 64 prompt tokens and
/// 16 output tokens, 3 warmups (one per model).
pub(super) fn assert_lora_mix(vllm: &Vllm, out: &Path) {
    let (base, adapters) = served(vllm);
    assert!(
        adapters.len() >= 2,
        "the server lists {} LoRA adapters under {base}: start vLLM with --enable-lora and two \
         adapters (scripts/start-vllm.sh --lora)",
        adapters.len()
    );
    let (a, b) = (&adapters[0], &adapters[1]);
    let mix = format!("{base}:70,{a}:20,{b}:10");
    let (run, dir) = run_against(
        out,
        "lora",
        &vllm.url,
        &[
            "--model",
            &mix,
            "--input-tokens",
            "64",
            "--output-tokens",
            "16",
            "--concurrency",
            "4",
            "--rounds",
            "5",
            "--seed",
            "5",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_exact_and_verified(&dir, 20);
    let records = json_lines(&dir.join("requests.jsonl"));
    let warmups: Vec<&str> = records
        .iter()
        .filter(|r| r["phase"] == "warmup")
        .filter_map(|r| r["model"].as_str())
        .collect();
    assert_eq!(warmups, [base.as_str(), a, b]);
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    let figures = case["models"].as_array().expect("per-model figures");
    let mut total = 0;
    for model in [base.as_str(), a, b] {
        let sent = records
            .iter()
            .filter(|r| r["phase"] == "measured" && r["model"] == model)
            .count() as u64;
        let m = figures
            .iter()
            .find(|m| m["model"] == model)
            .unwrap_or_else(|| panic!("no figures of {model}: {case}"));
        assert!(sent > 0, "seed 5 sends {model} some of the 20: {case}");
        assert_eq!(n(&m["counts"]["ok"]), sent, "{m}");
        assert_eq!(m["counts"]["unverified"], 0, "{m}");
        for d in ["ttft_ms", "e2e_ms", "tpot_ms"] {
            assert_eq!(n(&m[d]["n"]), sent, "{d}: {m}");
        }
        assert_eq!(n(&m["output_tokens"]), 16 * sent, "{m}");
        assert!(m["output_tps"].as_f64().is_some_and(|t| t > 0.0), "{m}");
        total += sent;
    }
    assert_eq!(total, 20);
    assert!(
        run.stdout.contains(&format!("| in64-c4-out16 | {a} |")),
        "{}",
        run.stdout
    );
    // vLLM's own account: the tokens asked of it, exactly (3 warmups and 20 measured, 16 each),
    // and both adapters running at some scrape.
    let metrics = &summary["telemetry"]["server_metrics"];
    assert_eq!(
        metrics["delta"]["vllm:generation_tokens_total"].as_f64(),
        Some(23.0 * 16.0),
        "{metrics}"
    );
    let running: Vec<&str> = metrics["lora_running"]
        .as_array()
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        running.contains(&a.as_str()) && running.contains(&b.as_str()),
        "vllm:lora_requests_info: {metrics}"
    );
}
