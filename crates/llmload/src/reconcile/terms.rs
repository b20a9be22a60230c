//! The terms of a gap between another tool's figure and llmload's: the definition (what each
//! tool's definition does with the same responses), the workload (whether the two runs sent the
//! same thing), the measurement (the rest, set against both figures' intervals).

use super::dialect::Dialect;
use super::{MetricRow, Term};
use crate::record::Record;
use crate::stats::interval;

/// What the records say of how the definitions differ on them.
pub(super) struct Definitions {
    /// Responses whose first event came before their first token (a chat stream's role chunk).
    role_chunks: usize,
    /// Responses.
    responses: usize,
    /// Responses with an event of several tokens.
    multi_token_events: usize,
    /// The output throughput of the other run and of llmload's records over the same kind of
    /// span, tokens/s: the pace the server kept during each run.
    pub pace: Option<(f64, f64)>,
}

impl Definitions {
    /// What `records` say.
    pub(super) fn of(records: &[&Record]) -> Definitions {
        Definitions {
            role_chunks: records
                .iter()
                .filter_map(|r| Some((r, super::vllm::as_vllm(r)?)))
                .filter(|(r, v)| {
                    r.event_ms
                        .first()
                        .is_some_and(|&t| v.ttft_ms < t - super::vllm::ROUNDING_MS)
                })
                .count(),
            responses: records.len(),
            multi_token_events: records
                .iter()
                .filter(|r| !r.event_tokens.is_empty())
                .count(),
            pace: None,
        }
    }
}

/// The terms of `row`'s gap; `figure` is the tool's figure behind it (`throughput` for the
/// output throughput).
pub(super) fn terms(
    row: &MetricRow,
    dialect: Dialect,
    figure: &str,
    d: &Definitions,
    differs: &[String],
) -> Vec<Term> {
    let mut out = Vec::new();
    match (row.llmload_as_other, row.llmload) {
        (Some(as_other), Some(ours)) => out.push(Term {
            kind: "definition",
            amount: Some(as_other - ours),
            text: definition_text(dialect, figure, d),
        }),
        (Some(_), None) => out.push(Term {
            kind: "definition",
            amount: None,
            text: format!(
                "llmload has no figure of this definition; {}",
                definition_text(dialect, figure, d)
            ),
        }),
        _ => {}
    }
    if !differs.is_empty() {
        out.push(Term {
            kind: "workload",
            amount: None,
            text: format!(
                "the two runs did not send the same workload ({} differ): the figures are of \
                 different loads",
                differs.join(", ")
            ),
        });
    }
    if let (Some(other), Some(as_other)) = (row.other, row.llmload_as_other) {
        out.push(Term {
            kind: "measurement",
            amount: Some(other - as_other),
            text: match (figure, d.pace) {
                ("throughput", _) | (_, None) => measurement_text(row),
                (_, Some((other, ours))) if (other - ours).abs() > 0.1 * other.max(ours) => {
                    format!(
                        "{}; and the server itself kept another pace during the other run ({other:.2} \
                         against {ours:.2} output tokens/s over each run's span), which no \
                         difference of stamping makes: another load on the machine (the other \
                         client's own processes on the server's cores among them) or another \
                         server state",
                        measurement_text(row)
                    )
                }
                _ => measurement_text(row),
            },
        });
    }
    out
}

