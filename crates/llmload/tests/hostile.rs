//! llmload against hostile servers: one that never answers, streams forever, sends an endless
//! line, answers HTML, redirects elsewhere or lies about lengths; secrets kept out of every file
//! and message; unaffordable flags refused before anything is sent; stops by SIGTERM and
//! SIGKILL, and damaged files, read back. Each run is bounded in time.
#![expect(clippy::expect_used, reason = "tests fail loudly")]

mod common;
#[path = "common/hostile.rs"]
mod hostile;

use common::{attempt_dir, json, json_lines, Simulator};
use hostile::{
    eventually, files_under, is_empty_or_absent, llmload_within, Finished, Mode, Running, Seen,
    Server,
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
/// against `url`, writing to `out/NAME`, with `extra` flags.
fn small_run(url: &str, out: &Path, extra: &[&str]) -> Finished {
    let mut args = vec![
        "run",
        "--url",
        url,
        "--api",
        "llamacpp",
        "--out",
        utf8(out),
        "--name",
        "hostile",
        "--telemetry",
        "off",
        "--setup-timeout",
        "2s",
        "--timeout",
        "5s",
        "--input-tokens",
        "16",
        "--output-tokens",
        "8",
        "--concurrency",
        "1",
        "--rounds",
        "1",
        "--warmup",
        "0",
    ];
    args.extend_from_slice(extra);
    llmload_within(&args, LIMIT)
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

#[test]
fn a_server_that_never_answers_setup_fails_within_the_setup_timeout() {
    let server = Server::start(Mode::Silent);
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    let run = llmload_within(
        &[
            "run",
            "--url",
            &server.url,
            "--api",
            "llamacpp",
            "--setup-timeout",
            "2s",
            "--out",
            utf8(&out),
        ],
        LIMIT,
    );
    // An exit of its own (a process the hang guard kills has no code), naming the deadline.
    assert_eq!(run.code, Some(1), "{}", shown(&run));
    let lines = stderr_lines(&run);
    assert_eq!(lines.len(), 1, "{}", shown(&run));
    assert!(lines[0].contains("--setup-timeout"), "{}", shown(&run));
    assert!(is_empty_or_absent(&out), "{:?}", files_under(&out));
    assert_eq!(server.count("/health"), 1, "{:?}", server.requests());
}

#[test]
fn sigterm_during_setup_exits_4_without_an_attempt_folder() {
    let server = Server::start(Mode::Silent);
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    let running = Running::start(&[
        "run",
        "--url",
        &server.url,
        "--api",
        "llamacpp",
        "--setup-timeout",
        "60s",
        "--out",
        utf8(&out),
    ]);
    assert!(
        eventually(Duration::from_secs(5), || server.count("/health") == 1),
        "llmload asked for /health"
    );
    std::thread::sleep(Duration::from_millis(500));
    running.signal("TERM");
    let run = running.wait(Duration::from_secs(10));
    // Ended by the signal, not by the 60 s setup deadline: the wait's guard is 10 s.
    assert_eq!(run.code, Some(4), "{}", shown(&run));
    assert!(run.stderr.contains("SIGTERM"), "{}", shown(&run));
    assert!(is_empty_or_absent(&out), "{:?}", files_under(&out));
}

#[test]
fn a_stream_that_never_stops_is_cut_off_as_invalid() {
    let server = Server::start(Mode::Endless);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    let record = the_failed_record(&run, tmp.path());
    assert_eq!(record["status"], "invalid", "{record}");
    assert!(error_of(&record).contains("streamed more than"), "{record}");
    // 8 asked for, and a slack of 16 at most: the rest of the endless stream was never read.
    let streamed = record["streamed_tokens"].as_u64().expect("streamed_tokens");
    assert!((8..=24).contains(&streamed), "{record}");
    assert_eq!(server.count("/completion"), 1);
}

#[test]
fn an_event_line_that_never_ends_is_malformed_and_bounded() {
    let server = Server::start(Mode::Unterminated);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    let record = the_failed_record(&run, tmp.path());
    assert_eq!(record["status"], "error", "{record}");
    assert_eq!(record["error_kind"], "malformed", "{record}");
    assert!(error_of(&record).contains("--max-event-bytes"), "{record}");
}

#[test]
fn an_html_page_with_200_is_malformed() {
    let server = Server::start(Mode::Html);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    let record = the_failed_record(&run, tmp.path());
    assert_eq!(record["error_kind"], "malformed", "{record}");
    assert!(
        error_of(&record).contains("not an event stream"),
        "{record}"
    );
}

#[test]
fn a_redirect_is_not_followed_and_carries_nothing_elsewhere() {
    let elsewhere = Server::start(Mode::Normal);
    let server = Server::start(Mode::Redirect(elsewhere.url.clone()));
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    let run = small_run(
        &server.url,
        &out,
        &["--header", "Authorization: Bearer SECRET-TOKEN"],
    );
    assert_eq!(run.code, Some(1), "{}", shown(&run));
    assert_eq!(stderr_lines(&run).len(), 1, "{}", shown(&run));
    assert!(
        run.stderr.contains("follows no redirects"),
        "{}",
        shown(&run)
    );
    assert!(!run.stderr.contains("SECRET"), "{}", shown(&run));
    assert_eq!(elsewhere.total(), 0, "{:?}", elsewhere.requests());
    assert_eq!(server.count("/health"), 1, "{:?}", server.requests());
    assert!(is_empty_or_absent(&out), "{:?}", files_under(&out));
}

#[test]
fn a_server_that_lies_about_lengths_gets_invalid_records() {
    let server = Server::start(Mode::Lies);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    let record = the_failed_record(&run, tmp.path());
    assert_eq!(record["status"], "invalid", "{record}");
    assert_eq!(record["error_kind"], "invalid", "{record}");
    let error = error_of(&record);
    assert!(
        error.contains("23 prompt tokens") && error.contains("16 were sent"),
        "{record}"
    );
    assert!(
        error.contains("generated 7") && error.contains("8 were requested"),
        "{record}"
    );
}

/// Checks that nothing llmload printed or wrote under `out` holds "SECRET", and that
/// campaign.json shows the header's name with its value redacted.
fn assert_no_secret_left(run: &Finished, out: &Path) {
    assert_eq!(run.code, Some(0), "{}", shown(run));
    assert!(!run.stdout.contains("SECRET"), "{}", shown(run));
    assert!(!run.stderr.contains("SECRET"), "{}", shown(run));
    let files = files_under(out);
    assert!(files.len() >= 5, "the attempt's files: {files:?}");
    for file in &files {
        let bytes = std::fs::read(file).expect("read a written file");
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("SECRET"),
            "{} holds a secret",
            file.display()
        );
    }
    let campaign = std::fs::read_to_string(attempt_dir(out, "hostile").join("campaign.json"))
        .expect("campaign.json");
    let campaign: Value = serde_json::from_str(&campaign).expect("campaign.json is JSON");
    let pairs = find_header_pairs(&campaign);
    assert!(
        pairs
            .iter()
            .any(|(name, value)| name == "X-Api-Key" && value == "[redacted]"),
        "campaign.json lists the header, redacted: {pairs:?}"
    );
}

/// Every `[name, value]` pair of strings under a `headers` key, anywhere in `value`.
fn find_header_pairs(value: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut pending = vec![value];
    while let Some(v) = pending.pop() {
        match v {
            Value::Object(map) => {
                for (key, inner) in map {
                    if key == "headers" {
                        for pair in inner.as_array().into_iter().flatten() {
                            if let [Value::String(n), Value::String(v)] =
                                pair.as_array().map_or(&[][..], Vec::as_slice)
                            {
                                found.push((n.clone(), v.clone()));
                            }
                        }
                    }
                    pending.push(inner);
                }
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    found
}

/// Whether every request `server` got carries `line` in its head, and there were generations.
fn every_request_carries(server: &Server, line: &str) -> bool {
    let requests = server.requests();
    let lower = line.to_ascii_lowercase();
    server.count("/completion") >= 1
        && requests
            .iter()
            .all(|r| r.head.to_ascii_lowercase().contains(&lower))
}

#[test]
fn secrets_reach_the_server_and_no_file_or_message() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");

    let with_credentials = server.url.replace("http://", "http://alice:SECRET-PW@");
    let out = tmp.path().join("url-credentials");
    let run = small_run(
        &with_credentials,
        &out,
        &["--header", "X-Api-Key: SECRET-KEY"],
    );
    assert_no_secret_left(&run, &out);
    // base64("alice:SECRET-PW")
    let basic = "Authorization: Basic YWxpY2U6U0VDUkVULVBX\r\n";
    assert!(
        every_request_carries(&server, basic),
        "{:?}",
        server.requests()
    );
    assert!(every_request_carries(&server, "X-Api-Key: SECRET-KEY\r\n"));

    let second = Server::start(Mode::Normal);
    let out = tmp.path().join("api-key");
    let run = small_run(
        &second.url,
        &out,
        &[
            "--api-key",
            "SECRET-BEARER",
            "--header",
            "X-Api-Key: SECRET-KEY",
        ],
    );
    assert_no_secret_left(&run, &out);
    assert!(
        every_request_carries(&second, "Authorization: Bearer SECRET-BEARER\r\n"),
        "{:?}",
        second.requests()
    );
    assert!(every_request_carries(&second, "X-Api-Key: SECRET-KEY\r\n"));
}

/// `llmload run ARGS… --url URL --out OUT`, which must be a usage error (exit 2, one line on
/// stderr) that leaves nothing under `out`.
fn assert_refused(url: &str, out: &Path, args: &[&str], expected: &str) {
    let mut all = vec![
        "run",
        "--url",
        url,
        "--out",
        utf8(out),
        "--telemetry",
        "off",
    ];
    all.extend_from_slice(args);
    let run = llmload_within(&all, LIMIT);
    assert_eq!(run.code, Some(2), "{args:?}: {}", shown(&run));
    let lines = stderr_lines(&run);
    assert_eq!(lines.len(), 1, "{args:?}: {}", shown(&run));
    assert!(lines[0].contains(expected), "{args:?}: {}", shown(&run));
    assert!(is_empty_or_absent(out), "{args:?}: {:?}", files_under(out));
}

#[test]
fn unaffordable_flags_are_usage_errors_before_anything_is_sent() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    for (args, expected) in [
        (&["--concurrency", "1000000000"][..], "--concurrency"),
        (&["--input-tokens", "4294967295"][..], "--input-tokens"),
        (
            &[
                "--arrival",
                "poisson",
                "--rate",
                "100000",
                "--duration",
                "1000h",
            ][..],
            "--rate",
        ),
        (
            &[
                "--requests",
                "100000000000",
                "--arrival",
                "closed-continuous",
            ][..],
            "--requests",
        ),
    ] {
        assert_refused(&server.url, &out, args, expected);
    }
    assert_eq!(server.total(), 0, "{:?}", server.requests());
}

#[test]
fn a_missing_corpus_is_a_usage_error_before_anything_is_sent() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    assert_refused(
        &server.url,
        &out,
        &["--corpus", "/nonexistent/file"],
        "--corpus",
    );
    assert_eq!(server.total(), 0, "{:?}", server.requests());
}

/// A long continuous campaign against `url` (`llmload run … --duration 5m`), started.
fn long_campaign(url: &str, out: &Path) -> Running {
    Running::start(&[
        "run",
        "--url",
        url,
        "--out",
        utf8(out),
        "--name",
        "long",
        "--telemetry",
        "off",
        "--arrival",
        "closed-continuous",
        "--concurrency",
        "4",
        "--duration",
        "5m",
        "--input-tokens",
        "64",
        "--output-tokens",
        "64",
        "--warmup",
        "0",
        "--setup-timeout",
        "10s",
        "--timeout",
        "30s",
    ])
}

/// The attempt folder of [`long_campaign`], once its records hold `n` requests (within 20 s).
fn wait_for_records(out: &Path, n: usize) -> PathBuf {
    let mut found = None;
    let ready = eventually(Duration::from_secs(20), || {
        let Ok(mut entries) = std::fs::read_dir(out.join("long")) else {
            return false;
        };
        let Some(Ok(entry)) = entries.next() else {
            return false;
        };
        let records = entry.path().join("requests.jsonl");
        let lines = std::fs::read_to_string(records).map_or(0, |t| t.lines().count());
        found = Some(entry.path());
        lines >= n
    });
    assert!(ready, "{n} records within 20 s in {found:?}");
    found.expect("an attempt folder")
}

/// A [`long_campaign`] against a fast simulator, sent SIGTERM once 4 requests are recorded: how
/// it ended, and its attempt folder (in `out`).
fn terminated_campaign(out: &Path) -> (Finished, PathBuf) {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let running = long_campaign(&sim.url, out);
    let dir = wait_for_records(out, 4);
    running.signal("TERM");
    // The campaign would run for minutes: an exit within the wait's guard is the signal's.
    let run = running.wait(Duration::from_secs(25));
    assert!(run.code.is_some(), "SIGTERM ends the run: {}", shown(&run));
    (run, dir)
}

#[test]
fn sigterm_mid_run_stops_it_with_every_view_and_every_record_counted() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (run, dir) = terminated_campaign(tmp.path());
    assert_eq!(run.code, Some(4), "{}", shown(&run));

    let summary = json(&dir.join("summary.json"));
    let outcome = &summary["outcome"];
    assert_eq!(outcome["status"], "stopped", "{outcome}");
    let reason = outcome["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("SIGTERM"), "{outcome}");
    assert!(dir.join("report.md").is_file());
    assert!(dir.join("report.html").is_file());

    let measured = json_lines(&dir.join("requests.jsonl"))
        .into_iter()
        .filter(|r| r["phase"] == "measured")
        .count();
    let counted: u64 = summary["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let n = &c["counts"];
            ["ok", "invalid", "error", "cancelled"]
                .iter()
                .map(|k| n[*k].as_u64().expect("a count"))
                .sum::<u64>()
        })
        .sum();
    assert!(measured >= 4, "{measured} measured records");
    assert_eq!(counted, measured as u64, "{summary}");
}

