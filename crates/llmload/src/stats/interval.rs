//! Confidence intervals, computed for what the data is.
//!
//! - **Order statistics** for a quantile of independent samples: the interval between two order
//!   statistics `X(l)`, `X(u)` whose ranks the binomial distribution sets, so that it covers the
//!   true quantile with at least the level's probability whatever the distribution (no shape is
//!   assumed). With too few samples no ranks exist (a p99 needs 368 samples for a 95 % upper
//!   bound): the quantile is then named in `too_few`, never given an interval.
//! - **Student's t** for a mean of independent values (rounds' throughputs, repeats' figures).
//! - **The bootstrap by unit** where samples are not independent: the units (rounds, time blocks,
//!   sessions, responses for the gaps within them) are resampled with replacement, and the
//!   interval is read from the resampled figures at tails expanded for the number of units
//!   (Hesterberg's expanded percentile interval). It needs [`MIN_UNITS`] units.

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, ContinuousCDF, DiscreteCDF, StudentsT};
use std::sync::atomic::{AtomicU64, Ordering};

/// The confidence level when none is set.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// Units a resampled interval needs; with fewer the figure has none.
pub const MIN_UNITS: usize = 8;

/// The level, as bits of an `f64`; 0 until set.
static LEVEL: AtomicU64 = AtomicU64::new(0);

/// Sets the confidence level of every interval computed from now on (0 < `level` < 1).
pub fn set_level(level: f64) {
    if level > 0.0 && level < 1.0 {
        LEVEL.store(level.to_bits(), Ordering::Relaxed);
    }
}

/// The confidence level in force.
pub fn level() -> f64 {
    match LEVEL.load(Ordering::Relaxed) {
        0 => DEFAULT_LEVEL,
        bits => f64::from_bits(bits),
    }
}

/// A confidence level as given on the command line: `95%`, `95` or `0.95`; from 50 % to
/// 99.9 %.
pub fn parse_level(text: &str) -> Result<f64, String> {
    let bad =
        || format!("{text:?} is not a confidence level: give one from 50% to 99.9%, e.g. 95%");
    let trimmed = text.trim();
    let (number, percent) = match trimmed.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (trimmed, false),
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let level = if percent || value > 1.0 {
        value / 100.0
    } else {
        value
    };
    // `99.9 / 100` is 0.9990000000000001: rounded to what a level can mean, the documented
    // bound is inside the range.
    let level = (level * 1e9).round() / 1e9;
    if level.is_finite() && (0.5..=0.999).contains(&level) {
        Ok(level)
    } else {
        Err(bad())
    }
}

/// A range that covers a figure's true value with the level's probability.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "[f64; 2]", into = "[f64; 2]")]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

impl From<[f64; 2]> for Interval {
    fn from([low, high]: [f64; 2]) -> Interval {
        Interval { low, high }
    }
}

impl From<Interval> for [f64; 2] {
    fn from(i: Interval) -> [f64; 2] {
        [i.low, i.high]
    }
}

impl Interval {
    /// The interval widened, where it must be, to hold `point`.
    #[must_use]
    pub fn holding(self, point: f64) -> Interval {
        Interval {
            low: self.low.min(point),
            high: self.high.max(point),
        }
    }

    /// Half the width as a share of `point` (0 for a point of 0).
    pub fn relative_half_width(self, point: f64) -> f64 {
        if point == 0.0 {
            return 0.0;
        }
        (self.high - self.low) / 2.0 / point.abs()
    }
}

/// How an interval was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Between two order statistics (quantiles of independent samples).
    OrderStatistic,
    /// Student's t over independent values.
    StudentT,
    /// Percentile bootstrap, resampling whole units.
    Bootstrap,
    /// Wilson's score interval of a share.
    Wilson,
}

impl Method {
    /// The method in words, for the views.
    pub fn words(self) -> &'static str {
        match self {
            Method::OrderStatistic => "order statistics",
            Method::StudentT => "Student's t",
            Method::Bootstrap => "bootstrap",
            Method::Wilson => "Wilson score",
        }
    }
}

/// The independent unit an interval rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Each response.
    Response,
    /// Each closed round.
    Round,
    /// Each block of time of a continuous or open loop.
    Block,
    /// Each multi-turn session.
    Session,
    /// Each repeat of a series.
    Repeat,
}

impl Unit {
    /// The unit's plural, for the views.
    pub fn plural(self) -> &'static str {
        match self {
            Unit::Response => "responses",
            Unit::Round => "rounds",
            Unit::Block => "time blocks",
            Unit::Session => "sessions",
            Unit::Repeat => "repeats",
        }
    }

    /// `n` of the unit, and the verb that agrees: "1 round is", "3 rounds are".
    pub fn are(self, n: usize) -> String {
        let plural = self.plural();
        if n == 1 {
            let one = match self {
                Unit::Block => "time block",
                _ => plural.strip_suffix('s').unwrap_or(plural),
            };
            format!("1 {one} is")
        } else {
            format!("{n} {plural} are")
        }
    }
}

/// How an interval was computed: its level, method and independent unit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Basis {
    /// Confidence level (e.g. 0.95).
    pub level: f64,
    /// How it was computed.
    pub method: Method,
    /// The independent unit.
    pub unit: Unit,
    /// How many units there were.
    pub units: usize,
}

impl Basis {
    /// The method, unit and level in a few words: "95 % CI, order statistics over 24
    /// responses".
    pub fn described(&self) -> String {
        format!(
            "{} % CI, {} over {} {}",
            crate::fmt::number(self.level * 100.0),
            self.method.words(),
            self.units,
            self.unit.plural()
        )
    }
}

