//! Servers that refuse what llmload sends or end their streams early: a strict server that
//! answers `422` to the engine fields (as `transformers serve` does) is named in one line with
//! the flag that leaves them out, or, with `--best-effort`, measured without them, every response
//! saying so; streams cut after one token are their own class, `short`, counted apart and out of
//! the figures; a stream that ends with plain text says what it said.

use super::*;
use hostile::{OVERFLOW, TEMPLATE_TOKENS};

/// The client's word-level tokenizer in `dir`: the strict server has no `/tokenize`.
fn words_tokenizer(dir: &Path) -> PathBuf {
    let path = dir.join("words.json");
    std::fs::write(&path, common::WORDS_TOKENIZER).expect("write the tokenizer");
    path
}

/// `llmload run` of one round of 2 chat requests (24 prompt tokens, 8 out) against the strict
/// server at `url`, writing to `out/strict`, with `extra` flags.
fn strict_run(url: &str, out: &Path, extra: &[&str]) -> Finished {
    let tokenizer = words_tokenizer(out);
    let mut args = vec![
        "run",
        "--url",
        url,
        "--api",
        "chat",
        "--tokenizer",
        utf8(&tokenizer),
        "--out",
        utf8(out),
        "--name",
        "strict",
        "--telemetry",
        "off",
        "--setup-timeout",
        "2s",
        "--timeout",
        "5s",
        "--input-tokens",
        "24",
        "--output-tokens",
        "8",
        "--concurrency",
        "2",
        "--rounds",
        "1",
        "--warmup",
        "0",
    ];
    args.extend_from_slice(extra);
    llmload_within(&args, LIMIT)
}

/// The chat requests the server received, as JSON bodies.
fn chat_bodies(server: &Server) -> Vec<Value> {
    server
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .map(|r| serde_json::from_str(&r.body).expect("a JSON body"))
        .collect()
}

const REFUSED: [&str; 3] = ["ignore_eos", "min_tokens", "cache_prompt"];

#[test]
fn a_server_that_refuses_the_engine_fields_is_named_in_one_line_with_the_flag() {
    for named in [true, false] {
        let server = Server::start(Mode::Strict { named });
        let tmp = tempfile::tempdir().expect("temp dir");
        let run = strict_run(&server.url, tmp.path(), &[]);
        assert_eq!(run.code, Some(1), "{}", shown(&run));
        let lines = stderr_lines(&run);
        assert_eq!(lines.len(), 1, "{}", shown(&run));
        assert!(
            lines[0].contains("refuses ignore_eos, min_tokens, cache_prompt")
                && lines[0]
                    .contains("pass --drop-field ignore_eos,min_tokens,cache_prompt --best-effort"),
            "{}",
            shown(&run)
        );
        if named {
            // The server's words, and a single request to learn them.
            assert!(
                lines[0].contains("HTTP 422 Unprocessable Entity: Unexpected fields in the request: {'cache_prompt', 'ignore_eos', 'min_tokens'}"),
                "{}",
                shown(&run)
            );
            assert_eq!(chat_bodies(&server).len(), 1, "{:?}", server.requests());
        } else {
            // Refused without a name: once without every engine field (taken), then each of
            // the 4 alone.
            assert_eq!(
                chat_bodies(&server).len(),
                1 + 1 + 4,
                "{:?}",
                server.requests()
            );
        }
        assert!(
            is_empty_or_absent(&tmp.path().join("strict")),
            "nothing measured"
        );
    }
}

#[test]
fn with_best_effort_a_strict_server_is_measured_without_the_fields_it_refuses() {
    let server = Server::start(Mode::Strict { named: true });
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = strict_run(&server.url, tmp.path(), &["--best-effort"]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let note = "sent without ignore_eos, min_tokens, cache_prompt under --best-effort: the \
                server refuses them (HTTP 422 Unprocessable Entity: Unexpected fields in the \
                request: {'cache_prompt', 'ignore_eos', 'min_tokens'}); the output may stop \
                before the asked length";
    assert!(run.stderr.contains(note), "{}", shown(&run));
    let bodies = chat_bodies(&server);
    // The check, the probe that measures the template's tokens, the 2 measured.
    assert_eq!(bodies.len(), 1 + 1 + 2, "{bodies:?}");
    for body in &bodies[1..] {
        for field in REFUSED {
            assert!(body.get(field).is_none(), "{field} sent: {body}");
        }
        assert!(body["stream_options"].is_object(), "{body}");
    }
    let dir = attempt_dir(tmp.path(), "strict");
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 2, "{records:?}");
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        // Exact prompts: the client's count and the template's tokens as the probe measured them.
        assert_eq!(r["prompt_tokens"], 24, "{r}");
        assert_eq!(r["output_tokens"], 8, "{r}");
        let notes = r["notes"].to_string();
        assert!(notes.contains(note), "{r}");
        assert!(notes.contains("without `data: [DONE]`"), "{r}");
    }
    let campaign = json(&dir.join("campaign.json"));
    assert_eq!(
        campaign["target"]["dropped_fields"],
        serde_json::json!(REFUSED),
        "{campaign}"
    );
    let summary = json(&dir.join("summary.json"));
    assert!(
        summary["counting"]["dropped"]
            .as_str()
            .is_some_and(|d| d.contains("the output may stop before the asked length")),
        "{summary}"
    );
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("Requests sent without ignore_eos"),
        "{report}"
    );
    assert_eq!(TEMPLATE_TOKENS, 4);
}

