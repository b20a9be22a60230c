//! The runner's load shapes against a scripted transport, under tokio's paused clock: every
//! instant is exact, so the tests compare schedules and counts to the millisecond, and run in
//! no time at all.

mod fake;
mod graph;
mod mix;

use super::*;
use crate::api::client::{Endpoint, Failure, TlsOptions};
use crate::api::Api;
use crate::attempt::records::read_records;
use crate::guard::{Limits, Rule, StopVerdict};
use crate::progress::Progress;
use crate::record::{Record, Status};
use crate::runner::pacer::PacerClock;
use crate::summary::window;
use crate::workload::length::Length;
use crate::workload::schedule::Process;
use crate::workload::session::{History, SessionSpec, Think};
use crate::workload::shape::Case;
use fake::{Fake, Script};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A target that is never reached, its prompts, and a folder for `requests.jsonl`.
struct Rig {
    dir: tempfile::TempDir,
    target: Target,
    prompts: PromptSource,
}

impl Rig {
    fn new() -> Rig {
        Rig::on(Api::Llamacpp)
    }

    /// A rig whose requests are of `api`.
    fn on(api: Api) -> Rig {
        let endpoint = Endpoint::build(
            "http://127.0.0.1:9",
            api,
            (Duration::from_secs(600), Duration::from_secs(5)),
            None,
            &[],
            &TlsOptions::default(),
        )
        .expect("an endpoint");
        Rig {
            dir: tempfile::tempdir().expect("a folder"),
            target: Target {
                endpoint,
                model: None,
                server: serde_json::json!({}),
                extra_body: None,
                drop_fields: Vec::new(),
                dropped_note: None,
                replicas: Vec::new(),
            },
            prompts: PromptSource::of_tokens((1..=256).collect()),
        }
    }

    /// A runner whose requests go to `fake`, its time origin now.
    fn runner(&self, fake: &Arc<Fake>, limits: Limits) -> Runner<'_> {
        let settings = RunSettings {
            seed: 7,
            pacer: PacerClock::Runtime,
            ..RunSettings::default()
        };
        self.runner_with(fake, limits, settings)
    }

    /// As [`Rig::runner`], with `settings`.
    fn runner_with(&self, fake: &Arc<Fake>, limits: Limits, settings: RunSettings) -> Runner<'_> {
        let origin = Instant::now();
        let cancel = CancellationToken::new();
        let guard = Arc::new(Guard::new(limits, origin, cancel.clone()));
        let sink = RecordSink::create(&self.dir.path().join("requests.jsonl")).expect("the sink");
        let transport: Arc<dyn Transport> = fake.clone();
        Runner::new(
            (&self.target, &self.prompts),
            transport,
            sink,
            (origin, cancel, guard),
            Progress::off(),
            settings,
        )
    }

    fn records(&self) -> Vec<Record> {
        read_records(&self.dir.path().join("requests.jsonl")).expect("the records")
    }
}

/// A case of 8-token prompts and 4-token outputs.
fn plan(concurrency: u32, shape: Shape) -> CasePlan {
    CasePlan {
        case: Case {
            id: "in8-out4".into(),
            input_tokens: 8,
            concurrency,
            output_tokens: 4,
            batch: None,
            images: None,
        },
        input: Length::Fixed(8),
        output: Length::Fixed(4),
        shape,
        warmup_time: Duration::ZERO,
        warmup_launches: 0,
        stage: None,
    }
}

/// Each call's send, from `origin`.
fn sends(fake: &Fake, origin: Instant) -> Vec<Duration> {
    fake.calls().iter().map(|c| c.sent - origin).collect()
}

/// Seconds from the origin, as records write them.
fn s(n: u64) -> f64 {
    ms(n).as_secs_f64()
}

fn statuses(records: &[Record]) -> Vec<Status> {
    records.iter().map(|r| r.status).collect()
}

