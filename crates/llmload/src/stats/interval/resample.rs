//! The percentile bootstrap by unit, without re-sorting a resample.
//!
//! A resample draws `k` units with replacement: it holds each unit some number of times (its
//! weight, most often 0, 1 or 2). Joining the picked units' samples and sorting them, for each of
//! up to 1,000 resamples, cost O(B · n log n) at the end of every case: most of the client's CPU
//! at a few hundred thousand token events. Here the samples are sorted once, each tagged with its
//! unit ([`Pool`]). A resample's sorted samples are then the pool's in the same order, each
//! counted its unit's weight, so its `r`-th smallest is the first pool sample at which the
//! weights seen pass `r`. Counts of each unit's samples before every `stride`-th pool sample
//! let a binary search find that place, and a short scan the sample: a few hundred steps per
//! quantile instead of a sort. The quantiles are those of the joined and sorted resample,
//! exactly; the mean is the units' sums weighted by their counts, which differs from adding the
//! joined samples in sorted order by rounding alone (a few units in the last place).

use super::{t_quantile, Interval, Stat, MIN_UNITS};
use crate::stats::order;
use statrs::distribution::ContinuousCDF;

/// Resamples of a bootstrap, at most.
const RESAMPLES: usize = 1000;
/// Resamples of a bootstrap, at least (for the largest samples).
const MIN_RESAMPLES: usize = 200;
/// Values picked over all resamples of a bootstrap, at most: large samples get fewer resamples.
/// (Kept from when each resample was sorted, so that the same data give the same intervals.)
const WORK: usize = 20_000_000;
/// The pool keeps each unit's count before every this many samples, at least.
const MIN_STRIDE: usize = 16;

/// The tail share a percentile bootstrap over `k` units reads its bounds at: Hesterberg's
/// expanded percentile interval, whose tails are those of a normal at √(k/(k−1)) · t(k−1), the
/// width Student's t would give a mean of `k` units. The plain percentile interval runs narrow
/// with few units (10 rounds covered a simulator's true median 78 % of the time at 95 %).
fn expanded_tail(level: f64, k: usize) -> f64 {
    let plain = (1.0 - level) / 2.0;
    let units = k as f64;
    let Some(t) = t_quantile(level, units - 1.0) else {
        return plain;
    };
    let z = (units / (units - 1.0)).sqrt() * t;
    statrs::distribution::Normal::new(0.0, 1.0)
        .map_or(plain, |n| n.cdf(-z))
        .min(plain)
}

/// The draws of a bootstrap: `k` units with replacement per resample, from a fixed sequence
/// seeded by the data's shape (the same data, the same draws).
struct Draws {
    counter: u64,
    k: usize,
}

impl Draws {
    fn new(seed: u64, k: usize) -> Draws {
        Draws { counter: seed, k }
    }

    /// The next unit picked.
    fn next(&mut self) -> usize {
        self.counter = self.counter.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::num::index(crate::workload::prompt::splitmix64(self.counter) % self.k as u64)
    }

    /// One resample: how many times each unit was picked (`weights`, cleared first), and the
    /// units picked at least once with their counts (`picked`).
    fn resample(&mut self, weights: &mut [u64], picked: &mut Vec<(usize, u64)>) {
        weights.fill(0);
        for _ in 0..self.k {
            let pick = self.next();
            weights[pick] += 1;
        }
        picked.clear();
        picked.extend(
            weights
                .iter()
                .enumerate()
                .filter(|p| *p.1 > 0)
                .map(|(u, &w)| (u, w)),
        );
    }
}

/// Every sample of the units, sorted once, with the unit each came from.
struct Pool {
    /// The samples, ascending by [`f64::total_cmp`], each with its unit.
    tagged: Vec<(f64, u32)>,
    /// Units.
    k: usize,
    /// Samples between two rows of `before`.
    stride: usize,
    /// `before[c · k + u]`: samples of unit `u` among the first `c · stride`.
    before: Vec<u32>,
    /// Samples of each unit.
    lens: Vec<u64>,
    /// The sum of each unit's samples, added in ascending order (the same in any order they
    /// came).
    sums: Vec<f64>,
}

