//! Unit tests of `compare/gate.rs`: the grammar, and checks on hand-built figures.

use super::*;
use crate::compare::identity::{KeyedAttempt, LengthKey, LoadKey};
use crate::fixture;
use crate::stats::interval::{Basis, Ci, Method, Unit};
use crate::stats::{Interval, Intervals};
use std::collections::BTreeMap;

fn rule(text: &str) -> Rule {
    text.parse()
        .unwrap_or_else(|e| panic!("{text} should parse: {e}"))
}

fn error(text: &str) -> String {
    match text.parse::<Rule>() {
        Ok(r) => panic!("{text} should not parse, got {r:?}"),
        Err(e) => e,
    }
}

#[test]
fn good_expressions_parse_to_their_metric_direction_and_bound() {
    let r = rule("ttft_p50 > +10%");
    assert_eq!(r.metric, Metric::Latency(Latency::Ttft, Percentile::P50));
    assert_eq!(r.op, Op::Above);
    assert_eq!(r.bound, Change::Percent(10.0));
    assert_eq!(r.text, "ttft_p50 > +10%");
    let r = rule("throughput<-5%");
    assert_eq!(
        (r.metric, r.op, r.bound),
        (Metric::Throughput, Op::Below, Change::Percent(-5.0))
    );
    assert_eq!(r.text, "throughput < -5%");
    assert_eq!(rule("e2e_p99 > 20ms").bound, Change::Absolute(20.0));
    assert_eq!(rule("e2e_p99 > +1.5s").bound, Change::Absolute(1500.0));
    assert_eq!(rule("itl_p99 > +500us").bound, Change::Absolute(0.5));
    assert_eq!(rule("throughput < -50tok/s").bound, Change::Absolute(-50.0));
    assert_eq!(rule("goodput < -2 req/s").bound, Change::Absolute(-2.0));
    assert_eq!(rule("error_rate > +1pp").bound, Change::Absolute(0.01));
    assert_eq!(
        rule("tpot_p90 > +0.5%").metric,
        Metric::Latency(Latency::Tpot, Percentile::P90)
    );
}

#[test]
fn bad_expressions_say_what_is_wrong() {
    assert!(error("ttft_p50 +10%").contains("no `>` or `<`"));
    assert!(error("ttft_p42 > +10%").contains("unknown metric `ttft_p42`"));
    assert!(error("latency > +10%").contains("metrics: ttft_"));
    assert!(error("ttft_p50 >= +10%").contains("`>` or `<` alone"));
    assert!(error("ttft_p50 > fast").contains("`fast` is not a change"));
    assert!(error("ttft_p50 > ").contains("is not a change"));
    let unit = error("ttft_p50 > +5tok/s");
    assert!(unit.contains("ms, s, us, µs for ttft_p50"), "{unit}");
    assert!(error("throughput < -5").contains("needs a unit"));
    assert!(error("error_rate > +1ms").contains("pp for error_rate"));
}

#[test]
fn a_bad_rule_is_a_usage_error_naming_it_and_its_origin() {
    let flags = vec!["ttft_p50 > +10%".to_owned(), "ttft > 1".to_owned()];
    let e = rules(&flags, None).expect_err("bad flag");
    assert!(
        e.0.starts_with("--fail-if 'ttft > 1': unknown metric"),
        "{e}"
    );
    let file = "fail_if = [\"throughput < -5%\", \"goodput < 3\"]";
    let e = rules(&[], Some(("t.toml", file))).expect_err("bad rule in the file");
    assert!(
        e.0.starts_with("thresholds file t.toml, rule 2 'goodput < 3'"),
        "{e}"
    );
    let e = rules(&[], Some(("t.toml", "fail-if = []"))).expect_err("unknown key");
    assert!(e.0.starts_with("thresholds file t.toml:"), "{e}");
    let both = rules(
        &flags[..1],
        Some(("t.toml", "fail_if = [\"throughput < -5%\"]")),
    );
    let texts: Vec<String> = both.expect("good").into_iter().map(|r| r.text).collect();
    assert_eq!(texts, ["ttft_p50 > +10%", "throughput < -5%"]);
}

