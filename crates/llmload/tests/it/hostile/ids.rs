//! Request ids on the wire: one per request, never two of a name, a header the user gave in
//! their place; and what a hostile server says back of them and of its own timings, kept out of
//! the figures.

use super::*;
use std::collections::HashSet;

/// The generation requests a server received for a run of `output` tokens (the setup probe
/// asks for one).
fn generations(server: &Server, output: u64) -> Vec<Seen> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/completion")
        .filter(|r| {
            let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
            body["n_predict"].as_u64() == Some(output)
        })
        .collect()
}

/// A warmup and a round of 3 requests of 16 prompt and 8 output tokens against `url`, writing
/// to `out/hostile`, with `extra` flags.
fn run_of_four(url: &str, out: &Path, extra: &[&str]) -> Finished {
    run_of(url, out, ("3", "1"), extra)
}

#[test]
fn every_request_carries_its_own_id_and_traceparent_and_the_record_keeps_it() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = run_of_four(&server.url, tmp.path(), &["--traceparent"]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let records = json_lines(&attempt_dir(tmp.path(), "hostile").join("requests.jsonl"));
    assert_eq!(records.len(), 4, "a warmup and a round of 3");
    let sent = generations(&server, 8);
    assert_eq!(sent.len(), 4);
    let mut ids = HashSet::new();
    let mut spans = HashSet::new();
    let mut traces = HashSet::new();
    for request in &sent {
        let id = header_values(&request.head, "x-request-id");
        assert_eq!(id.len(), 1, "{}", request.head);
        ids.insert(id[0].to_owned());
        let traceparent = header_values(&request.head, "traceparent");
        assert_eq!(traceparent.len(), 1, "{}", request.head);
        let parts: Vec<&str> = traceparent[0].split('-').collect();
        assert_eq!(
            (parts.len(), parts[0], parts[3]),
            (4, "00", "01"),
            "{traceparent:?}"
        );
        traces.insert(parts[1].to_owned());
        spans.insert(parts[2].to_owned());
    }
    assert_eq!((ids.len(), spans.len(), traces.len()), (4, 4, 1));
    let recorded: HashSet<String> = records
        .iter()
        .map(|r| r["request_id"].as_str().expect("an id").to_owned())
        .collect();
    assert_eq!(
        recorded, ids,
        "each record holds the id its request carried"
    );
    // The server sent none back and no timings of its own.
    assert!(records
        .iter()
        .all(|r| r.get("server_request_id").is_none() && r.get("server").is_none()));
}

#[test]
fn a_request_id_the_user_gives_replaces_llmload_s_and_the_records_keep_their_own() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = run_of_four(&server.url, tmp.path(), &["--header", "x-request-id: mine"]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    assert!(
        run.stderr
            .contains("--header X-Request-Id goes on every request"),
        "{}",
        shown(&run)
    );
    let sent = generations(&server, 8);
    assert_eq!(sent.len(), 4);
    for request in &sent {
        assert_eq!(
            header_values(&request.head, "x-request-id"),
            ["mine"],
            "{}",
            request.head
        );
        assert!(header_values(&request.head, "traceparent").is_empty());
    }
    let records = json_lines(&attempt_dir(tmp.path(), "hostile").join("requests.jsonl"));
    let ids: HashSet<&str> = records
        .iter()
        .filter_map(|r| r["request_id"].as_str())
        .collect();
    assert_eq!((records.len(), ids.len()), (4, 4), "{records:?}");
    assert!(!ids.contains("mine"));
}

#[test]
fn a_hostile_echoed_id_and_absurd_timings_are_kept_out_with_notes() {
    let server = Server::start(Mode::AbsurdTimings);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let records = json_lines(&attempt_dir(tmp.path(), "hostile").join("requests.jsonl"));
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!(
        r["status"], "ok",
        "the server's timings never fail a response: {r}"
    );
    let echoed = r["server_request_id"].as_str().expect("the id said back");
    assert_eq!(echoed.chars().count(), 128, "{echoed}");
    assert!(echoed.starts_with("????id-aaa"), "{echoed}");
    assert!(
        echoed.bytes().all(|b| (b' '..=b'~').contains(&b)),
        "{echoed}"
    );
    // The prompt's time is left out with a note; the decode's, which holds, is kept.
    let server_side = &r["server"];
    assert_eq!(server_side["source"], "llama-server timings", "{r}");
    assert!(server_side.get("prefill_ms").is_none() && server_side.get("ttft_ms").is_none());
    assert_eq!(server_side["decode_ms"], 2.5, "{r}");
    assert!(server_side["raw"].get("prompt_ms").is_none(), "{r}");
    let notes: Vec<&str> = r["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        notes
            .iter()
            .filter(|n| n.contains("prompt_ms is -1e300"))
            .count(),
        1,
        "{notes:?}"
    );
    // The case's figures are those of an ordinary response.
    let summary = json(&attempt_dir(tmp.path(), "hostile").join("summary.json"));
    assert_eq!(summary["cases"][0]["counts"]["ok"], 1, "{summary}");
}
