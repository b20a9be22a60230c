//! The heartbeat: when stderr is not a terminal (a pipe, a CI log), one plain line every
//! `--heartbeat` with the case, its requests (done of planned, ok and failed), those in flight
//! and waiting, and the elapsed time, so that a long case is never minutes of silence.

use super::Snapshot;
use crate::board::flight::Flight;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The heartbeat line of `s`, `elapsed` into its load (no colour, no control character).
pub(super) fn heartbeat_line(s: &Snapshot, elapsed: Duration) -> String {
    let mut parts = Vec::new();
    if let Some((k, n)) = s.repeat {
        parts.push(format!("repeat {k}/{n}"));
    }
    match s.stage_at(elapsed) {
        Some((k, n, id)) => parts.push(format!(
            "case {}/{} · stage {k}/{n} {id}",
            s.case.0, s.case.1
        )),
        None => parts.push(format!("case {}/{} {}", s.case.0, s.case.1, s.case_id)),
    }
    let total = s.total.map_or(String::new(), |t| format!(" of {t}"));
    let mut counts = format!("{} ok, {} failed", s.ok(), s.failed);
    for (n, what) in [(s.cancelled, "cancelled"), (s.abandoned, "abandoned")] {
        if n > 0 {
            let _ = write!(counts, ", {n} {what}");
        }
    }
    let short = s
        .done
        .saturating_sub(s.ok() + s.failed + s.cancelled + s.abandoned);
    if short > 0 {
        let _ = write!(counts, ", {short} short");
    }
    parts.push(format!("{}{total} requests done ({counts})", s.done));
    if let Some(words) = s.flight_words() {
        parts.push(words);
    }
    parts.push(super::line::elapsed_and_eta(s, elapsed));
    format!("progress: {}", parts.join(" · "))
}

/// Prints the heartbeat every `every` while a case runs (nothing before the first case starts),
/// until aborted.
pub(super) async fn beat(rx: watch::Receiver<Snapshot>, flight: Arc<Flight>, every: Duration) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let mut snapshot = rx.borrow().clone();
        if snapshot.case_id.is_empty() {
            continue;
        }
        snapshot.flight = Some(flight.counts());
        let elapsed = snapshot.started.map_or(Duration::ZERO, |t| t.elapsed());
        let line = heartbeat_line(&snapshot, elapsed);
        let _ = std::io::stderr()
            .lock()
            .write_all(format!("{line}\n").as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::flight::Counts;

    #[test]
    fn the_heartbeat_names_the_case_its_counts_what_is_in_flight_and_the_drain() {
        let mut s = Snapshot {
            case: (2, 3),
            case_id: "in32-poisson-r40-out16".into(),
            done: 13,
            failed: 2,
            total: None,
            duration: Some(Duration::from_secs(20)),
            ..Snapshot::default()
        };
        let line = heartbeat_line(&s, Duration::from_secs(10));
        assert_eq!(
            line,
            "progress: case 2/3 in32-poisson-r40-out16 · 13 requests done (11 ok, 2 failed) · \
             elapsed 10s · ETA 10s"
        );
        // Past the load's time, 124 in flight and 6 waiting drain at the pace so far (13 in
        // 30 s): the ETA is theirs, not 0.
        s.flight = Some(Counts {
            launched: 137,
            in_flight: 124,
            waiting: 6,
        });
        let line = heartbeat_line(&s, Duration::from_secs(30));
        assert!(line.contains("(11 ok, 2 failed) · "), "{line}");
        assert!(
            line.contains("137 sent · 124 in flight · 6 waiting · elapsed 30s · ETA 5m (draining)"),
            "{line}"
        );
        // A stop: the cancelled ones are counted as the summary counts them, not as failed.
        s.done += 120;
        s.cancelled = 120;
        let line = heartbeat_line(&s, Duration::from_secs(31));
        assert!(
            line.contains("133 requests done (11 ok, 2 failed, 120 cancelled)"),
            "{line}"
        );
    }
}