#[test]
fn phase_metrics_parse_and_take_the_case_phases_with_their_n() {
    let r = rule("first_event_p99 > +20ms");
    assert_eq!(
        r.metric,
        Metric::Latency(Latency::FirstEvent, Percentile::P99)
    );
    assert_eq!(r.text, "first_event_p99 > +20ms");
    assert_eq!(
        rule("connect_p50 > +1ms").metric,
        Metric::Latency(Latency::Connect, Percentile::P50)
    );
    assert!(error("first_p50 > +1ms").contains("unknown metric `first_p50`"));
    let cases = fixture::report().summary.cases;
    // Two concurrent: the first round opens a second connection.
    let base = cases
        .into_iter()
        .find(|c| c.id == "in64-c2-out4")
        .expect("case");
    assert!(base.complete);
    let phases = base.phases.clone().expect("the fixture has phases");
    let connect = rule("connect_p50 > +10%")
        .metric
        .figure(&base)
        .expect("connect");
    let expected = phases.connect_ms.as_ref().expect("connect");
    assert_eq!(
        (connect.value, connect.n, connect.of),
        (expected.median, expected.n, "new connections")
    );
    let head = phases.head_ms.as_ref().expect("head");
    let mut slower = base.clone();
    let new_head = slower.phases.as_mut().and_then(|p| p.head_ms.as_mut());
    new_head.expect("head").median = head.median + 30.0;
    let verdict = check(&rule("head_p50 > +20ms"), &base, &slower);
    assert_eq!(comparison(&verdict).change, 30.0);
    assert_eq!(comparison(&verdict).base.n, head.n);
    // The fixture's few responses give the median no interval: the change cannot be told.
    assert!(
        matches!(verdict, GateVerdict::Inconclusive(_)),
        "{verdict:?}"
    );
    let why = comparison(&verdict).reason.clone().unwrap_or_default();
    assert!(why.contains("too few for a 95 % interval"), "{why}");
    let mut without = base.clone();
    without.phases = None;
    let verdict = check(&rule("head_p50 > +20ms"), &without, &base);
    assert_eq!(
        verdict,
        GateVerdict::NotCompared {
            reason: "not compared (absent in BASE)".into()
        }
    );
}

/// An interval basis for hand-built figures: order statistics over 100 responses.
fn basis() -> Basis {
    Basis {
        level: 0.95,
        method: Method::OrderStatistic,
        unit: Unit::Response,
        units: 100,
    }
}

/// The fixture's first case (complete), its median TTFT set to `ttft_ms` with an interval of
/// ±`half` ms, and its throughput's interval ±5 %.
fn case_with(ttft_ms: f64, half: f64) -> CaseSummary {
    let mut case = fixture::report().summary.cases[0].clone();
    assert!(case.complete, "the fixture's first case is complete");
    let ttft = case.ttft_ms.as_mut().expect("a TTFT");
    ttft.median = ttft_ms;
    ttft.ci = Some(Intervals {
        basis: basis(),
        median: Some(Interval {
            low: ttft_ms - half,
            high: ttft_ms + half,
        }),
        p90: None,
        p95: None,
        p99: None,
        mean: None,
        too_few: vec!["p90".into(), "p95".into(), "p99".into()],
        note: None,
    });
    let t = case.throughput_tps.as_mut().expect("throughput");
    t.ci = Some(Ci {
        basis: Basis {
            method: Method::StudentT,
            unit: Unit::Round,
            units: 10,
            ..basis()
        },
        interval: Some(Interval {
            low: t.mean * 0.95,
            high: t.mean * 1.05,
        }),
        note: None,
    });
    case
}

/// [`case_with`] a tight interval (±1 %).
fn case_with_ttft(ttft_ms: f64) -> CaseSummary {
    case_with(ttft_ms, ttft_ms * 0.01)
}

fn comparison(v: &GateVerdict) -> &Comparison {
    v.comparison()
        .unwrap_or_else(|| panic!("not compared: {v:?}"))
}

