//! The target server: connection check, what it says about itself, and its tokenizer.
//!
//! Before anything is measured llmload asks the server who it is (`/props`, `/v1/models`,
//! `/health`), so that an unreachable or wrong target fails at once with one clear line, and the
//! attempt's `campaign.json` records what was measured.

use crate::api::client::Endpoint;
use crate::api::fetch::{FetchError, Status};
use crate::api::http1::Method;
use crate::api::{Api, GenerationRequest, Message, Prompt};
use crate::error::{Context, Error};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// A reachable target.
#[derive(Clone, Debug)]
pub struct Target {
    /// Where and how requests go.
    pub endpoint: Endpoint,
    /// Model name sent with `OpenAI` requests.
    pub model: Option<String>,
    /// What the server said about itself: `{"props": …, "models": …}`, where it answered.
    pub server: Value,
    /// Fields merged into every generation body, the probe's included (`--extra-body`).
    pub extra_body: Option<Value>,
    /// Engine fields left out of every generation body: `--drop-field`, and with
    /// `--best-effort` those the server refused at setup ([`Target::check_fields`]).
    pub drop_fields: Vec<String>,
    /// What every record says of the fields left out, and why; `None` when none was.
    pub dropped_note: Option<String>,
    /// Several `--url`: an endpoint for each replica, in the order given (the first at the
    /// same URL as `endpoint`); empty with one.
    pub replicas: Vec<Endpoint>,
}

impl Target {
    /// The server's context limit per request, and where it said so: vLLM's `max_model_len`
    /// at `/v1/models`, llama-server's slot context (`n_ctx`) at `/props`.
    pub fn context_limit(&self) -> Option<(u64, &'static str)> {
        context_limit(&self.server)
    }

    /// Whether the server accepts `stream_options.continuous_usage_stats` and reports usage on
    /// every chunk: vLLM and llmload's simulator, known by the `owned_by` of their models. Other
    /// servers are not asked (a strict gateway rejects unknown fields); their chunks are counted
    /// one token each unless they say otherwise.
    pub fn reports_usage_per_chunk(&self) -> bool {
        matches!(self.endpoint.api, Api::Completions | Api::Chat)
            && matches!(
                self.server["models"]["data"][0]["owned_by"].as_str(),
                Some("vllm" | "llmload-sim")
            )
    }

    /// Whether the server is llmload's own simulator (reached through `--url` too: it says so
    /// in `/props`).
    pub fn is_simulator(&self) -> bool {
        self.server["props"]["llmload_sim"].is_object()
            || self.server["models"]["data"][0]["owned_by"]
                .as_str()
                .is_some_and(|o| o.starts_with("llmload-sim"))
    }

