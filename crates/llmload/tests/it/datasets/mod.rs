//! Prompts from datasets (`--dataset`: JSONL prompts or messages, `ShareGPT` conversations),
//! Mooncake-style traces whose `hash_ids` blocks become shared prefixes, and CSV traces (the
//! Azure layout, and the Mooncake fields as columns), with the samples that ship with llmload:
//! against the simulator and a real llama-server.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;
mod traces;

use common::{count as n, json, llmload, measured, run_against, LlamaServer, Simulator, SERIAL};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

fn sample(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name)
        .to_str()
        .expect("UTF-8 path")
        .to_owned()
}

fn run_ok(out: &Path, name: &str, url: &str, extra: &[&str]) -> PathBuf {
    let (result, dir) = run_against(out, name, url, extra);
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    dir
}

/// Dataset entries' answer token counts as the simulator's tokenizer counts them.
fn answer_counts(url: &str, answers: &[String]) -> Vec<u64> {
    answers
        .iter()
        .map(|answer| {
            let output = std::process::Command::new("curl")
                .args(["-sf", &format!("{url}/tokenize"), "-d"])
                .arg(serde_json::json!({ "content": answer }).to_string())
                .output()
                .expect("curl");
            let value: Value = serde_json::from_slice(&output.stdout).expect("JSON");
            value["tokens"].as_array().expect("tokens").len().max(1) as u64
        })
        .collect()
}

#[test]
fn fitted_dataset_prompts_are_exact_and_verified_on_every_api() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    for api in ["llamacpp", "completions", "chat"] {
        let dir = run_ok(
            out.path(),
            api,
            &sim.url,
            &[
                "--api",
                api,
                "--dataset",
                &sample("prompts.jsonl"),
                "--input-tokens",
                "96",
                "--output-tokens",
                "4",
                "--concurrency",
                "4",
                "--rounds",
                "3",
            ],
        );
        let records = measured(&dir);
        assert_eq!(records.len(), 12);
        let mut entries = Vec::new();
        for r in &records {
            assert_eq!(r["status"], "ok", "{api}: {r}");
            assert_eq!(r["verified"], true, "{api}: {r}");
            assert_eq!(n(&r["prompt_tokens"]), 96, "{api}: {r}");
            assert_eq!(n(&r["cached_tokens"]), 0, "{api}: {r}");
            entries.push(n(&r["dataset_entry"]));
        }
        entries.sort_unstable();
        entries.dedup();
        assert_eq!(entries.len(), 12, "twelve requests, twelve entries: {api}");
        let campaign = json(&dir.join("campaign.json"));
        assert_eq!(
            campaign["config"]["dataset"]["lengths"], "fit",
            "{campaign}"
        );
        // Named apart from synthetic prompts of the same lengths, and by file, never by path.
        assert_eq!(records[0]["case"], "in96-c4-out4-ds-prompts");
        let summary = json(&dir.join("summary.json"));
        let used = &summary["counting"]["dataset"];
        assert_eq!(used["file"], "prompts.jsonl", "{used}");
        let bytes = std::fs::metadata(sample("prompts.jsonl"))
            .expect("sample")
            .len();
        assert_eq!(used["bytes"].as_u64(), Some(bytes), "{used}");
        assert_eq!(used["fnv1a64"].as_str().map(str::len), Some(16), "{used}");
        let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
        let line = format!("Dataset: prompts.jsonl ({} bytes", thousands(bytes));
        assert!(report.contains(&line), "{report}");
        assert!(
            !report.contains(&sample("prompts.jsonl")),
            "no machine path: {report}"
        );
    }
}

/// `n` with thousands separators, as the reports write counts.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[test]
fn as_is_prompts_record_the_servers_count_and_say_so() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let dir = run_ok(
        out.path(),
        "as-is",
        &sim.url,
        &[
            "--api",
            "chat",
            "--dataset",
            &sample("prompts.jsonl"),
            "--dataset-lengths",
            "as-is",
            "--output-tokens",
            "4",
            "--concurrency",
            "8",
            "--rounds",
            "4",
        ],
    );
    let records = measured(&dir);
    assert_eq!(records.len(), 32);
    let mut lengths: Vec<u64> = Vec::new();
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["input_tokens"], r["prompt_tokens"], "{r}");
        let notes = r["notes"].as_array().expect("notes");
        assert!(
            notes.iter().any(|n| n
                .as_str()
                .is_some_and(|n| n.contains("its length was not set"))),
            "{r}"
        );
        lengths.push(n(&r["input_tokens"]));
    }
    let mut sorted = lengths.clone();
    sorted.sort_unstable();
    let median = (sorted[15] + sorted[16]) as f64 / 2.0;
    sorted.dedup();
    assert!(sorted.len() > 5, "the entries' own lengths: {sorted:?}");
    // One case, named and shown by what was sent: not by a default --input-tokens.
    let summary = json(&dir.join("summary.json"));
    let cases = summary["cases"].as_array().expect("cases");
    assert_eq!(
        cases.len(),
        1,
        "the entries are sent once per load, not per length"
    );
    let case = &cases[0];
    assert_eq!(case["id"], "indataset-c8-out4", "{case}");
    let sent = &case["sent"]["input_tokens"];
    assert_eq!(sent["n"], 32, "{case}");
    assert_eq!(sent["median"].as_f64(), Some(median), "{case}");
    assert_eq!(
        case["input_tokens"].as_f64(),
        Some(median.round()),
        "{case}"
    );
    assert!(case["sent"]["output_tokens"].is_null(), "{case}");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(
        !report.contains("2048") && !report.contains("8192"),
        "{report}"
    );
}

