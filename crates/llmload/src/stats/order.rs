//! Order statistics by selection, and a sum that does not depend on the order.
//!
//! A distribution reads at most ten ranks of its samples (the extremes and the two neighbours of
//! each percentile). Sorting every sample to read them costs O(n log n); selecting just those
//! ranks (`select_nth_unstable`, splitting the slice at each and recursing into the halves that
//! hold the others) costs O(n log m) for m ranks, and gives the same values: the value at a
//! rank is the same whichever way the samples got there.
//!
//! A sort also made the mean independent of the samples' order (they were added in sorted
//! order). Selection leaves them in an order that depends on how they came, so the sums are
//! correctly rounded instead ([`exact_sum`]): the same samples give the same mean, to the last
//! bit, in any order.

/// Puts each of `ranks` (0-based, ascending, below `values.len()`) in place as a sort by
/// [`f64::total_cmp`] would: afterwards `values[r]` is the `r`-th smallest for each `r` in
/// `ranks`. The other values are left in some order.
pub fn select(values: &mut [f64], ranks: &[usize]) {
    select_by(values, ranks, |x| *x);
}

/// [`select`] on items ordered by the value `key` gives each.
pub fn select_by<T>(values: &mut [T], ranks: &[usize], key: impl Fn(&T) -> f64 + Copy) {
    // Sorted already (a distribution whose intervals sort its samples once): every rank is in
    // place, and one pass says so.
    if values.is_sorted_by(|a, b| key(a).total_cmp(&key(b)).is_le()) {
        return;
    }
    select_from(values, ranks, 0, key);
}

/// [`select_by`] on `values`, the part of a larger slice that starts at `offset`; `ranks` are
/// the larger slice's.
fn select_from<T>(
    values: &mut [T],
    ranks: &[usize],
    offset: usize,
    key: impl Fn(&T) -> f64 + Copy,
) {
    let Some(&at) = ranks.get(ranks.len() / 2) else {
        return;
    };
    let Some(local) = at.checked_sub(offset).filter(|&l| l < values.len()) else {
        return;
    };
    values.select_nth_unstable_by(local, |a, b| key(a).total_cmp(&key(b)));
    let below = ranks.partition_point(|&r| r < at);
    let through = ranks.partition_point(|&r| r <= at);
    let (left, right) = values.split_at_mut(local);
    select_from(left, &ranks[..below], offset, key);
    select_from(&mut right[1..], &ranks[through..], at + 1, key);
}

/// The sum of `values`, correctly rounded: it is the same for the same values in any order.
/// Many values are added as integers, each mantissa into the bin of its exponent (integer
/// addition does not depend on the order), and the bins then summed by Shewchuk's partials
/// ([`partials_sum`]); a few go to the partials directly. Falls back to the plain sum where a
/// value is not finite.
pub fn exact_sum(values: impl Iterator<Item = f64> + Clone) -> f64 {
    /// Below this many values, zeroing the bins costs more than the partials.
    const FEW: usize = 256;
    if values.size_hint().0 < FEW {
        return partials_sum(values);
    }
    // bins[e]: the signed mantissas of the values of biased exponent e (subnormals in bin 1,
    // whose scale they share); a value is bins[e] · 2^(e − 1075). Each mantissa is below 2^53,
    // so 2^74 of them fit.
    let mut bins = vec![0i128; 2048];
    for value in values.clone() {
        if !value.is_finite() {
            return values.sum();
        }
        let raw = value.to_bits();
        let exponent = usize::try_from((raw >> 52) & 0x7ff).unwrap_or(0);
        let fraction = raw & ((1 << 52) - 1);
        let mantissa = i128::from(if exponent == 0 {
            fraction
        } else {
            fraction | (1 << 52)
        });
        bins[exponent.max(1)] += if raw >> 63 == 1 { -mantissa } else { mantissa };
    }
    // Each bin in three exact pieces of 53 bits.
    let pieces = bins
        .iter()
        .enumerate()
        .filter(|bin| *bin.1 != 0)
        .flat_map(|(exponent, &bin)| {
            let magnitude = bin.unsigned_abs();
            (0..3).map(move |i| {
                let part = (magnitude >> (53 * i)) & ((1 << 53) - 1);
                if part == 0 {
                    // Not 0 · 2^scale: that is NaN where the scale is past the largest f64.
                    return 0.0;
                }
                let scale = i32::try_from(exponent).unwrap_or(0) - 1075 + 53 * i;
                let piece = part as u64 as f64 * power_of_two(scale);
                if bin < 0 {
                    -piece
                } else {
                    piece
                }
            })
        });
    partials_sum(pieces)
}

