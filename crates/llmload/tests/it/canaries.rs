//! Output canaries end to end (`--canaries`, `--canary-fail`) on the simulator, whose greedy
//! output is a function of the prompt and whose `corrupt` fault makes a token wrong only while
//! enough requests are in flight: detected under load and never alone, nothing on the clean
//! simulator, every view and `llmload report` saying the same, and the check's exit code.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{assert_refused, json, llmload, run_against, Simulator};
use serde_json::Value;

/// The canary records of `dir`'s requests.jsonl.
fn canaries(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a record"))
        .filter(|r| r["phase"] == "canary")
        .collect()
}

/// Closed rounds at 1 and 6 streams, 3 canary prompts, 4 rounds, on `sim`: the load's answers
/// (96 tokens) outlast each canary's (32).
fn run(sim: &Simulator, name: &str, extra: &[&str]) -> (common::Invocation, std::path::PathBuf) {
    let out = tempfile::tempdir().expect("temp dir").keep();
    let mut args = vec![
        "--api",
        "chat",
        "--input-tokens",
        "32",
        "--concurrency",
        "1,6",
        "--output-tokens",
        "96",
        "--rounds",
        "4",
        "--canaries",
        "3",
    ];
    args.extend_from_slice(extra);
    run_against(&out, name, &sim.url, &args)
}

