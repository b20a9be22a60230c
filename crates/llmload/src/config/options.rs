//! Every option of a run, declared once. Each group below is at the same time clap `Args` (its
//! flags, under one `--help` heading) and serde `Deserialize` (the campaign file's keys, which
//! are the flag names with `_` for `-`), all-optional, with its [`Combine`](super::Combine)
//! derived from the fields. [`Settings`] holds the groups; [`Config::resolve`](super::Config::resolve)
//! is the one place that fills in defaults and validates.
//!
//! A field's doc comment is its help: the first paragraph is `-h`'s one line, ending with the
//! default, and the whole is `--help`'s text. A new option is one field here, its validation in
//! `resolve`, and its line in docs/usage.md (a test checks that the manual names every flag).

use super::combine::options;
use super::settings::{one_or_many, LengthItem, StagesSetting};
use crate::api::Api;
use crate::workload::shape::Arrival;
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
        /// and every output says so.
        #[arg(long)]
        pub url: Option<String>,
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
    }
}

options! {
    /// The prompts and outputs of each request.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "What to send")]
    #[serde(default)]
    pub struct WorkloadOptions {
        /// Prompt lengths: a list (one case each) or one distribution [default: 2048,8192]
        ///
        /// A comma-separated list of token counts, one case each, or one distribution sampled
        /// per request: `choice:32,256,1024`, `choice:32@0.5,256@0.5`, `uniform:MIN,MAX`,
        /// `normal:MEAN,SD[,MIN,MAX]`, `lognormal:MEDIAN,SIGMA[,MIN,MAX]`.
        #[arg(long, value_name = "N,…|SPEC")]
        #[serde(deserialize_with = "one_or_many")]
        pub input_tokens: Option<Vec<LengthItem>>,
        /// Generated tokens per request, EOS ignored: a list or a distribution [default: 256]
        ///
        /// As for --input-tokens.
        #[arg(long, value_name = "N,…|SPEC")]
        #[serde(deserialize_with = "one_or_many")]
        pub output_tokens: Option<Vec<LengthItem>>,
        /// Embeddings and rerank: inputs per request, comma-separated, one case each [default: 1]
        ///
        /// --api embeddings sends this many inputs in each request, --api rerank this many
        /// documents with its query; each input is --input-tokens long (for rerank, each
        /// (query, document) pair as the server counts it).
        #[arg(long, value_delimiter = ',', value_name = "B,…")]
        pub batch_size: Option<Vec<u32>>,
        /// Chat: images per request, comma-separated, one case each [default: 0]
        ///
        /// PNG images generated per request (each its own, the same for the same seed), sent
        /// after the prompt's text as `image_url` parts with `data:` URLs; --api chat only. 0 is a
        /// case without images.
        #[arg(long, value_delimiter = ',', value_name = "N,…")]
        pub images: Option<Vec<u32>>,
        /// Chat images: `WIDTHxHEIGHT` in pixels, comma-separated, one case each [default: 224x224]
        #[arg(long, value_delimiter = ',', value_name = "WxH,…")]
        pub image_size: Option<Vec<String>>,
        /// Open every prompt with the same S tokens, a shared system prompt [default: 0]
        ///
        /// The server may serve them from its prefix cache (it is allowed to for those tokens
        /// alone), and the summary reports the hit rate its counters show. The rest of each
        /// prompt stays unique.
        #[arg(long, value_name = "S")]
        pub system_prompt_tokens: Option<u32>,
        /// Text to build prompts from [default: the bundled public-domain text]
        #[arg(long, value_name = "FILE")]
        pub corpus: Option<PathBuf>,
        /// Prompts from a local dataset file
        ///
        /// JSONL lines of {"prompt"} or {"messages"}, or `ShareGPT` {"conversations"} (JSONL or
        /// one JSON array).
        #[arg(long, value_name = "FILE")]
        pub dataset: Option<PathBuf>,
        /// Dataset prompts: fit (to exactly --input-tokens) or as-is [default: fit]
        ///
        /// fit: cut or repeated to exactly --input-tokens, verified; as-is: sent unchanged, the
        /// server's count recorded.
        #[arg(long, value_name = "HOW")]
        pub dataset_lengths: Option<crate::workload::dataset::Lengths>,
        /// Dataset runs' output lengths: fixed or from-dataset [default: fixed]
        ///
        /// fixed: --output-tokens; from-dataset: each entry's answer, counted by the server's
        /// tokenizer.
        #[arg(long, value_name = "FROM")]
        pub dataset_output: Option<crate::workload::dataset::Output>,
        /// Replay a trace file (JSONL or CSV); implies --arrival trace
        ///
        /// JSONL lines of {"`offset_s`", "`input_tokens`", "`output_tokens`"}, or of
        /// {"timestamp" (ms), "`input_length`", "`output_length`", "`hash_ids`"} whose shared
        /// blocks become shared prompt prefixes; or CSV (by its .csv name or header) with the
        /// header `TIMESTAMP,ContextTokens,GeneratedTokens` (the Azure LLM inference traces) or
        /// `timestamp,input_length,output_length[,hash_ids]`.
        #[arg(long, value_name = "FILE")]
        pub trace: Option<PathBuf>,
        /// Tokens per block of a trace's `hash_ids` [default: 512]
        #[arg(long, value_name = "N")]
        pub trace_block_tokens: Option<u32>,
        /// Seed for prompts, lengths and schedules [default: a fresh one per attempt]
        ///
        /// The same seed reproduces the same prompts; the seed used is recorded in
        /// campaign.json.
        #[arg(long)]
        pub seed: Option<u64>,
    }
}

