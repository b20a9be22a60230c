//! Session graphs (`--dag`), per case: the agentic figures. Per complete session (every call
//! `ok`): its time to the final answer's first token (TTFAT, from its first call's send), its
//! span, the waits it kept (tool and think time) and its output tokens per second of span.
//! Per call: first calls' TTFT apart from later ones', and the prefix cache against what was
//! *eligible*: the tokens of the context the call extends, which the server had already seen.
//! A call whose eligible context was mostly not served from the cache is named (a slot reused
//! by another session, an evicted prefix), never averaged away.

use crate::record::{Record, Seconds, Status};
use crate::stats::{Distribution, Samples};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most sessions and cache misses listed by name.
const LISTED: usize = 50;

/// A call whose cache served less than this share of its eligible tokens is named a miss.
pub const MISS_BELOW: f64 = 0.5;

/// The slices of a case's span over which sessions in flight are averaged.
pub const SLICES: usize = 20;

/// The mean number of `spans` (start, end) covering each of `slices` equal slices of
/// [`first`, `last`].
fn in_slices(spans: &[(f64, f64)], (first, last): (f64, f64), slices: usize) -> Vec<f64> {
    if last <= first || slices == 0 {
        return Vec::new();
    }
    let width = (last - first) / slices as f64;
    (0..slices)
        .map(|k| {
            let (from, to) = (first + width * k as f64, first + width * (k + 1) as f64);
            let covered: f64 = spans
                .iter()
                .map(|&(a, b)| (b.min(to) - a.max(from)).max(0.0))
                .sum();
            covered / width
        })
        .collect()
}

/// A case's session graphs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphSummary {
    /// Sessions that sent a call.
    pub sessions: u32,
    /// Sessions whose every call ended `ok`.
    pub complete: u32,
    /// Complete sessions: first call sent → the final answer's first token, ms.
    pub ttfat_ms: Option<Distribution>,
    /// Complete sessions: the waits they kept (each call's send after the last of its parents'
    /// ends), summed per session, ms.
    pub waits_ms: Option<Distribution>,
    /// Complete sessions: their output tokens per second of their span (first send → last
    /// end); higher is more interactive.
    pub interactivity_tps: Option<Distribution>,
    /// The mean of sessions in flight over the case's span (first send → last end): the
    /// session-level concurrency achieved.
    pub sessions_in_flight: Option<f64>,
    /// The mean of sessions in flight in each of [`SLICES`] equal slices of that span, in
    /// order: whether the concurrency asked for held from start to end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_flight_slices: Vec<f64>,
    /// TTFT of the calls that wait for none (the sessions' first), ms.
    pub first_call_ttft_ms: Option<Distribution>,
    /// TTFT of the calls that wait for others, ms.
    pub later_call_ttft_ms: Option<Distribution>,
    /// Σ eligible tokens over the `ok` calls that extend a context and whose server reported
    /// its cached tokens.
    pub eligible_tokens: u64,
    /// Σ cached tokens over those calls.
    pub cached_tokens: u64,
    /// Σ cached / Σ eligible over those calls.
    pub eligible_hit_rate: Option<f64>,
    /// Per call id of the file (the same id in every session pooled).
    pub by_call: Vec<CallFigures>,
    /// Per session, in the order they started (the first 50).
    pub by_session: Vec<SessionRow>,
    /// Calls whose cache served under half their eligible tokens (the first 50).
    pub misses: Vec<CacheMiss>,
    /// Calls whose cache served under half their eligible tokens, in all.
    pub miss_count: u32,
    /// Calls the server said it served more of from its cache than they could have been: their
    /// context (or, on a fresh context, the shared system prompt) was all that was cacheable;
    /// `eligible_tokens` is that (the first 50).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beyond: Vec<CacheMiss>,
    /// Such calls in all.
    #[serde(default, skip_serializing_if = "super::counts::is_zero")]
    pub beyond_count: u32,
}

/// The `ok` responses of one call id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallFigures {
    /// The call's id in the file.
    pub call: String,
    /// `ok` responses.
    pub n: u32,
    /// Time to first token, ms.
    pub ttft_ms: Option<Distribution>,
    /// Prompt tokens.
    pub prompt_tokens: Option<Distribution>,
    /// Eligible tokens: the context it extends.
    pub eligible_tokens: Option<Distribution>,
    /// Σ cached / Σ eligible over its responses whose server reported cached tokens.
    pub eligible_hit_rate: Option<f64>,
}

