//! Unit tests of the soak series: hand-made records, windows, drift.

use super::*;

/// A measured `ok` record sent at `sent` with `tokens` tokens, the first after `ttft_ms` and
/// the rest spread over the next 0.5 s.
fn record(sent: Seconds, ttft_ms: f64, tokens: u32) -> Record {
    let step = 500.0 / f64::from(tokens);
    crate::record::ok_record(
        sent,
        None,
        (0..tokens).map(|i| ttft_ms + f64::from(i) * step).collect(),
    )
}

fn reading(t_s: f64, temperature_c: f64, power_w: f64) -> Reading {
    serde_json::from_value(serde_json::json!(
        {"t_s": t_s, "gpu": 0, "temperature_c": temperature_c, "power_w": power_w}
    ))
    .expect("valid reading")
}

/// Six seconds: twenty requests a second of 10 tokens and 100 ms TTFT for three seconds, then
/// ten a second of 10 tokens and 300 ms TTFT (a server slowing down as it heats); every
/// request's tokens arrive within its second.
fn slowing() -> Vec<Record> {
    let mut records = Vec::new();
    for second in 0..6 {
        let (per_second, ttft) = if second < 3 { (20, 100.0) } else { (10, 300.0) };
        for k in 0..per_second {
            let sent = f64::from(second) + f64::from(k) * 0.02;
            records.push(record(sent, ttft, 10));
        }
    }
    records
}

#[test]
fn windows_cover_the_span_with_a_short_remainder_only_when_there_is_one() {
    assert_eq!(cut((0.0, 6.0), 1.0).len(), 6);
    assert_eq!(
        cut((2.0, 5.999_999_9), 1.0).len(),
        4,
        "float noise is no window"
    );
    let spans = cut((0.0, 6.5), 2.0);
    assert_eq!(spans.len(), 4);
    assert_eq!(spans[3], (6.0, 6.5));
    assert!(cut((1.0, 1.0), 1.0).is_empty());
}

#[test]
fn a_throughput_drop_shows_as_a_negative_change_and_ttft_as_a_positive_one() {
    let records = slowing();
    let all: Vec<&Record> = records.iter().collect();
    let s = series(&all, &records, (0.0, 6.0), 1.0, &[]);
    assert_eq!(s.windows.len(), 6);
    assert!(s.windows.iter().all(|w| w.full));
    let total: u32 = s.windows.iter().map(|w| w.requests).sum();
    assert_eq!(total as usize, records.len(), "every request in one window");
    assert_eq!(s.windows[0].requests, 20);
    assert_eq!(s.windows[5].requests, 10);
    let d = s.drift.expect("six full windows");
    assert_eq!((d.first_window, d.last_window), (1, 6));
    assert!(
        (d.throughput_tps.first - 200.0).abs() < 1e-9,
        "{:?}",
        d.throughput_tps
    );
    assert!(
        (d.throughput_tps.last - 100.0).abs() < 1e-9,
        "{:?}",
        d.throughput_tps
    );
    let pct = d.throughput_tps.change_pct.expect("first is not 0");
    assert!((pct + 50.0).abs() < 1e-9, "{pct}");
    assert_eq!(
        (d.throughput_tps.n_first, d.throughput_tps.n_last),
        (20, 10)
    );
    let p50 = d.ttft_p50_ms.expect("both windows have responses");
    assert_eq!((p50.first, p50.last), (100.0, 300.0));
    assert!((p50.change_pct.expect("defined") - 200.0).abs() < 1e-9);
    assert!(
        s.drift_statement.contains("−50.0 %") || s.drift_statement.contains("-50.0 %"),
        "{}",
        s.drift_statement
    );
    assert!(
        s.drift_statement.contains("+200.0 %"),
        "{}",
        s.drift_statement
    );
    assert!(
        s.drift_statement.contains("n 20 → 10"),
        "{}",
        s.drift_statement
    );
}

