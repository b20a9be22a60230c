//! Live progress beside the runner. The runner and the campaign loop only report events to a
//! [`Progress`] handle (a `watch` channel of [`Snapshot`]s, and the recent figures); they never
//! know who is watching:
//!
//! - on a terminal, the live view (`view.rs`: a screen of its own, drawn by a thread of its own),
//!   or with `--no-live` the progress line of earlier versions (`line.rs`); neither with
//!   `--quiet`, nor when stderr is not a terminal;
//! - when stderr is not a terminal (a pipe, a CI log), a heartbeat line every `--heartbeat`
//!   (`heartbeat.rs`), unless `--quiet`;
//! - with `--metrics-listen`, the live board that `/metrics` serves.
//!
//! Colour only on a terminal, and never with `NO_COLOR` set.

use crate::board::flight::Flight;
use crate::board::Board;
use crate::guard::Guard;
use crate::record::Record;
use crate::summary::client_check::ClientCheck;
use crate::workload::shape::CasePlan;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

mod case_line;
mod heartbeat;
mod line;
pub mod recent;
pub mod view;
pub use crate::board::snapshot::{Planned, Snapshot, TTFT_WINDOW};
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
    /// How often the heartbeat line is printed when stderr is not a terminal (`None`: never).
    pub heartbeat: Option<Duration>,
    /// The attempt's origin, which records' times count from.
    pub origin: std::time::Instant,
}

/// What draws on the terminal while the run goes: the line's task or the view's thread.
pub enum Drawing {
    /// The progress line, or the heartbeat.
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
    /// The requests in flight and the open loop's arrivals that wait.
    flight: Arc<Flight>,
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
    /// is off, a heartbeat when it is not a terminal or its `TERM` is `dumb`, and on `board` when there is one: returns
    /// the handle and what draws. The guard gives the GPU readings; `flight` counts the requests
    /// in flight.
    pub fn start(
        show: Show,
        guard: Arc<Guard>,
        board: Option<Arc<Board>>,
        flight: &Arc<Flight>,
    ) -> (Progress, Option<Drawing>) {
        // A terminal whose `TERM` is `dumb` cannot erase a line: it is written to as a file is,
        // with the heartbeat's lines.
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        let terminal = std::io::stderr().is_terminal() && !dumb;
        let on_screen = !show.quiet && terminal;
        let heartbeat = show.heartbeat.filter(|_| !show.quiet && !terminal);
        if !on_screen && heartbeat.is_none() && board.is_none() {
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
            flight: flight.clone(),
            ..Progress::default()
        };
        if let Some(every) = heartbeat {
            let task = tokio::spawn(heartbeat::beat(rx, flight.clone(), every));
            return (progress, Some(Drawing::Line(task)));
        }
        if !on_screen {
            return (progress, None);
        }
        let color = use_color(terminal, std::env::var("NO_COLOR").ok().as_deref());
        if show.live {
            let recent = Arc::new(Mutex::new(recent::Recent::default()));
            let check = Arc::new(Mutex::new(None));
            let sources = view::Sources {
                snapshot: rx.clone(),
                flight: flight.clone(),
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
        let task = tokio::spawn(line::draw(shared.clone(), rx, guard, flight.clone()));
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
        self.flight.new_load();
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
        if self.tx.is_some() {
            self.flight.open_loop(start, offsets().into());
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
        self.flight.open_loop_over();
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
mod tests;
