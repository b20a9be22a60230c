//! `--metrics-listen`: a running open loop's `/metrics`, read three times while it runs and read
//! by real scrapers' parsers: Prometheus' own (`promtool check metrics`) and the Prometheus
//! client library's (its Prometheus-text and its strict OpenMetrics parser). Its counters never
//! go down and at the end equal what `requests.jsonl` holds, and no secret of the run is in it.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
#![expect(
    clippy::float_cmp,
    reason = "counts and replayed readings are exact in a scrape"
)]

use crate::common;

use common::{json_lines, Simulator};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One scrape's samples: `name{labels}` (labels sorted) → value.
type Samples = BTreeMap<String, f64>;

const KEY: &str = "sk-live-0123456789abcdef";
const HEADER_SECRET: &str = "hdr-secret-9f8e7d6c5b";

/// A Python that has the Prometheus client library (Debian's `python3-prometheus-client`,
/// which `scripts/test.sh` installs): none is a failure, never a skip.
fn python() -> &'static str {
    ["python3", "/usr/bin/python3"]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .args(["-c", "import prometheus_client.openmetrics.parser"])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .expect(
            "a python3 with prometheus_client (scripts/test.sh installs python3-prometheus-client)",
        )
}

/// Runs `command` with `text` on its stdin; its output.
fn feed(command: &mut Command, text: &str) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{:?} runs: {e}", command.get_program()));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("feed it");
    child.wait_with_output().expect("it ends")
}

/// Parses `text` with the client library's parser (`openmetrics`: its OpenMetrics one); the
/// samples, or a failed test with the parser's message.
fn parse(text: &str, openmetrics: bool) -> Samples {
    let module = if openmetrics {
        "prometheus_client.openmetrics.parser"
    } else {
        "prometheus_client.parser"
    };
    let script = format!(
        "import sys, json\nfrom {module} import text_string_to_metric_families as parse\n\
         out = {{}}\n\
         for family in parse(sys.stdin.read()):\n\
         \x20   for s in family.samples:\n\
         \x20       labels = ','.join(f'{{k}}={{v}}' for k, v in sorted(s.labels.items()))\n\
         \x20       out[f'{{s.name}}{{{{{{labels}}}}}}'] = s.value\n\
         print(json.dumps(out))\n"
    );
    let output = feed(Command::new(python()).args(["-c", &script]), text);
    assert!(
        output.status.success(),
        "the {module} parser refused it: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the parser's JSON")
}

/// `promtool check metrics`: Prometheus' own parser and linter, which must find nothing to say.
fn promtool(text: &str) {
    // Debian's prometheus package, which scripts/test.sh installs.
    let output = feed(Command::new("promtool").args(["check", "metrics"]), text);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && said.trim().is_empty(),
        "promtool: {said}\n{text}"
    );
}

/// `GET /metrics` over a plain socket; the body.
fn scrape(addr: &str, openmetrics: bool) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect to /metrics");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let accept = if openmetrics {
        "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n"
    } else {
        ""
    };
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{accept}\r\n");
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read to the end");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    body.to_owned()
}

/// Scrapes in both formats, checks each with every parser, and returns the samples (the two
/// formats' must agree on every counter).
fn read_metrics(addr: &str) -> (Samples, String) {
    let text = scrape(addr, false);
    promtool(&text);
    let samples = parse(&text, false);
    let om = scrape(addr, true);
    let om_samples = parse(&om, true);
    for secret in [KEY, HEADER_SECRET] {
        assert!(
            !text.contains(secret) && !om.contains(secret),
            "a secret in /metrics"
        );
    }
    for (series, value) in samples
        .iter()
        .filter(|(s, _)| s.starts_with("llmload_requests_total"))
    {
        let om_value = om_samples
            .get(series)
            .expect("the same series in OpenMetrics");
        // A request may end between the two scrapes: never fewer in the later one.
        assert!(om_value >= value, "{series}: {om_value} < {value}");
    }
    (samples, text)
}

