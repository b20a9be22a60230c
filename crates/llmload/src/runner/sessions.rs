//! Multi-turn sessions: the case's concurrency of sessions in parallel (a new session as soon as
//! one ends), or sessions arriving from a seeded schedule. A session sends its turns one after
//! another: each turn waits for the previous answer, then the think time (never counted as
//! request time: a turn's times run from its own send), then goes with the whole history so far.
//!
//! Sessions run as futures on the runner's task, each request on a task of its own; their
//! records come back on a channel and are written the moment each request ends. A turn that
//! fails ends its session (what follows would not be the same conversation); a stop cancels what
//! is in flight and starts nothing more.

use super::{CaseRun, CHECK, LEAD};
use crate::api::client::{Exchange, Transport};
use crate::api::{Body, GenerationRequest};
use crate::error::{Context, Error};
use crate::record::{Phase, RequestMeta, TurnMeta};
use crate::target::Target;
use crate::workload::graph::GraphReplay;
use crate::workload::prompt::splitmix64;
use crate::workload::schedule::{self, Bound};
use crate::workload::session::{History, SessionSpec};
use crate::workload::shape::{CasePlan, Shape};
use crate::workload::source::{Answer, PromptSource};
use futures_util::stream::{FuturesUnordered, StreamExt};
use rand::SeedableRng;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Serial numbers each session may use for its prompts: two a turn (its message, its
/// placeholder).
fn serials(turns: u32) -> u64 {
    2 * u64::from(turns)
}

/// What every session of a case shares.
struct Sessions<'a> {
    target: &'a Target,
    transport: Arc<dyn Transport>,
    prompts: &'a PromptSource,
    plan: &'a CasePlan,
    spec: SessionSpec,
    seed: u64,
    /// The first serial number of the case's sessions.
    serial: u64,
    /// The attempt's id of the case's first session.
    first_id: u64,
    cancel: CancellationToken,
    extra_body: Option<serde_json::Value>,
    /// Where each turn's request ids come from.
    ids: Option<Arc<super::ids::RequestIds>>,
    /// A mix of models: each session's is drawn from it.
    mix: Option<Arc<crate::workload::mix::ModelMix>>,
    /// `--dag`: each session replays the next of its graphs.
    graph: Option<Arc<GraphReplay>>,
    ended: mpsc::UnboundedSender<(RequestMeta, Exchange)>,
}

