//! Statistics: one `Distribution` type serves every metric.
//!
//! Percentiles are exact up to [`EXACT_LIMIT`] samples: interpolated linearly between the two
//! nearest order statistics (the "type 7" definition used by `NumPy` and R), which are selected
//! rather than sorted ([`order`]). Beyond that, [`Samples`] folds them into a mergeable histogram of three significant digits,
//! so that a run of any length summarises in bounded memory; the distribution then says so
//! (`relative_error`). Each distribution carries its sample size, and names the percentiles whose
//! tail holds fewer than [`MIN_TAIL_SAMPLES`] samples: those only describe the sample, they promise
//! nothing.

use serde::{Deserialize, Serialize};

pub mod by_unit;
pub mod interval;
pub mod order;
mod samples;
pub use by_unit::Label;
pub use interval::{Interval, Intervals};
pub use samples::{Samples, EXACT_LIMIT};

/// A percentile needs this many samples beyond it to be more than a description of the sample.
pub const MIN_TAIL_SAMPLES: f64 = 5.0;

/// Summary of a set of samples, in the unit of the field that holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Number of samples.
    pub n: usize,
    /// Median (p50).
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Sample standard deviation (n − 1); 0 for a single sample.
    pub sd: f64,
    /// Percentiles whose tail holds fewer than five samples ("p90", "p95", "p99").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub descriptive: Vec<String>,
    /// Absent: the percentiles are exact. Present: they were read from a histogram (more than
    /// [`EXACT_LIMIT`] samples), and each is within this share of the exact one; `n`, the mean,
    /// sd, min and max stay exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_error: Option<f64>,
    /// Confidence intervals of the figures, where the samples' units are known
    /// ([`interval`]); absent in summaries written before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<Intervals>,
}

impl Distribution {
    /// Summarises `samples` (reordered in place, not necessarily sorted); `None` when there
    /// are none. The percentiles are the sorted samples' ([`percentile`]), found by selecting
    /// only the ranks they read ([`order::select`]); the mean and sd are correctly rounded sums,
    /// the same for the same samples in any order.
    pub fn from_samples(samples: &mut [f64]) -> Option<Distribution> {
        Distribution::from_keyed(samples, |x| *x)
    }

    /// [`Distribution::from_samples`] of the values `key` gives `items` (reordered in place):
    /// labelled samples are summarised where they are, with no copy of their values.
    pub fn from_keyed<T>(items: &mut [T], key: impl Fn(&T) -> f64 + Copy) -> Option<Distribution> {
        let samples = items;
        if samples.is_empty() {
            return None;
        }
        let n = samples.len();
        let mean = order::exact_sum(samples.iter().map(key)) / n as f64;
        let sd = if n > 1 {
            let ss = order::exact_sum(samples.iter().map(|x| (key(x) - mean) * (key(x) - mean)));
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let quantiles = [0.50, 0.90, 0.95, 0.99];
        let mut ranks: Vec<usize> = quantiles
            .iter()
            .flat_map(|&q| percentile_ranks(n, q))
            .chain([0, n - 1])
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        order::select_by(samples, &ranks, key);
        let [median, p90, p95, p99] =
            quantiles.map(|q| interpolated(n, q, |rank| key(&samples[rank])));
        Some(Distribution {
            n,
            median,
            p90,
            p95,
            p99,
            mean,
            min: key(&samples[0]),
            max: key(&samples[n - 1]),
            sd,
            descriptive: descriptive(n),
            relative_error: None,
            ci: None,
        })
    }
}

/// The percentiles whose tail holds fewer than [`MIN_TAIL_SAMPLES`] of `n` samples.
fn descriptive(n: usize) -> Vec<String> {
    [("p90", 0.90), ("p95", 0.95), ("p99", 0.99)]
        .into_iter()
        .filter(|&(_, q)| is_descriptive(n, q))
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// Whether the `q` quantile (0–1) of `n` samples has fewer than [`MIN_TAIL_SAMPLES`] beyond it,
/// so that it only describes the sample.
pub fn is_descriptive(n: usize, q: f64) -> bool {
    (n as f64) * (1.0 - q) < MIN_TAIL_SAMPLES
}

/// The `q` quantile (0–1) of sorted, non-empty `sorted`, interpolated linearly. It reads only
/// the two ranks [`percentile_ranks`] gives: `sorted` need only have those in place.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    interpolated(sorted.len(), q, |rank| sorted[rank])
}

/// The 0-based ranks, below and above, between which the `q` quantile of `n` samples lies.
pub fn percentile_ranks(n: usize, q: f64) -> [usize; 2] {
    let rank = q.clamp(0.0, 1.0) * n.saturating_sub(1) as f64;
    [
        crate::num::to_usize(rank.floor()),
        crate::num::to_usize(rank.ceil()),
    ]
}

/// The `q` quantile (0–1) of `n` samples whose `r`-th smallest (0-based) is `at(r)`,
/// interpolated linearly between the two ranks [`percentile_ranks`] gives.
pub fn interpolated(n: usize, q: f64, mut at: impl FnMut(usize) -> f64) -> f64 {
    let rank = q.clamp(0.0, 1.0) * n.saturating_sub(1) as f64;
    let [below, above] = percentile_ranks(n, q);
    let low = at(below);
    low + (at(above) - low) * (rank - below as f64)
}

/// The `q` quantile (0–1) of `sorted` (value, weight) pairs whose weights add up to `total`:
/// the smallest value whose cumulative weight reaches the share `q` of the total, as GuideLLM
/// takes it.
pub fn weighted_quantile(sorted: &[(f64, f64)], total: f64, q: f64) -> f64 {
    let mut seen = 0.0;
    for p in sorted {
        seen += p.1;
        if seen >= q * total - 1e-9 {
            return p.0;
        }
    }
    sorted.last().map_or(0.0, |p| p.0)
}

/// Mean, spread and count of a small set of values (round throughputs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation (n − 1); 0 for one value.
    pub sd: f64,
    /// The interval of the mean, where the values are independent units (closed rounds) or the
    /// value has one of its own (a loop's window, over its blocks of time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<interval::Ci>,
}

