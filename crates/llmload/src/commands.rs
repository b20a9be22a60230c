//! What each subcommand prints: the human tables (or, with `--json`, the machine-readable
//! result) on stdout, where the records went on stderr, and the exit code. The work itself is in
//! the pipeline (`run`, `sweep`, `report`, `plan`); `main` only parses and exits.
//!
//! Exit codes: 0 every case complete; 1 the run could not start or go on (unreachable server,
//! I/O); 2 bad flags or campaign file; 3 finished with incomplete cases (`plan`: the
//! measurements do not cover the whole question); 4 stopped (interrupted or by a guard); 5
//! `compare` and `ab`: a `--fail-if` rule broke (the regression gate).

use crate::cli::Command;
use crate::compare::{self, gate, keys};
use crate::config::Config;
use crate::console;
use crate::error::{Error, Result};
use crate::guard::StopSignal;
use crate::plan::Question;
use crate::report::markdown;
use crate::summary::{Outcome, OutcomeStatus, Summary};

/// `compare`'s exit code when a rule of the gate broke.
pub const GATE_FAILED: u8 = 5;

/// Runs `command`; returns its exit code.
pub async fn execute(command: Command) -> Result<u8> {
    match command {
        Command::Run(args) => run(&args).await,
        Command::Sweep(args) => {
            let options = (&*args).try_into()?;
            let config = Config::resolve(args.run.settings()?)?;
            crate::secrets::install(config.scrubber());
            warn_at_start(&config);
            let stop = interrupts();
            let (mut result, _) = crate::sweep(&config, options, stop.clone()).await?;
            if args.run.json {
                out(&json(&result.summary))?;
            } else {
                out(&crate::report::terminal::sweep(
                    &result.summary,
                    crate::report::terminal::width(),
                ))?;
            }
            records_line(&result.dir, config.quiet);
            linger(&mut result, &config, &stop).await;
            Ok(exit_code(&result.summary.outcome))
        }
        Command::Capacity(args) => Box::pin(capacity(&args)).await,
        Command::Sim(args) => crate::sim::serve_until_stopped(&args).await.map(|()| 0),
        Command::DelayProxy(args) => crate::delay::serve_until_stopped(&args).await.map(|()| 0),
        Command::Report(args) if args.dialect.is_some() => {
            let dialect = args
                .dialect
                .unwrap_or(crate::reconcile::dialect::Dialect::Vllm);
            let cases = crate::reconcile::in_dialect(&args.dir, dialect)?;
            if args.json {
                out(&json(&cases))?;
            } else {
                out(&crate::reconcile::dialect::render(dialect, &cases))?;
            }
            Ok(0)
        }
        Command::Report(args) => {
            tidy_on_stop();
            let report = crate::views::regenerate(&args.dir)?;
            out(&summary_text(&report.summary, args.json))?;
            Ok(0)
        }
        Command::Merge(args) => merge(&args),
        Command::Compare(args) => {
            let rules = args.rules()?;
            let attempts = keys::keyed(&args.dirs)?;
            let history = crate::error::Context::context(keys::keyed(&args.history), "--history")?;
            let checks = gate::evaluate_with(&rules, &attempts, &history);
            let strict = args.fail_on == Some(crate::cli::FailOn::Inconclusive);
            let gated = (!rules.is_empty()).then_some((checks.as_slice(), strict));
            if args.json {
                out(&json(&compare::to_json(&args.dirs, &attempts, gated)))?;
            } else {
                out(&compare::render(&attempts))?;
                if gated.is_some() {
                    out(&compare::render_gate(&rules, &checks, strict))?;
                }
            }
            let failed = checks.iter().any(|c| c.verdict.fails(strict));
            Ok(if failed { GATE_FAILED } else { 0 })
        }
        Command::Ab(args) => Box::pin(ab(&args)).await,
        Command::Plan(args) => {
            let question = Question::try_from(&args)?;
            let plan = crate::plan::plan_with_history(&args.dirs, &args.history, &question)?;
            if args.json {
                out(&json(&plan))?;
            } else {
                out(&crate::plan::render(&plan))?;
            }
            Ok(if plan.covered { 0 } else { 3 })
        }
        Command::Reconcile(args) => {
            let r = crate::reconcile::reconcile(
                &args.dir,
                &args.other,
                args.case.as_deref(),
                args.benchmark,
            )?;
            if args.json {
                out(&json(&r))?;
            } else {
                out(&crate::reconcile::render::render(&r))?;
            }
            Ok(0)
        }
    }
}

