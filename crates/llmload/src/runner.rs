//! The runner: for each case, warmup requests one at a time, then measured rounds of C
//! simultaneous requests; a round ends when its last request ends.
//!
//! Prompts for a round are built before it starts, so that "simultaneous" means it. Every request
//! becomes a record written the moment it ends. A stop (Ctrl-C, later the guard) cancels what is
//! in flight; cancelled requests are recorded as such and the case is left incomplete.

use crate::api::{GenerationRequest, Prompt};
use crate::config::Case;
use crate::guard::Guard;
use crate::record::{Phase, Record, RecordSink, RequestMeta};
use crate::target::Target;
use crate::workload::source::PromptSource;
use anyhow::Context;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Drives one attempt's requests.
pub struct Runner<'a> {
    /// The server.
    pub target: &'a Target,
    /// Where prompts come from.
    pub prompts: &'a PromptSource,
    /// Where records go.
    pub sink: &'a mut RecordSink,
    /// The attempt's time origin.
    pub origin: Instant,
    /// Fires when the run must stop (the guard's token).
    pub cancel: CancellationToken,
    /// Stop rules, checked before every warmup and round and told of every measured record.
    pub guard: &'a Guard,
    /// Seed for prompt offsets.
    pub seed: u64,
    /// Requests built so far (each gets a distinct prompt offset).
    pub serial: u64,
}

/// What the runner did for one case.
#[derive(Debug, Default)]
pub struct CaseRun {
    /// Measured records, in completion order.
    pub records: Vec<Record>,
    /// Whether the run was stopped during this case.
    pub stopped: bool,
}

impl Runner<'_> {
    /// Runs `warmup` requests then `rounds` rounds of `case`.
    pub async fn run_case(
        &mut self,
        case: &Case,
        warmup: u32,
        rounds: u32,
    ) -> anyhow::Result<CaseRun> {
        let mut run = CaseRun::default();
        for index in 0..warmup {
            if self
                .guard
                .process_check(&format!("before warmup {} of case {}", index + 1, case.id))
            {
                run.stopped = true;
                return Ok(run);
            }
            let meta = self.meta(case, Phase::Warmup, None, index);
            self.launch(vec![(meta, Some(0))]).await?;
        }
        for round in 1..=rounds {
            if self
                .guard
                .process_check(&format!("before round {round} of case {}", case.id))
            {
                run.stopped = true;
                return Ok(run);
            }
            let requests = (0..case.concurrency)
                .map(|index| (self.meta(case, Phase::Measured, Some(round), index), None))
                .collect();
            run.records.extend(self.launch(requests).await?);
        }
        run.stopped = self.cancel.is_cancelled();
        Ok(run)
    }

    fn meta(&self, case: &Case, phase: Phase, round: Option<u32>, index: u32) -> RequestMeta {
        RequestMeta {
            case: case.id.clone(),
            phase,
            round,
            index,
            input_tokens: case.input_tokens,
            output_tokens: case.output_tokens,
            scheduled: None,
        }
    }

    /// Builds every prompt, then sends all requests at once; returns their records in the order
    /// they ended, each already written to the sink.
    async fn launch(
        &mut self,
        requests: Vec<(RequestMeta, Option<u32>)>,
    ) -> anyhow::Result<Vec<Record>> {
        let mut bodies = Vec::with_capacity(requests.len());
        for (meta, slot) in &requests {
            let prompt = self.next_prompt(meta.input_tokens).await?;
            let request = GenerationRequest {
                prompt: &prompt,
                output_tokens: meta.output_tokens,
                slot: slot.filter(|_| self.target.endpoint.api == crate::api::Api::Llamacpp),
                model: self.target.model.as_deref(),
            };
            bodies.push(self.target.endpoint.api.body(&request));
        }
        let mut in_flight = JoinSet::new();
        for ((meta, _), body) in requests.into_iter().zip(bodies) {
            let endpoint = self.target.endpoint.clone();
            let cancel = self.cancel.clone();
            in_flight.spawn(async move { (meta, endpoint.stream(&body, &cancel).await) });
        }
        let mut records = Vec::with_capacity(in_flight.len());
        while let Some(joined) = in_flight.join_next().await {
            let (meta, exchange) = joined.context("a request task failed")?;
            let record = Record::from_exchange(meta, &exchange, self.origin);
            self.sink
                .append(&record)
                .context("writing requests.jsonl")?;
            if record.phase == Phase::Measured {
                self.guard.observe_record(&record);
            }
            records.push(record);
        }
        Ok(records)
    }

    async fn next_prompt(&mut self, tokens: u32) -> anyhow::Result<Prompt> {
        let serial = self.serial;
        self.serial += 1;
        self.prompts
            .prompt(self.target, tokens, serial, self.seed)
            .await
    }
}
