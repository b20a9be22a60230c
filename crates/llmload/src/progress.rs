//! Live progress beside the runner: one line on stderr, redrawn at most four times a second and
//! cleared at the end — only when stderr is a terminal and the run is not `--quiet`. The runner
//! and the campaign loop only report events to a [`Progress`] handle (a `watch` channel); they
//! never know whether a terminal is listening. Colour only on a terminal, and never with
//! `NO_COLOR` set.
//!
//! The line: the case and its round, requests done of the total, the running median TTFT and
//! the output tokens/s of the case so far, and the guard's last GPU reading.

use crate::fmt::number;
use crate::guard::Guard;
use crate::record::{Record, Status};
use crate::summary::window::LoadSummary;
use crate::summary::CaseSummary;
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

/// The running median is over this many most recent TTFTs of the case.
pub const TTFT_WINDOW: usize = 1000;

/// Time between redraws.
pub const REDRAW: Duration = Duration::from_millis(250);

/// What the line shows, as the runner reported it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
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
    /// Of those ended, how many did not end `ok`.
    pub failed: u64,
    /// TTFTs of the case's last `ok` responses, ms.
    pub ttft_ms: VecDeque<f64>,
    /// Output tokens of the case's `ok` responses.
    pub tokens: u64,
    /// First send and last completion of the case's measured requests, seconds since the
    /// attempt started.
    pub span_s: Option<(f64, f64)>,
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

    fn record(&mut self, r: &Record) {
        self.done += 1;
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
}

impl Planned {
    /// What `plan` plans.
    pub fn of(plan: &CasePlan) -> Planned {
        let by_count = |bound: &Bound| match bound {
            Bound::Requests(n) if plan.warmup_time.is_zero() => Some(*n),
            _ => None,
        };
        match &plan.shape {
            Shape::Rounds { rounds } => Planned {
                rounds: Some(*rounds),
                requests: Some(u64::from(*rounds) * u64::from(plan.case.concurrency)),
            },
            Shape::ClosedContinuous { bound } | Shape::Open { bound, .. } => Planned {
                rounds: None,
                requests: by_count(bound),
            },
            Shape::Sessions { bound, spec, .. } => Planned {
                rounds: None,
                requests: by_count(bound).map(|n| n.saturating_mul(u64::from(spec.turns))),
            },
            Shape::Replay { arrivals, .. } => Planned {
                rounds: None,
                requests: plan.warmup_time.is_zero().then_some(*arrivals as u64),
            },
        }
    }
}

/// Whether to colour: on a terminal, unless `NO_COLOR` is set to anything non-empty.
pub fn use_color(terminal: bool, no_color: Option<&str>) -> bool {
    terminal && no_color.is_none_or(str::is_empty)
}

