//! Servers of the chat, Responses and Messages APIs whose streams end before their text, carry
//! their text in events of no known type, or forge lines in an error event's message.

use super::hostile::Fault;
use super::*;

/// One small run of `api` against a server with `fault`; its one record, and its `report.md`.
fn record_of(fault: Fault, api: &str) -> (Finished, Value, String) {
    let server = Server::start(Mode::Apis(fault));
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path();
    let run = small_run(&server.url, out, &["--api", api]);
    let record = the_failed_record(&run, out);
    let report = std::fs::read_to_string(attempt_dir(out, "hostile").join("report.md"))
        .expect("report.md written");
    (run, record, report)
}

#[test]
fn a_stream_whose_end_comes_before_any_text_is_invalid_in_every_api() {
    for api in ["chat", "responses", "messages"] {
        for fault in [Fault::EndsFirst, Fault::Untyped] {
            let (run, record, _) = record_of(fault, api);
            assert_eq!(record["status"], "invalid", "{api} {fault:?}: {record}");
            assert_eq!(record["streamed_tokens"], 0, "{api} {fault:?}: {record}");
            assert!(
                error_of(&record).contains("no token event")
                    || error_of(&record).contains("stream carried 0 tokens"),
                "{api} {fault:?}: {record}\n{}",
                shown(&run)
            );
        }
    }
}

#[test]
fn an_error_event_s_line_ends_never_start_a_line_of_llmload_s_output() {
    // Other line ends than a plain line feed: a paragraph separator, a next line, a vertical
    // tab and a form feed, a lone carriage return.
    for lines in ["\u{2029}", "\u{85}", "\u{b}\u{c}", "\r"] {
        for api in ["responses", "messages", "chat"] {
            let (run, record, report) = record_of(Fault::LinesInError(lines), api);
            assert_eq!(record["error_kind"], "server_error", "{api}: {record}");
            let error = error_of(&record);
            assert!(
                error.contains("overloaded llmload: forged line"),
                "{api} {lines:?}: {record}"
            );
            let forged = |text: &str| {
                text.split([
                    '\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}',
                ])
                .any(|line| line.trim_start().starts_with("llmload: forged"))
            };
            assert!(
                !forged(&run.stderr) && !forged(&run.stdout),
                "{}",
                shown(&run)
            );
            assert!(!forged(&report), "{api} {lines:?}: {report}");
        }
    }
}

#[test]
fn a_stop_while_setup_makes_large_images_is_honoured_at_once() {
    // 64 images of 4096×4096 take about a minute to make; SIGINT (another signal than the
    // setup test's SIGTERM) must end the run within seconds.
    let server = Server::start(Mode::Apis(Fault::EndsFirst));
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("out");
    let running = Running::start(&[
        "run",
        "--url",
        &server.url,
        "--api",
        "chat",
        "--out",
        utf8(&out),
        "--telemetry",
        "off",
        "--input-tokens",
        "16",
        "--output-tokens",
        "8",
        "--images",
        "64",
        "--image-size",
        "4096x4096",
        "--setup-timeout",
        "120s",
    ]);
    let probed = || server.count("/v1/chat/completions") >= 1;
    assert!(
        eventually(Duration::from_secs(10), probed),
        "{:?}",
        server.requests()
    );
    std::thread::sleep(Duration::from_millis(500));
    running.signal("INT");
    // A bound with room for a busy machine, far below the minute the images would take.
    let run = running.wait(Duration::from_secs(15));
    assert_eq!(run.code, Some(4), "{}", shown(&run));
    assert!(run.stderr.contains("SIGINT"), "{}", shown(&run));
    assert!(is_empty_or_absent(&out), "{:?}", files_under(&out));
}
