//! Samples gathered one at a time: exact up to [`EXACT_LIMIT`], then a histogram.
//!
//! A one-hour soak at 100 requests/s × 256 tokens makes 92 million inter-token gaps; keeping them
//! all would cost 700 MiB. Past the limit the values go into an HDR histogram of three significant
//! digits (each percentile within 0.1 % of the exact one), which takes a few hundred KiB whatever
//! the run's length and merges by addition. The count, mean, standard deviation, minimum and
//! maximum stay exact either way (Welford's running moments).

use super::by_unit::{self, Label};
use super::interval::{self, Unit};
use super::{descriptive, Distribution};
use hdrhistogram::Histogram;

/// Up to this many samples, percentiles are exact; beyond it they come from a histogram.
pub const EXACT_LIMIT: usize = 100_000;

/// Past [`EXACT_LIMIT`], the intervals come from a uniform reservoir of this many labelled
/// samples. An interval's width comes from the variation between its units (rounds, blocks,
/// sessions, responses), which a quarter of the samples shows as well as all of them; the
/// reservoir's own sampling moves a p99 by about ±0.13 percentile points (its binomial
/// standard error, 2σ), and the interval is put around the whole sample's figure.
pub(super) const RESERVOIR: usize = 25_000;

/// Significant decimal digits the histogram keeps.
const DIGITS: u8 = 3;

/// Values are kept in the histogram as integer millionths of their unit (ns for ms).
const SCALE: f64 = 1e6;

/// Samples of one metric, in the metric's unit.
///
/// Samples pushed with a [`Label`] (the unit and response each came from) get confidence
/// intervals in their distribution; past [`EXACT_LIMIT`] the intervals come from a uniform
/// reservoir of [`RESERVOIR`] labelled samples, put around the whole sample's figures.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    exact: Vec<f64>,
    /// Boxed: most distributions never reach the histogram, and a case holds many.
    binned: Option<Box<Binned>>,
    /// The kind of the labels, once one was given.
    unit: Option<Unit>,
    /// The exact form's labels: each run of consecutive samples with the same (unit,
    /// response) as (unit, response, samples), in the order of `exact`. A response's gaps
    /// between tokens come together, so a run holds them all: 12 bytes a response instead of 8
    /// a sample.
    runs: Vec<(u32, u32, u32)>,
    /// The binned form's labels: `exact` and `labels` hold the reservoir, a uniform sample of
    /// every labelled sample so far, each value beside its (unit, response).
    labels: Vec<(u32, u32)>,
    /// Labelled samples seen, for the reservoir's draws.
    seen: u64,
}

/// The histogram form, with the exact moments and extremes.
#[derive(Clone, Debug)]
struct Binned {
    histogram: Histogram<u64>,
    n: usize,
    mean: f64,
    /// Σ (x − mean)², Welford's running form.
    m2: f64,
    min: f64,
    max: f64,
}

