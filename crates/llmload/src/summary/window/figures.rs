//! The window figures of one way of a case ([`super::WindowFigures`] keeps two until the case
//! says whether its far-short responses are short).

use super::blocks;
use super::by_model::{ModelWindow, ModelWindows};
use super::in_flight::Sweep;
use super::meets::{judged, Meets};
use super::SeriesPart;
use crate::record::{Phase, Record, Seconds, Status};
use crate::stats::Samples;
use crate::summary::load::{LoadShape, LoadSummary, OwnResponses};
use crate::summary::soak::SeriesBins;
use crate::workload::shape::Slo;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

/// The window figures of a continuous or open-loop case, gathered one record at a time as
/// requests end, in memory that does not grow with the run. Latencies go into [`Samples`]. What
/// waits is only what cannot be settled yet: while the window's end is unknown, token events
/// after the latest instant surely inside it (a request's tail, until the next launch moves that
/// instant on); and, for the concurrency figures, the span edges of ended requests that are later
/// than the launch of the oldest request still in flight (whose own edges would come first).
#[derive(Clone, Debug)]
pub(super) struct Figures {
    w0: Seconds,
    /// The window ends at or after this instant, so every event up to it is settled.
    settled_to: Seconds,
    /// The window's end, when known from the start: nothing after it is ever settled (a stage's
    /// figures are told of the later stages' launches too).
    end: Option<Seconds>,
    slo: Slo,
    launched: u32,
    tokens: f64,
    completed: u32,
    met: Meets<u32>,
    /// Which of `met` counts: whether the path buffers is the case's to say.
    bursts: crate::summary::bursts::BurstFigures,
    /// Launch instants of the requests in flight (a multiset, by `f64::to_bits`).
    in_flight: BTreeMap<u64, u32>,
    /// The latest launch told: later requests are sent after it. None told (replayed records,
    /// which come in end order with no launches): span edges are swept at the end.
    latest_launch: Seconds,
    /// Span edges not yet swept: (time bits, 0 for an end, 1 for a start), earliest first.
    edges: BinaryHeap<Reverse<(u64, u8)>>,
    sweep: Sweep,
    last_seen: Seconds,
    pending: BinaryHeap<Reverse<Tail>>,
    send_lag: Samples,
    ttft_from_scheduled: Samples,
    e2e_from_scheduled: Samples,
    series: Option<SeriesBins>,
    blocks: blocks::Blocks,
    /// A mix of models: each model's part of the window, by first appearance.
    models: Vec<(String, ModelWindow)>,
    /// A mix of models: the objectives of the models that have their own.
    pub(super) model_slo: Arc<BTreeMap<String, Slo>>,
    /// The measured `ok` responses: their tokens, first send and last completion.
    own: Option<OwnResponses>,
}

/// What of an `ok` request is not yet settled: its later token events and, when measured, its
/// completion (and whether it met the SLO).
#[derive(Clone, Debug)]
struct Tail {
    /// The earliest unsettled instant (`f64::to_bits` of a non-negative time orders as the time).
    key: u64,
    events: Vec<(Seconds, u32)>,
    done: Option<(Seconds, Meets<bool>)>,
    /// Its model's index in [`Figures::models`], in a mix.
    model: Option<usize>,
}

impl Tail {
    fn rekey(mut self) -> Tail {
        let first = self.events.first().map(|e| e.0);
        let t = match (first, self.done) {
            (Some(e), Some((d, _))) => e.min(d),
            (Some(e), None) => e,
            (None, Some((d, _))) => d,
            (None, None) => 0.0,
        };
        self.key = t.max(0.0).to_bits();
        self
    }

    fn is_empty(&self) -> bool {
        self.events.is_empty() && self.done.is_none()
    }
}

