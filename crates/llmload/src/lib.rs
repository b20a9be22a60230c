//! llmload: benchmark LLM inference servers under concurrent load.
//!
//! The crate is layered; a module uses only those below it (see `docs/architecture.md`):
//!
//! - the face: `cli` (flags → settings), `commands` (what each subcommand prints, exit codes);
//! - the pipeline: this file, `views` (every file written besides the records), `sim` (the
//!   built-in simulator as a target), `merge` (the shards of one attempt joined);
//! - what to run: `plan`, `cases` (the matrix, the sweep), `config` (settings → a validated
//!   `Config`);
//! - running it: `runner` (the attempt's run, pacer, exchange → record), `progress`, `selfcheck`,
//!   `guard`, `board` (the `/metrics` board);
//! - comparing attempts: `compare` (which cases match, the regression gate, `ab`'s paired gate,
//!   what `llmload compare` prints);
//! - the attempt folder: `attempt` (create, append, read back, rebuild);
//! - results: `report` (pure renderers), `summary` (every result type and accumulator);
//! - the leaves: `workload`, `target`, `api`, `telemetry`, `record`, `stats`, `fmt`.
//!
//! [`measure`] is a run from top to bottom.

#![cfg_attr(
    test,
    expect(
        clippy::float_cmp,
        reason = "tests compare figures computed exactly from fixed inputs"
    )
)]

pub mod ab;
pub mod api;
pub mod attempt;
pub mod board;
pub mod capacity;
pub mod cases;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod compare;
pub mod config;
pub mod console;
pub mod delay;
pub mod error;
pub mod files;
#[cfg(test)]
pub(crate) mod fixture;
pub mod fmt;
pub mod guard;
pub mod merge;
pub mod num;
pub mod plan;
pub mod progress;
pub mod reconcile;
pub mod record;
pub mod report;
pub mod runner;
pub mod secrets;
pub mod selfcheck;
pub mod sim;
pub mod stats;
pub mod summary;
pub mod target;
pub mod telemetry;
pub mod tokenizer;
pub mod views;
pub mod workload;

use crate::api::client::Endpoint;
use crate::api::Api;
use crate::attempt::Attempt;
use crate::cases::{CaseSource, Matrix, Sweep, SweepOptions};
use crate::config::Config;
use crate::error::Error;
use crate::guard::StopSignal;
use crate::runner::attempt_run::AttemptRun;
use crate::summary::shards::ShardRun;
use crate::summary::sweep::SweepSection;
use crate::summary::Summary;
use crate::target::Target;
use crate::telemetry::Sampler;
use crate::workload::shape::CasePlan;
use crate::workload::source::{DatasetPrompts, PromptSource};
use std::path::PathBuf;

/// What a finished run leaves: where its files are, and its summary.
#[derive(Debug)]
pub struct RunResult {
    /// The attempt folder.
    pub dir: PathBuf,
    /// What `summary.json` holds.
    pub summary: Summary,
    /// `--metrics-listen`: the endpoint, still serving the final figures.
    pub metrics: Option<board::server::Server>,
}

/// Why `llmload sweep` takes no `--shard I/N` with N above 1.
pub const SWEEP_NOT_SHARDED: &str =
    "llmload sweep cannot be sharded: it chooses each load from the results of the one before, \
     which no shard sees whole; run one sharded `llmload run` per load";

/// Why `llmload sweep` takes no `--repeat`.
pub const SWEEP_NOT_REPEATED: &str =
    "llmload sweep takes no --repeat: each repeat would choose its own loads, and a series \
     combines the same cases only; run `llmload run --repeat N` over the sweep's loads";

/// `llmload run`: every case of the matrix; `interrupted` stops the run cleanly.
pub async fn run(config: &Config, interrupted: StopSignal) -> error::Result<RunResult> {
    execute(config, interrupted, &mut Matrix::new(config.plans())).await
}

/// `llmload sweep`: steps the load, then adds the saturation analysis to the summary and views.
pub async fn sweep(
    config: &Config,
    options: SweepOptions,
    interrupted: StopSignal,
) -> error::Result<(RunResult, SweepSection)> {
    if !config.sharding.shard.is_whole() {
        return Err(config::ConfigError(SWEEP_NOT_SHARDED.into()).into());
    }
    if config.repeat.is_some() {
        return Err(config::ConfigError(SWEEP_NOT_REPEATED.into()).into());
    }
    let mut source = Sweep::new(config, options)?;
    let mut result = execute(config, interrupted, &mut source).await?;
    let section = source.section(&result.summary, config);
    result.summary.sweep = Some(section.clone());
    views::rewrite(&result.dir, &result.summary)?;
    Ok((result, section))
}

