//! Load shapes and length distributions end to end: open loops (Poisson, gamma, constant) with
//! and without an in-flight cap, closed continuous, sampled lengths verified per request, the
//! guard stopping an open loop, and `llmload sweep` finding the simulator's saturation point and
//! a real llama-server's queueing beyond its 4 slots.

use crate::common;

use common::{
    attempt_dir, json, json_lines, llmload, measured, run_against, Invocation, Simulator,
};
use serde_json::Value;
use std::path::Path;
use std::sync::PoisonError;

fn run(out: &Path, name: &str, url: &str, extra: &[&str]) -> (Invocation, std::path::PathBuf) {
    let (result, dir) = run_against(out, name, url, extra);
    assert!(
        result.code == 0 || result.code == 4,
        "{}\n{}",
        result.stdout,
        result.stderr
    );
    (result, dir)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// Most requests in flight at once, from the records' send and done times.
fn peak_in_flight(records: &[Value]) -> usize {
    let mut edges: Vec<(f64, i32)> = Vec::new();
    for r in records {
        edges.push((f(&r["sent_s"]), 1));
        edges.push((f(&r["done_s"]), -1));
    }
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (0, 0);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    // Never below 0, where it starts.
    usize::try_from(peak).unwrap_or_default()
}

#[test]
fn poisson_open_loop_with_a_choice_of_lengths() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "8"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (_, dir) = run(
        out.path(),
        "poisson",
        &sim.url,
        &[
            "--arrival",
            "poisson",
            "--rate",
            "30",
            "--requests",
            "90",
            "--input-tokens",
            "choice:32,256,1024",
            "--output-tokens",
            "8",
            "--slo-ttft",
            "2s",
            "--seed",
            "5",
        ],
    );
    let records = measured(&dir);
    assert_eq!(records.len(), 90);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["prompt_tokens"], r["input_tokens"], "{r}");
        let lag = f(&r["sent_s"]) - f(&r["scheduled_s"]);
        assert!(lag >= 0.0, "sent before its schedule: lag {lag} s: {r}");
    }
    for n in [32, 256, 1024] {
        let count = records.iter().filter(|r| r["input_tokens"] == n).count();
        assert!(count >= 15, "{n} tokens drawn {count} times of 90");
    }
    let mut scheduled: Vec<f64> = records.iter().map(|r| f(&r["scheduled_s"])).collect();
    scheduled.sort_by(f64::total_cmp);
    let rate = 89.0 / (scheduled[89] - scheduled[0]);
    assert!((rate - 30.0).abs() < 0.5, "scheduled rate {rate}");
    let case = &json(&dir.join("summary.json"))["cases"][0];
    let load = &case["load"];
    assert_eq!(load["shape"], "poisson");
    assert_eq!(load["nominal_rate_rps"], 30.0);
    assert!(f(&load["throughput_tps"]) > 0.0, "{load}");
    assert!(f(&load["achieved_concurrency_mean"]) > 0.05, "{load}");
    // Goodput counts requests, never more than were launched in the window.
    let goodput = f(&load["goodput_rps"]);
    let window = f(&load["window_s"][1]) - f(&load["window_s"][0]);
    assert!(
        goodput > 0.0 && goodput * window <= f(&load["requests_launched"]) + 1e-6,
        "{load}"
    );
    assert_eq!(load["send_lag_ms"]["n"], 90);
    assert!(f(&load["ttft_from_scheduled_ms"]["median"]) >= f(&case["ttft_ms"]["median"]));
    let campaign = json(&dir.join("campaign.json"));
    assert_eq!(campaign["cases"][0]["input_length"], "choice:32,256,1024");
}

/// (rate, coefficient of variation) of the gaps between sorted times.
fn rate_and_cv(times: &mut [f64]) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    (1.0 / mean, var.sqrt() / mean)
}

