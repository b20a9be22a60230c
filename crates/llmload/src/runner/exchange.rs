//! An exchange becomes a record: its times relative to the attempt's start, and the verdict of
//! checking the server's counters against what was asked.

use crate::api::client::{Exchange, Failure, Timing};
use crate::api::pooling::Pooled;
use crate::api::Counters;
use crate::record::{ErrorKind, Phases, Pooling, Record, RequestMeta, ServerTimings, Status};
use std::time::Duration;
use tokio::time::Instant;

/// The verdict of checking a response's counters against its request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterVerdict {
    /// Every counter was reported.
    pub verified: bool,
    /// Contradictions between counters and request; empty when valid.
    pub problems: Vec<String>,
    /// Remarks that do not invalidate the response.
    pub notes: Vec<String>,
}

/// What a response is checked against: the request as sent, and how strictly.
#[derive(Clone, Copy, Debug)]
pub struct Asked {
    /// Prompt tokens built; `None` for a dataset's text sent as it is (nothing to check the
    /// server's count against).
    pub input: Option<u32>,
    /// Output tokens asked for.
    pub output: u32,
    /// Tokens of the shared system prompt (the only ones the cache may serve).
    pub shared: u32,
    /// Tokens the chat template puts before the user's text in every prompt: a server that
    /// reuses its cache though asked not to (llama-server's Messages API) may serve these.
    pub head: u32,
    /// A session's turn: the prompt tokens before its new user message, which the cache may
    /// serve instead of `shared`; `Some(None)` when they could not be told (the cache is then
    /// not checked and the response is unverified).
    pub history: Option<Option<u32>>,
    /// Chat with images whose cost the server's counts did not show: the prompt count cannot be
    /// checked, and the response is unverified.
    pub images_untold: bool,
    /// `--best-effort`: a server that cannot be forced or counted. A length that differs from
    /// the request makes the response unverified, with its reason, not invalid.
    pub lenient: bool,
    /// The streamed tokens were counted by the client's tokenizer, not by the server's events:
    /// a count that differs from the server's says nothing of the server.
    pub client_counted: bool,
}

/// The note on a response whose prompt went as the dataset has it.
pub const AS_IS: &str = "prompt sent as the dataset has it: its length was not set, so \
                         input_tokens is the server's count and is not checked";

/// The note on a session's turn whose whole prompt the server could not show in its own tokens.
pub const UNTOLD_INPUT: &str = "a session's prompt on a server that cannot show its chat \
     prompt's tokens: input_tokens is the server's count and is not checked";

/// The note on a request with images whose cost the server's counts did not show at setup.
pub const UNTOLD_IMAGES: &str = "the server's counts did not show what an image costs, so the \
     prompt tokens (text and images) are not checked: response unverified";

/// The note on a session's turn whose history the server could not show in its own tokens.
pub const UNTOLD_HISTORY: &str = "the server cannot show the chat prompt's tokens, so the \
     history a cache may serve is not known: cached tokens not checked, response unverified";

