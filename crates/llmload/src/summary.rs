//! Records → per-case figures and the attempt's outcome (`summary.json`), exactly as SPEC §3
//! defines them. Only `ok` responses enter distributions; a case is complete only when every
//! planned round completed with every response `ok`.

use crate::config::Case;
use crate::record::{Record, Status};
use crate::stats::{Distribution, Spread};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One measured round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundSummary {
    /// Round number (1-based).
    pub round: u32,
    /// Every request of the round ended `ok`.
    pub complete: bool,
    /// Requests that ended `ok`.
    pub responses_ok: u32,
    /// Σ output tokens of its `ok` responses.
    pub output_tokens: u64,
    /// Last completion − first send, in seconds.
    pub duration_s: f64,
    /// `output_tokens / duration_s`.
    pub throughput_tps: f64,
}

/// Counts of request outcomes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Complete and verified against the request (or unverifiable, see `unverified`).
    pub ok: u32,
    /// Complete but contradicting the request.
    pub invalid: u32,
    /// Failed.
    pub error: u32,
    /// Stopped in flight.
    pub cancelled: u32,
    /// `ok` responses whose server did not report every counter.
    pub unverified: u32,
    /// Failures and invalid responses by kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_kind: BTreeMap<String, u32>,
}

/// Figures of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseSummary {
    /// Case id.
    pub id: String,
    /// Prompt tokens per request.
    pub input_tokens: u32,
    /// Simultaneous requests per round.
    pub concurrency: u32,
    /// Generated tokens per request.
    pub output_tokens: u32,
    /// Rounds planned.
    pub rounds_planned: u32,
    /// Every planned round is complete.
    pub complete: bool,
    /// Rounds that ran, complete or not.
    pub rounds: Vec<RoundSummary>,
    /// Time to first token, ms, over `ok` responses.
    pub ttft_ms: Option<Distribution>,
    /// Complete-response time, ms.
    pub e2e_ms: Option<Distribution>,
    /// Inter-token latency, ms (an event of k tokens gives k gaps of gap/k).
    pub itl_ms: Option<Distribution>,
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
    pub load: Option<crate::window::LoadSummary>,
    /// Soak runs: the measurement window cut into windows, and the drift from first to last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<crate::soak::Series>,
    /// With a shared system prompt: how much of it the server's counters say came from its
    /// prefix cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<PrefixCache>,
}

/// The prefix-cache hit rate of a shared system prompt, from the servers' own counters
/// (`cache_n`, `cached_tokens`) on the `ok` responses that reported them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefixCache {
    /// Tokens of the shared system prompt.
    pub shared_tokens: u32,
    /// Responses whose server reported its cached tokens.
    pub n: u32,
    /// Σ cached prompt tokens over those responses.
    pub cached_tokens: u64,
    /// `cached_tokens / (n × shared_tokens)`: the share of shared tokens served from the cache.
    pub hit_rate: f64,
    /// Responses that took at least one token from the cache.
    pub responses_hit: u32,
}

impl PrefixCache {
    /// Over the `ok` responses among `records` that opened with a shared system prompt; `None`
    /// without one, or when no server reported its cached tokens.
    pub fn of(records: &[&Record]) -> Option<PrefixCache> {
        let shared = records.iter().map(|r| r.shared_tokens).max()?;
        let reported: Vec<u32> = records
            .iter()
            .filter(|r| r.shared_tokens > 0)
            .filter_map(|r| r.cached_tokens)
            .collect();
        if shared == 0 || reported.is_empty() {
            return None;
        }
        let cached_tokens: u64 = reported.iter().map(|&c| u64::from(c)).sum();
        Some(PrefixCache {
            shared_tokens: shared,
            n: reported.len() as u32,
            cached_tokens,
            hit_rate: cached_tokens as f64 / (reported.len() as f64 * f64::from(shared)),
            responses_hit: reported.iter().filter(|&&c| c > 0).count() as u32,
        })
    }
}

