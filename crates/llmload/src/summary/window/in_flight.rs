//! Requests in flight over a window: the time-averaged count and its peak, swept edge by edge
//! from each request's (sent, last seen) span.

use crate::record::Seconds;

/// (time-averaged, peak) requests in flight over `window`, from each request's (sent, last seen)
/// span: a request is in flight from `sent` to its final event (or its last token event when it
/// failed).
pub fn concurrency(spans: &[(Seconds, Seconds)], window: (Seconds, Seconds)) -> (f64, u32) {
    let mut edges: Vec<(Seconds, bool)> = spans
        .iter()
        .flat_map(|&(s, e)| [(s, true), (e, false)])
        .collect();
    // Ends sort before starts at the same instant: back-to-back requests do not overlap.
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut sweep = Sweep::new(window.0);
    for (t, start) in edges {
        sweep.edge(t, start, window.1);
    }
    sweep.finish(window.1)
}

/// Requests in flight swept edge by edge in time order: the area under their count over the
/// window (for the time average) and the count's peak at a start inside it.
#[derive(Clone, Debug)]
pub(super) struct Sweep {
    w0: Seconds,
    /// The latest edge swept.
    at: Seconds,
    now: i64,
    area: f64,
    peak: i64,
    /// In flight at the window's start (`sent ≤ w0 < end`).
    at_start: Option<i64>,
}

impl Sweep {
    pub(super) fn new(w0: Seconds) -> Sweep {
        Sweep {
            w0,
            at: f64::NEG_INFINITY,
            now: 0,
            area: 0.0,
            peak: 0,
            at_start: None,
        }
    }

    /// One edge at `t`; the window ends at `w1` or later.
    pub(super) fn edge(&mut self, t: Seconds, start: bool, w1: Seconds) {
        if self.at_start.is_none() && t > self.w0 {
            self.at_start = Some(self.now);
        }
        let (a, b) = (self.at.max(self.w0), t.min(w1));
        if b > a {
            self.area += self.now as f64 * (b - a);
        }
        self.at = self.at.max(t);
        self.now += if start { 1 } else { -1 };
        if start && t >= self.w0 && t <= w1 {
            self.peak = self.peak.max(self.now);
        }
    }

    pub(super) fn finish(self, w1: Seconds) -> (f64, u32) {
        let at_start = self.at_start.unwrap_or(self.now);
        let peak = self.peak.max(at_start).max(0);
        (
            self.area / (w1 - self.w0).max(1e-9),
            u32::try_from(peak).unwrap_or(u32::MAX),
        )
    }
}
