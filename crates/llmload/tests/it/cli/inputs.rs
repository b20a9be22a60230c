//! Inputs and outputs at the edges: a stdout that is gone or full, the URL forms `OpenAI`'s
//! clients use, absurd values, a model the server does not list, and files that never end.

use super::*;

/// Runs llmload with stdout sent to `stdout`; returns the exit code and stderr.
fn with_stdout(args: &[&str], stdout: std::process::Stdio) -> (i32, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_llmload"))
        .args(args)
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run llmload");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code().unwrap_or(-1), stderr)
}

/// A stdout whose reader has gone before anything is written (`llmload … | true`).
fn gone_reader() -> std::process::Stdio {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socket pair");
    drop(ours);
    std::process::Stdio::from(std::os::fd::OwnedFd::from(theirs))
}

/// A stdout on a full disk (`> /dev/full`).
fn full_disk() -> std::process::Stdio {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    std::process::Stdio::from(file)
}

#[test]
fn a_gone_or_full_stdout_keeps_the_exit_code_and_never_panics() {
    let _serial = common::SERIAL
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let sim = common::Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (run, dir) = small_run(&sim, &out.path().join("first"), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = dir.to_str().expect("UTF-8");
    let commands: [&[&str]; 4] = [
        &["report", dir],
        &["report", dir, "--json"],
        &["compare", dir, dir],
        &["compare", dir, dir, "--json"],
    ];
    for args in commands {
        let (code, stderr) = with_stdout(args, gone_reader());
        assert_eq!((code, stderr.as_str()), (0, ""), "{args:?} | true");
        let (code, stderr) = with_stdout(args, full_disk());
        assert_eq!(code, 1, "{args:?} > /dev/full: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("error: cannot write to stdout: "),
            "{stderr}"
        );
    }
    // A run whose reader has gone keeps its exit code, and its records.
    let target = out.path().join("piped");
    let (code, stderr) = with_stdout(&small_run_args(&sim.url, &target, &[]), gone_reader());
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let records = common::json_lines(&common::attempt_dir(&target, "cli").join("requests.jsonl"));
    assert_eq!(records.len(), 3, "a warmup and 2 measured requests");
}

#[test]
fn the_api_root_as_openai_clients_take_it_works_and_is_said_once() {
    let _serial = common::SERIAL
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let sim = common::Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let url = format!("{}/v1", sim.url.to_uppercase());
    let run = llmload(&small_run_args(&url, out.path(), &["--api", "completions"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let notes: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("note: --url"))
        .collect();
    assert_eq!(notes.len(), 1, "{}", run.stderr);
    let campaign = common::json(&common::attempt_dir(out.path(), "cli").join("campaign.json"));
    assert_eq!(campaign["target"]["url"], sim.url.as_str(), "{campaign}");
}

#[test]
fn absurd_values_are_one_line_usage_errors_never_a_panic_or_a_hang() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let huge = "500000000000y";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--timeout", huge], "--timeout"),
        (vec!["--setup-timeout", huge], "--setup-timeout"),
        (vec!["--telemetry-interval", huge], "--telemetry-interval"),
        (vec!["--max-duration", huge], "--max-duration"),
        (vec!["--cool-down-timeout", huge], "--cool-down-timeout"),
        (
            vec!["--arrival", "closed-continuous", "--duration", huge],
            "--duration",
        ),
        (
            vec![
                "--arrival",
                "closed-continuous",
                "--duration",
                "1s",
                "--warmup-time",
                huge,
            ],
            "--warmup-time",
        ),
        (vec!["--slo-ttft", huge], "--slo-ttft"),
        (vec!["--cancel-after", huge], "--cancel-after"),
        (vec!["--cancel-after", "0"], "--cancel-after 0"),
        (vec!["--cancel-after", "0ms"], "at least 1ms"),
        (
            vec!["--cancel-after", "soon"],
            "neither a token count nor a time",
        ),
        (
            vec!["--cancel-share", "0.2"],
            "--cancel-share needs --cancel-after",
        ),
        (
            vec!["--cancel-after", "4", "--cancel-share", "1.5"],
            "--cancel-share 1.5",
        ),
        (
            vec!["--cancel-after", "256", "--output-tokens", "64,256"],
            "no request asks for more than 256",
        ),
        (
            vec!["--cancel-after", "4", "--turns", "2"],
            "--cancel-after does not go with --turns",
        ),
        (
            vec!["--turns", "2", "--think-time", "exp:500000000000y"],
            "--think-time",
        ),
        (vec!["--stages", "500000000000y:rate=1"], "--stages"),
        (vec!["--stages", "1s:rate=1e300"], "a rate of at most"),
        (
            vec!["--arrival", "poisson", "--rate", "1e-300"],
            "--rate 1e-300",
        ),
        (
            vec!["--arrival", "gamma", "--rate", "1", "--burstiness", "1e200"],
            "--burstiness",
        ),
        (
            vec![
                "--arrival",
                "gamma",
                "--rate",
                "1",
                "--burstiness",
                "1e-200",
            ],
            "--burstiness",
        ),
        (
            vec![
                "--arrival",
                "closed-continuous",
                "--shard",
                "0/2",
                "--attempt-id",
                "a",
                "--start-at",
                "+500000000000y",
            ],
            "--start-at",
        ),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["run", "--url", &url, "--telemetry", "off"];
        args.extend(extra.iter().copied());
        let run = llmload(&args);
        assert_one_line_error(&run, 2, expected);
    }
    for (extra, expected) in [
        (["--slots", "10000000000"], "slots must be at most"),
        (["--time-scale", "1e-300"], "--time-scale"),
    ] {
        let mut args = vec!["sim", "--port", "0"];
        args.extend(extra);
        assert_one_line_error(&llmload(&args), 2, expected);
    }
}

#[test]
fn a_model_the_server_does_not_list_is_refused_before_anything_is_sent() {
    let _serial = common::SERIAL
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let sim = common::Simulator::start(&["--profile", "cpu-tiny"]);
    let out = tempfile::tempdir().expect("temp dir");
    let run = llmload(&[
        "run",
        "--url",
        &sim.url,
        "--api",
        "completions",
        "--model",
        "no-such-model",
        "--telemetry",
        "off",
        "--out",
        out.path().to_str().expect("UTF-8"),
    ]);
    assert_one_line_error(
        &run,
        1,
        "--model \"no-such-model\": the server lists 1 model(s)",
    );
    assert!(
        common::attempt_so_far(out.path(), "campaign").is_none(),
        "no attempt folder"
    );
}

#[test]
fn every_file_option_is_bounded_by_its_read_not_its_reported_size() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    for (flags, expected) in [
        (
            vec!["--dataset", "/dev/zero"],
            "/dev/zero: more than a dataset's",
        ),
        (
            vec!["--trace", "/dev/zero"],
            "/dev/zero: more than a trace's",
        ),
        (vec!["--ca-cert", "/dev/zero"], "more than"),
        (vec!["--tokenizer", "/dev/zero"], "more than the"),
    ] {
        let mut args = vec!["run", "--url", &url, "--telemetry", "off"];
        args.extend(flags.iter().copied());
        let run = llmload(&args);
        assert_one_line_error(&run, 2, expected);
    }
}