fn value(samples: &Samples, series: &str) -> f64 {
    *samples
        .get(series)
        .unwrap_or_else(|| panic!("no {series} in {samples:#?}"))
}

/// Every counter, histogram bucket, count and sum of `before` is in `after`, no smaller.
fn never_decrease(before: &Samples, after: &Samples) {
    let monotone = |s: &str| {
        s.contains("_total{")
            || s.contains("_bucket{")
            || s.contains("_count{")
            || s.contains("_sum{")
    };
    for (series, v) in before.iter().filter(|(s, _)| monotone(s)) {
        let later = value(after, series);
        assert!(later >= *v, "{series} went down: {v} → {later}");
    }
}

/// A replay file of one GPU: hot, near its margin, throttled for power.
fn readings(dir: &Path) -> String {
    let path = dir.join("gpu.jsonl");
    let mut text = String::new();
    for t in 0..120 {
        let _ = writeln!(
            text,
            "{{\"t_s\": {t}, \"gpu\": 0, \"temperature_c\": 71.5, \"margin_c\": 12.0, \
             \"power_w\": 250.0, \"power_limit_w\": 300.0, \"sw_power_cap\": true, \
             \"sw_thermal_slowdown\": false, \"hw_thermal_slowdown\": false}}"
        );
    }
    std::fs::write(&path, text).expect("write readings");
    format!("replay:{}", path.display())
}

/// Starts `llmload COMMAND` against `sim` with a key, a secret header, `--metrics-listen 0` and a
/// long linger, writing to `out/live`, and `extra`; returns it and the address its stderr names.
fn start(command: &str, sim: &Simulator, out: &Path, extra: &[&str]) -> (Child, String) {
    let header = format!("X-Team-Token: {HEADER_SECRET}");
    let out = out.to_str().expect("UTF-8");
    let mut child = Command::new(env!("CARGO_BIN_EXE_llmload"))
        .args([
            command,
            "--url",
            &sim.url,
            "--api",
            "completions",
            "--api-key",
            KEY,
        ])
        .args(["--header", &header, "--out", out, "--name", "live"])
        .args(["--metrics-listen", "0", "--metrics-linger", "5m"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start llmload");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("metrics: http://")
                .and_then(|r| r.strip_suffix("/metrics"))
                .map(str::to_owned)
        })
        .expect("the run names where /metrics is");
    // Drain the rest of stderr so that the run never blocks on it.
    std::thread::spawn(move || lines.for_each(drop));
    (child, addr)
}

/// Ends the linger with a stop signal; the run's exit code.
fn stop(mut child: Child) -> Option<i32> {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    child.wait().expect("llmload ends").code()
}

