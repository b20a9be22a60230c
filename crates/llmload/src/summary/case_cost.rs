//! A case's cost as `summary.json` holds it, and the price it comes from. How it is computed
//! is `cost.rs`'s.

use serde::{Deserialize, Serialize};

/// What the server's hardware costs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// One GPU for one hour, in the user's currency.
    #[serde(rename = "gpu_cost_per_hour")]
    pub per_hour: f64,
    /// GPUs the server runs on.
    pub gpus: u32,
}

/// One case's cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// One GPU for one hour, as given.
    pub gpu_cost_per_hour: f64,
    /// GPUs paid for.
    pub gpus: u32,
    /// The window the GPUs are paid over, seconds (closed rounds: the sum of their spans).
    pub window_s: f64,
    /// `gpu_cost_per_hour × gpus × window_s / 3600`.
    pub window_cost: f64,
    /// The tokens the window's cost buys: Σ output tokens of its `ok` responses (embeddings and
    /// rerank: Σ prompt tokens the server processed).
    pub tokens: u64,
    /// `output` or `input`: which tokens `tokens` counts.
    pub tokens_kind: String,
    /// Whether every `ok` measured response behind `tokens` was verified.
    pub tokens_verified: bool,
    /// `window_cost / tokens × 10⁶`; absent without tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_million_tokens: Option<f64>,
    /// The throughput's interval turned into one of the cost (the cost per token is the price
    /// per second over the throughput, so the bounds swap): `[low, high]` per million tokens,
    /// at the throughput interval's level; absent where the throughput has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// The level of `interval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<f64>,
}
