//! Session graphs (`--dag`) end to end on the built-in simulator: the repository's example (four
//! sessions of a plan, three research calls fanned out after it, an answer after all three)
//! replayed with every call verified, the research calls overlapping, each call waiting for its
//! last parent and its wait, each prompt extending its context's; the summary's TTFAT per
//! session; other tools' layouts the same way; and the usage errors.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{count as n, json, llmload, measured, LlamaServer, SERIAL};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

/// The repository's example graph.
fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/agents.jsonl")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// The calls of a session, by name.
type Calls = BTreeMap<String, Value>;

/// Replays `graph` (a file or a folder) on the simulator with `concurrency` sessions at a time:
/// the attempt folder and its sessions' calls, every one ok and verified.
fn replay(out: &Path, graph: &Path, concurrency: &str) -> (PathBuf, BTreeMap<String, Calls>) {
    let result = llmload(&[
        "run",
        "--out",
        out.to_str().expect("UTF-8 path"),
        "--name",
        "g",
        "--telemetry",
        "off",
        "-q",
        "--dag",
        graph.to_str().expect("UTF-8 path"),
        "--concurrency",
        concurrency,
        "--history",
        "placeholder",
    ]);
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let dir = common::attempt_dir(out, "g");
    let mut sessions: BTreeMap<String, Calls> = BTreeMap::new();
    for r in measured(&dir) {
        assert_eq!(
            (&r["status"], &r["verified"]),
            (&"ok".into(), &true.into()),
            "{r}"
        );
        let g = &r["graph"];
        let session = g["session"].as_str().expect("a session").to_owned();
        let call = g["call"].as_str().expect("a call").to_owned();
        sessions.entry(session).or_default().insert(call, r.clone());
    }
    (dir, sessions)
}

/// When `r` ended, s.
fn done(r: &Value) -> f64 {
    f(&r["done_s"])
}

/// `call` was due `wait` s after the last of `parents` ended, and sent no earlier.
fn waited(call: &Value, parents: &[&Value], wait: f64) {
    let last = parents.iter().map(|r| done(r)).fold(0.0, f64::max);
    let due = f(&call["scheduled_s"]);
    assert!((due - last - wait).abs() < 1e-6, "{call}");
    assert!(f(&call["sent_s"]) >= due, "{call}");
}

/// Each of `calls` was sent before any of them ended.
fn overlapped(calls: &[&Value]) -> bool {
    let last_sent = calls.iter().map(|r| f(&r["sent_s"])).fold(0.0, f64::max);
    let first_done = calls.iter().map(|r| done(r)).fold(f64::INFINITY, f64::min);
    last_sent < first_done
}

#[test]
fn the_example_graph_replays_fanned_out_verified_and_gives_ttfat_per_session() {
    let out = tempfile::tempdir().expect("temp dir");
    let (dir, sessions) = replay(out.path(), &example(), "4");
    let records = measured(&dir);
    assert_eq!(records.len(), 20, "4 sessions of 5 calls");
    assert_eq!(sessions.len(), 4);
    for (name, calls) in &sessions {
        let plan = &calls["plan"];
        // The plan's 96 tokens and its 16-token answer (placeholder) are every other call's
        // context, the cache's eligible tokens; each adds its own.
        let context = n(&plan["prompt_tokens"]) + 16;
        assert_eq!(n(&plan["prompt_tokens"]), 96, "{name}");
        let research: Vec<&Value> = (1..=3).map(|k| &calls[&format!("research-{k}")]).collect();
        for r in &research {
            assert_eq!(n(&r["history_tokens"]), context, "{r}");
            assert_eq!(n(&r["prompt_tokens"]), context + 24, "{r}");
            assert!(n(&r["cached_tokens"]) <= context, "{r}");
            waited(r, &[plan], 0.100);
        }
        assert!(
            overlapped(&research),
            "{name}: the research calls did not overlap"
        );
        let answer = &calls["answer"];
        waited(answer, &research, 0.200);
        assert_eq!(n(&answer["history_tokens"]), context, "{answer}");
        assert_eq!(n(&answer["prompt_tokens"]), context + 48, "{answer}");
        assert_eq!(answer["graph"]["final_answer"], true);
        assert_eq!(answer["graph"]["after"].as_array().map(Vec::len), Some(3));
    }
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    assert_eq!(case["complete"], true, "{case}");
    let g = &case["sessions"]["graph"];
    assert_eq!((n(&g["sessions"]), n(&g["complete"])), (4, 4), "{g}");
    assert_eq!(n(&g["ttfat_ms"]["n"]), 4, "{g}");
    let rows = g["by_session"].as_array().expect("sessions");
    assert_eq!(rows.len(), 4);
    for row in rows {
        let calls = &sessions[row["name"].as_str().expect("a name")];
        // TTFAT: the session's first send to its answer's first token.
        let want = (f(&calls["answer"]["first_token_s"]) - f(&calls["plan"]["sent_s"])) * 1e3;
        assert!((f(&row["ttfat_ms"]) - want).abs() < 1e-3, "{row}");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("Session graphs") && report.contains("TTFAT"),
        "{report}"
    );
}