#[tokio::test(start_paused = true)]
async fn warmups_go_one_at_a_time_and_each_round_starts_when_the_last_one_ends() {
    let rig = Rig::new();
    // The n-th request takes 20·(n+1) ms.
    let fake = Arc::new(Fake::new(ms(10_000), |n| {
        Script::lasting(20 * (n as u64 + 1), 4)
    }));
    let mut runner = rig.runner(&fake, Limits::default());
    let origin = runner.origin;
    let plan = plan(3, Shape::Rounds { rounds: 2 });
    let run = runner.run_case(&plan, 2).await.expect("the case");
    // Warmups at 0 (20 ms) and 20 (40 ms); round 1's three at 60, the last of them (100 ms)
    // ending at 160, when round 2's three go; its last (160 ms) ends at 320.
    let want: Vec<Duration> = [0, 20, 60, 60, 60, 160, 160, 160].map(ms).into();
    assert_eq!(sends(&fake, origin), want);
    assert_eq!(Instant::now() - origin, ms(320));
    assert_eq!(fake.most_in_flight(), 3);
    let records = rig.records();
    assert_eq!(records.len(), 8);
    let phases: Vec<(Phase, Option<u32>)> = records.iter().map(|r| (r.phase, r.round)).collect();
    assert_eq!(&phases[..2], [(Phase::Warmup, None); 2]);
    let mut rounds: Vec<Option<u32>> = phases[2..].iter().map(|p| p.1).collect();
    rounds.sort_unstable();
    assert_eq!(rounds, [1, 1, 1, 2, 2, 2].map(Some));
    assert!(records.iter().all(|r| r.status == Status::Ok && r.verified));
    assert!(!run.stopped);
    assert_eq!(run.figures.requests(), 6);
}

/// Five arrivals at 8/s (125 ms apart), each request taking `lasting` ms, at most `cap` in flight.
async fn open_loop(cap: Option<u32>, lasting: u64) -> (Rig, Arc<Fake>, Instant, CaseRun) {
    let rig = Rig::new();
    let fake = Arc::new(Fake::new(ms(10_000), move |_| Script::lasting(lasting, 4)));
    let plan = plan(
        cap.unwrap_or(0),
        Shape::Open {
            process: Process::Constant,
            rate_rps: 8.0,
            bound: Bound::Requests(5),
            max_in_flight: cap,
        },
    );
    let (origin, run) = {
        let mut runner = rig.runner(&fake, Limits::default());
        let run = runner.run_case(&plan, 0).await.expect("the case");
        (runner.origin, run)
    };
    (rig, fake, origin, run)
}

#[tokio::test(start_paused = true)]
async fn an_open_loop_sends_each_request_at_its_scheduled_instant() {
    let (rig, fake, origin, run) = open_loop(None, 200).await;
    // The clock starts LEAD (2 ms) after the first request is ready.
    let want: Vec<Duration> = [2, 127, 252, 377, 502].map(ms).into();
    assert_eq!(sends(&fake, origin), want);
    // Arrivals do not wait for earlier requests: two overlap at times.
    assert_eq!(fake.most_in_flight(), 2);
    let records = rig.records();
    assert_eq!(records.len(), 5);
    for r in &records {
        assert_eq!(r.scheduled_s, Some(r.sent_s), "no send lag");
        assert_eq!(r.status, Status::Ok);
    }
    // The window runs from the start to the last arrival.
    assert_eq!(run.window, Some((s(2), s(502))));
    assert!(!run.stopped);
}

#[tokio::test(start_paused = true)]
async fn under_the_in_flight_cap_a_request_is_sent_late_by_exactly_its_wait() {
    let (rig, fake, origin, _) = open_loop(Some(1), 200).await;
    // One at a time, 200 ms each: each waits for the one before it to end.
    let want: Vec<Duration> = [2, 202, 402, 602, 802].map(ms).into();
    assert_eq!(sends(&fake, origin), want);
    assert_eq!(fake.most_in_flight(), 1);
    let mut records = rig.records();
    records.sort_by(|a, b| a.sent_s.total_cmp(&b.sent_s));
    let lags: Vec<(Option<f64>, f64)> = records.iter().map(|r| (r.scheduled_s, r.sent_s)).collect();
    // Scheduled every 125 ms from 2; sent late by 0, 75, 150, 225 and 300 ms.
    let want: Vec<(Option<f64>, f64)> = [(2, 2), (127, 202), (252, 402), (377, 602), (502, 802)]
        .iter()
        .map(|&(at, sent)| (Some(s(at)), s(sent)))
        .collect();
    assert_eq!(lags, want);
}

#[tokio::test(start_paused = true)]
async fn a_closed_continuous_loop_keeps_c_in_flight_until_its_duration() {
    let rig = Rig::new();
    let fake = Arc::new(Fake::new(ms(10_000), |_| Script::lasting(40, 4)));
    let plan = plan(
        2,
        Shape::ClosedContinuous {
            bound: Bound::Duration(ms(100)),
        },
    );
    let mut runner = rig.runner(&fake, Limits::default());
    let origin = runner.origin;
    let run = runner.run_case(&plan, 0).await.expect("the case");
    // Two at once, a new one the moment one ends, none at or after 100 ms.
    let want: Vec<Duration> = [0, 0, 40, 40, 80, 80].map(ms).into();
    assert_eq!(sends(&fake, origin), want);
    assert_eq!(fake.most_in_flight(), 2);
    // The last two are drained: they end at 120.
    assert_eq!(Instant::now() - origin, ms(120));
    let records = rig.records();
    assert_eq!(records.len(), 6);
    assert!(records
        .iter()
        .all(|r| r.phase == Phase::Measured && r.status == Status::Ok));
    assert_eq!(run.window, Some((s(0), s(100))));
    assert!(!run.stopped);
}

