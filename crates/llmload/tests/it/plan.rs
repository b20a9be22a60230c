//! `llmload plan` and `llmload compare` on records of real runs: sweeps against the simulator
//! and against a real llama-server (128 prompt tokens, 16 output tokens, concurrency 1, 2, 4,
//! one round). The plan's answer is checked against the summary the sweep wrote, worked out
//! independently here.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{attempt_dir, json, llmload, LlamaServer, Simulator, SERIAL};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

/// A sweep of 128-token prompts, 16 output tokens, concurrency 1, 2, 4, one round, against `url`.
fn sweep(url: &str, out: &Path, name: &str) -> PathBuf {
    let run = llmload(&[
        "sweep",
        "--url",
        url,
        "--input-tokens",
        "128",
        "--output-tokens",
        "16",
        "--concurrency",
        "1,2,4",
        "--rounds",
        "1",
        "--timeout",
        "5m",
        "--telemetry",
        "off",
        "--out",
        out.to_str().expect("UTF-8 path"),
        "--name",
        name,
        "-q",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    attempt_dir(out, name)
}

/// p99 TTFT of each case of the attempt, by concurrency.
fn p99s(dir: &Path) -> Vec<(u64, f64)> {
    let summary = json(&dir.join("summary.json"));
    let mut out: Vec<(u64, f64)> = summary["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            (
                c["concurrency"].as_u64().expect("concurrency"),
                c["ttft_ms"]["p99"].as_f64().expect("p99"),
            )
        })
        .collect();
    out.sort_by_key(|p| p.0);
    out
}

fn plan(dirs: &[&Path], extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["plan"];
    args.extend(dirs.iter().map(|d| d.to_str().expect("UTF-8 path")));
    args.extend(["--prompt-tokens", "128", "--output-tokens", "16"]);
    args.extend(extra);
    let text = llmload(&args);
    args.push("--json");
    let run = llmload(&args);
    assert_eq!(run.code, text.code, "the same answer either way");
    let value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run.code, value, text.stdout)
}

/// The plan of a sweep: the largest load whose p99 TTFT, and every smaller one's, is within the
/// budget — as the summary says — with the case that supports it.
fn answers_from(dir: &Path) {
    let p99 = p99s(dir);
    assert_eq!(p99.len(), 3, "{p99:?}");
    // A budget at the p99 of concurrency 2 (rounded up to a whole microsecond): it and 1 keep
    // it exactly when 1's is no higher.
    let budget_us = (p99[1].1 * 1e3).ceil();
    let expected = p99
        .iter()
        .take_while(|p| p.1 <= budget_us / 1e3)
        .last()
        .map(|p| p.0);
    let flag = format!("{budget_us}us");
    let (code, value, text) = plan(&[dir], &["--ttft", &flag]);
    let curve = &value["lengths"][0]["curves"][0];
    assert_eq!(
        curve["largest_load"].as_f64(),
        expected.map(|load| load as f64),
        "{value}"
    );
    if let Some(load) = expected {
        let support = &curve["support"];
        assert_eq!(support["case_id"], format!("in128-c{load}-out16"));
        assert_eq!(support["n"], load, "one round of {load}");
        assert!(
            text.contains(&format!("Supported by: case in128-c{load}-out16")),
            "{text}"
        );
    }
    assert!(
        text.contains(&dir.display().to_string()),
        "names the attempt: {text}"
    );
    let covered = value["covered"].as_bool().expect("covered");
    assert_eq!(code, if covered { 0 } else { 3 });

    // Generous: every load keeps it; the limit is above the sweep and the command says so.
    let (code, value, text) = plan(&[dir], &["--ttft", "600s", "--max-prompt-tokens", "512"]);
    assert_eq!(code, 3, "{text}");
    let curve = &value["lengths"][0]["curves"][0];
    assert_eq!(curve["largest_load"], 4.0);
    assert_eq!(curve["limit"], "above");
    let gap = value["lengths"][1]["gap"]
        .as_str()
        .expect("no 512-token sweep");
    assert!(gap.contains("512-token prompts"), "{gap}");
    let commands: Vec<&str> = value["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        commands
            .iter()
            .any(|c| c.contains("--concurrency 4,8,16,32")),
        "{commands:?}"
    );
    assert!(
        commands
            .iter()
            .any(|c| c.contains("--input-tokens 512 --output-tokens 16")),
        "{commands:?}"
    );
    // Strict: not even one request at a time keeps it.
    let tiny = format!("{}us", (p99[0].1 * 1e3 / 2.0).floor().max(1.0));
    let (code, value, text) = plan(&[dir], &["--ttft", &tiny]);
    assert_eq!(
        value["lengths"][0]["curves"][0]["largest_load"],
        Value::Null
    );
    assert!(
        text.contains("One request at a time already misses it"),
        "{text}"
    );
    assert_eq!(code, 0, "that is an answer");
    // A wanted load beyond the sweep is not extrapolated.
    let (_, value, _) = plan(&[dir], &["--ttft", "600s", "--concurrency", "6"]);
    let wanted = &value["lengths"][0]["curves"][0]["wanted"];
    assert_eq!(wanted["verdict"], "not-measured", "{wanted}");
}