impl PartialEq for Tail {
    fn eq(&self, other: &Tail) -> bool {
        self.key == other.key
    }
}
impl Eq for Tail {}
impl PartialOrd for Tail {
    fn partial_cmp(&self, other: &Tail) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Tail {
    fn cmp(&self, other: &Tail) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl Figures {
    /// A window starting at `w0`; `end` when it is already known (a duration-bound load), else
    /// the runner tells of later and later launches with [`Figures::settle_to`].
    /// `series_s`: cut the window into windows of this length (a soak series).
    pub(super) fn new(
        w0: Seconds,
        end: Option<Seconds>,
        slo: Slo,
        series_s: Option<Seconds>,
    ) -> Self {
        Figures {
            w0,
            settled_to: end.unwrap_or(w0).max(w0),
            end: end.map(|e| e.max(w0)),
            slo,
            launched: 0,
            tokens: 0.0,
            completed: 0,
            met: Meets::default(),
            bursts: crate::summary::bursts::BurstFigures::default(),
            in_flight: BTreeMap::new(),
            latest_launch: f64::NEG_INFINITY,
            edges: BinaryHeap::new(),
            sweep: Sweep::new(w0),
            last_seen: w0,
            pending: BinaryHeap::new(),
            send_lag: Samples::new(),
            ttft_from_scheduled: Samples::new(),
            e2e_from_scheduled: Samples::new(),
            series: series_s.map(|s| SeriesBins::new(w0, s)),
            blocks: blocks::Blocks::default(),
            models: Vec::new(),
            model_slo: Arc::default(),
            own: None,
        }
    }

    /// A request was launched at `at`: none of its span's edges is earlier.
    pub(super) fn launch(&mut self, at: Seconds) {
        self.latest_launch = self.latest_launch.max(at);
        *self.in_flight.entry(at.max(0.0).to_bits()).or_default() += 1;
    }

    /// Adds an ended request launched during the load (warmup time included); `launched`: when,
    /// as told to [`Figures::launch`] (none when replaying records after the run).
    pub(super) fn add(&mut self, r: &Record, launched: Option<Seconds>) {
        self.launched += 1;
        self.last_seen = self.last_seen.max(r.last_seen());
        self.fold(r);
        // Only now that it is folded in is the request no longer in flight.
        if let Some(at) = launched {
            let key = at.max(0.0).to_bits();
            if let Some(n) = self.in_flight.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.in_flight.remove(&key);
                }
            }
        }
        self.edges.push(Reverse((r.sent_s.max(0.0).to_bits(), 1)));
        self.edges
            .push(Reverse((r.last_seen().max(0.0).to_bits(), 0)));
        self.sweep_edges();
    }

    /// Folds a record's latencies, series request, tokens and completion in (those that can be
    /// settled now; the rest wait as its tail).
    fn fold(&mut self, r: &Record) {
        let measured = r.phase == Phase::Measured;
        if measured {
            if let Some(s) = r.scheduled_s {
                self.send_lag.push((r.sent_s - s) * 1e3);
            }
            if let Some(series) = &mut self.series {
                series.add_request(r);
            }
        }
        if r.status != Status::Ok {
            return;
        }
        if measured {
            self.own_response(r);
        }
        if let (true, Some(s)) = (measured, r.scheduled_s) {
            let label = crate::summary::label(r, self.launched);
            if let Some(t) = r.first_token_s {
                self.ttft_from_scheduled.push_in((t - s) * 1e3, label);
            }
            if let Some(t) = r.done_s {
                self.e2e_from_scheduled.push_in((t - s) * 1e3, label);
            }
        }
        let model = r.model.as_deref().map(|m| self.model_index(m));
        let mut tail = Tail {
            key: 0,
            events: Vec::new(),
            done: None,
            model,
        };
        for (t, n) in r.event_times() {
            if t <= self.settled_to {
                self.fold_tokens(t, n, model);
            } else {
                tail.events.push((t, n));
            }
        }
        let delivery = measured.then(|| self.bursts.add(r)).flatten();
        if let (true, Some(d)) = (measured, r.done_s) {
            let slo = r.model.as_deref().and_then(|m| self.model_slo.get(m));
            let meets = judged(r, slo.unwrap_or(&self.slo), delivery.as_ref());
            if d <= self.settled_to {
                self.fold_done(d, meets, model);
            } else {
                tail.done = Some((d, meets));
            }
        }
        if !tail.is_empty() {
            self.pending.push(Reverse(tail.rekey()));
        }
    }

    /// A measured `ok` response: its tokens and its span join the load's own.
    fn own_response(&mut self, r: &Record) {
        let (sent, done) = (r.sent_s, r.last_seen());
        let tokens = f64::from(r.work_tokens());
        self.own = Some(match self.own {
            Some(o) => OwnResponses {
                responses: o.responses + 1,
                tokens: o.tokens + tokens,
                span_s: [o.span_s[0].min(sent), o.span_s[1].max(done)],
            },
            None => OwnResponses {
                responses: 1,
                tokens,
                span_s: [sent, done],
            },
        });
    }

    /// Sweeps the span edges that no request in flight can precede, up to `settled_to`.
    fn sweep_edges(&mut self) {
        // Replayed records come without launches: their edges wait for the end.
        if self.latest_launch == f64::NEG_INFINITY {
            return;
        }
        let oldest = self
            .in_flight
            .keys()
            .next()
            .map_or(f64::INFINITY, |&k| f64::from_bits(k));
        while let Some(&Reverse((key, kind))) = self.edges.peek() {
            let t = f64::from_bits(key);
            if t >= oldest || t > self.settled_to {
                break;
            }
            self.edges.pop();
            self.sweep.edge(t, kind == 1, self.settled_to);
        }
        // Requests in flight and later ones are sent at or after this; tokens before it that
        // still wait are past `settled_to`.
        let reached = oldest.min(self.latest_launch).min(self.settled_to);
        if let Some(series) = &mut self.series {
            series.close_before(reached);
        }
    }