impl super::Runner<'_> {
    /// Runs the sessions of `plan`, their records folded into `run`.
    pub(super) async fn sessions(
        &mut self,
        plan: &CasePlan,
        run: &mut CaseRun,
    ) -> crate::error::Result<()> {
        let Shape::Sessions {
            process,
            rate_rps,
            bound,
            spec,
            graph,
        } = &plan.shape
        else {
            return Ok(());
        };
        let (ended, mut records) = mpsc::unbounded_channel();
        let shared = Sessions {
            target: self.target,
            prompts: self.prompts,
            plan,
            spec: *spec,
            transport: self.transport.clone(),
            seed: self.settings.seed,
            serial: self.serial,
            first_id: self.sessions,
            cancel: self.cancel.clone(),
            extra_body: self.settings.extra_body.clone(),
            ids: self.settings.ids.clone(),
            mix: self.settings.mix.clone(),
            graph: graph.clone(),
            ended,
        };
        let arrivals = match (process, rate_rps) {
            (Some(process), Some(rate)) => {
                let seed = splitmix64(self.settings.seed ^ self.serial ^ 0x5e55);
                Some(schedule::offsets(*process, *rate, *bound, seed))
            }
            _ => None,
        };
        let started = self
            .drive(&shared, arrivals.as_deref(), *bound, &mut records, run)
            .await;
        // Every session has ended: what they sent before is in the channel still.
        drop(shared);
        while let Some((meta, exchange)) = records.recv().await {
            self.settle(meta, &exchange, run)?;
        }
        let started = started?;
        self.sessions += started;
        self.serial += started * serials(spec.turns);
        Ok(())
    }

    /// Starts sessions (in parallel up to the case's concurrency, or at their arrivals) until the
    /// bound, writing records as they come; returns how many sessions started.
    async fn drive(
        &mut self,
        shared: &Sessions<'_>,
        arrivals: Option<&[Duration]>,
        bound: Bound,
        records: &mut mpsc::UnboundedReceiver<(RequestMeta, Exchange)>,
        run: &mut CaseRun,
    ) -> crate::error::Result<u64> {
        let id = &shared.plan.case.id;
        // An open loop's clock starts late enough for its first session to be ready on time.
        let start = Instant::now() + if arrivals.is_some() { AHEAD } else { LEAD };
        let (count, deadline) = match (bound, arrivals) {
            (_, Some(offsets)) => (offsets.len() as u64, None),
            (Bound::Requests(n), None) => (n, None),
            (Bound::Duration(d), None) => (u64::MAX, Some(start + d)),
        };
        let parallel = u64::from(shared.plan.case.concurrency.max(1));
        // `--stagger`: the k-th of the first `parallel` closed sessions is due k/parallel of a
        // mean think time after the start.
        let spread = (arrivals.is_none() && shared.spec.stagger).then(|| shared.spec.think.mean());
        let staggered = |k: u64| {
            spread
                .filter(|_| k < parallel)
                .map(|think| start + think.mul_f64(k as f64 / parallel as f64))
        };
        let mut running = FuturesUnordered::new();
        let mut started = 0u64;
        let mut checks = tokio::time::interval(CHECK);
        let mut stopped = false;
        loop {
            let due = match arrivals {
                Some(offsets) => offsets.get(crate::num::index(started)).map(|o| start + *o),
                None => None,
            };
            let room = match arrivals {
                Some(_) => false,
                None => (running.len() as u64) < parallel,
            };
            let open = started < count
                && deadline.is_none_or(|d| Instant::now() < d)
                && !stopped
                && !self.cancel.is_cancelled();
            if open && room {
                if self
                    .guard
                    .process_check(&format!("before a session of case {id}"))
                {
                    stopped = true;
                    continue;
                }
                running.push(shared.session(started, staggered(started)));
                started += 1;
                continue;
            }
            if running.is_empty() && !(open && due.is_some()) {
                return Ok(started);
            }
            // A session starts (builds its first prompt) a little before its arrival, and
            // sends it at the arrival.
            let arrival = due.filter(|_| open).unwrap_or_else(|| start + FAR);
            let wake = arrival.checked_sub(AHEAD).unwrap_or(arrival);
            tokio::select! {
                biased;
                Some((meta, exchange)) = records.recv() => self.settle(meta, &exchange, run)?,
                Some(ended) = running.next(), if !running.is_empty() => ended?,
                () = tokio::time::sleep_until(wake), if open && due.is_some() => {
                    if self.guard.process_check(&format!("during case {id}")) {
                        stopped = true;
                    } else {
                        running.push(shared.session(started, Some(arrival)));
                        started += 1;
                    }
                }
                _ = checks.tick() => {
                    stopped |= self.guard.process_check(&format!("during case {id}"));
                }
            }
        }
    }
}

mod graph;

/// How long before its arrival an open-loop session starts building its first prompt.
const AHEAD: Duration = Duration::from_millis(500);

/// Far enough to never wake.
const FAR: Duration = Duration::from_secs(86_400 * 365);

