//! Saturation analysis over a sweep's curve: the saturating load `C_sat` from a throughput
//! model fitted over every load ([`model`]), the latency knee from TTFT's tail and median
//! ([`knee`]), the recommended cap, the largest load meeting the SLO, and the loads where
//! throughput fell. `C_sat`, the knee and the cap carry the range of loads the data is consistent
//! with, so that a finer grid narrows them rather than moves them. Each answer says how it was
//! computed; when the data cannot support one, it says that instead of guessing.

use super::case::CaseSummary;
use crate::fmt::number;
use crate::workload::shape::Slo;
use serde::{Deserialize, Serialize};

pub mod knee;
pub mod model;

pub use model::{Dip, Fit, Shape};

/// The recommended cap, as a share of `C_sat`: 70 %, rounded to the nearest whole load for
/// concurrencies (so between 65 and 75 % of `C_sat` from 10 up).
pub const CAP_SHARE: f64 = 0.7;

/// The most the recommended cap may be of the low end of `C_sat`'s range: a bound that holds
/// where noise spreads the range far below the fitted breakpoint, and not where the grid merely
/// cannot tell neighbouring breakpoints apart (0.8 × 11 is above 0.7 × 12).
pub const CAP_BOUND: f64 = 0.8;

/// One load of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Concurrency, or arrivals per second.
    pub load: f64,
    /// Aggregate output tokens/s (per round mean, or over the window).
    pub throughput_tps: f64,
    /// Standard deviation of the rounds' throughputs, tokens/s (absent in older summaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_sd_tps: Option<f64>,
    /// Rounds behind `throughput_tps` (1 for a window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_rounds: Option<usize>,
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
    /// Embeddings and rerank, which have no TTFT: the median latency, ms (from scheduled in an
    /// open loop), whose knee stands for TTFT's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_p50_ms: Option<f64>,
    /// Embeddings and rerank: the samples behind the latency percentiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_n: Option<usize>,
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
            throughput_sd_tps: case.throughput_tps.as_ref().map(|t| t.sd),
            throughput_rounds: case.throughput_tps.as_ref().map(|t| t.n),
            ttft_p50_ms: ttft.map(|d| d.median),
            ttft_p99_ms: ttft.map(|d| d.p99),
            tpot_p99_ms: case.tpot_ms.as_ref().map(|d| d.p99),
            ttft_n: ttft.map(|d| d.n),
            tpot_n: case.tpot_ms.as_ref().map(|d| d.n),
            e2e_p99_ms: e2e.map(|d| d.p99),
            e2e_p50_ms: e2e.filter(|_| case.pooling.is_some()).map(|d| d.median),
            e2e_n: e2e.filter(|_| case.pooling.is_some()).map(|d| d.n),
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

/// The shape of a sweep of `cases`: open when its loads are rates, else closed rounds unless
/// its cases kept their concurrency in flight (they carry window figures).
pub fn shape_of(cases: &[CaseSummary], open: bool) -> Shape {
    if open {
        Shape::Open
    } else if cases.iter().all(|c| c.load.is_none()) {
        Shape::Rounds
    } else {
        Shape::Continuous
    }
}

/// One answer of the analysis: a value, its range, and how it was found, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The load, when the data supports one.
    pub value: Option<f64>,
    /// The smallest load the data is consistent with (absent: not bounded below, or a summary
    /// written before ranges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    /// The largest load the data is consistent with (absent: not bounded by the loads
    /// measured, or a summary written before ranges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    /// How it was computed, or why it could not be.
    pub method: String,
}

impl Finding {
    /// The value a view may headline: none where the range is bounded on one side only (the
    /// data places the load no nearer than that bound, whatever point fitted best). A finding
    /// without any range (a summary written before ranges) keeps its value.
    pub fn placed(&self) -> Option<f64> {
        match (self.low, self.high) {
            (Some(_), None) | (None, Some(_)) => None,
            _ => self.value,
        }
    }

    /// No value, and why.
    fn none(method: impl Into<String>) -> Finding {
        Finding {
            value: None,
            low: None,
            high: None,
            method: method.into(),
        }
    }
}

/// What a sweep's curve supports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// The measured points, in load order.
    pub points: Vec<Point>,
    /// Highest throughput measured, tokens/s, and its load.
    pub peak_throughput_tps: Option<f64>,
    /// The saturating load (`C_sat`): the breakpoint of the throughput model fitted to every
    /// load, with the range of breakpoints that fit within noise.
    pub saturation: Finding,
    /// Where TTFT (its tail or its median) starts growing faster, fitted to every load.
    pub knee: Finding,
    /// The recommended cap.
    pub recommended_cap: Finding,
    /// The largest load meeting every p99 objective given.
    pub slo_max_load: Finding,
    /// Loads whose throughput fell below a smaller load's by more than the noise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throughput_dips: Vec<Dip>,
}

