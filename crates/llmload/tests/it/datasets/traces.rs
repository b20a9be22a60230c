//! Traces: Mooncake-style `hash_ids` blocks as shared prefixes, CSV traces (the Azure layout and
//! the Mooncake fields as columns), against the simulator and a real llama-server.

use super::*;

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