    /// Checks that the server answers, collects what it says about itself, and settles the API:
    /// `api` when given (checked against what the server is), else picked from what it is.
    /// `extra_body` goes into every generation body from then on, probes included. `mix`: the
    /// names of a mix of models (`model` is its first), each checked against the server's list;
    /// a mix is driven on the completions API where none was given.
    pub async fn connect(
        mut endpoint: Endpoint,
        (model, mix): (Option<String>, &[String]),
        api: Option<Api>,
        extra_body: Option<Value>,
    ) -> crate::error::Result<Target> {
        let base = endpoint.base_url.clone();
        let mut server = json!({});
        let mut refused = None;
        for (key, path) in [
            ("health", "/health"),
            ("props", "/props"),
            ("models", "/v1/models"),
        ] {
            let url = format!("{base}{path}");
            let (status, body) = setup_request(&endpoint, Method::Get, path, None).await?;
            if matches!(status.0, 401 | 403) {
                return Err(Error::Target(format!(
                    "{url} answered {status}: check --api-key"
                )));
            }
            if status.is_success() {
                if let Ok(body) = serde_json::from_slice::<Value>(&body) {
                    server[key] = body;
                }
            } else if key == "models" && is_gateway_error(status.0, &body) {
                return Err(Error::Target(format!(
                    "the proxy at {base} answered {status} for {path} ({}): the server behind it \
                     is not answering",
                    said_by(&body)
                )));
            } else if key == "models" && status.0 != 404 {
                // Said when the API cannot be told: the server's own words on its model list.
                refused = Some(format!(
                    "; GET {path} answered {status}: {}",
                    said_by(&body)
                ));
            }
        }
        endpoint.api = match api {
            Some(api) => check_dialect(api, &server, &base)?,
            // llama.cpp's native API names no model: a mix goes to the server's OpenAI API.
            None if !mix.is_empty() && lists_models(&server) => Api::Completions,
            None => detect_api(&server, &base).map_err(|e| match (&e, &refused) {
                (Error::Target(message), Some(said)) => Error::Target(format!("{message}{said}")),
                _ => e,
            })?,
        };
        if !mix.is_empty() && endpoint.api == Api::Llamacpp {
            return Err(Error::Target(format!(
                "{base} lists no models at /v1/models, so a mix of models cannot be sent there"
            )));
        }
        for given in model.iter().chain(mix) {
            check_model(given, &server)?;
        }
        let model = match model {
            Some(given) => Some(given),
            None => first_model(&server)?,
        };
        keep_models(&mut server);
        if is_llama_server(&server) && server["props"]["llmload_sim"].is_null() {
            // llama-server closes a connection after each streamed response, its head saying
            // Keep-Alive all the same: a kept one could be taken before its close arrives.
            endpoint.keep_no_connection();
        }
        if endpoint.api != Api::Llamacpp && model.is_none() {
            return Err(Error::Target(format!(
                "the server lists no model at {base}/v1/models: pass --model"
            )));
        }
        Ok(Target {
            endpoint,
            model,
            server,
            extra_body,
            drop_fields: Vec::new(),
            dropped_note: None,
            replicas: Vec::new(),
        })
    }

    /// The JSON body of a generation `request` to this server: the API's, `--extra-body` merged
    /// in, the dropped fields left out.
    pub fn body(&self, request: &GenerationRequest<'_>) -> Value {
        let mut body = self.endpoint.api.body(request);
        crate::api::drop_fields(&mut body, &self.drop_fields);
        body
    }

    /// The chat prompt the server builds around one user message (llama-server's
    /// `/apply-template`), or `None` when it has no such endpoint.
    pub async fn apply_template(&self, text: &str) -> crate::error::Result<Option<String>> {
        self.apply_template_of(&[user(text)]).await
    }

    /// The chat prompt the server builds around `messages`, with the assistant's opening after
    /// them (llama-server's `/apply-template`), or `None` when it has no such endpoint.
    async fn apply_template_of(
        &self,
        messages: &[Message],
    ) -> crate::error::Result<Option<String>> {
        let path = "/apply-template";
        let url = format!("{}{path}", self.endpoint.base_url);
        let body = json!({ "messages": messages });
        let (status, body) = setup_request(&self.endpoint, Method::Post, path, Some(&body)).await?;
        if !status.is_success() {
            return Ok(None);
        }
        let body: Value =
            serde_json::from_slice(&body).with_context(|| format!("POST {url}: not JSON"))?;
        Ok(body["prompt"].as_str().map(str::to_owned))
    }

    /// The tokens of the whole chat prompt the server builds around one user message: through
    /// llama-server's `/apply-template` and `/tokenize`, or vLLM's `/tokenize` of `messages`;
    /// `None` when the server offers neither.
    pub async fn chat_tokens(&self, text: &str) -> crate::error::Result<Option<Vec<u32>>> {
        self.conversation_tokens(&[user(text)]).await
    }

