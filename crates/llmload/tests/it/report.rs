//! The views of real attempts: `llmload run` against the simulator writes `cases.csv` and a
//! self-contained `report.html`; `llmload report DIR` rebuilds every view from the records alone,
//! byte for byte — closed rounds, open loops with their window figures, and sweeps with their
//! saturation analysis; `llmload compare` puts two attempts side by side, labels incomplete cases
//! and cases that only one attempt ran; the charts show a sweep's `C_sat` and cap and the guard's
//! stop on the telemetry chart.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;
use crate::common::chromium;

use common::{attempt_dir, json, llmload, Simulator, SERIAL};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

/// A small campaign against `sim`: 2 rounds of 16 output tokens per case. Returns the attempt.
fn small_run(sim: &Simulator, out: &Path, name: &str, matrix: &[&str], code: i32) -> PathBuf {
    let out_arg = out.to_str().expect("UTF-8 path");
    let mut args = vec![
        "run",
        "--url",
        &sim.url,
        "--output-tokens",
        "16",
        "--rounds",
        "2",
        "--out",
        out_arg,
        "--name",
        name,
        "-q",
    ];
    args.extend(matrix);
    let run = llmload(&args);
    assert_eq!(run.code, code, "{}\n{}", run.stdout, run.stderr);
    attempt_dir(out, name)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The charts of report.html, by title.
const CHARTS: [&str; 5] = [
    "Latency against concurrency",
    "Aggregate throughput against concurrency",
    "Latency against throughput",
    "Per-request timeline",
    "GPU telemetry over time",
];

/// The page's figures: the charts, the bars of where the time goes, and the bars of the TTFT's
/// parts (the simulator reports its timings as llama-server does).
const FIGURES: usize = CHARTS.len() + 2;

/// The page names no address but the target's, loads nothing, and holds one SVG per chart; an
/// attempt without GPU readings has one line in place of the telemetry chart.
fn assert_self_contained(html: &str, target_url: &str) {
    let line = "<h3>GPU telemetry over time</h3>\n<p class=\"note\" id=\"no-telemetry\">\
                No GPU telemetry";
    assert!(html.contains(line), "no readings: one line, no chart");
    assert_eq!(
        html.matches("<svg").count(),
        FIGURES - 1,
        "one <svg> per figure"
    );
    assert_eq!(html.matches("<figcaption>").count(), FIGURES - 1);
    for title in CHARTS {
        assert!(html.contains(&format!("<h3>{title}</h3>")), "{title}");
    }
    for banned in [
        "<script", "<link", "<iframe", "<img", "src=", "url(", "@import",
    ] {
        assert!(!html.contains(banned), "report.html contains {banned}");
    }
    let rest = html.replace(target_url, "");
    assert!(
        !rest.contains("http://") && !rest.contains("https://"),
        "an address other than the target's"
    );
}

#[test]
fn a_run_writes_every_view_and_report_rebuilds_them_from_the_records_alone() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let matrix = ["--input-tokens", "64,256", "--concurrency", "1,2,4"];
    let dir = small_run(&sim, out.path(), "views", &matrix, 0);
    let (markdown, csv, summary) = (
        read(&dir.join("report.md")),
        read(&dir.join("cases.csv")),
        read(&dir.join("summary.json")),
    );
    let html = read(&dir.join("report.html"));
    assert_self_contained(&html, &sim.url);
    // `llmload sim` reached through --url says so in /props: the attempt is marked simulated.
    assert!(
        html.contains("id=\"simulated\""),
        "the simulator at --url is recognised and bannered"
    );

    // Where the time goes: every case's ok responses carry their phases, and each case has its
    // bar on the page.
    let parsed: serde_json::Value = serde_json::from_str(&summary).expect("summary.json");
    for case in parsed["cases"].as_array().expect("cases") {
        let phases = &case["phases"];
        assert_eq!(phases["responses"], case["counts"]["ok"], "{case}");
        let connections = phases["new_connections"].as_u64().expect("a count")
            + phases["reused_connections"].as_u64().expect("a count");
        assert_eq!(phases["responses"], connections, "{case}");
    }
    assert_eq!(html.matches("<g class=\"phase-bar\">").count(), 6);

    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 1 + 6, "a header and one row per case:\n{csv}");
    let header: Vec<&str> = rows[0].split(',').collect();
    for column in ["ttft_ms_n", "ttft_ms_p99", "e2e_ms_median", "tpot_ms_p95"] {
        assert!(header.contains(&column), "{column} in {}", rows[0]);
    }
    let at = |name: &str| header.iter().position(|c| *c == name).expect("column");
    for row in &rows[1..] {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{row}");
        assert_eq!(cells[at("complete")], "true", "{row}");
        let concurrency: u32 = cells[at("concurrency")].parse().expect("number");
        assert_eq!(cells[at("ttft_ms_n")], (2 * concurrency).to_string());
        assert_eq!(cells[at("throughput_tps_n")], "2");
    }

    for view in ["report.md", "cases.csv", "report.html"] {
        std::fs::remove_file(dir.join(view)).expect("remove a view");
    }
    let report = llmload(&["report", dir.to_str().expect("UTF-8 path")]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert_eq!(
        report.stdout, markdown,
        "the table, rebuilt from the records"
    );
    assert_eq!(read(&dir.join("report.md")), markdown);
    assert_eq!(read(&dir.join("cases.csv")), csv);
    assert_eq!(read(&dir.join("summary.json")), summary, "never rewritten");
    assert_self_contained(&read(&dir.join("report.html")), &sim.url);
}

