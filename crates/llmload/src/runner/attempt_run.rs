//! One attempt's run, case by case: the runner, what watches it (guard, telemetry, `/metrics`,
//! the self-check, the progress line) and the summary they fill.

use crate::api::client::Transport;
use crate::attempt::records::RecordSink;
use crate::attempt::{Attempt, SCHEMA_VERSION};
use crate::board::Board;
use crate::config::Config;
use crate::error::Context;
use crate::guard::{Guard, StopSignal};
use crate::progress::{self, Progress};
use crate::runner::ids::RequestIds;
use crate::runner::monitors::Monitors;
use crate::runner::pacer::PacerClock;
use crate::runner::{RunSettings, Runner, Share};
use crate::selfcheck;
use crate::summary::energy::{self, Window};
use crate::summary::{window, Counting, Outcome, RunState, Summary};
use crate::target::Target;
use crate::telemetry::{self, Sampler};
use crate::workload::shape::CasePlan;
use crate::workload::source::PromptSource;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod described;
mod series;

use described::{dataset_used, live_info, output_counting};

/// A run in progress: its runner, its watchers, and the summary so far.
pub struct AttemptRun<'a> {
    config: &'a Config,
    runner: Runner<'a>,
    monitors: Monitors,
    drawing: Option<progress::Drawing>,
    self_check: selfcheck::Monitor,
    dir: PathBuf,
    /// Why a case could not go on, if one could not.
    failure: Option<String>,
    /// What each case's energy is taken over, in the order of `summary.cases`.
    windows: Vec<Window>,
    /// `--repeat`: the series, while one runs; `summary.cases` are then the running repeat's.
    series: Option<series::SeriesRun>,
    /// `--metrics-listen`: the live board, told the final self-check.
    board: Option<Arc<Board>>,
    /// The figures of the cases run so far, and the outcome as it stands.
    pub summary: Summary,
    /// `--reset-prefix-cache`: what the reset before the coming case did.
    reset: Option<crate::record::PrefixReset>,
}

