//! Streams abandoned as users abandon them (`--cancel-after`, `--cancel-share`), end to end: the
//! records of the requests drawn are `abandoned` exactly where they were to be (a count of
//! tokens, or a time after the send), never an error and never ok; the others are ok and
//! verified; the summary counts them apart and the case stays complete. Against the built-in
//! simulator and a real llama-server, whose own generated-token counter shows that it stopped
//! generating the abandoned streams when their connections closed.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{attempt_dir, json, json_lines, llmload, LlamaServer, Simulator, SERIAL};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::PoisonError;

const OUTPUT: u64 = 24;

/// A closed campaign of 32 input tokens × concurrency 2 × `OUTPUT` tokens, 3 rounds, with
/// `extra` flags: its measured records and its summary.
fn campaign(url: &str, out: &Path, extra: &[&str]) -> (Vec<Value>, Value, String) {
    let out_dir = out.to_str().expect("UTF-8 path");
    let mut args = vec![
        "run",
        "--url",
        url,
        "--input-tokens",
        "32",
        "--concurrency",
        "2",
        "--output-tokens",
        "24",
        "--rounds",
        "3",
        "--seed",
        "3",
        "--out",
        out_dir,
        "--name",
        "cancel",
        "--timeout",
        "5m",
    ];
    args.extend_from_slice(extra);
    let run = llmload(&args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let dir = attempt_dir(out, "cancel");
    let records = json_lines(&dir.join("requests.jsonl"));
    let measured = records
        .into_iter()
        .filter(|r| r["phase"] == "measured")
        .collect();
    (measured, json(&dir.join("summary.json")), run.stdout)
}

/// Each measured record classified by its draw: drawn ones (`cancel_after` present) abandoned,
/// with no error kind, no complete time, a close time and the note that says so, unless the
/// response ended first (then ok); the others ok and verified with the whole output. Returns
/// (drawn, abandoned).
fn assert_classified(records: &[Value], check_abandoned: impl Fn(&Value)) -> (usize, usize) {
    assert_eq!(records.len(), 6, "{records:?}");
    let (mut drawn, mut abandoned) = (0, 0);
    for r in records {
        if r["cancel_after"].is_null() {
            assert_eq!(
                (r["status"].as_str(), r["verified"].as_bool()),
                (Some("ok"), Some(true)),
                "{r}"
            );
            assert_eq!(r["output_tokens"], OUTPUT, "{r}");
            continue;
        }
        drawn += 1;
        if r["status"] == "ok" {
            assert_eq!(r["output_tokens"], OUTPUT, "{r}");
            continue;
        }
        abandoned += 1;
        assert_eq!(r["status"], "abandoned", "{r}");
        assert!(r["error_kind"].is_null() && r["error"].is_null(), "{r}");
        assert!(r["e2e_ms"].is_null(), "{r}");
        assert!(r["done_s"].as_f64().expect("a close time") >= r["sent_s"].as_f64().expect("sent"));
        assert!(
            r["notes"]
                .to_string()
                .contains("abandoned by the client after"),
            "{r}"
        );
        assert!(
            r["streamed_tokens"].as_u64().expect("streamed") < OUTPUT,
            "{r}"
        );
        check_abandoned(r);
    }
    (drawn, abandoned)
}

/// The summary counts the abandoned apart, the case complete, its section on the terminal.
fn assert_counted(summary: &Value, stdout: &str, drawn: usize, abandoned: usize) {
    let case = &summary["cases"][0];
    assert_eq!(case["complete"], true, "{case}");
    assert_eq!(case["counts"]["abandoned"], abandoned, "{case}");
    assert_eq!(case["counts"]["error"], 0, "{case}");
    assert_eq!(case["abandoned"]["planned"], drawn, "{case}");
    assert_eq!(case["abandoned"]["abandoned"], abandoned, "{case}");
    let others = case["abandoned"]["during"]["n"].as_u64().expect("during")
        + case["abandoned"]["clear"]["n"].as_u64().expect("clear");
    assert_eq!(others, case["counts"]["ok"].as_u64().expect("ok"), "{case}");
    assert_eq!(case["ttft_ms"]["n"], case["counts"]["ok"], "{case}");
    assert!(stdout.contains("Abandoned streams"), "{stdout}");
    assert!(
        stdout.contains(&format!("{abandoned} of {drawn} drawn abandoned")),
        "{stdout}"
    );
}

/// The simulator: 3 tokens, half the requests drawn (seed 3 draws some and not others).
#[test]
fn the_simulator_s_drawn_streams_are_abandoned_after_their_tokens() {
    let sim = Simulator::start(&[]);
    let out = tempfile::tempdir().expect("temp dir");
    let (records, summary, stdout) = campaign(
        &sim.url,
        out.path(),
        &["--cancel-after", "3", "--cancel-share", "0.5"],
    );
    let (drawn, abandoned) = assert_classified(&records, |r| {
        assert_eq!(r["cancel_after"]["tokens"], 3, "{r}");
        assert_eq!(
            (r["streamed_tokens"].as_u64(), r["token_events"].as_u64()),
            (Some(3), Some(3)),
            "{r}"
        );
        assert_eq!(r["event_ms"].as_array().map(Vec::len), Some(3), "{r}");
    });
    assert!(drawn > 0 && drawn < 6, "seed 3 draws some of 6: {drawn}");
    assert_eq!(
        drawn, abandoned,
        "3 of 24 tokens is reached by every drawn stream"
    );
    assert_counted(&summary, &stdout, drawn, abandoned);
}

/// llama-server's own generated-token counter.
fn predicted(url: &str) -> u64 {
    let out = Command::new("curl")
        .args(["-sf", &format!("{url}/metrics")])
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("llamacpp:tokens_predicted_total "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .expect("llama-server reports tokens_predicted_total")
}

/// llama-server, abandoned after 3 tokens: exactly classified, and the server generated far
/// fewer tokens than the drawn requests asked for: it stopped each when its connection closed.
#[test]
fn llama_server_stops_the_streams_abandoned_after_their_tokens() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let before = predicted(&server.url);
    let out = tempfile::tempdir().expect("temp dir");
    let (records, summary, stdout) = campaign(
        &server.url,
        out.path(),
        &["--cancel-after", "3", "--cancel-share", "0.5"],
    );
    let (drawn, abandoned) = assert_classified(&records, |r| {
        assert_eq!(r["streamed_tokens"], 3, "{r}");
        assert_eq!(r["event_ms"].as_array().map(Vec::len), Some(3), "{r}");
    });
    assert!(drawn > 0 && drawn < 6, "{drawn}");
    assert_eq!(drawn, abandoned);
    assert_counted(&summary, &stdout, drawn, abandoned);
    // Every stream read to its end (the warmup's and the ok ones) and the abandoned streams'
    // 3 tokens each were received; the abandoned ones asked for 21 more each. A server that
    // went on generating would count all of those; one that stopped counts a few more than
    // were received at most.
    let generated = predicted(&server.url) - before;
    let complete = (1 + 6 - abandoned) as u64 * OUTPUT;
    let received = complete + 3 * abandoned as u64;
    let unread = (OUTPUT - 3) * abandoned as u64;
    assert_eq!(
        summary["cases"][0]["abandoned"]["others_generated_tokens"], complete,
        "the warmup's and the ok responses' tokens"
    );
    assert!(
        stdout.contains("The server's own count (`llamacpp:tokens_predicted_total`"),
        "{stdout}"
    );
    // (llama-server's counter takes an abandoned stream's tokens as its slot counted them when
    // released, which may be a token fewer or a few more than the client read.)
    assert!(
        generated >= complete,
        "{generated} generated, {complete} read to the end"
    );
    assert!(
        generated < received + unread / 2,
        "the server generated {generated} tokens: the {received} received and more than half \
         the {unread} the abandoned streams no longer read"
    );
}

/// llama-server's chat API, abandoned 300 ms after the send: a drawn stream closes no earlier,
/// or its response ended before.
#[test]
fn llama_server_chat_streams_abandoned_after_a_time() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let (records, summary, stdout) = campaign(
        &server.url,
        out.path(),
        &[
            "--api",
            "chat",
            "--cancel-after",
            "300ms",
            "--cancel-share",
            "0.5",
        ],
    );
    let (drawn, abandoned) = assert_classified(&records, |r| {
        assert_eq!(r["cancel_after"]["ms"], 300, "{r}");
        let held =
            (r["done_s"].as_f64().expect("done") - r["sent_s"].as_f64().expect("sent")) * 1e3;
        assert!(held >= 300.0, "closed {held} ms after the send: {r}");
    });
    assert!(drawn > 0 && drawn < 6, "{drawn}");
    for r in records
        .iter()
        .filter(|r| !r["cancel_after"].is_null() && r["status"] == "ok")
    {
        assert!(r["e2e_ms"].as_f64().expect("complete") < 300.0, "{r}");
    }
    assert_counted(&summary, &stdout, drawn, abandoned);
}
