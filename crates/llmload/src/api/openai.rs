//! OpenAI-compatible APIs: `POST /v1/completions` and `POST /v1/chat/completions`.
//!
//! A chunk carries a generated token when a choice has non-empty `text` (completions) or
//! `delta.content` / `delta.reasoning_content` (chat); the first chat chunk is usually role-only
//! and carries none. The usage chunk (`stream_options.include_usage`) comes before `[DONE]`; it
//! carries the server's own timings where the server reports them: vLLM's `metrics`
//! (`--enable-per-request-metrics`), llama-server's `timings` (on the finish chunk of
//! `/v1/completions`, which carries the usage there).

use super::decode::{NonEmpty, Present};
use super::request::GenerationRequest;
use super::server_timings;
use super::{error_message, parse_json, Api, Counters, Event, EventError, Prompt};
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::json;
use std::fmt;

/// The body of a streaming request: fixed output length (`ignore_eos`, `min_tokens` where the
/// server knows it), usage reported, prompt cache off where the server honours `cache_prompt`.
pub fn body(api: Api, request: &GenerationRequest<'_>) -> serde_json::Value {
    let mut body = json!({
        "max_tokens": request.output_tokens,
        "min_tokens": request.output_tokens,
        "ignore_eos": true,
        "stream": true,
        "stream_options": if request.usage_per_chunk {
            json!({"include_usage": true, "continuous_usage_stats": true})
        } else {
            json!({"include_usage": true})
        },
        "cache_prompt": request.cache_prompt,
    });
    let prompt = match request.prompt {
        Prompt::Tokens(ids) => json!(ids),
        Prompt::Text(text) => json!(text),
        Prompt::Messages(messages) if api == Api::Chat => json!(messages),
        Prompt::Messages(messages) => json!(super::joined(messages)),
    };
    if api != Api::Chat {
        body["prompt"] = prompt;
    } else if prompt.is_array() && matches!(request.prompt, Prompt::Messages(_)) {
        body["messages"] = prompt;
    } else {
        body["messages"] = json!([{"role": "user", "content": prompt}]);
    }
    if let Some(model) = request.model {
        body["model"] = json!(model);
    }
    body
}

/// Puts `images` (`data:` URLs) after the text of a chat body's last message, as `image_url`
/// parts: its content becomes `[{"type": "text", …}, {"type": "image_url", …}, …]`. Nothing
/// changes without images or without messages.
pub fn attach_images(body: &mut serde_json::Value, images: &[String]) {
    if images.is_empty() {
        return;
    }
    let Some(last) = body["messages"].as_array_mut().and_then(|m| m.last_mut()) else {
        return;
    };
    let text = last["content"].as_str().unwrap_or_default().to_owned();
    let mut parts = vec![json!({"type": "text", "text": text})];
    parts.extend(
        images
            .iter()
            .map(|url| json!({"type": "image_url", "image_url": {"url": url}})),
    );
    last["content"] = json!(parts);
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: ChoiceTokens,
    usage: Option<Usage>,
    error: Option<serde_json::Value>,
    /// llama-server's `timings`, read apart ([`server_timings::llama`]).
    timings: Option<Present>,
    /// vLLM's per-request `metrics`, read apart ([`server_timings::vllm`]).
    metrics: Option<Present>,
}

#[derive(Deserialize)]
struct Choice {
    text: Option<NonEmpty>,
    delta: Option<Delta>,
    finish_reason: Option<NonEmpty>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<NonEmpty>,
    reasoning_content: Option<NonEmpty>,
    reasoning: Option<NonEmpty>,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: Option<u32>,
    completion_tokens: Option<u32>,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u32>,
}

/// Choices that carry generated text (`.0`), all choices (`.1`), choices that carry
/// reasoning but no answer (`.2`), and choices that say their `finish_reason` (`.3`), counted
/// without keeping them.
#[derive(Default)]
struct ChoiceTokens(u32, u32, u32, u32);