impl<'a> AttemptRun<'a> {
    /// Starts the watchers and opens `requests.jsonl` in `attempt`; `simulated` marks the built-in
    /// simulator, `interrupted` fires on a stop signal, `board` (`--metrics-listen`) is fed as
    /// the progress line is.
    pub fn start(
        config: &'a Config,
        (target, prompts): (&'a Target, &'a PromptSource),
        attempt: &Attempt,
        sampler: Sampler,
        (simulated, interrupted): (bool, StopSignal),
        board: Option<Arc<Board>>,
    ) -> crate::error::Result<AttemptRun<'a>> {
        let origin = Instant::now();
        let cancel = CancellationToken::new();
        let guard = Arc::new(Guard::new(config.limits.clone(), origin, cancel.clone()));
        let monitors = Monitors::start(
            config,
            sampler,
            target,
            attempt,
            &guard,
            interrupted,
            origin,
        );
        if let Some(board) = &board {
            board.set_info(live_info(config, target, attempt));
        }
        let show = progress::Show {
            quiet: config.quiet,
            live: config.watch.live,
            heartbeat: config.watch.heartbeat,
            origin: origin.into_std(),
        };
        let flight = board
            .as_ref()
            .map_or_else(crate::board::flight::Flight::new, |b| b.flight());
        let (progress, drawing) = Progress::start(show, guard.clone(), board.clone(), &flight);
        let reporter = progress.clone();
        let sink = RecordSink::create(&attempt.dir.join("requests.jsonl"))
            .context("creating requests.jsonl")?;
        let settings = run_settings(config, attempt);
        let transport: Arc<dyn Transport> = if target.replicas.is_empty() {
            Arc::new(target.endpoint.clone())
        } else {
            Arc::new(crate::api::replicas::Replicas::new(
                target.replicas.clone(),
                config.replicas.balance,
            ))
        };
        let runner = Runner::new(
            (target, prompts),
            flight.counted(transport),
            sink,
            (origin, cancel, guard),
            progress,
            settings,
        );
        let summary = Summary {
            schema_version: SCHEMA_VERSION,
            attempt_id: attempt.id.clone(),
            target_url: target.endpoint.base_url.clone(),
            replicas: target.replicas.iter().map(|e| e.base_url.clone()).collect(),
            api: target.endpoint.api.name().to_owned(),
            model: target.model.clone(),
            simulated,
            cases: Vec::new(),
            outcome: Outcome::new(&[], 0, RunState::DONE),
            telemetry: None,
            sweep: None,
            client_check: None,
            counting: Some(Counting {
                prompts: prompts.counting(target),
                outputs: output_counting(target),
                best_effort: config.best_effort,
                dropped: target.dropped_note.clone(),
                dataset: config.dataset.as_ref().map(dataset_used),
            }),
            shard: None,
            shards: None,
            repeats: None,
            capacity: None,
            ab: None,
        };
        Ok(AttemptRun {
            config,
            runner,
            monitors,
            drawing,
            self_check: selfcheck::Monitor::start(
                reporter.watched().then(|| {
                    Box::new(move |check| reporter.client_check(check)) as selfcheck::Report
                }),
            ),
            board,
            dir: attempt.dir.clone(),
            failure: None,
            windows: Vec::new(),
            series: None,
            summary,
            reset: None,
        })
    }

    /// Runs `plan`, case number `summary.cases.len() + 1` of `planned`, after the process check
    /// and the cool-down; returns whether the run goes on.
    pub async fn run_case(&mut self, plan: &CasePlan, planned: usize) -> bool {
        let warmup = self.config.warmup;
        self.run_load(std::slice::from_ref(plan), None, planned, warmup)
            .await
    }

    /// `llmload ab`: runs `plan` (one block of a case) as [`AttemptRun::run_case`] does, with
    /// `warmup` warmup requests (the arm's first block of a case warms it; the others do not).
    pub async fn run_block(&mut self, plan: &CasePlan, planned: usize, warmup: u32) -> bool {
        self.run_load(std::slice::from_ref(plan), None, planned, warmup)
            .await
    }

    /// `llmload ab`: every record of this run says it was sent in `arm`.
    pub fn set_arm(&mut self, arm: crate::record::Arm) {
        self.runner.arm = Some(arm);
    }

    /// A staged load (`plans`, one per stage of `stages`) run as one load, after the process
    /// check and the cool-down: one case per stage reached; returns whether the run goes on.
    pub async fn run_stages(
        &mut self,
        plans: &[CasePlan],
        stages: &[crate::workload::stages::Stage],
    ) -> bool {
        let warmup = self.config.warmup;
        self.run_load(plans, Some(stages), plans.len(), warmup)
            .await
    }

    /// One load (a case, or with `stages` a staged load of `plans`), its cases numbered on from
    /// `summary.cases.len() + 1` of `planned`, after the process check and the cool-down;
    /// returns whether the run goes on.
    async fn run_load(
        &mut self,
        plans: &[CasePlan],
        stages: Option<&[crate::workload::stages::Stage]>,
        planned: usize,
        warmup: u32,
    ) -> bool {
        let guard = self.runner.guard.clone();
        let Some(first) = plans.first() else {
            return true;
        };
        if guard.process_check(&format!("before case {}", first.case.id)) {
            return false;
        }
        if let Some(note) = cool_down(self.config, &guard).await {
            self.runner.progress.println(&note);
        }
        if self.config.reset_prefix_cache {
            let reset = self.runner.target.reset_prefix_cache().await;
            if let Some(why) = &reset.refused {
                self.runner.progress.println(&format!(
                    "--reset-prefix-cache: the server did not drop its prefix cache before case \
                     {} ({why}); the case runs anyway",
                    first.case.id
                ));
            }
            self.reset = Some(reset);
        }
        let number = self.summary.cases.len() + 1;
        self.runner.progress.case(number, planned, plans);
        // On the heap: a load's future is large, and the whole run's would hold it.
        let load = self.runner.run_load(plans, stages, warmup);
        match Box::pin(load).await {
            Ok(runs) => {
                for (plan, run) in plans.iter().zip(runs) {
                    self.add_case(plan, run);
                    if let (false, Some(done)) = (self.config.quiet, self.summary.cases.last()) {
                        let line = progress::case_line(self.summary.cases.len(), planned, done);
                        let of = self.runner.repeat.zip(self.series.as_ref());
                        let line = match of {
                            Some((k, s)) => format!("repeat {k}/{}: {line}", s.planned()),
                            None => line,
                        };
                        let line = match self.runner.arm {
                            Some(arm) => format!("{}: {line}", arm.letter()),
                            None => line,
                        };
                        self.runner.progress.println(&line);
                    }
                }
            }
            Err(e) => {
                let what = if stages.is_some() {
                    "staged load"
                } else {
                    "case"
                };
                self.failure = Some(format!("{what} {}: {e:#}", first.case.id));
            }
        }
        self.note_shard();
        self.outcome(planned)
    }

    /// Summarises a case that ran and adds it to the summary.
    fn add_case(&mut self, plan: &CasePlan, mut run: crate::summary::window::CaseRun) {
        let round_spans = run.figures.round_spans();
        let readings = telemetry::written(&self.dir);
        // A shard whose part of the load is empty (fewer streams or arrivals than shards) did
        // all of it by sending nothing; its section says so.
        let idle = !run.stopped
            && run.figures.requests() == 0
            && matches!(
                self.runner.share(),
                Some(Share::Streams(0) | Share::Arrivals(0))
            );
        let profile = run.profile.take();
        let mut case = window::summarise(plan, run, &readings);
        case.server_profile = profile;
        case.complete |= idle;
        case.prefix_cache_reset = self.reset.take();
        let window = Window::of(&case, round_spans);
        crate::summary::cost::attach(
            std::slice::from_mut(&mut case),
            std::slice::from_ref(&window),
            self.config.price,
        );
        if let Some(canaries) = &mut case.canaries {
            canaries.check(self.config.canaries.and_then(|c| c.fail_above));
        }
        self.windows.push(window);
        self.summary.cases.push(case);
        // Every case's, again: an earlier case's window may have been waiting for the
        // reading after its end.
        self.attach_energy(&readings);
    }

    /// Sets the outcome after a case (or a staged load) of `planned`; whether the run goes on.
    fn outcome(&mut self, planned: usize) -> bool {
        let guard = self.runner.guard.clone();
        let go_on = guard.verdict().is_none() && self.failure.is_none();
        set_outcome(
            &mut self.summary,
            &guard,
            self.failure.clone(),
            planned,
            go_on,
        );
        go_on
    }

    /// Ends the run: the final process check, the watchers' summaries, the outcome; a series'
    /// summary is its own (see [`AttemptRun::written`]).
    pub async fn finish(mut self, planned: usize) -> crate::error::Result<Summary> {
        self.runner.progress.finish(self.drawing.take());
        let guard = self.runner.guard.clone();
        guard.process_check("the final process check");
        let end = self
            .windows
            .iter()
            .filter_map(|w| w.spans.last())
            .map(|s| s.1)
            .fold(f64::NEG_INFINITY, f64::max)
            .max(
                self.series
                    .as_ref()
                    .map_or(f64::NEG_INFINITY, series::SeriesRun::last_end),
            );
        reading_after(&guard, end, self.config.telemetry_interval).await;
        self.note_shard();
        let telemetry = self.monitors.finish(&self.dir).await;
        let readings = telemetry::written(&self.dir);
        let mut summary = self.summary;
        energy::attach(
            &mut summary.cases,
            &self.windows,
            &readings,
            self.config.telemetry_interval.as_secs_f64(),
        );
        summary.telemetry = telemetry;
        let checked = match &self.series {
            Some(s) => s.all_cases(),
            None => summary.cases.clone(),
        };
        let check = self.self_check.finish(&checked).await;
        if let Some(board) = &self.board {
            // Every record is counted by now.
            board.client_check(check.clone());
            board.finish();
        }
        summary.client_check = Some(check);
        set_outcome(&mut summary, &guard, self.failure.clone(), planned, false);
        match self.series {
            Some(series) => {
                let interval_s = self.config.telemetry_interval.as_secs_f64();
                series.finish(
                    &summary,
                    (&guard, self.failure),
                    (&self.dir, interval_s),
                    &readings,
                )
            }
            None => Ok(summary),
        }
    }
}

