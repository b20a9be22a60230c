//! Bad input and unreachable or wrong targets: one clear line on stderr, a non-zero exit code,
//! never a panic.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;
mod inputs;
mod tables;
mod terminal;

use common::{llmload, Invocation};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::PoisonError;

fn assert_one_line_error(run: &Invocation, code: i32, expected: &str) {
    assert_eq!(
        run.code, code,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    // One error line; clap may add its list of possible values and a pointer to --help.
    let is_hint = |l: &str| {
        l.is_empty()
            || l.starts_with("For more information")
            || l.trim_start().starts_with("[possible values")
    };
    let errors = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error:"))
        .count();
    let other = run
        .stderr
        .lines()
        .filter(|l| !l.starts_with("error:") && !is_hint(l))
        .count();
    assert_eq!((errors, other), (1, 0), "{:?}", run.stderr);
    assert!(
        run.stderr.contains(expected),
        "{:?} lacks {expected:?}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// A port on which nothing listens.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

#[test]
fn unreachable_server_is_one_line_and_exit_1() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let run = llmload(&["run", "--url", &url, "--out", "/nonexistent-never-created"]);
    assert_one_line_error(&run, 1, "cannot reach");
    assert!(
        run.stderr.contains("is the server running"),
        "{}",
        run.stderr
    );
}

#[test]
fn https_to_a_plain_http_server_says_to_try_http() {
    let sim = common::Simulator::start(&[]);
    let tls = sim.url.replacen("http://", "https://", 1);
    let run = llmload(&["run", "--url", &tls, "--out", "/nonexistent-never-created"]);
    assert_one_line_error(&run, 1, &format!("try {}", sim.url));
}

#[test]
fn a_number_that_does_not_parse_is_said_with_its_flag_and_an_example() {
    let run = llmload(&["run", "--rounds", "three"]);
    assert_one_line_error(&run, 2, "a whole number is expected, e.g. --rounds 3");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("campaign.toml");
    std::fs::write(&path, "rounds = \"three\"\n").expect("write");
    let run = llmload(&["run", "--config", path.to_str().expect("UTF-8")]);
    assert_one_line_error(&run, 2, "`rounds` takes a whole number, e.g. `rounds = 3`");
}

#[test]
fn sim_without_a_port_listens_on_a_free_one_and_prints_it() {
    // Two at once: neither asks for a port, each gets its own.
    let (a, b) = (
        common::Simulator::start_bare(),
        common::Simulator::start_bare(),
    );
    assert!(a.url.starts_with("http://127.0.0.1:"), "{}", a.url);
    assert_ne!(a.url, b.url);
    assert!(!a.url.ends_with(":0"), "{}", a.url);
}

#[test]
fn bad_values_are_usage_errors() {
    for (args, expected) in [
        (vec!["run", "--concurrency", "0"], "--concurrency"),
        (vec!["run", "--input-tokens", "abc"], "invalid value"),
        (vec!["run", "--url", "localhost:8080"], "--url"),
        (vec!["run", "--api", "grpc"], "invalid value"),
        (vec!["run", "--timeout", "fast"], "--timeout"),
        (vec!["run", "--config", "/no/such/file.toml"], "cannot read"),
        (vec!["sim", "--port", "0", "--fault", "explode"], "--fault"),
        (
            vec!["sim", "--port", "0", "--profile", "no-such-profile"],
            "--profile",
        ),
        (
            vec!["sim", "--port", "0", "--time-scale", "0"],
            "--time-scale",
        ),
    ] {
        let run = llmload(&args);
        assert_one_line_error(&run, 2, expected);
    }
}

/// A server that answers every request with `200 OK` and an HTML page.
fn html_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut stream) = stream else { continue };
            let mut buffer = [0u8; 8192];
            let _ = stream.read(&mut buffer);
            let body = "<html><body>It works!</body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn a_server_that_is_not_an_llm_api_is_one_line_and_exit_1() {
    let url = html_server();
    let run = llmload(&["run", "--url", &url, "--out", "/nonexistent-never-created"]);
    assert_one_line_error(&run, 1, "cannot tell which API");
    let run = llmload(&[
        "run",
        "--url",
        &url,
        "--api",
        "llamacpp",
        "--out",
        "/nonexistent-never-created",
    ]);
    assert_one_line_error(&run, 1, "tokenize");
}

