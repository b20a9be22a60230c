//! Command line: clap derive. Each flag's doc comment is its `--help` text.

use crate::api::Api;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod convert;

/// Benchmark LLM inference servers under concurrent load, and tell the truth about what was measured.
#[derive(Debug, Parser)]
#[command(name = "llmload", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a campaign: input tokens × concurrency × output tokens, warmup then measured rounds.
    Run(Box<RunArgs>),
    /// Serve the built-in engine simulator until stopped.
    Sim(SimArgs),
    /// Step the load (--concurrency 1,2,4,8, --rate 1,2,4 or --auto) and find the saturation
    /// point, the recommended cap and the largest load meeting the SLO.
    Sweep(Box<SweepArgs>),
    /// Rebuild report.md, cases.csv and report.html of an attempt from its records alone.
    Report(ReportArgs),
    /// Attempts side by side, per matching case, with ratios to the first; never pooled.
    Compare(CompareArgs),
    /// Join the shard folders of one attempt (`run --shard I/N`) into one attempt folder, every
    /// figure rebuilt from their records.
    Merge(MergeArgs),
    /// Answer capacity questions from measured attempts: the largest concurrency or rate that
    /// keeps a TTFT budget at the typical and maximum prompt length, the case that supports it,
    /// and what to run where the measurements fall short.
    Plan(PlanArgs),
}

/// `llmload report`: regenerate an attempt's views.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The attempt folder (OUT/NAME/ATTEMPT-ID), holding campaign.json and requests.jsonl.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Print the rebuilt summary (summary.json's content) as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `llmload merge`: the shards of one attempt joined.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shard folders (OUT/NAME/ID-shard-I-of-N), one per shard of one attempt; a missing
    /// one makes the outcome say so.
    #[arg(value_name = "SHARD_DIR", required = true)]
    pub dirs: Vec<PathBuf>,
    /// Folder for the merged attempt, written to OUT/NAME/ATTEMPT-ID/ [default: llmload-results].
    #[arg(long, value_name = "DIR", default_value = "llmload-results")]
    pub out: PathBuf,
    /// Print the merged summary (summary.json's content) as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Print only the results table.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `llmload compare`: attempts side by side.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Attempt folders; ratios are relative to the first.
    #[arg(value_name = "DIR", num_args = 2.., required = true)]
    pub dirs: Vec<PathBuf>,
    /// Print the comparison as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// A regression rule, `METRIC > CHANGE` or `METRIC < CHANGE`, e.g. `ttft_p50 > +10%` or
    /// `throughput < -50tok/s`; checked on every case each later attempt shares with the first;
    /// exit code 5 when one breaks. May be repeated.
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<String>,
    /// A TOML file of rules: `fail_if = ["ttft_p50 > +10%", …]`, added to --fail-if.
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,
}

