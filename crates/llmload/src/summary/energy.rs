//! GPU readings over a case's measurement window → its energy: per GPU, the integral of power over
//! the window by the trapezoidal rule (the power at each edge interpolated linearly between the
//! readings around it), their sum, and the output tokens per joule, as docs/measurement.md
//! defines them. A GPU whose readings are too sparse to cover the window gives no figure, and the
//! case's energy then says why instead.

use super::case::CaseSummary;
use crate::record::Seconds;
use crate::telemetry::Reading;
use std::collections::BTreeMap;

pub use super::case_energy::{Energy, GpuEnergy};

/// What the integral is taken over and what it is set against.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// Disjoint spans, seconds since the attempt started, earliest first: one per closed round
    /// (first send to last `ok` completion), or the measurement window of a continuous or open
    /// loop.
    pub spans: Vec<(Seconds, Seconds)>,
    /// Σ output tokens of the `ok` responses in the spans.
    pub output_tokens: u64,
    /// Whether those responses were all verified.
    pub tokens_verified: bool,
    /// The `ok` responses in the spans (closed rounds: of their rounds; a loop: completed
    /// inside its window, as its completed requests per second count them).
    pub responses: u64,
}

impl Window {
    /// The spans' total length, seconds.
    pub fn length_s(&self) -> Seconds {
        self.spans.iter().map(|(a, b)| (b - a).max(0.0)).sum()
    }

    /// The window of `case`: its measurement window when it has one (continuous and open
    /// loops), else `round_spans` (closed rounds, from [`super::CaseFigures::round_spans`]),
    /// with the same output tokens as its throughput.
    pub fn of(case: &CaseSummary, mut round_spans: Vec<(Seconds, Seconds)>) -> Window {
        let tokens_verified = case.counts.unverified == 0;
        if let Some(load) = &case.load {
            let [a, b] = load.window_s;
            // The throughput is these tokens over this length: the product gives them back.
            let tokens = load.throughput_tps * (b - a).max(1e-9);
            let responses = load.completed_rps * (b - a).max(1e-9);
            return Window {
                spans: vec![(a, b)],
                output_tokens: crate::num::to_u64(tokens.round()),
                tokens_verified,
                responses: crate::num::to_u64(responses.round()),
            };
        }
        round_spans.sort_by(|x, y| x.0.total_cmp(&y.0));
        Window {
            spans: round_spans,
            output_tokens: case.rounds.iter().map(|r| r.output_tokens).sum(),
            tokens_verified,
            responses: case.rounds.iter().map(|r| u64::from(r.responses_ok)).sum(),
        }
    }
}

/// Sets the energy of each case from its window (`windows` in the order of `cases`) and the
/// readings so far.
pub fn attach(
    cases: &mut [CaseSummary],
    windows: &[Window],
    readings: &[Reading],
    interval_s: Seconds,
) {
    let series = power_series(readings);
    for (case, window) in cases.iter_mut().zip(windows) {
        case.energy = over(window, &series, interval_s);
    }
}

/// The readings `t_s` of one GPU that carry power, with the power, in time order.
type Series = Vec<(Seconds, f64)>;

/// The energy over `window` from `readings`; `None` when no reading carries power (telemetry off,
/// or a source that does not report it). `interval_s`: the time between live readings, for the
/// sparseness rule.
pub fn of(window: &Window, readings: &[Reading], interval_s: Seconds) -> Option<Energy> {
    over(window, &power_series(readings), interval_s)
}

