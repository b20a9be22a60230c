//! A load the user wants to run at, against one attempt's curve: measured, or bracketed by the
//! measured loads on either side — never interpolated across a queueing step.
//!
//! TTFT is taken to grow with the load (at a fixed percentile), so an unmeasured load's TTFT lies
//! between its neighbours'. Closed rounds queue for slots in steps: a round of c requests on S
//! slots runs in ⌈c/S⌉ waves, and a response in wave k waits for k whole waves before its own
//! prefill. Where the server's slots are known (llama-server's `total_slots`), the wave that
//! holds the percentile's response is known for every load; when the wanted load's is the same
//! wave as at the measured load below it, only that wave's own prefill can differ, and it grows
//! at most in proportion to the wave's size, which bounds the answer from above.

use super::support::{Kind, Support};
use super::{command, Measured, Question};
use crate::fmt::seconds;
use serde::Serialize;
use std::fmt::Write as _;

/// A load the user wants to run at.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Wanted {
    /// Simultaneous generations.
    Concurrency(u32),
    /// Arrivals per second.
    RateRps(f64),
}

/// A wanted load against the curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WantedAnswer {
    /// The load.
    pub load: f64,
    /// `meets`, `misses`, `unknown` or `not-measured`.
    pub verdict: &'static str,
    /// `measured`, `slot steps` (closed rounds on known slots), `bracketed`, or `none`.
    pub method: &'static str,
    /// Lower end of TTFT at the percentile, ms: a measured case's 95 % interval, or the bound.
    pub ttft_low_ms: Option<f64>,
    /// Upper end, ms.
    pub ttft_high_ms: Option<f64>,
    /// The cases the answer rests on.
    pub cases: Vec<String>,
    /// Their responses, together.
    pub n: usize,
    /// The small-sample caveats of those cases.
    pub caveats: Vec<String>,
    /// The answer in words.
    pub text: String,
    /// What to run when the curve does not answer.
    pub command: Option<String>,
}

/// The 0-based wave that holds both order statistics the `q` quantile of a closed round's TTFTs
/// interpolates between, at `load` on `slots` slots over `rounds` rounds (sorted, each full wave
/// holds `rounds × slots` responses, faster than any of the next wave); `None` when it straddles
/// two waves.
pub(super) fn wave_of_quantile(load: u32, slots: u32, rounds: usize, q: f64) -> Option<u32> {
    let n = rounds * load as usize;
    if n == 0 || slots == 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let per_wave = rounds * slots as usize;
    let wave = |i: f64| crate::num::to_usize(i) / per_wave;
    let (low, high) = (wave(rank.floor()), wave(rank.ceil()));
    (low == high).then(|| crate::num::count(low))
}

/// Requests in wave `k` of a round of `load` on `slots`.
fn wave_size(load: u32, slots: u32, k: u32) -> u32 {
    load.saturating_sub(k * slots).min(slots)
}

/// An answer at `load` resting on the cases `behind`, without bounds or a command yet.
fn resting_on(
    load: f64,
    verdict: &'static str,
    method: &'static str,
    behind: &[&Support],
    text: String,
) -> WantedAnswer {
    WantedAnswer {
        load,
        verdict,
        method,
        ttft_low_ms: None,
        ttft_high_ms: None,
        cases: behind.iter().map(|s| s.case_id.clone()).collect(),
        n: behind.iter().map(|s| s.n).sum(),
        caveats: behind.iter().filter_map(|s| s.caveat.clone()).collect(),
        text,
        command: None,
    }
}

/// A wanted load against `points`; `None` when it is asked on another kind of load.
pub(super) fn answer(
    question: &Question,
    measured: &Measured,
    kind: Kind,
    points: &[Support],
    wanted: Wanted,
) -> Option<WantedAnswer> {
    let load = match (wanted, kind) {
        (Wanted::Concurrency(c), Kind::Rounds | Kind::Continuous) => f64::from(c),
        (Wanted::RateRps(r), Kind::Open) => r,
        _ => return None,
    };
    let name = kind.load(load);
    let run = |loads: &[f64]| {
        let measured = std::slice::from_ref(measured);
        Some(command(
            measured,
            question,
            question.prompt_tokens,
            kind,
            loads,
        ))
    };
    if let Some(at) = points.iter().find(|p| crate::num::same_load(p.load, load)) {
        let text = match &at.why_not {
            None => format!("{name} was measured ({}) and keeps the budget", at.case_id),
            Some(why) => format!("{name} was measured ({}) and misses it: {why}", at.case_id),
        };
        let verdict = if at.meets { "meets" } else { "misses" };
        return Some(WantedAnswer {
            ttft_low_ms: at.ttft_low_ms.or(at.ttft_ms),
            ttft_high_ms: at.ttft_high_ms.or(at.ttft_ms),
            ..resting_on(load, verdict, "measured", &[at], text)
        });
    }
    let lower = points.iter().rev().find(|p| p.load < load);
    let upper = points.iter().find(|p| p.load > load);
    let (Some(below), Some(above)) = (lower, upper) else {
        let edge = if lower.is_none() {
            "below the smallest"
        } else {
            "beyond the largest"
        };
        let mut loads: Vec<f64> = points.iter().map(|p| p.load).collect();
        loads.push(load);
        loads.sort_by(f64::total_cmp);
        let text = format!("{name} is {edge} load measured; it is not extrapolated");
        return Some(WantedAnswer {
            command: run(&loads),
            ..resting_on(load, "not-measured", "none", &[], text)
        });
    };
    if !below.meets {
        let text = format!(
            "{name} was not measured, and the smaller {} already misses the budget ({})",
            kind.load(below.load),
            below.why_not.as_deref().unwrap_or("")
        );
        return Some(WantedAnswer {
            ttft_low_ms: below.ttft_low_ms.or(below.ttft_ms),
            ..resting_on(load, "misses", "bracketed", &[below], text)
        });
    }
    let between = bracket(question, measured, kind, load, below, above);
    let mut answer = judged(question, &name, load, &between, above.others_hold);
    if answer.verdict == "unknown" {
        answer.command = run(&[below.load, load, above.load]);
    }
    Some(answer)
}

