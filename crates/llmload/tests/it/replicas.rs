//! Several replicas behind one load (`--url A --url B`): a session's requests stay on one
//! replica and carry its id in `--session-header` (checked in the servers' own logs), each
//! record names its replica, the per-replica figures add up to the case's, and a replica that
//! dies mid-run is named while the other's figures stand; the usage errors.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::hostile::{header_values, Mode, Server};
use common::{
    assert_refused, attempt_dir, count as n, json, json_lines, llmload, LlamaServer, Simulator,
    SERIAL,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

fn utf8(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// The session header values of the generation requests `server` received (8 tokens asked).
fn sessions_seen(server: &Server) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/completion")
        .filter(|r| {
            let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
            body["n_predict"].as_u64() == Some(8)
        })
        .map(|r| {
            let values = header_values(&r.head, "x-session-id");
            assert_eq!(values.len(), 1, "one session header: {}", r.head);
            values[0].to_owned()
        })
        .collect()
}

/// The case's per-replica figures add up to its own: requests, ok responses, output tokens.
fn assert_replicas_add_up(case: &Value) {
    let replicas = case["replicas"].as_array().expect("per-replica figures");
    let sum = |f: &dyn Fn(&Value) -> u64| replicas.iter().map(f).sum::<u64>();
    let measured = |c: &Value| {
        ["ok", "invalid", "error", "cancelled", "abandoned"]
            .iter()
            .map(|k| c[*k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    assert_eq!(
        sum(&|r| measured(&r["counts"])),
        measured(&case["counts"]),
        "{case}"
    );
    assert_eq!(sum(&|r| n(&r["counts"]["ok"])), n(&case["counts"]["ok"]));
    let shares: f64 = replicas
        .iter()
        .map(|r| r["share"].as_f64().expect("a share"))
        .sum();
    assert!((shares - 1.0).abs() < 1e-9, "{shares}");
}

#[test]
fn a_sessions_requests_stay_on_one_replica_and_carry_its_id() {
    let (a, b) = (Server::start(Mode::Normal), Server::start(Mode::Normal));
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--url",
        &a.url,
        "--url",
        &b.url,
        "--balance",
        "session-sticky",
        "--session-header",
        "X-Session-ID",
        "--api",
        "llamacpp",
        "--turns",
        "3",
        "--warmup",
        "0",
        "--sessions",
        "6",
        "--concurrency",
        "2",
        "--input-tokens",
        "16",
        "--output-tokens",
        "8",
        "--setup-timeout",
        "2s",
        "--timeout",
        "5s",
        "--telemetry",
        "off",
        "-q",
        "--out",
        utf8(tmp.path()),
        "--name",
        "r",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = attempt_dir(tmp.path(), "r");
    // The servers' own logs: each session's requests all reached one server.
    let (on_a, on_b) = (sessions_seen(&a), sessions_seen(&b));
    let (set_a, set_b): (BTreeSet<&String>, BTreeSet<&String>) =
        (on_a.iter().collect(), on_b.iter().collect());
    assert!(set_a.is_disjoint(&set_b), "{set_a:?} {set_b:?}");
    assert!(
        !set_a.is_empty() && !set_b.is_empty(),
        "both replicas served sessions"
    );
    // The records: 6 sessions × 3 turns, each on the replica whose log holds its id.
    let records: Vec<Value> = json_lines(&dir.join("requests.jsonl"))
        .into_iter()
        .filter(|r| r["phase"] == "measured")
        .collect();
    assert_eq!(records.len(), 18);
    let mut replica_of: BTreeMap<u64, u64> = BTreeMap::new();
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        let (session, replica) = (n(&r["session"]), n(&r["replica"]));
        assert_eq!(
            *replica_of.entry(session).or_insert(replica),
            replica,
            "{r}"
        );
        let key = format!("session-{session}");
        let log = if replica == 0 { &on_a } else { &on_b };
        assert!(log.contains(&key), "{key} not in replica {replica}'s log");
    }
    assert_eq!(replica_of.len(), 6);
    let per_server = on_a.iter().filter(|s| set_a.contains(s)).count()
        + on_b.iter().filter(|s| set_b.contains(s)).count();
    assert_eq!(per_server, 18, "every turn reached a server once");
    let summary = json(&dir.join("summary.json"));
    assert_eq!(
        summary["replicas"],
        serde_json::json!([a.url.trim_end_matches('/'), b.url.trim_end_matches('/')])
    );
    let case = &summary["cases"][0];
    assert_replicas_add_up(case);
    for r in case["replicas"].as_array().expect("replicas") {
        let on = if n(&r["replica"]) == 0 { &on_a } else { &on_b };
        assert_eq!(n(&r["counts"]["ok"]), on.len() as u64, "{r}");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("## Per replica"), "{report}");
    let target = format!(
        "Target: 2 replicas ({}, {}; set up from the first)",
        a.url.trim_end_matches('/'),
        b.url.trim_end_matches('/')
    );
    assert!(report.contains(&target), "{report}");
    assert!(report.contains("(all replicas)"));
    assert!(!report.contains("failed"), "no replica failed");
}

#[test]
fn a_replica_that_dies_is_named_and_the_others_figures_stand() {
    let alive = Simulator::start(&["--profile", "cpu-tiny", "--slots", "2"]);
    let mut dying = Some(Simulator::start(&["--profile", "cpu-tiny", "--slots", "2"]));
    let dying_url = dying.as_ref().expect("started").url.clone();
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().to_path_buf();
    let args: Vec<String> = [
        "run",
        "--url",
        &alive.url,
        "--url",
        &dying_url,
        "--arrival",
        "closed-continuous",
        "--concurrency",
        "2",
        "--requests",
        "60",
        "--warmup",
        "0",
        "--input-tokens",
        "16",
        "--output-tokens",
        "8",
        "--setup-timeout",
        "2s",
        "--timeout",
        "5s",
        "--telemetry",
        "off",
        "-q",
        "--out",
        utf8(&out),
        "--name",
        "d",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let child = std::thread::spawn(move || {
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        llmload(&words)
    });
    // Stopped once each replica has answered a few requests (a condition, not a time).
    stop_once_answered(&out.join("d"), 6, &mut dying);
    assert!(
        dying.is_none(),
        "the run answered 6 requests within two minutes"
    );
    let run = child.join().expect("the run ends");
    let dir = attempt_dir(tmp.path(), "d");
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    assert_replicas_add_up(case);
    let replicas = case["replicas"].as_array().expect("replicas");
    let (first, second) = (&replicas[0], &replicas[1]);
    assert_eq!(n(&first["replica"]), 0);
    assert_eq!(
        n(&first["counts"]["ok"]) + n(&second["counts"]["ok"]),
        n(&case["counts"]["ok"])
    );
    assert_eq!(first["counts"]["error"].as_u64().unwrap_or(0), 0, "{first}");
    assert!(n(&first["counts"]["ok"]) > 0);
    assert!(n(&second["counts"]["error"]) > 0, "{second}");
    assert!(second["first_error"].is_string(), "{second}");
    assert_ne!(run.code, 0, "a case with failed requests: {}", run.stderr);
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let named = format!("Replica 1: {}", dying_url.trim_end_matches('/'));
    assert!(report.contains(&named), "{report}");
}

/// Drops `server` (stopping it) once the attempt being written under `name_dir` has `answered`
/// measured `ok` records, or after two minutes.
fn stop_once_answered<T>(name_dir: &Path, answered: usize, server: &mut Option<T>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.is_some() && Instant::now() < deadline {
        let so_far = std::fs::read_dir(name_dir)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
            .map(|e| json_lines_lenient(&e.path().join("requests.jsonl")))
            .unwrap_or_default();
        if so_far >= answered {
            *server = None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Measured lines so far of a file being written (a line cut short is not counted).
fn json_lines_lenient(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"phase\":\"measured\"") && l.contains("\"status\":\"ok\""))
        .count()
}

#[test]
fn capacity_spreads_every_block_over_the_replicas() {
    let a = Simulator::start(&["--profile", "cpu-tiny", "--slots", "4"]);
    let b = Simulator::start(&["--profile", "cpu-tiny", "--slots", "4"]);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "capacity",
        "--url",
        &a.url,
        "--url",
        &b.url,
        "--slo",
        "errors<50%",
        "--max-load",
        "4",
        "--input-tokens",
        "16",
        "--output-tokens",
        "4",
        "--telemetry",
        "off",
        "-q",
        "--json",
        "--out",
        utf8(tmp.path()),
        "--name",
        "c",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary = json(&attempt_dir(tmp.path(), "c").join("summary.json"));
    assert_eq!(
        summary["capacity"]["max_passing"]["load"], 4.0,
        "{}",
        run.stdout
    );
    let cases = summary["cases"].as_array().expect("blocks");
    assert!(cases.len() >= 3, "{}", cases.len());
    for case in cases {
        assert_replicas_add_up(case);
        let replicas = case["replicas"].as_array().expect("replicas");
        assert_eq!(replicas.len(), 2, "{case}");
    }
}

#[test]
fn each_arm_of_ab_may_be_several_replicas() {
    let sims: Vec<Simulator> = (0..4)
        .map(|_| Simulator::start(&["--profile", "cpu-tiny", "--slots", "2"]))
        .collect();
    let base = format!("{},{}", sims[0].url, sims[1].url);
    let candidate = format!("{},{}", sims[2].url, sims[3].url);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "ab",
        &base,
        &candidate,
        "--input-tokens",
        "16",
        "--output-tokens",
        "4",
        "--concurrency",
        "2",
        "--rounds",
        "4",
        "--telemetry",
        "off",
        "-q",
        "--out",
        utf8(tmp.path()),
        "--name",
        "ab",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = attempt_dir(tmp.path(), "ab");
    let mut seen: BTreeSet<(String, u64)> = BTreeSet::new();
    for arm in ["A", "B"] {
        for r in json_lines(&dir.join(arm).join("requests.jsonl"))
            .iter()
            .filter(|r| r["phase"] == "measured")
        {
            assert_eq!(r["status"], "ok", "{r}");
            seen.insert((arm.to_owned(), n(&r["replica"])));
        }
    }
    let expected: BTreeSet<(String, u64)> = ["A", "B"]
        .iter()
        .flat_map(|arm| [0, 1].map(|k| ((*arm).to_owned(), k)))
        .collect();
    assert_eq!(seen, expected, "each arm's requests over its two replicas");
}

#[test]
fn replicas_are_refused_where_they_cannot_be_honoured() {
    let one = ["--url", "http://127.0.0.1:9"];
    assert_refused(
        &[&one[..], &["--balance", "least-in-flight"]].concat(),
        "--balance least-in-flight needs two or more --url",
    );
    assert_refused(
        &[
            "--url",
            "http://127.0.0.1:9",
            "--url",
            "http://127.0.0.1:9/",
        ],
        "is given twice",
    );
    assert_refused(
        &[
            "--url",
            "http://127.0.0.1:9",
            "--url",
            "http://u:p@127.0.0.1:10",
        ],
        "every replica takes the first --url's credentials",
    );
    assert_refused(
        &[&one[..], &["--session-header", "X Session"]].concat(),
        "not an HTTP header name",
    );
    assert_refused(
        &[&one[..], &["--session-header", "X-Request-Id"]].concat(),
        "llmload sets that header itself",
    );
    let two = [
        "--url",
        "http://127.0.0.1:9",
        "--url",
        "http://127.0.0.1:10",
    ];
    assert_refused(
        &[&two[..], &["--reset-prefix-cache"]].concat(),
        "--reset-prefix-cache with several --url",
    );
    assert_refused(
        &[&two[..], &["--profile-server", "1"]].concat(),
        "--profile-server with several --url",
    );
}

/// llama-server's own generated-token counter.
fn predicted(url: &str) -> u64 {
    let out = Command::new("curl")
        .args(["-sf", &format!("{url}/metrics")])
        .output()
        .expect("curl");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("llamacpp:tokens_predicted_total "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .expect("llama-server reports tokens_predicted_total")
}

/// The output tokens of `records` (warmups included) that went to `replica`.
fn generated_on(records: &[Value], replica: u64) -> u64 {
    records
        .iter()
        .filter(|r| r["replica"].as_u64() == Some(replica))
        .map(|r| r["output_tokens"].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn two_llama_servers_keep_each_session_and_one_stopped_is_named() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let a = LlamaServer::start();
    let b = Some(LlamaServer::start());
    let b_url = b.as_ref().expect("started").url.clone();
    let (a0, b0) = (predicted(&a.url), predicted(&b_url));
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--url",
        &a.url,
        "--url",
        &b_url,
        "--balance",
        "session-sticky",
        "--session-header",
        "X-Session-ID",
        "--turns",
        "2",
        "--sessions",
        "4",
        "--concurrency",
        "2",
        "--warmup",
        "0",
        "--input-tokens",
        "24",
        "--output-tokens",
        "4",
        "--telemetry",
        "off",
        "-q",
        "--out",
        utf8(tmp.path()),
        "--name",
        "s",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = attempt_dir(tmp.path(), "s");
    let records = json_lines(&dir.join("requests.jsonl"));
    let mut replica_of: BTreeMap<u64, u64> = BTreeMap::new();
    for r in records.iter().filter(|r| r["phase"] == "measured") {
        assert_eq!(r["status"], "ok", "{r}");
        let (session, replica) = (n(&r["session"]), n(&r["replica"]));
        assert_eq!(
            *replica_of.entry(session).or_insert(replica),
            replica,
            "{r}"
        );
    }
    assert_eq!(replica_of.len(), 4);
    // The servers' own counters: the second replica generated exactly what its records say
    // (no setup request goes to it); the first, that and its setup probes' few tokens.
    let (on_a, on_b) = (generated_on(&records, 0), generated_on(&records, 1));
    assert!(on_a > 0 && on_b > 0, "both replicas served sessions");
    assert_eq!(predicted(&b_url) - b0, on_b);
    let extra = (predicted(&a.url) - a0).checked_sub(on_a);
    assert!(extra.is_some_and(|e| e <= 8), "{extra:?}");
    let summary = json(&dir.join("summary.json"));
    assert_replicas_add_up(&summary["cases"][0]);

    // One replica stopped mid-run: its failures named, the other's figures whole.
    stopped_replica_is_named(&a, b, tmp.path());
}

/// Runs a closed loop over `a` and `b`, stops `b` once 4 requests are answered, and checks that
/// its failures are named and `a`'s figures are whole.
fn stopped_replica_is_named(a: &LlamaServer, b: Option<LlamaServer>, tmp: &Path) {
    let mut b = b;
    let b_url = b.as_ref().expect("started").url.clone();
    let out = tmp.join("stop");
    let out_arg = out.to_str().expect("UTF-8").to_owned();
    let (a_url, b_arg) = (a.url.clone(), b_url.clone());
    let child = std::thread::spawn(move || {
        llmload(&[
            "run",
            "--url",
            &a_url,
            "--url",
            &b_arg,
            "--arrival",
            "closed-continuous",
            "--concurrency",
            "2",
            "--requests",
            "40",
            "--warmup",
            "0",
            "--input-tokens",
            "24",
            "--output-tokens",
            "4",
            "--timeout",
            "20s",
            "--telemetry",
            "off",
            "-q",
            "--out",
            &out_arg,
            "--name",
            "d",
        ])
    });
    stop_once_answered(&out.join("d"), 4, &mut b);
    assert!(b.is_none(), "4 requests answered within two minutes");
    let run = child.join().expect("the run ends");
    assert_ne!(run.code, 0, "{}", run.stderr);
    let dir = attempt_dir(&out, "d");
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_replicas_add_up(case);
    let replicas = case["replicas"].as_array().expect("replicas");
    assert_eq!(
        replicas[0]["counts"]["error"].as_u64().unwrap_or(0),
        0,
        "{case}"
    );
    assert!(n(&replicas[0]["counts"]["ok"]) >= 2, "{case}");
    assert!(n(&replicas[1]["counts"]["error"]) > 0, "{case}");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        report.contains(&format!("Replica 1: {b_url} failed")),
        "{report}"
    );
}