/// The intervals of a distribution's figures, and how they were computed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Intervals {
    /// How they were computed.
    #[serde(flatten)]
    pub basis: Basis,
    /// The median's interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<Interval>,
    /// The 90th percentile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<Interval>,
    /// The 95th percentile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95: Option<Interval>,
    /// The 99th percentile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<Interval>,
    /// The mean's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<Interval>,
    /// The figures with too few samples or units for any interval ("p99", …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub too_few: Vec<String>,
    /// What the method assumed, where it had to fall back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Intervals {
    /// The interval of the named figure (`median`/`p50`, `p90`, `p95`, `p99`, `mean`).
    pub fn of(&self, figure: &str) -> Option<Interval> {
        match figure {
            "median" | "p50" => self.median,
            "p90" => self.p90,
            "p95" => self.p95,
            "p99" => self.p99,
            "mean" => self.mean,
            _ => None,
        }
    }
}

/// The interval of one figure (a rate, a mean over units), and how it was computed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ci {
    /// How it was computed.
    #[serde(flatten)]
    pub basis: Basis,
    /// The interval; absent when there were too few units for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// Why there is none, or what it assumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Ci {
    /// Student's t interval of the mean of `values`, one per `unit`, at [`level`]; with fewer
    /// than `min_units` (at least 2) it has none and says why.
    pub fn t_over(values: &[f64], unit: Unit, min_units: usize) -> Ci {
        let level = level();
        let enough = values.len() >= min_units.max(2);
        Ci {
            basis: Basis {
                level,
                method: Method::StudentT,
                unit,
                units: values.len(),
            },
            interval: if enough {
                t_interval(values, level)
            } else {
                None
            },
            note: (!enough).then(|| {
                format!(
                    "{} too few for an interval ({} needed)",
                    unit.are(values.len()),
                    min_units.max(2)
                )
            }),
        }
    }
}

/// The quantiles a distribution carries, by name.
pub const QUANTILES: [(&str, f64); 4] =
    [("median", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)];

/// The 1-based ranks `(l, u)` of the order statistics bounding the `q` quantile of `n`
/// independent samples at `level`, each tail holding at most half the rest; `None` when `n` is
/// too small for either bound.
pub fn order_statistic_ranks(n: usize, q: f64, level: f64) -> Option<(usize, usize)> {
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let binomial = Binomial::new(q, n as u64).ok()?;
    let tail = (1.0 - level) / 2.0;
    // B, the samples at or below the quantile, is Binomial(n, q); X(l) ≤ ξ ≤ X(u) unless B < l or
    // B ≥ u. l − 1 is the largest k with P(B ≤ k) ≤ tail; u − 1 the smallest with
    // P(B ≤ k) ≥ 1 − tail.
    if binomial.cdf(0) > tail {
        return None;
    }
    let (mut below, mut above) = (0u64, n as u64);
    while below < above {
        let mid = (below + above).div_ceil(2);
        if binomial.cdf(mid) <= tail {
            below = mid;
        } else {
            above = mid - 1;
        }
    }
    let lower = crate::num::index(below) + 1;
    let (mut from, mut to) = (0u64, n as u64);
    while from < to {
        let mid = u64::midpoint(from, to);
        if binomial.cdf(mid) >= 1.0 - tail {
            to = mid;
        } else {
            from = mid + 1;
        }
    }
    let upper = crate::num::index(from) + 1;
    (upper <= n).then_some((lower, upper))
}

/// The order-statistic interval of the `q` quantile of sorted `sorted`. It reads only the two
/// ranks [`order_statistic_ranks`] gives: `sorted` need only have those in place.
pub fn order_statistic(sorted: &[f64], q: f64, level: f64) -> Option<Interval> {
    let (l, u) = order_statistic_ranks(sorted.len(), q, level)?;
    Some(Interval {
        low: sorted[l - 1],
        high: sorted[u - 1],
    })
}

/// The two-sided Student's t quantile for `level` with `df` degrees of freedom.
pub fn t_quantile(level: f64, df: f64) -> Option<f64> {
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(t.inverse_cdf(0.5 + level / 2.0))
}

/// Student's t interval of the mean of `values` (independent); `None` under two values.
pub fn t_interval(values: &[f64], level: f64) -> Option<Interval> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    // Correctly rounded sums: the same values give the same interval in any order.
    let mean = super::order::exact_sum(values.iter().copied()) / n as f64;
    let ss = super::order::exact_sum(values.iter().map(|x| (x - mean) * (x - mean)));
    let sd = (ss / (n - 1) as f64).sqrt();
    let t = t_quantile(level, (n - 1) as f64)?;
    let half = t * sd / (n as f64).sqrt();
    // A mean of values that cannot be negative (times, rates) is not either.
    let floor = if values.iter().all(|&x| x >= 0.0) {
        0.0
    } else {
        f64::NEG_INFINITY
    };
    Some(Interval {
        low: (mean - half).max(floor),
        high: mean + half,
    })
}

/// A figure a bootstrap recomputes on each resample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stat {
    /// A quantile (0–1), interpolated as the point figures are.
    Quantile(f64),
    /// The mean.
    Mean,
}

mod resample;
pub use resample::{bootstrap, bootstrap_tagged, bootstrap_weighted};

/// Wilson's score interval of a share `k` of `n` at a two-sided `level` (`n` > 0).
pub fn wilson(k: u32, n: u32, level: f64) -> Interval {
    use statrs::distribution::{ContinuousCDF, Normal};
    let z = Normal::new(0.0, 1.0).map_or(1.96, |n| n.inverse_cdf(0.5 + level / 2.0));
    let (k, n) = (f64::from(k), f64::from(n));
    let p = k / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Interval {
        low: (centre - half).max(0.0),
        high: (centre + half).min(1.0),
    }
    .holding(p)
}

#[cfg(test)]
mod tests;