/// `llmload plan`: capacity answers from measured attempts.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Attempt folders (sweeps, or runs over several loads); each is answered on its own.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,
    /// Typical prompt length, tokens.
    #[arg(long, value_name = "N")]
    pub prompt_tokens: u32,
    /// Longest prompt the service must take, tokens.
    #[arg(long, value_name = "N")]
    pub max_prompt_tokens: Option<u32>,
    /// Generated tokens per response.
    #[arg(long, value_name = "N")]
    pub output_tokens: u32,
    /// Acceptable time to first token at --percentile, e.g. 2s or 500ms.
    #[arg(long, value_name = "DURATION")]
    pub ttft: String,
    /// Acceptable time per output token at --percentile, e.g. 50ms.
    #[arg(long, value_name = "DURATION")]
    pub tpot: Option<String>,
    /// The percentile the budgets must hold at.
    #[arg(long, value_enum, default_value = "p99")]
    pub percentile: crate::plan::Percentile,
    /// Simultaneous generations wanted: is this concurrency within the budget?
    #[arg(long, value_name = "C")]
    pub concurrency: Option<u32>,
    /// Arrivals per second wanted (answered from open-loop attempts).
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `llmload run`: flags override the values of `--config`.
#[derive(Debug, Default, Args)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "the command line's yes/no flags, each independent of the others"
)]
pub struct RunArgs {
    /// TOML campaign file (keys are the flag names with `_` for `-`); flags given here override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Base URL of the server, e.g. <http://127.0.0.1:8080>. Without it, the built-in simulator
    /// (profile seed-qwen3-8b) is started and measured, and every output says so.
    #[arg(long)]
    pub url: Option<String>,
    /// API to drive [default: picked from the server: llamacpp for llama-server and the built-in
    /// simulator, completions for any other server that lists models at /v1/models].
    #[arg(long, value_enum)]
    pub api: Option<Api>,
    /// Model name for `OpenAI` APIs [default: the first one the server lists].
    #[arg(long)]
    pub model: Option<String>,
    /// Bearer token sent as `Authorization: Bearer KEY`.
    #[arg(long, env = "LLMLOAD_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra request header, `NAME:VALUE`; may be repeated.
    #[arg(long = "header", value_name = "NAME:VALUE")]
    pub headers: Vec<String>,
    /// Limit per request, from send to final event, e.g. 90s or 10m [default: 10m].
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Limit for each setup request (/health, /props, /v1/models, /tokenize, …) and each
    /// /metrics scrape, connecting included [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub setup_timeout: Option<String>,
    /// A PEM file of certificates to trust besides the system's, for an https:// server whose
    /// certificate a private CA signed (or a self-signed one).
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// Do not check the https:// server's certificate or host name (traffic is still
    /// encrypted, but anyone in between could read it).
    #[arg(long)]
    pub insecure: bool,
    /// A header whose value may be written to the attempt's files and printed (values of other
    /// headers than a few harmless ones, such as User-Agent, are redacted); may be repeated.
    #[arg(long = "show-header", value_name = "NAME")]
    pub show_headers: Vec<String>,
    /// Fields merged into every request body, as a JSON object (for example
    /// '{"temperature": 0, "seed": 1}'); the prompt, the output length and streaming stay
    /// llmload's.
    #[arg(long, value_name = "JSON")]
    pub extra_body: Option<String>,
    /// Prompt lengths: a comma-separated list of token counts (one case each), or one
    /// distribution sampled per request: `choice:32,256,1024`, `choice:32@0.5,256@0.5`,
    /// `uniform:MIN,MAX`, `normal:MEAN,SD[,MIN,MAX]`, `lognormal:MEDIAN,SIGMA[,MIN,MAX]`
    /// [default: 2048,8192].
    #[arg(long, value_name = "N,…|SPEC")]
    pub input_tokens: Vec<String>,
    /// Simultaneous requests per round, comma-separated [default: 1,4].
    #[arg(long, value_delimiter = ',', value_name = "C,…")]
    pub concurrency: Vec<u32>,
    /// Generated tokens per request (EOS ignored): a comma-separated list, or one distribution
    /// as for --input-tokens [default: 256].
    #[arg(long, value_name = "N,…|SPEC")]
    pub output_tokens: Vec<String>,
    /// How requests are launched: rounds (C together, the default), closed-continuous (keep C in
    /// flight), or an open loop at --rate: poisson, gamma (--burstiness) or constant.
    #[arg(long, value_enum)]
    pub arrival: Option<crate::workload::shape::Arrival>,
    /// Open loop: arrivals per second, comma-separated (one case each).
    #[arg(long, value_delimiter = ',', value_name = "R,…")]
    pub rate: Vec<f64>,
    /// Replay a trace: JSONL lines of {"`offset_s`", "`input_tokens`", "`output_tokens`"}, or of
    /// {"timestamp" (ms), "`input_length`", "`output_length`", "`hash_ids`"} whose shared blocks
    /// become shared prompt prefixes; or CSV (by its .csv name or header) with the header
    /// `TIMESTAMP,ContextTokens,GeneratedTokens` (the Azure LLM inference traces) or
    /// `timestamp,input_length,output_length[,hash_ids]`; implies --arrival trace.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Tokens per block of a trace's `hash_ids` [default: 512].
    #[arg(long, value_name = "N")]
    pub trace_block_tokens: Option<u32>,
    /// Prompts from a local dataset: JSONL lines of {"prompt"} or {"messages"}, or `ShareGPT`
    /// {"conversations"} (JSONL or one JSON array).
    #[arg(long, value_name = "FILE")]
    pub dataset: Option<PathBuf>,
    /// Dataset prompts: fit (cut or repeated to exactly --input-tokens, verified) or as-is (sent
    /// unchanged; the server's count is recorded) [default: fit].
    #[arg(long, value_name = "HOW")]
    pub dataset_lengths: Option<crate::workload::dataset::Lengths>,
    /// Dataset runs' output lengths: fixed (--output-tokens) or from-dataset (each entry's
    /// answer, counted by the server's tokenizer) [default: fixed].
    #[arg(long, value_name = "FROM")]
    pub dataset_output: Option<crate::workload::dataset::Output>,
    /// A staged load, one case per stage, with no gap between them: comma-separated
    /// DURATION[:ramp]:rate=R (open loop, --arrival poisson by default) or
    /// DURATION[:ramp]:concurrency=C (closed-continuous); `ramp` changes the level linearly from
    /// the previous stage's (0 before the first), e.g. 10s:rate=2,30s:ramp:rate=8,30s:rate=8.
    #[arg(long, value_name = "STAGES")]
    pub stages: Option<String>,
    /// Gamma arrivals: coefficient of variation of the gaps (1 = Poisson, above 1 = bursty)
    /// [default: 1].
    #[arg(long, value_name = "CV")]
    pub burstiness: Option<f64>,
    /// Open and continuous loops: launch requests for this long, e.g. 60s.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Open and continuous loops: launch this many requests [default: 100 without --duration].
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,
    /// Open loop: the most requests in flight; time spent waiting for a place is send lag.
    #[arg(long, value_name = "K")]
    pub max_in_flight: Option<u32>,
    /// Open and continuous loops: requests launched in this first stretch are warmup, outside the
    /// measurement window [default: 0s].
    #[arg(long, value_name = "DURATION")]
    pub warmup_time: Option<String>,
    /// Soak runs: cut the measurement window into windows this long, each with its throughput,
    /// TTFT, errors and GPU readings, and state the drift from the first to the last [default:
    /// with --duration, a twentieth of (duration − warmup time) in whole seconds, 1s to 5m].
    #[arg(long, value_name = "DURATION")]
    pub series_window: Option<String>,
    /// Goodput objective: time to first token (from scheduled in an open loop), e.g. 500ms.
    #[arg(long, value_name = "DURATION")]
    pub slo_ttft: Option<String>,
    /// Goodput objective: time per output token, e.g. 50ms.
    #[arg(long, value_name = "DURATION")]
    pub slo_tpot: Option<String>,
    /// Goodput objective: complete-response time (from scheduled in an open loop), e.g. 10s.
    #[arg(long, value_name = "DURATION")]
    pub slo_e2e: Option<String>,
    /// Open every prompt with the same S tokens, a shared system prompt: the server may serve
    /// them from its prefix cache (it is allowed to for those tokens alone), and the summary
    /// reports the hit rate its counters show. The rest of each prompt stays unique [default: 0].
    #[arg(long, value_name = "S")]
    pub system_prompt_tokens: Option<u32>,
    /// Multi-turn sessions of K turns (2 and up): each turn sends the whole history so far (the
    /// previous answers included) and a new user message; the server's prefix cache may serve the
    /// history and nothing after it. Closed loops run --concurrency sessions in parallel, open
    /// loops start sessions at --rate sessions/s.
    #[arg(long, value_name = "K")]
    pub turns: Option<u32>,
    /// Sessions: tokens of each new user message after the first turn (the first is the case's
    /// prompt, --input-tokens) [default: drawn as --input-tokens].
    #[arg(long, value_name = "N")]
    pub turn_input: Option<u32>,
    /// Sessions: the time between a turn's answer and the next turn, never counted as request
    /// time: a duration (2s), exp:MEAN (exponential) or uniform:LOW..HIGH, drawn from --seed
    /// [default: 0s].
    #[arg(long, value_name = "TIME")]
    pub think_time: Option<String>,
    /// Sessions: the previous answers in the history as generated (the streamed text) or as a
    /// placeholder of exactly the requested output length [default: as-generated].
    #[arg(long, value_name = "HOW")]
    pub history: Option<crate::workload::session::History>,
    /// Sessions per case [default: one per place (--concurrency) in a closed loop, 10 in an open
    /// one; with --duration, sessions start until it ends and run to their last turn].
    #[arg(long, value_name = "N")]
    pub sessions: Option<u64>,
    /// Measured rounds per case [default: 3].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Unmeasured requests before each case's rounds (slot 0 on llama.cpp) [default: 1].
    #[arg(long)]
    pub warmup: Option<u32>,
    /// Seed for prompt offsets and nonces; the same seed reproduces the same prompts
    /// [default: a fresh one per attempt, recorded in campaign.json].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Folder for results; an attempt writes to OUT/NAME/ATTEMPT-ID/ [default: llmload-results].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Campaign name [default: campaign].
    #[arg(long)]
    pub name: Option<String>,
    /// Text to build prompts from [default: the bundled public-domain text].
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<PathBuf>,
    /// The model's tokenizer, a Hugging Face tokenizer.json: the client counts with it where the
    /// server does not (prompts on a server without /tokenize or usage; the tokens of each chunk
    /// on a server that sends several per chunk without saying how many).
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// Run against a server that cannot be forced to the output length or does not report its
    /// counts (a hosted endpoint, a gateway that drops fields): outputs as long as the server
    /// makes them, tokens counted by the client where the server does not say, and every such
    /// response marked unverified with its reason, never invalid for its length alone.
    #[arg(long)]
    pub best_effort: bool,
    /// GPU telemetry: auto (NVML, else nvidia-smi, else none), nvml, nvidia-smi, replay:FILE
    /// (JSONL readings played from the start) or off [default: auto].
    #[arg(long, value_name = "SOURCE")]
    pub telemetry: Option<String>,
    /// Time between GPU readings [default: 1s].
    #[arg(long, value_name = "DURATION")]
    pub telemetry_interval: Option<String>,
    /// Stop the campaign when a GPU reaches this temperature, °C (the harness's threshold).
    #[arg(long, value_name = "CELSIUS")]
    pub stop_temp: Option<f64>,
    /// Stop when a GPU's T.Limit margin falls to this or below, °C.
    #[arg(long, value_name = "CELSIUS")]
    pub stop_margin: Option<f64>,
    /// Stop the campaign after this long, e.g. 4h.
    #[arg(long, value_name = "DURATION")]
    pub max_duration: Option<String>,
    /// Stop after this many failed or invalid measured responses.
    #[arg(long, value_name = "N")]
    pub max_errors: Option<u32>,
    /// Stop when the share of failed or invalid measured responses exceeds this (0–1; checked
    /// from the 10th response on).
    #[arg(long, value_name = "SHARE")]
    pub max_error_rate: Option<f64>,
    /// Between cases, wait until every GPU is below this temperature, °C.
    #[arg(long, value_name = "CELSIUS")]
    pub cool_down_below: Option<f64>,
    /// The longest a cool-down may wait before the case starts anyway [default: 10m].
    #[arg(long, value_name = "DURATION")]
    pub cool_down_timeout: Option<String>,
    /// Print only the results table.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print summary.json's content on stdout instead of the table (a sweep's includes its
    /// analysis).
    #[arg(long)]
    pub json: bool,
    /// Run shard I (from 0) of N of one attempt: every shard computes the same plan from the
    /// same seed and runs its part (open loops: arrivals I, I+N, I+2N…; closed-continuous: its
    /// share of the concurrency). Needs --attempt-id, --start-at and --url; `llmload merge`
    /// joins the shards' folders into one attempt.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The id every shard of one attempt shares (letters, digits, '.', '_', '-'); the shard's
    /// folder is OUT/NAME/ID-shard-I-of-N. Without --seed, the seed is derived from it.
    #[arg(long, value_name = "ID")]
    pub attempt_id: Option<String>,
    /// When the load begins: an RFC 3339 instant in UTC (2026-05-01T12:00:00Z) or +DURATION
    /// from now (+30s); setup and warmups happen before it.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
}