impl Pool {
    /// The pool of `tagged` samples, each with the index of its unit (below `k`).
    fn new(mut tagged: Vec<(f64, u32)>, k: usize) -> Pool {
        if !tagged.is_sorted_by(|a, b| a.0.total_cmp(&b.0).is_le()) {
            tagged.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        }
        // A stride of at least k keeps `before` within one count per sample.
        let stride = k.max(MIN_STRIDE);
        let mut before = Vec::with_capacity(tagged.len().div_ceil(stride) * k);
        let mut running = vec![0u32; k];
        let mut sums = vec![0.0; k];
        for (i, &(value, u)) in tagged.iter().enumerate() {
            if i % stride == 0 {
                before.extend_from_slice(&running);
            }
            running[u as usize] += 1;
            sums[u as usize] += value;
        }
        Pool {
            tagged,
            k,
            stride,
            before,
            lens: running.into_iter().map(u64::from).collect(),
            sums,
        }
    }

    /// Samples of the resample that holds each unit `u` `weights[u]` times, among the first
    /// `row · stride` of the pool.
    fn weight_before(&self, row: usize, weights: &[u64]) -> u64 {
        let counts = &self.before[row * self.k..(row + 1) * self.k];
        // Over every unit, picked or not: a dense pass the compiler vectorises costs less
        // than visiting the picked ones (about 63 % of them) by index.
        counts
            .iter()
            .zip(weights)
            .map(|(&count, &weight)| u64::from(count) * weight)
            .sum()
    }

    /// The last row whose samples before it number at most `rank` in the resample of
    /// `weights`, with that number. The search starts at `hint` (where the same quantile of
    /// the last resample was: resamples of the same units put it in nearly the same place)
    /// and gallops outward, then bisects: a few rows' counts instead of log₂(rows).
    fn row_of(&self, weights: &[u64], rank: u64, hint: usize) -> (usize, u64) {
        let rows = self.before.len() / self.k.max(1);
        let last = rows.saturating_sub(1);
        let at = hint.min(last);
        let here = self.weight_before(at, weights);
        // Row `low` qualifies (its count is `seen`); the answer is in low..=high.
        let (mut low, mut seen, mut high);
        if here <= rank {
            (low, seen, high) = (at, here, last);
            let mut step = 1;
            while low < high {
                let probe = (low + step).min(high);
                let count = self.weight_before(probe, weights);
                if count > rank {
                    high = probe - 1;
                    break;
                }
                (low, seen) = (probe, count);
                step *= 2;
            }
        } else {
            // Row 0 counts nothing before it, so it always qualifies.
            (low, seen, high) = (0, 0, at.saturating_sub(1));
            let mut step = 1;
            while low < high {
                let probe = high.saturating_sub(step - 1).max(low + 1);
                let count = self.weight_before(probe, weights);
                if count <= rank {
                    (low, seen) = (probe, count);
                    break;
                }
                high = probe - 1;
                step *= 2;
            }
        }
        while low < high {
            let middle = (low + high).div_ceil(2);
            let count = self.weight_before(middle, weights);
            if count <= rank {
                (low, seen) = (middle, count);
            } else {
                high = middle - 1;
            }
        }
        (low, seen)
    }

    /// The `rank`-th and the next smallest (0-based) samples of the resample that holds unit
    /// `u` `weights[u]` times; `rank` is below the resample's size, and the next is the last
    /// sample where there is none after it. `hint`: the row to start from ([`Pool::row_of`]),
    /// set to the row found.
    fn nth(&self, weights: &[u64], rank: u64, hint: &mut usize) -> (f64, f64) {
        let (low, mut seen) = self.row_of(weights, rank, *hint);
        *hint = low;
        let mut found = None;
        for &(value, unit) in &self.tagged[low * self.stride..] {
            seen += weights[unit as usize];
            match found {
                None if seen > rank + 1 => return (value, value),
                None if seen > rank => found = Some(value),
                Some(at) if weights[unit as usize] > 0 => return (at, value),
                _ => {}
            }
        }
        let last = self.tagged.last().map_or(f64::NAN, |p| p.0);
        (found.unwrap_or(last), last)
    }

