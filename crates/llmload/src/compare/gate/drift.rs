//! Between-run variation in a check: what a single attempt's interval cannot see, and how big
//! it was wherever it can be known.
//!
//! - **Repeats** (`--repeat`): the change's interval is Welch's over the repeats' figures, which
//!   already holds what varies from one run to the next.
//! - **History** (`compare --history DIR…`): earlier attempts of the same case. Their figures'
//!   variance, less the mean of their own squared standard errors, is the variance one attempt
//!   adds between runs (τ², never below 0); BASE and NEW each drew one, so 2τ² joins the
//!   change's variance, with the history's k − 1 degrees of freedom.
//! - **Trend**: a case whose rounds' throughput moves steadily across the attempt (a straight
//!   line on the logarithms whose slope's interval excludes 0, over 4 rounds or more) is
//!   drifting. Half the drift across the attempt (the slope times its span: how far the
//!   attempt's middle sits from either end) is taken as one standard error of the change, as a
//!   relative change of any metric of the case (a machine that slows slows them alike).
//!
//! Otherwise the between-run term is unknown, and the check says so. The variance is on the
//! scale the change's interval is worked on: logarithms for a relative bound, the metric's unit
//! for an absolute one.

use super::change;
use super::{Change, Figure};
use crate::summary::CaseSummary;
use serde::Serialize;

/// Where a check's between-run term came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The attempts' own repeats: Welch's interval holds it.
    Repeats,
    /// Earlier attempts of the case (`--history`).
    History,
    /// A steady trend across an attempt's rounds.
    Trend,
    /// Not known: one attempt a side, no history, no trend seen.
    Unknown,
}

/// A check's between-run term.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BetweenRuns {
    /// Where it came from.
    pub source: Source,
    /// One attempt's standard deviation between runs in the rule's unit (percent, or the
    /// metric's unit), where it is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
    /// Whether it entered the change's interval.
    pub in_interval: bool,
    /// In one short sentence.
    pub sentence: String,
    /// The variance it adds to the change's, on the interval's scale.
    #[serde(skip)]
    pub variance: f64,
    /// The degrees of freedom of that variance.
    #[serde(skip)]
    pub df: f64,
}

impl BetweenRuns {
    /// The term of a Welch interval over `base` and `new` repeats' figures.
    pub fn repeats(bound: Change, base: &[f64], new: &[f64]) -> BetweenRuns {
        let log = matches!(bound, Change::Percent(_));
        let scaled: Vec<f64> = base
            .iter()
            .chain(new)
            .map(|&v| {
                if log {
                    v.max(f64::MIN_POSITIVE).ln()
                } else {
                    v
                }
            })
            .collect();
        let sd = pooled_sd(&scaled[..base.len()], &scaled[base.len()..]);
        let spread = sd.map(|sd| unit(bound, sd));
        let size = spread.map_or_else(String::new, |s| {
            format!("; their spread ±{}", shown(bound, s))
        });
        BetweenRuns {
            source: Source::Repeats,
            spread,
            in_interval: true,
            sentence: format!(
                "between runs: in the interval (Welch over {} and {} repeats{size})",
                base.len(),
                new.len()
            ),
            variance: 0.0,
            df: f64::INFINITY,
        }
    }

    /// The unknown term, and what was looked for.
    fn unknown(trend_seen: Option<String>) -> BetweenRuns {
        let trend = trend_seen.unwrap_or_else(|| "no rounds to show a trend".into());
        BetweenRuns {
            source: Source::Unknown,
            spread: None,
            in_interval: false,
            sentence: format!(
                "between runs: unknown (one attempt a side, no --history; {trend}): the interval \
                 is of these two attempts only"
            ),
            variance: 0.0,
            df: f64::INFINITY,
        }
    }
}

/// The pooled standard deviation of two groups (each about its own mean); `None` under two
/// values in each.
fn pooled_sd(a: &[f64], b: &[f64]) -> Option<f64> {
    let ss = |v: &[f64]| {
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>()
    };
    let df = a.len().checked_sub(1)? + b.len().checked_sub(1)?;
    (a.len() >= 2 && b.len() >= 2).then(|| ((ss(a) + ss(b)) / df as f64).sqrt())
}

/// A standard deviation on the interval's scale in the rule's unit: percent for a relative
/// bound (from logarithms), as it is for an absolute one.
fn unit(bound: Change, sd: f64) -> f64 {
    match bound {
        Change::Percent(_) => sd.exp_m1() * 100.0,
        Change::Absolute(_) => sd,
    }
}

/// An amount in the rule's unit, briefly.
fn shown(bound: Change, v: f64) -> String {
    match bound {
        Change::Percent(_) => format!("{v:.1} %"),
        Change::Absolute(_) => format!("{v:.3}"),
    }
}