#[test]
fn run_help_groups_its_flags_under_headings() {
    let short = llmload(&["run", "-h"]);
    assert_eq!(short.code, 0, "{}", short.stderr);
    let headings: Vec<&str> = short
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    for heading in [
        "Target and API:",
        "What to send:",
        "Load shape:",
        "Rounds and repeats:",
        "Sessions:",
        "Guard and telemetry:",
        "Outputs:",
        "Sharding:",
        "Statistics:",
    ] {
        assert!(
            headings.contains(&heading),
            "{heading} missing: {headings:?}"
        );
    }
    // -h gives each flag one line; --help keeps the details.
    let long = llmload(&["run", "--help"]);
    assert!(
        short.stdout.contains("--timeout <DURATION>") && short.stdout.contains("[default: 10m]")
    );
    assert!(
        long.stdout.contains("Setup requests are /health"),
        "{}",
        long.stdout
    );
    assert!(!short.stdout.contains("Setup requests are /health"));
    // The sweep takes run's flags under the same headings, and its own.
    let sweep = llmload(&["sweep", "-h"]);
    assert!(sweep.stdout.contains("Load shape:") && sweep.stdout.contains("--max-load"));
    // --confidence under its own heading, not the one before it (Sharding).
    let statistics = short
        .stdout
        .split("Statistics:")
        .nth(1)
        .expect("Statistics");
    assert!(statistics.contains("--confidence"), "{}", short.stdout);
    let sharding = short.stdout.split("Sharding:").nth(1).expect("Sharding");
    let sharding = sharding.split("Statistics:").next().unwrap_or(sharding);
    assert!(!sharding.contains("--confidence"), "{}", short.stdout);
    // No --url: the built-in simulator, said in run's own help.
    assert!(
        short
            .stdout
            .replace('\n', " ")
            .contains("without --url, against the built-in"),
        "{}",
        short.stdout
    );
}

#[test]
fn reconcile_refuses_what_is_not_another_tool_s_result_in_one_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let other = dir.path().join("other.json");
    std::fs::write(&other, "<html>not a result</html>").expect("write");
    let other_arg = other.to_str().expect("UTF-8");
    let run = llmload(&["reconcile", "/nonexistent-attempt", other_arg]);
    assert_one_line_error(&run, 2, "is not JSON (nor JSON Lines)");
    std::fs::write(&other, r#"{"results": []}"#).expect("write");
    let run = llmload(&["reconcile", "/nonexistent-attempt", other_arg]);
    assert_one_line_error(&run, 2, "not a result reconcile can read");
    std::fs::write(&other, r#"{"benchmarks": []}"#).expect("write");
    let run = llmload(&["reconcile", "/nonexistent-attempt", other_arg]);
    assert_one_line_error(&run, 2, "holds no benchmark");
    std::fs::write(&other, r#"{"mean_ttft_ms": 5.0}"#).expect("write");
    let run = llmload(&["reconcile", "/nonexistent-attempt", other_arg]);
    assert_one_line_error(&run, 1, "nonexistent-attempt");
}

#[test]
fn confidence_is_offered_where_figures_have_intervals_and_nowhere_else() {
    for command in ["run", "sweep", "report", "compare", "merge", "plan"] {
        let help = llmload(&[command, "--help"]);
        assert_eq!(help.code, 0, "{command}: {}", help.stderr);
        assert!(help.stdout.contains("--confidence <LEVEL>"), "{command}");
    }
    let sim = llmload(&["sim", "--help"]);
    assert_eq!(sim.code, 0, "{}", sim.stderr);
    assert!(!sim.stdout.contains("--confidence"), "{}", sim.stdout);
    let refused = llmload(&["sim", "--confidence", "90%"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    let bad = llmload(&["report", "x", "--confidence", "120%"]);
    assert_one_line_error(&bad, 2, "--confidence");
}

#[test]
fn an_unknown_campaign_key_names_its_line_and_the_nearest_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("campaign.toml");
    std::fs::write(&path, "rounds = 2\nconcurency = [2]\n").expect("write");
    let run = llmload(&["run", "--config", path.to_str().expect("UTF-8")]);
    assert_one_line_error(&run, 2, "campaign.toml:2: unknown key `concurency`");
    assert!(
        run.stderr.contains("did you mean `concurrency`?"),
        "{}",
        run.stderr
    );
    // `json` is a flag of the command line, not of the campaign.
    std::fs::write(&path, "json = true\n").expect("write");
    let run = llmload(&["run", "--config", path.to_str().expect("UTF-8")]);
    assert_one_line_error(&run, 2, "unknown key `json`");
}

#[test]
fn campaign_file_values_are_used_and_checked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("campaign.toml");
    std::fs::write(&path, "concurrency = [2]\nrounds = \"three\"\n").expect("write");
    let run = llmload(&["run", "--config", path.to_str().expect("UTF-8")]);
    assert_one_line_error(&run, 2, "rounds");
    // A pathological file (200,000 nested arrays) is one short line too, and so is one too big.
    std::fs::write(&path, format!("rounds = {}", "[".repeat(200_000))).expect("write");
    let run = llmload(&["run", "--config", path.to_str().expect("UTF-8")]);
    assert_one_line_error(&run, 2, "campaign.toml");
    assert!(
        run.stderr.len() < 1_000,
        "{} bytes of error",
        run.stderr.len()
    );
    std::fs::write(&path, " ".repeat(2 << 20)).expect("write");
    let run = llmload(&["run", "--config", path.to_str().expect("UTF-8")]);
    assert_one_line_error(&run, 2, "more than a campaign file's");
    // A device that never ends is refused at the bound, not read until memory runs out.
    let run = llmload(&["run", "--config", "/dev/zero"]);
    assert_one_line_error(&run, 2, "/dev/zero: more than a campaign file's");
}

/// A one-case run against a `cpu-tiny` simulator, with `extra` flags; returns the invocation
/// and the attempt folder.
fn small_run(
    sim: &common::Simulator,
    out: &std::path::Path,
    extra: &[&str],
) -> (Invocation, std::path::PathBuf) {
    let run = llmload(&small_run_args(&sim.url, out, extra));
    let dir = common::attempt_dir(out, "cli");
    (run, dir)
}

/// The flags of a one-case run against `url` (64 prompt tokens, 2 concurrent, 16 output, one
/// round), into `out/cli`, with `extra` flags.
fn small_run_args<'a>(url: &'a str, out: &'a std::path::Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "--url",
        url,
        "--input-tokens",
        "64",
        "--concurrency",
        "2",
        "--output-tokens",
        "16",
        "--rounds",
        "1",
        "--telemetry",
        "off",
        "--out",
        out.to_str().expect("UTF-8 path"),
        "--name",
        "cli",
    ];
    args.extend(extra);
    args
}

