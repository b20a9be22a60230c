//! `sweep --auto` after its doubling: loads added inside `C_sat`'s range until the range is
//! narrow, every load inside it is measured, or the budget of loads is spent — and which of
//! those ended it, in words.

use crate::fmt::number;
use crate::summary::saturation::{model, Point, Shape};

/// `C_sat`'s range is narrow enough when its width is at most this share of `C_sat`.
pub(super) const NARROW: f64 = 0.25;

/// What the refinement does next.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Step {
    /// Measure this load.
    Measure(f64),
    /// Stop refining, and why.
    Done(String),
}

/// The next step for the measured `points` (in load order) of a sweep of `shape`, with `budget`
/// loads allowed in all and `max_load` the largest allowed.
pub(super) fn next(points: &[Point], shape: Shape, budget: usize, max_load: f64) -> Step {
    let Some(fit) = model::fit(points, shape) else {
        return Step::Done("too few loads with throughput to fit C_sat".into());
    };
    let (first, last) = fit.span();
    let range = if fit.high.is_finite() {
        format!("{}–{}", number(fit.low), number(fit.high))
    } else {
        format!("{} or more", number(fit.low))
    };
    if fit.best.is_infinite() {
        return Step::Done(format!(
            "throughput still rose at the largest load {} (--max-load {}): C_sat is above it",
            number(last),
            number(max_load)
        ));
    }
    if fit.high.is_finite() && fit.high - fit.low <= NARROW * fit.best {
        return Step::Done(format!(
            "C_sat's range {range} is narrow enough (within {:.0} % of C_sat) after {} loads",
            NARROW * 100.0,
            points.len()
        ));
    }
    if points.len() >= budget {
        return Step::Done(format!(
            "the budget of {budget} loads (--max-loads) is spent; C_sat's range is still {range}"
        ));
    }
    let high = if fit.high.is_finite() {
        fit.high
    } else {
        (last * 2.0).min(max_load)
    };
    let low = if shape == Shape::Rounds || fit.low > first {
        fit.low
    } else {
        first / 2.0
    };
    match widest_gap(points, low, high, shape.integer()) {
        Some(load) => Step::Measure(load),
        None => Step::Done(format!(
            "every load inside C_sat's range {range} is measured; it cannot narrow further"
        )),
    }
}

/// The middle (geometric; rounded for concurrencies) of the widest gap, on a log scale, between
/// the measured loads and the ends of `[low, high]`, when it is not measured already.
fn widest_gap(points: &[Point], low: f64, high: f64, integer: bool) -> Option<f64> {
    let measured = |l: f64| points.iter().any(|p| crate::num::same_load(p.load, l));
    let mut marks: Vec<f64> = points
        .iter()
        .map(|p| p.load)
        .filter(|&l| l > low && l < high)
        .collect();
    marks.extend([low, high]);
    marks.sort_by(f64::total_cmp);
    let mut gaps: Vec<(f64, f64)> = marks
        .windows(2)
        .map(|w| (w[0], w[1]))
        .filter(|(a, b)| b > a)
        .collect();
    gaps.sort_by(|x, y| (y.1 / y.0).total_cmp(&(x.1 / x.0)));
    gaps.into_iter().find_map(|(a, b)| {
        let middle = (a * b).sqrt();
        let load = if integer {
            middle.round().max(1.0)
        } else {
            middle
        };
        // A gap between two measured loads needs a load strictly inside it.
        let inside = (load > a || !measured(a)) && (load < b || !measured(b));
        (inside && !measured(load)).then_some(load)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A closed-rounds curve of a server with `slots` slots (throughput only).
    fn rounds(loads: &[f64], slots: f64) -> Vec<Point> {
        loads
            .iter()
            .map(|&c| Point {
                load: c,
                throughput_tps: 100.0 * c / ((c / slots).ceil() + c / 4.0),
                throughput_sd_tps: None,
                throughput_rounds: Some(1),
                ttft_p50_ms: None,
                ttft_p99_ms: None,
                tpot_p99_ms: None,
                ttft_n: None,
                tpot_n: None,
                e2e_p99_ms: None,
                e2e_p50_ms: None,
                e2e_n: None,
                error_share: 0.0,
                achieved_concurrency_mean: None,
                achieved_concurrency_peak: None,
            })
            .collect()
    }

    /// Why the refinement of `points` stops, with `budget` loads and `max_load`.
    fn done(points: &[Point], budget: usize, max_load: f64) -> String {
        match next(points, Shape::Rounds, budget, max_load) {
            Step::Done(why) => why,
            Step::Measure(load) => panic!("{load} to measure"),
        }
    }

    #[test]
    fn a_wide_range_gets_a_load_inside_it_and_a_narrow_one_stops() {
        // 1, 2, 4, 8, 16 cannot tell 8 slots from 9 … 15: 16 runs in two waves on all of them.
        let points = rounds(&[1.0, 2.0, 4.0, 8.0, 16.0], 8.0);
        let Step::Measure(load) = next(&points, Shape::Rounds, 12, 256.0) else {
            panic!("a load to add");
        };
        assert!(load > 8.0 && load < 16.0, "{load}");
        // With 11 measured, 9–10 remain (11 ran in two waves); then 9 leaves 8.
        let points = rounds(&[1.0, 2.0, 4.0, 8.0, 9.0, 11.0, 16.0], 8.0);
        let why = done(&points, 12, 256.0);
        assert!(
            why.contains("narrow enough") && why.contains("after 7 loads"),
            "{why}"
        );
    }

    #[test]
    fn the_budget_ends_the_refinement_and_says_so() {
        let points = rounds(&[1.0, 2.0, 4.0, 8.0, 16.0], 8.0);
        let why = done(&points, 5, 256.0);
        assert!(
            why.contains("budget of 5 loads") && why.contains("8–15"),
            "{why}"
        );
    }

    #[test]
    fn a_curve_still_rising_stops_at_the_largest_load() {
        let points = rounds(&[1.0, 2.0, 4.0], 64.0);
        let why = done(&points, 12, 4.0);
        assert!(why.contains("still rose"), "{why}");
    }
}