options! {
    /// How requests are launched.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "Load shape")]
    #[serde(default)]
    pub struct LoadOptions {
        /// Simultaneous requests per round or kept in flight, comma-separated [default: 1,4]
        #[arg(long, value_delimiter = ',', value_name = "C,…")]
        pub concurrency: Option<Vec<u32>>,
        /// How requests are launched [default: rounds]
        ///
        /// rounds (C together), closed-continuous (keep C in flight), or an open loop at --rate:
        /// poisson, gamma (--burstiness) or constant.
        #[arg(long, value_enum)]
        pub arrival: Option<Arrival>,
        /// Open loop: arrivals per second, comma-separated, one case each
        #[arg(long, value_delimiter = ',', value_name = "R,…")]
        pub rate: Option<Vec<f64>>,
        /// Gamma arrivals: coefficient of variation of the gaps [default: 1]
        ///
        /// 1 is Poisson, above 1 bursty.
        #[arg(long, value_name = "CV")]
        pub burstiness: Option<f64>,
        /// A staged load, one case per stage, e.g. 10s:rate=2,30s:ramp:rate=8
        ///
        /// Comma-separated DURATION[:ramp]:rate=R (open loop, --arrival poisson by default) or
        /// DURATION[:ramp]:concurrency=C (closed-continuous), with no gap between them; `ramp`
        /// changes the level linearly from the previous stage's (0 before the first). In the
        /// campaign file, also `[[stages]]` tables.
        #[arg(long, value_name = "STAGES")]
        pub stages: Option<StagesSetting>,
        /// Open and continuous loops: launch requests for this long, e.g. 60s
        #[arg(long, value_name = "DURATION")]
        pub duration: Option<String>,
        /// Open and continuous loops: launch this many requests [default: 100]
        ///
        /// The default applies without --duration.
        #[arg(long, value_name = "N")]
        pub requests: Option<u64>,
        /// Open loop: the most requests in flight [default: no cap]
        ///
        /// Time spent waiting for a place is send lag, recorded with each request.
        #[arg(long, value_name = "K")]
        pub max_in_flight: Option<u32>,
        /// Open and continuous loops: launches in this first stretch are warmup [default: 0s]
        ///
        /// They are outside the measurement window.
        #[arg(long, value_name = "DURATION")]
        pub warmup_time: Option<String>,
        /// Abandon streams as users do: after N tokens, or a time such as 800ms
        ///
        /// A number is generated tokens received; a duration counts from the send. The client
        /// closes the stream's connection there, and the record is `abandoned` (neither ok nor
        /// an error), counted apart and kept out of the figures. Measured requests only, a
        /// share of them (--cancel-share).
        #[arg(long, value_name = "N|DURATION")]
        pub cancel_after: Option<String>,
        /// The share of measured requests --cancel-after abandons, drawn per request from the
        /// seed [default: 1]
        #[arg(long, value_name = "SHARE")]
        pub cancel_share: Option<f64>,
    }
}