/// Checks a complete response's counters: prompt processed in full, nothing from the cache but
/// the `shared` tokens of a shared system prompt, exactly the requested number of output tokens.
pub fn verify(counters: &Counters, streamed: u32, asked: Asked) -> CounterVerdict {
    let Asked {
        input,
        output,
        shared,
        head,
        history,
        images_untold,
        lenient,
        client_counted,
    } = asked;
    let mut v = CounterVerdict {
        verified: true,
        problems: Vec::new(),
        notes: Vec::new(),
    };
    // A contradiction: invalid, or in best-effort mode a reason the response is unverified.
    let contradiction = |v: &mut CounterVerdict, text: String| {
        if lenient {
            v.verified = false;
            v.notes.push(format!("{text} (best effort: unverified)"));
        } else {
            v.problems.push(text);
        }
    };
    let mut missing = Vec::new();
    match (counters.prompt_tokens, input) {
        (Some(p), Some(input)) if p != input => contradiction(
            &mut v,
            format!("server counted {p} prompt tokens, {input} were sent"),
        ),
        (Some(_), Some(_)) => {}
        (Some(_), None) if images_untold => {
            v.verified = false;
            v.notes.push(UNTOLD_IMAGES.into());
        }
        (Some(_), None) if history.is_some() => v.notes.push(UNTOLD_INPUT.into()),
        (Some(_), None) => v.notes.push(AS_IS.into()),
        (None, _) => missing.push("prompt tokens"),
    }
    match (counters.cached_tokens, history) {
        (Some(_), Some(None)) => {
            v.verified = false;
            v.notes.push(UNTOLD_HISTORY.into());
        }
        (Some(c), Some(Some(allowed))) if c > allowed => v.problems.push(format!(
            "{c} prompt tokens came from the server's cache, more than the {allowed} of the \
             session's history before the turn's new message"
        )),
        (Some(c), None) if c > shared.max(head) => v.problems.push(match (shared, head) {
            (0, 0) => format!("{c} prompt tokens came from the server's cache"),
            (0, h) => format!(
                "{c} prompt tokens came from the server's cache, more than the {h} of the chat \
                 template's opening"
            ),
            (s, _) => {
                format!("{c} prompt tokens came from the server's cache, more than the {s} shared")
            }
        }),
        (Some(c), None) if c > shared => v.notes.push(format!(
            "{c} prompt tokens came from the server's cache: the chat template's opening, the \
             same in every prompt (the server reuses its cache though asked not to)"
        )),
        (Some(_), _) => {}
        (None, _) => missing.push("cached tokens"),
    }
    if counters.output_tokens.is_none() {
        missing.push("generated tokens");
    }
    match output_check(counters.output_tokens, streamed, output, client_counted) {
        Err(text) => contradiction(&mut v, text),
        Ok(Some(note)) => v.notes.push(note),
        Ok(None) => {}
    }
    if !missing.is_empty() {
        v.verified = false;
        v.notes.push(format!(
            "server did not report {}: response unverified",
            missing.join(", ")
        ));
    }
    v
}

/// The stream against the server's count of `generated` tokens and the `output` asked for: a
/// contradiction (`Err`), a note, or nothing to say.
fn output_check(
    generated: Option<u32>,
    streamed: u32,
    output: u32,
    client_counted: bool,
) -> Result<Option<String>, String> {
    match generated {
        Some(o) if o != output => Err(format!(
            "server generated {o} tokens, {output} were requested"
        )),
        // Its end came before any text (or its text came in events of no known type): a
        // count with nothing streamed is no response, whatever the API.
        Some(o) if streamed == 0 && o > 0 => Err(format!(
            "stream carried no token event, though the server says it generated {o} tokens"
        )),
        // Each event carries at least one token: more events than tokens cannot be.
        Some(o) if streamed > o && !client_counted => Err(format!(
            "stream carried {streamed} token events, more than the {o} tokens the server says \
             it generated"
        )),
        Some(o) if o != streamed => Ok(Some(format!(
            "stream carried {streamed} token events for {o} generated tokens"
        ))),
        None if streamed != output => Err(format!(
            "stream carried {streamed} tokens, {output} were requested"
        )),
        Some(_) | None => Ok(None),
    }
}

/// How an exchange ended, as its record says it: the status, the kind and words of what went
/// wrong, and the verdict on its counters (a complete response only).
type Judged = (
    Status,
    Option<ErrorKind>,
    Option<String>,
    Option<CounterVerdict>,
);

/// Judges an exchange of `streamed` tokens: its failure, else the verdict on its counters.
fn judge(meta: &RequestMeta, exchange: &Exchange, streamed: u32, lenient: bool) -> Judged {
    if let Some(Failure::Abandoned(_)) = &exchange.failure {
        // Planned, not a failure: no error kind, and no verdict (the stream was not read to
        // its end, so its counters are not the response's).
        return (Status::Abandoned, None, None, None);
    }
    if let Some(f) = &exchange.failure {
        let status = match f {
            Failure::Cancelled => Status::Cancelled,
            Failure::Overrun(_) => Status::Invalid,
            _ => Status::Error,
        };
        // Whatever part of it a server wrote, the record keeps one line (the same rule as
        // every server's text).
        let said = crate::api::error_body::flatten(&f.to_string());
        (status, Some(f.kind()), Some(said), None)
    } else if let Some(pooled) = &exchange.pooled {
        verdict(verify_pooled(pooled, meta, lenient))
    } else {
        let mut v = verify(
            &exchange.counters,
            streamed,
            Asked {
                input: match meta.images {
                    Some(images) => images.tokens.map(|t| meta.input_tokens.saturating_add(t)),
                    None => meta.exact_input.then_some(meta.input_tokens),
                },
                images_untold: meta.images.is_some_and(|i| i.tokens.is_none()),
                output: meta.output_tokens,
                shared: meta.shared_tokens,
                head: meta.template_head,
                history: meta.turn.map(|t| t.history_tokens),
                lenient,
                client_counted: exchange.counted_by_client.is_some(),
            },
        );
        if let Some(how) = &exchange.counted_by_client {
            v.notes.push(how.clone());
        }
        if exchange.ended_without_done {
            v.notes.push(
                "the stream ended without `data: [DONE]`, cleanly, after a chunk with its \
                 finish_reason: complete there"
                    .into(),
            );
        }
        let generated = exchange.counters.output_tokens.unwrap_or(streamed);
        if v.problems.is_empty()
            && lenient
            && crate::record::far_short(generated, meta.output_tokens)
        {
            // Whether it is short, its case says from its peers (summary::short).
            v.notes.push(format!(
                "far short: {generated} of the {} tokens asked for, a quarter or less (best \
                 effort: short, counted apart and in no figure, where its case's other \
                 responses got four times as much)",
                meta.output_tokens
            ));
        }
        verdict(v)
    }
}

