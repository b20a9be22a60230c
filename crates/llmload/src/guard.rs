//! The safety guard: the harness's own stop rules (not the hardware's protections), checked on
//! every telemetry reading, on every finished request, and at every process check (before each
//! warmup, round and case, and at the end). The first rule that fires wins: the campaign is
//! cancelled and the verdict says which threshold fired, with the reading that triggered it.

use crate::record::{Record, Status};
use crate::telemetry::Reading;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Stop thresholds; `None` means the rule is off.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Limits {
    /// Stop when a GPU's temperature reaches this, °C.
    pub stop_temp_c: Option<f64>,
    /// Stop when a GPU's T.Limit margin falls to this or below, °C.
    pub stop_margin_c: Option<f64>,
    /// Stop when the campaign has run this long.
    #[serde(serialize_with = "seconds")]
    pub max_duration: Option<Duration>,
    /// Stop after this many failed or invalid measured requests.
    pub max_errors: Option<u32>,
    /// Stop when failed-or-invalid ÷ finished measured requests exceeds this (0–1), after 10.
    pub max_error_rate: Option<f64>,
}

#[expect(
    clippy::ref_option,
    reason = "serde's serialize_with hands the field by reference"
)]
fn seconds<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// The stop rules, named as `summary.json` and the outcome name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// A GPU reached `--stop-temp`.
    Temperature,
    /// A GPU's T.Limit margin fell to `--stop-margin`.
    Margin,
    /// The campaign ran for `--max-duration`.
    Duration,
    /// `--max-errors` failed or invalid responses.
    Errors,
    /// The share of failed or invalid responses passed `--max-error-rate`.
    ErrorRate,
    /// Ctrl-C.
    Interrupted,
}

impl Rule {
    /// Every rule.
    pub const ALL: [Rule; 6] = [
        Rule::Temperature,
        Rule::Margin,
        Rule::Duration,
        Rule::Errors,
        Rule::ErrorRate,
        Rule::Interrupted,
    ];

    /// The rule's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Temperature => "temperature",
            Rule::Margin => "margin",
            Rule::Duration => "duration",
            Rule::Errors => "errors",
            Rule::ErrorRate => "error_rate",
            Rule::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the campaign stopped.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StopVerdict {
    /// Which rule fired.
    pub rule: Rule,
    /// What happened, in words.
    pub reason: String,
    /// The reading that triggered it, for telemetry rules (and the last one otherwise).
    pub sample: Option<Reading>,
    /// Where it was noticed: `telemetry`, `request`, or the process check (`before round 2 of …`).
    pub at: String,
}

/// A stop asked for from outside the run (a signal): a token that fires, and the name of what
/// asked first.
#[derive(Clone, Debug, Default)]
pub struct StopSignal {
    token: CancellationToken,
    name: Arc<OnceLock<&'static str>>,
}

impl StopSignal {
    /// A stop not yet asked for.
    pub fn new() -> StopSignal {
        StopSignal::default()
    }

    /// Asks for the stop, naming what asked (`SIGTERM`); the first name stays.
    pub fn raise(&self, name: &'static str) {
        let _ = self.name.set(name);
        self.token.cancel();
    }

    /// What asked for the stop, once one did.
    pub fn name(&self) -> Option<&'static str> {
        self.name.get().copied()
    }

    /// Waits until the stop is asked for; what asked.
    pub async fn raised(&self) -> &'static str {
        self.token.cancelled().await;
        self.name().unwrap_or("a signal")
    }
}

/// Shared between the sampler, the runner and the interrupt handler.
#[derive(Debug)]
pub struct Guard {
    limits: Limits,
    start: Instant,
    cancel: CancellationToken,
    verdict: Mutex<Option<StopVerdict>>,
    /// The latest reading of each GPU.
    latest: Mutex<BTreeMap<u32, Reading>>,
    finished: AtomicU32,
    failed: AtomicU32,
}

impl Guard {
    /// A guard that cancels `cancel` when it fires.
    pub fn new(limits: Limits, start: Instant, cancel: CancellationToken) -> Guard {
        Guard {
            limits,
            start,
            cancel,
            verdict: Mutex::new(None),
            latest: Mutex::new(BTreeMap::new()),
            finished: AtomicU32::new(0),
            failed: AtomicU32::new(0),
        }
    }

    /// The verdict, once the guard has fired.
    pub fn verdict(&self) -> Option<StopVerdict> {
        self.verdict.lock().map_or(None, |v| v.clone())
    }

    /// Fires with `verdict` unless it already fired.
    pub fn trip(&self, verdict: StopVerdict) {
        if let Ok(mut slot) = self.verdict.lock() {
            if slot.is_none() {
                *slot = Some(verdict);
            }
        }
        self.cancel.cancel();
    }

    /// A new telemetry reading.
    pub fn observe_reading(&self, reading: Reading) {
        if let Some(verdict) = self.check_reading(&reading, "telemetry") {
            self.trip(verdict);
        }
        if let Ok(mut latest) = self.latest.lock() {
            latest.insert(reading.gpu, reading);
        }
    }

    fn check_reading(&self, r: &Reading, at: &str) -> Option<StopVerdict> {
        let margin = r
            .margin_c
            .map_or("not reported".into(), |m| format!("{m} °C"));
        let verdict = |rule: Rule, reason: String| StopVerdict {
            rule,
            reason,
            sample: Some(r.clone()),
            at: at.into(),
        };
        if let Some(limit) = self.limits.stop_temp_c.filter(|&l| r.temperature_c >= l) {
            return Some(verdict(Rule::Temperature, format!(
                "GPU {} reached {} °C, at or above the harness's stop threshold of {limit} °C (T.Limit margin {margin}); a harness threshold, not a hardware protection",
                r.gpu, r.temperature_c
            )));
        }
        match (self.limits.stop_margin_c, r.margin_c) {
            (Some(limit), Some(m)) if m <= limit => Some(verdict(Rule::Margin, format!(
                "GPU {} T.Limit margin fell to {m} °C, at or below the harness's stop threshold of {limit} °C (temperature {} °C); a harness threshold, not a hardware protection",
                r.gpu, r.temperature_c
            ))),
            _ => None,
        }
    }

