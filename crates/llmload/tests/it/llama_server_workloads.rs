//! The compare gate, the phases of each request and the energy of each case, end to end against
//! a real llama-server (Gemma 3 270M). Cases are tiny, and nothing here compares two measured
//! times: the gate's verdicts come from an attempt set against itself and from a server that
//! refuses every generation (a front on the loopback answers `503` in its place), the phases
//! from the order every response passes its marks in and from the connections a front counted,
//! the energy from arithmetic on a replayed power, and a stream held back by a buffering front
//! from how its tokens arrived.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;
use crate::common::front;

use common::{assert_phases, json, json_lines, llmload, run_against, Invocation, LlamaServer};
use common::{count, measured, SERIAL};
use front::{Front, Mode};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

/// The gate's exit code.
const GATE_FAILED: i32 = 5;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

fn compare(dirs: &[&Path], extra: &[&str]) -> Invocation {
    let mut args = vec!["compare"];
    args.extend(dirs.iter().map(|d| utf8(d)));
    args.extend_from_slice(extra);
    llmload(&args)
}

/// Closed rounds of 32 prompt and 4 output tokens, at each of `concurrency`, 2 rounds each,
/// with `--telemetry SOURCE --telemetry-interval INTERVAL` from `telemetry`.
fn rounds(
    out: &Path,
    name: &str,
    url: &str,
    concurrency: &str,
    telemetry: [&str; 2],
) -> (Invocation, PathBuf) {
    let run = llmload(&[
        "run",
        "--url",
        url,
        "--out",
        utf8(out),
        "--name",
        name,
        "--telemetry",
        telemetry[0],
        "--telemetry-interval",
        telemetry[1],
        "--input-tokens",
        "32",
        "--concurrency",
        concurrency,
        "--output-tokens",
        "4",
        "--rounds",
        "2",
        "--timeout",
        "2m",
        "-q",
    ]);
    (run, common::attempt_dir(out, name))
}

/// Two closed-rounds cases, 1 and 2 concurrent, without telemetry.
fn small_campaign(out: &Path, name: &str, url: &str) -> (Invocation, PathBuf) {
    rounds(out, name, url, "1,2", ["off", "1s"])
}

/// An open loop of `requests` arrivals at each of `rates` (constant gaps), 32 prompt and 4
/// output tokens.
fn open_loop(
    out: &Path,
    name: &str,
    url: &str,
    rates: &str,
    requests: &str,
) -> (Invocation, PathBuf) {
    run_against(
        out,
        name,
        url,
        &[
            "--arrival",
            "constant",
            "--rate",
            rates,
            "--requests",
            requests,
            "--input-tokens",
            "32",
            "--output-tokens",
            "4",
            "--timeout",
            "2m",
            "-q",
        ],
    )
}