/// The verdict of the bounds `between` against the budget, in words: `unknown` where they
/// straddle it or the larger load also missed on more than TTFT (`others_hold` false).
fn judged(
    question: &Question,
    name: &str,
    load: f64,
    between: &Between<'_>,
    others_hold: bool,
) -> WantedAnswer {
    let budget = question.ttft_ms;
    let verdict = match (between.low, between.high) {
        (Some(low), _) if low > budget => "misses",
        (_, Some(high)) if high <= budget && others_hold => "meets",
        _ => "unknown",
    };
    let mut text = format!(
        "{name} was not measured; {}: {} TTFT between {} and {}",
        between.how,
        question.percentile.name(),
        seconds(between.low),
        seconds(between.high)
    );
    text.push_str(match verdict {
        "meets" => ", within the budget",
        "misses" => ", above the budget",
        _ if !others_hold => {
            "; the larger load also failed responses or missed the TPOT budget, which no bound \
             here covers"
        }
        _ => ", across the budget",
    });
    if verdict == "unknown" {
        let _ = write!(text, "; measure {name} to decide");
    }
    WantedAnswer {
        ttft_low_ms: between.low,
        ttft_high_ms: between.high,
        ..resting_on(load, verdict, between.method, &between.behind, text)
    }
}

/// An unmeasured load's TTFT bounds, how they were found, and the cases behind them.
struct Between<'a> {
    low: Option<f64>,
    high: Option<f64>,
    method: &'static str,
    how: String,
    behind: Vec<&'a Support>,
}

/// The bounds of TTFT at `load` between the measured `below` and `above` it: their own
/// intervals, tightened by the slot steps where the slots are known and the percentile's
/// response is in the same wave as at `below`.
fn bracket<'a>(
    question: &Question,
    measured: &Measured,
    kind: Kind,
    load: f64,
    below: &'a Support,
    above: &'a Support,
) -> Between<'a> {
    let low = below.ttft_low_ms.or(below.ttft_ms);
    let high = above.ttft_high_ms.or(above.ttft_ms);
    let name = question.percentile.name();
    let sides = format!(
        "it lies between {} ({}) and {} ({})",
        kind.load(below.load),
        seconds(below.ttft_ms),
        kind.load(above.load),
        seconds(above.ttft_ms)
    );
    let plain = |why: String| Between {
        low,
        high,
        method: "bracketed",
        how: format!("{sides}, {why}; bracketed, not interpolated"),
        behind: vec![below, above],
    };
    if kind != Kind::Rounds {
        return plain(format!(
            "and {} TTFT need not be linear between",
            kind.name()
        ));
    }
    let Some(slots) = measured.slots else {
        return plain(
            "and the server's slots are unknown (no total_slots in /props), so a queueing step \
             may lie between them"
                .into(),
        );
    };
    let (wanted, at_below) = (crate::num::to_u32(load), crate::num::to_u32(below.load));
    let quantile = question.percentile.q();
    let same = wave_of_quantile(wanted, slots, below.rounds.max(1), quantile).filter(|&wave| {
        wave_of_quantile(at_below, slots, below.rounds.max(1), quantile) == Some(wave)
    });
    let Some(wave) = same else {
        return plain(format!(
            "and on {slots} slots its {name} response is not in the same wave of the round as \
             at {}: a queueing step lies between",
            kind.load(below.load)
        ));
    };
    let ratio = f64::from(wave_size(wanted, slots, wave))
        / f64::from(wave_size(at_below, slots, wave).max(1));
    let step_high = below
        .ttft_high_ms
        .or(below.ttft_ms)
        .map(|ttft| ttft * ratio.max(1.0));
    Between {
        low,
        high: match (high, step_high) {
            (Some(bracket), Some(step)) => Some(bracket.min(step)),
            (bracket, step) => bracket.or(step),
        },
        method: "slot steps",
        how: format!(
            "on the server's {slots} slots its {name} response is in wave {} of the round, as at {} \
             ({}); that wave's own prefill bounds the rest",
            wave + 1,
            kind.load(below.load),
            seconds(below.ttft_ms)
        ),
        behind: vec![below, above],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantiles_wave_follows_the_slots() {
        // 8 slots, one round: the median of 12 is in the first wave, of 16 between the two.
        assert_eq!(wave_of_quantile(8, 8, 1, 0.5), Some(0));
        assert_eq!(wave_of_quantile(12, 8, 1, 0.5), Some(0));
        assert_eq!(wave_of_quantile(16, 8, 1, 0.5), None);
        assert_eq!(wave_of_quantile(24, 8, 1, 0.5), Some(1));
        // The tail of 9 already waits a wave.
        assert_eq!(wave_of_quantile(9, 8, 3, 0.99), Some(1));
        assert_eq!(wave_of_quantile(8, 8, 3, 0.99), Some(0));
        assert_eq!(wave_size(12, 8, 0), 8);
        assert_eq!(wave_size(12, 8, 1), 4);
        assert_eq!(wave_size(12, 8, 2), 0);
    }
}
