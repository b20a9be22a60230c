//! The client's own tokenizer (`--tokenizer FILE`, a Hugging Face `tokenizer.json`): counts the
//! tokens of texts where the server cannot (no `/tokenize`, no usage), and splits a streamed
//! answer's chunks into tokens where the server sends several per chunk without saying how many.
//!
//! Counting is done on the decoded text, after the stream has ended: nothing runs in the stream
//! loop. A text decoded and tokenized again does not always give back the model's own tokens
//! (special tokens, merges across chunk edges), so counts made here are never taken as
//! verification: a response counted by the client stays unverified.

use crate::error::{ConfigError, Error};
use std::path::Path;

/// A loaded tokenizer.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    /// The file it was read from, as given.
    pub source: String,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// The largest tokenizer file read (the largest published vocabularies are about 30 MiB).
const MAX_FILE: u64 = 256 << 20;

impl Tokenizer {
    /// Reads `path`, a `tokenizer.json`; a one-line usage error when it cannot.
    pub fn load(path: &Path) -> Result<Tokenizer, Error> {
        let shown = path.display().to_string();
        let Some(bytes) = crate::files::read_at_most(path, MAX_FILE)
            .map_err(|e| ConfigError(format!("--tokenizer {shown}: {e}")))?
        else {
            return Err(ConfigError(format!(
                "--tokenizer {shown}: more than the {MAX_FILE} bytes a tokenizer file may have"
            ))
            .into());
        };
        let inner = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| {
            ConfigError(format!(
                "--tokenizer {shown}: not a tokenizer.json this build reads: {}",
                first_line(&e.to_string())
            ))
        })?;
        Ok(Tokenizer {
            inner,
            source: shown,
        })
    }

    /// Tokens of `text`, with the special tokens the tokenizer adds (BOS) when `special`.
    pub fn count(&self, text: &str, special: bool) -> u32 {
        self.inner
            .encode(text, special)
            .map_or(0, |e| crate::num::count(e.len()))
    }

    /// How many tokens each chunk of `text` holds: `ends` are the byte offsets where chunks end,
    /// in order, the last one `text.len()`. A token belongs to the chunk its last byte came in,
    /// so a token split across two chunks counts in the second, when it was complete.
    pub fn split(&self, text: &str, ends: &[u32]) -> Option<Vec<u32>> {
        let encoding = self.inner.encode(text, false).ok()?;
        let mut counts = vec![0u32; ends.len()];
        let mut chunk = 0;
        for &(_, end) in encoding.get_offsets() {
            if end == 0 {
                continue;
            }
            while chunk + 1 < ends.len() && (ends[chunk] as usize) < end {
                chunk += 1;
            }
            counts[chunk] = counts[chunk].saturating_add(1);
        }
        Some(counts)
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A word-level tokenizer that splits on whitespace: every word is one token, as the
    /// simulator's generated text is.
    pub(crate) const WORDS: &str = r#"{"version":"1.0","truncation":null,"padding":null,
        "added_tokens":[],"normalizer":null,"pre_tokenizer":{"type":"WhitespaceSplit"},
        "post_processor":null,"decoder":null,
        "model":{"type":"WordLevel","vocab":{"[UNK]":0,"the":1},"unk_token":"[UNK]"}}"#;

    pub(crate) fn words() -> Tokenizer {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tokenizer.json");
        std::fs::write(&path, WORDS).expect("write");
        Tokenizer::load(&path).expect("loads")
    }

    #[test]
    fn counts_and_splits_by_the_chunk_a_token_ends_in() {
        let t = words();
        assert_eq!(t.count(" the model answers", false), 3);
        // Chunks " the mo" | "del answers" | " with": "model" ends in the second chunk.
        let text = " the model answers with";
        assert_eq!(
            t.split(text, &[7, 18, u32::try_from(text.len()).expect("short")]),
            Some(vec![1, 2, 1])
        );
        // A chunk of whitespace alone holds no token.
        assert_eq!(t.split(" a  b", &[2, 3, 5]), Some(vec![1, 0, 1]));
    }

    #[test]
    fn a_file_that_is_not_a_tokenizer_is_a_usage_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.json");
        std::fs::write(&path, "{\"model\": 3}").expect("write");
        let e = Tokenizer::load(&path).expect_err("refused");
        assert!(e.to_string().starts_with("--tokenizer "), "{e}");
        assert!(!e.to_string().contains('\n'));
        let e = Tokenizer::load(&dir.path().join("missing.json")).expect_err("refused");
        assert!(e.to_string().contains("missing.json"), "{e}");
    }
}
