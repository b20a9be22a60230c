//! The live view's recent figures: the measured requests of the last minute in slices of
//! [`SLICE`], each with its TTFTs, its inter-token gaps (in histograms of two significant
//! digits, so that a slice's memory does not grow with its tokens), its output tokens by the
//! time they arrived, and the responses that ended in it; and the failures by kind over the run.
//! The runner adds a record in one short update; the view reads it a few times a second.

use crate::record::{ErrorKind, Phase, Record, Status};
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, VecDeque};

/// One slice of time.
pub const SLICE: f64 = 2.0;

/// Slices kept: a minute.
pub const SLICES: usize = 30;

/// The last window the view's headline figures are over, in slices (30 s).
pub const WINDOW: usize = 15;

/// What ended, or arrived, within one slice.
#[derive(Clone, Debug)]
struct Slice {
    /// Its index: its start is `index × SLICE` seconds after the attempt's origin.
    index: u64,
    /// TTFT of the `ok` responses that ended in it, µs.
    ttft_us: Histogram<u64>,
    /// Inter-token gaps of those responses, µs.
    itl_us: Histogram<u64>,
    /// Output tokens that arrived in it.
    tokens: u64,
    /// Responses that ended in it (measured, any status but abandoned).
    responses: u64,
}

fn histogram() -> Histogram<u64> {
    // 1 µs to an hour; new_with_bounds only fails on bounds like these being wrong.
    Histogram::new_with_bounds(1, 3_600_000_000, 2)
        .unwrap_or_else(|_| Histogram::new(2).unwrap_or_else(|_| unreachable!()))
}

impl Slice {
    fn new(index: u64) -> Slice {
        Slice {
            index,
            ttft_us: histogram(),
            itl_us: histogram(),
            tokens: 0,
            responses: 0,
        }
    }
}

/// The recent figures.
#[derive(Clone, Debug, Default)]
pub struct Recent {
    slices: VecDeque<Slice>,
    /// Measured requests that did not end `ok`, by kind, over the run.
    pub failures: BTreeMap<ErrorKind, u64>,
    /// The load's requests are embeddings or rerank: nothing streamed, so their latency stands
    /// in TTFT's place and their tokens are the prompt tokens processed, counted when each ends
    /// ([`Record::event_times`]).
    pub pooling: bool,
}

/// A figure over the last window and its trend: one value per slice, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trend {
    /// Median over the window.
    pub p50: Option<f64>,
    /// 99th percentile over the window.
    pub p99: Option<f64>,
    /// Per slice (every slice kept, oldest first): its median, 0 where it had none.
    pub per_slice: Vec<u64>,
}

fn slice_of(t_s: f64) -> u64 {
    crate::num::to_u64((t_s.max(0.0) / SLICE).floor())
}

fn micros(ms: f64) -> u64 {
    crate::num::to_u64((ms * 1e3).round().clamp(1.0, 3.6e9))
}

impl Recent {
    /// A new load begins: its figures are its own (the failures by kind stay, over the run).
    pub fn new_load(&mut self) {
        self.slices.clear();
        self.pooling = false;
    }

    /// A measured request ended: its tokens by when they arrived, its latencies and its end
    /// where it ended, its failure by kind.
    pub fn add(&mut self, r: &Record) {
        if r.phase != Phase::Measured || r.status == Status::Abandoned {
            return;
        }
        if let Some(kind) = r.error_kind {
            *self.failures.entry(kind).or_insert(0) += 1;
        }
        for (t, tokens) in r.event_times() {
            if let Some(slice) = self.slice(slice_of(t)) {
                slice.tokens += u64::from(tokens);
            }
        }
        self.pooling |= r.pooling.is_some();
        let Some(slice) = self.slice(slice_of(r.last_seen())) else {
            return;
        };
        slice.responses += 1;
        if r.pooling.is_some() {
            // Its tokens were counted above, when it was answered (`event_times`).
            if let (Status::Ok, Some(latency)) = (r.status, r.e2e_ms) {
                let _ = slice.ttft_us.record(micros(latency));
            }
            return;
        }
        if r.status == Status::Ok {
            if let Some(ttft) = r.ttft_ms {
                let _ = slice.ttft_us.record(micros(ttft));
            }
            for gap in r.itl_ms() {
                let _ = slice.itl_us.record(micros(gap));
            }
        }
    }