/// `llmload sweep`: every flag of `run`, the loads being the sweep's steps.
#[derive(Debug, Default, Args)]
pub struct SweepArgs {
    /// The campaign: one --input-tokens and one --output-tokens; --concurrency or --rate lists
    /// the loads.
    #[command(flatten)]
    pub run: RunArgs,
    /// Step the load geometrically (1, 2, 4, … or from the first --rate) until throughput stops
    /// rising, then fill in around the best load.
    #[arg(long)]
    pub auto: bool,
    /// The largest load --auto may try [default: 256].
    #[arg(long, value_name = "LOAD")]
    pub max_load: Option<f64>,
    /// Stop adding load once p99 TTFT is above this, e.g. 2s.
    #[arg(long, value_name = "DURATION")]
    pub stop_ttft_p99: Option<String>,
    /// Stop adding load once the share of failed or invalid responses is above this (0–1).
    #[arg(long, value_name = "SHARE")]
    pub stop_error_rate: Option<f64>,
    /// Throughput counts as rising when it gains at least this share over the best so far
    /// [default: 0.05].
    #[arg(long, value_name = "SHARE")]
    pub min_gain: Option<f64>,
    /// Stop a listed sweep after two loads in a row without that gain (--auto always stops its
    /// doubling there).
    #[arg(long)]
    pub stop_flat: bool,
}

