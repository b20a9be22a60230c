//! `llmload ab` end to end against the simulator behind the project's own delaying proxy
//! (`llmload delay-proxy`), on a target whose speed drifts: wandering on a sine, or jumping in
//! every other stretch, the same for both arms. Two identical arms must not regress; a
//! candidate 150 ms slower (a second proxy in front of the drifting one) must. These are
//! classification tests: a designed 150 ms difference against bounds far from it, never a
//! comparison of small measured differences.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{llmload, Invocation, Simulator, SERIAL};
use serde_json::Value;
use std::process::{Child, Command};
use std::sync::PoisonError;

/// The gate's exit code.
const GATE_FAILED: i32 = 5;

/// A `llmload delay-proxy` on a free loopback port, killed when dropped.
struct Proxy {
    child: Child,
    url: String,
}

impl Proxy {
    /// A proxy in front of `upstream` with the schedule `flags`.
    fn start(upstream: &str, flags: &[&str]) -> Proxy {
        let mut args = vec!["delay-proxy", upstream];
        args.extend_from_slice(flags);
        let (child, url) = common::listening(&args, "300");
        Proxy { child, url }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // SIGTERM to `timeout`, which passes it on to the proxy (a SIGKILL would not).
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let _ = self.child.wait();
    }
}

/// `llmload ab ARGS…` is a usage error (exit code 2) of one line that says `said`.
fn assert_refused(flags: &[&str], said: &str) {
    common::assert_command_refused(
        &["ab", "http://127.0.0.1:9", "http://127.0.0.1:9"],
        flags,
        said,
    );
}

/// `llmload ab` of `base` against `candidate`, 24 pairs of one-round blocks, with two rules
/// whose bounds (+25 %, +25 ms) are far from a 150 ms change (over a TTFT of 0–300 ms, within a
/// pair's drift) and allow a null one an inconclusive verdict but no regression; the
/// invocation and its JSON summary.
fn ab(base: &str, candidate: &str, out: &std::path::Path) -> (Invocation, Value) {
    let out = out.to_str().expect("a UTF-8 path");
    let run = llmload(&[
        "ab",
        base,
        candidate,
        "--input-tokens",
        "64",
        "--output-tokens",
        "8",
        "--concurrency",
        "1",
        "--rounds",
        "24",
        "--telemetry",
        "off",
        "--out",
        out,
        "--name",
        "ab",
        "--json",
        "--fail-if",
        "ttft_p50 > +25%",
        "--fail-if",
        "e2e_p50 > +25ms",
    ]);
    let summary = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, summary)
}

/// The verdict of each check.
fn verdicts(summary: &Value) -> Vec<String> {
    summary["ab"]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| c["verdict"].as_str().expect("a verdict").to_owned())
        .collect()
}

/// Identical arms, then a candidate 150 ms slower, behind one drifting proxy (`drift`).
fn identical_and_slower(drift: &[&str]) {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let simulator = Simulator::start(&[]);
    let drifting = Proxy::start(&simulator.url, drift);
    let slower = Proxy::start(&drifting.url, &["--delay", "150ms"]);
    let out = tempfile::tempdir().expect("temp dir");

    let (same, summary) = ab(&drifting.url, &drifting.url, out.path());
    assert_eq!(same.code, 0, "{}", same.stderr);
    let said = verdicts(&summary);
    assert_eq!(said.len(), 2);
    assert!(
        said.iter().all(|v| v == "no-change" || v == "inconclusive"),
        "identical arms: {said:?}"
    );

    let (slow, summary) = ab(&drifting.url, &slower.url, out.path());
    assert_eq!(slow.code, GATE_FAILED, "{}", slow.stderr);
    assert_eq!(verdicts(&summary), ["regressed", "regressed"]);
    let case = &summary["ab"]["cases"][0];
    assert_eq!(case["pairs_run"], 24);
    let ttft = &case["figures"][0];
    assert_eq!(ttft["metric"], "ttft_p50");
    assert!(ttft["b"].as_f64() > ttft["a"].as_f64(), "{ttft}");
}

#[test]
fn a_wandering_target_does_not_fail_identical_arms_and_catches_a_slower_candidate() {
    identical_and_slower(&["--wander", "300ms", "--period", "6s"]);
}

#[test]
fn a_jumping_target_does_not_fail_identical_arms_and_catches_a_slower_candidate() {
    identical_and_slower(&["--jump", "250ms", "--jump-every", "2s"]);
}

