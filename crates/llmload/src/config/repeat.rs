//! `--repeat N`: what a series of repeats can be. Each repeat runs every case as a run without
//! `--repeat` would, and the series combines the complete ones (closed rounds round by round, a
//! loop's windows repeat by repeat), so a repeat must be a whole campaign run by this one
//! process, whose cases each stand alone.

use super::parse::bad;
use super::Config;
use crate::error::ConfigError;

/// The most repeats a series may declare.
pub(super) const MAX_REPEATS: u32 = 10_000;

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
        Some("--stages (a staged load is one load whose stages follow each other)")
    } else if load.session.is_some() {
        Some("--turns (a series' sessions would be told apart by repeat, which they are not)")
    } else {
        None
    };
    match shape {
        Some(what) => bad(format!(
            "--repeat runs closed rounds, continuous and open loops and traces; it does not \
             go with {what}"
        )),
        None => Ok(()),
    }
}
