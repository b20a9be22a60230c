//! A fixed, hand-built attempt for the renderers' snapshot tests: four cases of a simulated
//! target, one of them incomplete (a timeout whose message needs escaping), warmups included.
//! No clock is read: every time is written out here.

use crate::attempt::campaign::{Campaign, CampaignCase, CampaignConfig, CampaignTarget, CaseLoad};
use crate::record::{Phase, Phases, Record, Status};
use crate::report::Report;

/// (input tokens, concurrency) of the fixture's cases; 4 output tokens each, 2 rounds.
const CASES: [(u32, u32); 4] = [(64, 1), (64, 2), (256, 1), (256, 2)];

/// The campaign of the fixture.
pub(crate) fn campaign() -> Campaign {
    Campaign {
        schema_version: 1,
        attempt_id: "20250101T000000Z-abcd".into(),
        started_at: Some("2025-01-01T00:00:00Z".into()),
        tool: None,
        time_origin: None,
        config_fingerprint: None,
        host: None,
        merged_from: None,
        config: CampaignConfig {
            rounds: 2,
            ..CampaignConfig::default()
        },
        cases: CASES
            .iter()
            .map(|&(input_tokens, concurrency)| CampaignCase {
                id: format!("in{input_tokens}-c{concurrency}-out4"),
                input_tokens,
                concurrency,
                output_tokens: 4,
                ..CampaignCase::default()
            })
            .collect(),
        target: CampaignTarget {
            url: "http://127.0.0.1:9/<sim>".into(),
            api: crate::api::Api::Llamacpp,
            model: Some("tiny & \"quoted\"".into()),
            simulated: true,
            server: serde_json::Value::Null,
            dropped_fields: Vec::new(),
            replicas: Vec::new(),
        },
    }
}

/// A complete, verified response: 4 tokens, evenly spaced between TTFT and completion.
fn ok(
    case: &str,
    round: Option<u32>,
    index: u32,
    sent_s: f64,
    ttft_ms: f64,
    e2e_ms: f64,
) -> Record {
    let (input_tokens, _) = CASES
        .iter()
        .copied()
        .find(|&(i, c)| format!("in{i}-c{c}-out4") == case)
        .expect("a fixture case");
    let step = (e2e_ms - ttft_ms) / 3.0;
    Record {
        case: case.into(),
        phase: if round.is_some() {
            Phase::Measured
        } else {
            Phase::Warmup
        },
        round,
        index,
        scheduled_s: None,
        sent_s,
        first_token_s: Some(sent_s + ttft_ms / 1e3),
        done_s: Some(sent_s + e2e_ms / 1e3),
        ended_s: None,
        ttft_ms: Some(ttft_ms),
        e2e_ms: Some(e2e_ms),
        input_tokens,
        requested_output_tokens: 4,
        prompt_tokens: Some(input_tokens),
        cached_tokens: Some(0),
        shared_tokens: 0,
        dataset_entry: None,
        output_tokens: Some(4),
        token_events: 4,
        streamed_tokens: 4,
        status: Status::Ok,
        verified: true,
        error_kind: None,
        error: None,
        notes: Vec::new(),
        event_ms: (0..4).map(|k| ttft_ms + step * f64::from(k)).collect(),
        event_tokens: Vec::new(),
        reasoning_tokens: 0,
        answer_ms: None,
        phases: Some(phases(round, index, ttft_ms)),
        request_id: None,
        server_request_id: None,
        server: None,
        shard: None,
        replica: None,
        repeat: None,
        arm: None,
        session: None,
        turn: None,
        turns: None,
        history_tokens: None,
        graph: None,
        canary: None,
        cancel_after: None,
        pooling: None,
        images: None,
        model: None,
    }
}

/// Where the time went: a new connection for the warmup and for the second request of the
/// first round (one connection kept alive per request in flight), the others kept-alive.
fn phases(round: Option<u32>, index: u32, ttft_ms: f64) -> Phases {
    let reused = round.is_some() && !(round == Some(1) && index > 0);
    Phases {
        connect_ms: (!reused).then_some(0.25),
        tls_ms: None,
        write_ms: Some(0.05),
        head_ms: Some(ttft_ms * 0.5),
        first_event_ms: Some(ttft_ms * 0.75),
        reused,
    }
}

/// A request of round 2 of `in256-c2-out4` that timed out after its first token.
fn timed_out() -> Record {
    let mut r = ok("in256-c2-out4", Some(2), 1, 3.0, 80.0, 500.0);
    r.status = Status::Error;
    r.done_s = None;
    r.e2e_ms = None;
    r.output_tokens = None;
    r.token_events = 1;
    r.streamed_tokens = 1;
    r.verified = false;
    r.event_ms.truncate(1);
    r.error_kind = Some(crate::record::ErrorKind::Timeout);
    r.error = Some("no final event within 0.5 s <b>\"slow\", really</b> & gone".into());
    r
}

