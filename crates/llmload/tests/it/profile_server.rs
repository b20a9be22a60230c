//! `--profile-server N` end to end on the simulator, which serves vLLM's profiler endpoints and
//! a running-requests gauge: the profiler is asked to start once the gauge says N are running,
//! in the first round of the first case of N or more streams, and to stop at its end; every
//! view says so, and `llmload report` keeps it. Refusals for what no round can meet.

use crate::common;

use common::{assert_refused, json, llmload, run_against, Simulator};

#[test]
fn the_profiler_runs_over_the_first_full_round_and_every_view_says_so() {
    // 20 ms to the first token, then 10 ms a token: a round of 4 runs for about 340 ms.
    let sim = Simulator::start(&[
        "--profile",
        "cpu-tiny",
        "--schedule",
        "fixed:ttft_ms=20,itl_ms=10",
    ]);
    let out = tempfile::tempdir().expect("temp dir");
    let (done, dir) = run_against(
        out.path(),
        "profiled",
        &sim.url,
        &[
            "--input-tokens",
            "32",
            "--output-tokens",
            "32",
            "--concurrency",
            "1,4,8",
            "--rounds",
            "2",
            "--profile-server",
            "3",
        ],
    );
    assert_eq!(done.code, 0, "{}\n{}", done.stdout, done.stderr);
    let summary = json(&dir.join("summary.json"));
    let cases = summary["cases"].as_array().expect("cases");
    // Only the first case of 3 or more streams, and only its first round.
    assert!(cases[0].get("server_profile").is_none());
    assert!(cases[2].get("server_profile").is_none());
    let p = &cases[1]["server_profile"];
    assert_eq!(
        (p["round"].as_u64(), p["at"].as_u64()),
        (Some(1), Some(3)),
        "{p}"
    );
    assert_eq!(p["gauge"], "llamacpp:requests_processing");
    let running = p["running"].as_f64().expect("a reading");
    assert!((3.0..=4.0).contains(&running), "{p}");
    assert_eq!(
        (&p["start"]["how"], &p["start"]["done"]),
        (&"POST /start_profile".into(), &true.into())
    );
    assert_eq!(
        (&p["stop"]["how"], &p["stop"]["done"]),
        (&"POST /stop_profile".into(), &true.into())
    );
    let (start, stop) = (
        p["started_s"].as_f64().expect("started"),
        p["stopped_s"].as_f64().expect("stopped"),
    );
    assert!(0.0 < start && start <= stop, "{p}");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(report.contains("## Server profile"), "{report}");
    assert!(
        report.contains("in32-c4-out32, round 1: once llamacpp:requests_processing read"),
        "{report}"
    );
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(page.contains("<section id=\"server-profile\">"));
    let rebuilt = llmload(&["report", dir.to_str().expect("UTF-8"), "--json"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    let rebuilt: serde_json::Value = serde_json::from_str(&rebuilt.stdout).expect("JSON");
    assert_eq!(&rebuilt["cases"][1]["server_profile"], p);
}

#[test]
fn a_profile_no_round_can_take_is_refused_in_one_line() {
    let url = ["--url", "http://127.0.0.1:9"];
    for (flags, said) in [
        (&["--profile-server", "0"][..], "--profile-server 0"),
        (
            &["--profile-server", "5", "--concurrency", "1,4"][..],
            "no case has 5 or more streams",
        ),
        (
            &[
                "--profile-server",
                "1",
                "--arrival",
                "poisson",
                "--rate",
                "2",
            ][..],
            "it goes with closed rounds",
        ),
    ] {
        let mut argv = url.to_vec();
        argv.extend_from_slice(flags);
        assert_refused(&argv, said);
    }
}
