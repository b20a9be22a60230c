//! Unit tests of `models.rs`: each model's figures are exactly its records', and add up to the
//! case's.

use crate::record::{ok_record, ErrorKind, Record, Status};
use crate::summary::window::{Meets, WindowFigures};
use crate::summary::CaseSummary;
use crate::workload::shape::{Case, Slo};

fn case(concurrency: u32) -> Case {
    Case {
        id: "c".into(),
        input_tokens: 8,
        concurrency,
        output_tokens: 4,
        batch: None,
        images: None,
    }
}

/// A measured `ok` record of round `round` sent at `sent` for `model`: 4 tokens, one every
/// `step` ms.
fn ok(model: &str, round: u32, sent: f64, step: f64) -> Record {
    let mut r = ok_record(sent, None, (1..=4).map(|i| f64::from(i) * step).collect());
    r.round = Some(round);
    r.model = Some(model.into());
    r
}

fn failed(model: &str, round: u32, sent: f64) -> Record {
    let mut r = ok(model, round, sent, 1.0);
    r.status = Status::Error;
    r.error_kind = Some(ErrorKind::Http);
    r.error = Some("HTTP 404 Not Found: The model `b` does not exist.".into());
    r
}

#[test]
fn each_models_figures_are_its_own_records_and_add_up_to_the_case() {
    // Two rounds of 3: a, a, b; a, b, b (b's second one failed). a's steps are 10 ms, b's 20 ms.
    let records = [
        ok("a", 1, 0.0, 10.0),
        ok("a", 1, 0.0, 10.0),
        ok("b", 1, 0.0, 20.0),
        ok("a", 2, 1.0, 10.0),
        ok("b", 2, 1.0, 20.0),
        failed("b", 2, 1.0),
    ];
    let s = CaseSummary::new(&case(3), 2, &records);
    let models = s.models.as_ref().expect("a mix has per-model figures");
    let names: Vec<&str> = models.iter().map(|m| m.model.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let (a, b) = (&models[0], &models[1]);
    assert_eq!((a.counts.ok, a.counts.error), (3, 0));
    assert_eq!((b.counts.ok, b.counts.error), (2, 1));
    assert_eq!(a.counts.ok + b.counts.ok, s.counts.ok);
    assert_eq!(
        a.counts.measured() + b.counts.measured(),
        s.counts.measured()
    );
    assert!((a.share - 0.5).abs() < 1e-12 && (b.share - 0.5).abs() < 1e-12);
    assert!(b
        .first_error
        .as_deref()
        .is_some_and(|e| e.contains("does not exist")));
    assert!(a.first_error.is_none());
    // Exactly each model's samples: a's TTFT is 10 ms on 3 responses, b's 20 ms on 2.
    let ttft = |m: &crate::summary::models::ModelSummary| m.ttft_ms.clone().expect("ttft");
    assert_eq!((ttft(a).n, ttft(a).median), (3, 10.0));
    assert_eq!((ttft(b).n, ttft(b).median), (2, 20.0));
    assert_eq!(s.ttft_ms.as_ref().map(|d| d.n), Some(5));
    let itl = b.itl_ms.as_ref().expect("itl");
    assert_eq!((itl.n, itl.median), (2 * 3, 20.0));
    assert_eq!(a.tpot_ms.as_ref().map(|d| d.median), Some(10.0));
    // Output tokens/s: each model's tokens over the summed spans of the rounds (40 ms and 80 ms:
    // each round ends with b's last token), which add up to the case's tokens over that time.
    assert_eq!((a.output_tokens, b.output_tokens), (12, 8));
    let spans: f64 = s.rounds.iter().map(|r| r.duration_s).sum();
    assert!((spans - 0.16).abs() < 1e-9, "{spans}");
    let tps = |m: &crate::summary::models::ModelSummary| m.output_tps.expect("tps");
    assert!((tps(a) - 12.0 / 0.16).abs() < 1e-6, "{}", tps(a));
    let total: u64 = s.rounds.iter().map(|r| r.output_tokens).sum();
    assert!((tps(a) + tps(b) - total as f64 / spans).abs() < 1e-6);
    // No window: no window figures.
    assert!(a.completed_rps.is_none() && a.goodput_rps.is_none());
}

#[test]
fn a_run_of_one_model_has_no_breakdown() {
    let mut r = ok("a", 1, 0.0, 10.0);
    r.model = None;
    assert!(CaseSummary::new(&case(1), 1, &[r]).models.is_none());
}

#[test]
fn window_figures_are_split_by_model_and_add_up() {
    // Window [0, 2]: a's request (tokens at 0.5..2.0 s) inside; b's 8 tokens at 1.25..3 s,
    // 4 inside and completing after the window.
    let mut a = ok_record(0.0, Some(0.0), vec![500.0, 1000.0, 1500.0, 2000.0]);
    a.model = Some("a".into());
    let mut b = ok_record(
        1.0,
        Some(1.0),
        (1..=8).map(|i| f64::from(i) * 250.0).collect(),
    );
    b.model = Some("b".into());
    let slo = Slo {
        e2e: Some(std::time::Duration::from_secs(5)),
        ..Slo::default()
    };
    let mut figures = WindowFigures::new(0.0, Some(2.0), slo, None);
    for r in [&a, &b] {
        figures.add(r, None);
    }
    let (load, _, windows) = figures.finish_with_models(2.0, false);
    let (wa, wb) = (&windows["a"], &windows["b"]);
    assert_eq!((wa.tokens, wb.tokens), (4.0, 4.0));
    assert_eq!((wa.completed, wb.completed), (1, 0));
    assert_eq!(
        wa.met,
        Meets {
            streams: 1,
            buffers: 1
        }
    );
    assert!((load.throughput_tps - f64::midpoint(wa.tokens, wb.tokens)).abs() < 1e-9);
    let mut summary = CaseSummary::new(&case(2), 0, &[a, b]);
    crate::summary::window::attach_window(summary.models.as_mut(), &load, &windows, true);
    let models = summary.models.expect("models");
    assert_eq!(models[0].output_tps, Some(2.0));
    assert_eq!(models[0].completed_rps, Some(0.5));
    assert_eq!(models[0].goodput_rps, Some(0.5));
    assert_eq!(models[0].slo_met_share, Some(1.0));
    // b completed nothing inside the window: no share of met objectives to give.
    assert_eq!(models[1].completed_rps, Some(0.0));
    assert_eq!(models[1].slo_met_share, None);
}

#[test]
fn a_model_with_objectives_of_its_own_is_judged_by_them() {
    // Two responses of 2 s each inside the window [0, 5]; a's objective is 1 s, the run's 3 s.
    let mut a = ok_record(0.0, Some(0.0), vec![1000.0, 2000.0]);
    a.model = Some("a".into());
    let mut b = ok_record(1.0, Some(1.0), vec![1000.0, 2000.0]);
    b.model = Some("b".into());
    let e2e = |s| Slo {
        e2e: Some(std::time::Duration::from_secs(s)),
        ..Slo::default()
    };
    let own = std::collections::BTreeMap::from([("a".to_owned(), e2e(1))]);
    let mut figures = WindowFigures::new(0.0, Some(5.0), e2e(3), None)
        .with_model_objectives(&std::sync::Arc::new(own.clone()));
    for r in [&a, &b] {
        figures.add(r, None);
    }
    let (load, _, windows) = figures.finish_with_models(5.0, false);
    assert_eq!(
        windows["a"].met,
        Meets {
            streams: 0,
            buffers: 0
        }
    );
    assert_eq!(
        windows["b"].met,
        Meets {
            streams: 1,
            buffers: 1
        }
    );
    assert_eq!(load.slo_met_share, Some(0.5));
    // Objectives of one model alone still make goodput a figure of the whole window.
    let mut figures = WindowFigures::new(0.0, Some(5.0), Slo::default(), None)
        .with_model_objectives(&std::sync::Arc::new(own));
    for r in [&a, &b] {
        figures.add(r, None);
    }
    let (load, _, windows) = figures.finish_with_models(5.0, false);
    assert_eq!(
        windows["b"].met.streams, 1,
        "no objective of its own, none of the run's"
    );
    assert_eq!(load.goodput_rps, Some(1.0 / 5.0));
}
