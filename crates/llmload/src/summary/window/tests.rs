//! Unit tests of `window.rs`.

use super::*;

fn record(sent: f64, done: f64, scheduled: Option<f64>, tokens: u32) -> Record {
    let step = (done - sent) * 1e3 / f64::from(tokens);
    let events = (1..=tokens).map(|i| f64::from(i) * step).collect();
    crate::record::ok_record(sent, scheduled, events)
}

#[test]
fn concurrency_is_time_averaged_over_the_window_with_its_peak() {
    // Two requests overlap for half the window [0, 4]; one runs the whole window.
    let rs = [
        record(0.0, 4.0, None, 4),
        record(1.0, 3.0, None, 4),
        record(5.0, 6.0, None, 4),
    ];
    let spans: Vec<_> = rs.iter().map(|r| (r.sent_s, r.last_seen())).collect();
    let (mean, peak) = concurrency(&spans, (0.0, 4.0));
    assert!((mean - 1.5).abs() < 1e-9, "{mean}");
    assert_eq!(peak, 2);
    let (mean, peak) = concurrency(&spans, (3.5, 4.0));
    assert!((mean - 1.0).abs() < 1e-9 && peak == 1, "{mean} {peak}");
}

#[test]
fn throughput_counts_only_tokens_inside_the_window_and_lag_shows() {
    // 10 tokens over [0, 10]: tokens at 1..=10 s; window [2, 6] holds those at 2..=6.
    let rs = [
        record(0.0, 10.0, Some(0.0), 10),
        record(3.0, 4.0, Some(2.5), 1),
    ];
    let refs: Vec<&Record> = rs.iter().collect();
    let slo = Slo {
        ttft: Some(std::time::Duration::from_millis(900)),
        ..Slo::default()
    };
    let w = window_figures(&refs, (2.0, 6.0), &slo);
    assert!(
        (w.throughput_tps - 6.0 / 4.0).abs() < 1e-9,
        "{}",
        w.throughput_tps
    );
    // Only the second completes inside; its TTFT from scheduled is 1.5 s: misses the SLO,
    // though from sent (1 s) it would also miss; goodput is 0.
    assert!((w.completed_rps - 0.25).abs() < 1e-9);
    assert_eq!(w.goodput_rps, Some(0.0));
    let lag = w.send_lag_ms.expect("open-loop records have lag");
    assert!((lag.max - 500.0).abs() < 1e-6, "{}", lag.max);
    let slo = Slo {
        ttft: Some(std::time::Duration::from_secs(2)),
        ..Slo::default()
    };
    let w = window_figures(&refs, (2.0, 6.0), &slo);
    assert_eq!(w.goodput_rps, Some(0.25));
}

#[test]
fn fed_as_requests_end_with_the_end_learnt_late_the_figures_are_the_same() {
    // A continuous load: a launch every 0.1 s, each request 10 tokens over 1 s. The window's
    // end (the last launch) is unknown until the end; records arrive as requests end, each
    // launch telling the figures that the window reaches at least that far.
    // Requests of 0.5 to 1.4 s, so that they end out of launch order.
    let rs: Vec<Record> = (0..50)
        .map(|i| {
            let sent = f64::from(i) * 0.1;
            let length = 0.5 + f64::from(i * 7 % 10) * 0.1;
            record(sent, sent + length, Some(sent), 10)
        })
        .collect();
    let mut by_end: Vec<&Record> = rs.iter().collect();
    by_end.sort_by(|a, b| a.done_s.partial_cmp(&b.done_s).expect("finite"));
    let window = (0.5, 4.9);
    let slo = Slo {
        e2e: Some(std::time::Duration::from_secs(1)),
        ..Slo::default()
    };
    let mut figures = WindowFigures::new(window.0, None, slo, None);
    let mut launched = 0;
    let mut most_unsettled = 0;
    for r in by_end {
        let done = r.done_s.expect("ok");
        while launched < rs.len() && rs[launched].sent_s <= done {
            figures.launch(rs[launched].sent_s);
            figures.settle_to(rs[launched].sent_s);
            launched += 1;
        }
        figures.add(r, Some(r.sent_s));
        if launched < rs.len() {
            most_unsettled = most_unsettled.max(figures.unsettled());
        }
    }
    let refs: Vec<&Record> = rs.iter().collect();
    let batch = window_figures(&refs, window, &slo);
    assert_eq!(figures.finish(window.1, false).0, batch);
    let spans: Vec<_> = rs.iter().map(|r| (r.sent_s, r.last_seen())).collect();
    let (mean, peak) = concurrency(&spans, window);
    assert_eq!(
        (
            batch.achieved_concurrency_mean,
            batch.achieved_concurrency_peak
        ),
        (mean, peak)
    );
    assert!(batch.throughput_tps > 0.0 && batch.completed_rps > 0.0 && peak >= 5);
    // While launches go on, what waits is one request's tail after the latest launch (at
    // most 10 events and its completion) and the span edges of the requests that ended
    // since the oldest one in flight was launched (at most 1.4 s of them, 2 edges each):
    // never the whole run.
    assert!(most_unsettled <= 11 + 2 * 15, "{most_unsettled}");
}

