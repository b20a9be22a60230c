//! Records of a continuous or open-loop case → its figures over the measurement window:
//! throughput and goodput over the window only, achieved concurrency next to the nominal one,
//! send lag, and latencies from `scheduled` as well as from `sent` (coordinated omission).

use crate::record::{Record, Seconds};
use crate::stats::interval::Ci;
use crate::stats::{Distribution, Spread};
use crate::summary::soak::SeriesBins;
use crate::summary::CaseFigures;
use crate::summary::CaseSummary;
use crate::telemetry::Reading;
use crate::workload::schedule::Process;
use crate::workload::shape::{CasePlan, Shape, Slo};
use crate::workload::stages::StageLabel;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Window figures of one continuous or open-loop case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadSummary {
    /// `closed-continuous` or the arrival process.
    pub shape: LoadShape,
    /// Requests asked to be in flight (closed continuous) or the in-flight cap (open loop).
    pub nominal_concurrency: Option<u32>,
    /// Arrivals per second asked for (open loop).
    pub nominal_rate_rps: Option<f64>,
    /// Start and end of the measurement window, seconds since the attempt started: warmup
    /// before it and the drain after it are excluded from throughput and goodput.
    pub window_s: [Seconds; 2],
    /// Requests launched, warmup included.
    pub requests_launched: u32,
    /// Measured `ok` responses that completed inside the window, per second.
    pub completed_rps: f64,
    /// Output tokens (of `ok` responses) received inside the window / window length.
    pub throughput_tps: f64,
    /// Measured `ok` responses completed inside the window that met every SLO, per second; absent
    /// when no SLO was given.
    pub goodput_rps: Option<f64>,
    /// Share of measured `ok` responses (inside the window) meeting every SLO.
    pub slo_met_share: Option<f64>,
    /// Time-averaged requests in flight over the window.
    pub achieved_concurrency_mean: f64,
    /// Most requests in flight at once during the window.
    pub achieved_concurrency_peak: u32,
    /// Open loop: sent − scheduled, ms (waiting for the in-flight cap included).
    pub send_lag_ms: Option<Distribution>,
    /// Open loop: the scheduling priority the pacer thread got (`real-time`, `raised` or
    /// `normal`; the first two need privileges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacer_priority: Option<String>,
    /// Open loop: first token − scheduled, ms.
    pub ttft_from_scheduled_ms: Option<Distribution>,
    /// Open loop: final event − scheduled, ms.
    pub e2e_from_scheduled_ms: Option<Distribution>,
    /// A staged load: which stage this case is, its levels, and whether it ramps (its figures
    /// are then over a changing load). For a ramp, `nominal_rate_rps` is its mean rate and
    /// `nominal_concurrency` its higher level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<StageLabel>,
    /// The interval of `throughput_tps`, over blocks of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_ci: Option<Ci>,
    /// The interval of `completed_rps`, over blocks of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_ci: Option<Ci>,
    /// The interval of `goodput_rps`, over blocks of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_ci: Option<Ci>,
    /// A stage of a staged load: its own measured `ok` responses, whose tokens its
    /// `throughput_tps` counts over their span (they may end after the stage's time, when the
    /// window would count none of them); absent for other loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_responses: Option<OwnResponses>,
    /// A stage of a staged load: output tokens received inside the stage's time / its length,
    /// the figure other loads report as `throughput_tps`; absent for other loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_throughput_tps: Option<f64>,
}

/// A load's own measured `ok` responses: their tokens of work, and the span from the first one's
/// send to the last one's completion.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OwnResponses {
    /// Responses.
    pub responses: u32,
    /// Their output tokens (embeddings and rerank: the prompt tokens processed).
    pub tokens: f64,
    /// First send and last completion, seconds since the attempt started.
    pub span_s: [Seconds; 2],
}

impl OwnResponses {
    /// Their tokens per second over their span; `None` when the span is empty.
    pub fn tokens_per_s(&self) -> Option<f64> {
        let length = self.span_s[1] - self.span_s[0];
        (length > 0.0).then(|| self.tokens / length)
    }
}