impl Binned {
    fn new() -> Binned {
        Binned {
            // Three significant digits is within the range the crate accepts (0–5).
            histogram: Histogram::new(DIGITS).unwrap_or_else(|_| unreachable!()),
            n: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    fn push(&mut self, x: f64) {
        // Negative values (none of the metrics should have them) count as 0 in the histogram;
        // the moments and extremes keep them as they are. The histogram grows as it needs to,
        // so recording never fails for a finite value.
        let _ = self
            .histogram
            .record(crate::num::to_u64((x.max(0.0) * SCALE).round()));
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// Chan et al.'s pairwise combination of the moments; histograms add.
    fn merge(&mut self, other: &Binned) {
        if other.n == 0 {
            return;
        }
        let _ = self.histogram.add(&other.histogram);
        let (na, nb) = (self.n as f64, other.n as f64);
        let delta = other.mean - self.mean;
        let n = na + nb;
        self.mean += delta * nb / n;
        self.m2 += other.m2 + delta * delta * na * nb / n;
        self.n += other.n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    fn distribution(&self) -> Option<Distribution> {
        if self.n == 0 {
            return None;
        }
        let at = |q: f64| {
            let v = self.histogram.value_at_quantile(q);
            (self.histogram.median_equivalent(v) as f64 / SCALE).clamp(self.min, self.max)
        };
        Some(Distribution {
            n: self.n,
            median: at(0.50),
            p90: at(0.90),
            p95: at(0.95),
            p99: at(0.99),
            mean: self.mean,
            min: self.min,
            max: self.max,
            sd: if self.n > 1 {
                (self.m2 / (self.n - 1) as f64).sqrt()
            } else {
                0.0
            },
            descriptive: descriptive(self.n),
            relative_error: Some(10f64.powi(-i32::from(DIGITS))),
            ci: None,
        })
    }
}

impl Samples {
    /// No samples yet.
    pub fn new() -> Samples {
        Samples::default()
    }

    /// Adds one value; non-finite values are ignored.
    pub fn push(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        if let Some(b) = &mut self.binned {
            b.push(x);
        } else {
            push_within_limit(&mut self.exact, x);
            if self.exact.len() > EXACT_LIMIT {
                self.bin();
            }
        }
    }

    /// Adds one value with what it belongs to; every value of a distribution with intervals
    /// comes this way (a value pushed without a label leaves it without intervals).
    pub fn push_in(&mut self, x: f64, label: Label) {
        if !x.is_finite() {
            return;
        }
        self.unit.get_or_insert(label.unit);
        if self.binned.is_some() {
            self.draw((x, label.outer, label.response));
        } else {
            match self.runs.last_mut() {
                Some((o, r, n)) if (*o, *r) == (label.outer, label.response) => *n += 1,
                _ => self.runs.push((label.outer, label.response, 1)),
            }
        }
        self.push(x);
    }

    /// Adds each value that is there to its samples, all with `label` (one response's figures,
    /// each to the distribution it belongs to).
    pub fn push_each<const N: usize>(pairs: [(&mut Samples, Option<f64>); N], label: Label) {
        for (samples, value) in pairs {
            if let Some(v) = value {
                samples.push_in(v, label);
            }
        }
    }

    /// Algorithm R: the `seen`-th labelled sample replaces a random one of the reservoir's with
    /// probability `RESERVOIR / seen` (a fixed sequence of draws: the same data, the same
    /// reservoir). The reservoir is the first `labels.len()` values: while the binned form is
    /// made, the exact values past it are still there, and a draw never lands on them.
    fn draw(&mut self, (x, outer, response): (f64, u32, u32)) {
        self.seen += 1;
        if self.exact.len() < RESERVOIR {
            self.exact.push(x);
            self.labels.push((outer, response));
            return;
        }
        let r = crate::num::index(
            crate::workload::prompt::splitmix64(self.seen ^ 0x5EED_5A3D) % self.seen,
        );
        if let (Some(value), Some(label)) = (self.exact.get_mut(r), self.labels.get_mut(r)) {
            *value = x;
            *label = (outer, response);
        }
    }

    /// The labelled samples as (value, unit, response): the exact ones, or the reservoir.
    fn labelled(&self) -> Vec<(f64, u32, u32)> {
        if self.binned.is_some() {
            return self
                .exact
                .iter()
                .zip(&self.labels)
                .map(|(&x, &(o, r))| (x, o, r))
                .collect();
        }
        let each = self
            .runs
            .iter()
            .flat_map(|&(o, r, n)| std::iter::repeat_n((o, r), n as usize));
        self.exact
            .iter()
            .zip(each)
            .map(|(&x, (o, r))| (x, o, r))
            .collect()
    }

    /// Samples that carry a label (the exact form's runs, or the reservoir).
    fn labelled_len(&self) -> usize {
        if self.binned.is_some() {
            self.labels.len()
        } else {
            self.runs.iter().map(|&(_, _, n)| n as usize).sum()
        }
    }

    /// The same values without their labels: the exact ones, or the histogram (a binned form's
    /// reservoir is no part of its values).
    #[must_use]
    pub fn values(&self) -> Samples {
        match &self.binned {
            Some(b) => Samples {
                binned: Some(b.clone()),
                ..Samples::default()
            },
            None => Samples {
                exact: self.exact.clone(),
                ..Samples::default()
            },
        }
    }

    /// Samples so far.
    pub fn len(&self) -> usize {
        self.binned.as_ref().map_or(self.exact.len(), |b| b.n)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the values went into the histogram.
    pub fn is_binned(&self) -> bool {
        self.binned.is_some()
    }

    /// Adds every sample of `other` (after this one's, for the exact form's order). Labels
    /// are kept where both are labelled alike.
    pub fn merge(&mut self, other: Samples) {
        // Nothing to add: the labels' kind stays this one's.
        if other.is_empty() {
            return;
        }
        if self.is_empty() && self.unit.is_none() {
            self.unit = other.unit;
        }
        if self.unit.is_some() && self.unit == other.unit {
            if self.binned.is_none()
                && other.binned.is_none()
                && self.exact.len() + other.exact.len() <= EXACT_LIMIT
            {
                self.runs.extend_from_slice(&other.runs);
            } else {
                let theirs = other.labelled();
                self.bin();
                for sample in theirs {
                    self.draw(sample);
                }
            }
        } else {
            self.unit = None;
        }
        if self.binned.is_none()
            && other.binned.is_none()
            && self.exact.len() + other.exact.len() <= EXACT_LIMIT
        {
            self.exact.extend(other.exact);
            return;
        }
        self.bin();
        let binned = self.binned.get_or_insert_with(|| Box::new(Binned::new()));
        match other.binned {
            Some(b) => binned.merge(&b),
            None => other.exact.iter().for_each(|&x| binned.push(x)),
        }
    }

    /// The distribution of the samples; `None` when there are none. Labelled samples get
    /// their confidence intervals at [`interval::level`].
    pub fn distribution(mut self) -> Option<Distribution> {
        let labelled = self
            .unit
            .filter(|_| self.binned.is_some() || self.labelled_len() == self.exact.len());
        let Some(unit) = labelled else {
            return match &self.binned {
                Some(b) => b.distribution(),
                None => Distribution::from_samples(&mut self.exact),
            };
        };
        let mut pairs = if self.binned.is_some() {
            joined(
                std::mem::take(&mut self.exact),
                std::mem::take(&mut self.labels),
            )
        } else {
            joined_runs(std::mem::take(&mut self.exact), &self.runs)
        };
        // Sorted once, here: the figures' ranks are then in place, and the intervals'
        // bootstrap (which orders its samples) finds them in order; selecting the ranks, then
        // sorting for the bootstrap, cost about twice as much.
        pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        // The exact form's figures come from the triples themselves; a reservoir's own figures
        // are what its intervals are computed around.
        let (mut d, around) = match &self.binned {
            Some(b) => (
                b.distribution()?,
                Distribution::from_keyed(&mut pairs, |p| p.0),
            ),
            None => (Distribution::from_keyed(&mut pairs, |p| p.0)?, None),
        };
        d.ci = by_unit::intervals(pairs, unit, interval::level()).map(|mut ci| {
            match &around {
                Some(around) => by_unit::centre(&mut ci, around, &d),
                None => by_unit::hold(&mut ci, &d),
            }
            ci
        });
        Some(d)
    }

    /// Moves the exact values into the histogram form (labelled ones into the reservoir too).
    fn bin(&mut self) {
        if self.binned.is_some() {
            return;
        }
        let mut binned = Binned::new();
        for &x in &self.exact {
            binned.push(x);
        }
        let all_labelled = self.unit.is_some() && self.labelled_len() == self.exact.len();
        self.binned = Some(Box::new(binned));
        if all_labelled {
            // The first RESERVOIR draws fill the reservoir in order: they stay where they
            // are (their labels written out), and the rest are drawn as any later sample is.
            let kept = self.exact.len().min(RESERVOIR);
            let each = std::mem::take(&mut self.runs)
                .into_iter()
                .flat_map(|(o, r, n)| std::iter::repeat_n((o, r), n as usize));
            let mut each = each.fuse();
            self.labels = Vec::with_capacity(kept);
            self.labels.extend(each.by_ref().take(kept));
            self.seen = kept as u64;
            // Drawn where they lie: a draw writes only within the reservoir (the first
            // `labels.len()` values), and reads come from beyond it: no second buffer is made.
            for (i, (o, r)) in (kept..self.exact.len()).zip(each) {
                let x = self.exact[i];
                self.draw((x, o, r));
            }
            self.exact.truncate(kept);
            self.exact.shrink_to_fit();
        } else {
            self.exact = Vec::new();
            self.labels = Vec::new();
            self.runs = Vec::new();
        }
    }
}

/// The (value, unit, response) triples of labelled samples, made a piece at a time from the
/// end, each piece given back by the buffers it came from as it moves: the largest
/// distributions are never held twice over (the triples' order is no part of any figure).
fn joined(mut values: Vec<f64>, mut labels: Vec<(u32, u32)>) -> Vec<(f64, u32, u32)> {
    /// Samples moved at a time.
    const PIECE: usize = 8192;
    let mut out = Vec::with_capacity(values.len());
    while !values.is_empty() {
        let at = values.len().saturating_sub(PIECE);
        let tail = labels.drain(at.min(labels.len())..);
        out.extend(values.drain(at..).zip(tail).map(|(x, (o, r))| (x, o, r)));
        values.shrink_to_fit();
        labels.shrink_to_fit();
    }
    out
}

/// [`joined`] for the exact form, whose labels are runs: the triples made from the end, a
/// piece at a time, the values' buffer given back as they move.
fn joined_runs(mut values: Vec<f64>, runs: &[(u32, u32, u32)]) -> Vec<(f64, u32, u32)> {
    /// Samples moved at a time.
    const PIECE: usize = 8192;
    let mut out = Vec::with_capacity(values.len());
    // The runs from the last, each with the samples of it still to move.
    let mut runs = runs.iter().rev().map(|&(o, r, n)| (o, r, n as usize));
    let mut current = runs.next();
    while !values.is_empty() {
        let at = values.len().saturating_sub(PIECE);
        let mut piece: Vec<(f64, u32, u32)> = Vec::with_capacity(values.len() - at);
        for x in values.drain(at..).rev() {
            while matches!(current, Some((_, _, 0))) {
                current = runs.next();
            }
            let Some((o, r, n)) = current.as_mut() else {
                break;
            };
            *n -= 1;
            piece.push((x, *o, *r));
        }
        out.extend(piece.into_iter().rev());
        values.shrink_to_fit();
    }
    out
}

/// Pushes `item`, growing `values` as a vector does but never past one more than
/// [`EXACT_LIMIT`] (the most the exact form holds before it is binned, and the reservoir's
/// size), where doubling would leave a third of the room unused.
fn push_within_limit<T>(values: &mut Vec<T>, item: T) {
    if values.len() == values.capacity() && values.len() <= EXACT_LIMIT {
        let room = (values.len().max(4)).min(EXACT_LIMIT + 1 - values.len());
        values.reserve_exact(room);
    }
    values.push(item);
}

impl FromIterator<f64> for Samples {
    fn from_iter<I: IntoIterator<Item = f64>>(values: I) -> Samples {
        let mut s = Samples::new();
        values.into_iter().for_each(|x| s.push(x));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic spread of positive values (a fixed-seed LCG over 0.1–1000 ms).
    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                0.1 + (state >> 11) as f64 / (1u64 << 53) as f64 * 999.9
            })
            .collect()
    }

    #[test]
    fn exact_up_to_the_limit_then_within_the_histogram_error() {
        let small = values(EXACT_LIMIT, 1);
        let d = small.iter().copied().collect::<Samples>();
        assert!(!d.is_binned());
        let exact = Distribution::from_samples(&mut small.clone()).expect("non-empty");
        assert_eq!(d.distribution(), Some(exact));

        let large = values(EXACT_LIMIT * 3, 2);
        let s: Samples = large.iter().copied().collect();
        assert!(s.is_binned());
        let got = s.distribution().expect("non-empty");
        let want = Distribution::from_samples(&mut large.clone()).expect("non-empty");
        assert_eq!(got.n, want.n);
        assert_eq!((got.min, got.max), (want.min, want.max));
        assert!((got.mean - want.mean).abs() < 1e-9 * want.mean, "{got:?}");
        assert!((got.sd - want.sd).abs() < 1e-9 * want.sd, "{got:?}");
        assert_eq!(got.relative_error, Some(0.001));
        for (g, w) in [
            (got.median, want.median),
            (got.p90, want.p90),
            (got.p95, want.p95),
            (got.p99, want.p99),
        ] {
            assert!((g - w).abs() <= 1e-3 * w, "{g} vs {w}");
        }
    }

    #[test]
    #[expect(clippy::many_single_char_names, reason = "a, b: the two halves merged")]
    fn merging_equals_pushing_everything_into_one() {
        let (a, b) = (values(EXACT_LIMIT, 3), values(EXACT_LIMIT / 2, 4));
        let mut merged: Samples = a.iter().copied().collect();
        merged.merge(b.iter().copied().collect());
        let whole: Samples = a.iter().chain(&b).copied().collect();
        let (m, w) = (
            merged.distribution().expect("non-empty"),
            whole.distribution().expect("non-empty"),
        );
        assert_eq!(
            (m.n, m.median, m.p99, m.min, m.max),
            (w.n, w.median, w.p99, w.min, w.max)
        );
        assert!((m.mean - w.mean).abs() < 1e-9 * w.mean && (m.sd - w.sd).abs() < 1e-9 * w.sd);
        // Small enough together: still exact, and in order.
        let mut small: Samples = [3.0, 1.0].into_iter().collect();
        small.merge([2.0].into_iter().collect());
        let d = small.distribution().expect("non-empty");
        assert_eq!((d.n, d.median, d.relative_error), (3, 2.0, None));
    }

    #[test]
    fn the_reservoir_takes_over_the_exact_values_in_place_and_keeps_each_label_with_its_value() {
        let mut s = Samples::new();
        let n = EXACT_LIMIT + EXACT_LIMIT / 2;
        for i in 0..n {
            let i = u32::try_from(i).expect("small");
            let label = Label {
                unit: Unit::Round,
                outer: i / 100,
                response: i,
            };
            s.push_in(f64::from(i), label);
        }
        assert!(s.is_binned());
        let reservoir = s.labelled();
        assert_eq!(reservoir.len(), RESERVOIR);
        // Each value still sits beside the label it came with, wherever the draws put it.
        assert!(reservoir
            .iter()
            .all(|&(x, outer, response)| f64::from(response) == x && outer == response / 100));
        // Drawn from the whole range, the exact form's past the reservoir's first fill and the
        // binned form's alike; no sample twice.
        assert!(reservoir.iter().any(|&(x, _, _)| x >= EXACT_LIMIT as f64));
        assert!(reservoir
            .iter()
            .any(|&(x, _, _)| x >= RESERVOIR as f64 && x < EXACT_LIMIT as f64));
        let mut seen: Vec<u32> = reservoir.iter().map(|&(_, _, r)| r).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), RESERVOIR);
        // Uniform: each third of the samples holds about a third of the reservoir.
        let thirds = reservoir.iter().fold([0usize; 3], |mut t, &(_, _, r)| {
            t[(r as usize * 3 / n).min(2)] += 1;
            t
        });
        assert!(
            thirds
                .iter()
                .all(|&t| t.abs_diff(RESERVOIR / 3) < RESERVOIR / 30),
            "{thirds:?}"
        );
        // The reservoir's buffers hold no room beyond it.
        assert!(s.exact.capacity() <= RESERVOIR && s.labels.capacity() <= RESERVOIR);
        assert!(s.runs.is_empty());
        let d = s.distribution().expect("non-empty");
        assert_eq!(d.n, n);
        assert!(d.ci.is_some());
    }

    #[test]
    fn a_responses_samples_share_one_run_and_come_back_each_with_its_label() {
        let mut s = Samples::new();
        // 30 responses of 200 gaps each, in 10 rounds.
        for response in 0..30u32 {
            for k in 0..200u32 {
                let label = Label {
                    unit: Unit::Round,
                    outer: response / 3,
                    response,
                };
                s.push_in(f64::from(response * 1000 + k), label);
            }
        }
        assert_eq!(s.runs.len(), 30);
        assert_eq!(s.labelled_len(), 6000);
        let labelled = s.labelled();
        assert!(labelled
            .iter()
            .all(|&(x, o, r)| (x / 1000.0).floor() == f64::from(r) && o == r / 3));
        // The triples the intervals get are the same, made from the runs.
        let mut joined = joined_runs(s.exact.clone(), &s.runs);
        let mut want = labelled;
        joined.sort_by(|a, b| a.0.total_cmp(&b.0));
        want.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(joined, want);
        // Merged exact forms keep their runs in order.
        let mut other = Samples::new();
        other.push_in(
            1.0,
            Label {
                unit: Unit::Round,
                outer: 99,
                response: 99,
            },
        );
        s.merge(other);
        assert_eq!(s.runs.last(), Some(&(99, 99, 1)));
        assert!(s.distribution().expect("non-empty").ci.is_some());
    }

    #[test]
    fn the_histogram_costs_the_same_for_ten_times_the_samples() {
        let mut s: Samples = values(EXACT_LIMIT + 1, 5).into_iter().collect();
        let before = s.binned.as_ref().map(|b| b.histogram.distinct_values());
        for x in values(EXACT_LIMIT * 10, 6) {
            s.push(x);
        }
        let after = s.binned.as_ref().map(|b| b.histogram.distinct_values());
        assert_eq!(before, after, "the histogram's buckets did not grow");
        assert!(s.exact.capacity() == 0);
    }
}
