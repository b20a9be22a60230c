//! The progress line: one line on stderr, redrawn at most four times a second, with the case,
//! its requests (sent, in flight, waiting), elapsed time and ETA, the running median TTFT, the output tokens/s and the
//! guard's last GPU reading.

use super::{Shared, Snapshot, REDRAW};
use crate::guard::Guard;
use crate::telemetry::Reading;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

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
        (s.cancelled, "cancelled"),
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
    if let Some(words) = s.flight_words() {
        parts.push((words, ""));
    }
    parts.push((elapsed_and_eta(s, elapsed), ""));
    let median = s.ttft_median_ms();
    let what = if s.pooling { "latency" } else { "TTFT" };
    parts.push((format!("{what} p50 {}", crate::fmt::seconds(median)), ""));
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

/// "elapsed 1m 30s · ETA 2m", with "(draining)" once a duration-bound load's time is over and
/// requests are still in flight or waiting.
pub(super) fn elapsed_and_eta(s: &Snapshot, elapsed: Duration) -> String {
    let whole = |d: Duration| crate::fmt::span(d.as_secs() as f64);
    let eta = s.eta(elapsed).map_or_else(
        || "ETA unknown".to_owned(),
        |left| format!("ETA {}", whole(left)),
    );
    let draining = if s.draining(elapsed) {
        " (draining)"
    } else {
        ""
    };
    format!("elapsed {} · {eta}{draining}", whole(elapsed))
}

/// Redraws the line when the snapshot changes, at most every [`REDRAW`], and every second
/// anyway for the GPU reading.
pub(super) async fn draw(
    shared: Arc<Shared>,
    mut rx: watch::Receiver<Snapshot>,
    guard: Arc<Guard>,
    flight: Arc<crate::board::flight::Flight>,
) {
    // The terminal's own width (a `COLUMNS` the shell exports first), less one column.
    let width = usize::from(crate::console::width())
        .saturating_sub(1)
        .max(20);
    loop {
        let _ = tokio::time::timeout(Duration::from_secs(1), rx.changed()).await;
        let mut snapshot = rx.borrow_and_update().clone();
        snapshot.flight = Some(flight.counts());
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
