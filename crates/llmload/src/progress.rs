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
use crate::record::{Record, Status};
use crate::telemetry::Reading;
use crate::workload::schedule::Bound;
use crate::workload::shape::{CasePlan, Shape};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

mod case_line;
pub use case_line::case_line;

/// The running median is over this many most recent TTFTs of the case.
pub const TTFT_WINDOW: usize = 1000;

/// Time between redraws.
pub const REDRAW: Duration = Duration::from_millis(250);

/// What the line shows, as the runner reported it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// `--repeat`: the repeat running (1-based) and the repeats planned.
    pub repeat: Option<(u32, u32)>,
    /// Case number (1-based) and cases planned.
    pub case: (usize, usize),
    /// Case id.
    pub case_id: String,
    /// Closed rounds: the current round and the rounds planned.
    pub round: Option<(u32, u32)>,
    /// Measured requests ended in this case.
    pub done: u64,
    /// Measured requests planned in this case, when known.
    pub total: Option<u64>,
    /// Of those ended, how many did not end `ok` (abandoned ones aside).
    pub failed: u64,
    /// Of those ended, how many the client abandoned as planned (`--cancel-after`).
    pub abandoned: u64,
    /// The best-effort responses far short of the output asked for, and whether the case so
    /// far counts them short ([`crate::summary::short`]).
    pub shortfall: crate::summary::short::Shortfall,
    /// TTFTs of the case's last `ok` responses, ms.
    pub ttft_ms: VecDeque<f64>,
    /// Output tokens of the case's `ok` responses.
    pub tokens: u64,
    /// First send and last completion of the case's measured requests, seconds since the
    /// attempt started.
    pub span_s: Option<(f64, f64)>,
    /// When the case (or staged load) started, on tokio's clock (paused in tests).
    pub started: Option<tokio::time::Instant>,
    /// How long the load lasts, when a duration bounds it.
    pub duration: Option<Duration>,
}

impl Snapshot {
    /// Median of the recent TTFTs, ms.
    pub fn ttft_median_ms(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.ttft_ms.iter().copied().collect();
        crate::stats::Distribution::from_samples(&mut v).map(|d| d.median)
    }

    /// Output tokens per second of the case so far.
    pub fn tokens_per_s(&self) -> Option<f64> {
        let (first, last) = self.span_s?;
        (last > first).then(|| self.tokens as f64 / (last - first))
    }

    /// The time left, `elapsed` into the case: what a duration bound leaves, else the requests
    /// left at the pace of those done so far; `None` when neither is known.
    pub fn eta(&self, elapsed: Duration) -> Option<Duration> {
        if let Some(duration) = self.duration {
            return Some(duration.saturating_sub(elapsed));
        }
        let total = self.total?;
        if self.done == 0 {
            return None;
        }
        let left = total.saturating_sub(self.done);
        Some(elapsed.mul_f64(left as f64 / self.done as f64))
    }

    fn record(&mut self, r: &Record) {
        self.done += 1;
        if r.status == Status::Abandoned {
            self.abandoned += 1;
            return;
        }
        if self.shortfall.add(r) && self.shortfall.short() {
            return;
        }
        if r.status != Status::Ok {
            self.failed += 1;
            return;
        }
        if let Some(ttft) = r.ttft_ms {
            if self.ttft_ms.len() == TTFT_WINDOW {
                self.ttft_ms.pop_front();
            }
            self.ttft_ms.push_back(ttft);
        }
        self.tokens += u64::from(r.generated_tokens());
        let done = r.done_s.unwrap_or(r.sent_s);
        self.span_s = Some(match self.span_s {
            Some((first, last)) => (first.min(r.sent_s), last.max(done)),
            None => (r.sent_s, done),
        });
    }
}

/// What a case plans: its rounds, and its measured requests when they are known in advance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Planned {
    /// Closed rounds: rounds planned.
    pub rounds: Option<u32>,
    /// Measured requests planned (unknown for a duration, or with a warmup time).
    pub requests: Option<u64>,
    /// How long the load lasts, when a duration bounds it.
    pub duration: Option<Duration>,
}

