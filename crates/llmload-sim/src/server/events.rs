//! Wire formats: the SSE events and JSON bodies of llama-server's `/completion` and the `OpenAI`
//! completions and chat APIs, written from a request's progress. Token events are written by hand
//! into one buffer (they are the hot path); once-per-request objects go through `serde_json`.

use std::fmt::{self, Write};

use serde_json::{json, Value};

use super::request::Api;
use crate::driver::Progress;
use crate::engine::StopReason;
use crate::tokenizer::generated_token;

/// What every event of one response needs to know.
#[derive(Debug, Clone)]
pub(crate) struct EventContext {
    /// The API the request came in on.
    pub api: Api,
    /// Serial number of the request (the `OpenAI` `id`, and the generated text's seed).
    pub serial: u64,
    /// Seed of the simulator.
    pub seed: u64,
    /// Unix time of the request, for `OpenAI` `created`.
    pub created_s: u64,
    /// Model id.
    pub model: String,
    /// Prompt length in tokens.
    pub prompt_tokens: usize,
    /// llama.cpp `return_tokens`.
    pub return_tokens: bool,
    /// `OpenAI` `stream_options.include_usage`.
    pub include_usage: bool,
    /// vLLM's `stream_options.continuous_usage_stats`: usage on every token chunk.
    pub continuous_usage: bool,
    /// The first tokens that are reasoning (chat: `delta.reasoning_content`).
    pub reasoning_tokens: usize,
    /// Modelled milliseconds per wall-clock millisecond.
    pub time_scale: f64,
    /// Cached tokens to report instead of the real ones (fake-cache fault).
    pub fake_cached_tokens: Option<usize>,
    /// What the generated text is drawn from: the serial number, or the prompt's tokens for a
    /// greedy request (the same prompt, the same text).
    pub text_key: u64,
    /// The corrupt fault: from which token, at how many generation requests in flight, and
    /// where they are counted.
    pub corrupt: Option<(usize, usize, std::sync::Arc<std::sync::atomic::AtomicUsize>)>,
    /// The corrupt fault: the first token that came out wrong, once one has.
    pub corrupt_from: std::sync::OnceLock<usize>,
    /// Counts this request among those in flight for as long as its answer lives.
    pub in_flight: Option<std::sync::Arc<super::Generating>>,
}

fn put(out: &mut String, args: fmt::Arguments<'_>) {
    // Writing to a String cannot fail.
    let _ = out.write_fmt(args);
}

/// The text a broken event carries (malformed fault): valid SSE framing, invalid JSON.
pub(crate) const MALFORMED_EVENT: &str = "data: {\"content\": tru\n\n";

/// The terminator of `OpenAI` streams.
pub(crate) const DONE_EVENT: &str = "data: [DONE]\n\n";

fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::Limit => "length",
        StopReason::Eos => "stop",
    }
}

fn stop_type(stop: StopReason) -> &'static str {
    match stop {
        StopReason::Limit => "limit",
        StopReason::Eos => "eos",
    }
}

