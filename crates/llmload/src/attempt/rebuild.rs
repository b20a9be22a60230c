//! A summary rebuilt from an attempt's records: every case's figures, the window figures of
//! continuous and open-loop cases (`load`), soak series and a sweep's saturation analysis
//! (`sweep`), with the same accumulators the run fed as requests ended, so that a rebuilt report
//! matches the one the run wrote. The records are replayed twice (once to learn each case's
//! launches, once to fold them in), never held.

use crate::attempt::campaign::{Campaign, CampaignCase, CaseBound, CaseLoad};
pub(crate) use crate::attempt::closing::End;
use crate::attempt::closing::{self, Recorded};
use crate::record::{Phase, Record, Seconds, Status};
use crate::stats::Spread;
use crate::summary::energy::{self, Window};
use crate::summary::saturation::{self, Point};
use crate::summary::short::Judged;
use crate::summary::soak::SeriesBins;
use crate::summary::sweep::{Axis, SweepSection};
use crate::summary::window::{LoadShape, LoadSummary, SeriesPart, WindowFigures};
use crate::summary::{CaseFigures, CaseSummary, Summary};
use crate::telemetry::Reading;
use crate::workload::shape::Slo;
use std::collections::BTreeMap;

/// Whether the case was a continuous or open loop, whose figures are over a window.
pub(crate) fn is_window(c: &CampaignCase) -> bool {
    matches!(
        c.load,
        Some(CaseLoad::ClosedContinuous { .. } | CaseLoad::Open { .. } | CaseLoad::Replay { .. })
    )
}

/// Hands every record of an attempt to the callback, in file order; called once per pass. From a
/// file it reads one line at a time, so that a long run's records are never held whole.
pub(crate) type Replay<'a> = dyn FnMut(&mut dyn FnMut(&Record)) -> crate::error::Result<()> + 'a;

/// What the first pass learns of a case: whether it left records, and its launches (for a window
/// the run did not record, and for whether the records prove a case the run did not close).
#[derive(Debug)]
struct Seen {
    warmups: usize,
    first_launch: Seconds,
    last_launch: Seconds,
    /// Its measured requests.
    measured: Recorded,
    /// The launches of its load (continuous and open loops), by serial.
    load: Recorded,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen {
            warmups: 0,
            first_launch: f64::INFINITY,
            last_launch: f64::NEG_INFINITY,
            measured: Recorded::default(),
            load: Recorded::default(),
        }
    }
}

impl Seen {
    /// What of the records counts against the plan of `c`.
    fn recorded(&self, c: &CampaignCase) -> &Recorded {
        if is_window(c) {
            &self.load
        } else {
            &self.measured
        }
    }
}

/// Why each case the run's summary does not hold is not complete (by id; absent when its
/// records prove it).
fn unclosed(
    campaign: &Campaign,
    previous: Option<&Summary>,
    seen: &BTreeMap<String, Seen>,
    end: End,
) -> BTreeMap<String, String> {
    let recorded: Vec<(&CampaignCase, &Recorded)> = campaign
        .cases
        .iter()
        .filter_map(|c| seen.get(&c.id).map(|s| (c, s.recorded(c))))
        .collect();
    let closed = |c: &CampaignCase| previous.is_some_and(|p| p.cases.iter().any(|b| b.id == c.id));
    closing::unclosed(&recorded, closed, campaign.config.rounds, end)
}

/// One case being rebuilt from its records, with the accumulators the run used.
struct Rebuilt<'a> {
    c: &'a CampaignCase,
    before: Option<&'a CaseSummary>,
    figures: CaseFigures,
    window: Option<(Seconds, Seconds)>,
    load: Option<WindowFigures>,
    series: Option<Judged<SeriesPart>>,
    warmups: usize,
    /// Why its records do not prove it complete, when the run did not close it.
    unproven: Option<String>,
}

