//! `llmload capacity` against the 8-slot simulator, where the boundary is known: with a TTFT
//! p90 bound midway between the p90 measured at 8 and at 9 requests in flight, the search
//! answers max passing 8, first failing 9; with think time it answers in users, with Little's
//! law beside them. Every assertion is on a load, a verdict or a structure, never a duration.
#![expect(clippy::expect_used, reason = "tests fail loudly on a broken fixture")]

use crate::common;

use common::{attempt_dir, json, llmload, run_against, Simulator};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// 64-token prompts, 64 output tokens: about 0.4 s a response on `cpu-tiny`. A ninth request
/// in flight on eight slots waits for one to free (about an eighth of a response), while the
/// first eight only prefill: the longer the answers, the wider that gap against the scheduling
/// noise of a busy machine, which adds to every TTFT alike.
const WORKLOAD: [&str; 4] = ["--input-tokens", "64", "--output-tokens", "64"];

/// `cpu-tiny` with 8 slots.
fn eight_slots() -> Simulator {
    let profile = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../llmload-sim/profiles/cpu-tiny.toml"
    );
    Simulator::start(&["--profile", profile, "--slots", "8"])
}

/// `llmload capacity --url URL --out OUT --name NAME WORKLOAD EXTRA…` (`--telemetry off` unless
/// EXTRA sets it): the exit code and the `capacity` object of its summary (the same as its
/// `--json`, checked).
fn capacity(url: &str, out: &Path, name: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec![
        "capacity",
        "--url",
        url,
        "--out",
        out.to_str().expect("UTF-8 path"),
        "--name",
        name,
        "--json",
        "-q",
    ];
    if !extra.contains(&"--telemetry") {
        args.extend(["--telemetry", "off"]);
    }
    args.extend_from_slice(&WORKLOAD);
    args.extend_from_slice(extra);
    let run = llmload(&args);
    let printed: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("--json prints the answer ({e}): {}", run.stdout));
    let summary = json(&attempt_dir(out, name).join("summary.json"));
    assert_eq!(
        summary["capacity"], printed,
        "summary.json's capacity is --json's"
    );
    (run.code, printed)
}

