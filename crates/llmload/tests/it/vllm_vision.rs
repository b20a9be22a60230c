//! Images in chat against a real vision-language server: vLLM (CPU build) serving a tiny
//! random-weight Gemma 3 with a `SigLIP` tower and Gemma 3's processor, started by
//! `scripts/start-vllm.sh --vision`. Every response ok and verified: the server's prompt count is
//! the text's length plus what its images cost, as the probes at setup learned it.
//!
//! Ignored by default and not in `scripts/test.sh`: the server takes several minutes to start on
//! two cores (a multimodal warm-up besides vLLM's own). Run it with
//! `cargo test -p llmload --test it -- --include-ignored vllm_vision::`, or against a running server
//! with `LLMLOAD_VLLM_VISION_URL`.

use crate::common;

use common::{json, json_lines, run_against, VllmServer};

#[test]
#[ignore = "starts a vision-language vLLM: several minutes on two cores"]
fn vllm_counts_each_image_as_its_probes_said_and_every_response_is_verified() {
    let server = VllmServer::start("LLMLOAD_VLLM_VISION_URL", &["--vision"]);
    let out = tempfile::tempdir().expect("temp dir");
    let args = [
        "--api",
        "chat",
        "--input-tokens",
        "64",
        "--output-tokens",
        "4",
        "--images",
        "1,2",
        "--image-size",
        "224x224,64x48",
        "--concurrency",
        "2",
        "--rounds",
        "2",
        "--timeout",
        "5m",
    ];
    let (run, dir) = run_against(out.path(), "vision", &server.url, &args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 4 * 5, "a warmup and 4 measured per case");
    for r in &records {
        let ok = (r["status"].as_str(), r["verified"].as_bool());
        assert_eq!(ok, (Some("ok"), Some(true)), "{r}");
        let tokens = r["images"]["tokens"].as_u64().expect("the images' cost");
        assert!(tokens > 0, "{r}");
        assert_eq!(r["prompt_tokens"].as_u64(), Some(64 + tokens), "{r}");
        assert_eq!(r["cached_tokens"], 0, "{r}");
    }
    // Gemma 3 resizes every image: its cost does not depend on the size.
    let cost = |id: &str| {
        records
            .iter()
            .find(|r| r["case"] == id)
            .and_then(|r| r["images"]["tokens"].as_u64())
            .expect(id)
    };
    assert_eq!(
        cost("in64-c2-out4-img1x224x224"),
        cost("in64-c2-out4-img1x64x48")
    );
    assert_eq!(
        cost("in64-c2-out4-img2x224x224"),
        cost("in64-c2-out4-img2x64x48")
    );
    let summary = json(&dir.join("summary.json"));
    let counting = summary["counting"]["prompts"].as_str().expect("counting");
    assert!(counting.contains("1 image of 224×224: "), "{counting}");
}
