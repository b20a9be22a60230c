use super::vllm::VllmResult;
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
    let r = build(&vllm_result(24, 0.0, 2).into_other(), &case(), &refs);
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
    let r = build(&other.into_other(), &case(), &refs);
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
    let r = build(&other.into_other(), &case(), &refs);
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
    let r = build(&other.into_other(), &case(), &refs);
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
    let other = [vllm_result(4, 0.0, 4).into_other()];
    assert_eq!(
        choose(&cases, &other, None, None).expect("one fits").0.id,
        "in32-c4-out5"
    );
    assert_eq!(
        choose(&cases, &other, Some("in32-c2-out5"), None)
            .expect("named")
            .0
            .id,
        "in32-c2-out5"
    );
    assert!(choose(&cases, &other, Some("nope"), None).is_err());
    let none = [vllm_result(4, 0.0, 8).into_other()];
    let e = choose(&cases, &none, None, None).expect_err("none fits");
    assert!(e.to_string().contains("--case"), "{e}");
    // A sweep's runs: the one of the case's concurrency, or the one named.
    let sweep = [
        vllm_result(4, 0.0, 2).into_other(),
        vllm_result(4, 0.0, 4).into_other(),
    ];
    let (case, run) = choose(&cases, &sweep, Some("in32-c2-out5"), None).expect("one fits");
    assert_eq!((case.concurrency, run.concurrency), (2, Some(2)));
    let (_, run) = choose(&cases, &sweep, Some("in32-c2-out5"), Some(2)).expect("named");
    assert_eq!(run.concurrency, Some(4));
    assert!(choose(&cases, &sweep, None, Some(3))
        .expect_err("no third")
        .to_string()
        .contains("holds 2"));
    let same = [
        vllm_result(4, 0.0, 2).into_other(),
        vllm_result(4, 0.0, 2).into_other(),
    ];
    let e = choose(&cases, &same, Some("in32-c2-out5"), None).expect_err("two fit");
    assert!(e.to_string().contains("--benchmark"), "{e}");
}

/// An AIPerf run of `n` requests measured as [`records`] are under AIPerf's definitions.
fn aiperf_run(n: usize, concurrency: u64) -> OtherRun {
    let response = shape::OtherResponse {
        prompt_tokens: Some(32.0),
        output_tokens: Some(5.0),
        values: [
            ("time_to_first_token", vec![10.0]),
            ("time_to_second_token", vec![2.0]),
            ("inter_token_latency", vec![2.0]),
            ("inter_chunk_latency", vec![2.0; 4]),
            ("request_latency", vec![18.0]),
        ]
        .into_iter()
        .map(|(figure, values)| shape::Values {
            figure,
            values,
            weight: 1.0,
        })
        .collect(),
    };
    OtherRun {
        dialect: Dialect::Aiperf,
        tool: "AIPerf (profile_export.jsonl)".into(),
        concurrency: Some(concurrency),
        completed: Some(n as u64),
        responses: vec![response; n],
        ..OtherRun::default()
    }
}

#[test]
fn the_same_responses_under_aiperf_s_definitions_give_aiperf_s_figures() {
    let owned = records(24, 0.0);
    let refs: Vec<&Record> = owned.iter().collect();
    let r = build(&aiperf_run(24, 2), &case(), &refs);
    assert_eq!(r.dialect, Dialect::Aiperf);
    assert!(r.workload.iter().all(|w| w.same), "{:?}", r.workload);
    // AIPerf's TTFT skips the role chunk: the first token, as llmload's.
    let ttft = row(&r, "time_to_first_token_avg_ms");
    near(ttft.llmload_as_other, 10.0);
    near(ttft.llmload, 10.0);
    // Its ITL is (last token − TTFT) ÷ 4 = 2; llmload's TPOT runs to the final event: 2.25.
    let itl = row(&r, "inter_token_latency_avg_ms");
    near(itl.llmload_as_other, 2.0);
    near(itl.llmload, 2.25);
    assert!((term(itl, "definition").amount.expect("an amount") + 0.25).abs() < 1e-9);
    // One gap per chunk, four a response; its interval resamples whole responses.
    let chunks = row(&r, "inter_chunk_latency_p50_ms");
    assert_eq!(chunks.n, 24 * 4);
    assert!(chunks.llmload_as_other_interval.is_some());
    assert!(term(chunks, "measurement").text.contains("overlap"));
    // llmload has no time to second token of its own.
    let second = row(&r, "time_to_second_token_avg_ms");
    assert_eq!(second.llmload, None);
    assert!(term(second, "definition").text.contains("no figure"));
    near(row(&r, "request_latency_p50_ms").llmload_as_other, 18.0);
}