#[test]
fn a_known_end_bounds_the_figures_when_later_launches_settle_past_it() {
    // A stage of [0, 5]: two requests of 10 tokens over [0, 10]. The next stage's launches (up
    // to 12 s) settle every stage's figures as the run goes, past this one's end.
    let rs = [
        record(0.0, 10.0, Some(0.0), 10),
        record(0.0, 10.0, Some(0.0), 10),
    ];
    let mut figures = WindowFigures::new(0.0, Some(5.0), Slo::default(), None);
    for r in &rs {
        figures.launch(r.sent_s);
    }
    figures.settle_to(12.0);
    for r in &rs {
        figures.add(r, Some(r.sent_s));
    }
    figures.settle_to(12.0);
    let (load, _) = figures.finish(5.0, false);
    let refs: Vec<&Record> = rs.iter().collect();
    assert_eq!(load, window_figures(&refs, (0.0, 5.0), &Slo::default()));
    assert_eq!(load.achieved_concurrency_peak, 2);
    assert!(
        (load.achieved_concurrency_mean - 2.0).abs() < 1e-9,
        "never above the peak: {}",
        load.achieved_concurrency_mean
    );
    // Tokens at 1..=5 s of each: 10 in 5 s.
    assert!(
        (load.throughput_tps - 2.0).abs() < 1e-9,
        "{}",
        load.throughput_tps
    );
}

#[test]
fn a_response_delivered_at_once_is_not_shown_to_meet_a_tpot_or_ttft_objective() {
    let ms = std::time::Duration::from_millis;
    // 16 tokens 20 ms apart from 100 ms: streamed, TPOT 20 ms, TTFT 100 ms.
    let streamed = crate::record::ok_record(
        0.0,
        None,
        (0..16).map(|i| 100.0 + 20.0 * f64::from(i)).collect(),
    );
    // The same tokens held and delivered at 400 ms, a microsecond apart.
    let held = crate::record::ok_record(
        0.0,
        None,
        (0..16).map(|i| 400.0 + 0.001 * f64::from(i)).collect(),
    );
    let tpot = Slo {
        tpot: Some(ms(50)),
        ..Slo::default()
    };
    let ttft = Slo {
        ttft: Some(ms(500)),
        ..Slo::default()
    };
    let e2e = Slo {
        e2e: Some(ms(500)),
        ..Slo::default()
    };
    let both = |m: Meets<bool>| m.streams && m.buffers;
    assert!(both(meets(&streamed, &tpot)) && both(meets(&streamed, &ttft)));
    assert!(both(meets(&streamed, &e2e)));
    // Through a path that buffers, its TPOT reads 0 ms and its TTFT is its complete time:
    // neither is a figure to judge by.
    assert!(!meets(&held, &tpot).buffers);
    assert!(!meets(&held, &ttft).buffers);
    // Where the case's path streams (a moment's clump), its figures are its own.
    assert!(meets(&held, &tpot).streams && meets(&held, &ttft).streams);
    // Its complete time is its own either way.
    assert!(both(meets(&held, &e2e)));
}

