//! What the live views show of a run, as the runner reports it: the case and its plan, the
//! requests ended so far, the recent TTFTs and the output tokens. The progress line, the live
//! terminal view and `/metrics` all read one [`Snapshot`], kept in a `watch` channel.

use crate::record::{Record, Status};
use crate::workload::schedule::Bound;
use crate::workload::shape::{CasePlan, Shape};
use std::collections::VecDeque;
use std::time::Duration;

/// The running median is over this many most recent TTFTs of the case.
pub const TTFT_WINDOW: usize = 1000;

/// What the live views show, as the runner reported it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// `--repeat`: the repeat running (1-based) and the repeats planned.
    pub repeat: Option<(u32, u32)>,
    /// Case number (1-based) and cases planned.
    pub case: (usize, usize),
    /// Case id.
    pub case_id: String,
    /// Closed rounds: the current round and the rounds planned.
    pub round: Option<(u32, u32)>,
    /// Measured requests ended in this case.
    pub done: u64,
    /// Measured requests planned in this case, when known.
    pub total: Option<u64>,
    /// Of those ended, how many did not end `ok` (abandoned and cancelled ones aside).
    pub failed: u64,
    /// Of those ended, how many a stop of the run cancelled in flight.
    pub cancelled: u64,
    /// Of those ended, how many the client abandoned as planned (`--cancel-after`).
    pub abandoned: u64,
    /// The best-effort responses far short of the output asked for, and whether the case so
    /// far counts them short ([`crate::summary::short`]).
    pub shortfall: crate::summary::short::Shortfall,
    /// TTFTs of the case's last `ok` responses, ms (embeddings and rerank: their latencies).
    pub ttft_ms: VecDeque<f64>,
    /// The case's requests are embeddings or rerank: no TTFT, and the latency stands in its
    /// place.
    pub pooling: bool,
    /// Output tokens of the case's `ok` responses.
    pub tokens: u64,
    /// First send and last completion of the case's measured requests, seconds since the
    /// attempt started.
    pub span_s: Option<(f64, f64)>,
    /// When the case (or staged load) started, on tokio's clock (paused in tests).
    pub started: Option<tokio::time::Instant>,
    /// How long the load lasts, when a duration bounds it.
    pub duration: Option<Duration>,
    /// A staged load: each stage's case id and duration, in order (empty otherwise).
    pub stages: Vec<(String, Duration)>,
    /// The requests launched, in flight and waiting, as a view read them from the transport's
    /// counters before drawing (the runner never sets them).
    pub flight: Option<crate::board::flight::Counts>,
}

impl Snapshot {
    /// A staged load: the stage running `elapsed` into the load (from 1), the stages, and its
    /// case id; `None` for any other load. Past the last stage's end (the drain) the last.
    pub fn stage_at(&self, elapsed: Duration) -> Option<(usize, usize, &str)> {
        let mut end = Duration::ZERO;
        let n = self.stages.len();
        for (i, (id, duration)) in self.stages.iter().enumerate() {
            end += *duration;
            if elapsed < end || i + 1 == n {
                return Some((i + 1, n, id));
            }
        }
        None
    }

    /// Median of the recent TTFTs, ms.
    pub fn ttft_median_ms(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.ttft_ms.iter().copied().collect();
        crate::stats::Distribution::from_samples(&mut v).map(|d| d.median)
    }

    /// Output tokens per second of the case so far.
    pub fn tokens_per_s(&self) -> Option<f64> {
        let (first, last) = self.span_s?;
        (last > first).then(|| self.tokens as f64 / (last - first))
    }

    /// The time left, `elapsed` into the case: what a duration bound leaves, else the requests
    /// left at the pace of those done so far; `None` when neither is known. A duration-bound
    /// load waits for its requests in flight and its arrivals waiting after its end (the drain):
    /// those, at the pace of the requests done so far, when that is longer.
    pub fn eta(&self, elapsed: Duration) -> Option<Duration> {
        if let Some(duration) = self.duration {
            let left = duration.saturating_sub(elapsed);
            let outstanding = self.flight.map_or(0, |f| f.in_flight + f.waiting);
            if outstanding == 0 {
                return Some(left);
            }
            if self.done == 0 {
                // Nothing ended yet to pace the drain by: unknown once the load's time is over.
                return (!left.is_zero()).then_some(left);
            }
            let drain = elapsed.mul_f64(outstanding as f64 / self.done as f64);
            return Some(left.max(drain));
        }
        let total = self.total?;
        if self.done == 0 {
            return None;
        }
        let left = total.saturating_sub(self.done);
        Some(elapsed.mul_f64(left as f64 / self.done as f64))
    }

