//! Config: the load-shape settings (`--arrival`, `--rate`, `--duration`, `--requests`,
//! `--max-in-flight`, `--warmup-time`, the SLOs, `--stages`), merged from flags and file and validated.

use super::parse::bad;
use super::parse::optional_duration;
use super::sessions::{graph_replay, session_spec};
use super::{LoadOptions, ObjectiveOptions, Settings, StagesSetting};
use crate::error::ConfigError;
use crate::workload::graph::GraphReplay;
use crate::workload::schedule::Bound;
use crate::workload::session::SessionSpec;
pub(super) use crate::workload::shape::Cancel;
use crate::workload::shape::{Arrival, LoadPoint, ShapeTemplate, Slo};
use crate::workload::stages::{self, LevelKind, Stage};
use crate::workload::trace::{self, TraceEntry};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How requests are launched, shared by every case.
#[derive(Clone, Debug, Serialize)]
pub struct LoadConfig {
    /// How requests are launched.
    pub arrival: Arrival,
    /// Open loop: arrivals per second, one case each.
    pub rate_rps: Vec<f64>,
    /// Gamma arrivals: coefficient of variation of the gaps.
    pub burstiness: f64,
    /// Open and continuous loops: how long to launch requests.
    #[serde(rename = "duration_s", serialize_with = "as_opt_seconds")]
    pub duration: Option<Duration>,
    /// Open and continuous loops: how many requests to launch.
    pub requests: Option<u64>,
    /// Open loop: the most requests in flight.
    pub max_in_flight: Option<u32>,
    /// Open and continuous loops: launches in this first stretch are warmup.
    #[serde(rename = "warmup_time_s", serialize_with = "as_seconds")]
    pub warmup_time: Duration,
    /// Objectives for goodput.
    pub slo: Slo,
    /// A mix of models: the objectives of the models that have their own (the run's, with the
    /// model's in their place).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub model_slo: BTreeMap<String, Slo>,
    /// Tokens that open every prompt, the same in all (a shared system prompt); 0 for none.
    pub system_prompt_tokens: u32,
    /// Trace replay: the file.
    pub trace: Option<PathBuf>,
    /// Trace replay: tokens per `hash_ids` block.
    pub trace_block_tokens: u32,
    /// Trace replay: its arrivals.
    #[serde(skip)]
    pub trace_entries: Option<Arc<Vec<TraceEntry>>>,
    /// A staged load: its stages, written as the flag writes them.
    #[serde(serialize_with = "as_texts")]
    pub stages: Option<Vec<Stage>>,
    /// Multi-turn sessions: what each is.
    pub session: Option<SessionSpec>,
    /// Multi-turn sessions: how many per case.
    pub sessions: Option<u64>,
    /// `--dag`: the session graphs the sessions replay.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::workload::graph::serialize_shared"
    )]
    pub graph: Option<Arc<GraphReplay>>,
    /// `--cancel-after`, `--cancel-share`: the streams the client abandons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<Cancel>,
}

#[expect(
    clippy::ref_option,
    reason = "serde's serialize_with hands the field by reference"
)]
fn as_texts<S: serde::Serializer>(stages: &Option<Vec<Stage>>, s: S) -> Result<S::Ok, S::Error> {
    let texts: Option<Vec<String>> = stages
        .as_ref()
        .map(|v| v.iter().map(ToString::to_string).collect());
    texts.serialize(s)
}

#[expect(
    clippy::ref_option,
    reason = "serde's serialize_with hands the field by reference"
)]
fn as_opt_seconds<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

fn as_seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// The gamma arrivals' coefficients of variation that can be drawn: below, the gaps are all but
/// constant (and the gamma's shape too large to sample); above, all but one gap is zero.
const BURSTINESS: std::ops::RangeInclusive<f64> = 0.01..=100.0;

