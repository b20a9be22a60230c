//! The live terminal view (stderr on a terminal, unless `--no-live` or `--quiet`): the case and
//! its stage, elapsed time and ETA, TTFT, ITL and throughput over the last 30 s with their trend
//! over the last minute, failures by kind, the guard's readings against its thresholds and the
//! self-check so far, and the lines the run prints.
//!
//! It is drawn on the terminal's alternate screen by a thread of its own at a fixed
//! [`FRAME`] rate, off the runtime's threads: the runner only updates what it reads (the
//! snapshot, the recent figures). On every way out (the run's end, an error, a stop, a panic,
//! a second Ctrl-C) the screen is given back as it was, and the lines printed during the run
//! are written after it, in order, as the progress line's mode writes them.

use super::recent::{Recent, SLICE};
use super::Snapshot;
use crate::guard::Guard;
use crate::summary::client_check::ClientCheck;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Sparkline, Wrap};
use ratatui::{Frame, Terminal};
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, Once, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::watch;

mod text;
use text::{check_lines, figures, guard_lines, progress, title};

/// Time between frames.
pub const FRAME: Duration = Duration::from_millis(500);

/// The smallest terminal the view is drawn on (columns, rows).
pub const MIN_SIZE: (u16, u16) = (60, 20);

/// Lines printed during the run that the view keeps, to write after it (the rest are counted).
const LINES: usize = 10_000;

/// Whether the alternate screen is on, for whoever must give it back (a panic, an exit).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// What the view reads.
pub struct Sources {
    /// The case and its progress.
    pub snapshot: watch::Receiver<Snapshot>,
    /// The requests in flight and the open loop's arrivals that wait.
    pub flight: Arc<crate::board::flight::Flight>,
    /// The recent figures.
    pub recent: Arc<Mutex<Recent>>,
    /// The guard's readings, thresholds and verdict.
    pub guard: Arc<Guard>,
    /// The self-check so far.
    pub check: Arc<Mutex<Option<ClientCheck>>>,
    /// The attempt's origin: records' times are seconds since it.
    pub origin: Instant,
    /// Whether to colour.
    pub color: bool,
}

/// A message to the view's thread.
enum Message {
    Line(String),
    Stop,
}

/// The view, drawing until finished (or dropped).
pub struct View {
    tx: mpsc::SyncSender<Message>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Something the view can print a line with.
#[derive(Clone, Debug)]
pub struct Lines(mpsc::SyncSender<Message>);

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Line(l) => write!(f, "Line({l:?})"),
            Message::Stop => f.write_str("Stop"),
        }
    }
}

impl Lines {
    /// Shows `text` in the view's log, and writes it after the view.
    pub fn println(&self, text: String) {
        let _ = self.0.send(Message::Line(text));
    }
}

/// Gives the screen back: leaves the alternate screen and shows the cursor, once; notes go to
/// stderr again.
pub fn restore() {
    if ACTIVE.swap(false, Ordering::AcqRel) {
        crate::console::divert(None);
        let mut stderr = std::io::stderr();
        let _ = execute!(stderr, terminal::LeaveAlternateScreen, cursor::Show);
        let _ = stderr.flush();
    }
}

impl View {
    /// Takes the screen (the alternate one) and starts drawing from `sources`; refused on a
    /// terminal that does not say its size or is smaller than [`MIN_SIZE`] (the line is drawn
    /// there instead).
    pub fn start(sources: Sources) -> std::io::Result<(View, Lines)> {
        static HOOK: Once = Once::new();
        let (width, height) = terminal::size()?;
        if width < MIN_SIZE.0 || height < MIN_SIZE.1 {
            return Err(std::io::Error::other(
                "the terminal is too small for the live view",
            ));
        }
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        let mut stderr = std::io::stderr();
        execute!(stderr, terminal::EnterAlternateScreen, cursor::Hide)?;
        ACTIVE.store(true, Ordering::Release);
        let terminal = match Terminal::new(CrosstermBackend::new(std::io::stderr())) {
            Ok(t) => t,
            Err(e) => {
                restore();
                return Err(e);
            }
        };
        let (tx, rx) = mpsc::sync_channel(256);
        let thread = std::thread::Builder::new()
            .name("llmload-live".into())
            .spawn(move || draw(terminal, &sources, &rx));
        let thread = match thread {
            Ok(t) => t,
            Err(e) => {
                restore();
                return Err(e);
            }
        };
        // Notes printed while the view holds the screen go to its log, then after it.
        let notes = Lines(tx.clone());
        crate::console::divert(Some(Box::new(move |line| {
            line.lines().for_each(|l| notes.println(l.to_owned()));
        })));
        Ok((
            View {
                tx: tx.clone(),
                thread: Some(thread),
            },
            Lines(tx),
        ))
    }

    /// Stops drawing, gives the screen back and writes the lines printed during the run.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        crate::console::divert(None);
        if let Some(thread) = self.thread.take() {
            let _ = self.tx.send(Message::Stop);
            let _ = thread.join();
        }
        restore();
    }
}

