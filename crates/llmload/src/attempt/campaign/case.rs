//! A case of `campaign.json`: the table's case, its lengths and its load shape, as the plan
//! (`CasePlan`) serialises them.

use crate::workload::length::Length;
use crate::workload::schedule::{Bound, Process};
use crate::workload::session::SessionSpec;
use crate::workload::shape::{Case, CasePlan, Shape, ShapeKind};
use crate::workload::stages::StageLabel;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// One case of `campaign.json`: the table's case, its lengths and its load shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CampaignCase {
    /// Case id.
    pub id: String,
    /// Prompt tokens per request (nominal for a distribution).
    pub input_tokens: u32,
    /// Simultaneous requests per round, or kept in flight.
    pub concurrency: u32,
    /// Generated tokens per request (nominal for a distribution).
    pub output_tokens: u32,
    /// Embeddings and rerank: inputs per request; absent for generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    /// Chat with images: the images of each request; absent without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<crate::workload::image::ImageSpec>,
    /// The prompt length spec; absent: fixed at `input_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_length: Option<LengthSpec>,
    /// The output length spec, as `input_length`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_length: Option<LengthSpec>,
    /// How its requests were launched (`shape` and its fields); absent from a case written
    /// before shapes were recorded.
    #[serde(flatten, deserialize_with = "recorded_load")]
    pub load: Option<CaseLoad>,
    /// Open and continuous loops: the warmup time at the start of the load, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<f64>,
    /// A staged load: which stage the case is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<StageLabel>,
}

impl From<&CasePlan> for CampaignCase {
    fn from(plan: &CasePlan) -> CampaignCase {
        CampaignCase {
            id: plan.case.id.clone(),
            input_tokens: plan.case.input_tokens,
            concurrency: plan.case.concurrency,
            output_tokens: plan.case.output_tokens,
            batch: plan.case.batch,
            images: plan.case.images,
            input_length: Some(LengthSpec::of(&plan.input)),
            output_length: Some(LengthSpec::of(&plan.output)),
            load: Some(CaseLoad::of(&plan.shape)),
            warmup_s: Some(plan.warmup_time.as_secs_f64()),
            stage: plan.stage.clone(),
        }
    }
}

impl CampaignCase {
    /// The table's case.
    pub fn case(&self) -> Case {
        Case {
            id: self.id.clone(),
            input_tokens: self.input_tokens,
            concurrency: self.concurrency,
            output_tokens: self.output_tokens,
            batch: self.batch,
            images: self.images,
        }
    }

    /// Its shape; closed rounds for a case written before shapes were recorded.
    pub fn kind(&self) -> ShapeKind {
        self.load.as_ref().map_or(ShapeKind::Rounds, CaseLoad::kind)
    }

    /// Its measured rounds (closed rounds); `campaign_rounds` for a case that does not say.
    pub fn rounds(&self, campaign_rounds: u32) -> u32 {
        match &self.load {
            Some(CaseLoad::Rounds { rounds }) => *rounds,
            _ => campaign_rounds,
        }
    }

    /// Where launching stops (continuous and open loops, sessions).
    pub fn bound(&self) -> Option<CaseBound> {
        match &self.load {
            Some(
                CaseLoad::ClosedContinuous { bound }
                | CaseLoad::Open { bound, .. }
                | CaseLoad::Sessions { bound, .. },
            ) => Some(*bound),
            _ => None,
        }
    }

    /// The inter-arrival process (open loop, sessions arriving at a rate).
    pub fn process(&self) -> Option<&Process> {
        match &self.load {
            Some(CaseLoad::Open { process, .. }) => Some(process),
            Some(CaseLoad::Sessions { process, .. }) => process.as_ref(),
            _ => None,
        }
    }

    /// Arrivals (or sessions) per second (open loop, sessions arriving at a rate).
    pub fn rate_rps(&self) -> Option<f64> {
        match &self.load {
            Some(CaseLoad::Open { rate_rps, .. }) => Some(*rate_rps),
            Some(CaseLoad::Sessions { rate_rps, .. }) => *rate_rps,
            _ => None,
        }
    }

    /// The in-flight cap (open loop, replay).
    pub fn max_in_flight(&self) -> Option<u32> {
        match &self.load {
            Some(CaseLoad::Open { max_in_flight, .. } | CaseLoad::Replay { max_in_flight, .. }) => {
                *max_in_flight
            }
            _ => None,
        }
    }
}

