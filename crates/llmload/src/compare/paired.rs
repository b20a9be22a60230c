//! `llmload ab`'s paired gate: the base (A) and the candidate (B) ran interleaved, in blocks
//! whose order alternates at random (ABBA or BAAB); each pair of adjacent blocks, one of each
//! arm, gives one value of B's figure against A's. The change and its interval come from those
//! pairs alone, so that what the machine did over the attempt (a slow hour, a noisy neighbour)
//! falls on both arms and cancels in each pair.
//!
//! A relative change is worked on the logarithms: each pair's `ln(B / A)`, turned back into
//! percent at the end. An absolute change is each pair's `B − A`. The change is the median of
//! the pairs' values, and its interval the sign test's: the order statistics of the pairs'
//! values that bound their median at the level ([`order_statistic`]). It assumes only that the
//! pairs are independent; a few pairs caught in a burst of other work move it by no more than
//! any other pair, where they would carry a mean (and a t or bootstrap interval of it) with
//! them. The verdict is the call of `compare`'s rule on that interval ([`change::call`]).

use crate::compare::gate::{change, Change, Metric, Percentile, Rule};
use crate::record::Arm;
use crate::stats::interval::{order_statistic, order_statistic_ranks};
use crate::stats::Interval;
use crate::summary::ab::{PairedChange, PairedCheck, PairedMethod, PairedVerdict};
use crate::summary::CaseSummary;

/// The most pairs an inconclusive check may advise; past it the change is too close to the
/// bound to decide at any affordable size.
pub const PAIRS_CAP: u64 = 1_000;

/// The fewest pairs whose sign-test interval exists at `level`: the smallest `n` with
/// `2 · 2⁻ⁿ ≤ 1 − level` (6 at 95 %, 8 at 99 %).
pub fn min_pairs(level: f64) -> usize {
    (1..=64)
        .find(|&n| order_statistic_ranks(n, 0.5, level).is_some())
        .unwrap_or(64)
}

/// The change from A to B over `pairs` (A's figure, B's figure) at `level`: relative (percent,
/// on the logarithms) or absolute. Pairs with a figure of 0 or below have no logarithm and are
/// left out of a relative change; `None` when no pair is left.
pub fn paired_change(relative: bool, pairs: &[(f64, f64)], level: f64) -> Option<PairedChange> {
    let mut values: Vec<f64> = pairs
        .iter()
        .filter(|(a, b)| !relative || (*a > 0.0 && *b > 0.0))
        .map(|&(a, b)| if relative { (b / a).ln() } else { b - a })
        .filter(|v| v.is_finite())
        .collect();
    let n = values.len();
    if n == 0 {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        f64::midpoint(values[n / 2 - 1], values[n / 2])
    };
    let interval = order_statistic(&values, 0.5, level);
    let scale = |x: f64| if relative { x.exp_m1() * 100.0 } else { x };
    Some(PairedChange {
        change: scale(median),
        interval: interval.map(|i| Interval {
            low: scale(i.low),
            high: scale(i.high),
        }),
        pairs: n,
        b_higher: Some(values.iter().filter(|&&v| v > 0.0).count()),
        b_lower: Some(values.iter().filter(|&&v| v < 0.0).count()),
        method: interval.map(|_| PairedMethod::SignTest),
        level,
    })
}

/// The blocks of one pair: A's and B's (either absent where the run stopped before it).
pub type BlockPair<'a> = (Option<&'a CaseSummary>, Option<&'a CaseSummary>);

/// A block's figure for `metric`, or why it has none that a pair can use: a block not complete,
/// a figure absent, a percentile further out than the block's responses reach.
pub fn block_figure(metric: Metric, block: &CaseSummary) -> Result<f64, String> {
    if metric != Metric::ErrorRate && !block.complete {
        return Err("a block is incomplete".into());
    }
    let figure = metric
        .figure(block)
        .ok_or_else(|| format!("a block has no {metric}"))?;
    let q = match metric {
        Metric::Latency(_, Percentile::P90) => Some(0.9),
        Metric::Latency(_, Percentile::P95) => Some(0.95),
        Metric::Latency(_, Percentile::P99) => Some(0.99),
        _ => None,
    };
    match q {
        Some(q) if crate::stats::is_descriptive(figure.n, q) => Err(format!(
            "a block's {metric} rests on {} {}: too few to stand for it (more rounds per block: \
             --block-rounds)",
            figure.n, figure.of
        )),
        _ if !figure.value.is_finite() => Err(format!("a block's {metric} is not finite")),
        _ => Ok(figure.value),
    }
}

