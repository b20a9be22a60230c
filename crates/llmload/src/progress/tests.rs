//! Unit tests of the progress line.

use super::*;
use crate::fixture;
use crate::record::Status;
use crate::telemetry::Reading;
use crate::workload::schedule::Bound;
use crate::workload::shape::Shape;

fn snapshot() -> Snapshot {
    let mut s = Snapshot {
        case: (2, 6),
        case_id: "in2048-c4-out256".into(),
        round: Some((2, 3)),
        total: Some(12),
        ..Snapshot::default()
    };
    for r in fixture::sweep_report()
        .records
        .iter()
        .filter(|r| r.case == "in64-c4-out8" && r.round.is_some())
    {
        s.record(r);
    }
    s
}

#[test]
fn the_line_shows_case_round_requests_ttft_throughput_and_gpu() {
    let reading = Reading {
        temperature_c: 73.4,
        power_w: Some(281.0),
        ..fixture::reading()
    };
    let elapsed = Duration::from_secs(90);
    let text = line(&snapshot(), Some(&reading), elapsed, 200, false);
    // 4 of 12 requests in 90 s: the 8 left take 180 s at that pace.
    assert_eq!(
        text,
        "case 2/6 in2048-c4-out256 · round 2/3 · 4/12 requests · elapsed 1m 30s · ETA 3m · \
         TTFT p50 35.0 ms · 340.0 tokens/s · GPU 0 73 °C 281 W"
    );
    assert!(!text.contains('\x1b'));
    let colored = line(&snapshot(), Some(&reading), elapsed, 200, true);
    assert!(colored.contains("\x1b[1mcase 2/6"), "{colored:?}");
    assert!(colored.contains("\x1b[33mGPU 0"), "{colored:?}");
}

#[test]
fn a_series_names_its_repeat_first() {
    let s = Snapshot {
        repeat: Some((2, 3)),
        ..snapshot()
    };
    let text = line(&s, None, Duration::ZERO, 200, false);
    assert!(
        text.starts_with("repeat 2/3 · case 2/6 in2048-c4-out256 · round 2/3 · "),
        "{text}"
    );
}

#[test]
fn a_narrow_terminal_drops_parts_from_the_end_and_failures_show() {
    let mut s = snapshot();
    let mut failed = fixture::sweep_report().records[1].clone();
    failed.status = Status::Error;
    s.record(&failed);
    let text = line(&s, None, Duration::ZERO, 50, false);
    assert!(text.chars().count() <= 50, "{text}");
    assert!(text.starts_with("case 2/6"), "{text}");
    assert!(!text.contains("tokens/s"), "{text}");
    let wide = line(&s, None, Duration::ZERO, 200, false);
    assert!(wide.contains("5/12 requests (1 failed)"), "{wide}");
    assert!(!wide.contains("GPU"), "no reading, no GPU part");
}

#[test]
fn far_short_responses_show_as_short_once_their_peers_got_more_never_as_failed() {
    let mut s = Snapshot {
        case: (1, 1),
        case_id: "in16-c2-out64".into(),
        total: Some(4),
        ..Snapshot::default()
    };
    let full = fixture::sweep_report().records[1].clone();
    let mut cut = full.clone();
    cut.requested_output_tokens = 64;
    cut.output_tokens = Some(1);
    cut.verified = false;
    // Alone, nothing says it was cut: ok so far.
    s.record(&cut);
    let text = line(&s, None, Duration::ZERO, 200, false);
    assert!(
        !text.contains("short") && !text.contains("failed"),
        "{text}"
    );
    // Its peer got all it asked for: the case counts it short.
    let mut full = full;
    full.requested_output_tokens = 64;
    full.output_tokens = Some(64);
    s.record(&full);
    s.record(&cut);
    let text = line(&s, None, Duration::ZERO, 200, false);
    assert!(text.contains("3/4 requests (2 short)"), "{text}");
}

#[test]
fn the_eta_comes_from_a_duration_or_the_requests_left_and_is_unknown_otherwise() {
    let mut s = snapshot();
    s.total = None;
    let at = Duration::from_secs(20);
    assert_eq!(s.eta(at), None);
    assert!(line(&s, None, at, 200, false).contains("elapsed 20s · ETA unknown"));
    // An open loop of 2 minutes, 20 s in.
    s.duration = Some(Duration::from_secs(120));
    assert_eq!(s.eta(at), Some(Duration::from_secs(100)));
    assert!(line(&s, None, at, 200, false).contains("elapsed 20s · ETA 1m 40s"));
    // Past its end (the drain), nothing is left to wait for but the requests in flight.
    assert_eq!(s.eta(Duration::from_secs(130)), Some(Duration::ZERO));
    // A known count before any request ended has no pace yet.
    let none_done = Snapshot {
        total: Some(12),
        ..Snapshot::default()
    };
    assert_eq!(none_done.eta(at), None);
}

#[tokio::test(start_paused = true)]
async fn elapsed_is_counted_from_the_start_of_the_case_on_tokios_clock() {
    let mut s = snapshot();
    s.started = Some(tokio::time::Instant::now());
    tokio::time::advance(Duration::from_secs(45)).await;
    let elapsed = s.started.map(|t| t.elapsed()).unwrap_or_default();
    assert_eq!(elapsed.as_secs(), 45);
    let text = line(&s, None, elapsed, 200, false);
    assert!(text.contains("elapsed 45s · ETA 1m 30s"), "{text}");
}

#[test]
fn a_staged_load_plans_the_sum_of_its_stages() {
    use crate::workload::length::Length;
    use crate::workload::shape::Case;
    let open = |seconds: u64| CasePlan {
        case: Case {
            id: "stage".into(),
            input_tokens: 8,
            concurrency: 2,
            output_tokens: 4,
            batch: None,
            images: None,
        },
        input: Length::Fixed(8),
        output: Length::Fixed(4),
        shape: Shape::ClosedContinuous {
            bound: Bound::Duration(Duration::from_secs(seconds)),
        },
        warmup_time: Duration::ZERO,
        warmup_launches: 0,
        stage: None,
    };
    let planned = Planned::of_load(&[open(10), open(30)]);
    assert_eq!(planned.duration, Some(Duration::from_secs(40)));
    assert_eq!(planned.requests, None);
    assert_eq!(planned.rounds, None);
}

#[test]
fn colour_only_on_a_terminal_without_no_color() {
    assert!(use_color(true, None));
    assert!(use_color(true, Some("")));
    assert!(!use_color(true, Some("1")));
    assert!(!use_color(false, None));
}

#[test]
fn the_median_is_over_the_recent_ttfts_only() {
    let mut s = Snapshot::default();
    let mut r = fixture::sweep_report().records[1].clone();
    r.ttft_ms = Some(1000.0);
    for _ in 0..TTFT_WINDOW {
        s.record(&r);
    }
    r.ttft_ms = Some(10.0);
    for _ in 0..=(TTFT_WINDOW / 2) {
        s.record(&r);
    }
    assert_eq!(s.ttft_ms.len(), TTFT_WINDOW);
    assert_eq!(s.ttft_median_ms(), Some(10.0));
}

#[test]
fn a_handle_without_a_terminal_does_nothing() {
    let progress = Progress::off();
    progress.round(1);
    progress.record(&fixture::sweep_report().records[1]);
    progress.finish(None);
}