/// The documentation's examples of other tools' layouts.
fn examples(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/examples")
        .join(name)
}

#[test]
fn an_agent_trace_of_the_kv_cache_tester_replays_its_sub_agents_together_then_joins_them() {
    let out = tempfile::tempdir().expect("temp dir");
    // A folder of conversations, one a file, as the tester keeps them: the example, and the
    // same conversation under another id on one line.
    let folder = out.path().join("traces");
    std::fs::create_dir(&folder).expect("folder");
    let trace = std::fs::read_to_string(examples("agent-trace.json")).expect("example");
    std::fs::write(folder.join("a.json"), &trace).expect("write");
    let mut other: Value = serde_json::from_str(&trace).expect("JSON");
    other["id"] = "coding-2".into();
    std::fs::write(folder.join("b.json"), format!("{other}\n")).expect("write");
    let (dir, sessions) = replay(&out.path().join("out"), &folder, "2");
    assert_eq!(sessions.len(), 2);
    for (name, calls) in &sessions {
        assert_eq!(calls.len(), 5, "{name}");
        let (first, last) = (&calls["r1"], &calls["r2"]);
        let (a1, a2, a3) = (&calls["sa1/r1"], &calls["sa1/r2"], &calls["sa2/r1"]);
        // The sub-agents start together after the first request, on fresh prompts.
        waited(a1, &[first], 0.0);
        waited(a3, &[first], 0.0);
        assert!(
            overlapped(&[a1, a3]),
            "{name}: the sub-agents did not overlap"
        );
        assert_eq!((n(&a1["prompt_tokens"]), n(&a3["prompt_tokens"])), (64, 72));
        // The first sub-agent's second request extends its first: 64 + 12 + 24.
        waited(a2, &[a1], 0.100);
        assert_eq!(n(&a2["prompt_tokens"]), 100, "{a2}");
        assert_eq!(n(&a2["history_tokens"]), 76, "{a2}");
        // The last waits for its predecessor and both sub-agents, and extends the first.
        waited(last, &[first, a2, a3], 0.200);
        assert_eq!(n(&last["prompt_tokens"]), 160, "{last}");
        assert_eq!(last["graph"]["final_answer"], true);
    }
    let summary = json(&dir.join("summary.json"));
    let g = &summary["cases"][0]["sessions"]["graph"];
    assert_eq!((n(&g["sessions"]), n(&g["complete"])), (2, 2), "{g}");
    assert_eq!(n(&g["ttfat_ms"]["n"]), 2, "{g}");
}