impl LoadConfig {
    /// The load settings of `s`; not yet validated.
    pub(super) fn resolve(s: &Settings) -> Result<LoadConfig, ConfigError> {
        let trace_block_tokens = s
            .workload
            .trace_block_tokens
            .unwrap_or(trace::DEFAULT_BLOCK_TOKENS);
        if trace_block_tokens == 0 {
            return bad("--trace-block-tokens must be above 0");
        }
        if s.workload.trace_block_tokens.is_some() && s.workload.trace.is_none() {
            return bad("--trace-block-tokens needs --trace FILE");
        }
        let trace_entries = match &s.workload.trace {
            Some(path) => Some(Arc::new(
                trace::load(path, trace_block_tokens)
                    .map_err(|e| ConfigError(format!("--trace {e}")))?,
            )),
            None => None,
        };
        let graph = graph_replay(&s.sessions)?.map(Arc::new);
        let stages = s
            .load
            .stages
            .as_ref()
            .map(StagesSetting::stages)
            .transpose()?;
        if let Some(stages) = &stages {
            stages::validate(stages).map_err(|e| ConfigError(format!("--stages: {e}")))?;
        }
        let implied_by_stages = stages
            .as_ref()
            .and_then(|v| v.first())
            .map(|s| match s.kind {
                LevelKind::Rate => Arrival::Poisson,
                LevelKind::Concurrency => Arrival::ClosedContinuous,
            });
        let implied = s
            .workload
            .trace
            .as_ref()
            .map(|_| Arrival::Trace)
            .or(implied_by_stages);
        // Every load option is named, so that one left unresolved does not compile; the
        // concurrency belongs to the case matrix, the stages were read above.
        let LoadOptions {
            concurrency: _,
            arrival,
            rate,
            burstiness,
            stages: _,
            duration,
            requests,
            max_in_flight,
            warmup_time,
            cancel_after,
            cancel_share,
        } = s.load.clone();
        let ObjectiveOptions {
            slo_ttft,
            slo_tpot,
            slo_e2e,
        } = s.objectives.clone();
        let (slo, model_slo) = super::objectives::resolve(
            slo_ttft.as_deref(),
            slo_tpot.as_deref(),
            slo_e2e.as_deref(),
        )?;
        Ok(LoadConfig {
            cancel: super::cancel::resolve(cancel_after.as_deref(), cancel_share)?,
            session: session_spec(s.sessions.clone(), graph.as_deref())?,
            sessions: s.sessions.sessions,
            graph,
            stages,
            trace: s.workload.trace.clone(),
            trace_block_tokens,
            trace_entries,
            arrival: arrival.or(implied).unwrap_or_default(),
            rate_rps: rate.unwrap_or_default(),
            burstiness: burstiness.unwrap_or(1.0),
            duration: optional_duration("duration", duration)?,
            requests,
            max_in_flight,
            system_prompt_tokens: s.workload.system_prompt_tokens.unwrap_or(0),
            warmup_time: optional_duration("warmup-time", warmup_time)?.unwrap_or_default(),
            slo,
            model_slo,
        })
    }

