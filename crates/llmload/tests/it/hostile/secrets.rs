//! Secrets kept out of every file and message; unaffordable flags and missing files refused
//! before anything is sent.

use super::*;

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
fn secrets_a_server_echoes_reach_no_file_and_no_terminal() {
    for mode in [Mode::EchoInError, Mode::EchoInStream] {
        let server = Server::start(mode.clone());
        let tmp = tempfile::tempdir().expect("temp dir");
        let url = server.url.replace("http://", "http://alice:SECRET-PW@");
        let out = tmp.path().join("echo");
        let run = small_run(
            &url,
            &out,
            &[
                "--header",
                "X-Api-Key: SECRET-KEY",
                "--header",
                "X-Upstream: Bearer SECRET-TOKEN",
                "--extra-body",
                r#"{"metadata": {"auth_token": "SECRET-BODY"}}"#,
            ],
        );
        // The server got every secret, and said it back.
        let seen = server.requests();
        assert!(
            seen.iter().any(|r| r.head.contains("SECRET-KEY")),
            "{seen:?}"
        );
        // The request failed, was recorded with the server's words, and no secret is left in
        // them, in any file or on the terminal.
        assert_eq!(run.code, Some(3), "{mode:?}: {}", shown(&run));
        let dir = attempt_dir(&out, "hostile");
        let records = json_lines(&dir.join("requests.jsonl"));
        assert_eq!(records.len(), 1, "{records:?}");
        let error = error_of(&records[0]);
        assert!(error.contains("Basic [redacted]"), "{mode:?}: {error}");
        for text in [&run.stdout, &run.stderr] {
            assert!(!text.contains("SECRET"), "{mode:?}: {text}");
            assert!(!text.contains("YWxpY2U6U0VDUkVULVBX"), "{mode:?}: {text}");
        }
        for file in files_under(&out) {
            let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
            assert!(
                !text.contains("SECRET") && !text.contains("YWxpY2U6U0VDUkVULVBX"),
                "{mode:?}: {} holds a secret",
                file.display()
            );
        }
    }
}
