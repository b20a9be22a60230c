//! The APIs llmload speaks: request bodies and event meanings, one adapter per API.
//!
//! Everything here is pure but the wire: `client` does the I/O (over `http1` and `conn`, with
//! `tls` for `https://`), `sse` splits the byte stream into events, and the adapters say what
//! each event's data means (how many generated tokens it carries, whether it ends the response,
//! which counters the server reported).

pub mod anthropic;
pub mod client;
pub mod conn;
mod decode;
pub mod error_body;
pub mod fetch;
pub mod http1;
pub mod llamacpp;
pub mod openai;
pub mod pooling;
pub mod replicas;
mod request;
pub mod responses;
pub mod server_timings;
pub mod sse;
pub mod tls;
pub mod token_events;

#[cfg(test)]
pub(crate) use request::test_request;
pub use request::GenerationRequest;
use serde::{Deserialize, Serialize};

/// Which API to drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// llama.cpp's native `POST /completion`.
    Llamacpp,
    /// `OpenAI` `POST /v1/completions` (vLLM, `SGLang`, llama-server).
    Completions,
    /// `OpenAI` `POST /v1/chat/completions`.
    Chat,
    /// Anthropic's Messages API, `POST /v1/messages`.
    Messages,
    /// `OpenAI`'s Responses API, `POST /v1/responses`.
    Responses,
    /// Embeddings, `POST /v1/embeddings`: a batch of inputs, one vector each, not streamed.
    Embeddings,
    /// Rerank, `POST /v1/rerank`: a query and a batch of documents, one score each, not
    /// streamed.
    Rerank,
}

impl Api {
    /// The generation endpoint's path.
    pub fn path(self) -> &'static str {
        match self {
            Api::Llamacpp => "/completion",
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
            Api::Messages => "/v1/messages",
            Api::Responses => "/v1/responses",
            Api::Embeddings => "/v1/embeddings",
            Api::Rerank => "/v1/rerank",
        }
    }

    /// Whether prompts go out as token IDs (otherwise as text; a rerank's documents are texts).
    pub fn takes_token_ids(self) -> bool {
        !self.takes_messages() && self != Api::Rerank
    }

    /// Whether the API pools its inputs and answers once (embeddings, rerank): no tokens are
    /// generated and nothing is streamed.
    pub fn is_pooling(self) -> bool {
        matches!(self, Api::Embeddings | Api::Rerank)
    }

    /// The JSON body of a pooling request of `request`'s inputs (embeddings, rerank); `None`
    /// for the generation APIs.
    pub fn pooling_body(
        self,
        request: &pooling::PoolingRequest<'_>,
        extra: Option<&serde_json::Value>,
    ) -> Option<serde_json::Value> {
        let mut body = match self {
            Api::Embeddings => pooling::embeddings_body(request),
            Api::Rerank => pooling::rerank_body(request),
            _ => return None,
        };
        if let Some(extra) = extra {
            merge(&mut body, extra);
        }
        Some(body)
    }

    /// Whether the prompt goes out as chat messages, which the server wraps in its chat template
    /// (chat completions, Messages, Responses).
    pub fn takes_messages(self) -> bool {
        matches!(self, Api::Chat | Api::Messages | Api::Responses)
    }

    /// The JSON body of a streaming generation request.
    pub fn body(self, request: &GenerationRequest<'_>) -> serde_json::Value {
        let mut body = match self {
            Api::Llamacpp => llamacpp::body(request),
            Api::Completions | Api::Chat => openai::body(self, request),
            Api::Messages => anthropic::body(request),
            Api::Responses => responses::body(request),
            Api::Embeddings | Api::Rerank => {
                // A probe or a single input: a batch of one.
                let inputs = std::slice::from_ref(request.prompt);
                let pooled = pooling::PoolingRequest {
                    inputs,
                    model: request.model,
                };
                return self
                    .pooling_body(&pooled, request.extra)
                    .unwrap_or_default();
            }
        };
        if let Some(extra) = request.extra {
            merge(&mut body, extra);
        }
        body
    }

    /// What one event's data says.
    pub fn parse_event(self, data: &[u8]) -> Result<Event, EventError> {
        match self {
            Api::Llamacpp => llamacpp::parse_event(data),
            Api::Completions | Api::Chat => openai::parse_event(data),
            Api::Messages => anthropic::parse_event(data),
            Api::Responses => responses::parse_event(data),
            // Answered once, never as events ([`pooling::parse_answer`]).
            Api::Embeddings | Api::Rerank => Err(EventError::Malformed(
                "a pooling API answers once, not with events".into(),
            )),
        }
    }

    /// Appends the generated text an event carries to `out` (the `OpenAI` APIs; llama.cpp's
    /// native API names every token, so its text is never counted by the client).
    pub fn event_text(self, data: &[u8], out: &mut String) {
        match self {
            Api::Llamacpp | Api::Embeddings | Api::Rerank => {}
            Api::Completions | Api::Chat => openai::text_of(data, out),
            Api::Messages => anthropic::text_of(data, out),
            Api::Responses => responses::text_of(data, out),
        }
    }

    /// Appends the answer text an event carries to `out` (reasoning left out): a session's
    /// answer, kept to be sent back in its history.
    pub fn answer_text(self, data: &[u8], out: &mut String) {
        match self {
            Api::Llamacpp => llamacpp::answer_of(data, out),
            Api::Completions | Api::Chat => openai::answer_of(data, out),
            Api::Messages => anthropic::answer_of(data, out),
            Api::Responses => responses::answer_of(data, out),
            Api::Embeddings | Api::Rerank => {}
        }
    }

    /// The API's name as written on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            Api::Llamacpp => "llamacpp",
            Api::Completions => "completions",
            Api::Chat => "chat",
            Api::Messages => "messages",
            Api::Responses => "responses",
            Api::Embeddings => "embeddings",
            Api::Rerank => "rerank",
        }
    }
}

