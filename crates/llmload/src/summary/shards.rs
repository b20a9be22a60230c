//! Results: the shard section. A shard's own (`shard` in its `summary.json`: which part it ran,
//! when its load began against the instant asked for, its clock's offset from the server's), and
//! a merged attempt's (`shards`: every shard's, the missing and incomplete ones, the client-bound
//! ones that taint the whole attempt).

use serde::{Deserialize, Serialize};

/// When a load began on this process's clock, against the instant `--start-at` asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadStart {
    /// The instant asked for, in seconds since this attempt's (or shard's) time origin: the
    /// moment its schedule's offsets count from.
    pub schedule_start_s: f64,
    /// How long before that instant the load was ready to begin, ms (negative: it was ready
    /// only after it, and its first arrivals went out late).
    pub ready_before_ms: f64,
    /// Actual start − requested instant, ms: when the waiting process woke (or, when it was
    /// ready late, when it was ready), after the instant.
    pub start_lag_ms: f64,
}

/// This process's clock against the target server's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// How it was estimated: `http-date-tick` (the server's `Date` header polled until its
    /// second changed), or `none`.
    pub method: String,
    /// Server clock − this clock, ms; absent when it could not be estimated.
    #[serde(default)]
    pub offset_ms: Option<f64>,
    /// The true offset lies within `offset_ms` ± this, ms (the server's clock read to the
    /// second, the tick located between two polls).
    #[serde(default)]
    pub uncertainty_ms: Option<f64>,
    /// Polls sent.
    #[serde(default)]
    pub polls: u32,
    /// Why there is no estimate, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A shard's own section: which part of which attempt it ran, and how it started.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardRun {
    /// This shard, from 0.
    pub index: u32,
    /// Shards of the attempt.
    pub count: u32,
    /// The id every shard of the attempt shares.
    pub attempt_id: String,
    /// The fingerprint of the configuration every shard must share (the config without the
    /// shard's index, its output folder and `--quiet`), hex.
    pub config_fingerprint: String,
    /// The seed of the global plan.
    pub seed: u64,
    /// `--start-at`, RFC 3339.
    pub start_at: Option<String>,
    /// When its load began against `start_at`; absent when it never began (stopped before).
    #[serde(default)]
    pub start: Option<LoadStart>,
    /// Open loops: the arrivals of the global schedule that were this shard's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<u64>,
    /// Closed-continuous: the streams this shard kept in flight (its share of the
    /// concurrency; 0: none, the concurrency being below the number of shards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// Its clock's offset from the target server's.
    pub clock: ClockOffset,
}

/// One shard of a merged attempt, as the merge found it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    /// What the shard recorded of itself.
    #[serde(flatten)]
    pub run: ShardRun,
    /// The shard's folder, as given to `llmload merge`.
    pub dir: String,
    /// Its own outcome: `completed`, `stopped`, `failed` or `running`.
    pub status: String,
    /// Why it did not complete, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its records (warmups included).
    pub records: u64,
    /// Its client self-check's verdict, when it has one.
    #[serde(default)]
    pub client_check: Option<String>,
    /// Seconds added to its record times to put them on the merged attempt's timeline (its
    /// load's start aligned with the others').
    pub shift_s: f64,
}

/// A merged attempt's shard section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardsSection {
    /// Shards the attempt was split into.
    pub count: u32,
    /// The shards merged, by index.
    pub shards: Vec<MergedShard>,
    /// Indices of the shards whose folder was not given.
    pub missing: Vec<u32>,
    /// Indices of the shards that did not complete (stopped, failed, killed).
    pub incomplete: Vec<u32>,
    /// Indices of the shards whose client may have distorted what they measured: each taints
    /// the whole attempt.
    pub client_bound: Vec<u32>,
    /// Largest − smallest start lag among the shards, ms.
    pub start_lag_spread_ms: Option<f64>,
    /// Largest − smallest of the start instants the shards were given, ms: 0 when they shared
    /// one instant (an absolute `--start-at`); more when each resolved its own `+DURATION`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_spread_ms: Option<f64>,
    /// Largest − smallest clock offset among the shards, ms, and the largest uncertainty.
    pub clock_offset_spread_ms: Option<f64>,
    /// The largest uncertainty of a shard's clock offset, ms.
    pub clock_uncertainty_max_ms: Option<f64>,
}

