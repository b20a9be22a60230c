//! `--dag`: a request's place in its session graph, as a record carries it.

use serde::{Deserialize, Serialize};

/// `--dag`: where a request stands in its session graph, as the file names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphCall {
    /// The session's id in the file.
    pub session: String,
    /// The call's id in the file.
    pub call: String,
    /// The calls it waited for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// The call whose prompt and answer its prompt extends; absent for a fresh context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Its wait after the last of `after` ended, ms, as the run replayed it (scaled, capped).
    pub wait_ms: f64,
    /// Whether it is its session's final answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub final_answer: bool,
}