/// A [`long_campaign`] against a fast simulator, killed with SIGKILL once 4 requests are
/// recorded; its attempt folder (in `out`).
fn killed_campaign(out: &Path) -> PathBuf {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let running = long_campaign(&sim.url, out);
    let dir = wait_for_records(out, 4);
    running.signal("KILL");
    let killed = running.wait(Duration::from_secs(10));
    assert_eq!(killed.code, None, "killed by a signal: {}", shown(&killed));
    dir
}

#[test]
fn a_run_killed_mid_way_reads_back_as_ended_without_its_final_summary() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = killed_campaign(tmp.path());

    let report = llmload_within(&["report", utf8(&dir), "--json"], LIMIT);
    assert_eq!(report.code, Some(0), "{}", shown(&report));
    let summary: Value = serde_json::from_str(&report.stdout).expect("--json prints JSON");
    let reason = summary["outcome"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("without its final summary"),
        "{}",
        summary["outcome"]
    );
    let text = llmload_within(&["report", utf8(&dir)], LIMIT);
    assert_eq!(text.code, Some(0), "{}", shown(&text));
    assert!(
        text.stdout.contains("without its final summary"),
        "{}",
        shown(&text)
    );
}

#[test]
fn a_damaged_summary_is_rebuilt_from_the_records_with_a_warning() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let dir = attempt_dir(tmp.path(), "hostile");
    std::fs::write(dir.join("summary.json"), "{garbage").expect("overwrite summary.json");

    let report = llmload_within(&["report", utf8(&dir)], LIMIT);
    assert_eq!(report.code, Some(0), "{}", shown(&report));
    assert!(report.stderr.contains("summary.json"), "{}", shown(&report));
    assert!(report.stderr.contains("damaged"), "{}", shown(&report));
    assert!(
        report.stdout.contains("| 16 | 1 |"),
        "the results table, rebuilt from the records: {}",
        shown(&report)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"),
        "{garbage",
        "report never rewrites summary.json"
    );
}

