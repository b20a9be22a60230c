//! A case's figures gathered as its requests end ([`CaseFigures`]), and the case's summary made
//! from them.

use super::case::{CaseSummary, Reasoning};
use super::label::label;
use super::prefix_cache::PrefixAcc;
use super::rounds::{RoundAcc, RoundSummary};
use super::{
    abandoned, bursts, lengths, models, per_token, phases, pooling, server_side, sessions, short,
    tally,
};
use crate::record::{Record, Status};
use crate::stats::interval::Unit;
use crate::stats::{Samples, Spread};
use crate::workload::shape::Case;
use std::collections::BTreeMap;

/// A case's figures, gathered one measured record at a time as requests end, so that nothing
/// per request outlives its record: the distributions are [`Samples`] (exact, then a histogram),
/// the rest are counts and sums. [`CaseSummary::new`] is the same over a slice of records. Kept
/// two ways from the case's first far-short response until the case says whether those are
/// short ([`short`]).
#[derive(Debug, Default)]
pub struct CaseFigures(short::Judged<Figures>, super::canaries::CanaryFigures);

impl CaseFigures {
    /// Adds one measured record.
    pub fn add(&mut self, r: &Record) {
        self.0.add(r, Figures::add);
    }

    /// Adds a canary record (`--canaries`), which no figure of the load holds.
    pub fn add_canary(&mut self, r: &Record) {
        self.1.add(r);
    }

    /// Adds a warmup record, which no figure holds: only what a server's counters hold beside
    /// the measured records (the generated tokens, for `--cancel-after`).
    pub fn add_warmup(&mut self, r: &Record) {
        self.0.each(|f| f.add_warmup(r));
    }

    /// The spans of the rounds that had an `ok` response, first send to last `ok` completion
    /// (each round's `duration_s`), in round order.
    pub fn round_spans(&self) -> Vec<(f64, f64)> {
        self.0
            .get()
            .rounds
            .values()
            .filter_map(RoundAcc::span)
            .collect()
    }

    /// Measured records added so far.
    pub fn requests(&self) -> u32 {
        self.0.get().tally.counts.measured()
    }

    /// Whether there was at least one `ok` response and every measured record ended `ok` (or
    /// was abandoned as planned).
    pub fn all_ok(&self) -> bool {
        self.0.get().tally.counts.all_ok()
    }

    /// Whether the case's path streams (it does not buffer: [`bursts::MIN_PATH_SHARE`]).
    pub fn streams(&self) -> bool {
        self.0.get().bursts.streams()
    }

    /// The case's summary, `rounds_planned` deciding whether it is complete.
    pub fn finish(self, case: &Case, rounds_planned: u32) -> CaseSummary {
        let (figures, far_short) = self.0.finish();
        let mut summary = figures.finish(case, rounds_planned);
        summary.far_short = far_short;
        summary.canaries = self.1.finish();
        summary
    }
}

/// [`CaseFigures`] one way: the far-short responses as `ok`, or as `short`.
#[derive(Clone, Debug, Default)]
struct Figures {
    ttft: Samples,
    e2e: Samples,
    /// The streamed responses' per-token figures.
    per_token: per_token::PerToken,
    bursts: bursts::BurstFigures,
    held: bursts::Held,
    lengths: lengths::SentLengths,
    tally: tally::Tally,
    /// By repeat (0 without one) and round: the rounds of a series' repeats stay apart.
    rounds: BTreeMap<(u32, u32), RoundAcc>,
    prefix: PrefixAcc,
    reasoning_tokens: Samples,
    time_to_answer: Samples,
    phases: phases::PhaseFigures,
    server: server_side::ServerSideFigures,
    sessions: sessions::SessionFigures,
    abandoned: abandoned::AbandonFigures,
    pooling: pooling::PoolingFigures,
    images: Option<crate::record::Images>,
    /// A mix of models: the figures of each.
    models: models::ModelFigures,
    /// Several `--url`: the figures of each replica.
    replicas: models::ReplicaFigures,
}