/// `llmload capacity`: the search, then its answer (the capacity section, or with `--json` the
/// `capacity` object); exit 0 when decided, 3 when not, 4 when stopped.
async fn capacity(args: &crate::cli::CapacityArgs) -> Result<u8> {
    let config = Config::resolve(args.settings()?)?;
    crate::secrets::install(config.scrubber());
    let options = args.options(command_line())?;
    warn_at_start(&config);
    let stop = interrupts();
    let (mut result, answer) = crate::capacity(&config, &options, stop.clone()).await?;
    if args.run.json {
        out(&json(&answer))?;
    } else {
        out(&crate::report::terminal::capacity(
            &result.summary,
            crate::report::terminal::width(),
        ))?;
    }
    records_line(&result.dir, config.quiet);
    linger(&mut result, &config, &stop).await;
    Ok(match result.summary.outcome.status {
        OutcomeStatus::Stopped => 4,
        _ if answer.decided => 0,
        _ => 3,
    })
}

/// The command line as given, for the line that continues a search: the values of
/// `--api-key` and `--header` left out, and any secret the run knows scrubbed.
fn command_line() -> Vec<String> {
    let mut words = vec!["llmload".to_owned()];
    let mut hide = false;
    for word in std::env::args().skip(1) {
        if hide {
            words.push("'…'".to_owned());
            hide = false;
            continue;
        }
        hide = matches!(word.as_str(), "--api-key" | "--header" | "-H");
        let word = if word.starts_with("--api-key=") || word.starts_with("--header=") {
            format!("{}=…", word.split('=').next().unwrap_or_default())
        } else {
            word
        };
        words.push(crate::secrets::scrub(&word).into_owned());
    }
    words
}

/// `llmload ab`: both arms interleaved, what it printed, its exit code: 5 when the paired gate
/// fails, else the run's own.
async fn ab(args: &crate::cli::AbArgs) -> Result<u8> {
    let (configs, options) = args.resolve()?;
    crate::secrets::install(configs[0].scrubber());
    warn_at_start(&configs[0]);
    let quiet = configs[0].quiet;
    let stop = interrupts();
    let result = Box::pin(crate::ab::ab(configs, &options, stop)).await?;
    if quiet && !args.run.json {
        // -q: the A/B section alone (both arms side by side, the gate).
        let report = crate::report::Report::of(&result.summary);
        let section: Vec<_> = crate::report::ab::section(&report).into_iter().collect();
        let width = crate::report::terminal::width();
        out(&crate::report::terminal::write(&section, width))?;
    } else {
        out(&summary_text(&result.summary, args.run.json))?;
    }
    records_line(&result.dir, quiet);
    let failed = result
        .summary
        .ab
        .as_ref()
        .is_some_and(crate::summary::ab::AbSection::failed);
    Ok(if failed {
        GATE_FAILED
    } else {
        exit_code(&result.summary.outcome)
    })
}

/// Exit status of `llmload run` and `llmload sweep`.
pub fn exit_code(outcome: &Outcome) -> u8 {
    match outcome.status {
        OutcomeStatus::Completed => 0,
        OutcomeStatus::Failed | OutcomeStatus::Running => 3,
        OutcomeStatus::Stopped => 4,
    }
}

