//! The Messages and Responses APIs end to end against a real llama-server (Gemma 3 270M): closed
//! campaigns whose every response is ok and verified by the server's own counts (the prompt
//! exactly as long as asked, exactly the output asked, nothing from the cache but the chat
//! template's opening where the server reuses it though asked not to), checked through the
//! records they leave.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{
    assert_ids_and_server_timings, attempt_dir, json, json_lines, llmload, LlamaServer, SERIAL,
};
use serde_json::Value;
use std::sync::PoisonError;

const OUTPUT: u64 = 8;

/// A closed campaign of 2 inputs × 2 concurrencies × 2 rounds on `api` against a fresh
/// llama-server: its records, its summary, its stdout.
fn campaign(api: &str) -> (Vec<Value>, Value, String) {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--url",
        &server.url,
        "--api",
        api,
        "--input-tokens",
        "32,96",
        "--concurrency",
        "1,2",
        "--output-tokens",
        "8",
        "--rounds",
        "2",
        "--out",
        out.path().to_str().expect("UTF-8 path"),
        "--name",
        api,
        "--timeout",
        "5m",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let dir = attempt_dir(out.path(), api);
    let campaign = json(&dir.join("campaign.json"));
    assert_eq!(campaign["target"]["api"], api, "{campaign}");
    (
        json_lines(&dir.join("requests.jsonl")),
        json(&dir.join("summary.json")),
        run.stdout,
    )
}

/// Every response ok and verified, exactly as long as asked both ways, one token event per
/// generated token; at most `reused` prompt tokens from the cache, each such response saying
/// so; the summary complete over 12 measured responses and 4 warmups.
fn assert_exact(records: &[Value], summary: &Value, reused: u64) {
    let measured = records.iter().filter(|r| r["phase"] == "measured").count();
    assert_eq!((records.len(), measured), (16, 12), "{records:?}");
    for r in records {
        assert_eq!(
            (r["status"].as_str(), r["verified"].as_bool()),
            (Some("ok"), Some(true)),
            "{r}"
        );
        assert_eq!(r["prompt_tokens"], r["input_tokens"], "{r}");
        assert_eq!(r["output_tokens"], OUTPUT, "{r}");
        assert_eq!(r["token_events"], OUTPUT, "{r}");
        assert_eq!(r["event_ms"].as_array().map(Vec::len), Some(8), "{r}");
        let cached = r["cached_tokens"].as_u64().expect("a cache count");
        assert!(cached <= reused, "{r}");
        let said = r["notes"].as_array().is_some_and(|notes| {
            notes.iter().any(|n| {
                n.as_str()
                    .is_some_and(|n| n.contains("chat template's opening"))
            })
        });
        assert_eq!(said, cached > 0, "{r}");
    }
    assert_eq!(summary["outcome"]["status"], "completed", "{summary}");
    assert_eq!(summary["outcome"]["responses_completed"], 12, "{summary}");
    let cases = summary["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 4);
    for case in cases {
        assert_eq!(case["complete"], true, "{case}");
        assert_eq!(case["counts"]["unverified"], 0, "{case}");
        let n = case["concurrency"].as_u64().expect("concurrency") * 2;
        assert_eq!(case["ttft_ms"]["n"], n, "{case}");
        assert_eq!(case["itl_ms"]["n"], n * (OUTPUT - 1), "{case}");
    }
}

/// Anthropic's Messages API: the prompt counted by the server's `/v1/messages/count_tokens`,
/// the counts read from `message_start` and `message_delta`. llama-server's Messages path
/// reuses its prompt cache whatever `cache_prompt` says, so the template's opening (the same in
/// every prompt, before the nonce) may come from the cache: never more.
#[test]
fn messages_campaign_is_exact_and_verified() {
    let (records, summary, stdout) = campaign("messages");
    assert!(
        stdout.contains("/v1/messages/count_tokens"),
        "the counting line: {stdout}"
    );
    assert_exact(&records, &summary, 4);
    // The prompt's opening is all the server reused: at least one response shows it.
    assert!(
        records.iter().any(|r| r["cached_tokens"] != 0),
        "{records:?}"
    );
}

/// `OpenAI`'s Responses API: the counts from `response.completed`, llama-server's own timings
/// beside it (every response's TTFT within the client's), nothing from the cache.
#[test]
fn responses_campaign_is_exact_and_verified_with_the_server_s_timings() {
    let (records, summary, _) = campaign("responses");
    assert_exact(&records, &summary, 0);
    let timed = assert_ids_and_server_timings(&records, "llama-server timings");
    assert_eq!(timed, 16);
    for case in summary["cases"].as_array().expect("cases") {
        assert_eq!(case["server"]["responses"], case["ttft_ms"]["n"], "{case}");
    }
}
