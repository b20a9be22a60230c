use super::*;
use crate::fixture;
use crate::guard::Limits;
use crate::record::{ok_record, ErrorKind, Status};
use crate::summary::client_check::ClientVerdict;
use ratatui::backend::TestBackend;
use tokio_util::sync::CancellationToken;

fn screen(state: &State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("a test terminal");
    terminal.draw(|frame| render(frame, state)).expect("drawn");
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            text.push_str(buffer[(x, y)].symbol());
        }
        text.push('\n');
    }
    text
}

#[test]
fn a_frame_shows_the_case_its_eta_the_figures_failures_guard_and_self_check() {
    let mut snapshot = Snapshot {
        case: (2, 3),
        case_id: "in64-c4-out8".into(),
        total: Some(100),
        duration: Some(Duration::from_secs(120)),
        started: Some(tokio::time::Instant::now()),
        ..Snapshot::default()
    };
    let mut recent = Recent::default();
    for second in 0..40 {
        let r = ok_record(f64::from(second), None, vec![50.0, 60.0, 70.0]);
        snapshot.record(&r);
        recent.add(&r);
    }
    let mut failed = ok_record(39.0, None, vec![]);
    failed.status = Status::Error;
    failed.error_kind = Some(ErrorKind::Timeout);
    recent.add(&failed);
    let limits = Limits {
        stop_temp_c: Some(85.0),
        ..Limits::default()
    };
    let guard = Guard::new(
        limits,
        tokio::time::Instant::now(),
        CancellationToken::new(),
    );
    guard.observe_reading(crate::telemetry::Reading {
        temperature_c: 73.4,
        power_w: Some(281.0),
        power_limit_w: Some(300.0),
        sw_power_cap: Some(true),
        ..fixture::reading()
    });
    let mut state = State::of(&snapshot, &recent, 41.0, &guard, None);
    state.log = vec!["case 1/3 in64-c1-out8: 12 ok".into()];
    let text = screen(&state, 120, 30);
    for expected in [
        "case 2/3 in64-c4-out8",
        "40 of 100 requests",
        "TTFT  p50   50.",
        "ITL   p50   10.0 ms",
        "throughput 3.0 tokens/s · 1.03 responses/s", // 30 ok and a failure
        "timeout 1",
        "GPU 0 73 °C (stop at 85) · 281/300 W · throttled: power",
        "guard: watching",
        "no sample yet",
        "case 1/3 in64-c1-out8: 12 ok",
    ] {
        assert!(text.contains(expected), "{expected:?} not in\n{text}");
    }
    // 120 s bound the load, under a second has passed.
    assert!(
        text.contains("ETA 2m") || text.contains("ETA 1m 59s"),
        "{text}"
    );
    // The trends: a sparkline's bars.
    assert!(text.chars().any(|c| ('▁'..='█').contains(&c)), "{text}");
}

#[test]
fn the_self_check_shows_its_verdict_and_why() {
    let check = crate::summary::client_check::assess(
        &[],
        2,
        None,
        &crate::summary::client_check::Bounds::default(),
    );
    assert_eq!(
        check_lines(Some(&check))[0],
        "too short to judge yet (0 samples)"
    );
    let mut bad = check.clone();
    bad.verdict = ClientVerdict::ClientMayHaveDistorted;
    bad.cpu_share_max = Some(0.97);
    bad.reasons = vec!["llmload used 90 % or more of its 2 core(s)".into()];
    let lines = check_lines(Some(&bad));
    assert_eq!(
        lines[0],
        "WARNING: the client may distort (0 samples, CPU up to 97 %)"
    );
    assert_eq!(lines[1], "llmload used 90 % or more of its 2 core(s)");
}

#[test]
fn before_a_case_the_title_says_so_and_a_staged_load_names_its_stage() {
    assert_eq!(title(&Snapshot::default()), "llmload · setting up");
    let staged = Snapshot {
        case: (1, 1),
        case_id: "a".into(),
        repeat: Some((2, 3)),
        stages: vec![
            ("a".into(), Duration::from_secs(60)),
            ("b".into(), Duration::from_secs(60)),
        ],
        started: Some(tokio::time::Instant::now()),
        ..Snapshot::default()
    };
    assert_eq!(
        title(&staged),
        "llmload · repeat 2/3 · case 1/1 · stage 1/2 a"
    );
}
