//! The receipt times of a stream's token-carrying events, packed: at 10,000 streams in flight
//! each byte per event counts (the client's memory target is 16 KiB a stream).

use std::time::Duration;
use tokio::time::Instant;

/// Receipt times of the token-carrying events of one stream and their token counts, in 8 bytes
/// an event (an `Instant` and a count take 24): microseconds since the stream began in the high
/// 44 bits (half a year), tokens in the low 20 (a million an event; more are counted as that).
/// Records keep event times to the microsecond, so nothing they show is lost.
#[derive(Clone, Debug)]
pub struct TokenEvents {
    epoch: Instant,
    packed: Vec<u64>,
}

const TOKEN_BITS: u32 = 20;

/// The bits of an event that hold its tokens.
const TOKEN_MASK: u64 = (1 << TOKEN_BITS) - 1;

impl TokenEvents {
    /// No events yet; times are kept relative to `epoch`, which precedes them all.
    pub fn new(epoch: Instant) -> TokenEvents {
        TokenEvents {
            epoch,
            packed: Vec::new(),
        }
    }

    /// Room for `n` more events without reallocating.
    pub fn reserve(&mut self, n: usize) {
        self.packed.reserve(n);
    }

    /// An event received `at`, carrying `tokens` (earlier events brought down to `at` first:
    /// [`TokenEvents::arrived_by`]).
    pub fn push(&mut self, at: Instant, tokens: u32) {
        let micros = self.micros(at);
        self.bring_down(micros);
        let tokens = u64::from(tokens).min(TOKEN_MASK);
        self.packed.push(micros << TOKEN_BITS | tokens);
    }

    /// Something later in the stream (an event, its end) arrived at `at`.
    ///
    /// A stream's bytes arrive in order, so no event before it arrived later than `at`: one
    /// whose time is later (its read went without a kernel stamp and took the read's own, later,
    /// moment, where this read carried the stamp of when its bytes came in) is brought down to
    /// `at`. Event times therefore never go back, and each is the earliest moment the stream
    /// shows its bytes to have been there.
    pub fn arrived_by(&mut self, at: Instant) {
        let micros = self.micros(at);
        self.bring_down(micros);
    }

    /// `at` in microseconds since the epoch, within the bits an event keeps.
    fn micros(&self, at: Instant) -> u64 {
        let micros = at.saturating_duration_since(self.epoch).as_micros();
        u64::try_from(micros).unwrap_or(u64::MAX) & ((1 << (64 - TOKEN_BITS)) - 1)
    }

    /// Every event later than `micros` brought down to it (they are in order: the first one
    /// not later ends the walk back).
    fn bring_down(&mut self, micros: u64) {
        for earlier in self.packed.iter_mut().rev() {
            if *earlier >> TOKEN_BITS <= micros {
                break;
            }
            *earlier = micros << TOKEN_BITS | (*earlier & TOKEN_MASK);
        }
    }

    /// Sets each event's tokens to `counts` (one per event, in order); events left with none are
    /// dropped.
    pub fn recount(&mut self, counts: &[u32]) {
        let mask = (1u64 << TOKEN_BITS) - 1;
        let mut counts = counts.iter();
        self.packed.retain_mut(|p| {
            let tokens = u64::from(counts.next().copied().unwrap_or(0)).min(mask);
            *p = (*p & !mask) | tokens;
            tokens > 0
        });
    }

    /// Events so far.
    pub fn len(&self) -> usize {
        self.packed.len()
    }

    /// Whether no event carried tokens.
    pub fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }

    /// `at` as an event at `at` is kept: to the microsecond since the epoch, truncated. Other
    /// marks of the stream kept this way compare with the events' times exactly.
    pub fn as_kept(&self, at: Instant) -> Instant {
        let micros = at.saturating_duration_since(self.epoch).as_micros();
        self.epoch + Duration::from_micros(u64::try_from(micros).unwrap_or(u64::MAX))
    }

    /// Each event's receipt time and tokens, in order.
    pub fn iter(&self) -> impl Iterator<Item = (Instant, u32)> + '_ {
        self.packed.iter().map(|&p| {
            let at = self.epoch + Duration::from_micros(p >> TOKEN_BITS);
            (at, (p & ((1 << TOKEN_BITS) - 1)) as u32)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn token_events_keep_times_to_the_microsecond_and_their_counts() {
        let epoch = Instant::now();
        let mut events = TokenEvents::new(epoch);
        let at = [1_500u64, 20_000_123, 3_600_000_000];
        for (i, &micros) in at.iter().enumerate() {
            events.push(
                epoch + Duration::from_nanos(micros * 1_000 + 999),
                crate::num::count(i) + 1,
            );
        }
        events.push(epoch + Duration::from_secs(4_000), 5_000_000);
        let back: Vec<(Instant, u32)> = events.iter().collect();
        assert_eq!(events.len(), 4);
        for (i, &micros) in at.iter().enumerate() {
            assert_eq!(back[i].0, epoch + Duration::from_micros(micros));
            assert_eq!(back[i].1, crate::num::count(i) + 1);
        }
        // More tokens than an event can hold are counted as the most it can.
        assert_eq!(back[3].1, (1 << TOKEN_BITS) - 1);
        assert_eq!(back[3].0, epoch + Duration::from_secs(4_000));
        events.recount(&[2, 0, 3, 1]);
        let again: Vec<(Instant, u32)> = events.iter().collect();
        assert_eq!(again, vec![(back[0].0, 2), (back[2].0, 3), (back[3].0, 1)]);
    }

    #[test]
    fn an_event_stamped_before_those_read_ahead_of_it_brings_them_down_to_its_time() {
        let epoch = Instant::now();
        let ms = |m: u64| epoch + Duration::from_millis(m);
        let mut events = TokenEvents::new(epoch);
        // Read at 10 ms, then two at 31.7 ms (a read without a kernel stamp: the read's own
        // moment), then one the kernel stamped 23.7 ms, then a later one at 40 ms.
        events.push(ms(10), 1);
        events.push(epoch + Duration::from_micros(31_700), 1);
        events.push(epoch + Duration::from_micros(31_700), 2);
        events.push(epoch + Duration::from_micros(23_700), 1);
        events.push(ms(40), 1);
        let back: Vec<(Instant, u32)> = events.iter().collect();
        let at = epoch + Duration::from_micros(23_700);
        assert_eq!(
            back,
            vec![(ms(10), 1), (at, 1), (at, 2), (at, 1), (ms(40), 1)],
            "times never go back, and the counts stay"
        );
        // The stream's end, stamped before its last event's read: that event came by then.
        events.arrived_by(ms(35));
        assert_eq!(events.iter().last(), Some((ms(35), 1)));
        events.arrived_by(ms(50));
        assert_eq!(
            events.iter().last(),
            Some((ms(35), 1)),
            "a later end moves nothing"
        );
    }
}
