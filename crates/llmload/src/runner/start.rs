//! When a load begins: at once, or at `--start-at` (the instant every shard of an attempt waits
//! for), with how late it actually began recorded.

use crate::summary::shards::LoadStart;
use std::time::SystemTime;
use tokio::time::Instant;

impl super::Runner<'_> {
    /// The instant the load begins: `--start-at` on this process's monotonic clock, waited for
    /// (a stop ends the wait), else `otherwise`. Only the first load waits for `--start-at`; how
    /// late it began is kept in `load_start`. A load ready after the instant keeps it as its
    /// start all the same, so its schedule stays aligned with the other shards' and its first
    /// arrivals go out late, their send lag showing it.
    pub(super) async fn begin(&mut self, otherwise: Instant) -> Instant {
        let first = !std::mem::replace(&mut self.begun, true);
        let Some(at) = self.settings.start_at.filter(|_| first) else {
            return otherwise;
        };
        let (now, wall) = (Instant::now(), SystemTime::now());
        let (anchor, ready_before_ms) = match at.duration_since(wall) {
            Ok(ahead) => (now + ahead, ahead.as_secs_f64() * 1e3),
            Err(late) => {
                let late = late.duration();
                (
                    now.checked_sub(late).unwrap_or(now),
                    -late.as_secs_f64() * 1e3,
                )
            }
        };
        if ready_before_ms > 0.0 {
            tokio::select! {
                () = tokio::time::sleep_until(anchor) => {}
                () = self.cancel.cancelled() => {}
            }
        } else {
            self.progress.println(&format!(
                "warning: ready {:.0} ms after --start-at: the first arrivals go out late",
                -ready_before_ms
            ));
        }
        let lag = Instant::now().saturating_duration_since(anchor);
        let start = LoadStart {
            schedule_start_s: self.since(anchor),
            ready_before_ms,
            start_lag_ms: lag.as_secs_f64() * 1e3,
        };
        self.load_start = Some(start);
        if let Some(path) = &self.settings.start_file {
            if let Err(e) = crate::attempt::write_start(path, &start) {
                self.progress.println(&format!("warning: {e}"));
            }
        }
        anchor
    }
}
