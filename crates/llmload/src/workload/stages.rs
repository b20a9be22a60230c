//! Workload: stages and ramps — one continuous load whose level (an open loop's rate or a closed
//! loop's concurrency) holds or changes linearly, stage after stage. Each stage is a case of its
//! own; this file holds the stage list, its grammar and the exact schedules the runner follows.
//!
//! An open loop's arrivals over the whole staged load are one unit-rate process (Poisson, gamma
//! or constant, from the seed) mapped through the inverse of the cumulative rate
//! `Λ(t) = ∫₀ᵗ λ(s) ds` (time rescaling): an arrival at `u` on the unit clock happens at
//! `Λ⁻¹(u)`. A hold at `r` maps `u` to `u / r`; a ramp from `a` to `b` over `T` has
//! `λ(t) = a + (b − a)·t/T`. A closed loop's ramp from `a` to `b` holds each of the `|b − a| + 1`
//! integer levels for an equal share of the stage.

use crate::workload::schedule::{self, Bound, Process};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// What a stage's level is: an open loop's rate or a closed loop's concurrency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LevelKind {
    /// Arrivals per second.
    Rate,
    /// Requests kept in flight.
    Concurrency,
}

/// One stage: its length, its level at the end, and whether it ramps to it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    /// How long the stage lasts.
    pub duration: Duration,
    /// Rate or concurrency.
    pub kind: LevelKind,
    /// The level held, or reached at the end of a ramp.
    pub level: f64,
    /// A linear change from the previous stage's level (0 before the first) over the stage.
    pub ramp: bool,
}

/// How a stage is labelled in `campaign.json` and `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageLabel {
    /// 1 for the first stage.
    pub number: u32,
    /// Stages in the run.
    pub of: u32,
    /// `rate` or `concurrency`.
    pub kind: LevelKind,
    /// Whether the level changes over the stage (its figures are over a changing load).
    pub ramp: bool,
    /// The level at the start of the stage.
    pub from: f64,
    /// The level at its end (equal to `from` for a hold).
    pub to: f64,
    /// The stage's start, seconds from the start of the load.
    pub start_s: f64,
    /// The stage's length, seconds.
    pub duration_s: f64,
}

/// A bad `--stages` text or `[[stages]]` entry.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StageError(pub String);

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            LevelKind::Rate => "rate",
            LevelKind::Concurrency => "concurrency",
        };
        let ramp = if self.ramp { ":ramp" } else { "" };
        let d = humantime::format_duration(self.duration);
        write!(f, "{d}{ramp}:{kind}={}", self.level)
    }
}

/// Parses `--stages`: comma-separated `DURATION[:ramp]:rate=R` or `…:concurrency=C`.
pub fn parse(text: &str) -> Result<Vec<Stage>, StageError> {
    text.split(',').map(|item| parse_one(item.trim())).collect()
}

fn parse_one(item: &str) -> Result<Stage, StageError> {
    let bad = || {
        StageError(format!(
            "{item:?}: expected DURATION[:ramp]:rate=R or DURATION[:ramp]:concurrency=C, \
             e.g. 30s:ramp:rate=8"
        ))
    };
    let mut parts = item.split(':');
    let duration = crate::num::duration(parts.next().unwrap_or("")).map_err(|_| bad())?;
    let (mut ramp, mut level) = (false, None);
    for part in parts {
        match part.trim().split_once('=') {
            None if part.trim() == "ramp" && !ramp => ramp = true,
            Some(("rate", v)) if level.is_none() => {
                level = Some((LevelKind::Rate, v.trim().parse().map_err(|_| bad())?));
            }
            Some(("concurrency", v)) if level.is_none() => {
                let c: u32 = v.trim().parse().map_err(|_| bad())?;
                level = Some((LevelKind::Concurrency, f64::from(c)));
            }
            _ => return Err(bad()),
        }
    }
    let (kind, level) = level.ok_or_else(bad)?;
    Ok(Stage {
        duration,
        kind,
        level,
        ramp,
    })
}

/// Checks a stage list: one kind, durations above 0, levels that make sense.
pub fn validate(stages: &[Stage]) -> Result<(), StageError> {
    let Some(first) = stages.first() else {
        return Err(StageError("--stages needs one or more stages".into()));
    };
    if stages.iter().any(|s| s.kind != first.kind) {
        return Err(StageError(
            "--stages are all rate (open loop) or all concurrency (closed-continuous), not both"
                .into(),
        ));
    }
    for (i, s) in stages.iter().enumerate() {
        let n = i + 1;
        if s.duration.is_zero() {
            return Err(StageError(format!(
                "stage {n}: its duration must be above 0"
            )));
        }
        if s.kind == LevelKind::Rate && s.level > *crate::num::RATES.end() {
            return Err(StageError(format!(
                "stage {n}: a rate of at most {} per second",
                crate::num::RATES.end()
            )));
        }
        if s.kind == LevelKind::Concurrency && s.level > f64::from(u32::MAX) {
            return Err(StageError(format!(
                "stage {n}: its concurrency is too large"
            )));
        }
        let positive = s.level.is_finite() && s.level > 0.0;
        if !(positive || (s.ramp && i > 0 && s.level == 0.0)) {
            return Err(StageError(format!(
                "stage {n}: its level must be above 0 (a ramp after the first may end at 0)"
            )));
        }
    }
    Ok(())
}

