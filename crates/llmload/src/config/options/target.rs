//! The options of the target: the server, how to reach it, what it can be trusted to count.

use crate::api::Api;
use crate::config::combine::options;
use clap::Args;
use serde::Deserialize;
use std::path::PathBuf;

options! {
    /// The server, how to reach it, and what it can be trusted to count.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "Target and API")]
    #[serde(default)]
    pub struct TargetOptions {
        /// Base URL of the server, e.g. <http://127.0.0.1:8080> [default: the built-in simulator]
        ///
        /// Without it, the built-in simulator (profile seed-qwen3-8b) is started and measured,
        /// and every output says so. Given more than once, the load goes to several replicas
        /// of one model (--balance); the first is asked what it serves.
        #[arg(long, value_name = "URL")]
        #[serde(deserialize_with = "one_or_more")]
        pub url: Option<Vec<String>>,
        /// How requests are spread over several --url [default: round-robin]
        ///
        /// round-robin: each request to the next in turn; least-in-flight: to the one with the
        /// fewest requests in flight; session-sticky: every request of a session (--turns,
        /// --dag) to one replica, picked from its session id, the others in turn.
        #[arg(long, value_enum)]
        pub balance: Option<crate::api::replicas::Balance>,
        /// A header that carries each session's id, for a router's affinity, e.g. X-Session-ID
        ///
        /// Every request of a session (--turns, --dag) carries `NAME: session-N`, N the
        /// attempt's session id, so that a KV-aware router can keep a session on one replica.
        #[arg(long, value_name = "NAME")]
        pub session_header: Option<String>,
        /// API to drive [default: picked from the server]
        ///
        /// llamacpp for llama-server and the built-in simulator, completions for any other server
        /// that lists models at /v1/models.
        #[arg(long, value_enum)]
        pub api: Option<Api>,
        /// Model name, or a weighted mix `NAME:WEIGHT,…` [default: the first one the server lists]
        ///
        /// A mix such as base:70,adapter-a:20,adapter-b:10 sends each measured request to one
        /// of the models (a base model and its LoRA adapters, or several models of one server),
        /// drawn from --seed; every figure is then reported per model and overall. Each name
        /// must be one the server lists at /v1/models. A single name is taken as it is.
        #[arg(long, value_name = "NAME|NAME:WEIGHT,…")]
        pub model: Option<String>,
        /// Bearer token sent as `Authorization: Bearer KEY`; never written to disk
        #[arg(long, env = "LLMLOAD_API_KEY", hide_env_values = true)]
        pub api_key: Option<String>,
        /// Extra request header, `NAME:VALUE`; may be repeated
        ///
        /// Its value is written and printed as [redacted] unless the name is harmless (such as
        /// User-Agent) or named by --show-header.
        #[arg(long = "header", value_name = "NAME:VALUE")]
        pub headers: Vec<String>,
        /// A header whose value may be written and printed; may be repeated
        ///
        /// Values of other headers than a few harmless ones, such as User-Agent, are redacted.
        #[arg(long = "show-header", value_name = "NAME")]
        pub show_headers: Vec<String>,
        /// Limit per request, from send to final event, e.g. 90s [default: 10m]
        #[arg(long, value_name = "DURATION")]
        pub timeout: Option<String>,
        /// Limit for each setup request and /metrics scrape [default: 30s]
        ///
        /// Setup requests are /health, /props, /v1/models, /tokenize, …; connecting is included.
        #[arg(long, value_name = "DURATION")]
        pub setup_timeout: Option<String>,
        /// A PEM file of certificates to trust besides the system's
        ///
        /// For an https:// server whose certificate a private CA signed (or a self-signed one).
        #[arg(long, value_name = "FILE")]
        pub ca_cert: Option<PathBuf>,
        /// Do not check the https:// server's certificate or host name
        ///
        /// Traffic is still encrypted, but anyone in between could read it.
        #[arg(long, num_args = 0, default_missing_value = "true")]
        pub insecure: Option<bool>,
        /// Fields merged into every request body, a JSON object
        ///
        /// For example '{"temperature": 0, "seed": 1}'; the prompt, the output length and
        /// streaming stay llmload's. In the campaign file, a table.
        #[arg(long, value_name = "JSON", value_parser = json_or_text)]
        pub extra_body: Option<serde_json::Value>,
        /// Leave an engine field out of every request body; may be repeated
        ///
        /// One of `ignore_eos`, `min_tokens`, `cache_prompt`, `stream_options` (or several, comma
        /// separated): fields llmload sends beyond the API's own, which a strict server refuses.
        /// Without `ignore_eos` and `min_tokens` the output may stop early: add --best-effort.
        #[arg(long = "drop-field", value_name = "NAME", value_delimiter = ',')]
        pub drop_field: Vec<String>,
        /// The model's tokenizer.json, for counting on the client
        ///
        /// The client counts with it where the server does not: prompts on a server without
        /// /tokenize or usage; the tokens of each chunk on a server that sends several per chunk
        /// without saying how many.
        #[arg(long, value_name = "FILE")]
        pub tokenizer: Option<PathBuf>,
        /// Measure a server that cannot be forced to the length or does not count
        ///
        /// For a hosted endpoint, or a gateway that drops fields: outputs as long as the server
        /// makes them, tokens counted by the client where the server does not say, and every
        /// such response marked unverified with its reason, never invalid for its length alone.
        #[arg(long, num_args = 0, default_missing_value = "true")]
        pub best_effort: Option<bool>,
        /// Send a W3C traceparent header with every request too
        ///
        /// Every request carries an X-Request-Id unique within the attempt; with this, also a
        /// traceparent (version 00, one trace id per attempt, a span per request, sampled), so
        /// that a server or gateway that traces requests records them under the attempt.
        #[arg(long, num_args = 0, default_missing_value = "true")]
        pub traceparent: Option<bool>,
        /// Before each case, ask the server to drop its prefix cache
        ///
        /// vLLM: `POST /reset_prefix_cache` (served with `VLLM_SERVER_DEV_MODE=1`); `SGLang`:
        /// `POST /flush_cache`; llama-server: each slot erased (`POST /slots/N?action=erase`,
        /// served with --slot-save-path). A server that refuses is named in the case's summary
        /// and the report, and the case runs anyway.
        #[arg(long, num_args = 0, default_missing_value = "true")]
        pub reset_prefix_cache: Option<bool>,
        /// Profile the server over one round, once its /metrics says N requests are running
        ///
        /// The first measured round of the first case of N or more streams: once the server's
        /// running-requests gauge reaches N, `POST /start_profile` (vLLM, `SGLang`); at the
        /// round's end, `POST /stop_profile`. The profile stays on the server's machine. A
        /// server that refuses is named, and the run goes on. Closed rounds.
        #[arg(long, value_name = "N")]
        pub profile_server: Option<u32>,
    }
}

/// `--extra-body`: JSON when it parses, else the text itself, which `resolve` refuses with its
/// own message.
#[expect(
    clippy::unnecessary_wraps,
    reason = "clap's value parsers return a Result; this one takes any text"
)]
fn json_or_text(text: &str) -> Result<serde_json::Value, std::convert::Infallible> {
    Ok(serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_owned())))
}

/// A campaign file's `url`: one URL, or a list of them (replicas).
fn one_or_more<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Urls {
        One(String),
        More(Vec<String>),
    }
    Ok(Option::<Urls>::deserialize(d)?.map(|u| match u {
        Urls::One(url) => vec![url],
        Urls::More(urls) => urls,
    }))
}
