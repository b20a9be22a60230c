//! `client_check` in `summary.json`: the client's own samples judged against fixed bounds. Did
//! llmload keep up with what it measured? See [`Bounds`] for the lines drawn.

use super::case::CaseSummary;
use crate::api::http1::LagTally;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Time between samples.
pub const INTERVAL: Duration = Duration::from_millis(500);

/// Where the self-check draws its lines. A bound counts as crossed when at least
/// `max(2, 10 %)` of the samples cross it, so that one busy moment (startup, writing a summary)
/// is not a verdict.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    /// CPU used, as a share of the cores llmload may run on: at 0.9 its event loop is nearly
    /// always busy and a socket that becomes readable waits for the loop to come round.
    pub cpu_share: f64,
    /// Time llmload's threads were ready to run but waited for a CPU, per second of wall time:
    /// at 0.1 another process takes its cores often enough to delay reads by scheduler slices.
    pub run_queue_wait_share: f64,
    /// How late a sleep may wake, in ms. Tokio's timer ticks every millisecond, so up to 1 ms is
    /// the clock's grain; 5 ms means the event loop was held up.
    pub timer_lag_ms: f64,
    /// Uncapped open loops: the p99 of sent − scheduled, in ms, past which requests left
    /// noticeably later than the arrival process said (coordinated omission).
    pub send_lag_p99_ms: f64,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            cpu_share: 0.9,
            run_queue_wait_share: 0.1,
            timer_lag_ms: 5.0,
            send_lag_p99_ms: 10.0,
        }
    }
}

/// One sample of the client's own behaviour over the last interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// CPU used per second of wall time, in cores (all threads); `None` without `/proc`.
    pub cpu_cores: Option<f64>,
    /// Time spent waiting for a CPU per second of wall time; `None` without schedstat.
    pub run_queue_wait: Option<f64>,
    /// How late the sampling timer fired, in ms.
    pub timer_lag_ms: f64,
    /// How late llmload read bytes after the kernel stamped their arrival, over the interval.
    pub read_lag: LagTally,
}

/// Whether the client kept up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientVerdict {
    /// Every figure stayed inside its bound.
    Ok,
    /// Some bound was crossed: latencies may include the client's own delays.
    ClientMayHaveDistorted,
    /// Too few samples to judge (a run shorter than two intervals).
    TooShort,
}

/// Timer lateness, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lag {
    /// Median.
    pub p50: f64,
    /// 99th percentile (the maximum below 100 samples).
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// How late llmload read the bytes the kernel had stamped on arrival, over the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadLag {
    /// Stamped reads.
    pub reads: u64,
    /// Mean lag, ms.
    pub mean_ms: f64,
    /// Largest lag, ms.
    pub max_ms: f64,
    /// Share of the reads more than 1 ms late.
    pub over_1ms_share: f64,
}

/// The run's read lag from the intervals' tallies; `None` without a stamped read.
fn read_lag(samples: &[Sample]) -> Option<ReadLag> {
    let reads: u64 = samples.iter().map(|s| s.read_lag.reads).sum();
    (reads > 0).then(|| {
        let total_ms: f64 = samples
            .iter()
            .map(|s| s.read_lag.mean_ms * s.read_lag.reads as f64)
            .sum();
        let over: u64 = samples.iter().map(|s| s.read_lag.over_1ms).sum();
        ReadLag {
            reads,
            mean_ms: total_ms / reads as f64,
            max_ms: samples
                .iter()
                .map(|s| s.read_lag.max_ms)
                .fold(0.0, f64::max),
            over_1ms_share: over as f64 / reads as f64,
        }
    })
}

