//! The vLLM group's check of `--cancel-after`: abandoned streams classified exactly, and vLLM's
//! own generated-token counter showing that it stopped generating for them.

use super::common::{count as n, json, measured, run_against};
use super::Vllm;
use std::path::Path;

/// Streams abandoned after 4 tokens: the drawn ones `abandoned` with 4 tokens or a few more (a
/// chunk may carry more than one), no error, the others ok and verified; and vLLM's own
/// generated-token counter shows that it stopped generating for them when they closed (it grew
/// by the others' tokens and about what the abandoned ones received, far short of what they
/// asked), as the report says.
pub(super) fn assert_cancels(vllm: &Vllm, out: &Path) {
    let campaign: Vec<&str> = "--input-tokens 64 --concurrency 2 --output-tokens 32 --rounds 3 \
         --seed 3 --cancel-after 4 --cancel-share 0.5"
        .split_whitespace()
        .collect();
    let (run, dir) = run_against(out, "cancel", &vllm.url, &campaign);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 6);
    let mut abandoned: u64 = 0;
    for r in &records {
        if r["cancel_after"].is_null() {
            assert_eq!(
                (r["status"].as_str(), r["verified"].as_bool()),
                (Some("ok"), Some(true)),
                "{r}"
            );
            assert_eq!(r["output_tokens"], 32, "{r}");
            continue;
        }
        abandoned += 1;
        assert_eq!(r["status"], "abandoned", "{r}");
        assert!(r["error_kind"].is_null() && r["e2e_ms"].is_null(), "{r}");
        let streamed = n(&r["streamed_tokens"]);
        assert!((4..32).contains(&streamed), "{r}");
    }
    assert!(abandoned > 0 && abandoned < 6, "{abandoned}");
    let received: u64 = records
        .iter()
        .filter(|r| r["status"] == "abandoned")
        .map(|r| n(&r["streamed_tokens"]))
        .sum();
    let summary = json(&dir.join("summary.json"));
    let grown = summary["telemetry"]["server_metrics"]["delta"]["vllm:generation_tokens_total"]
        .as_f64()
        .expect("vLLM's generated-token counter grew");
    let case = &summary["cases"][0]["abandoned"];
    // The warmup's 32 and the ok responses' 32 each.
    let others = 32 * (1 + 6 - abandoned);
    assert_eq!(case["others_generated_tokens"], others, "{case}");
    let grown: u64 = format!("{grown:.0}").parse().expect("a whole count");
    let left = grown - others;
    assert!(
        left >= received && left <= received + 2 * abandoned,
        "vLLM generated {left} tokens for {abandoned} abandoned streams that received {received}"
    );
    assert!(
        run.stdout.contains(&format!(
            "leaves {left} for the {abandoned} abandoned streams, of {} they asked for",
            32 * abandoned
        )),
        "{}",
        run.stdout
    );
}
