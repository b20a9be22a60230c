//! Live progress beside the runner: one line on stderr, redrawn at most four times a second and
//! cleared at the end — only when stderr is a terminal and the run is not `--quiet`. The runner
//! and the campaign loop only report events to a [`Progress`] handle (a `watch` channel); they
//! never know whether a terminal is listening. Colour only on a terminal, and never with
//! `NO_COLOR` set.
//!
//! The line: the case and its round, requests done of the total, the time since the case (or
//! staged load) started and an ETA where one can be known (a known count of requests, or a
//! known duration), the running median TTFT and the output tokens/s of the case so far, and the
//! guard's last GPU reading.

use crate::guard::Guard;
use crate::live::Board;
use crate::record::Record;
use crate::telemetry::Reading;
use crate::workload::shape::CasePlan;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

mod case_line;
pub use crate::live::snapshot::{Planned, Snapshot, TTFT_WINDOW};
pub use case_line::case_line;

/// Time between redraws.
pub const REDRAW: Duration = Duration::from_millis(250);

/// Whether to colour: on a terminal, unless `NO_COLOR` is set to anything non-empty.
pub fn use_color(terminal: bool, no_color: Option<&str>) -> bool {
    terminal && no_color.is_none_or(str::is_empty)
}

/// The progress line of `s`, `elapsed` into the case, with the guard's `reading`, at most
/// `width` characters of text (parts are dropped from the end to fit), in colour when `color`.
pub fn line(
    s: &Snapshot,
    reading: Option<&Reading>,
    elapsed: Duration,
    width: usize,
    color: bool,
) -> String {
    let mut parts: Vec<(String, &str)> = s
        .repeat
        .map(|(k, n)| (format!("repeat {k}/{n}"), "1"))
        .into_iter()
        .collect();
    parts.push((format!("case {}/{} {}", s.case.0, s.case.1, s.case_id), "1"));
    match s.round {
        Some((0, rounds)) => parts.push((format!("warmup, then {rounds} rounds"), "")),
        Some((round, rounds)) => parts.push((format!("round {round}/{rounds}"), "")),
        None => {}
    }
    let total = s.total.map_or(String::new(), |t| format!("/{t}"));
    let failed = match (s.failed, s.abandoned) {
        (0, 0) => String::new(),
        (f, 0) => format!(" ({f} failed)"),
        (0, a) => format!(" ({a} abandoned)"),
        (f, a) => format!(" ({f} failed, {a} abandoned)"),
    };
    parts.push((format!("{}{total} requests{failed}", s.done), ""));
    let whole = |d: Duration| crate::fmt::span(d.as_secs() as f64);
    let eta = s.eta(elapsed).map_or_else(
        || "ETA unknown".to_owned(),
        |left| format!("ETA {}", whole(left)),
    );
    parts.push((format!("elapsed {} · {eta}", whole(elapsed)), ""));
    let median = s.ttft_median_ms();
    parts.push((format!("TTFT p50 {}", crate::fmt::seconds(median)), ""));
    let tps = s.tokens_per_s().map_or("–".into(), |t| format!("{t:.1}"));
    parts.push((format!("{tps} tokens/s"), ""));
    if let Some(r) = reading {
        let power = r.power_w.map_or(String::new(), |w| format!(" {w:.0} W"));
        parts.push((
            format!("GPU {} {:.0} °C{power}", r.gpu, r.temperature_c),
            "33",
        ));
    }
    let separator = " · ";
    let mut used = 0;
    let mut out = String::new();
    for (i, (text, code)) in parts.iter().enumerate() {
        let extra = text.chars().count() + if i > 0 { separator.len() - 1 } else { 0 };
        if i > 0 && used + extra > width {
            break;
        }
        used += extra;
        if i > 0 {
            if color {
                let _ = write!(out, "\x1b[2m{separator}\x1b[0m");
            } else {
                out.push_str(separator);
            }
        }
        match (color, *code) {
            (true, code) if !code.is_empty() => {
                let _ = write!(out, "\x1b[{code}m{text}\x1b[0m");
            }
            _ => out.push_str(text),
        }
    }
    out
}

