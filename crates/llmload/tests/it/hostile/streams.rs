//! Servers that never answer, stream forever, send an endless line, answer HTML, redirect, or
//! lie about lengths.

use super::*;

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
    assert!(error_of(&record).contains("without ending"), "{record}");
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

#[test]
fn more_token_events_than_the_server_says_it_generated_is_invalid() {
    let server = Server::start(Mode::Overcount);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    let record = the_failed_record(&run, tmp.path());
    assert_eq!(record["status"], "invalid", "{record}");
    assert_eq!(record["streamed_tokens"], 13, "{record}");
    assert!(
        error_of(&record).contains("13 token events, more than the 8 tokens the server says"),
        "{record}"
    );
}

#[test]
fn a_byte_order_mark_before_the_first_event_loses_no_token() {
    let server = Server::start(Mode::Bom);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let records = json_lines(&attempt_dir(tmp.path(), "hostile").join("requests.jsonl"));
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record["status"], "ok", "{record}");
    assert_eq!(record["verified"], true, "{record}");
    // Every token event counted, the first one included, and nothing to note.
    assert_eq!(record["streamed_tokens"], 8, "{record}");
    assert_eq!(
        record["notes"].as_array().map_or(0, Vec::len),
        0,
        "{record}"
    );
}

#[test]
fn control_sequences_from_the_server_never_reach_the_terminal_raw() {
    let server = Server::start(Mode::Controls);
    let raw = |text: &str| {
        text.chars()
            .any(|c| c.is_control() && c != '\n' || ('\u{202a}'..='\u{202e}').contains(&c))
    };
    // A model name that could only be shown altered is never sent in its place: the target is
    // refused at setup, the name written out, and --model named.
    let tmp = tempfile::tempdir().expect("temp dir");
    let refused = small_run(&server.url, tmp.path(), &[]);
    assert_ne!(refused.code, Some(0), "{}", shown(&refused));
    assert!(
        refused.stderr.contains("is not plain text")
            && refused.stderr.contains("pass --model")
            && refused.stderr.contains("\\u{1b}]0;pwned"),
        "{}",
        refused.stderr
    );
    assert!(
        !raw(&refused.stdout) && !raw(&refused.stderr),
        "{refused:?}"
    );
    // Asked for by name, it is sent as it is and shown written out.
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(
        &server.url,
        tmp.path(),
        &["--model", common::hostile::CONTROLS],
    );
    let record = the_failed_record(&run, tmp.path());
    assert_eq!(record["error_kind"], "http", "{record}");
    // The record keeps the server's words; the terminal shows them with every control written
    // out, so nothing is cleared, retitled or forged.
    assert!(error_of(&record).contains("upstream failed"), "{record}");
    for text in [&run.stdout, &run.stderr] {
        assert!(!raw(text), "{text:?}");
    }
    // Written out where it is shown: the model's name (every control, its carriage return
    // too) and the case's first error.
    assert!(
        run.stdout
            .contains("model \\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{d}error: forged line"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("HTTP 500 Internal Server Error: \\u{1b}]0;pwned"),
        "{}",
        run.stdout
    );
    // report.md the same, for whoever reads it on a terminal.
    let report = std::fs::read_to_string(attempt_dir(tmp.path(), "hostile").join("report.md"))
        .expect("report.md");
    assert!(
        report.contains("HTTP 500 Internal Server Error: \\u{1b}]0;pwned"),
        "{report}"
    );
    assert!(
        !report.chars().any(|c| c.is_control() && c != '\n'),
        "{report:?}"
    );
}

#[test]
fn bad_framing_is_malformed_at_once_and_no_content_ends_at_its_head() {
    // (Interim heads are skipped on every path: `stack.rs`.)
    // Two lengths that disagree, a compressed stream: malformed, named.
    for (mode, expected) in [
        (Mode::TwoLengths, "two Content-Length fields that disagree"),
        (Mode::Gzip, "Content-Encoding gzip"),
    ] {
        let server = Server::start(mode.clone());
        let tmp = tempfile::tempdir().expect("temp dir");
        let run = small_run(&server.url, tmp.path(), &[]);
        let record = the_failed_record(&run, tmp.path());
        assert_eq!(record["error_kind"], "malformed", "{mode:?}: {record}");
        assert!(error_of(&record).contains(expected), "{mode:?}: {record}");
    }
    // 204 No Content ends at its head: an HTTP error, not a wait for the --timeout of 5 s.
    let server = Server::start(Mode::NoContent);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    let record = the_failed_record(&run, tmp.path());
    assert_eq!(record["error_kind"], "http", "{record}");
    assert!(error_of(&record).contains("204"), "{record}");
}

#[test]
fn an_error_event_in_the_stream_is_kept_as_the_error() {
    let server = Server::start(Mode::ErrorEvent);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    let record = the_failed_record(&run, tmp.path());
    assert_eq!(record["status"], "error", "{record}");
    assert_eq!(record["error_kind"], "server_error", "{record}");
    assert!(
        error_of(&record).contains("error event: overloaded: retry later"),
        "{record}"
    );
    assert_eq!(
        record["streamed_tokens"], 2,
        "the tokens before it are kept: {record}"
    );
}

/// A proxy in front of a stopped server: told in one line, whichever API was asked for (none,
/// or one that needs the model list), with the page reduced to its title.
#[test]
fn a_proxy_whose_server_is_down_is_named_in_one_line() {
    let server = Server::start(Mode::BadGateway);
    let tmp = tempfile::tempdir().expect("temp dir");
    for api in [None, Some("completions"), Some("llamacpp")] {
        let out = tmp.path().join(api.unwrap_or("auto"));
        let mut args = vec!["run", "--url", &server.url, "--out", utf8(&out)];
        args.extend(api.iter().flat_map(|a| ["--api", a]));
        let run = llmload_within(&args, LIMIT);
        assert_eq!(run.code, Some(1), "{}", shown(&run));
        let lines = stderr_lines(&run);
        assert_eq!(lines.len(), 1, "{}", shown(&run));
        assert!(
            lines[0].contains(&format!(
                "the proxy at {} answered 502 Bad Gateway for /v1/models (an HTML page titled \
                 \"502 Bad Gateway\"): the server behind it is not answering",
                server.url
            )),
            "{}",
            shown(&run)
        );
        assert!(!lines[0].contains('<'), "{}", shown(&run));
        assert!(is_empty_or_absent(&out), "{:?}", files_under(&out));
    }
}

/// A proxy's error page mid-run is its title in the record, on the terminal and in report.md
/// (where raw HTML would render); an empty error body says so.
#[test]
fn a_proxy_error_page_mid_run_is_reduced_to_its_title() {
    for (mode, error) in [
        (
            Mode::GatewayTimeout,
            "HTTP 504 Gateway Timeout: an HTML page titled \"504 Gateway Time-out\"",
        ),
        (
            Mode::EmptyBadGateway,
            "HTTP 502 Bad Gateway, with an empty body",
        ),
    ] {
        let server = Server::start(mode);
        let tmp = tempfile::tempdir().expect("temp dir");
        let run = small_run(&server.url, tmp.path(), &[]);
        let record = the_failed_record(&run, tmp.path());
        assert_eq!(record["error_kind"], "http", "{record}");
        assert_eq!(error_of(&record), error, "{record}");
        let report = std::fs::read_to_string(attempt_dir(tmp.path(), "hostile").join("report.md"))
            .expect("report.md");
        for text in [&run.stdout, &run.stderr, &report] {
            assert!(!text.contains("<h1") && !text.contains("<html"), "{text}");
        }
        assert!(run.stdout.contains(error), "{}", run.stdout);
    }
}

/// A server whose `/props` says llama-server gets no request on a kept connection, even one it
/// would keep open: llama-server closes each connection after a streamed response while its head
/// says Keep-Alive, so a kept one could be taken before its close arrived and the request be
/// written on it and sent again.
#[test]
fn no_connection_to_llama_server_is_kept_so_none_is_sent_twice() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = run_of(&server.url, tmp.path(), ("1", "1"), &[]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let records = json_lines(&attempt_dir(tmp.path(), "hostile").join("requests.jsonl"));
    assert_eq!(
        records.len(),
        1 + 1,
        "a warmup, then one measured: {records:?}"
    );
    for r in &records {
        assert_eq!(r["phases"]["reused"], false, "{r}");
        assert!(!r["notes"].to_string().contains("sent twice"), "{r}");
    }
}