/// The per-case summaries of `campaign` from its records (two passes of `replay`), with what the
/// records cannot say taken from `previous`: the measurement windows and the soak series' spans.
/// The series take their GPU figures from `telemetry`.
pub(crate) fn cases(
    campaign: &Campaign,
    (previous, end): (Option<&Summary>, End),
    telemetry: &[Reading],
    replay: &mut Replay,
) -> crate::error::Result<Vec<CaseSummary>> {
    let singles = campaign.config.warmup as usize;
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    replay(&mut |r| {
        if r.phase == Phase::Canary {
            return;
        }
        let s = seen.entry(r.case.clone()).or_default();
        s.warmups += usize::from(r.phase == Phase::Warmup);
        if r.phase == Phase::Measured {
            s.measured.add(r.index);
        }
        if r.phase == Phase::Measured || s.warmups > singles {
            let launch = r.scheduled_s.unwrap_or(r.sent_s);
            s.first_launch = s.first_launch.min(launch);
            s.last_launch = s.last_launch.max(launch);
            s.load.add(r.index);
        }
    })?;
    let mut unclosed = unclosed(campaign, previous, &seen, end);
    let mut rebuilt: Vec<Rebuilt> = campaign
        .cases
        .iter()
        .filter_map(|c| {
            let before = previous.and_then(|p| p.cases.iter().find(|p| p.id == c.id));
            let seen = seen.get(&c.id);
            (before.is_some() || seen.is_some()).then(|| {
                let mut rebuilt = Rebuilt::new(campaign, c, before, seen);
                rebuilt.unproven = unclosed.remove(&c.id);
                rebuilt
            })
        })
        .collect();
    let index: BTreeMap<&str, usize> = rebuilt
        .iter()
        .enumerate()
        .map(|(i, b)| (b.c.id.as_str(), i))
        .collect();
    replay(&mut |r| {
        if let Some(&i) = index.get(r.case.as_str()) {
            rebuilt[i].add(r, singles);
        }
    })?;
    let (mut cases, windows): (Vec<CaseSummary>, Vec<Window>) = rebuilt
        .into_iter()
        .map(|b| b.finish(campaign, telemetry))
        .unzip();
    let interval_s = campaign.config.telemetry_interval_s;
    energy::attach(&mut cases, &windows, telemetry, interval_s);
    crate::summary::cost::attach(&mut cases, &windows, campaign.config.price);
    crate::summary::canaries::check(
        &mut cases,
        campaign.config.canaries.and_then(|c| c.fail_above),
    );
    Ok(cases)
}

