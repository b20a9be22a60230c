//! GuideLLM's `benchmarks.json`: `benchmarks`, one per strategy it ran (a sweep holds several),
//! each with its configuration (`config.strategy`), its metrics (each a distribution summary per
//! status: `successful.mean`, `.median`, `.percentiles.p99`, …) and its requests by status
//! (`requests.successful`: each with its computed `time_to_first_token_ms`,
//! `inter_token_latency_ms`, `time_per_output_token_ms`, `request_latency` in seconds,
//! `prompt_tokens`, `output_tokens`), which GuideLLM may have sampled.

use super::shape::{number, single, weighted, Dialect, OtherResponse, OtherRun};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// GuideLLM's metrics reconciling compares: its key, the row's figure, and the factor to ms.
const METRICS: [(&str, &str, f64); 4] = [
    ("time_to_first_token_ms", "time_to_first_token", 1.0),
    ("inter_token_latency_ms", "inter_token_latency", 1.0),
    ("time_per_output_token_ms", "time_per_output_token", 1.0),
    ("request_latency", "request_latency", 1e3),
];

/// The benchmarks of GuideLLM's report `value`, read from `path`.
pub fn read(path: &Path, value: &Value) -> Result<Vec<OtherRun>, String> {
    let benchmarks = value
        .get("benchmarks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if benchmarks.is_empty() {
        return Err(format!(
            "{} holds no benchmark (its `benchmarks` list is empty)",
            path.display()
        ));
    }
    let total = benchmarks.len();
    benchmarks
        .iter()
        .enumerate()
        .map(|(i, b)| benchmark(path, b, i, total))
        .collect()
}

/// The `i`th of `total` benchmarks, `b`.
fn benchmark(path: &Path, b: &Value, i: usize, total: usize) -> Result<OtherRun, String> {
    let metrics = b.get("metrics").filter(|m| m.is_object()).ok_or_else(|| {
        format!(
            "{}: benchmark {} has no `metrics`: not GuideLLM's benchmarks.json",
            path.display(),
            i + 1
        )
    })?;
    let strategy = b.pointer("/config/strategy");
    let kind = strategy
        .and_then(|s| s.get("type_"))
        .and_then(Value::as_str)
        .unwrap_or("strategy not given");
    let streams = strategy
        .and_then(|s| s.get("streams"))
        .and_then(Value::as_u64);
    let mut figures = BTreeMap::new();
    for (key, figure, scale) in METRICS {
        for (stat, pointer) in [
            ("mean", "/successful/mean"),
            ("median", "/successful/median"),
            ("p99", "/successful/percentiles/p99"),
        ] {
            if let Some(v) = metrics.get(key).and_then(|m| number(m, pointer)) {
                figures.insert(format!("{figure}_{stat}_ms"), v * scale);
            }
        }
    }
    let successful = b
        .pointer("/requests/successful")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let responses: Vec<OtherResponse> = successful.iter().map(response).collect();
    let completed = number(metrics, "/request_totals/successful").map(crate::num::to_u64);
    let mut notes = Vec::new();
    if let Some(c) = completed.filter(|&c| c > responses.len() as u64) {
        notes.push(format!(
            "GuideLLM kept {} of its {c} successful requests (`--sample-requests`): the lengths \
             and the other side's intervals come from that sample",
            responses.len()
        ));
    }
    if responses.is_empty() {
        notes.push(
            "the file holds no successful request (GuideLLM's sample is empty): the lengths \
             cannot be checked, and its figures have no interval"
                .into(),
        );
    }
    let tool = match (total, streams) {
        (1, Some(s)) => format!("GuideLLM ({kind}, {s} streams)"),
        (1, None) => format!("GuideLLM ({kind})"),
        (_, Some(s)) => format!(
            "GuideLLM (benchmark {} of {total}: {kind}, {s} streams)",
            i + 1
        ),
        (_, None) => format!("GuideLLM (benchmark {} of {total}: {kind})", i + 1),
    };
    Ok(OtherRun {
        dialect: Dialect::Guidellm,
        tool,
        concurrency: streams.filter(|_| kind == "concurrent" || kind == "synchronous"),
        completed,
        responses,
        figures,
        output_throughput: number(metrics, "/output_tokens_per_second/successful/mean"),
        notes,
        warmup_requests: None,
    })
}