#[test]
fn fifteen_percent_slower_regresses_a_ten_percent_rule_and_five_percent_is_no_change() {
    let limit = rule("ttft_p50 > +10%");
    let base = case_with_ttft(100.0);
    let slower = check(&limit, &base, &case_with_ttft(115.0));
    assert!(matches!(slower, GateVerdict::Regressed(_)), "{slower:?}");
    assert!(slower.fails(false));
    let c = comparison(&slower);
    assert!((c.change - 15.0).abs() < 1e-9);
    let i = c.interval.expect("an interval of the change");
    assert!(
        i.low > 10.0 && i.low < 15.0 && i.high > 15.0 && i.high < 20.0,
        "{i:?}"
    );
    assert_eq!((c.base.value, c.new.value), (100.0, 115.0));
    assert_eq!(c.base.n, base.ttft_ms.as_ref().expect("TTFT").n);
    assert_eq!(c.base.of, "responses");
    assert!(
        c.test.contains("order statistics over 100 responses"),
        "{}",
        c.test
    );
    let within = check(&limit, &base, &case_with_ttft(105.0));
    assert!(matches!(within, GateVerdict::NoChange(_)), "{within:?}");
    let faster = check(&limit, &base, &case_with_ttft(50.0));
    assert!(matches!(faster, GateVerdict::Improved(_)), "{faster:?}");
    assert!(!faster.fails(true));
    let absolute = check(&rule("ttft_p50 > +20ms"), &base, &case_with_ttft(115.0));
    assert!(
        matches!(absolute, GateVerdict::NoChange(_)),
        "15 ms is within 20 ms: {absolute:?}"
    );
}

#[test]
fn a_change_inside_the_noise_is_inconclusive_with_what_would_decide_it() {
    let limit = rule("ttft_p50 > +10%");
    // ±15 % on each side: a 12 % slowdown cannot be told from one of under 10 %.
    let base = case_with(100.0, 15.0);
    let verdict = check(&limit, &base, &case_with(112.0, 16.8));
    assert!(
        matches!(verdict, GateVerdict::Inconclusive(_)),
        "{verdict:?}"
    );
    assert!(!verdict.fails(false) && verdict.fails(true));
    let c = comparison(&verdict);
    // More than 10× the rounds: too close to the bound to decide at any affordable size.
    assert_eq!(c.to_decide, Some(change::ToDecide::TooClose));
    // Two copies of BASE differ by up to ~21 %: a 10 % bound is inside that noise.
    let floor = c.noise_floor.expect("a noise floor");
    assert!(floor > 15.0 && floor < 30.0, "{floor}");
    assert!(c.below_noise);
    // The same change on tight intervals regresses.
    let tight = check(&limit, &case_with_ttft(100.0), &case_with_ttft(112.0));
    assert!(matches!(tight, GateVerdict::Regressed(_)), "{tight:?}");
    assert!(!comparison(&tight).below_noise);
}

#[test]
fn a_drop_in_throughput_regresses_a_below_rule() {
    let base = case_with_ttft(100.0);
    let mut new = base.clone();
    let spread = new.throughput_tps.as_mut().expect("throughput");
    spread.mean *= 0.8;
    if let Some(i) = spread.ci.as_mut().and_then(|c| c.interval.as_mut()) {
        i.low *= 0.8;
        i.high *= 0.8;
    }
    let verdict = check(&rule("throughput < -5%"), &base, &new);
    assert!(matches!(verdict, GateVerdict::Regressed(_)), "{verdict:?}");
    assert!((comparison(&verdict).change + 20.0).abs() < 1e-9);
    assert_eq!(comparison(&verdict).base.of, "rounds");
    let verdict = check(&rule("throughput < -40%"), &base, &new);
    assert!(matches!(verdict, GateVerdict::NoChange(_)), "{verdict:?}");
}

#[test]
fn absent_figures_are_not_compared_and_a_case_left_unfinished_fails() {
    let base = case_with_ttft(100.0);
    let verdict = check(&rule("goodput < -5%"), &base, &base);
    assert_eq!(
        verdict,
        GateVerdict::NotCompared {
            reason: "not compared (absent in BASE)".into()
        },
        "closed rounds have no goodput"
    );
    let mut new = base.clone();
    new.tpot_ms = None;
    let verdict = check(&rule("tpot_p99 > +5%"), &base, &new);
    assert_eq!(
        verdict,
        GateVerdict::NotCompared {
            reason: "not compared (absent in NEW)".into()
        }
    );
    let incomplete = fixture::report().summary.cases[3].clone();
    assert!(!incomplete.complete);
    // Complete in BASE, incomplete in NEW: the new attempt did not finish it, which fails.
    let verdict = check(&rule("ttft_p50 > +10%"), &base, &incomplete);
    assert!(
        matches!(verdict, GateVerdict::Unfinished { .. }),
        "{verdict:?}"
    );
    assert!(verdict.fails(false));
    // Incomplete in BASE: nothing to hold NEW to.
    let verdict = check(&rule("ttft_p50 > +10%"), &incomplete, &base);
    assert_eq!(
        verdict,
        GateVerdict::NotCompared {
            reason: "not compared (incomplete in BASE)".into()
        }
    );
    assert!(!verdict.fails(true));
    // The error rate is what an incomplete case has: it is compared, from a BASE of 0, with
    // Wilson's intervals of both shares.
    let verdict = check(&rule("error_rate > +1pp"), &base, &incomplete);
    assert!(
        matches!(
            verdict,
            GateVerdict::Regressed(_) | GateVerdict::Inconclusive(_)
        ),
        "{verdict:?}"
    );
    assert!(comparison(&verdict).base.interval.is_some());
    let c = comparison(&verdict);
    assert_eq!(c.base.value, 0.0);
    assert!(c.new.value > 0.01);
    let relative = check(&rule("error_rate > +10%"), &base, &incomplete);
    assert!(
        comparison(&relative).change.is_infinite(),
        "any error from 0 is +∞ %"
    );
}

