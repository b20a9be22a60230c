//! Records → per-case figures and the attempt's outcome (`summary.json`), as docs/measurement.md
//! defines them. Only `ok` responses enter distributions; a case is complete only when every
//! planned round completed with every response `ok`.

pub mod ab;
pub mod abandoned;
pub mod bursts;
pub mod capacity;
pub mod client_check;
mod counts;
mod dataset;
pub use counts::Counts;
pub mod energy;
pub mod itl;
mod label;
pub use label::label;
pub mod lengths;
pub mod models;
pub mod pace;
pub mod per_token;
pub mod phases;
pub mod pooling;
mod prefix_cache;
pub mod repeats;
mod rounds;
pub mod saturation;
pub mod server_side;
pub mod sessions;
pub mod shards;
pub mod short;
pub mod soak;
pub mod sweep;
mod tally;
pub mod window;

pub use dataset::DatasetUsed;
use prefix_cache::PrefixAcc;
pub use prefix_cache::PrefixCache;
use rounds::RoundAcc;
pub use rounds::RoundSummary;

use crate::record::{Record, Status};
use crate::stats::interval::Unit;
use crate::stats::{Distribution, Samples, Spread};
use crate::workload::shape::Case;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Figures of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseSummary {
    /// Case id.
    pub id: String,
    /// Prompt tokens per request (the median the server counted, where a dataset's entries went
    /// as they are).
    pub input_tokens: u32,
    /// Simultaneous requests per round.
    pub concurrency: u32,
    /// Generated tokens per request (the median asked for, where a dataset's answers set them).
    pub output_tokens: u32,
    /// Where a dataset set the lengths: the distributions of what was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<lengths::Sent>,
    /// Rounds planned.
    pub rounds_planned: u32,
    /// Every planned round is complete.
    pub complete: bool,
    /// Rebuilt from the records of a run that ended without closing the case (it was killed):
    /// why the records do not prove the case complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete_reason: Option<String>,
    /// Rounds that ran, complete or not.
    pub rounds: Vec<RoundSummary>,
    /// Time to first token, ms, over `ok` responses.
    pub ttft_ms: Option<Distribution>,
    /// Complete-response time, ms.
    pub e2e_ms: Option<Distribution>,
    /// Inter-token latency, ms (an event of k tokens gives k gaps of gap/k), over the responses
    /// whose tokens per event are known ([`itl`]).
    pub itl_ms: Option<Distribution>,
    /// Why responses are missing from `itl_ms` (their tokens per event are unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_unknown: Option<String>,
    /// Responses whose tokens arrived in bursts ([`bursts`]): kept out of ITL, TPOT and the
    /// decode rate (and of TTFT where their first burst held most of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bursts: Option<bursts::Bursts>,
    /// Best-effort responses that got a quarter or less of the output they asked for, and
    /// whether the case counted them short ([`short`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub far_short: Option<short::FarShort>,
    /// Raw gaps between token-carrying events, ms.
    pub chunk_gap_ms: Option<Distribution>,
    /// Time per output token after the first, ms.
    pub tpot_ms: Option<Distribution>,
    /// Per-sequence decode rate, tokens/s: (output − 1) / (complete − TTFT).
    pub decode_rate_tps: Option<Distribution>,
    /// Mean (min, max, sd) of the complete rounds' throughputs, tokens/s.
    pub throughput_tps: Option<Spread>,
    /// Request outcomes.
    pub counts: Counts,
    /// Continuous and open loops: figures over the measurement window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<window::LoadSummary>,
    /// Soak runs: the measurement window cut into windows, and the drift from first to last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<soak::Series>,
    /// With a shared system prompt: how much of it the server's counters say came from its
    /// prefix cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<PrefixCache>,
    /// Reasoning models: what the responses that reasoned before answering did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// The first failed or invalid measured response's kind and message (the server's words, at
    /// most 300 characters), so that a failing case says why where it is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Why the first unverified `ok` response was not verified (its record's notes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_unverified: Option<String>,
    /// With GPU power readings: the energy of the measurement window and the output tokens per
    /// joule, or why there is no figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<energy::Energy>,
    /// Where the time went: a new connection's setup apart, then each mark from `sent`; absent
    /// when the records do not carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<phases::PhaseSummary>,
    /// The server's own timings of the `ok` responses, where it reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<server_side::ServerSideSummary>,
    /// Multi-turn sessions: the figures of each turn index and of whole sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<sessions::SessionSummary>,
    /// `--cancel-after`: the streams the client abandoned, and the others' figures with an
    /// abandonment during them and without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abandoned: Option<abandoned::Abandonment>,
    /// Embeddings and rerank: a case of requests answered once, with nothing generated; TTFT,
    /// ITL, TPOT and the decode rate do not apply, and `throughput_tps` counts the prompt tokens
    /// the server processed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooling: Option<pooling::PoolingSummary>,
    /// Chat with images (`--images`): the images of each request, and the prompt tokens they
    /// cost together (as the server's counts showed at setup; absent where they did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<crate::record::Images>,
    /// A mix of models (`--model NAME:WEIGHT,…`): the case's figures per model, in name order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<models::ModelSummary>>,
}