/// One successful request: its lengths and values (ms), GuideLLM's per-token figures weighted
/// by its tokens as GuideLLM weights them.
fn response(r: &Value) -> OtherResponse {
    let n = number(r, "/output_tokens");
    let value = |key: &str| number(r, &format!("/{key}"));
    OtherResponse {
        prompt_tokens: number(r, "/prompt_tokens"),
        output_tokens: n,
        values: [
            single("time_to_first_token", value("time_to_first_token_ms")),
            weighted(
                "inter_token_latency",
                value("inter_token_latency_ms"),
                n.map_or(0.0, |n| n - 1.0),
            ),
            weighted(
                "time_per_output_token",
                value("time_per_output_token_ms"),
                n.unwrap_or(0.0),
            ),
            single("request_latency", value("request_latency").map(|s| s * 1e3)),
        ]
        .into_iter()
        .flatten()
        .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distribution(mean: f64) -> String {
        format!(
            r#"{{"successful":{{"mean":{mean},"median":{mean},"count":2,
               "percentiles":{{"p99":{mean}}}}}}}"#
        )
    }

    #[test]
    fn a_sweep_s_benchmarks_are_read_each_with_its_requests() {
        let request = r#"{"prompt_tokens":32,"output_tokens":5,"time_to_first_token_ms":10.0,
            "inter_token_latency_ms":2.0,"time_per_output_token_ms":3.6,
            "request_latency":0.019}"#;
        let one = format!(
            r#"{{"config":{{"strategy":{{"type_":"concurrent","streams":2}}}},
               "metrics":{{"request_totals":{{"successful":4}},
               "time_to_first_token_ms":{},"inter_token_latency_ms":{},
               "request_latency":{},"output_tokens_per_second":{}}},
               "requests":{{"successful":[{request},{request}]}}}}"#,
            distribution(10.0),
            distribution(2.0),
            distribution(0.019),
            distribution(105.0)
        );
        let text = format!(
            r#"{{"benchmarks":[{one},{}]}}"#,
            one.replace("\"streams\":2", "\"streams\":4")
        );
        let value: Value = serde_json::from_str(&text).expect("JSON");
        let runs = read(Path::new("b.json"), &value).expect("two benchmarks");
        assert_eq!(runs.len(), 2);
        let (a, b) = (&runs[0], &runs[1]);
        assert_eq!((a.concurrency, b.concurrency), (Some(2), Some(4)));
        assert!(b.tool.contains("benchmark 2 of 2"), "{}", b.tool);
        assert_eq!(a.completed, Some(4));
        assert_eq!(a.figures["request_latency_mean_ms"], 19.0);
        assert_eq!(a.output_throughput, Some(105.0));
        // Its requests were sampled: 2 of 4.
        assert!(a.notes[0].contains("kept 2 of its 4"), "{:?}", a.notes);
        let itl = a.responses[0]
            .values
            .iter()
            .find(|v| v.figure == "inter_token_latency")
            .expect("an ITL");
        assert_eq!((itl.values[0], itl.weight), (2.0, 4.0));
        let empty: Value = serde_json::from_str(r#"{"benchmarks":[{"config":{}}]}"#).expect("JSON");
        let e = read(Path::new("b.json"), &empty).expect_err("no metrics");
        assert!(e.contains("no `metrics`"), "{e}");
    }

    #[test]
    fn a_real_guidellm_report_is_read_as_guidellm_wrote_it() {
        // GuideLLM 0.8.1 against llama-server: 12 requests of 64 prompt and 16 output tokens
        // asked for, 2 concurrent streams.
        let text = include_str!("fixtures/guidellm-benchmarks.json");
        let value: Value = serde_json::from_str(text).expect("JSON");
        let runs = read(Path::new("benchmarks.json"), &value).expect("a report");
        assert_eq!(runs.len(), 1);
        let run = &runs[0];
        assert_eq!((run.concurrency, run.completed), (Some(2), Some(12)));
        assert_eq!(run.tool, "GuideLLM (concurrent, 2 streams)");
        let metrics = &value["benchmarks"][0]["metrics"];
        assert_eq!(
            run.figures["time_to_first_token_median_ms"],
            metrics["time_to_first_token_ms"]["successful"]["median"]
                .as_f64()
                .expect("a median")
        );
        let latency = metrics["request_latency"]["successful"]["mean"]
            .as_f64()
            .expect("a mean");
        assert!((run.figures["request_latency_mean_ms"] - latency * 1e3).abs() < 1e-9);
        assert_eq!(run.responses.len(), 12);
        for r in &run.responses {
            assert_eq!(r.output_tokens, Some(16.0));
            let itl = r.values.iter().find(|v| v.figure == "inter_token_latency");
            assert_eq!(itl.expect("an ITL").weight, 15.0);
        }
        // Every request kept: no sample to warn of.
        assert!(run.notes.is_empty(), "{:?}", run.notes);
    }
}
