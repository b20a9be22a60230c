//! A continuous or open loop run as a series (`run --repeat N`): the window figures of the
//! complete repeats combined. Each repeat has a window of its own, separated from the next by
//! the other cases and the next repeat's warmup, so the rates are not taken over one span of
//! time: each repeat's rate is one measurement, and the series' rate is their mean with
//! Student's t over the repeats (the independent unit). The latencies from `scheduled` and the
//! send lag are over the responses of every complete repeat, as the case's other latencies are.

use crate::stats::interval::{Ci, Unit};
use crate::stats::Spread;
use crate::summary::load::LoadSummary;

/// The window figures of a series' case: `pooled` (summarised from the records of every
/// complete repeat together, so its latency distributions are right but its window is not) with
/// its rates and concurrency from `each` complete repeat's own window figures, in repeat order.
/// With one repeat, that repeat's figures; with none, `pooled` as it is.
pub fn combine(pooled: LoadSummary, each: &[&LoadSummary]) -> LoadSummary {
    let Some(first) = each.first() else {
        return pooled;
    };
    if each.len() == 1 {
        return LoadSummary {
            send_lag_ms: pooled.send_lag_ms,
            ttft_from_scheduled_ms: pooled.ttft_from_scheduled_ms,
            e2e_from_scheduled_ms: pooled.e2e_from_scheduled_ms,
            ..(*first).clone()
        };
    }
    let rate = |f: &dyn Fn(&LoadSummary) -> f64| -> (f64, Ci) {
        let values: Vec<f64> = each.iter().map(|l| f(l)).collect();
        mean_over_repeats(&values)
    };
    let (throughput, throughput_ci) = rate(&|l| l.throughput_tps);
    let (completed, completed_ci) = rate(&|l| l.completed_rps);
    let goodput = each
        .iter()
        .all(|l| l.goodput_rps.is_some())
        .then(|| rate(&|l| l.goodput_rps.unwrap_or(0.0)));
    let length = |l: &LoadSummary| (l.window_s[1] - l.window_s[0]).max(0.0);
    // The share of completions meeting the objectives, over every repeat's completions.
    let completions: Vec<f64> = each.iter().map(|l| l.completed_rps * length(l)).collect();
    let all: f64 = completions.iter().sum();
    let slo_met_share = each
        .iter()
        .all(|l| l.slo_met_share.is_some() || l.completed_rps == 0.0)
        .then(|| {
            let met: f64 = each
                .iter()
                .zip(&completions)
                .map(|(l, n)| l.slo_met_share.unwrap_or(0.0) * n)
                .sum();
            met / all
        })
        .filter(|_| all > 0.0 && pooled.slo_met_share.is_some());
    let concurrency: Vec<f64> = each.iter().map(|l| l.achieved_concurrency_mean).collect();
    let start = each
        .iter()
        .map(|l| l.window_s[0])
        .fold(f64::INFINITY, f64::min);
    let end = each
        .iter()
        .map(|l| l.window_s[1])
        .fold(f64::NEG_INFINITY, f64::max);
    LoadSummary {
        window_s: [start, end],
        requests_launched: each.iter().map(|l| l.requests_launched).sum(),
        completed_rps: completed,
        throughput_tps: throughput,
        goodput_rps: goodput.as_ref().map(|g| g.0),
        slo_met_share,
        achieved_concurrency_mean: mean(&concurrency),
        achieved_concurrency_peak: each
            .iter()
            .map(|l| l.achieved_concurrency_peak)
            .max()
            .unwrap_or(0),
        pacer_priority: first
            .pacer_priority
            .clone()
            .or(pooled.pacer_priority.clone()),
        throughput_ci: Some(throughput_ci),
        completed_ci: Some(completed_ci),
        goodput_ci: goodput.map(|g| g.1),
        ..pooled
    }
}

/// The mean of one value per repeat and its interval over the repeats.
fn mean_over_repeats(values: &[f64]) -> (f64, Ci) {
    let ci = Ci::t_over(values, Unit::Repeat, 2);
    (mean(values), ci)
}

/// The mean of `values` (0 without any).
fn mean(values: &[f64]) -> f64 {
    Spread::of(values).map_or(0.0, |s| s.mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::window::LoadShape;

    fn load(window: [f64; 2], tps: f64, rps: f64, met: Option<f64>) -> LoadSummary {
        LoadSummary {
            shape: LoadShape::Poisson,
            nominal_concurrency: Some(8),
            nominal_rate_rps: Some(2.0),
            window_s: window,
            requests_launched: 20,
            completed_rps: rps,
            throughput_tps: tps,
            goodput_rps: met.map(|m| m * rps),
            slo_met_share: met,
            achieved_concurrency_mean: tps / 10.0,
            achieved_concurrency_peak: if tps > 115.0 { 12 } else { 10 },
            send_lag_ms: None,
            pacer_priority: None,
            ttft_from_scheduled_ms: None,
            e2e_from_scheduled_ms: None,
            stage: None,
            throughput_ci: None,
            completed_ci: None,
            goodput_ci: None,
            own_responses: None,
            window_throughput_tps: None,
        }
    }

    #[test]
    fn rates_are_the_mean_of_the_repeats_with_an_interval_over_them() {
        let a = load([10.0, 20.0], 100.0, 2.0, Some(1.0));
        let b = load([40.0, 50.0], 120.0, 2.0, Some(0.5));
        let c = load([70.0, 80.0], 110.0, 4.0, Some(0.25));
        let pooled = load([10.0, 20.0], 999.0, 99.0, Some(0.9));
        let out = combine(pooled, &[&a, &b, &c]);
        assert_eq!(out.throughput_tps, 110.0);
        assert_eq!(out.window_s, [10.0, 80.0]);
        assert_eq!(out.requests_launched, 60);
        assert_eq!(out.achieved_concurrency_peak, 12);
        let ci = out.throughput_ci.expect("an interval");
        assert_eq!((ci.basis.unit, ci.basis.units), (Unit::Repeat, 3));
        let i = ci.interval.expect("three repeats");
        let (lo, hi) = (i.low, i.high);
        assert!(lo < 110.0 && hi > 110.0 && lo > 0.0, "{lo} {hi}");
        // 20 + 10 + 10 of 20 + 20 + 40 completions met every objective.
        assert_eq!(out.slo_met_share, Some(40.0 / 80.0));
        assert_eq!(out.goodput_rps, Some((2.0 + 1.0 + 1.0) / 3.0));
    }

    #[test]
    fn one_repeat_keeps_its_own_figures_and_intervals() {
        let mut a = load([10.0, 20.0], 100.0, 2.0, None);
        a.throughput_ci = Some(Ci::t_over(&[90.0, 110.0, 100.0], Unit::Block, 2));
        let out = combine(load([0.0, 1.0], 5.0, 5.0, None), &[&a]);
        assert_eq!(out, a);
        assert_eq!(out.slo_met_share, None);
        // Without repeats the pooled figures are all there is.
        let pooled = load([0.0, 1.0], 5.0, 5.0, None);
        assert_eq!(combine(pooled.clone(), &[]), pooled);
    }
}