/// The key of a case of 64 input tokens, 4 output, at `concurrency`.
fn key(concurrency: u32) -> CaseKey {
    CaseKey {
        input: LengthKey::fixed(64),
        load: LoadKey::Rounds { concurrency },
        output: LengthKey::fixed(4),
        shared_prefix_tokens: 0,
        prompts: None,
        batch: None,
        images: None,
        models: None,
        api: "llamacpp".into(),
    }
}

#[test]
fn every_rule_is_checked_on_every_case_both_ran_and_one_sided_cases_are_no_checks() {
    let attempt = |cases: Vec<(CaseSummary, u32)>| {
        let mut summary = fixture::report().summary;
        let keys: BTreeMap<String, CaseKey> =
            cases.iter().map(|(c, k)| (c.id.clone(), key(*k))).collect();
        summary.cases = cases.into_iter().map(|(c, _)| c).collect();
        KeyedAttempt { summary, keys }
    };
    let named = |id: &str, ttft| {
        let mut c = case_with_ttft(ttft);
        c.id = id.into();
        c
    };
    let base = attempt(vec![(named("one", 100.0), 1), (named("two", 100.0), 2)]);
    let new = attempt(vec![(named("one", 100.0), 1), (named("three", 300.0), 3)]);
    let rules = [rule("ttft_p50 > +10%"), rule("throughput < -5%")];
    let checks = evaluate(&rules, &[base.clone(), new]);
    assert_eq!(checks.len(), 2, "two rules on the one shared case");
    assert!(checks.iter().all(|c| c.case == "one" && c.new == 1));
    let slow = attempt(vec![(named("one", 200.0), 1), (named("two", 100.0), 2)]);
    let checks = evaluate(&rules, &[base, slow]);
    let failed: Vec<(&str, &str)> = checks
        .iter()
        .filter(|c| matches!(c.verdict, GateVerdict::Regressed(_)))
        .map(|c| (c.case.as_str(), c.rule.text.as_str()))
        .collect();
    assert_eq!(failed, [("one", "ttft_p50 > +10%")]);
    assert_eq!(checks.len(), 4);
}

/// An attempt of one case `case`, keyed at concurrency 1.
fn one_case_attempt(case: CaseSummary) -> KeyedAttempt {
    let mut summary = fixture::report().summary;
    let keys = BTreeMap::from([(case.id.clone(), key(1))]);
    summary.cases = vec![case];
    summary.repeats = None;
    KeyedAttempt { summary, keys }
}

/// [`case_with_ttft`] whose rounds are level (no trend).
fn level_case(ttft_ms: f64) -> CaseSummary {
    let mut c = case_with_ttft(ttft_ms);
    for r in &mut c.rounds {
        r.throughput_tps = 100.0;
        r.complete = true;
    }
    c
}

