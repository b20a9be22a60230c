//! Live progress beside the runner. The runner and the campaign loop only report events to a
//! [`Progress`] handle (a `watch` channel of [`Snapshot`]s, and the recent figures); they never
//! know who is watching:
//!
//! - on a terminal, the live view (`view.rs`: a screen of its own, drawn by a thread of its own),
//!   or with `--no-live` the progress line of earlier versions (`line.rs`); neither with
//!   `--quiet`, nor when stderr is not a terminal;
//! - with `--metrics-listen`, the live board that `/metrics` serves.
//!
//! Colour only on a terminal, and never with `NO_COLOR` set.

use crate::guard::Guard;
use crate::live::Board;
use crate::record::Record;
use crate::summary::client_check::ClientCheck;
use crate::workload::shape::CasePlan;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

mod case_line;
mod line;
pub mod recent;
pub mod view;
pub use crate::live::snapshot::{Planned, Snapshot, TTFT_WINDOW};
pub use case_line::case_line;
pub use line::{line, use_color};

/// Time between redraws of the line.
pub const REDRAW: Duration = Duration::from_millis(250);

/// How the run is shown.
#[derive(Clone, Copy, Debug)]
pub struct Show {
    /// `--quiet`: nothing on stderr.
    pub quiet: bool,
    /// The live view on a terminal (`--no-live` turns it off for the line).
    pub live: bool,
    /// The attempt's origin, which records' times count from.
    pub origin: std::time::Instant,
}

/// What draws on the terminal while the run goes: the line's task or the view's thread.
pub enum Drawing {
    /// The progress line.
    Line(JoinHandle<()>),
    /// The live view (given back on drop too).
    View(view::View),
}

/// Where progress goes: a handle the runner reports to. With nobody watching it does nothing.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// The snapshot, kept while anyone reads it.
    tx: Option<Arc<watch::Sender<Snapshot>>>,
    /// The line on the terminal, when one is drawn.
    shared: Option<Arc<Shared>>,
    /// `--metrics-listen`: the board scrapers read.
    board: Option<Arc<Board>>,
    /// The live view: its recent figures, the self-check so far, and its log.
    recent: Option<Arc<Mutex<recent::Recent>>>,
    check: Option<Arc<Mutex<Option<ClientCheck>>>>,
    lines: Option<view::Lines>,
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

    /// Shows progress on stderr when it is a terminal (the live view, or the line) and `--quiet`
    /// is off, and on `board` when there is one: returns the handle and what draws. The guard
    /// gives the GPU readings.
    pub fn start(
        show: Show,
        guard: Arc<Guard>,
        board: Option<Arc<Board>>,
    ) -> (Progress, Option<Drawing>) {
        let terminal = std::io::stderr().is_terminal();
        let on_screen = !show.quiet && terminal;
        if !on_screen && board.is_none() {
            return (Progress::off(), None);
        }
        let (tx, rx) = watch::channel(Snapshot::default());
        if let Some(board) = &board {
            board.watch_progress(rx.clone());
            board.watch_guard(guard.clone());
        }
        let mut progress = Progress {
            tx: Some(Arc::new(tx)),
            board,
            ..Progress::default()
        };
        if !on_screen {
            return (progress, None);
        }
        let color = use_color(terminal, std::env::var("NO_COLOR").ok().as_deref());
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        if show.live && !dumb {
            let recent = Arc::new(Mutex::new(recent::Recent::default()));
            let check = Arc::new(Mutex::new(None));
            let sources = view::Sources {
                snapshot: rx.clone(),
                recent: recent.clone(),
                guard: guard.clone(),
                check: check.clone(),
                origin: show.origin,
                color,
            };
            // A terminal that cannot take the view (its screen cannot be switched) gets the line.
            if let Ok((view, lines)) = view::View::start(sources) {
                progress.recent = Some(recent);
                progress.check = Some(check);
                progress.lines = Some(lines);
                return (progress, Some(Drawing::View(view)));
            }
        }
        let shared = Arc::new(Shared {
            drawn: Mutex::new(false),
            color,
        });
        let task = tokio::spawn(line::draw(shared.clone(), rx, guard));
        progress.shared = Some(shared);
        (progress, Some(Drawing::Line(task)))
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
        if let Some(recent) = &self.recent {
            recent
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .new_load();
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
        if let Some(recent) = &self.recent {
            recent
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(record);
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

    /// Whether anyone reads the self-check's verdict while the run goes (the view, the board).
    pub fn watched(&self) -> bool {
        self.check.is_some() || self.board.is_some()
    }

    /// The self-check's verdict so far.
    pub fn client_check(&self, check: ClientCheck) {
        if let Some(mine) = &self.check {
            *mine.lock().unwrap_or_else(PoisonError::into_inner) = Some(check.clone());
        }
        if let Some(board) = &self.board {
            board.client_check(check);
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
        if let Some(lines) = &self.lines {
            // Shown in the view's log, written after it as the line's mode writes them.
            let mut wrapped = String::new();
            crate::console::wrap(&text, usize::from(crate::console::width()), &mut wrapped);
            wrapped
                .trim_end()
                .lines()
                .for_each(|l| lines.println(l.to_owned()));
            return;
        }
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

    /// Stops drawing: clears the line, or gives the view's screen back (and writes the lines
    /// printed under it).
    pub fn finish(&self, drawing: Option<Drawing>) {
        match drawing {
            Some(Drawing::Line(task)) => task.abort(),
            Some(Drawing::View(view)) => view.finish(),
            None => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::record::Status;
    use crate::telemetry::Reading;
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
                batch: None,
                images: None,
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