impl Sessions<'_> {
    /// The `index`-th session of the case, its first turn (or a graph's first calls) due at
    /// `arrival` (open) or at once.
    async fn session(&self, index: u64, arrival: Option<Instant>) -> crate::error::Result<()> {
        match &self.graph {
            Some(graph) => self.graph_session(graph, index, arrival).await,
            None => self.turns(index, arrival).await,
        }
    }

    /// The `index`-th session of turns.
    async fn turns(&self, index: u64, arrival: Option<Instant>) -> crate::error::Result<()> {
        let id = self.first_id + index;
        let mut conversation = self.prompts.conversation(self.target);
        let mut due = arrival;
        // Every turn of a session goes to the one model drawn for it.
        let model = self
            .mix
            .as_ref()
            .map(|mix| mix.pick_session(self.seed, id).to_owned());
        for turn in 1..=self.spec.turns {
            if self.cancel.is_cancelled() {
                break;
            }
            let serial = self.serial + index * serials(self.spec.turns) + 2 * u64::from(turn - 1);
            let mut rng = rand::rngs::StdRng::seed_from_u64(splitmix64(
                self.seed ^ splitmix64(id).rotate_left(29) ^ u64::from(turn),
            ));
            let plan = self.plan;
            let input = match (turn, self.spec.turn_input) {
                (2.., Some(n)) => n,
                _ => plan.input.sample(&mut rng),
            };
            let output = plan.output.sample(&mut rng);
            let built = self
                .prompts
                .turn(self.target, &mut conversation, input, serial, self.seed)
                .await
                .with_context(|| format!("turn {turn} of session {id}"))?;
            let request_id = self.ids.as_ref().map(|ids| ids.next());
            let turn_meta = TurnMeta {
                session: id,
                turn,
                turns: self.spec.turns,
                history_tokens: built.history_tokens,
            };
            let mut meta = self.meta(index, &built, output, due, turn_meta);
            meta.request_id = request_id.as_ref().map(|r| r.id.clone());
            meta.model.clone_from(&model);
            let keep = self.spec.history == History::AsGenerated && turn < self.spec.turns;
            let mut body = self.body(&built.prompt, output, keep, model.as_deref());
            body.id = request_id;
            body.session = Some(id);
            if let Some(at) = due {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = self.cancel.cancelled() => {}
                }
            }
            if self.cancel.is_cancelled() {
                // Stopped while thinking: the turn never went out.
                break;
            }
            let (meta, mut exchange) = self.send(meta, body).await?;
            let done = exchange.done.filter(|_| exchange.failure.is_none());
            let answer = exchange.answer.take();
            // The runner holds the receiver until every session has ended.
            let _ = self.ended.send((meta, exchange));
            let Some(done) = done else { break };
            if turn == self.spec.turns {
                break;
            }
            let answer = match (self.spec.history, answer) {
                (History::AsGenerated, Some(text)) => Answer::Generated(text),
                _ => Answer::Placeholder(output),
            };
            self.prompts
                .answer(
                    self.target,
                    &mut conversation,
                    answer,
                    serial + 1,
                    self.seed,
                )
                .await
                .with_context(|| format!("the answer of turn {turn} of session {id}"))?;
            due = Some(done + self.spec.think.sample(self.seed, id, turn + 1));
        }
        Ok(())
    }

    /// The body of a turn: caching allowed (the history is there to be cached), the answer's
    /// text kept when the history takes it.
    /// The record's start for a session's request (a turn, or a call of a graph): the
    /// session's `index`, its prompt as `built`, `output` tokens asked for, due at `due`. Its
    /// ids, model and graph call are the caller's to set.
    fn meta(
        &self,
        index: u64,
        built: &crate::workload::source::Turn,
        output: u32,
        due: Option<Instant>,
        turn: TurnMeta,
    ) -> RequestMeta {
        RequestMeta {
            case: self.plan.case.id.clone(),
            phase: Phase::Measured,
            round: None,
            index: u32::try_from(index).unwrap_or(u32::MAX),
            input_tokens: built.input_tokens.unwrap_or(0),
            output_tokens: output,
            shared_tokens: self.prompts.shared_tokens(),
            template_head: self.prompts.template_head(),
            exact_input: built.input_tokens.is_some(),
            dataset_entry: None,
            scheduled: due,
            launched: None,
            turn: Some(turn),
            graph: None,
            request_id: None,
            cancel_after: None,
            inputs: 0,
            images: None,
            model: None,
            canary: None,
        }
    }

    fn body(
        &self,
        prompt: &crate::api::Prompt,
        output: u32,
        keep_answer: bool,
        model: Option<&str>,
    ) -> Body {
        let request = GenerationRequest {
            prompt,
            output_tokens: output,
            slot: None,
            model: model.or(self.target.model.as_deref()),
            cache_prompt: true,
            usage_per_chunk: self.target.reports_usage_per_chunk(),
            extra: self.extra_body.as_ref(),
        };
        let mut body = Body::from_json(&self.target.body(&request));
        body.keep_answer = keep_answer;
        body
    }

    /// Sends one turn on a task of its own and waits for its end.
    async fn send(
        &self,
        mut meta: RequestMeta,
        body: Body,
    ) -> crate::error::Result<(RequestMeta, Exchange)> {
        let transport = self.transport.clone();
        let cancel = self.cancel.clone();
        meta.launched = Some(Instant::now());
        let exchange = tokio::spawn(async move { transport.exchange(body, &cancel).await })
            .await
            .map_err(|e| Error::Internal(format!("a request task failed: {e}")))?;
        Ok((meta, exchange))
    }
}
