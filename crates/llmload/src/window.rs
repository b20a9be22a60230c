//! Records of a continuous or open-loop case → its figures over the measurement window (SPEC §3):
//! throughput and goodput over the window only, achieved concurrency next to the nominal one,
//! send lag, and latencies from `scheduled` as well as from `sent` (coordinated omission).

use crate::record::{Record, Seconds, Status};
use crate::runner::CaseRun;
use crate::stats::{Distribution, Spread};
use crate::summary::CaseSummary;
use crate::workload::shape::{CasePlan, Shape, Slo};
use serde::{Deserialize, Serialize};

/// Window figures of one continuous or open-loop case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadSummary {
    /// `closed-continuous` or the arrival process.
    pub shape: String,
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
}

/// The summary of one case: per round for closed rounds, over the window otherwise.
pub fn summarise(plan: &CasePlan, run: &CaseRun, slo: &Slo) -> CaseSummary {
    let (shape, rate, nominal) = match &plan.shape {
        Shape::Rounds { rounds } => return CaseSummary::new(&plan.case, *rounds, &run.records),
        Shape::ClosedContinuous { .. } => (
            "closed-continuous".to_owned(),
            None,
            Some(plan.case.concurrency),
        ),
        Shape::Open {
            process,
            rate_rps,
            max_in_flight,
            ..
        } => {
            let name = serde_json::to_value(process)
                .ok()
                .and_then(|v| v["kind"].as_str().map(str::to_owned));
            (
                name.unwrap_or_else(|| "open".into()),
                Some(*rate_rps),
                *max_in_flight,
            )
        }
        Shape::Replay {
            entries,
            max_in_flight,
            ..
        } => {
            let span_s = entries.last().map_or(0.0, |e| e.offset_s);
            let rate = (span_s > 0.0).then(|| (entries.len() - 1) as f64 / span_s);
            ("trace".to_owned(), rate, *max_in_flight)
        }
    };
    let mut summary = CaseSummary::new(&plan.case, 0, &run.records);
    let Some(window) = run.window else {
        summary.complete = false;
        return summary;
    };
    let all: Vec<&Record> = run.warmup.iter().chain(&run.records).collect();
    let load = window_figures(&all, &run.records, window, slo);
    let load = LoadSummary {
        shape,
        nominal_concurrency: nominal,
        nominal_rate_rps: rate,
        pacer_priority: run.pacer_priority.map(str::to_owned),
        ..load
    };
    summary.complete = !run.stopped
        && !run.records.is_empty()
        && run.records.iter().all(|r| r.status == Status::Ok);
    summary.throughput_tps = Spread::of(&[load.throughput_tps]);
    summary.load = Some(load);
    summary
}

/// Window figures from `all` records (warmup included: they occupy the server) and the
/// `measured` ones; `shape` and the nominal figures are left for the caller.
pub fn window_figures(
    all: &[&Record],
    measured: &[Record],
    window: (Seconds, Seconds),
    slo: &Slo,
) -> LoadSummary {
    let (w0, w1) = window;
    let length_s = (w1 - w0).max(1e-9);
    let inside = |t: Seconds| t >= w0 && t <= w1;
    let ok = || measured.iter().filter(|r| r.status == Status::Ok);
    let tokens: f64 = all
        .iter()
        .filter(|r| r.status == Status::Ok)
        .flat_map(|r| event_times(r))
        .filter(|&(t, _)| inside(t))
        .map(|(_, n)| f64::from(n))
        .sum();
    let completed: Vec<&Record> = ok().filter(|r| r.done_s.is_some_and(inside)).collect();
    let met = completed.iter().filter(|r| meets(r, slo)).count();
    let (mean, peak) = concurrency(all, window);
    let from_scheduled = |end: fn(&Record) -> Option<Seconds>| {
        let mut v: Vec<f64> = ok()
            .filter_map(|r| Some((end(r)? - r.scheduled_s?) * 1e3))
            .collect();
        Distribution::from_samples(&mut v)
    };
    let mut lag: Vec<f64> = measured
        .iter()
        .filter_map(|r| Some((r.sent_s - r.scheduled_s?) * 1e3))
        .collect();
    LoadSummary {
        shape: String::new(),
        nominal_concurrency: None,
        nominal_rate_rps: None,
        window_s: [w0, w1],
        requests_launched: all.len() as u32,
        completed_rps: completed.len() as f64 / length_s,
        throughput_tps: tokens / length_s,
        goodput_rps: slo.is_set().then(|| met as f64 / length_s),
        slo_met_share: (slo.is_set() && !completed.is_empty())
            .then(|| met as f64 / completed.len() as f64),
        achieved_concurrency_mean: mean,
        achieved_concurrency_peak: peak,
        send_lag_ms: Distribution::from_samples(&mut lag),
        pacer_priority: None,
        ttft_from_scheduled_ms: from_scheduled(|r| r.first_token_s),
        e2e_from_scheduled_ms: from_scheduled(|r| r.done_s),
    }
}