/// Every record of the fixture, in the order a run would write them.
pub(crate) fn records() -> Vec<Record> {
    vec![
        ok("in64-c1-out4", None, 0, 0.0, 12.0, 30.0),
        ok("in64-c1-out4", Some(1), 0, 0.1, 10.0, 28.0),
        ok("in64-c1-out4", Some(2), 0, 0.2, 11.0, 29.5),
        ok("in64-c2-out4", None, 0, 0.5, 12.0, 30.0),
        ok("in64-c2-out4", Some(1), 1, 0.6, 14.0, 40.0),
        ok("in64-c2-out4", Some(1), 0, 0.6, 12.0, 36.0),
        ok("in64-c2-out4", Some(2), 0, 0.7, 13.0, 37.0),
        ok("in64-c2-out4", Some(2), 1, 0.7, 15.0, 41.0),
        ok("in256-c1-out4", None, 0, 1.0, 40.0, 60.0),
        ok("in256-c1-out4", Some(1), 0, 1.1, 38.0, 57.0),
        ok("in256-c1-out4", Some(2), 0, 1.2, 39.0, 58.0),
        ok("in256-c2-out4", None, 0, 2.0, 40.0, 60.0),
        ok("in256-c2-out4", Some(1), 0, 2.1, 45.0, 70.0),
        ok("in256-c2-out4", Some(1), 1, 2.1, 75.0, 96.0),
        ok("in256-c2-out4", Some(2), 0, 3.0, 46.0, 71.0),
        timed_out(),
    ]
}

/// The fixture's report, recomputed from its records as `llmload report` would.
pub(crate) fn report() -> Report {
    crate::attempt::load::from_records(&campaign(), records(), None)
}

/// The fixture with a mix of two models: each measured request of an odd round + index went to
/// `adapter-a`, the others (warmups included) to `base`.
pub(crate) fn mixed_models() -> Report {
    let records = records()
        .into_iter()
        .map(|mut r| {
            let odd = r.round.is_some_and(|round| (round + r.index) % 2 == 1);
            r.model = Some(if odd { "adapter-a" } else { "base" }.into());
            r
        })
        .collect();
    crate::attempt::load::from_records(&campaign(), records, None)
}

/// (concurrency, TTFT of the first request ms, round duration ms) of the sweep fixture: 8
/// output tokens per request, so 100, 190, 340 and 360 tokens/s: `C_sat` = 4, the cap 3.
const SWEEP: [(u32, f64, f64); 4] = [
    (1, 10.0, 80.0),
    (2, 12.0, 16e3 / 190.0),
    (4, 20.0, 32e3 / 340.0),
    (8, 30.0, 64e3 / 360.0),
];

/// A request of the sweep fixture: 64 prompt tokens, 8 output tokens evenly spaced.
fn sweep_request(
    concurrency: u32,
    round: Option<u32>,
    index: u32,
    sent_s: f64,
    ttft_ms: f64,
    e2e_ms: f64,
) -> Record {
    let mut r = ok("in64-c1-out4", round, index, sent_s, ttft_ms, e2e_ms);
    r.case = format!("in64-c{concurrency}-out8");
    r.requested_output_tokens = 8;
    r.output_tokens = Some(8);
    r.token_events = 8;
    r.streamed_tokens = 8;
    let step = (e2e_ms - ttft_ms) / 7.0;
    r.event_ms = (0..8).map(|k| ttft_ms + step * f64::from(k)).collect();
    r
}