impl EventContext {
    fn object(&self, streaming: bool) -> &'static str {
        match (self.api, streaming) {
            (Api::Chat, true) => "chat.completion.chunk",
            (Api::Chat, false) => "chat.completion",
            _ => "text_completion",
        }
    }

    fn response_id(&self) -> String {
        match self.api {
            Api::Chat => format!("chatcmpl-{}", self.serial),
            _ => format!("cmpl-{}", self.serial),
        }
    }

    /// `"id":..,"object":..,"created":..,"model":..` of an `OpenAI` chunk, without braces.
    fn openai_head(&self, out: &mut String) {
        put(
            out,
            format_args!(
                "\"id\":\"{}\",\"object\":\"{}\",\"created\":{},\"model\":{}",
                self.response_id(),
                self.object(true),
                self.created_s,
                Value::from(self.model.as_str())
            ),
        );
    }

    /// Generated token `index`: its id and text.
    fn token(&self, index: usize) -> (u32, &'static str) {
        if let (None, Some((after, in_flight, count))) = (self.corrupt_from.get(), &self.corrupt) {
            // A token generated while the batch is large enough comes out wrong, and so does
            // every one after it (the output has parted from the right one).
            if index >= *after && count.load(std::sync::atomic::Ordering::SeqCst) >= *in_flight {
                let _ = self.corrupt_from.set(index);
            }
        }
        match self.corrupt_from.get() {
            // Another draw of the same vocabulary: a wrong token, as a corrupted kernel's, and
            // another for each request (corruption reads whatever the blocks hold).
            Some(&from) if index >= from => {
                generated_token(!self.seed, self.text_key ^ self.serial, index)
            }
            _ => generated_token(self.seed, self.text_key, index),
        }
    }

    fn push_text(&self, out: &mut String, first: usize, count: usize) {
        // Vocabulary words need no JSON escaping (checked by a test).
        for index in first..first + count {
            out.push_str(self.token(index).1);
        }
    }

    /// The chat stream's first, role-only chunk.
    pub(super) fn role_event(&self, out: &mut String) {
        out.push_str("data: {");
        self.openai_head(out);
        out.push_str(
            ",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null},\
             \"logprobs\":null,\"finish_reason\":null}]}\n\n",
        );
    }

    /// One event carrying tokens `first..first + count`; `last` is set when the event carries
    /// the final token (`OpenAI` completions put the finish reason on it).
    pub(super) fn token_event(
        &self,
        out: &mut String,
        first: usize,
        count: usize,
        slot: usize,
        last: Option<StopReason>,
    ) {
        match self.api {
            Api::Llama => {
                out.push_str("data: {\"index\":0,\"content\":\"");
                self.push_text(out, first, count);
                out.push('"');
                if self.return_tokens {
                    out.push_str(",\"tokens\":[");
                    for index in first..first + count {
                        let separator = if index == first { "" } else { "," };
                        let id = self.token(index).0;
                        put(out, format_args!("{separator}{id}"));
                    }
                    out.push(']');
                }
                put(
                    out,
                    format_args!(
                        ",\"stop\":false,\"id_slot\":{slot},\"tokens_predicted\":{},\
                         \"tokens_evaluated\":{}}}\n\n",
                        first + count,
                        self.prompt_tokens
                    ),
                );
            }
            Api::Completions => {
                out.push_str("data: {");
                self.openai_head(out);
                out.push_str(",\"choices\":[{\"index\":0,\"text\":\"");
                self.push_text(out, first, count);
                let reason = last.map_or("null".to_owned(), |stop| {
                    format!("\"{}\"", finish_reason(stop))
                });
                put(
                    out,
                    format_args!("\",\"logprobs\":null,\"finish_reason\":{reason}}}]"),
                );
                self.chunk_usage(out, first + count);
                out.push_str("}\n\n");
            }
            Api::Chat => {
                out.push_str("data: {");
                self.openai_head(out);
                // A chunk that starts among the reasoning tokens is reasoning.
                let field = if first < self.reasoning_tokens {
                    "reasoning_content"
                } else {
                    "content"
                };
                put(
                    out,
                    format_args!(",\"choices\":[{{\"index\":0,\"delta\":{{\"{field}\":\""),
                );
                self.push_text(out, first, count);
                out.push_str("\"},\"logprobs\":null,\"finish_reason\":null}]");
                self.chunk_usage(out, first + count);
                out.push_str("}\n\n");
            }
        }
    }

    /// With continuous usage, `,"usage":{…}` of a token chunk: `generated` tokens so far.
    fn chunk_usage(&self, out: &mut String, generated: usize) {
        if self.continuous_usage {
            put(
                out,
                format_args!(
                    ",\"usage\":{{\"prompt_tokens\":{},\"completion_tokens\":{generated},\
                     \"total_tokens\":{}}}",
                    self.prompt_tokens,
                    self.prompt_tokens + generated
                ),
            );
        }
    }

    /// Everything after the last token event: llama.cpp's final `stop: true` event, or the
    /// `OpenAI` finish chunk (unless a token chunk carried it), usage chunk (with the `timings`
    /// llama-server puts there) and `[DONE]`.
    pub(super) fn final_events(&self, out: &mut String, progress: &Progress, finish_sent: bool) {
        let stop = progress
            .finish
            .map_or(StopReason::Limit, |finish| finish.stop);
        if self.api == Api::Llama {
            put(
                out,
                format_args!("data: {}\n\n", self.llama_final(progress, "", false)),
            );
            return;
        }
        if !finish_sent {
            let choice = match self.api {
                Api::Chat => json!({"index": 0, "delta": {}, "logprobs": null,
                    "finish_reason": finish_reason(stop)}),
                _ => json!({"index": 0, "text": "", "logprobs": null,
                    "finish_reason": finish_reason(stop)}),
            };
            let chunk = self.openai_object(true, &[choice], None);
            put(out, format_args!("data: {chunk}\n\n"));
        }
        if self.include_usage {
            // llama-server puts its `timings` beside the final usage.
            let mut chunk = self.openai_object(true, &[], Some(self.usage(progress)));
            chunk["timings"] = self.timings(progress);
            put(out, format_args!("data: {chunk}\n\n"));
        }
        out.push_str(DONE_EVENT);
    }

    fn openai_object(&self, streaming: bool, choices: &[Value], usage: Option<Value>) -> Value {
        let mut object = json!({
            "id": self.response_id(),
            "object": self.object(streaming),
            "created": self.created_s,
            "model": self.model,
            "choices": choices,
        });
        if let Some(usage) = usage {
            object["usage"] = usage;
        }
        object
    }

    fn cached_tokens(&self, progress: &Progress) -> usize {
        self.fake_cached_tokens.unwrap_or(progress.cached_tokens)
    }

    fn usage(&self, progress: &Progress) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": progress.generated,
            "total_tokens": self.prompt_tokens + progress.generated,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens(progress)},
        })
    }

    /// llama.cpp `timings`, in wall-clock milliseconds (modelled time / time scale).
    fn timings(&self, progress: &Progress) -> Value {
        let cache_n = self.cached_tokens(progress);
        let prompt_n = self.prompt_tokens - cache_n;
        let (prompt_ms, predicted_ms) = progress.finish.map_or((0.0, 0.0), |finish| {
            (
                finish.prompt_ms / self.time_scale,
                finish.predicted_ms / self.time_scale,
            )
        });
        let per_token = |ms: f64, n: usize| if n == 0 { 0.0 } else { ms / n as f64 };
        let per_second = |ms: f64, n: usize| if ms <= 0.0 { 0.0 } else { 1e3 * n as f64 / ms };
        let predicted_n = progress.generated;
        json!({
            "cache_n": cache_n,
            "prompt_n": prompt_n,
            "prompt_ms": prompt_ms,
            "prompt_per_token_ms": per_token(prompt_ms, prompt_n),
            "prompt_per_second": per_second(prompt_ms, prompt_n),
            "predicted_n": predicted_n,
            "predicted_ms": predicted_ms,
            "predicted_per_token_ms": per_token(predicted_ms, predicted_n),
            "predicted_per_second": per_second(predicted_ms, predicted_n),
        })
    }

    /// The final llama.cpp object; the non-streaming answer carries the text and token ids.
    fn llama_final(&self, progress: &Progress, content: &str, with_tokens: bool) -> Value {
        let stop = progress
            .finish
            .map_or(StopReason::Limit, |finish| finish.stop);
        let tokens: Vec<u32> = if with_tokens && self.return_tokens {
            (0..progress.generated)
                .map(|index| self.token(index).0)
                .collect()
        } else {
            Vec::new()
        };
        json!({
            "index": 0,
            "content": content,
            "tokens": tokens,
            "id_slot": progress.slot.unwrap_or(0),
            "stop": true,
            "model": self.model,
            "tokens_predicted": progress.generated,
            "tokens_evaluated": self.prompt_tokens,
            "stop_type": stop_type(stop),
            "timings": self.timings(progress),
        })
    }

    /// The whole answer of a non-streaming request.
    pub(super) fn complete_body(&self, progress: &Progress) -> String {
        let mut content = String::new();
        self.push_text(&mut content, 0, progress.generated);
        let stop = progress
            .finish
            .map_or(StopReason::Limit, |finish| finish.stop);
        let reason = finish_reason(stop);
        let value = match self.api {
            Api::Llama => self.llama_final(progress, &content, true),
            Api::Completions => {
                let choice = json!({"index": 0, "text": content, "logprobs": null,
                    "finish_reason": reason});
                self.openai_object(false, &[choice], Some(self.usage(progress)))
            }
            Api::Chat => {
                let choice = json!({"index": 0, "logprobs": null, "finish_reason": reason,
                    "message": {"role": "assistant", "content": content}});
                self.openai_object(false, &[choice], Some(self.usage(progress)))
            }
        };
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Finish;

    fn context(api: Api) -> EventContext {
        EventContext {
            api,
            serial: 3,
            seed: 1,
            created_s: 1_700_000_000,
            model: "m\"odel".to_owned(),
            prompt_tokens: 10,
            return_tokens: true,
            include_usage: true,
            continuous_usage: false,
            reasoning_tokens: 0,
            time_scale: 2.0,
            fake_cached_tokens: None,
            text_key: 3,
            corrupt: None,
            corrupt_from: std::sync::OnceLock::new(),
            in_flight: None,
        }
    }

    fn finished(generated: usize) -> Progress {
        Progress {
            slot: Some(1),
            cached_tokens: 4,
            generated,
            finish: Some(Finish {
                stop: StopReason::Limit,
                prompt_ms: 100.0,
                predicted_ms: 50.0,
            }),
        }
    }

    fn events(text: &str) -> Vec<&str> {
        text.split("\n\n")
            .filter(|event| !event.is_empty())
            .map(|event| event.strip_prefix("data: ").expect("data line"))
            .collect()
    }

    #[test]
    fn vocabulary_needs_no_escaping() {
        for index in 0..500 {
            let (_, text) = generated_token(0, 0, index);
            assert_eq!(Value::from(text).to_string(), format!("\"{text}\""));
        }
    }

    #[test]
    fn llama_events_carry_counters_and_timings() {
        let context = context(Api::Llama);
        let mut out = String::new();
        context.token_event(&mut out, 0, 2, 1, None);
        context.final_events(&mut out, &finished(2), false);
        let events = events(&out);
        let token: Value = serde_json::from_str(events[0]).expect("json");
        assert_eq!(token["tokens"].as_array().map(Vec::len), Some(2));
        assert_eq!(token["tokens_predicted"], 2);
        assert_eq!(token["stop"], false);
        let last: Value = serde_json::from_str(events[1]).expect("json");
        assert_eq!(last["stop"], true);
        assert_eq!(last["stop_type"], "limit");
        assert_eq!(last["model"], "m\"odel");
        assert_eq!(last["timings"]["cache_n"], 4);
        assert_eq!(last["timings"]["prompt_n"], 6);
        // Modelled 100 ms at time scale 2.
        assert_eq!(last["timings"]["prompt_ms"], 50.0);
        assert_eq!(last["timings"]["predicted_per_second"], 80.0);
    }

    #[test]
    fn openai_streams_end_with_usage_and_done() {
        for api in [Api::Completions, Api::Chat] {
            let mut context = context(api);
            context.fake_cached_tokens = Some(7);
            let mut out = String::new();
            if api == Api::Chat {
                context.role_event(&mut out);
            }
            context.token_event(&mut out, 0, 1, 0, Some(StopReason::Limit));
            context.final_events(&mut out, &finished(1), api == Api::Completions);
            let events = events(&out);
            assert_eq!(events.last(), Some(&"[DONE]"));
            let parsed: Vec<Value> = events[..events.len() - 1]
                .iter()
                .map(|event| serde_json::from_str(event).expect("json"))
                .collect();
            let last = parsed.last().expect("usage chunk");
            let usage = &last["usage"];
            assert_eq!(usage["total_tokens"], 11);
            assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 7);
            // As llama-server: its timings beside the usage (modelled 50 ms at time scale 2).
            assert_eq!(last["timings"]["predicted_ms"], 25.0, "{api:?}");
            assert_eq!(last["timings"]["predicted_n"], 1, "{api:?}");
            let finishes = parsed
                .iter()
                .filter(|chunk| chunk["choices"][0]["finish_reason"] == "length")
                .count();
            assert_eq!(finishes, 1, "{api:?}");
        }
    }
}