    /// The window is now known to end at or after `t`: settles every event up to it.
    pub(super) fn settle_to(&mut self, t: Seconds) {
        let t = self.end.map_or(t, |end| t.min(end));
        self.settled_to = self.settled_to.max(t);
        self.sweep_edges();
        while self
            .pending
            .peek()
            .is_some_and(|Reverse(tail)| f64::from_bits(tail.key) <= self.settled_to)
        {
            let Some(Reverse(mut tail)) = self.pending.pop() else {
                break;
            };
            let cut = tail.events.partition_point(|e| e.0 <= self.settled_to);
            for (t, n) in tail.events.drain(..cut) {
                self.fold_tokens(t, n, tail.model);
            }
            if let Some((d, meets)) = tail.done.filter(|d| d.0 <= self.settled_to) {
                self.fold_done(d, meets, tail.model);
                tail.done = None;
            }
            if !tail.is_empty() {
                self.pending.push(Reverse(tail.rekey()));
            }
        }
    }

    /// Token events, completions and span edges held until they can be settled.
    pub(super) fn unsettled(&self) -> usize {
        let tails: usize = self
            .pending
            .iter()
            .map(|Reverse(t)| t.events.len() + usize::from(t.done.is_some()))
            .sum();
        tails + self.edges.len()
    }

    /// Whether any objective is set, the run's or a model's.
    fn objectives_set(&self) -> bool {
        self.slo.is_set() || self.model_slo.values().any(Slo::is_set)
    }

    /// The index of `model` in [`Figures::models`], added at its first record.
    fn model_index(&mut self, model: &str) -> usize {
        if let Some(i) = self.models.iter().position(|(m, _)| m == model) {
            return i;
        }
        self.models.push((model.to_owned(), ModelWindow::default()));
        self.models.len() - 1
    }

    fn fold_tokens(&mut self, t: Seconds, n: u32, model: Option<usize>) {
        if t >= self.w0 {
            self.tokens += f64::from(n);
            if let Some((_, m)) = model.and_then(|i| self.models.get_mut(i)) {
                m.tokens += f64::from(n);
            }
            self.blocks.tokens(t, n);
            if let Some(series) = &mut self.series {
                series.add_tokens(t, n);
            }
        }
    }

    fn fold_done(&mut self, d: Seconds, meets: Meets<bool>, model: Option<usize>) {
        if d >= self.w0 {
            self.completed += 1;
            self.met.streams += u32::from(meets.streams);
            self.met.buffers += u32::from(meets.buffers);
            if let Some((_, m)) = model.and_then(|i| self.models.get_mut(i)) {
                m.completed += 1;
                m.met.streams += u32::from(meets.streams);
                m.met.buffers += u32::from(meets.buffers);
            }
            self.blocks.done(d, meets);
        }
    }

    /// The figures of the window ending at `w1`, and the soak bins with the span they cover (a
    /// stopped load's series ends where activity ended).
    pub(super) fn finish(
        mut self,
        w1: Seconds,
        stopped: bool,
    ) -> (LoadSummary, Option<SeriesPart>, ModelWindows) {
        // A load stopped before its end is measured over the time it ran: up to its last
        // activity, not to the end it was planned to have.
        let w1 = if stopped {
            w1.min(self.last_seen.max(self.w0))
        } else {
            w1
        };
        self.settle_to(w1);
        while let Some(Reverse((key, kind))) = self.edges.pop() {
            self.sweep.edge(f64::from_bits(key), kind == 1, w1);
        }
        let (w0, slo_set) = (self.w0, self.objectives_set());
        let length_s = (w1 - w0).max(1e-9);
        let (mean, peak) = self.sweep.finish(w1);
        let streams = self.bursts.streams();
        let met = self.met.pick(streams);
        let rates = self.blocks.intervals(w0, w1, streams);
        let load = LoadSummary {
            shape: LoadShape::default(),
            nominal_concurrency: None,
            nominal_rate_rps: None,
            window_s: [w0, w1],
            requests_launched: self.launched,
            completed_rps: f64::from(self.completed) / length_s,
            throughput_tps: self.tokens / length_s,
            goodput_rps: slo_set.then(|| f64::from(met) / length_s),
            slo_met_share: (slo_set && self.completed > 0)
                .then(|| f64::from(met) / f64::from(self.completed)),
            achieved_concurrency_mean: mean,
            achieved_concurrency_peak: peak,
            send_lag_ms: self.send_lag.distribution(),
            pacer_priority: None,
            ttft_from_scheduled_ms: self.ttft_from_scheduled.distribution(),
            e2e_from_scheduled_ms: self.e2e_from_scheduled.distribution(),
            stage: None,
            throughput_ci: Some(rates.throughput),
            completed_ci: Some(rates.completed),
            goodput_ci: slo_set.then_some(rates.goodput),
            own_responses: self.own,
            window_throughput_tps: None,
        };
        let models = std::mem::take(&mut self.models).into_iter().collect();
        (load, self.series.map(|bins| (bins, (w0, w1))), models)
    }
}