#[test]
fn a_case_cut_short_by_a_kill_is_not_rebuilt_as_complete() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = killed_campaign(tmp.path());
    let report = llmload_within(&["report", utf8(&dir), "--json"], LIMIT);
    assert_eq!(report.code, Some(0), "{}", shown(&report));
    let summary: Value = serde_json::from_str(&report.stdout).expect("--json prints JSON");
    assert_eq!(
        summary["cases"][0]["complete"], false,
        "{}",
        summary["cases"][0]
    );
    assert_eq!(
        summary["outcome"]["cases_completed"], 0,
        "{}",
        summary["outcome"]
    );
}

#[test]
fn a_stopped_continuous_case_is_measured_over_the_time_it_ran() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (run, dir) = terminated_campaign(tmp.path());
    assert_eq!(run.code, Some(4), "{}", shown(&run));
    let summary = json(&dir.join("summary.json"));
    let load = &summary["cases"][0]["load"];
    let last_activity = json_lines(&dir.join("requests.jsonl"))
        .iter()
        .filter_map(|r| r["done_s"].as_f64().or(r["sent_s"].as_f64()))
        .fold(0.0, f64::max);
    let end = load["window_s"][1].as_f64().expect("window_s");
    assert!(
        end <= last_activity + 1.0,
        "the window ends at {end} s, the last activity was at {last_activity} s: {load}"
    );
}

