//! The open loop (and trace replay) of the runner: requests prepared ahead, in order, handed to
//! the pacer thread (`pacer.rs`), which launches each at its scheduled instant under the in-flight
//! cap; their records are written as they end, then the loop drains.

use super::{CaseRun, Pacing, CHECK, LEAD};
use crate::api::client::Exchange;
use crate::api::Body;
use crate::error::Context;
use crate::record::{Phase, RequestMeta};
use crate::runner::pacer::{Gate, Job, Pacer};
use crate::workload::schedule::Bound;
use crate::workload::shape::CasePlan;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

impl super::Runner<'_> {
    /// An open loop or a trace: requests prepared ahead, in order, and launched by the pacer
    /// thread at `start + offset` under the cap; records written as requests end, then drained.
    pub(super) async fn open_loop(
        &mut self,
        plan: &CasePlan,
        pacing: Pacing,
        offsets: &[Duration],
        run: &mut CaseRun,
    ) -> crate::error::Result<()> {
        let gate = Gate::new(pacing.cap.map(|c| c as usize));
        let mut pacer =
            Pacer::start(gate.clone(), self.cancel.clone()).context("starting the pacer thread")?;
        let (results, mut ended) = mpsc::unbounded_channel();
        let entry = |i: usize| pacing.lengths.as_ref().and_then(|l| l.get(i).cloned());
        // The first prompt is built before the clock starts, so that the first arrival is on time.
        let mut first = if offsets.is_empty() {
            None
        } else {
            Some(self.prepare(plan, 0, entry(0)).await?)
        };
        let start = Instant::now() + LEAD;
        let warmup_end = start + plan.warmup_time;
        let known_end = match pacing.bound {
            Bound::Duration(d) => Some(start + d),
            Bound::Requests(_) => None,
        };
        run.load = Some(self.window_figures(warmup_end, known_end));
        let mut last = start;
        let mut checks = tokio::time::interval(CHECK);
        let at = format!("during case {}", plan.case.id);
        let mut index = 0;
        while index < offsets.len() && !self.cancel.is_cancelled() {
            let permit = tokio::select! {
                biased;
                Some((meta, exchange)) = ended.recv() => {
                    self.settle(meta, &exchange, run)?;
                    continue;
                }
                _ = checks.tick() => {
                    self.guard.process_check(&at);
                    continue;
                }
                permit = pacer.reserve() => permit,
            };
            let Some(permit) = permit else { break };
            let (mut meta, body) = match first.take() {
                Some(prepared) => prepared,
                None => self.prepare(plan, index as u64, entry(index)).await?,
            };
            let scheduled = start + offsets[index];
            self.schedule(&mut meta, scheduled, warmup_end, run);
            permit.send((scheduled.into_std(), self.job(meta, body, &gate, &results)));
            last = scheduled;
            let settled = self.since(scheduled);
            run.load.iter_mut().for_each(|l| l.settle_to(settled));
            index += 1;
        }
        // No more launches: wait for those the pacer holds and those in flight.
        drop(results);
        pacer.close();
        self.drain(&mut ended, &mut checks, &at, run).await?;
        run.pacer_priority = pacer.finish().await.map(|(_, priority)| priority.name());
        let end = match pacing.bound {
            Bound::Duration(d) => start + d,
            Bound::Requests(_) => last,
        };
        run.window = Some((self.since(warmup_end), self.since(end.max(warmup_end))));
        Ok(())
    }

    /// An open-loop request about to go to the pacer: when it is due (its launch, told to the
    /// window figures) and whether that falls in the warmup time.
    fn schedule(
        &self,
        meta: &mut RequestMeta,
        scheduled: Instant,
        warmup_end: Instant,
        run: &mut CaseRun,
    ) {
        meta.scheduled = Some(scheduled);
        meta.launched = Some(scheduled);
        meta.phase = if scheduled < warmup_end {
            Phase::Warmup
        } else {
            Phase::Measured
        };
        let at = self.since(scheduled);
        run.load.iter_mut().for_each(|l| l.launch(at));
    }

    /// Records open-loop requests as they end until every one launched has reported, checking
    /// the guard meanwhile.
    async fn drain(
        &mut self,
        ended: &mut mpsc::UnboundedReceiver<(RequestMeta, Exchange)>,
        checks: &mut tokio::time::Interval,
        at: &str,
        run: &mut CaseRun,
    ) -> crate::error::Result<()> {
        loop {
            tokio::select! {
                biased;
                ended = ended.recv() => match ended {
                    Some((meta, exchange)) => self.settle(meta, &exchange, run)?,
                    None => return Ok(()),
                },
                _ = checks.tick() => {
                    self.guard.process_check(at);
                }
            }
        }
    }

    /// A request to launch on the pacer thread: spawned on the runtime, its place under the cap
    /// given back and its result sent back when it ends.
    fn job(
        &self,
        meta: RequestMeta,
        body: Body,
        gate: &Arc<Gate>,
        results: &mpsc::UnboundedSender<(RequestMeta, Exchange)>,
    ) -> Job {
        let endpoint = self.target.endpoint.clone();
        let cancel = self.cancel.clone();
        let gate = gate.clone();
        let results = results.clone();
        let runtime = tokio::runtime::Handle::current();
        Box::new(move || {
            runtime.spawn(async move {
                let exchange = endpoint.stream(&body, &cancel).await;
                gate.release();
                // The runner holds the receiver until every launched request has reported.
                let _ = results.send((meta, exchange));
            });
        })
    }
}
