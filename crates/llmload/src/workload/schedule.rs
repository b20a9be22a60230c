//! Workload: arrival schedules for open-loop load, precomputed from the seed as offsets from the
//! start of the load, so that the pacer sleeps until `start + offset` on an absolute clock and a
//! late wake-up never shifts the arrivals after it.

use crate::workload::length::standard_normal;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The inter-arrival process of an open loop.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Process {
    /// Exponential gaps (coefficient of variation 1).
    Poisson,
    /// Gamma gaps with this coefficient of variation (`--burstiness`; 1 is Poisson).
    Gamma {
        /// Coefficient of variation of the gaps.
        cv: f64,
    },
    /// Equal gaps of 1 / rate.
    Constant,
}

/// Where an open loop ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// Arrivals whose offset is below this.
    Duration(Duration),
    /// This many arrivals.
    Requests(u64),
}

/// Arrival offsets from the start of the load, ascending: `rate_rps` requests per second on
/// average, drawn from `seed`.
pub fn offsets(process: Process, rate_rps: f64, bound: Bound, seed: u64) -> Vec<Duration> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5ced_u64);
    let mean_gap_s = 1.0 / rate_rps;
    let mut out = Vec::new();
    let mut t_s = 0.0_f64;
    loop {
        let gap_s = match process {
            Process::Constant => mean_gap_s,
            Process::Poisson => -mean_gap_s * (1.0 - rng.random::<f64>()).ln(),
            Process::Gamma { cv } => {
                let shape = 1.0 / (cv * cv);
                gamma(&mut rng, shape) * mean_gap_s / shape
            }
        };
        // The first arrival is at the start; each later one a gap after the previous.
        if !out.is_empty() {
            t_s += gap_s;
        }
        let done = match bound {
            Bound::Duration(d) => t_s >= d.as_secs_f64(),
            Bound::Requests(n) => out.len() as u64 >= n,
        };
        if done {
            return match bound {
                Bound::Requests(n) => scaled(out, (n.saturating_sub(1)) as f64 * mean_gap_s),
                Bound::Duration(_) => out,
            };
        }
        out.push(Duration::from_secs_f64(t_s));
    }
}

/// A request-bounded schedule scaled to span exactly `span_s`: the mean gap is then exactly
/// 1 / rate (the process conditioned on its count), and the shape of the gaps, their coefficient
/// of variation included, is unchanged.
fn scaled(offsets: Vec<Duration>, span_s: f64) -> Vec<Duration> {
    let last_s = offsets.last().map_or(0.0, Duration::as_secs_f64);
    if last_s <= 0.0 {
        return offsets;
    }
    let factor = span_s / last_s;
    offsets
        .into_iter()
        .map(|o| Duration::from_secs_f64(o.as_secs_f64() * factor))
        .collect()
}

/// A Gamma(shape, 1) draw: Marsaglia and Tsang, with the boost `U^(1/shape)` below shape 1.
#[expect(
    clippy::many_single_char_names,
    reason = "the names of the method's published algorithm"
)]
fn gamma<R: Rng>(rng: &mut R, shape: f64) -> f64 {
    if shape < 1.0 {
        let u: f64 = 1.0 - rng.random::<f64>();
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = standard_normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u: f64 = 1.0 - rng.random::<f64>();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (achieved rate, coefficient of variation) of the gaps.
    fn rate_and_cv(offsets: &[Duration]) -> (f64, f64) {
        let gaps: Vec<f64> = offsets
            .windows(2)
            .map(|w| w[1].saturating_sub(w[0]).as_secs_f64())
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        (1.0 / mean, var.sqrt() / mean)
    }

    #[test]
    fn poisson_gaps_have_cv_one_at_the_target_rate() {
        for seed in [1, 2, 3] {
            let o = offsets(Process::Poisson, 20.0, Bound::Requests(10_000), seed);
            assert_eq!(o.len(), 10_000);
            let (rate, cv) = rate_and_cv(&o);
            assert!((cv - 1.0).abs() <= 0.05, "cv {cv}");
            assert!((rate / 20.0 - 1.0).abs() <= 0.02, "rate {rate}");
        }
    }

    #[test]
    fn gamma_gaps_have_the_burstiness_as_cv() {
        for cv_target in [0.5, 2.0, 3.0] {
            let o = offsets(
                Process::Gamma { cv: cv_target },
                50.0,
                Bound::Requests(20_000),
                9,
            );
            let (rate, cv) = rate_and_cv(&o);
            assert!((cv / cv_target - 1.0).abs() <= 0.08, "{cv} vs {cv_target}");
            assert!((rate / 50.0 - 1.0).abs() <= 0.05, "rate {rate}");
        }
    }

    #[test]
    fn constant_is_exact_and_duration_bounds_the_schedule() {
        let o = offsets(
            Process::Constant,
            4.0,
            Bound::Duration(Duration::from_secs(10)),
            0,
        );
        assert_eq!(o.len(), 40);
        for (i, t) in o.iter().enumerate() {
            assert!((t.as_secs_f64() - i as f64 * 0.25).abs() < 1e-9);
        }
        let p = offsets(
            Process::Poisson,
            100.0,
            Bound::Duration(Duration::from_secs(5)),
            4,
        );
        assert!(p.last().is_some_and(|t| t.as_secs_f64() < 5.0));
        assert!((p.len() as f64 - 500.0).abs() < 80.0, "{}", p.len());
    }

    #[test]
    fn the_seed_reproduces_the_schedule() {
        let a = offsets(Process::Poisson, 3.0, Bound::Requests(50), 11);
        assert_eq!(a, offsets(Process::Poisson, 3.0, Bound::Requests(50), 11));
        assert_ne!(a, offsets(Process::Poisson, 3.0, Bound::Requests(50), 12));
    }
}
