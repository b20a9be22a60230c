use super::*;

/// Runs the search against verdicts given by `verdict`, to its end: the loads probed and the
/// last step.
fn drive(search: &Search, verdict: impl Fn(f64) -> SloVerdict) -> (Vec<f64>, Step) {
    let mut probes = Vec::new();
    for _ in 0..64 {
        match search.next(&probes) {
            Step::Probe(load) => probes.push((load, verdict(load))),
            done @ Step::Done { .. } => return (probes.iter().map(|p| p.0).collect(), done),
        }
    }
    panic!("the search did not end: {probes:?}");
}

fn concurrency() -> Search {
    Search {
        integer: true,
        resolution: 1.0,
        max_load: 256.0,
        start: 1.0,
    }
}

fn by_boundary(boundary: f64) -> impl Fn(f64) -> SloVerdict {
    move |load| {
        if load <= boundary {
            SloVerdict::Meets
        } else {
            SloVerdict::Fails
        }
    }
}

#[test]
fn doubling_then_log_bisection_finds_neighbours() {
    let (loads, done) = drive(&concurrency(), by_boundary(8.0));
    assert_eq!(loads, [1.0, 2.0, 4.0, 8.0, 16.0, 11.0, 9.0]);
    assert!(matches!(done, Step::Done { decided: true, .. }), "{done:?}");
    let probes: Vec<_> = loads.iter().map(|&l| (l, by_boundary(8.0)(l))).collect();
    assert_eq!(bracket(&probes), (Some(8.0), Some(9.0)));
}

#[test]
fn every_boundary_is_bracketed_by_neighbours() {
    for boundary in 1..=100 {
        let boundary = f64::from(boundary);
        let (loads, done) = drive(&concurrency(), by_boundary(boundary));
        let probes: Vec<_> = loads
            .iter()
            .map(|&l| (l, by_boundary(boundary)(l)))
            .collect();
        assert_eq!(
            bracket(&probes),
            (Some(boundary), Some(boundary + 1.0)),
            "{loads:?}"
        );
        assert!(matches!(done, Step::Done { decided: true, .. }));
        // Doubling to the first failure, then about log2 of the bracket.
        assert!(loads.len() <= 16, "{boundary}: {loads:?}");
    }
}

#[test]
fn rates_narrow_to_five_percent() {
    let search = Search {
        integer: false,
        resolution: 0.05,
        max_load: 1000.0,
        start: 1.0,
    };
    let (loads, done) = drive(&search, by_boundary(3.3));
    assert!(matches!(done, Step::Done { decided: true, .. }), "{done:?}");
    let probes: Vec<_> = loads.iter().map(|&l| (l, by_boundary(3.3)(l))).collect();
    let (Some(low), Some(high)) = bracket(&probes) else {
        panic!("{loads:?}")
    };
    assert!(
        low <= 3.3 && 3.3 < high && high / low <= 1.05,
        "{low} {high}"
    );
}

#[test]
fn a_first_load_that_fails_is_an_answer_and_no_failure_stops_at_the_cap() {
    let (loads, done) = drive(&concurrency(), by_boundary(0.0));
    assert_eq!(loads, [1.0]);
    assert!(matches!(done, Step::Done { decided: true, .. }));
    let capped = Search {
        max_load: 20.0,
        ..concurrency()
    };
    let (loads, done) = drive(&capped, by_boundary(100.0));
    assert_eq!(loads, [1.0, 2.0, 4.0, 8.0, 16.0, 20.0]);
    assert!(matches!(done, Step::Done { decided: true, ref why } if why.contains("--max-load 20")));
}

#[test]
fn undecided_loads_are_stepped_around_and_leave_the_answer_undecided() {
    // 9 and 10 cannot be decided: the bracket stays 8..11, and the search says so.
    let verdict = |load: f64| match load {
        l if l <= 8.0 => SloVerdict::Meets,
        l if l <= 10.0 => SloVerdict::Undecided,
        _ => SloVerdict::Fails,
    };
    let (loads, done) = drive(&concurrency(), verdict);
    assert_eq!(loads, [1.0, 2.0, 4.0, 8.0, 16.0, 11.0, 9.0, 10.0]);
    assert!(
        matches!(done, Step::Done { decided: false, .. }),
        "{done:?}"
    );
}

#[test]
fn below_a_first_failure_it_halves_past_undecided_loads() {
    let search = Search {
        start: 32.0,
        ..concurrency()
    };
    let verdict = |load: f64| match load {
        l if l <= 8.0 => SloVerdict::Meets,
        l if l <= 32.0 => SloVerdict::Undecided,
        _ => SloVerdict::Fails,
    };
    let (loads, done) = drive(&search, verdict);
    assert_eq!(loads, [32.0, 64.0, 16.0, 8.0]);
    // Two undecided loads inside the bracket: it is the answer, undecided.
    assert!(
        matches!(done, Step::Done { decided: false, ref why } if why.contains("16 and 32")),
        "{done:?}"
    );
}

#[test]
fn a_rate_measured_undecided_is_stepped_around_by_the_middles_of_its_halves() {
    let search = Search {
        integer: false,
        resolution: 0.05,
        max_load: 1000.0,
        start: 16.0,
    };
    let verdict = |load: f64| match load {
        l if l <= 40.0 => SloVerdict::Meets,
        l if l <= 70.0 => SloVerdict::Undecided,
        _ => SloVerdict::Fails,
    };
    let (loads, done) = drive(&search, verdict);
    // 16, 32, 64 (undecided), 128; the middle of 32–128 is 64 again: the middles of its halves.
    assert_eq!(loads[..4], [16.0, 32.0, 64.0, 128.0]);
    // √(32 × 64) = 45.2548…, to four significant digits.
    assert!((loads[4] - 45.25).abs() < 1e-9, "{loads:?}");
    assert!(matches!(done, Step::Done { .. }), "{done:?}");
}

#[test]
fn a_rate_between_two_is_written_to_four_significant_digits_where_that_stays_between() {
    assert!((super::tidy(56.568_542_494_923_804, 40.0, 80.0) - 56.57).abs() < 1e-9);
    assert!((super::tidy(0.123_456, 0.1, 0.2) - 0.1235).abs() < 1e-12);
    // Rounded onto an end of the bracket: kept as it is.
    assert!((super::tidy(100.04, 100.0, 100.05) - 100.04).abs() < 1e-12);
    let exact = 100.000_4;
    assert!((super::tidy(exact, 100.0, 100.001) - exact).abs() < 1e-12);
}
