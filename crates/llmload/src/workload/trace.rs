//! Workload: trace replay — a JSONL file of arrivals, one request a line, each with its offset
//! from the start of the load and its own input and output lengths:
//!
//! ```text
//! {"offset_s": 0.0, "input_tokens": 512, "output_tokens": 128}
//! {"offset_s": 0.137, "input_tokens": 48, "output_tokens": 300}
//! ```
//!
//! or in the layout of the public Mooncake traces: `timestamp` in milliseconds, the lengths, and
//! `hash_ids`, the ids of the prompt's blocks of a fixed number of tokens (chained: equal ids at
//! the same place mean equal prefixes):
//!
//! ```text
//! {"timestamp": 0, "input_length": 1100, "output_length": 40, "hash_ids": [1, 2, 3]}
//! {"timestamp": 250, "input_length": 1300, "output_length": 12, "hash_ids": [1, 2, 4]}
//! ```
//!
//! A CSV file in the layout of the public Azure LLM inference traces, or with the Mooncake
//! fields as columns, is read too (`csv.rs`).
//!
//! Each arrival's shared prefix is worked out here, in offset order: the leading blocks it has in
//! common with any earlier arrival, counted in tokens.

mod csv;

use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// A trace that cannot be replayed, in words (file and line).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TraceError(String);

/// One arrival of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEntry {
    /// Seconds from the start of the load.
    pub offset_s: f64,
    /// Prompt tokens.
    pub input_tokens: u32,
    /// Output tokens.
    pub output_tokens: u32,
    /// The ids of the prompt's blocks (`hash_ids`); empty for a trace without them.
    pub blocks: Vec<u64>,
    /// Tokens at the head of the prompt that an earlier arrival's prompt has too: its leading
    /// blocks in common with one.
    pub shared_tokens: u32,
}

/// A line as written, in either layout.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    offset_s: Option<f64>,
    input_tokens: Option<u32>,
    output_tokens: Option<u32>,
    timestamp: Option<f64>,
    input_length: Option<u32>,
    output_length: Option<u32>,
    hash_ids: Option<Vec<u64>>,
}

/// The largest trace file read (about ten million arrivals).
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

/// Tokens per `hash_ids` block unless `--trace-block-tokens` says otherwise (the Mooncake
/// traces' block).
pub const DEFAULT_BLOCK_TOKENS: u32 = 512;

/// Reads a trace (JSONL, or CSV by its name or header), sorted by offset; every line must be an
/// entry with an offset ≥ 0 and lengths above 0, and its blocks (of `block_tokens` each) no more
/// than its prompt needs. A CSV trace's offsets count from its earliest row.
pub fn load(path: &Path, block_tokens: u32) -> Result<Vec<TraceEntry>, TraceError> {
    let text = super::read_bounded(path, MAX_TRACE_BYTES, "a trace").map_err(TraceError)?;
    let parsed = if csv::detect(path, &text) {
        csv::parse(&text, block_tokens)
    } else {
        parse(&text, block_tokens)
    };
    let mut entries = parsed.map_err(|e| TraceError(format!("{}{}", path.display(), e.0)))?;
    if entries.is_empty() {
        return Err(TraceError(format!("{} holds no arrivals", path.display())));
    }
    entries.sort_by(|a, b| a.offset_s.total_cmp(&b.offset_s));
    share(&mut entries, block_tokens);
    Ok(entries)
}

/// The entries of a trace's text, in file order, timestamps counted from the earliest; errors
/// start with `:LINE: `.
fn parse(text: &str, block_tokens: u32) -> Result<Vec<TraceEntry>, TraceError> {
    let mut entries = Vec::new();
    let mut timestamps: Option<bool> = None;
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let fail = |why: String| TraceError(format!(":{}: {why}", i + 1));
        let line: Line = serde_json::from_str(line).map_err(|e| fail(e.to_string()))?;
        let absolute = line.timestamp.is_some();
        if *timestamps.get_or_insert(absolute) != absolute {
            return Err(fail(
                "the trace mixes lines of offsets (offset_s) with lines of timestamps \
                 (timestamp): use one layout"
                    .into(),
            ));
        }
        entries.push(entry(line, block_tokens).map_err(fail)?);
    }
    if timestamps == Some(true) {
        // Timestamps (the Mooncake layout) are absolute: the load starts at the earliest.
        let first = entries
            .iter()
            .map(|e| e.offset_s)
            .fold(f64::INFINITY, f64::min);
        for e in &mut entries {
            e.offset_s -= first;
        }
    }
    Ok(entries)
}