#[test]
fn window_throughputs_average_to_the_tokens_over_the_span() {
    let records = slowing();
    let all: Vec<&Record> = records.iter().collect();
    let s = series(&all, &records, (0.0, 6.5), 2.0, &[]);
    assert_eq!(s.windows.iter().filter(|w| w.full).count(), 3);
    let tokens: f64 = s
        .windows
        .iter()
        .map(|w| w.throughput_tps * (w.span_s[1] - w.span_s[0]))
        .sum();
    // Every token of the 90 requests arrives before 6.5 s.
    assert!((tokens - 900.0).abs() < 1e-6, "{tokens}");
}

#[test]
fn fewer_than_two_full_windows_state_no_drift() {
    let records = slowing();
    let all: Vec<&Record> = records.iter().collect();
    let s = series(&all, &records, (0.0, 6.0), 4.0, &[]);
    assert_eq!(s.windows.len(), 2);
    assert_eq!(
        (s.windows[0].full, s.windows[1].full),
        (true, false),
        "4 s then a 2 s remainder"
    );
    assert!(s.drift.is_none());
    assert!(
        s.drift_statement
            .contains("not enough windows to state drift")
            && s.drift_statement.contains("1 full window of 4s"),
        "{}",
        s.drift_statement
    );
    assert_eq!(s.windows.iter().map(|w| w.requests).sum::<u32>(), 90);
}

#[test]
fn failures_are_counted_apart_and_kept_out_of_ttft() {
    let mut records = slowing();
    records[0].status = Status::Error;
    records[1].status = Status::Cancelled;
    records[2].status = Status::Invalid;
    let all: Vec<&Record> = records.iter().collect();
    let s = series(&all, &records, (0.0, 6.0), 1.0, &[]);
    let w = &s.windows[0];
    assert_eq!((w.requests, w.ok, w.errors, w.cancelled), (20, 17, 2, 1));
    assert_eq!(w.ttft_ms.as_ref().map(|d| d.n), Some(17));
    assert!(
        (w.throughput_tps - 170.0).abs() < 1e-9,
        "{}",
        w.throughput_tps
    );
}

#[test]
fn gpu_figures_come_from_the_readings_inside_each_window() {
    let records = slowing();
    let all: Vec<&Record> = records.iter().collect();
    let readings = [
        reading(0.0, 60.0, 200.0),
        reading(0.5, 70.0, 300.0),
        reading(1.0, 80.0, 250.0),
        reading(6.0, 90.0, 260.0),
    ];
    let s = series(&all, &records, (0.0, 6.0), 3.0, &readings);
    let first = s.windows[0].gpu.as_ref().expect("readings in window 1");
    assert_eq!(first.readings, 3);
    assert!((first.temperature_c_mean - 70.0).abs() < 1e-9);
    assert_eq!(first.temperature_c_max, 80.0);
    assert_eq!(
        (first.power_w_mean, first.power_w_max),
        (Some(250.0), Some(300.0))
    );
    let last = s.windows[1]
        .gpu
        .as_ref()
        .expect("the end is inside the last window");
    assert_eq!((last.readings, last.temperature_c_max), (1, 90.0));
    let quiet = series(&all, &records, (0.0, 6.0), 3.0, &readings[..1]);
    assert!(quiet.windows[1].gpu.is_none());
}

#[test]
fn a_stopped_case_ends_its_series_where_activity_ended() {
    let slo = crate::workload::shape::Slo::default();
    let series_of = |stopped: bool| {
        let mut figures =
            crate::summary::window::WindowFigures::new(0.0, Some(10.0), slo, Some(1.0));
        for r in &slowing() {
            figures.add(r, None);
        }
        let (_, bins) = figures.finish(10.0, stopped);
        let (bins, span) = bins.expect("a series");
        bins.finish(span, &[], true)
    };
    assert_eq!(
        series_of(false).windows.len(),
        10,
        "not stopped: the planned window"
    );
    let cut = series_of(true);
    // The last request, sent at 5.18 s, ends 0.3 + 0.45 s later.
    assert_eq!(cut.windows.len(), 6);
    let end = cut.windows[5].span_s[1];
    assert!((end - 5.93).abs() < 1e-9, "{end}");
    assert!(!cut.windows[5].full);
}