/// Why the other tool's definition gives another figure than llmload's on the same records.
fn definition_text(dialect: Dialect, figure: &str, d: &Definitions) -> String {
    let chunks = if d.multi_token_events > 0 {
        format!(
            "in {} of {} responses a chunk carried several tokens",
            d.multi_token_events, d.responses
        )
    } else {
        "every chunk carried one token, so one gap per chunk is one per token".to_owned()
    };
    match dialect {
        Dialect::Vllm => vllm_text(figure, d, &chunks),
        Dialect::Aiperf => match figure {
            "time_to_first_token" => "AIPerf's TTFT, like llmload's, is the first response \
                                      with content (a role-only chunk is not one)"
                .to_owned(),
            "time_to_second_token" => {
                "AIPerf's time to second token is the gap from the first response with content \
                 to the second"
                    .to_owned()
            }
            "inter_token_latency" => "AIPerf's ITL is per request (request latency − TTFT) ÷ \
                                      (output tokens − 1), its latency ending at the last \
                                      response with content; llmload's TPOT is the same \
                                      quotient to the final event (the usage chunk or the \
                                      stream's end)"
                .to_owned(),
            "inter_chunk_latency" => format!(
                "AIPerf takes one gap per response chunk, llmload's ITL splits a chunk of k \
                 tokens into k gaps ({chunks})"
            ),
            "request_latency" => "AIPerf's request latency ends at the last response with \
                                  content, llmload's complete time at the final event"
                .to_owned(),
            _ => "AIPerf divides the output tokens of its profiling phase by its benchmark \
                  duration (first send to last response); llmload's own throughput is over its \
                  rounds, or its window without warmup and drain"
                .to_owned(),
        },
        Dialect::GenaiBench => match figure {
            "ttft" => "genai-bench's TTFT, like llmload's, is the first chunk with content".into(),
            "tpot" => "genai-bench's TPOT is llmload's: (e2e − TTFT) ÷ (output tokens − 1), its \
                       end the final usage chunk or the stream's end"
                .into(),
            "e2e_latency" => "genai-bench's request ends, like llmload's complete time, at the \
                              final usage chunk or the stream's end"
                .into(),
            _ => "genai-bench divides the output tokens of every request by the run's duration; \
                  llmload's own throughput is over its rounds, or its window without warmup and \
                  drain"
                .into(),
        },
        Dialect::Guidellm => match figure {
            "time_to_first_token" => "GuideLLM's TTFT, like llmload's, is the first iteration \
                                      that carried a token"
                .to_owned(),
            "inter_token_latency" => "GuideLLM's ITL is per request (last token − first token) \
                                      ÷ (tokens − 1), each request then counted once per token \
                                      after the first, so long responses weigh more; llmload's \
                                      TPOT weights every response alike and runs to the final \
                                      event"
                .to_owned(),
            "time_per_output_token" => "GuideLLM's TPOT counts the first token in: (last token \
                                        − send) ÷ tokens, each request counted once per token"
                .to_owned(),
            "request_latency" => "GuideLLM's request latency runs from its send to the end of \
                                  the response, as llmload's complete time does"
                .to_owned(),
            _ => "GuideLLM's output tokens per second are over its measurement window (after its \
                  warmup, before its cooldown); llmload's own throughput is over its rounds, or \
                  its window without warmup and drain"
                .to_owned(),
        },
    }
}

/// vLLM's definitions against llmload's.
fn vllm_text(figure: &str, d: &Definitions, chunks: &str) -> String {
    let role = if d.role_chunks > 0 {
        format!(
            "vLLM's first token is the first chunk with choices, which in {} of {} responses \
             was the role-only chunk before any token; llmload's is the first chunk carrying a \
             token",
            d.role_chunks, d.responses
        )
    } else {
        "both take the first chunk, which carried a token in every response".to_owned()
    };
    match figure {
        "ttft" => role,
        "tpot" => format!(
            "vLLM's TPOT runs from its first token to the last token chunk, llmload's from its \
             first token to the final event (the usage chunk or the stream's end); {role}"
        ),
        "itl" => format!(
            "vLLM takes one gap per chunk, llmload splits a chunk of k tokens into k gaps \
             ({chunks}); vLLM also counts the gap from a role-only chunk to the first token. \
             llmload's ITL is over every token gap of the responses whose tokens per event are \
             known"
        ),
        "e2el" => "vLLM's latency ends at the last token chunk, llmload's complete time at the \
                   final event (the usage chunk or the stream's end)"
            .to_owned(),
        _ => "vLLM divides every output token by the benchmark's whole span (first send to \
              last token: the ramp-up and the tail of one request alone included); llmload's \
              own throughput is over its rounds, or its window without warmup and drain"
            .to_owned(),
    }
}

/// What the gap between the other tool's figure and llmload's under its definition is.
fn measurement_text(row: &MetricRow) -> String {
    let level = interval::level() * 100.0;
    match (row.other_interval, row.llmload_as_other_interval) {
        (Some(a), Some(b)) if a.low <= b.high && b.low <= a.high => format!(
            "the two figures' {level:.0} % intervals overlap ([{:.3}, {:.3}] and [{:.3}, {:.3}]): \
             the rest is the variation between two runs, not a difference of measurement",
            a.low, a.high, b.low, b.high
        ),
        (Some(a), Some(b)) => format!(
            "beyond the variation between runs (the {level:.0} % intervals [{:.3}, {:.3}] and \
             [{:.3}, {:.3}] do not overlap): the clients stamp different moments (the other \
             client when its Python event loop has parsed an event, llmload when the kernel \
             received it, so the other client's own delay is in its figure), or the server was \
             in another state during the other run",
            a.low, a.high, b.low, b.high
        ),
        (None, Some(b)) if row.other.is_some_and(|o| b.low <= o && o <= b.high) => format!(
            "the other figure lies inside llmload's {level:.0} % interval [{:.3}, {:.3}]: \
             within the variation between runs",
            b.low, b.high
        ),
        (None, Some(b)) => format!(
            "the other figure lies outside llmload's {level:.0} % interval [{:.3}, {:.3}] (the \
             other file gives no per-request values for an interval of its own): client \
             overhead or a different server state",
            b.low, b.high
        ),
        _ => {
            "not tested: too few values for an interval, or none given by the other file".to_owned()
        }
    }
}
