//! Unit tests of `short.rs`: cut streams among full ones, a server that stops every response
//! early, tiny cases, the majority cut, records of earlier versions, and the figures of the
//! case and of its window both ways.

use super::*;
use crate::record::{ok_record, Record};
use crate::summary::window::WindowFigures;
use crate::summary::CaseSummary;
use crate::workload::shape::Slo;

/// A best-effort `ok` response sent at `sent_s` that asked for `asked` tokens and got `got`,
/// one event every 10 ms from 50 ms on.
fn response(sent_s: f64, asked: u32, got: u32) -> Record {
    let events: Vec<f64> = (0..got).map(|i| 50.0 + 10.0 * f64::from(i)).collect();
    let mut r = ok_record(sent_s, None, events);
    r.requested_output_tokens = asked;
    r.verified = got == asked;
    r.round = Some(1);
    r
}

fn judged(records: &[Record]) -> Shortfall {
    let mut s = Shortfall::default();
    for r in records {
        s.add(r);
    }
    s
}

#[test]
fn cut_streams_among_full_ones_are_short_and_a_server_that_stops_early_is_not() {
    // Every other stream cut after 1 of 16 tokens.
    let cut: Vec<Record> = (0..8)
        .map(|i| response(0.0, 16, if i % 2 == 0 { 1 } else { 16 }))
        .collect();
    let s = judged(&cut);
    assert!(s.short());
    let f = s.finish().expect("far-short responses");
    assert_eq!((f.responses, f.peers, f.short), (4, 4, true));
    assert!((f.share - 1.0 / 16.0).abs() < 1e-12, "{f:?}");
    // Every response stopped at 20, 30 or 40 % of the 16 asked: 3 (a quarter or less), 5, 6.
    let early: Vec<Record> = [3, 5, 6, 3, 5, 6]
        .into_iter()
        .map(|got| response(0.0, 16, got))
        .collect();
    let s = judged(&early);
    assert!(!s.short(), "{s:?}");
    let f = s.finish().expect("far-short responses");
    assert_eq!((f.responses, f.peers, f.short), (2, 4, false));
    // Without any far-short response there is nothing to say.
    assert_eq!(judged(&[response(0.0, 16, 16)]).finish(), None);
}

#[test]
fn tiny_cases_and_a_cut_majority_are_judged_against_the_responses_that_were_not_far_short() {
    // One response alone: no peer says it was cut.
    assert!(!judged(&[response(0.0, 16, 1)]).short());
    // Two, one cut: short.
    assert!(judged(&[response(0.0, 16, 1), response(0.0, 16, 16)]).short());
    // Every response far short alike: the server's way.
    assert!(!judged(&[
        response(0.0, 64, 4),
        response(0.0, 64, 5),
        response(0.0, 64, 3)
    ])
    .short());
    // Two of three cut (a server that keeps only the last stream of a round of 3): a median
    // would take the cut ones for the norm; against the one that was not, they are short.
    let round = [
        response(0.0, 16, 1),
        response(0.0, 16, 2),
        response(0.0, 16, 16),
    ];
    assert!(judged(&round).short());
    // Far short of what was asked but not of the peers (a quarter of the asked, peers at 60 %).
    assert!(!judged(&[response(0.0, 40, 10), response(0.0, 40, 24)]).short());
    // Failed responses are no peers.
    let mut failed = response(0.0, 16, 16);
    failed.status = Status::Error;
    assert!(!judged(&[response(0.0, 16, 1), failed]).short());
}

#[test]
fn a_case_counts_cut_streams_apart_and_takes_its_figures_from_the_full_ones_only() {
    let case = crate::fixture::campaign().cases[0].case();
    let records: Vec<Record> = (0..4)
        .map(|i| response(f64::from(i), 16, if i % 2 == 0 { 1 } else { 16 }))
        .collect();
    let s = CaseSummary::new(&case, 1, &records);
    assert_eq!(
        (s.counts.ok, s.counts.short, s.counts.unverified),
        (2, 2, 0)
    );
    let n = |d: &Option<crate::stats::Distribution>| d.as_ref().map_or(0, |d| d.n);
    assert_eq!((n(&s.ttft_ms), n(&s.e2e_ms), n(&s.tpot_ms)), (2, 2, 2));
    assert!(!s.complete, "short responses leave the case incomplete");
    assert!(s.far_short.as_ref().is_some_and(|f| f.short), "{s:?}");
    let line = s.far_short.as_ref().expect("judged").sentence("c1");
    assert!(
        line.starts_with(
            "c1: 2 responses got a quarter or less of the output asked for (6 % on average) \
             against 100 % for the other 2: cut short"
        ),
        "{line}"
    );
    // The same responses written `short` by an earlier version reach the same figures.
    let older: Vec<Record> = records
        .iter()
        .cloned()
        .map(|mut r| {
            if r.generated_tokens() == 1 {
                r.status = Status::Short;
            }
            r
        })
        .collect();
    assert_eq!(CaseSummary::new(&case, 1, &older), s);
}

#[test]
fn a_server_that_stops_every_response_early_keeps_them_all_ok_and_unverified() {
    let case = crate::fixture::campaign().cases[0].case();
    let records: Vec<Record> = [3, 5, 6, 3, 5, 6]
        .into_iter()
        .enumerate()
        .map(|(i, got)| response(i as f64, 16, got))
        .collect();
    let s = CaseSummary::new(&case, 1, &records);
    assert_eq!(
        (s.counts.ok, s.counts.short, s.counts.unverified),
        (6, 0, 6)
    );
    assert_eq!(s.e2e_ms.as_ref().map(|d| d.n), Some(6));
    let f = s.far_short.as_ref().expect("two were far short");
    assert!(!f.short);
    let line = f.sentence("c1");
    assert!(
        line.contains("the server ends its responses early"),
        "{line}"
    );
    // Even those that were written `short` by an earlier version.
    let mut older = records;
    older[0].status = Status::Short;
    assert_eq!(CaseSummary::new(&case, 1, &older), s);
}

#[test]
fn a_window_counts_the_tokens_of_cut_streams_only_where_its_case_keeps_them() {
    let tokens = |records: &[Record]| {
        let mut w = WindowFigures::new(0.0, Some(100.0), Slo::default(), None);
        for r in records {
            w.add(r, None);
        }
        w.finish(100.0, false).0.throughput_tps * 100.0
    };
    // A cut stream (1 token) beside a full one (16): short, its token out of the window's.
    let cut = [response(1.0, 16, 1), response(2.0, 16, 16)];
    assert!((tokens(&cut) - 16.0).abs() < 1e-9, "{}", tokens(&cut));
    // Alone, nothing says it was cut: its token counts.
    assert!((tokens(&cut[..1]) - 1.0).abs() < 1e-9);
    // A server that stops everything early: every token counts.
    let early = [response(1.0, 16, 3), response(2.0, 16, 5)];
    assert!((tokens(&early) - 8.0).abs() < 1e-9);
}
