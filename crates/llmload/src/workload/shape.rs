//! Workload: load shapes — how requests are launched in a case — and the plan of each case
//! (its lengths and its shape), built from the validated config as a matrix.
//!
//! Closed rounds (C together, wait for all), closed continuous (keep C in flight), and open loop
//! (arrivals from a seeded schedule, optionally capped in flight).

use crate::workload::length::Length;
use crate::workload::schedule::{Bound, Process};
use crate::workload::session::SessionSpec;
use crate::workload::stages::StageLabel;
use crate::workload::trace::TraceEntry;
use serde::{Serialize, Serializer};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod template;
pub use template::ShapeTemplate;

/// A length as a case id writes it: `dataset` for the lengths a dataset sets (a length of 0,
/// which nothing else can be), else its spec with `/` for `,`.
fn id_part(l: &Length) -> String {
    if *l == Length::Fixed(0) {
        "dataset".into()
    } else {
        l.to_string().replace(',', "/")
    }
}

/// One point of the matrix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Case {
    /// `in{input}-c{concurrency}-out{output}`.
    pub id: String,
    /// Prompt tokens per request; 0 when a dataset's entries set them (sent as they are).
    pub input_tokens: u32,
    /// Simultaneous requests per round.
    pub concurrency: u32,
    /// Generated tokens per request; 0 when a dataset's answers set them, and for embeddings
    /// and rerank, which generate none.
    pub output_tokens: u32,
    /// Embeddings and rerank: the inputs (documents) of each request (`--batch-size`); absent
    /// for generation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    /// Chat with images (`--images`): the images of each request; absent without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<crate::workload::image::ImageSpec>,
}

/// The `--arrival` flag.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Arrival {
    /// Rounds of C simultaneous requests; a round ends with its last request (as the reference campaign ran them).
    #[default]
    Rounds,
    /// Keep C requests in flight: a new one starts as soon as one ends.
    ClosedContinuous,
    /// Open loop, exponential inter-arrival times at `--rate`.
    Poisson,
    /// Open loop, gamma inter-arrival times with coefficient of variation `--burstiness`.
    Gamma,
    /// Open loop, equal inter-arrival times of 1 / `--rate`.
    Constant,
    /// Open loop replaying `--trace FILE`: each arrival's offset and lengths.
    Trace,
}

/// The kind of a [`Shape`], as `campaign.json` names it (`shape`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShapeKind {
    /// Closed rounds.
    Rounds,
    /// C requests kept in flight.
    ClosedContinuous,
    /// Arrivals from a schedule.
    Open,
    /// Arrivals from a trace.
    Replay,
    /// Multi-turn sessions, C in parallel or arriving at a rate.
    Sessions,
}

/// How the requests of one case are launched.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "shape", rename_all = "kebab-case")]
pub enum Shape {
    /// `rounds` rounds of `concurrency` simultaneous requests.
    Rounds {
        /// Measured rounds.
        rounds: u32,
    },
    /// `concurrency` requests kept in flight until the bound.
    ClosedContinuous {
        /// Where launching stops.
        #[serde(serialize_with = "serialize_bound")]
        bound: Bound,
    },
    /// Arrivals from a schedule.
    Open {
        /// Inter-arrival process.
        process: Process,
        /// Mean arrivals per second.
        rate_rps: f64,
        /// Where the schedule ends.
        #[serde(serialize_with = "serialize_bound")]
        bound: Bound,
        /// The most requests in flight; a launch waits for a free place (the wait is send lag).
        max_in_flight: Option<u32>,
    },
    /// Arrivals and lengths from a trace.
    Replay {
        /// The trace file.
        trace: PathBuf,
        /// Its arrivals, in offset order.
        #[serde(skip)]
        entries: Arc<Vec<TraceEntry>>,
        /// Number of arrivals.
        arrivals: usize,
        /// The most requests in flight.
        max_in_flight: Option<u32>,
    },
    /// Multi-turn sessions: the case's concurrency in parallel (each starting a new session
    /// when its last ends), or sessions arriving from a schedule at `rate_rps` sessions/s.
    Sessions {
        /// Open: the sessions' inter-arrival process; absent for sessions in parallel.
        #[serde(skip_serializing_if = "Option::is_none")]
        process: Option<Process>,
        /// Open: sessions started per second.
        #[serde(skip_serializing_if = "Option::is_none")]
        rate_rps: Option<f64>,
        /// Sessions to run (`requests` counts sessions), or how long new ones start.
        #[serde(serialize_with = "serialize_bound")]
        bound: Bound,
        /// The sessions' turns, message lengths, think time and history.
        #[serde(flatten)]
        spec: SessionSpec,
        /// `--dag`: the session graphs each session replays, in turn.
        #[serde(
            skip_serializing_if = "Option::is_none",
            serialize_with = "crate::workload::graph::serialize_shared"
        )]
        graph: Option<Arc<crate::workload::graph::GraphReplay>>,
    },
}

