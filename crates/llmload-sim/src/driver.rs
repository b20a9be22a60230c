//! The engine task: runs the pure [`Engine`] on the wall clock. Each step starts where the last
//! one ended (`sleep_until(step_start + step_time / time_scale)`, never a relative sleep), so
//! modelled time does not drift however many steps run. Requests come in on one bounded channel;
//! each request's progress goes out on its own `watch` channel, which the engine updates in place
//! (no allocation, never blocks) and the HTTP body turns into events at its own pace.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::engine::{Engine, Finish, Rejection, SequenceId, SequenceRequest, SequenceUpdate};

/// Requests that may wait to reach the engine task before senders wait.
const SUBMISSION_QUEUE: usize = 4096;

/// One request's progress as the engine reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Progress {
    /// Slot it runs in, once known.
    pub slot: Option<usize>,
    /// Prompt tokens served by the prefix cache.
    pub cached_tokens: usize,
    /// Tokens generated so far.
    pub generated: usize,
    /// Set when generation ended (timings in modelled milliseconds).
    pub finish: Option<Finish>,
}

/// Engine gauges and counters for `/metrics` and `/slots`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Status {
    /// Whether each slot holds a sequence.
    pub busy: Vec<bool>,
    /// Requests waiting for a slot or KV capacity.
    pub waiting: usize,
    /// Fraction of KV capacity reserved.
    pub kv_usage_ratio: f64,
    /// Prompt tokens evaluated.
    pub prompt_tokens_total: u64,
    /// Tokens generated.
    pub predicted_tokens_total: u64,
}

struct Submission {
    id: SequenceId,
    request: SequenceRequest,
    progress: watch::Sender<Progress>,
}

/// The HTTP side's handle on the engine task.
#[derive(Debug)]
pub(crate) struct EngineHandle {
    submissions: mpsc::Sender<Submission>,
    status: watch::Receiver<Status>,
    slots: usize,
    slot_context_tokens: usize,
}

/// The engine task has stopped (the server is shutting down).
#[derive(Debug, thiserror::Error)]
#[error("the engine has stopped")]
pub(crate) struct EngineStopped;

impl EngineHandle {
    /// Starts the engine task; it stops when `shutdown` is cancelled.
    pub(crate) fn spawn(engine: Engine, time_scale: f64, shutdown: CancellationToken) -> Self {
        let (submissions, receiver) = mpsc::channel(SUBMISSION_QUEUE);
        let slots = engine.slot_count();
        let slot_context_tokens = engine.slot_context_tokens();
        let (status_sender, status) = watch::channel(Status {
            busy: vec![false; slots],
            ..Status::default()
        });
        let task = EngineTask {
            engine,
            time_scale,
            submissions: receiver,
            status: status_sender,
            streams: HashMap::new(),
            updates: Vec::new(),
        };
        tokio::spawn(task.run(shutdown));
        Self {
            submissions,
            status,
            slots,
            slot_context_tokens,
        }
    }

    /// Whether a request of this shape can ever run (same rule as the engine's).
    pub(crate) fn check(
        &self,
        prompt_tokens: usize,
        output_tokens: usize,
        slot: Option<usize>,
    ) -> Result<(), Rejection> {
        crate::engine::check_request(
            self.slots,
            self.slot_context_tokens,
            prompt_tokens,
            output_tokens,
            slot,
        )
    }

    /// Hands a request to the engine; its progress arrives on the returned channel.
    pub(crate) async fn submit(
        &self,
        id: SequenceId,
        request: SequenceRequest,
    ) -> Result<watch::Receiver<Progress>, EngineStopped> {
        let (progress, receiver) = watch::channel(Progress::default());
        let submission = Submission {
            id,
            request,
            progress,
        };
        self.submissions
            .send(submission)
            .await
            .map_err(|_| EngineStopped)?;
        Ok(receiver)
    }

    /// The latest engine gauges.
    pub(crate) fn status(&self) -> Status {
        self.status.borrow().clone()
    }
}

struct EngineTask {
    engine: Engine,
    time_scale: f64,
    submissions: mpsc::Receiver<Submission>,
    status: watch::Sender<Status>,
    streams: HashMap<SequenceId, watch::Sender<Progress>>,
    updates: Vec<SequenceUpdate>,
}

