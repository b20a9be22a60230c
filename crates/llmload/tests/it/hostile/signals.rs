//! Stops by SIGTERM and SIGKILL mid-run, and damaged files, read back.

use super::*;

/// A long continuous campaign against `url` (`llmload run … --duration 5m`), started.
fn long_campaign(url: &str, out: &Path) -> Running {
    Running::start(&[
        "run",
        "--url",
        url,
        "--out",
        utf8(out),
        "--name",
        "long",
        "--telemetry",
        "off",
        "--arrival",
        "closed-continuous",
        "--concurrency",
        "4",
        "--duration",
        "5m",
        "--input-tokens",
        "64",
        "--output-tokens",
        "64",
        "--warmup",
        "0",
        "--setup-timeout",
        "10s",
        "--timeout",
        "30s",
    ])
}

/// The attempt folder of [`long_campaign`], once its records hold `n` requests (within 20 s).
fn wait_for_records(out: &Path, n: usize) -> PathBuf {
    let mut found = None;
    let ready = eventually(Duration::from_secs(20), || {
        let Ok(mut entries) = std::fs::read_dir(out.join("long")) else {
            return false;
        };
        let Some(Ok(entry)) = entries.next() else {
            return false;
        };
        let records = entry.path().join("requests.jsonl");
        let lines = std::fs::read_to_string(records).map_or(0, |t| t.lines().count());
        found = Some(entry.path());
        lines >= n
    });
    assert!(ready, "{n} records within 20 s in {found:?}");
    found.expect("an attempt folder")
}

/// A [`long_campaign`] against a fast simulator, sent SIGTERM once 4 requests are recorded: how
/// it ended, and its attempt folder (in `out`).
fn terminated_campaign(out: &Path) -> (Finished, PathBuf) {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let running = long_campaign(&sim.url, out);
    let dir = wait_for_records(out, 4);
    running.signal("TERM");
    // The campaign would run for minutes: an exit within the wait's guard is the signal's.
    let run = running.wait(Duration::from_secs(25));
    assert!(run.code.is_some(), "SIGTERM ends the run: {}", shown(&run));
    (run, dir)
}

#[test]
fn sigterm_mid_run_stops_it_with_every_view_and_every_record_counted() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (run, dir) = terminated_campaign(tmp.path());
    assert_eq!(run.code, Some(4), "{}", shown(&run));

    let summary = json(&dir.join("summary.json"));
    let outcome = &summary["outcome"];
    assert_eq!(outcome["status"], "stopped", "{outcome}");
    let reason = outcome["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("SIGTERM"), "{outcome}");
    assert!(dir.join("report.md").is_file());
    assert!(dir.join("report.html").is_file());

    let measured = json_lines(&dir.join("requests.jsonl"))
        .into_iter()
        .filter(|r| r["phase"] == "measured")
        .count();
    let counted: u64 = summary["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let n = &c["counts"];
            ["ok", "invalid", "error", "cancelled"]
                .iter()
                .map(|k| n[*k].as_u64().expect("a count"))
                .sum::<u64>()
        })
        .sum();
    assert!(measured >= 4, "{measured} measured records");
    assert_eq!(counted, measured as u64, "{summary}");
}

#[test]
fn one_stop_delivered_twice_at_once_still_stops_with_every_view() {
    // GNU `timeout` and process-group kills deliver one stop to a process twice, milliseconds
    // apart: that is one stop (exit 4, summary written), not the second that exits at once.
    let tmp = tempfile::tempdir().expect("temp dir");
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let running = long_campaign(&sim.url, tmp.path());
    let dir = wait_for_records(tmp.path(), 4);
    running.signal("TERM");
    running.signal("TERM");
    let run = running.wait(Duration::from_secs(25));
    assert_eq!(run.code, Some(4), "{}", shown(&run));
    assert!(
        !run.stderr.contains("second stop signal"),
        "{}",
        shown(&run)
    );
    let summary = json(&dir.join("summary.json"));
    assert_eq!(
        summary["outcome"]["status"], "stopped",
        "{}",
        summary["outcome"]
    );
    assert!(dir.join("report.html").is_file());
}

