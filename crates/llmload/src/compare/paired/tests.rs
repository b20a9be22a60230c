use super::*;
use crate::record::Arm::{A, B};

#[test]
fn the_order_goes_in_balanced_twos_drawn_from_the_seed() {
    for seed in 0..200 {
        let order = block_order(9, seed);
        assert_eq!(order.len(), 9);
        for two in order.chunks(2) {
            assert_ne!(two[0][0], two[0][1], "a pair holds both arms");
            if let [[first_a, first_b], [second_a, second_b]] = two {
                assert_eq!(first_a, second_b, "ABBA or BAAB: {two:?}");
                assert_eq!(first_b, second_a, "ABBA or BAAB: {two:?}");
            }
        }
        let a_first = order.iter().filter(|p| p[0] == A).count();
        assert!(a_first == 4 || a_first == 5, "seed {seed}: {a_first} of 9");
        // No arm runs three blocks in a row.
        let flat: Vec<_> = order.iter().flatten().collect();
        assert!(flat.windows(3).all(|w| !(w[0] == w[1] && w[1] == w[2])));
    }
}

#[test]
fn the_order_is_the_seeds_own_and_written_in_twos() {
    assert_eq!(block_order(6, 7), block_order(6, 7));
    let distinct: std::collections::BTreeSet<String> =
        (0..64).map(|s| order_text(&block_order(4, s))).collect();
    // Two independent draws of ABBA/BAAB: all four orders occur over 64 seeds.
    assert_eq!(distinct.len(), 4, "{distinct:?}");
    assert_eq!(order_text(&[[A, B], [B, A], [B, A]]), "ABBA BA");
    assert!(block_order(0, 1).is_empty());
}

#[test]
fn a_relative_change_is_the_geometric_mean_ratio_with_a_t_interval_over_pairs() {
    // ln(B/A) = ln 1.1, ln 1.2, ln 1.3: mean, sd and t(2) at 95 % known.
    let pairs = [(100.0, 110.0), (200.0, 240.0), (50.0, 65.0)];
    let c = paired_change(true, &pairs, 0.95).expect("a change");
    let logs = [1.1_f64.ln(), 1.2_f64.ln(), 1.3_f64.ln()];
    let mean = logs.iter().sum::<f64>() / 3.0;
    let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let half = 4.302_652_729_911_275 * sd / 3.0_f64.sqrt();
    assert!((c.change - (mean.exp() - 1.0) * 100.0).abs() < 1e-9);
    let i = c.interval.expect("an interval");
    assert!(
        (i.low - ((mean - half).exp() - 1.0) * 100.0).abs() < 1e-6,
        "{i:?}"
    );
    assert!(
        (i.high - ((mean + half).exp() - 1.0) * 100.0).abs() < 1e-6,
        "{i:?}"
    );
    assert_eq!((c.pairs, c.method), (3, Some(PairedMethod::StudentT)));
}

#[test]
fn an_absolute_change_is_the_mean_difference_and_may_be_negative() {
    let pairs = [(10.0, 8.0), (10.0, 7.0), (10.0, 9.0), (10.0, 8.0)];
    let c = paired_change(false, &pairs, 0.95).expect("a change");
    assert_eq!(c.change, -2.0);
    let i = c.interval.expect("an interval");
    assert!(i.high < 0.0 && i.low < -2.0, "{i:?}");
}

#[test]
fn few_pairs_have_no_interval_and_many_a_bootstrap() {
    let two = paired_change(true, &[(1.0, 2.0), (1.0, 2.5)], 0.95).expect("a change");
    assert_eq!((two.interval, two.method), (None, None));
    let many: Vec<(f64, f64)> = (0..BOOTSTRAP_FROM)
        .map(|k| {
            (
                100.0,
                100.0 + f64::from(u32::try_from(k % 5).expect("small")),
            )
        })
        .collect();
    let c = paired_change(true, &many, 0.95).expect("a change");
    assert_eq!(c.method, Some(PairedMethod::Bootstrap));
    let i = c.interval.expect("an interval");
    assert!(
        i.low > 0.0 && i.low < c.change && c.change < i.high,
        "{c:?}"
    );
    // A figure of 0 has no logarithm: its pair is left out of a relative change.
    let c = paired_change(true, &[(0.0, 1.0), (1.0, 1.0)], 0.95).expect("a change");
    assert_eq!(c.pairs, 1);
}

fn rule(text: &str) -> Rule {
    text.parse().expect("a rule")
}

#[test]
fn a_shift_every_pair_shares_regresses_and_drift_shared_by_both_does_not() {
    // The machine drifts from 100 ms to 400 ms over the attempt, on both arms alike.
    let drift = |k: u32| 100.0 + 300.0 * f64::from(k) / 9.0;
    let same: Vec<_> = (0..10)
        .map(|k| (drift(k), drift(k) * (1.0 + 0.01 * f64::from(k % 3))))
        .collect();
    let slower: Vec<_> = (0..10).map(|k| (drift(k), drift(k) + 150.0)).collect();
    let r = rule("ttft_p50 > +10%");
    let c = paired_change(true, &same, 0.95);
    assert_eq!(judge(&r, c.as_ref(), &[]), PairedVerdict::NoChange);
    let c = paired_change(true, &slower, 0.95);
    assert_eq!(judge(&r, c.as_ref(), &[]), PairedVerdict::Regressed);
    let r = rule("ttft_p50 > +100ms");
    let c = paired_change(false, &slower, 0.95);
    assert_eq!(judge(&r, c.as_ref(), &[]), PairedVerdict::Regressed);
}

#[test]
fn cannot_tell_says_how_many_pairs_would_decide() {
    let r = rule("ttft_p50 > +10%");
    let noisy = [
        (100.0, 150.0),
        (100.0, 90.0),
        (100.0, 125.0),
        (100.0, 100.0),
    ];
    let c = paired_change(true, &noisy, 0.95);
    match judge(&r, c.as_ref(), &[]) {
        PairedVerdict::Inconclusive {
            pairs_to_decide: Some(n),
            why,
        } => {
            assert!(n > 4, "{n}");
            assert!(why.contains(&format!("{n} pairs")), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let c = paired_change(true, &[(100.0, 120.0)], 0.95);
    match judge(&r, c.as_ref(), &[]) {
        PairedVerdict::Inconclusive {
            pairs_to_decide: None,
            why,
        } => assert!(why.contains("at least 3"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        judge(&r, None, &["pair 1: a block is incomplete".into()]),
        PairedVerdict::NotCompared { .. }
    ));
}

#[test]
fn the_verdicts_fail_the_gate_as_compares_do() {
    let inconclusive = PairedVerdict::Inconclusive {
        pairs_to_decide: None,
        why: String::new(),
    };
    assert!(PairedVerdict::Regressed.fails(false));
    assert!(!PairedVerdict::Improved.fails(true));
    assert!(!inconclusive.fails(false) && inconclusive.fails(true));
    assert_eq!(PairedVerdict::NoChange.name(), "no-change");
}

#[test]
fn the_schedule_of_a_seed_is_fixed() {
    // The order is part of what an attempt records: the same seed gives it again, release
    // after release.
    assert_eq!(order_text(&block_order(7, 42)), "BAAB ABBA BAAB BA");
    assert_eq!(block_order(3, 42), [[B, A], [A, B], [A, B]]);
}
