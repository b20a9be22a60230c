//! The cases a [`Config`] plans: its load points and the matrix of lengths, loads, batches and
//! images, in the reference campaign's order (a staged load or a trace: their own cases).

use super::dataset::DatasetConfig;
use super::Config;
use crate::workload::image::ImageSpec;
use crate::workload::length::Length;
use crate::workload::shape::{CasePlan, LoadPoint, ShapeTemplate};
use crate::workload::trace::TraceEntry;

impl Config {
    /// Whether requests arrive on a schedule.
    pub fn is_open(&self) -> bool {
        self.load.is_open()
    }

    /// What every case shares.
    pub fn template(&self) -> ShapeTemplate {
        self.load.template(self.rounds)
    }

    /// The load points: rates for an open loop, else concurrencies.
    pub fn load_points(&self) -> Vec<LoadPoint> {
        self.load.points(&self.concurrency)
    }

    /// The matrix in the reference campaign's order: input tokens, then load (concurrency or rate), then output
    /// tokens.
    pub fn plans(&self) -> Vec<CasePlan> {
        let dataset = self.dataset.as_ref().map(DatasetConfig::id_name);
        self.matrix()
            .into_iter()
            .map(|p| p.with_dataset(dataset.as_deref()))
            .collect()
    }

    /// The plans of [`Config::plans`] before a dataset names them.
    fn matrix(&self) -> Vec<CasePlan> {
        let template = self.template();
        let batches: Vec<Option<u32>> = match &self.batch_size[..] {
            [] => vec![None],
            sizes => sizes.iter().copied().map(Some).collect(),
        };
        let images: Vec<Option<ImageSpec>> = match &self.images[..] {
            [] => vec![None],
            specs => specs.iter().map(|s| (s.count > 0).then_some(*s)).collect(),
        };
        if let Some(stages) = &self.load.stages {
            let plans = template.stage_plans(stages, &self.input_tokens[0], &self.output_tokens[0]);
            return plans
                .into_iter()
                .map(|p| p.with_batch(batches[0]).with_images(images[0]))
                .collect();
        }
        if let Some(entries) = &self.load.trace_entries {
            // A trace carries its own lengths: one case, named by their means.
            let mean = |f: fn(&TraceEntry) -> u32| {
                let total: f64 = entries.iter().map(|e| f64::from(f(e))).sum();
                Length::Fixed(crate::num::to_u32(
                    (total / entries.len() as f64).round().max(1.0),
                ))
            };
            let point = self.load_points()[0];
            let input = mean(|e| e.input_tokens);
            return vec![template.plan(&input, point, &mean(|e| e.output_tokens))];
        }
        if let Some(replay) = &self.load.graph {
            // A graph carries its own lengths: a case per load, its lengths the calls' means.
            let calls = || replay.graph.sessions.iter().flat_map(|s| s.calls.iter());
            let mean = |f: fn(&crate::workload::graph::GraphCall) -> u32| {
                let total: f64 = calls().map(|c| f64::from(f(c))).sum();
                Length::Fixed(crate::num::to_u32(
                    (total / replay.calls.max(1) as f64).round().max(1.0),
                ))
            };
            let (input, output) = (mean(|c| c.new_tokens), mean(|c| c.output_tokens));
            return self
                .load_points()
                .into_iter()
                .map(|point| template.plan(&input, point, &output))
                .collect();
        }
        let mut plans: Vec<CasePlan> = Vec::new();
        for input in &self.input_tokens {
            for &point in &self.load_points() {
                for output in &self.output_tokens {
                    for (&batch, &image) in batches
                        .iter()
                        .flat_map(|b| images.iter().map(move |i| (b, i)))
                    {
                        let plan = template
                            .plan(input, point, output)
                            .with_batch(batch)
                            .with_images(image);
                        if !plans.iter().any(|p| p.case.id == plan.case.id) {
                            plans.push(plan);
                        }
                    }
                }
            }
        }
        plans
    }

    /// The cases of [`Config::plans`], as the tables show them.
    pub fn cases(&self) -> Vec<crate::workload::shape::Case> {
        self.plans().into_iter().map(|p| p.case).collect()
    }
}