impl Planned {
    /// What `plan` plans.
    pub fn of(plan: &CasePlan) -> Planned {
        let by_count = |bound: &Bound| match bound {
            Bound::Requests(n) if plan.warmup_time.is_zero() => Some(*n),
            _ => None,
        };
        let by_time = |bound: &Bound| match bound {
            Bound::Duration(d) => Some(*d),
            Bound::Requests(_) => None,
        };
        match &plan.shape {
            Shape::Rounds { rounds } => Planned {
                rounds: Some(*rounds),
                requests: Some(u64::from(*rounds) * u64::from(plan.case.concurrency)),
                duration: None,
            },
            Shape::ClosedContinuous { bound } | Shape::Open { bound, .. } => Planned {
                rounds: None,
                requests: by_count(bound),
                duration: by_time(bound),
            },
            Shape::Sessions { bound, spec, .. } => Planned {
                rounds: None,
                requests: by_count(bound).map(|n| n.saturating_mul(u64::from(spec.turns))),
                duration: by_time(bound),
            },
            Shape::Replay { arrivals, .. } => Planned {
                rounds: None,
                requests: plan.warmup_time.is_zero().then_some(*arrivals as u64),
                duration: None,
            },
        }
    }

    /// What a load of `plans` plans (a staged load: every stage together): the first one's
    /// rounds, the sum of the requests and of the durations where every plan knows its own.
    pub fn of_load(plans: &[CasePlan]) -> Planned {
        let each: Vec<Planned> = plans.iter().map(Planned::of).collect();
        Planned {
            rounds: each.first().and_then(|p| p.rounds),
            requests: each.iter().map(|p| p.requests).sum(),
            duration: each.iter().map(|p| p.duration).sum(),
        }
    }
}

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
    let short = if s.shortfall.short() {
        s.shortfall.finish().map_or(0, |f| f.responses)
    } else {
        0
    };
    let apart: Vec<String> = [
        (s.failed, "failed"),
        (u64::from(short), "short"),
        (s.abandoned, "abandoned"),
    ]
    .into_iter()
    .filter(|&(n, _)| n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    let failed = if apart.is_empty() {
        String::new()
    } else {
        format!(" ({})", apart.join(", "))
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

/// Where progress goes: a handle the runner reports to; without a terminal it does nothing.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    shared: Option<Arc<Shared>>,
}

#[derive(Debug)]
struct Shared {
    tx: watch::Sender<Snapshot>,
    /// Whether the line is on screen; held while writing to stderr.
    drawn: Mutex<bool>,
    color: bool,
}

impl Progress {
    /// A handle that shows nothing.
    pub fn off() -> Progress {
        Progress::default()
    }

    /// Shows progress on stderr when it is a terminal and `quiet` is off: returns the handle and
    /// the drawing task. The guard gives the last GPU reading.
    pub fn start(quiet: bool, guard: Arc<Guard>) -> (Progress, Option<JoinHandle<()>>) {
        let terminal = std::io::stderr().is_terminal();
        if quiet || !terminal {
            return (Progress::off(), None);
        }
        let color = use_color(terminal, std::env::var("NO_COLOR").ok().as_deref());
        let (tx, rx) = watch::channel(Snapshot::default());
        let shared = Arc::new(Shared {
            tx,
            drawn: Mutex::new(false),
            color,
        });
        let task = tokio::spawn(draw(shared.clone(), rx, guard));
        (
            Progress {
                shared: Some(shared),
            },
            Some(task),
        )
    }

    /// A load starts (a case, or a staged load of `plans`): number `index` (1-based) of
    /// `total`, with its measured requests and its duration where they are planned.
    pub fn case(&self, index: usize, total: usize, plans: &[CasePlan]) {
        let Some(first) = plans.first() else {
            return;
        };
        let planned = Planned::of_load(plans);
        self.update(|s| {
            *s = Snapshot {
                repeat: s.repeat,
                case: (index, total),
                case_id: first.case.id.clone(),
                round: planned.rounds.map(|r| (0, r)),
                total: planned.requests,
                started: Some(tokio::time::Instant::now()),
                duration: planned.duration,
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

    /// A request ended; only measured ones count.
    pub fn record(&self, record: &Record) {
        if record.phase == crate::record::Phase::Measured {
            self.update(|s| s.record(record));
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
        if let Some(shared) = &self.shared {
            shared.tx.send_modify(change);
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
mod tests;
