//! AIPerf's exports: `profile_export_aiperf.json` (each metric's statistics with its unit, the
//! request count, the configuration) and `profile_export.jsonl` (one record per request: its
//! metadata, its metrics each as `{value, unit}`, its error). Either is read alone; with both
//! the figures come from the first and the per-request values from the second.

use super::shape::{number, single, to_ms, Dialect, OtherResponse, OtherRun, Values};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// AIPerf's per-request latency metrics reconciling compares, by AIPerf's names.
const METRICS: [&str; 5] = [
    "time_to_first_token",
    "time_to_second_token",
    "inter_token_latency",
    "inter_chunk_latency",
    "request_latency",
];

/// The statistics of its aggregate file reconciling compares: AIPerf's key and the row's.
const STATS: [(&str, &str); 3] = [("avg", "avg"), ("p50", "p50"), ("p99", "p99")];

/// Reads AIPerf's aggregate file `aggregate` and per-request file `records` (at least one).
pub fn read(aggregate: Option<&Path>, records: Option<&Path>) -> Result<OtherRun, String> {
    if let Some(path) = aggregate {
        let text = super::shape::without_python_floats(&super::shape::bytes(path)?);
        let value: Value = serde_json::from_slice(&text)
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        return from_aggregate(path, &value, records);
    }
    let path = records.ok_or("no AIPerf file to read")?;
    let mut run = base(&format!("AIPerf ({})", name(path)));
    add_records(&mut run, path)?;
    run.completed = Some(run.responses.len() as u64);
    Ok(run)
}

/// The run of AIPerf's aggregate `value` (read from `path`), with the per-request values of
/// `records` where given.
pub fn from_aggregate(
    path: &Path,
    value: &Value,
    records: Option<&Path>,
) -> Result<OtherRun, String> {
    if !value.is_object() {
        return Err(format!("{} is not AIPerf's aggregate JSON", path.display()));
    }
    let tool = match records {
        Some(r) => format!("AIPerf ({} and {})", name(path), name(r)),
        None => format!("AIPerf ({})", name(path)),
    };
    let mut run = base(&tool);
    for metric in METRICS {
        let Some(m) = value.get(metric) else {
            continue;
        };
        let unit = m.get("unit").and_then(Value::as_str);
        for (key, row) in STATS {
            if let Some(ms) = number(m, &format!("/{key}")).and_then(|v| to_ms(v, unit)) {
                run.figures.insert(format!("{metric}_{row}_ms"), ms);
            }
        }
    }
    run.output_throughput = number(value, "/output_token_throughput/avg");
    run.completed = number(value, "/request_count/avg").map(crate::num::to_u64);
    // AIPerf 0.13 names its phases, the profiling one with its concurrency; earlier versions
    // had one `loadgen`.
    let profiling = value
        .pointer("/input_config/phases")
        .and_then(Value::as_array)
        .and_then(|p| {
            p.iter()
                .find(|p| p.get("kind").and_then(Value::as_str) == Some("profiling"))
        });
    run.concurrency = profiling
        .and_then(|p| number(p, "/concurrency"))
        .or_else(|| number(value, "/input_config/loadgen/concurrency"))
        .map(crate::num::to_u64);
    if value.get("was_cancelled").and_then(Value::as_bool) == Some(true) {
        run.notes.push(
            "AIPerf says its benchmark was stopped before it completed (`was_cancelled`)".into(),
        );
    }
    if run.figures.is_empty() {
        return Err(format!(
            "{} holds none of AIPerf's latency metrics ({})",
            path.display(),
            METRICS.join(", ")
        ));
    }
    match records {
        Some(r) => add_records(&mut run, r)?,
        None => run.notes.push(
            "no profile_export.jsonl beside the aggregate file: the lengths AIPerf sent cannot \
             be checked, and its figures have no interval"
                .into(),
        ),
    }
    Ok(run)
}

/// An AIPerf run with nothing read yet.
fn base(tool: &str) -> OtherRun {
    OtherRun {
        dialect: Dialect::Aiperf,
        tool: tool.to_owned(),
        figures: BTreeMap::new(),
        ..OtherRun::default()
    }
}

/// The file name of `path`, for the tool's description.
fn name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}