/// One session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    /// Its id in the attempt.
    pub id: u64,
    /// Its id in the file.
    pub name: String,
    /// Its calls that ended `ok`, and all it sent.
    pub ok: u32,
    /// Calls it sent.
    pub sent: u32,
    /// First call sent → the final answer's first token, ms; absent when it did not get there.
    pub ttfat_ms: Option<f64>,
    /// First send → last end, ms.
    pub span_ms: f64,
    /// Σ cached / Σ eligible over its calls, where reported.
    pub eligible_hit_rate: Option<f64>,
}

/// A call whose context was mostly not served from the cache.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheMiss {
    /// The session's id in the file.
    pub session: String,
    /// The call's id.
    pub call: String,
    /// Tokens the cache could have served.
    pub eligible_tokens: u32,
    /// Tokens it served.
    pub cached_tokens: u32,
}

/// The graphs so far, one measured record at a time.
#[derive(Clone, Debug, Default)]
pub struct GraphFigures {
    sessions: BTreeMap<u64, SessionAcc>,
    by_call: BTreeMap<String, CallAcc>,
    first_ttft: Samples,
    later_ttft: Samples,
    eligible: u64,
    cached: u64,
    misses: Vec<CacheMiss>,
    miss_count: u32,
    beyond: Vec<CacheMiss>,
    beyond_count: u32,
}

#[derive(Clone, Debug)]
struct SessionAcc {
    name: String,
    calls: u32,
    sent: u32,
    ok: u32,
    first_sent: Seconds,
    last_end: Seconds,
    final_first_token: Option<Seconds>,
    waits_s: f64,
    output: u64,
    eligible: u64,
    cached: u64,
    /// Each `ok` call's end, by its id.
    ends: BTreeMap<String, Seconds>,
}

#[derive(Clone, Debug, Default)]
struct CallAcc {
    n: u32,
    ttft: Samples,
    prompt: Samples,
    eligible_tokens: Samples,
    eligible: u64,
    cached: u64,
}

impl GraphFigures {
    /// Adds one measured record; one that is not a graph's call is left out. Records come in
    /// the order their requests ended, so a call's parents are in before it.
    pub fn add(&mut self, r: &Record) {
        let (Some(g), Some(id)) = (&r.graph, r.session) else {
            return;
        };
        let s = self.sessions.entry(id).or_insert_with(|| SessionAcc {
            name: g.session.clone(),
            calls: r.turns.unwrap_or(0),
            sent: 0,
            ok: 0,
            first_sent: f64::INFINITY,
            last_end: f64::NEG_INFINITY,
            final_first_token: None,
            waits_s: 0.0,
            output: 0,
            eligible: 0,
            cached: 0,
            ends: BTreeMap::new(),
        });
        s.sent += 1;
        s.first_sent = s.first_sent.min(r.sent_s);
        s.last_end = s.last_end.max(r.last_seen());
        if r.status != Status::Ok {
            return;
        }
        s.ok += 1;
        s.output += u64::from(r.generated_tokens());
        let parent_end = g
            .after
            .iter()
            .filter_map(|p| s.ends.get(p).copied())
            .reduce(f64::max);
        if let Some(end) = parent_end {
            s.waits_s += (r.sent_s - end).max(0.0);
        }
        if let Some(done) = r.done_s {
            s.ends.insert(g.call.clone(), done);
        }
        if g.final_answer {
            s.final_first_token = r.first_token_s;
        }
        let c = self.by_call.entry(g.call.clone()).or_default();
        c.n += 1;
        if let Some(t) = r.ttft_ms {
            c.ttft.push(t);
            if g.after.is_empty() {
                self.first_ttft.push(t);
            } else {
                self.later_ttft.push(t);
            }
        }
        c.prompt
            .push(f64::from(r.prompt_tokens.unwrap_or(r.input_tokens)));
        let eligible = r.history_tokens.filter(|_| g.context.is_some());
        // What the cache may serve: the context, or on a fresh one the shared system prompt.
        let cacheable = eligible.unwrap_or(0).max(r.shared_tokens);
        if let Some(cached) = r.cached_tokens.filter(|&c| c > cacheable) {
            self.beyond_count += 1;
            if self.beyond.len() < LISTED {
                self.beyond.push(CacheMiss {
                    session: g.session.clone(),
                    call: g.call.clone(),
                    eligible_tokens: cacheable,
                    cached_tokens: cached,
                });
            }
        }
        if let Some(e) = eligible {
            c.eligible_tokens.push(f64::from(e));
        }
        if let (Some(e), Some(cached)) = (eligible.filter(|&e| e > 0), r.cached_tokens) {
            let served = cached.min(e);
            for (eligible, hit) in [
                (&mut c.eligible, &mut c.cached),
                (&mut s.eligible, &mut s.cached),
                (&mut self.eligible, &mut self.cached),
            ] {
                *eligible += u64::from(e);
                *hit += u64::from(served);
            }
            if f64::from(served) < MISS_BELOW * f64::from(e) {
                self.miss_count += 1;
                if self.misses.len() < LISTED {
                    self.misses.push(CacheMiss {
                        session: g.session.clone(),
                        call: g.call.clone(),
                        eligible_tokens: e,
                        cached_tokens: cached,
                    });
                }
            }
        }
    }

