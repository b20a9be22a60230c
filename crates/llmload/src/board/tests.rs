use super::text::Format;
use super::*;
use crate::record::ok_record;
use std::time::Duration;

fn sample<'a>(text: &'a str, series: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
}

#[test]
fn every_record_is_counted_by_case_phase_and_status_and_only_measured_ok_ones_are_timed() {
    let board = Board::new(flight::Flight::new());
    board.cases(&["c".to_owned()]);
    let ok = ok_record(1.0, Some(0.9995), vec![20.0, 30.0, 40.0]);
    let mut warmup = ok.clone();
    warmup.phase = Phase::Warmup;
    let mut failed = ok_record(2.0, Some(2.0), vec![]);
    failed.status = Status::Error;
    failed.error_kind = Some(ErrorKind::Timeout);
    failed.output_tokens = None;
    failed.streamed_tokens = 2;
    for r in [&ok, &warmup, &failed, &ok] {
        board.record(r);
    }
    let text = board.render(Format::Prometheus);
    let total = |labels: &str| {
        sample(
            &text,
            &format!("llmload_requests_total{{case=\"c\",{labels}}}"),
        )
    };
    assert_eq!(total("phase=\"measured\",status=\"ok\""), Some("2"));
    assert_eq!(total("phase=\"measured\",status=\"error\""), Some("1"));
    assert_eq!(
        total("phase=\"measured\",status=\"cancelled\""),
        Some("0"),
        "started at 0"
    );
    assert_eq!(total("phase=\"warmup\",status=\"ok\""), Some("1"));
    let errors = "llmload_request_errors_total{case=\"c\",phase=\"measured\",kind=\"timeout\"}";
    assert_eq!(sample(&text, errors), Some("1"));
    // 8 prompt tokens each; 3 output tokens per ok response, 2 streamed by the failed one.
    let tokens =
        |name: &str, phase: &str| sample(&text, &format!("{name}{{case=\"c\",phase=\"{phase}\"}}"));
    assert_eq!(
        tokens("llmload_prompt_tokens_total", "measured"),
        Some("24")
    );
    assert_eq!(tokens("llmload_prompt_tokens_total", "warmup"), Some("8"));
    assert_eq!(tokens("llmload_output_tokens_total", "measured"), Some("8"));
    assert_eq!(tokens("llmload_output_tokens_total", "warmup"), Some("3"));
    let count = |name: &str| sample(&text, &format!("{name}_count{{case=\"c\"}}"));
    assert_eq!(count("llmload_time_to_first_token_seconds"), Some("2"));
    assert_eq!(count("llmload_complete_response_seconds"), Some("2"));
    assert_eq!(
        count("llmload_inter_token_latency_seconds"),
        Some("4"),
        "2 gaps each"
    );
    assert_eq!(
        count("llmload_send_lag_seconds"),
        Some("3"),
        "every measured one scheduled"
    );
    // TTFT 20 ms: in the 25 ms bucket, not in the 10 ms one.
    let bucket = |le: &str| {
        sample(
            &text,
            &format!("llmload_time_to_first_token_seconds_bucket{{case=\"c\",le=\"{le}\"}}"),
        )
    };
    assert_eq!(bucket("0.01"), Some("0"));
    assert_eq!(bucket("0.025"), Some("2"));
    assert_eq!(bucket("+Inf"), Some("2"));
    assert_eq!(sample(&text, "llmload_run_finished"), Some("0"));
    board.finish();
    assert_eq!(
        sample(&board.render(Format::Prometheus), "llmload_run_finished"),
        Some("1")
    );
}

#[test]
fn a_staged_load_names_the_stage_running() {
    let s = Snapshot {
        case_id: "a".into(),
        stages: vec![
            ("a".into(), Duration::from_secs(10)),
            ("b".into(), Duration::from_secs(5)),
        ],
        ..Snapshot::default()
    };
    assert_eq!(s.stage_at(Duration::from_secs(3)), Some((1, 2, "a")));
    assert_eq!(s.stage_at(Duration::from_secs(10)), Some((2, 2, "b")));
    assert_eq!(
        s.stage_at(Duration::from_secs(99)),
        Some((2, 2, "b")),
        "the drain"
    );
    assert_eq!(Snapshot::default().stage_at(Duration::ZERO), None);
}
