//! Tokens delivered in bursts. A proxy or gateway that buffers a stream (`HAProxy` in its default
//! configuration, nginx with `proxy_buffering on`, a gateway that holds the whole body) lets a
//! server's tokens through in clumps: several token events arrive within microseconds of each
//! other, then nothing until the next flush. Every response is still ok and verified, but the
//! gaps between its events are the proxy's, not the server's: ITL reads 0 ms, TPOT and the
//! decode rate come out of the flush timing, and TTFT waits for the first flush.
//!
//! Two events are *joined* when the gap between them is no longer than the smaller of
//! [`MAX_JOIN_MS`] and [`JOIN_SHARE_OF_TOKEN_TIME`] of the time per token the response implies
//! (complete time ÷ tokens); joined events make a *burst*. A burst of `m` events *held back*
//! `(m − 1) × τ` of the stream, where `τ` is the server's time between two events: its own
//! decode time where the record has it (llama-server's `timings`, vLLM's metrics), else the
//! stream's span from first to last event ÷ (events − 1). A busy client or server machine that
//! paused a few milliseconds (up to tens) joins only what came within its pause: its clumps
//! hold back little of the stream, however many events a fast stream packs into them. A proxy
//! holds back its whole flush interval (`HAProxy`'s defaults: up to 200 ms), whether that is 2
//! tokens of a slow server or 20 of a fast one.
//!
//! A response of [`MIN_EVENTS`] token events or more is *buffered* when at least
//! [`MIN_BURST_SHARE`] of its events arrived in bursts and its median burst held back at least
//! [`MIN_HOLD_MS`] of the stream; or when it arrived all at once (one burst), unless the
//! server's own timing says it produced it all within [`MIN_HOLD_MS`]. A buffered response gives
//! no ITL, TPOT or decode rate; its TTFT is kept as an upper bound only where its first burst
//! held at most half its events (else the first token waited for most of the response, and
//! TTFT is withheld).
//!
//! Buffering is a property of the path, so it is decided per case: a proxy that holds the
//! stream back does so for nearly every response through it. Where fewer than
//! [`MIN_PATH_SHARE`] of a case's examined responses arrived in bursts, the path streams and
//! those few were clumped by a moment's delay (a busy client or server machine writes or reads
//! a short stream at once now and then): they stay in every figure, and the case says how many
//! there were.

use crate::record::Record;
use crate::stats::Samples;
use serde::{Deserialize, Serialize};

/// The longest gap between two events that still joins them into one burst, ms.
pub const MAX_JOIN_MS: f64 = 1.0;
/// A join is also at most this share of the time per token the response implies.
pub const JOIN_SHARE_OF_TOKEN_TIME: f64 = 0.05;
/// Fewer token events than this are not examined.
pub const MIN_EVENTS: usize = 4;
/// The share of a response's events that must have arrived in bursts for it to count as
/// buffered (a proxy flushing faster than the server streams puts 2 or more in every flush).
pub const MIN_BURST_SHARE: f64 = 0.5;
/// The stream a buffered response's median burst must have held back, ms: well past the pause
/// of a busy machine (a few ms, now and then tens), well within a proxy's flush interval.
pub const MIN_HOLD_MS: f64 = 50.0;

/// The share of a case's examined responses that must arrive in bursts for its path to count
/// as buffering; below it, the responses that did are kept in the figures.
pub const MIN_PATH_SHARE: f64 = 0.8;

/// How one buffered response's token events arrived.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// Runs of joined events (a response delivered at once is one).
    pub bursts: u32,
    /// Events inside those runs.
    pub events_in_bursts: u32,
    /// Token events in all.
    pub events: u32,
    /// The share of the gaps that were joins.
    pub joined_share: f64,
    /// The share of the events that arrived with the first one.
    pub first_share: f64,
    /// The median gap between one burst (or lone event) and the next, ms; absent for a
    /// response delivered at once.
    pub interval_ms: Option<f64>,
    /// The stream the median burst held back, ms: (its events − 1) × the server's time between
    /// two events; absent for a response delivered at once without the server's timing.
    pub held_ms: Option<f64>,
}

impl Delivery {
    /// Whether the first burst still bounds the response's TTFT: it held at most half of the
    /// events.
    pub fn keeps_ttft(&self) -> bool {
        self.first_share <= 0.5
    }
}

/// The server's time between two of `r`'s token `events`, ms: its own decode time where the
/// record has it, else the stream's span from first to last event (nothing to go by for a
/// stream that arrived `at_once`); `None` when neither is known.
fn event_spacing(r: &Record, events: &[f64], at_once: bool) -> Option<f64> {
    let gaps = f64::from(crate::num::count(events.len().saturating_sub(1)).max(1));
    let server = r
        .server
        .as_ref()
        .and_then(|s| s.decode_ms)
        .filter(|&d| d > 0.0);
    let span = match (events.first(), events.last()) {
        (Some(first), Some(last)) if !at_once => Some(last - first).filter(|&s| s > 0.0),
        _ => None,
    };
    server.or(span).map(|d| d / gaps)
}

