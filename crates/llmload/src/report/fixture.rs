//! A fixed, hand-built attempt for the renderers' snapshot tests: four cases of a simulated
//! target, one of them incomplete (a timeout whose message needs escaping), warmups included.
//! No clock is read: every time is written out here.

use crate::record::{Phase, Record, Status};
use crate::report::load::{Campaign, CampaignCase, CampaignConfig, CampaignTarget, Report};

/// (input tokens, concurrency) of the fixture's cases; 4 output tokens each, 2 rounds.
const CASES: [(u32, u32); 4] = [(64, 1), (64, 2), (256, 1), (256, 2)];

/// The campaign of the fixture.
pub fn campaign() -> Campaign {
    Campaign {
        schema_version: 1,
        attempt_id: "20250101T000000Z-abcd".into(),
        started_at: Some("2025-01-01T00:00:00Z".into()),
        config: CampaignConfig { rounds: 2 },
        cases: CASES
            .iter()
            .map(|&(input_tokens, concurrency)| CampaignCase {
                id: format!("in{input_tokens}-c{concurrency}-out4"),
                input_tokens,
                concurrency,
                output_tokens: 4,
            })
            .collect(),
        target: CampaignTarget {
            url: "http://127.0.0.1:9/<sim>".into(),
            api: "llamacpp".into(),
            model: Some("tiny & \"quoted\"".into()),
            simulated: true,
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
        ttft_ms: Some(ttft_ms),
        e2e_ms: Some(e2e_ms),
        input_tokens,
        requested_output_tokens: 4,
        prompt_tokens: Some(input_tokens),
        cached_tokens: Some(0),
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
    r.error_kind = Some("timeout".into());
    r.error = Some("no final event within 0.5 s <b>\"slow\", really</b> & gone".into());
    r
}

/// Every record of the fixture, in the order a run would write them.
pub fn records() -> Vec<Record> {
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
pub fn report() -> Report {
    Report::from_records(&campaign(), records(), None)
}
