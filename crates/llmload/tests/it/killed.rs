//! A run killed outright (SIGKILL: no handler runs, nothing is closed) in the middle of a case,
//! for every load shape: `llmload report` rebuilds the case it was running as incomplete, with
//! the reason, and every earlier case as the run wrote it.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{attempt_so_far, json, llmload, spawn_quiet, Simulator};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The records written so far (a line being written is left out).
fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Starts `llmload ARGS… --url URL --out OUT --name killed --telemetry off -q`, waits (two
/// minutes at most) until its records satisfy `cut`, then kills it with SIGKILL while it is still
/// running; returns the attempt folder.
fn kill_when(out: &Path, url: &str, args: &[&str], cut: impl Fn(&[Value]) -> bool) -> PathBuf {
    let place = ["--url", url, "--out", out.to_str().expect("UTF-8 path")];
    let quiet = ["--name", "killed", "--telemetry", "off", "-q"];
    let mut child = spawn_quiet(args.iter().chain(&place).chain(&quiet));
    let deadline = Instant::now() + Duration::from_secs(120);
    let dir = loop {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the records never reached the point to kill at");
        }
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("the run ended ({status}) before the point to kill at");
        }
        std::thread::sleep(Duration::from_millis(20));
        if let Some(dir) = attempt_so_far(out, "killed").filter(|d| cut(&records(d))) {
            break dir;
        }
    };
    // Still running: the kill lands mid-case.
    assert!(child.try_wait().expect("wait").is_none(), "ended too soon");
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    dir
}

/// Whether a record of a case whose id starts with `prefix` has been written.
fn has(records: &[Value], prefix: &str) -> bool {
    records
        .iter()
        .any(|r| r["case"].as_str().is_some_and(|c| c.starts_with(prefix)))
}