/// A stage's throughput is its own responses' tokens over their span: a stage whose responses
/// ended after its time (an overloaded server drains later) would count none of their tokens in
/// its window and show a collapse that did not happen. The window's figure is kept beside it,
/// and its interval (over blocks of the window) dropped. Other loads keep the window's figures.
pub fn settle_stage(load: &mut LoadSummary) {
    if load.stage.is_none() {
        load.own_responses = None;
        return;
    }
    if let Some(own) = load.own_responses.and_then(|o| o.tokens_per_s()) {
        load.window_throughput_tps = Some(load.throughput_tps);
        load.throughput_tps = own;
        load.throughput_ci = None;
    }
}

/// What the runner did for one case. Records are written as requests end and folded into the
/// figures at once; none is kept, so a case of any length runs in bounded memory.
#[derive(Debug, Default)]
pub struct CaseRun {
    /// The measured requests' figures.
    pub figures: CaseFigures,
    /// Open and continuous loops: the window figures, over every request launched during the
    /// load (those of the warmup time occupy the server in the window too).
    pub load: Option<WindowFigures>,
    /// Open and continuous loops: the measurement window, seconds since the attempt started.
    pub window: Option<(Seconds, Seconds)>,
    /// Whether the run was stopped during this case.
    pub stopped: bool,
    /// Open loop: the scheduling priority the pacer thread got.
    pub pacer_priority: Option<&'static str>,
}

/// The load of a continuous or open-loop case, as `summary.json` names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadShape {
    /// C requests kept in flight.
    ClosedContinuous,
    /// Poisson arrivals.
    Poisson,
    /// Gamma arrivals (`--burstiness`).
    Gamma,
    /// Equally spaced arrivals.
    Constant,
    /// Arrivals from a trace.
    Trace,
    /// An open loop whose process was not recorded.
    #[default]
    Open,
}

impl LoadShape {
    /// The shape's name.
    pub fn as_str(self) -> &'static str {
        match self {
            LoadShape::ClosedContinuous => "closed-continuous",
            LoadShape::Poisson => "poisson",
            LoadShape::Gamma => "gamma",
            LoadShape::Constant => "constant",
            LoadShape::Trace => "trace",
            LoadShape::Open => "open",
        }
    }

    /// The shape of an open loop with `process`.
    pub fn of(process: &Process) -> LoadShape {
        match process {
            Process::Poisson => LoadShape::Poisson,
            Process::Gamma { .. } => LoadShape::Gamma,
            Process::Constant => LoadShape::Constant,
        }
    }
}

impl std::fmt::Display for LoadShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The summary of one case: per round for closed rounds, over the window otherwise, with its soak
/// series when the run asked for one (its GPU figures from `readings`).
pub fn summarise(plan: &CasePlan, run: CaseRun, readings: &[Reading]) -> CaseSummary {
    let (shape, rate, nominal) = match &plan.shape {
        Shape::Rounds { rounds } => return run.figures.finish(&plan.case, *rounds),
        Shape::Sessions { rate_rps, .. } => {
            let mut summary = run.figures.finish(&plan.case, 0);
            summary.complete &= !run.stopped;
            if let Some(s) = &mut summary.sessions {
                s.rate_rps = *rate_rps;
            }
            return summary;
        }
        Shape::ClosedContinuous { .. } => (
            LoadShape::ClosedContinuous,
            None,
            Some(plan.case.concurrency),
        ),
        Shape::Open {
            process,
            rate_rps,
            max_in_flight,
            ..
        } => (LoadShape::of(process), Some(*rate_rps), *max_in_flight),
        Shape::Replay {
            entries,
            max_in_flight,
            ..
        } => {
            let span_s = entries.last().map_or(0.0, |e| e.offset_s);
            let rate = (span_s > 0.0).then(|| (entries.len() - 1) as f64 / span_s);
            (LoadShape::Trace, rate, *max_in_flight)
        }
    };
    let all_ok = run.figures.all_ok();
    let streams = run.figures.streams();
    let mut summary = run.figures.finish(&plan.case, 0);
    let (Some(window), Some(figures)) = (run.window, run.load) else {
        summary.complete = false;
        return summary;
    };
    let (load, series, models) = figures.finish_with_models(window.1, run.stopped);
    attach_window(summary.models.as_mut(), &load, &models, streams);
    let load = LoadSummary {
        shape,
        nominal_concurrency: nominal,
        nominal_rate_rps: rate,
        pacer_priority: run.pacer_priority.map(str::to_owned),
        stage: plan.stage.clone(),
        ..load
    };
    let mut load = load;
    settle_stage(&mut load);
    summary.complete = !run.stopped && all_ok;
    summary.throughput_tps = Spread::with(load.throughput_tps, load.throughput_ci.clone());
    super::pooling::settle(&mut summary);
    summary.load = Some(load);
    summary.series = series.map(|(bins, span)| bins.finish(span, readings, streams));
    summary
}

