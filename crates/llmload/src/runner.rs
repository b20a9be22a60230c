//! The runner: for each case, warmup requests one at a time, then the case's load shape — one
//! runner, parameterised by the shape:
//!
//! - closed rounds: C simultaneous requests; a round ends when its last request ends;
//! - closed continuous: C kept in flight, a new request as soon as one ends;
//! - a staged load: one continuous or open loop whose level follows stages, each a case;
//! - open loop: arrivals at precomputed offsets, each sent at `start + offset` on an absolute
//!   clock, optionally capped in flight. A launch that waits for the cap is sent late, and the
//!   record shows it (`sent − scheduled`, the send lag): the wait is never hidden.
//!
//! Every request becomes a record written the moment it ends. A stop (Ctrl-C or the guard, which
//! is checked before every launch) cancels what is in flight; cancelled requests are recorded as
//! such and the case is left incomplete.
//!
//! Requests go through a [`Transport`]: the real client (`Endpoint`), or in the tests a scripted
//! one under tokio's paused clock. The runner keeps every time on tokio's clock; only the open
//! loop's pacer thread reads the system's, and a test paces on the runtime instead
//! ([`PacerClock::Runtime`]).

use crate::api::client::{Exchange, Transport};
use crate::api::Body;
use crate::attempt::records::RecordSink;
use crate::error::Context;
use crate::guard::Guard;
use crate::record::{Phase, RequestMeta, Seconds};
use crate::summary::shards::LoadStart;
use crate::summary::window::{CaseRun, WindowFigures};
use crate::target::Target;
use crate::workload::prompt::splitmix64;
use crate::workload::schedule::{self, Bound};
use crate::workload::shape::{CasePlan, Shape};
use crate::workload::source::PromptSource;
use crate::workload::stages::Stage;
use crate::workload::trace::{self, TraceEntry};
pub use settings::RunSettings;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub mod attempt_run;
pub mod canaries;
mod closed;
pub mod exchange;
pub mod ids;
pub mod monitors;
mod open;
pub mod pacer;
mod pooled;
mod profile;
mod request;
mod sessions;
mod settings;
mod stages;
mod start;

use stages::Segment;

/// Drives one attempt's requests.
pub struct Runner<'a> {
    /// The server requests are built for.
    pub target: &'a Target,
    /// Where prompts come from.
    pub prompts: &'a PromptSource,
    /// Where requests go.
    pub transport: Arc<dyn Transport>,
    /// Stop rules, checked before every warmup, round and launch and told of every measured
    /// record; its token is the run's stop.
    pub guard: Arc<Guard>,
    /// Told of every round and ended request, for the live progress line.
    pub progress: crate::progress::Progress,
    /// The run's knobs.
    pub settings: RunSettings,
    /// `--repeat`: the repeat of the series being run (from 1), written into every record.
    pub repeat: Option<u32>,
    /// `llmload ab`: the arm this runner's requests go to, written into every record.
    pub arm: Option<crate::record::Arm>,
    /// Where records go.
    sink: RecordSink,
    /// The attempt's time origin.
    origin: Instant,
    /// Fires when the run must stop (the guard's token).
    cancel: CancellationToken,
    /// Requests built so far (each gets a distinct prompt offset).
    serial: u64,
    /// Multi-turn sessions started so far (the next one's id).
    sessions: u64,
    /// Whether the first load has begun (the only one that waits for `--start-at`).
    begun: bool,
    /// When the first load began against `start_at`, once it has.
    load_start: Option<LoadStart>,
    /// What this shard's part of its load was: open-loop arrivals or closed-loop streams.
    share: Option<Share>,
    /// `--canaries`: each prompt's reference, once sent (`None` where it failed).
    canary_references: Vec<Option<crate::record::canary::Canary>>,
    /// `--profile-server`: whether the round to profile has run.
    profiled: bool,
}

/// A shard's part of a load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    /// Arrivals of the global schedule.
    Arrivals(u64),
    /// Streams kept in flight (the most, over a staged load's levels).
    Streams(u32),
}

