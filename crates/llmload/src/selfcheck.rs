//! The client's self-check, beside the runner: is llmload itself fast enough for what it measured?
//!
//! A benchmark client that runs out of CPU reads its sockets late, and every latency it reports
//! then includes its own queueing — silently. So every run samples, every [`INTERVAL`], how much
//! CPU llmload used (`/proc/self/stat`, user + system, all threads), how long its threads waited
//! for a CPU they wanted (`/proc/self/task/*/schedstat`: another process on its cores), and how
//! late a timer on its runtime fired. At the end the samples become `client_check` in
//! `summary.json`, and a verdict that says in words when the client may have distorted the
//! measurement (see [`Bounds`] for the lines drawn).

use crate::api::http1::READ_LAG;
use crate::summary::client_check::{assess, worst_send_lag, Bounds, ClientCheck, Sample, INTERVAL};
use crate::summary::CaseSummary;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Clock ticks per second of the CPU times in `/proc/*/stat` (Linux's `USER_HZ`, 100 on every
/// architecture it exposes to user space).
const USER_HZ: f64 = 100.0;

/// Told the verdict so far after every sample, while the run goes on (the live views).
pub type Report = Box<dyn Fn(ClientCheck) + Send + Sync>;

/// The sampler, running beside the runner until [`Monitor::finish`].
pub struct Monitor {
    stop: CancellationToken,
    task: JoinHandle<Vec<Sample>>,
}

impl Monitor {
    /// Starts sampling every [`INTERVAL`]; `report`, when given, is told the verdict so far
    /// after each sample.
    pub fn start(report: Option<Report>) -> Monitor {
        let stop = CancellationToken::new();
        let task = tokio::spawn(sample(INTERVAL, stop.clone(), report));
        Monitor { stop, task }
    }

    /// Stops sampling and judges the samples; `cases` gives the open loops' send lag.
    pub async fn finish(self, cases: &[CaseSummary]) -> ClientCheck {
        self.stop.cancel();
        let samples = self.task.await.unwrap_or_default();
        assess(&samples, cores(), worst_send_lag(cases), &Bounds::default())
    }
}

async fn sample(
    interval: Duration,
    stop: CancellationToken,
    report: Option<Report>,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut last = Reading::now();
    READ_LAG.take();
    let mut next = Instant::now() + interval;
    loop {
        tokio::select! {
            () = stop.cancelled() => return samples,
            () = tokio::time::sleep_until(next) => {}
        }
        let woke = Instant::now();
        let reading = Reading::now();
        let wall = reading.at.duration_since(last.at).as_secs_f64();
        let per_second = |now: Option<f64>, before: Option<f64>| {
            Some(((now? - before?) / wall).max(0.0)).filter(|_| wall > 0.0)
        };
        samples.push(Sample {
            cpu_cores: per_second(reading.cpu_s, last.cpu_s),
            run_queue_wait: per_second(reading.wait_s, last.wait_s),
            timer_lag_ms: woke.saturating_duration_since(next).as_secs_f64() * 1e3,
            read_lag: READ_LAG.take(),
        });
        last = reading;
        if let Some(report) = &report {
            report(assess(&samples, cores(), None, &Bounds::default()));
        }
        // Absolute schedule: a late wake does not push the following ones back.
        next += interval;
    }
}

/// The process's CPU counters at one instant.
struct Reading {
    at: std::time::Instant,
    /// User + system CPU time of all threads, seconds.
    cpu_s: Option<f64>,
    /// Time the live threads spent runnable but not running, seconds.
    wait_s: Option<f64>,
}

impl Reading {
    fn now() -> Reading {
        Reading {
            at: std::time::Instant::now(),
            cpu_s: std::fs::read_to_string("/proc/self/stat")
                .ok()
                .and_then(|s| cpu_seconds(&s)),
            wait_s: run_queue_wait_seconds(),
        }
    }
}

/// utime + stime of a `/proc/PID/stat` line, in seconds.
fn cpu_seconds(stat: &str) -> Option<f64> {
    // The command name (field 2) may hold spaces; fields after its `)` are fixed.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    Some((ticks(11)? + ticks(12)?) / USER_HZ)
}

/// Σ over live threads of the run-queue wait in `/proc/self/task/*/schedstat`, in seconds.
fn run_queue_wait_seconds() -> Option<f64> {
    let mut total = 0.0;
    for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let text = std::fs::read_to_string(entry.path().join("schedstat")).ok()?;
        let wait_ns: f64 = text.split_whitespace().nth(1)?.parse().ok()?;
        total += wait_ns / 1e9;
    }
    Some(total)
}

/// Cores this process may run on.
fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| crate::num::count(n.get()))
}

#[cfg(test)]
mod tests;
