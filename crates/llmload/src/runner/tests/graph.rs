//! Session graphs (`--dag`) under the paused clock: fan-out calls go together, each dependent
//! call goes exactly its wait after the last of its parents ends, each prompt extends its
//! context's, and a failed call ends its session.

use super::*;
use crate::workload::graph::{self, GraphReplay};

/// A session: a root of 8 tokens, three calls after it (a 100 ms wait, each extending the
/// root's context by 4 tokens), and a final call after all three (200 ms, on the root's
/// context); every answer 4 tokens.
fn fan(session: &str) -> String {
    let call = |call: &str, rest: &str, new: u32| {
        format!(
            "{{\"session\": \"{session}\", \"call\": \"{call}\", \"new_tokens\": {new}, \
             \"output_tokens\": 4{rest}}}\n"
        )
    };
    let mut text = call("root", "", 8);
    for k in 1..=3 {
        text += &call(
            &format!("sub{k}"),
            ", \"after\": [\"root\"], \"wait_ms\": 100, \"context\": \"root\"",
            4,
        );
    }
    text + &call(
        "final",
        ", \"after\": [\"sub1\", \"sub2\", \"sub3\"], \"wait_ms\": 200, \"context\": \"root\"",
        4,
    )
}

/// A case of the graph `text`'s sessions, `concurrency` at a time, placeholder answers.
fn graph_plan(text: &str, concurrency: u32, scale: f64) -> CasePlan {
    let parsed = graph::parse(text).expect("a graph");
    let replay = GraphReplay {
        file: "fan.jsonl".into(),
        sessions: parsed.sessions.len(),
        calls: parsed.calls(),
        graph: parsed,
        time_scale: scale,
        max_wait_ms: None,
    };
    let spec = SessionSpec {
        turns: replay.graph.most_calls(),
        turn_input: None,
        think: Think::default(),
        history: History::Placeholder,
        stagger: false,
    };
    plan(
        concurrency,
        Shape::Sessions {
            process: None,
            rate_rps: None,
            bound: Bound::Requests(replay.sessions as u64),
            spec,
            graph: Some(Arc::new(replay)),
        },
    )
}

#[tokio::test(start_paused = true)]
async fn fan_out_calls_go_together_and_each_waits_for_its_last_parent() {
    let rig = Rig::new();
    let fake = Arc::new(Fake::new(ms(10_000), |_| Script::lasting(100, 4)));
    let plan = graph_plan(&(fan("a") + &fan("b")), 2, 1.0);
    let mut runner = rig.runner(&fake, Limits::default());
    let origin = runner.origin;
    let run = runner.run_case(&plan, 0).await.expect("the case");
    // Two sessions side by side: the roots at 0 (100 ms each), the three calls of each 100 ms
    // after (at 200, ending at 300), the final calls 200 ms after the last of them (500).
    let mut sent = sends(&fake, origin);
    sent.sort();
    let want: Vec<Duration> = [0, 0, 200, 200, 200, 200, 200, 200, 500, 500]
        .map(ms)
        .into();
    assert_eq!(sent, want);
    assert_eq!(Instant::now() - origin, ms(600));
    assert_eq!(fake.most_in_flight(), 6);
    let records = rig.records();
    assert_eq!(records.len(), 10);
    for r in &records {
        let g = r.graph.as_ref().expect("a graph call");
        let (sent, scheduled) = match g.call.as_str() {
            "root" => (0, None),
            "final" => (500, Some(500)),
            _ => (200, Some(200)),
        };
        assert_eq!(
            (r.sent_s, r.scheduled_s),
            (s(sent), scheduled.map(s)),
            "{g:?}"
        );
        assert_eq!(r.status, Status::Ok);
        assert_eq!(g.final_answer, g.call == "final");
        // The root's 8 tokens and its 4-token answer are the context of every other call, each
        // adding its own 4.
        let (history, input) = if g.call == "root" { (0, 8) } else { (12, 16) };
        assert_eq!(
            (r.history_tokens, r.input_tokens),
            (Some(history), input),
            "{g:?}"
        );
        assert_eq!(r.turns, Some(5));
    }
    let sessions: std::collections::BTreeSet<(Option<u64>, &str)> = records
        .iter()
        .map(|r| {
            (
                r.session,
                r.graph.as_ref().map_or("", |g| g.session.as_str()),
            )
        })
        .collect();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert!(!run.stopped);
}

#[tokio::test(start_paused = true)]
async fn waits_scale_and_a_failed_call_ends_its_session() {
    let rig = Rig::new();
    // The second call (the first of the three) fails at once; the other two go on.
    let fake = Arc::new(Fake::new(ms(10_000), |n| {
        if n == 1 {
            Script::http_error(10, 500)
        } else {
            Script::lasting(100, 4)
        }
    }));
    let plan = graph_plan(&fan("a"), 1, 0.5);
    let mut runner = rig.runner(&fake, Limits::default());
    let origin = runner.origin;
    runner.run_case(&plan, 0).await.expect("the case");
    // Half the waits: the three at 150 ms; no final call.
    let want: Vec<Duration> = [0, 150, 150, 150].map(ms).into();
    assert_eq!(sends(&fake, origin), want);
    let records = rig.records();
    assert_eq!(records.len(), 4);
    assert_eq!(records.iter().filter(|r| r.status == Status::Ok).count(), 3);
    assert!(records
        .iter()
        .all(|r| r.graph.as_ref().is_some_and(|g| g.call != "final")));
}
