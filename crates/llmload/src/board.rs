//! A run's live figures for whoever watches it from outside: the board behind `--metrics-listen`.
//!
//! The board is fed from where the progress line is fed ([`crate::progress::Progress`]): one
//! update per ended request (a short lock, never one per token), and two atomic counters for the
//! requests in flight. Everything else (the guard's readings, the self-check, the case and its
//! ETA) is read when a scraper asks, so the run pays nothing between scrapes. Its counters are
//! sums over the records as they are written, so at the end they equal `requests.jsonl`.

use crate::guard::Guard;
use crate::record::{ErrorKind, Phase, Record, Status};
use crate::summary::client_check::ClientCheck;
use histogram::Histogram;
use snapshot::Snapshot;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use tokio::sync::watch;

mod families;
pub mod flight;
pub mod histogram;
pub mod server;
pub mod snapshot;
pub mod text;

/// What names the run in its `llmload_info` series.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Info {
    /// The attempt id (a shard's: the attempt's own).
    pub attempt_id: String,
    /// `I/N` for a shard, `0/1` for a whole attempt.
    pub shard: String,
    /// The API spoken.
    pub api: String,
    /// The model, as the server named it (scrubbed and made printable).
    pub model: String,
}

/// The live state of one run.
#[derive(Debug)]
pub struct Board {
    info: OnceLock<Info>,
    /// When the process started serving, seconds since the Unix epoch.
    start_unix_s: f64,
    /// The requests in flight and the open loop's arrivals that wait.
    flight: Arc<flight::Flight>,
    cases: Mutex<BTreeMap<String, CaseCounts>>,
    finished: AtomicBool,
    guard: OnceLock<Arc<Guard>>,
    snapshot: OnceLock<watch::Receiver<Snapshot>>,
    check: Mutex<Option<ClientCheck>>,
}

/// The counters and histograms of one case.
#[derive(Clone, Debug)]
struct CaseCounts {
    /// Requests ended, by phase and status.
    requests: BTreeMap<(Phase, Status), u64>,
    /// Requests that did not end `ok`, by phase and error kind.
    errors: BTreeMap<(Phase, ErrorKind), u64>,
    /// Prompt tokens asked for, by phase (warmup, measured).
    prompt_tokens: [u64; 2],
    /// Output tokens received, by phase.
    output_tokens: [u64; 2],
    ttft: Histogram,
    itl: Histogram,
    complete: Histogram,
    send_lag: Histogram,
}

impl Default for CaseCounts {
    fn default() -> Self {
        CaseCounts {
            requests: BTreeMap::new(),
            errors: BTreeMap::new(),
            prompt_tokens: [0; 2],
            output_tokens: [0; 2],
            ttft: Histogram::new(histogram::TTFT),
            itl: Histogram::new(histogram::ITL),
            complete: Histogram::new(histogram::COMPLETE),
            send_lag: Histogram::new(histogram::SEND_LAG),
        }
    }
}

/// Every status a record may end with.
const STATUSES: [Status; 6] = [
    Status::Ok,
    Status::Invalid,
    Status::Short,
    Status::Error,
    Status::Cancelled,
    Status::Abandoned,
];

/// A status's name, as `requests.jsonl` writes it.
pub fn status_name(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Invalid => "invalid",
        Status::Short => "short",
        Status::Error => "error",
        Status::Cancelled => "cancelled",
        Status::Abandoned => "abandoned",
    }
}

/// A phase's name, as `requests.jsonl` writes it.
pub fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Warmup => "warmup",
        Phase::Measured => "measured",
        Phase::Canary => "canary",
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Board {
    /// An empty board, counting the requests in flight on `flight`.
    pub fn new(flight: Arc<flight::Flight>) -> Arc<Board> {
        let start_unix_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Arc::new(Board {
            info: OnceLock::new(),
            start_unix_s,
            flight,
            cases: Mutex::new(BTreeMap::new()),
            finished: AtomicBool::new(false),
            guard: OnceLock::new(),
            snapshot: OnceLock::new(),
            check: Mutex::new(None),
        })
    }

    /// Names the run (once its target and attempt are known).
    pub fn set_info(&self, info: Info) {
        let _ = self.info.set(info);
    }

    /// Reads the guard's readings, thresholds and verdict from `guard`.
    pub fn watch_guard(&self, guard: Arc<Guard>) {
        let _ = self.guard.set(guard);
    }

    /// Reads the case, its progress and its ETA from the progress line's snapshots.
    pub fn watch_progress(&self, snapshot: watch::Receiver<Snapshot>) {
        let _ = self.snapshot.set(snapshot);
    }

    /// The self-check's verdict so far.
    pub fn client_check(&self, check: ClientCheck) {
        *lock(&self.check) = Some(check);
    }

    /// The run has ended: every record is counted.
    pub fn finish(&self) {
        self.finished.store(true, Ordering::Release);
    }

    /// A load of `cases` begins: their requests' counters start at zero, so that a scraper
    /// sees each series from its start.
    pub fn cases(&self, cases: &[String]) {
        let mut all = lock(&self.cases);
        for case in cases {
            let counts = all.entry(case.clone()).or_default();
            for status in STATUSES {
                counts
                    .requests
                    .entry((Phase::Measured, status))
                    .or_insert(0);
            }
        }
    }

    /// A request ended and was written: counted by case, phase and status, its tokens added,
    /// and (measured) its latencies observed.
    pub fn record(&self, r: &Record) {
        let mut all = lock(&self.cases);
        if !all.contains_key(&r.case) {
            all.insert(r.case.clone(), CaseCounts::default());
        }
        let Some(counts) = all.get_mut(&r.case) else {
            return;
        };
        *counts.requests.entry((r.phase, r.status)).or_insert(0) += 1;
        if let Some(kind) = r.error_kind {
            *counts.errors.entry((r.phase, kind)).or_insert(0) += 1;
        }
        let phase = usize::from(r.phase == Phase::Measured);
        counts.prompt_tokens[phase] += u64::from(r.input_tokens);
        counts.output_tokens[phase] += u64::from(r.generated_tokens());
        if r.phase != Phase::Measured {
            return;
        }
        if let Some(scheduled) = r.scheduled_s {
            counts.send_lag.observe((r.sent_s - scheduled).max(0.0));
        }
        if r.status == Status::Ok {
            if let Some(ttft) = r.ttft_ms {
                counts.ttft.observe(ttft / 1e3);
            }
            if let Some(e2e) = r.e2e_ms {
                counts.complete.observe(e2e / 1e3);
            }
            for gap in r.itl_ms() {
                counts.itl.observe(gap / 1e3);
            }
        }
    }

    /// What counts the requests in flight on this board.
    pub fn flight(&self) -> Arc<flight::Flight> {
        self.flight.clone()
    }

    /// Requests begun and not ended.
    pub fn in_flight(&self) -> u64 {
        self.flight.in_flight()
    }

    /// An open loop's arrivals that are due and whose request has not begun (0 without one).
    pub fn backlog(&self) -> u64 {
        self.flight.backlog()
    }

    /// The exposition of everything on the board, in `format`.
    pub fn render(&self, format: text::Format) -> String {
        families::render(self, format)
    }
}

#[cfg(test)]
mod tests;