impl<'de> Deserialize<'de> for ChoiceTokens {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ChoiceTokens;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ChoiceTokens, A::Error> {
                let (mut n, mut all, mut reasoning, mut finished) = (0u32, 0u32, 0u32, 0u32);
                while let Some(choice) = seq.next_element::<Choice>()? {
                    all = all.saturating_add(1);
                    let nonempty = |t: Option<NonEmpty>| t.is_some_and(|t| t.0);
                    finished = finished.saturating_add(u32::from(nonempty(choice.finish_reason)));
                    let (answer, thought) = match choice.delta {
                        Some(d) => (
                            nonempty(d.content),
                            nonempty(d.reasoning_content) || nonempty(d.reasoning),
                        ),
                        None => (false, false),
                    };
                    let answer = answer || nonempty(choice.text);
                    n = n.saturating_add(u32::from(answer || thought));
                    reasoning = reasoning.saturating_add(u32::from(thought && !answer));
                }
                Ok(ChoiceTokens(n, all, reasoning, finished))
            }
            fn visit_unit<E>(self) -> Result<ChoiceTokens, E> {
                Ok(ChoiceTokens(0, 0, 0, 0))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// What one chunk says.
pub fn parse_event(data: &[u8]) -> Result<Event, EventError> {
    if data.trim_ascii() == b"[DONE]" {
        return Ok(Event {
            done: true,
            ..Event::default()
        });
    }
    let chunk: Chunk = parse_json(data)?;
    if let Some(error) = &chunk.error {
        return Err(EventError::Server(error_message(error)));
    }
    // A chunk with choices and usage is vLLM's `continuous_usage_stats`: its completion tokens
    // count every token generated so far, so the chunk's own tokens are the difference.
    let so_far = chunk
        .usage
        .as_ref()
        .filter(|_| chunk.choices.1 > 0)
        .and_then(|u| u.completion_tokens);
    let counters = chunk.usage.map_or_else(Counters::default, |u| Counters {
        prompt_tokens: u.prompt_tokens,
        cached_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
        output_tokens: u.completion_tokens,
    });
    let server = match (chunk.metrics, chunk.timings) {
        (Some(Present), _) => Some(server_timings::vllm(data)),
        (None, Some(Present)) => Some(server_timings::llama(data)),
        (None, None) => None,
    };
    Ok(Event {
        tokens: chunk.choices.0,
        done: false,
        counters,
        so_far,
        reasoning: chunk.choices.2 > 0 && chunk.choices.2 == chunk.choices.0,
        server,
        finished: chunk.choices.3 > 0,
    })
}

/// A chunk's generated text, answer and reasoning, as `text_of` reads it.
#[derive(Deserialize)]
struct TextChunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<TextChoice<'a>>,
}

#[derive(Deserialize)]
struct TextChoice<'a> {
    #[serde(borrow)]
    text: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    delta: Option<TextDelta<'a>>,
}

#[derive(Deserialize)]
struct TextDelta<'a> {
    #[serde(borrow)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    reasoning_content: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    reasoning: Option<std::borrow::Cow<'a, str>>,
}

/// Appends a chunk's generated text (reasoning, then answer, of every choice) to `out`. Read
/// only when the client counts tokens itself: the stream loop never needs the text otherwise.
pub fn text_of(data: &[u8], out: &mut String) {
    let Some(chunk) = super::from_json::<TextChunk<'_>>(data) else {
        return;
    };
    for choice in chunk.choices {
        if let Some(delta) = choice.delta {
            for part in [delta.reasoning_content, delta.reasoning, delta.content]
                .into_iter()
                .flatten()
            {
                out.push_str(&part);
            }
        }
        if let Some(text) = choice.text {
            out.push_str(&text);
        }
    }
}

