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

    /// An event received `at`, carrying `tokens`.
    pub fn push(&mut self, at: Instant, tokens: u32) {
        let micros = at.saturating_duration_since(self.epoch).as_micros();
        let micros = u64::try_from(micros).unwrap_or(u64::MAX) & ((1 << (64 - TOKEN_BITS)) - 1);
        let tokens = u64::from(tokens).min((1 << TOKEN_BITS) - 1);
        self.packed.push(micros << TOKEN_BITS | tokens);
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
}
