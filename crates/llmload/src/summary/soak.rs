//! Soak runs: one load held for a long `--duration`, its measurement window cut into equal
//! windows so that drift shows (throughput sagging as the GPU heats, TTFT creeping up), and a
//! drift statement comparing the first full window with the last.
//!
//! Beside `window.rs` (figures over the whole measurement window) in the pipeline: records of a
//! continuous or open-loop case, plus the GPU readings of `telemetry.jsonl`, → a `series` in the
//! case's summary. Only measured requests count: the windows start where the warmup time ends.
//! A request belongs to the window in which it was sent, so the windows' request counts add up to
//! the case's; throughput counts the output tokens received inside each window, as the case's
//! window throughput does, so the windows average to it.

use crate::record::{Record, Seconds, Status};
use crate::stats::{Distribution, Samples};
use crate::telemetry::Reading;
use serde::{Deserialize, Serialize};

mod drift;
use drift::statement;
pub use drift::{drift, Change, Drift, MIN_DRIFT_RESPONSES};

/// A remainder shorter than this at the end of the measurement window is not a window of its own.
const SLACK_S: Seconds = 1e-3;

/// The windowed time series of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Length of a full window, s.
    pub window_s: Seconds,
    /// The windows, in time order; only the last may be shorter than `window_s`.
    pub windows: Vec<SeriesWindow>,
    /// First against last full window; absent with fewer than two full windows.
    pub drift: Option<Drift>,
    /// The drift in one sentence, or why there is none.
    pub drift_statement: String,
}

/// One window of a series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesWindow {
    /// Window number, from 1.
    pub index: u32,
    /// Start and end, seconds since the attempt started.
    pub span_s: [Seconds; 2],
    /// Whether it has the full window length.
    pub full: bool,
    /// Measured requests sent in the window.
    pub requests: u32,
    /// Of those, the ones that ended `ok`.
    pub ok: u32,
    /// Of those, failed or invalid.
    pub errors: u32,
    /// Of those, cancelled by a stop.
    pub cancelled: u32,
    /// Output tokens of `ok` responses received in the window ÷ its length, tokens/s.
    pub throughput_tps: f64,
    /// Time to first token of the `ok` requests sent in the window, ms.
    pub ttft_ms: Option<Distribution>,
    /// GPU readings taken in the window, over all GPUs; absent without readings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuWindow>,
}

/// GPU readings of one window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuWindow {
    /// Readings in the window (all GPUs).
    pub readings: u32,
    /// Mean temperature, °C.
    pub temperature_c_mean: f64,
    /// Highest temperature, °C.
    pub temperature_c_max: f64,
    /// Mean power draw, W, over the readings that report it.
    pub power_w_mean: Option<f64>,
    /// Highest power draw, W.
    pub power_w_max: Option<f64>,
}

/// The series of the measurement window `span`, cut into windows of `window_s`: `all` records
/// (warmup included) give the tokens received, `measured` ones the requests, `readings` the GPU.
/// The same as the run's [`SeriesBins`], fed as it feeds them.
pub fn series(
    all: &[&Record],
    measured: &[Record],
    span: (Seconds, Seconds),
    window_s: Seconds,
    readings: &[Reading],
) -> Series {
    let mut bins = SeriesBins::new(span.0, window_s);
    for r in measured {
        bins.add_request(r);
    }
    for (t, n) in all
        .iter()
        .filter(|r| r.status == Status::Ok)
        .flat_map(|r| r.event_times())
        .filter(|&(t, _)| t >= span.0 && t <= span.1)
    {
        bins.add_tokens(t, n);
    }
    let ok = measured.iter().filter(|r| r.status == Status::Ok);
    bins.finish(span, readings, super::bursts::path_streams(ok))
}

/// A soak series gathered one record at a time: per window from the start of the measurement
/// window, the measured requests sent in it (counts and TTFT samples) and the tokens received in
/// it. Windows past the end of the span fold into the last one when the span is known. During a
/// run, a window that nothing can reach any more (see [`SeriesBins::close_before`]) keeps only
/// its TTFT distribution, so that a long soak with short windows holds no samples but the open
/// windows'.
#[derive(Clone, Debug)]
pub struct SeriesBins {
    w0: Seconds,
    window_s: Seconds,
    bins: Vec<Bin>,
    /// Windows before this one are closed.
    closed: usize,
}

