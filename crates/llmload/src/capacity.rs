//! `llmload capacity`: from a described workload and objectives to the largest load that meets
//! them, decided at a confidence.
//!
//! The search ([`search`]) grows the load geometrically until a load fails, then bisects in log
//! space to the resolution. Each load is a probe of blocks, each block a case of its own; after
//! each block the probe's sequential test ([`sequential`]) may decide at one of its preset
//! looks, or the probe ends undecided at its cap. [`source::CapacitySource`] runs it all as a
//! case source of the one pipeline, reading each block's records back from the attempt's
//! `requests.jsonl`; [`answer`] turns the probes into `summary.json`'s `capacity`.

pub mod answer;
pub mod blocks;
pub mod remeasure;
pub mod search;
pub mod sequential;
pub mod slo;
pub mod source;

pub use slo::Rule;
pub use source::CapacitySource;

use std::path::PathBuf;
use std::time::Duration;

/// What `llmload capacity` adds to a run's settings.
#[derive(Clone, Debug, Default)]
pub struct CapacityOptions {
    /// The objectives, each with its text as given.
    pub rules: Vec<(Rule, String)>,
    /// `--resolution`: whole loads, the widest bracket (1); rates, the ratio above 1 (0.05).
    pub resolution: Option<f64>,
    /// `--start`: the first load [default: 1, or the first `--rate`].
    pub start: Option<f64>,
    /// `--max-load`: the largest load the search may try.
    pub max_load: Option<f64>,
    /// `--budget`: the search stops starting blocks after this long.
    pub budget: Option<Duration>,
    /// `--gpu-cost-per-hour`, per GPU.
    pub gpu_cost_per_hour: Option<f64>,
    /// `--gpus`: how many GPUs the price is paid for [default: 1].
    pub gpus: u32,
    /// `--resume`: an earlier capacity attempt whose blocks are reused.
    pub resume: Option<PathBuf>,
    /// The command as given, for the line that continues an undecided search.
    pub command: Vec<String>,
}

/// A share or a whole number for `--resolution`: `5%` or `0.05` (rates), `1` or `2` (whole loads).
pub fn parse_resolution(text: &str) -> Result<f64, crate::config::ConfigError> {
    let bad = || {
        crate::config::ConfigError(format!(
            "--resolution {text:?}: a whole load (1) or a share of the rate (5%)"
        ))
    };
    let value = match text.trim().strip_suffix('%') {
        Some(n) => n.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => text.trim().parse::<f64>().map_err(|_| bad())?,
    };
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(bad())
    }
}
