//! The report on a real terminal (a tmux pane of a set width): tables aligned, prose wrapped,
//! no Markdown; the same run piped stays Markdown. While a run goes, the live view (or with
//! `--no-live` the progress line) on that terminal, and the terminal given back at the end.

use std::process::Command;
use std::time::{Duration, Instant};

/// `llmload ARGS` in a detached tmux session of `width` columns and 50 rows, killed when dropped.
pub(super) struct Pane {
    name: String,
}

impl Pane {
    pub(super) fn start(args: &[&str], width: u16, tag: &str) -> Pane {
        let name = format!("llmload-test-{}-{tag}", std::process::id());
        let mut command = vec![env!("CARGO_BIN_EXE_llmload").to_owned()];
        command.extend(args.iter().map(|a| format!("'{a}'")));
        let script = format!("{}; echo EXITED $?; sleep 60", command.join(" "));
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
        Pane { name }
    }

    /// What the pane shows now (its history too with `history`).
    fn capture(&self, history: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-J", "-t", &self.name];
        if history {
            args.extend(["-S", "-2000"]);
        }
        let out = Command::new("tmux")
            .args(&args)
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Captures until `ready` holds for what is on screen (at most `within`); the last capture.
    fn until(&self, within: Duration, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        let mut text = self.capture(false);
        while !ready(&text) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            text = self.capture(false);
        }
        text
    }

    /// Types `keys` into the pane (tmux key names: `C-c` is Ctrl-C).
    fn keys(&self, keys: &str) {
        let sent = Command::new("tmux")
            .args(["send-keys", "-t", &self.name, keys])
            .status()
            .expect("send-keys");
        assert!(sent.success(), "send-keys {keys}");
    }

    /// The pane's history once the command has exited.
    pub(super) fn exited(&self) -> String {
        self.until(Duration::from_secs(120), |t| t.contains("EXITED"));
        self.capture(true)
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
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
    let text = Pane::start(&args, width, "report").exited();
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

/// An open loop of 16 s on the built-in simulator, with `extra` flags.
fn open_loop<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "--input-tokens",
        "32",
        "--output-tokens",
        "16",
        "--arrival",
        "poisson",
        "--rate",
        "10",
        "--duration",
        "16s",
        "--telemetry",
        "off",
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn the_live_view_shows_ttft_throughput_and_an_eta_and_gives_the_terminal_back() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().to_str().expect("UTF-8 path");
    let pane = Pane::start(&open_loop(out, &[]), 120, "live");
    // Once responses have ended for a couple of seconds, the view has figures to show.
    let figures = |t: &str| t.contains("TTFT  p50") && !t.contains("TTFT  p50         –");
    let live = pane.until(Duration::from_secs(60), |t| {
        figures(t) && t.contains("tokens/s")
    });
    assert!(figures(&live), "TTFT over the last window: {live}");
    for expected in [
        "case 1/1 in32-poisson-r10-out16",
        "ETA ",
        "throughput ",
        "tokens/s",
        "ITL   p50",
        "self-check",
        "guard",
    ] {
        assert!(
            live.contains(expected),
            "{expected:?} not in the live view:\n{live}"
        );
    }
    let eta = live.split("ETA ").nth(1).expect("an ETA");
    assert!(
        eta.starts_with(char::is_numeric),
        "a time left, not unknown: {live}"
    );
    let text = pane.exited();
    assert!(text.contains("EXITED 0"), "{text}");
    // The screen is the terminal's again: the view is gone, the case's line and the report are
    // printed as without it.
    assert!(!text.contains("trend over a minute"), "{text}");
    assert!(text.contains("case 1/1 in32-poisson-r10-out16:"), "{text}");
    assert!(text.contains("Continuous and open-loop cases"), "{text}");
}

#[test]
fn with_no_live_the_progress_line_is_drawn_instead() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().to_str().expect("UTF-8 path");
    let pane = Pane::start(&open_loop(out, &["--no-live"]), 160, "line");
    let line = pane.until(Duration::from_secs(60), |t| {
        t.contains("TTFT p50") && t.contains(" requests")
    });
    assert!(
        line.contains("case 1/1 in32-poisson-r10-out16 · "),
        "{line}"
    );
    assert!(line.contains("elapsed ") && line.contains("ETA "), "{line}");
    assert!(
        !line.contains("trend over a minute"),
        "no live view: {line}"
    );
    let text = pane.exited();
    assert!(text.contains("EXITED 0"), "{text}");
    assert!(text.contains("case 1/1 in32-poisson-r10-out16:"), "{text}");
}