/// Scrapes until `ready` holds for the samples (at most two minutes).
fn scrape_until(addr: &str, ready: impl Fn(&Samples) -> bool) -> Samples {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (samples, _) = read_metrics(addr);
        if ready(&samples) {
            return samples;
        }
        assert!(Instant::now() < deadline, "not reached: {samples:#?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_running_open_loop_is_scraped_three_times_and_its_counters_end_equal_to_the_records() {
    let sim = Simulator::start(&["--slots", "64"]);
    let tmp = tempfile::tempdir().expect("temp dir");
    let telemetry = readings(tmp.path());
    let (child, addr) = start(
        "run",
        &sim,
        tmp.path(),
        &[
            "--arrival",
            "poisson",
            "--rate",
            "25",
            "--requests",
            "250",
            "--input-tokens",
            "32",
            "--output-tokens",
            "12",
            "--seed",
            "7",
            "--telemetry",
            &telemetry,
            "--stop-temp",
            "95",
        ],
    );
    let case = "in32-poisson-r25-out12";
    let ok = format!("llmload_requests_total{{case={case},phase=measured,status=ok}}");
    let done = |s: &Samples| s.get(&ok).copied().unwrap_or(0.0);
    let first = scrape_until(&addr, |s| done(s) >= 1.0);
    let second = scrape_until(&addr, |s| done(s) >= 100.0);
    let last = scrape_until(&addr, |s| s.get("llmload_run_finished{}") == Some(&1.0));
    never_decrease(&first, &second);
    never_decrease(&second, &last);
    assert!(done(&first) < done(&second) && done(&second) < done(&last));
    assert_eq!(value(&second, "llmload_case_requests_planned{}"), 250.0);
    assert!(
        second.contains_key("llmload_case_eta_seconds{}"),
        "an ETA while it runs"
    );
    assert_eq!(
        value(
            &second,
            &format!("llmload_case_info{{case={case},repeat=,stage=}}")
        ),
        1.0
    );
    // The guard's readings and threshold, from the replayed GPU.
    assert_eq!(value(&last, "llmload_gpu_temperature_celsius{gpu=0}"), 71.5);
    assert_eq!(
        value(&last, "llmload_gpu_temperature_margin_celsius{gpu=0}"),
        12.0
    );
    assert_eq!(value(&last, "llmload_gpu_power_watts{gpu=0}"), 250.0);
    assert_eq!(
        value(&last, "llmload_gpu_throttled{gpu=0,reason=sw_power_cap}"),
        1.0
    );
    assert_eq!(
        value(
            &last,
            "llmload_gpu_throttled{gpu=0,reason=sw_thermal_slowdown}"
        ),
        0.0
    );
    assert_eq!(
        value(&last, "llmload_guard_stop_temperature_celsius{}"),
        95.0
    );
    assert_eq!(value(&last, "llmload_guard_stopped{rule=temperature}"), 0.0);
    let verdicts: f64 = ["ok", "client_may_have_distorted", "too_short"]
        .iter()
        .map(|v| value(&last, &format!("llmload_client_check{{verdict={v}}}")))
        .sum();
    assert_eq!(verdicts, 1.0, "one verdict at a time");
    assert_eq!(value(&last, "llmload_requests_in_flight{}"), 0.0);
    assert_eq!(value(&last, "llmload_requests_backlog{}"), 0.0);

    // Every family served is one docs/outputs.md lists.
    let outputs = include_str!("../../../../docs/outputs.md");
    for series in last.keys() {
        let name = &series[..series.find('{').expect("labels")];
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        assert!(
            outputs.contains(&format!("`{family}`")),
            "{family} is not in docs/outputs.md"
        );
    }
    let dir = common::attempt_dir(tmp.path(), "live");
    equal_to_the_records(&last, &json_lines(&dir.join("requests.jsonl")), 240);
    // The linger ends at a stop signal, and the run keeps its exit code.
    assert_eq!(stop(child), Some(0));
}

#[test]
fn a_sweep_serves_each_load_as_it_decides_it_and_ends_equal_to_its_records() {
    let sim = Simulator::start(&["--slots", "8"]);
    let tmp = tempfile::tempdir().expect("temp dir");
    let extra = [
        "--concurrency",
        "1,2,4",
        "--rounds",
        "2",
        "--input-tokens",
        "32",
        "--output-tokens",
        "8",
        "--telemetry",
        "off",
    ];
    let (child, addr) = start("sweep", &sim, tmp.path(), &extra);
    let last = scrape_until(&addr, |s| s.get("llmload_run_finished{}") == Some(&1.0));
    assert_eq!(value(&last, "llmload_cases_planned{}"), 3.0);
    assert_eq!(value(&last, "llmload_case_number{}"), 3.0);
    let dir = common::attempt_dir(tmp.path(), "live");
    equal_to_the_records(&last, &json_lines(&dir.join("requests.jsonl")), 14);
    assert_eq!(stop(child), Some(0));
}

/// The final counters against the records, exactly: requests by case, phase and status, errors
/// by kind, tokens by phase, and every histogram's count; at least `least_ok` measured `ok`.
fn equal_to_the_records(last: &Samples, records: &[Value], least_ok: usize) {
    let mut expected: BTreeMap<String, f64> = BTreeMap::new();
    let mut add = |series: String, n: f64| *expected.entry(series).or_default() += n;
    for r in records {
        let (case, phase, status) = (
            &r["case"].as_str().expect("case"),
            r["phase"].as_str().expect("phase"),
            r["status"].as_str().expect("status"),
        );
        add(
            format!("llmload_requests_total{{case={case},phase={phase},status={status}}}"),
            1.0,
        );
        if let Some(kind) = r["error_kind"].as_str() {
            add(
                format!("llmload_request_errors_total{{case={case},kind={kind},phase={phase}}}"),
                1.0,
            );
        }
        let prompt = r["input_tokens"].as_f64().expect("input_tokens");
        add(
            format!("llmload_prompt_tokens_total{{case={case},phase={phase}}}"),
            prompt,
        );
        let output = r["output_tokens"]
            .as_f64()
            .unwrap_or_else(|| r["streamed_tokens"].as_f64().expect("streamed"));
        add(
            format!("llmload_output_tokens_total{{case={case},phase={phase}}}"),
            output,
        );
        if phase != "measured" {
            continue;
        }
        if r["scheduled_s"].is_number() {
            add(
                format!("llmload_send_lag_seconds_count{{case={case}}}"),
                1.0,
            );
        }
        if status == "ok" {
            add(
                format!("llmload_time_to_first_token_seconds_count{{case={case}}}"),
                1.0,
            );
            add(
                format!("llmload_complete_response_seconds_count{{case={case}}}"),
                1.0,
            );
            let events = r["event_ms"].as_array().expect("event_ms").len();
            let tokens: Vec<u64> = r["event_tokens"].as_array().map_or_else(Vec::new, |t| {
                t.iter().map(|n| n.as_u64().expect("tokens")).collect()
            });
            let gaps: u64 = (1..events)
                .map(|i| tokens.get(i).copied().unwrap_or(1).max(1))
                .sum();
            add(
                format!("llmload_inter_token_latency_seconds_count{{case={case}}}"),
                gaps as f64,
            );
        }
    }
    assert!(expected.len() >= 8, "{expected:#?}");
    for (series, n) in &expected {
        assert_eq!(value(last, series), *n, "{series}");
    }
    // No counted request that the records lack: every non-zero requests_total is expected.
    for (series, v) in last
        .iter()
        .filter(|(s, _)| s.starts_with("llmload_requests_total"))
    {
        assert!(
            *v == 0.0 || expected.contains_key(series),
            "{series} = {v}, not in the records"
        );
    }
    let measured_ok = records
        .iter()
        .filter(|r| r["phase"] == "measured" && r["status"] == "ok")
        .count();
    assert!(
        measured_ok >= least_ok,
        "{measured_ok} ok, fewer than {least_ok}"
    );
}

/// `--quiet` keeps stderr to errors, but a port the system chose is still told: nothing else
/// would say where `/metrics` is.
#[test]
fn a_quiet_run_still_tells_the_port_the_system_chose() {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let small = [
        "--quiet",
        "--telemetry",
        "off",
        "--input-tokens",
        "16",
        "--output-tokens",
        "4",
        "--concurrency",
        "1",
        "--rounds",
        "1",
        "--warmup",
        "0",
    ];
    let (child, addr) = start("run", &sim, out.path(), &small);
    let port: u16 = addr
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .expect("a port");
    assert_ne!(port, 0, "{addr}");
    let text = scrape(&addr, false);
    assert!(text.contains("llmload_requests_total"), "{text}");
    // Stopped in its run or in its linger: either way, by the signal and nothing else.
    assert!(matches!(stop(child), Some(0 | 4)));
}
