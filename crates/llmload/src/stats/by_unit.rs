//! Which interval a distribution's samples support, from the units they belong to.
//!
//! Samples carry a label: the unit they belong to (a round, a second of a loop's window, a
//! session) and the response they came from. With [`MIN_UNITS`] units or more, the units are
//! resampled (a loop's seconds first joined into at most [`BLOCKS`] equal blocks of time). With
//! fewer, one sample per response is taken as independent (order statistics), and several per
//! response (the gaps between tokens) are resampled by response; the intervals then say so.

use super::interval::{
    bootstrap_tagged, order_statistic, order_statistic_ranks, t_interval, Basis, Interval,
    Intervals, Method, Stat, Unit, MIN_UNITS, QUANTILES,
};
use super::is_descriptive;

/// A loop's window is cut into at most this many blocks of time.
pub const BLOCKS: u32 = 20;

/// What a sample belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label {
    /// The kind of unit.
    pub unit: Unit,
    /// Which one: the round, the second of the window (for [`Unit::Block`]), the session.
    pub outer: u32,
    /// The response the sample came from, distinct within the distribution.
    pub response: u32,
}

impl Label {
    /// The first response of round 1, for tests.
    #[cfg(test)]
    pub(crate) const ROUND_ONE: Label = Label {
        unit: Unit::Round,
        outer: 1,
        response: 0,
    };
}

/// The intervals of the samples `pairs` (value, unit, response), `unit` their units' kind.
/// `None` without samples. The samples are taken by value: their buffer becomes the
/// bootstrap's (each sample tagged with its unit in place), so that no second copy of a large
/// distribution is made.
pub fn intervals(pairs: Vec<(f64, u32, u32)>, unit: Unit, level: f64) -> Option<Intervals> {
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len();
    let (first, width) = if unit == Unit::Block {
        let first = pairs.iter().map(|p| p.1).min().unwrap_or(0);
        let last = pairs.iter().map(|p| p.1).max().unwrap_or(0);
        (first, (last - first + 1).div_ceil(BLOCKS).max(1))
    } else {
        (0, 1)
    };
    let outer = move |p: &(f64, u32, u32)| (p.1 - first) / width;
    let outer_keys = keys(&pairs, &outer);
    if outer_keys.len() >= MIN_UNITS {
        let k = outer_keys.len();
        return Some(resampled(
            (tagged(pairs, &outer_keys, &outer), k),
            n,
            unit,
            level,
            None,
        ));
    }
    let note = |what: &str| {
        format!(
            "{} too few to resample ({MIN_UNITS} needed): {what}",
            unit.are(outer_keys.len())
        )
    };
    let response = |p: &(f64, u32, u32)| p.2;
    let responses = keys(&pairs, &response);
    if responses.len() == n {
        let values: Vec<f64> = pairs.iter().map(|p| p.0).collect();
        drop(pairs);
        // Only the ranks the intervals read are put in place (selection, not a sort).
        let mut sorted = values.clone();
        let mut ranks: Vec<usize> = QUANTILES
            .iter()
            .filter_map(|&(_, q)| order_statistic_ranks(n, q, level))
            .flat_map(|(l, u)| [l - 1, u - 1])
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        super::order::select(&mut sorted, &ranks);
        let mut out = Intervals {
            basis: Basis {
                level,
                method: Method::OrderStatistic,
                unit: Unit::Response,
                units: n,
            },
            median: None,
            p90: None,
            p95: None,
            p99: None,
            mean: t_interval(&values, level),
            too_few: Vec::new(),
            note: (unit != Unit::Response).then(|| note("the responses are taken as independent")),
        };
        for (name, q) in QUANTILES {
            set(&mut out, name, order_statistic(&sorted, q, level));
        }
        return Some(out);
    }
    let note = note("resampled by response instead");
    let k = responses.len();
    let by_response = (tagged(pairs, &responses, &response), k);
    Some(resampled(by_response, n, Unit::Response, level, Some(note)))
}