/// The gate against llama-server: an attempt set against itself passes every check of every
/// case, with both figures and their n; an attempt in which the server refuses every generation
/// fails, each case named with the metric, both figures and their n (the error rate) or as
/// unfinished (latency and throughput, which NEW never measured).
#[test]
fn the_gate_passes_an_attempt_against_itself_and_fails_one_whose_server_refuses_work() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let (run, base) = small_campaign(out.path(), "base", &server.url);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let refusing = Front::start(&server.url, Mode::Refuse);
    let (run, new) = small_campaign(out.path(), "new", &refusing.url);
    assert_ne!(run.code, 0, "every generation failed: {}", run.stdout);
    // Each case's warmup and measured requests reached the front, and none got through.
    assert_eq!(refusing.generations(), 2 + 2 * 3, "{}", run.stdout);
    assert!(measured(&new).iter().all(|r| r["error_kind"] == "http"));

    let rules = [
        "--fail-if",
        "ttft_p50 > +10%",
        "--fail-if",
        "throughput < -5%",
        "--fail-if",
        "error_rate > +0pp",
    ];
    let same = compare(&[&base, &base], &rules);
    assert_eq!(same.code, 0, "{}\n{}", same.stdout, same.stderr);
    // Two or four responses a case: no interval can tell a change from none, and nothing is
    // called a regression.
    assert!(same.stdout.contains("Gate passed."), "{}", same.stdout);
    // Two rounds of one throughput can be close enough for "no change"; nothing regresses or
    // improves.
    assert!(same.stdout.contains("0 regressed, "), "{}", same.stdout);
    assert!(same.stdout.contains(", 0 improved"), "{}", same.stdout);
    for (id, responses) in [("in32-c1-out4", 2), ("in32-c2-out4", 4)] {
        let row = |rule: &str| {
            same.stdout
                .lines()
                .find(|l| l.starts_with(&format!("| {id} | B | `{rule}` |")))
                .unwrap_or_else(|| panic!("{id} {rule}: {}", same.stdout))
                .to_owned()
        };
        let ttft = row("ttft_p50 > +10%");
        let n = format!("(n = {responses} responses)");
        assert_eq!(ttft.matches(&n).count(), 2, "{ttft}");
        assert!(
            ttft.contains("| +0.0 % | inconclusive: BASE: its p50 rests on"),
            "{ttft}"
        );
        let throughput = row("throughput < -5%");
        assert_eq!(
            throughput.matches("(n = 2 rounds)").count(),
            2,
            "{throughput}"
        );
        let errors = row("error_rate > +0pp");
        let n = format!("(n = {responses} requests)");
        assert_eq!(errors.matches(&n).count(), 2, "{errors}");
        assert_eq!(errors.matches("0.00 % [0.00 %, ").count(), 2, "{errors}");
    }

    let worse = compare(&[&base, &new], &rules);
    assert_eq!(
        worse.code, GATE_FAILED,
        "{}\n{}",
        worse.stdout, worse.stderr
    );
    let text = &worse.stdout;
    assert!(text.contains("Gate FAILED: 6 of 6 checks:"), "{text}");
    let failures: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(failures.len(), 6, "{text}");
    for (id, requests) in [("in32-c1-out4", 2), ("in32-c2-out4", 4)] {
        let of_case: Vec<&&str> = failures
            .iter()
            .filter(|l| l.starts_with(&format!("- {id} (32 input tokens × ")))
            .collect();
        assert_eq!(of_case.len(), 3, "{text}");
        // Every request failed against none: Wilson's intervals of the two shares do not meet.
        let errors = of_case
            .iter()
            .find(|l| l.contains("error_rate A 0.00 % ["))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            errors.contains(&format!("(n = {requests} requests) → B 100.00 % [")),
            "{errors}"
        );
        assert!(
            errors.ends_with("**REGRESSED** `error_rate > +0pp`"),
            "{errors}"
        );
        for metric in ["ttft_p50", "throughput"] {
            let unfinished = format!(
                "{metric} not compared against B: complete in BASE, incomplete in NEW, breaks"
            );
            assert!(of_case.iter().any(|l| l.contains(&unfinished)), "{text}");
        }
    }
}