/// Adds the successful profiling requests of AIPerf's per-request file `path` to `run`.
fn add_records(run: &mut OtherRun, path: &Path) -> Result<(), String> {
    let text = super::shape::without_python_floats(&super::shape::bytes(path)?);
    let (mut failed, mut cancelled, mut other_phase) = (0usize, 0usize, 0usize);
    let mut named_phases = false;
    for (i, line) in text.split(|&c| c == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let record: Value = serde_json::from_slice(line)
            .map_err(|e| format!("{} line {}: not a JSON record: {e}", path.display(), i + 1))?;
        let Some(metrics) = record.get("metrics").filter(|m| m.is_object()) else {
            return Err(format!(
                "{} line {}: no `metrics` object: not AIPerf's profile_export.jsonl",
                path.display(),
                i + 1
            ));
        };
        let meta = record.get("metadata");
        let phase = meta
            .and_then(|m| m.get("benchmark_phase"))
            .and_then(Value::as_str);
        named_phases |= phase.is_some();
        if phase.is_some_and(|p| p != "profiling") {
            other_phase += 1;
            continue;
        }
        if meta
            .and_then(|m| m.get("was_cancelled"))
            .and_then(Value::as_bool)
            == Some(true)
        {
            cancelled += 1;
            continue;
        }
        if record.get("error").is_some_and(|e| !e.is_null()) {
            failed += 1;
            continue;
        }
        run.responses.push(response(metrics));
    }
    if run.responses.is_empty() {
        return Err(format!(
            "{} holds no successful profiling request ({failed} failed, {cancelled} cancelled, \
             {other_phase} of another phase)",
            path.display()
        ));
    }
    // Records that name their phase say how many were not profiling: the warm-up.
    run.warmup_requests = named_phases.then_some(other_phase as u64);
    if failed + cancelled > 0 {
        run.notes.push(format!(
            "AIPerf's records hold {failed} failed and {cancelled} cancelled requests, left out \
             as llmload leaves out its own"
        ));
    }
    Ok(())
}