/// `llmload capacity`: the search's probes as the attempt's cases, then the answer in the
/// summary and every view. The attempt's folder is named before it starts (`--attempt-id`, or
/// one made here) so that the search can read each block's records back as it goes.
pub async fn capacity(
    config: &Config,
    options: &capacity::CapacityOptions,
    interrupted: StopSignal,
) -> error::Result<(RunResult, summary::capacity::Capacity)> {
    if !config.sharding.shard.is_whole() {
        return Err(config::ConfigError(
            "llmload capacity cannot be sharded: it chooses each load from the one before".into(),
        )
        .into());
    }
    let mut config = config.clone();
    let id = config
        .sharding
        .attempt_id
        .get_or_insert_with(capacity_attempt_id)
        .clone();
    let records = config
        .out
        .join(&config.name)
        .join(&id)
        .join("requests.jsonl");
    let confidence = stats::interval::level();
    let mut source = capacity::CapacitySource::new(&config, options, confidence, records)?;
    let mut result = execute(&config, interrupted, &mut source).await?;
    let think_s = config.load.session.map(|s| s.think.mean().as_secs_f64());
    let answer = capacity::answer::answer(
        &source,
        &capacity::answer::Context {
            options,
            confidence,
            think_s,
            dir: &result.dir,
            cases: &result.summary.cases,
        },
    );
    result.summary.capacity = Some(answer.clone());
    views::rewrite(&result.dir, &result.summary)?;
    Ok((result, answer))
}

/// A fresh attempt id for a capacity search: the time to the second and a suffix from the
/// clock's nanoseconds and the process.
fn capacity_attempt_id() -> String {
    let now = std::time::SystemTime::now();
    let stamp: String = humantime::format_rfc3339_seconds(now)
        .to_string()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let nanos = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let suffix = (nanos ^ std::process::id().rotate_left(16)) & 0xffff;
    format!("capacity-{stamp}-{suffix:04x}")
}

/// Runs the cases of `source` against `--url`, or against the built-in simulator started here.
pub async fn execute<S: CaseSource>(
    config: &Config,
    interrupted: StopSignal,
    source: &mut S,
) -> error::Result<RunResult> {
    let simulator = match &config.url {
        Some(_) => None,
        None => Some(sim::start_default(config.quiet, &config.mix_names()).await?),
    };
    let url = config
        .url
        .clone()
        .or(simulator.as_ref().map(|s| s.url.clone()));
    let url = url.unwrap_or_default();
    measure(config, &url, simulator.is_some(), interrupted, source).await
}