/// The p90 TTFT, ms, measured closed-continuous at `concurrency` over 400 requests.
fn p90_at(url: &str, out: &Path, concurrency: &str) -> f64 {
    let mut args = vec![
        "--arrival",
        "closed-continuous",
        "--concurrency",
        concurrency,
        "--requests",
        "400",
        "-q",
    ];
    args.extend_from_slice(&WORKLOAD);
    let (run, dir) = run_against(out, &format!("p90-{concurrency}"), url, &args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    json(&dir.join("summary.json"))["cases"][0]["ttft_ms"]["p90"]
        .as_f64()
        .expect("a p90 TTFT")
}

/// The ids of an attempt's cases, in the order run.
fn case_ids(folder: &Path) -> Vec<String> {
    json(&folder.join("summary.json"))["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn a_bound_between_eight_and_nine_in_flight_is_answered_eight_and_nine() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = eight_slots();
    let at_eight = p90_at(&sim.url, dir.path(), "8");
    let at_nine = p90_at(&sim.url, dir.path(), "9");
    assert!(
        at_nine > at_eight,
        "a ninth request waits: {at_eight} {at_nine}"
    );
    let bound = format!("ttft_p90<{:.1}ms", f64::midpoint(at_eight, at_nine));
    // From 4 in flight: 1 and 2 would only add the slowest loads to measure.
    let (code, answer) = capacity(
        &sim.url,
        dir.path(),
        "search",
        &["--slo", &bound, "--start", "4"],
    );
    assert_eq!(code, 0, "decided: {answer}");
    assert_eq!(answer["unit"], "concurrency");
    assert_eq!(answer["decided"], true);
    assert_eq!(answer["max_passing"]["load"], 8.0, "{answer}");
    assert_eq!(answer["first_failing"]["load"], 9.0, "{answer}");
    let passing = &answer["max_passing"]["verdicts"][0];
    assert_eq!(passing["verdict"], "meets");
    assert!(passing["low"].as_f64().expect("low") > 0.5, "{passing}");
    let failing = &answer["first_failing"]["verdicts"][0];
    assert_eq!(failing["verdict"], "fails");
    assert!(failing["high"].as_f64().expect("high") < 0.5, "{failing}");
    // Doubling to the first failure, then log bisection: 4, 8, 16, 11, 9.
    let loads: Vec<f64> = answer["probes"]
        .as_array()
        .expect("probes")
        .iter()
        .map(|p| p["load"].as_f64().expect("load"))
        .collect();
    assert_eq!(loads, [4.0, 8.0, 9.0, 11.0, 16.0]);
    let line = answer["answer"].as_str().expect("the answer line");
    assert!(
        line.starts_with("Answer: 8 concurrent generations meet TTFT p90 <")
            && line.contains("; 9 do not"),
        "{line}"
    );
    assert!(answer["continue_with"].is_null());
    // Decided, both ends were measured again side by side: 7 blocks each, alternating, the
    // failing load's first, after the search's blocks.
    for end in ["max_passing", "first_failing"] {
        assert_eq!(answer[end]["remeasured"]["blocks"], 7, "{answer}");
    }
    assert!(line.contains("re-measured side by side, 8 "), "{line}");
    let ids = case_ids(&attempt_dir(dir.path(), "search"));
    let again = &ids[ids.len() - 14..];
    for (i, id) in again.iter().enumerate() {
        let (load, block) = (if i % 2 == 0 { 9 } else { 8 }, i / 2 + 1);
        assert!(
            id.ends_with(&format!("-cc{load}-out64-r{block}")),
            "{ids:?}"
        );
    }
    assert!(
        ids[..ids.len() - 14].iter().all(|id| id.contains("-b")),
        "{ids:?}"
    );
    // The same search again, from this attempt: every block reused, nothing sent.
    let folder = attempt_dir(dir.path(), "search");
    let resume = folder.to_str().expect("UTF-8 path");
    let (code, again) = capacity(
        &sim.url,
        dir.path(),
        "again",
        &["--slo", &bound, "--start", "4", "--resume", resume],
    );
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["max_passing"]["load"], 8.0, "{again}");
    assert_eq!(again["first_failing"]["load"], 9.0, "{again}");
    assert_eq!(
        again["max_passing"]["reused_blocks"],
        again["max_passing"]["blocks"]
    );
    let summary = json(&attempt_dir(dir.path(), "again").join("summary.json"));
    assert_eq!(summary["cases"].as_array().map(Vec::len), Some(0));
}

#[test]
fn with_think_time_the_answer_is_in_users_with_littles_law_beside_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = eight_slots();
    // Eight users thinking 2 s between the two turns of their chats, in blocks of 3 s of
    // sessions: far from the slots' limit, so it meets a loose bound at the largest load allowed.
    let (code, answer) = capacity(
        &sim.url,
        dir.path(),
        "users",
        &[
            "--slo",
            "ttft_p90<2s",
            "--think-time",
            "2s",
            "--turns",
            "2",
            "--duration",
            "3s",
            "--start",
            "8",
            "--max-load",
            "8",
            "--confidence",
            "0.8",
            "--gpu-cost-per-hour",
            "2",
        ],
    );
    assert_eq!(code, 0, "decided: {answer}");
    assert_eq!(answer["unit"], "users", "{answer}");
    assert!(answer["first_failing"].is_null(), "{answer}");
    let passing = &answer["max_passing"];
    assert_eq!(passing["users"].as_f64(), Some(8.0), "{answer}");
    assert_eq!(passing["verdict"], "meets");
    // Five blocks decide a unanimous verdict at 80 %.
    assert_eq!(passing["blocks"].as_u64(), Some(5));
    // Little's law over what was measured: requests/s × (think per request + response time),
    // the think per request half a turn's for two-turn sessions.
    let little = passing["users_littles_law"].as_f64().expect("Little's law");
    let rate = passing["rate_rps"].as_f64().expect("rate");
    let response_s = passing["response_ms"].as_f64().expect("response") / 1e3;
    assert!((little - rate * (1.0 + response_s)).abs() < 1e-6 * little.max(1.0));
    // Users who cycle through sessions for the whole block: Little's law finds about as many.
    assert!(
        (4.0..=12.0).contains(&little),
        "{little} users by Little's law"
    );
    // The requests in flight are a small share of the users: they mostly think.
    assert!(
        passing["concurrency"].as_f64().expect("in flight") < 4.0,
        "{passing}"
    );
    assert!(
        passing["cost_per_million_output_tokens"]
            .as_f64()
            .expect("cost")
            > 0.0
    );
    let line = answer["answer"].as_str().expect("the answer line");
    assert!(
        line.starts_with("Answer: about 8 users (thinking ~2 s"),
        "{line}"
    );
}

