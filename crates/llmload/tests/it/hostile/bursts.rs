//! A stream that a proxy holds back and flushes in bursts, or delivers all at once, against
//! one that streams token by token: the buffered responses are counted per case, kept out of
//! ITL, TPOT and the decode rate (and of TTFT where the first burst held most of them), said so
//! with the evidence on the terminal and in the report, and left out of the gate. A proxy whose
//! bursts are as small as a busy client's clumps (the kernel's 200 ms cork under `HAProxy`'s
//! defaults, in front of a server slower than 5 tokens a flush) is told by what each held back.

use super::*;

/// `llmload run` of one round of 2 requests, 16 prompt tokens and `output` out, against `url`,
/// writing to `out/NAME`; the run and its attempt folder.
fn two_requests(url: &str, out: &Path, name: &str, output: &str) -> (Finished, PathBuf) {
    let run = run_named(url, out, (name, output), ("2", "0"), &[]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    (run, attempt_dir(out, name))
}

fn the_case(dir: &Path) -> Value {
    let summary = json(&dir.join("summary.json"));
    assert_eq!(
        summary["cases"].as_array().map(Vec::len),
        Some(1),
        "{summary}"
    );
    summary["cases"][0].clone()
}

#[test]
fn a_stream_flushed_every_200_ms_has_no_per_token_figures_and_says_why() {
    let server = Server::start(Mode::Flushed { ms: 20, every: 200 });
    let tmp = tempfile::tempdir().expect("temp dir");
    let (run, dir) = two_requests(&server.url, tmp.path(), "flushed", "24");
    let case = the_case(&dir);
    // 24 tokens 20 ms apart, released at 200, 400 and the end: 3 bursts of 8 on average.
    let bursts = &case["bursts"];
    assert_eq!(bursts["examined"], 2, "{case}");
    assert_eq!(bursts["buffered"], 2, "{case}");
    assert_eq!(bursts["bursts_median"], 3.0, "{case}");
    assert_eq!(bursts["ttft_withheld"], 0, "{case}");
    for figure in ["itl_ms", "tpot_ms", "decode_rate_tps", "chunk_gap_ms"] {
        assert!(case[figure].is_null(), "{figure}: {case}");
    }
    // The first burst held 9 of 24 events: TTFT stays, as an upper bound.
    assert_eq!(case["ttft_ms"]["n"], 2, "{case}");
    assert_eq!(case["counts"]["ok"], 2, "{case}");
    let said = "in16-c2-out24: 2 of 2 responses arrived in a median of 3 bursts of ~8 token events";
    assert!(run.stdout.contains(said), "{}", shown(&run));
    assert!(
        run.stdout.contains("X-Accel-Buffering: no"),
        "{}",
        shown(&run)
    );
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains(said), "{report}");
    assert!(report.contains("upper bound"), "{report}");
}

#[test]
fn a_slow_stream_corked_by_the_proxy_in_bursts_of_two_is_told_by_what_they_held_back() {
    // 16 tokens 120 ms apart; each pair held until 200 ms after its first: 8 bursts of 2.
    let server = Server::start(Mode::Corked { ms: 120, hold: 200 });
    let tmp = tempfile::tempdir().expect("temp dir");
    let (run, dir) = two_requests(&server.url, tmp.path(), "corked", "16");
    let case = the_case(&dir);
    let bursts = &case["bursts"];
    assert_eq!(bursts["examined"], 2, "{case}");
    assert_eq!(bursts["buffered"], 2, "{case}");
    // Bursts of 2 (of 3 where a busy machine joined two): fewer than the 6 a size bar needed.
    let per_burst = bursts["events_per_burst"].as_f64().unwrap_or(0.0);
    assert!((2.0..=3.0).contains(&per_burst), "{case}");
    assert!(
        bursts["bursts_median"].as_f64().unwrap_or(0.0) >= 5.0,
        "{case}"
    );
    assert!(bursts["kept"].is_null(), "the path buffers: {case}");
    for figure in ["itl_ms", "tpot_ms", "decode_rate_tps", "chunk_gap_ms"] {
        assert!(case[figure].is_null(), "{figure}: {case}");
    }
    assert_eq!(case["counts"]["ok"], 2, "{case}");
    let said = "in16-c2-out16: 2 of 2 responses arrived in a median of";
    assert!(run.stdout.contains(said), "{}", shown(&run));
    assert!(
        run.stdout.contains("each holding back ~"),
        "{}",
        shown(&run)
    );
}

#[test]
fn a_body_delivered_at_once_has_no_ttft_either() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let (run, dir) = two_requests(&server.url, tmp.path(), "whole", "8");
    let case = the_case(&dir);
    let bursts = &case["bursts"];
    assert_eq!(bursts["buffered"], 2, "{case}");
    assert_eq!(bursts["ttft_withheld"], 2, "{case}");
    for figure in ["ttft_ms", "itl_ms", "tpot_ms", "decode_rate_tps"] {
        assert!(case[figure].is_null(), "{figure}: {case}");
    }
    // The complete time holds: the body's end is the response's end.
    assert_eq!(case["e2e_ms"]["n"], 2, "{case}");
    assert!(
        run.stdout
            .contains("in16-c2-out8: 2 of 2 responses arrived all at once"),
        "{}",
        shown(&run)
    );
}

#[test]
fn a_stream_token_by_token_keeps_its_figures_and_the_gate_leaves_the_buffered_one_out() {
    let server = Server::start(Mode::Paced(20));
    let tmp = tempfile::tempdir().expect("temp dir");
    let (run, streamed) = two_requests(&server.url, tmp.path(), "paced", "24");
    let case = the_case(&streamed);
    assert!(case["bursts"].is_null(), "{case}");
    assert_eq!(case["itl_ms"]["n"], 2 * 23, "{case}");
    assert_eq!(case["tpot_ms"]["n"], 2, "{case}");
    assert!(!run.stdout.contains("bursts"), "{}", shown(&run));
    drop(server);

    let server = Server::start(Mode::Flushed { ms: 20, every: 200 });
    let (_, flushed) = two_requests(&server.url, tmp.path(), "flushed", "24");
    let compare = llmload_within(
        &[
            "compare",
            utf8(&streamed),
            utf8(&flushed),
            "--fail-if",
            "itl_p50 > +50%",
            "--fail-if",
            "tpot_p50 > +50%",
        ],
        LIMIT,
    );
    let text = &compare.stdout;
    assert_eq!(
        text.matches("not measurable in NEW: its tokens arrived in bursts")
            .count(),
        2,
        "{}",
        shown(&compare)
    );
    // Nothing else was ruled on, so the gate says it cannot tell rather than that it passed.
    assert!(
        text.contains("Gate cannot tell: none of the 2 checks"),
        "{text}"
    );
    assert!(!text.contains("Gate passed"), "{text}");
}
