//! Where an attempt's cases come from: the fixed matrix of `llmload run`, or `llmload sweep`,
//! which steps the load (a list, or `--auto`: geometric until throughput stops rising, then
//! loads inside `C_sat`'s range until it is narrow or the budget is spent) and stops on its stop
//! conditions.

use crate::config::{Config, ConfigError};
use crate::fmt::number;
use crate::summary::saturation::{self, Point};
use crate::summary::sweep::{Axis, StopRules, SweepSection};
use crate::summary::{CaseSummary, Summary};
use crate::workload::length::Length;
use crate::workload::shape::{CasePlan, LoadPoint, ShapeTemplate};
use std::collections::VecDeque;

mod refine;

/// Cases, decided one at a time from the results so far.
pub trait CaseSource {
    /// The next case to run, or `None` when done; `done` holds the cases run so far.
    fn next(&mut self, done: &[CaseSummary]) -> Option<CasePlan>;
    /// Cases planned so far (the outcome's total).
    fn planned(&self) -> usize;
    /// Plans of those cases, for `campaign.json`.
    fn plans(&self) -> Vec<CasePlan>;
}

/// The fixed matrix of `llmload run`.
pub struct Matrix {
    plans: Vec<CasePlan>,
    next: usize,
}

impl Matrix {
    /// The matrix of `plans`, run in order.
    pub fn new(plans: Vec<CasePlan>) -> Matrix {
        Matrix { plans, next: 0 }
    }
}

impl CaseSource for Matrix {
    fn next(&mut self, _done: &[CaseSummary]) -> Option<CasePlan> {
        let plan = self.plans.get(self.next).cloned();
        self.next += 1;
        plan
    }

    fn planned(&self) -> usize {
        self.plans.len()
    }

    fn plans(&self) -> Vec<CasePlan> {
        self.plans.clone()
    }
}

/// `llmload sweep`: the load steps and what the sweep found.
pub struct Sweep {
    template: ShapeTemplate,
    input: Length,
    output: Length,
    /// Embeddings and rerank: the inputs per request.
    batch: Option<u32>,
    /// A dataset run: the dataset's name in case ids.
    dataset: Option<String>,
    auto: bool,
    open: bool,
    queue: VecDeque<LoadPoint>,
    doubling: bool,
    max_load: f64,
    max_loads: usize,
    rules: StopRules,
    issued: Vec<CasePlan>,
    /// Why the sweep stopped adding load, when a stop condition did it.
    pub stop_reason: Option<String>,
    /// `--auto`: why it stopped refining `C_sat`'s range.
    pub refinement: Option<String>,
}

impl Sweep {
    /// A sweep over `config`'s load points (or `--auto`).
    pub fn new(config: &Config, options: SweepOptions) -> Result<Sweep, ConfigError> {
        let SweepOptions {
            auto,
            max_load,
            max_loads,
            rules,
        } = options;
        let (input, output) = match (&config.input_tokens[..], &config.output_tokens[..]) {
            ([input], [output]) => (input.clone(), output.clone()),
            _ => return Err(ConfigError(
                "a sweep takes one --input-tokens and one --output-tokens (a distribution is fine)"
                    .into(),
            )),
        };
        let batch = match &config.batch_size[..] {
            [] => None,
            [batch] => Some(*batch),
            _ => {
                return Err(ConfigError(
                    "a sweep takes one --batch-size (it steps the load, not the batch)".into(),
                ))
            }
        };
        if config.load.stages.is_some() {
            return Err(ConfigError(
                "a sweep steps the load itself: --stages does not apply; run it instead".into(),
            ));
        }
        if config.load.trace.is_some() {
            return Err(ConfigError(
                "a sweep cannot step a trace's load; run it instead".into(),
            ));
        }
        let open = config.is_open();
        let queue: VecDeque<LoadPoint> = if auto {
            let first = if open {
                LoadPoint::Rate(config.load.rate_rps.first().copied().unwrap_or(1.0))
            } else {
                LoadPoint::Concurrency(1)
            };
            VecDeque::from([first])
        } else {
            let mut points = config.load_points();
            points.sort_by(|a, b| a.value().total_cmp(&b.value()));
            points.into()
        };
        if !auto && queue.len() < 2 {
            return Err(ConfigError(
                "a sweep needs two or more loads (--concurrency 1,2,4,8 or --rate 1,2,4) or --auto"
                    .into(),
            ));
        }
        Ok(Sweep {
            dataset: config
                .dataset
                .as_ref()
                .map(crate::config::DatasetConfig::id_name),
            template: config.template(),
            input,
            output,
            batch,
            auto,
            open,
            queue,
            doubling: true,
            max_load,
            max_loads,
            rules,
            issued: Vec::new(),
            stop_reason: None,
            refinement: None,
        })
    }

