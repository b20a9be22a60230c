//! Streams the client abandoned on purpose (`--cancel-after`): how many were planned, how many
//! were abandoned and how many ended first, what they received, and what the others' figures
//! were with an abandonment during them and without.

use crate::record::{CancelAfter, Record, Status};
use crate::stats::Distribution;
use serde::{Deserialize, Serialize};

/// The most `ok` responses (and abandonments) kept to split the others' figures: beyond it the
/// split covers the first ones, and says so.
const KEPT: usize = 100_000;

/// A case's abandoned streams and their effect on the others.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Abandonment {
    /// Where the streams were abandoned.
    pub after: CancelAfter,
    /// Measured requests drawn to be abandoned.
    pub planned: u32,
    /// Those abandoned at that point (record status `abandoned`).
    pub abandoned: u32,
    /// Those whose response ended before the point (status as judged: `ok` when it checked).
    pub ended_first: u32,
    /// Generated tokens the abandoned streams received before they were closed.
    pub tokens_received: u64,
    /// Time from send to the close of each abandoned stream, ms.
    pub closed_at_ms: Option<Distribution>,
    /// The other `ok` responses that were in flight when a stream was abandoned.
    pub during: Others,
    /// The other `ok` responses with no abandonment while they were in flight.
    pub clear: Others,
    /// When the split covers only the first responses (more than it keeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    /// Generated tokens of the case's other requests (every one not abandoned, its warmups
    /// included): what a server's generated-token counter holds beside the abandoned streams'.
    #[serde(default)]
    pub others_generated_tokens: u64,
}

/// The figures of one group of the other responses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Others {
    /// Responses in the group.
    pub n: u32,
    /// Their TTFT, ms.
    pub ttft_ms: Option<Distribution>,
    /// Their TPOT, ms.
    pub tpot_ms: Option<Distribution>,
}

/// One `ok` response's span and figures, kept until the case ends.
#[derive(Clone, Copy, Debug)]
struct Span {
    sent: f64,
    done: f64,
    ttft: Option<f64>,
    tpot: Option<f64>,
}

/// The abandonment figures, one measured record at a time.
#[derive(Clone, Debug, Default)]
pub(super) struct AbandonFigures {
    after: Option<CancelAfter>,
    planned: u32,
    abandoned: u32,
    ended_first: u32,
    tokens_received: u64,
    closed_at: Vec<f64>,
    /// Seconds (of the attempt) at which streams were abandoned.
    closes: Vec<f64>,
    spans: Vec<Span>,
    /// Records past what is kept.
    dropped: u32,
    others_generated: u64,
}

impl AbandonFigures {
    /// Adds a measured record.
    pub(super) fn add(&mut self, r: &Record) {
        if let Some(after) = r.cancel_after {
            self.after.get_or_insert(after);
            self.planned += 1;
            if r.status == Status::Abandoned {
                self.abandoned += 1;
                self.tokens_received += u64::from(r.streamed_tokens);
                if let Some(done) = r.done_s {
                    self.closed_at.push((done - r.sent_s) * 1e3);
                    self.keep_close(done);
                }
                return;
            }
            self.ended_first += 1;
        }
        self.others_generated += u64::from(r.generated_tokens());
        if r.status != Status::Ok {
            return;
        }
        if self.spans.len() >= KEPT {
            self.dropped += 1;
            return;
        }
        if let Some(done) = r.done_s {
            self.spans.push(Span {
                sent: r.sent_s,
                done,
                ttft: r.ttft_ms,
                tpot: r.tpot_ms(),
            });
        }
    }

    /// Adds a warmup record: only its generated tokens count (as the server's counter does).
    pub(super) fn add_warmup(&mut self, r: &Record) {
        self.others_generated += u64::from(r.generated_tokens());
    }

    fn keep_close(&mut self, t: f64) {
        if self.closes.len() < KEPT {
            self.closes.push(t);
        } else {
            self.dropped += 1;
        }
    }

