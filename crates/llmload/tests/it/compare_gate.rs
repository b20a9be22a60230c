//! `llmload compare --fail-if`, the regression gate, end to end: two campaigns against the
//! simulator on the same fixed schedule pass it, and one against a simulator made ten times
//! slower to the first token on purpose fails it, naming the case and the metric with both
//! figures and their n. The verdicts classify a designed tenfold difference; no test here
//! compares small differences of measured times.

#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{llmload, run_against, Invocation, Simulator, SERIAL};
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

/// The gate's exit code.
const GATE_FAILED: i32 = 5;

/// Two closed-rounds cases: 2 and 4 concurrent, 4 rounds each (8 and 16 responses: enough for
/// the medians' intervals).
fn campaign(out: &Path, name: &str, url: &str) -> PathBuf {
    let (run, dir) = run_against(
        out,
        name,
        url,
        &[
            "--input-tokens",
            "64",
            "--concurrency",
            "2,4",
            "--output-tokens",
            "8",
            "--rounds",
            "4",
            "-q",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    dir
}

fn compare(dirs: &[&Path], extra: &[&str]) -> Invocation {
    let mut args = vec!["compare"];
    args.extend(dirs.iter().map(|d| d.to_str().expect("UTF-8 path")));
    args.extend_from_slice(extra);
    llmload(&args)
}

#[test]
fn the_gate_passes_an_identical_run_and_fails_one_made_slower_on_purpose() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let out = tempfile::tempdir().expect("temp dir");
    let (a, b) = {
        let sim = Simulator::start(&["--schedule", "fixed:ttft_ms=20,itl_ms=2"]);
        let a = campaign(out.path(), "a", &sim.url);
        (a, campaign(out.path(), "b", &sim.url))
    };
    let slow = {
        let sim = Simulator::start(&["--schedule", "fixed:ttft_ms=200,itl_ms=2"]);
        campaign(out.path(), "slow", &sim.url)
    };
    let rule = ["--fail-if", "ttft_p50 > +100%"];

    let same = compare(&[&a, &b], &rule);
    assert_eq!(same.code, 0, "{}\n{}", same.stdout, same.stderr);
    assert!(same.stdout.contains("Gate passed."), "{}", same.stdout);
    // Identical runs never regress. On a quiet machine both checks are "no change"; on a busy
    // one a side's interval may widen until a check cannot tell (inconclusive), which is an
    // honest answer about the noise, not a failure: the gate still passes.
    assert!(same.stdout.contains("0 regressed, "), "{}", same.stdout);
    assert!(
        [
            "0 inconclusive, 2 no change",
            "1 inconclusive, 1 no change",
            "2 inconclusive, 0 no change"
        ]
        .iter()
        .any(|tally| same.stdout.contains(tally)),
        "{}",
        same.stdout
    );

    let slower = compare(&[&a, &slow], &rule);
    assert_eq!(
        slower.code, GATE_FAILED,
        "{}\n{}",
        slower.stdout, slower.stderr
    );
    let text = &slower.stdout;
    assert!(text.contains("Gate FAILED: 2 of 2 checks"), "{text}");
    let failures: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(failures.len(), 2, "{text}");
    for (line, (id, n)) in failures
        .iter()
        .zip([("in64-c2-out8", 8), ("in64-c4-out8", 16)])
    {
        assert!(line.starts_with(&format!("- {id} (")), "{line}");
        assert!(line.contains("ttft_p50 A "), "{line}");
        let with_n = format!("(n = {n} responses)");
        assert_eq!(
            line.matches(&with_n).count(),
            2,
            "both figures with their n: {line}"
        );
        assert!(line.ends_with("**REGRESSED** `ttft_p50 > +100%`"), "{line}");
    }

    // The same rule from a thresholds file, and the JSON verdict.
    let file = out.path().join("thresholds.toml");
    std::fs::write(
        &file,
        "fail_if = [\"ttft_p50 > +100%\", \"goodput < -5%\"]\n",
    )
    .expect("write");
    let thresholds = ["--thresholds", file.to_str().expect("UTF-8 path"), "--json"];
    let json = compare(&[&a, &slow], &thresholds);
    assert_eq!(json.code, GATE_FAILED, "{}", json.stderr);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    let gate = &value["gate"];
    assert_eq!(gate["passed"], false);
    assert_eq!(gate["checks_total"], 4);
    assert_eq!(gate["checks_failed"], 2);
    assert_eq!(gate["checks_regressed"], 2);
    assert_eq!(gate["checks"][0]["verdict"], "regressed");
    assert!(
        gate["checks"][0]["interval"][0]
            .as_f64()
            .expect("a lower bound")
            > 100.0
    );
    assert_eq!(
        gate["checks_not_compared"], 2,
        "closed rounds have no goodput"
    );

    // A bad rule is a usage error in one line that names it; nothing is compared.
    let bad = compare(&[&a, &b], &["--fail-if", "ttft_p50 > +10 parsecs"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert_eq!(bad.stderr.trim().lines().count(), 1, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("'ttft_p50 > +10 parsecs'"),
        "{}",
        bad.stderr
    );
    assert!(bad.stdout.is_empty(), "{}", bad.stdout);
}

/// One closed-rounds case, 2 concurrent, 2 rounds, as a series of 3 repeats.
fn series(out: &Path, name: &str, url: &str) -> PathBuf {
    let (run, dir) = run_against(
        out,
        name,
        url,
        &[
            "--input-tokens",
            "64",
            "--concurrency",
            "2",
            "--output-tokens",
            "8",
            "--rounds",
            "2",
            "--repeat",
            "3",
            "-q",
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    dir
}

#[test]
fn series_of_repeats_are_gated_on_the_variation_between_their_repeats() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let out = tempfile::tempdir().expect("temp dir");
    let (a, b) = {
        let sim = Simulator::start(&["--schedule", "fixed:ttft_ms=20,itl_ms=2"]);
        let a = series(out.path(), "a", &sim.url);
        (a, series(out.path(), "b", &sim.url))
    };
    let slow = {
        let sim = Simulator::start(&["--schedule", "fixed:ttft_ms=200,itl_ms=2"]);
        series(out.path(), "slow", &sim.url)
    };
    let rules = ["--fail-if", "ttft_p50 > +100%", "--json"];
    let gate = |dirs: &[&Path]| {
        let run = compare(dirs, &rules);
        let value: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
        (run.code, value["gate"]["checks"][0].clone())
    };
    let (code, same) = gate(&[&a, &b]);
    assert_eq!(code, 0, "{same}");
    // Three repeats a side: one repeat slowed by a busy machine widens Welch's interval (two
    // degrees of freedom) past the bound, and the check says it cannot tell. Identical series
    // never regress.
    assert!(
        same["verdict"] == "no-change" || same["verdict"] == "inconclusive",
        "{same}"
    );
    let test = same["test"].as_str().unwrap_or_default();
    assert!(
        test.contains("Welch's t over the repeats' figures (BASE: 3 repeats; NEW: 3 repeats)"),
        "{test}"
    );
    let (code, slower) = gate(&[&a, &slow]);
    assert_eq!(code, GATE_FAILED, "{slower}");
    assert_eq!(slower["verdict"], "regressed", "{slower}");
    assert!(
        slower["interval"][0].as_f64().expect("a lower bound") > 100.0,
        "{slower}"
    );
}
