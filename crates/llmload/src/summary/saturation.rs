//! Saturation analysis over a sweep's curve: the saturating load `C_sat` from the
//! throughput curve, the latency knee, the recommended cap, and the largest load meeting the
//! SLO. Each answer says how it was computed; when the data cannot support one, it says that
//! instead of guessing.

use crate::fmt::number;
use crate::summary::CaseSummary;
use crate::workload::shape::Slo;
use serde::{Deserialize, Serialize};

/// Share of the peak throughput that counts as saturated.
pub const SATURATION_SHARE: f64 = 0.9;
/// The recommended cap, as a share of `C_sat`.
pub const CAP_SHARE: f64 = 0.8;

/// One load of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Concurrency, or arrivals per second.
    pub load: f64,
    /// Aggregate output tokens/s (per round mean, or over the window).
    pub throughput_tps: f64,
    /// Median TTFT, ms (from scheduled in an open loop).
    pub ttft_p50_ms: Option<f64>,
    /// p99 TTFT, ms (from scheduled in an open loop).
    pub ttft_p99_ms: Option<f64>,
    /// p99 time per output token, ms.
    pub tpot_p99_ms: Option<f64>,
    /// Samples behind the TTFT percentiles (the `ok` responses with a first token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_n: Option<usize>,
    /// Samples behind TPOT p99 (the `ok` responses of more than one token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_n: Option<usize>,
    /// p99 complete-response time, ms (from scheduled in an open loop).
    pub e2e_p99_ms: Option<f64>,
    /// Share of responses that failed or were invalid (requests cancelled by a stop left out).
    pub error_share: f64,
    /// Continuous and open loops: time-averaged requests in flight over the window.
    pub achieved_concurrency_mean: Option<f64>,
    /// Continuous and open loops: most requests in flight at once.
    pub achieved_concurrency_peak: Option<u32>,
}

/// The measured curve of a sweep, one point per case, in load order. A case cut short by a stop
/// (it has cancelled requests) is left out: its throughput and tails cover part of its load.
pub fn curve(cases: &[CaseSummary]) -> Vec<Point> {
    let mut points: Vec<Point> = cases
        .iter()
        .filter(|c| c.counts.cancelled == 0)
        .map(Point::of)
        .collect();
    points.sort_by(|a, b| a.load.total_cmp(&b.load));
    points
}

impl Point {
    /// The point of one case's summary.
    pub fn of(case: &CaseSummary) -> Point {
        let c = &case.counts;
        // Requests cancelled by a stop neither failed nor succeeded: they are not counted.
        let total = c.ok + c.invalid + c.error;
        let scheduled = case
            .load
            .as_ref()
            .filter(|l| l.ttft_from_scheduled_ms.is_some());
        let ttft = scheduled
            .and_then(|l| l.ttft_from_scheduled_ms.as_ref())
            .or(case.ttft_ms.as_ref());
        let e2e = scheduled
            .and_then(|l| l.e2e_from_scheduled_ms.as_ref())
            .or(case.e2e_ms.as_ref());
        Point {
            load: case
                .load
                .as_ref()
                .and_then(|l| l.nominal_rate_rps)
                .unwrap_or(f64::from(case.concurrency)),
            throughput_tps: case.throughput_tps.as_ref().map_or(0.0, |t| t.mean),
            ttft_p50_ms: ttft.map(|d| d.median),
            ttft_p99_ms: ttft.map(|d| d.p99),
            tpot_p99_ms: case.tpot_ms.as_ref().map(|d| d.p99),
            ttft_n: ttft.map(|d| d.n),
            tpot_n: case.tpot_ms.as_ref().map(|d| d.n),
            e2e_p99_ms: e2e.map(|d| d.p99),
            achieved_concurrency_mean: case.load.as_ref().map(|l| l.achieved_concurrency_mean),
            achieved_concurrency_peak: case.load.as_ref().map(|l| l.achieved_concurrency_peak),
            error_share: if total == 0 {
                1.0
            } else {
                f64::from(total - c.ok) / f64::from(total)
            },
        }
    }
}