/// Window figures from `records` (warmups launched during the load included: they occupy the
/// server; the measured ones are told by their phase); `shape` and the nominal figures are left
/// for the caller. The same as feeding a [`WindowFigures`] as the run does.
pub fn window_figures(records: &[&Record], window: (Seconds, Seconds), slo: &Slo) -> LoadSummary {
    let mut figures = WindowFigures::new(window.0, Some(window.1), *slo, None);
    for r in records {
        figures.add(r, None);
    }
    figures.finish(window.1, false).0
}

/// The window figures of a continuous or open-loop case, gathered one record at a time as
/// requests end, in memory that does not grow with the run ([`figures::Figures`]); kept two ways
/// from the case's first far-short response until the case says whether those are short
/// ([`super::short`]).
#[derive(Debug)]
pub struct WindowFigures(super::short::Judged<figures::Figures>);

impl WindowFigures {
    /// A window starting at `w0`; `end` when it is already known (a duration-bound load), else
    /// the runner tells of later and later launches with [`WindowFigures::settle_to`].
    /// `series_s`: cut the window into windows of this length (a soak series).
    pub fn new(w0: Seconds, end: Option<Seconds>, slo: Slo, series_s: Option<Seconds>) -> Self {
        let figures = figures::Figures::new(w0, end, slo, series_s);
        WindowFigures(super::short::Judged::new(figures))
    }

    /// The figures with each named model's requests judged against its own objectives.
    #[must_use]
    pub fn with_model_objectives(mut self, model_slo: &Arc<BTreeMap<String, Slo>>) -> Self {
        self.0.each(|f| f.model_slo = Arc::clone(model_slo));
        self
    }

    /// A request was launched at `at`: none of its span's edges is earlier.
    pub fn launch(&mut self, at: Seconds) {
        self.0.each(|f| f.launch(at));
    }

    /// Adds an ended request launched during the load (warmup time included); `launched`: when,
    /// as told to [`WindowFigures::launch`] (none when replaying records after the run).
    pub fn add(&mut self, r: &Record, launched: Option<Seconds>) {
        self.0.add(r, |f, r| f.add(r, launched));
    }

    /// The window is now known to end at or after `t`: settles every event up to it.
    pub fn settle_to(&mut self, t: Seconds) {
        self.0.each(|f| f.settle_to(t));
    }

    /// Token events, completions and span edges held until they can be settled.
    pub fn unsettled(&self) -> usize {
        self.0.get().unsettled()
    }

    /// The figures of the window ending at `w1`, and the soak bins with the span they cover (a
    /// stopped load's series ends where activity ended).
    pub fn finish(self, w1: Seconds, stopped: bool) -> (LoadSummary, Option<SeriesPart>) {
        let (load, series, _) = self.finish_with_models(w1, stopped);
        (load, series)
    }

    /// As [`WindowFigures::finish`], with each model's part of the window in a mix.
    pub fn finish_with_models(
        self,
        w1: Seconds,
        stopped: bool,
    ) -> (LoadSummary, Option<SeriesPart>, ModelWindows) {
        self.0.finish().0.finish(w1, stopped)
    }
}

/// A soak series' bins and the span they cover.
pub type SeriesPart = (SeriesBins, (Seconds, Seconds));

mod blocks;
mod by_model;
mod figures;
mod in_flight;
mod meets;
pub mod repeats;

pub use by_model::{attach_window, ModelWindow, ModelWindows};
pub use in_flight::concurrency;
use in_flight::Sweep;
use meets::judged;
pub use meets::{meets, Meets};

#[cfg(test)]
mod tests;