    /// The load's requests sent, in flight and waiting, in words ("130 sent · 124 in flight ·
    /// 6 waiting"; waiting only when some are), when a view read them.
    pub fn flight_words(&self) -> Option<String> {
        let f = self.flight?;
        let waiting = if f.waiting > 0 {
            format!(" · {} waiting", f.waiting)
        } else {
            String::new()
        };
        Some(format!(
            "{} sent · {} in flight{waiting}",
            f.launched, f.in_flight
        ))
    }

    /// Whether the load's time is over and requests are still in flight or waiting.
    pub fn draining(&self, elapsed: Duration) -> bool {
        let outstanding = self.flight.map_or(0, |f| f.in_flight + f.waiting);
        self.duration.is_some_and(|d| elapsed >= d) && outstanding > 0
    }

    /// The requests ended `ok` (done, less those failed, cancelled, abandoned or counted short).
    pub fn ok(&self) -> u64 {
        let short = if self.shortfall.short() {
            self.shortfall
                .finish()
                .map_or(0, |f| u64::from(f.responses))
        } else {
            0
        };
        self.done
            .saturating_sub(self.failed + self.cancelled + self.abandoned)
            .saturating_sub(short)
    }

    /// A measured request ended.
    pub fn record(&mut self, r: &Record) {
        self.done += 1;
        if r.status == Status::Abandoned {
            self.abandoned += 1;
            return;
        }
        if self.shortfall.add(r) && self.shortfall.short() {
            return;
        }
        if r.status == Status::Cancelled {
            self.cancelled += 1;
            return;
        }
        if r.status != Status::Ok {
            self.failed += 1;
            return;
        }
        self.pooling |= r.pooling.is_some();
        let latency = if r.pooling.is_some() {
            r.e2e_ms
        } else {
            r.ttft_ms
        };
        if let Some(ttft) = latency {
            if self.ttft_ms.len() == TTFT_WINDOW {
                self.ttft_ms.pop_front();
            }
            self.ttft_ms.push_back(ttft);
        }
        self.tokens += u64::from(r.work_tokens());
        let done = r.done_s.unwrap_or(r.sent_s);
        self.span_s = Some(match self.span_s {
            Some((first, last)) => (first.min(r.sent_s), last.max(done)),
            None => (r.sent_s, done),
        });
    }
}

/// What a case plans: its rounds, and its measured requests when they are known in advance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Planned {
    /// Closed rounds: rounds planned.
    pub rounds: Option<u32>,
    /// Measured requests planned (unknown for a duration, or with a warmup time).
    pub requests: Option<u64>,
    /// How long the load lasts, when a duration bounds it.
    pub duration: Option<Duration>,
}

impl Planned {
    /// What `plan` plans.
    pub fn of(plan: &CasePlan) -> Planned {
        let by_count = |bound: &Bound| match bound {
            Bound::Requests(n) if plan.warmup_time.is_zero() => Some(*n),
            _ => None,
        };
        let by_time = |bound: &Bound| match bound {
            Bound::Duration(d) => Some(*d),
            Bound::Requests(_) => None,
        };
        match &plan.shape {
            Shape::Rounds { rounds } => Planned {
                rounds: Some(*rounds),
                requests: Some(u64::from(*rounds) * u64::from(plan.case.concurrency)),
                duration: None,
            },
            Shape::ClosedContinuous { bound } | Shape::Open { bound, .. } => Planned {
                rounds: None,
                requests: by_count(bound),
                duration: by_time(bound),
            },
            Shape::Sessions { bound, spec, .. } => Planned {
                rounds: None,
                requests: by_count(bound).map(|n| n.saturating_mul(u64::from(spec.turns))),
                duration: by_time(bound),
            },
            Shape::Replay { arrivals, .. } => Planned {
                rounds: None,
                requests: plan.warmup_time.is_zero().then_some(*arrivals as u64),
                duration: None,
            },
        }
    }

    /// What a load of `plans` plans (a staged load: every stage together): the first one's
    /// rounds, the sum of the requests and of the durations where every plan knows its own.
    pub fn of_load(plans: &[CasePlan]) -> Planned {
        let each: Vec<Planned> = plans.iter().map(Planned::of).collect();
        Planned {
            rounds: each.first().and_then(|p| p.rounds),
            requests: each.iter().map(|p| p.requests).sum(),
            duration: each.iter().map(|p| p.duration).sum(),
        }
    }
}