/// One answer of the analysis: a value and how it was found, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The load, when the data supports one.
    pub value: Option<f64>,
    /// How it was computed, or why it could not be.
    pub method: String,
}

/// What a sweep's curve supports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// The measured points, in load order.
    pub points: Vec<Point>,
    /// Highest throughput measured, tokens/s, and its load.
    pub peak_throughput_tps: Option<f64>,
    /// The saturating load (`C_sat`).
    pub saturation: Finding,
    /// Where TTFT p50 starts growing faster than throughput.
    pub knee: Finding,
    /// The recommended cap.
    pub recommended_cap: Finding,
    /// The largest load meeting every p99 objective given.
    pub slo_max_load: Finding,
}

/// Index of the highest-throughput point.
pub fn peak(points: &[Point]) -> Option<usize> {
    (0..points.len()).max_by(|&a, &b| {
        points[a]
            .throughput_tps
            .total_cmp(&points[b].throughput_tps)
    })
}

/// Analyses `points` (any order); `integer_loads` rounds the cap down to a whole concurrency.
pub fn analyse(points: &[Point], slo: &Slo, integer_loads: bool) -> Analysis {
    let mut points = points.to_vec();
    points.sort_by(|a, b| a.load.total_cmp(&b.load));
    let saturation = saturation(&points, integer_loads);
    let recommended_cap = match saturation.value {
        Some(c) => {
            let cap = if integer_loads {
                (CAP_SHARE * c).floor().max(1.0)
            } else {
                CAP_SHARE * c
            };
            Finding {
                value: Some(cap),
                method: format!(
                    "{CAP_SHARE} × C_sat ({}){}",
                    number(c),
                    if integer_loads { ", rounded down" } else { "" }
                ),
            }
        }
        None => Finding {
            value: None,
            method: "no C_sat, so no cap".into(),
        },
    };
    Analysis {
        peak_throughput_tps: peak(&points).map(|i| points[i].throughput_tps),
        knee: knee(&points),
        slo_max_load: slo_max_load(&points, slo),
        saturation,
        recommended_cap,
        points,
    }
}

/// `C_sat`: the smallest load reaching 90% of the peak throughput, provided the curve flattened
/// (some load beyond it gained less than 10% more). With `integer_loads` (concurrencies) no load
/// is below 1.
fn saturation(points: &[Point], integer_loads: bool) -> Finding {
    if points.len() < 3 {
        return Finding {
            value: None,
            method: format!("{} loads measured; at least 3 are needed", points.len()),
        };
    }
    let Some(best) = peak(points) else {
        return Finding {
            value: None,
            method: "no loads measured".into(),
        };
    };
    let peak_tps = points[best].throughput_tps;
    if peak_tps <= 0.0 {
        return Finding {
            value: None,
            method: "no load completed any response".into(),
        };
    }
    // Still rising: the largest load is the best by more than 10% over every smaller load.
    let last = &points[points.len() - 1];
    let best_before = points[..points.len() - 1]
        .iter()
        .map(|p| p.throughput_tps)
        .fold(0.0, f64::max);
    if best == points.len() - 1 && last.throughput_tps > best_before * (2.0 - SATURATION_SHARE) {
        return Finding {
            value: None,
            method: format!(
                "throughput was still rising at the largest load ({}): no saturation reached, \
                 C_sat is above it",
                number(last.load)
            ),
        };
    }
    let at = points
        .iter()
        .find(|p| p.throughput_tps >= SATURATION_SHARE * peak_tps)
        .map(|p| p.load);
    if at == Some(points[0].load) {
        let share = SATURATION_SHARE * 100.0;
        let method = if integer_loads && points[0].load <= 1.0 {
            // No concurrency is lower than one request at a time.
            format!(
                "one request at a time already reached {share:.0}% of the peak throughput: more \
                 concurrency adds little here (a server that runs one request at a time, or a \
                 curve too flat to place C_sat); there is no lower concurrency to sweep"
            )
        } else {
            format!(
                "the smallest load ({}) already reached {share:.0}% of the peak throughput: C_sat \
                 is at or below it; sweep lower loads",
                number(points[0].load)
            )
        };
        return Finding {
            value: None,
            method,
        };
    }
    Finding {
        value: at,
        method: format!(
            "the smallest load reaching {:.0}% of the peak throughput ({peak_tps:.1} tokens/s)",
            SATURATION_SHARE * 100.0
        ),
    }
}