/// A tiny campaign on the built-in simulator (no --url): two cases, one round each.
fn builtin_run(out: &Path) -> PathBuf {
    let run = llmload(&[
        "run",
        "--input-tokens",
        "64",
        "--concurrency",
        "1,2",
        "--output-tokens",
        "8",
        "--rounds",
        "1",
        "--out",
        out.to_str().expect("UTF-8 path"),
        "--name",
        "builtin",
        "-q",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    attempt_dir(out, "builtin")
}

#[test]
fn a_run_on_the_built_in_simulator_says_so_in_a_banner() {
    let out = tempfile::tempdir().expect("temp dir");
    let dir = builtin_run(out.path());
    assert_eq!(
        json(&dir.join("campaign.json"))["target"]["simulated"],
        true
    );
    let html = read(&dir.join("report.html"));
    assert!(html.contains("<div class=\"banner\" id=\"simulated\">SIMULATED target"));
    let url = json(&dir.join("summary.json"))["target_url"].clone();
    assert_self_contained(&html, url.as_str().expect("URL"));
}

/// Debian's `chromium` renders the page offline with every chart; the page asks for nothing.
/// `scripts/test.sh` installs Chromium; without it this test fails rather than pass unseen.
#[test]
fn the_page_loads_offline_in_headless_chromium() {
    chromium::assert_installed();
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let trace = replay(out.path(), 120.0, |t| 70.0 + t / 12.0);
    let dir = llmload_ok(
        &[
            "sweep",
            "--url",
            &sim.url,
            "--input-tokens",
            "64",
            "--output-tokens",
            "32",
            "--concurrency",
            "1,2,4",
            "--rounds",
            "1",
            "--telemetry",
            &trace,
            "--name",
            "page",
        ],
        out.path(),
        0,
    );
    let summary = json(&dir.join("summary.json"));
    let page = dir.join("report.html");
    let (dom, urls) = chromium::run(&page, out.path(), &["--dump-dom"]);
    assert_eq!(
        dom.matches("<svg").count(),
        FIGURES,
        "every figure is in the DOM"
    );
    assert_eq!(dom.matches("<figcaption>").count(), FIGURES);
    assert!(
        dom.contains("id=\"ttft-parts-bars\""),
        "the TTFT's parts are drawn"
    );
    assert!(
        dom.contains("Unavailable: ") && dom.contains("no queue time"),
        "the part the server does not report is named"
    );
    for title in CHARTS {
        assert!(
            dom.contains(&format!("<h3>{title}</h3>")),
            "{title} is on the page"
        );
    }
    assert!(dom.contains("id=\"simulated\""));
    assert!(
        dom.contains("id=\"sweep\""),
        "the sweep's analysis is on the page"
    );
    // The telemetry chart draws both GPUs of the replay.
    let telemetry = &dom[dom.find("<h3>GPU telemetry over time</h3>").expect("chart")..];
    assert!(telemetry.contains("GPU 0") && telemetry.contains("GPU 1"));
    // A C_sat whose range is bounded on one side only is not placed, and not marked.
    let saturation = &summary["sweep"]["analysis"]["saturation"];
    let one_sided = saturation["low"].is_f64() != saturation["high"].is_f64();
    match saturation["value"].as_f64().filter(|_| !one_sided) {
        Some(c) => assert!(
            dom.matches(&format!("C_sat = {c}")).count() >= 2,
            "C_sat marked on both charts over load"
        ),
        None => assert!(
            dom.contains("found no saturation point") || dom.contains("so no line marks it")
        ),
    }
    assert!(urls.is_empty(), "the page requested {urls:?}");
    let shot = out.path().join("report.png");
    chromium::run(
        &page,
        out.path(),
        &[&format!("--screenshot={}", shot.display())],
    );
    let size = std::fs::metadata(&shot).map_or(0, |m| m.len());
    assert!(
        size > 20_000,
        "a screenshot with charts, not a blank page: {size} bytes"
    );
}

/// Writes a replay trace of two GPUs, a reading every 0.25 s for `seconds`, GPU 0 at
/// `temperature(t)` and GPU 1 five degrees cooler; returns the `--telemetry` value.
fn replay(dir: &Path, seconds: f64, temperature: impl Fn(f64) -> f64) -> String {
    let path = dir.join("trace.jsonl");
    let mut text = String::new();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a few seconds of quarter-second steps: small and not negative"
    )]
    let steps = (seconds * 4.0) as u32;
    for step in 0..=steps {
        let t = f64::from(step) / 4.0;
        for gpu in [0u32, 1] {
            let line = serde_json::json!({"t_s": t, "gpu": gpu,
                "temperature_c": temperature(t) - 5.0 * f64::from(gpu), "margin_c": 12.0,
                "power_w": 250.0 + t - 20.0 * f64::from(gpu), "power_limit_w": 300.0});
            let _ = writeln!(text, "{line}");
        }
    }
    std::fs::write(&path, text).expect("write trace");
    format!("replay:{}", path.display())
}

