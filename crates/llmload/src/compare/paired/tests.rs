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
fn a_relative_change_is_the_median_ratio_with_the_sign_tests_interval() {
    // Ten ratios 1.01 … 1.10, out of order. The median of the logarithms is halfway between
    // ln 1.05 and ln 1.06; at 95 % the sign test's interval of 10 values is their 2nd and 9th
    // (P(Binomial(10, ½) ≤ 1) = 11/1024 ≤ 2.5 % < P(≤ 2) = 56/1024).
    let ratios = [1.04, 1.10, 1.01, 1.07, 1.05, 1.02, 1.09, 1.06, 1.03, 1.08];
    let pairs: Vec<(f64, f64)> = ratios.iter().map(|r| (100.0, 100.0 * r)).collect();
    let c = paired_change(true, &pairs, 0.95).expect("a change");
    let median = f64::midpoint(1.05_f64.ln(), 1.06_f64.ln());
    assert!((c.change - median.exp_m1() * 100.0).abs() < 1e-9, "{c:?}");
    let i = c.interval.expect("an interval");
    assert!(
        (i.low - 2.0).abs() < 1e-9 && (i.high - 9.0).abs() < 1e-9,
        "{i:?}"
    );
    assert_eq!((c.pairs, c.method), (10, Some(PairedMethod::SignTest)));
    assert_eq!((c.b_higher, c.b_lower), (Some(10), Some(0)));
}

#[test]
fn an_absolute_change_is_the_median_difference_and_may_be_negative() {
    let pairs = [
        (10.0, 8.0),
        (10.0, 7.0),
        (10.0, 9.0),
        (10.0, 8.0),
        (10.0, 10.0),
        (10.0, 6.0),
        (10.0, 8.5),
    ];
    let c = paired_change(false, &pairs, 0.95).expect("a change");
    assert_eq!(c.change, -2.0);
    // Seven values: at 95 % the interval is their least and greatest.
    let i = c.interval.expect("an interval");
    assert_eq!((i.low, i.high), (-4.0, 0.0));
    assert_eq!((c.b_higher, c.b_lower), (Some(0), Some(6)));
}

#[test]
fn an_interval_needs_as_many_pairs_as_its_level_asks() {
    assert_eq!(
        (min_pairs(0.95), min_pairs(0.99), min_pairs(0.9)),
        (6, 8, 5)
    );
    let pairs: Vec<(f64, f64)> = (1..=6).map(|k| (1.0, 1.0 + f64::from(k))).collect();
    let five = paired_change(false, &pairs[..5], 0.95).expect("a change");
    assert_eq!((five.interval, five.method), (None, None));
    assert_eq!(five.pairs, 5);
    let six = paired_change(false, &pairs, 0.95).expect("a change");
    let i = six.interval.expect("an interval");
    assert_eq!((i.low, i.high), (1.0, 6.0));
    // A figure of 0 has no logarithm: its pair is left out of a relative change.
    let c = paired_change(true, &[(0.0, 1.0), (1.0, 1.0)], 0.95).expect("a change");
    assert_eq!(c.pairs, 1);
}

/// E2E times (ms) of 24 pairs of one-request blocks measured on a real llama-server on a busy
/// 2-core machine, the candidate (B) behind a proxy holding every request 200 ms: responses of
/// 8 tokens took 1.2 to 25.7 s, and B was the faster in 15 of the 24 pairs.
const BUSY_A: [f64; 24] = [
    13930.0, 1164.0, 12783.0, 2695.0, 12949.0, 18606.0, 3987.0, 6065.0, 9126.0, 9255.0, 6105.0,
    3955.0, 6114.0, 5917.0, 11182.0, 4369.0, 1910.0, 6109.0, 7287.0, 2780.0, 2592.0, 9053.0,
    25737.0, 11684.0,
];
const BUSY_B: [f64; 24] = [
    11363.0, 5494.0, 14532.0, 3200.0, 3467.0, 2525.0, 11587.0, 5245.0, 1272.0, 6815.0, 6044.0,
    6417.0, 4780.0, 1523.0, 2431.0, 2175.0, 2997.0, 5633.0, 7732.0, 2832.0, 2934.0, 2657.0, 3666.0,
    6469.0,
];

#[test]
fn pairs_caught_in_bursts_of_other_work_leave_the_gate_undecided_not_improved() {
    let pairs: Vec<(f64, f64)> = BUSY_A.into_iter().zip(BUSY_B).collect();
    // The mean difference is about −3 s: a few A blocks met the bursts. A mean's interval
    // called this 200 ms slower candidate "improved".
    let mean = pairs.iter().map(|(a, b)| b - a).sum::<f64>() / 24.0;
    assert!(mean < -2_900.0, "{mean}");
    for (text, relative) in [("e2e_p50 > +100ms", false), ("e2e_p50 > +10%", true)] {
        let c = paired_change(relative, &pairs, 0.95);
        let said = judge(&rule(text), c.as_ref(), &[]);
        assert!(
            matches!(said, PairedVerdict::Inconclusive { .. }),
            "{text}: {said:?} on {c:?}"
        );
        let c = c.expect("a change");
        assert_eq!((c.b_higher, c.b_lower), (Some(9), Some(15)));
    }
}

#[test]
fn one_pair_in_a_burst_does_not_carry_the_change() {
    // 23 pairs 150 ms apart and one whose A block met a 20 s burst.
    let mut pairs: Vec<(f64, f64)> = (0..23)
        .map(|k| {
            let a = 300.0 + f64::from(k) * 10.0;
            (a, a + 150.0)
        })
        .collect();
    pairs.push((20_300.0, 450.0));
    let c = paired_change(false, &pairs, 0.95).expect("a change");
    assert_eq!(c.change, 150.0);
    assert_eq!(
        judge(&rule("e2e_p50 > +100ms"), Some(&c), &[]),
        PairedVerdict::Regressed
    );
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
        (100.0, 118.0),
        (100.0, 95.0),
        (100.0, 130.0),
    ];
    let c = paired_change(true, &noisy, 0.95);
    match judge(&r, c.as_ref(), &[]) {
        PairedVerdict::Inconclusive {
            pairs_to_decide: Some(n),
            why,
        } => {
            assert!(n > 7, "{n}");
            assert!(why.contains(&format!("{n} pairs")), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let c = paired_change(true, &[(100.0, 120.0)], 0.95);
    match judge(&r, c.as_ref(), &[]) {
        PairedVerdict::Inconclusive {
            pairs_to_decide: None,
            why,
        } => assert!(why.contains("at 95 % needs at least 6"), "{why}"),
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