/// A [`long_campaign`] against a fast simulator, killed with SIGKILL once 4 requests are
/// recorded; its attempt folder (in `out`).
fn killed_campaign(out: &Path) -> PathBuf {
    let sim = Simulator::start(&["--profile", "cpu-tiny"]);
    let running = long_campaign(&sim.url, out);
    let dir = wait_for_records(out, 4);
    running.signal("KILL");
    let killed = running.wait(Duration::from_secs(10));
    assert_eq!(killed.code, None, "killed by a signal: {}", shown(&killed));
    dir
}

#[test]
fn a_run_killed_mid_way_reads_back_as_ended_without_its_final_summary() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = killed_campaign(tmp.path());

    let report = llmload_within(&["report", utf8(&dir), "--json"], LIMIT);
    assert_eq!(report.code, Some(0), "{}", shown(&report));
    let summary: Value = serde_json::from_str(&report.stdout).expect("--json prints JSON");
    let reason = summary["outcome"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("without its final summary"),
        "{}",
        summary["outcome"]
    );
    let text = llmload_within(&["report", utf8(&dir)], LIMIT);
    assert_eq!(text.code, Some(0), "{}", shown(&text));
    assert!(
        text.stdout.contains("without its final summary"),
        "{}",
        shown(&text)
    );
}

#[test]
fn a_damaged_summary_is_rebuilt_from_the_records_with_a_warning() {
    let server = Server::start(Mode::Normal);
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = small_run(&server.url, tmp.path(), &[]);
    assert_eq!(run.code, Some(0), "{}", shown(&run));
    let dir = attempt_dir(tmp.path(), "hostile");
    std::fs::write(dir.join("summary.json"), "{garbage").expect("overwrite summary.json");

    let report = llmload_within(&["report", utf8(&dir)], LIMIT);
    assert_eq!(report.code, Some(0), "{}", shown(&report));
    assert!(report.stderr.contains("summary.json"), "{}", shown(&report));
    assert!(report.stderr.contains("damaged"), "{}", shown(&report));
    assert!(
        report.stdout.contains("| 16 | 1 |"),
        "the results table, rebuilt from the records: {}",
        shown(&report)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"),
        "{garbage",
        "report never rewrites summary.json"
    );
}

#[test]
fn a_case_cut_short_by_a_kill_is_not_rebuilt_as_complete() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = killed_campaign(tmp.path());
    let report = llmload_within(&["report", utf8(&dir), "--json"], LIMIT);
    assert_eq!(report.code, Some(0), "{}", shown(&report));
    let summary: Value = serde_json::from_str(&report.stdout).expect("--json prints JSON");
    assert_eq!(
        summary["cases"][0]["complete"], false,
        "{}",
        summary["cases"][0]
    );
    assert_eq!(
        summary["outcome"]["cases_completed"], 0,
        "{}",
        summary["outcome"]
    );
}

#[test]
fn a_stopped_continuous_case_is_measured_over_the_time_it_ran() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (run, dir) = terminated_campaign(tmp.path());
    assert_eq!(run.code, Some(4), "{}", shown(&run));
    let summary = json(&dir.join("summary.json"));
    let load = &summary["cases"][0]["load"];
    let last_activity = json_lines(&dir.join("requests.jsonl"))
        .iter()
        .filter_map(|r| r["done_s"].as_f64().or(r["sent_s"].as_f64()))
        .fold(0.0, f64::max);
    let end = load["window_s"][1].as_f64().expect("window_s");
    assert!(
        end <= last_activity + 1.0,
        "the window ends at {end} s, the last activity was at {last_activity} s: {load}"
    );
}
