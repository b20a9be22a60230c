//! The page in every format: the same sections in the same order, and nothing from outside
//! written raw.

use crate::report::{html, markdown, sections, terminal, Report};
use crate::stats::Distribution;
use crate::summary::abandoned::{Abandonment, Others};
use crate::summary::energy::{Energy, GpuEnergy};
use crate::summary::server_side::{ServerSideSummary, TtftParts};
use crate::summary::sessions::{SessionSummary, TurnSummary};
use crate::summary::soak;
use crate::summary::PrefixCache;
use crate::summary::Reasoning;

fn one(v: f64) -> Option<Distribution> {
    Distribution::from_samples(&mut [v])
}

/// The fixture with something for every section: a mix of models, a sweep, repeats, a soak
/// series, energy, a shared prompt, reasoning, abandoned streams, the server's timings, shards
/// and multi-turn sessions.
#[expect(clippy::too_many_lines, reason = "a fixture of every section")]
fn every_section() -> Report {
    let mut report = crate::fixture::report();
    let models = crate::fixture::mixed_models().summary;
    let sweep = crate::fixture::sweep_report().summary;
    let summary = &mut report.summary;
    summary.cases[0].models = models.cases[0].models.clone();
    summary.sweep = sweep.sweep;
    summary.capacity = Some(crate::report::capacity::example());
    let case = summary.cases[0].clone();
    summary.repeats = Some(crate::summary::repeats::Series {
        planned: 2,
        complete: vec![1],
        incomplete: vec![crate::summary::repeats::Incomplete {
            repeat: 2,
            reason: "stopped".into(),
            through: None,
        }],
        runs: vec![crate::summary::repeats::RepeatRun {
            repeat: 1,
            complete: true,
            cases: vec![case],
        }],
        between: Vec::new(),
    });
    let first = &mut summary.cases[0];
    first.counts.unverified = 1;
    first.series = Some(soak::Series {
        window_s: 10.0,
        windows: vec![soak::SeriesWindow {
            index: 0,
            span_s: [0.0, 10.0],
            full: true,
            requests: 3,
            ok: 3,
            errors: 0,
            cancelled: 0,
            throughput_tps: 12.0,
            ttft_ms: one(20.0),
            gpu: None,
        }],
        drift: None,
        drift_statement: "One window: no drift to tell.".into(),
    });
    first.energy = Some(Energy {
        window_s: 10.0,
        output_tokens: 120,
        tokens_verified: true,
        gpus: vec![GpuEnergy {
            gpu: 0,
            joules: 1_000.0,
            readings: 20,
        }],
        total_j: Some(1_000.0),
        mean_power_w: Some(100.0),
        output_tokens_per_joule: Some(0.12),
        responses: 12,
        joules_per_request: Some(1_000.0 / 12.0),
        method: Some("trapezoidal".into()),
        unavailable: None,
    });
    first.prefix_cache = Some(PrefixCache {
        shared_tokens: 32,
        n: 3,
        cached_tokens: 64,
        hit_rate: 64.0 / 96.0,
        responses_hit: 2,
    });
    first.reasoning = Some(Box::new(Reasoning {
        responses: 2,
        tokens: one(40.0),
        time_to_answer_ms: one(80.0),
    }));
    let others = || Others {
        n: 1,
        ttft_ms: one(20.0),
        tpot_ms: one(2.0),
    };
    first.abandoned = Some(Box::new(Abandonment {
        after: crate::record::CancelAfter::Tokens(2),
        planned: 1,
        abandoned: 1,
        ended_first: 0,
        tokens_received: 2,
        closed_at_ms: one(30.0),
        during: others(),
        clear: others(),
        partial: None,
        others_generated_tokens: 0,
    }));
    first.server = Some(Box::new(ServerSideSummary {
        responses: 3,
        sources: vec![crate::record::TimingSource::Vllm],
        ttft_exceeds_client: 0,
        queue_ms: one(0.5),
        prefill_ms: one(20.0),
        ttft_ms: one(20.5),
        decode_ms: one(100.0),
        delivery_ms: one(4.0),
        ttft_parts: Some(TtftParts::example()),
        speculative: None,
        pace: None,
    }));
    let sessions = &mut summary.cases[2];
    sessions.sessions = Some(Box::new(SessionSummary {
        turns: 2,
        rate_rps: None,
        started: 2,
        completed: 2,
        incomplete: 0,
        incomplete_sessions: Vec::new(),
        duration_s: one(3.5),
        active_s: one(1.25),
        prompt_tokens: one(300.0),
        output_tokens: one(16.0),
        graph: None,
        by_turn: vec![TurnSummary {
            turn: 1,
            n: 2,
            ttft_ms: one(40.0),
            prompt_tokens: one(200.0),
            history_tokens: None,
            cache_n: 2,
            cached_tokens: 0,
            hit_rate: Some(0.0),
        }],
    }));
    summary.shard = Some(sweep_shard());
    summary.ab = Some(ab_section(&summary.cases[0]));
    report
}

