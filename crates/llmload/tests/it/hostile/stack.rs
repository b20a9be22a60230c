//! One HTTP stack: the setup requests and the streams are written by one request writer and read
//! by one response parser, so what one path accepts or refuses the other does too.

use super::hostile::PREFIX;
use super::{attempt_dir, json_lines, shown, small_run, stderr_lines, Mode, Server};

#[test]
fn setup_and_streams_skip_interim_heads_alike() {
    // Every answer, /health's and /props' as much as the generation's, comes after 100 and 103.
    let server = Server::start(Mode::Interim);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let records = json_lines(&attempt_dir(tmp.path(), "hostile").join("requests.jsonl"));
    assert_eq!(records[0]["status"], "ok", "{records:?}");
    assert!(server.count("/props") >= 1 && server.count("/completion") >= 1);
}

#[test]
fn a_base_path_with_a_space_and_an_upper_case_scheme_reach_every_path_as_one_form() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let url = format!("{}/my api", server.url.replacen("http://", "HTTP://", 1));
    let run = small_run(&url, tmp.path(), &[]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let seen = server.requests();
    let methods: Vec<&str> = seen.iter().map(|r| r.method.as_str()).collect();
    assert!(
        methods.contains(&"GET") && methods.contains(&"POST"),
        "{methods:?}"
    );
    for request in &seen {
        assert!(
            request.path.starts_with(&format!("{PREFIX}/")),
            "every request under the encoded base path: {} {}",
            request.method,
            request.path
        );
        // One Host field, the authority's, on setup requests and streams alike.
        let hosts = request
            .head
            .lines()
            .filter(|l| l.to_ascii_lowercase().starts_with("host:"))
            .count();
        assert_eq!(hosts, 1, "{}", request.head);
    }
    assert!(seen
        .iter()
        .any(|r| r.path == format!("{PREFIX}/completion")));
    assert!(seen.iter().any(|r| r.path == format!("{PREFIX}/health")));
}

#[test]
fn two_lengths_that_disagree_in_a_setup_answer_are_refused_in_one_line() {
    let server = Server::start(Mode::TwoLengthsInSetup);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    assert_ne!(run.code, Some(0), "{}", shown(&run));
    assert_ne!(run.code, Some(101), "no panic: {}", shown(&run));
    let lines = stderr_lines(&run);
    let line = lines
        .iter()
        .find(|l| l.contains("/props"))
        .unwrap_or_else(|| panic!("a line naming /props: {}", shown(&run)));
    assert!(
        line.contains("two Content-Length fields that disagree"),
        "{}",
        shown(&run)
    );
    assert_eq!(server.count("/completion"), 0, "nothing generated");
}