#[test]
fn guidellm_s_token_weighted_figures_get_intervals_that_resample_responses() {
    // Responses of 3 to 12 tokens 2 ms apart: GuideLLM's ITL is 2 ms for every one of them,
    // its TPOT (last token − send) ÷ tokens shrinks with length, so weighting by tokens shows.
    let owned: Vec<Record> = (0..30u32)
        .map(|i| {
            let n = 3 + i % 10;
            let events: Vec<f64> = (0..n).map(|k| 10.0 + 2.0 * f64::from(k)).collect();
            let mut r = ok_record(f64::from(i), None, events);
            r.case = "in32-c2-out5".into();
            r.output_tokens = Some(n);
            r.prompt_tokens = Some(32);
            r
        })
        .collect();
    let refs: Vec<&Record> = owned.iter().collect();
    let run = OtherRun {
        dialect: Dialect::Guidellm,
        tool: "GuideLLM (concurrent, 2 streams)".into(),
        concurrency: Some(2),
        ..OtherRun::default()
    };
    let r = build(&run, &case(), &refs);
    let itl = row(&r, "inter_token_latency_mean_ms");
    near(itl.llmload_as_other, 2.0);
    let tpot = row(&r, "time_per_output_token_mean_ms");
    // Σ over responses of (last token ÷ n) × n ÷ Σ n = Σ last ÷ Σ n.
    let last: f64 = owned.iter().map(|r| r.event_ms[r.event_ms.len() - 1]).sum();
    let tokens: f64 = owned.iter().map(|r| f64::from(r.generated_tokens())).sum();
    near(tpot.llmload_as_other, last / tokens);
    let ci = tpot
        .llmload_as_other_interval
        .expect("30 responses resampled");
    let point = tpot.llmload_as_other.expect("a figure");
    assert!(
        ci.low <= point && point <= ci.high && ci.low < ci.high,
        "{ci:?}"
    );
    // Not in the file: the other side has no figure, so no measurement term.
    assert_eq!(tpot.other, None);
    assert!(tpot.terms.iter().all(|t| t.kind != "measurement"));
    assert_eq!(tpot.llmload, None);
}

#[test]
fn a_server_that_kept_another_pace_during_the_other_run_is_said_so() {
    let owned = records(24, 0.0);
    let refs: Vec<&Record> = owned.iter().collect();
    let span = dialect::span_throughput(&refs).expect("a span");
    let mut run = aiperf_run(24, 2);
    run.output_throughput = Some(span);
    let same = build(&run, &case(), &refs);
    let text = &term(row(&same, "time_to_first_token_avg_ms"), "measurement").text;
    assert!(!text.contains("another pace"), "{text}");
    run.output_throughput = Some(span / 5.0);
    let slower = build(&run, &case(), &refs);
    let text = &term(row(&slower, "time_to_first_token_avg_ms"), "measurement").text;
    assert!(text.contains("another pace"), "{text}");
    // The throughput row itself is the evidence, not explained by itself.
    let text = &term(row(&slower, "output_throughput_tps"), "measurement").text;
    assert!(!text.contains("another pace"), "{text}");
}

#[test]
fn impossible_values_in_another_tool_s_file_are_named_and_never_figures() {
    let dir = tempfile::tempdir().expect("temp dir");
    // AIPerf's records: one request's latency of 1e308 s (past a float once in ms), and one's
    // prompt of a negative length.
    let lines: Vec<serde_json::Value> = include_str!("fixtures/aiperf-profile_export.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let last = lines.len() - 1;
    let edits: [(&str, serde_json::Value, &str); 2] = [
        (
            "request_latency",
            serde_json::json!({"value": 1e308, "unit": "s"}),
            "finite",
        ),
        (
            "usage_prompt_tokens",
            serde_json::json!({"value": -64, "unit": "tokens"}),
            "negative",
        ),
    ];
    for (metric, value, why) in edits {
        let mut edited = lines.clone();
        edited[last]["metrics"][metric] = value;
        let text: Vec<String> = edited.iter().map(ToString::to_string).collect();
        let path = dir.path().join("profile_export.jsonl");
        std::fs::write(&path, text.join("\n") + "\n").expect("write");
        let error = super::other::read(&path).expect_err(metric);
        assert!(
            error.contains(why) && !error.contains('\n'),
            "{metric}: {error}"
        );
    }
    // vllm bench serve: a TTFT of minus half a second, and a mean given as 1e308 ms.
    for (field, value, why) in [
        ("ttfts", serde_json::json!([0.1, -0.5]), "negative"),
        ("mean_e2el_ms", serde_json::json!(1e308), "past anything"),
    ] {
        let mut file = serde_json::json!({"mean_ttft_ms": 10.0, "ttfts": [0.1, 0.2],
            "latencies": [0.5, 0.6], "input_lens": [8, 8], "output_lens": [4, 4],
            "itls": [[0.1], [0.1]], "errors": ["", ""]});
        file[field] = value;
        let path = dir.path().join("vllm.json");
        std::fs::write(&path, file.to_string()).expect("write");
        let error = super::other::read(&path).expect_err(field);
        assert!(error.contains(why), "{field}: {error}");
    }
}

/// The sum of `m`'s shares, ms.
fn shared(m: &MetricRow) -> f64 {
    m.shares.iter().map(|s| s.ms).sum()
}

fn share<'a>(m: &'a MetricRow, cause: &str) -> &'a shares::Share {
    m.shares
        .iter()
        .find(|s| s.cause == cause)
        .unwrap_or_else(|| panic!("{}: no {cause} share in {:?}", m.name, m.shares))
}