/// Runs llmload with `args`, `--out out` and `-q`; expects exit `code`; returns the attempt
/// folder of the `--name` given.
fn llmload_ok(args: &[&str], out: &Path, code: i32) -> PathBuf {
    let name = args
        .iter()
        .position(|a| *a == "--name")
        .map(|i| args[i + 1])
        .expect("a --name");
    let mut all = args.to_vec();
    all.extend(["--out", out.to_str().expect("UTF-8 path"), "-q"]);
    let run = llmload(&all);
    assert_eq!(run.code, code, "{}\n{}", run.stdout, run.stderr);
    attempt_dir(out, name)
}

/// Deletes the views of `dir`, rebuilds them with `llmload report`, and checks they are what
/// the run wrote, byte for byte, and that `report --json` gives summary.json's content.
fn assert_rebuilds_the_same(dir: &Path) {
    let views = ["report.md", "cases.csv", "report.html"];
    let written: Vec<String> = views.iter().map(|v| read(&dir.join(v))).collect();
    let summary = json(&dir.join("summary.json"));
    for view in views {
        std::fs::remove_file(dir.join(view)).expect("remove a view");
    }
    let rebuilt = llmload(&["report", dir.to_str().expect("UTF-8 path"), "--json"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    let value: serde_json::Value = serde_json::from_str(&rebuilt.stdout).expect("JSON on stdout");
    assert_eq!(value, summary, "report --json is the summary, rebuilt");
    for (view, before) in views.iter().zip(&written) {
        assert_eq!(
            &read(&dir.join(view)),
            before,
            "{view} rebuilt from the records"
        );
    }
}

#[test]
fn open_loop_and_sweep_attempts_rebuild_with_their_window_and_sweep_sections() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let open = llmload_ok(
        &[
            "run",
            "--url",
            &sim.url,
            "--arrival",
            "poisson",
            "--rate",
            "20",
            "--requests",
            "24",
            "--warmup-time",
            "0.2s",
            "--slo-ttft",
            "1s",
            "--input-tokens",
            "64",
            "--output-tokens",
            "16",
            "--name",
            "open",
        ],
        out.path(),
        0,
    );
    let markdown = read(&open.join("report.md"));
    assert!(
        markdown.contains("Continuous and open-loop cases"),
        "{markdown}"
    );
    assert!(read(&open.join("report.html")).contains("Continuous and open-loop cases"));
    assert_rebuilds_the_same(&open);

    let sweep = llmload_ok(
        &[
            "sweep",
            "--url",
            &sim.url,
            "--input-tokens",
            "64",
            "--output-tokens",
            "16",
            "--concurrency",
            "1,2,4",
            "--rounds",
            "1",
            "--name",
            "sweep",
        ],
        out.path(),
        0,
    );
    let markdown = read(&sweep.join("report.md"));
    assert!(markdown.contains("Sweep over concurrency"), "{markdown}");
    assert!(markdown.contains("Saturation (C_sat):"), "{markdown}");
    assert!(read(&sweep.join("report.html")).contains("id=\"sweep\""));
    assert_rebuilds_the_same(&sweep);
}

#[test]
fn a_guard_stop_is_marked_on_the_telemetry_chart() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    // 95 °C from 1 s on: the guard stops the campaign at the first reading past it.
    let trace = replay(out.path(), 60.0, |t| if t < 1.0 { 75.0 } else { 95.0 });
    let dir = llmload_ok(
        &[
            "run",
            "--url",
            &sim.url,
            "--input-tokens",
            "60,61,62,63",
            "--concurrency",
            "2",
            "--output-tokens",
            "400",
            "--rounds",
            "1",
            "--telemetry",
            &trace,
            "--stop-temp",
            "90",
            "--name",
            "stop",
        ],
        out.path(),
        4,
    );
    let html = read(&dir.join("report.html"));
    let chart = &html[html
        .find("<h3>GPU telemetry over time</h3>")
        .expect("chart")..];
    assert!(
        chart.contains("guard stop: temperature rule, 1 s"),
        "the stop line is labelled"
    );
    assert!(chart.contains("stop threshold 90 °C"));
    assert!(
        chart.contains("stopped (temperature rule) at 1 s"),
        "the caption says so"
    );
    assert_rebuilds_the_same(&dir);
}