/// The distinct `key`s of `pairs`, in order: the units. Keys within a range a few times the
/// samples' number (rounds, seconds, responses: small consecutive numbers) are marked in a
/// table, in O(n); others are sorted.
fn keys(pairs: &[(f64, u32, u32)], key: &dyn Fn(&(f64, u32, u32)) -> u32) -> Vec<u32> {
    let (low, high) = pairs
        .iter()
        .map(key)
        .fold((u32::MAX, 0), |(l, h), k| (l.min(k), h.max(k)));
    let Some(range) = high.checked_sub(low).map(|r| r as usize + 1) else {
        return Vec::new();
    };
    if range <= 4 * pairs.len() + 64 {
        let mut seen = vec![false; range];
        for p in pairs {
            seen[(key(p) - low) as usize] = true;
        }
        return (low..=high)
            .zip(seen)
            .filter_map(|(k, seen)| seen.then_some(k))
            .collect();
    }
    let mut keys: Vec<u32> = pairs.iter().map(key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.shrink_to_fit();
    keys
}

/// The samples of `pairs`, each tagged with the index of its unit in `keys` (the units
/// ordered by their `key`). A (value, unit) pair takes the room of a (value, unit, response)
/// one, so the collection reuses `pairs`' buffer.
fn tagged(
    pairs: Vec<(f64, u32, u32)>,
    keys: &[u32],
    key: &dyn Fn(&(f64, u32, u32)) -> u32,
) -> Vec<(f64, u32)> {
    pairs
        .into_iter()
        .map(|p| {
            let index = keys.binary_search(&key(&p)).unwrap_or_default();
            (p.0, crate::num::count(index))
        })
        .collect()
}

/// Bootstrap intervals over the units of `(samples, k)` ([`tagged`]), `n` samples in all.
fn resampled(
    (samples, k): (Vec<(f64, u32)>, usize),
    n: usize,
    unit: Unit,
    level: f64,
    note: Option<String>,
) -> Intervals {
    let mut out = Intervals {
        basis: Basis {
            level,
            method: Method::Bootstrap,
            unit,
            units: k,
        },
        median: None,
        p90: None,
        p95: None,
        p99: None,
        mean: None,
        too_few: Vec::new(),
        note,
    };
    if k < MIN_UNITS {
        out.too_few = QUANTILES
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .collect();
        out.too_few.push("mean".to_owned());
        return out;
    }
    // A quantile with fewer than five samples beyond it has no interval a resample can give.
    let testable: Vec<(&str, f64)> = QUANTILES
        .into_iter()
        .filter(|&(_, q)| !is_descriptive(n, q))
        .collect();
    let mut stats: Vec<Stat> = testable.iter().map(|&(_, q)| Stat::Quantile(q)).collect();
    stats.push(Stat::Mean);
    let found = bootstrap_tagged(samples, k, &stats, level);
    for (&(name, _), i) in testable.iter().zip(&found) {
        set(&mut out, name, *i);
    }
    out.mean = found.last().copied().flatten();
    for (name, q) in QUANTILES {
        if is_descriptive(n, q) {
            out.too_few.push(name.to_owned());
        }
    }
    out
}

/// Sets the named quantile's interval, or names it among the too few.
fn set(out: &mut Intervals, name: &str, interval: Option<Interval>) {
    let slot = match name {
        "median" => &mut out.median,
        "p90" => &mut out.p90,
        "p95" => &mut out.p95,
        _ => &mut out.p99,
    };
    *slot = interval;
    if interval.is_none() {
        out.too_few.push(name.to_owned());
    }
}

/// Moves every interval by the distance from the figure it was computed around to `point`'s,
/// and widens it where it must to hold the point: the intervals of a subsample (the reservoir
/// of a binned distribution) put around the whole sample's figures.
pub fn centre(out: &mut Intervals, around: &super::Distribution, point: &super::Distribution) {
    let pairs = [
        (&mut out.median, around.median, point.median),
        (&mut out.p90, around.p90, point.p90),
        (&mut out.p95, around.p95, point.p95),
        (&mut out.p99, around.p99, point.p99),
        (&mut out.mean, around.mean, point.mean),
    ];
    for (slot, from, to) in pairs {
        if let Some(i) = slot {
            let shift = to - from;
            *i = Interval {
                low: i.low + shift,
                high: i.high + shift,
            }
            .holding(to);
        }
    }
}

/// Widens every interval, where it must, to hold `point`'s figure.
pub fn hold(out: &mut Intervals, point: &super::Distribution) {
    centre(out, point, point);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labelled(values: &[(f64, u32)]) -> Vec<(f64, u32, u32)> {
        values
            .iter()
            .enumerate()
            .map(|(i, &(v, outer))| (v, outer, crate::num::count(i)))
            .collect()
    }

    #[test]
    fn three_rounds_fall_back_to_independent_responses_and_say_so() {
        let pairs = labelled(
            &(0..24)
                .map(|i| (f64::from(i), i / 8 + 1))
                .collect::<Vec<_>>(),
        );
        let out = intervals(pairs, Unit::Round, 0.95).expect("intervals");
        assert_eq!(
            (out.basis.method, out.basis.unit, out.basis.units),
            (Method::OrderStatistic, Unit::Response, 24)
        );
        assert_eq!(
            out.median,
            Some(Interval {
                low: 6.0,
                high: 17.0
            })
        );
        assert_eq!(out.too_few, vec!["p90", "p95", "p99"]);
        assert!(
            out.note
                .as_deref()
                .unwrap_or("")
                .contains("3 rounds are too few"),
            "{out:?}"
        );
    }

    #[test]
    fn ten_rounds_are_resampled_by_round() {
        let pairs = labelled(
            &(0..80)
                .map(|i| (f64::from(i % 8) + f64::from(i / 8) * 0.1, i / 8 + 1))
                .collect::<Vec<_>>(),
        );
        let out = intervals(pairs, Unit::Round, 0.95).expect("intervals");
        assert_eq!(
            (out.basis.method, out.basis.unit, out.basis.units),
            (Method::Bootstrap, Unit::Round, 10)
        );
        assert!(out.median.is_some() && out.mean.is_some());
        assert_eq!(out.too_few, vec!["p95", "p99"]);
        assert_eq!(out.note, None);
    }

    #[test]
    fn a_loops_seconds_join_into_at_most_twenty_blocks() {
        // 300 seconds, one sample each: 20 blocks of 15 s.
        let pairs = labelled(&(0..300).map(|i| (f64::from(i), i)).collect::<Vec<_>>());
        let out = intervals(pairs, Unit::Block, 0.95).expect("intervals");
        assert_eq!((out.basis.unit, out.basis.units), (Unit::Block, 20));
    }

    #[test]
    fn gaps_within_few_units_are_resampled_by_response() {
        // Two rounds of 5 responses, 10 gaps each: 10 responses.
        let pairs: Vec<(f64, u32, u32)> = (0..100)
            .map(|i| (f64::from(i % 13), i / 50 + 1, i / 10))
            .collect();
        let out = intervals(pairs, Unit::Round, 0.95).expect("intervals");
        assert_eq!(
            (out.basis.method, out.basis.unit, out.basis.units),
            (Method::Bootstrap, Unit::Response, 10)
        );
        assert!(out
            .note
            .as_deref()
            .unwrap_or("")
            .contains("resampled by response"));
    }
}
