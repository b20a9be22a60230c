//! The endpoints around generation: health, server description (`/props`, `/slots`,
//! `/v1/models`), Prometheus metrics and the tokenizer.

use std::fmt::Write;

use hyper::{Response, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::reply::{bytes_response, json_response, ApiError, Body};
use super::State;

/// `GET /health`.
pub(crate) fn health() -> Response<Body> {
    json_response(StatusCode::OK, &json!({"status": "ok"}))
}

/// `GET /props`: llama-server's description, plus the simulator's own settings.
pub(crate) fn props(state: &State) -> Response<Body> {
    let faults: Vec<String> = state
        .faults
        .specs()
        .iter()
        .map(ToString::to_string)
        .collect();
    let body = json!({
        "default_generation_settings": {"n_ctx": state.profile.slot_context_tokens},
        "total_slots": state.profile.slots,
        "model_path": state.profile.name,
        "build_info": concat!("llmload-sim ", env!("CARGO_PKG_VERSION")),
        "llmload_sim": {
            "profile": state.profile.name,
            "model": state.profile.model,
            "slots": state.profile.slots,
            "time_scale": state.time_scale,
            "schedule": state.schedule.to_string(),
            "seed": state.seed,
            "faults": faults,
        },
    });
    json_response(StatusCode::OK, &body)
}

/// `GET /slots`.
pub(crate) fn slots(state: &State) -> Response<Body> {
    let status = state.engine.status();
    let slots: Vec<_> = status
        .busy
        .iter()
        .enumerate()
        .map(|(id, busy)| {
            json!({"id": id, "is_processing": busy, "n_ctx": state.profile.slot_context_tokens})
        })
        .collect();
    json_response(StatusCode::OK, &json!(slots))
}

/// `GET /v1/models`.
pub(crate) fn models(state: &State) -> Response<Body> {
    let owner = if state.hosted {
        "llmload-sim-hosted"
    } else {
        "llmload-sim"
    };
    let base = &state.profile.model;
    // The model first, then its adapters, each naming it as `parent` (as vLLM lists them).
    let data: Vec<_> = std::iter::once(json!({"id": base, "object": "model", "owned_by": owner}))
        .chain(state.profile.adapters.iter().map(|adapter| {
            json!({"id": adapter, "object": "model", "owned_by": owner, "root": adapter,
                "parent": base})
        }))
        .collect();
    let body = json!({"object": "list", "data": data});
    json_response(StatusCode::OK, &body)
}

/// `GET /metrics`: llama-server's Prometheus names.
pub(crate) fn metrics(state: &State) -> Response<Body> {
    let status = state.engine.status();
    // Under a fixed or zero-cost schedule the engine runs nothing: every request in flight is.
    let running = if state.schedule == crate::Schedule::Engine {
        status.busy.iter().filter(|busy| **busy).count()
    } else {
        state.generating.load(std::sync::atomic::Ordering::SeqCst)
    };
    let series: [(&str, &str, &str, String); 5] = [
        (
            "prompt_tokens_total",
            "counter",
            "Number of prompt tokens processed.",
            status.prompt_tokens_total.to_string(),
        ),
        (
            "tokens_predicted_total",
            "counter",
            "Number of generation tokens processed.",
            status.predicted_tokens_total.to_string(),
        ),
        (
            "requests_processing",
            "gauge",
            "Number of requests processing.",
            running.to_string(),
        ),
        (
            "requests_deferred",
            "gauge",
            "Number of requests deferred.",
            status.waiting.to_string(),
        ),
        (
            "kv_cache_usage_ratio",
            "gauge",
            "KV-cache usage. 1 means 100 percent usage.",
            status.kv_usage_ratio.to_string(),
        ),
    ];
    let mut text = String::new();
    for (name, kind, help, value) in series {
        // Writing to a String cannot fail.
        let _ = writeln!(
            text,
            "# HELP llamacpp:{name} {help}\n# TYPE llamacpp:{name} {kind}\nllamacpp:{name} {value}"
        );
    }
    bytes_response(StatusCode::OK, "text/plain; version=0.0.4", text)
}

/// `/tokenize`'s body: llama-server's `content`, or vLLM's `messages` (the chat prompt's tokens,
/// the assistant's opening included).
#[derive(Deserialize)]
struct TokenizeBody {
    content: Option<String>,
    messages: Option<Vec<super::request::Message>>,
}

#[derive(Deserialize)]
struct DetokenizeBody {
    tokens: Vec<u32>,
}

/// `POST /tokenize`.
pub(crate) fn tokenize(state: &State, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let request: TokenizeBody = serde_json::from_slice(body)
        .map_err(|error| ApiError::bad_request(format!("invalid JSON body: {error}")))?;
    let tokens = match (&request.content, &request.messages) {
        (_, Some(messages)) => {
            super::request::chat_prompt(Some(messages), &state.tokenizer, &state.profile)?
        }
        (Some(content), None) => state.tokenizer.tokenize(content),
        (None, None) => {
            return Err(ApiError::bad_request(
                "give \"content\" (text) or \"messages\" (a chat)",
            ))
        }
    };
    Ok(json_response(StatusCode::OK, &json!({"tokens": tokens})))
}

/// `POST /detokenize`.
pub(crate) fn detokenize(state: &State, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let request: DetokenizeBody = serde_json::from_slice(body)
        .map_err(|error| ApiError::bad_request(format!("invalid JSON body: {error}")))?;
    let content = state.tokenizer.detokenize(&request.tokens);
    Ok(json_response(StatusCode::OK, &json!({"content": content})))
}