#[test]
fn compare_puts_attempts_side_by_side_and_never_pools_them() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let out = tempfile::tempdir().expect("temp dir");
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let full = ["--input-tokens", "64,256", "--concurrency", "1,2,4"];
    let first = small_run(&sim, out.path(), "first", &full, 0);
    drop(sim);
    // Request 5 is in the first round of in64-c2 (warmup 0, rounds 1–2, warmup 3, then 4, 5).
    let faulty = Simulator::start(&["--profile", "cpu-tiny", "--fault", "http500:index=5"]);
    let fewer = ["--input-tokens", "64,256", "--concurrency", "1,2"];
    let second = small_run(&faulty, out.path(), "second", &fewer, 3);
    let compare = llmload(&[
        "compare",
        first.to_str().expect("UTF-8 path"),
        second.to_str().expect("UTF-8 path"),
    ]);
    assert_eq!(compare.code, 0, "{}", compare.stderr);
    let text = compare.stdout;
    let rows = |prefix: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .map(String::from)
            .collect()
    };
    let id = |dir: &Path| json(&dir.join("summary.json"))["attempt_id"].clone();
    assert!(text.contains(id(&first).as_str().expect("id")), "{text}");
    assert!(text.contains(id(&second).as_str().expect("id")), "{text}");

    let matched = rows("| 256 | 2 | 16 |");
    assert_eq!(matched.len(), 2, "{text}");
    assert!(
        matched[0].contains("| A |") && matched[0].contains("| 1.00 |"),
        "{text}"
    );
    assert!(
        matched[1].contains("| B |") && matched[1].contains("tokens/s"),
        "{text}"
    );

    let incomplete = rows("| 64 | 2 | 16 | closed rounds | B |");
    assert_eq!(incomplete.len(), 1, "{text}");
    assert!(incomplete[0].contains("incomplete"), "{}", incomplete[0]);
    assert!(!incomplete[0].contains("tokens/s"), "never figures for it");

    let only_first = rows("| 64 | 4 | 16 | closed rounds | B |");
    assert!(only_first[0].contains("not in this attempt"), "{text}");
    assert!(
        text.contains("Only in A: 64 input tokens × 4 concurrent × 16 output tokens"),
        "{text}"
    );

    let alone = llmload(&["compare", first.to_str().expect("UTF-8 path")]);
    assert_eq!(
        alone.code, 2,
        "compare needs two attempts: {}",
        alone.stderr
    );
}

