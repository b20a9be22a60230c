//! Embeddings and rerank against vLLM (CPU build) serving the suite's tiny Gemma 3 as a pooling
//! model: `--runner pooling --convert embed` for `/v1/embeddings`, `--convert classify` with one
//! label for `/v1/rerank`, each started by `scripts/start-vllm.sh`. Every response ok and
//! verified by the server's own count, one result per input.
//!
//! Ignored by default and not in `scripts/test.sh`: two more vLLM processes, a few minutes of
//! start-up on two cores. Run it with
//! `cargo test -p llmload --test it -- --include-ignored vllm_pooling::`, or against running servers
//! with `LLMLOAD_VLLM_EMBED_URL` and `LLMLOAD_VLLM_RERANK_URL`.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{attempt_dir, json, json_lines, llmload, VllmServer};

/// A campaign of 2 rounds of 2 requests of `batch` inputs of `input` tokens on `api` against
/// `url`: every record ok and verified with one result per input, and the summary's inputs and
/// tokens; returns the vectors' length of the first record.
fn campaign(api: &str, url: &str, batch: u64, input: u64) -> Option<u64> {
    let out = tempfile::tempdir().expect("temp dir");
    let (batch_arg, input_arg) = (batch.to_string(), input.to_string());
    let out_dir = out.path().to_str().expect("UTF-8 path");
    let args = [
        "run",
        "--url",
        url,
        "--out",
        out_dir,
        "--name",
        api,
        "--telemetry",
        "off",
        "--api",
        api,
        "--input-tokens",
        &input_arg,
        "--batch-size",
        &batch_arg,
        "--concurrency",
        "2",
        "--rounds",
        "2",
        "--timeout",
        "5m",
    ];
    let run = llmload(&args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let dir = attempt_dir(out.path(), api);
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 5, "a warmup and 4 measured");
    for r in &records {
        let ok = (r["status"].as_str(), r["verified"].as_bool());
        assert_eq!(ok, (Some("ok"), Some(true)), "{r}");
        assert_eq!(r["pooling"]["results"].as_u64(), Some(batch), "{r}");
        assert_eq!(r["prompt_tokens"].as_u64(), Some(batch * input), "{r}");
    }
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_eq!(
        case["pooling"]["inputs"].as_u64(),
        Some(4 * batch),
        "{case}"
    );
    assert!(
        case["pooling"]["inputs_per_s"]["mean"].as_f64() > Some(0.0),
        "{case}"
    );
    records[0]["pooling"]["dimension"].as_u64()
}

#[test]
#[ignore = "starts two pooling vLLM servers: minutes on two cores"]
fn vllm_embeddings_and_rerank_are_ok_and_verified_by_its_own_count() {
    {
        let flags = ["--runner", "pooling", "--convert", "embed"];
        let server = VllmServer::start("LLMLOAD_VLLM_EMBED_URL", &flags);
        // The tiny Gemma 3's hidden size.
        assert_eq!(campaign("embeddings", &server.url, 4, 32), Some(128));
    }
    let flags = [
        "--runner",
        "pooling",
        "--convert",
        "classify",
        "--hf-overrides",
        r#"{"num_labels": 1}"#,
    ];
    let server = VllmServer::start("LLMLOAD_VLLM_RERANK_URL", &flags);
    assert_eq!(campaign("rerank", &server.url, 3, 40), None);
}
