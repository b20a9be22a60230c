use super::*;

fn reading(t_s: f64, gpu: u32, power_w: Option<f64>) -> Reading {
    serde_json::from_value(serde_json::json!({
        "t_s": t_s, "gpu": gpu, "temperature_c": 60.0, "power_w": power_w
    }))
    .expect("a reading")
}

/// Readings of `gpu` every `step` s from 0 to `until` inclusive, at `power(t)`.
fn every(gpu: u32, step: f64, until: f64, power: impl Fn(f64) -> f64) -> Vec<Reading> {
    let mut out = Vec::new();
    let mut i = 0u32;
    loop {
        let t = f64::from(i) * step;
        if t > until + 1e-12 {
            return out;
        }
        out.push(reading(t, gpu, Some(power(t))));
        i += 1;
    }
}

fn window(spans: &[(f64, f64)], output_tokens: u64) -> Window {
    Window {
        spans: spans.to_vec(),
        output_tokens,
        tokens_verified: true,
        responses: 4,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn constant_power_over_a_window_gives_power_times_length() {
    let readings = every(0, 0.5, 10.0, |_| 250.0);
    let e = of(&window(&[(1.2, 7.7)], 1300), &readings, 1.0).expect("power readings");
    assert_eq!(e.unavailable, None);
    let total = e.total_j.expect("a figure");
    assert!(close(total, 250.0 * 6.5), "{total}");
    assert!(close(e.window_s, 6.5));
    assert!(close(e.mean_power_w.expect("mean"), 250.0));
    assert!(close(
        e.output_tokens_per_joule.expect("per J"),
        1300.0 / total
    ));
    // 1.0 … 8.0: the reading before 1.2, those inside, the one after 7.7.
    assert_eq!(e.gpus[0].readings, 15);
    assert!(e.method.expect("method").contains("over 15 readings"));
}

#[test]
fn a_linear_ramp_gives_the_exact_integral_with_the_edges_interpolated() {
    // P(t) = 100 + 10 t at whole seconds; over [0.5, 3.5]: 300 + 5 × (3.5² − 0.5²) = 360 J.
    let readings = every(0, 1.0, 5.0, |t| 100.0 + 10.0 * t);
    let e = of(&window(&[(0.5, 3.5)], 36), &readings, 1.0).expect("power readings");
    assert!(close(e.total_j.expect("a figure"), 360.0), "{e:?}");
    assert!(close(e.output_tokens_per_joule.expect("per J"), 0.1));
    // Four responses in the window: 90 J each.
    assert_eq!(e.responses, 4);
    assert!(close(e.joules_per_request.expect("per request"), 90.0));
    assert_eq!(e.gpus[0].readings, 5, "0, 1, 2, 3 and 4 s");
}

#[test]
fn an_edge_between_two_readings_takes_the_interpolated_power() {
    // A step from 100 W to 300 W between 0 and 1 s: over [0.5, 1] the power runs 200 → 300 W.
    let readings = vec![reading(0.0, 0, Some(100.0)), reading(1.0, 0, Some(300.0))];
    let (joules, used) =
        integrate(&[(0.0, 100.0), (1.0, 300.0)], &[(0.5, 1.0)], 1.0).expect("covered");
    assert!(close(joules, 125.0), "{joules}");
    assert_eq!(used, 2);
    let e = of(&window(&[(0.5, 1.0)], 10), &readings, 1.0).expect("power");
    assert!(close(e.total_j.expect("a figure"), 125.0));
}

#[test]
fn two_gpus_are_summed_and_listed_apart() {
    let mut readings = every(0, 0.1, 5.0, |_| 200.0);
    readings.extend(every(1, 0.1, 5.0, |_| 100.0));
    let e = of(&window(&[(1.0, 3.0)], 600), &readings, 1.0).expect("power");
    let gpus: Vec<(u32, f64)> = e.gpus.iter().map(|g| (g.gpu, g.joules)).collect();
    assert_eq!(gpus.len(), 2);
    assert!(
        close(gpus[0].1, 400.0) && close(gpus[1].1, 200.0),
        "{gpus:?}"
    );
    assert!(close(e.total_j.expect("total"), 600.0));
    assert!(close(e.output_tokens_per_joule.expect("per J"), 1.0));
    assert!(close(e.mean_power_w.expect("mean"), 300.0));
}

#[test]
fn closed_rounds_integrate_their_spans_only_and_count_a_shared_reading_once() {
    // 100 W then 1000 W between the rounds: the gap between them is not integrated.
    let readings = every(0, 1.0, 10.0, |t| {
        if t > 2.5 && t < 4.5 {
            1000.0
        } else {
            100.0
        }
    });
    let e = of(&window(&[(0.0, 2.0), (5.0, 7.0)], 80), &readings, 1.0).expect("power");
    assert!(close(e.total_j.expect("a figure"), 400.0), "{e:?}");
    assert!(close(e.window_s, 4.0));
    assert_eq!(e.gpus[0].readings, 6, "0, 1, 2 and 5, 6, 7 s");
    let (_, used) = integrate(
        &[(0.0, 1.0), (1.0, 1.0), (2.0, 1.0), (3.0, 1.0)],
        &[(0.5, 1.5), (1.5, 2.5)],
        1.0,
    )
    .expect("covered");
    assert_eq!(
        used, 4,
        "the readings at 1 and 2 s serve both spans: counted once"
    );
}

#[test]
fn a_gap_longer_than_the_rule_allows_gives_no_figure_and_says_where() {
    // Readings every second but none between 3 and 7 s: 4 s > max(2 × 1 s, 10 % of 8 s).
    let readings: Vec<Reading> = every(0, 1.0, 10.0, |_| 200.0)
        .into_iter()
        .filter(|r| r.t_s <= 3.0 || r.t_s >= 7.0)
        .collect();
    let e = of(&window(&[(1.0, 9.0)], 100), &readings, 1.0).expect("power");
    assert_eq!(e.total_j, None);
    assert_eq!(e.output_tokens_per_joule, None);
    assert!(e.gpus.is_empty());
    let why = e.unavailable.expect("a reason");
    assert!(
        why.contains("GPU 0") && why.contains("4.000 s") && why.contains("3.000 s"),
        "{why}"
    );
    // The same gap within 10 % of a 50 s window is allowed.
    let long: Vec<Reading> = every(0, 1.0, 60.0, |_| 200.0)
        .into_iter()
        .filter(|r| r.t_s <= 3.0 || r.t_s >= 7.0)
        .collect();
    let e = of(&window(&[(1.0, 51.0)], 100), &long, 1.0).expect("power");
    assert!(close(e.total_j.expect("a figure"), 200.0 * 50.0));
}

#[test]
fn a_window_not_covered_on_either_side_gives_no_figure() {
    let readings = every(0, 0.5, 5.0, |_| 200.0);
    let late = of(&window(&[(2.0, 6.0)], 10), &readings, 1.0).expect("power");
    let why = late.unavailable.expect("a reason");
    assert!(why.contains("after the window's end"), "{why}");
    let starting_late: Vec<Reading> = readings.into_iter().filter(|r| r.t_s >= 1.0).collect();
    let early = of(&window(&[(0.5, 3.0)], 10), &starting_late, 1.0).expect("power");
    let why = early.unavailable.expect("a reason");
    assert!(why.contains("at or before the window's start"), "{why}");
}

#[test]
fn one_sparse_gpu_of_two_leaves_no_total() {
    let mut readings = every(0, 0.1, 5.0, |_| 200.0);
    readings.extend(every(1, 4.0, 5.0, |_| 100.0));
    let e = of(&window(&[(1.0, 3.0)], 600), &readings, 1.0).expect("power");
    assert_eq!(e.total_j, None);
    assert!(e.unavailable.expect("a reason").starts_with("GPU 1:"));
}

#[test]
fn no_power_readings_give_no_energy_at_all_and_no_length_gives_a_reason() {
    let cold: Vec<Reading> = (0..10).map(|i| reading(f64::from(i), 0, None)).collect();
    assert_eq!(of(&window(&[(1.0, 3.0)], 10), &cold, 1.0), None);
    let readings = every(0, 1.0, 5.0, |_| 200.0);
    let e = of(&window(&[(2.0, 2.0)], 0), &readings, 1.0).expect("power");
    assert!(e.unavailable.is_some_and(|w| w.contains("no length")));
    let e = of(&window(&[], 0), &readings, 1.0).expect("power");
    assert!(e.unavailable.is_some());
}

#[test]
fn a_gpu_first_seen_after_the_window_is_not_part_of_it() {
    let mut readings = every(0, 0.5, 10.0, |_| 200.0);
    readings.extend(
        every(1, 0.5, 10.0, |_| 100.0)
            .into_iter()
            .filter(|r| r.t_s > 6.0),
    );
    let e = of(&window(&[(1.0, 3.0)], 10), &readings, 1.0).expect("power");
    assert_eq!(e.gpus.len(), 1);
    assert!(close(e.total_j.expect("a figure"), 400.0));
}
