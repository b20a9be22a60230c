//! A case past the server's context, responses without counters shown as unverified, and chunk
//! gaps never called ITL.

use super::*;

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

#[test]
fn chunk_gaps_are_never_called_itl_when_tokens_per_event_are_unknown() {
    // 8 tokens in 2 events of 4, nothing saying how many each held; the server counts 8.
    let server = Server::start(Mode::Clumped);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    let dir = attempt_dir(tmp.path(), "hostile");
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 1, "{}", shown(&run));
    for r in &records {
        assert_eq!(r["token_events"], 2, "{r}");
        assert_eq!(r["output_tokens"], 8, "{r}");
    }
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert!(case["itl_ms"].is_null(), "no ITL from chunk gaps: {case}");
    let why = case["itl_unknown"]
        .as_str()
        .expect("the reason ITL is missing");
    assert!(why.contains("unknown for 1 of 1 responses"), "{why}");
    assert!(why.contains("more tokens (8) than events (2)"), "{why}");
    assert_eq!(
        case["chunk_gap_ms"]["n"], 1,
        "the gaps kept as what they are: {case}"
    );
    assert_eq!(case["tpot_ms"]["n"], 1, "TPOT still per token: {case}");
    // The reason is in the reports, beside the dash.
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("per-token ITL unknown for 1 of 1 responses"),
        "{report}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(
        html.contains("per-token ITL unknown for 1 of 1 responses"),
        "{html}"
    );
}
