//! Prompts from datasets (`--dataset`: JSONL prompts or messages, `ShareGPT` conversations),
//! Mooncake-style traces whose `hash_ids` blocks become shared prefixes, and CSV traces (the
//! Azure layout, and the Mooncake fields as columns), with the samples that ship with llmload:
//! against the simulator and a real llama-server.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

mod common;

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
    }
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
fn a_mooncake_trace_shares_exactly_its_common_blocks() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "4"]);
    let out = tempfile::tempdir().expect("temp dir");
    let dir = run_ok(
        out.path(),
        "mooncake",
        &sim.url,
        &["--trace", &sample("mooncake-trace.jsonl")],
    );
    let mut records = measured(&dir);
    assert_eq!(records.len(), 20);
    records.sort_by(|a, b| {
        a["scheduled_s"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&b["scheduled_s"].as_f64().unwrap_or(0.0))
    });
    // The sample's shared prefixes, worked out by hand from its hash_ids and lengths.
    let shared: Vec<u64> = records
        .iter()
        .map(|r| r["shared_tokens"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(shared, expected_shared(), "{shared:?}");
    let mut hits = 0;
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["prompt_tokens"], r["input_tokens"], "{r}");
        let (cached, shared) = (
            n(&r["cached_tokens"]),
            r["shared_tokens"].as_u64().unwrap_or(0),
        );
        assert!(cached <= shared, "{r}");
        hits += u64::from(cached > 0);
    }
    assert!(hits > 0, "the simulator's cache served some shared blocks");
}

#[test]
fn an_azure_csv_trace_replays_at_its_own_offsets_and_lengths() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "4"]);
    let out = tempfile::tempdir().expect("temp dir");
    assert_replays_the_azure_trace(out.path(), &sim.url, &sample("azure-trace.csv"));
}

#[test]
fn llama_server_replays_an_azure_csv_trace_exactly() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    // Six short rows, across the turn of an hour, out of order: the sample is too long for a
    // CPU server.
    let trace = out.path().join("tiny.csv");
    std::fs::write(
        &trace,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n\
         2023-11-16 18:59:59.8805900,24,3\n\
         2023-11-16 18:59:59.9012345,40,2\n\
         2023-11-16 19:00:00.3000001,16,4\n\
         2023-11-16 19:00:00.1000000,32,2\n\
         2023-11-16 19:00:01.0000000,48,3\n\
         2023-11-16 19:00:00.7654321,20,2\n",
    )
    .expect("write trace");
    assert_replays_the_azure_trace(out.path(), &server.url, trace.to_str().expect("UTF-8"));
}

/// Replays an Azure-layout trace (its rows on one day) against `url`: every arrival scheduled at
/// its row's offset from the earliest (to the nanosecond), every response `ok` and verified, with
/// the row's prompt and output lengths exactly.
fn assert_replays_the_azure_trace(out: &Path, url: &str, trace: &str) {
    let dir = run_ok(out, "azure", url, &["--trace", trace, "--timeout", "5m"]);
    let mut records = measured(&dir);
    records.sort_by(|a, b| f(&a["scheduled_s"]).total_cmp(&f(&b["scheduled_s"])));
    let rows = azure_rows(trace);
    assert_eq!(records.len(), rows.len());
    let first = f(&records[0]["scheduled_s"]);
    for (r, (offset_ns, context, generated)) in records.iter().zip(&rows) {
        // Scheduled at the row's wall-clock time less the first row's, to the nanosecond.
        let offset = f(&r["scheduled_s"]) - first;
        assert!(
            (offset - *offset_ns as f64 / 1e9).abs() < 1e-8,
            "{offset} s, the file says {offset_ns} ns: {r}"
        );
        assert_eq!(
            (&r["status"], &r["verified"]),
            (&"ok".into(), &true.into()),
            "{r}"
        );
        assert_eq!(n(&r["input_tokens"]), *context, "{r}");
        assert_eq!(n(&r["prompt_tokens"]), *context, "{r}");
        assert_eq!(n(&r["requested_output_tokens"]), *generated, "{r}");
        assert_eq!(n(&r["output_tokens"]), *generated, "{r}");
    }
    let case = &json(&dir.join("campaign.json"))["cases"][0];
    assert_eq!(case["shape"], "replay", "{case}");
    assert_eq!(n(&case["arrivals"]), rows.len() as u64, "{case}");
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// An Azure trace's rows in time order: nanoseconds after the earliest (all on one day), context
/// and generated tokens; read here on their own, apart from llmload's reader.
fn azure_rows(path: &str) -> Vec<(i64, u64, u64)> {
    let text = std::fs::read_to_string(path).expect("sample");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("TIMESTAMP,ContextTokens,GeneratedTokens")
    );
    let rows: Vec<(i64, u64, u64)> = lines
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let time = fields[0].split_once(' ').expect("date and time").1;
            let (clock, fraction) = time.split_once('.').expect("a fraction");
            let ns = clock.split(':').fold(0_i64, |acc, part| {
                acc * 60 + part.parse::<i64>().expect("digits")
            }) * 1_000_000_000
                + fraction.parse::<i64>().expect("digits") * 100;
            (
                ns,
                fields[1].parse().expect("count"),
                fields[2].parse().expect("count"),
            )
        })
        .collect();
    let first = rows.iter().map(|row| row.0).min().expect("rows");
    let mut rows: Vec<(i64, u64, u64)> =
        rows.iter().map(|(ns, c, g)| (ns - first, *c, *g)).collect();
    rows.sort_unstable();
    rows
}