/// Each stage's (start level, end level): a hold keeps its level, a ramp starts from the previous
/// stage's level (0 before the first).
pub fn levels(stages: &[Stage]) -> Vec<(f64, f64)> {
    let mut previous = 0.0;
    stages
        .iter()
        .map(|s| {
            let from = if s.ramp { previous } else { s.level };
            previous = s.level;
            (from, s.level)
        })
        .collect()
}

/// The labels of the stages, in order.
pub fn labels(stages: &[Stage]) -> Vec<StageLabel> {
    let of = crate::num::count(stages.len());
    let mut start = Duration::ZERO;
    stages
        .iter()
        .zip(levels(stages))
        .enumerate()
        .map(|(i, (s, (from, to)))| {
            let label = StageLabel {
                number: crate::num::count(i + 1),
                of,
                kind: s.kind,
                ramp: s.ramp && !crate::num::same_load(from, to),
                from,
                to,
                start_s: start.as_secs_f64(),
                duration_s: s.duration.as_secs_f64(),
            };
            start += s.duration;
            label
        })
        .collect()
}

/// The expected arrivals of a stage from `from` to `to` per second over `span_s`: `Λ(T)`.
fn area(from: f64, to: f64, span_s: f64) -> f64 {
    f64::midpoint(from, to) * span_s
}

/// `Λ⁻¹(u)` within one stage: the time, seconds from its start, by which `u` arrivals are due
/// under a rate going linearly from `from` to `to` over `span_s`. Written so that it stays exact
/// at `from = 0` and for a falling rate.
pub fn inverse(from: f64, to: f64, span_s: f64, u: f64) -> f64 {
    let slope = (to - from) / span_s;
    let root = (from * from + 2.0 * slope * u).max(0.0).sqrt();
    let denominator = from + root;
    if denominator <= 0.0 {
        return 0.0;
    }
    2.0 * u / denominator
}

/// The open-loop arrivals of a staged load: (offset from the start of the load, stage index),
/// ascending. One unit-rate `process` drawn from `seed` runs across every stage, so that a
/// boundary neither restarts nor bends it; stage boundaries are exact.
pub fn offsets(stages: &[Stage], process: Process, seed: u64) -> Vec<(Duration, usize)> {
    let levels = levels(stages);
    let areas: Vec<f64> = stages
        .iter()
        .zip(&levels)
        .map(|(s, &(a, b))| area(a, b, s.duration.as_secs_f64()))
        .collect();
    let total: f64 = areas.iter().sum();
    let unit = schedule::offsets(
        process,
        1.0,
        Bound::Duration(Duration::from_secs_f64(total)),
        seed,
    );
    let mut out = Vec::with_capacity(unit.len());
    let (mut stage, mut before, mut start_s) = (0, 0.0, 0.0);
    for unit_s in unit {
        let unit_s = unit_s.as_secs_f64();
        while stage < stages.len() && unit_s >= before + areas[stage] {
            before += areas[stage];
            start_s += stages[stage].duration.as_secs_f64();
            stage += 1;
        }
        let Some(current) = stages.get(stage) else {
            break;
        };
        let (from, to) = levels[stage];
        let span_s = current.duration.as_secs_f64();
        let at_s = start_s + inverse(from, to, span_s, unit_s - before).min(span_s);
        out.push((Duration::from_secs_f64(at_s), stage));
    }
    out
}

/// A closed loop's concurrency steps over a staged load: (offset from the start of the load,
/// level from then on), ascending; the first at 0. A ramp from `a` to `b` holds each of its
/// `|b − a| + 1` levels for an equal share of the stage.
pub fn concurrency_steps(stages: &[Stage]) -> Vec<(Duration, u32)> {
    let mut out: Vec<(Duration, u32)> = Vec::new();
    let mut start = Duration::ZERO;
    for (s, (a, b)) in stages.iter().zip(levels(stages)) {
        let (a, b) = (crate::num::to_u32(a), crate::num::to_u32(b));
        let n = a.abs_diff(b);
        for k in 0..=n {
            let level = if b >= a { a + k } else { a - k };
            let at = start + s.duration.mul_f64(f64::from(k) / f64::from(n + 1));
            if out.last().is_none_or(|&(_, l)| l != level) {
                out.push((at, level));
            }
        }
        start += s.duration;
    }
    out
}

/// The concurrency at `t` from the start of the load, from [`concurrency_steps`].
pub fn concurrency_at(steps: &[(Duration, u32)], t: Duration) -> u32 {
    let i = steps.partition_point(|&(at, _)| at <= t);
    i.checked_sub(1).map_or(0, |i| steps[i].1)
}

#[cfg(test)]
mod tests;