#[test]
fn the_runs_bins_equal_the_series_of_the_records() {
    // Fed as the run feeds them, the window's end learnt launch by launch: the same series as
    // the one computed from every record at the end.
    let records = slowing();
    let all: Vec<&Record> = records.iter().collect();
    let whole = series(&all, &records, (0.0, 5.5), 1.0, &[]);
    let slo = crate::workload::shape::Slo::default();
    let mut figures = crate::summary::window::WindowFigures::new(0.0, None, slo, Some(1.0));
    for r in &records {
        figures.add(r, None);
        figures.settle_to(r.sent_s);
    }
    let (_, bins) = figures.finish(5.5, false);
    let (bins, span) = bins.expect("a series");
    assert_eq!(span, (0.0, 5.5));
    assert_eq!(bins.finish(span, &[], true), whole);
}

#[test]
fn windows_nothing_can_reach_keep_only_their_distribution() {
    let records = slowing();
    let fill = || {
        let mut bins = SeriesBins::new(0.0, 1.0);
        for r in &records {
            bins.add_request(r);
        }
        bins
    };
    let mut closing = fill();
    closing.close_before(3.5);
    assert_eq!(closing.closed, 3, "windows ending at 1, 2 and 3 s");
    assert!(closing.bins[..3].iter().all(|b| matches!(
        b.ttft,
        Ttft::Closed {
            streams: Some(_),
            ..
        }
    )));
    assert!(matches!(closing.bins[3].ttft, Ttft::Open { .. }));
    for streams in [true, false] {
        let mut closing = fill();
        closing.close_before(3.5);
        assert_eq!(
            closing.finish((0.0, 6.0), &[], streams),
            fill().finish((0.0, 6.0), &[], streams),
            "closing early changes no figure"
        );
    }
}

#[test]
fn a_live_soak_closes_windows_as_it_goes_and_ends_with_the_same_series() {
    // Launch at each record's send, feed each record when it ends (events up to 0.8 s later),
    // as the runner does; the series must equal the one computed from all records at the end.
    let records = slowing();
    let all: Vec<&Record> = records.iter().collect();
    let span = (0.0, 5.5);
    let whole = series(&all, &records, span, 1.0, &[]);
    let slo = crate::workload::shape::Slo::default();
    let mut figures = crate::summary::window::WindowFigures::new(0.0, None, slo, Some(1.0));
    let mut by_end = all.clone();
    by_end.sort_by(|a, b| a.last_seen().total_cmp(&b.last_seen()));
    let mut launched = 0;
    for r in by_end {
        while launched < records.len() && records[launched].sent_s <= r.last_seen() {
            figures.launch(records[launched].sent_s);
            figures.settle_to(records[launched].sent_s);
            launched += 1;
        }
        figures.add(r, Some(r.sent_s));
    }
    let (_, bins) = figures.finish(span.1, false);
    let (bins, at) = bins.expect("a series");
    assert_eq!(at, span);
    assert!(bins.closed >= 4, "closed as the run went: {}", bins.closed);
    assert_eq!(bins.finish(span, &[], true), whole);
}

#[test]
fn windows_with_too_few_responses_state_no_drift() {
    // Three requests a second: every window has fewer than the responses drift needs.
    let records: Vec<Record> = (0..18)
        .map(|i| record(f64::from(i) / 3.0, 100.0, 10))
        .collect();
    let all: Vec<&Record> = records.iter().collect();
    let s = series(&all, &records, (0.0, 6.0), 1.0, &[]);
    assert_eq!(s.windows.iter().filter(|w| w.full).count(), 6);
    assert!(s.drift.is_none());
    assert!(
        s.drift_statement.contains("at least 10 ok responses"),
        "{}",
        s.drift_statement
    );
}