#[test]
fn a_spent_budget_leaves_the_command_that_goes_on_and_it_reuses_the_blocks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = eight_slots();
    let search = ["--slo", "ttft_p90<1s", "--start", "8", "--max-load", "8"];
    // The budget is spent after the first block: undecided, exit 3.
    let mut first = search.to_vec();
    first.extend(["--budget", "1ms"]);
    let (code, answer) = capacity(&sim.url, dir.path(), "first", &first);
    assert_eq!(code, 3, "{answer}");
    assert_eq!(answer["decided"], false);
    assert!(answer["max_passing"].is_null() && answer["first_failing"].is_null());
    assert!(
        answer["stopped_because"]
            .as_str()
            .expect("why")
            .contains("budget"),
        "{answer}"
    );
    let folder = attempt_dir(dir.path(), "first");
    let command = answer["continue_with"].as_str().expect("how to go on");
    assert!(
        command.ends_with(&format!("--resume {}", folder.display())),
        "{command}"
    );
    // Going on: the block measured is reused, the rest measured, and the load decided.
    let mut again = search.to_vec();
    let resume = folder.to_str().expect("UTF-8 path");
    again.extend(["--resume", resume]);
    let (code, answer) = capacity(&sim.url, dir.path(), "again", &again);
    assert_eq!(code, 0, "{answer}");
    let passing = &answer["max_passing"];
    assert_eq!(passing["load"], 8.0, "{answer}");
    assert_eq!(passing["reused_blocks"], 1, "{answer}");
    assert_eq!(passing["blocks"], 7, "{answer}");
    let cases = json(&attempt_dir(dir.path(), "again").join("summary.json"))["cases"]
        .as_array()
        .expect("cases")
        .len();
    assert_eq!(cases, 6, "only the blocks not measured before ran");
}