/// Reasoning and answer told apart, over the `ok` responses that carried reasoning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// Responses that reasoned, of the `ok` ones.
    pub responses: u32,
    /// Reasoning tokens per response.
    pub tokens: Option<Distribution>,
    /// Time to the first answer token, from `sent`, ms (TTFT is to the first token of either).
    pub time_to_answer_ms: Option<Distribution>,
}

/// A case's figures, gathered one measured record at a time as requests end, so that nothing
/// per request outlives its record: the distributions are [`Samples`] (exact, then a histogram),
/// the rest are counts and sums. [`CaseSummary::new`] is the same over a slice of records. Kept
/// two ways from the case's first far-short response until the case says whether those are
/// short ([`short`]).
#[derive(Debug, Default)]
pub struct CaseFigures(short::Judged<Figures>);

impl CaseFigures {
    /// Adds one measured record.
    pub fn add(&mut self, r: &Record) {
        self.0.add(r, Figures::add);
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
}

impl Figures {
    /// Adds one measured record.
    fn add(&mut self, r: &Record) {
        self.tally.add(r);
        self.models.count(r);
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
            sent,
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
            first_error: self.tally.first_error,
            first_unverified: self.tally.first_unverified,
            energy: None,
            phases: self.phases.finish(),
            server: self.server.finish(),
            sessions: self.sessions.finish(streams),
            abandoned: self.abandoned.finish(),
            models,
            reasoning: (!self.reasoning_tokens.is_empty()).then(|| Reasoning {
                responses: crate::num::count(self.reasoning_tokens.len()),
                tokens: self.reasoning_tokens.distribution(),
                time_to_answer_ms: self.time_to_answer.distribution(),
            }),
            pooling: self.pooling.finish(),
            images: self.images,
        };
        pooling::settle(&mut summary);
        summary
    }
}

impl CaseSummary {
    /// Whether the case ran closed rounds: neither a windowed load nor sessions.
    pub fn is_rounds(&self) -> bool {
        self.load.is_none() && self.sessions.is_none()
    }

    /// Whether the case's requests generated tokens: not embeddings or rerank, whose cases have
    /// no token stream (no TTFT, ITL, TPOT or decode rate) and their own table.
    pub fn generates(&self) -> bool {
        self.pooling.is_none()
    }

    /// Summarises the measured `records` of `case`.
    pub fn new(case: &Case, rounds_planned: u32, records: &[Record]) -> CaseSummary {
        let mut figures = CaseFigures::default();
        for r in records {
            figures.add(r);
        }
        figures.finish(case, rounds_planned)
    }
}

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeStatus {
    /// Every case completed.
    Completed,
    /// Stopped before the end (interrupted, or a guard fired).
    Stopped,
    /// Ran to the end, but some case is incomplete, or the run could not go on.
    Failed,
    /// Written while the run is going (after each case). A summary that still says so after
    /// the run is over belongs to a run that ended without writing its last one (killed).
    Running,
}

