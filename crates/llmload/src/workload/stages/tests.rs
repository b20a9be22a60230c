use super::*;

fn s(secs: u64, kind: LevelKind, level: f64, ramp: bool) -> Stage {
    Stage {
        duration: Duration::from_secs(secs),
        kind,
        level,
        ramp,
    }
}

#[test]
fn the_flag_reads_holds_and_ramps_and_refuses_the_rest() {
    let stages = parse("10s:rate=2, 30s:ramp:rate=8,1m:rate=8").expect("stages");
    assert_eq!(
        stages,
        vec![
            s(10, LevelKind::Rate, 2.0, false),
            s(30, LevelKind::Rate, 8.0, true),
            s(60, LevelKind::Rate, 8.0, false),
        ]
    );
    let closed = parse("5s:concurrency=1,5s:concurrency=4:ramp").expect("stages");
    assert_eq!(closed[1], s(5, LevelKind::Concurrency, 4.0, true));
    for bad in [
        "10s",
        "rate=2",
        "10s:rate=x",
        "10s:rate=2:rate=3",
        "10s:speed=2",
        "10s:concurrency=1.5",
        "10s:ramp:ramp:rate=2",
    ] {
        assert!(parse(bad).is_err(), "{bad} was accepted");
    }
}

#[test]
fn validation_refuses_mixed_kinds_zero_lengths_and_zero_holds() {
    let ok = parse("10s:rate=2,10s:ramp:rate=0").expect("stages");
    assert!(validate(&ok).is_ok());
    for bad in [
        "10s:rate=2,10s:concurrency=4",
        "0s:rate=2",
        "10s:rate=0",
        "10s:ramp:rate=0",
    ] {
        let stages = parse(bad).expect("parses");
        assert!(validate(&stages).is_err(), "{bad} was accepted");
    }
    assert!(validate(&[]).is_err());
}

#[test]
fn ramps_start_from_the_previous_level_and_labels_say_so() {
    let stages = parse("10s:ramp:rate=2,30s:ramp:rate=8,30s:rate=8,5s:ramp:rate=8").expect("s");
    assert_eq!(
        levels(&stages),
        vec![(0.0, 2.0), (2.0, 8.0), (8.0, 8.0), (8.0, 8.0)]
    );
    let labels = labels(&stages);
    assert_eq!(labels[1].number, 2);
    assert_eq!(labels[1].of, 4);
    assert!(labels[1].ramp);
    assert!((labels[1].start_s - 10.0).abs() < 1e-12);
    assert!((labels[2].start_s - 40.0).abs() < 1e-12);
    assert!(!labels[2].ramp);
    assert!(
        !labels[3].ramp,
        "a ramp to the level it starts at is a hold"
    );
}

#[test]
fn the_inverse_of_the_cumulative_rate_is_exact() {
    // Λ(t) = a t + (b − a) t² / 2T; Λ⁻¹(Λ(t)) = t, rising, falling and from 0.
    for (a, b) in [(2.0, 8.0), (8.0, 2.0), (0.0, 5.0), (3.0, 3.0), (4.0, 0.0)] {
        let span = 30.0;
        for i in 0..=30 {
            let t = f64::from(i);
            let u = a * t + (b - a) * t * t / (2.0 * span);
            let back = inverse(a, b, span, u);
            assert!((back - t).abs() < 1e-9, "{a}→{b}: Λ⁻¹(Λ({t})) = {back}");
        }
    }
}

#[test]
fn constant_arrivals_per_stage_are_the_integral_of_the_rate() {
    // Λ per stage: 2·10 = 20, (2 + 8)/2·10 = 50, 8·10 = 80.
    let stages = parse("10s:rate=2,10s:ramp:rate=8,10s:rate=8").expect("stages");
    let offsets = offsets(&stages, Process::Constant, 7);
    let per_stage: Vec<usize> = (0..3)
        .map(|i| offsets.iter().filter(|o| o.1 == i).count())
        .collect();
    assert_eq!(per_stage, vec![20, 50, 80]);
    assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "not ascending");
    // Each arrival lies inside its stage's span.
    for &(t, stage) in &offsets {
        let t = t.as_secs_f64();
        let start = 10.0 * stage as f64;
        assert!(
            t >= start - 1e-9 && t < start + 10.0,
            "{t} outside stage {stage}"
        );
    }
    // The hold stages are exactly evenly spaced at their rate.
    assert_eq!(offsets[19].0, Duration::from_secs_f64(19.0 / 2.0));
    assert!(
        (offsets[70].0.as_secs_f64() - 20.0).abs() < 1e-9,
        "{:?}",
        offsets[70]
    );
    // The ramp's gaps shrink as its rate rises.
    let ramp: Vec<f64> = offsets
        .iter()
        .filter(|o| o.1 == 1)
        .map(|o| o.0.as_secs_f64())
        .collect();
    let gaps: Vec<f64> = ramp.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.windows(2).all(|g| g[1] < g[0] + 1e-12), "{gaps:?}");
}

#[test]
fn poisson_stages_are_reproducible_and_near_their_integral() {
    let stages = parse("20s:rate=10,20s:ramp:rate=50").expect("stages");
    let a = offsets(&stages, Process::Poisson, 3);
    assert_eq!(a, offsets(&stages, Process::Poisson, 3));
    assert_ne!(a, offsets(&stages, Process::Poisson, 4));
    let second = a.iter().filter(|o| o.1 == 1).count() as f64;
    // Expected 600, standard deviation about 24.5.
    assert!((second - 600.0).abs() < 120.0, "{second}");
}

#[test]
fn a_concurrency_ramp_holds_each_level_for_an_equal_share() {
    let stages = parse("4s:concurrency=2,6s:ramp:concurrency=4,3s:ramp:concurrency=1").expect("s");
    let steps = concurrency_steps(&stages);
    let at = |ms: u64| Duration::from_millis(ms);
    assert_eq!(
        steps,
        vec![
            (at(0), 2),
            (at(6000), 3),
            (at(8000), 4),
            (at(10_750), 3),
            (at(11_500), 2),
            (at(12_250), 1),
        ]
    );
    assert_eq!(concurrency_at(&steps, at(5999)), 2);
    assert_eq!(concurrency_at(&steps, at(6000)), 3);
    assert_eq!(concurrency_at(&steps, at(20_000)), 1);
    let from_zero = parse("3s:ramp:concurrency=2").expect("s");
    assert_eq!(
        concurrency_steps(&from_zero),
        vec![(at(0), 0), (at(1000), 1), (at(2000), 2)]
    );
}
