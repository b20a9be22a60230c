//! A series of repeats run by one attempt run (`--repeat N`): the repeat being run numbers every
//! record and keeps its cases apart; a repeat closes complete only when every case ran and
//! nothing stopped or failed it. The summary written holds the series' cases (the complete
//! repeats' records combined, by the same function `llmload report` uses) and the series.

use super::{stop_text, AttemptRun};
use crate::attempt::campaign::read_campaign;
use crate::guard::Guard;
use crate::record::Record;
use crate::summary::energy::{self, Window};
use crate::summary::repeats::{RepeatRun, Series};
use crate::summary::{CaseSummary, Outcome, OutcomeStatus, Summary};
use crate::telemetry::{self, Reading};

/// A series as [`AttemptRun`] runs it.
#[derive(Debug, Default)]
pub(super) struct SeriesRun {
    /// The repeats closed so far.
    series: Series,
    /// The repeat running (from 1), until it is closed.
    current: Option<u32>,
    /// What the energy of each closed repeat's cases is taken over, in the order of its runs.
    windows: Vec<Vec<Window>>,
    /// The complete repeats combined, as of the last one closed.
    pooled: Vec<CaseSummary>,
}

impl AttemptRun<'_> {
    /// Begins repeat `k` of a series of `planned`: its records carry `k`, its cases are kept
    /// apart from the other repeats'.
    pub fn begin_repeat(&mut self, k: u32, planned: u32) {
        let series = self.series.get_or_insert_with(|| SeriesRun {
            series: Series {
                planned,
                ..Series::default()
            },
            ..SeriesRun::default()
        });
        series.current = Some(k);
        self.runner.repeat = Some(k);
        self.runner.progress.repeat(Some((k, planned)));
    }

    /// Closes the repeat running, of `cases` planned cases: complete when every case ran and
    /// neither a stop nor a failure came during it. Returns whether the series goes on.
    pub fn end_repeat(&mut self, cases: usize) -> crate::error::Result<bool> {
        let Some(k) = self.series.as_ref().and_then(|s| s.current) else {
            return Ok(false);
        };
        let reason = match (self.runner.guard.verdict(), &self.failure) {
            (Some(v), _) => Some(stop_text(&v)),
            (None, Some(failure)) => Some(format!("failed: {failure}")),
            (None, None) if self.summary.cases.len() < cases => {
                Some(format!("{} of {cases} cases run", self.summary.cases.len()))
            }
            (None, None) => None,
        };
        let complete = reason.is_none();
        let run = std::mem::take(&mut self.summary.cases);
        let windows = std::mem::take(&mut self.windows);
        let readings = telemetry::written(&self.dir);
        let Some(series) = self.series.as_mut() else {
            return Ok(false);
        };
        series.current = None;
        series.series.close(k, run, reason);
        series.windows.push(windows);
        if complete {
            series.pooled = pooled(&self.dir, &series.series, &readings)?;
        }
        series.series.compare_repeats();
        Ok(complete)
    }

    /// The summary as it stands, to be written: without a series the attempt run's own; with one,
    /// the series' (see [`SeriesRun::summary`]).
    pub fn written(&self) -> Summary {
        match &self.series {
            Some(series) => {
                series.summary(&self.summary, (&self.runner.guard, self.failure.clone()))
            }
            None => self.summary.clone(),
        }
    }
}

impl SeriesRun {
    /// The end of the last measured round of the closed repeats, seconds since the start.
    pub(super) fn last_end(&self) -> f64 {
        self.windows
            .iter()
            .flatten()
            .filter_map(|w| w.spans.last())
            .map(|s| s.1)
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// Repeats declared.
    pub(super) fn planned(&self) -> u32 {
        self.series.planned
    }

    /// The cases of every closed repeat.
    pub(super) fn all_cases(&self) -> Vec<CaseSummary> {
        let runs = self.series.runs.iter();
        runs.flat_map(|r| r.cases.iter().cloned()).collect()
    }

    /// The series' summary, `running` holding the repeat running (its cases so far) and the
    /// outcome as the guard and the failure (`end`) say: the series' cases and outcome, the
    /// repeat running among its runs.
    fn summary(&self, running: &Summary, (guard, failure): (&Guard, Option<String>)) -> Summary {
        let mut section = self.series.clone();
        if let Some(k) = self.current {
            section.runs.push(RepeatRun {
                repeat: k,
                complete: false,
                cases: running.cases.clone(),
            });
        }
        let total = running.outcome.cases_total;
        let going = running.outcome.status == OutcomeStatus::Running;
        let mut outcome =
            Outcome::new(&self.pooled, total, super::run_state(guard, failure, going));
        outcome.stop_sample.clone_from(&running.outcome.stop_sample);
        if let (true, Some(k)) = (going, self.current) {
            outcome.reason = Some(format!(
                "running: repeat {k} of {}, {} of {total} cases of it run so far",
                section.planned,
                running.cases.len()
            ));
        }
        Summary {
            cases: self.pooled.clone(),
            outcome,
            repeats: Some(section),
            ..running.clone()
        }
    }

    /// The end of a series' run, whose last summary is `summary`: every repeat's energy from the
    /// `readings` of the whole run, the repeats that never began listed, the complete ones
    /// combined once more with those readings (from the records in `dir`); the series' summary.
    pub(super) fn finish(
        mut self,
        summary: &Summary,
        end: (&Guard, Option<String>),
        (dir, interval_s): (&std::path::Path, f64),
        readings: &[Reading],
    ) -> crate::error::Result<Summary> {
        for (run, windows) in self.series.runs.iter_mut().zip(&self.windows) {
            energy::attach(&mut run.cases, windows, readings, interval_s);
        }
        self.series.close_unrun();
        self.pooled = pooled(dir, &self.series, readings)?;
        self.series.compare_repeats();
        self.current = None;
        Ok(self.summary(summary, end))
    }
}

/// The complete repeats of `series` combined, from the records in the attempt folder `dir`.
fn pooled(
    dir: &std::path::Path,
    series: &Series,
    readings: &[Reading],
) -> crate::error::Result<Vec<CaseSummary>> {
    let campaign = read_campaign(dir)?;
    let path = dir.join("requests.jsonl");
    let mut replay =
        |f: &mut dyn FnMut(&Record)| crate::attempt::records::for_each_record(&path, |r| f(&r));
    crate::attempt::series::pooled(&campaign, series, readings, &mut replay)
}
