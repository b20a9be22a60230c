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
pub fn wave_of_quantile(load: u32, slots: u32, rounds: usize, q: f64) -> Option<u32> {
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

/// A wanted load against `points`; `None` when it is asked on another kind of load.
pub fn answer(
    question: &Question,
    m: &Measured,
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
    let run = |loads: Vec<f64>| {
        let m = std::slice::from_ref(m);
        Some(command(m, question, question.prompt_tokens, kind, &loads))
    };
    let base = |verdict, method, behind: &[&Support], text: String| WantedAnswer {
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
    };
    if let Some(p) = points.iter().find(|p| crate::num::same_load(p.load, load)) {
        let text = match &p.why_not {
            None => format!("{name} was measured ({}) and keeps the budget", p.case_id),
            Some(why) => format!("{name} was measured ({}) and misses it: {why}", p.case_id),
        };
        let verdict = if p.meets { "meets" } else { "misses" };
        return Some(WantedAnswer {
            ttft_low_ms: p.ttft_low_ms.or(p.ttft_ms),
            ttft_high_ms: p.ttft_high_ms.or(p.ttft_ms),
            ..base(verdict, "measured", &[p], text)
        });
    }
    let below = points.iter().rev().find(|p| p.load < load);
    let above = points.iter().find(|p| p.load > load);
    let (Some(b), Some(a)) = (below, above) else {
        let edge = if below.is_none() {
            "below the smallest"
        } else {
            "beyond the largest"
        };
        let mut loads: Vec<f64> = points.iter().map(|p| p.load).collect();
        loads.push(load);
        loads.sort_by(f64::total_cmp);
        let text = format!("{name} is {edge} load measured; it is not extrapolated");
        return Some(WantedAnswer {
            command: run(loads),
            ..base("not-measured", "none", &[], text)
        });
    };
    if !b.meets {
        let text = format!(
            "{name} was not measured, and the smaller {} already misses the budget ({})",
            kind.load(b.load),
            b.why_not.as_deref().unwrap_or("")
        );
        return Some(WantedAnswer {
            ttft_low_ms: b.ttft_low_ms.or(b.ttft_ms),
            ..base("misses", "bracketed", &[b], text)
        });
    }
    let between = bracket(question, m, kind, load, b, a);
    let budget = question.ttft_ms;
    let others_hold = !a.failed && a.tpot_holds;
    let (verdict, decide) = match (between.low, between.high) {
        (Some(low), _) if low > budget => ("misses", None),
        (_, Some(high)) if high <= budget && others_hold => ("meets", None),
        _ => ("unknown", run(vec![b.load, load, a.load])),
    };
    let p = question.percentile.name();
    let mut text = format!(
        "{name} was not measured; {}: {p} TTFT between {} and {}",
        between.how,
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
    if decide.is_some() {
        text.push_str(&format!("; measure {name} to decide"));
    }
    Some(WantedAnswer {
        ttft_low_ms: between.low,
        ttft_high_ms: between.high,
        command: decide,
        ..base(verdict, between.method, &between.behind, text)
    })
}

/// An unmeasured load's TTFT bounds, how they were found, and the cases behind them.
struct Between<'a> {
    low: Option<f64>,
    high: Option<f64>,
    method: &'static str,
    how: String,
    behind: Vec<&'a Support>,
}

/// The bounds of TTFT at `load` between the measured `b` below and `a` above it: their own
/// intervals, tightened by the slot steps where the slots are known and the percentile's
/// response is in the same wave as at `b`.
fn bracket<'a>(
    question: &Question,
    m: &Measured,
    kind: Kind,
    load: f64,
    b: &'a Support,
    a: &'a Support,
) -> Between<'a> {
    let low = b.ttft_low_ms.or(b.ttft_ms);
    let high = a.ttft_high_ms.or(a.ttft_ms);
    let p = question.percentile.name();
    let sides = format!(
        "it lies between {} ({}) and {} ({})",
        kind.load(b.load),
        seconds(b.ttft_ms),
        kind.load(a.load),
        seconds(a.ttft_ms)
    );
    let plain = |why: String| Between {
        low,
        high,
        method: "bracketed",
        how: format!("{sides}, {why}; bracketed, not interpolated"),
        behind: vec![b, a],
    };
    if kind != Kind::Rounds {
        return plain(format!("and {} TTFT need not be linear between", kind.name()));
    }
    let Some(slots) = m.slots else {
        return plain(
            "and the server's slots are unknown (no total_slots in /props), so a queueing step \
             may lie between them"
                .into(),
        );
    };
    let (c, at_b) = (crate::num::to_u32(load), crate::num::to_u32(b.load));
    let q = question.percentile.q();
    let same = wave_of_quantile(c, slots, b.rounds.max(1), q)
        .filter(|&k| wave_of_quantile(at_b, slots, b.rounds.max(1), q) == Some(k));
    let Some(k) = same else {
        return plain(format!(
            "and on {slots} slots its {p} response waits in a later wave than at {}: a \
             queueing step lies between",
            kind.load(b.load)
        ));
    };
    let ratio = f64::from(wave_size(c, slots, k)) / f64::from(wave_size(at_b, slots, k).max(1));
    let step_high = b.ttft_high_ms.or(b.ttft_ms).map(|t| t * ratio.max(1.0));
    Between {
        low,
        high: match (high, step_high) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        },
        method: "slot steps",
        how: format!(
            "on the server's {slots} slots its {p} response is in wave {} of the round, as at {} \
             ({}); that wave's own prefill bounds the rest",
            k + 1,
            kind.load(b.load),
            seconds(b.ttft_ms)
        ),
        behind: vec![b, a],
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
