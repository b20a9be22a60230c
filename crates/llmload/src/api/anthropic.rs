//! Anthropic's Messages API: `POST /v1/messages` (llama-server, vLLM, `LiteLLM` and Anthropic's
//! own), its stream a sequence of typed events.
//!
//! `message_start` carries the prompt's counts (`usage.input_tokens`, plus the cached parts
//! `cache_read_input_tokens` and `cache_creation_input_tokens`, which Anthropic counts apart from
//! `input_tokens`); each `content_block_delta` carries generated text (`text_delta`), reasoning
//! (`thinking_delta`) or a tool call's arguments (`input_json_delta`); `message_delta` carries the
//! final `usage.output_tokens`; `message_stop` ends the response. An `error` event ends it with
//! the server's message. `ping`, `content_block_start` and `content_block_stop` carry nothing.

use super::decode::{NonEmpty, Present};
use super::request::GenerationRequest;
use super::server_timings;
use super::{error_message, parse_json, Counters, Event, EventError, Prompt};
use serde::Deserialize;
use serde_json::json;
use std::borrow::Cow;

/// The API version sent in `anthropic-version` unless `--header` gives another.
pub const VERSION: &str = "2023-06-01";

/// The body of a streaming request: the prompt as one user message (a conversation's system
/// messages go in `system`, as the API wants them), `max_tokens` the output asked for, and the
/// fields that fix the output's length and keep the prompt out of the cache on servers that
/// honour them (`ignore_eos`, `min_tokens`, `cache_prompt`, as on the other APIs).
pub fn body(request: &GenerationRequest<'_>) -> serde_json::Value {
    let mut body = json!({
        "max_tokens": request.output_tokens,
        "min_tokens": request.output_tokens,
        "ignore_eos": true,
        "stream": true,
        "cache_prompt": request.cache_prompt,
    });
    match request.prompt {
        Prompt::Text(text) => body["messages"] = json!([{"role": "user", "content": text}]),
        // Token IDs are no Messages prompt: the prompt sources give this API text.
        Prompt::Tokens(_) => body["messages"] = json!([{"role": "user", "content": ""}]),
        Prompt::Messages(messages) => {
            let system: Vec<&str> = messages
                .iter()
                .filter(|m| m.role == "system")
                .map(|m| m.content.as_str())
                .collect();
            if !system.is_empty() {
                body["system"] = json!(system.join("\n\n"));
            }
            body["messages"] = json!(messages
                .iter()
                .filter(|m| m.role != "system")
                .collect::<Vec<_>>());
        }
    }
    if let Some(model) = request.model {
        body["model"] = json!(model);
    }
    body
}

#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    delta: Option<Delta>,
    message: Option<MessageStart>,
    usage: Option<Usage>,
    error: Option<serde_json::Value>,
    /// llama-server's `timings`, where it adds them (read apart).
    timings: Option<Present>,
}

#[derive(Deserialize)]
struct Delta {
    text: Option<NonEmpty>,
    thinking: Option<NonEmpty>,
    partial_json: Option<NonEmpty>,
}

#[derive(Deserialize)]
struct MessageStart {
    usage: Option<Usage>,
}

#[derive(Deserialize)]
#[expect(
    clippy::struct_field_names,
    reason = "the API's own field names, read as they are"
)]
struct Usage {
    input_tokens: Option<u32>,
    output_tokens: Option<u32>,
    cache_read_input_tokens: Option<u32>,
    cache_creation_input_tokens: Option<u32>,
}

impl Usage {
    /// The prompt's counts: every prompt token (Anthropic counts the cached and cache-written
    /// ones apart from `input_tokens`), and those read from the cache.
    fn prompt(&self) -> Counters {
        let prompt = self.input_tokens.map(|n| {
            n.saturating_add(self.cache_read_input_tokens.unwrap_or(0))
                .saturating_add(self.cache_creation_input_tokens.unwrap_or(0))
        });
        Counters {
            prompt_tokens: prompt,
            cached_tokens: self.cache_read_input_tokens.filter(|_| prompt.is_some()),
            output_tokens: None,
        }
    }
}

/// What one event says.
pub fn parse_event(data: &[u8]) -> Result<Event, EventError> {
    if data.trim_ascii() == b"[DONE]" {
        return Ok(Event {
            done: true,
            ..Event::default()
        });
    }
    let event: StreamEvent<'_> = parse_json(data)?;
    if let Some(error) = &event.error {
        return Err(EventError::Server(error_message(error)));
    }
    let mut out = Event::default();
    match event.kind.as_deref() {
        Some("message_start") => {
            // Its `output_tokens` is a placeholder (1, or 0) until `message_delta`.
            if let Some(usage) = event.message.and_then(|m| m.usage) {
                out.counters = usage.prompt();
            }
        }
        Some("content_block_delta") => {
            if let Some(delta) = event.delta {
                let nonempty = |t: Option<NonEmpty>| t.is_some_and(|t| t.0);
                let answer = nonempty(delta.text) || nonempty(delta.partial_json);
                let thought = nonempty(delta.thinking);
                out.tokens = u32::from(answer || thought);
                out.reasoning = thought && !answer;
            }
        }
        Some("message_delta") => {
            if let Some(usage) = event.usage {
                // Newer servers repeat the prompt's counts here; a count there wins.
                out.counters = usage.prompt();
                out.counters.output_tokens = usage.output_tokens;
            }
        }
        Some("message_stop") => out.done = true,
        _ => {}
    }
    if event.timings.is_some() {
        out.server = Some(server_timings::llama(data));
    }
    Ok(out)
}