options! {
    /// Closed rounds, the warmup before each case, and repeats of the whole campaign.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "Rounds and repeats")]
    #[serde(default)]
    pub struct RoundOptions {
        /// Measured rounds per case [default: 3]
        #[arg(long)]
        pub rounds: Option<u32>,
        /// Unmeasured requests before each case's rounds [default: 1, one per model of a mix]
        ///
        /// On llama.cpp they run on slot 0. With a mix of models they go to the models in turn.
        #[arg(long)]
        pub warmup: Option<u32>,
        /// Run the whole campaign N times as one series in one attempt [default: once, no series]
        ///
        /// Each repeat runs every case (warmup, then its rounds) and is recorded apart; the
        /// figures combine the complete repeats only and show the variation between them. A
        /// repeat that is stopped or fails is listed, never combined. Closed rounds only.
        #[arg(long, value_name = "N")]
        pub repeat: Option<u32>,
    }
}

options! {
    /// Multi-turn chat sessions.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "Sessions")]
    #[serde(default)]
    pub struct SessionOptions {
        /// Multi-turn sessions of K turns (2 and up)
        ///
        /// Each turn sends the whole history so far (the previous answers included) and a new
        /// user message; the server's prefix cache may serve the history and nothing after it.
        /// Closed loops run --concurrency sessions in parallel, open loops start sessions at
        /// --rate sessions/s.
        #[arg(long, value_name = "K")]
        pub turns: Option<u32>,
        /// Tokens of each new user message after the first turn [default: as --input-tokens]
        ///
        /// The first is the case's prompt, --input-tokens.
        #[arg(long, value_name = "N")]
        pub turn_input: Option<u32>,
        /// Time between a turn's answer and the next turn: 2s, exp:MEAN, uniform:LOW..HIGH
        /// [default: 0s]
        ///
        /// Never counted as request time; drawn from --seed.
        #[arg(long, value_name = "TIME")]
        pub think_time: Option<String>,
        /// Previous answers in the history: as-generated or placeholder [default: as-generated]
        ///
        /// as-generated: the streamed text; placeholder: exactly the requested output length.
        #[arg(long, value_name = "HOW")]
        pub history: Option<crate::workload::session::History>,
        /// Sessions per case [default: one per place (closed), 10 (open)]
        ///
        /// One per place (--concurrency) in a closed loop, 10 in an open one; with --duration,
        /// sessions start until it ends and run to their last turn.
        #[arg(long, value_name = "N")]
        pub sessions: Option<u64>,
    }
}

options! {
    /// The objectives goodput counts against.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "Goodput objectives")]
    #[serde(default)]
    pub struct ObjectiveOptions {
        /// Time to first token, e.g. 500ms (from scheduled in an open loop)
        ///
        /// With a mix of models, MODEL=DURATION gives a model its own: 500ms,adapter-a=300ms.
        #[arg(long, value_name = "DURATION[,MODEL=DURATION…]")]
        pub slo_ttft: Option<String>,
        /// Time per output token, e.g. 50ms
        ///
        /// With a mix of models, MODEL=DURATION gives a model its own: 50ms,adapter-a=60ms.
        #[arg(long, value_name = "DURATION[,MODEL=DURATION…]")]
        pub slo_tpot: Option<String>,
        /// Complete-response time, e.g. 10s (from scheduled in an open loop)
        ///
        /// With a mix of models, MODEL=DURATION gives a model its own: 10s,adapter-a=5s.
        #[arg(long, value_name = "DURATION[,MODEL=DURATION…]")]
        pub slo_e2e: Option<String>,
    }
}

