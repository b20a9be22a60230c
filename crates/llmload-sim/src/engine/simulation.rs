//! The engine on a virtual clock: submit requests, let modelled time pass, read each request's
//! timeline. No sleeping and no tokio; this is what the calibration and the arithmetic tests
//! run, and what a "what if" study can run at any scale.

use super::{Engine, Rejection, SequenceId, SequenceRequest, SequenceUpdate, StopReason};
use crate::Profile;

/// One request's life in a simulation, in modelled milliseconds since the simulation began.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// When it was submitted.
    pub submitted_ms: f64,
    /// When its first token was produced.
    pub first_token_ms: Option<f64>,
    /// When it finished.
    pub finished_ms: Option<f64>,
    /// Tokens generated.
    pub generated: usize,
    /// Prompt tokens served by the prefix cache.
    pub cached_tokens: usize,
    /// The slot it ran in.
    pub slot: Option<usize>,
    /// Why it stopped.
    pub stop: Option<StopReason>,
}

/// An [`Engine`] driven on a virtual clock.
#[derive(Debug)]
pub struct Simulation {
    engine: Engine,
    now_ms: f64,
    timelines: Vec<Timeline>,
    updates: Vec<SequenceUpdate>,
}

impl Simulation {
    /// A simulation of an idle engine at time 0.
    pub fn new(profile: &Profile, seed: u64) -> Self {
        Self {
            engine: Engine::new(profile, seed),
            now_ms: 0.0,
            timelines: Vec::new(),
            updates: Vec::new(),
        }
    }

    /// The virtual clock, in modelled milliseconds.
    pub fn now_ms(&self) -> f64 {
        self.now_ms
    }

    /// The engine, for its gauges.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Submits a request now; it joins the engine at the next step boundary.
    pub fn submit(&mut self, request: &SequenceRequest) -> Result<SequenceId, Rejection> {
        let id = self.timelines.len() as SequenceId;
        self.engine.submit(id, request)?;
        self.timelines.push(Timeline {
            submitted_ms: self.now_ms,
            first_token_ms: None,
            finished_ms: None,
            generated: 0,
            cached_tokens: 0,
            slot: None,
            stop: None,
        });
        Ok(id)
    }

    /// Lets `duration_ms` of modelled time pass. A step that starts before the target runs to its
    /// end, so the clock may pass the target: requests submitted afterwards join at a step
    /// boundary, as they do in the real engine.
    pub fn advance_ms(&mut self, duration_ms: f64) {
        let target_ms = self.now_ms + duration_ms;
        while self.now_ms < target_ms {
            if !self.step() {
                self.now_ms = target_ms;
            }
        }
    }

    /// Runs until nothing runs and nothing waits.
    pub fn run_until_idle(&mut self) {
        while self.step() {}
    }

    /// Timeline of a submitted request.
    pub fn timeline(&self, id: SequenceId) -> &Timeline {
        &self.timelines[index(id)]
    }

    /// Cancels a request (its client went away).
    pub fn cancel(&mut self, id: SequenceId) -> bool {
        self.engine.cancel(id)
    }

    fn step(&mut self) -> bool {
        let Some(duration_ms) = self.engine.step(&mut self.updates) else {
            return false;
        };
        self.now_ms += duration_ms;
        for update in &self.updates {
            let timeline = &mut self.timelines[index(update.id)];
            timeline.slot = Some(update.slot);
            timeline.cached_tokens = update.cached_tokens;
            timeline.generated = update.generated;
            if update.generated > 0 && timeline.first_token_ms.is_none() {
                timeline.first_token_ms = Some(self.now_ms);
            }
            if let Some(finish) = update.finish {
                timeline.finished_ms = Some(self.now_ms);
                timeline.stop = Some(finish.stop);
            }
        }
        true
    }
}

/// Position of a sequence's timeline: ids are handed out in submission order from 0. An id too
/// large for `usize` cannot be one of them, and maps past the end.
fn index(id: SequenceId) -> usize {
    usize::try_from(id).unwrap_or(usize::MAX)
}