/// Cases that differ only in their open-loop rate are never matched against real records: of
/// rates 1 and 2 requests/s in A and 2 and 3 in B, only the 2 requests/s case is set side by side
/// and gated; the others are listed on their side.
#[test]
fn open_loop_cases_at_other_rates_are_listed_apart_never_matched() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let open = |name: &str, rates: &str| {
        let (run, dir) = open_loop(out.path(), name, &server.url, rates, "2");
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        dir
    };
    let (a, b) = (open("a", "1,2"), open("b", "2,3"));
    let both = compare(&[&a, &b], &["--fail-if", "error_rate > +0pp", "--json"]);
    assert_eq!(both.code, 0, "{}\n{}", both.stdout, both.stderr);
    let value: Value = serde_json::from_str(&both.stdout).expect("JSON");
    let cases = value["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 3, "{value}");
    for case in cases {
        let rate = case["load"]["rate_rps"].as_str().expect("a rate");
        let statuses: Vec<&str> = case["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .map(|a| a["status"].as_str().expect("status"))
            .collect();
        let expected = match rate {
            "1" => ["complete", "absent"],
            "2" => ["complete", "complete"],
            "3" => ["absent", "complete"],
            _ => panic!("a rate neither attempt ran: {case}"),
        };
        assert_eq!(statuses, expected, "{case}");
    }
    let checks = value["gate"]["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), 1, "only the shared case is gated: {value}");
    assert_eq!(checks[0]["case"], "in32-constant-r2-out4");
    assert_eq!(checks[0]["base"]["n"], 2);

    let text = compare(&[&a, &b], &[]).stdout;
    assert!(
        text.contains("Only in A: 32 input tokens × 4 output tokens (constant at 1 requests/s"),
        "{text}"
    );
    assert!(
        text.contains("Only in B: 32 input tokens × 4 output tokens (constant at 3 requests/s"),
        "{text}"
    );
}

/// Whether a record's request went out once (no note of a resend on a new connection).
fn sent_once(record: &Value) -> bool {
    record["notes"].as_array().is_none_or(|notes| {
        notes
            .iter()
            .all(|n| !n.as_str().is_some_and(|n| n.starts_with("sent twice")))
    })
}

/// Closed rounds against llama-server, each request launched the moment the last ended (at
/// concurrency 1 right after the warmup): the connection a request just ended on is closed by
/// the server, and the next request must not go on it. llmload knows llama-server from its
/// `/props` and keeps none of its connections, so every request opens a connection of its own
/// (the front counts one per record) and none is ever sent twice (a kept connection taken before
/// the server's close arrived had been written on, then sent again).
#[test]
fn back_to_back_rounds_never_write_on_a_connection_llama_server_closed() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let front = Front::start(&server.url, Mode::Pass);
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = rounds(out.path(), "back-to-back", &front.url, "1,2", ["off", "1s"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(
        records.len(),
        3 + 5,
        "a warmup and 2 rounds of 1, a warmup and 2 rounds of 2: {records:?}"
    );
    let fresh = records.iter().filter(|r| !assert_phases(r, false)).count();
    assert_eq!(fresh, records.len(), "none reused: {records:?}");
    assert_eq!(fresh, front.generations(), "{records:?}");
    let twice = records.iter().filter(|r| !sent_once(r)).count();
    assert_eq!(twice, 0, "{twice} sent twice: {records:?}");
}

/// Every request of an open loop against llama-server says where its time went: the marks in
/// order, a new connection's setup between the arrival and the send (so never inside TTFT,
/// which counts from the send), `reused` exactly for the requests that went on a connection the
/// front had already seen; the case's distributions have one sample per response.
#[test]
fn each_llama_server_request_says_where_its_time_went() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let front = Front::start(&server.url, Mode::Pass);
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = open_loop(out.path(), "phases", &front.url, "2", "4");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let records = json_lines(&dir.join("requests.jsonl"));
    assert_eq!(records.len(), 5, "a warmup and 4 measured: {records:?}");
    let fresh = records.iter().filter(|r| !assert_phases(r, false)).count();
    // A request on a new connection is one the front counted; one on a kept-alive connection
    // opened none. llama-server closes a connection after each stream: the client sees the
    // close before it reuses the connection, so every request opens its own (its connect time
    // present) and none is sent twice.
    assert_eq!(fresh, front.generations(), "{records:?}");
    assert_eq!(fresh, records.len(), "none reused: {records:?}");
    assert!(
        records.iter().all(sent_once),
        "no request sent twice: {records:?}"
    );
    for r in measured(&dir) {
        let at = |v: &Value| v.as_f64().unwrap_or_else(|| panic!("a number: {r}"));
        let (scheduled, sent) = (at(&r["scheduled_s"]), at(&r["sent_s"]));
        // A kept-alive connection has no setup.
        let setup_ms = r["phases"]["connect_ms"].as_f64().unwrap_or(0.0);
        assert!(
            (sent - scheduled) * 1e3 + 1e-3 >= setup_ms,
            "the setup lies between the arrival and the send: {r}"
        );
        let first_token = at(&r["first_token_s"]);
        assert!(
            ((first_token - sent) * 1e3 - at(&r["ttft_ms"])).abs() < 1e-3,
            "TTFT counts from the send: {r}"
        );
    }

    let case = &json(&dir.join("summary.json"))["cases"][0];
    let phases = &case["phases"];
    let responses = count(&phases["responses"]);
    assert_eq!(responses, 4, "{phases}");
    let measured_fresh = measured(&dir)
        .iter()
        .filter(|r| r["phases"]["reused"] == false)
        .count() as u64;
    assert_eq!(
        count(&phases["new_connections"]),
        measured_fresh,
        "{phases}"
    );
    assert_eq!(
        count(&phases["reused_connections"]),
        responses - measured_fresh,
        "{phases}"
    );
    if measured_fresh > 0 {
        assert_eq!(
            count(&phases["connect_ms"]["n"]),
            measured_fresh,
            "{phases}"
        );
    }
    assert!(phases.get("tls_ms").is_none(), "{phases}");
    let mut medians = Vec::new();
    for mark in ["write_ms", "head_ms", "first_event_ms", "last_token_ms"] {
        assert_eq!(count(&phases[mark]["n"]), responses, "{mark}: {phases}");
        medians.push(phases[mark]["median"].as_f64().expect("a median"));
    }
    assert_eq!(count(&case["ttft_ms"]["n"]), responses);
    // Each response passes head ≤ first event ≤ first token ≤ last token, so their medians do.
    let ttft = case["ttft_ms"]["median"].as_f64().expect("TTFT");
    let ordered = [medians[1], medians[2], ttft, medians[3]];
    assert!(
        ordered.windows(2).all(|w| w[0] <= w[1]),
        "{ordered:?}: {phases}"
    );
}

/// A replay file of GPU 0 at 200 W and GPU 1 at 100 W, a reading each every `step` s from 0 s
/// to `until` s.
fn constant_power(dir: &Path, step: f64, until: f64) -> String {
    let path = dir.join(format!("power-{step}.jsonl"));
    let mut text = String::new();
    let mut i = 0u32;
    while f64::from(i) * step <= until {
        let t = f64::from(i) * step;
        for (gpu, power_w) in [(0u32, 200.0), (1, 100.0)] {
            let line = json!({"t_s": t, "gpu": gpu, "temperature_c": 60.0, "power_w": power_w});
            let _ = writeln!(text, "{line}");
        }
        i += 1;
    }
    std::fs::write(&path, text).expect("write the replay file");
    format!("replay:{}", path.display())
}

fn energy_run(out: &Path, name: &str, url: &str, telemetry: &str, interval: &str) -> Value {
    let (run, dir) = rounds(out, name, url, "2", [telemetry, interval]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    json(&dir.join("summary.json"))
}

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// A llama-server run with replayed power readings gives its case an energy figure from the
/// readings around its rounds: 300 W × the rounds' spans, the readings it rests on, and output
/// tokens per joule that are the case's output tokens over those joules. Readings 1.05 s apart,
/// against a 0.5 s interval, are too sparse for a figure, and the case says why.
#[test]
#[expect(
    clippy::float_cmp,
    reason = "the summary's own fields, combined as it combines them, give the same bits"
)]
fn a_llama_server_case_has_the_energy_of_its_rounds_or_says_why_not() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let out = tempfile::tempdir().expect("temp dir");
    let dense = constant_power(out.path(), 0.1, 900.0);
    let summary = energy_run(out.path(), "dense", &server.url, &dense, "1s");
    let case = &summary["cases"][0];
    let e = &case["energy"];
    assert!(e["unavailable"].is_null(), "{e}");
    let rounds = case["rounds"].as_array().expect("rounds");
    let spans: f64 = rounds.iter().map(|r| number(&r["duration_s"])).sum();
    let window = number(&e["window_s"]);
    assert!(
        (window - spans).abs() <= 1e-9 * spans,
        "{window} vs {spans}"
    );
    let tokens: u64 = rounds.iter().map(|r| count(&r["output_tokens"])).sum();
    assert_eq!(tokens, 2 * 2 * 4, "2 rounds × 2 responses × 4 tokens");
    assert_eq!(count(&e["output_tokens"]), tokens, "{e}");
    let total = number(&e["total_j"]);
    assert!(
        (total - 300.0 * window).abs() <= 1e-6 * total,
        "{total} J over {window} s"
    );
    let gpus = e["gpus"].as_array().expect("GPUs");
    let readings: Vec<u64> = gpus.iter().map(|g| count(&g["readings"])).collect();
    assert!(readings.iter().all(|&n| n >= 2), "{e}");
    let sum: f64 = gpus.iter().map(|g| number(&g["joules"])).sum();
    assert_eq!(sum, total, "{e}");
    #[expect(clippy::cast_precision_loss, reason = "a few tokens")]
    let per_joule = tokens as f64 / total;
    assert_eq!(number(&e["output_tokens_per_joule"]), per_joule, "{e}");
    assert_eq!(number(&e["mean_power_w"]), total / window, "{e}");
    let method = format!(
        "trapezoid over {} readings of 2 GPUs, edges interpolated",
        readings.iter().sum::<u64>()
    );
    assert_eq!(e["method"], method.as_str(), "{e}");

    // A reading every 30 s: more than 2 × the 0.5 s interval between any two, and more than a
    // tenth of the case's window even on a machine so busy that the server decodes at 2 s a
    // token (a window of 20–30 s, whose tenth 1.05 s readings did not exceed). A run that ends
    // before the second reading has none after its window: said so too.
    let sparse = constant_power(out.path(), 30.0, 900.0);
    let summary = energy_run(out.path(), "sparse", &server.url, &sparse, "0.5s");
    let e = &summary["cases"][0]["energy"];
    assert!(
        e["total_j"].is_null() && e["output_tokens_per_joule"].is_null(),
        "{e}"
    );
    assert!(e["gpus"].as_array().is_none_or(Vec::is_empty), "{e}");
    let why = e["unavailable"].as_str().expect("a reason");
    assert!(
        why.starts_with("GPU 0: a gap of 30.000 s between readings at ")
            || why.starts_with("GPU 0: no reading at or after the window's end"),
        "{why}"
    );
}

