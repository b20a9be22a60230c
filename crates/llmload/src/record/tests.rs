//! Unit tests of `record.rs`.

#[test]
fn a_last_line_cut_short_is_left_out_but_a_bad_line_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("requests.jsonl");
    let line = serde_json::to_string(&ok_record(1.0, None, vec![5.0, 7.0])).expect("json");
    std::fs::write(&path, format!("{line}\n{line}\n{}", &line[..40])).expect("write");
    assert_eq!(read_records(&path).expect("readable").len(), 2);
    std::fs::write(&path, format!("{line}\n{}\n{line}\n", &line[..40])).expect("write");
    let error = read_records(&path).expect_err("a bad line in the middle");
    assert!(
        format!("{error:#}").contains(":2: not a record"),
        "{error:#}"
    );
}

use super::*;

fn counters(p: u32, c: u32, o: u32) -> Counters {
    Counters {
        prompt_tokens: Some(p),
        cached_tokens: Some(c),
        output_tokens: Some(o),
    }
}

#[test]
fn verification_accepts_exact_uncached_responses() {
    let v = verify(&counters(128, 0, 32), 32, 128, 32, 0);
    assert!(v.verified && v.problems.is_empty() && v.notes.is_empty());
}

#[test]
fn verification_rejects_each_contradiction() {
    assert_eq!(
        verify(&counters(129, 0, 32), 32, 128, 32, 0).problems.len(),
        1
    );
    assert_eq!(
        verify(&counters(128, 64, 32), 32, 128, 32, 0)
            .problems
            .len(),
        1
    );
    assert_eq!(
        verify(&counters(128, 0, 7), 7, 128, 32, 0).problems.len(),
        1
    );
    assert_eq!(
        verify(&counters(100, 5, 7), 7, 128, 32, 0).problems.len(),
        3
    );
}

#[test]
fn missing_counters_leave_the_response_unverified() {
    let v = verify(&Counters::default(), 32, 128, 32, 0);
    assert!(!v.verified && v.problems.is_empty());
    let v = verify(&Counters::default(), 31, 128, 32, 0);
    assert_eq!(v.problems.len(), 1);
}

#[test]
fn stream_and_counter_disagreement_is_noted() {
    let v = verify(&counters(128, 0, 32), 30, 128, 32, 0);
    assert!(v.problems.is_empty() && v.notes.len() == 1);
}

fn record(event_ms: Vec<f64>, event_tokens: Vec<u32>) -> Record {
    let sink = Exchange {
        sent: Instant::now(),
        token_events: crate::api::client::TokenEvents::new(Instant::now()),
        done: None,
        counters: Counters::default(),
        failure: None,
        retried: false,
    };
    let meta = RequestMeta {
        case: "c".into(),
        phase: Phase::Measured,
        round: Some(1),
        index: 0,
        input_tokens: 1,
        output_tokens: 1,
        shared_tokens: 0,
        scheduled: None,
        launched: None,
    };
    let mut r = Record::from_exchange(meta, &sink, sink.sent);
    r.event_ms = event_ms;
    r.event_tokens = event_tokens;
    r
}

#[test]
fn multi_token_events_split_their_gap() {
    let r = record(vec![100.0, 110.0, 140.0], vec![1, 1, 3]);
    assert_eq!(r.itl_ms().collect::<Vec<_>>(), vec![10.0, 10.0, 10.0, 10.0]);
    assert_eq!(r.chunk_gaps_ms().collect::<Vec<_>>(), vec![10.0, 30.0]);
    let r = record(vec![100.0, 110.0, 125.0], vec![]);
    assert_eq!(r.itl_ms().collect::<Vec<_>>(), vec![10.0, 15.0]);
}

#[test]
fn tpot_spreads_decode_time_over_tokens_after_the_first() {
    let mut r = record(vec![], vec![]);
    (r.ttft_ms, r.e2e_ms, r.output_tokens) = (Some(200.0), Some(1220.0), Some(256));
    assert_eq!(r.tpot_ms(), Some(4.0));
    r.output_tokens = Some(1);
    assert_eq!(r.tpot_ms(), None);
}