/// `llmload ab`'s section over three pairs whose blocks are all `block`.
fn ab_section(block: &crate::summary::CaseSummary) -> crate::summary::ab::AbSection {
    use crate::compare::paired::section::{ab_case, checks, CaseBlocks};
    use crate::record::Arm::{A, B};
    let order = [[A, B], [B, A], [A, B]];
    let blocks = [CaseBlocks {
        case: &block.id,
        order: &order,
        pairs: vec![(Some(block), Some(block)); 3],
    }];
    let rules = [("ttft_p50 > +10%").parse().expect("a rule")];
    crate::summary::ab::AbSection {
        base_url: "http://a".into(),
        candidate_url: "http://b".into(),
        candidate_differs: vec!["model <b>".into()],
        seed: 1,
        block_rounds: 1,
        blocks: "blocks of 1 round".into(),
        level: 0.95,
        cases: vec![ab_case(&blocks[0], 0.95)],
        checks: checks(&rules, &blocks, 0.95),
        fail_on_inconclusive: false,
    }
}

/// A shard's own attempt: which part of which attempt it is.
fn sweep_shard() -> crate::summary::shards::ShardRun {
    crate::summary::shards::ShardRun {
        index: 0,
        count: 2,
        attempt_id: "20250101T000000Z-all".into(),
        config_fingerprint: "0123456789abcdef".into(),
        seed: 7,
        start_at: None,
        start: None,
        arrivals: Some(10),
        streams: None,
        clock: crate::summary::shards::ClockOffset {
            method: "none".into(),
            offset_ms: None,
            uncertainty_ms: None,
            polls: 0,
            note: Some("not estimated".into()),
        },
    }
}

/// The headings of a terminal page: each line underlined by the next.
fn terminal_headings(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| !w[1].is_empty() && w[1].chars().all(|c| c == '─'))
        .map(|w| w[0].to_owned())
        .collect()
}

#[test]
fn every_format_shows_the_same_sections_in_the_same_order() {
    let report = every_section();
    let page = sections(&report);
    let ids: Vec<&str> = page.iter().map(|s| s.id).collect();
    assert_eq!(
        ids,
        [
            "target",
            "outcome",
            "ab",
            "results",
            "incomplete",
            "notes",
            "models",
            "repeats",
            "sweep",
            "capacity",
            "soak",
            "energy",
            "prefix-cache",
            "reasoning",
            "abandoned",
            "phases",
            "server",
            "shards",
            "charts"
        ],
        "every section is in the fixture"
    );
    let headings: Vec<String> = page.iter().map(|s| s.heading.clone()).collect();

    let html = html::write(&report, &page);
    let html_ids: Vec<&str> = html
        .split("<section id=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    assert_eq!(html_ids, ids);

    let markdown = markdown::write(&page);
    let markdown_headings: Vec<String> = markdown
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(str::to_owned)
        .collect();
    assert_eq!(markdown_headings, headings);

    let terminal = terminal::write(&page, 100);
    assert_eq!(terminal_headings(&terminal), headings);
}

#[test]
fn an_incomplete_case_with_ok_responses_keeps_its_partial_figures_in_every_format() {
    let report = every_section();
    let case = report
        .summary
        .cases
        .iter()
        .find(|c| !c.complete && c.counts.ok > 0)
        .expect("the fixture's incomplete case got ok responses");
    let line = crate::report::partial::partial_figures(case).expect("its partial figures");
    assert!(line.contains("partial figures over its"), "{line}");
    let page = sections(&report);
    let markdown = markdown::write(&page);
    let incomplete = &markdown[markdown.find("## Incomplete cases").expect("the section")..];
    assert!(
        incomplete.contains("### What they measured before they stopped"),
        "{markdown}"
    );
    assert!(incomplete.contains(&line), "{markdown}");
    assert!(html::write(&report, &page).contains(&line));
    assert!(terminal::write(&page, 200).contains(&line));
}

#[test]
fn a_completed_sessions_run_has_its_results() {
    let mut report = every_section();
    report.summary.cases.retain(|c| c.sessions.is_some());
    let markdown = markdown::write(&sections(&report));
    assert!(!markdown.contains("No case completed"), "{markdown}");
    let results = &markdown[markdown.find("## Results").expect("results")..];
    assert!(results.contains("### Multi-turn sessions"), "{markdown}");
    assert!(
        results.contains("2 sessions of 2 turns started, 2 complete"),
        "{markdown}"
    );
}

#[test]
fn text_from_outside_reaches_no_format_raw() {
    let hostile =
        "m\u{1b}]0;owned\u{7}\u{202e}x\u{200b}\u{200d}\u{2060}\u{feff}<script>alert(1)</script>";
    let mut report = every_section();
    report.summary.model = Some(hostile.into());
    report.summary.cases[3].first_error = Some(format!("http 500: {hostile}"));
    for record in &mut report.records {
        if record.error.is_some() {
            record.error = Some(hostile.into());
        }
    }
    let page = sections(&report);
    let outputs = [
        ("html", html::write(&report, &page)),
        ("markdown", markdown::write(&page)),
        ("terminal", terminal::write(&page, 100)),
    ];
    for (format, text) in &outputs {
        for raw in [
            '\u{1b}', '\u{7}', '\u{202e}', '\u{200b}', '\u{200d}', '\u{2060}', '\u{feff}',
        ] {
            assert!(!text.contains(raw), "{format}: {raw:?} raw");
        }
        assert!(
            text.contains("\\u{1b}]0;owned\\u{7}\\u{202e}x"),
            "{format}: written out"
        );
    }
    assert!(!outputs[0].1.contains("<script>"), "html");
    assert!(outputs[0].1.contains("&lt;script&gt;alert(1)"), "html");
    assert!(
        !outputs[1].1.replace("\\<", "").contains("<script>"),
        "markdown"
    );
    assert!(outputs[1].1.contains("\\<script>alert(1)"), "markdown");
}