/// One window's figures so far.
#[derive(Clone, Debug, Default)]
struct Bin {
    requests: u32,
    ok: u32,
    errors: u32,
    cancelled: u32,
    ttft: Ttft,
    tokens: f64,
}

/// A window's TTFT: samples while requests may still be added, then their distribution. The
/// TTFTs of buffered responses whose first burst held most of them wait apart (`held`) until
/// the case says whether its path buffers ([`super::bursts::MIN_PATH_SHARE`]); a closed window
/// keeps its distribution both ways.
#[derive(Clone, Debug)]
enum Ttft {
    Open {
        kept: Samples,
        held: Samples,
    },
    /// Boxed: a soak keeps many closed windows, most of whose figures are in the box.
    Closed {
        streams: Option<Box<Distribution>>,
        buffers: Option<Box<Distribution>>,
    },
}

impl Default for Ttft {
    fn default() -> Ttft {
        Ttft::Open {
            kept: Samples::new(),
            held: Samples::new(),
        }
    }
}

impl Ttft {
    fn close(&mut self) {
        if let Ttft::Open { kept, held } = self {
            let buffers = kept.clone().distribution().map(Box::new);
            let mut all = std::mem::take(kept);
            all.merge(std::mem::take(held));
            *self = Ttft::Closed {
                streams: all.distribution().map(Box::new),
                buffers,
            };
        }
    }

    /// The distribution, with the held TTFTs where the case's path `streams`.
    fn distribution(self, streams: bool) -> Option<Distribution> {
        match self {
            Ttft::Open { mut kept, held } => {
                if streams {
                    kept.merge(held);
                }
                kept.distribution()
            }
            Ttft::Closed {
                streams: s,
                buffers,
            } => if streams { s } else { buffers }.map(|d| *d),
        }
    }
}

impl SeriesBins {
    /// Windows of `window_s` from `w0`.
    pub fn new(w0: Seconds, window_s: Seconds) -> SeriesBins {
        SeriesBins {
            w0,
            window_s,
            bins: Vec::new(),
            closed: 0,
        }
    }

    /// No request will be sent, and no token received, before `t` any more: closes the windows
    /// that end more than the slack before it. The span's end is then past `t`, so a closed
    /// window is never the last one, into which windows past the end fold.
    pub fn close_before(&mut self, t: Seconds) {
        while self.closed < self.bins.len()
            && self.w0 + (self.closed + 1) as f64 * self.window_s + SLACK_S < t
        {
            self.bins[self.closed].ttft.close();
            self.closed += 1;
        }
    }

    fn bin(&mut self, t: Seconds) -> &mut Bin {
        let i = crate::num::to_usize(((t - self.w0) / self.window_s).floor().max(0.0));
        if self.bins.len() <= i {
            self.bins.resize_with(i + 1, Bin::default);
        }
        &mut self.bins[i]
    }

    /// A measured request, in the window it was sent in.
    pub fn add_request(&mut self, r: &Record) {
        let bin = self.bin(r.sent_s);
        bin.requests += 1;
        match r.status {
            Status::Ok => {
                bin.ok += 1;
                // A TTFT the first burst of a buffered stream no longer bounds waits apart.
                let kept = super::bursts::keeps_ttft(r);
                match (&mut bin.ttft, r.ttft_ms) {
                    (Ttft::Open { kept: k, held }, Some(t)) => {
                        if kept { k } else { held }.push(t);
                    }
                    (Ttft::Closed { .. }, Some(_)) => {
                        debug_assert!(false, "a request sent in a closed window");
                    }
                    (_, None) => {}
                }
            }
            Status::Error | Status::Invalid | Status::Short => bin.errors += 1,
            Status::Cancelled => bin.cancelled += 1,
            // Planned: neither ok nor an error; counted among the window's requests.
            Status::Abandoned => {}
        }
    }

    /// `n` tokens received at `t` (inside the span).
    pub fn add_tokens(&mut self, t: Seconds, n: u32) {
        self.bin(t).tokens += f64::from(n);
    }