#[test]
fn the_pacer_sends_poisson_arrivals_at_their_rate_and_shape() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "256"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (_, dir) = run(
        out.path(),
        "paced",
        &sim.url,
        &[
            "--arrival",
            "poisson",
            "--rate",
            "200",
            "--requests",
            "1000",
            "--input-tokens",
            "16",
            "--output-tokens",
            "2",
            "--seed",
            "11",
        ],
    );
    let records = measured(&dir);
    assert_eq!(records.len(), 1000);
    let (scheduled_rate, scheduled_cv) = rate_and_cv(
        &mut records
            .iter()
            .map(|r| f(&r["scheduled_s"]))
            .collect::<Vec<_>>(),
    );
    // The schedule is the process (drawn from the seed, so exact); every send follows its
    // arrival, never before it. How closely the sends keep the schedule on a busy machine is a
    // timing, measured by scripts/bench-pacer.sh, not asserted here.
    assert!(
        (scheduled_rate / 200.0 - 1.0).abs() < 0.01,
        "{scheduled_rate}"
    );
    assert!((scheduled_cv - 1.0).abs() < 0.1, "{scheduled_cv}");
    for r in &records {
        assert!(
            f(&r["sent_s"]) >= f(&r["scheduled_s"]),
            "sent before its arrival: {r}"
        );
    }
    // The summary says at which priority the pacer thread ran.
    let load = &json(&dir.join("summary.json"))["cases"][0]["load"];
    let priority = load["pacer_priority"].as_str().expect("pacer priority");
    assert!(
        ["real-time", "raised", "normal"].contains(&priority),
        "{load}"
    );
}

#[test]
fn capped_gamma_loop_never_exceeds_its_cap_and_shows_the_wait_as_send_lag() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "8"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (_, dir) = run(
        out.path(),
        "gamma",
        &sim.url,
        &[
            "--arrival",
            "gamma",
            "--burstiness",
            "2",
            "--rate",
            "60",
            "--duration",
            "2s",
            "--max-in-flight",
            "2",
            "--input-tokens",
            "uniform:16,64",
            "--output-tokens",
            "32",
        ],
    );
    let records = measured(&dir);
    assert!(records.len() > 60, "{} requests", records.len());
    assert!(records.iter().all(|r| r["status"] == "ok"));
    assert!(peak_in_flight(&records) <= 2);
    let inputs: Vec<f64> = records.iter().map(|r| f(&r["input_tokens"])).collect();
    assert!(inputs.iter().all(|n| (16.0..=64.0).contains(n)));
    assert!(
        records
            .iter()
            .any(|r| r["input_tokens"] != records[0]["input_tokens"]),
        "lengths vary"
    );
    let load = &json(&dir.join("summary.json"))["cases"][0]["load"];
    assert!(f(&load["achieved_concurrency_peak"]) <= 2.0, "{load}");
    // 60 arrivals/s against at most 2 in flight of ~0.1 s each: the queue is in the client, and
    // it shows.
    assert!(f(&load["send_lag_ms"]["max"]) > 100.0, "{load}");
    assert!(
        f(&load["e2e_from_scheduled_ms"]["p99"]) > f(&load["send_lag_ms"]["p99"]),
        "{load}"
    );
}

