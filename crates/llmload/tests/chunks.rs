//! Tokens, not chunks: a server that streams several tokens per chunk (vLLM under speculative
//! decoding or a stream interval, a gateway that re-chunks) and reports usage on every chunk
//! (`stream_options.continuous_usage_stats`) is counted token by token. The simulator plays
//! such a server: four tokens per chunk on a fixed schedule.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

mod common;

use common::{json, json_lines, run_against, Simulator};

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