/// One attempt, top to bottom: connect, prepare the prompts, create the attempt folder, run the
/// cases with the guard and telemetry watching (the views rewritten after every case), then
/// finish the summary and write every view.
pub async fn measure<S: CaseSource>(
    config: &Config,
    url: &str,
    simulated: bool,
    interrupted: StopSignal,
    source: &mut S,
) -> error::Result<RunResult> {
    api::http1::raise_open_files_limit();
    let (board, metrics) = serve_metrics(config).await?;
    let endpoint = endpoint(config, url)?;
    let (mut target, prompts, sampler) = tokio::select! {
        ready = prepare(config, endpoint) => ready?,
        signal = interrupted.raised() => return Err(Error::Stopped(format!(
            "stopped by {signal} while setting up, before the attempt folder was created"
        ))),
    };
    target.replicas = replicas(config, &target)?;
    let simulated = simulated || target.is_simulator();
    let attempt = match &config.sharding.attempt_id {
        Some(id) => Attempt::create_named(&config.out, &config.name, &shard_folder(config, id))?,
        None => Attempt::create(&config.out, &config.name)?,
    };
    views::campaign(&attempt, config, &target, simulated, &source.plans())?;
    let mut run = AttemptRun::start(
        config,
        (&target, &prompts),
        &attempt,
        sampler,
        (simulated, interrupted),
        board.clone(),
    )?;
    let sharded = !config.sharding.shard.is_whole();
    run.summary.shard = sharded.then(|| ShardRun {
        index: config.sharding.shard.index,
        count: config.sharding.shard.count,
        attempt_id: config.sharding.attempt_id.clone().unwrap_or_default(),
        config_fingerprint: views::fingerprint(config),
        seed: config.seed,
        start_at: config
            .sharding
            .start_at
            .map(|t| humantime::format_rfc3339_nanos(t).to_string()),
        ..ShardRun::default()
    });
    if let Some(stages) = &config.load.stages {
        // A staged load is one load: every stage's case comes from the one run.
        run.run_stages(&source.plans(), stages).await;
        views::write(&attempt, &run.summary)?;
    } else if let Some(repeats) = config.repeat {
        // A series: the same cases, run again as each repeat ends complete.
        let plans = source.plans();
        for k in 1..=repeats {
            run.begin_repeat(k, repeats);
            for plan in &plans {
                let go_on = run.run_case(plan, plans.len()).await;
                views::write(&attempt, &run.written())?;
                if !go_on {
                    break;
                }
            }
            let go_on = run.end_repeat(plans.len())?;
            // Closed: a run killed in the next repeat is rebuilt with this one as it ended.
            views::write(&attempt, &run.written())?;
            if !go_on {
                break;
            }
        }
    } else {
        let mut listed = source.plans().len();
        while let Some(plan) = source.next(&run.summary.cases) {
            // A sweep decides its cases as it goes: each is in `campaign.json` before it runs,
            // so that a run killed in it is rebuilt with it.
            if source.plans().len() != listed {
                listed = source.plans().len();
                views::campaign(&attempt, config, &target, simulated, &source.plans())?;
            }
            let go_on = run.run_case(&plan, source.planned()).await;
            views::write(&attempt, &run.summary)?;
            if !go_on {
                break;
            }
        }
    }
    let mut summary = run.finish(source.planned()).await?;
    if let Some(shard) = &mut summary.shard {
        // After the load, so that the estimate neither delays its start nor adds to it.
        shard.clock = clock::estimate(&target.endpoint).await;
    }
    // A sweep decides its cases as it goes: the file lists those it ran.
    views::campaign(&attempt, config, &target, simulated, &source.plans())?;
    views::write(&attempt, &summary)?;
    views::write_html(&attempt, &summary)?;
    Ok(RunResult {
        dir: attempt.dir,
        summary,
        metrics,
    })
}

/// Several `--url`: an endpoint for each replica, as the first was set up (its API, its
/// tokenizer, whether connections are kept); none with one.
fn replicas(config: &Config, target: &Target) -> error::Result<Vec<Endpoint>> {
    config
        .replicas
        .urls
        .iter()
        .map(|url| {
            let mut replica = reach(config, url, target.endpoint.api)?;
            replica.tokenizer.clone_from(&target.endpoint.tokenizer);
            if target.endpoint.keeps_no_connection() {
                replica.keep_no_connection();
            }
            Ok(replica)
        })
        .collect()
}

/// The endpoint of `url` as `config` says to reach it, with `--tokenizer`'s tokenizer.
fn endpoint(config: &Config, url: &str) -> error::Result<Endpoint> {
    let tokenizer = config
        .tokenizer
        .as_deref()
        .map(tokenizer::Tokenizer::load)
        .transpose()?;
    let mut endpoint = reach(config, url, config.api.unwrap_or(Api::Llamacpp))?;
    endpoint.tokenizer = tokenizer.map(std::sync::Arc::new);
    Ok(endpoint)
}

/// The endpoint of `url` speaking `api`, as `config` says to reach it (its headers, key, TLS,
/// timeouts and `--session-header`), without a tokenizer.
fn reach(config: &Config, url: &str, api: Api) -> error::Result<Endpoint> {
    let mut endpoint = Endpoint::build(
        url,
        api,
        (config.timeout, config.setup_timeout),
        config.authorization().as_deref(),
        &config.header_pairs(),
        &config.tls,
    )?;
    endpoint
        .session_header
        .clone_from(&config.replicas.session_header);
    Ok(endpoint)
}

