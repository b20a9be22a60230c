//! Bad input and unreachable or wrong targets: one clear line on stderr, a non-zero exit code,
//! never a panic.

mod common;

use common::{llmload, Invocation};
use std::io::{Read, Write};
use std::net::TcpListener;

fn assert_one_line_error(run: &Invocation, code: i32, expected: &str) {
    assert_eq!(
        run.code, code,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    // One error line; clap may add its list of possible values and a pointer to --help.
    let is_hint = |l: &str| {
        l.is_empty()
            || l.starts_with("For more information")
            || l.trim_start().starts_with("[possible values")
    };
    let errors = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error:"))
        .count();
    let other = run
        .stderr
        .lines()
        .filter(|l| !l.starts_with("error:") && !is_hint(l))
        .count();
    assert_eq!((errors, other), (1, 0), "{:?}", run.stderr);
    assert!(
        run.stderr.contains(expected),
        "{:?} lacks {expected:?}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// A port on which nothing listens.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

#[test]
fn unreachable_server_is_one_line_and_exit_1() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let run = llmload(&["run", "--url", &url, "--out", "/nonexistent-never-created"]);
    assert_one_line_error(&run, 1, "cannot reach");
}

#[test]
fn bad_values_are_usage_errors() {
    for (args, expected) in [
        (vec!["run", "--concurrency", "0"], "--concurrency"),
        (vec!["run", "--input-tokens", "abc"], "invalid value"),
        (vec!["run", "--url", "localhost:8080"], "--url"),
        (vec!["run", "--api", "grpc"], "invalid value"),
        (vec!["run", "--timeout", "fast"], "--timeout"),
        (vec!["run", "--config", "/no/such/file.toml"], "cannot read"),
        (vec!["sim", "--port", "0", "--fault", "explode"], "--fault"),
        (
            vec!["sim", "--port", "0", "--profile", "no-such-profile"],
            "--profile",
        ),
        (
            vec!["sim", "--port", "0", "--time-scale", "0"],
            "--time-scale",
        ),
    ] {
        let run = llmload(&args);
        assert_one_line_error(&run, 2, expected);
    }
}

/// A server that answers every request with `200 OK` and an HTML page.
fn html_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut stream) = stream else { continue };
            let mut buffer = [0u8; 8192];
            let _ = stream.read(&mut buffer);
            let body = "<html><body>It works!</body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn a_server_that_is_not_an_llm_api_is_one_line_and_exit_1() {
    let url = html_server();
    let run = llmload(&["run", "--url", &url, "--out", "/nonexistent-never-created"]);
    assert_one_line_error(&run, 1, "tokenize");
}

#[test]
fn campaign_file_values_are_used_and_checked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("campaign.toml");
    std::fs::write(&path, "concurrency = [2]\nrounds = \"three\"\n").expect("write");
    let run = llmload(&["run", "--config", path.to_str().expect("UTF-8")]);
    assert_one_line_error(&run, 2, "rounds");
}
