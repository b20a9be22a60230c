use super::*;

/// A deterministic stream of uniform values in [0, 1).
fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        (crate::workload::prompt::splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn the_median_of_24_lies_between_the_7th_and_18th_order_statistics() {
    // The textbook ranks for n = 24 at 95 % (coverage 97.7 %).
    assert_eq!(order_statistic_ranks(24, 0.5, 0.95), Some((7, 18)));
    assert_eq!(order_statistic_ranks(5, 0.5, 0.95), None);
    assert_eq!(order_statistic_ranks(6, 0.5, 0.95), Some((1, 6)));
    let sorted: Vec<f64> = (1..=24).map(f64::from).collect();
    assert_eq!(
        order_statistic(&sorted, 0.5, 0.95),
        Some(Interval {
            low: 7.0,
            high: 18.0
        })
    );
}

#[test]
fn a_p99_needs_368_samples_for_any_95_percent_interval() {
    assert_eq!(order_statistic_ranks(367, 0.99, 0.95), None);
    let (l, u) = order_statistic_ranks(368, 0.99, 0.95).expect("ranks");
    assert_eq!(u, 368);
    assert!(l < 368 && l > 350, "{l}");
    // A lower level needs fewer.
    assert!(order_statistic_ranks(300, 0.99, 0.9).is_some());
}

#[test]
fn order_statistic_intervals_cover_the_true_quantile_at_their_level() {
    // Uniform samples: the true q quantile is q. 2000 trials each.
    let mut next = uniform(1);
    for (q, n) in [(0.5, 40), (0.9, 60)] {
        let mut covered = 0;
        for _ in 0..2000 {
            let mut s: Vec<f64> = (0..n).map(|_| next()).collect();
            s.sort_unstable_by(f64::total_cmp);
            let i = order_statistic(&s, q, 0.95).expect("enough samples");
            covered += usize::from(i.low <= q && q <= i.high);
        }
        assert!(covered >= 1900, "{covered} of 2000 at q {q}");
        assert!(
            covered < 2000,
            "never missing would mean a trivial interval"
        );
    }
}

#[test]
fn t_interval_of_three_values() {
    let i = t_interval(&[11.0, 12.0, 13.0], 0.95).expect("interval");
    let half = 4.302_652_7 / 3f64.sqrt();
    assert!((i.low - (12.0 - half)).abs() < 1e-6 && (i.high - (12.0 + half)).abs() < 1e-6);
    assert_eq!(t_interval(&[1.0], 0.95), None);
    // Times and rates are never negative: nor is their mean's interval.
    assert_eq!(t_interval(&[1.0, 2.0, 3.0], 0.95).map(|i| i.low), Some(0.0));
}

#[test]
fn the_bootstrap_needs_its_units_and_repeats_itself() {
    let few: Vec<Vec<f64>> = (0..7).map(|i| vec![f64::from(i)]).collect();
    assert_eq!(bootstrap(&few, &[Stat::Mean], 0.95), vec![None]);
    let units: Vec<Vec<f64>> = (0..20)
        .map(|i| vec![f64::from(i), f64::from(i) + 0.5])
        .collect();
    let once = bootstrap(&units, &[Stat::Quantile(0.5), Stat::Mean], 0.95);
    assert_eq!(
        once,
        bootstrap(&units, &[Stat::Quantile(0.5), Stat::Mean], 0.95)
    );
    let mean = once[1].expect("interval");
    assert!(mean.low < 9.75 && 9.75 < mean.high, "{mean:?}");
    assert!(mean.low > 6.0 && mean.high < 13.5, "{mean:?}");
}

#[test]
fn bootstrap_by_unit_covers_a_clustered_truth_where_responses_taken_alone_would_not() {
    // 12 units, each shifted by its own offset (sd 1) with 20 samples of small noise (sd 0.1):
    // the units, not the samples, decide the uncertainty of the mean, whose truth is 0.
    let mut next = uniform(7);
    let mut normal = move || {
        let (a, b) = (next().max(1e-12), next());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    };
    let (mut by_unit, mut alone) = (0, 0);
    for _ in 0..200 {
        let units: Vec<Vec<f64>> = (0..12)
            .map(|_| {
                let offset = normal();
                (0..20).map(|_| offset + 0.1 * normal()).collect()
            })
            .collect();
        let i = bootstrap(&units, &[Stat::Mean], 0.95)[0].expect("interval");
        by_unit += usize::from(i.low <= 0.0 && 0.0 <= i.high);
        let flat: Vec<f64> = units.concat();
        let t = t_interval(&flat, 0.95).expect("interval");
        alone += usize::from(t.low <= 0.0 && 0.0 <= t.high);
    }
    // The percentile bootstrap runs a little narrow with 12 units; it still covers far more
    // often than the interval that takes every sample as independent.
    assert!(by_unit >= 160, "{by_unit} of 200");
    assert!(
        alone < 120,
        "{alone} of 200: the naive interval is far too narrow"
    );
}

#[test]
fn levels_are_read_as_percentages_or_shares() {
    assert_eq!(parse_level("95%"), Ok(0.95));
    assert_eq!(parse_level("90"), Ok(0.9));
    assert_eq!(parse_level("0.99"), Ok(0.99));
    // The documented bounds, written every way: inside.
    for edge in ["99.9%", "99.9", "0.999", "50%", "0.5"] {
        assert!(parse_level(edge).is_ok(), "{edge}");
    }
    for bad in [
        "", "abc", "100%", "99.95%", "49.9%", "40%", "NaN", "1", "0", "-95%", "1e400",
    ] {
        assert!(parse_level(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_samples_each_quantile_needs_are_those_the_manual_gives() {
    for (q, n) in [(0.5, 6), (0.9, 36), (0.95, 72), (0.99, 368)] {
        assert!(order_statistic_ranks(n - 1, q, 0.95).is_none(), "{q} {n}");
        assert!(order_statistic_ranks(n, q, 0.95).is_some(), "{q} {n}");
    }
}