impl Figures {
    /// Adds one measured record.
    fn add(&mut self, r: &Record) {
        self.tally.add(r);
        self.models.count(r);
        self.replicas.count(r);
        self.sessions.add(r);
        self.abandoned.add(r);
        self.pooling.add(r);
        if self.images.is_none() {
            self.images = r.images;
        }
        let ok = r.status == Status::Ok;
        if let Some(round) = r.round {
            self.rounds
                .entry((r.repeat.unwrap_or(0), round))
                .or_default()
                .add(r);
        }
        if !ok {
            return;
        }
        let label = label(r, self.tally.counts.ok);
        // A response delivered in bursts has no per-token timing where the case's path buffers,
        // and a TTFT only while its first burst still bounds it: its figures wait apart until
        // the case says whether its path buffers.
        let buffered = self.bursts.add(r);
        let keeps_ttft = buffered.as_ref().is_none_or(bursts::Delivery::keeps_ttft);
        let held = &mut self.held;
        let ttft = if keeps_ttft {
            &mut self.ttft
        } else {
            &mut held.ttft
        };
        r.ttft_ms.into_iter().for_each(|v| ttft.push_in(v, label));
        r.e2e_ms
            .into_iter()
            .for_each(|v| self.e2e.push_in(v, label));
        self.models.add_ok(r, buffered.as_ref());
        self.replicas.add_ok(r, buffered.as_ref());
        self.lengths.add(r);
        if buffered.is_some() {
            held.per_token.add(r, label);
        } else {
            self.per_token.add(r, label);
        }
        if r.reasoning_tokens > 0 {
            self.reasoning_tokens.push(f64::from(r.reasoning_tokens));
            r.answer_ms
                .into_iter()
                .for_each(|v| self.time_to_answer.push(v));
        }
        self.prefix.add(r);
        self.phases.add(r, label);
        self.server.add(r, label);
    }

    /// Adds a warmup record (see [`CaseFigures::add_warmup`]).
    fn add_warmup(&mut self, r: &Record) {
        self.abandoned.add_warmup(r);
    }

    /// The case's summary, `rounds_planned` deciding whether it is complete.
    fn finish(mut self, case: &Case, rounds_planned: u32) -> CaseSummary {
        let streams = self.bursts.streams();
        let bursts = std::mem::take(&mut self.bursts).finish();
        if streams {
            let held = std::mem::take(&mut self.held);
            self.ttft.merge(held.ttft);
            self.per_token.merge(held.per_token);
        }
        // A case of sessions is complete when every session and every response is.
        let sessions_done = self.sessions.is_empty()
            || (self.sessions.all_complete() && self.tally.counts.all_ok());
        let rounds: Vec<RoundSummary> = self
            .rounds
            .into_iter()
            .map(|(key, acc)| acc.summary(case, key))
            .collect();
        let complete_rounds: Vec<f64> = rounds
            .iter()
            // A round whose every stream was abandoned as planned has no throughput.
            .filter(|r| r.complete && r.responses_ok > 0)
            .map(|r| r.throughput_tps)
            .collect();
        let complete = crate::num::count(rounds.len()) == rounds_planned
            && rounds.iter().all(|r| r.complete)
            && sessions_done;
        let spans: f64 = rounds
            .iter()
            .filter(|r| r.responses_ok > 0)
            .map(|r| r.duration_s)
            .sum();
        let models = self.models.finish(streams, (spans > 0.0).then_some(spans));
        let replicas =
            super::replicas::finish(self.replicas, streams, (spans > 0.0).then_some(spans));
        let per_token = self.per_token;
        // Before ITL's own figures, which take its gaps.
        let chunk_gap_ms = per_token.chunk_gaps().distribution();
        let (itl_ms, itl_unknown) = per_token.itl.finish();
        let (input_tokens, output_tokens, sent) = self.lengths.finish(case);
        let mut summary = CaseSummary {
            id: case.id.clone(),
            input_tokens,
            concurrency: case.concurrency,
            output_tokens,
            sent: sent.map(Box::new),
            rounds_planned,
            complete,
            incomplete_reason: None,
            ttft_ms: self.ttft.distribution(),
            e2e_ms: self.e2e.distribution(),
            itl_ms,
            itl_unknown,
            bursts,
            far_short: None,
            chunk_gap_ms,
            tpot_ms: per_token.tpot.distribution(),
            decode_rate_tps: per_token.decode_rate.distribution(),
            throughput_tps: Spread::over(&complete_rounds, Unit::Round),
            counts: self.tally.counts,
            rounds,
            load: None,
            series: None,
            prefix_cache: self.prefix.finish(),
            prefix_cache_reset: None,
            server_profile: None,
            first_error: self.tally.first_error,
            first_unverified: self.tally.first_unverified,
            energy: None,
            cost: None,
            canaries: None,
            phases: self.phases.finish().map(Box::new),
            server: self.server.finish().map(Box::new),
            sessions: self.sessions.finish(streams).map(Box::new),
            abandoned: self.abandoned.finish().map(Box::new),
            models,
            replicas,
            reasoning: (!self.reasoning_tokens.is_empty()).then(|| {
                Box::new(Reasoning {
                    responses: crate::num::count(self.reasoning_tokens.len()),
                    tokens: self.reasoning_tokens.distribution(),
                    time_to_answer_ms: self.time_to_answer.distribution(),
                })
            }),
            pooling: self.pooling.finish(),
            images: self.images,
        };
        summary.settle_pooling();
        summary
    }
}

impl CaseSummary {
    /// Summarises the measured `records` of `case`.
    pub fn new(case: &Case, rounds_planned: u32, records: &[Record]) -> CaseSummary {
        let mut figures = CaseFigures::default();
        for r in records {
            figures.add(r);
        }
        figures.finish(case, rounds_planned)
    }
}