#[test]
fn json_prints_the_summary_and_quiet_prints_only_the_table() {
    let _serial = common::SERIAL
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let sim = common::Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = small_run(&sim, &out.path().join("json"), &["--json", "-q"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let printed: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON on stdout");
    assert_eq!(printed, common::json(&dir.join("summary.json")));
    assert_eq!(run.stderr, "", "--quiet: nothing on stderr");

    // -q: the results table alone, aligned (no Markdown, no other line), within the width.
    let quiet = out.path().join("quiet");
    let run = common::llmload_with_env(
        &small_run_args(&sim.url, &quiet, &["-q"]),
        &[("COLUMNS", "80")],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stdout.contains("Target:") && !run.stdout.contains("|---"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("Outcome:"), "{}", run.stdout);
    // 80 columns cannot hold the results' nine columns: the case is shown on its own, each
    // column's name beside its figure.
    let case: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("Input tokens per request: 64"))
        .collect();
    assert_eq!(case.len(), 1, "one case, shown once: {}", run.stdout);
    assert!(
        run.stdout.contains("\n  Concurrent requests: 2\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.lines().all(|l| l.chars().count() <= 80),
        "{}",
        run.stdout
    );
    assert_eq!(run.stderr, "", "--quiet: nothing on stderr");

    // Not quiet, not a terminal: the per-case lines, no progress line and no colour.
    let (run, _) = small_run(&sim, &out.path().join("plain"), &[]);
    assert!(
        run.stderr.contains("case 1/1 in64-c2-out16:"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("records: "), "{}", run.stderr);
    assert!(
        !run.stderr.contains('\x1b') && !run.stderr.contains('\r'),
        "{:?}",
        run.stderr
    );

    let sweep_dir = out.path().join("sweep");
    let mut args = small_sweep(&sim.url, &sweep_dir);
    args.push("--json");
    let sweep = llmload(&args);
    assert_eq!(sweep.code, 0, "{}", sweep.stderr);
    let printed: serde_json::Value = serde_json::from_str(&sweep.stdout).expect("JSON");
    assert_eq!(printed["sweep"]["axis"], "concurrency");
    assert_eq!(
        printed["sweep"]["analysis"]["points"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

/// The flags of a quiet sweep of concurrencies 1 and 2 (one round, 64 tokens in, 16 out) against
/// `url`, writing to `out`.
fn small_sweep<'a>(url: &'a str, out: &'a std::path::Path) -> Vec<&'a str> {
    vec![
        "sweep",
        "--url",
        url,
        "--input-tokens",
        "64",
        "--output-tokens",
        "16",
        "--concurrency",
        "1,2",
        "--rounds",
        "1",
        "--telemetry",
        "off",
        "--out",
        out.to_str().expect("UTF-8 path"),
        "-q",
    ]
}

/// `llmload sweep` without --json: the SIMULATED line, the curve aligned with its n and the
/// small-sample mark.
#[test]
fn the_sweep_prints_its_curve_aligned_with_n_under_the_simulated_line() {
    let _serial = common::SERIAL
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let sim = common::Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let sweep_text = out.path().join("sweep-text");
    let args = small_sweep(&sim.url, &sweep_text);
    let sweep = common::llmload_with_env(&args, &[("COLUMNS", "200")]);
    assert_eq!(sweep.code, 0, "{}", sweep.stderr);
    let text = &sweep.stdout;
    assert!(text.starts_with("SIMULATED target"), "{text}");
    assert!(!text.contains("|---"), "{text}");
    assert!(text.lines().any(|l| l.contains("┆ n ┆")), "{text}");
    // One round of 2: n = 2, far too few for a p99 that promises anything.
    let two = text
        .lines()
        .find(|l| l.starts_with("│ 2 "))
        .unwrap_or_default();
    assert!(
        two.contains("(descriptive)") && two.contains("┆ 2 "),
        "{text}"
    );
}

/// Runs `command` under `script`, so that llmload's stderr is a terminal; returns what the
/// terminal received.
fn on_a_terminal(command: &str, no_color: bool) -> String {
    let mut script = std::process::Command::new("script");
    script.args(["-qec", command, "/dev/null"]);
    if no_color {
        script.env("NO_COLOR", "1");
    } else {
        script.env_remove("NO_COLOR");
    }
    let output = script.output().expect("run script (util-linux)");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn on_a_terminal_a_progress_line_is_drawn_and_cleared_and_no_color_is_honoured() {
    let _serial = common::SERIAL
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let sim = common::Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let command = |name: &str, quiet: &str| {
        format!(
            "{} run --url {} --input-tokens 64 --concurrency 2 --output-tokens 200 --rounds 2 \
             --telemetry off --out {} --name {name} --no-live {quiet}",
            env!("CARGO_BIN_EXE_llmload"),
            sim.url,
            out.path().display()
        )
    };
    let screen = on_a_terminal(&command("color", ""), false);
    // With --no-live, the line is drawn over itself (\r, clear to end of line) and cleared
    // before the case's own line.
    assert!(
        screen.contains("\r\x1b[2K\x1b[1mcase 1/1 in64-c2-out200\x1b[0m"),
        "{screen:?}"
    );
    assert!(screen.contains("requests"), "{screen:?}");
    assert!(
        screen.contains("\r\x1b[2Kcase 1/1 in64-c2-out200: 2/2 rounds"),
        "{screen:?}"
    );

    let screen = on_a_terminal(&command("plain", ""), true);
    assert!(
        screen.contains("\r\x1b[2Kcase 1/1 in64-c2-out200 · "),
        "{screen:?}"
    );
    assert!(
        !screen.contains("\x1b[1m") && !screen.contains("\x1b[2m"),
        "NO_COLOR: {screen:?}"
    );

    let screen = on_a_terminal(&command("quiet", "-q"), false);
    assert!(
        !screen.contains("\x1b[2K"),
        "--quiet draws nothing: {screen:?}"
    );
}

#[test]
fn plan_with_bad_flags_or_no_attempt_is_one_line() {
    let empty = tempfile::tempdir().expect("temp dir");
    let dir = empty.path().to_str().expect("UTF-8 path");
    let plan = |ttft: &str| {
        llmload(&[
            "plan",
            dir,
            "--prompt-tokens",
            "128",
            "--output-tokens",
            "16",
            "--ttft",
            ttft,
        ])
    };
    assert_one_line_error(&plan("fast"), 2, "--ttft");
    assert_one_line_error(&plan("0s"), 2, "--ttft");
    assert_one_line_error(&plan("2s"), 1, "campaign.json");
    let both = llmload(&[
        "plan",
        dir,
        "--prompt-tokens",
        "1",
        "--output-tokens",
        "1",
        "--ttft",
        "1s",
        "--concurrency",
        "2",
        "--rate",
        "1",
    ]);
    assert_one_line_error(&both, 2, "--rate");
    let compare = llmload(&["compare", dir, dir, "--json"]);
    assert_one_line_error(&compare, 1, "campaign.json");
}
