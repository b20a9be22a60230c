//! Every option of a run, declared once. Each group (below; the target's and the workload's in
//! `options/target.rs` and `options/workload.rs`) is at the same time clap `Args` (its
//! flags, under one `--help` heading) and serde `Deserialize` (the campaign file's keys, which
//! are the flag names with `_` for `-`), all-optional, with its [`Combine`](super::Combine)
//! derived from the fields. [`Settings`] holds the groups; [`Config::resolve`](super::Config::resolve)
//! is the one place that fills in defaults and validates.
//!
//! A field's doc comment is its help: the first paragraph is `-h`'s one line, ending with the
//! default, and the whole is `--help`'s text. A new option is one field here, its validation in
//! `resolve`, and its line in docs/usage.md (a test checks that the manual names every flag).

use super::combine::options;
use super::settings::StagesSetting;
use crate::workload::shape::Arrival;
use clap::Args;
use serde::Deserialize;
use std::path::PathBuf;

mod target;
mod workload;
pub use target::TargetOptions;
pub use workload::WorkloadOptions;

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
        /// Output canaries: N fixed greedy prompts, sent alone first, then under each case's load
        ///
        /// Each canary (64 prompt tokens, 32 generated, temperature 0, a fixed seed where the
        /// API takes one) is sent alone once for its reference output; after each case's
        /// measured rounds, each prompt goes twice in canary rounds, with the case's
        /// concurrency less one other requests beside it. Its output under load is compared
        /// with the reference: each case says how many diverged and where first. Canary rounds
        /// are in no figure of the load. Closed rounds and continuous loops of a generation API.
        #[arg(long, value_name = "N")]
        pub canaries: Option<u32>,
        /// With --canaries: fail a case whose canaries diverged in a larger share (exit 6)
        ///
        /// 0 fails at any divergence. Without it, the canaries are reported only.
        #[arg(long, value_name = "SHARE")]
        pub canary_fail: Option<f64>,
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
        /// Closed sessions: start the first ones spread evenly over one mean think time
        ///
        /// Without it every place's first session starts at once, and with a fixed
        /// --think-time the users then keep in step, their turns arriving in waves. With it,
        /// the k-th of N places starts its first session k/N of a mean think time in, as users
        /// arriving one by one would. `capacity` does this for users.
        #[arg(long, num_args = 0, default_missing_value = "true")]
        pub stagger: Option<bool>,
        /// Session graphs of agents' calls: a JSONL file, one call a line
        ///
        /// Each call names its `session` and `call`, the calls it waits for (`after`), the wait
        /// after the last of them (`wait_ms`, tool or think time), the call whose prompt and
        /// answer its prompt extends (`context`, or none for a fresh context), its
        /// `new_tokens` and `output_tokens`. Closed loops run --concurrency sessions in
        /// parallel, open loops start sessions at --rate sessions/s; each of the file's
        /// sessions runs once unless --sessions or --duration says otherwise. Also read: the
        /// KV-cache tester's agentic traces (a conversation a JSON object, sub-agents nested;
        /// a file, or a folder of them) and AIPerf's trace rows with a `session_id`.
        #[arg(long, value_name = "FILE")]
        pub dag: Option<PathBuf>,
        /// Session graphs of agents made up from a spec, KEY=VALUE,… (instead of --dag)
        ///
        /// Each session an agent: a first call (system prompt and task), a tool loop (`loops`,
        /// each call extending the last with `tool_tokens` after `tool` time), fan-outs to
        /// sub-agents every `fanout_every` loop calls (`fanout` of them, `sub_loops` calls
        /// each, fresh contexts, the agent waiting for all), a fresh context every `compact`
        /// calls (`system` + `summary` tokens), and an answer after `think`. Also `sessions`,
        /// `task`, `output`, `seed`; ranges as LOW-HIGH, times as --think-time's.
        #[arg(long, value_name = "SPEC")]
        pub dag_synth: Option<String>,
        /// Multiply every wait of a --dag file by this [default: 1]
        #[arg(long, value_name = "FACTOR")]
        pub dag_time_scale: Option<f64>,
        /// Cap every wait of a --dag file (after the scale) at this, e.g. 30s; none by default
        #[arg(long, value_name = "DURATION")]
        pub dag_max_wait: Option<String>,
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
        /// Price of one GPU for an hour: each case's cost per million tokens
        ///
        /// In any currency (the figures are in the same). The cost of a case is the price ×
        /// --gpus × its measurement window, over the tokens of its ok responses in that window:
        /// output tokens, or the input tokens of embeddings and rerank.
        #[arg(long, value_name = "PRICE")]
        pub gpu_cost_per_hour: Option<f64>,
        /// GPUs the server runs on, for --gpu-cost-per-hour [default: 1]
        #[arg(long, value_name = "N")]
        pub gpus: Option<u32>,
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

#[cfg(test)]
mod tests;