#[test]
fn extra_body_fields_reach_every_generation_and_secrets_in_them_stay_out_of_files() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    let extra = r#"{"chat_template_kwargs": {"enable_thinking": false}, "temperature": 0,
                    "user_api_key": "SECRET-IN-BODY"}"#;
    let run = llmload_within(
        &[
            "run",
            "--url",
            &server.url,
            "--api",
            "llamacpp",
            "--input-tokens",
            "16",
            "--concurrency",
            "1",
            "--output-tokens",
            "4",
            "--rounds",
            "1",
            "--warmup",
            "0",
            "--telemetry",
            "off",
            "--timeout",
            "5s",
            "--setup-timeout",
            "2s",
            "--extra-body",
            extra,
            "--out",
            utf8(&out),
            "--name",
            "extra",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let generations: Vec<Seen> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/completion")
        .collect();
    assert!(!generations.is_empty());
    for seen in &generations {
        let body: Value = serde_json::from_str(&seen.body).expect("a JSON body");
        assert_eq!(
            body["chat_template_kwargs"]["enable_thinking"], false,
            "{body}"
        );
        assert_eq!(body["temperature"], 0, "{body}");
        assert_eq!(body["stream"], true, "llmload's own fields stay: {body}");
    }
    for file in files_under(&out) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(!text.contains("SECRET"), "{}", file.display());
    }
    let campaign = std::fs::read_to_string(
        files_under(&out)
            .into_iter()
            .find(|f| f.ends_with("campaign.json"))
            .expect("campaign.json"),
    )
    .expect("readable");
    assert!(campaign.contains("enable_thinking"), "{campaign}");
    let reserved = llmload_within(
        &[
            "run",
            "--url",
            &server.url,
            "--extra-body",
            r#"{"max_tokens": 9}"#,
            "--out",
            utf8(&out),
        ],
        LIMIT,
    );
    assert_eq!(reserved.code, Some(2), "{}", shown(&reserved));
    assert!(
        reserved.stderr.contains("may not set \"max_tokens\""),
        "{}",
        shown(&reserved)
    );
}