    /// The slice of `index`, made where it is newer than every slice kept; `None` when it is
    /// older than the oldest kept.
    fn slice(&mut self, index: u64) -> Option<&mut Slice> {
        let newest = self.slices.back().map(|s| s.index);
        if newest.is_none_or(|n| index > n) {
            let from = newest.map_or(index, |n| {
                (n + 1).max(index.saturating_sub(SLICES as u64 - 1))
            });
            for i in from..=index {
                self.slices.push_back(Slice::new(i));
            }
            while self.slices.len() > SLICES {
                self.slices.pop_front();
            }
        }
        let oldest = self.slices.front()?.index;
        let at = usize::try_from(index.checked_sub(oldest)?).ok()?;
        self.slices.get_mut(at)
    }

    /// The slices up to `now_s` (the one running left out: it is not over), `n` of them at most.
    fn done(&self, now_s: f64, n: usize) -> impl Iterator<Item = &Slice> {
        let current = slice_of(now_s);
        let over: Vec<&Slice> = self
            .slices
            .iter()
            .filter(|s| s.index < current && s.index + SLICES as u64 >= current)
            .collect();
        let skip = over.len().saturating_sub(n);
        over.into_iter().skip(skip)
    }

    /// TTFT over the last window, ms, and its trend.
    pub fn ttft(&self, now_s: f64) -> Trend {
        self.trend(now_s, |s| &s.ttft_us)
    }

    /// Inter-token latency over the last window, ms, and its trend.
    pub fn itl(&self, now_s: f64) -> Trend {
        self.trend(now_s, |s| &s.itl_us)
    }

    fn trend(&self, now_s: f64, of: fn(&Slice) -> &Histogram<u64>) -> Trend {
        let mut window = histogram();
        for s in self.done(now_s, WINDOW) {
            let _ = window.add(of(s));
        }
        // The middle of the value's bucket (two significant digits: within about 1 %).
        let at = |h: &Histogram<u64>, q: f64| {
            (!h.is_empty()).then(|| h.median_equivalent(h.value_at_quantile(q)) as f64 / 1e3)
        };
        Trend {
            p50: at(&window, 0.5),
            p99: at(&window, 0.99),
            per_slice: self
                .done(now_s, SLICES)
                .map(|s| {
                    if s.is_empty_of(of) {
                        0
                    } else {
                        of(s).value_at_quantile(0.5)
                    }
                })
                .collect(),
        }
    }

    /// Output tokens per second over the last window, and per slice (tokens/s).
    pub fn throughput(&self, now_s: f64) -> (Option<f64>, Vec<u64>) {
        let window: Vec<&Slice> = self.done(now_s, WINDOW).collect();
        let rate = (!window.is_empty()).then(|| {
            window.iter().map(|s| s.tokens).sum::<u64>() as f64 / (window.len() as f64 * SLICE)
        });
        let per_slice = self
            .done(now_s, SLICES)
            .map(|s| crate::num::to_u64((s.tokens as f64 / SLICE).round()))
            .collect();
        (rate, per_slice)
    }

    /// Responses per second over the last window.
    pub fn responses_per_s(&self, now_s: f64) -> Option<f64> {
        let window: Vec<&Slice> = self.done(now_s, WINDOW).collect();
        (!window.is_empty()).then(|| {
            window.iter().map(|s| s.responses).sum::<u64>() as f64 / (window.len() as f64 * SLICE)
        })
    }
}