#[test]
fn aiperf_trace_rows_with_sessions_replay_as_turns_after_their_delays() {
    let out = tempfile::tempdir().expect("temp dir");
    let (_, sessions) = replay(out.path(), &examples("aiperf-sessions.jsonl"), "3");
    assert_eq!(
        sessions.keys().collect::<Vec<_>>(),
        ["chat-1", "chat-2", "row-5"]
    );
    let chat = &sessions["chat-1"];
    waited(&chat["turn-2"], &[&chat["turn-1"]], 0.150);
    // The second turn holds the first's 80 tokens and its answer, then 32 of its own.
    assert_eq!(n(&chat["turn-2"]["prompt_tokens"]), 128);
    assert_eq!(n(&chat["turn-2"]["history_tokens"]), 96);
    let other = &sessions["chat-2"];
    waited(&other["turn-2"], &[&other["turn-1"]], 0.100);
    assert_eq!(n(&other["turn-2"]["prompt_tokens"]), 40, "a fresh prompt");
    assert_eq!(sessions["row-5"].len(), 1);
}

#[test]
fn a_graph_that_cannot_run_is_refused_in_one_line() {
    let example = example();
    let example = example.to_str().unwrap_or_default();
    common::assert_refused(
        &["--dag", "/nonexistent/graph.jsonl"],
        "--dag cannot read /nonexistent/graph.jsonl",
    );
    common::assert_refused(
        &["--dag", example, "--turns", "3"],
        "--dag sets each call's length and wait: --turns",
    );
    common::assert_refused(
        &["--dag-time-scale", "2"],
        "--dag-time-scale and --dag-max-wait need --dag FILE",
    );
    common::assert_refused(
        &["--dag", example, "--dag-time-scale=-1"],
        "--dag-time-scale must be from 0 to 1000",
    );
}

/// The example graph against llama-server (4 slots, its prompt cache on), 2 sessions at a time:
/// every call verified; the summary's eligible and cached tokens are the sums of the calls'
/// own (the server's `cache_n` against the context each extends); every call served under half
/// its eligible context is counted, and named in the summary and the report, never averaged
/// away.
#[test]
fn on_llama_server_each_call_that_missed_its_context_is_named() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let result = llmload(&[
        "run",
        "--url",
        &server.url,
        "--out",
        out.path().to_str().expect("UTF-8 path"),
        "--name",
        "g",
        "--telemetry",
        "off",
        "-q",
        "--dag",
        example().to_str().expect("UTF-8 path"),
        "--concurrency",
        "2",
        "--history",
        "placeholder",
    ]);
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let dir = common::attempt_dir(out.path(), "g");
    let records = measured(&dir);
    assert_eq!(records.len(), 20, "4 sessions of 5 calls");
    let (mut eligible, mut cached, mut missed, mut beyond) = (0, 0, Vec::new(), 0);
    for r in &records {
        assert_eq!(
            (&r["status"], &r["verified"]),
            (&"ok".into(), &true.into()),
            "{r}"
        );
        let fresh = r["graph"]["context"].is_null();
        let cacheable = if fresh { 0 } else { n(&r["history_tokens"]) };
        if n(&r["cached_tokens"]) > cacheable {
            beyond += 1;
        }
        if fresh {
            continue;
        }
        let (e, c) = (
            n(&r["history_tokens"]),
            n(&r["cached_tokens"]).min(n(&r["history_tokens"])),
        );
        eligible += e;
        cached += c;
        if 2 * c < e {
            missed.push((
                r["graph"]["session"]
                    .as_str()
                    .expect("a session")
                    .to_owned(),
                r["graph"]["call"].as_str().expect("a call").to_owned(),
            ));
        }
    }
    let graph = &json(&dir.join("summary.json"))["cases"][0]["sessions"]["graph"];
    assert_eq!(n(&graph["eligible_tokens"]), eligible, "{graph}");
    assert_eq!(n(&graph["cached_tokens"]), cached, "{graph}");
    assert_eq!(n(&graph["miss_count"]), missed.len() as u64, "{graph}");
    assert_eq!(
        graph["beyond_count"].as_u64().unwrap_or(0),
        beyond,
        "{graph}"
    );
    let listed: Vec<(String, String)> = graph["misses"]
        .as_array()
        .expect("the misses")
        .iter()
        .map(|m| {
            (
                m["session"].as_str().expect("a session").to_owned(),
                m["call"].as_str().expect("a call").to_owned(),
            )
        })
        .collect();
    let mut expected = missed.clone();
    expected.sort();
    let mut got = listed.clone();
    got.sort();
    assert_eq!(got, expected, "every miss named");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    for (session, call) in &missed {
        let named = format!("session {session}, call {call}: ");
        assert!(report.contains(&named), "{named} not in {report}");
    }
    assert_eq!(
        report.contains("missed the cache they were eligible for"),
        !missed.is_empty()
    );
}

