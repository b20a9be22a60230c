//! `--repeat N`: what a series of repeats can be. Each repeat runs every case as a run without
//! `--repeat` would, and the series combines the complete ones round by round, so a repeat must
//! be a whole campaign of closed rounds run by this one process.

use super::{bad, Config, ConfigError};
use crate::workload::shape::Arrival;

/// The most repeats a series may declare.
pub const MAX_REPEATS: u32 = 10_000;

/// Refuses a `--repeat` that no series can run, with the reason.
pub(super) fn check(config: &Config) -> Result<(), ConfigError> {
    let Some(n) = config.repeat else {
        return Ok(());
    };
    if n == 0 {
        return bad("--repeat needs 1 or more repeats (without it, the campaign runs once)");
    }
    if n > MAX_REPEATS {
        return bad(format!("--repeat is at most {MAX_REPEATS}"));
    }
    if !config.sharding.shard.is_whole() {
        return bad(
            "--repeat does not go with --shard: every shard would run a series of its own, \
             which no merge can line up",
        );
    }
    let load = &config.load;
    let shape = if load.stages.is_some() {
        Some("--stages")
    } else if load.session.is_some() {
        Some("--turns (sessions)")
    } else if load.arrival != Arrival::Rounds {
        Some("a continuous or open loop (--arrival other than rounds, --trace)")
    } else {
        None
    };
    match shape {
        Some(what) => bad(format!(
            "--repeat runs closed rounds only (each repeat's rounds are what the series \
             combines); it does not go with {what}"
        )),
        None => Ok(()),
    }
}
