//! Reading another tool's saved result: the file's tool is told by its content: `vllm bench serve
//! --save-result` JSON, AIPerf's `profile_export_aiperf.json` and `profile_export.jsonl` (either,
//! or the folder holding them), GuideLLM's `benchmarks.json`.

use super::shape::{bytes, without_python_floats, OtherRun};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Reads the other tool's result at `path` (a file, or AIPerf's artifacts folder): one run, or
/// a GuideLLM file's benchmarks; refused when a value in it is impossible ([`OtherRun::check`]).
pub fn read(path: &Path) -> Result<Vec<OtherRun>, String> {
    let runs = read_any(path)?;
    for run in &runs {
        run.check()
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(runs)
}

/// Reads the other tool's result at `path`, whichever tool's it is.
fn read_any(path: &Path) -> Result<Vec<OtherRun>, String> {
    if path.is_dir() {
        let aggregate = path.join("profile_export_aiperf.json");
        let records = path.join("profile_export.jsonl");
        if !aggregate.is_file() && !records.is_file() {
            return Err(format!(
                "{} is a folder without AIPerf's profile_export_aiperf.json or \
                 profile_export.jsonl: pass the other tool's result file",
                path.display()
            ));
        }
        return super::aiperf::read(
            aggregate.is_file().then_some(aggregate.as_path()),
            records.is_file().then_some(records.as_path()),
        )
        .map(|r| vec![r]);
    }
    let text = bytes(path)?;
    let text = without_python_floats(&text);
    // JSON Lines: AIPerf's per-request records.
    if looks_like_json_lines(&text) {
        let aggregate = sibling(path, ".jsonl", "_aiperf.json");
        return super::aiperf::read(aggregate.as_deref(), Some(path)).map(|r| vec![r]);
    }
    let value: Value = serde_json::from_slice(&text).map_err(|e| {
        format!(
            "{} is not JSON (nor JSON Lines): {e}; reconcile reads vllm bench serve \
             --save-result, AIPerf's and GuideLLM's JSON exports",
            path.display()
        )
    })?;
    if value.get("benchmarks").is_some_and(Value::is_array) {
        return super::guidellm::read(path, &value);
    }
    if value.get("ttfts").is_some() || value.get("mean_ttft_ms").is_some() {
        return super::vllm::VllmResult::from_value(path, value).map(|r| vec![r.into_other()]);
    }
    if value.get("input_config").is_some()
        || value
            .get("time_to_first_token")
            .is_some_and(|m| m.get("unit").is_some())
        || value
            .get("request_latency")
            .is_some_and(|m| m.get("unit").is_some())
    {
        let records = sibling(path, "_aiperf.json", ".jsonl")
            .or_else(|| Some(path.with_file_name("profile_export.jsonl")))
            .filter(|p| p.is_file());
        return super::aiperf::from_aggregate(path, &value, records.as_deref()).map(|r| vec![r]);
    }
    Err(format!(
        "{}: not a result reconcile can read (vllm bench serve --save-result, AIPerf's \
         profile_export_aiperf.json or profile_export.jsonl, GuideLLM's benchmarks.json)",
        path.display()
    ))
}

/// Whether `text`'s first line is a whole JSON object and a second one follows, or its only
/// line is an object with AIPerf's `metadata` and `metrics`.
fn looks_like_json_lines(text: &[u8]) -> bool {
    let mut lines = text
        .split(|&c| c == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    let Some(first) = lines.next() else {
        return false;
    };
    match serde_json::from_slice::<Value>(first) {
        Ok(v) if v.is_object() => {
            lines.next().is_some() || (v.get("metadata").is_some() && v.get("metrics").is_some())
        }
        _ => false,
    }
}

/// `path` with its name's ending `from` replaced by `to`, where that file exists.
fn sibling(path: &Path, from: &str, to: &str) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(from)?;
    let other = path.with_file_name(format!("{stem}{to}"));
    other.is_file().then_some(other)
}

#[cfg(test)]
mod tests {
    use super::super::shape::Dialect;
    use super::*;

    #[test]
    fn each_tool_s_file_is_told_by_its_content() {
        let dir = tempfile::tempdir().expect("temp dir");
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).expect("write");
            p
        };
        let vllm = write("v.json", r#"{"backend":"openai","mean_ttft_ms":5.0}"#);
        assert_eq!(read(&vllm).expect("vllm")[0].dialect, Dialect::Vllm);
        let aiperf = write(
            "a_aiperf.json",
            r#"{"time_to_first_token":{"unit":"ms","avg":4.0}}"#,
        );
        let run = &read(&aiperf).expect("aiperf")[0];
        assert_eq!(run.dialect, Dialect::Aiperf);
        assert_eq!(run.figures["time_to_first_token_avg_ms"], 4.0);
        let guidellm = write("g.json", r#"{"benchmarks":[]}"#);
        let e = read(&guidellm).expect_err("no benchmark");
        assert!(e.contains("no benchmark"), "{e}");
        let unknown = write("x.json", r#"{"rows":[]}"#);
        assert!(read(&unknown)
            .expect_err("unknown")
            .contains("not a result"));
        let text = write("y.json", "not json");
        assert!(read(&text).expect_err("not json").contains("not JSON"));
        assert!(read(dir.path())
            .expect_err("empty folder")
            .contains("folder"));
        assert!(read(&dir.path().join("none.json")).is_err());
    }
}
