//! The change from BASE to NEW with its interval, and the call a rule makes on it.
//!
//! Each side's figure has its own interval at the level ([`crate::stats::interval`]); the two
//! sides are independent, so the change's interval combines them: each half-width is taken as
//! `z` standard errors (z the normal quantile of the level), and the change's half-widths are
//! `z` times the root of the sum of the squared errors of the sides (the new side's upper error
//! with the base's lower one for the upper bound, and the reverse). A relative change is worked
//! on the logarithms (a ratio's interval is not symmetric), an absolute one as it is.

use super::{Change, Figure, Op};
use crate::stats::Interval;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

/// The normal quantile of a two-sided `level`.
pub fn z(level: f64) -> f64 {
    Normal::new(0.0, 1.0).map_or(1.96, |n| n.inverse_cdf(0.5 + level / 2.0))
}

/// A side's standard errors below and above its figure, on the scale of `log` (logarithms) or
/// as they are; `None` where the side has no interval or its logarithm is undefined.
fn errors(f: &Figure, z: f64, log: bool) -> Option<(f64, f64)> {
    let i = f.interval?;
    if log {
        if f.value <= 0.0 || i.low <= 0.0 {
            return None;
        }
        Some((
            (f.value.ln() - i.low.ln()) / z,
            (i.high.ln() - f.value.ln()) / z,
        ))
    } else {
        Some(((f.value - i.low) / z, (i.high - f.value) / z))
    }
}

/// The interval of the change from `base` to `new` in the unit of `bound` (percent of BASE, or
/// the metric's unit), at `level`; `None` where a side has no interval.
pub fn interval(bound: Change, base: &Figure, new: &Figure, level: f64) -> Option<Interval> {
    interval_with(bound, base, new, level, Extra::NONE)
}

/// A variance the change holds beside the sides' own errors (the between-run term), on the
/// interval's scale (logarithms for a relative bound), with its degrees of freedom.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Extra {
    /// The variance.
    pub variance: f64,
    /// Its degrees of freedom (infinite: known exactly).
    pub df: f64,
}

impl Extra {
    /// No extra variance.
    pub const NONE: Extra = Extra {
        variance: 0.0,
        df: f64::INFINITY,
    };

    /// The quantile for a change whose sides' errors are `within` (squared, summed) and this
    /// variance beside them: the normal's for none, else Student's t at the Welch–Satterthwaite
    /// degrees of freedom (the sides' errors taken as known).
    fn quantile(self, within: f64, level: f64) -> f64 {
        let z = z(level);
        if self.variance <= 0.0 || !self.df.is_finite() {
            return z;
        }
        let total = within + self.variance;
        let df = total * total / (self.variance * self.variance / self.df.max(1.0));
        crate::stats::interval::t_quantile(level, df).unwrap_or(z)
    }
}

/// [`interval`] with the variance `extra` beside the sides' own errors.
pub fn interval_with(
    bound: Change,
    base: &Figure,
    new: &Figure,
    level: f64,
    extra: Extra,
) -> Option<Interval> {
    let z = z(level);
    let log = matches!(bound, Change::Percent(_));
    let half = |below: f64, above: f64| {
        let within = below * below + above * above;
        extra.quantile(within, level) * (within + extra.variance.max(0.0)).sqrt()
    };
    if log {
        if let (Some(b), Some(n)) = (errors(base, z, true), errors(new, z, true)) {
            let change = new.value.ln() - base.value.ln();
            let percent = |x: f64| (x.exp() - 1.0) * 100.0;
            return Some(Interval {
                low: percent(change - half(n.0, b.1)),
                high: percent(change + half(n.1, b.0)),
            });
        }
        // A side at or near 0 (an error rate, a mean held at 0): the difference relative to
        // BASE's figure (an extra term on the logarithms has no meaning here, so none).
        if base.value <= 0.0 {
            return None;
        }
        let (b, n) = (errors(base, z, false)?, errors(new, z, false)?);
        let combine = |below: f64, above: f64| z * (below * below + above * above).sqrt();
        let change = new.value - base.value;
        let scale = 100.0 / base.value;
        return Some(Interval {
            low: (change - combine(n.0, b.1)) * scale,
            high: (change + combine(n.1, b.0)) * scale,
        });
    }
    let (b, n) = (errors(base, z, false)?, errors(new, z, false)?);
    let change = new.value - base.value;
    Some(Interval {
        low: change - half(n.0, b.1),
        high: change + half(n.1, b.0),
    })
}