/// Index of the highest-throughput point.
pub fn peak(points: &[Point]) -> Option<usize> {
    (0..points.len()).max_by(|&a, &b| {
        points[a]
            .throughput_tps
            .total_cmp(&points[b].throughput_tps)
    })
}

/// Analyses `points` (any order) of a sweep of `shape`; concurrencies round the cap down.
pub fn analyse(points: &[Point], slo: &Slo, shape: Shape) -> Analysis {
    let mut points = points.to_vec();
    points.sort_by(|a, b| a.load.total_cmp(&b.load));
    let fit = model::fit(&points, shape);
    let saturation = saturation(&points, fit.as_ref(), shape);
    let recommended_cap = cap(&saturation, shape.integer());
    Analysis {
        peak_throughput_tps: peak(&points).map(|i| points[i].throughput_tps),
        knee: knee(&points, shape.integer()),
        slo_max_load: slo_max_load(&points, slo),
        throughput_dips: model::dips(&points, fit.as_ref()),
        saturation,
        recommended_cap,
        points,
    }
}

/// The recommended cap: [`CAP_SHARE`] × `C_sat` as the fitted model places it (its breakpoint,
/// not the low end of its range, which the grid of loads sets), rounded to the nearest whole load
/// (1 at least) for concurrencies, and never above [`CAP_BOUND`] × the low end of the range
/// (rounded down), so that it stays below saturation wherever in its range `C_sat` lies. Its
/// range is [`CAP_SHARE`] × each end of `C_sat`'s. Where `C_sat` is not placed (bounded below
/// only), [`CAP_SHARE`] × that bound, below it wherever `C_sat` lies.
fn cap(saturation: &Finding, integer_loads: bool) -> Finding {
    if saturation.value.or(saturation.low).is_none() {
        return Finding::none("no C_sat, so no cap");
    }
    let Some(low) = saturation.low else {
        return Finding::none(
            "C_sat's range reaches below the smallest load measured, so no cap is safe; sweep \
             lower loads",
        );
    };
    let share = |c: f64| {
        if integer_loads {
            (CAP_SHARE * c).round().max(1.0)
        } else {
            CAP_SHARE * c
        }
    };
    let rounded = if integer_loads {
        ", rounded to the nearest whole load"
    } else {
        ""
    };
    let Some(c) = saturation.placed() else {
        return Finding {
            value: Some(share(low)),
            low: None,
            high: None,
            method: format!(
                "{CAP_SHARE} × C_sat's lower bound ({}){rounded}; C_sat itself could not be \
                 placed, and this cap is below it wherever it lies",
                number(low)
            ),
        };
    };
    let bound = if integer_loads {
        (CAP_BOUND * low).floor().max(1.0)
    } else {
        CAP_BOUND * low
    };
    let bounded = if share(c) > bound {
        format!(
            ", lowered to {CAP_BOUND} × the low end of its range ({}{}) to stay below \
             saturation wherever in the range C_sat lies",
            number(low),
            if integer_loads { ", rounded down" } else { "" }
        )
    } else {
        String::new()
    };
    Finding {
        value: Some(share(c).min(bound)),
        low: Some(share(low)),
        high: saturation.high.map(share),
        method: format!(
            "{CAP_SHARE} × C_sat ({}), the breakpoint of the fitted model{rounded}{bounded}; its \
             range is {CAP_SHARE} × each end of C_sat's",
            number(c)
        ),
    }
}

