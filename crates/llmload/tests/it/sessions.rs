//! Multi-turn sessions end to end: closed (sessions in parallel) and Poisson arrivals against the
//! built-in simulator, with the history as generated and as a placeholder; a server that reports
//! more cached tokens than the history flagged; a chat server that cannot show its chat prompt's
//! tokens left unverified; the usage errors; and a real llama-server's chat API caching each
//! session's history.

use crate::common;

use common::{
    count as n, json, llmload, measured, run_against, LlamaServer, Simulator, SERIAL,
    WORDS_TOKENIZER,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

/// `llmload run` of the built-in simulator with `extra`; the invocation and the attempt folder.
#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
fn run_simulated(out: &Path, extra: &[&str]) -> (common::Invocation, PathBuf) {
    let mut args = vec![
        "run",
        "--out",
        out.to_str().expect("UTF-8 path"),
        "--name",
        "s",
        "--telemetry",
        "off",
        "-q",
    ];
    args.extend_from_slice(extra);
    let result = llmload(&args);
    (result, common::attempt_dir(out, "s"))
}

/// The words of `text`: a command line's arguments written as one line.
fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// The measured records by session id, each session's turns in turn order; checks that every
/// session has exactly turns 1..=`turns` and says so in each record.
fn by_session(records: &[Value], turns: u64) -> BTreeMap<u64, Vec<Value>> {
    let mut sessions: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for r in records {
        sessions
            .entry(n(&r["session"]))
            .or_default()
            .push(r.clone());
    }
    for (id, records) in &mut sessions {
        records.sort_by_key(|r| n(&r["turn"]));
        let order: Vec<u64> = records.iter().map(|r| n(&r["turn"])).collect();
        assert_eq!(order, (1..=turns).collect::<Vec<_>>(), "session {id}");
        assert!(records.iter().all(|r| n(&r["turns"]) == turns));
    }
    sessions
}

/// The summary `llmload report DIR --json` rebuilds from the records.
#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
fn rebuilt(dir: &Path) -> Value {
    let result = llmload(&["report", dir.to_str().expect("UTF-8 path"), "--json"]);
    assert_eq!(result.code, 0, "{}", result.stderr);
    serde_json::from_str(&result.stdout).expect("JSON on stdout")
}

/// Checks the case's by-turn table and session figures against the records, and that the
/// rebuilt summary has the same.
#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
fn check_summary(dir: &Path, sessions: usize, turns: u64) {
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    assert_eq!(case["complete"], true, "{case}");
    let s = &case["sessions"];
    assert_eq!(n(&s["turns"]), turns);
    assert_eq!(n(&s["started"]), sessions as u64);
    assert_eq!(n(&s["completed"]), sessions as u64);
    assert_eq!(n(&s["incomplete"]), 0);
    assert_eq!(n(&s["duration_s"]["n"]), sessions as u64);
    // Each session's duration holds its turns' active times (and the think times between).
    for stat in ["min", "max"] {
        assert!(
            f(&s["duration_s"][stat]) >= f(&s["active_s"][stat]) - 1e-9,
            "{s}"
        );
    }
    let by_turn = s["by_turn"].as_array().expect("by_turn");
    assert_eq!(by_turn.len() as u64, turns);
    for (i, t) in by_turn.iter().enumerate() {
        assert_eq!(n(&t["turn"]), i as u64 + 1);
        assert_eq!(n(&t["n"]), sessions as u64, "{t}");
        assert_eq!(n(&t["ttft_ms"]["n"]), sessions as u64, "{t}");
    }
    // The prompt grows turn by turn.
    let medians: Vec<f64> = by_turn
        .iter()
        .map(|t| f(&t["prompt_tokens"]["median"]))
        .collect();
    assert!(medians.windows(2).all(|w| w[0] < w[1]), "{medians:?}");
    assert_eq!(rebuilt(dir)["cases"][0], *case, "rebuild = run");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("Multi-turn sessions"), "{report}");
    let csv = std::fs::read_to_string(dir.join("cases.csv")).expect("cases.csv");
    assert!(csv
        .lines()
        .next()
        .is_some_and(|h| h.contains("turn_cache_hit_rate")));
}