impl<'a> Runner<'a> {
    /// A runner whose time origin is `origin` (the attempt's, the guard's) and whose stop is
    /// `cancel` (the guard's token); records go to `sink`.
    pub fn new(
        (target, prompts): (&'a Target, &'a PromptSource),
        transport: Arc<dyn Transport>,
        sink: RecordSink,
        (origin, cancel, guard): (Instant, CancellationToken, Arc<Guard>),
        progress: crate::progress::Progress,
        settings: RunSettings,
    ) -> Runner<'a> {
        Runner {
            target,
            prompts,
            transport,
            guard,
            progress,
            settings,
            repeat: None,
            arm: None,
            sink,
            origin,
            cancel,
            serial: 0,
            sessions: 0,
            begun: false,
            load_start: None,
            share: None,
            canary_references: Vec::new(),
            profiled: false,
        }
    }

    /// When the first load began against `--start-at`, once it has.
    pub fn load_start(&self) -> Option<LoadStart> {
        self.load_start
    }

    /// What this shard's part of its latest load was, once one ran.
    pub fn share(&self) -> Option<Share> {
        self.share
    }
}

/// A request ready to go: what it is and its body.
type Prepared = (RequestMeta, Body);

/// The in-flight requests of a case: one task each, joined as they end.
type InFlight = JoinSet<(RequestMeta, Exchange)>;

/// How a streamed (continuous or open) load launches its requests.
struct Pacing {
    /// Trace replay: each request's lengths.
    lengths: Option<Arc<Vec<TraceEntry>>>,
    /// The most requests in flight.
    cap: Option<u32>,
    /// Where launching stops.
    bound: Bound,
}

/// A continuous or open load, as it runs: its segments (the whole load of a case, or a staged
/// load's stages, a case each) and how it launches.
struct Streamed<'p> {
    segments: Vec<Segment<'p>>,
    pacing: Pacing,
    launches: Launches,
}

/// When a streamed load's requests go.
enum Launches {
    /// At offsets from the start of the load, each with the segment it is scheduled in.
    Open(Vec<(Duration, usize)>),
    /// As they end, to keep a level in flight: (offset from the start of the load, the level
    /// from then on).
    Closed(Vec<(Duration, u32)>),
}

/// The open loop's clock starts this long after its first request is ready.
const LEAD: Duration = Duration::from_millis(2);

/// How often an open loop checks the guard while it launches and drains.
const CHECK: Duration = Duration::from_millis(100);

