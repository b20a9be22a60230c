//! The report on a real terminal (a tmux pane of a set width): tables aligned, prose wrapped,
//! no Markdown; the same run piped stays Markdown.

use std::process::Command;
use std::time::{Duration, Instant};

/// Runs `llmload ARGS` in a detached tmux session of `width` columns, and returns what the
/// pane's history holds once it has exited (`None` when tmux is missing).
fn in_tmux(args: &[&str], width: u16) -> String {
    let name = format!("llmload-test-{}", std::process::id());
    let mut command = vec![env!("CARGO_BIN_EXE_llmload").to_owned()];
    command.extend(args.iter().map(|a| format!("'{a}'")));
    let script = format!("{}; echo EXITED $?; sleep 30", command.join(" "));
    let started = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            &width.to_string(),
            "-y",
            "50",
        ])
        .args(["-e", "NO_COLOR=1", &script])
        .status()
        .expect("tmux runs (the test command installs it)");
    assert!(started.success(), "tmux new-session");
    let capture = || {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-J", "-S", "-2000", "-t", &name])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut text = capture();
    while !text.contains("EXITED") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        text = capture();
    }
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", &name])
        .status();
    text
}

#[test]
fn on_a_terminal_the_report_is_aligned_and_fits_its_width() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().to_str().expect("UTF-8 path");
    let args = [
        "run",
        "--input-tokens",
        "64",
        "--output-tokens",
        "8",
        "--concurrency",
        "1,2",
        "--rounds",
        "2",
        "--telemetry",
        "off",
        "--out",
        out,
    ];
    let width = 90;
    let text = in_tmux(&args, width);
    assert!(text.contains("EXITED 0"), "{text}");
    assert!(
        !text.contains("|---"),
        "no Markdown on the terminal: {text}"
    );
    assert!(text.contains('│'), "aligned tables: {text}");
    for case in ["in64-c1-out8", "in64-c2-out8"] {
        assert!(text.contains(case), "{case}: {text}");
    }
    // -J joins wrapped lines back: every line the program wrote fits the pane.
    for line in text.lines() {
        assert!(line.chars().count() <= usize::from(width), "{line}");
    }
    // Piped, the same report is Markdown, as report.md holds it.
    let piped = super::common::llmload(&args);
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    assert!(piped.stdout.contains("|---"), "{}", piped.stdout);
}
