//! Records of a continuous or open-loop case → its figures over the measurement window:
//! throughput and goodput over the window only, achieved concurrency next to the nominal one,
//! send lag, and latencies from `scheduled` as well as from `sent` (coordinated omission).

use super::case::CaseSummary;
use super::case_figures::CaseFigures;
use crate::record::{Record, Seconds};
use crate::stats::Spread;
use crate::summary::soak::SeriesBins;
use crate::telemetry::Reading;
use crate::workload::shape::{CasePlan, Shape, Slo};
use std::collections::BTreeMap;
use std::sync::Arc;

pub use super::load::{settle_stage, LoadShape, LoadSummary, OwnResponses};

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
    /// `--profile-server`: the server's profiler around a round of this case.
    pub profile: Option<crate::record::ServerProfile>,
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
    summary.settle_pooling();
    summary.load = Some(Box::new(load));
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
pub use meets::{meets, Meets};

#[cfg(test)]
mod tests;