    /// The figures; `None` when no request was drawn to be abandoned.
    pub(super) fn finish(mut self) -> Option<Abandonment> {
        let after = self.after?;
        self.closes.sort_by(f64::total_cmp);
        let closes = &self.closes;
        // Abandonments strictly inside the response's span (its own send to its end).
        let overlapped = |s: &Span| {
            let first_after = closes.partition_point(|&t| t <= s.sent);
            closes.get(first_after).is_some_and(|&t| t < s.done)
        };
        let (during, clear): (Vec<Span>, Vec<Span>) =
            self.spans.iter().partition(|s| overlapped(s));
        Some(Abandonment {
            after,
            planned: self.planned,
            abandoned: self.abandoned,
            ended_first: self.ended_first,
            tokens_received: self.tokens_received,
            closed_at_ms: Distribution::from_samples(&mut self.closed_at),
            during: others(&during),
            clear: others(&clear),
            others_generated_tokens: self.others_generated,
            partial: (self.dropped > 0).then(|| {
                format!(
                    "the split covers the first {KEPT} responses and abandonments; {} more were \
                     left out of it",
                    self.dropped
                )
            }),
        })
    }
}

fn others(spans: &[Span]) -> Others {
    let mut ttft: Vec<f64> = spans.iter().filter_map(|s| s.ttft).collect();
    let mut tpot: Vec<f64> = spans.iter().filter_map(|s| s.tpot).collect();
    Others {
        n: crate::num::count(spans.len()),
        ttft_ms: Distribution::from_samples(&mut ttft),
        tpot_ms: Distribution::from_samples(&mut tpot),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ok_record;

    fn abandoned(sent: f64, at_ms: f64, tokens: u32) -> Record {
        let mut r = ok_record(
            sent,
            None,
            (1..=tokens).map(|i| f64::from(i) * 10.0).collect(),
        );
        r.status = Status::Abandoned;
        r.e2e_ms = None;
        r.output_tokens = None;
        r.done_s = Some(sent + at_ms / 1e3);
        r.cancel_after = Some(CancelAfter::Tokens(tokens));
        r
    }

    #[test]
    fn splits_the_others_by_an_abandonment_inside_their_span() {
        let mut f = AbandonFigures::default();
        // Abandoned at 0.03 s and 2.03 s.
        f.add(&abandoned(0.0, 30.0, 3));
        f.add(&abandoned(2.0, 30.0, 3));
        // In flight at 0.03 s: during; 1.0–1.1 s: clear; 2.05–2.2 s starts after the close: clear.
        f.add(&ok_record(
            0.01,
            None,
            vec![5.0, 10.0, 15.0, 20.0, 25.0, 30.0],
        ));
        f.add(&ok_record(1.0, None, vec![10.0, 20.0, 30.0]));
        f.add(&ok_record(2.05, None, vec![10.0, 20.0]));
        // Planned but it ended first: counted apart, and among the others (it is ok).
        let mut first = ok_record(2.0, None, vec![10.0, 40.0]);
        first.cancel_after = Some(CancelAfter::Tokens(3));
        f.add(&first);
        // A warmup: in no figure, its tokens among the others'.
        f.add_warmup(&ok_record(0.0, None, vec![1.0, 2.0, 3.0, 4.0]));
        let a = f.finish().expect("planned requests");
        assert_eq!(a.others_generated_tokens, 6 + 3 + 2 + 2 + 4);
        assert_eq!((a.planned, a.abandoned, a.ended_first), (3, 2, 1));
        assert_eq!(a.tokens_received, 6);
        assert_eq!(
            a.during.n, 2,
            "0.01–0.04 s holds 0.03 s; 2.0–2.04 s holds 2.03 s"
        );
        assert_eq!(a.clear.n, 2);
        assert_eq!(a.closed_at_ms.as_ref().map(|d| d.n), Some(2));
        assert!(a.partial.is_none());
    }

    #[test]
    fn nothing_without_a_planned_abandonment() {
        let mut f = AbandonFigures::default();
        f.add(&ok_record(0.0, None, vec![1.0, 2.0]));
        assert!(f.finish().is_none());
    }
}
