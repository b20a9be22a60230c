//! The throughput model behind `C_sat`, fitted over every load of a sweep at once, so that the
//! answer belongs to the server rather than to the grid of loads.
//!
//! A server runs at most C sequences at a time (its slots). A step of n sequences costs
//! t₀·(1 + n/K): one sequence alone costs t₀, and K is the batch at which a step costs twice as
//! much. n sequences together then make `X₁(n) = A·n / (1 + n/K)` tokens/s. Beyond C:
//!
//! - closed rounds: a round of c requests runs in ⌈c/C⌉ waves of at most C, each as long as its
//!   steps, so `X(c) = A·c / (⌈c/C⌉ + c/K)`: a sawtooth that dips wherever the last wave is
//!   part-full. C matters only through the number of waves at each measured load: breakpoints
//!   that give every measured load the same number of waves fit alike, and the range holds them
//!   all;
//! - closed continuous: the queue keeps every slot busy, `X(c) = X₁(min(c, C))`;
//! - open loop: below capacity every arrival is served, `X(λ) = A·min(λ, C)` (K = ∞).
//!
//! For each breakpoint C, A has a closed form and K is profiled over a grid; the weighted sum of
//! squares χ²(C) is then a profile over C. `C_sat` is the best C (the smallest of those that fit
//! alike), and its range holds every C whose χ² is within the 95 % threshold of one parameter
//! (3.84) of the best, or, where the residuals exceed the measured noise, within F(1, dof) times
//! the best fit's reduced χ² (the threshold of a variance estimated from the residuals).

use super::Point;

/// The relative noise below which no throughput is trusted: run-to-run variation that a case's
/// own rounds do not see.
pub const NOISE_FLOOR: f64 = 0.02;
/// The 95 % quantile of χ² with one degree of freedom: the profile threshold of one parameter.
pub const CHI2_95: f64 = 3.84;

/// The load shape of a sweep, which decides the model's form beyond the breakpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Closed rounds: C requests together, the next round when all have ended.
    Rounds,
    /// Closed continuous: C kept in flight.
    Continuous,
    /// Open loop: arrivals per second.
    Open,
}

impl Shape {
    /// Whether loads are concurrencies (whole numbers).
    pub fn integer(self) -> bool {
        self != Shape::Open
    }

    /// The model's name, as the methods say it.
    pub fn model(self) -> &'static str {
        match self {
            Shape::Rounds => "closed-rounds slot model (waves of C_sat)",
            Shape::Continuous => "closed-continuous slot model",
            Shape::Open => "open-loop capacity model (min(a·rate, X_max))",
        }
    }
}

/// A fitted model and the profile of its breakpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// The best breakpoint; infinite when the throughput rises up to the largest load.
    pub best: f64,
    /// The smallest breakpoint within the threshold.
    pub low: f64,
    /// The largest breakpoint within the threshold; infinite when it is not bounded above.
    pub high: f64,
    /// Tokens/s of one sequence alone (A).
    pub per_sequence_tps: f64,
    /// The batch at which a step costs twice one sequence's (K); infinite for a linear rise.
    pub batch_cost: f64,
    /// χ² of the best fit.
    pub chi2: f64,
    /// Degrees of freedom left (points less parameters).
    pub dof: usize,
    /// How much the threshold was scaled up from 3.84 for residuals beyond the noise (≥ 1): see
    /// [`threshold`].
    pub scale: f64,
    /// The loads fitted, in order.
    loads: Vec<f64>,
    shape: Shape,
}

impl Fit {
    /// The model's throughput at `load`, tokens/s.
    pub fn predict(&self, load: f64) -> f64 {
        self.per_sequence_tps * unit(self.shape, load, self.best, self.batch_cost)
    }

    /// The smallest and largest loads fitted.
    pub fn span(&self) -> (f64, f64) {
        (
            self.loads.first().copied().unwrap_or(0.0),
            self.loads.last().copied().unwrap_or(0.0),
        )
    }
}

