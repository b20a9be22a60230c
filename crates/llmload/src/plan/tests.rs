//! `plan` on fixed attempts: the sweep fixture (64-token prompts, 8 output tokens, concurrency
//! 1, 2, 4, 8 with p99 TTFT 10, 17.9, 49.7 and 134 ms; `C_sat` 4, cap 3) and the report fixture
//! (whose 256 × 2 case failed).

use super::*;
use crate::fixture;

fn sweep() -> Measured {
    measured("results/sweep/A", &fixture::sweep_report())
}

fn measured(dir: &str, report: &crate::report::Report) -> Measured {
    Measured {
        dir: PathBuf::from(dir),
        summary: report.summary.clone(),
        url: None,
        slots: None,
        ttft_samples: ttft_samples(report),
        history: Vec::new(),
    }
}

fn question(ttft_ms: f64) -> Question {
    Question {
        prompt_tokens: 64,
        max_prompt_tokens: None,
        output_tokens: 8,
        ttft_ms,
        tpot_ms: None,
        percentile: Percentile::P99,
        wanted: None,
    }
}

#[test]
fn the_largest_load_within_the_budget_and_its_case() {
    let plan = answer(&question(60.0), &[sweep()]);
    assert!(plan.covered);
    let curve = &plan.lengths[0].curves[0];
    assert_eq!(curve.loads, vec![1.0, 2.0, 4.0, 8.0]);
    assert_eq!(curve.largest_load, Some(4.0));
    assert_eq!(curve.limit, "inside");
    let support = curve.support.as_ref().expect("a supporting case");
    assert_eq!(support.case_id, "in64-c4-out8");
    assert_eq!(support.n, 4);
    assert!(support.descriptive, "4 samples cannot hold a p99");
    let miss = curve.first_miss.as_ref().expect("c8 misses");
    assert_eq!(miss.load, 8.0);
    assert!(miss
        .why_not
        .as_deref()
        .is_some_and(|w| w.contains("p99 TTFT")));
    // The sweep's cap (3) is lower than what the budget allows (4).
    assert_eq!(curve.sweep_cap, Some(3.0));
    assert_eq!(curve.recommended_load, Some(3.0));
    // Between 4 and 8 nothing was measured: the command narrows it.
    assert_eq!(
        plan.commands,
        vec!["llmload sweep --input-tokens 64 --output-tokens 8 --concurrency 4,5,6,7,8 --stop-ttft-p99 60ms"]
    );
    let text = render(&plan);
    assert!(
        text.contains("Largest load keeping the budget: concurrency 4 (concurrency 8 misses it"),
        "{text}"
    );
    assert!(
        text.contains("Supported by: case in64-c4-out8, n = 4 responses in 1 round;"),
        "{text}"
    );
    assert!(text.contains("Recommended: concurrency 3."), "{text}");
}

#[test]
fn every_load_within_the_budget_means_the_limit_was_not_measured() {
    let plan = answer(&question(1000.0), &[sweep()]);
    assert!(!plan.covered);
    let curve = &plan.lengths[0].curves[0];
    assert_eq!(curve.limit, "above");
    assert_eq!(curve.largest_load, Some(8.0));
    assert_eq!(
        plan.commands,
        vec!["llmload sweep --input-tokens 64 --output-tokens 8 --concurrency 8,16,32,64 --stop-ttft-p99 1s"]
    );
    assert!(render(&plan).contains("the limit is higher than measured"));
}

#[test]
fn a_budget_missed_by_one_request_at_a_time_is_an_answer() {
    let plan = answer(&question(5.0), &[sweep()]);
    let curve = &plan.lengths[0].curves[0];
    assert_eq!(curve.largest_load, None);
    assert_eq!(curve.limit, "none");
    assert!(plan.covered, "nothing lower than one request to measure");
    assert!(plan.commands.is_empty());
    assert!(render(&plan).contains("One request at a time already misses it"));
}

#[test]
fn an_unmeasured_prompt_length_says_what_to_run() {
    let mut q = question(60.0);
    q.max_prompt_tokens = Some(256);
    let plan = answer(&q, &[sweep()]);
    assert!(!plan.covered);
    let max = &plan.lengths[1];
    assert_eq!(max.role, "maximum");
    assert!(max.curves.is_empty());
    let gap = max.gap.as_deref().expect("a gap");
    assert!(
        gap.contains("no attempt measured 256-token prompts with 8 output tokens"),
        "{gap}"
    );
    assert!(gap.contains("64 × 8"), "{gap}");
    assert!(plan.commands.contains(
        &"llmload sweep --input-tokens 256 --output-tokens 8 --concurrency 1,2,4,8,16 --stop-ttft-p99 60ms".to_owned()
    ));
    assert_eq!(plan.cap_for_longest, None);
}