#[test]
fn an_open_loops_look_is_one_arrival_process_cut_into_consecutive_segments() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = eight_slots();
    // One load, 8 requests/s, blocks of 10 requests: each look is 7 segments after a warmup of
    // one segment's time (1.25 s, 10 arrivals more); the load meets over two looks at least.
    let search = [
        "--slo",
        "ttft_p90<2s",
        "--arrival",
        "poisson",
        "--rate",
        "8",
        "--max-load",
        "8",
        "--requests",
        "10",
    ];
    let (code, answer) = capacity(&sim.url, dir.path(), "open", &search);
    assert_eq!(code, 0, "decided: {answer}");
    assert_eq!(answer["unit"], "rate_rps");
    let passing = &answer["max_passing"];
    assert_eq!(passing["load"], 8.0, "{answer}");
    assert_eq!(passing["blocks"], 14, "{answer}");
    let verdict = &passing["verdicts"][0];
    assert_eq!(verdict["verdict"], "meets", "{verdict}");
    assert!(
        verdict["statistic"]
            .as_str()
            .expect("statistic")
            .contains("batch means over consecutive segments)"),
        "{verdict}"
    );
    assert_eq!(verdict["threshold"], 0.9, "{verdict}");
    // One case a look, each with its warmup arrivals all scheduled before its measured ones.
    let folder = attempt_dir(dir.path(), "open");
    let ids = case_ids(&folder);
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids[0].ends_with("-r8-out64-b1-7"), "{ids:?}");
    assert!(ids[1].ends_with("-r8-out64-b8-14"), "{ids:?}");
    let records: Vec<Value> = std::fs::read_to_string(folder.join("requests.jsonl"))
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect();
    let mut measured_in_all = 0;
    for id in &ids {
        // The loop's arrivals (a single `--warmup` request sent before the loop has no
        // scheduled time).
        let scheduled = |phase: &str| -> Vec<f64> {
            records
                .iter()
                .filter(|r| r["case"] == *id && r["phase"] == phase)
                .filter_map(|r| r["scheduled_s"].as_f64())
                .collect()
        };
        let (warmup, measured) = (scheduled("warmup"), scheduled("measured"));
        assert_eq!(warmup.len() + measured.len(), 80, "{id}: {records:?}");
        assert!(!warmup.is_empty() && !measured.is_empty(), "{id}");
        let last_warmup = warmup.iter().copied().fold(f64::MIN, f64::max);
        assert!(
            measured.iter().all(|&m| m > last_warmup),
            "{id}: {warmup:?} {measured:?}"
        );
        measured_in_all += measured.len();
    }
    assert_eq!(verdict["requests"], measured_in_all, "{verdict}");
    // Going on from it: the cases are cut into the same 14 segments, nothing sent.
    let mut again = search.to_vec();
    let resume = folder.to_str().expect("UTF-8 path");
    again.extend(["--resume", resume]);
    let (code, answer) = capacity(&sim.url, dir.path(), "again", &again);
    assert_eq!(code, 0, "{answer}");
    assert_eq!(answer["max_passing"]["reused_blocks"], 14, "{answer}");
    assert_eq!(answer["max_passing"]["verdicts"][0], *verdict);
    let summary = json(&attempt_dir(dir.path(), "again").join("summary.json"));
    assert_eq!(summary["cases"].as_array().map(Vec::len), Some(0));
}

#[test]
fn with_gpu_power_readings_each_load_has_its_output_tokens_per_joule() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = eight_slots();
    // GPU 0 at 200 W and GPU 1 at 100 W, a reading each every 0.25 s for 10 minutes.
    let power = dir.path().join("power.jsonl");
    let mut text = String::new();
    for i in 0..2400u32 {
        for (gpu, watts) in [(0u32, 200.0), (1, 100.0)] {
            let t = f64::from(i) * 0.25;
            let _ = writeln!(
                text,
                "{{\"t_s\":{t},\"gpu\":{gpu},\"temperature_c\":60.0,\"power_w\":{watts}}}"
            );
        }
    }
    std::fs::write(&power, text).expect("write the replay file");
    let telemetry = format!("replay:{}", power.display());
    let search = [
        "--slo",
        "ttft_p90<1s",
        "--start",
        "8",
        "--max-load",
        "8",
        "--telemetry",
        &telemetry,
    ];
    let (code, answer) = capacity(&sim.url, dir.path(), "energy", &search);
    assert_eq!(code, 0, "{answer}");
    // Σ output tokens over Σ joules of the load's blocks, each block's from its own window.
    let summary = json(&attempt_dir(dir.path(), "energy").join("summary.json"));
    let (mut tokens, mut joules) = (0.0, 0.0);
    for case in summary["cases"].as_array().expect("cases") {
        let energy = &case["energy"];
        tokens += energy["output_tokens"]
            .as_f64()
            .expect("tokens in the window");
        joules += energy["total_j"]
            .as_f64()
            .expect("a figure for every block");
    }
    let per_joule = answer["max_passing"]["output_tokens_per_joule"]
        .as_f64()
        .expect("tokens per joule at the answer");
    assert!(
        per_joule > 0.0 && (per_joule - tokens / joules).abs() < 1e-9 * per_joule,
        "{per_joule} against {tokens} / {joules}"
    );
    let report = std::fs::read_to_string(attempt_dir(dir.path(), "energy").join("report.md"))
        .expect("report.md");
    assert!(
        report.contains(&format!("Energy: {per_joule:.2} output tokens per joule")),
        "{report}"
    );
}
