//! The case-plan builders: from the campaign's load settings (a [`ShapeTemplate`]) and one
//! case's lengths and load point to that case's plan, for single requests, staged loads and
//! multi-turn sessions.

use super::{id_part, Arrival, Case, CasePlan, LoadPoint, Shape};
use crate::workload::graph::GraphReplay;
use crate::workload::length::Length;
use crate::workload::schedule::{Bound, Process};
use crate::workload::session::SessionSpec;
use crate::workload::stages::{self, LevelKind, Stage};
use crate::workload::trace::TraceEntry;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Everything but the lengths and the load point, shared by every case of a campaign.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeTemplate {
    /// `--arrival`.
    pub arrival: Arrival,
    /// `--rounds`.
    pub rounds: u32,
    /// `--duration` or `--requests`.
    pub bound: Option<Bound>,
    /// `--burstiness`.
    pub burstiness: f64,
    /// `--max-in-flight`.
    pub max_in_flight: Option<u32>,
    /// `--warmup-time`.
    pub warmup_time: Duration,
    /// `--trace`, read.
    pub trace: Option<(PathBuf, Arc<Vec<TraceEntry>>)>,
    /// `--turns` and the rest: every case is a case of multi-turn sessions.
    pub session: Option<SessionSpec>,
    /// `--dag`, read: the sessions are its graphs.
    pub graph: Option<Arc<GraphReplay>>,
}

impl ShapeTemplate {
    /// The plan of one case.
    pub fn plan(&self, input: &Length, point: LoadPoint, output: &Length) -> CasePlan {
        let bound = self.bound.unwrap_or(Bound::Requests(100));
        if let Some(spec) = self.session {
            return self.sessions_plan(input, point, output, spec);
        }
        let (shape, concurrency, load_id) = match (self.arrival, point) {
            (Arrival::Rounds, LoadPoint::Concurrency(c)) => (
                Shape::Rounds {
                    rounds: self.rounds,
                },
                c,
                format!("c{c}"),
            ),
            (Arrival::ClosedContinuous, LoadPoint::Concurrency(c)) => {
                (Shape::ClosedContinuous { bound }, c, format!("cc{c}"))
            }
            (Arrival::Trace, point) => self.replay(point),
            (arrival, point) => {
                let process = match arrival {
                    Arrival::Gamma => Process::Gamma {
                        cv: self.burstiness,
                    },
                    Arrival::Constant => Process::Constant,
                    _ => Process::Poisson,
                };
                let rate_rps = point.value();
                let shape = Shape::Open {
                    process,
                    rate_rps,
                    bound,
                    max_in_flight: self.max_in_flight,
                };
                let name = serde_json::to_value(arrival).ok();
                let name = name.as_ref().and_then(|v| v.as_str()).unwrap_or("open");
                (
                    shape,
                    self.max_in_flight.unwrap_or(0),
                    format!("{name}-r{rate_rps}"),
                )
            }
        };
        CasePlan {
            case: Case {
                id: format!("in{}-{load_id}-out{}", id_part(input), id_part(output)),
                input_tokens: input.nominal_tokens(),
                concurrency,
                output_tokens: output.nominal_tokens(),
                batch: None,
                images: None,
            },
            input: input.clone(),
            output: output.clone(),
            shape,
            warmup_time: self.warmup_time,
            warmup_launches: 0,
            stage: None,
        }
    }