#[test]
fn constant_arrivals_are_evenly_spaced_and_warmup_time_is_excluded() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (_, dir) = run(
        out.path(),
        "constant",
        &sim.url,
        &[
            "--arrival",
            "constant",
            "--rate",
            "20",
            "--requests",
            "40",
            "--warmup-time",
            "0.5s",
            "--input-tokens",
            "64",
            "--output-tokens",
            "normal:8,3,2,16",
        ],
    );
    let all = json_lines(&dir.join("requests.jsonl"));
    let streamed: Vec<&Value> = all.iter().filter(|r| !r["scheduled_s"].is_null()).collect();
    assert_eq!(streamed.len(), 40);
    let mut times: Vec<f64> = streamed.iter().map(|r| f(&r["scheduled_s"])).collect();
    times.sort_by(f64::total_cmp);
    for pair in times.windows(2) {
        assert!((pair[1] - pair[0] - 0.05).abs() < 1e-6, "{pair:?}");
    }
    let warm = streamed.iter().filter(|r| r["phase"] == "warmup").count();
    assert_eq!(warm, 10, "arrivals in the first 0.5 s at 20/s are warmup");
    for r in &streamed {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["output_tokens"], r["requested_output_tokens"], "{r}");
        assert!((2..=16).contains(&r["requested_output_tokens"].as_u64().expect("n")));
    }
    let load = &json(&dir.join("summary.json"))["cases"][0]["load"];
    let window = load["window_s"].as_array().expect("window");
    assert!((f(&window[0]) - times[0] - 0.5).abs() < 0.01, "{load}");
}

#[test]
fn closed_continuous_keeps_its_concurrency_in_flight() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "8"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (_, dir) = run(
        out.path(),
        "continuous",
        &sim.url,
        &[
            "--arrival",
            "closed-continuous",
            "--concurrency",
            "3",
            "--requests",
            "30",
            "--input-tokens",
            "128",
            "--output-tokens",
            "lognormal:16,0.4,4,64",
        ],
    );
    let records = measured(&dir);
    assert_eq!(records.len(), 30);
    assert_eq!(peak_in_flight(&records), 3);
    assert!(records
        .iter()
        .all(|r| r["scheduled_s"].is_null() && r["status"] == "ok"));
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_eq!(case["id"], "in128-cc3-outlognormal:16/0.4/4/64");
    let load = &case["load"];
    assert_eq!(load["nominal_concurrency"], 3);
    // At most the three kept in flight, and most of the time all three.
    let mean = f(&load["achieved_concurrency_mean"]);
    assert!(mean > 1.0 && mean <= 3.0, "{load}");
    assert!(load["send_lag_ms"].is_null());
}

#[test]
fn the_guard_stops_an_open_loop_and_in_flight_requests_are_recorded_cancelled() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (result, dir) = run(
        out.path(),
        "stopped",
        &sim.url,
        &[
            "--arrival",
            "poisson",
            "--rate",
            "20",
            "--duration",
            "30s",
            "--max-duration",
            "1500ms",
            "--input-tokens",
            "64",
            "--output-tokens",
            "400",
        ],
    );
    assert_eq!(result.code, 4, "{}", result.stderr);
    let records = measured(&dir);
    assert!(records.len() < 100, "launching stopped: {}", records.len());
    assert!(records.iter().any(|r| r["status"] == "cancelled"));
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary["outcome"]["status"], "stopped");
    assert_eq!(summary["cases"][0]["complete"], false);
}

#[test]
fn load_flags_are_checked_and_a_campaign_file_may_set_them() {
    let out = tempfile::tempdir().expect("temp dir");
    for (flags, expected) in [
        (vec!["--rate", "5"], "--arrival"),
        (vec!["--arrival", "poisson"], "--rate"),
        (vec!["--input-tokens", "zipf:3"], "--input-tokens"),
        (
            vec![
                "--arrival",
                "poisson",
                "--rate",
                "5",
                "--duration",
                "1s",
                "--requests",
                "3",
            ],
            "not both",
        ),
    ] {
        let mut args = vec!["run", "--url", "http://127.0.0.1:9"];
        args.extend(flags);
        let result = llmload(&args);
        assert_eq!(result.code, 2, "{}", result.stderr);
        assert!(result.stderr.contains(expected), "{}", result.stderr);
    }
    for (args, expected) in [
        (
            vec!["sweep", "--input-tokens", "64,128"],
            "one --input-tokens",
        ),
        (
            vec!["sweep", "--concurrency", "4", "--input-tokens", "64"],
            "two or more loads",
        ),
        (vec!["sweep", "--auto", "--max-loads", "1"], "--max-loads"),
    ] {
        let result = llmload(&args);
        assert_eq!(result.code, 2, "{}", result.stderr);
        assert!(result.stderr.contains(expected), "{}", result.stderr);
    }
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let file = out.path().join("c.toml");
    std::fs::write(
        &file,
        "arrival = \"constant\"\nrate = [40]\nrequests = 8\ninput_tokens = \"choice:16@0.5,48@0.5\"\noutput_tokens = [4]\n",
    )
    .expect("write");
    let (_, dir) = run(
        out.path(),
        "file",
        &sim.url,
        &["--config", file.to_str().expect("UTF-8")],
    );
    let records = measured(&dir);
    assert_eq!(records.len(), 8);
    assert!(records
        .iter()
        .all(|r| [16, 48].contains(&r["input_tokens"].as_u64().expect("n"))));
}