impl ShardsSection {
    /// Shards with records that completed, in words: `4 of 4 shards`, `3 of 4 shards`.
    pub fn complete_text(&self) -> String {
        let whole = self.shards.len() as u64 - self.incomplete.len() as u64;
        format!("{whole} of {} shards", self.count)
    }

    /// What keeps the attempt from being whole, in words; `None` when every shard completed.
    pub fn shortfall(&self) -> Option<String> {
        let list = |v: &[u32]| {
            v.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.missing.is_empty() {
            parts.push(format!("shard {} missing", list(&self.missing)));
        }
        if !self.incomplete.is_empty() {
            parts.push(format!("shard {} incomplete", list(&self.incomplete)));
        }
        (!parts.is_empty()).then(|| format!("{}: {}", self.complete_text(), parts.join("; ")))
    }

    /// The spreads of the start lags and clock offsets.
    #[must_use]
    pub fn with_spreads(mut self) -> ShardsSection {
        let spread = |v: Vec<f64>| {
            let lo = v.iter().copied().reduce(f64::min)?;
            let hi = v.iter().copied().reduce(f64::max)?;
            Some(hi - lo)
        };
        let runs = || self.shards.iter().map(|s| &s.run);
        self.start_lag_spread_ms = spread(
            runs()
                .filter_map(|r| r.start.map(|s| s.start_lag_ms))
                .collect(),
        );
        self.start_at_spread_ms = spread(
            runs()
                .filter_map(|r| r.start_at.as_deref())
                .filter_map(|t| humantime::parse_rfc3339_weak(t).ok())
                .filter_map(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs_f64() * 1e3)
                .collect(),
        );
        self.clock_offset_spread_ms = spread(runs().filter_map(|r| r.clock.offset_ms).collect());
        self.clock_uncertainty_max_ms = runs()
            .filter_map(|r| r.clock.uncertainty_ms)
            .reduce(f64::max);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(index: u32, lag_ms: f64, offset_ms: Option<f64>) -> MergedShard {
        MergedShard {
            run: ShardRun {
                index,
                count: 4,
                start: Some(LoadStart {
                    start_lag_ms: lag_ms,
                    ..LoadStart::default()
                }),
                clock: ClockOffset {
                    offset_ms,
                    uncertainty_ms: offset_ms.map(|_| 0.5 + f64::from(index)),
                    ..ClockOffset::default()
                },
                start_at: Some(format!("2026-05-01T12:00:0{index}.250Z")),
                ..ShardRun::default()
            },
            dir: format!("s{index}"),
            status: "completed".into(),
            reason: None,
            records: 10,
            client_check: Some("ok".into()),
            shift_s: 0.0,
        }
    }

    #[test]
    fn the_section_says_what_is_missing_and_how_far_the_shards_are_apart() {
        let whole = ShardsSection {
            count: 4,
            shards: (0..4)
                .map(|i| shard(i, f64::from(i), Some(10.0 * f64::from(i))))
                .collect(),
            ..ShardsSection::default()
        }
        .with_spreads();
        assert_eq!(whole.complete_text(), "4 of 4 shards");
        assert_eq!(whole.shortfall(), None);
        assert_eq!(whole.start_lag_spread_ms, Some(3.0));
        assert_eq!(whole.clock_offset_spread_ms, Some(30.0));
        assert_eq!(whole.clock_uncertainty_max_ms, Some(3.5));
        assert_eq!(whole.start_at_spread_ms, Some(3000.0));
        let short = ShardsSection {
            count: 4,
            shards: vec![
                shard(0, 1.0, None),
                shard(1, 1.0, None),
                shard(2, 1.0, None),
            ],
            missing: vec![3],
            incomplete: vec![1],
            ..ShardsSection::default()
        }
        .with_spreads();
        assert_eq!(
            short.shortfall().as_deref(),
            Some("2 of 4 shards: shard 3 missing; shard 1 incomplete")
        );
        assert_eq!(short.clock_offset_spread_ms, None);
        assert_eq!(short.start_lag_spread_ms, Some(0.0));
        assert_eq!(short.start_at_spread_ms, Some(2000.0));
    }
}
