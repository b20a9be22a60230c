//! `OpenAI`'s Responses API: `POST /v1/responses` (vLLM, llama-server, `LiteLLM`), its stream a
//! sequence of typed events.
//!
//! `response.output_text.delta` carries generated text, `response.reasoning_text.delta` and
//! `response.reasoning_summary_text.delta` reasoning, `response.function_call_arguments.delta` a
//! tool call's arguments (each `delta` a string). The response ends with `response.completed`,
//! or `response.incomplete` (the normal end when `max_output_tokens` is reached), each carrying
//! `response.usage` (`input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`);
//! llama-server puts its `timings` beside the final event's response, vLLM its `metrics` in it.
//! `response.failed` and `error` end it with the server's message. The other events
//! (`response.created`, `…added`, `…done`) carry nothing measured.

use super::decode::{NonEmpty, Present};
use super::request::GenerationRequest;
use super::server_timings;
use super::{error_message, parse_json, Counters, Event, EventError, Prompt};
use serde::Deserialize;
use serde_json::json;
use std::borrow::Cow;

/// The body of a streaming request: the prompt as `input` (a conversation as its messages),
/// `max_output_tokens` the output asked for, nothing stored on the server (`store: false`), and
/// the fields that fix the output's length and keep the prompt out of the cache on servers that
/// honour them (`ignore_eos`, `min_tokens`, `cache_prompt`).
pub fn body(request: &GenerationRequest<'_>) -> serde_json::Value {
    let input = match request.prompt {
        Prompt::Text(text) => json!([{"role": "user", "content": text}]),
        // Token IDs are no Responses prompt: the prompt sources give this API text.
        Prompt::Tokens(_) => json!([{"role": "user", "content": ""}]),
        Prompt::Messages(messages) => json!(messages),
    };
    let mut body = json!({
        "input": input,
        "max_output_tokens": request.output_tokens,
        "min_tokens": request.output_tokens,
        "ignore_eos": true,
        "stream": true,
        "store": false,
        "cache_prompt": request.cache_prompt,
    });
    if let Some(model) = request.model {
        body["model"] = json!(model);
    }
    body
}

#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    delta: Option<NonEmpty>,
    response: Option<Response>,
    /// An `error` event's message (at the top level) or its object.
    message: Option<serde_json::Value>,
    error: Option<serde_json::Value>,
    /// llama-server's `timings`, beside the final event's response (read apart).
    timings: Option<Present>,
}

#[derive(Deserialize)]
struct Response {
    usage: Option<Usage>,
    error: Option<serde_json::Value>,
    /// llama-server's `timings`, where it adds them (read apart).
    timings: Option<Present>,
    /// vLLM's per-request `metrics`, where it adds them (read apart).
    metrics: Option<Present>,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<u32>,
    output_tokens: Option<u32>,
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u32>,
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
    let kind = event.kind.as_deref().unwrap_or("");
    if kind == "error" || kind == "response.failed" || event.error.is_some() {
        let said = event
            .error
            .or_else(|| event.response.and_then(|r| r.error))
            .or(event.message)
            .map_or_else(|| "the response failed".to_owned(), |e| error_message(&e));
        return Err(EventError::Server(said));
    }
    let mut out = Event::default();
    match kind {
        "response.output_text.delta" | "response.function_call_arguments.delta" => {
            out.tokens = u32::from(event.delta.is_some_and(|d| d.0));
        }
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            out.tokens = u32::from(event.delta.is_some_and(|d| d.0));
            out.reasoning = out.tokens > 0;
        }
        "response.completed" | "response.incomplete" => {
            out.done = true;
            if let Some(response) = event.response {
                if let Some(u) = response.usage {
                    out.counters = Counters {
                        prompt_tokens: u.input_tokens,
                        cached_tokens: u.input_tokens_details.and_then(|d| d.cached_tokens),
                        output_tokens: u.output_tokens,
                    };
                }
                out.server = timings(data, response.metrics, response.timings);
            }
            if out.server.is_none() && event.timings.is_some() {
                out.server = Some(server_timings::llama(data));
            }
        }
        _ => {}
    }
    Ok(out)
}

/// The server's timings of a final event, where its response carries them.
fn timings(
    data: &[u8],
    metrics: Option<Present>,
    llama: Option<Present>,
) -> Option<server_timings::Reported> {
    #[derive(Deserialize)]
    struct Carrier<'a> {
        #[serde(borrow)]
        response: &'a serde_json::value::RawValue,
    }
    if metrics.is_none() && llama.is_none() {
        return None;
    }
    let inner = serde_json::from_slice::<Carrier<'_>>(data).ok()?;
    let inner = inner.response.get().as_bytes();
    Some(if metrics.is_some() {
        server_timings::vllm(inner)
    } else {
        server_timings::llama(inner)
    })
}

#[derive(Deserialize)]
struct TextEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    delta: Option<Cow<'a, str>>,
}

/// Appends an event's generated text (reasoning, answer and tool arguments) to `out`, for the
/// client's tokenizer.
pub fn text_of(data: &[u8], out: &mut String) {
    if let Some(TextEvent {
        kind: Some(_),
        delta: Some(d),
    }) = super::from_json(data)
    {
        out.push_str(&d);
    }
}