#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
fn sweep(out: &Path, url: &str, extra: &[&str]) -> (Invocation, Value) {
    let mut args = vec![
        "sweep",
        "--url",
        url,
        "--out",
        out.to_str().expect("UTF-8"),
        "--name",
        "sweep",
        "--telemetry",
        "off",
    ];
    args.extend_from_slice(extra);
    let result = llmload(&args);
    assert_eq!(result.code, 0, "{}\n{}", result.stdout, result.stderr);
    let summary = json(&attempt_dir(out, "sweep").join("summary.json"));
    (result, summary)
}

#[test]
#[expect(
    clippy::float_cmp,
    reason = "C_sat and the recommended cap are whole numbers, floored here as the sweep floors it"
)]
fn sweep_finds_the_simulators_saturation_point() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "8"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (result, summary) = sweep(
        out.path(),
        &sim.url,
        &[
            "--concurrency",
            "1,2,4,8,16,32",
            "--input-tokens",
            "256",
            "--output-tokens",
            "32",
            "--rounds",
            "2",
            "--slo-ttft",
            "1s",
            "--min-gain",
            "0",
        ],
    );
    let analysis = &summary["sweep"]["analysis"];
    let c_sat = f(&analysis["saturation"]["value"]);
    assert!((6.0..=12.0).contains(&c_sat), "{analysis}");
    // The cap is 0.7 × the fitted C_sat, at most 0.8 × its range's low end, where the range is
    // bounded; else 0.7 × its lower bound.
    let low = f(&analysis["saturation"]["low"]);
    assert!(low <= c_sat, "{analysis}");
    let cap = if analysis["saturation"]["high"].is_f64() {
        (0.7 * c_sat).round().min((0.8 * low).floor())
    } else {
        (0.7 * low).round()
    };
    assert_eq!(f(&analysis["recommended_cap"]["value"]), cap);
    assert_eq!(analysis["points"].as_array().expect("points").len(), 6);
    // The knee, with the uncertainty it states: its range holds its value and reaches the
    // loads where the 8 slots fill (p99 over 2 rounds is noisy at the smallest loads, so the
    // value alone may land below them, with a range that says so).
    let knee = f(&analysis["knee"]["value"]);
    let (knee_low, knee_high) = (f(&analysis["knee"]["low"]), f(&analysis["knee"]["high"]));
    assert!(
        knee_low <= knee && knee <= knee_high && knee_low <= 16.0 && knee_high >= 4.0,
        "{analysis}"
    );
    assert!(
        result.stdout.contains("Saturation (C_sat)"),
        "{}",
        result.stdout
    );
    assert!(result.stdout.contains("0.7 × C_sat"), "{}", result.stdout);
}