/// Appends a chunk's answer text (of its first choice, reasoning left out) to `out`: a session's
/// answer as generated, sent back in its history.
pub fn answer_of(data: &[u8], out: &mut String) {
    let Some(chunk) = super::from_json::<TextChunk<'_>>(data) else {
        return;
    };
    if let Some(choice) = chunk.choices.into_iter().next() {
        if let Some(content) = choice.delta.and_then(|d| d.content) {
            out.push_str(&content);
        }
        if let Some(text) = choice.text {
            out.push_str(&text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_text_leaves_reasoning_out() {
        let mut out = String::new();
        answer_of(
            br#"{"choices":[{"delta":{"reasoning_content":"hmm","content":"Hi"}}]}"#,
            &mut out,
        );
        answer_of(br#"{"choices":[{"text":" there"}]}"#, &mut out);
        answer_of(b"not json", &mut out);
        assert_eq!(out, "Hi there");
    }

    fn tokens(data: &str) -> u32 {
        parse_event(data.as_bytes()).expect("valid chunk").tokens
    }

    #[test]
    fn role_only_and_empty_chunks_carry_no_token() {
        assert_eq!(
            tokens(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#),
            0
        );
        assert_eq!(tokens(r#"{"choices":[{"delta":{"content":""}}]}"#), 0);
        assert_eq!(tokens(r#"{"choices":[{"delta":{"content":" a"}}]}"#), 1);
        assert_eq!(
            tokens(r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#),
            1
        );
        assert_eq!(
            tokens(r#"{"choices":[{"text":" x","finish_reason":null}]}"#),
            1
        );
        assert_eq!(tokens(r#"{"choices":[],"usage":null}"#), 0);
    }

    #[test]
    fn usage_chunk_and_done() {
        let data = br#"{"choices":[],"usage":{"prompt_tokens":512,"completion_tokens":32,
            "total_tokens":544,"prompt_tokens_details":{"cached_tokens":0}}}"#;
        let event = parse_event(data).expect("valid");
        let expected = Counters {
            prompt_tokens: Some(512),
            cached_tokens: Some(0),
            output_tokens: Some(32),
        };
        assert_eq!(event.counters, expected);
        assert!(parse_event(b"[DONE]").expect("valid").done);
    }

    #[test]
    fn the_final_usage_chunk_carries_the_server_s_timings_apart_from_its_counters() {
        // vLLM with --enable-per-request-metrics.
        let vllm = br#"{"id":"cmpl-x","choices":[],"usage":{"prompt_tokens":8,
            "completion_tokens":4,"prompt_tokens_details":{"cached_tokens":0}},
            "metrics":{"time_to_first_token_ms":20.0,"generation_time_ms":30.0,
            "queue_time_ms":1.0,"mean_itl_ms":10.0}}"#;
        let event = parse_event(vllm).expect("valid");
        assert_eq!(event.counters.output_tokens, Some(4));
        let timings = event.server.and_then(|s| s.timings).expect("timings");
        assert_eq!(timings.source, crate::record::TimingSource::Vllm);
        assert_eq!(timings.ttft_ms, Some(21.0));
        // llama-server on /v1/completions: usage and timings on the finish chunk.
        let llama = br#"{"choices":[{"text":"","index":0,"finish_reason":"length"}],
            "usage":{"completion_tokens":3,"prompt_tokens":4},
            "timings":{"cache_n":0,"prompt_n":4,"prompt_ms":15.5,"predicted_n":3,
            "predicted_ms":14.3}}"#;
        let event = parse_event(llama).expect("valid");
        assert!(event.finished, "its finish_reason said");
        let timings = event.server.and_then(|s| s.timings).expect("timings");
        assert_eq!(timings.source, crate::record::TimingSource::LlamaServer);
        assert_eq!(timings.decode_ms, Some(14.3));
        let open = parse_event(br#"{"choices":[{"text":" a","finish_reason":null}]}"#);
        assert_eq!(open.map(|e| e.finished), Ok(false));
        // Token chunks carry none, and a number no f64 holds fails the timings, not the chunk.
        assert_eq!(
            parse_event(br#"{"choices":[{"text":" a"}]}"#).map(|e| e.server),
            Ok(None)
        );
        let huge = br#"{"choices":[],"usage":{"completion_tokens":3},
            "metrics":{"queue_time_ms":1e400}}"#;
        let event = parse_event(huge).expect("the chunk still reads");
        assert_eq!(event.counters.output_tokens, Some(3));
        let server = event.server.expect("a report");
        assert_eq!((server.timings, server.notes.len()), (None, 1));
    }

    #[test]
    fn error_chunks_are_server_errors() {
        let e = parse_event(br#"{"error":{"message":"context length exceeded","code":400}}"#);
        assert_eq!(e, Err(EventError::Server("context length exceeded".into())));
    }

    #[test]
    fn chat_body_wraps_the_prompt_in_a_user_message() {
        let prompt = Prompt::Text("hello".into());
        let request = crate::api::test_request(&prompt);
        let b = body(Api::Chat, &request);
        assert_eq!(b["messages"][0]["content"], "hello");
        assert_eq!(b["max_tokens"], 8);
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert!(b["stream_options"].get("continuous_usage_stats").is_none());
        assert_eq!(b["model"], "m");
        assert!(b.get("prompt").is_none());
        let b = body(
            Api::Completions,
            &GenerationRequest {
                usage_per_chunk: true,
                ..request
            },
        );
        assert_eq!(b["stream_options"]["continuous_usage_stats"], true);
    }

    #[test]
    fn chunk_text_is_read_for_the_client_tokenizer() {
        let mut out = String::new();
        text_of(br#"{"choices":[{"text":" a b\n"}]}"#, &mut out);
        text_of(
            br#"{"choices":[{"delta":{"reasoning_content":" think"}}]}"#,
            &mut out,
        );
        text_of(
            br#"{"choices":[{"delta":{"content":" c","role":null}}]}"#,
            &mut out,
        );
        text_of(b"not json", &mut out);
        assert_eq!(out, " a b\n think c");
    }

    #[test]
    fn usage_on_every_chunk_counts_the_chunk_s_tokens() {
        // vLLM with continuous_usage_stats: the usage of a chunk with choices counts all tokens
        // so far, including those whose text decodes to nothing.
        let chunk = br#"{"choices":[{"index":0,"text":"","finish_reason":null}],
            "usage":{"prompt_tokens":8,"completion_tokens":12,"total_tokens":20}}"#;
        let event = parse_event(chunk).expect("valid");
        assert_eq!((event.tokens, event.so_far), (0, Some(12)));
        // The final usage chunk has no choices: it is the total, not a chunk's tokens.
        let last = br#"{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":16}}"#;
        assert_eq!(parse_event(last).expect("valid").so_far, None);
    }

    #[test]
    fn a_gateway_s_final_usage_on_an_empty_choice_is_the_total_not_tokens() {
        // LiteLLM's proxy moves the final usage onto a chunk with one empty choice; llmload did
        // not ask for usage per chunk, so it adds no token, even when the text of earlier chunks
        // carried fewer tokens than the total (two tokens of one character in one chunk).
        for last in [
            &br#"{"choices":[{"index":0}],"usage":{"prompt_tokens":4,"completion_tokens":8,
                "prompt_tokens_details":{"cached_tokens":0}}}"#[..],
            br#"{"choices":[{"index":0,"delta":{}}],"usage":{"prompt_tokens":25,
                "completion_tokens":8,"prompt_tokens_details":{"cached_tokens":0}}}"#,
        ] {
            let event = parse_event(last).expect("valid");
            assert_eq!(event.tokens_after(7, false), 0);
            assert_eq!(event.counters.output_tokens, Some(8));
            assert_eq!(event.counters.cached_tokens, Some(0));
            // Asked for usage on every chunk (vLLM), the same usage counts the tokens so far.
            assert_eq!(event.tokens_after(7, true), 1);
        }
        let text = br#"{"choices":[{"index":0,"text":" a"}]}"#;
        assert_eq!(parse_event(text).expect("valid").tokens_after(3, false), 1);
    }

    #[test]
    fn the_body_says_whether_usage_per_chunk_was_asked_for() {
        let prompt = Prompt::Tokens(vec![1, 2]);
        let request = GenerationRequest {
            prompt: &prompt,
            output_tokens: 8,
            slot: None,
            model: None,
            cache_prompt: false,
            usage_per_chunk: false,
            extra: None,
        };
        let asked = |r: &GenerationRequest<'_>| {
            super::super::Body::from_json(&body(Api::Completions, r)).usage_per_chunk
        };
        assert!(!asked(&request));
        assert!(asked(&GenerationRequest {
            usage_per_chunk: true,
            ..request
        }));
    }
}
