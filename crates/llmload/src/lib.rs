//! llmload: benchmark LLM inference servers under concurrent load.
//!
//! The pipeline, top to bottom:
//! `Args → Config → cases → prompts (workload) → runner ⇄ api → Record → stats/summary → report`.
//! [`run`] is that line; each stage lives in its own module.

pub mod api;
pub mod attempt;
pub mod cli;
pub mod commands;
pub mod config;
pub mod guard;
pub mod pacer;
pub mod plan;
pub mod progress;
pub mod record;
pub mod report;
pub mod runner;
pub mod saturation;
pub mod selfcheck;
pub mod sim;
pub mod soak;
pub mod stats;
pub mod summary;
pub mod sweep;
pub mod target;
pub mod telemetry;
pub mod window;
pub mod workload;

use crate::api::client::Endpoint;
use crate::attempt::{host_info, Attempt, SCHEMA_VERSION};
use crate::cli::RunArgs;
use crate::config::Config;
use crate::guard::{Guard, Verdict};
use crate::record::RecordSink;
use crate::runner::Runner;
use crate::summary::{CaseSummary, Outcome, OutcomeStatus, Summary};
use crate::sweep::{CaseSource, Matrix};
use crate::target::Target;
use crate::telemetry::Sampler;
use crate::workload::source::PromptSource;
use anyhow::Context;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What a finished run leaves: where its files are, and its summary.
#[derive(Debug)]
pub struct RunResult {
    /// The attempt folder.
    pub dir: PathBuf,
    /// What `summary.json` holds.
    pub summary: Summary,
}

/// `llmload run`: resolve the config, measure every case, write the records and the summary.
pub async fn run(args: &RunArgs) -> anyhow::Result<RunResult> {
    let config = Config::resolve(args)?;
    execute(&config, &mut Matrix::new(config.plans())).await
}

/// Runs the cases of `source` against the configured server (or the built-in simulator), with
/// Ctrl-C stopping the run cleanly.
pub async fn execute<S: CaseSource>(config: &Config, source: &mut S) -> anyhow::Result<RunResult> {
    let (url, simulator) = match config.url.clone() {
        Some(url) => (url, None),
        None => {
            let simulator = sim::start_default().await?;
            if !config.quiet {
                eprintln!(
                    "no --url: measuring the built-in simulator (profile {}) at {}; results are SIMULATED",
                    sim::DEFAULT_PROFILE,
                    simulator.url
                );
            }
            (simulator.url.clone(), Some(simulator))
        }
    };
    let interrupted = CancellationToken::new();
    let on_interrupt = interrupted.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
            // A second Ctrl-C ends the process at once; what was measured is already on disk.
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    let result = run_source(config, &url, simulator.is_some(), interrupted, source).await;
    drop(simulator);
    result
}

/// Runs the campaign of `config` against `url`; `simulated` marks the built-in simulator;
/// `interrupted` fires on Ctrl-C.
pub async fn run_campaign(
    config: &Config,
    url: &str,
    simulated: bool,
    interrupted: CancellationToken,
) -> anyhow::Result<RunResult> {
    let mut matrix = Matrix::new(config.plans());
    run_source(config, url, simulated, interrupted, &mut matrix).await
}

/// Runs the cases of `source` against `url`: the body of [`run_campaign`].
pub async fn run_source<S: CaseSource>(
    config: &Config,
    url: &str,
    simulated: bool,
    interrupted: CancellationToken,
    source: &mut S,
) -> anyhow::Result<RunResult> {
    api::http1::raise_open_files_limit();
    let endpoint = endpoint(config, url)?;
    let target = Target::connect(endpoint, config.model.clone()).await?;
    // A `llmload sim` reached through --url is simulated too: it says so in /props.
    let simulated = simulated || target.server["props"]["llmload_sim"].is_object();
    let corpus = read_corpus(config)?;
    let prompts = PromptSource::prepare(&target, &corpus, config.load.system_prompt_tokens).await?;
    let sampler =
        Sampler::connect(&config.telemetry, config.telemetry_interval, config.quiet).await?;
    let attempt = Attempt::create(&config.out, &config.name)?;
    let origin = Instant::now();
    attempt.write_json(
        "campaign.json",
        &campaign_json(config, &attempt, &target, simulated, &source.plans()),
    )?;
    let cancel = CancellationToken::new();
    let guard = Arc::new(Guard::new(config.limits.clone(), origin, cancel.clone()));
    let monitors = Monitors::start(
        config,
        sampler,
        &target,
        &attempt,
        &guard,
        interrupted,
        origin,
    );
    let (progress, drawing) = progress::Progress::start(config.quiet, guard.clone());
    let mut sink = RecordSink::create(&attempt.dir.join("requests.jsonl"))
        .context("creating requests.jsonl")?;
    let mut runner = Runner {
        target: &target,
        prompts: &prompts,
        sink: &mut sink,
        origin,
        cancel,
        guard: &guard,
        seed: config.seed,
        serial: 0,
        progress: progress.clone(),
        slo: config.load.slo,
        series_window: soak::window_length(config),
    };
    let mut summary = Summary {
        schema_version: SCHEMA_VERSION,
        attempt_id: attempt.id.clone(),
        target_url: url.to_owned(),
        api: config.api.name().to_owned(),
        model: target.model.clone(),
        simulated,
        cases: Vec::new(),
        outcome: Outcome::new(&[], source.planned() as u32, None, None),
        telemetry: None,
        sweep: None,
        client_check: None,
    };
    let self_check = selfcheck::Monitor::start();
    let failure = run_cases(config, &mut runner, &attempt, &mut summary, source).await;
    progress.finish(drawing);
    let failure = failure?;
    guard.process_check("the final process check");
    summary.telemetry = monitors.finish(&attempt).await;
    summary.client_check = Some(self_check.finish(&summary.cases).await);
    set_outcome(&mut summary, &guard, failure, source.planned());
    // A sweep decides its cases as it goes: the file lists those it ran.
    attempt.write_json(
        "campaign.json",
        &campaign_json(config, &attempt, &target, simulated, &source.plans()),
    )?;
    write_views(&attempt, &summary)?;
    report::write_html(&attempt, &summary)?;
    Ok(RunResult {
        dir: attempt.dir,
        summary,
    })
}