/// `client_check` in `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientCheck {
    /// Time between samples, ms.
    pub interval_ms: f64,
    /// Cores llmload could run on (its CPU affinity).
    pub cores: u32,
    /// Samples taken.
    pub samples: u32,
    /// Mean CPU used, as a share of `cores`.
    pub cpu_share_mean: Option<f64>,
    /// Largest CPU share of one interval.
    pub cpu_share_max: Option<f64>,
    /// Largest time waiting for a CPU per second of wall time, over the intervals.
    pub run_queue_wait_share_max: Option<f64>,
    /// Lateness of the sampling timer.
    pub timer_lag_ms: Lag,
    /// Largest p99 send lag of an uncapped open-loop case, ms.
    pub send_lag_p99_ms: Option<f64>,
    /// Plain-HTTP targets: how late llmload read what the kernel had received. Token times are
    /// the kernel's arrival stamps, so this lag is kept out of the latencies; it shows how busy
    /// the client was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_lag: Option<ReadLag>,
    /// The verdict.
    pub verdict: ClientVerdict,
    /// Each bound crossed, in words with its figures.
    pub reasons: Vec<String>,
    /// The bounds applied.
    pub bounds: Bounds,
}

impl ClientCheck {
    /// What a reader should know, in one paragraph; `None` when the client kept up.
    pub fn warning(&self) -> Option<String> {
        (self.verdict == ClientVerdict::ClientMayHaveDistorted).then(|| {
            let effect = match self.read_lag {
                // Token times are the kernel's: late reads stay out of them, late sends do not.
                Some(_) => {
                    "Its late reads are kept out of the latencies (token times are the kernel's \
                     arrival stamps), but requests may have left late, which lowers throughput \
                     and the concurrency achieved"
                }
                None => "Latencies may include llmload's own delays",
            };
            format!(
                "The client may have distorted this measurement: {}. {effect}; rerun with fewer \
                 concurrent streams, on an idle machine or with more cores.",
                self.reasons.join("; ")
            )
        })
    }

    /// "; reads … late" when reads were stamped by the kernel.
    fn read_lag_words(&self) -> String {
        self.read_lag.map_or_else(String::new, |r| {
            format!(
                "; socket reads {:.3} ms after arrival on average, at most {:.1} ms, {:.1} % \
                 over 1 ms (n = {} reads; token times are the kernel's arrival stamps, so this \
                 is not in the latencies)",
                r.mean_ms,
                r.max_ms,
                r.over_1ms_share * 100.0,
                r.reads
            )
        })
    }

    /// One line for the human views, flagged or not.
    pub fn line(&self) -> String {
        if let Some(warning) = self.warning() {
            return format!("Client self-check: WARNING. {warning}");
        }
        let share = self
            .cpu_share_max
            .map_or("–".to_owned(), |s| format!("{:.0} %", s * 100.0));
        let verdict = match self.verdict {
            ClientVerdict::TooShort => "too short to judge",
            _ => "ok, the client kept up",
        };
        format!(
            "Client self-check: {verdict} (CPU at most {share} of {} core(s), timer lag p99 \
             {:.1} ms, {} samples{}).",
            self.cores,
            self.timer_lag_ms.p99,
            self.samples,
            self.read_lag_words()
        )
    }
}

/// The largest p99 send lag of an open loop without an in-flight cap (with a cap, waiting for a
/// place is the point and is reported as such).
pub fn worst_send_lag(cases: &[CaseSummary]) -> Option<f64> {
    cases
        .iter()
        .filter_map(|c| c.load.as_ref())
        .filter(|l| l.nominal_rate_rps.is_some() && l.nominal_concurrency.is_none())
        .filter_map(|l| l.send_lag_ms.as_ref().map(|d| d.p99))
        .reduce(f64::max)
}