#[derive(Deserialize)]
struct TextEvent<'a> {
    #[serde(borrow)]
    delta: Option<TextDelta<'a>>,
}

#[derive(Deserialize)]
struct TextDelta<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    partial_json: Option<Cow<'a, str>>,
}

/// Appends an event's generated text (reasoning, answer and tool arguments) to `out`, for the
/// client's tokenizer.
pub fn text_of(data: &[u8], out: &mut String) {
    if let Some(TextEvent { delta: Some(d) }) = super::from_json(data) {
        for part in [d.thinking, d.text, d.partial_json].into_iter().flatten() {
            out.push_str(&part);
        }
    }
}

/// Appends an event's answer text (reasoning left out) to `out`: a session's answer.
pub fn answer_of(data: &[u8], out: &mut String) {
    if let Some(TextEvent { delta: Some(d) }) = super::from_json(data) {
        if let Some(text) = d.text {
            out.push_str(&text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Message;

    fn parse(data: &str) -> Event {
        parse_event(data.as_bytes()).expect("valid event")
    }

    #[test]
    fn a_stream_s_events_count_tokens_and_carry_the_usage() {
        let start = parse(
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",
            "content":[],"model":"m","usage":{"input_tokens":20,"cache_read_input_tokens":12,
            "output_tokens":1}}}"#,
        );
        assert_eq!(
            start.counters,
            Counters {
                prompt_tokens: Some(32),
                cached_tokens: Some(12),
                output_tokens: None
            }
        );
        assert_eq!((start.tokens, start.done), (0, false));
        assert_eq!(
            parse(r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#)
                .tokens,
            0
        );
        assert_eq!(parse(r#"{"type":"ping"}"#), Event::default());
        let text = parse(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" a"}}"#,
        );
        assert_eq!((text.tokens, text.reasoning), (1, false));
        let thought = parse(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
        );
        assert_eq!((thought.tokens, thought.reasoning), (1, true));
        let tool = parse(
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a"}}"#,
        );
        assert_eq!((tool.tokens, tool.reasoning), (1, false));
        let signature = parse(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}}"#,
        );
        assert_eq!(signature.tokens, 0);
        let empty = parse(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}"#,
        );
        assert_eq!(empty.tokens, 0);
        let delta = parse(
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},
            "usage":{"output_tokens":16}}"#,
        );
        assert_eq!(delta.counters.output_tokens, Some(16));
        assert_eq!(delta.counters.prompt_tokens, None);
        assert!(!delta.done);
        assert!(parse(r#"{"type":"message_stop"}"#).done);
    }

    #[test]
    fn an_error_event_is_the_server_s_error() {
        assert_eq!(
            parse_event(
                br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            Err(EventError::Server("Overloaded".into()))
        );
        assert!(matches!(
            parse_event(b"{not json"),
            Err(EventError::Malformed(_))
        ));
    }

    #[test]
    fn the_body_puts_system_messages_apart_and_fixes_the_output() {
        let prompt = Prompt::Messages(vec![
            Message {
                role: "system".into(),
                content: "Be brief.".into(),
            },
            Message {
                role: "user".into(),
                content: "Hi".into(),
            },
        ]);
        let request = crate::api::test_request(&prompt);
        let b = body(&request);
        assert_eq!(b["system"], "Be brief.");
        assert_eq!(b["messages"], json!([{"role": "user", "content": "Hi"}]));
        assert_eq!(
            (b["max_tokens"].as_u64(), b["min_tokens"].as_u64()),
            (Some(8), Some(8))
        );
        assert_eq!(
            (b["stream"].as_bool(), b["model"].as_str()),
            (Some(true), Some("m"))
        );
        let text = Prompt::Text("hello".into());
        let b = body(&GenerationRequest {
            prompt: &text,
            ..request
        });
        assert_eq!(b["messages"], json!([{"role": "user", "content": "hello"}]));
        assert!(b.get("system").is_none());
    }

    #[test]
    fn text_and_answer_are_read_from_the_deltas() {
        let (mut text, mut answer) = (String::new(), String::new());
        for data in [
            r#"{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"hm "}}"#,
            r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            text_of(data.as_bytes(), &mut text);
            answer_of(data.as_bytes(), &mut answer);
        }
        assert_eq!((text.as_str(), answer.as_str()), ("hm Hi", "Hi"));
    }
}