/// `llmload run`: the run, what it printed, its exit code.
async fn run(args: &crate::cli::RunArgs) -> Result<u8> {
    let config = Config::resolve(args.settings()?)?;
    crate::secrets::install(config.scrubber());
    warn_at_start(&config);
    let stop = interrupts();
    let mut result = crate::run(&config, stop.clone()).await?;
    out(&results_text(&result.summary, args.json, config.quiet))?;
    records_line(&result.dir, config.quiet);
    linger(&mut result, &config, &stop).await;
    Ok(canary_code(
        &result.summary,
        exit_code(&result.summary.outcome),
    ))
}

/// `--canary-fail`'s exit code: a case's canaries diverged in a larger share than it allows.
pub const CANARIES_FAILED: u8 = 6;

/// `code`, or [`CANARIES_FAILED`] where the run otherwise completed and a case's canaries
/// failed their check.
fn canary_code(summary: &crate::summary::Summary, code: u8) -> u8 {
    let failed = summary
        .cases
        .iter()
        .any(|c| c.canaries.as_ref().is_some_and(|c| c.check_failed));
    if code == 0 && failed {
        CANARIES_FAILED
    } else {
        code
    }
}

/// The exit code of an error: 2 for bad flags or a bad campaign file, else 1.
pub fn error_code(error: &Error) -> u8 {
    if error.is_usage() {
        2
    } else if error.is_stop() {
        4
    } else {
        1
    }
}

/// What `run` and `merge` print: the summary as JSON, the results tables alone and aligned
/// (`--quiet`), or the whole report.
fn results_text(summary: &Summary, json_wanted: bool, quiet: bool) -> String {
    if quiet && !json_wanted {
        crate::report::terminal::results(summary, crate::report::terminal::width())
    } else {
        summary_text(summary, json_wanted)
    }
}

/// The report, or with `json` the summary itself: on a terminal its tables aligned and its
/// prose wrapped to the width; Markdown elsewhere (a file, a pipe), as `report.md` holds it.
fn summary_text(summary: &Summary, json_wanted: bool) -> String {
    use std::io::IsTerminal as _;
    if json_wanted {
        json(summary)
    } else if std::io::stdout().is_terminal() {
        crate::report::terminal::page(summary, crate::report::terminal::width())
    } else {
        markdown::render(summary)
    }
}

/// Where the records are, on stderr, unless quiet.
/// What a run should not start without saying, on stderr (unless `--quiet`).
/// Warnings that hold for the whole run, printed even with `--quiet`: turning checks off is never
/// silent.
fn warn_at_start(config: &Config) {
    if !config.quiet {
        for note in &config.notes {
            console::note(format_args!("note: {note}"));
        }
    }
    if config.tls.insecure {
        console::note("warning: --insecure: the server's certificate is not checked");
    }
}

/// `--metrics-linger`: after the results are out, `/metrics` stays up with the final figures for
/// a last scrape, until the time is over or a stop signal comes.
async fn linger(result: &mut crate::RunResult, config: &Config, stop: &StopSignal) {
    let (Some(server), Some(metrics)) = (result.metrics.take(), config.watch.metrics) else {
        return;
    };
    if !metrics.linger.is_zero() && !config.quiet {
        console::note(format_args!(
            "metrics: the final figures stay at http://{}/metrics for {} (Ctrl-C ends it)",
            server.addr(),
            humantime::format_duration(metrics.linger)
        ));
    }
    server
        .linger(metrics.linger, async {
            stop.raised().await;
        })
        .await;
}

fn records_line(dir: &std::path::Path, quiet: bool) {
    if !quiet {
        console::note(format_args!("records: {}", dir.display()));
    }
}

/// Writes `text` on stdout: a reader that has gone is no error, a full disk is (the command's
/// results are on disk by then).
fn out(text: &str) -> Result<()> {
    console::out(text).map_err(|source| Error::Io {
        what: "cannot write to stdout".into(),
        source,
    })
}

/// `value` as pretty JSON and a newline.
fn json(value: &impl serde::Serialize) -> String {
    match serde_json::to_string_pretty(value) {
        Ok(text) => text + "\n",
        Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
    }
}

