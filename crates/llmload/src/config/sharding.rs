//! Config: sharding one attempt over several processes (`--shard I/N`, `--attempt-id`,
//! `--start-at`), and what cannot be split honestly.

use super::parse::{bad, parse_duration};
use super::{Config, Settings};
use crate::error::ConfigError;
use crate::workload::shape::Arrival;
use crate::workload::shard::Shard;
use serde::{Serialize, Serializer};
use std::time::{Duration, SystemTime};

/// The furthest ahead `--start-at` may be.
const FURTHEST_START: Duration = Duration::from_secs(24 * 3600);

/// How far in the past an absolute `--start-at` may already be when the run is set up.
const STALE_START: Duration = Duration::from_secs(1);

/// Which part of an attempt this process runs, and when its load begins.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sharding {
    /// `--shard I/N`; 0/1 without it.
    pub shard: Shard,
    /// `--attempt-id`: shared by every shard of one attempt.
    pub attempt_id: Option<String>,
    /// `--start-at`, resolved to a wall-clock instant.
    #[serde(serialize_with = "rfc3339")]
    pub start_at: Option<SystemTime>,
}

#[expect(
    clippy::ref_option,
    reason = "serde's serialize_with hands the field by reference"
)]
fn rfc3339<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&humantime::format_rfc3339_nanos(*t).to_string()),
        None => s.serialize_none(),
    }
}

impl Sharding {
    /// `--shard`, `--attempt-id` and `--start-at` of `s`, parsed (not yet checked against the
    /// rest of the config).
    pub(super) fn resolve(s: &Settings) -> Result<Sharding, ConfigError> {
        let shard = match &s.sharding.shard {
            Some(text) => text.parse::<Shard>().map_err(ConfigError)?,
            None => Shard::WHOLE,
        };
        let attempt_id = s
            .sharding
            .attempt_id
            .as_deref()
            .map(attempt_id)
            .transpose()?;
        let start_at = s
            .sharding
            .start_at
            .as_deref()
            .map(|t| parse_start_at(t, SystemTime::now()))
            .transpose()?;
        Ok(Sharding {
            shard,
            attempt_id,
            start_at,
        })
    }

    /// The seed every shard derives from the attempt id when no `--seed` is given, so that the
    /// shards compute the same plan.
    pub(super) fn derived_seed(&self) -> Option<u64> {
        let id = self
            .attempt_id
            .as_deref()
            .filter(|_| !self.shard.is_whole())?;
        Some(crate::workload::prompt::splitmix64(
            crate::workload::shard::fnv1a(id.as_bytes()),
        ))
    }
}

/// `--attempt-id`: a folder name of letters, digits, `.`, `_` and `-`.
fn attempt_id(text: &str) -> Result<String, ConfigError> {
    let ok = !text.is_empty()
        && text.len() <= 64
        && !text.starts_with('.')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(text.to_owned())
    } else {
        bad(format!(
            "--attempt-id {text:?}: 1 to 64 letters, digits, '.', '_' or '-' (it names folders)"
        ))
    }
}

/// `--start-at`: an RFC 3339 instant (`2026-05-01T12:00:00Z`, fractions allowed) or `+DURATION`
/// from `now` (`+30s`).
pub fn parse_start_at(text: &str, now: SystemTime) -> Result<SystemTime, ConfigError> {
    let text = text.trim();
    let at = if let Some(relative) = text.strip_prefix('+') {
        now + parse_duration("start-at", relative)?
    } else {
        let at = humantime::parse_rfc3339_weak(text).map_err(|e| {
            ConfigError(format!(
                "--start-at {text:?}: {e}; give an RFC 3339 instant in UTC, e.g. \
                 2026-05-01T12:00:00Z, or +DURATION from now, e.g. +30s"
            ))
        })?;
        if let Ok(past) = now.duration_since(at) {
            if past > STALE_START {
                return bad(format!(
                    "--start-at {text} is {} in the past",
                    humantime::format_duration(Duration::from_secs(past.as_secs()))
                ));
            }
        }
        at
    };
    if at
        .duration_since(now)
        .is_ok_and(|ahead| ahead > FURTHEST_START)
    {
        return bad(format!("--start-at {text} is more than 24 hours ahead"));
    }
    Ok(at)
}

impl Config {
    /// What a sharded attempt (N above 1) needs, and the loads that cannot be split honestly.
    pub(super) fn check_sharding(&self) -> Result<(), ConfigError> {
        let shard = self.sharding.shard;
        if shard.is_whole() {
            return Ok(());
        }
        if self.sharding.attempt_id.is_none() {
            return bad(format!(
                "--shard {shard} needs --attempt-id ID, the same on every shard of the attempt"
            ));
        }
        if self.sharding.start_at.is_none() {
            return bad(format!(
                "--shard {shard} needs --start-at TIME, the same instant on every shard, so that \
                 they begin their schedule together"
            ));
        }
        if self.url.is_none() {
            return bad(
                "--shard needs --url: every shard must load the same server (without it each \
                 would start its own simulator)",
            );
        }
        if self.load.session.is_some() {
            return bad(format!(
                "--shard {shard}: sessions of several turns are not split between shards (a \
                 session's turns must stay on one client, and the session plan is not thinned \
                 yet); run a case of sessions in one process, which holds thousands of them"
            ));
        }
        if self.load.arrival == Arrival::Rounds {
            return bad(format!(
                "--shard {shard}: closed rounds start C requests together, which processes on \
                 different machines cannot do within a millisecond; use --arrival \
                 closed-continuous (the concurrency is split) or an open loop (the arrivals are)"
            ));
        }
        if self.load.stages.is_none() && self.plans().len() > 1 {
            return bad(format!(
                "--shard {shard}: a sharded attempt runs one case (one --input-tokens, \
                 --concurrency or --rate and --output-tokens) or one staged load, since each \
                 later case would begin at a different instant on each shard; run one sharded \
                 attempt per case"
            ));
        }
        if let Some(cap) = self.load.max_in_flight.filter(|&k| k < shard.count) {
            return bad(format!(
                "--max-in-flight {cap} is split between the {} shards: it must be at least {}",
                shard.count, shard.count
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_at_takes_an_instant_or_a_delay_and_says_what_is_wrong_in_one_line() {
        let now = humantime::parse_rfc3339("2026-05-01T12:00:00Z").expect("instant");
        let at = |t: &str| parse_start_at(t, now);
        assert_eq!(at("+30s").ok(), Some(now + Duration::from_secs(30)));
        assert_eq!(
            at("2026-05-01T12:00:05.250Z").ok(),
            Some(now + Duration::from_millis(5250))
        );
        for (text, says) in [
            ("soon", "RFC 3339"),
            ("+later", "start-at"),
            ("2026-05-01T11:00:00Z", "in the past"),
            ("2026-05-03T12:00:00Z", "24 hours"),
            ("+2days", "24 hours"),
        ] {
            let e = at(text).expect_err(text).0;
            assert!(e.contains(says) && !e.contains('\n'), "{text}: {e}");
        }
    }

    #[test]
    fn attempt_ids_are_folder_names() {
        assert!(attempt_id("bench-2026.05_01").is_ok());
        for bad in ["", "a/b", "..", "x y", &"a".repeat(65)] {
            assert!(attempt_id(bad).is_err(), "{bad}");
        }
    }
}
