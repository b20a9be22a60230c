use super::*;
use crate::record::{ok_record, Phases};

/// `n` chat responses of 5 tokens, sent 1 s apart: role chunk at 8 ms, tokens at 10, 12, 14, 16,
/// 18 ms (plus `shift` ms each), the final event at 19 ms.
fn records(n: u32, shift: f64) -> Vec<Record> {
    (0..n)
        .map(|i| {
            let events: Vec<f64> = (0..5).map(|k| 10.0 + 2.0 * f64::from(k) + shift).collect();
            let mut r = ok_record(f64::from(i), None, events);
            r.case = "in32-c2-out5".into();
            r.output_tokens = Some(5);
            r.prompt_tokens = Some(32);
            r.e2e_ms = Some(19.0 + shift);
            r.done_s = Some(f64::from(i) + (19.0 + shift) / 1e3);
            r.phases = Some(Phases {
                first_event_ms: Some(8.0 + shift),
                ..Phases::default()
            });
            r
        })
        .collect()
}

/// A detailed vLLM result of `n` requests measured as [`records`] with `shift`.
fn vllm_result(n: usize, shift: f64, concurrency: u64) -> VllmResult {
    let s = |ms: f64| (ms + shift) / 1e3;
    VllmResult {
        backend: Some("openai-chat".into()),
        max_concurrency: Some(concurrency),
        completed: Some(crate::num::count(n).into()),
        ttfts: vec![s(8.0); n],
        latencies: vec![s(18.0); n],
        itls: vec![vec![0.002; 5]; n],
        input_lens: vec![32.0; n],
        output_lens: vec![5.0; n],
        errors: vec![String::new(); n],
        ..VllmResult::default()
    }
}

fn case() -> CaseSummary {
    let mut c = crate::fixture::report().summary.cases[0].clone();
    c.id = "in32-c2-out5".into();
    c.concurrency = 2;
    c.input_tokens = 32;
    c.output_tokens = 5;
    c
}

/// `v` is `want`, to rounding.
fn near(v: Option<f64>, want: f64) {
    let v = v.expect("a figure");
    assert!((v - want).abs() < 1e-9, "{v} ≠ {want}");
}

fn row<'a>(r: &'a Reconciliation, name: &str) -> &'a MetricRow {
    r.metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

fn term<'a>(m: &'a MetricRow, kind: &str) -> &'a Term {
    m.terms
        .iter()
        .find(|t| t.kind == kind)
        .unwrap_or_else(|| panic!("{}: no {kind} term", m.name))
}

#[test]
fn the_same_responses_under_vllm_s_definitions_give_vllm_s_figures() {
    let owned = records(24, 0.0);
    let refs: Vec<&Record> = owned.iter().collect();
    let r = build(&vllm_result(24, 0.0, 2), &case(), &refs);
    assert!(r.detailed);
    assert!(r.workload.iter().all(|w| w.same), "{:?}", r.workload);
    // TTFT: vLLM's first chunk is the role chunk at 8 ms; llmload's first token at 10 ms.
    let ttft = row(&r, "ttft_mean_ms");
    near(ttft.llmload_as_other, 8.0);
    near(ttft.llmload, 10.0);
    near(ttft.other, 8.0);
    assert!((term(ttft, "definition").amount.expect("an amount") + 2.0).abs() < 1e-9);
    assert!(term(ttft, "definition").text.contains("24 of 24 responses"));
    assert!(term(ttft, "measurement").amount.expect("an amount").abs() < 1e-9);
    // TPOT: (18 − 8) / 4 as vLLM, (19 − 10) / 4 as llmload.
    let tpot = row(&r, "tpot_mean_ms");
    near(tpot.llmload_as_other, 2.5);
    near(tpot.llmload, 2.25);
    near(tpot.other, 2.5);
    // ITL: five gaps a response under vLLM's (the role chunk's included), four under llmload's.
    let itl = row(&r, "itl_mean_ms");
    assert_eq!(itl.n, 24 * 5);
    near(itl.llmload_as_other, 2.0);
    near(row(&r, "e2el_median_ms").llmload, 19.0);
    near(row(&r, "e2el_median_ms").llmload_as_other, 18.0);
    // Identical values on both sides: zero-width intervals that meet.
    assert!(
        term(ttft, "measurement").text.contains("overlap"),
        "{:?}",
        ttft.terms
    );
    let table = render::render(&r);
    assert!(
        table.contains("| ttft_mean_ms | 8.000 | 8.000 (n = 24) | 10.000 | -2.000 | +0.000 |"),
        "{table}"
    );
}

#[test]
fn a_gap_beyond_both_intervals_is_called_a_measurement_difference() {
    // The other client stamped every event 3 ms later, with some spread.
    let owned = records(40, 0.0);
    let refs: Vec<&Record> = owned.iter().collect();
    let mut other = vllm_result(40, 3.0, 2);
    for (i, t) in other.ttfts.iter_mut().enumerate() {
        *t += f64::from(crate::num::count(i % 3)) * 1e-4;
    }
    let r = build(&other, &case(), &refs);
    let ttft = row(&r, "ttft_median_ms");
    let gap = term(ttft, "measurement");
    assert!(gap.amount.expect("an amount") > 2.9, "{gap:?}");
    assert!(gap.text.contains("do not overlap"), "{}", gap.text);
}

#[test]
fn a_different_workload_is_named_in_every_figure() {
    let owned = records(24, 0.0);
    let refs: Vec<&Record> = owned.iter().collect();
    let mut other = vllm_result(24, 0.0, 4);
    other.output_lens = vec![6.0; 24];
    let r = build(&other, &case(), &refs);
    let differs: Vec<&str> = r
        .workload
        .iter()
        .filter(|w| !w.same)
        .map(|w| w.what.as_str())
        .collect();
    assert_eq!(differs, ["concurrency", "output tokens (median)"]);
    for m in &r.metrics {
        assert!(
            term(m, "workload").text.contains("concurrency"),
            "{}",
            m.name
        );
    }
}

#[test]
fn a_summary_file_without_lists_is_reconciled_on_its_figures_alone() {
    let owned = records(24, 0.0);
    let refs: Vec<&Record> = owned.iter().collect();
    let other = VllmResult {
        mean_ttft_ms: Some(8.5),
        max_concurrency: Some(2),
        completed: Some(24),
        ..VllmResult::default()
    };
    let r = build(&other, &case(), &refs);
    assert!(!r.detailed);
    let ttft = row(&r, "ttft_mean_ms");
    near(ttft.other, 8.5);
    assert!(ttft.other_interval.is_none());
    // No lists: the median is not in the file, and nothing on its side computes one.
    assert_eq!(row(&r, "ttft_median_ms").other, None);
    assert!(render::render(&r).contains("no per-request lists"));
}

#[test]
fn the_case_is_the_one_that_fits_or_the_one_named() {
    let mut a = case();
    let mut b = case();
    b.id = "in32-c4-out5".into();
    b.concurrency = 4;
    a.id = "in32-c2-out5".into();
    let cases = vec![a, b];
    let other = vllm_result(4, 0.0, 4);
    assert_eq!(
        choose_case(&cases, &other, None).expect("one fits").id,
        "in32-c4-out5"
    );
    assert_eq!(
        choose_case(&cases, &other, Some("in32-c2-out5"))
            .expect("named")
            .id,
        "in32-c2-out5"
    );
    assert!(choose_case(&cases, &other, Some("nope")).is_err());
    let none = vllm_result(4, 0.0, 8);
    let e = choose_case(&cases, &none, None).expect_err("none fits");
    assert!(e.to_string().contains("--case"), "{e}");
}