#[test]
fn sharegpt_answers_set_the_requested_output_lengths() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let dir = run_ok(
        out.path(),
        "sharegpt",
        &sim.url,
        &[
            "--dataset",
            &sample("sharegpt.json"),
            "--dataset-output",
            "from-dataset",
            "--input-tokens",
            "64",
            "--concurrency",
            "3",
            "--rounds",
            "2",
        ],
    );
    let text = std::fs::read_to_string(sample("sharegpt.json")).expect("sample");
    let conversations: Vec<Value> = serde_json::from_str(&text).expect("JSON array");
    let answers: Vec<String> = conversations
        .iter()
        .map(|c| {
            c["conversations"][1]["value"]
                .as_str()
                .expect("answer")
                .to_owned()
        })
        .collect();
    let counts = answer_counts(&sim.url, &answers);
    let records = measured(&dir);
    assert_eq!(records.len(), 6);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        let entry = usize::try_from(n(&r["dataset_entry"])).expect("index");
        assert_eq!(n(&r["requested_output_tokens"]), counts[entry], "{r}");
        assert_eq!(n(&r["output_tokens"]), counts[entry], "{r}");
    }
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_eq!(case["id"], "in64-c3-outdataset", "{case}");
    let asked = &case["sent"]["output_tokens"];
    assert_eq!(asked["n"], 6, "{case}");
    let max = records
        .iter()
        .map(|r| n(&r["requested_output_tokens"]))
        .max();
    assert_eq!(asked["max"].as_f64(), max.map(|m| m as f64), "{case}");
    assert_eq!(case["input_tokens"], 64, "{case}");
}

#[test]
fn bad_datasets_and_combinations_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, "{\"prompt\": \"fine\"}\n{\"promt\": \"typo\"}\n").expect("write");
    let bad = path.to_str().expect("UTF-8");
    let trace = sample("mooncake-trace.jsonl");
    let prompts = sample("prompts.jsonl");
    let csv_path = dir.path().join("bad.csv");
    std::fs::write(
        &csv_path,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,8,2\n\
         2023-11-16 18:15:47,\"8\",2\n",
    )
    .expect("write");
    let bad_csv = csv_path.to_str().expect("UTF-8");
    for (args, expected) in [
        (
            vec!["run", "--trace", bad_csv],
            format!("{bad_csv}:3: quoted fields are not read"),
        ),
        (
            vec!["run", "--dataset", bad],
            format!("{bad}:2: each entry needs"),
        ),
        (
            vec!["run", "--dataset-lengths", "as-is"],
            "--dataset-lengths and --dataset-output need --dataset FILE".into(),
        ),
        (
            vec!["run", "--trace", &trace, "--api", "chat"],
            "token-ID prompts".into(),
        ),
        (
            vec!["run", "--trace", &trace, "--dataset", &prompts],
            "--dataset does not apply".into(),
        ),
        (
            vec![
                "run",
                "--dataset",
                &prompts,
                "--dataset-lengths",
                "as-is",
                "--input-tokens",
                "64",
            ],
            "--input-tokens does not apply with --dataset-lengths as-is".into(),
        ),
        (
            vec![
                "run",
                "--dataset",
                &prompts,
                "--dataset-output",
                "from-dataset",
                "--output-tokens",
                "8",
            ],
            "--output-tokens does not apply with --dataset-output from-dataset".into(),
        ),
        (
            vec!["run", "--trace", &trace, "--trace-block-tokens", "4096"],
            "hash_ids blocks of 4096 tokens do not fit".into(),
        ),
    ] {
        let run = llmload(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        let errors: Vec<&str> = run.stderr.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {}", run.stderr);
        assert!(errors[0].contains(&expected), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn llama_server_fits_dataset_prompts_exactly() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let dir = run_ok(
        out.path(),
        "llama",
        &server.url,
        &[
            "--dataset",
            &sample("prompts.jsonl"),
            "--input-tokens",
            "48",
            "--output-tokens",
            "4",
            "--concurrency",
            "2",
            "--rounds",
            "2",
            "--timeout",
            "5m",
        ],
    );
    let records = measured(&dir);
    assert_eq!(records.len(), 4);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(n(&r["prompt_tokens"]), 48, "{r}");
        assert!(r["dataset_entry"].is_u64(), "{r}");
    }
}
