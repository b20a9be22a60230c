//! [`Mode::Strict`]: a server that speaks only the `OpenAI` chat API and refuses every field it
//! does not know, as `transformers serve` does (a `FastAPI` app): `422` with
//! `{"detail": "Unexpected fields in the request: {'cache_prompt', 'ignore_eos', …}"}`, or, as
//! other strict servers do, a `422` that names nothing. A request it takes streams exactly
//! `max_tokens` tokens, the usage on the chunk with its `finish_reason`, and no `data: [DONE]`.

use super::{chunk, whole, Request, STREAM_HEAD};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

/// The body fields the server knows; any other is refused.
const KNOWN: [&str; 8] = [
    "model",
    "messages",
    "max_tokens",
    "stream",
    "stream_options",
    "temperature",
    "seed",
    "top_p",
];

/// Tokens the chat template adds around the user's text.
pub(crate) const TEMPLATE_TOKENS: u64 = 4;

/// Answers `request` (after `/health`, the only endpoint besides `/v1/models`); `named`: whether
/// a refusal names the fields.
pub(super) async fn respond(
    stream: &mut TcpStream,
    request: &Request,
    named: bool,
) -> std::io::Result<bool> {
    let json_kind = "application/json";
    match (request.seen.method.as_str(), request.seen.path.as_str()) {
        ("GET", "/health") => whole(stream, "200 OK", json_kind, r#"{"status":"ok"}"#).await?,
        ("GET", "/v1/models") => {
            let models = r#"{"object":"list","data":[{"id":"m","object":"model","owned_by":"huggingface"}]}"#;
            whole(stream, "200 OK", json_kind, models).await?;
        }
        ("POST", "/v1/chat/completions") => return chat(stream, &request.body, named).await,
        _ => {
            whole(
                stream,
                "404 Not Found",
                json_kind,
                r#"{"detail":"Not Found"}"#,
            )
            .await?;
        }
    }
    Ok(true)
}

async fn chat(stream: &mut TcpStream, body: &[u8], named: bool) -> std::io::Result<bool> {
    let body: Value = serde_json::from_slice(body).unwrap_or_default();
    let mut unknown: Vec<&str> = body
        .as_object()
        .into_iter()
        .flat_map(|fields| fields.keys())
        .map(String::as_str)
        .filter(|k| !KNOWN.contains(k))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        let listed: Vec<String> = unknown.iter().map(|k| format!("'{k}'")).collect();
        let detail = if named {
            format!(
                "Unexpected fields in the request: {{{}}}",
                listed.join(", ")
            )
        } else {
            "Unprocessable request".to_owned()
        };
        let answer = json!({ "detail": detail }).to_string();
        whole(
            stream,
            "422 Unprocessable Entity",
            "application/json",
            &answer,
        )
        .await?;
        return Ok(true);
    }
    let words: usize = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .map(|text| text.split_whitespace().count())
        .sum();
    let prompt = u64::try_from(words).unwrap_or(u64::MAX) + TEMPLATE_TOKENS;
    let asked = body["max_tokens"].as_u64().unwrap_or(16);
    let mut out = STREAM_HEAD.to_vec();
    let event = |choice: Value, usage: Option<Value>| {
        let mut data = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
            "choices": [choice]});
        if let Some(usage) = usage {
            data["usage"] = usage;
        }
        chunk(format!("data: {data}\n\n").as_bytes())
    };
    out.extend_from_slice(&event(
        json!({"index": 0, "delta": {"role": "assistant"}}),
        None,
    ));
    for _ in 0..asked {
        out.extend_from_slice(&event(
            json!({"index": 0, "delta": {"content": " x"}}),
            None,
        ));
    }
    let usage = json!({"prompt_tokens": prompt, "completion_tokens": asked,
        "total_tokens": prompt + asked});
    out.extend_from_slice(&event(
        json!({"index": 0, "delta": {}, "finish_reason": "length"}),
        Some(usage),
    ));
    out.extend_from_slice(b"0\r\n\r\n");
    stream.write_all(&out).await?;
    Ok(true)
}
