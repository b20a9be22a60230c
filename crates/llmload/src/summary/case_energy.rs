//! The energy of a case's measurement window as `summary.json` holds it: per GPU and in sum,
//! with what it rests on. How it is taken from the GPU readings is `energy.rs`'s.

use crate::record::Seconds;
use serde::{Deserialize, Serialize};

/// The energy of one case's measurement window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Energy {
    /// Length of the window the integral covers, seconds (closed rounds: the sum of their spans).
    pub window_s: Seconds,
    /// Σ output tokens of the `ok` responses in the window: the count behind the throughput.
    pub output_tokens: u64,
    /// Whether every `ok` measured response of the case was verified (`counts.unverified` is 0).
    pub tokens_verified: bool,
    /// Per GPU: its energy over the window and the readings it rests on; empty when unavailable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuEnergy>,
    /// Σ over the GPUs, joules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_j: Option<f64>,
    /// `total_j / window_s`, watts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_power_w: Option<f64>,
    /// `output_tokens / total_j`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_joule: Option<f64>,
    /// The `ok` responses in the window.
    #[serde(default)]
    pub responses: u64,
    /// `total_j / responses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joules_per_request: Option<f64>,
    /// How the integral was taken, with the readings it rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Why there is no figure (readings too sparse, or none around the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// One GPU's energy over a window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuEnergy {
    /// GPU index.
    pub gpu: u32,
    /// ∫ power dt over the window, joules.
    pub joules: f64,
    /// Distinct readings the integral used: those inside the window and the one on each side of
    /// each edge.
    pub readings: u32,
}
