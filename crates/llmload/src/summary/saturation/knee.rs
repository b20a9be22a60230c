//! The latency knee, fitted over every load: log TTFT over log load follows one straight line
//! up to the knee, then jumps and bends upward — `y = a + b·x + j·[x > k] + d·max(0, x − k)` —
//! fitted by least squares at each candidate knee k, to the median and to the tail (p99) apart.
//!
//! The slope of a line in log–log is TTFT's elasticity: how many percent it grows per percent of
//! load. Simultaneous prefills in closed rounds raise TTFT from the first load, as a steady
//! slope; queueing adds to it past the knee: in closed rounds a request beyond the slots waits a
//! whole wave (the jump), in continuous and open loops the queue grows with the load (the bend).
//! Every knee between the same two measured loads fits alike; the smallest is taken, so the knee
//! is the last load before the queueing shows and the range runs to the next measured one.

use super::model::CHI2_95;

/// The log TTFT noise below which no fit is trusted (5 %).
pub const LOG_NOISE: f64 = 0.05;
/// A knee needs TTFT at the largest load to be at least this factor above the trend before it.
pub const MIN_EXCESS: f64 = 1.5;
/// A knee needs this many loads: one more than the line's four coefficients, so that a fit can
/// be told from noise.
pub const MIN_LOADS: usize = 5;

/// A knee found on one TTFT series.
#[derive(Clone, Debug, PartialEq)]
pub struct Hinge {
    /// The best knee.
    pub at: f64,
    /// The smallest knee within the threshold.
    pub low: f64,
    /// The largest knee within the threshold.
    pub high: f64,
    /// TTFT's elasticity before the knee.
    pub before: f64,
    /// How many times the trend before the knee TTFT is at the largest load.
    pub excess: f64,
}

/// Least squares of `y` on the columns of `rows` (each a row of regressors, then `y`): the
/// coefficients and the sum of squares; `None` when the system is singular.
fn least_squares<const N: usize>(rows: &[([f64; N], f64)]) -> Option<([f64; N], f64)> {
    // Normal equations, solved by Gauss–Jordan elimination with partial pivoting.
    let mut m = vec![vec![0.0_f64; N + 1]; N];
    for (v, y) in rows {
        for i in 0..N {
            for j in 0..N {
                m[i][j] += v[i] * v[j];
            }
            m[i][N] += v[i] * y;
        }
    }
    for col in 0..N {
        let pivot = (col..N).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-9 {
            return None;
        }
        m.swap(col, pivot);
        let pivot_row = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let factor = row[col] / pivot_row[col];
                for (v, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *v -= factor * p;
                }
            }
        }
    }
    let mut p = [0.0; N];
    for (i, p) in p.iter_mut().enumerate() {
        *p = m[i][N] / m[i][i];
    }
    let sse = rows
        .iter()
        .map(|(v, y)| (y - v.iter().zip(&p).map(|(v, p)| v * p).sum::<f64>()).powi(2))
        .sum();
    Some((p, sse))
}

/// The knees tried: every whole load from the second smallest measured up to the largest
/// (concurrencies), or 200 loads spaced evenly on a log scale in that span (rates).
fn candidates(second: f64, max: f64, integer: bool) -> Vec<f64> {
    if integer {
        (crate::num::to_u32(second.ceil())..crate::num::to_u32(max.ceil()))
            .map(f64::from)
            .filter(|&k| k >= second && k < max)
            .collect()
    } else {
        let (from, to) = (second.ln(), max.ln());
        (0..200)
            .map(|i| (from + (to - from) * f64::from(i) / 200.0).exp())
            .collect()
    }
}

/// The fit at knee `k` over `logs` (ln load, ln TTFT): (a, b, j, d) and the sum of squares. The
/// bend is left out where one load alone lies past the knee (the jump fits it).
fn at_knee(logs: &[(f64, f64)], k: f64) -> Option<([f64; 4], f64)> {
    let kx = k.ln();
    let past = logs.iter().filter(|(x, _)| *x > kx).count();
    if past >= 2 {
        let rows: Vec<([f64; 4], f64)> = logs
            .iter()
            .map(|&(x, y)| ([1.0, x, f64::from(u8::from(x > kx)), (x - kx).max(0.0)], y))
            .collect();
        if let Some(fit) = least_squares(&rows) {
            return Some(fit);
        }
    }
    let rows: Vec<([f64; 3], f64)> = logs
        .iter()
        .map(|&(x, y)| ([1.0, x, f64::from(u8::from(x > kx))], y))
        .collect();
    least_squares(&rows).map(|(p, sse)| ([p[0], p[1], p[2], 0.0], sse))
}

/// The knee of `series` (load, TTFT ms; in load order), or `None` when there are fewer than
/// [`MIN_LOADS`] loads with a TTFT, or no rise beyond noise of at least [`MIN_EXCESS`] over the
/// trend.
pub fn hinge(series: &[(f64, f64)], integer: bool) -> Option<Hinge> {
    let logs: Vec<(f64, f64)> = series
        .iter()
        .filter(|(l, t)| *l > 0.0 && *t > 0.0)
        .map(|(l, t)| (l.ln(), t.ln()))
        .collect();
    if logs.len() < MIN_LOADS {
        return None;
    }
    let (second, max) = (logs[1].0.exp(), logs[logs.len() - 1].0.exp());
    let profile: Vec<(f64, [f64; 4], f64)> = candidates(second, max, integer)
        .into_iter()
        .filter_map(|k| at_knee(&logs, k).map(|(p, sse)| (k, p, sse)))
        .collect();
    let min = profile.iter().map(|q| q.2).fold(f64::INFINITY, f64::min);
    // The first (smallest) knee of the least sum of squares: the same two loads bracket all ties.
    let &(at, p, sse) = profile.iter().find(|q| q.2 <= min + 1e-12)?;
    let excess = |k: f64, p: &[f64; 4]| (p[2] + p[3] * (max.ln() - k.ln())).exp();
    if excess(at, &p) < MIN_EXCESS {
        return None;
    }
    // Sums of squares in units of the log noise; the threshold scaled by residuals beyond it.
    let var = LOG_NOISE * LOG_NOISE;
    let dof = logs.len().saturating_sub(5);
    let scale = if dof > 0 {
        (sse / var / dof as f64).max(1.0)
    } else {
        1.0
    };
    let limit = sse + CHI2_95 * scale * var;
    // The rise must be beyond noise: one straight line must fit worse than the limit.
    let line: Vec<([f64; 2], f64)> = logs.iter().map(|&(x, y)| ([1.0, x], y)).collect();
    if least_squares(&line).is_some_and(|(_, straight)| straight <= limit) {
        return None;
    }
    let within = profile
        .iter()
        .filter(|q| q.2 <= limit && excess(q.0, &q.1) >= MIN_EXCESS)
        .map(|q| q.0);
    Some(Hinge {
        at,
        low: within.clone().fold(at, f64::min),
        high: within.fold(at, f64::max),
        before: p[1],
        excess: excess(at, &p),
    })
}