impl<'a> Rebuilt<'a> {
    fn new(
        campaign: &Campaign,
        c: &'a CampaignCase,
        before: Option<&'a CaseSummary>,
        seen: Option<&Seen>,
    ) -> Rebuilt<'a> {
        let window = match (is_window(c), before) {
            (false, _) => None,
            (true, Some(b)) => b.load.as_ref().map(|l| (l.window_s[0], l.window_s[1])),
            (true, None) => seen.and_then(|s| estimated_window(c, s)),
        };
        let slo = campaign.config.slo.slo();
        let series = before
            .and_then(|b| b.series.as_ref())
            .and_then(|s| match (s.windows.first(), s.windows.last()) {
                (Some(first), Some(last)) => Some((
                    SeriesBins::new(first.span_s[0], s.window_s),
                    (first.span_s[0], last.span_s[1]),
                )),
                _ => None,
            })
            .map(Judged::new);
        Rebuilt {
            c,
            before,
            figures: CaseFigures::default(),
            window,
            load: window.map(|(w0, w1)| {
                WindowFigures::new(w0, Some(w1), slo, None)
                    .with_model_objectives(&campaign.config.model_objectives())
            }),
            series,
            warmups: 0,
            unproven: None,
        }
    }

    /// One record of the case: measured ones into the figures; those launched during the load
    /// (measured, or warmups after the `singles` sent one at a time) into the window figures;
    /// every one into the series.
    fn add(&mut self, r: &Record, singles: usize) {
        if r.phase == Phase::Canary {
            // Beside the load, in none of its figures.
            self.figures.add_canary(r);
            return;
        }
        let measured = r.phase == Phase::Measured;
        self.warmups += usize::from(!measured);
        if measured {
            self.figures.add(r);
        } else {
            self.figures.add_warmup(r);
        }
        if let (true, Some(load)) = (measured || self.warmups > singles, &mut self.load) {
            load.add(r, None);
        }
        if let Some(series) = &mut self.series {
            series.add(r, |(bins, span), r| {
                if measured {
                    bins.add_request(r);
                }
                if r.status == Status::Ok {
                    r.event_times()
                        .filter(|&(t, _)| t >= span.0 && t <= span.1)
                        .for_each(|(t, n)| bins.add_tokens(t, n));
                }
            });
        }
    }

    /// The case's summary, and what its energy is taken over.
    fn finish(mut self, campaign: &Campaign, telemetry: &[Reading]) -> (CaseSummary, Window) {
        let round_spans = self.figures.round_spans();
        let unproven = self.unproven.take();
        // What the server was asked outside the load is in no record: kept from the run's word.
        let asked = self
            .before
            .map(|b| (b.prefix_cache_reset.clone(), b.server_profile.clone()));
        let mut summary = self.summary(campaign, telemetry);
        if let Some((reset, profile)) = asked {
            summary.prefix_cache_reset = reset;
            summary.server_profile = profile;
        }
        if let Some(why) = unproven {
            summary.complete = false;
            summary.incomplete_reason = Some(why);
        }
        let window = Window::of(&summary, round_spans);
        (summary, window)
    }

    fn summary(self, campaign: &Campaign, telemetry: &[Reading]) -> CaseSummary {
        let c = self.c;
        let before_series = self.before.and_then(|b| b.series.clone());
        let series = match self.series {
            Some(series) => {
                let ((bins, span), _) = series.finish();
                Some(bins.finish(span, telemetry, self.figures.streams()))
            }
            None => before_series,
        };
        if matches!(c.load, Some(CaseLoad::Sessions { .. })) {
            // Sessions have no rounds; a stop between two sessions leaves no record to tell it,
            // so the run's own word on completeness is kept where there is one.
            let mut summary = self.figures.finish(&c.case(), 0);
            summary.complete &= self.before.is_none_or(|b| b.complete);
            summary.series = series;
            if let Some(s) = &mut summary.sessions {
                s.rate_rps = c.rate_rps();
            }
            return summary;
        }
        if !is_window(c) {
            let rounds = c.rounds(campaign.config.rounds);
            let mut summary = self.figures.finish(&c.case(), rounds);
            summary.series = series;
            return summary;
        }
        let all_ok = self.figures.all_ok();
        let streams = self.figures.streams();
        let launched = self.figures.requests() as usize + self.warmups;
        let mut summary = self.figures.finish(&c.case(), 0);
        summary.series = series;
        let (Some(window), Some(load)) = (self.window, self.load) else {
            summary.complete = false;
            return summary;
        };
        // Without the run's summary, the case may have been cut short (the run was killed):
        // its window then ends at its last activity, and it is complete only if it reached
        // the end it was planned to have.
        let (figures, _, models) = load.finish_with_models(window.1, self.before.is_none());
        crate::summary::window::attach_window(summary.models.as_mut(), &figures, &models, streams);
        let finished = self.before.map_or_else(
            || figures.window_s[1] >= window.1 - 1e-9 && launched_all(c, launched),
            |b| b.complete,
        );
        let (shape, rate, nominal) = nominal(c, self.before);
        let load = LoadSummary {
            shape,
            nominal_concurrency: nominal,
            nominal_rate_rps: rate,
            pacer_priority: self
                .before
                .and_then(|b| b.load.as_ref())
                .and_then(|l| l.pacer_priority.clone()),
            stage: c.stage.clone(),
            ..figures
        };
        let mut load = load;
        crate::summary::window::settle_stage(&mut load);
        summary.complete = finished && all_ok;
        summary.throughput_tps = Spread::with(load.throughput_tps, load.throughput_ci.clone());
        summary.settle_pooling();
        summary.load = Some(Box::new(load));
        summary
    }
}

/// The shape's name, the nominal rate and the nominal concurrency (or in-flight cap). A trace's
/// rate comes from its arrivals, which `campaign.json` does not hold: it is taken from `before`.
fn nominal(
    c: &CampaignCase,
    before: Option<&CaseSummary>,
) -> (LoadShape, Option<f64>, Option<u32>) {
    match &c.load {
        Some(CaseLoad::ClosedContinuous { .. }) => {
            (LoadShape::ClosedContinuous, None, Some(c.concurrency))
        }
        Some(CaseLoad::Replay { max_in_flight, .. }) => (
            LoadShape::Trace,
            before
                .and_then(|b| b.load.as_ref())
                .and_then(|l| l.nominal_rate_rps),
            *max_in_flight,
        ),
        _ => {
            let kind = c.process().map_or(LoadShape::Open, LoadShape::of);
            (kind, c.rate_rps(), c.max_in_flight())
        }
    }
}