    /// The `q` quantile of the resample, interpolated as [`crate::stats::percentile`] is.
    fn quantile(&self, weights: &[u64], size: usize, q: f64, hint: &mut usize) -> f64 {
        let [below, above] = crate::stats::percentile_ranks(size, q);
        let (low, next) = self.nth(weights, below as u64, hint);
        let high = if above == below { low } else { next };
        crate::stats::interpolated(size, q, |rank| if rank == below { low } else { high })
    }
}

/// Percentile-bootstrap intervals of `stats` over `units` (each unit's samples), resampling
/// whole units with replacement; deterministic for the same data. `None` for every stat under
/// [`MIN_UNITS`] units. A quantile of each resample is that of its joined, sorted samples
/// (interpolated as the point figures are); see the module's note on how it is found.
pub fn bootstrap(units: &[Vec<f64>], stats: &[Stat], level: f64) -> Vec<Option<Interval>> {
    let tagged = units
        .iter()
        .enumerate()
        .flat_map(|(u, values)| values.iter().map(move |&v| (v, crate::num::count(u))))
        .collect();
    bootstrap_tagged(tagged, units.len(), stats, level)
}

/// [`bootstrap`] of samples each tagged with the index of its unit, from 0 to `k` − 1 (the
/// units in the order [`bootstrap`] would be given them).
pub fn bootstrap_tagged(
    tagged: Vec<(f64, u32)>,
    k: usize,
    stats: &[Stat],
    level: f64,
) -> Vec<Option<Interval>> {
    let total = tagged.len();
    if k < MIN_UNITS || total == 0 {
        return vec![None; stats.len()];
    }
    let resamples = (WORK / total).clamp(MIN_RESAMPLES, RESAMPLES);
    let mut draws = Draws::new(
        0x9E37_79B9_7F4A_7C15_u64 ^ (total as u64).rotate_left(32) ^ k as u64,
        k,
    );
    let pool = Pool::new(tagged, k);
    let mut figures: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); stats.len()];
    let (mut weights, mut picked) = (vec![0u64; k], Vec::with_capacity(k));
    // Each quantile's row in the last resample, where the next one's search starts.
    let mut hints = vec![0; stats.len()];
    for _ in 0..resamples {
        draws.resample(&mut weights, &mut picked);
        let size: u64 = picked.iter().map(|&(u, w)| w * pool.lens[u]).sum();
        if size == 0 {
            continue;
        }
        let n = crate::num::index(size);
        for ((stat, out), hint) in stats.iter().zip(&mut figures).zip(&mut hints) {
            out.push(match *stat {
                Stat::Quantile(q) => pool.quantile(&weights, n, q, hint),
                Stat::Mean => {
                    picked
                        .iter()
                        .map(|&(u, w)| w as f64 * pool.sums[u])
                        .sum::<f64>()
                        / size as f64
                }
            });
        }
    }
    percentile_intervals(figures, expanded_tail(level, k))
}

/// The interval of each statistic's resampled `figures`: their `tail` and `1 − tail`
/// percentiles.
fn percentile_intervals(figures: Vec<Vec<f64>>, tail: f64) -> Vec<Option<Interval>> {
    figures
        .into_iter()
        .map(|mut values| {
            if values.is_empty() {
                return None;
            }
            let n = values.len();
            let mut ranks: Vec<usize> = crate::stats::percentile_ranks(n, tail)
                .into_iter()
                .chain(crate::stats::percentile_ranks(n, 1.0 - tail))
                .collect();
            ranks.sort_unstable();
            ranks.dedup();
            order::select(&mut values, &ranks);
            Some(Interval {
                low: crate::stats::percentile(&values, tail),
                high: crate::stats::percentile(&values, 1.0 - tail),
            })
        })
        .collect()
}