    /// The series over `span`, with the GPU `readings` of each window; the held TTFTs count
    /// where the case's path `streams`.
    #[expect(
        clippy::similar_names,
        reason = "`window_s` is the windows' length, `windows` the windows"
    )]
    pub fn finish(
        mut self,
        span: (Seconds, Seconds),
        readings: &[Reading],
        streams: bool,
    ) -> Series {
        let window_s = self.window_s;
        let spans = cut(span, window_s);
        self.bins
            .resize_with(self.bins.len().max(spans.len()), Bin::default);
        let overflow = self.bins.split_off(spans.len());
        if let Some(last) = self.bins.last_mut() {
            for extra in overflow {
                last.merge(extra);
            }
        }
        let count = spans.len();
        let windows: Vec<SeriesWindow> = spans
            .into_iter()
            .zip(self.bins)
            .enumerate()
            .map(|(i, ((a, b), bin))| {
                let last = i + 1 == count;
                let in_window = |t: Seconds| t >= a && (t < b || (last && t <= b));
                let gpu = gpu_window(readings.iter().filter(|r| in_window(r.t_s)));
                window_of(i, (a, b), b - a >= window_s - SLACK_S, bin, gpu, streams)
            })
            .collect();
        let drift = drift(&windows);
        let drift_statement = statement(drift.as_ref(), &windows, window_s);
        Series {
            window_s,
            windows,
            drift,
            drift_statement,
        }
    }
}

impl Bin {
    fn merge(&mut self, other: Bin) {
        self.requests += other.requests;
        self.ok += other.ok;
        self.errors += other.errors;
        self.cancelled += other.cancelled;
        match (&mut self.ttft, other.ttft) {
            (
                Ttft::Open { kept, held },
                Ttft::Open {
                    kept: more,
                    held: more_held,
                },
            ) => {
                kept.merge(more);
                held.merge(more_held);
            }
            // Only open windows fold into the last (see `SeriesBins::close_before`).
            _ => debug_assert!(false, "a closed window folded"),
        }
        self.tokens += other.tokens;
    }
}

/// Window spans covering `span`: full ones, then a shorter remainder if there is one.
fn cut(span: (Seconds, Seconds), window_s: Seconds) -> Vec<(Seconds, Seconds)> {
    let length = (span.1 - span.0).max(0.0);
    if window_s <= 0.0 || length <= SLACK_S {
        return Vec::new();
    }
    let full = crate::num::to_usize((length / window_s + SLACK_S / window_s).floor());
    let mut spans: Vec<(Seconds, Seconds)> = (0..full)
        .map(|i| {
            let a = span.0 + i as f64 * window_s;
            (a, (a + window_s).min(span.1))
        })
        .collect();
    let covered = span.0 + full as f64 * window_s;
    if span.1 - covered > SLACK_S {
        spans.push((covered, span.1));
    }
    spans
}

fn window_of(
    i: usize,
    (a, b): (Seconds, Seconds),
    full: bool,
    bin: Bin,
    gpu: Option<GpuWindow>,
    streams: bool,
) -> SeriesWindow {
    SeriesWindow {
        index: crate::num::count(i).saturating_add(1),
        span_s: [a, b],
        full,
        requests: bin.requests,
        ok: bin.ok,
        errors: bin.errors,
        cancelled: bin.cancelled,
        throughput_tps: bin.tokens / (b - a).max(1e-9),
        ttft_ms: bin.ttft.distribution(streams),
        gpu,
    }
}

fn gpu_window<'a>(readings: impl Iterator<Item = &'a Reading>) -> Option<GpuWindow> {
    let readings: Vec<&Reading> = readings.collect();
    let n = readings.len();
    if n == 0 {
        return None;
    }
    let temperatures = readings.iter().map(|r| r.temperature_c);
    let powers: Vec<f64> = readings.iter().filter_map(|r| r.power_w).collect();
    Some(GpuWindow {
        readings: crate::num::count(n),
        temperature_c_mean: temperatures.clone().sum::<f64>() / n as f64,
        temperature_c_max: temperatures.fold(f64::NEG_INFINITY, f64::max),
        power_w_mean: (!powers.is_empty())
            .then(|| powers.iter().sum::<f64>() / powers.len() as f64),
        power_w_max: powers.iter().copied().reduce(f64::max),
    })
}

#[cfg(test)]
mod tests;
