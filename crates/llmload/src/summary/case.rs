//! A case's figures as `summary.json` holds them ([`CaseSummary`]), and what is read or set on
//! them after the fact: its kind, a pooling case's inputs per second, a model's part of a mix as
//! a case of its own. They are gathered in `case_figures.rs`.

use super::counts::Counts;
use super::models::ModelSummary;
use super::prefix_cache::PrefixCache;
use super::rounds::RoundSummary;
use super::{
    abandoned, bursts, case_energy, lengths, load, models, phases, pooling, server_side, sessions,
    short, soak,
};
use crate::stats::{Distribution, Spread};
use serde::{Deserialize, Serialize};

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
    pub sent: Option<Box<lengths::Sent>>,
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
    pub load: Option<Box<load::LoadSummary>>,
    /// Soak runs: the measurement window cut into windows, and the drift from first to last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<soak::Series>,
    /// With a shared system prompt: how much of it the server's counters say came from its
    /// prefix cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<PrefixCache>,
    /// `--reset-prefix-cache`: what asking the server to drop its prefix cache before the case
    /// did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_reset: Option<crate::record::PrefixReset>,
    /// `--profile-server`: the server's profiler around a round of the case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_profile: Option<crate::record::ServerProfile>,
    /// Reasoning models: what the responses that reasoned before answering did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Box<Reasoning>>,
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
    pub energy: Option<case_energy::Energy>,
    /// With `--gpu-cost-per-hour`: the GPUs' price over the measurement window, per million
    /// tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<super::case_cost::Cost>,
    /// `--canaries`: the case's canaries, sent under its load, against their references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canaries: Option<super::canaries::CanarySummary>,
    /// Where the time went: a new connection's setup apart, then each mark from `sent`; absent
    /// when the records do not carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<Box<phases::PhaseSummary>>,
    /// The server's own timings of the `ok` responses, where it reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Box<server_side::ServerSideSummary>>,
    /// Multi-turn sessions: the figures of each turn index and of whole sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Box<sessions::SessionSummary>>,
    /// `--cancel-after`: the streams the client abandoned, and the others' figures with an
    /// abandonment during them and without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abandoned: Option<Box<abandoned::Abandonment>>,
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
    /// Several `--url`: the figures of each replica the case's requests went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<Vec<super::replicas::ReplicaSummary>>,
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

    /// Sets a pooling case's inputs per second from its throughput: called wherever the
    /// throughput is set (the case's rounds, a loop's window, a series of repeats).
    pub fn settle_pooling(&mut self) {
        let throughput = self.throughput_tps.clone();
        let Some(pooling) = &mut self.pooling else {
            return;
        };
        pooling.inputs_per_s = throughput
            .zip(pooling.tokens_per_input())
            .map(|(t, per)| t.scaled(1.0 / per));
    }

    /// The figures of `model`, one model of this case's mix, as a case of their own, for the
    /// gate's checks: this case with the model's counts, distributions and throughput (which has
    /// no interval) and nothing of the case's alone (phases, the server's account, sessions,
    /// energy, soak series).
    #[must_use]
    pub fn for_model(&self, model: &ModelSummary) -> CaseSummary {
        let load = self.load.clone().map(|mut load| {
            load.throughput_tps = model.output_tps.unwrap_or(0.0);
            load.throughput_ci = None;
            load.completed_rps = model.completed_rps.unwrap_or(0.0);
            load.completed_ci = None;
            load.goodput_rps = model.goodput_rps;
            load.goodput_ci = None;
            load.slo_met_share = model.slo_met_share;
            load
        });
        CaseSummary {
            counts: model.counts.clone(),
            ttft_ms: model.ttft_ms.clone(),
            e2e_ms: model.e2e_ms.clone(),
            itl_ms: model.itl_ms.clone(),
            itl_unknown: None,
            chunk_gap_ms: None,
            tpot_ms: model.tpot_ms.clone(),
            decode_rate_tps: model.decode_rate_tps.clone(),
            throughput_tps: model.output_tps.and_then(|t| Spread::with(t, None)),
            load,
            series: None,
            prefix_cache: None,
            prefix_cache_reset: None,
            server_profile: None,
            reasoning: None,
            first_error: model.first_error.clone(),
            first_unverified: model.first_unverified.clone(),
            energy: None,
            cost: None,
            canaries: None,
            phases: None,
            server: None,
            sessions: None,
            abandoned: None,
            models: None,
            ..self.clone()
        }
    }
}