fn serialize_bound<S: Serializer>(b: &Bound, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(1))?;
    match b {
        Bound::Duration(d) => map.serialize_entry("duration_s", &d.as_secs_f64())?,
        Bound::Requests(n) => map.serialize_entry("requests", n)?,
    }
    map.end()
}

/// `--cancel-after` and `--cancel-share`: the measured requests whose streams the client
/// abandons, as users do, and where.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Cancel {
    /// Where a stream is abandoned.
    pub after: crate::record::CancelAfter,
    /// The share of measured requests abandoned, in (0, 1].
    pub share: f64,
}

impl Cancel {
    /// Whether the request of `serial` (its number in the attempt) is one to abandon: a draw
    /// from the seed and the serial alone, so the same seed abandons the same requests.
    pub fn picks(&self, seed: u64, serial: u64) -> bool {
        if self.share >= 1.0 {
            return true;
        }
        crate::workload::prompt::uniform(seed, serial, 0xcafe_f00d) < self.share
    }
}

/// Service-level objectives for goodput: a request counts when it meets every one given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Slo {
    /// Time to first token, from scheduled (or sent, in closed loops).
    #[serde(rename = "ttft_ms", serialize_with = "opt_ms")]
    pub ttft: Option<Duration>,
    /// Time per output token after the first.
    #[serde(rename = "tpot_ms", serialize_with = "opt_ms")]
    pub tpot: Option<Duration>,
    /// Complete-response time, from scheduled (or sent).
    #[serde(rename = "e2e_ms", serialize_with = "opt_ms")]
    pub e2e: Option<Duration>,
}

#[expect(
    clippy::ref_option,
    reason = "serde's serialize_with hands the field by reference"
)]
fn opt_ms<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64() * 1e3),
        None => s.serialize_none(),
    }
}

impl Slo {
    /// Whether any objective is set.
    pub fn is_set(&self) -> bool {
        self.ttft.is_some() || self.tpot.is_some() || self.e2e.is_some()
    }
}

/// One case as the runner sees it: the table's case plus its lengths and shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CasePlan {
    /// What the tables show (nominal lengths for distributions).
    #[serde(flatten)]
    pub case: Case,
    /// Prompt length of each request.
    #[serde(rename = "input_length")]
    pub input: Length,
    /// Output length of each request.
    #[serde(rename = "output_length")]
    pub output: Length,
    /// How requests are launched.
    #[serde(flatten)]
    pub shape: Shape,
    /// Open and continuous loops: launches in this first stretch of the load are warmup.
    #[serde(rename = "warmup_s", serialize_with = "seconds")]
    pub warmup_time: Duration,
    /// Continuous loops: the first this many launches are warmup too (`capacity`'s blocks:
    /// each starts from an idle server, and its first launches measure the ramp, not the load).
    #[serde(skip_serializing_if = "is_zero")]
    pub warmup_launches: u64,
    /// A staged load: which stage of it this case is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<StageLabel>,
}