impl CaseSummary {
    /// Summarises the measured `records` of `case`.
    pub fn new(case: &Case, rounds_planned: u32, records: &[Record]) -> CaseSummary {
        let ok: Vec<&Record> = records.iter().filter(|r| r.status == Status::Ok).collect();
        let dist = |values: Vec<f64>| Distribution::from_samples(&mut values.clone());
        let rounds = round_summaries(case, records);
        let complete_rounds: Vec<f64> = rounds
            .iter()
            .filter(|r| r.complete)
            .map(|r| r.throughput_tps)
            .collect();
        let complete = rounds.len() as u32 == rounds_planned && rounds.iter().all(|r| r.complete);
        CaseSummary {
            id: case.id.clone(),
            input_tokens: case.input_tokens,
            concurrency: case.concurrency,
            output_tokens: case.output_tokens,
            rounds_planned,
            complete,
            ttft_ms: dist(ok.iter().filter_map(|r| r.ttft_ms).collect()),
            e2e_ms: dist(ok.iter().filter_map(|r| r.e2e_ms).collect()),
            itl_ms: dist(ok.iter().flat_map(|r| r.itl_ms()).collect()),
            chunk_gap_ms: dist(ok.iter().flat_map(|r| r.chunk_gaps_ms()).collect()),
            tpot_ms: dist(ok.iter().filter_map(|r| r.tpot_ms()).collect()),
            decode_rate_tps: dist(
                ok.iter()
                    .filter_map(|r| r.tpot_ms())
                    .filter(|&t| t > 0.0)
                    .map(|t| 1e3 / t)
                    .collect(),
            ),
            throughput_tps: Spread::of(&complete_rounds),
            counts: counts(records),
            rounds,
            load: None,
            series: None,
            prefix_cache: PrefixCache::of(&ok),
        }
    }
}

fn round_summaries(case: &Case, records: &[Record]) -> Vec<RoundSummary> {
    let mut by_round: BTreeMap<u32, Vec<&Record>> = BTreeMap::new();
    for r in records {
        if let Some(round) = r.round {
            by_round.entry(round).or_default().push(r);
        }
    }
    by_round
        .into_iter()
        .map(|(round, rs)| {
            let ok: Vec<&&Record> = rs.iter().filter(|r| r.status == Status::Ok).collect();
            let first_send = rs.iter().map(|r| r.sent_s).fold(f64::INFINITY, f64::min);
            let last_done = ok
                .iter()
                .filter_map(|r| r.done_s)
                .fold(f64::NEG_INFINITY, f64::max);
            let duration_s = (last_done - first_send).max(0.0);
            let output_tokens: u64 = ok.iter().map(|r| u64::from(r.generated_tokens())).sum();
            RoundSummary {
                round,
                complete: ok.len() == rs.len() && rs.len() as u32 == case.concurrency,
                responses_ok: ok.len() as u32,
                output_tokens,
                duration_s,
                throughput_tps: if duration_s > 0.0 {
                    output_tokens as f64 / duration_s
                } else {
                    0.0
                },
            }
        })
        .collect()
}

fn counts(records: &[Record]) -> Counts {
    let mut c = Counts::default();
    for r in records {
        match r.status {
            Status::Ok => {
                c.ok += 1;
                c.unverified += u32::from(!r.verified);
            }
            Status::Invalid => c.invalid += 1,
            Status::Error => c.error += 1,
            Status::Cancelled => c.cancelled += 1,
        }
        if let Some(kind) = &r.error_kind {
            *c.by_kind.entry(kind.clone()).or_default() += 1;
        }
    }
    c
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

impl Outcome {
    /// The outcome of `cases` out of `cases_total`, given how the run ended.
    pub fn new(
        cases: &[CaseSummary],
        cases_total: u32,
        stop: Option<String>,
        failure: Option<String>,
    ) -> Outcome {
        let cases_completed = cases.iter().filter(|c| c.complete).count() as u32;
        let status = if stop.is_some() {
            OutcomeStatus::Stopped
        } else if failure.is_some() || cases_completed < cases_total {
            OutcomeStatus::Failed
        } else {
            OutcomeStatus::Completed
        };
        let reason = stop.or(failure).or_else(|| {
            (cases_completed < cases_total).then(|| {
                format!(
                    "{} of {cases_total} cases incomplete",
                    cases_total - cases_completed
                )
            })
        });
        Outcome {
            status,
            cases_completed,
            cases_total,
            rounds_completed: cases
                .iter()
                .flat_map(|c| &c.rounds)
                .filter(|r| r.complete)
                .count() as u32,
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
    pub sweep: Option<crate::sweep::SweepSection>,
    /// Whether llmload itself kept up (its CPU, its timers, its send lag) during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_check: Option<crate::selfcheck::ClientCheck>,
}

/// The report's lines on a shared system prompt: per case, the share of its tokens the server
/// served from its prefix cache; empty when no case had one.
pub fn prefix_cache_section(summary: &Summary) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for case in &summary.cases {
        let Some(p) = &case.prefix_cache else {
            continue;
        };
        if out.is_empty() {
            out.push_str(
                "\nShared system prompt: the share of its tokens served from the prefix cache, from \
                 the server's cached-token counters over the ok responses:\n",
            );
        }
        let _ = writeln!(
            out,
            "- {}: {} shared tokens, {:.1}% from the prefix cache (Σ {} of {} tokens); {} of {} \
             responses hit (n = {})",
            case.id,
            p.shared_tokens,
            p.hit_rate * 100.0,
            p.cached_tokens,
            u64::from(p.n) * u64::from(p.shared_tokens),
            p.responses_hit,
            p.n,
            p.n
        );
    }
    out
}