/// The progress line of `s` with the guard's `reading`, at most `width` characters of text
/// (parts are dropped from the end to fit), in colour when `color`.
pub fn line(s: &Snapshot, reading: Option<&Reading>, width: usize, color: bool) -> String {
    let mut parts: Vec<(String, &str)> =
        vec![(format!("case {}/{} {}", s.case.0, s.case.1, s.case_id), "1")];
    match s.round {
        Some((0, rounds)) => parts.push((format!("warmup, then {rounds} rounds"), "")),
        Some((round, rounds)) => parts.push((format!("round {round}/{rounds}"), "")),
        None => {}
    }
    let total = s.total.map_or(String::new(), |t| format!("/{t}"));
    let failed = if s.failed > 0 {
        format!(" ({} failed)", s.failed)
    } else {
        String::new()
    };
    parts.push((format!("{}{total} requests{failed}", s.done), ""));
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

    /// A case starts: number `index` (1-based) of `total`, with its measured requests planned.
    pub fn case(&self, index: usize, total: usize, plan: &CasePlan) {
        let planned = Planned::of(plan);
        self.update(|s| {
            *s = Snapshot {
                case: (index, total),
                case_id: plan.case.id.clone(),
                round: planned.rounds.map(|r| (0, r)),
                total: planned.requests,
                ..Snapshot::default()
            }
        });
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

    /// Prints `text` as a line of its own on stderr, clearing the progress line first.
    pub fn println(&self, text: &str) {
        let text = crate::secrets::scrub(text);
        let text = crate::console::printable(&text);
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
            let text = line(&snapshot, guard.latest().as_ref(), width, shared.color);
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

fn nominal(load: &LoadSummary) -> String {
    match (load.nominal_rate_rps, load.nominal_concurrency) {
        (Some(rate), Some(cap)) => format!("{} requests/s, at most {cap} in flight", number(rate)),
        (Some(rate), None) => format!("{} requests/s, uncapped", number(rate)),
        (None, Some(c)) => format!("{c} in flight"),
        (None, None) => "none".into(),
    }
}

/// The line printed when a case ends: its counts and headline figures.
pub fn case_line(done: usize, total: usize, case: &CaseSummary) -> String {
    let first = case
        .first_error
        .as_ref()
        .map_or_else(String::new, |e| format!("; first failure: {e}"));
    case_figures(done, total, case) + &first
}

/// The counts and headline figures of [`case_line`].
fn case_figures(done: usize, total: usize, case: &CaseSummary) -> String {
    if let Some(load) = &case.load {
        let stage = load.stage.as_ref().map_or_else(String::new, |_| {
            format!(" [{}]", crate::report::text::window_load(load))
        });
        return format!(
            "case {done}/{total} {}{stage}: {} ok, {} failed; {:.2} tokens/s over the window; in flight \
             {:.2} on average, {} at peak (nominal: {}); send lag p99 {}",
            case.id,
            case.counts.ok,
            case.counts.error + case.counts.cancelled + case.counts.invalid,
            load.throughput_tps,
            load.achieved_concurrency_mean,
            load.achieved_concurrency_peak,
            nominal(load),
            load.send_lag_ms
                .as_ref()
                .map_or_else(|| "–".to_owned(), |d| format!("{:.3} ms", d.p99)),
        );
    }
    let ttft = case
        .ttft_ms
        .as_ref()
        .map_or("–".into(), |d| format!("{:.1} ms", d.median));
    if let Some(s) = &case.sessions {
        return format!(
            "case {done}/{total} {}: {} of {} sessions complete ({} turns each), {} ok, {} \
             invalid, {} failed; median TTFT {ttft}",
            case.id,
            s.completed,
            s.started,
            s.turns,
            case.counts.ok,
            case.counts.invalid,
            case.counts.error + case.counts.cancelled,
        );
    }
    let tps = case
        .throughput_tps
        .as_ref()
        .map_or("–".into(), |t| format!("{:.2}", t.mean));
    format!(
        "case {done}/{total} {}: {}/{} rounds complete, {} ok, {} invalid, {} failed; median TTFT {ttft}, {tps} tokens/s",
        case.id,
        case.rounds.iter().filter(|r| r.complete).count(),
        case.rounds_planned,
        case.counts.ok,
        case.counts.invalid,
        case.counts.error + case.counts.cancelled,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

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
        let text = line(&snapshot(), Some(&reading), 200, false);
        assert_eq!(
            text,
            "case 2/6 in2048-c4-out256 · round 2/3 · 4/12 requests · TTFT p50 35.0 ms · \
             340.0 tokens/s · GPU 0 73 °C 281 W"
        );
        assert!(!text.contains('\x1b'));
        let colored = line(&snapshot(), Some(&reading), 200, true);
        assert!(colored.contains("\x1b[1mcase 2/6"), "{colored:?}");
        assert!(colored.contains("\x1b[33mGPU 0"), "{colored:?}");
    }

    #[test]
    fn a_narrow_terminal_drops_parts_from_the_end_and_failures_show() {
        let mut s = snapshot();
        let mut failed = fixture::sweep_report().records[1].clone();
        failed.status = Status::Error;
        s.record(&failed);
        let text = line(&s, None, 50, false);
        assert!(text.chars().count() <= 50, "{text}");
        assert!(text.starts_with("case 2/6"), "{text}");
        assert!(!text.contains("tokens/s"), "{text}");
        let wide = line(&s, None, 200, false);
        assert!(wide.contains("5/12 requests (1 failed)"), "{wide}");
        assert!(!wide.contains("GPU"), "no reading, no GPU part");
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