/// A prompt as it goes on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    /// Token IDs of the server's own vocabulary.
    Tokens(Vec<u32>),
    /// Text (chat messages, or servers without a tokenizer endpoint).
    Text(String),
    /// A dataset's conversation: messages on the chat API, their texts joined by blank lines on
    /// the others.
    Messages(Vec<Message>),
}

/// One chat message.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The message's text.
    pub content: String,
}

/// A conversation's texts joined by blank lines.
pub fn joined(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A request body, serialised once when the request is prepared: what waits for its arrival
/// or stays with its stream is the bytes, not a JSON tree (a token array as a tree takes about
/// eight times the room).
#[derive(Clone, Debug)]
pub struct Body {
    /// The JSON body.
    pub json: bytes::Bytes,
    /// Output tokens asked for (sizes the stream's timestamp buffer).
    pub output_tokens: u32,
    /// Usage on every chunk was asked for (`stream_options.continuous_usage_stats`): only then
    /// does the usage of a chunk with choices count the tokens so far.
    pub usage_per_chunk: bool,
    /// Keep the answer's text (a session's turn whose history takes the answer as generated).
    pub keep_answer: bool,
    /// The ids the request carries in its headers; `None` sends none.
    pub id: Option<RequestId>,
    /// `--cancel-after`: where the client abandons the stream; `None` reads it to its end.
    pub cancel_after: Option<crate::record::CancelAfter>,
    /// A pooling API (embeddings, rerank): the inputs the body carries, one result due for
    /// each; 0 for generation.
    pub inputs: u32,
    /// The attempt's session this request belongs to (sessions, session graphs): the key of
    /// `--balance session-sticky` and the value of `--session-header`.
    pub session: Option<u64>,
}

/// The value a session's requests carry in `--session-header`: the attempt's session id.
pub fn session_key(session: u64) -> String {
    format!("session-{session}")
}

/// The ids one generation request carries in its headers, so that it can be found in the
/// server's logs and traces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestId {
    /// The `X-Request-Id` value, unique within the attempt.
    pub id: String,
    /// A W3C `traceparent` value (`--traceparent`).
    pub traceparent: Option<String>,
}

impl Body {
    /// Serialises `value`, a body made by [`Api::body`].
    pub fn from_json(value: &serde_json::Value) -> Body {
        let output_tokens = ["max_tokens", "max_output_tokens", "n_predict"]
            .iter()
            .find_map(|key| value.get(*key)?.as_u64())
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
        let usage_per_chunk = value["stream_options"]["continuous_usage_stats"] == true;
        // A `Value` always serialises (its map keys are strings).
        let json = serde_json::to_vec(value).unwrap_or_default();
        Body {
            json: json.into(),
            output_tokens,
            usage_per_chunk,
            keep_answer: false,
            id: None,
            cancel_after: None,
            inputs: 0,
            session: None,
        }
    }

    /// Serialises `value`, a pooling body of `inputs` inputs made by [`Api::pooling_body`].
    pub fn pooling(value: &serde_json::Value, inputs: u32) -> Body {
        Body {
            inputs,
            ..Body::from_json(value)
        }
    }
}

/// Fields of a generation body that `--extra-body` may not set: llmload sets them to keep the
/// prompt and the output length what the run asks for.
pub const RESERVED_FIELDS: [&str; 12] = [
    "prompt",
    "messages",
    "input",
    "documents",
    "query",
    "top_n",
    "max_output_tokens",
    "stream",
    "max_tokens",
    "max_completion_tokens",
    "n_predict",
    "min_tokens",
];

/// Fields llmload adds to a generation body beyond the API's own, to fix the output length and
/// keep the cache out (and ask for usage): engines' extensions, which a strict server refuses
/// (`--drop-field` leaves them out).
pub const ENGINE_FIELDS: [&str; 4] = ["ignore_eos", "min_tokens", "cache_prompt", "stream_options"];

/// Of [`ENGINE_FIELDS`], those without which the server may stop before the asked length.
pub const LENGTH_FIELDS: [&str; 2] = ["ignore_eos", "min_tokens"];

