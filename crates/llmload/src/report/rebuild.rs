//! The parts of a summary that per-case rounds cannot give, rebuilt from an attempt's records:
//! the window figures of continuous and open-loop cases (`load`) and a sweep's saturation
//! analysis (`sweep`). Both are recomputed with the same functions the run used, so that a
//! rebuilt report matches the one the run wrote.

use crate::record::{Phase, Record, Seconds, Status};
use crate::report::load::{case, Campaign, CampaignCase};
use crate::saturation::{self, Point};
use crate::stats::Spread;
use crate::summary::CaseSummary;
use crate::sweep::SweepSection;
use crate::window::{self, LoadSummary};
use crate::workload::shape::Slo;

/// Whether the case was a continuous or open loop, whose figures are over a window.
pub(crate) fn is_window(c: &CampaignCase) -> bool {
    matches!(
        c.shape.as_deref(),
        Some("closed-continuous" | "open" | "replay")
    )
}

/// A continuous or open-loop case from its records. The window is the one the run recorded in
/// `before` (its previous summary); without one it is estimated from the launches.
pub(crate) fn window_case(
    campaign: &Campaign,
    c: &CampaignCase,
    records: &[Record],
    before: Option<&CaseSummary>,
) -> CaseSummary {
    let of_case = || records.iter().filter(|r| r.case == c.id);
    let measured: Vec<Record> = of_case()
        .filter(|r| r.phase == Phase::Measured)
        .cloned()
        .collect();
    // The first `warmup` warmup records are the single requests sent before the load started;
    // the later ones were launched in its warmup time and occupy the server in the window.
    let launched_warm: Vec<&Record> = of_case()
        .filter(|r| r.phase == Phase::Warmup)
        .skip(campaign.config.warmup as usize)
        .collect();
    let mut summary = CaseSummary::new(&case(c), 0, &measured);
    let window = match before {
        Some(b) => b.load.as_ref().map(|l| (l.window_s[0], l.window_s[1])),
        None => estimated_window(c, &launched_warm, &measured),
    };
    let Some(window) = window else {
        summary.complete = false;
        return summary;
    };
    let all: Vec<&Record> = launched_warm.iter().copied().chain(&measured).collect();
    let slo = campaign.config.slo.slo();
    let figures = window::window_figures(&all, window, &slo);
    let (shape, rate, nominal) = nominal(c, before);
    let load = LoadSummary {
        shape,
        nominal_concurrency: nominal,
        nominal_rate_rps: rate,
        pacer_priority: before
            .and_then(|b| b.load.as_ref())
            .and_then(|l| l.pacer_priority.clone()),
        ..figures
    };
    summary.complete = before.is_none_or(|b| b.complete)
        && !measured.is_empty()
        && measured.iter().all(|r| r.status == Status::Ok);
    summary.throughput_tps = Spread::of(&[load.throughput_tps]);
    summary.load = Some(load);
    summary
}

/// A soak case's series from its records and GPU readings, over the windows the run cut
/// (`before`: where the series started and ended, and the window length, which the records
/// cannot say).
pub(crate) fn series(
    before: &crate::soak::Series,
    id: &str,
    records: &[Record],
    readings: &[crate::telemetry::Reading],
) -> crate::soak::Series {
    let (Some(first), Some(last)) = (before.windows.first(), before.windows.last()) else {
        return before.clone();
    };
    let all: Vec<&Record> = records.iter().filter(|r| r.case == id).collect();
    let measured: Vec<Record> = all
        .iter()
        .filter(|r| r.phase == Phase::Measured)
        .map(|&r| r.clone())
        .collect();
    crate::soak::series(
        &all,
        &measured,
        (first.span_s[0], last.span_s[1]),
        before.window_s,
        readings,
    )
}

