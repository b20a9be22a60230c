//! The server's own pace and the between-run term in `llmload compare`, end to end against the
//! simulator (which reports llama-server's `timings`): a server made three times slower per
//! token on purpose shows it in its own pace, and the gate says the machine or the build moved;
//! one whose responses are held 200 ms before their first byte keeps its pace, and the gate says
//! the change is beyond the server;
//! every compared check says whether the variation between runs is known, and earlier attempts
//! given with `--history` make it known. On a real llama-server, each case's pace in
//! `summary.json` is recomputed exactly from its records' `timings`. The checks classify a
//! designed threefold difference; no test here compares small differences of measured times.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{json, llmload, measured, run_against, LlamaServer, Simulator, SERIAL};
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

/// One closed-rounds case, 2 concurrent, 4 rounds of 8 output tokens.
fn attempt(out: &Path, name: &str, url: &str) -> PathBuf {
    let (run, dir) = run_against(
        out,
        name,
        url,
        &[
            "--input-tokens",
            "32",
            "--concurrency",
            "2",
            "--output-tokens",
            "8",
            "--rounds",
            "4",
            "-q",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    dir
}

fn text(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// The gate's line for the failing case.
fn failure_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("- in32-c2-out8 ("))
        .unwrap_or_else(|| panic!("no failure line: {stdout}"))
}

#[test]
fn a_server_slower_per_token_shows_in_its_own_pace_and_the_gate_names_the_machine() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let out = tempfile::tempdir().expect("temp dir");
    let (a, b, c) = {
        let sim = Simulator::start(&["--schedule", "fixed:ttft_ms=20,itl_ms=4"]);
        let a = attempt(out.path(), "a", &sim.url);
        let b = attempt(out.path(), "b", &sim.url);
        (a, b, attempt(out.path(), "c", &sim.url))
    };
    let slow = {
        let sim = Simulator::start(&["--schedule", "fixed:ttft_ms=20,itl_ms=12"]);
        attempt(out.path(), "slow", &sim.url)
    };
    // The same server behind something that holds each response's first byte 200 ms: the
    // server's own pace is unchanged, the path is not.
    let held = {
        let sim = Simulator::start(&[
            "--schedule",
            "fixed:ttft_ms=20,itl_ms=4",
            "--fault",
            "slow-first-byte:ms=200",
        ]);
        attempt(out.path(), "held", &sim.url)
    };
    // summary.json carries each case's server pace, from the records' server timings.
    let summary = json(&a.join("summary.json"));
    let pace = &summary["cases"][0]["server"]["pace"];
    assert!(
        pace["decode_ms_per_token"]["n"].as_u64().expect("an n") > 0,
        "{pace}"
    );
    assert!(pace["prefill_ms_per_token"]["median"].is_number(), "{pace}");

    let rule = ["--fail-if", "tpot_p50 > +50%"];
    let slower = llmload(&[&["compare", text(&a), text(&slow)][..], &rule].concat());
    assert_eq!(slower.code, 5, "{}\n{}", slower.stdout, slower.stderr);
    let failure = failure_line(&slower.stdout);
    assert!(
        failure.contains("the server's own decode time per token was")
            && failure.contains("slower in NEW")
            && failure.contains("the machine moved, or the build did"),
        "{failure}"
    );
    // Whether the variation between runs is known: unknown here, unless a busy machine made
    // these rounds drift steadily; said either way.
    assert!(
        failure.contains("between runs: unknown") || failure.contains("rounds drifted steadily"),
        "{failure}"
    );
    assert!(
        slower.stdout.contains("The server's own pace (medians"),
        "{}",
        slower.stdout
    );

    let path = llmload(&[
        "compare",
        text(&a),
        text(&held),
        "--fail-if",
        "ttft_p50 > +100%",
    ]);
    assert_eq!(path.code, 5, "{}\n{}", path.stdout, path.stderr);
    let failure = failure_line(&path.stdout);
    assert!(
        failure.contains("the server's own prefill time per prompt token held")
            && failure.contains("the change is beyond the server"),
        "{failure}"
    );

    // The same server three times: no regression, and with two earlier attempts the
    // between-run term is known and in the interval.
    let json_rule = [&rule[..], &["--json"]].concat();
    let same = llmload(
        &[
            &["compare", text(&b), text(&c)][..],
            &json_rule,
            &["--history", text(&a), text(&b)],
        ]
        .concat(),
    );
    assert_eq!(same.code, 0, "{}\n{}", same.stdout, same.stderr);
    let value: serde_json::Value = serde_json::from_str(&same.stdout).expect("JSON");
    let check = &value["gate"]["checks"][0];
    assert_ne!(check["verdict"], "regressed", "{check}");
    // Known from the history, or from a steady drift of these rounds larger than it (a busy
    // machine); either way said against the earlier attempts and in the interval.
    let between = &check["between_runs"];
    assert!(
        between["source"] == "history" || between["source"] == "trend",
        "{check}"
    );
    assert!(
        between["sentence"]
            .as_str()
            .is_some_and(|s| s.contains("2 earlier attempts")),
        "{check}"
    );
    assert_eq!(between["in_interval"], true, "{check}");
    assert!(
        check["server_pace"]["sentence"]
            .as_str()
            .is_some_and(|s| s.starts_with("the server's own decode time per token")),
        "{check}"
    );
}

/// The median of `values` (type 7: the mean of the middle two of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        f64::midpoint(values[n / 2 - 1], values[n / 2])
    }
}

#[test]
fn llama_server_s_timings_give_each_case_its_pace_exactly() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = run_against(
        out.path(),
        "pace",
        &server.url,
        &[
            "--input-tokens",
            "16",
            "--concurrency",
            "2",
            "--output-tokens",
            "4",
            "--rounds",
            "2",
            "--timeout",
            "2m",
            "-q",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let (mut prefill, mut decode) = (Vec::new(), Vec::new());
    for r in measured(&dir).iter().filter(|r| r["status"] == "ok") {
        let raw = &r["server"]["raw"];
        let number = |key: &str| raw[key].as_f64().unwrap_or_else(|| panic!("{key}: {r}"));
        assert_eq!(r["server"]["source"], "llama-server timings", "{r}");
        prefill.push(number("prompt_ms") / number("prompt_n"));
        decode.push(number("predicted_ms") / (number("predicted_n") - 1.0));
    }
    assert_eq!(prefill.len(), 4, "two rounds of two");
    let pace = &json(&dir.join("summary.json"))["cases"][0]["server"]["pace"];
    for (name, values) in [
        ("prefill_ms_per_token", prefill),
        ("decode_ms_per_token", decode),
    ] {
        assert_eq!(pace[name]["n"], 4, "{pace}");
        let median_of_records = median(values);
        let summary = pace[name]["median"].as_f64().expect("a median");
        assert!(
            (summary - median_of_records).abs() <= 1e-9 * median_of_records.abs(),
            "{name}: {summary} against {median_of_records} from the records"
        );
    }
}