/// One successful request's lengths and values (ms) from its `metrics`.
fn response(metrics: &Value) -> OtherResponse {
    let unit = |name: &str| {
        metrics
            .get(name)
            .and_then(|m| m.get("unit"))
            .and_then(Value::as_str)
    };
    let scalar =
        |name: &str| number(metrics, &format!("/{name}/value")).and_then(|v| to_ms(v, unit(name)));
    let count = |name: &str| number(metrics, &format!("/{name}/value"));
    let chunks: Vec<f64> = metrics
        .pointer("/inter_chunk_latency/value")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_f64)
                .filter_map(|v| to_ms(v, unit("inter_chunk_latency")))
                .collect()
        })
        .unwrap_or_default();
    let mut values: Vec<Values> = METRICS
        .iter()
        .filter(|&&m| m != "inter_chunk_latency")
        .filter_map(|&m| single(m, scalar(m)))
        .collect();
    if !chunks.is_empty() {
        values.push(Values {
            figure: "inter_chunk_latency",
            values: chunks,
            weight: 1.0,
        });
    }
    OtherResponse {
        // The server's counts where AIPerf kept them (its usage), else its tokenizer's.
        prompt_tokens: count("usage_prompt_tokens").or_else(|| count("input_sequence_length")),
        output_tokens: count("usage_completion_tokens")
            .or_else(|| count("output_sequence_length"))
            .or_else(|| count("output_token_count")),
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{"metadata":{"benchmark_phase":"profiling","was_cancelled":false},
        "metrics":{"input_sequence_length":{"value":32,"unit":"tokens"},
        "time_to_first_token":{"value":10.0,"unit":"ms"},
        "time_to_second_token":{"value":2.0,"unit":"ms"},
        "inter_chunk_latency":{"value":[2.0,2.0,4.0],"unit":"ms"},
        "output_sequence_length":{"value":4,"unit":"tokens"},
        "inter_token_latency":{"value":2.666,"unit":"ms"},
        "request_latency":{"value":0.018,"unit":"sec"}},"error":null}"#;

    #[test]
    fn the_aggregate_and_the_records_are_read_together() {
        let dir = tempfile::tempdir().expect("temp dir");
        let aggregate = dir.path().join("profile_export_aiperf.json");
        std::fs::write(
            &aggregate,
            r#"{"time_to_first_token":{"unit":"ms","avg":10.0,"p50":10.0,"p99":11.0},
               "request_latency":{"unit":"ms","avg":18.0,"p50":18.0},
               "output_token_throughput":{"unit":"tokens/sec","avg":220.5},
               "request_count":{"unit":"requests","avg":3.0},
               "input_config":{"phases":[{"kind":"warmup","concurrency":1},
                                         {"kind":"profiling","concurrency":2}]}}"#,
        )
        .expect("write");
        let records = dir.path().join("profile_export.jsonl");
        let failed = r#"{"metadata":{"benchmark_phase":"profiling"},"metrics":{},
            "error":{"code":500,"type":"InternalServerError","message":"x"}}"#;
        let warmup = RECORD.replace("profiling", "warmup");
        let lines = [RECORD, RECORD, failed, &warmup].map(|l| l.replace('\n', " "));
        std::fs::write(&records, lines.join("\n")).expect("write");
        let run = &read(Some(&aggregate), Some(&records)).expect("both files");
        assert_eq!(run.dialect, Dialect::Aiperf);
        assert_eq!(
            (run.concurrency, run.completed, run.output_throughput),
            (Some(2), Some(3), Some(220.5))
        );
        assert_eq!(run.figures["time_to_first_token_p99_ms"], 11.0);
        // Two successful profiling records; the failure and the warmup left out.
        assert_eq!(run.responses.len(), 2);
        let r = &run.responses[0];
        assert_eq!((r.prompt_tokens, r.output_tokens), (Some(32.0), Some(4.0)));
        let latency = r.values.iter().find(|v| v.figure == "request_latency");
        assert_eq!(latency.expect("a latency").values, vec![18.0]);
        let chunks = r.values.iter().find(|v| v.figure == "inter_chunk_latency");
        assert_eq!(chunks.expect("chunks").values.len(), 3);
        assert!(
            run.notes.iter().any(|n| n.contains("1 failed")),
            "{:?}",
            run.notes
        );
        // The records file alone: its successes are the count, the figures computed from them.
        let alone = read(None, Some(&records)).expect("records alone");
        assert_eq!(alone.completed, Some(2));
        assert!(alone.figures.is_empty());
    }

    #[test]
    fn a_records_file_without_a_success_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let records = dir.path().join("profile_export.jsonl");
        let cancelled = RECORD.replace("\"was_cancelled\":false", "\"was_cancelled\":true");
        std::fs::write(&records, cancelled.replace('\n', " ") + "\n").expect("write");
        let e = read(None, Some(&records)).expect_err("none succeeded");
        assert!(e.contains("1 cancelled"), "{e}");
        std::fs::write(&records, "{\"metadata\":{}}\n{}\n").expect("write");
        let e = read(None, Some(&records)).expect_err("no metrics");
        assert!(e.contains("no `metrics`"), "{e}");
    }

    #[test]
    fn a_real_aiperf_export_is_read_as_aiperf_wrote_it() {
        // AIPerf 0.13.0 against llama-server: 12 requests of 64 prompt and 16 output tokens at
        // concurrency 2, after one warmup request.
        let dir = tempfile::tempdir().expect("temp dir");
        let aggregate_text = include_str!("fixtures/aiperf-profile_export_aiperf.json");
        let aggregate = dir.path().join("profile_export_aiperf.json");
        let records = dir.path().join("profile_export.jsonl");
        std::fs::write(&aggregate, aggregate_text).expect("write");
        std::fs::write(
            &records,
            include_str!("fixtures/aiperf-profile_export.jsonl"),
        )
        .expect("write");
        let run = read(Some(&aggregate), Some(&records)).expect("AIPerf's files");
        let file: Value = serde_json::from_str(aggregate_text).expect("JSON");
        assert_eq!((run.concurrency, run.completed), (Some(2), Some(12)));
        for (metric, stat) in [
            ("time_to_first_token", "p99"),
            ("inter_chunk_latency", "avg"),
        ] {
            assert_eq!(
                run.figures[&format!("{metric}_{stat}_ms")],
                file[metric][stat].as_f64().expect("a figure")
            );
        }
        assert_eq!(
            run.output_throughput,
            file["output_token_throughput"]["avg"].as_f64()
        );
        // Thirteen records: the warmup one left out.
        assert_eq!(run.responses.len(), 12);
        for r in &run.responses {
            // The server's counts (AIPerf's tokenizer counted 63 prompt tokens).
            assert_eq!((r.prompt_tokens, r.output_tokens), (Some(64.0), Some(16.0)));
            let chunks = r.values.iter().find(|v| v.figure == "inter_chunk_latency");
            assert_eq!(chunks.expect("gaps").values.len(), 15);
        }
        assert!(run.notes.is_empty(), "{:?}", run.notes);
    }
}