impl CasePlan {
    /// The plan as a case of embeddings or rerank requests of `batch` inputs each (`None`:
    /// generation, unchanged): nothing generated, and the id's output part (`-out…`) becomes
    /// the batch (`in512-c4-b8`).
    #[must_use]
    pub fn with_batch(mut self, batch: Option<u32>) -> CasePlan {
        let Some(batch) = batch else {
            return self;
        };
        let out = format!("-out{}", id_part(&self.output));
        let stem = self.case.id.strip_suffix(&out).unwrap_or(&self.case.id);
        self.case.id = format!("{stem}-b{batch}");
        self.case.batch = Some(batch);
        self.case.output_tokens = 0;
        self.output = Length::Fixed(0);
        self
    }

    /// The plan of a dataset run whose entries were fitted to the matrix's lengths: its id ends
    /// in `-ds-NAME` (NAME: the dataset's [`crate::workload::dataset::id_name`]), so that it is
    /// never taken for the case of synthetic prompts of the same lengths. An id that already
    /// says `dataset` (lengths the entries set) and `None` leave it as it is.
    #[must_use]
    pub fn with_dataset(mut self, name: Option<&str>) -> CasePlan {
        if let Some(name) = name.filter(|_| !self.case.id.contains("dataset")) {
            self.case.id = format!("{}-ds-{name}", self.case.id);
        }
        self
    }

    /// The plan with `images` in each request (`None`: unchanged), its id ending in them
    /// (`in512-c4-out64-img2x224x224`).
    #[must_use]
    pub fn with_images(mut self, images: Option<crate::workload::image::ImageSpec>) -> CasePlan {
        if let Some(spec) = images {
            self.case.id = format!("{}-{}", self.case.id, spec.id_part());
            self.case.images = Some(spec);
        }
        self
    }

    /// The prompt and output tokens of the case's longest request (a trace's own entries; a
    /// session's last turn, whose prompt holds every earlier turn and answer, before the tokens
    /// a chat template adds).
    pub fn longest(&self) -> (u32, u32) {
        match &self.shape {
            Shape::Sessions {
                graph: Some(graph), ..
            } => graph.graph.longest(),
            Shape::Sessions { spec, .. } => {
                let (input, output) = (self.input.max_tokens(), self.output.max_tokens());
                let later = spec.turn_input.unwrap_or(input).saturating_add(output);
                let history = later.saturating_mul(spec.turns.saturating_sub(1));
                (input.saturating_add(history), output)
            }
            Shape::Replay { entries, .. } => entries
                .iter()
                .map(|e| (e.input_tokens, e.output_tokens))
                .max_by_key(|&(i, o)| u64::from(i) + u64::from(o))
                .unwrap_or((0, 0)),
            _ => (self.input.max_tokens(), self.output.max_tokens()),
        }
    }
}

fn seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// The load axis of the matrix: a concurrency (closed loops) or a rate (open loop).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LoadPoint {
    /// Requests together (rounds) or kept in flight (continuous).
    Concurrency(u32),
    /// Arrivals per second.
    Rate(f64),
}

impl LoadPoint {
    /// The point as a number (for curves).
    pub fn value(&self) -> f64 {
        match self {
            LoadPoint::Concurrency(c) => f64::from(*c),
            LoadPoint::Rate(r) => *r,
        }
    }
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if hands the field by reference"
)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_the_shape_and_fixed_cases_keep_the_reference_ids() {
        let mut template = ShapeTemplate {
            arrival: Arrival::Rounds,
            rounds: 3,
            bound: None,
            burstiness: 1.0,
            max_in_flight: None,
            warmup_time: Duration::ZERO,
            trace: None,
            session: None,
            graph: None,
        };
        let fixed = template.plan(
            &Length::Fixed(2048),
            LoadPoint::Concurrency(4),
            &Length::Fixed(256),
        );
        assert_eq!(fixed.case.id, "in2048-c4-out256");
        template.arrival = Arrival::Poisson;
        let input: Length = "choice:32,256,1024".parse().expect("spec");
        let open = template.plan(&input, LoadPoint::Rate(20.0), &Length::Fixed(128));
        assert_eq!(open.case.id, "inchoice:32/256/1024-poisson-r20-out128");
        assert_eq!(open.case.input_tokens, 437);
        let json = serde_json::to_value(&open).expect("serialise");
        assert_eq!(json["input_tokens"], 437);
        assert_eq!(json["process"]["kind"], "poisson");
    }
}