/// Appends an event's answer text (reasoning left out) to `out`: a session's answer.
pub fn answer_of(data: &[u8], out: &mut String) {
    if let Some(TextEvent {
        kind: Some(kind),
        delta: Some(d),
    }) = super::from_json(data)
    {
        if kind == "response.output_text.delta" {
            out.push_str(&d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(data: &str) -> Event {
        parse_event(data.as_bytes()).expect("valid event")
    }

    #[test]
    fn deltas_carry_tokens_and_the_final_event_the_usage() {
        assert_eq!(
            parse(
                r#"{"type":"response.created","response":{"id":"r","status":"in_progress","usage":null}}"#
            ),
            Event::default()
        );
        let text = parse(
            r#"{"type":"response.output_text.delta","item_id":"m","output_index":0,
            "content_index":0,"delta":" a","sequence_number":4}"#,
        );
        assert_eq!((text.tokens, text.reasoning), (1, false));
        let thought = parse(r#"{"type":"response.reasoning_text.delta","delta":"hm"}"#);
        assert_eq!((thought.tokens, thought.reasoning), (1, true));
        assert_eq!(
            parse(r#"{"type":"response.output_text.delta","delta":""}"#).tokens,
            0
        );
        assert_eq!(
            parse(r#"{"type":"response.output_text.done","text":"a b c"}"#).tokens,
            0
        );
        for end in ["response.completed", "response.incomplete"] {
            let done = parse(&format!(
                r#"{{"type":"{end}","response":{{"id":"r","status":"x","usage":{{
                "input_tokens":64,"input_tokens_details":{{"cached_tokens":0}},
                "output_tokens":16,"output_tokens_details":{{"reasoning_tokens":0}},
                "total_tokens":80}}}}}}"#
            ));
            assert!(done.done, "{end}");
            assert_eq!(
                done.counters,
                Counters {
                    prompt_tokens: Some(64),
                    cached_tokens: Some(0),
                    output_tokens: Some(16)
                }
            );
            assert_eq!(done.server, None);
        }
    }

    #[test]
    fn failures_are_the_server_s_errors() {
        assert_eq!(
            parse_event(br#"{"type":"error","code":"x","message":"bad input","param":null}"#),
            Err(EventError::Server("bad input".into()))
        );
        assert_eq!(
            parse_event(
                br#"{"type":"response.failed","response":{"status":"failed",
                "error":{"code":"server_error","message":"out of memory"}}}"#
            ),
            Err(EventError::Server("out of memory".into()))
        );
        assert_eq!(
            parse_event(br#"{"type":"response.failed","response":{"status":"failed"}}"#),
            Err(EventError::Server("the response failed".into()))
        );
    }

    #[test]
    fn the_server_s_timings_are_read_from_the_final_response() {
        let vllm = br#"{"type":"response.completed","response":{"usage":{"input_tokens":8,
            "output_tokens":4},"metrics":{"time_to_first_token_ms":20.0,
            "generation_time_ms":30.0,"queue_time_ms":1.0}}}"#;
        let timings = parse_event(vllm)
            .expect("valid")
            .server
            .and_then(|s| s.timings)
            .expect("timings");
        assert_eq!(timings.source, crate::record::TimingSource::Vllm);
        assert_eq!(timings.ttft_ms, Some(21.0));
    }

    #[test]
    fn llama_server_s_timings_beside_the_response_are_read_too() {
        let llama = br#"{"type":"response.completed","response":{"status":"completed",
            "usage":{"input_tokens":26,"output_tokens":3,"total_tokens":29,
            "input_tokens_details":{"cached_tokens":0}}},"timings":{"cache_n":0,"prompt_n":26,
            "prompt_ms":258.6,"predicted_n":3,"predicted_ms":423.4}}"#;
        let event = parse_event(llama).expect("valid");
        assert_eq!(event.counters.prompt_tokens, Some(26));
        let timings = event.server.and_then(|s| s.timings).expect("timings");
        assert_eq!(timings.source, crate::record::TimingSource::LlamaServer);
        assert_eq!(timings.decode_ms, Some(423.4));
    }

    #[test]
    fn the_body_asks_for_a_fixed_output_and_stores_nothing() {
        let prompt = Prompt::Text("hello".into());
        let b = body(&crate::api::test_request(&prompt));
        assert_eq!(b["input"], json!([{"role": "user", "content": "hello"}]));
        assert_eq!(b["max_output_tokens"], 8);
        assert_eq!(
            (b["store"].as_bool(), b["stream"].as_bool()),
            (Some(false), Some(true))
        );
        assert!(b.get("messages").is_none() && b.get("max_tokens").is_none());
    }

    #[test]
    fn text_and_answer_are_read_from_the_deltas() {
        let (mut text, mut answer) = (String::new(), String::new());
        for data in [
            r#"{"type":"response.reasoning_text.delta","delta":"hm "}"#,
            r#"{"type":"response.output_text.delta","delta":"Hi"}"#,
            r#"{"type":"response.completed","response":{}}"#,
        ] {
            text_of(data.as_bytes(), &mut text);
            answer_of(data.as_bytes(), &mut answer);
        }
        assert_eq!((text.as_str(), answer.as_str()), ("hm Hi", "Hi"));
    }
}