    /// The plans of a staged load, one case per stage: an open loop's stages (rate) keep the
    /// arrival process, a closed loop's (concurrency) are closed-continuous. Each is bounded by
    /// its own duration; its id names the stage and its levels (`stage2-poisson-r2to8-…`).
    pub fn stage_plans(&self, stages: &[Stage], input: &Length, output: &Length) -> Vec<CasePlan> {
        stages
            .iter()
            .zip(stages::labels(stages))
            .map(|(stage, label)| {
                let levels = if label.ramp {
                    format!("{}to{}", label.from, label.to)
                } else {
                    format!("{}", label.to)
                };
                let peak = label.from.max(label.to);
                let (point, load_id) = match label.kind {
                    LevelKind::Concurrency => (
                        LoadPoint::Concurrency(crate::num::to_u32(peak)),
                        format!("cc{levels}"),
                    ),
                    LevelKind::Rate => {
                        let name = match self.arrival {
                            Arrival::Gamma => "gamma",
                            Arrival::Constant => "constant",
                            _ => "poisson",
                        };
                        (LoadPoint::Rate(peak), format!("{name}-r{levels}"))
                    }
                };
                // The matrix's plan of the stage's peak, bounded by the stage's duration.
                let mut plan = self.plan(input, point, output);
                let bound = Bound::Duration(stage.duration);
                match &mut plan.shape {
                    Shape::Open {
                        rate_rps, bound: b, ..
                    } => {
                        *rate_rps = f64::midpoint(label.from, label.to);
                        *b = bound;
                    }
                    Shape::ClosedContinuous { bound: b } => *b = bound,
                    _ => {}
                }
                plan.case.id = format!(
                    "stage{}-{load_id}-in{}-out{}",
                    label.number,
                    id_part(input),
                    id_part(output)
                );
                // Only the first stage starts the load.
                if label.number > 1 {
                    plan.warmup_time = Duration::ZERO;
                }
                plan.stage = Some(label);
                plan
            })
            .collect()
    }
}

impl ShapeTemplate {
    /// The plan of a case of sessions: the load point is the sessions in parallel (closed) or
    /// their arrival rate (open); without a bound, a closed case runs one session per place and
    /// an open one 10 sessions.
    fn sessions_plan(
        &self,
        input: &Length,
        point: LoadPoint,
        output: &Length,
        spec: SessionSpec,
    ) -> CasePlan {
        // A graph's sessions have calls of their own count, named by the file.
        let turns = match &self.graph {
            Some(_) => String::new(),
            None => format!("x{}", spec.turns),
        };
        let (process, rate_rps, concurrency, load_id) = match point {
            LoadPoint::Concurrency(c) => (None, None, c, format!("c{c}{turns}")),
            LoadPoint::Rate(r) => {
                let (process, name) = match self.arrival {
                    Arrival::Gamma => (
                        Process::Gamma {
                            cv: self.burstiness,
                        },
                        "gamma",
                    ),
                    Arrival::Constant => (Process::Constant, "constant"),
                    _ => (Process::Poisson, "poisson"),
                };
                (Some(process), Some(r), 0, format!("{name}-r{r}{turns}"))
            }
        };
        let default = match (point, &self.graph) {
            (_, Some(g)) => g.sessions as u64,
            (LoadPoint::Concurrency(c), None) => u64::from(c),
            (LoadPoint::Rate(_), None) => 10,
        };
        let id = match &self.graph {
            Some(g) => {
                let stem = g
                    .file
                    .file_stem()
                    .map_or_else(|| "dag".to_owned(), |s| s.to_string_lossy().into_owned());
                format!("dag:{stem}-{load_id}")
            }
            None => format!(
                "in{}-sessions-{load_id}-out{}",
                id_part(input),
                id_part(output)
            ),
        };
        CasePlan {
            case: Case {
                id,
                input_tokens: input.nominal_tokens(),
                concurrency,
                output_tokens: output.nominal_tokens(),
                batch: None,
                images: None,
            },
            input: input.clone(),
            output: output.clone(),
            shape: Shape::Sessions {
                process,
                rate_rps,
                bound: self.bound.unwrap_or(Bound::Requests(default)),
                spec,
                graph: self.graph.clone(),
            },
            warmup_time: Duration::ZERO,
            warmup_launches: 0,
            stage: None,
        }
    }

    /// A trace replay's shape, its nominal in-flight cap and its id part.
    fn replay(&self, point: LoadPoint) -> (Shape, u32, String) {
        let (trace, entries) = self.trace.clone().unwrap_or_default();
        let stem = trace
            .file_stem()
            .map_or_else(|| "trace".to_owned(), |s| s.to_string_lossy().into_owned());
        let shape = Shape::Replay {
            trace,
            arrivals: entries.len(),
            entries,
            max_in_flight: self.max_in_flight,
        };
        let rate = point.value();
        (
            shape,
            self.max_in_flight.unwrap_or(0),
            format!("trace:{stem}-r{rate:.3}"),
        )
    }
}