#[test]
fn the_command_names_the_url_measured_and_asks_for_one_where_they_differ() {
    let q = question(60.0);
    let run = |urls: &[Option<&str>]| {
        let measured: Vec<Measured> = urls
            .iter()
            .map(|u| Measured {
                url: u.map(str::to_owned),
                ..sweep()
            })
            .collect();
        command(&measured, &q, 64, support::Kind::Rounds, &[1.0, 2.0])
    };
    assert_eq!(
        run(&[Some("http://gpu-box:8080")]),
        "llmload sweep --url http://gpu-box:8080 --input-tokens 64 --output-tokens 8 \
         --concurrency 1,2 --stop-ttft-p99 60ms"
    );
    assert!(run(&[Some("http://a:1"), Some("http://a:1")]).contains(" --url http://a:1 "));
    assert!(run(&[Some("http://a:1"), Some("http://b:1")]).contains(" --url URL "));
    assert!(run(&[Some("http://a:1"), None]).contains(" --url URL "));
    // The built-in simulator: the command without --url starts it again.
    assert!(!run(&[None]).contains("--url"));
}

#[test]
fn a_wanted_load_is_measured_bracketed_unknown_or_beyond() {
    let verdict = |ttft: f64, c: u32| {
        let mut q = question(ttft);
        q.wanted = Some(Wanted::Concurrency(c));
        let plan = answer(&q, &[sweep()]);
        plan.lengths[0].curves[0].wanted.clone().expect("asked")
    };
    let measured = verdict(60.0, 8);
    assert_eq!(measured.verdict, "misses");
    assert!(measured.text.contains("in64-c8-out8"));
    assert_eq!(measured.method, "measured");
    assert_eq!((measured.cases.len(), measured.n), (1, 8));
    let between = verdict(500.0, 6);
    assert_eq!((between.verdict, between.method), ("meets", "bracketed"));
    assert!(
        between.text.contains("bracketed, not interpolated")
            && between.text.contains("slots are unknown"),
        "{}",
        between.text
    );
    // Between the measured p99s of 4 (49.7 ms) and 8 (134 ms), from both cases' 12 responses.
    let (low, high) = (
        between.ttft_low_ms.expect("low"),
        between.ttft_high_ms.expect("high"),
    );
    assert!(
        (low - 49.7).abs() < 0.1 && (high - 134.0).abs() < 1.0,
        "{low} {high}"
    );
    assert_eq!((between.cases.len(), between.n), (2, 12));
    assert_eq!(between.caveats.len(), 2, "4 and 8 samples hold no p99");
    let unknown = verdict(60.0, 6);
    assert_eq!(unknown.verdict, "unknown");
    assert!(unknown
        .command
        .as_deref()
        .is_some_and(|c| c.contains("--concurrency 4,6,8")));
    let beyond = verdict(500.0, 16);
    assert_eq!(beyond.verdict, "not-measured");
    assert!(beyond.text.contains("not extrapolated"), "{}", beyond.text);
    assert!(beyond
        .command
        .as_deref()
        .is_some_and(|c| c.contains("--concurrency 1,2,4,8,16")));
    // A rate asked of a concurrency sweep does not apply.
    let mut q = question(60.0);
    q.wanted = Some(Wanted::RateRps(2.0));
    assert_eq!(answer(&q, &[sweep()]).lengths[0].curves[0].wanted, None);
}

#[test]
fn known_slots_bound_a_load_on_the_same_step_and_refuse_one_across_a_step() {
    let on = |slots: Option<u32>| {
        let mut q = question(80.0);
        q.wanted = Some(Wanted::Concurrency(6));
        let m = Measured { slots, ..sweep() };
        answer(&q, &[m]).lengths[0].curves[0]
            .wanted
            .clone()
            .expect("asked")
    };
    // Unknown slots: 49.7 ms at 4 and 134 ms at 8 straddle the 80 ms budget.
    let bracket = on(None);
    assert_eq!((bracket.verdict, bracket.method), ("unknown", "bracketed"));
    assert!(
        bracket.text.contains("measure concurrency 6 to decide"),
        "{}",
        bracket.text
    );
    assert!(bracket
        .command
        .as_deref()
        .is_some_and(|c| c.contains("--concurrency 4,6,8")));
    // Eight slots: 4 and 6 run in one wave, so 6's p99 is at most 6/4 of 4's (74.6 ms).
    let step = on(Some(8));
    assert_eq!(
        (step.verdict, step.method),
        ("meets", "slot steps"),
        "{}",
        step.text
    );
    let high = step.ttft_high_ms.expect("bounded");
    assert!((high - 49.7 * 1.5).abs() < 0.2, "{high}");
    assert!(
        step.text.contains("in wave 1 of the round"),
        "{}",
        step.text
    );
    assert_eq!(step.command, None);
    // Four slots: 6's p99 waits a wave that 4's does not.
    let across = on(Some(4));
    assert_eq!((across.verdict, across.method), ("unknown", "bracketed"));
    assert!(
        across.text.contains("a queueing step lies between"),
        "{}",
        across.text
    );
}

