//! A mix of models (`--model NAME:WEIGHT,…`) through each way the runner launches requests:
//! every request's body names the model drawn for it (warmups the models in turn, a session's
//! turns its own), the record says the same, and the same seed draws the same.

use super::*;
use crate::runner::pacer::PacerClock;
use crate::workload::mix::ModelMix;

fn mix() -> Arc<ModelMix> {
    Arc::new(
        ModelMix::parse("base:70,adapter-a:20,adapter-b:10")
            .expect("a valid mix")
            .expect("a mix"),
    )
}

fn settings(seed: u64) -> RunSettings {
    RunSettings {
        seed,
        pacer: PacerClock::Runtime,
        mix: Some(mix()),
        ..RunSettings::default()
    }
}

/// Runs `plan` with `warmup` warmups on the completions API with the mix and `seed`; the rig,
/// the fake and the run.
async fn run_mix(plan: &CasePlan, warmup: u32, seed: u64) -> (Rig, Arc<Fake>, CaseRun) {
    let rig = Rig::on(Api::Completions);
    let fake = Arc::new(Fake::new(ms(10_000), |_| Script::lasting(40, 4)));
    let run = {
        let mut runner = rig.runner_with(&fake, Limits::default(), settings(seed));
        runner.run_case(plan, warmup).await.expect("the case")
    };
    (rig, fake, run)
}

/// Each record's model matches the model its request's body named (the fake logs calls in the
/// order they were made; the records are in end order): the sorted lists agree.
fn assert_bodies_named_the_records_models(rig: &Rig, fake: &Fake) {
    let mut sent: Vec<Option<String>> = fake.calls().into_iter().map(|c| c.model).collect();
    let mut recorded: Vec<Option<String>> = rig.records().into_iter().map(|r| r.model).collect();
    sent.sort();
    recorded.sort();
    assert_eq!(sent, recorded);
    assert!(recorded.iter().all(Option::is_some));
}

#[tokio::test(start_paused = true)]
async fn closed_rounds_draw_each_requests_model_from_the_seed_and_warm_each_model() {
    let plan = plan(4, Shape::Rounds { rounds: 3 });
    let (rig, fake, run) = run_mix(&plan, 3, 11).await;
    assert_bodies_named_the_records_models(&rig, &fake);
    let records = rig.records();
    let warmups: Vec<&str> = records
        .iter()
        .filter(|r| r.phase == Phase::Warmup)
        .filter_map(|r| r.model.as_deref())
        .collect();
    assert_eq!(warmups, ["base", "adapter-a", "adapter-b"]);
    // Warmups take serials 0..3; round r's request i is built with serial 3 + 4(r − 1) + i.
    let mut measured: Vec<&Record> = records.iter().filter(|r| r.round.is_some()).collect();
    measured.sort_by_key(|r| (r.round, r.index));
    let drawn: Vec<&str> = measured.iter().filter_map(|r| r.model.as_deref()).collect();
    let mix = mix();
    let want: Vec<&str> = (3..15).map(|serial| mix.pick(11, serial)).collect();
    assert_eq!(drawn, want);
    // The case's figures per model add up to its own.
    let summary = run.figures.finish(&plan.case, 3);
    let models = summary.models.expect("per-model figures");
    let ok: u32 = models.iter().map(|m| m.counts.ok).sum();
    assert_eq!((ok, summary.counts.ok), (12, 12));
    for m in &models {
        let n = drawn.iter().filter(|d| **d == m.model).count();
        assert_eq!(m.counts.ok as usize, n, "{}", m.model);
        assert_eq!(m.e2e_ms.as_ref().map(|d| d.n), Some(n), "{}", m.model);
    }
    // The same seed draws the same models, another seed others.
    let (again, _, _) = run_mix(&plan, 3, 11).await;
    let models_of = |rig: &Rig| -> Vec<(Option<u32>, u32, Option<String>)> {
        let mut v: Vec<_> = rig
            .records()
            .into_iter()
            .map(|r| (r.round, r.index, r.model))
            .collect();
        v.sort();
        v
    };
    assert_eq!(models_of(&rig), models_of(&again));
    let (other, _, _) = run_mix(&plan, 3, 12).await;
    assert_ne!(models_of(&rig), models_of(&other));
}