#[test]
fn auto_sweep_stops_once_throughput_stops_rising() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "4"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (_, summary) = sweep(
        out.path(),
        &sim.url,
        &[
            "--auto",
            "--input-tokens",
            "128",
            "--output-tokens",
            "24",
            "--rounds",
            "2",
        ],
    );
    let loads: Vec<f64> = summary["sweep"]["analysis"]["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| f(&p["load"]))
        .collect();
    assert!(
        loads.len() >= 4 && loads.iter().all(|&l| l <= 32.0),
        "{loads:?}"
    );
    let c_sat = f(&summary["sweep"]["analysis"]["saturation"]["value"]);
    assert!((3.0..=6.0).contains(&c_sat), "{loads:?}: C_sat {c_sat}");
}

#[test]
#[expect(
    clippy::print_stderr,
    reason = "the sweep's points, shown when the test fails"
)]
fn sweep_against_llama_server_shows_queueing_beyond_its_four_slots() {
    let _serial = common::SERIAL
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let server = common::LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let (_, summary) = sweep(
        out.path(),
        &server.url,
        &[
            "--concurrency",
            "1,2,4,8",
            "--input-tokens",
            "256",
            "--output-tokens",
            "16",
            "--rounds",
            "2",
        ],
    );
    let points = summary["sweep"]["analysis"]["points"]
        .as_array()
        .expect("points")
        .clone();
    for p in &points {
        eprintln!(
            "llama-server, {} concurrent: TTFT p50 {:.1} ms",
            p["load"],
            f(&p["ttft_p50_ms"])
        );
    }
    // Eight requests on four slots: four wait for a slot, which frees only when a request ends,
    // so in every round at least four get their first token after another request of the round
    // has completed. An order of events on the server, not a comparison of durations.
    let records = measured(&attempt_dir(out.path(), "sweep"));
    let at_eight: Vec<&Value> = records
        .iter()
        .filter(|r| r["case"].as_str().is_some_and(|c| c.contains("-c8-")))
        .collect();
    assert_eq!(at_eight.len(), 16, "two rounds of eight");
    for round in [1, 2] {
        let round: Vec<&&Value> = at_eight.iter().filter(|r| r["round"] == round).collect();
        assert_eq!(round.len(), 8);
        let first_done = round
            .iter()
            .map(|r| f(&r["done_s"]))
            .fold(f64::INFINITY, f64::min);
        let waited = round
            .iter()
            .filter(|r| f(&r["first_token_s"]) > first_done)
            .count();
        assert!(waited >= 4, "{waited} of 8 waited for a slot: {round:?}");
    }
}

#[test]
fn a_trace_is_replayed_with_its_offsets_and_lengths() {
    let sim = Simulator::start(&["--profile", "cpu-tiny", "--slots", "8"]);
    let out = tempfile::tempdir().expect("temp dir");
    let trace = out.path().join("trace.jsonl");
    let lines: Vec<String> = (0..20)
        .map(|i| {
            format!(
                "{{\"offset_s\": {}, \"input_tokens\": {}, \"output_tokens\": {}}}",
                f64::from(i) * 0.03,
                16 + i * 8,
                2 + i % 5
            )
        })
        .collect();
    std::fs::write(&trace, lines.join("\n")).expect("write trace");
    let (_, dir) = run(
        out.path(),
        "trace",
        &sim.url,
        &["--trace", trace.to_str().expect("UTF-8")],
    );
    let mut records = measured(&dir);
    assert_eq!(records.len(), 20);
    records.sort_by(|a, b| f(&a["scheduled_s"]).total_cmp(&f(&b["scheduled_s"])));
    let first = f(&records[0]["scheduled_s"]);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["status"], "ok", "{r}");
        assert!(
            (f(&r["scheduled_s"]) - first - i as f64 * 0.03).abs() < 1e-6,
            "{r}"
        );
        assert_eq!(r["input_tokens"], 16 + i as u64 * 8, "{r}");
        assert_eq!(r["output_tokens"], 2 + i as u64 % 5, "{r}");
    }
    let case = &json(&dir.join("summary.json"))["cases"][0];
    assert_eq!(case["load"]["shape"], "trace");
}