impl Drop for View {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The view's thread: a frame every [`FRAME`], lines kept as they come, until stopped.
fn draw(
    mut terminal: Terminal<CrosstermBackend<std::io::Stderr>>,
    sources: &Sources,
    rx: &mpsc::Receiver<Message>,
) {
    let mut log: Vec<String> = Vec::new();
    let mut dropped = 0_usize;
    let mut next = Instant::now();
    loop {
        let state = State::read(sources, &log);
        let _ = terminal.draw(|frame| render(frame, &state));
        next += FRAME;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(Message::Line(line)) if log.len() < LINES => log.push(line),
                Ok(Message::Line(_)) => dropped += 1,
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    restore();
                    let mut stderr = std::io::stderr().lock();
                    for line in &log {
                        let _ = writeln!(stderr, "{line}");
                    }
                    if dropped > 0 {
                        let _ =
                            writeln!(stderr, "({dropped} more lines not kept by the live view)");
                    }
                    return;
                }
                Err(RecvTimeoutError::Timeout) => break,
            }
        }
    }
}

/// What one frame shows.
#[derive(Clone, Debug, Default)]
pub struct State {
    /// The case, its stage and round, as a title.
    pub title: String,
    /// Elapsed, ETA and requests.
    pub progress: String,
    /// TTFT, ITL, throughput: a text each and its trend.
    pub figures: Vec<(String, Vec<u64>)>,
    /// Failures by kind.
    pub failures: Vec<String>,
    /// The guard: each GPU against its thresholds, then its state.
    pub guard: Vec<String>,
    /// The self-check.
    pub check: Vec<String>,
    /// The last lines printed.
    pub log: Vec<String>,
    /// Whether to colour.
    pub color: bool,
}

impl State {
    fn read(sources: &Sources, log: &[String]) -> State {
        let mut snapshot = sources.snapshot.borrow().clone();
        snapshot.flight = Some(sources.flight.counts());
        let now_s = sources.origin.elapsed().as_secs_f64();
        let recent = sources
            .recent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let check = sources
            .check
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut state = State::of(&snapshot, &recent, now_s, &sources.guard, check.as_ref());
        let keep = log.len().saturating_sub(20);
        state.log = log[keep..].to_vec();
        state.color = sources.color;
        state
    }

    /// The state of `snapshot` and `recent` at `now_s` seconds since the origin.
    pub fn of(
        snapshot: &Snapshot,
        recent: &Recent,
        now_s: f64,
        guard: &Guard,
        check: Option<&ClientCheck>,
    ) -> State {
        State {
            title: title(snapshot),
            progress: progress(snapshot),
            figures: figures(recent, now_s),
            failures: recent
                .failures
                .iter()
                .map(|(kind, n)| format!("{kind} {n}"))
                .collect(),
            guard: guard_lines(guard),
            check: check_lines(check),
            log: Vec::new(),
            color: false,
        }
    }
}

/// Draws `state` on `frame`.
pub fn render(frame: &mut Frame<'_>, state: &State) {
    let [head, figures, bottom, log] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Min(3),
    ])
    .areas(frame.area());
    let bold = if state.color {
        Style::new().add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    };
    let block = |title: String| Block::bordered().title(Line::from(title).style(bold));
    frame.render_widget(
        Paragraph::new(state.progress.as_str()).block(block(state.title.clone())),
        head,
    );
    render_figures(frame, figures, state, &block);
    let [failures, guard, check] = Layout::horizontal([
        Constraint::Percentage(20),
        Constraint::Percentage(50),
        Constraint::Percentage(30),
    ])
    .areas(bottom);
    let failed: Vec<Line> = if state.failures.is_empty() {
        vec![Line::from("none")]
    } else {
        state
            .failures
            .iter()
            .map(|l| Line::from(l.as_str()))
            .collect()
    };
    frame.render_widget(
        Paragraph::new(failed).block(block("failures".into())),
        failures,
    );
    for (area, title, lines) in [
        (guard, "guard", &state.guard),
        (check, "self-check", &state.check),
    ] {
        let lines: Vec<Line> = lines.iter().map(|l| Line::from(l.as_str())).collect();
        let text = Paragraph::new(lines).wrap(Wrap { trim: true });
        frame.render_widget(text.block(block(title.into())), area);
    }
    let shown = usize::from(log.height.saturating_sub(2));
    let skip = state.log.len().saturating_sub(shown);
    let lines: Vec<Line> = state.log[skip..]
        .iter()
        .map(|l| Line::from(l.as_str()))
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block("log".into())), log);
}

fn render_figures(
    frame: &mut Frame<'_>,
    area: Rect,
    state: &State,
    block: &dyn Fn(String) -> Block<'static>,
) {
    let window = format!(
        "last {:.0} s, trend over a minute",
        super::recent::WINDOW as f64 * SLICE
    );
    let outer = block(window);
    let inner = outer.inner(area);
    frame.render_widget(outer, area);
    let rows = Layout::vertical(vec![Constraint::Length(1); state.figures.len()]).split(inner);
    for ((text, trend), row) in state.figures.iter().zip(rows.iter()) {
        let [label, spark] =
            Layout::horizontal([Constraint::Length(62), Constraint::Min(4)]).areas(*row);
        frame.render_widget(Paragraph::new(text.as_str()), label);
        let style = if state.color {
            Style::new().cyan()
        } else {
            Style::new()
        };
        frame.render_widget(
            Sparkline::default()
                .data(trend.iter().copied())
                .style(style),
            spark,
        );
    }
}

#[cfg(test)]
mod tests;