/// `llmload sim`: serve the engine simulator.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Port to listen on; 0 picks a free one. The address is printed on the first line.
    #[arg(long)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Built-in profile name or a TOML profile file.
    #[arg(long, default_value = "seed-qwen3-8b")]
    pub profile: String,
    /// Slots (maximum running sequences), overriding the profile.
    #[arg(long)]
    pub slots: Option<usize>,
    /// Seed for jitter and fault selection.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run this many times faster than the modelled engine (records say so).
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Fault to inject, e.g. `http503:rate=0.1` or `drop:index=3,after=5`; may be repeated.
    #[arg(long = "fault", value_name = "SPEC")]
    pub faults: Vec<String>,
    /// When tokens are sent: `engine` (the profile's model), `zero-cost` (as fast as the
    /// connection takes them, one event per write) or `fixed:ttft_ms=100,itl_ms=20` (an exact
    /// per-request timeline, no batching, no jitter); the last two are for measuring clients.
    #[arg(long, default_value = "engine", value_name = "SCHEDULE")]
    pub schedule: String,
    /// Play a hosted OpenAI-compatible endpoint: only /v1/models and the `OpenAI` generation APIs
    /// answer (no /props, /tokenize or /metrics), usage is never reported, and `ignore_eos` and
    /// `min_tokens` are ignored.
    #[arg(long)]
    pub hosted: bool,
}