/// The entry of a line in one layout or the other, or why it is none.
fn entry(line: Line, block_tokens: u32) -> Result<TraceEntry, String> {
    let fields = (
        line.offset_s,
        line.input_tokens,
        line.output_tokens,
        line.timestamp,
        line.input_length,
        line.output_length,
    );
    let (offset_s, input, output) = match fields {
        (Some(o), Some(i), Some(out), None, None, None) if line.hash_ids.is_none() => (o, i, out),
        (None, None, None, Some(t), Some(i), Some(out)) => (t / 1e3, i, out),
        _ => {
            return Err(
                "a line is {offset_s, input_tokens, output_tokens} or {timestamp, \
                        input_length, output_length, hash_ids}"
                    .into(),
            )
        }
    };
    let blocks = line.hash_ids.unwrap_or_default();
    checked(offset_s, input, output, blocks, block_tokens)
}

/// An entry of a trace in any layout, if its offset is ≥ 0, its lengths above 0 and its blocks
/// (of `block_tokens` each) no more than its prompt needs; else why not.
fn checked(
    offset_s: f64,
    input: u32,
    output: u32,
    blocks: Vec<u64>,
    block_tokens: u32,
) -> Result<TraceEntry, String> {
    if !(offset_s.is_finite() && offset_s >= 0.0) || input == 0 || output == 0 {
        return Err("the offset must be ≥ 0 and the token counts above 0".into());
    }
    let room = u64::from(input).div_ceil(u64::from(block_tokens.max(1)));
    if blocks.len() as u64 > room {
        return Err(format!(
            "{} hash_ids blocks of {block_tokens} tokens do not fit in {input} prompt tokens",
            blocks.len()
        ));
    }
    Ok(TraceEntry {
        offset_s,
        input_tokens: input,
        output_tokens: output,
        blocks,
        shared_tokens: 0,
    })
}