/// A complete response's status from its verdict: `ok`, or `invalid` with its problems.
fn verdict(v: CounterVerdict) -> Judged {
    if v.problems.is_empty() {
        (Status::Ok, None, None, Some(v))
    } else {
        let why = v.problems.join("; ");
        (
            Status::Invalid,
            Some(ErrorKind::Invalid),
            Some(why),
            Some(v),
        )
    }
}

/// Checks an embeddings or rerank answer: one result per input, sound results (vectors of one
/// length, each index once), and the server's prompt count equal to what was sent (each input
/// `input_tokens` long); without the count the answer is unverified.
pub fn verify_pooled(pooled: &Pooled, meta: &RequestMeta, lenient: bool) -> CounterVerdict {
    let mut v = CounterVerdict {
        verified: true,
        problems: Vec::new(),
        notes: Vec::new(),
    };
    let inputs = meta.inputs;
    if pooled.results != inputs {
        v.problems.push(format!(
            "the answer held {} results for {inputs} inputs",
            pooled.results
        ));
    }
    v.problems.extend(pooled.problem.clone());
    let sent = inputs.saturating_mul(meta.input_tokens);
    match pooled.counters.prompt_tokens {
        Some(p) if p != sent => {
            let text = format!(
                "server counted {p} prompt tokens, {sent} were sent ({inputs} inputs of {})",
                meta.input_tokens
            );
            if lenient {
                v.verified = false;
                v.notes.push(format!("{text} (best effort: unverified)"));
            } else {
                v.problems.push(text);
            }
        }
        Some(_) => {}
        None => {
            v.verified = false;
            v.notes
                .push("server did not report prompt tokens: response unverified".into());
        }
    }
    v
}

