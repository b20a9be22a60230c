//! Multi-turn sessions, per case: the figures of each turn index (TTFT, prompt tokens, the prefix
//! cache's hit rate) and of whole sessions (how many completed, their duration with and without
//! the think time, their tokens). A session is complete when every one of its turns ended `ok`;
//! an incomplete one is listed by id and kept out of the session figures (its turns that ended
//! `ok` still count in their turn's figures).

use crate::record::{Record, Seconds, Status};
use crate::stats::{Distribution, Samples};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most incomplete sessions listed by id.
const LISTED: usize = 50;

/// A case's sessions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Turns each session was to have.
    pub turns: u32,
    /// Sessions arriving at a rate: sessions started per second, as asked; absent for sessions
    /// in parallel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_rps: Option<f64>,
    /// Sessions that sent at least one turn.
    pub started: u32,
    /// Sessions whose every turn ended `ok`.
    pub completed: u32,
    /// Sessions with a turn that did not end `ok`, or that stopped before their last turn.
    pub incomplete: u32,
    /// The ids of the incomplete sessions (the first 50).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete_sessions: Vec<u64>,
    /// Complete sessions: first turn sent → last turn's answer complete, seconds (think times
    /// included).
    pub duration_s: Option<Distribution>,
    /// Complete sessions: Σ of their turns' complete-response times, seconds (think times and
    /// the preparation of each turn left out).
    pub active_s: Option<Distribution>,
    /// Complete sessions: Σ of their turns' prompt tokens (each turn counts its whole history).
    pub prompt_tokens: Option<Distribution>,
    /// Complete sessions: Σ of their turns' generated tokens.
    pub output_tokens: Option<Distribution>,
    /// The figures of each turn index, from 1.
    pub by_turn: Vec<TurnSummary>,
    /// `--dag`: the session graphs' own figures; absent for sessions of turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<super::graph::GraphSummary>,
}

/// The `ok` responses of one turn index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnSummary {
    /// The turn, from 1.
    pub turn: u32,
    /// `ok` responses of this turn.
    pub n: u32,
    /// Time to first token, ms.
    pub ttft_ms: Option<Distribution>,
    /// Prompt tokens (the history and the new message).
    pub prompt_tokens: Option<Distribution>,
    /// Prompt tokens before the new message: the most the cache may serve.
    pub history_tokens: Option<Distribution>,
    /// Responses whose server reported its cached tokens.
    pub cache_n: u32,
    /// Σ cached prompt tokens over those.
    pub cached_tokens: u64,
    /// Σ cached / Σ prompt tokens over those: the share of the prompt the cache served.
    pub hit_rate: Option<f64>,
}

/// Sessions so far, one measured record at a time.
#[derive(Clone, Debug, Default)]
pub struct SessionFigures {
    turns: u32,
    graph: super::graph::GraphFigures,
    by_turn: BTreeMap<u32, TurnAcc>,
    sessions: BTreeMap<u64, SessionAcc>,
}

#[derive(Clone, Debug, Default)]
struct TurnAcc {
    n: u32,
    ttft: Samples,
    /// TTFTs of buffered responses whose first burst held most of them: merged back where the
    /// case's path streams ([`super::bursts::MIN_PATH_SHARE`]).
    held_ttft: Samples,
    prompt: Samples,
    history: Samples,
    cache_n: u32,
    cached: u64,
    prompt_reported: u64,
}

#[derive(Clone, Debug)]
struct SessionAcc {
    turns: u32,
    ok: u32,
    failed: bool,
    first_sent: Seconds,
    last_done: Seconds,
    active_s: f64,
    prompt: u64,
    output: u64,
}

impl SessionFigures {
    /// Adds one measured record; one outside a session is left out.
    pub fn add(&mut self, r: &Record) {
        let (Some(id), Some(turn)) = (r.session, r.turn) else {
            return;
        };
        let turns = r.turns.unwrap_or(turn);
        self.turns = self.turns.max(turns);
        self.graph.add(r);
        let s = self.sessions.entry(id).or_insert(SessionAcc {
            turns,
            ok: 0,
            failed: false,
            first_sent: f64::INFINITY,
            last_done: f64::NEG_INFINITY,
            active_s: 0.0,
            prompt: 0,
            output: 0,
        });
        s.first_sent = s.first_sent.min(r.sent_s);
        let t = self.by_turn.entry(turn).or_default();
        if r.status != Status::Ok {
            s.failed = true;
            return;
        }
        s.ok += 1;
        s.last_done = r.done_s.map_or(s.last_done, |d| s.last_done.max(d));
        s.active_s += r.e2e_ms.unwrap_or(0.0) / 1e3;
        // The server's count, else the count sent (0: neither is known).
        let prompt = r.prompt_tokens.unwrap_or(r.input_tokens);
        s.prompt += u64::from(prompt);
        s.output += u64::from(r.generated_tokens());
        t.n += 1;
        // A TTFT the first burst of a buffered stream no longer bounds waits apart.
        let ttft = if super::bursts::keeps_ttft(r) {
            &mut t.ttft
        } else {
            &mut t.held_ttft
        };
        r.ttft_ms.into_iter().for_each(|v| ttft.push(v));
        if prompt > 0 {
            t.prompt.push(f64::from(prompt));
        }
        if let Some(h) = r.history_tokens {
            t.history.push(f64::from(h));
        }
        if let (Some(c), Some(p)) = (r.cached_tokens, r.prompt_tokens) {
            t.cache_n += 1;
            t.cached += u64::from(c);
            t.prompt_reported += u64::from(p);
        }
    }