#[test]
fn ctrl_c_under_the_live_view_stops_the_run_and_gives_the_terminal_back() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().to_str().expect("UTF-8 path");
    let pane = Pane::start(&open_loop(out, &[]), 120, "stop");
    // Mid-measurement: the view has figures of the last window.
    let figures = |t: &str| t.contains("TTFT  p50") && !t.contains("TTFT  p50         –");
    let live = pane.until(Duration::from_secs(60), figures);
    assert!(figures(&live), "the live view: {live}");
    pane.keys("C-c");
    let text = pane.exited();
    // Stopped (exit code 4), the screen the terminal's again, and the report of what was measured.
    assert!(text.contains("EXITED 4"), "{text}");
    assert!(!text.contains("trend over a minute"), "{text}");
    assert!(text.contains("stopped by SIGINT (Ctrl-C)"), "{text}");
}

/// An open loop far above a 2-slot simulator's capacity, capped at 8 in flight: the live view
/// shows the requests sent, those in flight and the arrivals waiting behind the cap while it
/// runs; after Ctrl-C the case's line counts them as the summary does.
#[test]
fn the_live_view_of_an_overloaded_open_loop_shows_in_flight_and_waiting() {
    let sim = super::common::Simulator::start(&["--slots", "2", "--time-scale", "0.25"]);
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().to_str().expect("UTF-8 path");
    let args = [
        "run",
        "--url",
        &sim.url,
        "--warmup",
        "0",
        "--input-tokens",
        "32",
        "--output-tokens",
        "64",
        "--arrival",
        "poisson",
        "--rate",
        "20",
        "--max-in-flight",
        "8",
        "--duration",
        "10m",
        "--telemetry",
        "off",
        "--out",
        out,
    ];
    let pane = Pane::start(&args, 120, "overload");
    // The cap is reached at once and arrivals pile up behind it.
    let waiting = |t: &str| {
        t.contains("8 in flight · ")
            && t.split(" in flight · ").nth(1).is_some_and(|rest| {
                rest.split(' ')
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| n >= 5)
            })
    };
    let live = pane.until(Duration::from_secs(60), waiting);
    assert!(
        waiting(&live),
        "in flight and waiting in the live view:\n{live}"
    );
    assert!(live.contains(" sent · "), "{live}");
    assert!(live.contains(" waiting"), "{live}");
    pane.keys("C-c");
    let text = pane.exited();
    assert!(text.contains("EXITED 4"), "{text}");
    assert!(text.contains("stopped by SIGINT (Ctrl-C)"), "{text}");
    assert!(text.contains(" cancelled; "), "the case's line: {text}");
}

#[test]
fn a_dumb_terminal_gets_the_heartbeat_and_no_escape_sequence() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().to_str().expect("UTF-8 path");
    let mut args = open_loop(out, &["--heartbeat", "1s"]);
    // 4 s of the open loop are enough for several heartbeats.
    let at = args.iter().position(|a| *a == "16s").expect("the duration");
    args[at] = "4s";
    let mut command = vec![env!("CARGO_BIN_EXE_llmload").to_owned()];
    command.extend(args.iter().map(|a| format!("'{a}'")));
    // `script` gives llmload a terminal (a pseudo-terminal) and writes every byte it got.
    let transcript = Command::new("script")
        .args(["-q", "-e", "-c", &command.join(" "), "/dev/null"])
        .env("TERM", "dumb")
        .env_remove("NO_COLOR")
        .output()
        .expect("script runs (util-linux)");
    let text = String::from_utf8_lossy(&transcript.stdout);
    assert!(transcript.status.success(), "{text}");
    assert!(!text.contains('\u{1b}'), "no escape sequence: {text:?}");
    assert!(text.contains("progress: case 1/1"), "the heartbeat: {text}");
}
