//! The client's self-check end to end: a run made client-bound on purpose (llmload pinned to one
//! core that a busy loop also wants, against the zero-cost simulator) is flagged in summary.json
//! and report.md; a light run against the engine simulator is not.

use crate::common;

use common::{attempt_dir, json, Simulator, SERIAL};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::PoisonError;

/// A busy loop pinned to CPU 0, killed when dropped (and ending by itself after a minute, should
/// the test process die first). `taskset` execs bash, whose loop forks nothing: the child is the
/// loop itself.
struct Hog(Child);

impl Hog {
    #[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
    fn start() -> Hog {
        let child = Command::new("taskset")
            .args(["-c", "0", "bash", "-c"])
            .arg("while [ $SECONDS -lt 60 ]; do :; done")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("taskset starts a busy loop");
        Hog(child)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `llmload run` (pinned to CPU 0 when `pin`) for a couple of seconds of closed-continuous
/// load; returns summary.json's `client_check` and report.md.
#[expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]
fn run(
    url: &str,
    out: &Path,
    name: &str,
    concurrency: &str,
    pin: bool,
) -> (serde_json::Value, String) {
    let binary = env!("CARGO_BIN_EXE_llmload");
    let mut command = if pin {
        let mut c = Command::new("taskset");
        c.args(["-c", "0", binary]);
        c
    } else {
        Command::new(binary)
    };
    let output = command
        .args([
            "run",
            "--url",
            url,
            "--api",
            "completions",
            "--arrival",
            "closed-continuous",
        ])
        .args([
            "--concurrency",
            concurrency,
            "--duration",
            "3s",
            "--input-tokens",
            "32",
        ])
        .args([
            "--output-tokens",
            "128",
            "--telemetry",
            "off",
            "--warmup",
            "1",
            "-q",
        ])
        .args(["--name", name, "--out"])
        .arg(out)
        .output()
        .expect("run llmload");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let dir = attempt_dir(out, name);
    let summary = json(&dir.join("summary.json"));
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    (summary["client_check"].clone(), report)
}

#[test]
fn a_client_bound_run_is_flagged() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let simulator = Simulator::start(&["--schedule", "zero-cost"]);
    let out = tempfile::tempdir().expect("temp dir");
    let hog = Hog::start();
    let (check, report) = run(&simulator.url, out.path(), "bound", "64", true);
    drop(hog);
    assert_eq!(check["verdict"], "client_may_have_distorted", "{check}");
    assert!(check["samples"].as_u64().is_some_and(|n| n >= 4), "{check}");
    let reasons = check["reasons"].as_array().expect("reasons");
    assert!(!reasons.is_empty(), "{check}");
    // Its reads were timed by the kernel, and how late it read them is on record.
    assert!(
        check["read_lag"]["reads"].as_u64().is_some_and(|n| n > 0),
        "{check}"
    );
    assert!(
        report
            .contains("Client self-check: WARNING. The client may have distorted this measurement"),
        "{report}"
    );
}

#[test]
fn a_light_run_is_not_flagged() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let simulator = Simulator::start(&["--profile", "cpu-tiny", "--time-scale", "4"]);
    let out = tempfile::tempdir().expect("temp dir");
    let (check, report) = run(&simulator.url, out.path(), "light", "2", false);
    // The client itself is light: its own CPU bound is not crossed. Whether other work on the
    // machine made it wait is the machine's business, not the client's: on a quiet machine the
    // verdict is "ok"; on a busy one it is flagged for the wait alone, and says so.
    assert!(
        check["cpu_share_max"].as_f64().is_some_and(|s| s < 0.9),
        "{check}"
    );
    let reasons: Vec<&str> = check["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    assert!(
        reasons.iter().all(|r| !r.starts_with("llmload used")),
        "{check}"
    );
    if reasons.is_empty() {
        assert_eq!(check["verdict"], "ok", "{check}");
        assert!(
            report.contains("Client self-check: ok, the client kept up"),
            "{report}"
        );
    } else {
        assert_eq!(check["verdict"], "client_may_have_distorted", "{check}");
        assert!(report.contains("Client self-check: WARNING."), "{report}");
    }
}