/// The smallest drift across an attempt, on the logarithms, that counts as one (2 %): a steady
/// slope smaller than that is too small to matter beside any bound a rule would set.
pub const MIN_DRIFT: f64 = 0.02;

/// A steady trend across one attempt's rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trend {
    /// Rounds it is fitted over.
    pub rounds: usize,
    /// The change of throughput across them, on the logarithms (negative: slowing).
    pub across: f64,
    /// Whether the slope's interval excludes 0 at `level` and the drift across the rounds is
    /// at least [`MIN_DRIFT`].
    pub steady: bool,
}

/// The trend of `case`'s complete rounds' throughputs, in round order (repeat, round), by a
/// least-squares line on their logarithms; `None` under four rounds.
pub fn trend(case: &CaseSummary, level: f64) -> Option<Trend> {
    let mut rounds: Vec<_> = case
        .rounds
        .iter()
        .filter(|r| r.complete && r.throughput_tps > 0.0 && r.throughput_tps.is_finite())
        .collect();
    rounds.sort_by_key(|r| (r.repeat, r.round));
    let y: Vec<f64> = rounds.iter().map(|r| r.throughput_tps.ln()).collect();
    fit(&y, level)
}

/// The least-squares trend of `y` over its index, at `level`.
pub fn fit(y: &[f64], level: f64) -> Option<Trend> {
    let k = y.len();
    if k < 4 {
        return None;
    }
    let n = k as f64;
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = y.iter().sum::<f64>() / n;
    let sxx: f64 = (0..k).map(|i| (i as f64 - mean_x).powi(2)).sum();
    let sxy: f64 = y
        .iter()
        .enumerate()
        .map(|(i, v)| (i as f64 - mean_x) * (v - mean_y))
        .sum();
    let slope = sxy / sxx;
    let ssr: f64 = y
        .iter()
        .enumerate()
        .map(|(i, v)| (v - mean_y - slope * (i as f64 - mean_x)).powi(2))
        .sum();
    let se = (ssr / (n - 2.0) / sxx).sqrt();
    let t = crate::stats::interval::t_quantile(level, n - 2.0)?;
    let across = slope * (n - 1.0);
    Some(Trend {
        rounds: k,
        across,
        steady: slope.abs() > t * se && across.abs() >= MIN_DRIFT,
    })
}

/// The between-run term of a check on `base` against `new` (whose figures are `base_figure`
/// and the history's `history`, each one earlier attempt's figure of the case), for a rule
/// with `bound`, at `level`.
pub fn assess(
    bound: Change,
    (base, base_figure): (&CaseSummary, &Figure),
    new: &CaseSummary,
    history: &[Figure],
    level: f64,
) -> BetweenRuns {
    let from_history = from_history(bound, history, level);
    let trends: Vec<(&str, Trend)> = [("BASE", base), ("NEW", new)]
        .into_iter()
        .filter_map(|(side, c)| Some((side, trend(c, level)?)))
        .collect();
    let steady = trends
        .iter()
        .filter(|(_, t)| t.steady)
        .max_by(|a, b| a.1.across.abs().total_cmp(&b.1.across.abs()));
    let from_trend = steady.map(|&(side, t)| {
        let half = t.across.abs() / 2.0;
        let sd = match bound {
            Change::Percent(_) => half,
            Change::Absolute(_) => half.exp_m1() * base_figure.value.abs(),
        };
        BetweenRuns {
            source: Source::Trend,
            spread: Some(unit(bound, sd)),
            in_interval: true,
            sentence: format!(
                "between runs: {side}'s rounds drifted steadily ({:+.1} % throughput across its \
                 {} rounds): that drift is in the interval",
                t.across.exp_m1() * 100.0,
                t.rounds
            ),
            variance: sd * sd,
            // The fit's slope was told from 0; its size is taken as known.
            df: f64::INFINITY,
        }
    });
    match (from_history, from_trend) {
        // The history measures the spread between runs directly; a trend larger than it says
        // this pair drifted more than the earlier attempts did.
        (Some(h), Some(mut t)) if t.variance > h.variance => {
            t.sentence = t.sentence.replace(
                ": that drift",
                &format!(
                    ", more than the {} earlier attempts varied: that drift",
                    history.len()
                ),
            );
            t
        }
        (Some(h), _) => h,
        (None, Some(t)) => t,
        (None, None) => {
            let seen = (!trends.is_empty()).then(|| {
                let rounds: Vec<String> =
                    trends.iter().map(|(_, t)| t.rounds.to_string()).collect();
                format!(
                    "no steady trend across the rounds ({})",
                    rounds.join(" and ")
                )
            });
            BetweenRuns::unknown(seen)
        }
    }
}