/// A case's load shape as `campaign.json` names it (`shape`) with its fields: the plan's
/// [`Shape`] with its times in seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "shape", rename_all = "kebab-case")]
pub enum CaseLoad {
    /// `rounds` rounds of `concurrency` simultaneous requests.
    Rounds {
        /// Measured rounds.
        rounds: u32,
    },
    /// `concurrency` requests kept in flight until the bound.
    ClosedContinuous {
        /// Where launching stops.
        bound: CaseBound,
    },
    /// Arrivals from a schedule.
    Open {
        /// The inter-arrival process.
        process: Process,
        /// Mean arrivals per second.
        rate_rps: f64,
        /// Where the schedule ends.
        bound: CaseBound,
        /// The most requests in flight.
        max_in_flight: Option<u32>,
    },
    /// Arrivals and lengths from a trace.
    Replay {
        /// The trace file.
        trace: PathBuf,
        /// Its arrivals.
        arrivals: u64,
        /// The most requests in flight.
        max_in_flight: Option<u32>,
    },
    /// Multi-turn sessions, in parallel or arriving at a rate.
    Sessions {
        /// Open: the sessions' inter-arrival process.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        process: Option<Process>,
        /// Open: sessions started per second.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate_rps: Option<f64>,
        /// Sessions to run (`requests` counts sessions), or how long new ones start.
        bound: CaseBound,
        /// The sessions' turns, message lengths, think time and history.
        #[serde(flatten)]
        spec: SessionSpec,
        /// `--dag`: the graph file the sessions replay; absent for sessions of turns.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dag: Option<std::path::PathBuf>,
        /// `--dag` with a bound on sessions: the calls those sessions send.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        calls: Option<u64>,
    },
}

impl CaseLoad {
    /// The load shape of a plan.
    pub fn of(shape: &Shape) -> CaseLoad {
        match shape {
            Shape::Rounds { rounds } => CaseLoad::Rounds { rounds: *rounds },
            Shape::ClosedContinuous { bound } => CaseLoad::ClosedContinuous {
                bound: CaseBound::of(*bound),
            },
            Shape::Open {
                process,
                rate_rps,
                bound,
                max_in_flight,
            } => CaseLoad::Open {
                process: *process,
                rate_rps: *rate_rps,
                bound: CaseBound::of(*bound),
                max_in_flight: *max_in_flight,
            },
            Shape::Replay {
                trace,
                arrivals,
                max_in_flight,
                ..
            } => CaseLoad::Replay {
                trace: trace.clone(),
                arrivals: u64::try_from(*arrivals).unwrap_or(u64::MAX),
                max_in_flight: *max_in_flight,
            },
            Shape::Sessions {
                process,
                rate_rps,
                bound,
                spec,
                graph,
            } => CaseLoad::Sessions {
                process: *process,
                rate_rps: *rate_rps,
                bound: CaseBound::of(*bound),
                spec: *spec,
                dag: graph.as_ref().map(|g| g.file.clone()),
                calls: graph.as_ref().and_then(|g| match bound {
                    crate::workload::schedule::Bound::Requests(n) => Some(g.calls_of(*n)),
                    crate::workload::schedule::Bound::Duration(_) => None,
                }),
            },
        }
    }

    /// Its shape.
    pub fn kind(&self) -> ShapeKind {
        match self {
            CaseLoad::Rounds { .. } => ShapeKind::Rounds,
            CaseLoad::ClosedContinuous { .. } => ShapeKind::ClosedContinuous,
            CaseLoad::Open { .. } => ShapeKind::Open,
            CaseLoad::Replay { .. } => ShapeKind::Replay,
            CaseLoad::Sessions { .. } => ShapeKind::Sessions,
        }
    }
}

/// The load of a case that has a `shape`; none for one written before shapes were recorded. A
/// `shape` that is there must be whole: a damaged one is an error, never taken for closed rounds.
fn recorded_load<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CaseLoad>, D::Error> {
    /// The tag alone, read first.
    #[derive(Deserialize)]
    struct Tag {
        #[serde(default)]
        shape: Option<ShapeKind>,
    }
    use serde::de::Error;
    let fields = Value::deserialize(d)?;
    let tag = Tag::deserialize(&fields).map_err(D::Error::custom)?;
    tag.shape
        .map(|_| CaseLoad::deserialize(fields).map_err(D::Error::custom))
        .transpose()
}

/// Where a continuous or open loop stops launching, as `campaign.json` writes it:
/// `{"duration_s": …}` or `{"requests": …}`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum CaseBound {
    /// Launches stop after this many seconds.
    #[serde(rename = "duration_s")]
    Duration(f64),
    /// This many launches (sessions, for a case of sessions).
    #[serde(rename = "requests")]
    Requests(u64),
}

impl CaseBound {
    /// A plan's bound.
    pub fn of(bound: Bound) -> CaseBound {
        match bound {
            Bound::Duration(d) => CaseBound::Duration(d.as_secs_f64()),
            Bound::Requests(n) => CaseBound::Requests(n),
        }
    }

    /// The launches, for a bound on them.
    pub fn requests(self) -> Option<u64> {
        match self {
            CaseBound::Requests(n) => Some(n),
            CaseBound::Duration(_) => None,
        }
    }

    /// The seconds, for a bound on time.
    pub fn duration_s(self) -> Option<f64> {
        match self {
            CaseBound::Duration(d) => Some(d),
            CaseBound::Requests(_) => None,
        }
    }
}

/// A length spec as `campaign.json` writes it: a number (fixed), or a distribution's text
/// (`choice:32,256`, …), kept as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LengthSpec {
    /// Always this many tokens.
    Fixed(u32),
    /// A distribution, as its spec reads.
    Distribution(String),
}

impl LengthSpec {
    /// A plan's length.
    pub fn of(length: &Length) -> LengthSpec {
        match length {
            Length::Fixed(n) => LengthSpec::Fixed(*n),
            other => LengthSpec::Distribution(other.to_string()),
        }
    }
}
