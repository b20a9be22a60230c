//! Command line: clap derive. Each flag's doc comment is its `--help` text.

use crate::config::Settings;
use crate::sim::SimOptions;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod ab;
mod capacity;
mod convert;

pub use ab::AbArgs;

/// Benchmark LLM inference servers under concurrent load, and tell the truth about what was measured.
#[derive(Debug, Parser)]
#[command(name = "llmload", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The command line, parsed; a number clap cannot read is said with its flag and an
    /// example ("--rounds abc: a whole number, e.g. --rounds 3"). Exits on a bad command line.
    pub fn parse_plainly() -> Cli {
        Cli::try_parse().unwrap_or_else(|e| plainly(e).exit())
    }
}

/// `error` with a value that is not a number said with its flag and an example, or as it is.
fn plainly(error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::ValueValidation {
        return error;
    }
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (Some(arg), Some(value)) = (
        text(ContextKind::InvalidArg),
        text(ContextKind::InvalidValue),
    ) else {
        return error;
    };
    let flag = arg.split_whitespace().next().unwrap_or(&arg).to_owned();
    let said = error.to_string();
    let (what, example) = if said.contains("invalid float literal") {
        ("a number", "0.5")
    } else if [
        "invalid digit",
        "number too large",
        "empty string",
        "too small",
    ]
    .iter()
    .any(|w| said.contains(w))
    {
        ("a whole number", "3")
    } else {
        return error;
    };
    let message =
        format!("invalid value {value:?} for {flag}: {what} is expected, e.g. {flag} {example}\n");
    clap::Error::raw(ErrorKind::ValueValidation, message)
}

/// `--confidence`, for the commands whose figures carry intervals (not `sim`).
#[derive(Clone, Copy, Debug, Default, Args)]
#[command(next_help_heading = "Statistics")]
pub struct Level {
    /// Confidence level of every interval, e.g. 95% or 0.9 [default: 95%]
    ///
    /// From 50 % to 99.9 %. The intervals of summary.json, the reports, compare and its gate
    /// are at this level; `report` and `compare` recompute at the level they are given.
    #[arg(long, value_name = "LEVEL", value_parser = crate::stats::interval::parse_level)]
    pub confidence: Option<f64>,
}

impl Command {
    /// The `--confidence` given to the command, if it takes one.
    pub fn confidence(&self) -> Option<f64> {
        match self {
            Command::Run(a) => a.level.confidence,
            Command::Sweep(a) => a.run.level.confidence,
            Command::Capacity(a) => a.run.level.confidence,
            Command::Report(a) => a.level.confidence,
            Command::Compare(a) => a.level.confidence,
            Command::Merge(a) => a.level.confidence,
            Command::Plan(a) => a.level.confidence,
            Command::Reconcile(a) => a.level.confidence,
            Command::Ab(a) => a.run.level.confidence,
            Command::Sim(_) | Command::DelayProxy(_) => None,
        }
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a campaign: input tokens × concurrency × output tokens, warmup then measured rounds;
    /// without --url, against the built-in simulator (every output then says SIMULATED).
    Run(Box<RunArgs>),
    /// Serve the built-in engine simulator until stopped.
    Sim(SimOptions),
    /// A TCP proxy that delays what clients send by a constant, wandering or jumping amount,
    /// until stopped (for testing and benchmarking the A/B gate).
    #[command(hide = true)]
    DelayProxy(crate::delay::DelayOptions),
    /// Step the load (--concurrency 1,2,4,8, --rate 1,2,4 or --auto) and find the saturation
    /// point, the recommended cap and the largest load meeting the SLO.
    Sweep(Box<SweepArgs>),
    /// The largest load that meets objectives: a search decided at a confidence
    ///
    /// Takes every flag of `run` that describes the workload, and one --slo or more. The load
    /// is requests kept in flight (closed-continuous) by default; users with --think-time
    /// (sessions of --turns, 4 by default); requests/s with --arrival poisson|gamma. It grows
    /// the load geometrically until one fails, then bisects to --resolution; each load runs in
    /// blocks until a sequential test decides its verdict at --confidence, or its cap. Exit 0
    /// when decided, 3 when not (with the command that goes on).
    Capacity(Box<CapacityArgs>),
    /// Rebuild report.md, cases.csv and report.html of an attempt from its records alone.
    Report(ReportArgs),
    /// Attempts side by side, per matching case, with ratios to the first; never pooled.
    Compare(CompareArgs),
    /// Measure a base and a candidate interleaved in one attempt (blocks of rounds in a random
    /// ABBA/BAAB order), both arms side by side, and gate on the paired changes (--fail-if).
    Ab(Box<AbArgs>),
    /// Join the shard folders of one attempt (`run --shard I/N`) into one attempt folder, every
    /// figure rebuilt from their records.
    Merge(MergeArgs),
    /// Answer capacity questions from measured attempts: the largest concurrency or rate that
    /// keeps a TTFT budget at the typical and maximum prompt length, the case that supports it,
    /// and what to run where the measurements fall short.
    Plan(PlanArgs),
    /// Set another tool's saved result for the same server and workload (`vllm bench serve
    /// --save-result --save-detailed`, AIPerf's or GuideLLM's exports) beside an attempt's
    /// records: each figure as the other tool gives it, llmload's records under its definition,
    /// llmload's own, and the gap explained term by term.
    Reconcile(ReconcileArgs),
}

/// `llmload reconcile`: another tool's figures explained from an attempt's records.
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// The attempt folder (OUT/NAME/ATTEMPT-ID).
    #[arg(value_name = "ATTEMPT")]
    pub dir: PathBuf,
    /// The other tool's result: `vllm bench serve --save-result` JSON (`--save-detailed` for
    /// the workload checks and the other side's intervals), AIPerf's
    /// `profile_export_aiperf.json` or `profile_export.jsonl` (or the folder holding them),
    /// GuideLLM's `benchmarks.json`.
    #[arg(value_name = "OTHER_RESULT")]
    pub other: PathBuf,
    /// The case of the attempt to set against it, where it has several that fit.
    #[arg(long, value_name = "ID")]
    pub case: Option<String>,
    /// The run of the other file to set against it (from 1), where it holds several (a
    /// GuideLLM sweep's benchmarks).
    #[arg(long, value_name = "N")]
    pub benchmark: Option<usize>,
    /// Print the reconciliation as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// The intervals' level.
    #[command(flatten)]
    pub level: Level,
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
    /// Show the figures as another tool defines them (vllm: `vllm bench serve`; aiperf:
    /// `AIPerf`; guidellm: `GuideLLM`, token-weighted; genai-bench), from the same records,
    /// instead of rebuilding the views.
    #[arg(long, value_name = "TOOL")]
    pub dialect: Option<crate::reconcile::dialect::Dialect>,
    /// The intervals' level.
    #[command(flatten)]
    pub level: Level,
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
    /// The intervals' level.
    #[command(flatten)]
    pub level: Level,
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
    /// Which verdicts fail the gate (exit 5) [default: regressed]
    ///
    /// `regressed`: only a change beyond a rule's bound with the stated confidence.
    /// `inconclusive`: also a change whose interval straddles the bound, or a figure too thin
    /// for an interval.
    #[arg(long = "fail-on", value_enum, value_name = "VERDICT")]
    pub fail_on: Option<FailOn>,
    /// Earlier attempts of the same cases, for the gate's between-run term
    ///
    /// Their spread from one attempt to the next (beyond each attempt's own noise) joins every
    /// check's interval, so that a regression must exceed it; at least two attempts of a case.
    /// Takes every folder that follows up to the next flag.
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub history: Vec<PathBuf>,
    /// The intervals' level.
    #[command(flatten)]
    pub level: Level,
}