/// The corpus prompts are built from: `--corpus`, else the bundled text.
fn read_corpus(config: &Config) -> anyhow::Result<String> {
    match &config.corpus {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading --corpus {}", path.display())),
        None => Ok(workload::BUNDLED_CORPUS.to_owned()),
    }
}

/// What watches the run beside the runner: GPU telemetry, the server's `/metrics`, and Ctrl-C.
struct Monitors {
    stop: CancellationToken,
    telemetry: tokio::task::JoinHandle<telemetry::TelemetrySummary>,
    scraper: tokio::task::JoinHandle<telemetry::server_metrics::ServerMetricsSummary>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Monitors {
    fn start(
        config: &Config,
        sampler: Sampler,
        target: &Target,
        attempt: &Attempt,
        guard: &Arc<Guard>,
        interrupted: CancellationToken,
        origin: Instant,
    ) -> Monitors {
        let stop = CancellationToken::new();
        Monitors {
            telemetry: tokio::spawn(sampler.run(
                attempt.dir.clone(),
                origin,
                guard.clone(),
                stop.clone(),
            )),
            scraper: tokio::spawn(telemetry::server_metrics::scrape(
                target.endpoint.client.clone(),
                format!("{}/metrics", target.endpoint.base_url),
                config.telemetry_interval,
                attempt.dir.clone(),
                origin,
                stop.clone(),
            )),
            watcher: tokio::spawn(trip_on_interrupt(interrupted, guard.clone())),
            stop,
        }
    }

    /// Stops them; the telemetry summary, with the server metrics' when there were any (their
    /// file is removed when the server had none).
    async fn finish(self, attempt: &Attempt) -> Option<telemetry::TelemetrySummary> {
        self.stop.cancel();
        self.watcher.abort();
        let server_metrics = self.scraper.await.ok().filter(|m| m.scrapes > 0);
        if server_metrics.is_none() {
            let _ = std::fs::remove_file(attempt.dir.join("server_metrics.jsonl"));
        }
        self.telemetry.await.ok().map(|mut t| {
            t.server_metrics = server_metrics;
            t
        })
    }
}

async fn trip_on_interrupt(interrupted: CancellationToken, guard: Arc<Guard>) {
    interrupted.cancelled().await;
    guard.trip(Verdict {
        rule: "interrupted".into(),
        reason: "interrupted by the user (Ctrl-C)".into(),
        sample: guard.latest(),
        at: "signal".into(),
    });
}

/// Runs every case in order until the guard fires or a case cannot go on; returns why it could
/// not, if so. Views are rewritten after every case.
async fn run_cases<S: CaseSource>(
    config: &Config,
    runner: &mut Runner<'_>,
    attempt: &Attempt,
    summary: &mut Summary,
    source: &mut S,
) -> anyhow::Result<Option<String>> {
    let mut failure = None;
    while let Some(plan) = source.next(&summary.cases) {
        let case = &plan.case;
        if runner
            .guard
            .process_check(&format!("before case {}", case.id))
        {
            break;
        }
        cool_down(config, runner.guard).await;
        let number = summary.cases.len() + 1;
        runner.progress.case(number, source.planned(), &plan);
        match runner.run_case(&plan, config.warmup).await {
            Ok(run) => {
                summary
                    .cases
                    .push(window::summarise(&plan, run, &attempt.dir));
            }
            Err(e) => failure = Some(format!("case {}: {e:#}", case.id)),
        }
        if let (false, Some(done)) = (config.quiet, summary.cases.last()) {
            runner
                .progress
                .println(&progress_line(summary.cases.len(), source.planned(), done));
        }
        set_outcome(summary, runner.guard, failure.clone(), source.planned());
        write_views(attempt, summary)?;
        if runner.guard.verdict().is_some() || failure.is_some() {
            break;
        }
    }
    Ok(failure)
}

/// Waits, before a case, until every GPU is below `--cool-down-below` (up to the timeout).
async fn cool_down(config: &Config, guard: &Guard) {
    let Some(below) = config.cool_down_below_c else {
        return;
    };
    let deadline = Instant::now() + config.cool_down_timeout;
    while guard.latest().is_some_and(|r| r.temperature_c >= below) && Instant::now() < deadline {
        if guard.process_check("cool-down") {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

fn set_outcome(summary: &mut Summary, guard: &Guard, failure: Option<String>, total: usize) {
    let verdict = guard.verdict();
    let stop = verdict
        .as_ref()
        .map(|v| format!("stopped by the {} rule at {}: {}", v.rule, v.at, v.reason));
    summary.outcome = Outcome::new(&summary.cases, total as u32, stop, failure);
    summary.outcome.stop_sample = verdict
        .and_then(|v| v.sample)
        .and_then(|sample| serde_json::to_value(sample).ok());
}

fn write_views(attempt: &Attempt, summary: &Summary) -> anyhow::Result<()> {
    attempt.write_json("summary.json", summary)?;
    attempt.write_text("report.md", &report::markdown::render(summary))?;
    attempt.write_text("cases.csv", &report::csv::render(summary))
}

fn nominal(load: &window::LoadSummary) -> String {
    match (load.nominal_rate_rps, load.nominal_concurrency) {
        (Some(rate), Some(cap)) => format!("{rate} requests/s, at most {cap} in flight"),
        (Some(rate), None) => format!("{rate} requests/s, uncapped"),
        (None, Some(c)) => format!("{c} in flight"),
        (None, None) => "none".into(),
    }
}

fn progress_line(done: usize, total: usize, case: &CaseSummary) -> String {
    if let Some(load) = &case.load {
        return format!(
            "case {done}/{total} {}: {} ok, {} failed; {:.2} tokens/s over the window; in flight \
             {:.2} on average, {} at peak (nominal: {}); send lag p99 {}",
            case.id,
            case.counts.ok,
            case.counts.error + case.counts.cancelled + case.counts.invalid,
            load.throughput_tps,
            load.achieved_concurrency_mean,
            load.achieved_concurrency_peak,
            nominal(load),
            load.send_lag_ms
                .as_ref()
                .map_or_else(|| "–".to_owned(), |d| format!("{:.3} ms", d.p99)),
        );
    }
    let ttft = case
        .ttft_ms
        .as_ref()
        .map_or("–".into(), |d| format!("{:.1} ms", d.median));
    let tps = case
        .throughput_tps
        .as_ref()
        .map_or("–".into(), |t| format!("{:.2}", t.mean));
    format!(
        "case {done}/{total} {}: {}/{} rounds complete, {} ok, {} invalid, {} failed; median TTFT {ttft}, {tps} tokens/s",
        case.id,
        case.rounds.iter().filter(|r| r.complete).count(),
        case.rounds_planned,
        case.counts.ok,
        case.counts.invalid,
        case.counts.error + case.counts.cancelled,
    )
}

fn endpoint(config: &Config, url: &str) -> anyhow::Result<Endpoint> {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
    let mut headers = HeaderMap::new();
    if let Some(key) = &config.api_key {
        let value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            config::ConfigError("--api-key holds characters not allowed in a header".into())
        })?;
        headers.insert(AUTHORIZATION, value);
    }
    for (name, value) in &config.headers {
        let name = HeaderName::from_bytes(name.as_bytes()).context("header name")?;
        headers.insert(name, HeaderValue::from_str(value).context("header value")?);
    }
    let client = reqwest::Client::builder()
        .default_headers(headers.clone())
        .tcp_nodelay(true)
        .pool_max_idle_per_host(usize::MAX)
        .connect_timeout(config.timeout)
        .build()
        .context("building the HTTP client")?;
    Ok(Endpoint::new(
        client,
        url,
        config.api,
        config.timeout,
        &headers,
    ))
}

fn campaign_json(
    config: &Config,
    attempt: &Attempt,
    target: &Target,
    simulated: bool,
    plans: &[workload::shape::CasePlan],
) -> serde_json::Value {
    json!({
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "llmload", "version": env!("CARGO_PKG_VERSION")},
        "attempt_id": attempt.id,
        "started_at": attempt.started_at,
        "time_origin": "record times (*_s) are seconds since started_at, on the monotonic clock",
        "config": config,
        "cases": plans,
        "target": {
            "url": target.endpoint.base_url,
            "api": config.api,
            "model": target.model,
            "simulated": simulated,
            "server": target.server,
        },
        "host": host_info(),
    })
}

/// Exit status of `llmload run`.
pub fn exit_code(outcome: &Outcome) -> u8 {
    match outcome.status {
        OutcomeStatus::Completed => 0,
        OutcomeStatus::Failed => 3,
        OutcomeStatus::Stopped => 4,
    }
}