/// A sweep over concurrency 1, 2, 4, 8 (one round each) on two GPUs whose replayed telemetry
/// crosses the 90 °C stop threshold at 1.5 s, before the fifth load (16) started.
pub(crate) fn sweep_report() -> Report {
    let mut campaign = campaign();
    campaign.attempt_id = "20250101T000000Z-5eep".into();
    campaign.config.rounds = 1;
    campaign.config.limits.stop_temp_c = Some(90.0);
    campaign.cases = [1, 2, 4, 8, 16]
        .iter()
        .map(|&c| CampaignCase {
            id: format!("in64-c{c}-out8"),
            input_tokens: 64,
            concurrency: c,
            output_tokens: 8,
            load: Some(CaseLoad::Rounds { rounds: 1 }),
            ..CampaignCase::default()
        })
        .collect();
    let mut records = Vec::new();
    for (k, &(c, ttft_ms, round_ms)) in SWEEP.iter().enumerate() {
        let start = 0.1 + 0.3 * k as f64;
        records.push(sweep_request(c, None, 0, start, 10.0, 80.0));
        for i in 0..c {
            // Later requests of the round wait behind earlier prefills; the last ends the round.
            let ttft = ttft_ms * (1.0 + f64::from(i) / 2.0);
            let e2e = round_ms - f64::from(c - 1 - i) * 2.0;
            records.push(sweep_request(c, Some(1), i, start + 0.1, ttft, e2e));
        }
    }
    let first = crate::attempt::load::from_records(&campaign, records.clone(), None);
    let mut previous = first.summary;
    // The run closed every case it wrote: rebuilt alone, the last would be unclosed.
    for case in &mut previous.cases {
        if case.incomplete_reason.take().is_some() {
            case.complete = true;
        }
    }
    previous.sweep = Some(crate::summary::sweep::SweepSection {
        axis: crate::summary::sweep::Axis::Concurrency,
        stop_rules: crate::summary::sweep::StopRules {
            min_gain: 0.05,
            ..crate::summary::sweep::StopRules::default()
        },
        stopped_because: None,
        refinement: None,
        analysis: crate::summary::saturation::analyse(
            &[],
            &crate::workload::shape::Slo::default(),
            crate::summary::saturation::Shape::Rounds,
        ),
    });
    let telemetry = readings();
    let stop = telemetry.last().cloned();
    previous.outcome = crate::summary::Outcome::new(
        &previous.cases,
        5,
        crate::summary::RunState::Ended {
            stop: Some("stopped by the temperature rule at telemetry: GPU 0 reached 90 °C, at or above the harness's stop threshold of 90 °C".into()),
            failure: None,
        },
    );
    previous.outcome.stop_sample = stop.and_then(|s| serde_json::to_value(s).ok());
    let mut report = crate::attempt::load::from_records(&campaign, records, Some(&previous));
    report.telemetry = telemetry;
    report
}

/// Two GPUs every 0.25 s for 1.5 s: GPU 0 warms from 70 to 90 °C, GPU 1 runs 6 °C cooler; the
/// stop sample (GPU 0 at 90 °C) comes last.
fn readings() -> Vec<crate::telemetry::Reading> {
    let mut out = Vec::new();
    for step in 0..=6u32 {
        let t_s = f64::from(step) * 0.25;
        for gpu in [1u32, 0] {
            out.push(crate::telemetry::Reading {
                t_s,
                gpu,
                temperature_c: 70.0 + 20.0 * t_s / 1.5 - 6.0 * f64::from(gpu),
                margin_c: Some(15.0 - 10.0 * t_s),
                power_w: Some(240.0 + 40.0 * t_s - 30.0 * f64::from(gpu)),
                power_limit_w: Some(300.0),
                sm_clock_mhz: None,
                mem_clock_mhz: None,
                utilization_pct: Some(97.0),
                memory_used_mib: None,
                sw_thermal_slowdown: Some(false),
                hw_thermal_slowdown: Some(false),
                sw_power_cap: Some(step > 3),
            });
        }
    }
    out
}

/// A reading with only the required fields.
pub(crate) fn reading() -> crate::telemetry::Reading {
    crate::telemetry::Reading {
        t_s: 0.0,
        gpu: 0,
        temperature_c: 60.0,
        margin_c: None,
        power_w: None,
        power_limit_w: None,
        sm_clock_mhz: None,
        mem_clock_mhz: None,
        utilization_pct: None,
        memory_used_mib: None,
        sw_thermal_slowdown: None,
        hw_thermal_slowdown: None,
        sw_power_cap: None,
    }
}

/// The window figures of an open loop at 20 requests/s of `responses` responses in 1 s.
pub(crate) fn open_loop(responses: u32) -> crate::summary::window::LoadSummary {
    serde_json::from_value(serde_json::json!({
        "shape": "poisson", "nominal_rate_rps": 20.0, "window_s": [0.0, 1.0],
        "requests_launched": responses, "completed_rps": responses,
        "throughput_tps": 4 * responses,
        "achieved_concurrency_mean": 1.0, "achieved_concurrency_peak": 2
    }))
    .expect("a load summary")
}

/// The fixture with a mix in its first case, as `--input-tokens choice:64,128` and outputs of
/// 8, 9, 10, …: its records alternate 64 and 128 prompt tokens, its summary says their mean.
pub(crate) fn mixed_lengths() -> Report {
    let mut report = report();
    let id = report.summary.cases[0].id.clone();
    let records = report.records.iter_mut().filter(|r| r.case == id);
    for (i, r) in records.enumerate() {
        r.input_tokens = if i % 2 == 0 { 64 } else { 128 };
        r.requested_output_tokens = 8 + u32::try_from(i).expect("a few records");
    }
    report.summary.cases[0].input_tokens = 96;
    report
}