/// The standard error of a point's throughput: its rounds' spread where it has two or more,
/// and never less than [`NOISE_FLOOR`] of the value (nor of a tenth of `peak`, for loads that
/// made nothing).
pub fn sigma(p: &Point, peak: f64) -> f64 {
    let se = match (p.throughput_sd_tps, p.throughput_rounds) {
        (Some(sd), Some(n)) if n >= 2 => sd / (n as f64).sqrt(),
        _ => 0.0,
    };
    let floor = NOISE_FLOOR * p.throughput_tps.max(0.1 * peak);
    (se * se + floor * floor).sqrt().max(f64::MIN_POSITIVE)
}

/// The model's throughput at `load` for A = 1.
fn unit(shape: Shape, load: f64, c: f64, k: f64) -> f64 {
    let one = |n: f64| n / (1.0 + n / k);
    match shape {
        Shape::Open => load.min(c),
        Shape::Continuous => one(load.min(c)),
        Shape::Rounds => {
            let waves = if load <= c { 1.0 } else { (load / c).ceil() };
            load / (waves + load / k)
        }
    }
}

/// The breakpoints tried: every whole concurrency below the largest load, or 400 rates spaced
/// evenly on a log scale from an eighth of the smallest to the largest; then infinity (any C at
/// or above the largest load predicts the same curve).
fn breakpoints(shape: Shape, loads: &[f64]) -> Vec<f64> {
    let (min, max) = (loads[0], loads[loads.len() - 1]);
    let mut out: Vec<f64> = if shape.integer() {
        (1..crate::num::to_u32(max.ceil())).map(f64::from).collect()
    } else {
        let (from, to) = ((min / 8.0).ln(), max.ln());
        (0..400)
            .map(|i| (from + (to - from) * f64::from(i) / 400.0).exp())
            .collect()
    };
    out.push(f64::INFINITY);
    out
}

/// The batch costs tried: infinity (a linear rise), then 100 values spaced evenly on a log
/// scale from 0.05 to 2,000; open loops take only infinity.
fn batch_costs(shape: Shape) -> Vec<f64> {
    let mut out = vec![f64::INFINITY];
    if shape != Shape::Open {
        let (from, to) = (0.05_f64.ln(), 2000.0_f64.ln());
        out.extend((0..=100).map(|i| (from + (to - from) * f64::from(i) / 100.0).exp()));
    }
    out
}

/// The best scale A and its χ² for the unit curve `f` against `y` weighted by `w`.
fn scale_fit(f: &[f64], y: &[f64], w: &[f64]) -> (f64, f64) {
    let (mut fy, mut ff) = (0.0, 0.0);
    for ((f, y), w) in f.iter().zip(y).zip(w) {
        fy += w * f * y;
        ff += w * f * f;
    }
    let a = if ff > 0.0 { fy / ff } else { 0.0 };
    let chi2 = f
        .iter()
        .zip(y)
        .zip(w)
        .map(|((f, y), w)| w * (y - a * f).powi(2))
        .sum();
    (a, chi2)
}

/// How far above the least χ² (`chi2`, with `dof` degrees of freedom left) a breakpoint may fit
/// and stay in the range: 3.84 while the residuals are within the measured noise; where they
/// exceed it the noise is taken from the residuals themselves, and the threshold of an estimated
/// variance is F(1, dof) at 95 % (Student's t squared) times the reduced χ², the larger of the
/// two, once [`MIN_RESIDUAL_DOF`] are left. With few loads left over the parameters that is far
/// wider than 3.84 × the reduced χ² (F(1, 5) = 6.61): a machine that slowed one load's rounds
/// alike shows in the residuals, not in the rounds' spread, and the range must not be sure of
/// what it cannot tell.
pub fn threshold(chi2: f64, dof: usize) -> f64 {
    if dof == 0 {
        return CHI2_95;
    }
    let reduced = chi2 / dof as f64;
    if dof < MIN_RESIDUAL_DOF {
        return CHI2_95 * reduced.max(1.0);
    }
    let f = crate::stats::interval::t_quantile(0.95, dof as f64).map_or(CHI2_95, |t| t * t);
    CHI2_95.max(f * reduced)
}