/// The runs of `events` joined by gaps of at most `join` ms: each segment's size (a lone event
/// is a segment of 1) and the gaps between segments.
fn segments(events: &[f64], join: f64) -> (Vec<u32>, Vec<f64>) {
    let mut sizes: Vec<u32> = vec![1];
    let mut between: Vec<f64> = Vec::new();
    for pair in events.windows(2) {
        let gap = pair[1] - pair[0];
        if gap <= join {
            if let Some(last) = sizes.last_mut() {
                *last += 1;
            }
        } else {
            sizes.push(1);
            between.push(gap);
        }
    }
    (sizes, between)
}

/// The delivery of `r`'s token events when they arrived in bursts; `None` for a response that
/// streamed, or has too few events to tell.
pub fn buffered(r: &Record) -> Option<Delivery> {
    let events = &r.event_ms;
    if events.len() < MIN_EVENTS {
        return None;
    }
    let tokens = f64::from(r.generated_tokens().max(crate::num::count(events.len())));
    let complete = r.e2e_ms.or_else(|| events.last().copied())?;
    let join = MAX_JOIN_MS.min(JOIN_SHARE_OF_TOKEN_TIME * complete / tokens);
    let gaps = crate::num::count(events.len() - 1);
    // Most responses stream: tell them by a count before building any burst. Events in bursts
    // of m hold m − 1 joins, at least half of them: fewer joins than a quarter of the gaps
    // cannot put half the events in bursts.
    let joined = crate::num::count(
        events
            .windows(2)
            .filter(|pair| pair[1] - pair[0] <= join)
            .count(),
    );
    let joined_share = f64::from(joined) / f64::from(gaps);
    if joined_share < MIN_BURST_SHARE / 2.0 {
        return None;
    }
    let (sizes, mut between) = segments(events, join);
    let mut in_bursts: Vec<u32> = sizes.iter().copied().filter(|&n| n > 1).collect();
    let events_in_bursts: u32 = in_bursts.iter().sum();
    let n = f64::from(crate::num::count(events.len()));
    let at_once = sizes.len() == 1;
    let spacing = event_spacing(r, events, at_once);
    in_bursts.sort_unstable();
    let held_ms = spacing.and_then(|tau| {
        let median = in_bursts.get(in_bursts.len() / 2)?;
        Some(f64::from(median - 1) * tau)
    });
    let buffered = if at_once {
        held_ms.is_none_or(|h| h >= MIN_HOLD_MS)
    } else {
        f64::from(events_in_bursts) >= MIN_BURST_SHARE * n
            && held_ms.is_some_and(|h| h >= MIN_HOLD_MS)
    };
    if !buffered {
        return None;
    }
    between.sort_by(f64::total_cmp);
    Some(Delivery {
        bursts: crate::num::count(in_bursts.len()),
        events_in_bursts,
        events: crate::num::count(events.len()),
        joined_share,
        first_share: f64::from(sizes[0]) / n,
        interval_ms: (!between.is_empty()).then(|| between[between.len() / 2]),
        held_ms,
    })
}

/// Whether the path of a case whose ok responses are `records` streams ([`BurstFigures::streams`]).
pub fn path_streams<'a>(records: impl IntoIterator<Item = &'a Record>) -> bool {
    let mut figures = BurstFigures::default();
    for r in records {
        figures.add(r);
    }
    figures.streams()
}

/// Whether `r`'s TTFT is a figure: it streamed, or its first burst still bounds it.
pub fn keeps_ttft(r: &Record) -> bool {
    buffered(r).as_ref().is_none_or(Delivery::keeps_ttft)
}

/// The figures of a case's buffered responses, held apart until the case ends: left out where
/// its path buffers, merged back where it streams ([`MIN_PATH_SHARE`]).
#[derive(Clone, Debug, Default)]
pub struct Held {
    /// TTFTs the first burst no longer bounds.
    pub ttft: Samples,
    /// Their per-token figures.
    pub per_token: super::per_token::PerToken,
}

/// A case's buffered responses, gathered one ok response at a time.
#[derive(Clone, Debug, Default)]
pub struct BurstFigures {
    examined: u32,
    buffered: u32,
    bursts: Samples,
    events_in_bursts: f64,
    burst_count: f64,
    intervals: Samples,
    held: Samples,
    ttft_withheld: u32,
}

impl BurstFigures {
    /// Examines an ok response; its delivery when it was buffered.
    pub fn add(&mut self, r: &Record) -> Option<Delivery> {
        if r.event_ms.len() < MIN_EVENTS {
            return None;
        }
        self.examined += 1;
        let d = buffered(r)?;
        self.buffered += 1;
        self.bursts.push(f64::from(d.bursts));
        self.events_in_bursts += f64::from(d.events_in_bursts);
        self.burst_count += f64::from(d.bursts);
        if let Some(i) = d.interval_ms {
            self.intervals.push(i);
        }
        if let Some(h) = d.held_ms {
            self.held.push(h);
        }
        self.ttft_withheld += u32::from(!d.keeps_ttft());
        Some(d)
    }