/// The attempt's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Completed, stopped or failed.
    pub status: OutcomeStatus,
    /// Complete cases.
    pub cases_completed: u32,
    /// Cases planned.
    pub cases_total: u32,
    /// Complete measured rounds, over all cases.
    pub rounds_completed: u32,
    /// `ok` measured responses, over all cases.
    pub responses_completed: u32,
    /// Why the attempt stopped or failed, in words.
    pub reason: Option<String>,
    /// The reading or event that triggered the stop, where there is one.
    pub stop_sample: Option<serde_json::Value>,
}

/// Where a run is, for its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Cases are still to run: the summary on disk says so until the run is over.
    Going,
    /// The run is over: stopped by a rule or a signal, failed, or neither.
    Ended {
        /// What stopped it, in words.
        stop: Option<String>,
        /// What failed, in words.
        failure: Option<String>,
    },
}

impl RunState {
    /// A run over without a stop or a failure of its own.
    pub const DONE: RunState = RunState::Ended {
        stop: None,
        failure: None,
    };
}

impl Outcome {
    /// The outcome of `cases` out of `cases_total`, given where the run is.
    pub fn new(cases: &[CaseSummary], cases_total: u32, state: RunState) -> Outcome {
        let cases_completed = crate::num::count(cases.iter().filter(|c| c.complete).count());
        let (status, reason) = match state {
            RunState::Going => (
                OutcomeStatus::Running,
                Some(format!(
                    "running: {} of {cases_total} cases run so far",
                    cases.len()
                )),
            ),
            RunState::Ended {
                stop: Some(stop), ..
            } => (OutcomeStatus::Stopped, Some(stop)),
            RunState::Ended { failure, .. } => {
                let status = if failure.is_some() || cases_completed < cases_total {
                    OutcomeStatus::Failed
                } else {
                    OutcomeStatus::Completed
                };
                let incomplete = (cases_completed < cases_total).then(|| {
                    format!(
                        "{} of {cases_total} cases incomplete",
                        cases_total - cases_completed
                    )
                });
                (status, failure.or(incomplete))
            }
        };
        Outcome {
            status,
            cases_completed,
            cases_total,
            rounds_completed: crate::num::count(
                cases
                    .iter()
                    .flat_map(|c| &c.rounds)
                    .filter(|r| r.complete)
                    .count(),
            ),
            responses_completed: cases.iter().map(|c| c.counts.ok).sum(),
            reason,
            stop_sample: None,
        }
    }
}

/// `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Layout version of this file.
    pub schema_version: u32,
    /// The attempt this summarises.
    pub attempt_id: String,
    /// Target URL (or the simulator's).
    pub target_url: String,
    /// API driven.
    pub api: String,
    /// Model, as sent or as the server named it.
    pub model: Option<String>,
    /// Whether the target was the built-in simulator.
    pub simulated: bool,
    /// Per-case figures, in run order.
    pub cases: Vec<CaseSummary>,
    /// How the attempt ended.
    pub outcome: Outcome,
    /// GPU readings of the attempt, when telemetry was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::TelemetrySummary>,
    /// `llmload sweep`: the saturation analysis of the measured curve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<sweep::SweepSection>,
    /// Whether llmload itself kept up (its CPU, its timers, its send lag) during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_check: Option<client_check::ClientCheck>,
    /// How the tokens behind the figures were counted, and whether the run was best effort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counting: Option<Counting>,
    /// A shard's run (`--shard I/N`): which part of which attempt, how it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<shards::ShardRun>,
    /// A merged attempt: its shards, their start lags and clock offsets, what is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<shards::ShardsSection>,
    /// `--repeat N`: the series, each repeat's own figures and the variation between them; the
    /// cases above then combine the complete repeats alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<repeats::Series>,
    /// `llmload capacity`: the largest load that meets every objective and the first that
    /// does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<capacity::Capacity>,
    /// `llmload ab`: both arms side by side and the paired gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<ab::AbSection>,
}

/// How prompt and generated tokens were counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counting {
    /// How prompt lengths were set.
    pub prompts: String,
    /// How the tokens of each streamed chunk were counted.
    pub outputs: String,
    /// `--best-effort`: lengths that differ from the request make a response unverified, not
    /// invalid.
    pub best_effort: bool,
    /// Engine fields left out of every request, and why (`--drop-field`, or refused by the
    /// server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<String>,
    /// `--dataset`: the file the prompts came from, by name (never its path), length and digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetUsed>,
}