#[test]
fn drop_field_takes_only_engine_fields() {
    let server = Server::start(Mode::Strict { named: true });
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = strict_run(&server.url, tmp.path(), &["--drop-field", "max_tokens"]);
    assert_eq!(run.code, Some(2), "{}", shown(&run));
    assert!(
        run.stderr.contains(
            "--drop-field takes ignore_eos, min_tokens, cache_prompt, stream_options, not \
             \"max_tokens\""
        ),
        "{}",
        shown(&run)
    );
    assert_eq!(server.total(), 0, "nothing sent");
    // Dropped by the flag, the fields pass the check: one request to check, then the run.
    let run = strict_run(
        &server.url,
        tmp.path(),
        &[
            "--drop-field",
            "ignore_eos,min_tokens",
            "--drop-field",
            "cache_prompt",
            "--best-effort",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let bodies = chat_bodies(&server);
    assert_eq!(bodies.len(), 1 + 1 + 2, "{bodies:?}");
    let records = json_lines(&attempt_dir(tmp.path(), "strict").join("requests.jsonl"));
    assert!(
        records[0]["notes"]
            .to_string()
            .contains("sent without ignore_eos, min_tokens, cache_prompt (--drop-field)"),
        "{records:?}"
    );
}

/// Every other stream cut after its first token, at concurrency 4: with `--best-effort` the cut
/// ones are far short of what they asked and of their peers, so the case counts them `short`,
/// apart (summary.json, the terminal, report.md, cases.csv) and in no figure; the case is not
/// complete. Their records say what a record can: `ok`, unverified, far short. `llmload report`
/// rebuilding from the records reaches the same counts.
#[test]
fn streams_cut_short_are_their_own_class_out_of_every_figure() {
    let server = Server::start(Mode::CutEveryOther);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = run_named(
        &server.url,
        tmp.path(),
        ("cut", "8"),
        ("4", "0"),
        &["--best-effort"],
    );
    assert_eq!(run.code, Some(3), "{}", shown(&run));
    let dir = attempt_dir(tmp.path(), "cut");
    let records = json_lines(&dir.join("requests.jsonl"));
    assert!(records.iter().all(|r| r["status"] == "ok"), "{records:?}");
    let cut: Vec<&Value> = records.iter().filter(|r| r["output_tokens"] == 1).collect();
    assert_eq!(cut.len(), 2, "{records:?}");
    for r in cut {
        assert_eq!(r["verified"], false, "{r}");
        assert!(
            r["notes"]
                .to_string()
                .contains("far short: 1 of the 8 tokens asked for"),
            "{r}"
        );
    }
    let summary = json(&dir.join("summary.json"));
    let case = &summary["cases"][0];
    assert_eq!(case["counts"]["short"], 2, "{case}");
    assert_eq!(case["counts"]["ok"], 2, "{case}");
    assert_eq!(case["counts"]["unverified"], 0, "{case}");
    assert_eq!(case["far_short"]["short"], true, "{case}");
    assert_eq!(case["far_short"]["peers"], 2, "{case}");
    // Only the full ones are in the figures (they arrived at once, so TTFT is withheld).
    assert_eq!(case["e2e_ms"]["n"], 2, "{case}");
    assert_eq!(case["bursts"]["examined"], 2, "{case}");
    assert_eq!(case["complete"], false, "{case}");
    let said = "2 short (a quarter or less of the output asked and of their peers'";
    assert!(
        run.stdout.contains(said) || run.stderr.contains(said),
        "{}",
        shown(&run)
    );
    // The cut streams are short, never failed: the case line counts as the summary does.
    assert!(
        run.stderr
            .contains("2 ok, 0 invalid, 0 failed, 0 cancelled"),
        "{}",
        shown(&run)
    );
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains(said), "{report}");
    assert!(
        report.contains("against 100 % for the other 2: cut short"),
        "{report}"
    );
    let csv = std::fs::read_to_string(dir.join("cases.csv")).expect("cases.csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let row: Vec<&str> = lines.next().expect("a row").split(',').collect();
    let at = header
        .iter()
        .position(|c| *c == "short")
        .expect("a short column");
    assert_eq!(row[at], "2", "{csv}");
    let rebuilt = llmload_within(&["report", utf8(&dir), "--json"], LIMIT);
    assert_eq!(rebuilt.code, Some(0), "{}", shown(&rebuilt));
    let rebuilt: Value = serde_json::from_str(&rebuilt.stdout).expect("--json prints JSON");
    for key in ["counts", "far_short", "e2e_ms", "complete"] {
        assert_eq!(rebuilt["cases"][0][key], case[key], "{key}");
    }
    // Another tool's definitions are applied to the same responses: the full ones alone.
    let as_vllm = llmload_within(
        &["report", utf8(&dir), "--dialect", "vllm", "--json"],
        LIMIT,
    );
    assert_eq!(as_vllm.code, Some(0), "{}", shown(&as_vllm));
    let as_vllm: Value = serde_json::from_str(&as_vllm.stdout).expect("--json prints JSON");
    assert_eq!(as_vllm[0]["responses"], 2, "{as_vllm}");
}

/// A best-effort server that stops every response at its own end of sequence, at 20, 30 or 40 %
/// of the tokens asked for: the 20 % ones are far short of what they asked, but not of their
/// peers, so none is short; all are ok, unverified, in every figure, and the case says why.
#[test]
fn a_server_that_stops_every_response_early_has_none_short() {
    let server = Server::start(Mode::StopsEarly);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = run_named(
        &server.url,
        tmp.path(),
        ("early", "16"),
        ("3", "0"),
        &["--best-effort"],
    );
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let dir = attempt_dir(tmp.path(), "early");
    let records = json_lines(&dir.join("requests.jsonl"));
    let mut got: Vec<u64> = records
        .iter()
        .filter(|r| r["phase"] == "measured")
        .map(|r| r["output_tokens"].as_u64().unwrap_or(0))
        .collect();
    got.sort_unstable();
    assert_eq!(got, [3, 5, 6], "{records:?}");
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_eq!(case["counts"]["ok"], 3, "{case}");
    assert_eq!(case["counts"]["unverified"], 3, "{case}");
    assert!(case["counts"].get("short").is_none(), "{case}");
    assert_eq!(case["far_short"]["responses"], 1, "{case}");
    assert!(case["far_short"].get("short").is_none(), "{case}");
    assert_eq!(case["e2e_ms"]["n"], 3, "{case}");
    assert_eq!(case["complete"], true, "{case}");
    assert!(
        run.stdout
            .contains("the server ends its responses early (at its end of sequence)"),
        "{}",
        shown(&run)
    );
}

/// Without `--best-effort` the same cut streams are invalid (the server says it generated 1 of
/// 8), never short.
#[test]
fn without_best_effort_a_cut_stream_is_invalid() {
    let server = Server::start(Mode::CutEveryOther);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = run_named(&server.url, tmp.path(), ("cut", "8"), ("2", "0"), &[]);
    assert_eq!(run.code, Some(3), "{}", shown(&run));
    let case = &json(&attempt_dir(tmp.path(), "cut").join("summary.json"))["cases"][0];
    assert_eq!(case["counts"]["invalid"], 1, "{case}");
    assert!(case["counts"].get("short").is_none(), "{case}");
}

/// A stream that ends with plain text outside its events keeps what the text said, and how far
/// it got, in the error.
#[test]
fn a_stream_that_ends_with_plain_text_says_what_the_server_wrote() {
    let server = Server::start(Mode::Overflow);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    let record = the_failed_record(&run, tmp.path());
    assert_eq!(record["error_kind"], "disconnected", "{record}");
    assert_eq!(
        error_of(&record),
        format!(
            "stream ended before its final event, after 3 tokens; the server wrote before \
             closing: \"{OVERFLOW}\""
        ),
        "{record}"
    );
    assert!(run.stdout.contains(OVERFLOW), "{}", shown(&run));
}

/// The same cut streams in an open loop: the window's figures (throughput, completions) are
/// kept both ways until the case counts the cut ones short, and `llmload report` rebuilding the
/// window from the records reaches the same.
#[test]
fn streams_cut_short_in_an_open_loop_leave_the_windows_figures_too() {
    let server = Server::start(Mode::CutEveryOther);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = run_llamacpp(
        &server.url,
        tmp.path(),
        "open",
        &[
            "--input-tokens",
            "16",
            "--output-tokens",
            "8",
            "--arrival",
            "constant",
            "--rate",
            "50",
            "--requests",
            "12",
            "--warmup",
            "0",
            "--best-effort",
        ],
    );
    assert_eq!(run.code, Some(3), "{}", shown(&run));
    let dir = attempt_dir(tmp.path(), "open");
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_eq!(case["counts"]["short"], 6, "{case}");
    assert_eq!(case["counts"]["ok"], 6, "{case}");
    assert_eq!(case["far_short"]["short"], true, "{case}");
    let rebuilt = llmload_within(&["report", utf8(&dir), "--json"], LIMIT);
    assert_eq!(rebuilt.code, Some(0), "{}", shown(&rebuilt));
    let rebuilt: Value = serde_json::from_str(&rebuilt.stdout).expect("--json prints JSON");
    let again = &rebuilt["cases"][0];
    for key in ["counts", "far_short", "e2e_ms", "complete"] {
        assert_eq!(again[key], case[key], "{key}");
    }
    for key in ["throughput_tps", "completed_rps", "requests_launched"] {
        assert_eq!(again["load"][key], case["load"][key], "load.{key}");
    }
}