/// 2^`k`, exactly where an `f64` holds it (0 below the smallest subnormal, infinity above the
/// largest).
fn power_of_two(k: i32) -> f64 {
    match k {
        -1022..=1023 => f64::from_bits(u64::try_from(k + 1023).unwrap_or(0) << 52),
        -1074..=-1023 => f64::from_bits(1 << (k + 1074)),
        ..=-1075 => 0.0,
        _ => f64::INFINITY,
    }
}

/// The sum of `values`, correctly rounded (Shewchuk's partials, as Python's `math.fsum`); the
/// plain sum where a value or a partial sum is not finite.
fn partials_sum(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let mut partials: Vec<f64> = Vec::with_capacity(8);
    for value in values.clone() {
        if !value.is_finite() {
            return values.sum();
        }
        let mut x = value;
        let mut kept = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let high = x + y;
            let low = y - (high - x);
            if low != 0.0 {
                partials[kept] = low;
                kept += 1;
            }
            x = high;
        }
        if !x.is_finite() {
            return values.sum();
        }
        partials.truncate(kept);
        partials.push(x);
    }
    rounded(&partials)
}

/// The correctly rounded sum of non-overlapping `partials`, smallest first (Python's final
/// step: a half-way case is settled by the sign of the partials below it).
#[expect(
    clippy::float_cmp,
    reason = "the half-way test compares exactly, by design"
)]
fn rounded(partials: &[f64]) -> f64 {
    let Some((&last, rest)) = partials.split_last() else {
        return 0.0;
    };
    let mut high = last;
    let mut low = 0.0;
    let mut left = rest.len();
    while left > 0 {
        let x = high;
        left -= 1;
        let y = rest[left];
        high = x + y;
        low = y - (high - x);
        if low != 0.0 {
            break;
        }
    }
    if left > 0 && ((low < 0.0 && rest[left - 1] < 0.0) || (low > 0.0 && rest[left - 1] > 0.0)) {
        let y = low * 2.0;
        let x = high + y;
        if y == x - high {
            high = x;
        }
    }
    high
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_exact_sum_keeps_what_a_plain_sum_loses() {
        let values = [1e16, 1.0, -1e16, 1.0];
        assert_eq!(values.iter().sum::<f64>(), 1.0);
        assert_eq!(exact_sum(values.iter().copied()), 2.0);
        assert_eq!(exact_sum([0.1; 10].iter().copied()), 1.0);
        assert_eq!(exact_sum(std::iter::empty()), 0.0);
        assert!(exact_sum([f64::INFINITY, 1.0].iter().copied()).is_infinite());
    }

    proptest! {
        #[test]
        fn selected_ranks_are_the_sorted_ones(
            mut values in prop::collection::vec(
                prop_oneof![-1e6f64..1e6, Just(0.0), Just(-0.0), Just(1.0)], 1..300),
            picks in prop::collection::vec(0.0f64..1.0, 0..12),
        ) {
            let mut sorted = values.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            let mut ranks: Vec<usize> = picks
                .iter()
                .map(|p| crate::num::to_usize((p * values.len() as f64).floor()))
                .collect();
            ranks.sort_unstable();
            select(&mut values, &ranks);
            for &r in &ranks {
                prop_assert_eq!(values[r].to_bits(), sorted[r].to_bits(), "rank {}", r);
            }
        }

        #[test]
        fn the_binned_sum_is_the_partials_sum(
            values in prop::collection::vec(
                prop_oneof![-1e9f64..1e9, 0.0f64..1e-3, Just(1e300), Just(-1e300), Just(5e-324)],
                256..700),
        ) {
            prop_assert_eq!(
                exact_sum(values.iter().copied()).to_bits(),
                partials_sum(values.iter().copied()).to_bits()
            );
        }

        #[test]
        fn the_exact_sum_is_the_same_in_any_order(
            values in prop::collection::vec(-1e9f64..1e9, 0..600),
            rotate in 0usize..600,
        ) {
            let mut other = values.clone();
            other.reverse();
            if !other.is_empty() {
                let by = rotate % other.len();
                other.rotate_left(by);
            }
            let a = exact_sum(values.iter().copied());
            prop_assert_eq!(a.to_bits(), exact_sum(other.iter().copied()).to_bits());
            let plain: f64 = values.iter().sum();
            prop_assert!((a - plain).abs() <= 1e-6 * values.iter().map(|x| x.abs()).sum::<f64>().max(1.0));
        }
    }
}