impl Runner<'_> {
    /// Runs `warmup` single requests then the load of `plan`.
    pub async fn run_case(
        &mut self,
        plan: &CasePlan,
        warmup: u32,
    ) -> crate::error::Result<CaseRun> {
        let runs = self
            .run_load(std::slice::from_ref(plan), None, warmup)
            .await?;
        Ok(runs.into_iter().next().unwrap_or_default())
    }

    /// Runs `warmup` single requests (the first plan's), then one load: the case of `plans[0]`,
    /// or with `stages` the staged load of `plans` (one per stage, from
    /// [`ShapeTemplate::stage_plans`](crate::workload::shape::ShapeTemplate::stage_plans)). One
    /// run per case reached, the last marked stopped when the run stopped.
    pub async fn run_load(
        &mut self,
        plans: &[CasePlan],
        stages: Option<&[Stage]>,
        warmup: u32,
    ) -> crate::error::Result<Vec<CaseRun>> {
        let Some(first) = plans.first() else {
            return Ok(Vec::new());
        };
        let cases = stages.map_or(1, |_| plans.len());
        let mut runs: Vec<CaseRun> = (0..cases).map(|_| CaseRun::default()).collect();
        if !self.warmups(first, warmup, &mut runs[0]).await? {
            runs.truncate(1);
            runs[0].stopped = true;
            return Ok(runs);
        }
        let streamed = match stages {
            Some(stages) => Some(self.staged(plans, stages)),
            None => self.streamed(first),
        };
        match (streamed, &first.shape) {
            (Some(load), shape) => {
                let reached = self.run_streamed(&load, &mut runs).await?;
                runs.truncate(reached);
                let whole = stages.is_none() && reached == 1 && !self.cancel.is_cancelled();
                if whole && matches!(shape, Shape::ClosedContinuous { .. }) {
                    self.canary_rounds(first, &mut runs[0]).await?;
                }
            }
            (None, Shape::Rounds { rounds }) => self.rounds(first, *rounds, &mut runs[0]).await?,
            (None, Shape::Sessions { .. }) => self.sessions(first, &mut runs[0]).await?,
            (None, _) => {}
        }
        if let Some(last) = runs.last_mut() {
            last.stopped |= self.cancel.is_cancelled();
        }
        Ok(runs)
    }

    /// Sends `warmup` single requests, one at a time; false when the run stopped before one.
    /// They are written and left out of every figure of `run`; only their generated tokens are
    /// kept (as a server's counter holds them).
    async fn warmups(
        &mut self,
        plan: &CasePlan,
        warmup: u32,
        run: &mut CaseRun,
    ) -> crate::error::Result<bool> {
        for index in 0..warmup {
            let at = format!("before warmup {} of case {}", index + 1, plan.case.id);
            if self.guard.process_check(&at) {
                return Ok(false);
            }
            let meta = self.meta(plan, Phase::Warmup, None, index, None);
            // `run` has no window yet: a single warmup's phase keeps it out of the figures.
            self.launch(vec![(meta, Some(0))], None, run).await?;
        }
        Ok(true)
    }

    /// The streamed load of a continuous or open-loop case, as one segment; `None` for closed
    /// rounds and sessions.
    fn streamed<'p>(&self, plan: &'p CasePlan) -> Option<Streamed<'p>> {
        let whole = |offsets: Vec<Duration>| offsets.into_iter().map(|o| (o, 0)).collect();
        let (launches, pacing) = match &plan.shape {
            Shape::Rounds { .. } | Shape::Sessions { .. } => return None,
            Shape::ClosedContinuous { bound } => (
                Launches::Closed(vec![(Duration::ZERO, plan.case.concurrency)]),
                Pacing {
                    lengths: None,
                    cap: Some(plan.case.concurrency),
                    bound: *bound,
                },
            ),
            Shape::Open {
                process,
                rate_rps,
                bound,
                max_in_flight,
            } => {
                let seed = splitmix64(self.settings.seed ^ self.serial);
                let offsets = schedule::offsets(*process, *rate_rps, *bound, seed);
                (
                    Launches::Open(whole(offsets)),
                    Pacing {
                        lengths: None,
                        cap: *max_in_flight,
                        bound: *bound,
                    },
                )
            }
            Shape::Replay {
                entries,
                max_in_flight,
                ..
            } => (
                Launches::Open(whole(trace::offsets(entries))),
                Pacing {
                    lengths: Some(entries.clone()),
                    cap: *max_in_flight,
                    bound: Bound::Requests(entries.len() as u64),
                },
            ),
        };
        Some(Streamed {
            segments: vec![Segment::whole(plan, pacing.bound)],
            pacing,
            launches,
        })
    }

    /// Runs a streamed load, its records folded into `runs` (one per segment); returns how many
    /// segments it reached.
    async fn run_streamed(
        &mut self,
        load: &Streamed<'_>,
        runs: &mut [CaseRun],
    ) -> crate::error::Result<usize> {
        let Streamed {
            segments,
            pacing,
            launches,
        } = load;
        match launches {
            Launches::Open(offsets) => self.open_loop(segments, pacing, offsets, runs).await,
            Launches::Closed(steps) => self.stream(segments, steps, pacing, runs).await,
        }
    }

    async fn rounds(
        &mut self,
        plan: &CasePlan,
        rounds: u32,
        run: &mut CaseRun,
    ) -> crate::error::Result<()> {
        self.begin(Instant::now()).await;
        self.canary_references(plan, run).await?;
        for round in 1..=rounds {
            let at = format!("before round {round} of case {}", plan.case.id);
            if self.guard.process_check(&at) {
                run.stopped = true;
                return Ok(());
            }
            self.progress.round(round);
            let requests = (0..plan.case.concurrency)
                .map(|index| {
                    (
                        self.meta(plan, Phase::Measured, Some(round), index, None),
                        None,
                    )
                })
                .collect();
            match self.profiles(plan.case.concurrency, round) {
                Some(at) => {
                    self.profiled_round((requests, None), run, (at, round))
                        .await?;
                }
                None => self.launch(requests, None, run).await?,
            }
        }
        self.canary_rounds(plan, run).await
    }

    /// A load's window figures, its window starting at `warmup_end` and ending at `end` (or at
    /// `warmup_end`, if later) when that is known already.
    fn window_figures(&self, warmup_end: Instant, end: Option<Instant>) -> WindowFigures {
        WindowFigures::new(
            self.since(warmup_end),
            end.map(|e| self.since(e.max(warmup_end))),
            self.settings.slo,
            self.settings.series_window.map(|d| d.as_secs_f64()),
        )
        .with_model_objectives(&self.settings.model_slo)
    }

    /// Seconds from the attempt's origin to `t`.
    fn since(&self, t: Instant) -> Seconds {
        t.saturating_duration_since(self.origin).as_secs_f64()
    }

    async fn settle_next(
        &mut self,
        in_flight: &mut InFlight,
        run: &mut CaseRun,
    ) -> crate::error::Result<()> {
        if let Some(joined) = in_flight.join_next().await {
            let (meta, exchange) = joined.context("a request task failed")?;
            self.settle(meta, &exchange, run)?;
        }
        Ok(())
    }

    /// Records an ended request: written, shown to the guard when measured, folded into the
    /// figures.
    fn settle(
        &mut self,
        meta: RequestMeta,
        exchange: &Exchange,
        run: &mut CaseRun,
    ) -> crate::error::Result<()> {
        let launched = meta.launched.map(|t| self.since(t));
        let mut record = exchange::record(meta, exchange, self.origin, self.settings.best_effort);
        self.judge_canary(&mut record);
        record.repeat = self.repeat;
        record.arm = self.arm;
        record
            .notes
            .extend(self.target.dropped_note.iter().cloned());
        self.sink
            .append(&record)
            .context("writing requests.jsonl")?;
        if record.phase == Phase::Canary {
            // Beside the load, in none of its figures (and not shown as the load's progress).
            run.figures.add_canary(&record);
            return Ok(());
        }
        self.progress.record(&record);
        if record.phase == Phase::Measured {
            self.guard.observe_record(&record);
            run.figures.add(&record);
        } else {
            run.figures.add_warmup(&record);
        }
        if let Some(load) = &mut run.load {
            load.add(&record, launched);
        }
        Ok(())
    }

    /// Builds every prompt, then sends all requests at once; their records are written and
    /// folded into `run` as they end.
    /// A canary built already goes with them.
    async fn launch(
        &mut self,
        requests: Vec<(RequestMeta, Option<u32>)>,
        canary: Option<(RequestMeta, Body)>,
        run: &mut CaseRun,
    ) -> crate::error::Result<()> {
        let mut requests = requests;
        let mut bodies = Vec::with_capacity(requests.len());
        for (meta, slot) in &mut requests {
            bodies.push(self.body(meta, *slot, &[]).await?);
        }
        let mut in_flight = InFlight::new();
        for ((meta, _), body) in requests.into_iter().zip(bodies) {
            self.spawn(&mut in_flight, meta, body);
        }
        if let Some((meta, body)) = canary {
            self.spawn(&mut in_flight, meta, body);
        }
        while !in_flight.is_empty() {
            self.settle_next(&mut in_flight, run).await?;
        }
        Ok(())
    }

    /// Sends one request on its own task; its record is made when it is joined.
    fn spawn(&self, in_flight: &mut InFlight, meta: RequestMeta, body: Body) {
        let transport = self.transport.clone();
        let cancel = self.cancel.clone();
        in_flight.spawn(async move {
            let exchange = transport.exchange(body, &cancel).await;
            (meta, exchange)
        });
    }
}

#[cfg(test)]
mod tests;
