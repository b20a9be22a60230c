//! A staged load in the runner: one continuous or open loop whose level follows the stages, each
//! stage a case of its own. There is no gap and no drain between stages; a request belongs to
//! the stage it was sent (or scheduled) in, wherever it ends. A stop mid-stage leaves that stage
//! incomplete and the stages after it not run.

use super::{CaseRun, Launches, Pacing, Streamed};
use crate::api::client::Exchange;
use crate::error::Context;
use crate::record::RequestMeta;
use crate::workload::prompt::splitmix64;
use crate::workload::schedule::Bound;
use crate::workload::shape::{CasePlan, Shape};
use crate::workload::stages::{self, Stage};
use std::time::Duration;
use tokio::time::Instant;

/// A stretch of a continuous or open loop that is a case of its own: the whole load of a plain
/// case, or one stage of a staged load.
pub(super) struct Segment<'p> {
    /// Its case.
    pub plan: &'p CasePlan,
    /// Its start, from the start of the load.
    pub start: Duration,
    /// Its end, from the start of the load, when known before the load runs.
    pub end: Option<Duration>,
}

impl<'p> Segment<'p> {
    /// The whole load of `plan`, ending with its duration if it has one.
    pub(super) fn whole(plan: &'p CasePlan, bound: Bound) -> Segment<'p> {
        let end = match bound {
            Bound::Duration(d) => Some(d),
            Bound::Requests(_) => None,
        };
        Segment {
            plan,
            start: Duration::ZERO,
            end,
        }
    }

    /// The index of the segment running at `offset` from the start of the load.
    pub(super) fn at(segments: &[Segment<'_>], offset: Duration) -> usize {
        segments
            .partition_point(|s| s.start <= offset)
            .saturating_sub(1)
    }

    /// The index of the segment whose case is `case` (the first, if none is).
    fn of(segments: &[Segment<'_>], case: &str) -> usize {
        segments
            .iter()
            .position(|s| s.plan.case.id == case)
            .unwrap_or(0)
    }
}

impl super::Runner<'_> {
    /// The staged load of `plans` (one per stage of `stages`) as one streamed load: a segment
    /// per stage, the open loop's arrivals drawn over the stages' rates, or the closed loop's
    /// level following their concurrency.
    pub(super) fn staged<'p>(&self, plans: &'p [CasePlan], stages: &[Stage]) -> Streamed<'p> {
        let mut start = Duration::ZERO;
        let segments: Vec<Segment<'p>> = plans
            .iter()
            .zip(stages)
            .map(|(plan, stage)| {
                let segment = Segment {
                    plan,
                    start,
                    end: Some(start + stage.duration),
                };
                start += stage.duration;
                segment
            })
            .collect();
        let (process, cap) = match plans.first().map(|p| &p.shape) {
            Some(Shape::Open {
                process,
                max_in_flight,
                ..
            }) => (Some(*process), *max_in_flight),
            _ => (None, None),
        };
        let launches = match process {
            Some(process) => {
                let seed = splitmix64(self.settings.seed ^ self.serial);
                Launches::Open(stages::offsets(stages, process, seed))
            }
            None => Launches::Closed(stages::concurrency_steps(stages)),
        };
        Streamed {
            segments,
            pacing: Pacing {
                lengths: None,
                cap,
                bound: Bound::Duration(start),
            },
            launches,
        }
    }

    /// Each segment's window figures, its window starting at its start (the first's after the
    /// warmup time) and ending at its end when that is known.
    pub(super) fn open_windows(
        &self,
        segments: &[Segment<'_>],
        start: Instant,
        warmup_end: Instant,
        runs: &mut [CaseRun],
    ) {
        for (segment, run) in segments.iter().zip(runs.iter_mut()) {
            let w0 = (start + segment.start).max(warmup_end);
            run.load = Some(self.window_figures(w0, segment.end.map(|e| start + e)));
        }
    }

    /// Records an ended request in the run of its segment.
    pub(super) fn settle_routed(
        &mut self,
        meta: RequestMeta,
        exchange: &Exchange,
        segments: &[Segment<'_>],
        runs: &mut [CaseRun],
    ) -> crate::error::Result<()> {
        let i = Segment::of(segments, &meta.case);
        self.settle(meta, exchange, &mut runs[i])
    }

    /// Joins the next request to end and records it in the run of its segment.
    pub(super) async fn settle_any(
        &mut self,
        in_flight: &mut super::InFlight,
        segments: &[Segment<'_>],
        runs: &mut [CaseRun],
    ) -> crate::error::Result<()> {
        if let Some(joined) = in_flight.join_next().await {
            self.settle_joined(joined, segments, runs)?;
        }
        Ok(())
    }

    /// Records a joined request in the run of its segment.
    pub(super) fn settle_joined(
        &mut self,
        joined: Result<(RequestMeta, Exchange), tokio::task::JoinError>,
        segments: &[Segment<'_>],
        runs: &mut [CaseRun],
    ) -> crate::error::Result<()> {
        let (meta, exchange) = joined.context("a request task failed")?;
        self.settle_routed(meta, &exchange, segments, runs)
    }

    /// After the load: how many segments it reached. When the run stopped, those that had not
    /// started yet are not run, and the one running is marked stopped.
    pub(super) fn close_segments(
        &self,
        segments: &[Segment<'_>],
        start: Instant,
        runs: &mut [CaseRun],
    ) -> usize {
        if !self.cancel.is_cancelled() {
            return segments.len();
        }
        let reached = Segment::at(segments, Instant::now().saturating_duration_since(start)) + 1;
        if let Some(run) = runs.get_mut(reached - 1) {
            run.stopped = true;
        }
        reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::length::Length;
    use crate::workload::shape::{Arrival, ShapeTemplate};

    #[test]
    fn a_request_belongs_to_the_stage_it_was_sent_in() {
        let template = ShapeTemplate {
            arrival: Arrival::Constant,
            rounds: 1,
            bound: None,
            burstiness: 1.0,
            max_in_flight: None,
            warmup_time: Duration::ZERO,
            trace: None,
            session: None,
            graph: None,
        };
        let stages = stages::parse("2s:rate=5,3s:ramp:rate=10,1s:rate=10").expect("stages");
        let plans = template.stage_plans(&stages, &Length::Fixed(8), &Length::Fixed(4));
        let ms = Duration::from_millis;
        let segments: Vec<Segment<'_>> = plans
            .iter()
            .zip([(0, 2000), (2000, 5000), (5000, 6000)])
            .map(|(plan, (a, b))| Segment {
                plan,
                start: ms(a),
                end: Some(ms(b)),
            })
            .collect();
        let at = |t| Segment::at(&segments, ms(t));
        assert_eq!(
            [at(0), at(1999), at(2000), at(4999), at(5000), at(9000)],
            [0, 0, 1, 1, 2, 2]
        );
        // An ended request finds its stage by the case it was sent for, wherever it ends.
        assert_eq!(Segment::of(&segments, &plans[1].case.id), 1);
        assert_eq!(Segment::of(&segments, &plans[2].case.id), 2);
        // Every arrival of the schedule falls in the segment it is assigned to.
        for (offset, stage) in
            stages::offsets(&stages, crate::workload::schedule::Process::Constant, 1)
        {
            assert_eq!(Segment::at(&segments, offset), stage, "{offset:?}");
        }
    }
}