/// The verdicts that fail `compare`'s gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Regressed rules only.
    Regressed,
    /// Regressed and inconclusive rules.
    Inconclusive,
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
    /// Earlier attempts of the same cases, for the spread between runs
    ///
    /// The figures of the same case (prompt and output lengths, load shape, load) in these
    /// attempts, with the answer's own, give the interval of a re-measurement. Takes every
    /// folder that follows up to the next flag.
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub history: Vec<PathBuf>,
    /// The intervals' level.
    #[command(flatten)]
    pub level: Level,
}

/// `llmload run`: flags override the values of `--config`.
#[derive(Debug, Default, Args)]
pub struct RunArgs {
    /// TOML campaign file (keys are the flag names with `_` for `-`); flags override it
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Every option of the run, under its heading.
    #[command(flatten)]
    pub settings: Settings,
    /// Print summary.json's content on stdout instead of the table
    ///
    /// A sweep's includes its analysis.
    #[arg(long, help_heading = "Outputs")]
    pub json: bool,
    /// The intervals' level.
    #[command(flatten)]
    pub level: Level,
}

/// `llmload capacity`'s flags: `run`'s, and the search's.
#[derive(Debug, Default, Args)]
pub struct CapacityArgs {
    /// The workload: every flag of `run` but the load, which the search sets.
    #[command(flatten)]
    pub run: RunArgs,
    /// An objective: `ttft_p99<2s`, `tpot_p50<50ms`, `e2e_p90<8s`, `itl_p99<100ms`,
    /// `ttft<2s@95%`, `errors<1%`; repeat it for several
    #[arg(
        long = "slo",
        value_name = "RULE",
        required = true,
        help_heading = "Capacity"
    )]
    pub slo: Vec<String>,
    /// The bracket that answers: whole loads (1: neighbours) or a rate's ratio (5%)
    /// [default: 1, or 5% for rates]
    #[arg(long, value_name = "N|SHARE", help_heading = "Capacity")]
    pub resolution: Option<String>,
    /// The first load the search tries, e.g. near where the answer is expected [default: 1, or
    /// the first --rate]
    #[arg(long, value_name = "LOAD", help_heading = "Capacity")]
    pub start: Option<f64>,
    /// The largest load the search may try [default: 1024, or 10000 requests/s]
    #[arg(long, value_name = "LOAD", help_heading = "Capacity")]
    pub max_load: Option<f64>,
    /// Stop starting blocks after this long, e.g. 20m; the best bracket so far is the answer
    #[arg(long, value_name = "DURATION", help_heading = "Capacity")]
    pub budget: Option<String>,
    /// An earlier capacity attempt's folder: its blocks are reused at the same loads
    #[arg(long, value_name = "ATTEMPT", help_heading = "Capacity")]
    pub resume: Option<PathBuf>,
}

/// `llmload sweep`: every flag of `run`, the loads being the sweep's steps.
#[derive(Debug, Default, Args)]
pub struct SweepArgs {
    /// The campaign: one --input-tokens and one --output-tokens; --concurrency or --rate lists
    /// the loads.
    #[command(flatten)]
    pub run: RunArgs,
    /// Step the load geometrically (1, 2, 4, … or from the first --rate) until throughput stops
    /// rising, then add loads inside `C_sat`'s range until it is narrow or --max-loads is spent.
    #[arg(long)]
    pub auto: bool,
    /// The largest load --auto may try [default: 256].
    #[arg(long, value_name = "LOAD")]
    pub max_load: Option<f64>,
    /// The most loads --auto may measure, doubling and refining `C_sat`'s range together
    /// [default: 12].
    #[arg(long, value_name = "N")]
    pub max_loads: Option<usize>,
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