    /// The summary; `None` when no record was a graph's call.
    pub fn finish(self) -> Option<GraphSummary> {
        if self.sessions.is_empty() {
            return None;
        }
        let rate =
            |cached: u64, eligible: u64| (eligible > 0).then(|| cached as f64 / eligible as f64);
        let (mut ttfat, mut waits, mut interactivity) =
            (Samples::default(), Samples::default(), Samples::default());
        let mut complete = 0;
        for s in self.sessions.values().filter(|s| s.complete()) {
            complete += 1;
            if let Some(t) = s.final_first_token {
                ttfat.push((t - s.first_sent) * 1e3);
            }
            waits.push(s.waits_s * 1e3);
            let span = s.last_end - s.first_sent;
            if span > 0.0 {
                interactivity.push(s.output as f64 / span);
            }
        }
        let first = self
            .sessions
            .values()
            .map(|s| s.first_sent)
            .fold(f64::INFINITY, f64::min);
        let last = self
            .sessions
            .values()
            .map(|s| s.last_end)
            .fold(f64::NEG_INFINITY, f64::max);
        let busy: f64 = self
            .sessions
            .values()
            .map(|s| (s.last_end - s.first_sent).max(0.0))
            .sum();
        let spans: Vec<(f64, f64)> = self
            .sessions
            .values()
            .map(|s| (s.first_sent, s.last_end))
            .collect();
        let count = crate::num::count;
        Some(GraphSummary {
            sessions: count(self.sessions.len()),
            complete,
            ttfat_ms: ttfat.distribution(),
            waits_ms: waits.distribution(),
            interactivity_tps: interactivity.distribution(),
            sessions_in_flight: (last > first).then(|| busy / (last - first)),
            in_flight_slices: in_slices(&spans, (first, last), SLICES),
            first_call_ttft_ms: self.first_ttft.distribution(),
            later_call_ttft_ms: self.later_ttft.distribution(),
            eligible_tokens: self.eligible,
            cached_tokens: self.cached,
            eligible_hit_rate: rate(self.cached, self.eligible),
            by_call: self
                .by_call
                .into_iter()
                .map(|(call, c)| CallFigures {
                    call,
                    n: c.n,
                    ttft_ms: c.ttft.distribution(),
                    prompt_tokens: c.prompt.distribution(),
                    eligible_tokens: c.eligible_tokens.distribution(),
                    eligible_hit_rate: rate(c.cached, c.eligible),
                })
                .collect(),
            by_session: self
                .sessions
                .iter()
                .take(LISTED)
                .map(|(id, s)| SessionRow {
                    id: *id,
                    name: s.name.clone(),
                    ok: s.ok,
                    sent: s.sent,
                    ttfat_ms: s
                        .final_first_token
                        .filter(|_| s.complete())
                        .map(|t| (t - s.first_sent) * 1e3),
                    span_ms: (s.last_end - s.first_sent).max(0.0) * 1e3,
                    eligible_hit_rate: rate(s.cached, s.eligible),
                })
                .collect(),
            misses: self.misses,
            miss_count: self.miss_count,
            beyond: self.beyond,
            beyond_count: self.beyond_count,
        })
    }
}

impl SessionAcc {
    fn complete(&self) -> bool {
        self.ok == self.calls && self.sent == self.calls
    }
}

#[cfg(test)]
mod tests;