/// Percentile-bootstrap intervals of `stats` over `units`, each one value and its weight (a
/// response's figure counted once per token), resampling whole units with replacement: the
/// weighted mean, and the weighted quantile as [`crate::stats::weighted_quantile`] takes it.
/// Deterministic for the same data; `None` for every stat under [`MIN_UNITS`] units. The
/// units are sorted once; a resample walks them in that order, each counted as often as picked.
pub fn bootstrap_weighted(
    units: &[(f64, f64)],
    stats: &[Stat],
    level: f64,
) -> Vec<Option<Interval>> {
    let k = units.len();
    if k < MIN_UNITS {
        return vec![None; stats.len()];
    }
    let resamples = (WORK / k).clamp(MIN_RESAMPLES, RESAMPLES);
    let mut draws = Draws::new(0x9E37_79B9_7F4A_7C15_u64 ^ (k as u64).rotate_left(17), k);
    let mut sorted: Vec<usize> = (0..k).collect();
    sorted.sort_by(|&a, &b| units[a].0.total_cmp(&units[b].0));
    let mut figures: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); stats.len()];
    let (mut weights, mut picked) = (vec![0u64; k], Vec::with_capacity(k));
    for _ in 0..resamples {
        draws.resample(&mut weights, &mut picked);
        let total: f64 = picked.iter().map(|&(u, w)| w as f64 * units[u].1).sum();
        if total <= 0.0 {
            continue;
        }
        for (stat, out) in stats.iter().zip(&mut figures) {
            out.push(match *stat {
                Stat::Quantile(q) => weighted_quantile(units, &sorted, &weights, total, q),
                Stat::Mean => {
                    picked
                        .iter()
                        .map(|&(u, w)| w as f64 * units[u].0 * units[u].1)
                        .sum::<f64>()
                        / total
                }
            });
        }
    }
    percentile_intervals(figures, expanded_tail(level, k))
}