/// A sessions run whose sessions all complete says so in every view: no "no case completed",
/// and its Results hold the sessions' table (and in report.html their chart).
#[test]
fn a_completed_sessions_run_says_so_in_every_view() {
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run_simulated(
        out.path(),
        &words("--input-tokens 32 --output-tokens 4 --concurrency 2 --turns 2 --sessions 2"),
    );
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let markdown = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    for (view, text) in [
        ("-q", &result.stdout),
        ("report.md", &markdown),
        ("report.html", &html),
    ] {
        assert!(!text.contains("No case completed"), "{view}: {text}");
        assert!(
            text.contains("2 sessions of 2 turns started, 2 complete, 0 incomplete"),
            "{view}: {text}"
        );
    }
    assert!(
        markdown.contains("Completed: 1 of 1 cases complete"),
        "{markdown}"
    );
    let results = &markdown[markdown.find("## Results").expect("a Results section")..];
    let results = &results[..results[3..]
        .find("\n## ")
        .map_or(results.len(), |end| end + 3)];
    assert!(results.contains("### Multi-turn sessions"), "{results}");
    assert!(results.contains("| Turn |"), "the table by turn: {results}");
    let results = &html[html.find("<section id=\"results\">").expect("Results")..];
    let results = &results[..results.find("</section>").expect("its end")];
    assert!(results.contains("<table>"), "{results}");
    assert!(results.contains("<svg"), "the chart by turn: {results}");
    assert!(!html.contains("no complete case"), "{html}");
}

#[test]
fn closed_sessions_send_their_history_as_generated_and_rebuild_the_same() {
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run_simulated(
        out.path(),
        &words(
            "--input-tokens 64 --turn-input 24 --output-tokens 8 \
             --concurrency 2 --turns 3 --sessions 4 --think-time 20ms",
        ),
    );
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 12, "4 sessions × 3 turns");
    let sessions = by_session(&records, 3);
    assert_eq!(
        sessions.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    for turns in sessions.values() {
        for r in turns {
            assert_eq!(r["status"], "ok", "{r}");
            assert_eq!(r["verified"], true, "{r}");
            let (prompt, history) = (n(&r["prompt_tokens"]), n(&r["history_tokens"]));
            assert!(n(&r["cached_tokens"]) <= history, "{r}");
            // The first turn is the case's prompt; each later one its history and 24 tokens.
            match n(&r["turn"]) {
                1 => assert_eq!((prompt, history), (64, 0), "{r}"),
                _ => assert_eq!(prompt, history + 24, "{r}"),
            }
        }
        for pair in turns.windows(2) {
            // The answer as generated (8 tokens streamed) joined the history.
            assert!(n(&pair[1]["history_tokens"]) > n(&pair[0]["prompt_tokens"]));
            // The next turn was due exactly the think time after the answer, and went no earlier.
            let due = f(&pair[1]["scheduled_s"]);
            assert!(
                (due - f(&pair[0]["done_s"]) - 0.020).abs() < 1e-6,
                "{pair:?}"
            );
            assert!(f(&pair[1]["sent_s"]) >= due);
        }
        assert!(
            turns[0]["scheduled_s"].is_null(),
            "closed: the first turn goes at once"
        );
    }
    // Later turns find their history in the simulator's prefix cache.
    assert!(records
        .iter()
        .any(|r| n(&r["turn"]) > 1 && n(&r["cached_tokens"]) > 0));
    check_summary(&dir, 4, 3);
}

#[test]
fn poisson_sessions_with_a_placeholder_history_grow_by_exact_counts() {
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run_simulated(
        out.path(),
        &words(
            "--input-tokens 48 --output-tokens 8 --arrival poisson --rate \
             20 --turns 2 --sessions 5 --history placeholder --think-time \
             uniform:10ms..30ms --seed 7",
        ),
    );
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 10, "5 sessions × 2 turns");
    let sessions = by_session(&records, 2);
    let mut arrivals = Vec::new();
    for turns in sessions.values() {
        assert!(turns
            .iter()
            .all(|r| r["status"] == "ok" && r["verified"] == true));
        // The placeholder is exactly the 8 requested tokens; the new message the prompt length.
        assert_eq!(
            n(&turns[1]["history_tokens"]),
            n(&turns[0]["prompt_tokens"]) + 8
        );
        assert_eq!(
            n(&turns[1]["prompt_tokens"]),
            n(&turns[1]["history_tokens"]) + 48
        );
        let think = f(&turns[1]["scheduled_s"]) - f(&turns[0]["done_s"]);
        assert!((0.010 - 1e-6..=0.030 + 1e-6).contains(&think), "{think}");
        assert!(
            f(&turns[0]["sent_s"]) >= f(&turns[0]["scheduled_s"]),
            "not early"
        );
        arrivals.push(f(&turns[0]["scheduled_s"]));
    }
    // Sessions arrive on the schedule, in id order.
    assert!(arrivals.windows(2).all(|w| w[0] < w[1]), "{arrivals:?}");
    let campaign = json(&dir.join("campaign.json"));
    let case = &campaign["cases"][0];
    assert_eq!(case["shape"], "sessions");
    assert_eq!(case["history"], "placeholder");
    assert_eq!(case["process"]["kind"], "poisson");
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["cases"][0]["sessions"]["rate_rps"], 20.0);
    check_summary(&dir, 5, 2);
}