/// `--dag-synth`: agents made up from a spec, replayed on the simulator as a file is: every call
/// verified, each fan-out's sub-agents overlapping, each call due its wait after its last parent
/// and extending its context's prompt and answer; the same spec makes the same calls.
#[test]
fn a_synthetic_graph_is_replayed_as_a_file_is() {
    let out = tempfile::tempdir().expect("temp dir");
    let spec = "sessions=3,loops=4,fanout_every=2,fanout=3,sub_loops=1,tool=20ms,output=8,\
                tool_tokens=16,system=64,task=16,compact=4,summary=32";
    let run = |name: &str| {
        let result = llmload(&[
            "run",
            "--out",
            out.path().to_str().expect("UTF-8 path"),
            "--name",
            name,
            "--telemetry",
            "off",
            "-q",
            "--dag-synth",
            spec,
            "--concurrency",
            "3",
            "--history",
            "placeholder",
        ]);
        assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
        common::attempt_dir(out.path(), name)
    };
    let dir = run("s");
    let records = measured(&dir);
    // Per agent: m1, m2, m3 (after 3 sub-agents), m4, m5 (after 3 more), the answer.
    assert_eq!(records.len(), 3 * (6 + 6));
    let mut by: BTreeMap<(String, String), Value> = BTreeMap::new();
    for r in &records {
        assert_eq!(
            (&r["status"], &r["verified"]),
            (&"ok".into(), &true.into()),
            "{r}"
        );
        let g = &r["graph"];
        let key = (
            g["session"].as_str().expect("s").to_owned(),
            g["call"].as_str().expect("c").to_owned(),
        );
        by.insert(key, r.clone());
    }
    for agent in ["agent-1", "agent-2", "agent-3"] {
        let call = |c: &str| &by[&(agent.to_owned(), c.to_owned())];
        let subs: Vec<&Value> = (1..=3).map(|j| call(&format!("m3/s{j}/c1"))).collect();
        assert!(overlapped(&subs), "{agent}: the sub-agents did not overlap");
        waited(call("m3"), &subs, 0.0);
        waited(call("m2"), &[call("m1")], 0.020);
        // m2 extends m1: its history is m1's prompt and 8-token answer.
        assert_eq!(n(&call("m2")["history_tokens"]), 80 + 8);
        assert_eq!(n(&call("m1")["prompt_tokens"]), 80);
        // Compaction after 4 calls on one context: m5 starts afresh (system + summary).
        assert_eq!(n(&call("m5")["prompt_tokens"]), 96, "{}", call("m5"));
        assert_eq!(n(&call("answer")["history_tokens"]), 96 + 8);
    }
    let graph = &json(&dir.join("summary.json"))["cases"][0]["sessions"]["graph"];
    assert_eq!(graph["complete"], 3, "{graph}");
    // The same spec, the same calls.
    let again = measured(&run("t"));
    let shape = |rs: &[Value]| {
        let mut v: Vec<(String, String, u64)> = rs
            .iter()
            .map(|r| {
                (
                    r["graph"]["session"].to_string(),
                    r["graph"]["call"].to_string(),
                    n(&r["prompt_tokens"]),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(shape(&records), shape(&again));
}