/// The interval of the change between two series of repeats (one figure per complete repeat
/// on each side), Welch's t on the figures (on their logarithms for a relative change), at
/// `level`; `None` under two repeats a side, or with a figure at or below 0 for a relative one.
pub fn between_repeats(bound: Change, base: &[f64], new: &[f64], level: f64) -> Option<Interval> {
    if base.len() < 2 || new.len() < 2 {
        return None;
    }
    let log = matches!(bound, Change::Percent(_));
    if log && base.iter().chain(new).any(|&v| v <= 0.0) {
        return None;
    }
    let scale = |v: &[f64]| -> Vec<f64> {
        if log {
            v.iter().map(|x| x.ln()).collect()
        } else {
            v.to_vec()
        }
    };
    let (b, n) = (scale(base), scale(new));
    let moments = |v: &[f64]| {
        let k = v.len() as f64;
        let mean = v.iter().sum::<f64>() / k;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0);
        (mean, var / k, k)
    };
    let ((mb, vb, kb), (mn, vn, kn)) = (moments(&b), moments(&n));
    let se2 = vb + vn;
    let diff = mn - mb;
    let half = if se2 > 0.0 {
        // Welch–Satterthwaite degrees of freedom.
        let df = se2 * se2 / (vb * vb / (kb - 1.0) + vn * vn / (kn - 1.0));
        crate::stats::interval::t_quantile(level, df)? * se2.sqrt()
    } else {
        0.0
    };
    Some(if log {
        let percent = |x: f64| (x.exp() - 1.0) * 100.0;
        Interval {
            low: percent(diff - half),
            high: percent(diff + half),
        }
    } else {
        Interval {
            low: diff - half,
            high: diff + half,
        }
    })
}

/// What a rule says of a change's interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Call {
    /// The whole interval is beyond the bound, the rule's way.
    Regressed,
    /// The whole interval is beyond the bound the other way (its mirror image).
    Improved,
    /// The whole interval is on the good side of the bound.
    NoChange,
    /// The interval straddles the bound: more samples would tell.
    Inconclusive,
}

/// The bound a rule sets, as a number in its unit.
pub fn bound_value(bound: Change) -> f64 {
    match bound {
        Change::Percent(v) | Change::Absolute(v) => v,
    }
}

/// The call of a rule `op bound` on a change whose interval is `i`.
pub fn call(op: Op, bound: Change, i: Interval) -> Call {
    let t = bound_value(bound);
    match op {
        Op::Above if i.low > t => Call::Regressed,
        Op::Above if i.high <= t && i.high < -t.abs() => Call::Improved,
        Op::Above if i.high <= t => Call::NoChange,
        Op::Below if i.high < t => Call::Regressed,
        Op::Below if i.low >= t && i.low > t.abs() => Call::Improved,
        Op::Below if i.low >= t => Call::NoChange,
        _ => Call::Inconclusive,
    }
}

/// The most rounds (or window) an inconclusive check asks for, as a multiple of what it had.
pub const MOST_FACTOR: f64 = 10.0;

/// The most repeats a side an inconclusive check asks for.
pub const MOST_REPEATS: f64 = 20.0;

/// What would likely decide an inconclusive check, in the unit that would decide it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum ToDecide {
    /// About `factor` × the rounds (or the window) on both sides: the within-run spread
    /// dominates.
    Rounds {
        /// The multiple.
        factor: f64,
    },
    /// About `count` repeats a side (`--repeat`, or an interleaved `ab` run): the between-run
    /// spread dominates, which more rounds do not shrink.
    Repeats {
        /// Repeats a side.
        count: u32,
    },
    /// Beyond [`MOST_FACTOR`] × the rounds, or [`MOST_REPEATS`] repeats where rounds cannot
    /// decide: too close to the bound to decide at any affordable size.
    TooClose,
}

/// For an inconclusive call of a change `change` whose interval is `i`: what would likely
/// narrow the interval enough to decide, the interval shrinking as one over the root of the
/// units. `between`: the share of the change's variance that is between runs (0 to 1), which
/// more rounds do not shrink; `repeats`: the repeats a side the interval already rests on (1
/// for single attempts). `None` where the change sits on the bound itself.
pub fn to_decide(
    change: f64,
    bound: Change,
    i: Interval,
    between: f64,
    repeats: usize,
) -> Option<ToDecide> {
    let factor = samples_to_decide(change, bound, i)?;
    let between = between.clamp(0.0, 1.0);
    let repeats = repeats.max(1) as f64;
    // Rounds shrink only the within-run share: (1 − b) / m + b ≤ 1 / factor.
    let need = 1.0 / factor - between;
    if repeats <= 1.0 && need > 0.0 {
        let rounds = (1.0 - between) / need;
        return Some(if rounds <= MOST_FACTOR {
            ToDecide::Rounds {
                factor: rounds.max(1.0),
            }
        } else {
            ToDecide::TooClose
        });
    }
    // More rounds cannot narrow it enough; repeats shrink the whole: each is a new attempt.
    let count = (repeats * factor).ceil().max(2.0);
    Some(if count <= MOST_REPEATS {
        ToDecide::Repeats {
            count: crate::num::to_u32(count),
        }
    } else {
        ToDecide::TooClose
    })
}