#[test]
fn a_cache_hit_beyond_the_history_is_invalid() {
    // Every response claims 100 cached tokens: more than the first turn's history (none) and
    // the second's (72), within the third's (104).
    let sim = Simulator::start(&["--fault", "fake-cache:tokens=100"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run_against(
        out.path(),
        "s",
        &sim.url,
        &words(
            "--input-tokens 64 --turn-input 24 --output-tokens 8 \
             --concurrency 1 --turns 3 --history placeholder -q",
        ),
    );
    assert_eq!(result.code, 3, "an incomplete case: {}", result.stderr);
    let records = measured(&dir);
    let sessions = by_session(&records, 3);
    let turns = &sessions[&0];
    let history: Vec<u64> = turns.iter().map(|r| n(&r["history_tokens"])).collect();
    assert_eq!(history, vec![0, 72, 104]);
    let status: Vec<&str> = turns
        .iter()
        .map(|r| r["status"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(status, vec!["invalid", "invalid", "ok"]);
    assert!(
        turns[1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("more than the 72 of the session's history")),
        "{}",
        turns[1]
    );
    let s = &json(&dir.join("summary.json"))["cases"][0]["sessions"];
    assert_eq!((n(&s["completed"]), n(&s["incomplete"])), (0, 1));
    assert_eq!(s["incomplete_sessions"], serde_json::json!([0]));
    assert!(
        s["duration_s"].is_null(),
        "an incomplete session is not pooled"
    );
    // Each turn has its row; only the third's response was ok.
    let ok: Vec<u64> = s["by_turn"]
        .as_array()
        .expect("by_turn")
        .iter()
        .map(|t| n(&t["n"]))
        .collect();
    assert_eq!(ok, vec![0, 0, 1]);
}

#[test]
fn chat_sessions_with_placeholders_on_the_simulator_grow_by_exact_counts_and_are_verified() {
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run_simulated(
        out.path(),
        &words(
            "--api chat --input-tokens 64 --system-prompt-tokens 16 --turn-input 24 \
             --output-tokens 8 --concurrency 2 --turns 3 --sessions 2 --history placeholder",
        ),
    );
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 6);
    for turns in by_session(&records, 3).values() {
        for r in turns {
            assert_eq!(
                (&r["status"], &r["verified"]),
                (&"ok".into(), &true.into()),
                "{r}"
            );
            let (cached, history) = (n(&r["cached_tokens"]), n(&r["history_tokens"]));
            assert!(cached <= history, "{r}");
        }
        // The first turn's history is the shared system prompt, as the template opens it.
        assert_eq!(n(&turns[0]["history_tokens"]), 16);
        assert_eq!(n(&turns[0]["prompt_tokens"]), 64);
        for pair in turns.windows(2) {
            // The template's tokens around the new message count in its 24.
            assert_eq!(
                n(&pair[1]["prompt_tokens"]),
                n(&pair[1]["history_tokens"]) + 24
            );
            // The history holds the previous prompt and its answer.
            assert!(n(&pair[1]["history_tokens"]) > n(&pair[0]["prompt_tokens"]));
        }
    }
    check_summary(&dir, 2, 3);
}

#[test]
fn chat_sessions_on_a_server_that_cannot_show_its_chat_prompt_are_unverified() {
    // A hosted endpoint: no /tokenize, no chat template, no usage.
    let sim = Simulator::start(&["--hosted", "--schedule", "fixed:ttft_ms=5,itl_ms=1"]);
    let out = tempfile::tempdir().expect("temp dir");
    let tokenizer = out.path().join("tokenizer.json");
    std::fs::write(&tokenizer, WORDS_TOKENIZER).expect("write the tokenizer");
    let (result, dir) = run_against(
        out.path(),
        "hosted",
        &sim.url,
        &words(&format!(
            "--api chat --best-effort --tokenizer {} --input-tokens 48 --output-tokens 4 \
             --concurrency 1 --turns 2 --warmup 0 -q",
            tokenizer.display()
        )),
    );
    assert_eq!(result.code, 0, "{}", result.stderr);
    let records = measured(&dir);
    let turns = &by_session(&records, 2)[&0];
    for r in turns {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], false, "{r}");
        assert!(
            r.get("history_tokens").is_none(),
            "not known, not claimed: {r}"
        );
    }
    let s = &json(&dir.join("summary.json"))["cases"][0]["sessions"];
    assert_eq!(n(&s["completed"]), 1);
}

#[test]
fn a_stop_during_the_think_time_sends_no_further_turn() {
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run_simulated(
        out.path(),
        &words(
            "--input-tokens 32 --output-tokens 4 --concurrency 2 --turns 3 \
             --think-time 60s --max-duration 2s",
        ),
    );
    assert_eq!(result.code, 4, "stopped by the guard: {}", result.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(records.iter().all(|r| n(&r["turn"]) == 1), "{records:?}");
    let summary = json(&dir.join("summary.json"));
    let s = &summary["cases"][0]["sessions"];
    assert_eq!((n(&s["completed"]), n(&s["incomplete"])), (0, 2), "{s}");
    assert_eq!(summary["cases"][0]["complete"], false);
    assert_eq!(summary["outcome"]["status"], "stopped");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap_or_default();
    assert!(
        report.contains("- 32 input tokens × 2 sessions in parallel × 4 output: 0 of 2 sessions"),
        "{report}"
    );
    assert_eq!(
        rebuilt(&dir)["cases"][0],
        summary["cases"][0],
        "rebuild = run"
    );
}

#[test]
fn session_settings_that_do_not_fit_are_usage_errors() {
    for args in [
        "--turns 1",
        "--sessions 3",
        "--think-time 2s",
        "--turns 2 --think-time uniform:3s..1s",
        "--turns 2 --requests 5 --arrival closed-continuous",
        "--turns 2 --stages 1s:rate=2",
        "--turns 2 --dataset samples/prompts.jsonl",
    ] {
        let out = tempfile::tempdir().expect("temp dir");
        let result = run_simulated_no_dir(out.path(), &words(args));
        assert_eq!(result.code, 2, "{args:?}: {}", result.stderr);
        assert_eq!(result.stderr.trim().lines().count(), 1, "{}", result.stderr);
    }
}

/// As [`run_simulated`], for a run that makes no attempt folder.
#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
fn run_simulated_no_dir(out: &Path, extra: &[&str]) -> common::Invocation {
    let mut args = vec!["run", "--out", out.to_str().expect("UTF-8 path"), "-q"];
    args.extend_from_slice(extra);
    llmload(&args)
}

#[test]
fn llama_server_chat_sessions_take_their_history_from_the_cache_and_nothing_more() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    // Gemma 3's sliding-window attention: a slot's prefix is reused only with the full cache.
    let server = LlamaServer::start_with(&["--swa-full"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run_against(
        out.path(),
        "chat",
        &server.url,
        &words(
            "--api chat --input-tokens 48 --system-prompt-tokens 16 \
             --turn-input 32 --output-tokens 8 --concurrency 2 --turns 3 \
             --sessions 2 --timeout 5m",
        ),
    );
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let records = measured(&dir);
    assert_eq!(records.len(), 6);
    for turns in by_session(&records, 3).values() {
        for r in turns {
            assert_eq!(r["status"], "ok", "{r}");
            assert_eq!(r["verified"], true, "{r}");
            let (cached, history) = (n(&r["cached_tokens"]), n(&r["history_tokens"]));
            assert!(cached <= history, "{r}");
            if n(&r["turn"]) == 1 {
                // The first turn's history is the chat template's head and the shared text.
                assert!((16..48).contains(&history), "{r}");
            } else {
                // A later turn grows by exactly its 32 new tokens; its history is cached.
                assert_eq!(n(&r["prompt_tokens"]), history + 32, "{r}");
                assert!(cached > 0, "the history came from the slot: {r}");
            }
        }
    }
    let case = &json(&dir.join("summary.json"))["cases"][0];
    // The cache's share is by turn; the shared prompt's hit rate would count the history too.
    assert!(case.get("prefix_cache").is_none(), "{case}");
    assert_eq!(rebuilt(&dir)["cases"][0], *case, "rebuild = run");
    let s = &case["sessions"];
    assert_eq!(n(&s["completed"]), 2);
    for t in &s["by_turn"].as_array().expect("by_turn")[1..] {
        assert!(f(&t["hit_rate"]) > 0.0, "{t}");
    }
}
