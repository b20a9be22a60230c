//! The closed-continuous loop of the runner: keep the level's requests in flight, a new one as
//! soon as one ends, until the bound; then drain. The level is one concurrency for a plain case,
//! or a staged load's steps (`workload::stages::concurrency_steps`): when it rises, new requests
//! start at once; when it falls, none starts until fewer are in flight (none is cut short).

use super::{CaseRun, InFlight, Pacing, Segment};
use crate::record::Phase;
use crate::workload::schedule::Bound;
use crate::workload::stages;
use std::time::Duration;
use tokio::time::Instant;

impl super::Runner<'_> {
    /// A closed continuous load over `segments` (one case each, a request to the one it is sent
    /// in), the concurrency following `steps` (offset from the start of the load, level from
    /// then on). Returns how many segments the load reached.
    pub(super) async fn stream(
        &mut self,
        segments: &[Segment<'_>],
        steps: &[(Duration, u32)],
        pacing: &Pacing,
        runs: &mut [CaseRun],
    ) -> crate::error::Result<usize> {
        let first = segments[0].plan;
        let mut in_flight = InFlight::new();
        let total = match pacing.bound {
            Bound::Requests(n) => self.settings.shard.share(n),
            Bound::Duration(_) => u64::MAX,
        };
        // A shard keeps its share of each level in flight; its serial numbers interleave with
        // the other shards', so no two build the same prompt.
        let shard = self.settings.shard;
        let steps: Vec<(Duration, u32)> = steps
            .iter()
            .map(|&(at, level)| (at, shard.share_u32(level)))
            .collect();
        let steps = steps.as_slice();
        let streams = steps.iter().map(|&(_, level)| level).max().unwrap_or(0);
        self.share = Some(super::Share::Streams(streams));
        if streams == 0 {
            self.progress.println(&format!(
                "shard {shard}: no streams of its own (a concurrency below {} split {} ways)",
                shard.count, shard.count
            ));
        }
        let base = self.serial;
        self.serial = shard.serial(base, 0);
        let mut next = Some(self.prepare(first, shard.serial(0, 0), None).await?);
        let start = self.begin(Instant::now()).await;
        let deadline = match pacing.bound {
            Bound::Duration(d) => Some(start + d),
            Bound::Requests(_) => None,
        };
        let warmup_end = start + first.warmup_time;
        self.open_windows(segments, start, warmup_end, runs);
        let mut last_launch = start;
        for index in 0..total {
            let Some((mut meta, body)) = next.take() else {
                break;
            };
            if !self
                .wait_for_room(steps, start, deadline, &mut in_flight, segments, runs)
                .await?
            {
                break;
            }
            let now = Instant::now();
            let segment = Segment::at(segments, now.saturating_duration_since(start));
            let at = format!(
                "before request {} of case {}",
                index + 1,
                segments[segment].plan.case.id
            );
            if self.guard.process_check(&at) || deadline.is_some_and(|d| now >= d) {
                break;
            }
            last_launch = now;
            meta.launched = Some(now);
            meta.case.clone_from(&segments[segment].plan.case.id);
            meta.phase = if now < warmup_end || index < first.warmup_launches {
                Phase::Warmup
            } else {
                Phase::Measured
            };
            let launched = self.since(now);
            if let Some(load) = &mut runs[segment].load {
                load.launch(launched);
            }
            self.spawn(&mut in_flight, meta, body);
            runs.iter_mut()
                .filter_map(|r| r.load.as_mut())
                .for_each(|l| l.settle_to(launched));
            if index + 1 < total {
                self.serial = shard.serial(base, index + 1);
                next = Some(
                    self.prepare(first, shard.serial(0, index + 1), None)
                        .await?,
                );
            }
        }
        let ends = |i: usize| {
            segments[i]
                .end
                .map_or(deadline.unwrap_or(last_launch), |e| start + e)
        };
        for (i, run) in runs.iter_mut().enumerate() {
            let w0 = (start + segments[i].start).max(warmup_end);
            run.window = Some((self.since(w0), self.since(ends(i).max(w0))));
        }
        while !in_flight.is_empty() {
            self.settle_any(&mut in_flight, segments, runs).await?;
        }
        Ok(self.close_segments(segments, start, runs))
    }

    /// Records ended requests until fewer than the level are in flight; waits for the level to
    /// rise when nothing is in flight. False when the load is over (the deadline passed, the
    /// level fell to 0 for good, or the run stopped).
    async fn wait_for_room(
        &mut self,
        steps: &[(Duration, u32)],
        start: Instant,
        deadline: Option<Instant>,
        in_flight: &mut InFlight,
        segments: &[Segment<'_>],
        runs: &mut [CaseRun],
    ) -> crate::error::Result<bool> {
        loop {
            if self.cancel.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            let offset = Instant::now().saturating_duration_since(start);
            let level = stages::concurrency_at(steps, offset);
            if in_flight.len() < level as usize {
                return Ok(true);
            }
            let change = steps
                .iter()
                .find(|&&(at, _)| at > offset)
                .map(|&(at, _)| start + at);
            let Some(wake) = change.into_iter().chain(deadline).min() else {
                if in_flight.is_empty() {
                    return Ok(false);
                }
                self.settle_any(in_flight, segments, runs).await?;
                continue;
            };
            if in_flight.is_empty() {
                tokio::time::sleep_until(wake).await;
                continue;
            }
            tokio::select! {
                joined = in_flight.join_next() => {
                    if let Some(joined) = joined {
                        self.settle_joined(joined, segments, runs)?;
                    }
                }
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }
}