/// The records of the corrupt run in `dir`: 3 references sent alone first, then per case 6
/// canaries (prompts in turn), each with the case's concurrency less one requests of phase
/// canary beside it; a diverging canary's text the reference's up to its second event's end.
fn assert_records(dir: &std::path::Path) {
    let all = canaries(dir);
    assert_eq!(
        all.len(),
        3 + 6 + 6 * 6,
        "references, then 1 and 6 a canary round"
    );
    let records: Vec<&Value> = all.iter().filter(|r| r["canary"].is_object()).collect();
    assert_eq!(records.len(), 3 + 12);
    for (i, r) in records.iter().take(3).enumerate() {
        assert_eq!(r["canary"]["reference"], true, "{r}");
        assert_eq!(r["canary"]["prompt"], i);
        assert_eq!(r["output_tokens"], 32);
    }
    let prompts: Vec<u64> = records[3..]
        .iter()
        .map(|r| r["canary"]["prompt"].as_u64().expect("prompt"))
        .collect();
    assert_eq!(prompts, [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
    // Prompt 0 under the six (the case's first canary) against its reference: the same text
    // up to the end of its second event, and not after.
    let under_load = &records[3 + 6]["canary"];
    let reference = &records[0]["canary"];
    assert_eq!(under_load["prompt"], reference["prompt"]);
    let cut = usize::try_from(reference["ends"][1].as_u64().expect("end")).expect("small");
    let (a, b) = (
        reference["text"].as_str().expect("text"),
        under_load["text"].as_str().expect("text"),
    );
    assert_eq!(a[..cut], b[..cut]);
    assert_ne!(a, b);
}

/// A simulator whose tokens from the third on come out wrong while 3 or more requests are in
/// flight (another wrong output each time); 20 ms to the first token, then 10 ms a token.
fn corrupting() -> Simulator {
    Simulator::start(&[
        "--profile",
        "cpu-tiny",
        "--schedule",
        "fixed:ttft_ms=20,itl_ms=10",
        "--fault",
        "corrupt:inflight=3,after=2",
    ])
}

#[test]
fn a_corruption_under_load_is_caught_beside_the_load_and_never_alone() {
    let sim = corrupting();
    let (done, dir) = run(&sim, "corrupt", &["--canary-fail", "0.1"]);
    assert_eq!(done.code, 6, "{}\n{}", done.stdout, done.stderr);
    let summary = json(&dir.join("summary.json"));
    let alone = &summary["cases"][0];
    let loaded = &summary["cases"][1];
    assert_eq!(alone["id"], "in32-c1-out96");
    // Each prompt twice per case. At one stream a canary goes alone: as its reference.
    let c = &alone["canaries"];
    assert_eq!(
        (
            c["sent"].as_u64(),
            c["compared"].as_u64(),
            c["beside"].as_u64()
        ),
        (Some(6), Some(6), Some(0)),
        "{c}"
    );
    assert_eq!(
        (c["diverged"].as_u64(), c["verdict"].as_str()),
        (Some(0), Some("same")),
        "{c}"
    );
    assert!(c.get("check_failed").is_none(), "{c}");
    // With 5 others beside it: every canary diverged, from token event 2 on (the first token
    // generated while 3 were in flight: event 2 when the others arrived with it, later when a
    // busy machine sent them late), each prompt to another output each time (the corruption
    // varies), so not stable.
    let c = &loaded["canaries"];
    assert_eq!(
        (
            c["compared"].as_u64(),
            c["diverged"].as_u64(),
            c["beside"].as_u64()
        ),
        (Some(6), Some(6), Some(5)),
        "{c}"
    );
    let at: Vec<u64> = c["diverging"]
        .as_array()
        .expect("list")
        .iter()
        .map(|d| d["at"].as_u64().expect("a position"))
        .collect();
    assert!(at.iter().all(|&a| (2..32).contains(&a)), "{c}");
    assert_eq!(c["first_divergence"].as_u64(), at.iter().min().copied());
    assert!(
        ["early", "late"].contains(&c["verdict"].as_str().expect("verdict")),
        "{c}"
    );
    assert_eq!(
        (c["repeated"].as_u64(), c["varied"].as_u64()),
        (Some(0), Some(3)),
        "{c}"
    );
    assert_eq!(
        (c["share"].as_f64(), c["check_failed"].as_bool()),
        (Some(1.0), Some(true))
    );
    let [low, high] = [&c["interval"][0], &c["interval"][1]].map(|v| v.as_f64().expect("bound"));
    assert!(low > 0.5 && (high - 1.0).abs() < 1e-12, "{c}");
    // The measured rounds hold no canary and no canary round's load: their responses alone.
    assert_eq!(alone["counts"]["ok"], 4);
    assert_eq!(loaded["counts"]["ok"], 24);
    for case in [alone, loaded] {
        assert!(case["rounds"]
            .as_array()
            .expect("rounds")
            .iter()
            .all(|r| r["responses_ok"] == case["concurrency"]));
    }
    assert_records(&dir);
    // Every view says it; `llmload report` rebuilds the same from the records.
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("Output canaries"), "{report}");
    assert!(report.contains("6 of 6 (100 %"), "{report}");
    assert!(
        report.contains("above --canary-fail 0.1: FAILED"),
        "{report}"
    );
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(page.contains("id=\"canaries-failed\""));
    let rebuilt = llmload(&["report", dir.to_str().expect("UTF-8"), "--json"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    let rebuilt: Value = serde_json::from_str(&rebuilt.stdout).expect("JSON");
    for i in 0..2 {
        assert_eq!(
            rebuilt["cases"][i]["canaries"],
            summary["cases"][i]["canaries"]
        );
    }
}

#[test]
fn a_continuous_loop_gets_its_canary_rounds_after_its_window() {
    let sim = corrupting();
    let out = tempfile::tempdir().expect("temp dir");
    let (done, dir) = run_against(
        out.path(),
        "loop",
        &sim.url,
        &[
            "--arrival",
            "closed-continuous",
            "--concurrency",
            "6",
            "--requests",
            "30",
            "--input-tokens",
            "32",
            "--output-tokens",
            "64",
            "--canaries",
            "2",
        ],
    );
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    let case = &json(&dir.join("summary.json"))["cases"][0];
    let c = &case["canaries"];
    assert_eq!(
        (
            c["compared"].as_u64(),
            c["diverged"].as_u64(),
            c["beside"].as_u64()
        ),
        (Some(4), Some(4), Some(5)),
        "{c}"
    );
    // The loop's 30 requests, and nothing of its canary rounds.
    assert_eq!(case["counts"]["ok"], 30, "{case}");
    let records = canaries(&dir);
    assert_eq!(
        records.len(),
        2 + 4 * 6,
        "2 references, 4 canary rounds of 6"
    );
}

#[test]
fn the_clean_simulator_gives_every_canary_its_reference_output() {
    let sim = Simulator::start(&[
        "--profile",
        "cpu-tiny",
        "--schedule",
        "fixed:ttft_ms=20,itl_ms=2",
    ]);
    let (done, dir) = run(&sim, "clean", &["--canary-fail", "0"]);
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    let summary = json(&dir.join("summary.json"));
    for case in summary["cases"].as_array().expect("cases") {
        let c = &case["canaries"];
        assert_eq!(
            (c["compared"].as_u64(), c["diverged"].as_u64()),
            (Some(6), Some(0)),
            "{c}"
        );
        assert_eq!(c["verdict"], "same");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("within --canary-fail 0"), "{report}");
}

#[test]
fn canaries_the_run_cannot_send_are_refused_in_one_line() {
    let url = ["--url", "http://127.0.0.1:9"];
    for (flags, said) in [
        (&["--canaries", "0"][..], "--canaries 0: 1 to 100"),
        (
            &["--canary-fail", "0.1"][..],
            "--canary-fail needs --canaries",
        ),
        (
            &["--canaries", "2", "--canary-fail", "1"][..],
            "--canary-fail 1: a share",
        ),
        (
            &["--canaries", "2", "--arrival", "poisson", "--rate", "2"][..],
            "--canaries go with closed rounds and continuous loops",
        ),
        (
            &["--canaries", "2", "--api", "embeddings"][..],
            "an embeddings or rerank API generates none",
        ),
    ] {
        let mut argv = url.to_vec();
        argv.extend_from_slice(flags);
        assert_refused(&argv, said);
    }
}

/// Rounds at 1 and 4 streams on llama-server with `extra` flags, 2 canary prompts, 4 rounds,
/// the server's profiler asked for at 4 running; each case's canary summary and the report.
fn on_llama_server(extra: &[&str], name: &str) -> (Vec<Value>, String, Value) {
    let server = common::LlamaServer::start_with(extra);
    let out = tempfile::tempdir().expect("temp dir");
    let (done, dir) = run_against(
        out.path(),
        name,
        &server.url,
        &[
            "--api",
            "completions",
            "--input-tokens",
            "32",
            "--output-tokens",
            "32",
            "--concurrency",
            "1,4",
            "--rounds",
            "4",
            "--canaries",
            "2",
            "--profile-server",
            "4",
            "--timeout",
            "10m",
        ],
    );
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    let summary = json(&dir.join("summary.json"));
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let profile = summary["cases"][1]["server_profile"].clone();
    let canaries = summary["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["canaries"].clone())
        .collect();
    (canaries, report, profile)
}

#[test]
fn llama_server_gives_its_greedy_outputs_again_one_slot_at_a_time_and_says_what_four_do() {
    let _serial = common::SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // One slot: every request computed alone, as its reference was. The same output each time.
    let (cases, _, profile) = on_llama_server(&["-np", "1"], "one-slot");
    // One slot never runs 4: the profiler was never asked.
    assert!(profile["start"].is_null(), "{profile}");
    for c in &cases {
        assert_eq!(
            (c["compared"].as_u64(), c["diverged"].as_u64()),
            (Some(4), Some(0)),
            "{c}"
        );
        assert_eq!(c["verdict"], "same");
    }
    // Four slots: a canary alone, then in batches of 4. Whatever they do, every canary is compared, each
    // divergence is within the output and in the list, and the report names the verdict.
    // With its profiler asked for: llama-server has none, says so, and the run goes on.
    let (cases, report, profile) = on_llama_server(&[], "four-slots");
    assert_eq!(
        profile["gauge"], "llamacpp:requests_processing",
        "{profile}"
    );
    assert_eq!(profile["start"]["done"], false, "{profile}");
    assert!(profile["start"]["refused"].is_string(), "{profile}");
    assert!(profile["stop"].is_null(), "{profile}");
    for (c, beside) in cases.iter().zip([0, 3]) {
        assert_eq!(c["compared"].as_u64(), Some(4), "{c}");
        assert_eq!(c["beside"], beside, "{c}");
        let diverging = c["diverging"].as_array().expect("a list");
        assert_eq!(diverging.len() as u64, c["diverged"].as_u64().expect("n"));
        assert!(diverging
            .iter()
            .all(|d| d["at"].as_u64() < d["events"].as_u64()));
        let verdict = c["verdict"].as_str().expect("a verdict");
        assert!(
            ["same", "late", "stable", "early"].contains(&verdict),
            "{c}"
        );
    }
    assert!(report.contains("Output canaries"), "{report}");
}