#[test]
fn report_on_a_folder_that_is_no_attempt_fails_in_one_line() {
    let empty = tempfile::tempdir().expect("temp dir");
    let report = llmload(&["report", empty.path().to_str().expect("UTF-8 path")]);
    assert_eq!(report.code, 1);
    assert!(report.stderr.contains("campaign.json"), "{}", report.stderr);
    assert_eq!(report.stderr.trim().lines().count(), 1, "{}", report.stderr);
}

#[test]
fn report_shows_a_case_in_another_tool_s_definitions_from_the_same_records() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let dir = small_run(
        &sim,
        out.path(),
        "dialect",
        &[
            "--api",
            "chat",
            "--input-tokens",
            "32",
            "--concurrency",
            "2",
        ],
        0,
    );
    let dir_arg = dir.to_str().expect("UTF-8 path");
    let records = common::json_lines(&dir.join("requests.jsonl"));
    let measured: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["phase"] == "measured" && r["status"] == "ok")
        .collect();
    let events: usize = measured
        .iter()
        .map(|r| r["event_ms"].as_array().expect("events").len())
        .sum();
    let before = std::fs::read(dir.join("report.md")).expect("report.md");
    for (dialect, gaps, first) in [
        ("vllm", "itl", "ttft"),
        ("aiperf", "inter_chunk_latency", "time_to_first_token"),
    ] {
        let shown = llmload(&["report", dir_arg, "--dialect", dialect, "--json"]);
        assert_eq!(shown.code, 0, "{}", shown.stderr);
        let cases: serde_json::Value = serde_json::from_str(&shown.stdout).expect("JSON");
        let case = &cases[0];
        assert_eq!(case["responses"], measured.len(), "{case}");
        assert_eq!(case["figures"][first]["n"], measured.len(), "{case}");
        // One gap per token event after the first; vLLM's also from a role-only chunk before
        // the first token, where the stream sent one.
        let n = usize::try_from(case["figures"][gaps]["n"].as_u64().expect("n")).expect("n");
        let least = events - measured.len();
        assert!(
            n >= least && n <= events,
            "{dialect}: {n} gaps of {events} events"
        );
        assert!(case["output_throughput_tps"]
            .as_f64()
            .is_some_and(|t| t > 0.0));
        let table = llmload(&["report", dir_arg, "--dialect", dialect]);
        assert!(
            table.stdout.contains(&format!("| {first} (ms) |")),
            "{}",
            table.stdout
        );
    }
    // GuideLLM's per-token figures have one value per response with more than one token.
    let shown = llmload(&["report", dir_arg, "--dialect", "guidellm", "--json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let cases: serde_json::Value = serde_json::from_str(&shown.stdout).expect("JSON");
    assert_eq!(
        cases[0]["figures"]["inter_token_latency"]["n"],
        measured.len(),
        "{cases}"
    );
    // Showing a dialect rewrites no view.
    assert_eq!(
        std::fs::read(dir.join("report.md")).expect("report.md"),
        before
    );
}