/// `C_sat`: the breakpoint of the model of `shape` fitted to every point, with the range of
/// breakpoints within noise; none when the curve still rises at its largest load, or had already
/// flattened at its smallest.
fn saturation(points: &[Point], fit: Option<&Fit>, shape: Shape) -> Finding {
    if points.len() < 3 {
        return Finding::none(format!(
            "{} loads measured; at least 3 are needed",
            points.len()
        ));
    }
    let Some(fit) = fit else {
        return Finding::none("no load completed any response");
    };
    let (first, last) = fit.span();
    // Below the smallest load, only closed rounds' waves tell breakpoints apart.
    let bounded_below = shape == Shape::Rounds || fit.low > first;
    if fit.best.is_infinite() && fit.low < last && bounded_below {
        // A curve still bending at the largest load fits best, but so do breakpoints from
        // `fit.low` up: C_sat is bounded below and cannot be placed.
        return Finding {
            value: None,
            low: Some(fit.low),
            high: None,
            method: format!(
                "no breakpoint fits better than a curve still bending at the largest load ({}), \
                 but every breakpoint from {} up fits within noise of it (95 %; a {} fitted to \
                 all {} loads): C_sat is {} or more and cannot be placed; sweep more loads \
                 above {}",
                number(last),
                number(fit.low),
                shape.model(),
                points.len(),
                number(fit.low),
                number(fit.low)
            ),
        };
    }
    if fit.best.is_infinite() {
        return Finding::none(format!(
            "throughput was still rising at the largest load ({}): no saturation reached, \
             C_sat is above it ({})",
            number(last),
            shape.model()
        ));
    }
    if fit.best <= first * (1.0 + 1e-9) {
        let method = if shape.integer() && first <= 1.0 {
            // No concurrency is lower than one request at a time.
            "one request at a time already made the most throughput: more concurrency adds \
             little here (a server that runs one request at a time, or a curve too flat to \
             place C_sat); there is no lower concurrency to sweep"
                .to_owned()
        } else {
            format!(
                "throughput had already flattened at the smallest load ({}): C_sat is at or \
                 below it; sweep lower loads",
                number(first)
            )
        };
        return Finding::none(method);
    }
    Finding {
        value: Some(fit.best),
        low: bounded_below.then_some(fit.low),
        high: fit.high.is_finite().then_some(fit.high),
        method: format!(
            "the breakpoint of a {} fitted to all {} loads; the range holds every breakpoint \
             whose fit is within noise of the best (95 %{}){}",
            shape.model(),
            points.len(),
            if fit.scale > 1.0 {
                format!(
                    ", the threshold widened ×{:.1} for residuals beyond the rounds' spread",
                    fit.scale
                )
            } else {
                String::new()
            },
            if fit.high.is_finite() {
                String::new()
            } else {
                format!(
                    "; not bounded above by the loads measured (up to {})",
                    number(last)
                )
            }
        ),
    }
}

/// The knee: TTFT p99's (see [`knee::hinge`]), or p50's where the tail shows none, with its
/// range.
fn knee(points: &[Point], integer_loads: bool) -> Finding {
    let series = |get: fn(&Point) -> Option<f64>| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter_map(|p| Some((p.load, get(p)?)))
            .collect()
    };
    // Embeddings and rerank have no TTFT: their latency's knee stands for it.
    let pooling = !points.is_empty() && points.iter().all(|p| p.e2e_p50_ms.is_some());
    let (tail, median, what) = if pooling {
        (
            knee::hinge(&series(|p| p.e2e_p99_ms), integer_loads),
            knee::hinge(&series(|p| p.e2e_p50_ms), integer_loads),
            "latency (embeddings and rerank have no TTFT)",
        )
    } else {
        (
            knee::hinge(&series(|p| p.ttft_p99_ms), integer_loads),
            knee::hinge(&series(|p| p.ttft_p50_ms), integer_loads),
            "TTFT",
        )
    };
    let how = format!(
        "a jump-and-bend line fitted to log {what} over log load at all {} loads, p99 and p50 \
         apart, needing at least {}× the earlier trend at the largest load and {} loads",
        points.len(),
        knee::MIN_EXCESS,
        knee::MIN_LOADS
    );
    // The tail queues first (one request waiting for a slot shows in p99 before p50), and the
    // median's knee is the fallback where the tail shows none.
    let chosen = match (&tail, &median) {
        (Some(t), m) => Some(("p99", t, m.as_ref().map(|m| ("p50", m)))),
        (None, Some(m)) => Some(("p50", m, None)),
        (None, None) => None,
    };
    let Some((name, h, other)) = chosen else {
        return Finding::none(format!("no knee reached ({how})"));
    };
    let other = other.map_or_else(
        || "; the other percentile shows no knee".to_owned(),
        |(n, o)| format!("; {n} turns at {}", number(o.at)),
    );
    Finding {
        value: Some(h.at),
        low: Some(h.low),
        high: Some(h.high),
        method: format!(
            "where TTFT {name} turns upward, {:.1}× its earlier trend at the largest load \
             ({how}){other}",
            h.excess
        ),
    }
}

/// The largest load such that it and every smaller load meet every p99 objective given.
fn slo_max_load(points: &[Point], slo: &Slo) -> Finding {
    if slo.ttft.is_none() && slo.tpot.is_none() && slo.e2e.is_none() {
        return Finding::none("no SLO given (--slo-ttft, --slo-tpot, --slo-e2e)");
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
    Finding {
        value,
        low: None,
        high: None,
        method,
    }
}

#[cfg(test)]
mod tests;