/// A request that never got a token, stopped by the run's stop at `ended`.
fn cancelled(sent: f64, ended: Option<f64>) -> Record {
    let mut r = crate::record::ok_record(sent, Some(sent), Vec::new());
    r.status = crate::record::Status::Cancelled;
    r.error_kind = Some(crate::record::ErrorKind::Cancelled);
    (r.first_token_s, r.done_s, r.ttft_ms, r.e2e_ms) = (None, None, None, None);
    r.ended_s = ended;
    r
}

#[test]
fn a_stopped_open_loop_counts_its_cancelled_requests_in_flight_until_they_stopped() {
    // Two slots' worth of answers over [0, 3] s, and 20 arrivals every 0.1 s from 0.1 s that
    // the server never answered, cancelled by a stop at 2.5 s: 22 in flight at the last send.
    let stop = 2.5;
    let mut rs = vec![
        record(0.0, 3.0, Some(0.0), 6),
        record(0.05, 3.0, Some(0.05), 6),
    ];
    rs.extend((1..=20).map(|i| cancelled(f64::from(i) * 0.1, Some(stop))));
    let spans: Vec<_> = rs.iter().map(|r| (r.sent_s, r.last_seen())).collect();
    let (_, peak) = concurrency(&spans, (0.0, 3.0));
    assert_eq!(peak, 22);
    // The window figures, fed as the requests end (the cancelled ones at the stop), say the
    // same peak, over a window that ends with the last activity.
    let mut figures = WindowFigures::new(0.0, None, Slo::default(), None);
    for r in &rs {
        figures.launch(r.sent_s);
        figures.settle_to(r.sent_s);
    }
    let mut by_end: Vec<&Record> = rs.iter().collect();
    by_end.sort_by(|a, b| a.last_seen().total_cmp(&b.last_seen()));
    for r in by_end {
        figures.add(r, Some(r.sent_s));
    }
    let (load, _) = figures.finish(10.0, true);
    assert_eq!(load.achieved_concurrency_peak, 22);
    assert_eq!(load.window_s, [0.0, 3.0]);
    // Records that do not say when they stopped (written before it was kept) count a cancelled
    // request for no time at all: only the two answered ones overlap.
    let old: Vec<_> = rs
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.ended_s = None;
            (r.sent_s, r.last_seen())
        })
        .collect();
    assert_eq!(concurrency(&old, (0.0, 3.0)).1, 2);
}

#[test]
fn a_stage_whose_responses_end_after_it_counts_their_tokens_over_their_own_span() {
    // A stage of [0, 5] s: three requests sent at 1, 2 and 3 s whose 10 tokens each arrive
    // from 5.3 s on, all done at 8 s (the server drained them in the next stage's time).
    let rs: Vec<Record> = [1.0, 2.0, 3.0]
        .iter()
        .map(|&sent| {
            let events = (1..=10)
                .map(|i| (5.0 - sent + f64::from(i) * 0.3) * 1e3)
                .collect();
            crate::record::ok_record(sent, Some(sent), events)
        })
        .collect();
    let refs: Vec<&Record> = rs.iter().collect();
    let mut load = window_figures(&refs, (0.0, 5.0), &Slo::default());
    assert_eq!(load.throughput_tps, 0.0, "no token inside the stage's time");
    // Not a stage: the window's figures stay, and nothing of the own responses is kept.
    let mut other = load.clone();
    settle_stage(&mut other);
    assert_eq!((other.throughput_tps, other.own_responses), (0.0, None));
    load.stage = Some(crate::workload::stages::StageLabel {
        number: 1,
        of: 2,
        kind: crate::workload::stages::LevelKind::Rate,
        ramp: false,
        from: 1.0,
        to: 1.0,
        start_s: 0.0,
        duration_s: 5.0,
    });
    settle_stage(&mut load);
    let own = load.own_responses.expect("three ok responses");
    assert_eq!(own.responses, 3);
    assert!(
        own.span_s[0] == 1.0 && (own.span_s[1] - 8.0).abs() < 1e-9,
        "{own:?}"
    );
    // 30 tokens from the first send (1 s) to the last completion (8 s).
    assert!(
        (load.throughput_tps - 30.0 / 7.0).abs() < 1e-9,
        "{}",
        load.throughput_tps
    );
    assert_eq!(load.window_throughput_tps, Some(0.0));
    assert!(load.throughput_ci.is_none());
}
