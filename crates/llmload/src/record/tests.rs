//! Unit tests of `record.rs`.

use super::*;
use crate::api::client::Exchange;

fn record(event_ms: Vec<f64>, event_tokens: Vec<u32>) -> Record {
    let sink = Exchange::new();
    let meta = crate::record::test_meta();
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

#[test]
fn phases_are_written_compactly_and_a_record_without_them_still_reads_back() {
    let mut r = crate::record::ok_record(1.0, None, vec![5.0, 7.0]);
    let old = serde_json::to_string(&r).expect("json");
    assert!(!old.contains("phases"), "absent phases are not written");
    assert_eq!(
        serde_json::from_str::<Record>(&old).expect("an old record"),
        r
    );
    r.phases = Some(crate::record::Phases {
        write_ms: Some(0.02),
        head_ms: Some(3.0),
        first_event_ms: Some(4.5),
        reused: true,
        ..crate::record::Phases::default()
    });
    let line = serde_json::to_string(&r).expect("json");
    assert!(
        line.contains(
            r#""phases":{"write_ms":0.02,"head_ms":3.0,"first_event_ms":4.5,"reused":true}"#
        ),
        "{line}"
    );
    assert_eq!(
        serde_json::from_str::<Record>(&line).expect("a new record"),
        r
    );
}

#[test]
fn an_exchange_without_a_connection_has_no_phases_and_a_new_one_its_setup_apart() {
    use crate::api::client::{Setup, Timing};
    use std::time::Duration;
    let meta = crate::record::test_meta();
    let mut exchange = Exchange::new();
    let r = crate::runner::exchange::record(meta.clone(), &exchange, exchange.sent, false);
    assert_eq!(r.phases, None);
    let sent = exchange.sent;
    exchange.timing = Some(Timing {
        setup: Some(Setup {
            connect: Duration::from_micros(1500),
            tls: Some(Duration::from_millis(4)),
        }),
        reused: false,
        written: Some(sent + Duration::from_micros(250)),
        head: Some(sent + Duration::from_millis(9)),
        first_event: None,
    });
    let p = crate::runner::exchange::record(meta, &exchange, sent, false)
        .phases
        .expect("phases");
    // Setup as durations (to the float's last digits), the marks in ms from `sent`, kept to the
    // microsecond as token events are.
    let close = |a: Option<f64>, b: f64, within: f64| a.is_some_and(|a| (a - b).abs() <= within);
    assert!(
        close(p.connect_ms, 1.5, 1e-9) && close(p.tls_ms, 4.0, 1e-9),
        "{p:?}"
    );
    assert!(
        close(p.write_ms, 0.25, 1e-3) && close(p.head_ms, 9.0, 1e-3),
        "{p:?}"
    );
    assert_eq!(p.first_event_ms, None);
    assert!(!p.reused);
}