/// How many times the units (on both sides) would likely narrow the interval `i` of `change`
/// enough to decide against `bound`; `None` where the change sits on the bound itself.
pub fn samples_to_decide(change: f64, bound: Change, i: Interval) -> Option<f64> {
    let t = bound_value(bound);
    let distance = (change - t).abs();
    // The half on the bound's side is the one that must shrink.
    let half = if change > t {
        change - i.low
    } else {
        i.high - change
    };
    (distance > half * 1e-3).then(|| (half / distance).powi(2).max(1.0))
}

/// The smallest change the two sides could tell from none, were NEW measured as BASE was: the
/// half-width of the change's interval between two copies of BASE, in the rule's unit, with
/// the between-run variance `extra`.
pub fn noise_floor(bound: Change, base: &Figure, level: f64, extra: Extra) -> Option<f64> {
    let i = interval_with(bound, base, base, level, extra)?;
    Some((i.high - i.low) / 2.0)
}

/// The sides' own variance of the change (squared standard errors, each side's mean of its
/// lower and upper), on the interval's scale; `None` where a side has no interval.
pub fn within_variance(bound: Change, base: &Figure, new: &Figure, level: f64) -> Option<f64> {
    let z = z(level);
    let log = matches!(bound, Change::Percent(_));
    let (b, n) = (errors(base, z, log)?, errors(new, z, log)?);
    let mean = |e: (f64, f64)| f64::midpoint(e.0 * e.0, e.1 * e.1);
    Some(mean(b) + mean(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(value: f64, low: f64, high: f64) -> Figure {
        Figure {
            value,
            n: 100,
            of: "responses",
            interval: Some(Interval { low, high }),
            basis: None,
            no_interval: None,
        }
    }

    #[test]
    fn a_relative_change_combines_the_sides_on_their_logarithms() {
        let (base, new) = (figure(100.0, 90.0, 110.0), figure(150.0, 135.0, 165.0));
        let i = interval(Change::Percent(10.0), &base, &new, 0.95).expect("interval");
        assert!(
            i.low > 30.0 && i.low < 50.0 && i.high > 50.0 && i.high < 75.0,
            "{i:?}"
        );
        assert_eq!(call(Op::Above, Change::Percent(10.0), i), Call::Regressed);
        let same = interval(Change::Percent(10.0), &base, &base, 0.95).expect("interval");
        assert!(same.low < 0.0 && same.high > 0.0);
        assert_eq!(
            call(Op::Above, Change::Percent(10.0), same),
            Call::Inconclusive
        );
        assert_eq!(call(Op::Above, Change::Percent(20.0), same), Call::NoChange);
    }

    #[test]
    fn calls_follow_the_interval_against_the_bound_either_way() {
        let i = |low, high| Interval { low, high };
        let up = Change::Percent(10.0);
        assert_eq!(call(Op::Above, up, i(11.0, 30.0)), Call::Regressed);
        assert_eq!(call(Op::Above, up, i(5.0, 30.0)), Call::Inconclusive);
        assert_eq!(call(Op::Above, up, i(-5.0, 9.0)), Call::NoChange);
        assert_eq!(call(Op::Above, up, i(-30.0, -11.0)), Call::Improved);
        let down = Change::Percent(-5.0);
        assert_eq!(call(Op::Below, down, i(-20.0, -6.0)), Call::Regressed);
        assert_eq!(call(Op::Below, down, i(-6.0, 3.0)), Call::Inconclusive);
        assert_eq!(call(Op::Below, down, i(-4.0, 3.0)), Call::NoChange);
        assert_eq!(call(Op::Below, down, i(6.0, 9.0)), Call::Improved);
    }

    #[test]
    fn more_samples_are_asked_for_in_proportion_to_the_square_of_the_excess_width() {
        // Change 5 %, bound 10 %, upper half 10 points: the half must halve, 4× the samples.
        let i = Interval {
            low: -5.0,
            high: 15.0,
        };
        let k = samples_to_decide(5.0, Change::Percent(10.0), i).expect("decidable");
        assert!((k - 4.0).abs() < 1e-9, "{k}");
        assert_eq!(samples_to_decide(10.0, Change::Percent(10.0), i), None);
    }

    #[test]
    fn what_decides_is_counted_in_its_unit_and_capped() {
        let i = Interval {
            low: -5.0,
            high: 15.0,
        };
        let bound = Change::Percent(10.0);
        // Within-run spread alone: 4× the rounds.
        assert_eq!(
            to_decide(5.0, bound, i, 0.0, 1),
            Some(ToDecide::Rounds { factor: 4.0 })
        );
        // Half of it between runs: rounds shrink only the other half, 1 / (1/4 − 1/2) < 0,
        // so only repeats decide: 4 a side.
        assert_eq!(
            to_decide(5.0, bound, i, 0.5, 1),
            Some(ToDecide::Repeats { count: 4 })
        );
        // A tenth between runs: (0.9) / (0.25 − 0.1) = 6× the rounds.
        let Some(ToDecide::Rounds { factor }) = to_decide(5.0, bound, i, 0.1, 1) else {
            panic!("rounds decide");
        };
        assert!((factor - 6.0).abs() < 1e-9, "{factor}");
        // Already 3 repeats a side: 12.
        assert_eq!(
            to_decide(5.0, bound, i, 1.0, 3),
            Some(ToDecide::Repeats { count: 12 })
        );
        // Next to the bound: (10 / 0.1)² = 10,000×: too close, in either unit.
        assert_eq!(to_decide(9.9, bound, i, 0.0, 1), Some(ToDecide::TooClose));
        assert_eq!(to_decide(9.9, bound, i, 1.0, 2), Some(ToDecide::TooClose));
        assert_eq!(to_decide(10.0, bound, i, 0.0, 1), None);
    }

    #[test]
    fn repeats_give_welchs_interval_of_the_change() {
        let base = [100.0, 110.0, 90.0, 105.0, 95.0];
        let same = [98.0, 108.0, 93.0, 104.0, 97.0];
        let i = between_repeats(Change::Percent(10.0), &base, &same, 0.95).expect("interval");
        assert!(i.low < 0.0 && i.high > 0.0 && i.high < 15.0, "{i:?}");
        let slow: Vec<f64> = base.iter().map(|v| v * 1.4).collect();
        let i = between_repeats(Change::Percent(10.0), &base, &slow, 0.95).expect("interval");
        assert_eq!(
            call(Op::Above, Change::Percent(10.0), i),
            Call::Regressed,
            "{i:?}"
        );
        assert_eq!(
            between_repeats(Change::Percent(10.0), &base[..1], &slow, 0.95),
            None
        );
        let i = between_repeats(Change::Absolute(5.0), &base, &base, 0.95).expect("interval");
        assert!(i.low < 0.0 && i.high > 0.0);
    }

    #[test]
    fn three_quiet_repeats_a_side_are_no_change_and_one_slowed_repeat_cannot_tell() {
        // Two series of the same 20 ms TTFT under `ttft_p50 > +100%`: quiet, no change.
        let base = [20.6, 20.7, 20.8];
        let same = [20.5, 20.7, 20.9];
        let i = between_repeats(Change::Percent(100.0), &base, &same, 0.95).expect("interval");
        assert_eq!(
            call(Op::Above, Change::Percent(100.0), i),
            Call::NoChange,
            "{i:?}"
        );
        // One repeat of BASE slowed to 40 ms by a busy machine: with two degrees of freedom the
        // interval reaches past +100 %, and the call is that it cannot tell, never regressed.
        let slowed = [20.6, 20.7, 40.0];
        let i = between_repeats(Change::Percent(100.0), &slowed, &same, 0.95).expect("interval");
        assert!(i.low < 0.0 && i.high > 100.0, "{i:?}");
        assert_eq!(
            call(Op::Above, Change::Percent(100.0), i),
            Call::Inconclusive,
            "{i:?}"
        );
        // Ten times slower on every repeat is told whatever that one repeat did.
        let slow = [206.0, 207.0, 208.0];
        let i = between_repeats(Change::Percent(100.0), &slowed, &slow, 0.95).expect("interval");
        assert_eq!(
            call(Op::Above, Change::Percent(100.0), i),
            Call::Regressed,
            "{i:?}"
        );
    }

    #[test]
    fn the_noise_floor_is_the_half_width_between_two_copies_of_base() {
        let base = figure(100.0, 90.0, 110.0);
        let floor = noise_floor(Change::Percent(10.0), &base, 0.95, Extra::NONE).expect("floor");
        // √2 × ~10 %.
        assert!(floor > 13.0 && floor < 16.0, "{floor}");
        assert_eq!(
            noise_floor(
                Change::Percent(10.0),
                &Figure {
                    interval: None,
                    ..base
                },
                0.95,
                Extra::NONE
            ),
            None
        );
    }
}