/// `llmload report DIR --json`: the rebuilt summary.
fn rebuilt(dir: &Path) -> Value {
    let report = llmload(&["report", dir.to_str().expect("UTF-8 path"), "--json"]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(!report.stderr.contains("panicked"), "{}", report.stderr);
    serde_json::from_str(&report.stdout).expect("JSON on stdout")
}

/// Checks the rebuilt summary of a run killed in its case number `cut` (1-based): that case
/// incomplete with the reason, each earlier one complete and (where the run wrote a summary)
/// identical to the run's, none after it; the outcome says the run ended without its summary.
fn check(dir: &Path, cut: usize) -> Value {
    let summary = rebuilt(dir);
    let cases = summary["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), cut, "{summary}");
    let case = &cases[cut - 1];
    assert_eq!(case["complete"], false, "{case}");
    let why = case["incomplete_reason"].as_str().expect("a reason");
    assert!(
        why.starts_with("the run ended without closing this case: ") && why.contains(" of "),
        "{why}"
    );
    let written = std::fs::read_to_string(dir.join("summary.json"))
        .ok()
        .map(|t| serde_json::from_str::<Value>(&t).expect("summary.json"));
    for (i, earlier) in cases[..cut - 1].iter().enumerate() {
        assert_eq!(earlier["complete"], true, "case {}: {earlier}", i + 1);
        assert!(earlier.get("incomplete_reason").is_none(), "{earlier}");
        if let Some(written) = &written {
            assert_eq!(
                earlier,
                &written["cases"][i],
                "case {} as the run wrote it",
                i + 1
            );
        }
    }
    if let Some(written) = &written {
        assert_eq!(
            written["cases"].as_array().map(Vec::len),
            Some(cut - 1),
            "the run had closed every case before the one it was killed in"
        );
    }
    let reason = summary["outcome"]["reason"].as_str().expect("a reason");
    assert!(reason.contains("without its final summary"), "{reason}");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains(why), "{report}");
    summary
}

/// Two closed-round cases (concurrency 1, then 2) of 20 rounds.
const TWO_ROUND_CASES: [&str; 4] = ["--concurrency", "1,2", "--rounds", "20"];

/// 32 prompt and 8 output tokens.
const LENGTHS: [&str; 4] = ["--input-tokens", "32", "--output-tokens", "8"];

/// `command` followed by each of `parts`.
fn args<'a>(command: &'a str, parts: &[&[&'a str]]) -> Vec<&'a str> {
    let mut all = vec![command];
    for part in parts {
        all.extend_from_slice(part);
    }
    all
}

/// A simulator slow enough that a case of 20 rounds of 8 output tokens lasts seconds.
fn slow_sim() -> Simulator {
    Simulator::start(&["--schedule", "fixed:ttft_ms=20,itl_ms=20", "--slots", "16"])
}

#[test]
fn closed_rounds_killed_in_the_second_case() {
    let sim = slow_sim();
    let out = tempfile::tempdir().expect("temp dir");
    let args = args("run", &[&TWO_ROUND_CASES, &LENGTHS]);
    let dir = kill_when(out.path(), &sim.url, &args, |r| has(r, "in32-c2-"));
    let summary = check(&dir, 2);
    let why = summary["cases"][1]["incomplete_reason"]
        .as_str()
        .expect("why");
    assert!(why.contains(" of 40 requests recorded"), "{why}");
}

#[test]
fn closed_continuous_and_soak_killed_in_the_second_case() {
    let sim = slow_sim();
    let out = tempfile::tempdir().expect("temp dir");
    let shape = [
        "--arrival",
        "closed-continuous",
        "--concurrency",
        "1,2",
        "--duration",
        "2s",
        "--series-window",
        "1s",
    ];
    let args = args("run", &[&shape, &LENGTHS]);
    let dir = kill_when(out.path(), &sim.url, &args, |r| has(r, "in32-cc2-"));
    let summary = check(&dir, 2);
    let why = summary["cases"][1]["incomplete_reason"]
        .as_str()
        .expect("why");
    assert!(why.contains("the load was to last 2 s"), "{why}");
    assert!(
        summary["cases"][0]["series"].is_object(),
        "soak series kept"
    );
}

#[test]
fn an_open_loop_killed_in_the_second_case() {
    let sim = slow_sim();
    let out = tempfile::tempdir().expect("temp dir");
    let shape = [
        "--arrival",
        "constant",
        "--rate",
        "5,10",
        "--duration",
        "2s",
    ];
    let args = args("run", &[&shape, &LENGTHS]);
    let dir = kill_when(out.path(), &sim.url, &args, |r| {
        r.iter()
            .any(|r| r["case"].as_str().is_some_and(|c| c.contains("-r10-")))
    });
    check(&dir, 2);
}

#[test]
fn a_sweep_killed_in_its_second_point() {
    let sim = slow_sim();
    let out = tempfile::tempdir().expect("temp dir");
    let args = args("sweep", &[&TWO_ROUND_CASES, &LENGTHS]);
    let dir = kill_when(out.path(), &sim.url, &args, |r| has(r, "in32-c2-"));
    // The point it was killed in is in campaign.json, though the sweep decided it as it went.
    let campaign = json(&dir.join("campaign.json"));
    assert_eq!(campaign["cases"].as_array().map(Vec::len), Some(2));
    check(&dir, 2);
}

#[test]
fn a_dataset_run_killed_in_the_second_case() {
    let sim = slow_sim();
    let out = tempfile::tempdir().expect("temp dir");
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/prompts.jsonl");
    let prompts = [
        "--dataset",
        dataset.to_str().expect("UTF-8 path"),
        "--input-tokens",
        "96",
        "--output-tokens",
        "8",
    ];
    let args = args("run", &[&TWO_ROUND_CASES, &prompts]);
    let dir = kill_when(out.path(), &sim.url, &args, |r| {
        r.iter()
            .any(|r| r["case"].as_str().is_some_and(|c| c.contains("-c2-")))
    });
    check(&dir, 2);
}

#[test]
fn a_trace_killed_midway() {
    let sim = slow_sim();
    let out = tempfile::tempdir().expect("temp dir");
    let trace = out.path().join("trace.jsonl");
    let lines: Vec<String> = (0..100)
        .map(|i| {
            format!(
                "{{\"offset_s\": {}, \"input_tokens\": 32, \"output_tokens\": 8}}",
                f64::from(i) * 0.1
            )
        })
        .collect();
    std::fs::write(&trace, lines.join("\n")).expect("write trace");
    let args = ["run", "--trace", trace.to_str().expect("UTF-8 path")];
    let dir = kill_when(out.path(), &sim.url, &args, |r| {
        r.iter().filter(|r| r["phase"] == "measured").count() >= 3
    });
    let summary = check(&dir, 1);
    let why = summary["cases"][0]["incomplete_reason"]
        .as_str()
        .expect("why");
    assert!(why.contains(" of 100 requests recorded"), "{why}");
}

/// The serials (record indices) of a staged load's launches in the stage `prefix`.
fn serials(records: &[Value], prefix: &str) -> Vec<u64> {
    records
        .iter()
        .filter(|r| r["case"].as_str().is_some_and(|c| c.starts_with(prefix)))
        .filter_map(|r| r["index"].as_u64())
        .collect()
}

/// Whether the second stage has begun and every launch of the first has left its record: the
/// first stage is then whole, whatever the kill cuts.
fn first_stage_whole(records: &[Value]) -> bool {
    let second = serials(records, "stage2-");
    let Some(&begin) = second.iter().min() else {
        return false;
    };
    let first = serials(records, "stage1-");
    (0..begin).all(|i| first.contains(&i))
}

#[test]
fn staged_loads_killed_in_the_second_stage() {
    let sim = slow_sim();
    for (level, extra) in [
        ("rate=10", &["--arrival", "constant"][..]),
        ("concurrency=2", &["--arrival", "closed-continuous"][..]),
    ] {
        let out = tempfile::tempdir().expect("temp dir");
        let spec = format!("2s:{level},60s:{level},2s:{level}");
        let load = ["--stages", &spec, "--warmup", "0"];
        let args = args("run", &[&load, &LENGTHS, extra]);
        let dir = kill_when(out.path(), &sim.url, &args, first_stage_whole);
        // A staged load's cases are written when the load ends: there is no summary.json.
        assert!(!dir.join("summary.json").exists(), "{level}");
        let summary = check(&dir, 2);
        let why = summary["cases"][1]["incomplete_reason"]
            .as_str()
            .expect("why");
        assert!(why.contains("the load was to last 60 s"), "{level}: {why}");
        let first = &summary["cases"][0];
        assert_eq!(first["load"]["stage"]["number"], 1, "{first}");
    }
}

#[test]
fn sessions_killed_in_the_second_case() {
    let sim = slow_sim();
    let out = tempfile::tempdir().expect("temp dir");
    // Two cases of 4 sessions of 3 turns each (concurrency 1, then 2): 12 requests a case.
    let sessions = [
        "--turns",
        "3",
        "--turn-input",
        "16",
        "--sessions",
        "4",
        "--think-time",
        "50ms",
        "--concurrency",
        "1,2",
    ];
    let args = args("run", &[&sessions, &LENGTHS]);
    let dir = kill_when(out.path(), &sim.url, &args, |r| has(r, "in32-sessions-c2"));
    let summary = check(&dir, 2);
    let why = summary["cases"][1]["incomplete_reason"]
        .as_str()
        .expect("why");
    assert!(why.contains(" of 12 requests recorded"), "{why}");
}