#[test]
fn each_arm_is_an_attempt_whose_records_say_their_arm_and_the_order_is_recorded() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let simulator = Simulator::start(&[]);
    let out = tempfile::tempdir().expect("temp dir");
    let (run, summary) = ab(&simulator.url, &simulator.url, out.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dir = common::attempt_dir(out.path(), "ab");
    let order = summary["ab"]["cases"][0]["order"]
        .as_str()
        .expect("the order");
    // 24 pairs in twos: twelve groups of ABBA or BAAB.
    let groups: Vec<&str> = order.split(' ').collect();
    assert_eq!(groups.len(), 12, "{order}");
    assert!(
        groups.iter().all(|g| *g == "ABBA" || *g == "BAAB"),
        "{order}"
    );
    for arm in ["A", "B"] {
        let records = common::json_lines(&dir.join(arm).join("requests.jsonl"));
        assert!(records.iter().all(|r| r["arm"] == arm), "{arm}");
        let measured: Vec<&Value> = records
            .iter()
            .filter(|r| r["phase"] == "measured")
            .collect();
        assert_eq!(measured.len(), 24, "{arm}");
        // One warmup per arm: the first block of each arm warms it, the others do not.
        assert_eq!(records.len(), 25, "{arm}");
        assert!(measured.iter().any(|r| r["case"] == "in64-c1-out8.b24"));
    }
    for file in ["summary.json", "report.md", "report.html", "cases.csv"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("## A/B, interleaved"), "{report}");
    // `llmload report` rebuilds the comparison's views and each arm's from what is on disk.
    for file in ["report.md", "report.html", "cases.csv"] {
        std::fs::remove_file(dir.join(file)).expect(file);
        std::fs::remove_file(dir.join("B").join(file)).expect(file);
    }
    let rebuilt = llmload(&["report", dir.to_str().expect("a UTF-8 path")]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.join("report.md")).expect("report.md"),
        report,
        "the rebuilt report.md is the one the run wrote"
    );
    assert!(dir.join("report.html").is_file() && dir.join("B").join("report.md").is_file());
    // cases.csv: a row per case and figure, both arms and the paired change; each rule's
    // verdict on the row of the figure it names.
    let csv = std::fs::read_to_string(dir.join("cases.csv")).expect("cases.csv");
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert!(
        rows[0].starts_with(&["case", "metric", "a", "b", "change"]),
        "{csv}"
    );
    let figures = summary["ab"]["cases"][0]["figures"]
        .as_array()
        .expect("figures");
    assert_eq!(rows.len(), 1 + figures.len(), "{csv}");
    let ttft = rows
        .iter()
        .find(|r| r[1] == "ttft_p50")
        .expect("a ttft_p50 row");
    assert_eq!(ttft[0], "in64-c1-out8", "{csv}");
    assert!(
        ttft[13].contains("ttft_p50") && !ttft[14].is_empty(),
        "{csv}"
    );
    assert_eq!(ttft[7], "24", "pairs: {csv}");
    // B above A in some pairs and below in others, the rest equal: 24 in all at most.
    let count = |k: usize| ttft[k].parse::<usize>().expect("a count of pairs");
    assert!(count(8) + count(9) <= 24, "{csv}");
    assert_eq!(ttft[11], "sign test over pairs", "{csv}");
}

#[test]
fn ab_refuses_what_it_cannot_interleave() {
    assert_refused(
        &["--url", "http://x"],
        "takes its two URLs as BASE_URL and CANDIDATE_URL",
    );
    assert_refused(&["--block-rounds", "0"], "--block-rounds needs 1 or more");
    assert_refused(
        &["--b-extra-body", "[1]"],
        "--b-extra-body must be a JSON object",
    );
    assert_refused(&["--fail-if", "ttft_p50 >> 1"], "--fail-if 'ttft_p50 >> 1'");
    assert_refused(
        &["--arrival", "poisson", "--rate", "2", "--requests", "20"],
        "a loop bounded by --requests cannot be cut into blocks",
    );
    assert_refused(
        &["--block-time", "10ms"],
        "--block-time needs 100ms or more",
    );
    // The sign test's 95 % interval needs 6 pairs: 5 could decide no rule.
    assert_refused(
        &[
            "--rounds",
            "10",
            "--block-rounds",
            "2",
            "--fail-if",
            "ttft_p50 > +10%",
        ],
        "5 pair(s) of blocks a case cannot hold a 95 % interval, so no rule could be decided: \
         6 pairs are needed (--rounds 12 or more at --block-rounds 2)",
    );
}