#[test]
fn plan_answers_from_a_simulator_sweep_and_says_what_is_missing() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    // Credentials in the URL are sent, and never printed.
    let with_credentials = sim.url.replacen("://", "://user:hunter2@", 1);
    let dir = sweep(&with_credentials, out.path(), "sim");
    answers_from(&dir);
    let text = plan(&[&dir], &["--ttft", "600s"]).2;
    assert!(text.contains("SIMULATED target"), "{text}");
    // What it suggests measures the same target: pasted, it runs.
    let (_, _, text) = plan(&[&dir], &["--ttft", "600s", "--max-prompt-tokens", "512"]);
    assert!(
        text.contains(&format!(
            "llmload sweep --url {} --input-tokens 512",
            sim.url
        )),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn plan_and_compare_on_llama_server_and_simulator_sweeps() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let out = tempfile::tempdir().expect("temp dir");
    let real = {
        let server = LlamaServer::start();
        sweep(&server.url, out.path(), "llama")
    };
    answers_from(&real);
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let simulated = sweep(&sim.url, out.path(), "sim");

    // Two attempts at the same length are answered apart, never pooled.
    let (_, value, _) = plan(&[&real, &simulated], &["--ttft", "600s"]);
    let curves = value["lengths"][0]["curves"].as_array().expect("curves");
    assert_eq!(curves.len(), 2);
    assert_eq!(curves[0]["simulated"], false);
    assert_eq!(curves[1]["simulated"], true);

    let args = [
        "compare",
        real.to_str().expect("UTF-8 path"),
        simulated.to_str().expect("UTF-8 path"),
    ];
    let compare = llmload(&args);
    assert_eq!(compare.code, 0, "{}", compare.stderr);
    for c in [1, 2, 4] {
        let rows: Vec<&str> = compare
            .stdout
            .lines()
            .filter(|l| l.starts_with(&format!("| 128 | {c} | 16 |")))
            .collect();
        assert_eq!(rows.len(), 2, "{}", compare.stdout);
        assert!(
            rows[0].contains("| A |") && rows[0].contains("| 1.00 |"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].contains("| B |") && rows[1].contains("tokens/s"),
            "{}",
            rows[1]
        );
    }
    assert!(compare.stdout.contains("SIMULATED"), "{}", compare.stdout);
    let json_args = [&args[..], &["--json"]].concat();
    let compare = llmload(&json_args);
    assert_eq!(compare.code, 0, "{}", compare.stderr);
    let value: Value = serde_json::from_str(&compare.stdout).expect("JSON");
    assert_eq!(value["attempts"][0]["simulated"], false);
    let cases = value["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 3);
    let p99 = p99s(&real);
    let ttft = |c: &Value, i: usize| c["attempts"][i]["ttft_median_ms"].as_f64();
    for case in cases {
        assert_eq!(case["attempts"][1]["status"], "complete", "{case}");
        let ratio = case["attempts"][1]["ttft_ratio"].as_f64().expect("ratio");
        let (a, b) = (ttft(case, 0).expect("A"), ttft(case, 1).expect("B"));
        assert!((ratio - b / a).abs() < 1e-9, "{case}");
    }
    assert_eq!(p99.len(), 3);
}