/// (time, tokens) of each token-carrying event, seconds since the attempt started.
fn event_times(r: &Record) -> impl Iterator<Item = (Seconds, u32)> + '_ {
    r.event_ms.iter().enumerate().map(|(i, ms)| {
        let tokens = r.event_tokens.get(i).copied().unwrap_or(1);
        (r.sent_s + ms / 1e3, tokens)
    })
}

/// Whether a response meets every objective; TTFT and E2E count from `scheduled` where there is
/// one, so that waiting in the client counts against the server's budget as the user feels it.
pub fn meets(r: &Record, slo: &Slo) -> bool {
    let start = r.scheduled_s.unwrap_or(r.sent_s);
    let within = |value_ms: Option<f64>, limit: Option<std::time::Duration>| {
        limit.is_none_or(|l| value_ms.is_some_and(|v| v <= l.as_secs_f64() * 1e3))
    };
    within(r.first_token_s.map(|t| (t - start) * 1e3), slo.ttft)
        && within(r.tpot_ms(), slo.tpot)
        && within(r.done_s.map(|t| (t - start) * 1e3), slo.e2e)
}

/// (time-averaged, peak) requests in flight over `window`; a request is in flight from `sent`
/// to its final event (or its last token event when it failed).
pub fn concurrency(records: &[&Record], window: (Seconds, Seconds)) -> (f64, u32) {
    let (w0, w1) = window;
    let spans: Vec<(Seconds, Seconds)> = records.iter().map(|r| (r.sent_s, end_of(r))).collect();
    let area: f64 = spans
        .iter()
        .map(|&(s, e)| (e.min(w1) - s.max(w0)).max(0.0))
        .sum();
    let mut edges: Vec<(Seconds, i32)> =
        spans.iter().flat_map(|&(s, e)| [(s, 1), (e, -1)]).collect();
    // Ends sort before starts at the same instant: back-to-back requests do not overlap.
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let at_start = spans.iter().filter(|&&(s, e)| s <= w0 && e > w0).count() as i32;
    let (mut now, mut peak) = (0_i32, at_start);
    for (t, delta) in edges {
        now += delta;
        if delta > 0 && t >= w0 && t <= w1 {
            peak = peak.max(now);
        }
    }
    (area / (w1 - w0).max(1e-9), peak.max(0) as u32)
}

/// When a request stopped occupying the server: its final event, or its last token event (or
/// its send) when it failed.
fn end_of(r: &Record) -> Seconds {
    r.done_s
        .unwrap_or_else(|| r.sent_s + r.event_ms.last().copied().unwrap_or(0.0) / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(sent: f64, done: f64, scheduled: Option<f64>, tokens: u32) -> Record {
        let step = (done - sent) * 1e3 / f64::from(tokens);
        let events = (1..=tokens).map(|i| f64::from(i) * step).collect();
        crate::record::ok_record(sent, scheduled, events)
    }

    #[test]
    fn concurrency_is_time_averaged_over_the_window_with_its_peak() {
        // Two requests overlap for half the window [0, 4]; one runs the whole window.
        let rs = [
            record(0.0, 4.0, None, 4),
            record(1.0, 3.0, None, 4),
            record(5.0, 6.0, None, 4),
        ];
        let refs: Vec<&Record> = rs.iter().collect();
        let (mean, peak) = concurrency(&refs, (0.0, 4.0));
        assert!((mean - 1.5).abs() < 1e-9, "{mean}");
        assert_eq!(peak, 2);
        let (mean, peak) = concurrency(&refs, (3.5, 4.0));
        assert!((mean - 1.0).abs() < 1e-9 && peak == 1, "{mean} {peak}");
    }

    #[test]
    fn throughput_counts_only_tokens_inside_the_window_and_lag_shows() {
        // 10 tokens over [0, 10]: tokens at 1..=10 s; window [2, 6] holds those at 2..=6.
        let rs = [
            record(0.0, 10.0, Some(0.0), 10),
            record(3.0, 4.0, Some(2.5), 1),
        ];
        let refs: Vec<&Record> = rs.iter().collect();
        let slo = Slo {
            ttft: Some(std::time::Duration::from_millis(900)),
            ..Slo::default()
        };
        let w = window_figures(&refs, &rs, (2.0, 6.0), &slo);
        assert!(
            (w.throughput_tps - 6.0 / 4.0).abs() < 1e-9,
            "{}",
            w.throughput_tps
        );
        // Only the second completes inside; its TTFT from scheduled is 1.5 s: misses the SLO,
        // though from sent (1 s) it would also miss; goodput is 0.
        assert!((w.completed_rps - 0.25).abs() < 1e-9);
        assert_eq!(w.goodput_rps, Some(0.0));
        let lag = w.send_lag_ms.expect("open-loop records have lag");
        assert!((lag.max - 500.0).abs() < 1e-6, "{}", lag.max);
        let slo = Slo {
            ttft: Some(std::time::Duration::from_secs(2)),
            ..Slo::default()
        };
        let w = window_figures(&refs, &rs, (2.0, 6.0), &slo);
        assert_eq!(w.goodput_rps, Some(0.25));
    }
}