/// Removes the top-level fields `names` from `body`.
pub fn drop_fields(body: &mut serde_json::Value, names: &[String]) {
    if let Some(fields) = body.as_object_mut() {
        for name in names {
            fields.remove(name);
        }
    }
}

/// Merges `extra` into `base`: objects key by key, recursively; anything else replaces.
pub fn merge(base: &mut serde_json::Value, extra: &serde_json::Value) {
    match (base, extra) {
        (serde_json::Value::Object(base), serde_json::Value::Object(extra)) => {
            for (key, value) in extra {
                match base.get_mut(key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, extra) => *base = extra.clone(),
    }
}

/// The counters a server reported about one response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Prompt tokens the server counted, cached ones included.
    pub prompt_tokens: Option<u32>,
    /// Prompt tokens the server took from its cache instead of processing them.
    pub cached_tokens: Option<u32>,
    /// Tokens the server says it generated.
    pub output_tokens: Option<u32>,
}

impl Counters {
    /// Keeps every counter `other` has, and ours where it has none.
    pub fn merge(&mut self, other: Counters) {
        self.prompt_tokens = other.prompt_tokens.or(self.prompt_tokens);
        self.cached_tokens = other.cached_tokens.or(self.cached_tokens);
        self.output_tokens = other.output_tokens.or(self.output_tokens);
    }
}

/// The meaning of one SSE event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Event {
    /// Generated tokens this event carries (0 for role-only chunks, usage chunks, keep-alives).
    pub tokens: u32,
    /// The event ends the response (`[DONE]`, `stop: true`).
    pub done: bool,
    /// Counters, where the event reports them.
    pub counters: Counters,
    /// Tokens generated so far, where the server reports them on every chunk (vLLM's
    /// `continuous_usage_stats`): the chunk's tokens are then counted, not guessed from its text.
    pub so_far: Option<u32>,
    /// The event carries reasoning and no answer (`reasoning_content`, `reasoning`): a
    /// reasoning model thinking before it answers.
    pub reasoning: bool,
    /// The server's own timings of the response, where the event carries them.
    pub server: Option<server_timings::Reported>,
    /// A choice says its `finish_reason` (the `OpenAI` APIs): the response's last token was
    /// sent; the usage chunk and `[DONE]` may still follow.
    pub finished: bool,
}

impl Event {
    /// Tokens this event adds to the `streamed` ones before it. Its usage counts the tokens so
    /// far only where usage on every chunk was asked for (`usage_per_chunk`); elsewhere a usage
    /// on a chunk with choices is the final total (a gateway such as `LiteLLM` moves the last
    /// usage onto a chunk with one empty choice), and the event adds the tokens its text carries.
    pub fn tokens_after(&self, streamed: u32, usage_per_chunk: bool) -> u32 {
        match self.so_far.filter(|_| usage_per_chunk) {
            Some(so_far) => so_far.saturating_sub(streamed),
            None => self.tokens,
        }
    }
}

/// An event that is not what the API promises.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// Not valid JSON, or JSON of the wrong shape.
    #[error("malformed event: {0}")]
    Malformed(String),
    /// The server reported an error inside the stream.
    #[error("server error in stream: {0}")]
    Server(String),
}

/// Parses JSON event data into `T`, mapping failures to [`EventError::Malformed`].
fn parse_json<'a, T: Deserialize<'a>>(data: &'a [u8]) -> Result<T, EventError> {
    let malformed = |e: &dyn std::fmt::Display| {
        let shown = String::from_utf8_lossy(&data[..data.len().min(120)]);
        EventError::Malformed(format!("{e} in {shown:?}"))
    };
    // The UTF-8 checked once, whole, so that serde reads text and does not check each key and
    // string again (read from bytes, the checks of a chunk's many short keys cost more than the
    // rest of its lexing).
    let text = std::str::from_utf8(data).map_err(|e| malformed(&e))?;
    serde_json::from_str(text).map_err(|e| malformed(&e))
}

/// `data` read as JSON into `T` as [`parse_json`] reads it, or `None` (the text of an event,
/// where an event that does not parse has none).
fn from_json<'a, T: Deserialize<'a>>(data: &'a [u8]) -> Option<T> {
    serde_json::from_str(std::str::from_utf8(data).ok()?).ok()
}

/// The message of an `"error"` field, whatever its shape (string or object), flattened to one
/// line ([`error_body::flatten`]).
fn error_message(error: &serde_json::Value) -> String {
    error_body::flatten(&match error {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(fields) => fields
            .get("message")
            .and_then(|m| m.as_str())
            .map_or_else(|| error.to_string(), str::to_owned),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_fields_merge_key_by_key() {
        let mut body =
            serde_json::json!({"stream": true, "stream_options": {"include_usage": true}});
        merge(
            &mut body,
            &serde_json::json!({"stream_options": {"continuous_usage_stats": true}, "seed": 7}),
        );
        assert_eq!(
            body,
            serde_json::json!({"stream": true, "seed": 7,
                "stream_options": {"include_usage": true, "continuous_usage_stats": true}})
        );
    }
}