impl Slice {
    fn is_empty_of(&self, of: fn(&Slice) -> &Histogram<u64>) -> bool {
        of(self).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ok_record;

    #[test]
    fn the_window_holds_the_slices_that_are_over_and_forgets_older_ones() {
        let mut recent = Recent::default();
        // One response a second for 100 s, TTFT 10 ms then 100 ms from 80 s on; 4 events each,
        // 5 ms apart.
        for second in 0..100 {
            let ttft = if second >= 80 { 100.0 } else { 10.0 };
            let events = vec![ttft, ttft + 5.0, ttft + 10.0, ttft + 15.0];
            recent.add(&ok_record(f64::from(second), None, events));
        }
        let now = 100.0;
        let ttft = recent.ttft(now);
        // The last 30 s: 20 responses at 100 ms, 10 at 10 ms.
        assert!((ttft.p50.expect("p50") - 100.0).abs() < 1.0, "{ttft:?}");
        assert!((ttft.p99.expect("p99") - 100.0).abs() < 1.0, "{ttft:?}");
        assert_eq!(ttft.per_slice.len(), SLICES, "the minute kept");
        let itl = recent.itl(now);
        assert!((itl.p50.expect("p50") - 5.0).abs() < 0.1, "{itl:?}");
        // 4 tokens a second.
        let (rate, per_slice) = recent.throughput(now);
        assert!((rate.expect("rate") - 4.0).abs() < 1e-9, "{rate:?}");
        assert!(per_slice.iter().all(|t| *t == 4), "{per_slice:?}");
        assert!((recent.responses_per_s(now).expect("rate") - 1.0).abs() < 1e-9);
        assert!(recent.slices.len() <= SLICES);
        // A record older than the minute kept changes nothing.
        recent.add(&ok_record(1.0, None, vec![1.0]));
        assert_eq!(recent.ttft(now), ttft);
    }

    #[test]
    fn failures_are_counted_by_kind_and_a_quiet_minute_has_no_figures() {
        let mut recent = Recent::default();
        let mut failed = ok_record(3.0, None, vec![]);
        failed.status = Status::Error;
        failed.error_kind = Some(ErrorKind::Timeout);
        recent.add(&failed);
        recent.add(&failed);
        assert_eq!(recent.failures.get(&ErrorKind::Timeout), Some(&2));
        assert_eq!(recent.ttft(10.0).p50, None);
        assert_eq!(Recent::default().throughput(10.0).0, None);
        recent.add(&ok_record(4.0, None, vec![10.0]));
        assert!(recent.ttft(10.0).p50.is_some());
        recent.new_load();
        assert_eq!(
            recent.ttft(10.0).p50,
            None,
            "the last load's figures are gone"
        );
        assert_eq!(
            recent.failures.get(&ErrorKind::Timeout),
            Some(&2),
            "failures stay"
        );
    }

    #[test]
    fn an_embeddings_answer_gives_its_latency_and_the_prompt_tokens_it_processed() {
        let mut recent = Recent::default();
        for second in 0..10 {
            let mut r = ok_record(f64::from(second), None, Vec::new());
            r.e2e_ms = Some(40.0);
            r.done_s = Some(f64::from(second) + 0.04);
            r.prompt_tokens = Some(256);
            r.pooling = Some(crate::record::Pooling {
                inputs: 4,
                tokens: 256,
                results: Some(4),
                dimension: Some(64),
            });
            recent.add(&r);
        }
        assert!(recent.pooling);
        let latency = recent.ttft(10.0);
        assert!(
            (latency.p50.expect("p50") - 40.0).abs() < 0.5,
            "{latency:?}"
        );
        assert_eq!(recent.itl(10.0).p50, None, "nothing streamed");
        let (rate, _) = recent.throughput(10.0);
        assert!((rate.expect("rate") - 256.0).abs() < 1e-9, "{rate:?}");
        recent.new_load();
        assert!(!recent.pooling);
    }
}