impl Spread {
    /// `None` when there are no values.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut sorted = values.to_vec();
        let d = Distribution::from_samples(&mut sorted)?;
        Some(Spread {
            n: d.n,
            mean: d.mean,
            min: d.min,
            max: d.max,
            sd: d.sd,
            ci: None,
        })
    }

    /// [`Spread::of`] independent `values`, one per `unit`, with Student's t interval of their
    /// mean (none under two).
    pub fn over(values: &[f64], unit: interval::Unit) -> Option<Spread> {
        Spread::of(values).map(|s| Spread {
            ci: Some(interval::Ci::t_over(values, unit, 2)),
            ..s
        })
    }

    /// One value with the interval found for it.
    pub fn with(value: f64, ci: Option<interval::Ci>) -> Option<Spread> {
        Spread::of(&[value]).map(|s| Spread { ci, ..s })
    }

    /// The same values times `factor` (above 0), interval included: a rate in other units.
    #[must_use]
    pub fn scaled(&self, factor: f64) -> Spread {
        let ci = self.ci.clone().map(|ci| interval::Ci {
            interval: ci.interval.map(|i| interval::Interval {
                low: i.low * factor,
                high: i.high * factor,
            }),
            ..ci
        });
        Spread {
            n: self.n,
            mean: self.mean * factor,
            min: self.min * factor,
            max: self.max * factor,
            sd: self.sd * factor,
            ci,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn percentiles_interpolate_between_order_statistics() {
        let mut s = vec![4.0, 1.0, 3.0, 2.0];
        let d = Distribution::from_samples(&mut s).expect("non-empty");
        assert_eq!(d.median, 2.5);
        assert!((d.p90 - 3.7).abs() < 1e-12);
        assert_eq!((d.min, d.max, d.mean), (1.0, 4.0, 2.5));
        assert!((d.sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(d.descriptive, vec!["p90", "p95", "p99"]);
    }

    #[test]
    fn single_sample_and_empty() {
        let d = Distribution::from_samples(&mut [7.0]).expect("non-empty");
        assert_eq!((d.n, d.median, d.p99, d.sd), (1, 7.0, 7.0, 0.0));
        assert!(Distribution::from_samples(&mut []).is_none());
    }

    #[test]
    fn tail_size_decides_what_is_descriptive() {
        let mut s: Vec<f64> = (0..100).map(f64::from).collect();
        let d = Distribution::from_samples(&mut s).expect("non-empty");
        assert_eq!(d.descriptive, vec!["p99"]);
        let mut s: Vec<f64> = (0..500).map(f64::from).collect();
        assert!(Distribution::from_samples(&mut s)
            .expect("non-empty")
            .descriptive
            .is_empty());
    }

    proptest! {
        #[test]
        fn order_and_bounds_hold(mut s in prop::collection::vec(-1e6f64..1e6, 1..200)) {
            let d = Distribution::from_samples(&mut s).expect("non-empty");
            prop_assert!(d.min <= d.median && d.median <= d.p90);
            prop_assert!(d.p90 <= d.p95 && d.p95 <= d.p99 && d.p99 <= d.max);
            prop_assert!(d.min <= d.mean + 1e-6 && d.mean <= d.max + 1e-6);
            let below = s.iter().filter(|&&x| x <= d.median).count();
            prop_assert!(below * 2 >= s.len());
        }

        #[test]
        fn selected_figures_are_those_of_the_sorted_samples(
            s in prop::collection::vec(
                prop_oneof![-1e6f64..1e6, Just(0.0), Just(-0.0), Just(3.0)], 1..400),
            turn in 0usize..400,
        ) {
            let mut sorted = s.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            let d = Distribution::from_samples(&mut s.clone()).expect("non-empty");
            let want = [0.5, 0.9, 0.95, 0.99].map(|q| percentile(&sorted, q).to_bits());
            prop_assert_eq!([d.median, d.p90, d.p95, d.p99].map(f64::to_bits), want);
            prop_assert_eq!(d.min.to_bits(), sorted[0].to_bits());
            prop_assert_eq!(d.max.to_bits(), sorted[s.len() - 1].to_bits());
            // The same samples in another order: the same figures, to the bit.
            let mut other = s.clone();
            other.reverse();
            let by = turn % other.len();
            other.rotate_left(by);
            prop_assert_eq!(Distribution::from_samples(&mut other), Some(d.clone()));
            let plain = sorted.iter().sum::<f64>() / s.len() as f64;
            prop_assert!((d.mean - plain).abs() <= 1e-9 * sorted.iter().map(|x| x.abs()).sum::<f64>().max(1.0));
        }
    }
}