#[tokio::test(start_paused = true)]
async fn a_stop_mid_round_records_what_was_in_flight_as_cancelled_and_leaves_the_case_incomplete() {
    let rig = Rig::new();
    let fake = Arc::new(Fake::new(ms(10_000), |_| Script::lasting(100, 4)));
    let plan = plan(2, Shape::Rounds { rounds: 3 });
    let mut runner = rig.runner(&fake, Limits::default());
    let origin = runner.origin;
    let guard = runner.guard.clone();
    // A stop (as Ctrl-C makes one) at 150 ms, in round 2.
    let stop = tokio::spawn(async move {
        tokio::time::sleep(ms(150)).await;
        guard.trip(StopVerdict {
            rule: Rule::Interrupted,
            reason: "interrupted by a test".into(),
            sample: None,
            at: "signal".into(),
        });
    });
    let run = runner.run_case(&plan, 0).await.expect("the case");
    stop.await.expect("the stop");
    // Round 1 at 0, round 2 at 100, stopped at 150; no round 3.
    let want: Vec<Duration> = [0, 0, 100, 100].map(ms).into();
    assert_eq!(sends(&fake, origin), want);
    let ended: Vec<(Duration, Option<Failure>)> = fake
        .calls()
        .iter()
        .map(|c| (c.ended - origin, c.failure.clone()))
        .collect();
    let cancelled = Some(Failure::Cancelled);
    let want = [
        (100, None),
        (100, None),
        (150, cancelled.clone()),
        (150, cancelled),
    ];
    assert_eq!(ended, want.map(|(t, f)| (ms(t), f)));
    let records = rig.records();
    assert_eq!(
        statuses(&records),
        [Status::Ok, Status::Ok, Status::Cancelled, Status::Cancelled]
    );
    assert!(records[2..].iter().all(|r| r.round == Some(2)));
    assert!(run.stopped);
    assert!(!window::summarise(&plan, run, &[]).complete);
}

#[tokio::test(start_paused = true)]
async fn the_guard_stops_the_run_at_max_errors_and_cancels_what_is_in_flight() {
    let rig = Rig::new();
    // Every request fails after 10 ms, but the second, which hangs.
    let fake = Arc::new(Fake::new(ms(10_000), |n| {
        if n == 1 {
            Script::hang(5)
        } else {
            Script::http_error(10, 503)
        }
    }));
    let plan = plan(
        2,
        Shape::ClosedContinuous {
            bound: Bound::Requests(20),
        },
    );
    let limits = Limits {
        max_errors: Some(2),
        ..Limits::default()
    };
    let mut runner = rig.runner(&fake, limits);
    let origin = runner.origin;
    let run = runner.run_case(&plan, 0).await.expect("the case");
    // The first fails at 10 and the third goes; its failure at 20 is the second: the guard
    // fires, the hanging one is cancelled then, and nothing more is sent.
    assert_eq!(fake.made(), 3);
    let want: Vec<Duration> = [0, 0, 10].map(ms).into();
    assert_eq!(sends(&fake, origin), want);
    assert_eq!(fake.calls()[1].ended - origin, ms(20));
    assert_eq!(
        statuses(&rig.records()),
        [Status::Error, Status::Error, Status::Cancelled]
    );
    assert_eq!(runner.guard.verdict().map(|v| v.rule), Some(Rule::Errors));
    assert!(run.stopped);
}

/// A closed case of `sessions` sessions of `turns` turns (4-token turn inputs, placeholder
/// history), `concurrency` side by side, with a fixed think time.
fn sessions_plan(
    concurrency: u32,
    turns: u32,
    think: Duration,
    stagger: bool,
    sessions: u64,
) -> CasePlan {
    let spec = SessionSpec {
        turns,
        turn_input: Some(4),
        think: Think::Fixed(think),
        history: History::Placeholder,
        stagger,
    };
    plan(
        concurrency,
        Shape::Sessions {
            process: None,
            rate_rps: None,
            bound: Bound::Requests(sessions),
            spec,
            graph: None,
        },
    )
}