/// The stop signals: the first SIGINT (Ctrl-C), SIGTERM (what Kubernetes, systemd and CI
/// runners send) or SIGHUP stops the run as the guard does (requests in flight cancelled and
/// recorded, the summary and views written); a second one exits at once. Every record is
/// flushed as it is written, so what was measured is on disk either way.
///
/// One stop often arrives twice: GNU `timeout` sends its signal to its child and then to the
/// whole process group, and a shell or a supervisor may do the same. A signal within
/// [`SAME_STOP`] of the first is taken as that stop delivered again, not as a second stop.
pub fn interrupts() -> StopSignal {
    let stop = StopSignal::new();
    let raise = stop.clone();
    let mut streams = stop_signals();
    tokio::spawn(async move {
        raise.raise(next_signal(&mut streams).await);
        let first = std::time::Instant::now();
        loop {
            next_signal(&mut streams).await;
            if is_second_stop(first.elapsed()) {
                break;
            }
        }
        // The live view's screen is given back first: exiting skips its thread's way out.
        crate::progress::view::restore();
        console::note(
            "llmload: a second stop signal: exiting at once (the records written are complete)",
        );
        std::process::exit(130);
    });
    stop
}

/// `llmload merge`: the shards joined, what it printed, its exit code.
fn merge(args: &crate::cli::MergeArgs) -> Result<u8> {
    tidy_on_stop();
    let result = crate::merge::merge(&args.dirs, &args.out).inspect_err(|_| {
        // What it had begun to write is no attempt: nothing is left of it.
        crate::files::remove_scratch();
    })?;
    out(&results_text(&result.summary, args.json, args.quiet))?;
    records_line(&result.dir, args.quiet);
    Ok(exit_code(&result.summary.outcome))
}

/// The stop signals watched, each with its name: SIGINT, SIGTERM and SIGHUP.
fn stop_signals() -> Vec<(tokio::signal::unix::Signal, &'static str)> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut streams = Vec::new();
    for (kind, name) in [
        (SignalKind::interrupt(), "SIGINT (Ctrl-C)"),
        (SignalKind::terminate(), "SIGTERM"),
        (SignalKind::hangup(), "SIGHUP"),
    ] {
        match signal(kind) {
            Ok(stream) => streams.push((stream, name)),
            Err(e) => console::note(format_args!("warning: cannot watch {name}: {e}")),
        }
    }
    streams
}

/// For the commands that only write files (`report`, `merge`): the first SIGINT, SIGTERM or
/// SIGHUP removes what was being written (a temporary file, a merge's unfinished folder) and
/// exits with 4 at once, so that a stop leaves every file whole or absent.
fn tidy_on_stop() {
    let mut streams = stop_signals();
    tokio::spawn(async move {
        let name = next_signal(&mut streams).await;
        crate::files::remove_scratch_for_exit();
        console::note(format_args!(
            "llmload: stopped by {name}: what was being written was removed, every file left \
             is whole"
        ));
        std::process::exit(4);
    });
}

/// How soon after the first stop signal another one is the same stop delivered again.
const SAME_STOP: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether a stop signal `since_first` after the first one is a second stop.
fn is_second_stop(since_first: std::time::Duration) -> bool {
    since_first >= SAME_STOP
}

/// The name of the next signal among `streams` (never, when there are none).
async fn next_signal(streams: &mut [(tokio::signal::unix::Signal, &'static str)]) -> &'static str {
    if streams.is_empty() {
        return std::future::pending().await;
    }
    let waits = streams.iter_mut().map(|(stream, name)| {
        let name = *name;
        Box::pin(async move {
            stream.recv().await;
            name
        })
    });
    futures_util::future::select_all(waits).await.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_signal_within_a_second_of_the_first_is_the_same_stop() {
        assert!(!is_second_stop(Duration::ZERO));
        assert!(!is_second_stop(Duration::from_millis(999)));
        assert!(is_second_stop(Duration::from_secs(1)));
        assert!(is_second_stop(Duration::from_secs(30)));
    }
}