    /// Checks the combination of settings.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        self.validate_stages()?;
        self.validate_sessions()?;
        if (self.arrival == Arrival::Trace) != self.trace.is_some() {
            return bad("--arrival trace and --trace FILE go together");
        }
        if self.has_blocks() && self.system_prompt_tokens > 0 {
            return bad(
                "a trace's hash_ids set the shared prefixes: --system-prompt-tokens does not apply",
            );
        }
        let open = self.is_open() && self.arrival != Arrival::Trace;
        if open && self.rate_rps.is_empty() && self.stages.is_none() {
            return bad("open-loop arrivals need --rate R (requests per second)");
        }
        if !open && !self.rate_rps.is_empty() {
            if self.arrival == Arrival::Trace {
                return bad("a trace sets its own arrivals: --rate does not apply");
            }
            return bad("--rate needs --arrival poisson, gamma or constant");
        }
        if self.rate_rps.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
            return bad("--rate values must be above 0");
        }
        if let Some(r) = self
            .rate_rps
            .iter()
            .find(|r| !crate::num::RATES.contains(r))
        {
            return bad(format!(
                "--rate {r:e}: between {} and {} requests per second",
                crate::num::RATES.start(),
                crate::num::RATES.end()
            ));
        }
        if !(self.burstiness.is_finite() && self.burstiness > 0.0) {
            return bad("--burstiness must be above 0");
        }
        if !BURSTINESS.contains(&self.burstiness) {
            return bad(format!(
                "--burstiness {:e}: a coefficient of variation between {} and {}",
                self.burstiness,
                BURSTINESS.start(),
                BURSTINESS.end()
            ));
        }
        if self.duration.is_some() && self.requests.is_some() {
            return bad("give --duration or --requests, not both");
        }
        if self.duration.is_some_and(|d| d.is_zero()) || self.requests == Some(0) {
            return bad("--duration and --requests must be above 0");
        }
        if let Some(duration) = self.duration.filter(|d| self.warmup_time >= *d) {
            return bad(format!(
                "--warmup-time {} is not shorter than --duration {}: nothing would be measured",
                humantime::format_duration(self.warmup_time),
                humantime::format_duration(duration)
            ));
        }
        if self.max_in_flight == Some(0) {
            return bad("--max-in-flight must be at least 1");
        }
        let rounds = self.arrival == Arrival::Rounds && self.session.is_none();
        if rounds && (self.duration.is_some() || self.requests.is_some()) {
            return bad(
                "--duration and --requests need --arrival closed-continuous or an open loop",
            );
        }
        Ok(())
    }

    /// What sessions refuse: a trace or stages (they set their own requests), `--requests`
    /// (sessions are counted by `--sessions`), an in-flight cap, a warmup time.
    fn validate_sessions(&self) -> Result<(), ConfigError> {
        if self.session.is_none() {
            if self.sessions.is_some() {
                return bad("--sessions needs --turns K");
            }
            return Ok(());
        }
        if self.trace.is_some() || self.stages.is_some() {
            return bad(
                "--turns does not go with --trace or --stages: they set their own requests",
            );
        }
        if self.requests.is_some() {
            return bad("sessions are counted by --sessions N, not --requests");
        }
        if self.sessions == Some(0) {
            return bad("--sessions must be above 0");
        }
        if self.sessions.is_some() && self.duration.is_some() {
            return bad("give --sessions or --duration, not both");
        }
        if let (Some(spec), Some(duration)) = (&self.session, self.duration) {
            // The last staggered place starts its first session (N−1)/N of a mean think time
            // in: a window no longer than one would end before every place had started.
            if spec.stagger && duration <= spec.think.mean() {
                return bad(format!(
                    "--stagger spreads the first sessions over one mean think time ({}): give a \
                     --duration longer than that (here {}), or leave out --stagger",
                    humantime::format_duration(spec.think.mean()),
                    humantime::format_duration(duration)
                ));
            }
        }
        if self.max_in_flight.is_some() || !self.warmup_time.is_zero() {
            return bad(
                "--max-in-flight and --warmup-time do not apply to sessions (a session's turns \
                 are all measured; --warmup sends single requests first)",
            );
        }
        Ok(())
    }

    /// Whether the trace has `hash_ids`: its prompts are built from blocks.
    pub fn has_blocks(&self) -> bool {
        self.trace_entries
            .iter()
            .flat_map(|e| e.iter())
            .any(|e| !e.blocks.is_empty())
    }

    /// What a staged load refuses: the settings it replaces, an arrival that does not fit its
    /// kind, a warmup time as long as its first stage.
    fn validate_stages(&self) -> Result<(), ConfigError> {
        let Some(first) = self.stages.as_ref().and_then(|v| v.first()) else {
            return Ok(());
        };
        if self.trace.is_some() {
            return bad("--stages and --trace do not go together: a trace sets its own arrivals");
        }
        if !self.rate_rps.is_empty() {
            return bad("--stages sets the load: leave out --rate");
        }
        if self.duration.is_some() || self.requests.is_some() {
            return bad("--stages sets the load's length: leave out --duration and --requests");
        }
        let fits = match first.kind {
            LevelKind::Rate => self.is_open(),
            LevelKind::Concurrency => self.arrival == Arrival::ClosedContinuous,
        };
        if !fits {
            let arrival = serde_json::to_value(self.arrival).unwrap_or_default();
            let arrival = arrival.as_str().unwrap_or("?");
            return bad(match first.kind {
                LevelKind::Rate => format!(
                    "rate stages are an open loop: --arrival {arrival} does not apply (poisson, \
                     gamma or constant)"
                ),
                LevelKind::Concurrency => format!(
                    "concurrency stages run closed-continuous: --arrival {arrival} does not apply"
                ),
            });
        }
        if first.kind == LevelKind::Concurrency && self.max_in_flight.is_some() {
            return bad("--max-in-flight caps an open loop; concurrency stages set their own");
        }
        if self.warmup_time >= first.duration {
            return bad("--warmup-time must be shorter than the first stage");
        }
        Ok(())
    }

    /// Concurrency stages: the highest level.
    pub(super) fn stage_concurrency(&self) -> Option<u32> {
        let stages = self.stages.as_ref()?;
        let peak = stages
            .iter()
            .filter(|s| s.kind == LevelKind::Concurrency)
            .map(|s| crate::num::to_u32(s.level))
            .max()?;
        Some(peak.max(1))
    }

    /// Rate stages: the arrivals expected over the whole load.
    pub(super) fn stage_arrivals(&self) -> Option<f64> {
        let stages = self.stages.as_ref()?;
        let total = stages::levels(stages)
            .iter()
            .zip(stages)
            .filter(|(_, s)| s.kind == LevelKind::Rate)
            .map(|(&(a, b), s)| f64::midpoint(a, b) * s.duration.as_secs_f64())
            .sum();
        Some(total)
    }

    /// Whether requests arrive on a schedule.
    pub fn is_open(&self) -> bool {
        matches!(
            self.arrival,
            Arrival::Poisson | Arrival::Gamma | Arrival::Constant | Arrival::Trace
        )
    }

    /// What every case shares, with `rounds` for closed rounds.
    pub fn template(&self, rounds: u32) -> ShapeTemplate {
        ShapeTemplate {
            arrival: self.arrival,
            rounds,
            bound: match (self.duration, self.requests.or(self.sessions)) {
                (Some(d), _) => Some(Bound::Duration(d)),
                (None, Some(n)) => Some(Bound::Requests(n)),
                (None, None) => None,
            },
            burstiness: self.burstiness,
            max_in_flight: self.max_in_flight,
            warmup_time: self.warmup_time,
            trace: self.trace.clone().zip(self.trace_entries.clone()),
            session: self.session,
            graph: self.graph.clone(),
        }
    }

    /// The load points: the rates of an open loop, else `concurrency`.
    pub fn points(&self, concurrency: &[u32]) -> Vec<LoadPoint> {
        if let Some(entries) = &self.trace_entries {
            let span_s = entries.last().map_or(0.0, |e| e.offset_s);
            let rate = if span_s > 0.0 {
                (entries.len() - 1) as f64 / span_s
            } else {
                0.0
            };
            vec![LoadPoint::Rate(rate)]
        } else if self.is_open() {
            self.rate_rps.iter().map(|&r| LoadPoint::Rate(r)).collect()
        } else {
            concurrency
                .iter()
                .map(|&c| LoadPoint::Concurrency(c))
                .collect()
        }
    }
}
