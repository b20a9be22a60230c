//! [`Mode::Apis`]: a server that speaks the `OpenAI` chat, Responses and Anthropic Messages APIs
//! (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`) and misbehaves in each the same
//! way: its end before any text, its text in events of no known type, or an error event whose
//! message holds line ends. A one-token request (a probe during setup) is answered properly.

use super::{chunk, whole, Request, STREAM_HEAD};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

/// How a generation of [`Mode::Apis`](super::Mode::Apis) goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The final event, counting every token asked for, comes before any text.
    EndsFirst,
    /// The text comes in events without their `type` (Responses, Messages) or without their
    /// `choices` (chat), then a proper end that counts them all.
    Untyped,
    /// Two tokens, then the API's error event whose message holds the line ends given.
    LinesInError(&'static str),
}

/// Which API a request is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Api {
    Chat,
    Responses,
    Messages,
}

/// Answers `request` (`/health`, `/v1/models` and the three APIs).
pub(super) async fn respond(
    stream: &mut TcpStream,
    request: &Request,
    fault: Fault,
) -> std::io::Result<bool> {
    let json_kind = "application/json";
    let api = match (request.seen.method.as_str(), request.seen.path.as_str()) {
        ("GET", "/health") => {
            whole(stream, "200 OK", json_kind, r#"{"status":"ok"}"#).await?;
            return Ok(true);
        }
        ("GET", "/v1/models") => {
            let models =
                r#"{"object":"list","data":[{"id":"m","object":"model","owned_by":"someone"}]}"#;
            whole(stream, "200 OK", json_kind, models).await?;
            return Ok(true);
        }
        ("POST", "/v1/chat/completions") => Api::Chat,
        ("POST", "/v1/responses") => Api::Responses,
        ("POST", "/v1/messages") => Api::Messages,
        _ => {
            whole(
                stream,
                "404 Not Found",
                json_kind,
                r#"{"error":"not found"}"#,
            )
            .await?;
            return Ok(true);
        }
    };
    let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
    let asked = ["max_tokens", "max_output_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|k| body[k].as_u64())
        .unwrap_or(16);
    let fault = (asked > 1).then_some(fault);
    let mut out = STREAM_HEAD.to_vec();
    for event in events(api, asked, fault) {
        out.extend_from_slice(&chunk(event.as_bytes()));
    }
    out.extend_from_slice(b"0\r\n\r\n");
    stream.write_all(&out).await?;
    Ok(true)
}

/// The events of a generation of `asked` tokens, each with its blank line.
fn events(api: Api, asked: u64, fault: Option<Fault>) -> Vec<String> {
    let data = |v: Value| format!("data: {v}\n\n");
    let named = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
    let token = |typed: bool| match api {
        Api::Chat if typed => data(json!({"choices": [{"index": 0, "delta": {"content": " x"}}]})),
        Api::Chat => data(json!({"delta": {"content": " x"}})),
        Api::Responses if typed => {
            data(json!({"type": "response.output_text.delta", "delta": " x"}))
        }
        Api::Responses => data(json!({"delta": " x"})),
        Api::Messages if typed => named(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": " x"}}),
        ),
        Api::Messages => data(json!({"index": 0, "delta": {"text": " x"}})),
    };
    let prompt = 16;
    let end = match api {
        Api::Chat => vec![
            data(
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": asked,
                "prompt_tokens_details": {"cached_tokens": 0}}}),
            ),
            data(json!("[DONE]")).replace("\"[DONE]\"", "[DONE]"),
        ],
        Api::Responses => vec![data(json!({"type": "response.completed",
            "response": {"status": "completed", "usage": {"input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens": asked}}}))],
        Api::Messages => vec![
            named(
                "message_delta",
                json!({"type": "message_delta",
                "delta": {"stop_reason": "max_tokens"}, "usage": {"input_tokens": prompt,
                "cache_read_input_tokens": 0, "output_tokens": asked}}),
            ),
            named("message_stop", json!({"type": "message_stop"})),
        ],
    };
    let mut out = Vec::new();
    match fault {
        None => out.extend((0..asked).map(|_| token(true))),
        Some(Fault::EndsFirst) => {
            out.extend(end);
            out.extend((0..asked).map(|_| token(true)));
            return out;
        }
        Some(Fault::Untyped) => out.extend((0..asked).map(|_| token(false))),
        Some(Fault::LinesInError(lines)) => {
            out.extend((0..2).map(|_| token(true)));
            let message = format!("overloaded{lines}llmload: forged line");
            out.push(match api {
                Api::Chat => data(json!({"error": {"message": message, "code": 503}})),
                Api::Responses => data(json!({"type": "error", "code": "server_error",
                    "message": message})),
                Api::Messages => named(
                    "error",
                    json!({"type": "error",
                    "error": {"type": "overloaded_error", "message": message}}),
                ),
            });
            return out;
        }
    }
    out.extend(end);
    out
}