#[test]
fn a_case_past_the_server_s_context_is_a_usage_error_before_anything_is_measured() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    let run = llmload_within(
        &[
            "run",
            "--url",
            &server.url,
            "--input-tokens",
            "3800,4000",
            "--concurrency",
            "1",
            "--output-tokens",
            "200",
            "--rounds",
            "1",
            "--telemetry",
            "off",
            "--setup-timeout",
            "2s",
            "--out",
            utf8(&out),
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(2), "{}", shown(&run));
    assert!(
        run.stderr.contains("needs 4200 tokens of context")
            && run
                .stderr
                .contains("4096 (the slot context n_ctx at /props)"),
        "{}",
        shown(&run)
    );
    assert_eq!(server.count("/completion"), 0, "nothing was generated");
    assert!(is_empty_or_absent(&out));
}

#[test]
fn responses_without_counters_are_shown_as_unverified_wherever_figures_are() {
    let server = Server::start(Mode::Unreported);
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    let run = llmload_within(
        &[
            "run",
            "--url",
            &server.url,
            "--api",
            "llamacpp",
            "--input-tokens",
            "16",
            "--concurrency",
            "2",
            "--output-tokens",
            "4",
            "--rounds",
            "1",
            "--warmup",
            "0",
            "--telemetry",
            "off",
            "--setup-timeout",
            "2s",
            "--out",
            utf8(&out),
            "--name",
            "bare",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    assert!(
        run.stdout.contains("| 2 (2 unverified) |"),
        "{}",
        shown(&run)
    );
    assert!(
        run.stdout.contains("Unverified: 2 of the 2 ok responses"),
        "{}",
        shown(&run)
    );
    let dir = attempt_dir(&out, "bare");
    for r in json_lines(&dir.join("requests.jsonl")) {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], false, "{r}");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(html.contains("Unverified: 2 of the 2 ok responses"), "html");
}