#[test]
fn a_run_without_warm_up_pays_its_cold_requests_and_the_shares_sum_to_the_gap() {
    let owned = records(24, 0.0);
    let refs: Vec<&Record> = owned.iter().collect();
    // The other run's first two requests (its concurrency) took 20 ms more to their first
    // chunk: a cold server.
    let mut other = vllm_result(24, 0.0, 2);
    for t in &mut other.ttfts[..2] {
        *t += 0.020;
    }
    let r = build(&other.into_other(), &case(), &refs);
    let ttft = row(&r, "ttft_mean_ms");
    let gap = ttft.other.expect("other") - ttft.llmload.expect("ours");
    assert!((shared(ttft) - gap).abs() < 1e-9, "{:?}", ttft.shares);
    // Two of 24 requests 20 ms slower: the mean moves by 40 / 24 ms, all of it theirs.
    let cold = share(ttft, "cold requests");
    assert!((cold.ms - 40.0 / 24.0).abs() < 1e-9, "{cold:?}");
    assert!(cold.text.contains("its first 2 requests"), "{}", cold.text);
    assert!(cold.text.contains("does not say whether it warmed up"));
    assert!((share(ttft, "definition").ms + 2.0).abs() < 1e-9);
    assert!(
        share(ttft, "remainder").ms.abs() < 1e-9,
        "{:?}",
        ttft.shares
    );
    // The median is not moved by two requests of 24.
    assert!(share(row(&r, "ttft_median_ms"), "cold requests").ms.abs() < 1e-9);
    let table = render::render(&r);
    assert!(table.contains("in shares that sum to it:"), "{table}");
    assert!(table.contains("    - cold requests +1.667 ms"), "{table}");
}

#[test]
fn a_slower_server_during_the_other_run_is_sized_as_its_pace() {
    // llmload's records with the server's own timings: 8 ms of prefill for 32 tokens, 8 ms
    // of decode for 4 gaps (2 ms a token).
    let mut owned = records(24, 0.0);
    for r in &mut owned {
        let mut s = crate::record::ServerTimings::new(crate::record::TimingSource::Vllm);
        (s.prefill_ms, s.ttft_ms, s.decode_ms) = (Some(8.0), Some(8.0), Some(8.0));
        r.server = Some(s);
    }
    let refs: Vec<&Record> = owned.iter().collect();
    // The other run's server 1.5× slower per token (3 ms gaps), its TTFT 4 ms later.
    let mut other = vllm_result(24, 4.0, 2);
    other.itls = vec![vec![0.003; 5]; 24];
    other.latencies = vec![(18.0 + 4.0 + 5.0) / 1e3; 24];
    let r = build(&other.into_other(), &case(), &refs);
    let ttft = row(&r, "ttft_mean_ms");
    let gap = ttft.other.expect("other") - ttft.llmload.expect("ours");
    assert!((shared(ttft) - gap).abs() < 1e-9, "{:?}", ttft.shares);
    let pace = share(ttft, "server pace");
    // The other run's TPOT (27 − 12) / 4 = 3.75 ms against 2.5 ms: 1.5×, on 8 ms of server
    // TTFT: 4 ms.
    assert!((pace.ms - 4.0).abs() < 1e-9, "{pace:?}");
    assert!(pace.text.contains("50 % slower"), "{}", pace.text);
    let remainder = share(ttft, "remainder");
    assert!(remainder.ms.abs() < 1e-9, "{remainder:?}");
    assert!(
        remainder
            .text
            .contains("llmload's TTFT sits 2.0 ms after the server's own"),
        "{}",
        remainder.text
    );
}
