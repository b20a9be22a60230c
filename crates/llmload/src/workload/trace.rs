//! Workload: trace replay — a JSONL file of arrivals, one request a line, each with its offset
//! from the start of the load and its own input and output lengths:
//!
//! ```text
//! {"offset_s": 0.0, "input_tokens": 512, "output_tokens": 128}
//! {"offset_s": 0.137, "input_tokens": 48, "output_tokens": 300}
//! ```

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// A trace that cannot be replayed, in words (file and line).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TraceError(String);

/// One arrival of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceEntry {
    /// Seconds from the start of the load.
    pub offset_s: f64,
    /// Prompt tokens.
    pub input_tokens: u32,
    /// Output tokens.
    pub output_tokens: u32,
}

/// The largest trace file read (about ten million arrivals).
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

/// Reads a trace, sorted by offset; every line must be an entry with an offset ≥ 0 and lengths
/// above 0.
pub fn load(path: &Path) -> Result<Vec<TraceEntry>, TraceError> {
    let size = std::fs::metadata(path)
        .map_err(|e| TraceError(format!("cannot read {}: {e}", path.display())))?
        .len();
    if size > MAX_TRACE_BYTES {
        return Err(TraceError(format!(
            "{}: {size} bytes, more than a trace's {MAX_TRACE_BYTES}",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| TraceError(format!("cannot read {}: {e}", path.display())))?;
    let mut entries = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let at = || format!("{}:{}", path.display(), i + 1);
        let entry: TraceEntry =
            serde_json::from_str(line).map_err(|e| TraceError(format!("{}: {e}", at())))?;
        if !(entry.offset_s.is_finite() && entry.offset_s >= 0.0)
            || entry.input_tokens == 0
            || entry.output_tokens == 0
        {
            return Err(TraceError(format!(
                "{}: offset_s must be ≥ 0 and the token counts above 0",
                at()
            )));
        }
        entries.push(entry);
    }
    if entries.is_empty() {
        return Err(TraceError(format!("{} holds no arrivals", path.display())));
    }
    entries.sort_by(|a, b| a.offset_s.total_cmp(&b.offset_s));
    Ok(entries)
}

/// The offsets of a trace's arrivals.
pub fn offsets(entries: &[TraceEntry]) -> Vec<Duration> {
    entries
        .iter()
        .map(|e| Duration::from_secs_f64(e.offset_s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_are_read_sorted_and_checked() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"offset_s\": 0.5, \"input_tokens\": 8, \"output_tokens\": 2}\n\n\
             {\"offset_s\": 0.1, \"input_tokens\": 16, \"output_tokens\": 4}\n",
        )
        .expect("write");
        let entries = load(&path).expect("valid trace");
        assert_eq!(entries[0].input_tokens, 16);
        assert_eq!(offsets(&entries)[1], Duration::from_millis(500));
        std::fs::write(
            &path,
            "{\"offset_s\": -1, \"input_tokens\": 8, \"output_tokens\": 2}\n",
        )
        .expect("write");
        assert!(load(&path)
            .expect_err("negative")
            .to_string()
            .contains(":1:"));
        std::fs::write(&path, "{\"offset\": 1}\n").expect("write");
        assert!(load(&path).is_err());
    }
}
