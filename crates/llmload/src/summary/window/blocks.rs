//! A loop's measurement window cut into blocks of time, for the intervals of its rates: the
//! tokens, completions and completions meeting the objectives of each second, joined at the end
//! into at most [`BLOCKS`] equal blocks whose rates are averaged (batch means, Student's t over
//! the blocks). Memory: one bucket per second of the window.

use super::meets::Meets;
use crate::record::Seconds;
use crate::stats::by_unit::BLOCKS;
use crate::stats::interval::{Ci, Unit, MIN_UNITS};
use std::collections::BTreeMap;

/// What ended in one second.
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    tokens: f64,
    completed: u32,
    met: u32,
    /// Of those, meeting them where the path buffers.
    met_buffered: u32,
}

/// The window's seconds.
#[derive(Clone, Debug, Default)]
pub(super) struct Blocks {
    seconds: BTreeMap<i64, Bucket>,
}

/// The intervals of a window's rates.
#[derive(Debug)]
pub(super) struct RateIntervals {
    /// Output tokens per second.
    pub throughput: Ci,
    /// `ok` responses completed per second.
    pub completed: Ci,
    /// Responses meeting every objective per second.
    pub goodput: Ci,
}

/// The second `t` falls in.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a float-to-integer cast saturates: times are seconds since the attempt began"
)]
fn second(t: Seconds) -> i64 {
    t.floor() as i64
}

impl Blocks {
    /// `n` tokens arrived at `t` (inside the window).
    pub(super) fn tokens(&mut self, t: Seconds, n: u32) {
        self.seconds.entry(second(t)).or_default().tokens += f64::from(n);
    }

    /// A measured `ok` response completed at `d` (inside the window), meeting the objectives
    /// or not.
    pub(super) fn done(&mut self, d: Seconds, meets: Meets<bool>) {
        let b = self.seconds.entry(second(d)).or_default();
        b.completed += 1;
        b.met += u32::from(meets.streams);
        b.met_buffered += u32::from(meets.buffers);
    }

    /// The rates' intervals over the window `[w0, w1]`, goodput's as for a path that `streams`
    /// or not.
    pub(super) fn intervals(&self, w0: Seconds, w1: Seconds, streams: bool) -> RateIntervals {
        let first = second(w0);
        let span = (second(w1.ceil()) - first).max(1);
        let blocks = i64::from(BLOCKS);
        let width = (span + blocks - 1) / blocks;
        let count = usize::try_from((span + width - 1) / width).unwrap_or(0);
        let mut sums = vec![Bucket::default(); count];
        for (&s, b) in self.seconds.range(first..first + span) {
            let i = usize::try_from((s - first) / width).unwrap_or(0);
            if let Some(sum) = sums.get_mut(i) {
                sum.tokens += b.tokens;
                sum.completed += b.completed;
                sum.met += if streams { b.met } else { b.met_buffered };
            }
        }
        // Each block's own length inside the window (the first and last may be cut by it).
        let lengths: Vec<f64> = (0..count)
            .map(|i| {
                let start = (first + i64::try_from(i).unwrap_or(0) * width) as f64;
                let end = start + width as f64;
                (end.min(w1) - start.max(w0)).max(0.0)
            })
            .collect();
        let rates = |f: &dyn Fn(&Bucket) -> f64| -> Vec<f64> {
            sums.iter()
                .zip(&lengths)
                .filter(|(_, &l)| l > 0.0)
                .map(|(b, &l)| f(b) / l)
                .collect()
        };
        RateIntervals {
            throughput: Ci::t_over(&rates(&|b| b.tokens), Unit::Block, MIN_UNITS),
            completed: Ci::t_over(&rates(&|b| f64::from(b.completed)), Unit::Block, MIN_UNITS),
            goodput: Ci::t_over(&rates(&|b| f64::from(b.met)), Unit::Block, MIN_UNITS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_window_of_sixty_seconds_gives_twenty_blocks_around_its_rate() {
        let mut blocks = Blocks::default();
        let mut total = 0;
        for i in 0..600u32 {
            // 8 to 12 tokens every 0.1 s from 100.05 s: about 100 tokens/s, uneven.
            let n = 8 + u32::try_from(crate::workload::prompt::splitmix64(u64::from(i)) % 5)
                .unwrap_or(0);
            total += n;
            blocks.tokens(100.05 + f64::from(i) * 0.1, n);
        }
        let r = blocks.intervals(100.0, 160.0, true);
        assert_eq!(r.throughput.basis.units, 20);
        let i = r.throughput.interval.expect("an interval");
        let mean = f64::from(total) / 60.0;
        assert!(
            i.low < mean && mean < i.high && i.high - i.low < 10.0,
            "{i:?} {mean}"
        );
        assert_eq!(r.goodput.interval.map(|i| i.high), Some(0.0));
    }

    #[test]
    fn a_window_of_five_seconds_is_too_short_for_an_interval() {
        let mut blocks = Blocks::default();
        blocks.tokens(0.5, 10);
        let r = blocks.intervals(0.0, 4.5, true);
        assert_eq!(r.throughput.basis.units, 5);
        assert_eq!(r.throughput.interval, None);
        assert!(r
            .throughput
            .note
            .as_deref()
            .unwrap_or("")
            .contains("too few"));
    }
}
