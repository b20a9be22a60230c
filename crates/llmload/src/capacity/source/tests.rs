//! Unit tests of `capacity/source.rs`.

use super::*;

#[test]
fn a_block_of_users_runs_through_several_sessions_of_think_time() {
    assert_eq!(
        users_block(4, Duration::from_secs(5)),
        Duration::from_secs(65)
    );
    assert_eq!(users_block(2, Duration::ZERO), Duration::from_secs(10));
}

/// A search on a scripted server, driven case by case as the pipeline would: each case's
/// records are written to `requests.jsonl` before the source is asked for the next. A load
/// meets TTFT p90 < 50 ms when it is at most the server's capacity at that case (10 ms a
/// response; 100 ms above it). Returns the source and the ids of the cases run, in order.
fn drive(
    capacity_at: impl Fn(usize) -> f64,
    resume: Option<&std::path::Path>,
) -> (CapacitySource, Vec<String>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let toml = dir.path().join("c.toml");
    std::fs::write(
        &toml,
        "url = \"http://127.0.0.1:9\"\ninput_tokens = [64]\noutput_tokens = [64]\n\
         arrival = \"closed-continuous\"\nrequests = 20\n",
    )
    .expect("write");
    let config =
        Config::resolve(crate::config::Settings::read(&toml).expect("readable")).expect("valid");
    let options = CapacityOptions {
        rules: vec![(
            "ttft_p90<50ms".parse().expect("a rule"),
            "ttft_p90<50ms".into(),
        )],
        start: Some(4.0),
        resume: resume.map(std::path::Path::to_path_buf),
        ..CapacityOptions::default()
    };
    let records = dir.path().join("requests.jsonl");
    std::fs::write(&records, "").expect("write");
    let mut source =
        CapacitySource::new(&config, &options, 0.95, records.clone()).expect("a search");
    let template = crate::fixture::records()[1].clone();
    let mut summary = crate::fixture::report().summary.cases[0].clone();
    let mut done = Vec::new();
    let mut ids = Vec::new();
    while let Some(plan) = source.next(&done) {
        let load = f64::from(plan.case.concurrency);
        let ttft = if load <= capacity_at(ids.len()) {
            10.0
        } else {
            100.0
        };
        let mut lines = String::new();
        for index in 0..20 {
            let record = Record {
                case: plan.case.id.clone(),
                index,
                ttft_ms: Some(ttft),
                first_token_s: Some(template.sent_s + ttft / 1e3),
                e2e_ms: Some(ttft + 50.0),
                done_s: Some(template.sent_s + (ttft + 50.0) / 1e3),
                ..template.clone()
            };
            lines.push_str(&serde_json::to_string(&record).expect("json"));
            lines.push('\n');
        }
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&records)
            .expect("open");
        std::io::Write::write_all(&mut file, lines.as_bytes()).expect("append");
        summary.id = plan.case.id.clone();
        done.push(summary.clone());
        ids.push(plan.case.id);
    }
    (source, ids, dir)
}

#[test]
fn a_decided_bracket_is_measured_again_side_by_side_and_stands_where_nothing_moved() {
    let (source, ids, _dir) = drive(|_| 8.0, None);
    let (decided, why) = source.stop.clone().expect("stopped");
    assert!(decided, "{why}");
    assert!(
        why.ends_with("re-measured side by side, 8 meets and 9 fails"),
        "{why}"
    );
    // 4, 8, 16, 11, 9: each decided at its first look of 7 blocks; then 9 and 8 in turn.
    assert_eq!(ids.len(), 5 * 7 + 14, "{ids:?}");
    let again: Vec<&str> = ids[35..].iter().map(String::as_str).collect();
    assert!(
        again[0].ends_with("-cc9-out64-r1") && again[1].ends_with("-cc8-out64-r1"),
        "{again:?}"
    );
    assert!(
        again[12].ends_with("-cc9-out64-r7") && again[13].ends_with("-cc8-out64-r7"),
        "{again:?}"
    );
    for (load, verdict) in [(8.0, SloVerdict::Meets), (9.0, SloVerdict::Fails)] {
        let probe = source
            .probes
            .iter()
            .find(|p| p.load == load)
            .expect("a probe");
        let remeasured = probe.remeasured.as_ref().expect("re-measured");
        assert_eq!(
            (remeasured.blocks.len(), remeasured.verdict),
            (7, Some(verdict))
        );
        assert_eq!(probe.blocks.len(), 7, "the search's blocks stay apart");
    }
    assert!(
        source
            .probes
            .iter()
            .filter(|p| p.remeasured.is_some())
            .count()
            == 2
    );
}

#[test]
fn a_boundary_that_moved_during_the_search_takes_the_decision_back() {
    // The server holds 8 while the search runs, then 6: 8 re-measured beside 9 fails.
    let (source, ids, _dir) = drive(|case| if case < 35 { 8.0 } else { 6.0 }, None);
    let (decided, why) = source.stop.clone().expect("stopped");
    assert!(!decided, "{why}");
    assert!(
        why.starts_with(
            "the boundary moved while it was measured: re-measured side by side, 8 \
                         concurrent generations now fail"
        ),
        "{why}"
    );
    assert_eq!(ids.len(), 49);
    // The search's own verdicts are kept as they were measured.
    let eight = source.probes.iter().find(|p| p.load == 8.0).expect("8");
    assert_eq!(eight.verdict, SloVerdict::Meets);
    assert_eq!(
        eight.remeasured.as_ref().and_then(|r| r.verdict),
        Some(SloVerdict::Fails)
    );
}

#[test]
fn going_on_from_a_finished_search_reads_its_re_measurement_and_sends_nothing() {
    let (_, ids, dir) = drive(|_| 8.0, None);
    assert_eq!(ids.len(), 49);
    let (source, again, _dir) = drive(|_| 8.0, Some(dir.path()));
    assert!(again.is_empty(), "{again:?}");
    let (decided, why) = source.stop.clone().expect("stopped");
    assert!(decided, "{why}");
    let eight = source.probes.iter().find(|p| p.load == 8.0).expect("8");
    assert_eq!(eight.remeasured.as_ref().map(|r| r.reused), Some(7));
}
