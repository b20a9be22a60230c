//! The dataset a run's prompts came from, as `summary.json` names it (`counting.dataset`).

use serde::{Deserialize, Serialize};

/// The dataset a run's prompts came from: which file, which version of it, and how it was used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetUsed {
    /// The file's name, without its folder.
    pub file: String,
    /// Its length, bytes.
    pub bytes: u64,
    /// The FNV-1a 64-bit digest of its bytes, 16 hex digits.
    pub fnv1a64: String,
    /// Its entries.
    pub entries: u64,
    /// How its prompts were sized: `fit` (to each case's input tokens) or `as-is`.
    pub lengths: String,
    /// Where the requested output lengths came from: `fixed` or `from-dataset`.
    pub output: String,
}