    /// As [`Target::chat_tokens`], for a whole conversation (a session's history and its new
    /// message).
    pub async fn conversation_tokens(
        &self,
        messages: &[Message],
    ) -> crate::error::Result<Option<Vec<u32>>> {
        if let Some(prompt) = self.apply_template_of(messages).await? {
            return self.tokenize(&prompt, true).await;
        }
        let mut body = json!({"messages": messages, "add_generation_prompt": true});
        if let Some(model) = &self.model {
            body["model"] = json!(model);
        }
        let (status, body) =
            setup_request(&self.endpoint, Method::Post, "/tokenize", Some(&body)).await?;
        if !status.is_success() {
            return Ok(None);
        }
        Ok(serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|b| token_ids(&b)))
    }

    /// The server's tokens for `text` (with BOS and the like when `special`), or `None` when it
    /// has no tokenizer endpoint.
    pub async fn tokenize(
        &self,
        text: &str,
        special: bool,
    ) -> crate::error::Result<Option<Vec<u32>>> {
        // llama-server reads `content`, vLLM `prompt`, TGI `inputs`; each ignores the others.
        let mut body = json!({"content": text, "prompt": text, "inputs": text,
            "add_special": special, "add_special_tokens": special});
        if let Some(model) = &self.model {
            body["model"] = json!(model);
        }
        let path = "/tokenize";
        let url = format!("{}{path}", self.endpoint.base_url);
        let (status, body) = setup_request(&self.endpoint, Method::Post, path, Some(&body)).await?;
        // No such endpoint, or one of another dialect that refuses this body (a 4xx other than
        // an authentication failure): the server has no tokenizer llmload can use.
        let refused = status.is_client_error() && !matches!(status.0, 401 | 403 | 408 | 429);
        if refused || status.0 == 501 {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(Error::Target(format!("POST {url} answered {status}")));
        }
        let body: Value =
            serde_json::from_slice(&body).with_context(|| format!("POST {url}: not JSON"))?;
        token_ids(&body)
            .map(Some)
            .with_context(|| format!("POST {url}: the answer holds no list of token IDs"))
    }

    /// Prompt tokens the server counts for `prompt`, asked with a one-token generation.
    pub async fn probe_prompt_tokens(&self, prompt: Prompt) -> crate::error::Result<u32> {
        self.probe_count(prompt)
            .await?
            .context("the server reports no prompt-token count, so prompt lengths cannot be set")
    }

    /// As [`Target::probe_prompt_tokens`], `None` when the server reports no prompt count.
    pub async fn probe_count(&self, prompt: Prompt) -> crate::error::Result<Option<u32>> {
        Ok(self.probe(prompt).await?.prompt_tokens)
    }

    /// The prompt tokens Anthropic's `POST /v1/messages/count_tokens` counts for one user
    /// message of `text` (exact, and nothing generated or cached), or `None` where the server
    /// has no such endpoint or the API is not Messages.
    pub async fn count_tokens(&self, text: &str) -> crate::error::Result<Option<u32>> {
        if self.endpoint.api != Api::Messages {
            return Ok(None);
        }
        let mut body = json!({"messages": [user(text)]});
        if let Some(model) = &self.model {
            body["model"] = json!(model);
        }
        let path = "/v1/messages/count_tokens";
        let (status, body) = setup_request(&self.endpoint, Method::Post, path, Some(&body)).await?;
        if !status.is_success() {
            return Ok(None);
        }
        Ok(serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|b| b["input_tokens"].as_u64())
            .and_then(|n| u32::try_from(n).ok()))
    }

    /// A one-token generation of `prompt`, the cache not asked for.
    fn one_token<'a>(&'a self, prompt: &'a Prompt) -> GenerationRequest<'a> {
        GenerationRequest {
            prompt,
            output_tokens: 1,
            slot: None,
            model: self.model.as_deref(),
            cache_prompt: false,
            usage_per_chunk: self.reports_usage_per_chunk(),
            extra: self.extra_body.as_ref(),
        }
    }

    /// The counters of a one-token generation of `prompt`.
    pub async fn probe(&self, prompt: Prompt) -> crate::error::Result<crate::api::Counters> {
        self.probe_with(prompt, &[]).await
    }

    /// The counters of a one-token generation of `prompt` with `images` (`data:` URLs) after
    /// its text (the chat API).
    pub async fn probe_with(
        &self,
        prompt: Prompt,
        images: &[String],
    ) -> crate::error::Result<crate::api::Counters> {
        let mut json = self.body(&self.one_token(&prompt));
        crate::api::openai::attach_images(&mut json, images);
        let mut body = crate::api::Body::from_json(&json);
        if self.endpoint.api.is_pooling() {
            // A batch of one input.
            body.inputs = 1;
        }
        let exchange = self.endpoint.stream(body, &CancellationToken::new()).await;
        if let Some(failure) = exchange.failure {
            let hint = match failure {
                crate::api::client::Failure::Http { status: 404, .. } => {
                    hints::not_found_hint(self.endpoint.api)
                }
                _ => String::new(),
            };
            return Err(Error::Target(format!(
                "probe request failed: {failure}{hint}"
            )));
        }
        Ok(exchange.counters)
    }
}