#[test]
fn a_median_of_few_samples_carries_its_caveat() {
    let mut q = question(1000.0);
    q.percentile = Percentile::P50;
    let plan = answer(&q, &[sweep()]);
    let support = plan.lengths[0].curves[0]
        .support
        .clone()
        .expect("8 keeps it");
    let caveat = support.caveat.expect("8 samples are few for a median");
    assert!(
        caveat.contains("n = 8 the p50 only describes the sample"),
        "{caveat}"
    );
    assert!(support.descriptive);
    assert!(render(&plan).contains(&caveat));
}

#[test]
fn attempts_are_answered_apart_and_a_failed_case_misses() {
    let report = measured("results/run/B", &fixture::report());
    let q = Question {
        prompt_tokens: 64,
        max_prompt_tokens: Some(256),
        output_tokens: 4,
        ..question(1000.0)
    };
    let plan = answer(&q, &[report.clone(), report]);
    assert_eq!(plan.lengths[0].curves.len(), 2, "never pooled");
    let long = &plan.lengths[1].curves[0];
    assert_eq!(long.largest_load, Some(1.0));
    let miss = long.first_miss.as_ref().expect("the failed case");
    assert_eq!(miss.case_id, "in256-c2-out4");
    assert!(
        miss.why_not
            .as_deref()
            .is_some_and(|w| w.contains("1 of 4 responses failed")),
        "{miss:?}"
    );
    assert_eq!(
        plan.cap_for_longest,
        Some(1.0),
        "64 tokens allow 2, 256 only 1"
    );
}

#[test]
fn budgets_parse_and_print_as_durations() {
    assert_eq!(parse_budget("ttft", "2s").expect("valid"), 2000.0);
    assert_eq!(parse_budget("ttft", "250ms").expect("valid"), 250.0);
    assert!(parse_budget("ttft", "fast").is_err());
    assert!(parse_budget("ttft", "0s").is_err());
    assert_eq!(duration(2000.0), "2s");
    assert_eq!(duration(1500.0), "1500ms");
    assert_eq!(duration(60.0), "60ms");
}

#[test]
fn a_far_short_response_counts_among_the_ttfts_only_where_its_case_kept_it() {
    let mut report = fixture::sweep_report();
    let id = ttft_samples(&report)
        .into_keys()
        .next()
        .expect("a case with TTFTs");
    let at = (report.summary.cases.iter())
        .position(|c| c.id == id)
        .expect("its summary");
    let n =
        |report: &crate::report::Report| ttft_samples(report).get(&id).map_or(0, |s| s.sent.len());
    let before = n(&report);
    let cut = report
        .records
        .iter_mut()
        .find(|r| {
            r.case == id
                && r.phase == crate::record::Phase::Measured
                && r.status == crate::record::Status::Ok
        })
        .expect("a measured record");
    cut.requested_output_tokens = 64;
    cut.output_tokens = Some(1);
    // The case kept it (its peers stopped early too): it counts.
    report.summary.cases[at].far_short = Some(crate::summary::short::FarShort {
        responses: 1,
        share: 1.0 / 64.0,
        peers: 1,
        peers_share: Some(0.05),
        short: false,
    });
    assert_eq!(n(&report), before);
    // The case counted it short: as the summary's TTFT, it does not.
    if let Some(f) = &mut report.summary.cases[at].far_short {
        f.short = true;
    }
    assert_eq!(n(&report), before - 1);
}

#[test]
fn an_answer_says_its_interval_is_of_one_attempt_unless_earlier_runs_widen_it() {
    let alone = answer(&question(60.0), &[sweep()]);
    let support = alone.lengths[0].curves[0]
        .support
        .clone()
        .expect("a support");
    assert!(
        support.between_runs.contains("of one attempt only"),
        "{}",
        support.between_runs
    );
    assert!(render(&alone).contains("Between runs: its interval is of one attempt only"));
    // Two earlier attempts of the same cases, one twice as slow: the interval of a
    // re-measurement holds the spread.
    let mut slow = sweep().summary;
    for case in &mut slow.cases {
        if let Some(d) = case.ttft_ms.as_mut() {
            d.p99 *= 2.0;
        }
    }
    let with_history = Measured {
        history: vec![sweep().summary, slow],
        ..sweep()
    };
    let plan = answer(&question(60.0), &[with_history]);
    let widened = plan.lengths[0].curves[0]
        .support
        .clone()
        .expect("a support");
    assert_eq!(widened.case_id, support.case_id);
    assert!(
        widened.between_runs.contains("this attempt and 2 earlier"),
        "{}",
        widened.between_runs
    );
    let (low, high) = (
        widened.ttft_low_ms.expect("low"),
        widened.ttft_high_ms.expect("high"),
    );
    let ttft = widened.ttft_ms.expect("a figure");
    assert!(high > ttft * 2.0, "{low}–{high} around {ttft}");
    assert!(high > support.ttft_high_ms.unwrap_or(0.0));
}
