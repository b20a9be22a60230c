//! Fixed-bucket histograms, as a scraper reads them: counts per upper bound (`le`), their sum
//! and their count. The bounds are chosen for LLM serving, from a fast GPU's decode step to a
//! long answer's complete time; the summary's exact percentiles stay in `summary.json`.

/// Time to first token, seconds: 1 ms to 10 minutes (a long prompt behind a queue).
pub const TTFT: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0,
    3.0, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0,
];

/// Inter-token latency, seconds: 0.5 ms (a fast GPU's decode step, or a burst) to 5 s.
pub const ITL: &[f64] = &[
    0.0005, 0.001, 0.002, 0.004, 0.006, 0.008, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05,
    0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0,
];

/// Complete response, seconds: 50 ms to 20 minutes.
pub const COMPLETE: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0,
    180.0, 300.0, 600.0, 1200.0,
];

/// Send lag (sent − scheduled), seconds: 0.1 ms to 10 s.
pub const SEND_LAG: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// Observations counted per bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Observations in each bucket alone (not cumulative), the last one past every bound.
    counts: Vec<u64>,
    sum: f64,
}

impl Histogram {
    /// An empty histogram over `bounds` (increasing).
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
        }
    }

    /// Counts `value` in the first bucket whose bound is at or above it; NaN is not counted.
    pub fn observe(&mut self, value: f64) {
        if value.is_nan() {
            return;
        }
        let i = self.bounds.partition_point(|b| *b < value);
        self.counts[i] += 1;
        self.sum += value;
    }

    /// Observations counted.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The sum of the observations.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// Each bound with the observations at or below it (cumulative), `+Inf` last.
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let bounds = self
            .bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY));
        bounds.zip(self.counts.iter().scan(0, |total, n| {
            *total += n;
            Some(*total)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_observation_on_a_bound_counts_in_that_bound() {
        let mut h = Histogram::new(&[0.1, 1.0]);
        for v in [0.05, 0.1, 0.5, 1.0, 3.0, f64::NAN] {
            h.observe(v);
        }
        let buckets: Vec<(f64, u64)> = h.cumulative().collect();
        assert_eq!(buckets, vec![(0.1, 2), (1.0, 4), (f64::INFINITY, 5)]);
        assert_eq!(h.count(), 5);
        assert!((h.sum() - 4.65).abs() < 1e-12);
    }

    #[test]
    fn the_bounds_increase() {
        for bounds in [TTFT, ITL, COMPLETE, SEND_LAG] {
            assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
        }
    }
}
