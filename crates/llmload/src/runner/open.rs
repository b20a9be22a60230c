//! The open loop (and trace replay) of the runner: requests prepared ahead, in order, handed to
//! the pacer thread (`pacer.rs`), which launches each at its scheduled instant under the in-flight
//! cap; their records are written as they end, then the loop drains.

use super::{CaseRun, Pacing, Segment, CHECK, LEAD};
use crate::api::client::Exchange;
use crate::api::Body;
use crate::error::Context;
use crate::record::{Phase, RequestMeta};
use crate::runner::pacer::{Gate, Job, Pacer};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

impl super::Runner<'_> {
    /// An open loop or a trace over `segments` (one case each): requests prepared ahead, in
    /// order, and launched by the pacer thread at `start + offset` under the cap; records written
    /// as requests end (each to the case of the segment it was scheduled in), then drained.
    /// Returns how many segments the load reached.
    pub(super) async fn open_loop(
        &mut self,
        segments: &[Segment<'_>],
        pacing: &Pacing,
        offsets: &[(Duration, usize)],
        runs: &mut [CaseRun],
    ) -> crate::error::Result<usize> {
        let shard = self.settings.shard;
        let gate = Gate::new(pacing.cap.map(|c| shard.share_u32(c) as usize));
        let mut pacer = Pacer::on(self.settings.pacer, gate.clone(), self.cancel.clone())
            .context("starting the pacer thread")?;
        let (results, mut ended) = mpsc::unbounded_channel();
        let entry = |g: usize| pacing.lengths.as_ref().and_then(|l| l.get(g).cloned());
        let plan = |g: usize| segments[offsets[g].1].plan;
        // A shard's arrivals, each with its place in the global schedule, whose serial number
        // (and so its prompt and lengths) it takes, as the single process would.
        let mine = shard.thin(offsets.iter().copied());
        self.share = Some(super::Share::Arrivals(mine.len() as u64));
        if mine.is_empty() && !offsets.is_empty() {
            self.progress.println(&format!(
                "shard {shard}: no arrivals of its own (fewer arrivals than shards)"
            ));
        }
        let base = self.serial;
        // The first prompt is built before the clock starts, so that the first arrival is on time.
        let mut first = match mine.first() {
            Some(&(g, _)) => {
                self.serial = base + g as u64;
                Some(self.prepare(plan(g), g as u64, entry(g)).await?)
            }
            None => None,
        };
        let start = self.begin(Instant::now() + LEAD).await;
        self.progress.open_loop(start.into_std(), || {
            mine.iter().map(|(_, (offset, _))| *offset).collect()
        });
        let warmup_end = start + segments[0].plan.warmup_time;
        self.open_windows(segments, start, warmup_end, runs);
        let mut last = start;
        let mut checks = tokio::time::interval(CHECK);
        let at = |i: usize| format!("during case {}", segments[i].plan.case.id);
        let mut index = 0;
        while index < mine.len() && !self.cancel.is_cancelled() {
            let permit = tokio::select! {
                biased;
                Some((meta, exchange)) = ended.recv() => {
                    self.settle_routed(meta, &exchange, segments, runs)?;
                    continue;
                }
                _ = checks.tick() => {
                    let now = Instant::now().saturating_duration_since(start);
                    self.guard.process_check(&at(Segment::at(segments, now)));
                    continue;
                }
                permit = pacer.reserve() => permit,
            };
            let Some(permit) = permit else { break };
            let (g, (offset, segment)) = mine[index];
            let (mut meta, body) = if let Some(prepared) = first.take() {
                prepared
            } else {
                self.serial = base + g as u64;
                self.prepare(plan(g), g as u64, entry(g)).await?
            };
            let scheduled = start + offset;
            self.schedule(&mut meta, scheduled, warmup_end, &mut runs[segment]);
            permit.send((scheduled.into_std(), self.job(meta, body, &gate, &results)));
            last = scheduled;
            let settled = self.since(scheduled);
            runs.iter_mut()
                .filter_map(|r| r.load.as_mut())
                .for_each(|l| l.settle_to(settled));
            index += 1;
        }
        self.serial = base + offsets.len() as u64;
        self.progress.open_loop_over();
        // No more launches: wait for those the pacer holds and those in flight.
        drop(results);
        pacer.close();
        let last_at = at(segments.len() - 1);
        self.drain(&mut ended, &mut checks, &last_at, segments, runs)
            .await?;
        let priority = pacer.finish().await.map(|(_, priority)| priority.name());
        for (i, run) in runs.iter_mut().enumerate() {
            run.pacer_priority = priority;
            let w0 = (start + segments[i].start).max(warmup_end);
            let end = segments[i].end.map_or(last, |e| start + e);
            run.window = Some((self.since(w0), self.since(end.max(w0))));
        }
        Ok(self.close_segments(segments, start, runs))
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
        segments: &[Segment<'_>],
        runs: &mut [CaseRun],
    ) -> crate::error::Result<()> {
        loop {
            tokio::select! {
                biased;
                ended = ended.recv() => match ended {
                    Some((meta, exchange)) => self.settle_routed(meta, &exchange, segments, runs)?,
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
        let transport = self.transport.clone();
        let cancel = self.cancel.clone();
        let gate = gate.clone();
        let results = results.clone();
        let runtime = tokio::runtime::Handle::current();
        Box::new(move || {
            runtime.spawn(async move {
                let exchange = transport.exchange(body, &cancel).await;
                gate.release();
                // The runner holds the receiver until every launched request has reported.
                let _ = results.send((meta, exchange));
            });
        })
    }
}