#[test]
fn a_history_s_spread_keeps_an_identical_pair_s_drift_from_regressing() {
    let limit = [rule("ttft_p50 > +10%")];
    let (base, new) = (
        one_case_attempt(level_case(100.0)),
        one_case_attempt(level_case(115.0)),
    );
    // Alone, two runs of the same server 15 % apart look like a regression.
    let alone = evaluate(&limit, &[base.clone(), new.clone()]);
    assert!(
        matches!(alone[0].verdict, GateVerdict::Regressed(_)),
        "{alone:?}"
    );
    let b = comparison(&alone[0].verdict)
        .between_runs
        .as_ref()
        .expect("said");
    assert_eq!(b.source, drift::Source::Unknown);
    assert!(b.sentence.contains("unknown"), "{}", b.sentence);
    // Four earlier attempts of the same server between 90 and 125 ms: that drift is known,
    // enters the interval, and the same pair no longer regresses.
    let history: Vec<KeyedAttempt> = [90.0, 115.0, 100.0, 125.0]
        .iter()
        .map(|&v| one_case_attempt(level_case(v)))
        .collect();
    let checks = evaluate_with(&limit, &[base.clone(), new.clone()], &history);
    let c = comparison(&checks[0].verdict);
    assert!(!checks[0].verdict.fails(false), "{:?}", checks[0].verdict);
    let b = c.between_runs.as_ref().expect("said");
    assert_eq!((b.source, b.in_interval), (drift::Source::History, true));
    let i = c.interval.expect("an interval");
    assert!(i.low < 10.0, "{i:?}");
    // Under a bound wide enough for that drift, the pair is no change.
    let wide = [rule("ttft_p50 > +150%")];
    let checks = evaluate_with(&wide, &[base, new], &history);
    assert!(
        matches!(checks[0].verdict, GateVerdict::NoChange(_)),
        "{checks:?}"
    );
}

#[test]
fn an_identical_pair_with_a_two_run_history_does_not_regress_and_says_what_it_knows() {
    let limit = [rule("ttft_p50 > +10%"), rule("throughput < -10%")];
    let pair = [
        one_case_attempt(level_case(100.0)),
        one_case_attempt(level_case(100.0)),
    ];
    let history = [
        one_case_attempt(level_case(100.0)),
        one_case_attempt(level_case(130.0)),
    ];
    for check in evaluate_with(&limit, &pair, &history) {
        assert!(!check.verdict.fails(false), "{check:?}");
        let b = comparison(&check.verdict)
            .between_runs
            .as_ref()
            .expect("said");
        assert_eq!(b.source, drift::Source::History, "{check:?}");
    }
}

#[test]
fn rounds_that_slow_steadily_put_their_drift_in_the_interval() {
    let limit = [rule("ttft_p50 > +10%")];
    let mut drifting = level_case(115.0);
    let template = drifting.rounds[0].clone();
    drifting.rounds = (0..8)
        .map(|i| crate::summary::RoundSummary {
            round: i + 1,
            throughput_tps: 100.0 * 0.95f64.powi(i32::try_from(i).expect("small")),
            ..template.clone()
        })
        .collect();
    let base = one_case_attempt(level_case(100.0));
    let checks = evaluate(&limit, &[base.clone(), one_case_attempt(drifting)]);
    let c = comparison(&checks[0].verdict);
    let b = c.between_runs.as_ref().expect("said");
    assert_eq!(b.source, drift::Source::Trend, "{b:?}");
    assert!(
        b.sentence.contains("NEW's rounds drifted"),
        "{}",
        b.sentence
    );
    assert!(!checks[0].verdict.fails(false), "{:?}", checks[0].verdict);
    // The same change on level rounds regresses.
    let checks = evaluate(&limit, &[base, one_case_attempt(level_case(115.0))]);
    assert!(matches!(checks[0].verdict, GateVerdict::Regressed(_)));
}

#[test]
fn a_check_that_passed_never_says_its_rule_cannot_pass() {
    // BASE wide (±15 %), NEW tight and 20 % faster: no change under +10 %, though two copies
    // of BASE could differ by more than 10 %.
    let verdict = check(
        &rule("ttft_p50 > +10%"),
        &case_with(100.0, 15.0),
        &case_with_ttft(80.0),
    );
    assert!(matches!(verdict, GateVerdict::NoChange(_)), "{verdict:?}");
    let c = comparison(&verdict);
    assert!(c.noise_floor.expect("a floor") > 10.0);
    assert!(!c.below_noise);
}

#[test]
fn an_inconclusive_check_counts_what_would_decide_it_and_caps_it() {
    use change::ToDecide;
    let limit = rule("ttft_p50 > +10%");
    // Just short of the bound with wide intervals: no affordable size decides it.
    let verdict = check(&limit, &case_with(100.0, 15.0), &case_with(109.9, 16.5));
    let c = comparison(&verdict);
    assert_eq!(c.to_decide, Some(ToDecide::TooClose), "{c:?}");
    assert_eq!(c.samples_to_decide, None);
    // Far from it: a few times the rounds.
    let verdict = check(&limit, &case_with(100.0, 8.0), &case_with(118.0, 9.44));
    let c = comparison(&verdict);
    assert!(
        matches!(c.to_decide, Some(ToDecide::Rounds { factor }) if factor > 1.0 && factor <= 10.0),
        "{c:?}"
    );
}