/// The degrees of freedom the residuals need before the noise is estimated from them: below
/// this (a sweep of five loads or fewer in closed rounds) the estimate is too loose to use
/// (F(1, 1) is 161), and the threshold is 3.84 × the reduced χ² where it exceeds 1.
pub const MIN_RESIDUAL_DOF: usize = 3;

/// Fits the model of `shape` to `points` (in load order, three or more, some throughput above
/// zero).
pub fn fit(points: &[Point], shape: Shape) -> Option<Fit> {
    let peak = points.iter().map(|p| p.throughput_tps).fold(0.0, f64::max);
    if points.len() < 3 || peak <= 0.0 {
        return None;
    }
    let loads: Vec<f64> = points.iter().map(|p| p.load).collect();
    let y: Vec<f64> = points.iter().map(|p| p.throughput_tps).collect();
    let w: Vec<f64> = points.iter().map(|p| sigma(p, peak).powi(-2)).collect();
    let costs = batch_costs(shape);
    // Per breakpoint: the best (χ², A, K).
    let profile: Vec<(f64, f64, f64, f64)> = breakpoints(shape, &loads)
        .into_iter()
        .map(|c| {
            let mut best = (f64::INFINITY, 0.0, f64::INFINITY);
            for &k in &costs {
                let f: Vec<f64> = loads.iter().map(|&l| unit(shape, l, c, k)).collect();
                let (a, chi2) = scale_fit(&f, &y, &w);
                if chi2 < best.0 {
                    best = (chi2, a, k);
                }
            }
            (c, best.0, best.1, best.2)
        })
        .collect();
    // The first (smallest) breakpoint of the least χ²: ties are breakpoints the data cannot
    // tell apart, and the smallest is the one the analysis must doubt.
    let min = profile.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let &(best, chi2, a, k) = profile.iter().find(|p| p.1 <= min * (1.0 + 1e-9) + 1e-12)?;
    let parameters = if shape == Shape::Open { 2 } else { 3 };
    let dof = points.len().saturating_sub(parameters);
    let margin = threshold(chi2, dof);
    let limit = chi2 + margin;
    let scale = margin / CHI2_95;
    let within = profile.iter().filter(|p| p.1 <= limit).map(|p| p.0);
    let low = within.clone().fold(f64::INFINITY, f64::min);
    let high = within.fold(f64::NEG_INFINITY, f64::max);
    Some(Fit {
        best,
        low,
        high,
        per_sequence_tps: a,
        batch_cost: k,
        chi2,
        dof,
        scale,
        loads,
        shape,
    })
}

/// A load whose throughput fell below that of a smaller load by more than the noise.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Dip {
    /// The load that made less.
    pub load: f64,
    /// Its throughput, tokens/s.
    pub throughput_tps: f64,
    /// The smaller load that made more (the best below it).
    pub below_load: f64,
    /// That load's throughput, tokens/s.
    pub below_tps: f64,
    /// Whether the fitted model predicts the drop (a part-full last wave in closed rounds).
    pub explained: bool,
}

/// Every load whose throughput is below the best at a smaller load by more than 1.96 standard
/// errors of the difference (the points' rounds' spread, at least [`NOISE_FLOOR`] each).
pub fn dips(points: &[Point], fit: Option<&Fit>) -> Vec<Dip> {
    let peak = points.iter().map(|p| p.throughput_tps).fold(0.0, f64::max);
    let mut out = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let Some(best) = points[..i]
            .iter()
            .max_by(|a, b| a.throughput_tps.total_cmp(&b.throughput_tps))
        else {
            continue;
        };
        let noise = sigma(p, peak).hypot(sigma(best, peak));
        let drop = best.throughput_tps - p.throughput_tps;
        if drop > 1.96 * noise {
            let explained = fit.is_some_and(|f| {
                f.best.is_finite() && f.predict(best.load) - f.predict(p.load) > drop / 2.0
            });
            out.push(Dip {
                load: p.load,
                throughput_tps: p.throughput_tps,
                below_load: best.load,
                below_tps: best.throughput_tps,
                explained,
            });
        }
    }
    out
}
