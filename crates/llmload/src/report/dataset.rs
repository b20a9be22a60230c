//! The sentence that names a dataset run's prompts (file, length, digest, use), which every
//! format writes with the counting lines ([`super::text::counting_lines`]).

use crate::summary::DatasetUsed;

/// "Dataset: prompts.jsonl (12,345 bytes, FNV-1a 64 digest 0123456789abcdef), 200 entries,
/// fitted to each case's input tokens; output lengths as the cases ask."
pub fn dataset_line(d: &DatasetUsed) -> String {
    let lengths = match d.lengths.as_str() {
        "as-is" => "sent as written (their length is the server's count)",
        _ => "fitted to each case's input tokens",
    };
    let output = match d.output.as_str() {
        "from-dataset" => "output lengths from the entries' answers",
        _ => "output lengths as the cases ask",
    };
    format!(
        "Dataset: {} ({} bytes, FNV-1a 64 digest {}), {} entries, {lengths}; {output}.",
        d.file,
        u32::try_from(d.bytes).map_or_else(|_| d.bytes.to_string(), crate::fmt::thousands),
        d.fnv1a64,
        d.entries,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dataset_is_named_by_file_length_and_digest() {
        let used = DatasetUsed {
            file: "prompts.jsonl".into(),
            bytes: 12_345,
            fnv1a64: "0123456789abcdef".into(),
            entries: 200,
            lengths: "fit".into(),
            output: "fixed".into(),
        };
        assert_eq!(
            dataset_line(&used),
            "Dataset: prompts.jsonl (12,345 bytes, FNV-1a 64 digest 0123456789abcdef), 200 \
             entries, fitted to each case's input tokens; output lengths as the cases ask."
        );
    }
}