impl EngineTask {
    async fn run(mut self, shutdown: CancellationToken) {
        let mut next_start: Option<Instant> = None;
        loop {
            while let Ok(submission) = self.submissions.try_recv() {
                self.accept(submission);
            }
            let start = next_start.unwrap_or_else(Instant::now);
            // The gauges describe the batch about to be computed: slots freed at the end of the
            // last step are refilled first.
            self.engine.admit();
            self.publish_status();
            let Some(duration_ms) = self.engine.step(&mut self.updates) else {
                // Idle: the next step starts when the next request arrives.
                next_start = None;
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    received = self.submissions.recv() => match received {
                        Some(submission) => self.accept(submission),
                        None => return,
                    },
                }
                continue;
            };
            let wall = Duration::from_secs_f64(duration_ms / 1000.0 / self.time_scale);
            let deadline = start + wall;
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = sleep_until(deadline) => {}
            }
            self.deliver();
            next_start = Some(deadline);
        }
    }

    fn accept(&mut self, submission: Submission) {
        // A rejection drops the sender: the HTTP side sees the engine refuse.
        if self
            .engine
            .submit(submission.id, &submission.request)
            .is_ok()
        {
            self.streams.insert(submission.id, submission.progress);
        }
    }

    /// Publishes the step's tokens, then cancels sequences whose client went away.
    fn deliver(&mut self) {
        for update in &self.updates {
            let Some(sender) = self.streams.get(&update.id) else {
                continue;
            };
            sender.send_modify(|progress| {
                progress.slot = Some(update.slot);
                progress.cached_tokens = update.cached_tokens;
                progress.generated = update.generated;
                progress.finish = update.finish;
            });
            if update.finish.is_some() {
                self.streams.remove(&update.id);
            }
        }
        let engine = &mut self.engine;
        self.streams.retain(|id, sender| {
            let open = !sender.is_closed();
            if !open {
                engine.cancel(*id);
            }
            open
        });
    }

    fn publish_status(&self) {
        let engine = &self.engine;
        self.status.send_modify(|status| {
            for (slot, busy) in status.busy.iter_mut().enumerate() {
                *busy = engine.slot_busy(slot);
            }
            status.waiting = engine.waiting();
            status.kv_usage_ratio = engine.kv_usage_ratio();
            status.prompt_tokens_total = engine.prompt_tokens_total();
            status.predicted_tokens_total = engine.predicted_tokens_total();
        });
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;
    use crate::engine::Simulation;
    use crate::Profile;

    fn request(offset: u32, prompt_tokens: u32, max_tokens: usize) -> SequenceRequest {
        SequenceRequest {
            prompt: (offset..offset + prompt_tokens).collect(),
            max_tokens,
            eos_after: None,
            cache_prompt: false,
            slot: None,
            adapter: None,
        }
    }

    /// Milliseconds from `start` to the first token and to the finish.
    async fn observe(mut progress: watch::Receiver<Progress>, start: Instant) -> (f64, f64) {
        let mut first_ms = None;
        loop {
            let current = *progress.borrow_and_update();
            let elapsed_ms = start.elapsed().as_secs_f64() * 1e3;
            if current.generated > 0 && first_ms.is_none() {
                first_ms = Some(elapsed_ms);
            }
            if current.finish.is_some() {
                return (first_ms.unwrap_or(elapsed_ms), elapsed_ms);
            }
            progress.changed().await.expect("engine runs");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn steps_follow_the_modelled_clock_without_drift() {
        let profile = Profile::builtin("seed-qwen3-8b").expect("built in");
        let requests = [request(0, 2048, 300), request(50_000, 8192, 100)];
        let mut sim = Simulation::new(&profile, 3);
        let ids = requests.each_ref().map(|r| sim.submit(r).expect("fits"));
        sim.run_until_idle();
        for time_scale in [1.0, 10.0] {
            let shutdown = CancellationToken::new();
            let engine = Engine::new(&profile, 3);
            let handle = EngineHandle::spawn(engine, time_scale, shutdown.clone());
            let start = Instant::now();
            let mut receivers = Vec::new();
            for (id, request) in requests.iter().enumerate() {
                let receiver = handle.submit(id as u64, request.clone()).await;
                receivers.push(receiver.expect("engine runs"));
            }
            let observed: Vec<_> = receivers
                .into_iter()
                .map(|receiver| tokio::spawn(observe(receiver, start)))
                .collect();
            for (task, id) in observed.into_iter().zip(ids) {
                let (first_ms, done_ms) = task.await.expect("observer");
                let timeline = sim.timeline(id);
                let expected_first = timeline.first_token_ms.expect("ran") / time_scale;
                let expected_done = timeline.finished_ms.expect("ran") / time_scale;
                assert!(
                    (first_ms - expected_first).abs() < 1.0,
                    "{first_ms} {expected_first}"
                );
                assert!(
                    (done_ms - expected_done).abs() < 1.0,
                    "{done_ms} {expected_done}"
                );
            }
            shutdown.cancel();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_receiver_frees_its_slot() {
        let profile = Profile::builtin("cpu-tiny").expect("built in");
        let handle = EngineHandle::spawn(Engine::new(&profile, 1), 1.0, CancellationToken::new());
        let start = Instant::now();
        let first = handle.submit(0, request(0, 100, 2000)).await.expect("runs");
        let second = handle
            .submit(1, request(1000, 100, 2000))
            .await
            .expect("runs");
        let third = handle.submit(2, request(2000, 100, 5)).await.expect("runs");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(handle.status().busy, [true, true]);
        assert_eq!(handle.status().waiting, 1);
        drop(first);
        let (first_token_ms, _) = observe(third, start).await;
        // Two 2000-token outputs take seconds; the third started right after the drop.
        assert!(first_token_ms < 100.0, "{first_token_ms}");
        drop(second);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(handle.status().busy, [false, false]);
    }
}