/// TTFT p50 must grow by more than this factor over one step for a knee…
pub const KNEE_TTFT_GROWTH: f64 = 1.5;
/// …while throughput grows by less than this factor.
pub const KNEE_THROUGHPUT_GROWTH: f64 = 1.1;

/// The knee: the last load before a step where TTFT p50 grew by more than 50% while throughput
/// grew by less than 10% — added requests queue instead of adding work. (Closed rounds raise TTFT
/// early from simultaneous prefills while throughput still rises; that is not the knee.)
fn knee(points: &[Point]) -> Finding {
    let method = format!(
        "the last load before a step where TTFT p50 grew by more than {:.0}% while throughput \
         grew by less than {:.0}%",
        (KNEE_TTFT_GROWTH - 1.0) * 100.0,
        (KNEE_THROUGHPUT_GROWTH - 1.0) * 100.0
    );
    for pair in points.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let (Some(t0), Some(t1)) = (a.ttft_p50_ms, b.ttft_p50_ms) else {
            continue;
        };
        if t0 <= 0.0 || a.throughput_tps <= 0.0 {
            continue;
        }
        let queueing = t1 / t0 > KNEE_TTFT_GROWTH;
        if queueing && b.throughput_tps / a.throughput_tps < KNEE_THROUGHPUT_GROWTH {
            return Finding {
                value: Some(a.load),
                method,
            };
        }
    }
    Finding {
        value: None,
        method: format!("no knee reached ({method})"),
    }
}