/// Where progress goes: a handle the runner reports to. It feeds the line on a terminal and the
/// live board of `--metrics-listen`; with neither it does nothing.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// The snapshot, kept while anyone reads it.
    tx: Option<Arc<watch::Sender<Snapshot>>>,
    /// The line on the terminal, when one is drawn.
    shared: Option<Arc<Shared>>,
    /// `--metrics-listen`: the board scrapers read.
    board: Option<Arc<Board>>,
}

#[derive(Debug)]
struct Shared {
    /// Whether the line is on screen; held while writing to stderr.
    drawn: Mutex<bool>,
    color: bool,
}

impl Progress {
    /// A handle that shows nothing.
    pub fn off() -> Progress {
        Progress::default()
    }

    /// Shows progress on stderr when it is a terminal and `quiet` is off, and on `board` when
    /// there is one: returns the handle and the drawing task. The guard gives the last GPU
    /// reading.
    pub fn start(
        quiet: bool,
        guard: Arc<Guard>,
        board: Option<Arc<Board>>,
    ) -> (Progress, Option<JoinHandle<()>>) {
        let terminal = std::io::stderr().is_terminal();
        let line = !quiet && terminal;
        if !line && board.is_none() {
            return (Progress::off(), None);
        }
        let (tx, rx) = watch::channel(Snapshot::default());
        if let Some(board) = &board {
            board.watch_progress(rx.clone());
            board.watch_guard(guard.clone());
        }
        let mut progress = Progress {
            tx: Some(Arc::new(tx)),
            shared: None,
            board,
        };
        if !line {
            return (progress, None);
        }
        let shared = Arc::new(Shared {
            drawn: Mutex::new(false),
            color: use_color(terminal, std::env::var("NO_COLOR").ok().as_deref()),
        });
        let task = tokio::spawn(draw(shared.clone(), rx, guard));
        progress.shared = Some(shared);
        (progress, Some(task))
    }