/// `rule` on the `pairs` of blocks of `case`, at `level`.
pub fn check(rule: &Rule, case: &str, pairs: &[BlockPair<'_>], level: f64) -> PairedCheck {
    let relative = matches!(rule.bound, Change::Percent(_));
    let mut left_out = Vec::new();
    let mut values = Vec::new();
    let mut unfinished = None;
    for (k, pair) in pairs.iter().enumerate() {
        let (Some(a), Some(b)) = pair else {
            left_out.push(format!("pair {}: not run", k + 1));
            continue;
        };
        if rule.metric != Metric::ErrorRate && a.complete && !b.complete {
            unfinished.get_or_insert(k + 1);
        }
        match (block_figure(rule.metric, a), block_figure(rule.metric, b)) {
            (Ok(x), Ok(y)) => values.push((x, y)),
            (Err(why), _) | (_, Err(why)) => left_out.push(format!("pair {}: {why}", k + 1)),
        }
    }
    let change = paired_change(relative, &values, level);
    let verdict = if let Some(k) = unfinished {
        PairedVerdict::Unfinished {
            reason: format!("pair {k}: B's block did not finish what A's did"),
        }
    } else {
        judge(rule, change.as_ref(), &left_out)
    };
    PairedCheck {
        case: case.to_owned(),
        rule: rule.text.clone(),
        change,
        left_out,
        verdict,
    }
}

/// The verdict of `rule` on `change` (`left_out`: the pairs that could not be used, for a
/// check with none left).
fn judge(rule: &Rule, change: Option<&PairedChange>, left_out: &[String]) -> PairedVerdict {
    let Some(change) = change else {
        return PairedVerdict::NotCompared {
            reason: left_out.first().map_or_else(
                || "no pair ran".to_owned(),
                |why| format!("no pair to compare ({why})"),
            ),
        };
    };
    let Some(interval) = change.interval else {
        return PairedVerdict::Inconclusive {
            pairs_to_decide: None,
            why: format!(
                "cannot tell from {} pair(s): an interval at {} % needs at least {} (more \
                 rounds: --rounds)",
                change.pairs,
                crate::fmt::number(change.level * 100.0),
                min_pairs(change.level)
            ),
        };
    };
    match change::call(rule.op, rule.bound, interval) {
        change::Call::Regressed => PairedVerdict::Regressed,
        change::Call::Improved => PairedVerdict::Improved,
        change::Call::NoChange => PairedVerdict::NoChange,
        change::Call::Inconclusive => {
            let factor = change::samples_to_decide(change.change, rule.bound, interval);
            let needed = factor.map(|f| (f * change.pairs as f64).ceil());
            match needed {
                Some(n) if n <= PAIRS_CAP as f64 => PairedVerdict::Inconclusive {
                    #[expect(
                        clippy::cast_possible_truncation,
                        clippy::cast_sign_loss,
                        reason = "a whole number of pairs, at most PAIRS_CAP"
                    )]
                    pairs_to_decide: Some(n as u64),
                    why: format!(
                        "cannot tell: the interval straddles the bound; about {n} pairs would \
                         likely decide"
                    ),
                },
                _ => PairedVerdict::Inconclusive {
                    pairs_to_decide: None,
                    why: "cannot tell: this change is too close to the bound to decide at any \
                          affordable size"
                        .into(),
                },
            }
        }
    }
}

/// The randomized balanced order of `pairs` pairs of blocks from `seed`: pairs go in twos,
/// each two `[A, B], [B, A]` (ABBA) or `[B, A], [A, B]` (BAAB), drawn from the seed; an odd
/// last pair is AB or BA, drawn as well. Each arm goes first in as many pairs as the other
/// (one more, with an odd count), and never runs three blocks in a row.
pub fn block_order(pairs: usize, seed: u64) -> Vec<[Arm; 2]> {
    let mut state = seed ^ 0x6A09_E667_F3BC_C909;
    let mut draw = move || {
        // splitmix64: a well-mixed bit from each step of a counter.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) & 1 == 1
    };
    let mut order = Vec::with_capacity(pairs);
    while order.len() < pairs {
        let first = if draw() { Arm::B } else { Arm::A };
        order.push([first, first.other()]);
        if order.len() < pairs {
            order.push([first.other(), first]);
        }
    }
    order
}

/// An order in letters, a space between twos of pairs: `ABBA BAAB AB`.
pub fn order_text(order: &[[Arm; 2]]) -> String {
    order
        .chunks(2)
        .map(|two| two.iter().flatten().map(|a| a.letter()).collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

pub mod section;

#[cfg(test)]
mod tests;