/// Runs llmload with `args`, killed past `limit` (a failure: it hung); its code and stderr.
fn within(args: &[&str], limit: std::time::Duration) -> (i32, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_llmload"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run llmload");
    let started = std::time::Instant::now();
    while child.try_wait().expect("poll").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("llmload {args:?} still ran after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code().unwrap_or(-1), stderr)
}

#[test]
fn every_command_s_input_is_bounded_and_a_fifo_without_a_writer_never_hangs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let attempt = dir.path().join("attempt");
    std::fs::create_dir(&attempt).expect("mkdir");
    let fifo = attempt.join("campaign.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let (attempt, fifo) = (
        attempt.to_str().expect("UTF-8"),
        fifo.to_str().expect("UTF-8"),
    );
    let limit = std::time::Duration::from_secs(40);
    // Another endless device than /dev/zero, for reconcile's other tool's file and compare's
    // thresholds file; a FIFO no one writes to, as an attempt's file and as the other file.
    for (args, says) in [
        (vec!["reconcile", attempt, "/dev/urandom"], "512 MiB"),
        (
            vec!["compare", attempt, attempt, "--thresholds", "/dev/urandom"],
            "512 MiB",
        ),
        (vec!["report", attempt], "no writer"),
        (vec!["reconcile", attempt, fifo], "no writer"),
    ] {
        let (code, stderr) = within(&args, limit);
        assert_ne!(code, 0, "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
