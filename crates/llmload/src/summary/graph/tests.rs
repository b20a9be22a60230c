use super::*;
use crate::record::{ok_record, GraphCall};

/// An `ok` call of session `id` ("s{id}"), sent at `sent_s`, its tokens 100 and 200 ms after
/// (so it ends 200 ms after its send), `history` eligible tokens of which `cached` served.
fn call(id: u64, name: &str, after: &[&str], sent_s: f64, history: u32, cached: u32) -> Record {
    let mut r = ok_record(sent_s, None, vec![100.0, 200.0]);
    r.session = Some(id);
    r.turns = Some(3);
    r.history_tokens = Some(history);
    r.cached_tokens = Some(cached);
    r.prompt_tokens = Some(history + 10);
    r.input_tokens = history + 10;
    r.graph = Some(Box::new(GraphCall {
        session: format!("s{id}"),
        call: name.into(),
        after: after.iter().map(|&a| a.to_owned()).collect(),
        context: (!after.is_empty()).then(|| "root".to_owned()),
        wait_ms: 100.0,
        final_answer: name == "answer",
    }));
    r
}

#[test]
fn ttfat_waits_and_the_eligible_cache_come_from_the_calls() {
    let mut figures = GraphFigures::default();
    // Session 0: root 0–0.2 s, a tool call 0.3–0.5 s (waited 100 ms), the answer 0.7–0.9 s
    // (200 ms) whose first token came at 0.8 s. Its context was served whole, then half.
    figures.add(&call(0, "root", &[], 0.0, 0, 0));
    figures.add(&call(0, "tool", &["root"], 0.3, 50, 50));
    figures.add(&call(0, "answer", &["tool"], 0.7, 50, 10));
    // Session 1: its answer failed.
    figures.add(&call(1, "root", &[], 0.0, 0, 0));
    figures.add(&call(1, "tool", &["root"], 0.3, 50, 0));
    let mut failed = call(1, "answer", &["tool"], 0.7, 50, 0);
    failed.status = Status::Error;
    figures.add(&failed);
    // A record of no graph is left out.
    figures.add(&ok_record(0.0, None, vec![1.0]));
    let g = figures.finish().expect("graphs");
    assert_eq!((g.sessions, g.complete), (2, 1));
    let ttfat = g.ttfat_ms.expect("one complete session");
    assert_eq!(ttfat.n, 1);
    assert!((ttfat.median - 800.0).abs() < 1e-6, "{ttfat:?}");
    assert!((g.waits_ms.expect("waits").median - 300.0).abs() < 1e-6);
    // 6 tokens (two a call) over 0.9 s.
    let i = g.interactivity_tps.expect("interactivity").median;
    assert!((i - 6.0 / 0.9).abs() < 1e-9, "{i}");
    assert_eq!(g.first_call_ttft_ms.expect("first").n, 2);
    assert_eq!(g.later_call_ttft_ms.expect("later").n, 3);
    // Eligible: 50 + 50 + 50 over the ok calls that extend a context; served 50 + 10 + 0.
    assert_eq!((g.eligible_tokens, g.cached_tokens), (150, 60));
    assert_eq!(g.eligible_hit_rate, Some(0.4));
    // The answer of session 0 (10 of 50) and the tool call of session 1 (0 of 50) are named.
    let named: Vec<(&str, &str, u32)> = g
        .misses
        .iter()
        .map(|m| (m.session.as_str(), m.call.as_str(), m.cached_tokens))
        .collect();
    assert_eq!(named, [("s0", "answer", 10), ("s1", "tool", 0)]);
    assert_eq!(g.miss_count, 2);
    let calls: Vec<(&str, u32)> = g.by_call.iter().map(|c| (c.call.as_str(), c.n)).collect();
    assert_eq!(calls, [("answer", 1), ("root", 2), ("tool", 2)]);
    let rows: Vec<(u64, Option<f64>)> = g
        .by_session
        .iter()
        .map(|s| (s.id, s.ttfat_ms.map(f64::round)))
        .collect();
    assert_eq!(rows, [(0, Some(800.0)), (1, None)]);
    // Both sessions ran from 0 to 0.9 s: two in flight on average.
    assert_eq!(g.sessions_in_flight, Some(2.0));
    assert_eq!(g.in_flight_slices.len(), super::SLICES);
    let mean = g.in_flight_slices.iter().sum::<f64>() / super::SLICES as f64;
    assert!((mean - 2.0).abs() < 1e-9, "{:?}", g.in_flight_slices);
}

#[test]
fn no_graph_call_no_summary() {
    let mut figures = GraphFigures::default();
    figures.add(&ok_record(0.0, None, vec![1.0]));
    assert!(figures.finish().is_none());
}

#[test]
fn sessions_in_flight_are_averaged_per_slice_of_the_span() {
    // Two sessions over [0, 10]: one for the whole span, one for its second half.
    let slices = super::in_slices(&[(0.0, 10.0), (5.0, 10.0)], (0.0, 10.0), 4);
    assert_eq!(slices, vec![1.0, 1.0, 2.0, 2.0]);
    // One across a slice's edge counts for the time it covers in each.
    let slices = super::in_slices(&[(1.0, 4.0)], (0.0, 4.0), 2);
    assert_eq!(slices, vec![0.5, 1.0]);
    assert!(super::in_slices(&[], (3.0, 3.0), 4).is_empty());
}

#[test]
fn a_call_served_more_than_it_could_have_been_is_named() {
    let mut figures = GraphFigures::default();
    // A fresh call: only the shared system prompt (32) is cacheable; 48 served is beyond it.
    let mut root = call(0, "root", &[], 0.0, 0, 48);
    root.shared_tokens = 32;
    figures.add(&root);
    // Within its context: not named.
    figures.add(&call(0, "tool", &["root"], 0.3, 50, 50));
    // Beyond its context of 50.
    figures.add(&call(0, "answer", &["tool"], 0.7, 50, 64));
    // A fresh call served its shared prompt alone: not named.
    let mut other = call(1, "root", &[], 0.0, 0, 32);
    other.shared_tokens = 32;
    figures.add(&other);
    let g = figures.finish().expect("graphs");
    let named: Vec<(&str, u32, u32)> = g
        .beyond
        .iter()
        .map(|m| (m.call.as_str(), m.cached_tokens, m.eligible_tokens))
        .collect();
    assert_eq!(named, [("root", 48, 32), ("answer", 64, 50)]);
    assert_eq!(g.beyond_count, 2);
}
