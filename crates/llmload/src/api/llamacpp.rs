//! llama.cpp's native API: `POST /completion` with a token-array prompt.
//!
//! Each streamed event carries one generated token (`content`, and its ID in `tokens` because we
//! ask for `return_tokens`); the final event has `stop: true` and the `timings` counters that
//! verify the prompt was processed in full (`prompt_n`) and not taken from the cache (`cache_n`),
//! and the server's own timings of the response (`prompt_ms`, `predicted_ms`).

use super::decode::{Count, NonEmpty};
use super::request::GenerationRequest;
use super::server_timings;
use super::{error_message, parse_json, Counters, Event, EventError, Prompt};
use serde::Deserialize;
use serde_json::json;

/// The body of a streaming `/completion` request: fixed output length, cache off.
pub fn body(request: &GenerationRequest<'_>) -> serde_json::Value {
    let prompt = match request.prompt {
        Prompt::Tokens(ids) => json!(ids),
        Prompt::Text(text) => json!(text),
        Prompt::Messages(messages) => json!(super::joined(messages)),
    };
    json!({
        "prompt": prompt,
        "n_predict": request.output_tokens,
        "ignore_eos": true,
        "cache_prompt": request.cache_prompt,
        "id_slot": request.slot.map_or(-1, i64::from),
        "stream": true,
        "return_tokens": true,
    })
}

/// Appends an event's generated text (`content`) to `out`: a session's answer as generated.
pub fn answer_of(data: &[u8], out: &mut String) {
    #[derive(Deserialize)]
    struct Content<'a> {
        #[serde(borrow)]
        content: Option<std::borrow::Cow<'a, str>>,
    }
    if let Ok(Content {
        content: Some(text),
    }) = serde_json::from_slice(data)
    {
        out.push_str(&text);
    }
}

#[derive(Deserialize)]
struct StreamEvent {
    content: Option<NonEmpty>,
    tokens: Option<Count>,
    #[serde(default)]
    stop: bool,
    tokens_evaluated: Option<u32>,
    tokens_predicted: Option<u32>,
    timings: Option<Timings>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[expect(
    clippy::struct_field_names,
    reason = "the field names of llama-server's `timings` object"
)]
struct Timings {
    prompt_n: Option<u32>,
    cache_n: Option<u32>,
    predicted_n: Option<u32>,
}

/// What one `/completion` event says.
pub fn parse_event(data: &[u8]) -> Result<Event, EventError> {
    let event: StreamEvent = parse_json(data)?;
    if let Some(error) = &event.error {
        return Err(EventError::Server(error_message(error)));
    }
    let tokens = match (event.tokens, event.content) {
        (Some(Count(n)), _) => n,
        (None, Some(NonEmpty(true))) => 1,
        _ => 0,
    };
    let mut counters = Counters::default();
    if event.stop {
        let timings = event.timings.as_ref();
        let prompt_n = timings.and_then(|t| t.prompt_n);
        let cache_n = timings.and_then(|t| t.cache_n);
        counters = Counters {
            prompt_tokens: event
                .tokens_evaluated
                .or_else(|| prompt_n?.checked_add(cache_n.unwrap_or(0))),
            cached_tokens: cache_n,
            output_tokens: timings
                .and_then(|t| t.predicted_n)
                .or(event.tokens_predicted),
        };
    }
    Ok(Event {
        tokens,
        done: event.stop,
        counters,
        so_far: None,
        reasoning: false,
        server: (event.stop && event.timings.is_some()).then(|| server_timings::llama(data)),
        finished: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_events_count_ids_even_when_text_is_empty() {
        let e = parse_event(br#"{"index":0,"content":"","tokens":[236],"stop":false}"#);
        assert_eq!(e.map(|e| (e.tokens, e.done)), Ok((1, false)));
        let e = parse_event(br#"{"content":" hi","stop":false}"#);
        assert_eq!(e.map(|e| e.tokens), Ok(1));
        let e = parse_event(br#"{"content":"","stop":false}"#);
        assert_eq!(e.map(|e| e.tokens), Ok(0));
    }

    #[test]
    fn final_event_reports_counters() {
        let data =
            br#"{"content":"","tokens":[],"stop":true,"tokens_evaluated":128,"tokens_predicted":32,
            "timings":{"cache_n":0,"prompt_n":128,"predicted_n":32,"prompt_ms":1.5}}"#;
        let event = parse_event(data).expect("valid");
        assert!(event.done);
        assert_eq!(event.tokens, 0);
        let expected = Counters {
            prompt_tokens: Some(128),
            cached_tokens: Some(0),
            output_tokens: Some(32),
        };
        assert_eq!(event.counters, expected);
        let timings = event
            .server
            .and_then(|s| s.timings)
            .expect("server timings");
        assert_eq!((timings.prefill_ms, timings.decode_ms), (Some(1.5), None));
        // Token events carry no timings.
        let token = parse_event(br#"{"content":" a","stop":false}"#).expect("valid");
        assert_eq!(token.server, None);
    }

    #[test]
    fn prompt_count_falls_back_to_timings() {
        let data = br#"{"stop":true,"timings":{"cache_n":28,"prompt_n":100,"predicted_n":4}}"#;
        let c = parse_event(data).expect("valid").counters;
        assert_eq!((c.prompt_tokens, c.cached_tokens), (Some(128), Some(28)));
    }

    #[test]
    fn errors_and_garbage_are_reported() {
        let e = parse_event(br#"{"error":{"code":500,"message":"slot unavailable"}}"#);
        assert_eq!(e, Err(EventError::Server("slot unavailable".into())));
        assert!(matches!(
            parse_event(br#"{"content": tru"#),
            Err(EventError::Malformed(_))
        ));
    }

    #[test]
    fn body_asks_for_fixed_length_uncached_output() {
        let prompt = Prompt::Tokens(vec![1, 2, 3]);
        let request = GenerationRequest {
            prompt: &prompt,
            output_tokens: 16,
            slot: Some(0),
            model: None,
            cache_prompt: false,
            usage_per_chunk: false,
            extra: None,
        };
        let b = body(&request);
        assert_eq!(b["prompt"], json!([1, 2, 3]));
        assert_eq!(b["n_predict"], 16);
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["cache_prompt"], false);
        assert_eq!(b["id_slot"], 0);
    }
}
