//! Unit tests of `record.rs`.

use super::*;
use crate::api::client::Exchange;

fn record(event_ms: Vec<f64>, event_tokens: Vec<u32>) -> Record {
    let sink = Exchange::new();
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
    let mut r = crate::runner::exchange::record(meta, &sink, sink.sent, false);
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