/// The readings that carry power, per GPU, in time order.
fn power_series(readings: &[Reading]) -> BTreeMap<u32, Series> {
    let mut series: BTreeMap<u32, Series> = BTreeMap::new();
    for r in readings {
        if let Some(p) = r.power_w.filter(|p| p.is_finite()) {
            series.entry(r.gpu).or_default().push((r.t_s, p));
        }
    }
    for points in series.values_mut() {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

/// [`of`] over readings already gathered by [`power_series`].
fn over(window: &Window, series: &BTreeMap<u32, Series>, interval_s: Seconds) -> Option<Energy> {
    if series.is_empty() {
        return None;
    }
    let window_s = window.length_s();
    let mut energy = Energy {
        window_s,
        output_tokens: window.output_tokens,
        tokens_verified: window.tokens_verified,
        gpus: Vec::new(),
        total_j: None,
        mean_power_w: None,
        output_tokens_per_joule: None,
        responses: window.responses,
        joules_per_request: None,
        method: None,
        unavailable: None,
    };
    let result = gpus_over(window, series, interval_s);
    match result {
        Ok(gpus) => {
            let total: f64 = gpus.iter().map(|g| g.joules).sum();
            let used: u32 = gpus.iter().map(|g| g.readings).sum();
            energy.total_j = Some(total);
            energy.mean_power_w = Some(total / window_s);
            energy.output_tokens_per_joule =
                (total > 0.0).then(|| window.output_tokens as f64 / total);
            energy.joules_per_request =
                (window.responses > 0).then(|| total / window.responses as f64);
            energy.method = Some(format!(
                "trapezoid over {used} readings of {} GPU{}, edges interpolated",
                gpus.len(),
                if gpus.len() == 1 { "" } else { "s" }
            ));
            energy.gpus = gpus;
        }
        Err(why) => energy.unavailable = Some(why),
    }
    Some(energy)
}

/// Every GPU's energy over the window, or why one has none. A GPU counts when it has a power
/// reading at or before the window's end (a GPU first seen later cannot have been measured).
fn gpus_over(
    window: &Window,
    series: &BTreeMap<u32, Series>,
    interval_s: Seconds,
) -> Result<Vec<GpuEnergy>, String> {
    let (Some(first), Some(last)) = (window.spans.first(), window.spans.last()) else {
        return Err("no measured span (no ok response)".into());
    };
    if window.spans.iter().all(|(a, b)| b <= a) {
        return Err("the window has no length".into());
    }
    let end = last.1;
    let mut gpus = Vec::new();
    for (&gpu, points) in series {
        if points.first().is_none_or(|p| p.0 > end) {
            continue;
        }
        let (joules, readings) = integrate(points, &window.spans, interval_s)
            .map_err(|why| format!("GPU {gpu}: {why}"))?;
        gpus.push(GpuEnergy {
            gpu,
            joules,
            readings,
        });
    }
    if gpus.is_empty() {
        return Err(format!(
            "no power reading at or before the window's start ({:.3} s)",
            first.0
        ));
    }
    Ok(gpus)
}

/// ∫ power dt over `spans` from one GPU's `points` (time order), and the distinct readings used;
/// or why the readings are too sparse for a figure.
pub fn integrate(
    points: &[(Seconds, f64)],
    spans: &[(Seconds, Seconds)],
    interval_s: Seconds,
) -> Result<(f64, u32), String> {
    let mut joules = 0.0;
    let mut used = 0usize;
    // The last reading counted, so that one shared by two spans counts once.
    let mut counted_to: Option<usize> = None;
    for &(a, b) in spans.iter().filter(|(a, b)| b > a) {
        // The reading at or before each edge, and the one at or after.
        let before = points.partition_point(|p| p.0 <= a);
        let after = points.partition_point(|p| p.0 < b);
        let (Some(i0), true) = (before.checked_sub(1), after < points.len()) else {
            let edge = if before == 0 {
                format!("no reading at or before the window's start ({a:.3} s)")
            } else {
                format!("no reading at or after the window's end ({b:.3} s)")
            };
            return Err(edge);
        };
        let i1 = after;
        let limit = (2.0 * interval_s).max(0.1 * (b - a));
        for pair in points[i0..=i1].windows(2) {
            let gap = pair[1].0 - pair[0].0;
            if gap > limit {
                return Err(format!(
                    "a gap of {gap:.3} s between readings at {:.3} s and {:.3} s, more than \
                     {limit:.3} s (the larger of 2 × the {interval_s} s interval and 10 % of the \
                     window)",
                    pair[0].0, pair[1].0
                ));
            }
        }
        joules += trapezoid(&points[i0..=i1], a, b);
        let from = counted_to.map_or(i0, |c| i0.max(c + 1));
        used += (i1 + 1).saturating_sub(from);
        counted_to = Some(i1);
    }
    Ok((joules, crate::num::count(used)))
}

/// The trapezoidal integral over `[a, b]` of the points (`points[0]` at or before `a`, the last
/// at or after `b`), the power at `a` and `b` interpolated linearly between the points around
/// them.
fn trapezoid(points: &[(Seconds, f64)], a: Seconds, b: Seconds) -> f64 {
    let at = |t: Seconds| -> f64 {
        let i = points.partition_point(|p| p.0 <= t).max(1);
        let (t0, p0) = points[i - 1];
        match points.get(i) {
            Some(&(t1, p1)) if t1 > t0 && t > t0 => p0 + (p1 - p0) * (t - t0) / (t1 - t0),
            _ => p0,
        }
    };
    let mut inside: Vec<(Seconds, f64)> = vec![(a, at(a))];
    inside.extend(points.iter().filter(|p| p.0 > a && p.0 < b).copied());
    inside.push((b, at(b)));
    inside
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum()
}

#[cfg(test)]
mod tests;