options! {
    /// GPU readings and the rules that stop a campaign.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "Guard and telemetry")]
    #[serde(default)]
    pub struct GuardOptions {
        /// GPU telemetry: auto, nvml, nvidia-smi, replay:FILE or off [default: auto]
        ///
        /// auto: NVML, else nvidia-smi, else none; replay:FILE plays JSONL readings from the
        /// start.
        #[arg(long, value_name = "SOURCE")]
        pub telemetry: Option<String>,
        /// Time between GPU readings [default: 1s]
        #[arg(long, value_name = "DURATION")]
        pub telemetry_interval: Option<String>,
        /// Stop the campaign when a GPU reaches this temperature, °C
        #[arg(long, value_name = "CELSIUS")]
        pub stop_temp: Option<f64>,
        /// Stop when a GPU's T.Limit margin falls to this or below, °C
        #[arg(long, value_name = "CELSIUS")]
        pub stop_margin: Option<f64>,
        /// Stop the campaign after this long, e.g. 4h
        #[arg(long, value_name = "DURATION")]
        pub max_duration: Option<String>,
        /// Stop after this many failed or invalid measured responses
        #[arg(long, value_name = "N")]
        pub max_errors: Option<u32>,
        /// Stop when the share of failed or invalid responses exceeds this, 0–1
        ///
        /// Checked from the 10th measured response on.
        #[arg(long, value_name = "SHARE")]
        pub max_error_rate: Option<f64>,
        /// Between cases, wait until every GPU is below this temperature, °C
        #[arg(long, value_name = "CELSIUS")]
        pub cool_down_below: Option<f64>,
        /// The longest a cool-down may wait before the case starts anyway [default: 10m]
        #[arg(long, value_name = "DURATION")]
        pub cool_down_timeout: Option<String>,
    }
}

options! {
    /// Where results go and what is printed.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "Outputs")]
    #[serde(default)]
    pub struct OutputOptions {
        /// Folder for results, written to OUT/NAME/ATTEMPT-ID/ [default: llmload-results]
        #[arg(long, value_name = "DIR")]
        pub out: Option<PathBuf>,
        /// Campaign name [default: campaign]
        #[arg(long)]
        pub name: Option<String>,
        /// Soak runs: cut the measurement window into windows this long
        ///
        /// Each window has its throughput, TTFT, errors and GPU readings, and the drift from the
        /// first to the last is stated. Asks for the soak series and its table: without it, a
        /// load of any --duration has none.
        #[arg(long, value_name = "DURATION")]
        pub series_window: Option<String>,
        /// Print only the results tables, aligned to the terminal's width
        ///
        /// Nothing on stderr but errors; the whole report is in report.md.
        #[arg(long, short, num_args = 0, default_missing_value = "true")]
        pub quiet: Option<bool>,
    }
}

options! {
    /// How a run is watched while it goes: the live view on a terminal, and `/metrics`.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "Watching")]
    #[serde(default)]
    pub struct WatchOptions {
        /// Serve the run's live figures at `http://ADDR/metrics` (Prometheus text) [default: not served]
        ///
        /// PORT or HOST:PORT. A bare port, or 127.0.0.1:PORT, listens on this machine only;
        /// another address (0.0.0.0:PORT, a pod's) must be given in full and is said at the
        /// start. Port 0 takes a free port, named on stderr. Read-only: GET /metrics and
        /// nothing else, no credential in it.
        #[arg(long, value_name = "ADDR")]
        pub metrics_listen: Option<String>,
        /// Keep /metrics up this long after the run, for a last scrape [default: 0s]
        ///
        /// A scraper that reads every 15 s would otherwise miss up to 15 s of the end. Ctrl-C
        /// ends the wait.
        #[arg(long, value_name = "DURATION")]
        pub metrics_linger: Option<String>,
        /// On a terminal, print the progress line instead of the live view
        ///
        /// The live view takes the terminal's screen while the run goes (the case and its ETA,
        /// TTFT, ITL and throughput over the last 30 s with their trends, failures by kind, the
        /// guard, the self-check) and gives it back at the end. Neither is drawn with --quiet
        /// or when stderr is not a terminal.
        #[arg(long, num_args = 0, default_missing_value = "true")]
        pub no_live: Option<bool>,
        /// When stderr is not a terminal, print a progress line this often (0 turns it off) [default: 30s]
        ///
        /// One line each time: the case, requests done of those planned, ok and failed, in
        /// flight (and waiting, for an open loop), elapsed time, so that a pipe or a CI log is
        /// not silent for minutes. Never with --quiet, nor on a terminal (the live view is there).
        #[arg(long, value_name = "DURATION")]
        pub heartbeat: Option<String>,
    }
}