/// [`crate::stats::weighted_quantile`] of the resample that holds unit `u` `counts[u]` times,
/// walking `units` in `sorted` order.
fn weighted_quantile(
    units: &[(f64, f64)],
    sorted: &[usize],
    counts: &[u64],
    total: f64,
    q: f64,
) -> f64 {
    let mut seen = 0.0;
    let mut last = 0.0;
    for &u in sorted {
        if counts[u] == 0 {
            continue;
        }
        let (value, weight) = units[u];
        last = value;
        for _ in 0..counts[u] {
            seen += weight;
        }
        if seen >= q * total - 1e-9 {
            return value;
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bootstrap as it was: each resample's samples joined and sorted.
    fn joined_and_sorted(units: &[Vec<f64>], stats: &[Stat], level: f64) -> Vec<Option<Interval>> {
        let k = units.len();
        let total: usize = units.iter().map(Vec::len).sum();
        if k < MIN_UNITS || total == 0 {
            return vec![None; stats.len()];
        }
        let resamples = (WORK / total).clamp(MIN_RESAMPLES, RESAMPLES);
        let mut draws = Draws::new(
            0x9E37_79B9_7F4A_7C15_u64 ^ (total as u64).rotate_left(32) ^ k as u64,
            k,
        );
        let mut figures: Vec<Vec<f64>> = vec![Vec::new(); stats.len()];
        for _ in 0..resamples {
            let mut pool: Vec<f64> = Vec::new();
            for _ in 0..k {
                pool.extend_from_slice(&units[draws.next()]);
            }
            if pool.is_empty() {
                continue;
            }
            pool.sort_unstable_by(f64::total_cmp);
            for (stat, out) in stats.iter().zip(&mut figures) {
                out.push(match *stat {
                    Stat::Quantile(q) => crate::stats::percentile(&pool, q),
                    Stat::Mean => pool.iter().sum::<f64>() / pool.len() as f64,
                });
            }
        }
        let tail = expanded_tail(level, k);
        figures
            .into_iter()
            .map(|mut values| {
                values.sort_unstable_by(f64::total_cmp);
                (!values.is_empty()).then(|| Interval {
                    low: crate::stats::percentile(&values, tail),
                    high: crate::stats::percentile(&values, 1.0 - tail),
                })
            })
            .collect()
    }

    const STATS: [Stat; 5] = [
        Stat::Quantile(0.5),
        Stat::Quantile(0.9),
        Stat::Quantile(0.99),
        Stat::Quantile(0.0),
        Stat::Mean,
    ];

    /// Units of up to 40 samples, some empty, with ties.
    fn units() -> impl Strategy<Value = Vec<Vec<f64>>> {
        prop::collection::vec(
            prop::collection::vec(prop_oneof![0.0f64..1e4, Just(5.0), Just(-0.0)], 0..40),
            MIN_UNITS - 1..30,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn quantiles_equal_those_of_the_sorted_resamples(units in units()) {
            let got = bootstrap(&units, &STATS, 0.95);
            let want = joined_and_sorted(&units, &STATS, 0.95);
            prop_assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want).take(4) {
                prop_assert_eq!(g, w);
            }
            match (got[4], want[4]) {
                (Some(g), Some(w)) => {
                    let scale = w.high.abs().max(1.0);
                    prop_assert!((g.low - w.low).abs() <= 1e-12 * scale, "{g:?} {w:?}");
                    prop_assert!((g.high - w.high).abs() <= 1e-12 * scale, "{g:?} {w:?}");
                }
                (g, w) => prop_assert_eq!(g, w),
            }
        }
    }

    #[test]
    fn many_units_of_one_sample_each_take_a_wide_stride() {
        // 500 units (responses) of 1 to 3 samples: the stride is the number of units.
        let units: Vec<Vec<f64>> = (0..500u32)
            .map(|i| {
                (0..=i % 3)
                    .map(|j| f64::from((i * 7919 + j * 31) % 1000))
                    .collect()
            })
            .collect();
        let tagged: Vec<(f64, u32)> = units
            .iter()
            .enumerate()
            .flat_map(|(u, v)| v.iter().map(move |&x| (x, crate::num::count(u))))
            .collect();
        assert_eq!(Pool::new(tagged, units.len()).stride, 500);
        assert_eq!(
            bootstrap(&units, &STATS[..4], 0.95),
            joined_and_sorted(&units, &STATS[..4], 0.95)
        );
    }

    #[test]
    fn the_weighted_bootstrap_equals_sorting_each_resample() {
        // Whole-number weights and values: every sum is exact, so the two agree to the bit.
        let units: Vec<(f64, f64)> = (0..40u32)
            .map(|i| (f64::from((i * 37) % 23), f64::from(1 + i % 5)))
            .collect();
        let stats = [Stat::Quantile(0.5), Stat::Quantile(0.9), Stat::Mean];
        let k = units.len();
        let mut draws = Draws::new(0x9E37_79B9_7F4A_7C15_u64 ^ (k as u64).rotate_left(17), k);
        let mut figures: Vec<Vec<f64>> = vec![Vec::new(); stats.len()];
        for _ in 0..(WORK / k).clamp(MIN_RESAMPLES, RESAMPLES) {
            let mut pool: Vec<(f64, f64)> = (0..k).map(|_| units[draws.next()]).collect();
            let total: f64 = pool.iter().map(|p| p.1).sum();
            pool.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
            for (stat, out) in stats.iter().zip(&mut figures) {
                out.push(match *stat {
                    Stat::Quantile(q) => crate::stats::weighted_quantile(&pool, total, q),
                    Stat::Mean => pool.iter().map(|p| p.0 * p.1).sum::<f64>() / total,
                });
            }
        }
        let want = percentile_intervals(figures, expanded_tail(0.95, k));
        assert_eq!(bootstrap_weighted(&units, &stats, 0.95), want);
        assert!(want.iter().all(Option::is_some));
    }
}