    /// Whether no record belonged to a session.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Whether every session seen so far is complete (true with none).
    pub fn all_complete(&self) -> bool {
        self.sessions.values().all(SessionAcc::complete)
    }

    /// The summary, the held TTFTs merged back where `streams` (the case's path does not
    /// buffer); `None` when no record belonged to a session.
    pub fn finish(self, streams: bool) -> Option<SessionSummary> {
        if self.sessions.is_empty() {
            return None;
        }
        let mut duration = Samples::default();
        let mut active = Samples::default();
        let mut prompt = Samples::default();
        let mut output = Samples::default();
        let mut incomplete = Vec::new();
        let mut completed = 0;
        for (id, s) in &self.sessions {
            if !s.complete() {
                incomplete.push(*id);
                continue;
            }
            completed += 1;
            duration.push((s.last_done - s.first_sent).max(0.0));
            active.push(s.active_s);
            prompt.push(s.prompt as f64);
            output.push(s.output as f64);
        }
        let count = crate::num::count;
        Some(SessionSummary {
            graph: self.graph.finish(),
            turns: self.turns,
            rate_rps: None,
            started: count(self.sessions.len()),
            completed,
            incomplete: count(incomplete.len()),
            incomplete_sessions: incomplete.into_iter().take(LISTED).collect(),
            duration_s: duration.distribution(),
            active_s: active.distribution(),
            prompt_tokens: prompt.distribution(),
            output_tokens: output.distribution(),
            by_turn: self
                .by_turn
                .into_iter()
                .map(|(turn, mut t)| TurnSummary {
                    turn,
                    n: t.n,
                    ttft_ms: {
                        if streams {
                            t.ttft.merge(std::mem::take(&mut t.held_ttft));
                        }
                        t.ttft.distribution()
                    },
                    prompt_tokens: t.prompt.distribution(),
                    history_tokens: t.history.distribution(),
                    cache_n: t.cache_n,
                    cached_tokens: t.cached,
                    hit_rate: (t.prompt_reported > 0)
                        .then(|| t.cached as f64 / t.prompt_reported as f64),
                })
                .collect(),
        })
    }
}

impl SessionAcc {
    fn complete(&self) -> bool {
        !self.failed && self.ok == self.turns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ok_record;

    /// An `ok` turn: sent at `sent_s`, 2 tokens at 100 and 200 ms, `prompt` tokens of which
    /// `cached` from the cache and `history` before the new message.
    fn turn(id: u64, turn: u32, sent_s: f64, prompt: u32, cached: u32, history: u32) -> Record {
        let mut r = ok_record(sent_s, None, vec![100.0, 200.0]);
        r.session = Some(id);
        r.turn = Some(turn);
        r.turns = Some(3);
        r.input_tokens = prompt;
        r.prompt_tokens = Some(prompt);
        r.cached_tokens = Some(cached);
        r.history_tokens = Some(history);
        r
    }

    #[test]
    fn turns_and_sessions_are_summarised_and_incomplete_sessions_listed_not_pooled() {
        let mut figures = SessionFigures::default();
        // Session 0: three turns, a second of think time between them.
        figures.add(&turn(0, 1, 0.0, 100, 0, 0));
        figures.add(&turn(0, 2, 1.2, 150, 100, 110));
        figures.add(&turn(0, 3, 2.4, 200, 150, 160));
        // Session 1: its second turn failed; no third.
        figures.add(&turn(1, 1, 0.0, 100, 0, 0));
        let mut failed = turn(1, 2, 1.2, 150, 0, 110);
        failed.status = Status::Error;
        figures.add(&failed);
        // Session 2: stopped after its first turn.
        figures.add(&turn(2, 1, 5.0, 100, 0, 0));
        // A record of no session is left out.
        figures.add(&ok_record(0.0, None, vec![1.0]));
        assert!(!figures.all_complete());
        let s = figures.finish(true).expect("sessions");
        assert_eq!(
            (s.turns, s.started, s.completed, s.incomplete),
            (3, 3, 1, 2)
        );
        assert_eq!(s.incomplete_sessions, vec![1, 2]);
        let duration = s.duration_s.expect("one complete session");
        assert_eq!(duration.n, 1);
        assert!((duration.median - 2.6).abs() < 1e-9, "{duration:?}");
        assert!((s.active_s.expect("active").median - 0.6).abs() < 1e-9);
        assert_eq!(s.prompt_tokens.expect("prompt").median, 450.0);
        assert_eq!(s.output_tokens.expect("output").median, 6.0);
        let ns: Vec<(u32, u32)> = s.by_turn.iter().map(|t| (t.turn, t.n)).collect();
        assert_eq!(ns, vec![(1, 3), (2, 1), (3, 1)]);
        assert_eq!(s.by_turn[0].hit_rate, Some(0.0));
        assert_eq!(s.by_turn[1].hit_rate, Some(100.0 / 150.0));
        assert_eq!(s.by_turn[2].cached_tokens, 150);
        assert_eq!(
            s.by_turn[2].history_tokens.as_ref().map(|d| d.median),
            Some(160.0)
        );
    }

    #[test]
    fn no_session_records_no_summary() {
        let mut figures = SessionFigures::default();
        figures.add(&ok_record(0.0, None, vec![1.0]));
        assert!(figures.all_complete());
        assert!(figures.finish(true).is_none());
    }
}