    /// A finished measured request.
    pub fn observe_record(&self, record: &Record) {
        let finished = self.finished.fetch_add(1, Ordering::Relaxed) + 1;
        let bad = matches!(record.status, Status::Error | Status::Invalid);
        let failed = self.failed.fetch_add(u32::from(bad), Ordering::Relaxed) + u32::from(bad);
        let at = "request".to_owned();
        if let Some(max) = self.limits.max_errors.filter(|&m| failed >= m) {
            self.trip(StopVerdict {
                rule: Rule::Errors,
                reason: format!("{failed} failed or invalid responses reached --max-errors {max}"),
                sample: None,
                at,
            });
        } else if let Some(max) = self
            .limits
            .max_error_rate
            .filter(|&m| finished >= 10 && f64::from(failed) / f64::from(finished) > m)
        {
            let rate = f64::from(failed) / f64::from(finished);
            self.trip(StopVerdict { rule: Rule::ErrorRate, reason: format!("{failed} of {finished} responses failed or invalid ({rate:.3}), above --max-error-rate {max}"), sample: None, at });
        }
    }

    /// A process check: returns `true` when the campaign must stop now.
    pub fn process_check(&self, at: &str) -> bool {
        if self.cancel.is_cancelled() {
            return true;
        }
        let readings = self.readings();
        let latest = self.latest();
        if let Some(verdict) = readings.iter().find_map(|r| self.check_reading(r, at)) {
            self.trip(verdict);
        } else if let Some(max) = self
            .limits
            .max_duration
            .filter(|&m| self.start.elapsed() >= m)
        {
            self.trip(StopVerdict {
                rule: Rule::Duration,
                reason: format!(
                    "the campaign ran for --max-duration {}",
                    humantime::format_duration(max)
                ),
                sample: latest,
                at: at.into(),
            });
        }
        self.cancel.is_cancelled()
    }

    /// How far every GPU that reports power has been read: the earliest, over those GPUs, of the
    /// time of its latest reading, seconds since the attempt started; `None` when none does.
    pub fn power_read_to(&self) -> Option<f64> {
        let latest = self.latest.lock().ok()?;
        latest
            .values()
            .filter(|r| r.power_w.is_some())
            .map(|r| r.t_s)
            .min_by(f64::total_cmp)
    }

    /// The latest reading of every GPU, by GPU.
    pub fn readings(&self) -> Vec<Reading> {
        self.latest
            .lock()
            .map(|l| l.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The stop thresholds.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The latest reading of the hottest GPU.
    pub fn latest(&self) -> Option<Reading> {
        let latest = self.latest.lock().ok()?;
        latest
            .values()
            .max_by(|a, b| a.temperature_c.total_cmp(&b.temperature_c))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(temperature_c: f64, margin_c: Option<f64>) -> Reading {
        serde_json::from_value(serde_json::json!({"t_s": 1.0, "gpu": 0, "temperature_c": temperature_c, "margin_c": margin_c}))
            .expect("valid reading")
    }

    fn guard(limits: Limits) -> Guard {
        Guard::new(limits, Instant::now(), CancellationToken::new())
    }

    #[test]
    fn temperature_fires_at_the_threshold_and_names_it() {
        let g = guard(Limits {
            stop_temp_c: Some(90.0),
            stop_margin_c: Some(2.0),
            ..Limits::default()
        });
        g.observe_reading(reading(89.0, Some(5.0)));
        assert!(g.verdict().is_none());
        g.observe_reading(reading(90.0, Some(3.0)));
        let v = g.verdict().expect("fired");
        assert_eq!(v.rule, Rule::Temperature);
        assert!(
            v.reason.contains("90 °C") && v.reason.contains("margin 3 °C"),
            "{}",
            v.reason
        );
        assert_eq!(v.sample.map(|s| s.temperature_c), Some(90.0));
        assert!(g.process_check("before case 2"));
    }

    #[test]
    fn margin_fires_when_it_comes_first() {
        let g = guard(Limits {
            stop_temp_c: Some(90.0),
            stop_margin_c: Some(2.0),
            ..Limits::default()
        });
        g.observe_reading(reading(86.0, Some(2.0)));
        assert_eq!(g.verdict().map(|v| v.rule), Some(Rule::Margin));
        g.observe_reading(reading(95.0, Some(1.0)));
        assert_eq!(
            g.verdict().map(|v| v.rule),
            Some(Rule::Margin),
            "the first verdict stays"
        );
    }

    #[test]
    fn rules_that_are_off_never_fire() {
        let g = guard(Limits::default());
        g.observe_reading(reading(120.0, Some(-5.0)));
        assert!(!g.process_check("end") && g.verdict().is_none());
    }

    #[test]
    fn duration_fires_at_a_process_check() {
        let g = Guard::new(
            Limits {
                max_duration: Some(Duration::from_millis(1)),
                ..Limits::default()
            },
            Instant::now() - Duration::from_secs(1),
            CancellationToken::new(),
        );
        assert!(g.process_check("before round 1"));
        assert_eq!(
            g.verdict().map(|v| (v.rule, v.at)),
            Some((Rule::Duration, "before round 1".into()))
        );
    }
}