/// The largest load such that it and every smaller load meet every p99 objective given.
fn slo_max_load(points: &[Point], slo: &Slo) -> Finding {
    if slo.ttft.is_none() && slo.tpot.is_none() && slo.e2e.is_none() {
        return Finding {
            value: None,
            method: "no SLO given (--slo-ttft, --slo-tpot, --slo-e2e)".into(),
        };
    }
    let within = |v: Option<f64>, limit: Option<std::time::Duration>| {
        limit.is_none_or(|l| v.is_some_and(|v| v <= l.as_secs_f64() * 1e3))
    };
    let meets = |p: &Point| {
        within(p.ttft_p99_ms, slo.ttft)
            && within(p.tpot_p99_ms, slo.tpot)
            && within(p.e2e_p99_ms, slo.e2e)
            && p.error_share == 0.0
    };
    let value = points
        .iter()
        .take_while(|p| meets(p))
        .last()
        .map(|p| p.load);
    let method = match value {
        Some(_) if points.iter().all(meets) => "every load measured meets the SLO (p99); the largest load meeting it is above the sweep".into(),
        Some(_) => "the largest load that, with every smaller one, meets every p99 objective without errors".into(),
        None => "no load measured meets the SLO (p99)".into(),
    };
    Finding { value, method }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A server with `slots` slots: throughput rises linearly, then flat; TTFT is flat, then
    /// grows with the queue.
    fn curve(loads: &[f64], slots: f64) -> Vec<Point> {
        loads
            .iter()
            .map(|&c| Point {
                load: c,
                throughput_tps: 100.0 * c.min(slots) * (1.0 - 0.02 * c.min(slots)),
                ttft_p50_ms: Some(50.0 * (c / slots).max(1.0) + c),
                ttft_p99_ms: Some(80.0 * (c / slots).max(1.0) + c),
                tpot_p99_ms: Some(20.0),
                ttft_n: Some(10),
                tpot_n: Some(10),
                e2e_p99_ms: None,
                error_share: 0.0,
                achieved_concurrency_mean: None,
                achieved_concurrency_peak: None,
            })
            .collect()
    }

    #[test]
    fn saturating_curve_gives_c_sat_knee_and_cap() {
        let points = curve(&[1.0, 2.0, 4.0, 8.0, 16.0, 32.0], 8.0);
        let slo = Slo {
            ttft: Some(Duration::from_millis(150)),
            ..Slo::default()
        };
        let a = analyse(&points, &slo, true);
        assert_eq!(a.saturation.value, Some(8.0), "{}", a.saturation.method);
        assert_eq!(a.knee.value, Some(8.0), "{}", a.knee.method);
        assert_eq!(a.recommended_cap.value, Some(6.0));
        // p99 TTFT: 16 → 176 ms, above 150; 8 → 88 ms.
        assert_eq!(a.slo_max_load.value, Some(8.0), "{}", a.slo_max_load.method);
    }

    #[test]
    fn a_curve_still_rising_has_no_c_sat() {
        let points = curve(&[1.0, 2.0, 4.0], 64.0);
        let a = analyse(&points, &Slo::default(), true);
        assert_eq!(a.saturation.value, None);
        assert!(
            a.saturation.method.contains("still rising"),
            "{}",
            a.saturation.method
        );
        assert_eq!(a.knee.value, None);
        assert!(a.knee.method.starts_with("no knee reached"));
        assert_eq!(a.recommended_cap.value, None);
        assert!(a.slo_max_load.method.contains("no SLO"));
    }

    #[test]
    fn too_few_points_say_so_and_unmet_slo_says_so() {
        let points = curve(&[1.0, 2.0], 8.0);
        let slo = Slo {
            ttft: Some(Duration::from_millis(1)),
            ..Slo::default()
        };
        let a = analyse(&points, &slo, false);
        assert!(a.saturation.method.contains("at least 3"));
        assert_eq!(a.slo_max_load.value, None);
        assert!(a.slo_max_load.method.contains("no load"));
    }

    #[test]
    fn a_curve_saturated_from_its_first_load_has_no_c_sat() {
        let points = curve(&[8.0, 16.0, 32.0], 4.0);
        let a = analyse(&points, &Slo::default(), true);
        assert_eq!(a.saturation.value, None);
        assert!(
            a.saturation.method.contains("at or below"),
            "{}",
            a.saturation.method
        );
    }

    #[test]
    fn a_flat_curve_from_one_request_suggests_no_lower_concurrency() {
        let points = curve(&[1.0, 2.0, 4.0], 1.0);
        let a = analyse(&points, &Slo::default(), true);
        assert_eq!(a.saturation.value, None);
        let method = &a.saturation.method;
        assert!(method.contains("no lower concurrency"), "{method}");
        assert!(!method.contains("sweep lower loads"), "{method}");
        // Rates below 1 request/s exist: there the advice stands.
        let a = analyse(&points, &Slo::default(), false);
        assert!(
            a.saturation
                .method
                .contains("the smallest load (1) already reached 90%")
                && a.saturation.method.contains("sweep lower loads"),
            "{}",
            a.saturation.method
        );
    }

    #[test]
    fn rates_keep_a_fractional_cap() {
        let points = curve(&[1.0, 2.0, 3.0, 5.0, 7.0], 3.0);
        let a = analyse(&points, &Slo::default(), false);
        assert_eq!(a.saturation.value, Some(3.0));
        assert!((a.recommended_cap.value.expect("cap") - 2.4).abs() < 1e-9);
    }
}