    /// Whether the case's path streams: fewer than [`MIN_PATH_SHARE`] of the responses examined
    /// so far were buffered (or none was).
    pub fn streams(&self) -> bool {
        f64::from(self.buffered) < MIN_PATH_SHARE * f64::from(self.examined) || self.buffered == 0
    }

    /// The case's figures; absent when no response was buffered.
    pub fn finish(self) -> Option<Bursts> {
        if self.buffered == 0 {
            return None;
        }
        let kept = self.streams();
        Some(Bursts {
            examined: self.examined,
            buffered: self.buffered,
            bursts_median: self.bursts.distribution().map_or(0.0, |d| d.median),
            events_per_burst: if self.burst_count > 0.0 {
                self.events_in_bursts / self.burst_count
            } else {
                0.0
            },
            interval_ms: self.intervals.distribution().map(|d| d.median),
            held_ms: self.held.distribution().map(|d| d.median),
            ttft_withheld: self.ttft_withheld,
            kept,
        })
    }
}

/// A case's responses delivered in bursts: how many, and the evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bursts {
    /// Ok responses with enough token events to tell ([`MIN_EVENTS`]).
    pub examined: u32,
    /// Of those, the ones delivered in bursts: kept out of ITL, TPOT and the decode rate.
    pub buffered: u32,
    /// The median number of bursts per buffered response.
    pub bursts_median: f64,
    /// The mean number of token events per burst.
    pub events_per_burst: f64,
    /// The median gap between bursts, ms (absent: every buffered response arrived at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<f64>,
    /// How much of the stream a burst held back, ms: the median over the buffered responses of
    /// their median burst's (events − 1) × the server's time between two events (absent: none
    /// could tell, every one arrived at once without the server's timing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_ms: Option<f64>,
    /// Buffered responses whose first burst held most of their events: TTFT withheld (where
    /// the path buffers).
    pub ttft_withheld: u32,
    /// Too few responses arrived in bursts for a path that buffers ([`MIN_PATH_SHARE`]): they
    /// were clumped now and then, and are kept in every figure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept: bool,
}

impl Bursts {
    /// Whether the case's path buffers: its buffered responses are left out of the per-token
    /// figures.
    pub fn held_out(&self) -> bool {
        !self.kept
    }

    /// One sentence for case `id`, with the evidence and what to look at.
    pub fn sentence(&self, id: &str) -> String {
        let how = if self.interval_ms.is_none() && self.bursts_median <= 1.0 {
            "all at once".to_owned()
        } else {
            format!(
                "in a median of {} bursts of ~{:.0} token events{}{}",
                crate::fmt::number(self.bursts_median),
                self.events_per_burst,
                self.interval_ms
                    .map_or_else(String::new, |i| format!(", ~{i:.0} ms apart")),
                self.held_ms.map_or_else(String::new, |h| format!(
                    ", each holding back ~{h:.0} ms of the stream"
                ))
            )
        };
        if self.kept {
            return format!(
                "{id}: {} of {} responses arrived {how}, too few for a path that buffers the \
                 stream (one holds back nearly every response, {:.0} % or more): a moment's \
                 delay on a busy client or server machine clumps a stream now and then, so they \
                 are kept in every figure (client_check in summary.json says how busy the \
                 client was).",
                self.buffered,
                self.examined,
                MIN_PATH_SHARE * 100.0
            );
        }
        let ttft = match self.ttft_withheld {
            0 => "their TTFT is an upper bound (the first token waited for the first burst)"
                .to_owned(),
            w if w == self.buffered => {
                "their TTFT is withheld too (the first burst held most of each response)".to_owned()
            }
            w => format!(
                "their TTFT is an upper bound, withheld for the {w} whose first burst held most \
                 of the response"
            ),
        };
        format!(
            "{id}: {} of {} responses arrived {how}: something between llmload and the server \
             buffers the stream (or the server sends its tokens in bursts), so ITL, TPOT and the \
             decode rate cannot be measured through this path and leave those responses out; \
             {ttft}. Check the buffering of the proxy or gateway in between (nginx: \
             `proxy_buffering off`, or the `X-Accel-Buffering: no` response header; HAProxy: \
             `option http-no-delay`, and no `http-response wait-for-body`; Caddy: \
             `flush_interval -1`).",
            self.buffered, self.examined
        )
    }

    /// Whether the path buffers and every examined response was buffered.
    pub fn all(&self) -> bool {
        self.held_out() && self.buffered == self.examined
    }
}

#[cfg(test)]
mod tests;