/// `--metrics-listen`: the board and its endpoint, listening before anything else is done (an
/// address in use stops the run at once); where it listens is said on stderr (unless `--quiet`),
/// and an address beyond this machine is said even then.
async fn serve_metrics(
    config: &Config,
) -> error::Result<(
    Option<std::sync::Arc<board::Board>>,
    Option<board::server::Server>,
)> {
    let Some(metrics) = config.watch.metrics else {
        return Ok((None, None));
    };
    let board = board::Board::new(board::flight::Flight::new());
    let server = board::server::Server::bind(metrics.addr, board.clone()).await?;
    if !metrics.loopback() {
        console::note(format_args!(
            "note: --metrics-listen {}: /metrics is reachable from other machines (read-only, \
             no credentials in it)",
            server.addr()
        ));
    }
    // A port the system chose (`:0`) is told even under --quiet: nothing else tells it.
    if !config.quiet || metrics.addr.port() == 0 {
        console::note(format_args!("metrics: http://{}/metrics", server.addr()));
    }
    Ok((Some(board), Some(server)))
}

/// The folder of a run with `--attempt-id ID`: `ID`, or `ID-shard-I-of-N` for a shard.
fn shard_folder(config: &Config, id: &str) -> String {
    let shard = config.sharding.shard;
    if shard.is_whole() {
        id.to_owned()
    } else {
        format!("{id}-shard-{}-of-{}", shard.index, shard.count)
    }
}

/// Checks, before anything is sent, that every case's longest prompt and output fit the server's
/// context (where it says what that is): a request past it fails with the server's own, often
/// misleading, message.
fn check_context(target: &Target, plans: &[CasePlan]) -> error::Result<()> {
    let Some((limit, source)) = target.context_limit() else {
        return Ok(());
    };
    for plan in plans {
        let (input, output) = plan.longest();
        let needed = u64::from(input) + u64::from(output);
        if needed > limit {
            return Err(config::ConfigError(format!(
                "case {} needs {needed} tokens of context ({input} prompt + {output} output), \
                 more than the server's {limit} ({source}): lower --input-tokens or \
                 --output-tokens{}",
                plan.case.id,
                if matches!(
                    plan.shape,
                    crate::workload::shape::Shape::Sessions { graph: Some(_), .. }
                ) {
                    " (a call's prompt holds its context's prompt and answer: shorter calls in \
                     the --dag file)"
                } else if matches!(plan.shape, crate::workload::shape::Shape::Sessions { .. }) {
                    " (a session's last turn holds every earlier turn: or fewer --turns, a \
                     shorter --turn-input)"
                } else {
                    ""
                }
            ))
            .into());
        }
    }
    Ok(())
}

/// Setup: the target, its prompts, and the telemetry source; every step within its deadline.
async fn prepare(
    config: &Config,
    endpoint: Endpoint,
) -> error::Result<(Target, PromptSource, Sampler)> {
    let mut target = Target::connect(
        endpoint,
        (config.model.clone(), &config.mix_names()),
        config.api,
        config.extra_body.clone(),
    )
    .await?;
    target.drop_fields.clone_from(&config.drop_fields);
    let dropped_before = target.drop_fields.len();
    target.check_fields(config.best_effort).await?;
    if target.drop_fields.len() > dropped_before && !config.quiet {
        if let Some(note) = &target.dropped_note {
            console::note(format_args!("note: {note}"));
        }
    }
    check_context(&target, &config.plans())?;
    if target.endpoint.api.is_pooling() {
        // An embeddings or rerank endpoint the server does not serve fails here, once, and not
        // as a whole case of failed requests.
        target
            .probe(api::Prompt::Text("llmload setup check".into()))
            .await
            .map_err(|e| Error::Target(format!("--api {}: {e}", target.endpoint.api.name())))?;
    }
    let corpus = workload::read_corpus(config.corpus.as_deref())?;
    let prompts = PromptSource::prepare(
        &target,
        &corpus,
        config.load.system_prompt_tokens,
        config.best_effort,
    )
    .await?
    .with_block_tokens(config.load.trace_block_tokens)
    .with_dataset(config.dataset.as_ref().map(|d| DatasetPrompts {
        dataset: d.dataset.clone(),
        lengths: d.lengths,
        output: d.output,
    }));
    // What an image of each size costs, from the server's counts of a few probes.
    let with_images: Vec<_> = config
        .images
        .iter()
        .copied()
        .filter(|s| s.count > 0)
        .collect();
    let prompts = prompts.with_image_costs(
        workload::source::image_costs(&target, &with_images)
            .await
            .map_err(|e| error::Error::Target(format!("learning what an image costs: {e}")))?,
    );
    let sampler =
        Sampler::connect(&config.telemetry, config.telemetry_interval, config.quiet).await?;
    Ok((target, prompts, sampler))
}