/// Builds the record of an exchange; `origin` is the attempt's start.
pub fn record(meta: RequestMeta, exchange: &Exchange, origin: Instant, lenient: bool) -> Record {
    let since = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
    let ms_from_sent = |t: Instant| t.saturating_duration_since(exchange.sent).as_secs_f64() * 1e3;
    let streamed = exchange.streamed_tokens();
    let (status, error_kind, error, verdict) = judge(&meta, exchange, streamed, lenient);
    let multi = exchange.token_events.iter().any(|(_, k)| k != 1);
    let ttft_ms = exchange.first_token().map(ms_from_sent);
    let (server, server_notes) = server_side(exchange, ttft_ms);
    Record {
        case: meta.case,
        phase: meta.phase,
        round: meta.round,
        index: meta.index,
        scheduled_s: meta.scheduled.map(since),
        sent_s: since(exchange.sent),
        first_token_s: exchange.first_token().map(since),
        done_s: exchange.done.or(exchange.abandoned).map(since),
        ended_s: exchange
            .ended
            .filter(|_| exchange.done.or(exchange.abandoned).is_none())
            .map(since),
        ttft_ms,
        e2e_ms: exchange
            .done
            .filter(|_| exchange.failure.is_none())
            .map(ms_from_sent),
        input_tokens: if meta.exact_input {
            meta.input_tokens
        } else {
            exchange.counters.prompt_tokens.unwrap_or(0)
        },
        requested_output_tokens: meta.output_tokens,
        prompt_tokens: exchange.counters.prompt_tokens,
        cached_tokens: exchange.counters.cached_tokens,
        shared_tokens: meta.shared_tokens,
        dataset_entry: meta.dataset_entry,
        output_tokens: exchange.counters.output_tokens,
        token_events: crate::num::count(exchange.token_events.len()),
        streamed_tokens: streamed,
        status,
        verified: verdict.as_ref().is_some_and(|v| v.verified),
        error_kind,
        error,
        notes: {
            let mut notes = verdict.map(|v| v.notes).unwrap_or_default();
            if exchange.retried {
                notes.push("sent twice: the server had closed the kept-alive connection".into());
            }
            notes.extend(server_notes);
            notes.extend(abandoned_note(exchange));
            notes
        },
        event_ms: exchange
            .token_events
            .iter()
            .map(|(t, _)| round3(ms_from_sent(t)))
            .collect(),
        event_tokens: if multi {
            exchange.token_events.iter().map(|(_, k)| k).collect()
        } else {
            Vec::new()
        },
        reasoning_tokens: exchange.reasoning_tokens,
        answer_ms: exchange
            .first_answer
            .filter(|_| exchange.reasoning_tokens > 0)
            .map(|t| round3(ms_from_sent(t))),
        phases: exchange.timing.map(|timing| phases(&timing, exchange)),
        request_id: meta.request_id,
        server_request_id: exchange.server_request_id.clone(),
        server,
        shard: None,
        replica: exchange.replica,
        repeat: None,
        arm: None,
        session: meta.turn.map(|t| t.session),
        turn: meta.turn.map(|t| t.turn),
        turns: meta.turn.map(|t| t.turns),
        history_tokens: meta.turn.and_then(|t| t.history_tokens),
        graph: meta.graph,
        cancel_after: meta.cancel_after,
        images: meta.images,
        pooling: (meta.inputs > 0).then(|| Pooling {
            inputs: meta.inputs,
            tokens: meta.inputs.saturating_mul(meta.input_tokens),
            results: exchange.pooled.as_ref().map(|p| p.results),
            dimension: exchange.pooled.as_ref().and_then(|p| p.dimension),
        }),
        model: meta.model,
        canary: meta.canary.map(|mut c| {
            super::canaries::with_output(&mut c, exchange);
            c
        }),
    }
}

/// The note on a stream the client abandoned (`--cancel-after`): where, and when.
fn abandoned_note(exchange: &Exchange) -> Option<String> {
    let failure @ Failure::Abandoned(_) = exchange.failure.as_ref()? else {
        return None;
    };
    let at = exchange
        .abandoned?
        .saturating_duration_since(exchange.sent)
        .as_secs_f64()
        * 1e3;
    Some(format!(
        "{failure} at {at:.1} ms, with {} tokens received",
        exchange.streamed_tokens()
    ))
}

/// The server's own timings of an exchange, checked against the client's TTFT (`ttft_ms`),
/// and the notes they call for: values left out, a server TTFT past the client's.
fn server_side(exchange: &Exchange, ttft_ms: Option<f64>) -> (Option<ServerTimings>, Vec<String>) {
    let Some(reported) = &exchange.server else {
        return (None, Vec::new());
    };
    let mut notes = reported.notes.clone();
    let mut timings = reported.timings.clone();
    if let Some(note) = timings.as_mut().and_then(|t| t.check_against(ttft_ms)) {
        notes.push(note);
    }
    (timings, notes)
}

/// The record's phases of an exchange's timing: setup durations, then ms from `sent`. The marks
/// are kept to the microsecond as token events are, and unrounded like `ttft_ms`, so that they
/// compare with it exactly.
fn phases(timing: &Timing, exchange: &Exchange) -> Phases {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let from_sent = |t: Option<Instant>| {
        t.map(|t| {
            let kept = exchange.token_events.as_kept(t);
            ms(kept.saturating_duration_since(exchange.sent))
        })
    };
    Phases {
        connect_ms: timing.setup.map(|s| ms(s.connect)),
        tls_ms: timing.setup.and_then(|s| s.tls).map(ms),
        write_ms: from_sent(timing.written),
        head_ms: from_sent(timing.head),
        first_event_ms: from_sent(timing.first_event),
        reused: timing.reused,
    }
}

fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

#[cfg(test)]
mod tests;
