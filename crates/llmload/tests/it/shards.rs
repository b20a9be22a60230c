//! One attempt sharded over several processes (`run --shard I/N --attempt-id --start-at`) and
//! joined by `llmload merge`, against the built-in simulator: the merged schedule is the single
//! process's arrival for arrival, the counts and exact figures agree with it, the shard section
//! lists every shard, and what cannot be merged or split is refused in one line.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{attempt_dir, json, json_lines, llmload, measured, Invocation, Simulator};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The open-loop attempt every test of the schedule runs: 40 Poisson arrivals, sampled prompt
/// lengths, a fixed seed.
const OPEN: &[&str] = &[
    "--arrival",
    "poisson",
    "--rate",
    "20",
    "--requests",
    "40",
    "--input-tokens",
    "uniform:16,48",
    "--output-tokens",
    "4",
    "--seed",
    "9",
    "--telemetry",
    "off",
    "--quiet",
];

/// A simulator and a folder for the results.
fn setup() -> (Simulator, tempfile::TempDir) {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "8"]);
    (sim, tempfile::tempdir().expect("temp dir"))
}

/// `load` with 24-token prompts, 4-token outputs, no telemetry, quiet.
fn tiny(load: &[&'static str]) -> Vec<&'static str> {
    let mut args = load.to_vec();
    args.extend_from_slice(&["--input-tokens", "24", "--output-tokens", "4"]);
    args.extend_from_slice(&["--telemetry", "off", "--quiet"]);
    args
}

/// `llmload run --url URL --out OUT` with `extra`, started in the background.
fn spawn_run(url: &str, out: &Path, extra: &[&str]) -> Child {
    Command::new("timeout")
        .args(["--signal=KILL", "300", env!("CARGO_BIN_EXE_llmload"), "run"])
        .args(["--url", url, "--out", out.to_str().expect("UTF-8 path")])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start llmload run")
}

/// Waits for `child`; its exit code and standard error.
fn finish(child: Child) -> (i32, String) {
    let output = child.wait_with_output().expect("wait for llmload");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs the `count` shards of `attempt` together, each `extra` with its `--shard`; returns
/// their folders by index.
fn shards(url: &str, out: &Path, attempt: &str, count: u32, extra: &[&str]) -> Vec<PathBuf> {
    some_shards(url, out, attempt, (0..count, count), extra)
}

/// Runs the shards `indices` of the `count` of `attempt` together, as [`shards`] does.
fn some_shards(
    url: &str,
    out: &Path,
    attempt: &str,
    (indices, count): (std::ops::Range<u32>, u32),
    extra: &[&str],
) -> Vec<PathBuf> {
    let children: Vec<Child> = indices
        .clone()
        .map(|i| {
            let shard = format!("{i}/{count}");
            let mut args = vec!["--shard", &shard, "--attempt-id", attempt];
            args.extend_from_slice(&["--start-at", "+2s", "--name", "sharded"]);
            args.extend_from_slice(extra);
            spawn_run(url, out, &args)
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let (code, stderr) = finish(child);
        assert_eq!(code, 0, "shard {i}: {stderr}");
    }
    indices
        .map(|i| out.join(format!("sharded/{attempt}-shard-{i}-of-{count}")))
        .collect()
}

fn merge(dirs: &[PathBuf], out: &Path) -> Invocation {
    let mut args = vec![
        "merge",
        "--quiet",
        "--out",
        out.to_str().expect("UTF-8 path"),
    ];
    args.extend(dirs.iter().map(|d| d.to_str().expect("UTF-8 path")));
    llmload(&args)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// Each measured arrival as (index, offset from the first arrival in µs, prompt tokens, output
/// tokens), in arrival order.
fn schedule(records: &[Value]) -> Vec<(u64, String, u64, u64)> {
    let mut records: Vec<&Value> = records.iter().collect();
    records.sort_by_key(|r| r["index"].as_u64());
    let first = f(&records[0]["scheduled_s"]);
    records
        .iter()
        .map(|r| {
            let offset_us = format!("{:.0}", (f(&r["scheduled_s"]) - first) * 1e6);
            (
                r["index"].as_u64().expect("an index"),
                offset_us,
                r["input_tokens"].as_u64().expect("input tokens"),
                r["requested_output_tokens"]
                    .as_u64()
                    .expect("output tokens"),
            )
        })
        .collect()
}

fn assert_one_line(run: &Invocation, code: i32, says: &str) {
    assert_eq!(run.code, code, "{}\n{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected: {}", run.stderr);
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains(says),
        "{}",
        lines[0]
    );
}

#[test]
fn four_open_loop_shards_merge_into_the_single_process_attempt() {
    let (sim, out) = setup();
    let single_out = out.path().join("single");
    let (code, stderr) = finish(spawn_run(&sim.url, &single_out, OPEN));
    assert_eq!(code, 0, "{stderr}");
    let single = attempt_dir(&single_out, "campaign");
    let dirs = shards(&sim.url, &out.path().join("shards"), "t1", 4, OPEN);
    let merged_out = out.path().join("merged");
    let run = merge(&dirs, &merged_out);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let merged = merged_out.join("sharded/t1");

    // The schedule: the single process's, arrival for arrival.
    let (one, all) = (measured(&single), measured(&merged));
    assert_eq!(one.len(), 40);
    assert_eq!(schedule(&all), schedule(&one));
    for r in &all {
        let index = r["index"].as_u64().expect("an index");
        assert_eq!(r["shard"].as_u64(), Some(index % 4), "{r}");
        assert_eq!(r["status"], "ok", "{r}");
    }
    // Every record carries its shard; each shard sent its own single warmup.
    let records = json_lines(&merged.join("requests.jsonl"));
    assert!(records.iter().all(|r| r["shard"].is_u64()));
    assert_eq!(records.len(), 44);

    // The figures: counts and what the schedule fixes agree exactly; the window spans the
    // global schedule (its first arrival to its last), as the single process's does.
    let (a, b) = (
        json(&single.join("summary.json")),
        json(&merged.join("summary.json")),
    );
    let (ca, cb) = (&a["cases"][0], &b["cases"][0]);
    assert_eq!(ca["id"], cb["id"]);
    assert_eq!(ca["counts"], cb["counts"]);
    assert_eq!(cb["counts"]["ok"], 40);
    assert_eq!(
        ca["load"]["requests_launched"],
        cb["load"]["requests_launched"]
    );
    let span = |c: &Value| f(&c["load"]["window_s"][1]) - f(&c["load"]["window_s"][0]);
    assert!(
        (span(ca) - span(cb)).abs() < 1e-6,
        "{} vs {}",
        span(ca),
        span(cb)
    );
    let rate = |c: &Value| f(&c["load"]["completed_rps"]);
    assert!(rate(cb) > 0.0 && (rate(ca) / rate(cb) - 1.0).abs() < 0.5);
    assert_eq!(b["outcome"]["status"], "completed", "{}", b["outcome"]);

    // The shard section: four shards, each with its start lag and its clock offset.
    let section = &b["shards"];
    assert_eq!(section["count"], 4);
    assert_eq!(section["missing"], serde_json::json!([]));
    let listed = section["shards"].as_array().expect("shards");
    assert_eq!(listed.len(), 4);
    for (i, s) in listed.iter().enumerate() {
        assert_eq!(s["index"].as_u64(), Some(i as u64));
        assert_eq!(s["attempt_id"], "t1");
        assert_eq!(s["arrivals"], 10);
        assert!(f(&s["start"]["start_lag_ms"]) >= 0.0, "{s}");
        assert_eq!(s["clock"]["method"], "http-date-tick", "{s}");
        assert!(f(&s["clock"]["uncertainty_ms"]) >= 0.0, "{s}");
    }
    // `llmload report` rebuilds the merged attempt from its records to the same figures.
    let rebuilt = llmload(&["report", "--json", merged.to_str().expect("UTF-8 path")]);
    let rebuilt: Value = serde_json::from_str(&rebuilt.stdout).expect("the rebuilt summary");
    assert_eq!(rebuilt["cases"], b["cases"]);
    assert_eq!(rebuilt["shards"], b["shards"]);
    let report = std::fs::read_to_string(merged.join("report.md")).expect("report.md");
    assert!(report.contains("4 of 4 shards"), "{report}");
    assert!(std::fs::read_to_string(merged.join("report.html"))
        .expect("report.html")
        .contains("Shards"));

    // A missing shard: the outcome says so.
    let run = merge(&dirs[..3], &out.path().join("three"));
    assert_eq!(run.code, 3, "{}", run.stderr);
    let three = json(&out.path().join("three/sharded/t1/summary.json"));
    let reason = three["outcome"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("3 of 4 shards") && reason.contains("shard 3 missing"),
        "{reason}"
    );

    // What is not one attempt is refused, in one line.
    assert_one_line(&merge(&dirs, &merged_out), 2, "exists already");
    let twice = [dirs[0].clone(), dirs[1].clone(), dirs[1].clone()];
    assert_one_line(
        &merge(&twice, &out.path().join("x")),
        2,
        "both shard 1 of 4",
    );
    let plain = [dirs[0].clone(), single];
    assert_one_line(&merge(&plain, &out.path().join("x")), 2, "is not a shard");
    let mut seed = OPEN.to_vec();
    seed[11] = "10";
    let other_seed = some_shards(&sim.url, &out.path().join("seed"), "t1", (1..2, 4), &seed);
    let mixed = [dirs[0].clone(), other_seed[0].clone()];
    assert_one_line(
        &merge(&mixed, &out.path().join("x")),
        2,
        "their seeds differ",
    );
    let other_id = some_shards(&sim.url, &out.path().join("id"), "t2", (1..2, 4), OPEN);
    let mixed = [dirs[0].clone(), other_id[0].clone()];
    assert_one_line(
        &merge(&mixed, &out.path().join("x")),
        2,
        "their attempt ids differ",
    );
}

#[test]
fn closed_continuous_concurrency_is_split_between_the_shards() {
    let (sim, out) = setup();
    let extra = tiny(&[
        "--arrival",
        "closed-continuous",
        "--concurrency",
        "5",
        "--requests",
        "22",
    ]);
    let dirs = shards(&sim.url, out.path(), "cc", 4, &extra);
    let streams: Vec<u64> = dirs
        .iter()
        .map(|d| {
            json(&d.join("summary.json"))["shard"]["streams"]
                .as_u64()
                .expect("streams")
        })
        .collect();
    assert_eq!(streams, [2, 1, 1, 1]);
    // --requests 22 split as the arrivals are: 6, 6, 5, 5.
    let launched: Vec<usize> = dirs.iter().map(|d| measured(d).len()).collect();
    assert_eq!(launched, [6, 6, 5, 5]);
    let run = merge(&dirs, &out.path().join("merged"));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let merged = json(&out.path().join("merged/sharded/cc/summary.json"));
    assert_eq!(merged["cases"][0]["counts"]["ok"], 22, "{merged}");
    assert_eq!(merged["cases"][0]["load"]["nominal_concurrency"], 5);
    // No two shards sent the same prompt: none was served from the cache.
    let records = json_lines(&out.path().join("merged/sharded/cc/requests.jsonl"));
    for r in &records {
        assert_eq!(r["cached_tokens"].as_u64().unwrap_or(0), 0, "{r}");
    }
    // Nor the same request id: each shard's carry its index, and every record kept its own.
    let ids: std::collections::HashSet<&str> = records
        .iter()
        .filter_map(|r| r["request_id"].as_str())
        .collect();
    assert_eq!(
        (records.len(), ids.len()),
        (26, 26),
        "a warmup each, and the 22"
    );
    for r in &records {
        let shard = r["shard"].as_u64().expect("a merged record's shard");
        let id = r["request_id"].as_str().expect("an id");
        assert!(id.starts_with(&format!("cc-s{shard}-")), "{r}");
    }
    // Concurrency 3 over 4 shards: shard 3 has no stream, says so, and has done its part.
    let mut idle = tiny(&["--arrival", "closed-continuous", "--concurrency", "3"]);
    idle.extend_from_slice(&["--requests", "8", "--shard", "3/4", "--attempt-id", "idle"]);
    idle.extend_from_slice(&["--start-at", "+1s", "--name", "sharded"]);
    let (code, stderr) = finish(spawn_run(&sim.url, out.path(), &idle));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("shard 3/4: no streams of its own"),
        "{stderr}"
    );
    let summary = json(&out.path().join("sharded/idle-shard-3-of-4/summary.json"));
    assert_eq!(summary["shard"]["streams"], 0);
    assert_eq!(summary["cases"][0]["counts"]["ok"], 0);
    assert_eq!(summary["cases"][0]["complete"], true);
}

#[test]
fn stopped_and_killed_shards_merge_as_incomplete() {
    let (sim, out) = setup();
    let mut extra = tiny(&["--arrival", "constant", "--rate", "6", "--duration", "6s"]);
    extra.extend_from_slice(&["--start-at", "+2s", "--attempt-id", "stop"]);
    extra.extend_from_slice(&["--name", "sharded"]);
    let spawn = |i: u32| {
        let shard = format!("{i}/3");
        let mut args = vec!["--shard", shard.as_str()];
        args.extend_from_slice(&extra);
        spawn_run(&sim.url, out.path(), &args)
    };
    let (whole, stopped, killed) = (spawn(0), spawn(1), spawn(2));
    let dir = |i: u32| out.path().join(format!("sharded/stop-shard-{i}-of-3"));
    // Once both have begun their load (each has written a measured record), shard 1 gets
    // SIGTERM and shard 2 SIGKILL (its llmload process, under `timeout`).
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in [1, 2] {
        while !std::fs::read_to_string(dir(i).join("requests.jsonl"))
            .is_ok_and(|t| t.contains("\"measured\""))
        {
            assert!(Instant::now() < deadline, "shard {i} never began its load");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let kill = |signal: &str, pid: String| {
        let sent = Command::new("kill").args([signal, &pid]).status();
        assert!(sent.expect("kill").success());
    };
    kill("-TERM", stopped.id().to_string());
    let under = Command::new("pgrep")
        .args(["-P", &killed.id().to_string()])
        .output()
        .expect("pgrep");
    kill(
        "-KILL",
        String::from_utf8_lossy(&under.stdout).trim().to_owned(),
    );
    let (code, stderr) = finish(stopped);
    assert_eq!(code, 4, "{stderr}");
    assert_ne!(finish(killed).0, 0, "killed");
    assert_eq!(finish(whole).0, 0);
    let run = merge(&[dir(0), dir(1), dir(2)], &out.path().join("merged"));
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let merged = json(&out.path().join("merged/sharded/stop/summary.json"));
    let section = &merged["shards"];
    assert_eq!(section["incomplete"], serde_json::json!([1, 2]));
    assert_eq!(section["shards"][1]["status"], "stopped");
    assert_eq!(section["shards"][2]["status"], "running");
    // The killed shard wrote when its load began: it is aligned with the others all the same.
    assert!(
        section["shards"][2]["start"]["start_lag_ms"].is_f64(),
        "{section}"
    );
    let reason = merged["outcome"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("1 of 3 shards") && reason.contains("shard 1, 2 incomplete"),
        "{reason}"
    );
    assert_eq!(merged["cases"][0]["complete"], false);
    // Every record of the three is in the merged attempt, each with its shard.
    let records: usize = (0..3)
        .map(|i| json_lines(&dir(i).join("requests.jsonl")).len())
        .sum();
    let all = json_lines(&out.path().join("merged/sharded/stop/requests.jsonl"));
    assert_eq!(all.len(), records);
}

#[test]
fn what_cannot_be_sharded_is_refused_in_one_line() {
    let base = ["run", "--url", "http://127.0.0.1:9", "--telemetry", "off"];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        llmload(&args)
    };
    let sharded = ["--shard", "2/4", "--attempt-id", "a", "--start-at", "+5s"];
    let rounds = with(&[&sharded[..], &["--concurrency", "4"]].concat());
    assert_one_line(&rounds, 2, "closed rounds start C requests together");
    assert!(rounds.stderr.contains("closed-continuous"));
    let open = [
        "--arrival",
        "poisson",
        "--rate",
        "2",
        "--input-tokens",
        "32",
    ];
    let sessions = with(&[&sharded[..], &open, &["--turns", "3"]].concat());
    assert_one_line(&sessions, 2, "sessions of several turns are not split");
    let two_rates = with(&[&sharded[..], &open, &["--rate", "2,4"]].concat());
    assert_one_line(&two_rates, 2, "one case");
    assert_one_line(
        &with(&[&sharded[..4], &open].concat()),
        2,
        "needs --start-at",
    );
    assert_one_line(
        &with(&["--shard", "1/4", "--start-at", "+5s"]),
        2,
        "needs --attempt-id",
    );
    assert_one_line(&with(&["--shard", "4/4"]), 2, "numbered from 0 to 3");
    for (at, says) in [
        ("tomorrow", "RFC 3339"),
        ("+soon", "start-at"),
        ("2020-01-01T00:00:00Z", "in the past"),
    ] {
        assert_one_line(&with(&["--start-at", at]), 2, says);
    }
    let mut sweep = vec!["sweep"];
    sweep.extend_from_slice(&base[1..]);
    sweep.extend_from_slice(&sharded);
    sweep.extend_from_slice(&["--arrival", "closed-continuous", "--concurrency", "1,2"]);
    assert_one_line(&llmload(&sweep), 2, "cannot be sharded");
}