/// Sets each entry's shared prefix: for each of its leading blocks whose chain of ids an earlier
/// entry had, the tokens of that block the earlier sequences held. A server's cache keeps what a
/// request generated after its prompt too, and the model may well generate the text that
/// continues a block cut short: an entry's last block counts its output tokens as well, up to
/// the whole block. (Past a block, the next block's opening token is not text that follows.)
fn share(entries: &mut [TraceEntry], block_tokens: u32) {
    // Chain key → the most tokens of that block any sequence so far held.
    let mut seen: HashMap<u64, u32> = HashMap::new();
    for entry in entries {
        let mut chain = 0u64;
        let mut shared = 0u32;
        let mut sharing = true;
        let last = entry.blocks.len().saturating_sub(1);
        for (i, &id) in entry.blocks.iter().enumerate() {
            chain = super::prompt::splitmix64(chain ^ id);
            let start = crate::num::count(i).saturating_mul(block_tokens);
            let held = entry.input_tokens.saturating_sub(start).min(block_tokens);
            let before = seen.get(&chain).copied().unwrap_or(0);
            if sharing {
                shared += held.min(before);
                sharing = before >= held;
            }
            let reach = if i == last {
                held.saturating_add(entry.output_tokens).min(block_tokens)
            } else {
                held
            };
            seen.insert(chain, before.max(reach));
        }
        entry.shared_tokens = shared;
    }
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
        let entries = load(&path, DEFAULT_BLOCK_TOKENS).expect("valid trace");
        assert_eq!(entries[0].input_tokens, 16);
        assert_eq!(offsets(&entries)[1], Duration::from_millis(500));
        assert!(entries.iter().all(|e| e.shared_tokens == 0));
        std::fs::write(
            &path,
            "{\"offset_s\": -1, \"input_tokens\": 8, \"output_tokens\": 2}\n",
        )
        .expect("write");
        assert!(load(&path, DEFAULT_BLOCK_TOKENS)
            .expect_err("negative")
            .to_string()
            .contains(":1:"));
        std::fs::write(&path, "{\"offset\": 1}\n").expect("write");
        assert!(load(&path, DEFAULT_BLOCK_TOKENS).is_err());
    }

    fn mooncake(lines: &[(u32, u32, &str)]) -> Result<Vec<TraceEntry>, TraceError> {
        let text: Vec<String> = lines
            .iter()
            .enumerate()
            .map(|(i, (input, output, ids))| {
                format!(
                    "{{\"timestamp\": {}, \"input_length\": {input}, \"output_length\": \
                     {output}, \"hash_ids\": [{ids}]}}",
                    1000 + i * 250
                )
            })
            .collect();
        let text = text.join("\n");
        let mut entries = parse(&text, 4)?;
        share(&mut entries, 4);
        Ok(entries)
    }

    #[test]
    fn mooncake_lines_share_their_common_leading_blocks() {
        let entries = mooncake(&[
            (8, 2, "1, 2"),
            (10, 3, "1, 2, 9"),
            (8, 2, "1, 3"),
            (6, 2, "5, 2"),
            (12, 2, "1, 2, 9"),
        ])
        .expect("valid");
        // Timestamps count from the earliest (1000 ms here).
        assert!(entries[0].offset_s.abs() < 1e-12);
        assert!((entries[1].offset_s - 0.25).abs() < 1e-9);
        let shared: Vec<u32> = entries.iter().map(|e| e.shared_tokens).collect();
        // [1,2,9] after [1,2]: two blocks; [1,3]: one; [5,2]: none (a chain, not a set);
        // the last [1,2,9] holds 4 tokens of block 9, the earlier one 2 and its 3 outputs.
        assert_eq!(shared, vec![0, 8, 4, 0, 12]);
        let short_answer = mooncake(&[(10, 1, "1, 2, 9"), (12, 2, "1, 2, 9")]).expect("valid");
        assert_eq!(short_answer[1].shared_tokens, 4 + 4 + 3);
        assert_eq!(entries[2].blocks, vec![1, 3]);
    }

    #[test]
    fn bad_mooncake_lines_are_named() {
        let e = mooncake(&[(8, 2, "1, 2"), (8, 2, "1, 2, 3")]).expect_err("too many blocks");
        assert!(e.to_string().starts_with(":2: 3 hash_ids blocks"), "{e}");
        let mixed = "{\"timestamp\": 0, \"input_tokens\": 8, \"output_length\": 2}\n";
        assert!(parse(mixed, 4)
            .expect_err("mixed layouts")
            .to_string()
            .starts_with(":1: a line is"));
        let both = "{\"offset_s\": 0, \"input_tokens\": 8, \"output_tokens\": 2}\n\
                    {\"timestamp\": 5, \"input_length\": 8, \"output_length\": 2}\n";
        assert!(parse(both, 4)
            .expect_err("two layouts")
            .to_string()
            .starts_with(":2: the trace mixes"));
    }

    #[test]
    fn timestamps_without_blocks_count_from_the_earliest() {
        let text = "{\"timestamp\": 7250, \"input_length\": 8, \"output_length\": 2}\n\
                    {\"timestamp\": 5000, \"input_length\": 16, \"output_length\": 4}\n";
        let entries = parse(text, 4).expect("valid");
        let offsets: Vec<f64> = entries.iter().map(|e| e.offset_s).collect();
        assert_eq!(offsets, vec![2.25, 0.0]);
        assert!(entries.iter().all(|e| e.blocks.is_empty()));
    }
}