mod fields;
mod hints;
mod models;
mod profile;
mod reset;
use models::{check_model, first_model, keep_models};

/// A user message of `text`.
fn user(text: &str) -> Message {
    Message {
        role: "user".into(),
        content: text.to_owned(),
    }
}

/// The largest answer a setup request may give (the corpus's tokens are the largest).
pub const MAX_SETUP_BODY: usize = 64 << 20;

/// One setup request, `method` of `path` under the base URL with `body` as JSON: its status and
/// its whole body, within the endpoint's setup timeout (connection and TLS handshake included)
/// and [`MAX_SETUP_BODY`]. A redirect is an error: none is followed.
async fn setup_request(
    endpoint: &Endpoint,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> crate::error::Result<(Status, Vec<u8>)> {
    setup_request_within(endpoint, (method, path), body, endpoint.setup_timeout).await
}

/// [`setup_request`] within `limit` instead of the setup timeout.
async fn setup_request_within(
    endpoint: &Endpoint,
    (method, path): (Method, &str),
    body: Option<&Value>,
    limit: std::time::Duration,
) -> crate::error::Result<(Status, Vec<u8>)> {
    let url = format!("{} {}{path}", method.name(), endpoint.base_url);
    let body = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
    let deadline = tokio::time::Instant::now() + limit;
    let answer = endpoint
        .setup
        .fetch(method, path, body.as_deref(), MAX_SETUP_BODY, deadline)
        .await
        .map_err(|e| match e {
            FetchError::Connect { .. } => Error::Target(format!(
                "cannot reach {}: {e}{}",
                endpoint.base_url,
                hints::fetch_hint(&e, &endpoint.base_url)
            )),
            FetchError::Deadline(during) => Error::Target(format!(
                "{url}: no answer within {} (--setup-timeout), {during}",
                humantime::format_duration(limit)
            )),
            _ => Error::Target(format!(
                "{url}: {e}{}",
                hints::fetch_hint(&e, &endpoint.base_url)
            )),
        })?;
    let status = Status(answer.status);
    if status.is_redirection() {
        let to = answer
            .location
            .map(|l| crate::secrets::redact_url(&l))
            .unwrap_or_default();
        return Err(Error::Target(format!(
            "{url} answered {status}, a redirect to {to:?}: llmload follows no redirects \
             (they would carry the key and headers elsewhere); give --url the server itself"
        )));
    }
    Ok((status, answer.body))
}

/// Whether `/props` says the server is llama-server (or llmload's simulator, which speaks its
/// dialect too).
fn is_llama_server(server: &Value) -> bool {
    let props = &server["props"];
    [
        "default_generation_settings",
        "total_slots",
        "build_info",
        "llmload_sim",
    ]
    .iter()
    .any(|k| !props[*k].is_null())
}

/// Whether an error answer is a proxy's or gateway's for a server behind it that does not
/// answer: 502 and 504 are only ever a gateway's, and a 503 that is an HTML page is a proxy's
/// (a server's own 503, llama-server's while it loads a model, is JSON).
fn is_gateway_error(status: u16, body: &[u8]) -> bool {
    match status {
        502 | 504 => true,
        503 => crate::api::error_body::is_html(String::from_utf8_lossy(body).trim()),
        _ => false,
    }
}

/// What an error body said, in one line ([`crate::api::error_body::reduce`]).
fn said_by(body: &[u8]) -> String {
    let said = crate::api::error_body::reduce(body);
    if said.is_empty() {
        "an empty body".into()
    } else {
        said
    }
}

/// Whether `/v1/models` lists models (an OpenAI-compatible server).
fn lists_models(server: &Value) -> bool {
    server["models"]["data"]
        .as_array()
        .is_some_and(|d| !d.is_empty())
}

/// The API of a server that was not told one: llama-server's own, else the `OpenAI` completions
/// API of a server that lists its models.
fn detect_api(server: &Value, base: &str) -> crate::error::Result<Api> {
    if is_llama_server(server) {
        Ok(Api::Llamacpp)
    } else if lists_models(server) {
        Ok(Api::Completions)
    } else {
        Err(Error::Target(format!(
            "cannot tell which API {base} speaks (no llama-server /props, no models at \
             /v1/models): pass --api llamacpp, completions or chat"
        )))
    }
}

/// `api` when the server can speak it: llama.cpp's native API needs llama-server.
fn check_dialect(api: Api, server: &Value, base: &str) -> crate::error::Result<Api> {
    if api == Api::Llamacpp && !is_llama_server(server) && lists_models(server) {
        let owner = server["models"]["data"][0]["owned_by"]
            .as_str()
            .map_or_else(String::new, |o| format!(" (owned by {o:?})"));
        return Err(Error::Target(format!(
            "{base} is not llama-server (it lists models at /v1/models{owner} and has no \
             llama-server /props), so it has no /completion: use --api completions or --api chat"
        )));
    }
    Ok(api)
}

/// The server's context limit per request, and where it said so: vLLM's `max_model_len` at
/// `/v1/models`, llama-server's slot context (`n_ctx`) at `/props`.
fn context_limit(server: &Value) -> Option<(u64, &'static str)> {
    server["models"]["data"][0]["max_model_len"]
        .as_u64()
        .map(|n| (n, "max_model_len at /v1/models"))
        .or_else(|| {
            server["props"]["default_generation_settings"]["n_ctx"]
                .as_u64()
                .filter(|&n| n > 0)
                .map(|n| (n, "the slot context n_ctx at /props"))
        })
}

/// The token IDs of a `/tokenize` answer: `{"tokens": [ids]}` (vLLM, llama-server), `{"tokens":
/// [{"id": …}]}` (llama-server with pieces), or a list of `{"id": …}` (TGI).
fn token_ids(body: &Value) -> Option<Vec<u32>> {
    let list = body["tokens"].as_array().or_else(|| body.as_array())?;
    list.iter()
        .map(|t| {
            t.as_u64()
                .or_else(|| t["id"].as_u64())
                .and_then(|t| u32::try_from(t).ok())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_ids_are_read_in_each_dialect() {
        let ids = Some(vec![2, 9259, 1000]);
        assert_eq!(token_ids(&json!({"tokens": [2, 9259, 1000]})), ids);
        assert_eq!(
            token_ids(
                &json!({"tokens": [{"id": 2, "piece": "<bos>"}, {"id": 9259}, {"id": 1000}]})
            ),
            ids
        );
        // TGI: a list of tokens with their text and offsets.
        let tgi = json!([{"id": 2, "text": "<bos>", "start": 0, "stop": 0},
            {"id": 9259, "text": "Hello", "start": 0, "stop": 5},
            {"id": 1000, "text": " there", "start": 5, "stop": 11}]);
        assert_eq!(token_ids(&tgi), ids);
        assert_eq!(token_ids(&json!({"count": 3})), None);
        assert_eq!(token_ids(&json!({"tokens": ["a"]})), None);
    }
}