#[tokio::test(start_paused = true)]
async fn a_session_sends_each_turn_after_the_answer_and_the_think_time() {
    let rig = Rig::new();
    let fake = Arc::new(Fake::new(ms(10_000), |_| Script::lasting(100, 4)));
    let plan = sessions_plan(2, 3, ms(500), false, 2);
    let mut runner = rig.runner(&fake, Limits::default());
    let origin = runner.origin;
    let run = runner.run_case(&plan, 0).await.expect("the case");
    // Two sessions side by side: each turn takes 100 ms, then 500 ms of thinking.
    let want: Vec<Duration> = [0, 0, 600, 600, 1200, 1200].map(ms).into();
    assert_eq!(sends(&fake, origin), want);
    assert_eq!(Instant::now() - origin, ms(1300));
    let mut records = rig.records();
    assert_eq!(records.len(), 6);
    records.sort_by_key(|r| (r.session, r.turn));
    for (i, r) in records.iter().enumerate() {
        let turn = crate::num::count(i % 3) + 1;
        assert_eq!(
            (r.session, r.turn, r.turns),
            (Some(i as u64 / 3), Some(turn), Some(3))
        );
        assert_eq!(r.sent_s, s(600 * u64::from(turn - 1)));
        // A later turn is due at the answer and the think time: sent then, to the instant.
        let due = (turn > 1).then_some(r.sent_s);
        assert_eq!(r.scheduled_s, due);
        assert_eq!(r.status, Status::Ok);
    }
    assert!(!run.stopped);
}

#[tokio::test(start_paused = true)]
async fn staggered_sessions_start_spread_over_one_think_time_and_keep_their_offsets() {
    let rig = Rig::new();
    let fake = Arc::new(Fake::new(ms(10_000), |_| Script::lasting(100, 4)));
    let plan = sessions_plan(4, 2, ms(800), true, 6);
    let mut runner = rig.runner(&fake, Limits::default());
    let origin = runner.origin;
    runner.run_case(&plan, 0).await.expect("the case");
    let mut sent = sends(&fake, origin);
    sent.sort();
    // Four places, 800 ms of thinking: the first sessions start 0, 200, 400 and 600 ms after
    // the first, and each second turn 100 ms (the answer) and 800 ms later, so the offsets
    // stay; the fifth and sixth sessions start at once as the first two end (1000, 1200 ms),
    // their second turns 900 ms after.
    let first = sent[0];
    let want: Vec<Duration> = [
        0, 200, 400, 600, 900, 1000, 1100, 1200, 1300, 1500, 1900, 2100,
    ]
    .map(ms)
    .into();
    let got: Vec<Duration> = sent.iter().map(|t| t.saturating_sub(first)).collect();
    assert_eq!(got, want);
}

#[tokio::test(start_paused = true)]
async fn a_staged_load_runs_as_one_load_with_a_case_per_stage() {
    use crate::workload::shape::{Arrival, ShapeTemplate};
    let rig = Rig::new();
    let fake = Arc::new(Fake::new(ms(10_000), |_| Script::lasting(40, 4)));
    let template = ShapeTemplate {
        arrival: Arrival::ClosedContinuous,
        rounds: 1,
        bound: None,
        burstiness: 1.0,
        max_in_flight: None,
        warmup_time: Duration::ZERO,
        trace: None,
        session: None,
        graph: None,
    };
    let stages =
        crate::workload::stages::parse("100ms:concurrency=1,100ms:concurrency=2").expect("stages");
    let plans = template.stage_plans(&stages, &Length::Fixed(8), &Length::Fixed(4));
    let mut runner = rig.runner(&fake, Limits::default());
    let origin = runner.origin;
    let runs = runner
        .run_load(&plans, Some(&stages), 0)
        .await
        .expect("the load");
    // One in flight to 100 ms, then two, with no gap between the stages; none sent at or after
    // 200 ms, and the last drained at 220.
    let want: Vec<Duration> = [0, 40, 80, 100, 120, 140, 160, 180].map(ms).into();
    assert_eq!(sends(&fake, origin), want);
    assert_eq!(Instant::now() - origin, ms(220));
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].window, Some((s(0), s(100))));
    assert_eq!(runs[1].window, Some((s(100), s(200))));
    // A request belongs to the stage it was sent in, wherever it ends (the one sent at 80 ends
    // in the second).
    let records = rig.records();
    let count = |case: &str| records.iter().filter(|r| r.case == case).count();
    assert_eq!((count(&plans[0].case.id), count(&plans[1].case.id)), (3, 5));
    assert_eq!(
        (runs[0].figures.requests(), runs[1].figures.requests()),
        (3, 5)
    );
    assert!(runs.iter().all(|r| !r.stopped));
}