    /// A load starts (a case, or a staged load of `plans`): number `index` (1-based) of
    /// `total`, with its measured requests and its duration where they are planned.
    pub fn case(&self, index: usize, total: usize, plans: &[CasePlan]) {
        let Some(first) = plans.first() else {
            return;
        };
        if let Some(board) = &self.board {
            let ids: Vec<String> = plans.iter().map(|p| p.case.id.clone()).collect();
            board.cases(&ids);
        }
        let planned = Planned::of_load(plans);
        let stages = if plans.len() > 1 {
            plans
                .iter()
                .map(|p| {
                    (
                        p.case.id.clone(),
                        Planned::of(p).duration.unwrap_or_default(),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        self.update(|s| {
            *s = Snapshot {
                repeat: s.repeat,
                case: (index, total),
                case_id: first.case.id.clone(),
                round: planned.rounds.map(|r| (0, r)),
                total: planned.requests,
                started: Some(tokio::time::Instant::now()),
                duration: planned.duration,
                stages,
                ..Snapshot::default()
            }
        });
    }

    /// A repeat of a series starts: its number (1-based) and the repeats planned.
    pub fn repeat(&self, repeat: Option<(u32, u32)>) {
        self.update(|s| s.repeat = repeat);
    }

    /// A round of closed rounds starts.
    pub fn round(&self, round: u32) {
        self.update(|s| {
            if let Some((_, rounds)) = s.round {
                s.round = Some((round, rounds));
            }
        });
    }

    /// A request ended and was written: the board counts every one, the snapshot the measured.
    pub fn record(&self, record: &Record) {
        if let Some(board) = &self.board {
            board.record(record);
        }
        if record.phase == crate::record::Phase::Measured {
            self.update(|s| s.record(record));
        }
    }

    /// An open loop starts at `start`, this process's arrivals at `offsets` from it.
    pub fn open_loop(&self, start: std::time::Instant, offsets: impl FnOnce() -> Vec<Duration>) {
        if let Some(board) = &self.board {
            board.open_loop(start, offsets().into());
        }
    }

    /// The open loop launches no more.
    pub fn open_loop_over(&self) {
        if let Some(board) = &self.board {
            board.open_loop_over();
        }
    }

    /// Prints `text` as a line of its own on stderr, clearing the progress line first (wrapped
    /// to the terminal's width on a terminal).
    pub fn println(&self, text: &str) {
        let text = crate::secrets::scrub(text);
        let text = crate::console::printable(&text);
        // On a terminal (where the progress line is drawn) a long line wraps to its width.
        let text = if self.shared.is_some() {
            let mut wrapped = String::new();
            crate::console::wrap(&text, usize::from(crate::console::width()), &mut wrapped);
            wrapped.trim_end().to_owned()
        } else {
            text.into_owned()
        };
        let mut stderr = std::io::stderr().lock();
        // Held while the line is written, so that the progress line is not drawn in between.
        let drawn = self.shared.as_ref().map(|shared| {
            shared
                .drawn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        let clear = if drawn.as_deref() == Some(&true) {
            "\r\x1b[2K"
        } else {
            ""
        };
        let _ = writeln!(stderr, "{clear}{text}");
        if let Some(mut drawn) = drawn {
            *drawn = false;
        }
    }

    /// Stops drawing and clears the line.
    pub fn finish(&self, task: Option<JoinHandle<()>>) {
        if let Some(task) = task {
            task.abort();
        }
        if let Some(shared) = &self.shared {
            let mut drawn = shared
                .drawn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *drawn {
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
                *drawn = false;
            }
        }
    }

    fn update(&self, change: impl FnOnce(&mut Snapshot)) {
        if let Some(tx) = &self.tx {
            tx.send_modify(change);
        }
    }
}

/// Redraws the line when the snapshot changes, at most every [`REDRAW`], and every second
/// anyway for the GPU reading.
async fn draw(shared: Arc<Shared>, mut rx: watch::Receiver<Snapshot>, guard: Arc<Guard>) {
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(100)
        .saturating_sub(1)
        .max(20);
    loop {
        let _ = tokio::time::timeout(Duration::from_secs(1), rx.changed()).await;
        let snapshot = rx.borrow_and_update().clone();
        if !snapshot.case_id.is_empty() {
            let elapsed = snapshot.started.map_or(Duration::ZERO, |t| t.elapsed());
            let text = line(
                &snapshot,
                guard.latest().as_ref(),
                elapsed,
                width,
                shared.color,
            );
            let mut drawn = shared
                .drawn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let _ = write!(std::io::stderr(), "\r\x1b[2K{text}");
            let _ = std::io::stderr().flush();
            *drawn = true;
        }
        tokio::time::sleep(REDRAW).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::record::Status;
    use crate::workload::schedule::Bound;
    use crate::workload::shape::Shape;

    fn snapshot() -> Snapshot {
        let mut s = Snapshot {
            case: (2, 6),
            case_id: "in2048-c4-out256".into(),
            round: Some((2, 3)),
            total: Some(12),
            ..Snapshot::default()
        };
        for r in fixture::sweep_report()
            .records
            .iter()
            .filter(|r| r.case == "in64-c4-out8" && r.round.is_some())
        {
            s.record(r);
        }
        s
    }

    #[test]
    fn the_line_shows_case_round_requests_ttft_throughput_and_gpu() {
        let reading = Reading {
            temperature_c: 73.4,
            power_w: Some(281.0),
            ..fixture::reading()
        };
        let elapsed = Duration::from_secs(90);
        let text = line(&snapshot(), Some(&reading), elapsed, 200, false);
        // 4 of 12 requests in 90 s: the 8 left take 180 s at that pace.
        assert_eq!(
            text,
            "case 2/6 in2048-c4-out256 · round 2/3 · 4/12 requests · elapsed 1m 30s · ETA 3m · \
             TTFT p50 35.0 ms · 340.0 tokens/s · GPU 0 73 °C 281 W"
        );
        assert!(!text.contains('\x1b'));
        let colored = line(&snapshot(), Some(&reading), elapsed, 200, true);
        assert!(colored.contains("\x1b[1mcase 2/6"), "{colored:?}");
        assert!(colored.contains("\x1b[33mGPU 0"), "{colored:?}");
    }

    #[test]
    fn a_series_names_its_repeat_first() {
        let s = Snapshot {
            repeat: Some((2, 3)),
            ..snapshot()
        };
        let text = line(&s, None, Duration::ZERO, 200, false);
        assert!(
            text.starts_with("repeat 2/3 · case 2/6 in2048-c4-out256 · round 2/3 · "),
            "{text}"
        );
    }

    #[test]
    fn a_narrow_terminal_drops_parts_from_the_end_and_failures_show() {
        let mut s = snapshot();
        let mut failed = fixture::sweep_report().records[1].clone();
        failed.status = Status::Error;
        s.record(&failed);
        let text = line(&s, None, Duration::ZERO, 50, false);
        assert!(text.chars().count() <= 50, "{text}");
        assert!(text.starts_with("case 2/6"), "{text}");
        assert!(!text.contains("tokens/s"), "{text}");
        let wide = line(&s, None, Duration::ZERO, 200, false);
        assert!(wide.contains("5/12 requests (1 failed)"), "{wide}");
        assert!(!wide.contains("GPU"), "no reading, no GPU part");
    }

    #[test]
    fn the_eta_comes_from_a_duration_or_the_requests_left_and_is_unknown_otherwise() {
        let mut s = snapshot();
        s.total = None;
        let at = Duration::from_secs(20);
        assert_eq!(s.eta(at), None);
        assert!(line(&s, None, at, 200, false).contains("elapsed 20s · ETA unknown"));
        // An open loop of 2 minutes, 20 s in.
        s.duration = Some(Duration::from_secs(120));
        assert_eq!(s.eta(at), Some(Duration::from_secs(100)));
        assert!(line(&s, None, at, 200, false).contains("elapsed 20s · ETA 1m 40s"));
        // Past its end (the drain), nothing is left to wait for but the requests in flight.
        assert_eq!(s.eta(Duration::from_secs(130)), Some(Duration::ZERO));
        // A known count before any request ended has no pace yet.
        let none_done = Snapshot {
            total: Some(12),
            ..Snapshot::default()
        };
        assert_eq!(none_done.eta(at), None);
    }

    #[tokio::test(start_paused = true)]
    async fn elapsed_is_counted_from_the_start_of_the_case_on_tokios_clock() {
        let mut s = snapshot();
        s.started = Some(tokio::time::Instant::now());
        tokio::time::advance(Duration::from_secs(45)).await;
        let elapsed = s.started.map(|t| t.elapsed()).unwrap_or_default();
        assert_eq!(elapsed.as_secs(), 45);
        let text = line(&s, None, elapsed, 200, false);
        assert!(text.contains("elapsed 45s · ETA 1m 30s"), "{text}");
    }

    #[test]
    fn a_staged_load_plans_the_sum_of_its_stages() {
        use crate::workload::length::Length;
        use crate::workload::shape::Case;
        let open = |seconds: u64| CasePlan {
            case: Case {
                id: "stage".into(),
                input_tokens: 8,
                concurrency: 2,
                output_tokens: 4,
            },
            input: Length::Fixed(8),
            output: Length::Fixed(4),
            shape: Shape::ClosedContinuous {
                bound: Bound::Duration(Duration::from_secs(seconds)),
            },
            warmup_time: Duration::ZERO,
            stage: None,
        };
        let planned = Planned::of_load(&[open(10), open(30)]);
        assert_eq!(planned.duration, Some(Duration::from_secs(40)));
        assert_eq!(planned.requests, None);
        assert_eq!(planned.rounds, None);
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_color(true, None));
        assert!(use_color(true, Some("")));
        assert!(!use_color(true, Some("1")));
        assert!(!use_color(false, None));
    }

    #[test]
    fn the_median_is_over_the_recent_ttfts_only() {
        let mut s = Snapshot::default();
        let mut r = fixture::sweep_report().records[1].clone();
        r.ttft_ms = Some(1000.0);
        for _ in 0..TTFT_WINDOW {
            s.record(&r);
        }
        r.ttft_ms = Some(10.0);
        for _ in 0..=(TTFT_WINDOW / 2) {
            s.record(&r);
        }
        assert_eq!(s.ttft_ms.len(), TTFT_WINDOW);
        assert_eq!(s.ttft_median_ms(), Some(10.0));
    }

    #[test]
    fn a_handle_without_a_terminal_does_nothing() {
        let progress = Progress::off();
        progress.round(1);
        progress.record(&fixture::sweep_report().records[1]);
        progress.finish(None);
    }
}
