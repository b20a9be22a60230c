//! A soak's drift: its first full window against its last, and the sentence that says it.

use super::SeriesWindow;
use crate::record::Seconds;
use crate::stats::Distribution;
use serde::{Deserialize, Serialize};

/// First against last full window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// Number of the first full window.
    pub first_window: u32,
    /// Number of the last full window.
    pub last_window: u32,
    /// Throughput, tokens/s; n is the `ok` responses sent in each window.
    pub throughput_tps: Change,
    /// Median TTFT, ms; absent when a window has no `ok` response.
    pub ttft_p50_ms: Option<Change>,
    /// p99 TTFT, ms.
    pub ttft_p99_ms: Option<Change>,
}

/// A figure in the first and in the last full window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Value in the first window.
    pub first: f64,
    /// Value in the last window.
    pub last: f64,
    /// (last − first) ÷ first × 100; absent when `first` is 0.
    pub change_pct: Option<f64>,
    /// Sample size behind `first`.
    pub n_first: usize,
    /// Sample size behind `last`.
    pub n_last: usize,
}

impl Change {
    fn new(first: f64, last: f64, n_first: usize, n_last: usize) -> Change {
        Change {
            first,
            last,
            change_pct: (first != 0.0).then(|| (last - first) / first * 100.0),
            n_first,
            n_last,
        }
    }
}

/// The fewest ok responses a window needs to take part in a drift statement: a window of a
/// handful of responses says more about chance than about drift.
pub const MIN_DRIFT_RESPONSES: u32 = 10;

/// First against last full window; `None` with fewer than two.
pub fn drift(windows: &[SeriesWindow]) -> Option<Drift> {
    let mut full = windows
        .iter()
        .filter(|w| w.full && w.ok >= MIN_DRIFT_RESPONSES);
    let first = full.next()?;
    let last = full.next_back()?;
    let (n_first, n_last) = (first.ok as usize, last.ok as usize);
    let ttft = |pick: fn(&Distribution) -> f64| {
        let (a, b) = (first.ttft_ms.as_ref()?, last.ttft_ms.as_ref()?);
        Some(Change::new(pick(a), pick(b), a.n, b.n))
    };
    Some(Drift {
        first_window: first.index,
        last_window: last.index,
        throughput_tps: Change::new(first.throughput_tps, last.throughput_tps, n_first, n_last),
        ttft_p50_ms: ttft(|d| d.median),
        ttft_p99_ms: ttft(|d| d.p99),
    })
}

#[expect(
    clippy::similar_names,
    reason = "`window_s` is the windows' length, `windows` the windows"
)]
pub(super) fn statement(
    drift: Option<&Drift>,
    windows: &[SeriesWindow],
    window_s: Seconds,
) -> String {
    let Some(d) = drift else {
        let full = windows.iter().filter(|w| w.full).count();
        let enough = windows
            .iter()
            .filter(|w| w.full && w.ok >= MIN_DRIFT_RESPONSES)
            .count();
        let plural = if full == 1 { "" } else { "s" };
        if full >= 2 {
            return format!(
                "Drift: not enough windows to state drift ({enough} of {full} full windows of {} \
                 hold at least {MIN_DRIFT_RESPONSES} ok responses; 2 needed): use longer \
                 windows (--series-window) or more load.",
                crate::fmt::span(window_s)
            );
        }
        return format!(
            "Drift: not enough windows to state drift ({full} full window{plural} of {}; 2 needed).",
            crate::fmt::span(window_s)
        );
    };
    let change = |name: &str, c: &Change, unit: &str, of: &str| {
        let pct = c.change_pct.map_or_else(
            || "change undefined from 0".to_owned(),
            |p| format!("{p:+.1} %"),
        );
        format!(
            "{name} {:.1} → {:.1} {unit} ({pct}; n {} → {} {of})",
            c.first, c.last, c.n_first, c.n_last
        )
    };
    let mut parts = vec![change(
        "throughput",
        &d.throughput_tps,
        "tokens/s",
        "ok responses",
    )];
    if let Some(c) = &d.ttft_p50_ms {
        parts.push(change("TTFT p50", c, "ms", "responses"));
    }
    if let Some(c) = &d.ttft_p99_ms {
        let descriptive = (c.n_first.min(c.n_last) as f64) * 0.01 < crate::stats::MIN_TAIL_SAMPLES;
        let note = if descriptive {
            ", descriptive only"
        } else {
            ""
        };
        parts.push(change("TTFT p99", c, "ms", &format!("responses{note}")));
    }
    format!(
        "Drift, first against last full window (windows {} and {} of {}): {}.",
        d.first_window,
        d.last_window,
        crate::fmt::span(window_s),
        parts.join("; ")
    )
}
