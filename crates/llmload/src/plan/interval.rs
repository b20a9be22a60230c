//! The interval of a quantile that `plan` gives with each measured figure: distribution-free,
//! from the order statistics of the case's responses. With n responses, the number below the
//! true q quantile is Binomial(n, q); the ranks whose binomial tails hold 2.5 % each bound a 95 %
//! interval. It assumes independent responses: in closed rounds the responses of one round share
//! their queue, so the interval is a floor on the uncertainty rather than all of it.

/// The confidence of the intervals.
pub const LEVEL: f64 = 0.95;

/// The 0-based ranks `(lower, upper)` of the order statistics of `n` samples that bound the `q`
/// quantile (0–1) with confidence [`LEVEL`]; `None` when `n` is too small for such an interval.
pub fn ranks(n: usize, q: f64) -> Option<(usize, usize)> {
    if n == 0 || !(0.0..1.0).contains(&q) || q <= 0.0 {
        return None;
    }
    let tail = (1.0 - LEVEL) / 2.0;
    // ln P(B = k), B ~ Binomial(n, q), built up term by term (no factorials to overflow).
    let (ln_q, ln_p) = (q.ln(), (1.0 - q).ln());
    let mut ln_pmf = n as f64 * ln_p;
    let mut cdf = 0.0;
    let (mut lower, mut upper) = (None, None);
    for k in 0..=n {
        cdf += ln_pmf.exp();
        // P(B ≤ k) ≤ tail: the sample of 1-based rank k + 1 lies below the quantile often
        // enough to be its lower bound.
        if cdf <= tail {
            lower = Some(k + 1);
        }
        if upper.is_none() && cdf >= 1.0 - tail {
            // P(B ≤ k) ≥ 1 − tail: the sample of 1-based rank k + 1 bounds it above.
            upper = Some(k + 1);
        }
        if k < n {
            ln_pmf += ((n - k) as f64).ln() - ((k + 1) as f64).ln() + ln_q - ln_p;
        }
    }
    match (lower, upper) {
        (Some(l), Some(u)) if u <= n => Some((l - 1, u - 1)),
        _ => None,
    }
}

/// The [`LEVEL`] interval of the `q` quantile of sorted `samples`, or `None` when there are too
/// few of them.
pub fn quantile(sorted: &[f64], q: f64) -> Option<(f64, f64)> {
    let (l, u) = ranks(sorted.len(), q)?;
    Some((sorted[l], sorted[u]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_samples_have_no_interval() {
        // Five samples cannot bound a median at 95 %: all five below it happens 1/32 of the time.
        assert_eq!(ranks(5, 0.5), None);
        assert_eq!(ranks(6, 0.5), Some((0, 5)));
        // A p99 needs about 300 samples before its upper rank exists.
        assert_eq!(ranks(100, 0.99), None);
        assert!(ranks(400, 0.99).is_some());
    }

    #[test]
    fn the_ranks_cover_the_quantile_at_the_level() {
        for (n, q) in [(20, 0.5), (100, 0.9), (1000, 0.99), (50_000, 0.5)] {
            let (l, u) = ranks(n, q).expect("enough samples");
            assert!(
                l as f64 <= q * n as f64 && q * n as f64 <= u as f64 + 1.0,
                "{n} {q}"
            );
            // Coverage = P(l + 1 ≤ B ≤ u), by summing the binomial directly.
            let pmf = |k: usize| {
                let ln = (1..=k)
                    .map(|i| ((n - k + i) as f64 / i as f64).ln())
                    .sum::<f64>()
                    + k as f64 * q.ln()
                    + (n - k) as f64 * (1.0 - q).ln();
                ln.exp()
            };
            let coverage: f64 = (l + 1..=u).map(pmf).sum();
            assert!(coverage >= LEVEL - 1e-9, "{n} {q}: {coverage}");
        }
        let sorted: Vec<f64> = (0..20).map(f64::from).collect();
        let (low, high) = quantile(&sorted, 0.5).expect("20 samples");
        assert!(low < 9.5 && high > 9.5);
    }
}