/// The term from earlier attempts' figures: their variance less their own noise, 2τ² on the
/// change; `None` under two earlier figures.
fn from_history(bound: Change, history: &[Figure], level: f64) -> Option<BetweenRuns> {
    let log = matches!(bound, Change::Percent(_));
    if history.len() < 2 || (log && history.iter().any(|f| f.value <= 0.0)) {
        return None;
    }
    let z = change::z(level);
    let (values, own): (Vec<f64>, Vec<f64>) = history
        .iter()
        .map(|f| {
            let value = if log { f.value.ln() } else { f.value };
            // The figure's own standard error, from its interval (0 without one: the whole
            // spread then counts as between runs).
            let se = f.interval.map_or(0.0, |i| {
                let (low, high) = if log {
                    (i.low.max(f64::MIN_POSITIVE).ln(), i.high.ln())
                } else {
                    (i.low, i.high)
                };
                (high - low) / (2.0 * z)
            });
            (value, se * se)
        })
        .unzip();
    let k = values.len() as f64;
    let mean = values.iter().sum::<f64>() / k;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0);
    let tau2 = (variance - own.iter().sum::<f64>() / k).max(0.0);
    let spread = unit(bound, tau2.sqrt());
    let sentence = if tau2 > 0.0 {
        format!(
            "between runs: ±{} (sd over {} earlier attempts, beyond their own noise): in the \
             interval",
            shown(bound, spread),
            history.len()
        )
    } else {
        format!(
            "between runs: none beyond each attempt's own noise over {} earlier attempts",
            history.len()
        )
    };
    Some(BetweenRuns {
        source: Source::History,
        spread: Some(spread),
        in_interval: true,
        sentence,
        variance: 2.0 * tau2,
        df: k - 1.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Interval;

    fn figure(value: f64, half: f64) -> Figure {
        Figure {
            interval: Some(Interval {
                low: value - half,
                high: value + half,
            }),
            ..Figure::new(value, 24, "responses")
        }
    }

    #[test]
    fn rounds_slowing_steadily_are_a_trend_and_noise_around_a_level_is_not() {
        // Each round 4 % slower than the last, with a little noise.
        let slowing: Vec<f64> = [0.0, 0.01, -0.01, 0.005, -0.005, 0.0]
            .iter()
            .enumerate()
            .map(|(i, e)| (100.0 * 0.96f64.powi(i32::try_from(i).expect("small"))).ln() + e)
            .collect();
        let t = fit(&slowing, 0.95).expect("six rounds");
        assert!(t.steady, "{t:?}");
        assert_eq!(t.rounds, 6);
        // Five steps of −4 %: about −18.5 % across.
        assert!((t.across.exp_m1() * 100.0 + 18.5).abs() < 2.0, "{t:?}");
        let level: Vec<f64> = [100.0, 104.0, 97.0, 103.0, 98.0, 101.0]
            .iter()
            .map(|v: &f64| v.ln())
            .collect();
        assert!(!fit(&level, 0.95).expect("six rounds").steady);
        assert_eq!(fit(&level[..3], 0.95), None);
        // A slope told from 0 on quiet rounds, but under 1 % across them: no drift that
        // matters.
        let creeping: Vec<f64> = [0.0, 0.0001, -0.0001, 0.0]
            .iter()
            .enumerate()
            .map(|(i, e)| 100f64.ln() + 0.003 * i as f64 + e)
            .collect();
        let t = fit(&creeping, 0.95).expect("four rounds");
        assert!(t.across < MIN_DRIFT && !t.steady, "{t:?}");
    }

    #[test]
    fn a_history_s_spread_beyond_its_own_noise_is_the_between_run_term() {
        // Five earlier attempts at 100, 120, 90, 130, 95 ms, each ±2 ms: spread far beyond.
        let history: Vec<Figure> = [100.0, 120.0, 90.0, 130.0, 95.0]
            .iter()
            .map(|&v| figure(v, 2.0))
            .collect();
        let b = from_history(Change::Percent(10.0), &history, 0.95).expect("five attempts");
        assert_eq!(b.source, Source::History);
        assert_eq!(b.df, 4.0);
        let spread = b.spread.expect("a spread");
        assert!(spread > 12.0 && spread < 20.0, "{spread}");
        assert!(b.variance > 0.0);
        // Figures within their own noise: no between-run term, said so.
        let quiet: Vec<Figure> = [100.0, 101.0, 99.0]
            .iter()
            .map(|&v| figure(v, 10.0))
            .collect();
        let b = from_history(Change::Percent(10.0), &quiet, 0.95).expect("three attempts");
        assert_eq!(b.variance, 0.0);
        assert!(b.sentence.contains("none beyond"), "{}", b.sentence);
        assert_eq!(
            from_history(Change::Percent(10.0), &history[..1], 0.95),
            None
        );
    }
}