#[tokio::test(start_paused = true)]
async fn open_and_continuous_loops_draw_every_launch() {
    for shape in [
        Shape::Open {
            process: Process::Constant,
            rate_rps: 20.0,
            bound: Bound::Requests(30),
            max_in_flight: None,
        },
        Shape::ClosedContinuous {
            bound: Bound::Requests(30),
        },
    ] {
        let plan = plan(3, shape);
        let (rig, fake, run) = run_mix(&plan, 0, 5).await;
        assert_bodies_named_the_records_models(&rig, &fake);
        let records = rig.records();
        assert_eq!(records.len(), 30);
        let summary = window::summarise(&plan, run, &[]);
        let models = summary.models.expect("per-model figures");
        // 30 draws at 70/20/10: the base model gets most, and every count is the records'.
        for m in &models {
            let n = records
                .iter()
                .filter(|r| r.model.as_deref() == Some(&m.model))
                .count();
            assert_eq!(m.counts.ok as usize, n, "{}", m.model);
            assert!(m.output_tps.is_some() && m.completed_rps.is_some(), "{m:?}");
        }
        let load = summary.load.expect("window figures");
        let tps: f64 = models.iter().filter_map(|m| m.output_tps).sum();
        assert!(
            (tps - load.throughput_tps).abs() < 1e-6,
            "{tps} {}",
            load.throughput_tps
        );
    }
}

#[tokio::test(start_paused = true)]
async fn every_turn_of_a_session_goes_to_its_sessions_model() {
    let spec = SessionSpec {
        turns: 3,
        turn_input: Some(4),
        think: Think::Fixed(ms(100)),
        history: History::Placeholder,
        stagger: false,
    };
    let plan = plan(
        4,
        Shape::Sessions {
            process: None,
            rate_rps: None,
            bound: Bound::Requests(12),
            spec,
            graph: None,
        },
    );
    let (rig, fake, _) = run_mix(&plan, 0, 3).await;
    assert_bodies_named_the_records_models(&rig, &fake);
    let records = rig.records();
    assert_eq!(records.len(), 36);
    for r in &records {
        let session = r.session.expect("a session");
        assert_eq!(
            r.model.as_deref(),
            Some(mix().pick_session(3, session)),
            "{r:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_staged_load_draws_every_launch_and_splits_each_stage_by_model() {
    use crate::workload::shape::{Arrival, ShapeTemplate};
    let rig = Rig::on(Api::Completions);
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
        crate::workload::stages::parse("400ms:concurrency=2,400ms:concurrency=4").expect("stages");
    let plans = template.stage_plans(&stages, &Length::Fixed(8), &Length::Fixed(4));
    let runs = {
        let mut runner = rig.runner_with(&fake, Limits::default(), settings(8));
        runner
            .run_load(&plans, Some(&stages), 0)
            .await
            .expect("the load")
    };
    assert_bodies_named_the_records_models(&rig, &fake);
    let records = rig.records();
    for (run, plan) in runs.into_iter().zip(&plans) {
        let summary = window::summarise(plan, run, &[]);
        let models = summary.models.expect("per-model figures");
        let load = summary.load.expect("window figures");
        for m in &models {
            let n = records
                .iter()
                .filter(|r| r.case == plan.case.id && r.model.as_deref() == Some(&m.model))
                .count();
            assert_eq!(m.counts.ok as usize, n, "{}: {}", plan.case.id, m.model);
        }
        let tps: f64 = models.iter().filter_map(|m| m.output_tps).sum();
        assert!((tps - load.throughput_tps).abs() < 1e-6, "{}", plan.case.id);
    }
}