#[test]
fn a_csv_trace_with_hash_ids_reads_as_its_jsonl_twin() {
    // The sample Mooncake trace written as CSV, the rows reversed and the ids split two ways.
    let text = std::fs::read_to_string(sample("mooncake-trace.jsonl")).expect("sample");
    let mut rows: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let v: Value = serde_json::from_str(line).expect("JSON");
            let ids: Vec<String> = v["hash_ids"]
                .as_array()
                .expect("ids")
                .iter()
                .map(ToString::to_string)
                .collect();
            let ids = ids.join(if i % 2 == 0 { " " } else { ";" });
            format!(
                "{},{},{},{ids}",
                v["input_length"], v["output_length"], v["timestamp"]
            )
        })
        .collect();
    rows.reverse();
    let dir = tempfile::tempdir().expect("temp dir");
    let csv = dir.path().join("mooncake.txt");
    std::fs::write(
        &csv,
        format!(
            "input_length,output_length,timestamp,hash_ids\n{}\n",
            rows.join("\n")
        ),
    )
    .expect("write");
    let load = |path: &Path| llmload::workload::trace::load(path, 512).expect("valid trace");
    let twin = load(Path::new(&sample("mooncake-trace.jsonl")));
    let read = load(&csv);
    // The same arrivals in the same order; offsets to the nanosecond (the JSONL reader subtracts
    // the first timestamp in floating point, the CSV reader in whole nanoseconds).
    let ns = |entries: &[llmload::workload::trace::TraceEntry]| -> Vec<u64> {
        entries
            .iter()
            .map(|e| llmload::num::to_u64((e.offset_s * 1e9).round()))
            .collect()
    };
    assert_eq!(ns(&read), ns(&twin));
    let rest = |entries: Vec<llmload::workload::trace::TraceEntry>| -> Vec<_> {
        entries
            .into_iter()
            .map(|e| (e.input_tokens, e.output_tokens, e.blocks, e.shared_tokens))
            .collect()
    };
    let read = rest(read);
    assert_eq!(read, rest(twin));
    let shared: Vec<u64> = read.iter().map(|e| u64::from(e.3)).collect();
    assert_eq!(shared, expected_shared());
}

/// Each arrival's shared tokens in the sample trace (block 512): the leading blocks it has in
/// common with an earlier arrival's prompt and output.
fn expected_shared() -> Vec<u64> {
    let text = std::fs::read_to_string(sample("mooncake-trace.jsonl")).expect("sample");
    let mut seen: std::collections::HashMap<Vec<u64>, u64> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("JSON");
        let input = n(&v["input_length"]);
        let output = n(&v["output_length"]);
        let ids: Vec<u64> = v["hash_ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(n)
            .collect();
        let (mut shared, mut sharing) = (0, true);
        for i in 0..ids.len() {
            let held = (input - 512 * i as u64).min(512);
            let before = seen.get(&ids[..=i]).copied().unwrap_or(0);
            if sharing {
                shared += held.min(before);
                sharing = before >= held;
            }
            let reach = if i + 1 == ids.len() {
                (held + output).min(512)
            } else {
                held
            };
            seen.insert(ids[..=i].to_vec(), before.max(reach));
        }
        out.push(shared);
    }
    out
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

#[test]
fn llama_server_serves_no_more_than_a_traces_shared_blocks() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    // Gemma 3 reuses a slot's cached prefix only with the full sliding-window cache.
    let server = LlamaServer::start_with(&["--swa-full"]);
    let out = tempfile::tempdir().expect("temp dir");
    let trace = out.path().join("trace.jsonl");
    let chains: [&[u64]; 8] = [
        &[1, 2],
        &[1, 2, 3],
        &[1, 4],
        &[5],
        &[7, 8],
        &[7, 8, 9],
        &[5, 10],
        &[1, 2],
    ];
    let lines: Vec<String> = chains
        .iter()
        .enumerate()
        .map(|(i, ids)| {
            serde_json::json!({
                "timestamp": 100 * i, "input_length": (ids.len() - 1) * 64 + 40,
                "output_length": 4, "hash_ids": ids,
            })
            .to_string()
        })
        .collect();
    std::fs::write(&trace, lines.join("\n")).expect("write trace");
    let dir = run_ok(
        out.path(),
        "llama-trace",
        &server.url,
        &[
            "--trace",
            trace.to_str().expect("UTF-8"),
            "--trace-block-tokens",
            "64",
            "--max-in-flight",
            "1",
            "--timeout",
            "5m",
        ],
    );
    let records = measured(&dir);
    assert_eq!(records.len(), 8);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["prompt_tokens"], r["input_tokens"], "{r}");
        let shared = r["shared_tokens"].as_u64().unwrap_or(0);
        assert!(n(&r["cached_tokens"]) <= shared, "{r}");
    }
}