/// Behind a front that holds llama-server's stream and flushes it every second (several tokens'
/// time even on a busy machine), every response is still ok and verified, but its tokens arrive
/// in bursts: the case says so, with no ITL, TPOT or decode rate; the same case straight to the
/// server has none of it. 128 tokens take longer than two flushes on an idle machine too (64
/// took 2.0 s there, all of them in one flush of a 2 s front).
#[test]
fn a_stream_flushed_by_a_buffering_front_is_told_from_one_straight_from_the_server() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let server = LlamaServer::start();
    let front = Front::start(&server.url, Mode::Buffer(std::time::Duration::from_secs(1)));
    let out = tempfile::tempdir().expect("temp dir");
    let case_of = |name: &str, url: &str| {
        let run = llmload(&[
            "run",
            "--url",
            url,
            "--out",
            utf8(out.path()),
            "--name",
            name,
            "--telemetry",
            "off",
            "--input-tokens",
            "16",
            "--output-tokens",
            "128",
            "--concurrency",
            "2",
            "--rounds",
            "1",
            "--warmup",
            "0",
            // 128 tokens a request: on a machine so loaded that the server decodes a token in 2 s,
            // they take over 4 minutes; the deadline is there only to end a hang.
            "--timeout",
            "10m",
        ]);
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        let summary = json(&common::attempt_dir(out.path(), name).join("summary.json"));
        (run, summary["cases"][0].clone())
    };
    let (_, straight) = case_of("straight", &server.url);
    assert!(straight["bursts"].is_null(), "{straight}");
    assert_eq!(straight["itl_ms"]["n"], 2 * 127, "{straight}");
    let (run, held) = case_of("held", &front.url);
    assert_eq!(held["counts"]["ok"], 2, "{held}");
    assert_eq!(held["counts"]["unverified"], 0, "{held}");
    assert_eq!(held["bursts"]["buffered"], 2, "{held}");
    assert_eq!(held["bursts"]["examined"], 2, "{held}");
    for figure in ["itl_ms", "tpot_ms", "decode_rate_tps"] {
        assert!(held[figure].is_null(), "{figure}: {held}");
    }
    assert!(
        held["bursts"]["interval_ms"].is_f64(),
        "bursts apart, not at once: {held}"
    );
    assert!(
        run.stdout
            .contains("2 of 2 responses arrived in a median of"),
        "{}",
        run.stdout
    );
}