/// Whether `launched` requests are all a request-bounded case was to launch (a duration-bounded
/// one is judged by its window).
fn launched_all(c: &CampaignCase, launched: usize) -> bool {
    c.bound()
        .and_then(CaseBound::requests)
        .is_none_or(|n| u64::try_from(launched).unwrap_or(u64::MAX) >= n)
}

/// Without the run's own summary: the window from the first launch plus the warmup time to the
/// end of the duration, or to the last launch.
fn estimated_window(c: &CampaignCase, seen: &Seen) -> Option<(Seconds, Seconds)> {
    let start = Some(seen.first_launch).filter(|t| t.is_finite())?;
    let w0 = start + c.warmup_s.unwrap_or(0.0);
    let duration = c
        .bound()
        .and_then(CaseBound::duration_s)
        .filter(|_| matches!(c.load, Some(CaseLoad::ClosedContinuous { .. })));
    let w1 = match duration {
        Some(d) => start + d,
        None => seen.last_launch.max(w0),
    };
    Some((w0, w1.max(w0)))
}

/// A sweep's section with its analysis recomputed from `cases`; the axis, the stop rules and why
/// the sweep stopped come from the run's `before`.
pub(crate) fn sweep(
    before: Option<&SweepSection>,
    cases: &[CaseSummary],
    slo: &Slo,
) -> Option<SweepSection> {
    let before = before?;
    let points: Vec<Point> = saturation::curve(cases);
    Some(SweepSection {
        analysis: saturation::analyse(
            &points,
            slo,
            saturation::shape_of(cases, before.axis != Axis::Concurrency),
        ),
        ..before.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    /// The fixture's `in64-c2-out4` records replayed as a closed-continuous case with a
    /// warmup time: the first warmup record is the single warmup request, the second is a
    /// launch of the warmup time.
    fn continuous() -> (Campaign, Vec<Record>) {
        let mut campaign = fixture::campaign();
        campaign.config.warmup = 1;
        campaign.cases.retain(|c| c.id == "in64-c2-out4");
        let c = &mut campaign.cases[0];
        c.load = Some(CaseLoad::ClosedContinuous {
            bound: CaseBound::Duration(0.25),
        });
        c.warmup_s = Some(0.05);
        let mut records: Vec<Record> = fixture::records()
            .into_iter()
            .filter(|r| r.case == "in64-c2-out4")
            .collect();
        let mut launched = records[1].clone();
        launched.phase = Phase::Warmup;
        launched.round = None;
        launched.sent_s = 0.55;
        launched.done_s = Some(0.58);
        records.insert(1, launched);
        for r in &mut records {
            r.round = None;
        }
        // Closed-continuous relaunches until the end of its duration: the last request is still
        // going at 0.80 s.
        let last = records.last_mut().expect("records");
        let shift = 0.07;
        last.sent_s += shift;
        last.first_token_s = last.first_token_s.map(|t| t + shift);
        last.done_s = last.done_s.map(|t| t + shift);
        // The load's launches carry their serials; the single warmup keeps its own index.
        for (serial, r) in (0..).zip(records.iter_mut().skip(1)) {
            r.index = serial;
        }
        (campaign, records)
    }

    /// `continuous()` with a closed-rounds case after it that left one record: the run got
    /// past the continuous case.
    fn continuous_then_more() -> (Campaign, Vec<Record>) {
        let (mut campaign, mut records) = continuous();
        let mut after = campaign.cases[0].clone();
        after.id = "after".into();
        after.load = Some(CaseLoad::Rounds {
            rounds: campaign.config.rounds,
        });
        campaign.cases.push(after);
        let mut next = records[2].clone();
        next.case = "after".into();
        next.round = Some(1);
        next.index = 0;
        next.sent_s = 1.0;
        next.done_s = Some(1.1);
        records.push(next);
        (campaign, records)
    }

    #[test]
    fn a_continuous_case_gets_its_window_figures_back() {
        let (campaign, records) = continuous_then_more();
        let report = crate::attempt::load::from_records(&campaign, records, None);
        let case = &report.summary.cases[0];
        let load = case.load.as_ref().expect("window figures");
        assert_eq!(load.shape, LoadShape::ClosedContinuous);
        assert_eq!(load.nominal_concurrency, Some(2));
        // Launches from 0.55 s: the window is [0.60, 0.80] s.
        assert!(
            (load.window_s[0] - 0.60).abs() < 1e-9,
            "{:?}",
            load.window_s
        );
        assert!(
            (load.window_s[1] - 0.80).abs() < 1e-9,
            "{:?}",
            load.window_s
        );
        assert_eq!(
            load.requests_launched, 5,
            "the single warmup is not a launch"
        );
        assert!(case.complete, "{:?}", case.incomplete_reason);
        assert_eq!(case.incomplete_reason, None);
        assert_eq!(case.counts.ok, 4);
        let throughput = case.throughput_tps.as_ref().expect("throughput").mean;
        assert!((throughput - load.throughput_tps).abs() < 1e-12);
    }

    #[test]
    fn a_case_cut_short_without_a_summary_is_incomplete_and_measured_to_its_last_activity() {
        let (campaign, mut records) = continuous();
        // The run was killed: the last request never ended, nothing after 0.7 s.
        records.pop();
        let report = crate::attempt::load::from_records(&campaign, records, None);
        let case = &report.summary.cases[0];
        let load = case.load.as_ref().expect("window figures");
        assert!(!case.complete, "{case:?}");
        assert!(load.window_s[1] < 0.80, "{:?}", load.window_s);
        assert_eq!(
            case.incomplete_reason.as_deref(),
            Some(
                "the run ended without closing this case: 4 of 4 requests recorded (of those \
                 launched before the end; the load was to last 0.25 s)"
            )
        );
    }

    #[test]
    fn a_case_whose_records_reach_its_end_is_incomplete_when_the_run_never_closed_it() {
        // Every launch recorded and the duration reached, but nothing came after: the run may
        // have been killed before it closed the case.
        let (campaign, records) = continuous();
        let report = crate::attempt::load::from_records(&campaign, records, None);
        let case = &report.summary.cases[0];
        assert!(!case.complete);
        let why = case.incomplete_reason.as_deref().expect("a reason");
        assert!(why.contains("without closing this case: 5 of 5"), "{why}");
        // The run's own summary closes it.
        let (campaign, records) = continuous_then_more();
        let closed = crate::attempt::load::from_records(&campaign, records.clone(), None);
        let mut previous = closed.summary.clone();
        previous.cases.truncate(1);
        let (campaign, mut records) = continuous();
        records.retain(|r| r.case != "after");
        let again = crate::attempt::load::from_records(&campaign, records, Some(&previous));
        assert!(again.summary.cases[0].complete);
        assert_eq!(again.summary.cases[0].incomplete_reason, None);
    }

    #[test]
    fn a_lost_launch_leaves_a_case_the_run_got_past_incomplete() {
        let (campaign, mut records) = continuous_then_more();
        // Serial 2 was in flight when the run was killed (a staged load goes on without a
        // drain): its record is missing.
        records
            .retain(|r| !(r.case == "in64-c2-out4" && r.index == 2 && r.phase == Phase::Measured));
        let report = crate::attempt::load::from_records(&campaign, records, None);
        let case = &report.summary.cases[0];
        assert!(!case.complete);
        assert_eq!(
            case.incomplete_reason.as_deref(),
            Some("the run ended before every request of this case was recorded: 4 of 5 requests recorded")
        );
        // The case after it, the one the run ended in, is unclosed.
        let after = &report.summary.cases[1];
        assert!(!after.complete);
        assert!(after.incomplete_reason.is_some());
    }

    #[test]
    fn the_recorded_window_wins_and_a_stopped_case_stays_incomplete() {
        let (campaign, records) = continuous_then_more();
        let first = crate::attempt::load::from_records(&campaign, records.clone(), None).summary;
        let mut before = first.clone();
        let load = before.cases[0].load.as_mut().expect("load");
        load.window_s = [0.6, 0.7];
        let again = crate::attempt::load::from_records(&campaign, records.clone(), Some(&before));
        let rebuilt = again.summary.cases[0].load.as_ref().expect("load");
        assert_eq!(rebuilt.window_s, [0.6, 0.7]);
        let mut stopped = first;
        stopped.cases[0].load = None;
        let again = crate::attempt::load::from_records(&campaign, records, Some(&stopped));
        assert!(!again.summary.cases[0].complete);
        assert!(again.summary.cases[0].load.is_none());
    }
}