impl AttemptRun<'_> {
    /// A shard's section with how its load began and what its part was, once it has.
    fn note_shard(&mut self) {
        if let Some(shard) = &mut self.summary.shard {
            shard.start = shard.start.or(self.runner.load_start());
            match self.runner.share() {
                Some(Share::Arrivals(n)) => shard.arrivals = Some(n),
                Some(Share::Streams(n)) => shard.streams = Some(n),
                None => {}
            }
        }
    }

    /// Sets every case's energy from `readings`.
    fn attach_energy(&mut self, readings: &[telemetry::Reading]) {
        let interval_s = self.config.telemetry_interval.as_secs_f64();
        energy::attach(&mut self.summary.cases, &self.windows, readings, interval_s);
    }
}

/// Waits until every GPU that reports power has a reading at or after `end` (the last case's
/// end), so that its energy has a reading on each side of its window: at most two intervals and
/// a half, and not at all after Ctrl-C or without power readings.
async fn reading_after(guard: &Guard, end: f64, interval: std::time::Duration) {
    let deadline = Instant::now() + interval * 2 + std::time::Duration::from_millis(500);
    while end.is_finite()
        && guard.power_read_to().is_some_and(|t| t < end)
        && guard
            .verdict()
            .is_none_or(|v| v.rule != crate::guard::Rule::Interrupted)
        && Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Waits, before a case, until every GPU is below `--cool-down-below` (up to the timeout). Before
/// the first reading has arrived it waits for one (a few reading intervals at most), so that the
/// first case does not start on a hot GPU unseen; what it could not do is returned as a note.
async fn cool_down(config: &Config, guard: &Guard) -> Option<String> {
    let below = config.cool_down_below_c?;
    let start = Instant::now();
    let deadline = start + config.cool_down_timeout;
    let first_by = (start + (config.telemetry_interval * 3).max(std::time::Duration::from_secs(5)))
        .min(deadline);
    loop {
        let now = Instant::now();
        match guard.latest() {
            Some(r) if r.temperature_c < below => return None,
            Some(r) if now >= deadline => {
                return Some(format!(
                    "cool-down: a GPU is still at {:.0} °C after {}; the case starts anyway",
                    r.temperature_c,
                    humantime::format_duration(config.cool_down_timeout)
                ));
            }
            None if now >= first_by => {
                return Some(format!(
                    "cool-down: no GPU reading within {}; the case starts without it",
                    humantime::format_duration(std::time::Duration::from_secs(
                        (first_by - start).as_secs()
                    ))
                ));
            }
            _ => {}
        }
        if guard.process_check("cool-down") {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// The summary's outcome: the run still going (`going`: more cases to run), or over as the guard
/// and `failure` say.
fn set_outcome(
    summary: &mut Summary,
    guard: &Guard,
    failure: Option<String>,
    total: usize,
    going: bool,
) {
    let state = run_state(guard, failure, going);
    summary.outcome = Outcome::new(&summary.cases, crate::num::count(total), state);
    summary.outcome.stop_sample = guard
        .verdict()
        .and_then(|v| v.sample)
        .and_then(|sample| serde_json::to_value(sample).ok());
}

/// Where the run is: going (more cases to run), or over as the guard and `failure` say.
fn run_state(guard: &Guard, failure: Option<String>, going: bool) -> RunState {
    if going {
        RunState::Going
    } else {
        RunState::Ended {
            stop: guard.verdict().as_ref().map(stop_text),
            failure,
        }
    }
}

/// What stopped the run, in words: a signal plainly ("stopped by SIGINT (Ctrl-C)"), a guard's
/// rule with where it fired and why.
pub fn stop_text(v: &crate::guard::StopVerdict) -> String {
    match v.rule {
        crate::guard::Rule::Interrupted => format!("stopped by {}", v.reason),
        _ => format!("stopped by the {} rule at {}: {}", v.rule, v.at, v.reason),
    }
}

/// The knobs of a run, the same for every case of it, from `config`.
fn run_settings(config: &Config, attempt: &Attempt) -> RunSettings {
    RunSettings {
        seed: config.seed,
        slo: config.load.slo,
        model_slo: Arc::new(config.load.model_slo.clone()),
        series_window: config.series_window_length(),
        extra_body: config.extra_body.clone(),
        best_effort: config.best_effort,
        shard: config.sharding.shard,
        start_at: config.sharding.start_at,
        start_file: (!config.sharding.shard.is_whole())
            .then(|| attempt.dir.join(crate::attempt::START_FILE)),
        pacer: PacerClock::Thread,
        ids: Some(Arc::new(RequestIds::new(
            config.sharding.attempt_id.as_deref().unwrap_or(&attempt.id),
            (!config.sharding.shard.is_whole()).then_some(config.sharding.shard.index),
            config.traceparent,
        ))),
        cancel: config.load.cancel,
        mix: config.mix.clone().map(Arc::new),
        canaries: config.canaries,
        profile_server: config.profile_server,
    }
}