    /// The `sweep` section of `summary`: the axis, the rules, why it stopped, and the saturation
    /// analysis of the measured curve.
    pub fn section(&self, summary: &Summary, config: &Config) -> SweepSection {
        SweepSection {
            axis: if self.open {
                Axis::RateRps
            } else {
                Axis::Concurrency
            },
            stop_rules: self.rules.clone(),
            stopped_because: self.stop_reason.clone(),
            refinement: self.refinement.clone(),
            analysis: saturation::analyse(
                &Sweep::points(summary),
                &config.load.slo,
                saturation::shape_of(&summary.cases, self.open),
            ),
        }
    }

    /// The measured curve, one point per case, in load order (see [`saturation::curve`]).
    pub fn points(summary: &Summary) -> Vec<Point> {
        saturation::curve(&summary.cases)
    }

    fn point(&self, load: f64) -> LoadPoint {
        if self.open {
            LoadPoint::Rate(load)
        } else {
            LoadPoint::Concurrency(crate::num::to_u32(load.round().max(1.0)))
        }
    }

    /// After the doubling: the next load inside `C_sat`'s range, until the refinement is done.
    fn refine(&mut self, done: &[CaseSummary]) {
        if self.refinement.is_some() {
            return;
        }
        let curve = saturation::curve(done);
        let shape = saturation::shape_of(done, self.open);
        match refine::next(&curve, shape, self.max_loads, self.max_load) {
            refine::Step::Measure(load) => self.queue.push_back(self.point(load)),
            refine::Step::Done(why) => self.refinement = Some(why),
        }
    }

    /// Whether the last point breaks a stop rule (why, if so).
    fn broken_rule(&self, curve: &[Point], last: &Point) -> Option<String> {
        if let (Some(limit), Some(p99)) = (self.rules.ttft_p99_ms, last.ttft_p99_ms) {
            if p99 > limit {
                return Some(format!(
                    "p99 TTFT {p99:.1} ms at load {} is above the limit of {} ms",
                    number(last.load),
                    number(limit)
                ));
            }
        }
        if let Some(limit) = self.rules.error_share {
            if last.error_share > limit {
                return Some(format!(
                    "{:.1}% of responses failed at load {} (limit {:.1}%)",
                    last.error_share * 100.0,
                    number(last.load),
                    limit * 100.0
                ));
            }
        }
        let n = curve.len();
        let flat = !self.auto
            && self.rules.stop_when_flat
            && n >= 3
            && self.no_gain(curve, n - 1)
            && self.no_gain(curve, n - 2);
        flat.then(|| {
            format!(
                "throughput stopped rising (less than {:.0}% over the best, twice running)",
                self.rules.min_gain * 100.0
            )
        })
    }

    /// Whether point `i` failed to beat the best before it by the minimum gain.
    fn no_gain(&self, curve: &[Point], i: usize) -> bool {
        let best = curve[..i]
            .iter()
            .map(|p| p.throughput_tps)
            .fold(0.0, f64::max);
        i > 0 && curve[i].throughput_tps < best * (1.0 + self.rules.min_gain)
    }
}

impl CaseSource for Sweep {
    fn next(&mut self, done: &[CaseSummary]) -> Option<CasePlan> {
        let curve: Vec<Point> = done.iter().map(Point::of).collect();
        if let Some(last) = curve.last() {
            if let Some(reason) = self.broken_rule(&curve, last) {
                self.stop_reason = Some(reason);
                self.queue.clear();
                return None;
            }
            if self.auto && self.doubling && self.queue.is_empty() {
                let best_before = curve[..curve.len() - 1]
                    .iter()
                    .map(|p| p.throughput_tps)
                    .fold(0.0, f64::max);
                let rising = last.throughput_tps >= best_before * (1.0 + self.rules.min_gain);
                if rising && last.load * 2.0 <= self.max_load && curve.len() < self.max_loads {
                    self.queue.push_back(self.point(last.load * 2.0));
                } else {
                    self.doubling = false;
                }
            }
            if self.auto && !self.doubling && self.queue.is_empty() {
                self.refine(done);
            }
        }
        let point = self.queue.pop_front()?;
        let plan = self
            .template
            .plan(&self.input, point, &self.output)
            .with_batch(self.batch)
            .with_dataset(self.dataset.as_deref());
        self.issued.push(plan.clone());
        Some(plan)
    }

    fn planned(&self) -> usize {
        self.issued.len() + self.queue.len()
    }

    fn plans(&self) -> Vec<CasePlan> {
        self.issued.clone()
    }
}

/// What `llmload sweep` adds to a run's settings.
#[derive(Clone, Debug, Default)]
pub struct SweepOptions {
    /// Step the load geometrically instead of over the listed loads.
    pub auto: bool,
    /// The largest load `auto` may try.
    pub max_load: f64,
    /// The most loads `auto` may measure, the doubling and the refinement together.
    pub max_loads: usize,
    /// When to stop adding load.
    pub rules: StopRules,
}
