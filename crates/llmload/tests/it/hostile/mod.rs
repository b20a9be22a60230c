//! llmload against hostile servers: one that never answers, streams forever, sends an endless
//! line, answers HTML, redirects elsewhere or lies about lengths; secrets kept out of every file
//! and message; unaffordable flags refused before anything is sent; stops by SIGTERM and
//! SIGKILL, and damaged files, read back. Each run is bounded in time.
#![expect(clippy::expect_used, reason = "tests fail loudly")]

use crate::common;
use crate::common::hostile;

mod apis;
mod bursts;
mod counters;
mod fields;
mod ids;
mod secrets;
mod signals;
mod stack;
mod streams;

use common::{attempt_dir, json, json_lines, Simulator};
use hostile::{
    eventually, files_under, header_values, is_empty_or_absent, llmload_within, Finished, Mode,
    Running, Seen, Server,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most any single llmload run here may take.
const LIMIT: Duration = Duration::from_secs(20);

fn utf8(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// Everything llmload printed, for assertion messages.
fn shown(run: &Finished) -> String {
    format!(
        "exit {:?} after {:?}\nstdout: {}\nstderr: {}",
        run.code, run.elapsed, run.stdout, run.stderr
    )
}

/// `llmload run` of one small case (16 prompt tokens, 8 output, one request, no warmup)
/// against `url`, writing to `out/hostile`, with `extra` flags.
fn small_run(url: &str, out: &Path, extra: &[&str]) -> Finished {
    run_of(url, out, ("1", "0"), extra)
}

/// `llmload run` of one round of a small case (16 prompt tokens, 8 output) at `concurrency`,
/// after `warmup` requests, against `url`, writing to `out/hostile`, with `extra` flags.
fn run_of(url: &str, out: &Path, load: (&str, &str), extra: &[&str]) -> Finished {
    run_named(url, out, ("hostile", "8"), load, extra)
}

/// As [`run_of`], writing to `out/NAME` with `output` tokens asked for.
fn run_named(
    url: &str,
    out: &Path,
    (name, output): (&str, &str),
    (concurrency, warmup): (&str, &str),
    extra: &[&str],
) -> Finished {
    let mut args = vec![
        "--setup-timeout",
        "2s",
        "--timeout",
        "5s",
        "--input-tokens",
        "16",
        "--output-tokens",
        output,
        "--concurrency",
        concurrency,
        "--rounds",
        "1",
        "--warmup",
        warmup,
    ];
    args.extend_from_slice(extra);
    let (api, args) = match args.iter().position(|a| *a == "--api") {
        // `--api` among `extra`: that API's, given once.
        Some(at) if at + 1 < args.len() => {
            let api = args[at + 1];
            args.drain(at..at + 2);
            (api, args)
        }
        _ => ("llamacpp", args),
    };
    run_api(url, out, (name, api), &args)
}

/// `llmload run` on llama.cpp's API against `url`, writing to `out/NAME`, without telemetry,
/// with `args`.
fn run_llamacpp(url: &str, out: &Path, name: &str, args: &[&str]) -> Finished {
    run_api(url, out, (name, "llamacpp"), args)
}

/// `llmload run` on `api` against `url`, writing to `out/NAME`, without telemetry, with `args`.
fn run_api(url: &str, out: &Path, (name, api): (&str, &str), args: &[&str]) -> Finished {
    let mut all = vec![
        "run",
        "--url",
        url,
        "--api",
        api,
        "--out",
        utf8(out),
        "--name",
        name,
        "--telemetry",
        "off",
    ];
    all.extend_from_slice(args);
    llmload_within(&all, LIMIT)
}

/// The only measured record of a small run, after checking the run ended incomplete (exit 3)
/// with its summary written.
fn the_failed_record(run: &Finished, out: &Path) -> Value {
    assert_eq!(run.code, Some(3), "{}", shown(run));
    let dir = attempt_dir(out, "hostile");
    assert!(dir.join("summary.json").is_file(), "summary.json written");
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 1, "{records:?}");
    records.into_iter().next().expect("one record")
}

/// The record's `error` text.
fn error_of(record: &Value) -> &str {
    record["error"].as_str().unwrap_or_default()
}

/// stderr as a list of its non-empty lines.
fn stderr_lines(run: &Finished) -> Vec<&str> {
    run.stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect()
}