/// The shape's name, the nominal rate and the nominal concurrency (or in-flight cap). A trace's
/// rate comes from its arrivals, which `campaign.json` does not hold: it is taken from `before`.
fn nominal(c: &CampaignCase, before: Option<&CaseSummary>) -> (String, Option<f64>, Option<u32>) {
    match c.shape.as_deref() {
        Some("closed-continuous") => ("closed-continuous".into(), None, Some(c.concurrency)),
        Some("replay") => (
            "trace".into(),
            before
                .and_then(|b| b.load.as_ref())
                .and_then(|l| l.nominal_rate_rps),
            c.max_in_flight,
        ),
        _ => {
            let kind = c
                .process
                .as_ref()
                .and_then(|p| p["kind"].as_str())
                .unwrap_or("open");
            (kind.to_owned(), c.rate_rps, c.max_in_flight)
        }
    }
}

/// Without the run's own summary: the window from the first launch plus the warmup time to the
/// end of the duration, or to the last launch.
fn estimated_window(
    c: &CampaignCase,
    warm: &[&Record],
    measured: &[Record],
) -> Option<(Seconds, Seconds)> {
    let launch = |r: &Record| r.scheduled_s.unwrap_or(r.sent_s);
    let launches: Vec<Seconds> = warm
        .iter()
        .map(|r| launch(r))
        .chain(measured.iter().map(launch))
        .collect();
    let start = launches.iter().copied().reduce(f64::min)?;
    let w0 = start + c.warmup_s.unwrap_or(0.0);
    let duration = c
        .bound
        .as_ref()
        .and_then(|b| b["duration_s"].as_f64())
        .filter(|_| c.shape.as_deref() == Some("closed-continuous"));
    let w1 = match duration {
        Some(d) => start + d,
        None => launches.iter().copied().fold(w0, f64::max),
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
        analysis: saturation::analyse(&points, slo, before.axis == "concurrency"),
        ..before.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;
    use crate::report::load::Report;

    /// The fixture's `in64-c2-out4` records replayed as a closed-continuous case with a
    /// warmup time: the first warmup record is the single warmup request, the second is a
    /// launch of the warmup time.
    fn continuous() -> (Campaign, Vec<Record>) {
        let mut campaign = fixture::campaign();
        campaign.config.warmup = 1;
        campaign.cases.retain(|c| c.id == "in64-c2-out4");
        let c = &mut campaign.cases[0];
        c.shape = Some("closed-continuous".into());
        c.warmup_s = Some(0.05);
        c.bound = Some(serde_json::json!({"duration_s": 0.25}));
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
        (campaign, records)
    }

    #[test]
    fn a_continuous_case_gets_its_window_figures_back() {
        let (campaign, records) = continuous();
        let report = Report::from_records(&campaign, records, None);
        let case = &report.summary.cases[0];
        let load = case.load.as_ref().expect("window figures");
        assert_eq!(load.shape, "closed-continuous");
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
        assert!(case.complete);
        assert_eq!(case.counts.ok, 4);
        let throughput = case.throughput_tps.as_ref().expect("throughput").mean;
        assert!((throughput - load.throughput_tps).abs() < 1e-12);
    }

    #[test]
    fn the_recorded_window_wins_and_a_stopped_case_stays_incomplete() {
        let (campaign, records) = continuous();
        let first = Report::from_records(&campaign, records.clone(), None).summary;
        let mut before = first.clone();
        let load = before.cases[0].load.as_mut().expect("load");
        load.window_s = [0.6, 0.7];
        let again = Report::from_records(&campaign, records.clone(), Some(&before));
        let rebuilt = again.summary.cases[0].load.as_ref().expect("load");
        assert_eq!(rebuilt.window_s, [0.6, 0.7]);
        let mut stopped = first;
        stopped.cases[0].load = None;
        let again = Report::from_records(&campaign, records, Some(&stopped));
        assert!(!again.summary.cases[0].complete);
        assert!(again.summary.cases[0].load.is_none());
    }
}
