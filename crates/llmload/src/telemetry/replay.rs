//! Replay telemetry: a JSONL file of readings played on the real clock from the attempt's start
//! (a reading with `t_s = 12.5` is delivered 12.5 s in). For tests and demos without a GPU.

use super::Reading;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Reads and checks a replay file: one reading per line, `t_s` not decreasing.
pub fn load(path: &std::path::Path) -> Result<Vec<Reading>, String> {
    const MAX_BYTES: u64 = 1 << 30;
    let Some(bytes) = crate::files::read_at_most(path, MAX_BYTES)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
    else {
        return Err(format!("{}: more than {MAX_BYTES} bytes", path.display()));
    };
    let text =
        String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
    let mut readings: Vec<Reading> = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let reading: Reading = serde_json::from_str(line)
            .map_err(|e| format!("{}:{}: not a reading: {e}", path.display(), i + 1))?;
        if readings.last().is_some_and(|last| last.t_s > reading.t_s) || !reading.t_s.is_finite() {
            return Err(format!("{}:{}: t_s goes backwards", path.display(), i + 1));
        }
        readings.push(reading);
    }
    Ok(readings)
}

/// Delivers each reading at `origin + t_s` until the file ends or `stop` fires.
pub async fn play(
    path: &std::path::Path,
    origin: Instant,
    stop: &CancellationToken,
    on_reading: &mut impl FnMut(Reading),
) {
    let readings = match load(path) {
        Ok(r) => r,
        Err(e) => {
            crate::console::note(format_args!("warning: telemetry replay: {e}"));
            return;
        }
    };
    for reading in readings {
        let at = origin + std::time::Duration::from_secs_f64(reading.t_s.max(0.0));
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep_until(at) => on_reading(reading),
        }
    }
}