options! {
    /// One attempt run by several processes.
    #[derive(Args, Clone, Debug, Default, Deserialize)]
    #[command(next_help_heading = "Sharding")]
    #[serde(default)]
    pub struct ShardOptions {
        /// Run shard I (from 0) of N of one attempt [default: the whole attempt]
        ///
        /// Every shard computes the same plan from the same seed and runs its part (open loops:
        /// arrivals I, I+N, I+2N…; closed-continuous: its share of the concurrency). Needs
        /// --attempt-id, --start-at and --url; `llmload merge` joins the shards' folders into
        /// one attempt.
        #[arg(long, value_name = "I/N")]
        pub shard: Option<String>,
        /// The id every shard of one attempt shares (letters, digits, '.', '_', '-')
        ///
        /// The shard's folder is OUT/NAME/ID-shard-I-of-N. Without --seed, the seed is derived
        /// from it.
        #[arg(long, value_name = "ID")]
        pub attempt_id: Option<String>,
        /// When the load begins: RFC 3339 in UTC or +DURATION from now, e.g. +30s
        ///
        /// For example 2026-05-01T12:00:00Z; setup and warmups happen before it.
        #[arg(long, value_name = "TIME")]
        pub start_at: Option<String>,
    }
}

options! {
    /// A run's options as given, all optional: the flags, or the campaign file.
    #[derive(Args, Clone, Debug, Default)]
    pub struct Settings {
        /// The server and its API.
        #[command(flatten)]
        pub target: TargetOptions,
        /// What each request sends.
        #[command(flatten)]
        pub workload: WorkloadOptions,
        /// How requests are launched.
        #[command(flatten)]
        pub load: LoadOptions,
        /// Closed rounds and warmups.
        #[command(flatten)]
        pub rounds: RoundOptions,
        /// Multi-turn sessions.
        #[command(flatten)]
        pub sessions: SessionOptions,
        /// Goodput objectives.
        #[command(flatten)]
        pub objectives: ObjectiveOptions,
        /// GPU telemetry and stop rules.
        #[command(flatten)]
        pub guard: GuardOptions,
        /// Results and printing.
        #[command(flatten)]
        pub outputs: OutputOptions,
        /// The live view and `/metrics`.
        #[command(flatten)]
        pub watch: WatchOptions,
        /// Shards of one attempt.
        #[command(flatten)]
        pub sharding: ShardOptions,
    }
}

impl Settings {
    /// The groups read from a campaign file's text: each takes its own keys (unknown keys were
    /// refused before, by [`Settings::keys`]).
    pub(super) fn from_toml(text: &str) -> Result<Settings, toml::de::Error> {
        Ok(Settings {
            target: toml::from_str(text)?,
            workload: toml::from_str(text)?,
            load: toml::from_str(text)?,
            rounds: toml::from_str(text)?,
            sessions: toml::from_str(text)?,
            objectives: toml::from_str(text)?,
            guard: toml::from_str(text)?,
            outputs: toml::from_str(text)?,
            watch: toml::from_str(text)?,
            sharding: toml::from_str(text)?,
        })
    }

    /// Every option's key, as the campaign file names it (the field's name; the flag's with `-`).
    pub fn keys() -> Vec<String> {
        let command = <Settings as Args>::augment_args(clap::Command::new("llmload"));
        command
            .get_arguments()
            .map(|a| a.get_id().as_str().to_owned())
            .collect()
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

#[cfg(test)]
mod tests;