/// Judges `samples` (taken on `cores` cores) against `bounds`.
pub fn assess(
    samples: &[Sample],
    cores: u32,
    send_lag_p99_ms: Option<f64>,
    bounds: &Bounds,
) -> ClientCheck {
    let cores = cores.max(1);
    let figures = Figures::of(samples, cores);
    // A bound is crossed when enough samples cross it, not on one busy moment.
    let needed = 2.max(samples.len().div_ceil(10));
    let reasons = figures.reasons(cores, needed, send_lag_p99_ms, bounds);
    let verdict = if !reasons.is_empty() {
        ClientVerdict::ClientMayHaveDistorted
    } else if samples.len() < 2 {
        ClientVerdict::TooShort
    } else {
        ClientVerdict::Ok
    };
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    ClientCheck {
        interval_ms: INTERVAL.as_secs_f64() * 1e3,
        cores,
        samples: crate::num::count(samples.len()),
        cpu_share_mean: mean(&figures.shares),
        cpu_share_max: figures.shares.iter().copied().reduce(f64::max),
        run_queue_wait_share_max: figures.waits.iter().copied().reduce(f64::max),
        timer_lag_ms: Lag {
            p50: figures.lag(0.5),
            p99: figures.lag(0.99),
            max: figures.lag(1.0),
        },
        send_lag_p99_ms,
        read_lag: read_lag(samples),
        verdict,
        reasons,
        bounds: *bounds,
    }
}

/// The samples' figures: CPU shares, run-queue waits (s per s) and timer lags (ms, sorted).
struct Figures {
    shares: Vec<f64>,
    waits: Vec<f64>,
    lags: Vec<f64>,
}

impl Figures {
    fn of(samples: &[Sample], cores: u32) -> Figures {
        let mut lags: Vec<f64> = samples.iter().map(|s| s.timer_lag_ms).collect();
        lags.sort_unstable_by(f64::total_cmp);
        Figures {
            shares: samples
                .iter()
                .filter_map(|s| s.cpu_cores)
                .map(|c| c / f64::from(cores))
                .collect(),
            waits: samples.iter().filter_map(|s| s.run_queue_wait).collect(),
            lags,
        }
    }

    /// The `q` quantile of the timer lags (nearest rank), 0 without samples.
    fn lag(&self, q: f64) -> f64 {
        let n = self.lags.len();
        let i = crate::num::to_usize((n as f64 * q).ceil()).clamp(1, n.max(1)) - 1;
        self.lags.get(i).copied().unwrap_or(0.0)
    }

    /// Each bound crossed by at least `needed` samples, in words with its figures.
    fn reasons(
        &self,
        cores: u32,
        needed: usize,
        send_lag_p99_ms: Option<f64>,
        bounds: &Bounds,
    ) -> Vec<String> {
        let over = |values: &[f64], bound: f64| values.iter().filter(|v| **v >= bound).count();
        let mut reasons = Vec::new();
        let busy = over(&self.shares, bounds.cpu_share);
        if busy >= needed {
            reasons.push(format!(
                "llmload used {:.0} % or more of its {cores} core(s) in {busy} of {} samples \
                 (at most {:.0} %; bound {:.0} %)",
                bounds.cpu_share * 100.0,
                self.shares.len(),
                self.shares.iter().copied().fold(0.0, f64::max) * 100.0,
                bounds.cpu_share * 100.0
            ));
        }
        let waited = over(&self.waits, bounds.run_queue_wait_share);
        if waited >= needed {
            reasons.push(format!(
                "its threads waited for a CPU taken by other work for up to {:.0} ms per second \
                 in {waited} of {} samples (bound {:.0} ms)",
                self.waits.iter().copied().fold(0.0, f64::max) * 1e3,
                self.waits.len(),
                bounds.run_queue_wait_share * 1e3
            ));
        }
        let late = over(&self.lags, bounds.timer_lag_ms);
        if late >= needed {
            reasons.push(format!(
                "its timer fired late by more than {} ms in {late} of {} samples (p50 {:.1} ms, \
                 p99 {:.1} ms, max {:.1} ms)",
                bounds.timer_lag_ms,
                self.lags.len(),
                self.lag(0.5),
                self.lag(0.99),
                self.lag(1.0)
            ));
        }
        if let Some(lag) = send_lag_p99_ms.filter(|l| *l > bounds.send_lag_p99_ms) {
            reasons.push(format!(
                "open-loop requests left late: send lag p99 {lag:.1} ms (bound {} ms)",
                bounds.send_lag_p99_ms
            ));
        }
        reasons
    }
}

#[cfg(test)]
mod tests;
