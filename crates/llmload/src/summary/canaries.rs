//! `--canaries N`: a case's canaries against their references. Each canary sent under the case's
//! load (its canary rounds) is compared with its prompt's reference, sent alone before the load
//! ([`crate::record::canary`]); the case's summary says how many diverged, with the interval of
//! that share, and where each first diverged. An early divergence (in the first quarter of the
//! output, or within its first [`EARLY_EVENTS`] events) looks like corruption; a late one is the
//! usual batch non-invariance of floating point (a batch of another size sums in another order,
//! and a near tie between two tokens can flip, after which the outputs part); an early one that
//! comes the same way each time a prompt goes is such a flip too (stable).

use crate::record::{Phase, Record, Status};
use serde::{Deserialize, Serialize};

/// A divergence before this token event is early whatever the output's length.
pub const EARLY_EVENTS: u32 = 4;

/// The level of the divergence share's interval.
const LEVEL: f64 = 0.95;

/// A case's canary records, as they end.
#[derive(Clone, Debug, Default)]
pub struct CanaryFigures {
    sent: u32,
    failed: u32,
    uncompared: u32,
    /// Per compared canary: its prompt, where it diverged (if it did), the events compared and
    /// the load beside it.
    compared: Vec<(u32, Option<u32>, u32, u32)>,
    /// Per prompt, a hash of the first output of it that diverged.
    first_other: std::collections::BTreeMap<u32, u64>,
    /// Diverging canaries that gave the same other output as an earlier one of their prompt.
    repeated: u32,
    /// Diverging canaries that gave another output than an earlier diverging one of theirs.
    varied: u32,
}

impl CanaryFigures {
    /// Adds a canary record (a reference counts for nothing here).
    pub fn add(&mut self, r: &Record) {
        let Some(canary) = r.canary.as_deref().filter(|_| r.phase == Phase::Canary) else {
            return;
        };
        if canary.reference {
            return;
        }
        self.sent += 1;
        if r.status != Status::Ok {
            self.failed += 1;
            return;
        }
        let Some(c) = canary.compared else {
            self.uncompared += 1;
            return;
        };
        self.compared
            .push((canary.prompt, c.diverged_at, c.events, canary.beside));
        if c.diverged_at.is_some() {
            let text = crate::workload::shard::fnv1a(canary.text.as_bytes());
            match self.first_other.get(&canary.prompt) {
                Some(&first) if first == text => self.repeated += 1,
                Some(_) => self.varied += 1,
                None => {
                    self.first_other.insert(canary.prompt, text);
                }
            }
        }
    }

    /// The case's canary summary; `None` when no canary was sent beside it.
    pub fn finish(self) -> Option<CanarySummary> {
        if self.sent == 0 {
            return None;
        }
        let compared = crate::num::count(self.compared.len());
        let mut diverging: Vec<Divergence> = self
            .compared
            .iter()
            .filter_map(|&(prompt, at, events, _)| {
                at.map(|at| Divergence {
                    prompt,
                    at,
                    events,
                    early: at < EARLY_EVENTS || u64::from(at) * 4 < u64::from(events),
                })
            })
            .collect();
        diverging.sort_by_key(|d| (d.at, d.prompt));
        let diverged = crate::num::count(diverging.len());
        let early = crate::num::count(diverging.iter().filter(|d| d.early).count());
        let verdict = match (diverged, early) {
            _ if compared == 0 => Verdict::Unknown,
            (0, _) => Verdict::Same,
            (_, 0) => Verdict::Late,
            _ if self.varied == 0 && self.repeated > 0 => Verdict::Stable,
            _ => Verdict::Early,
        };
        Some(CanarySummary {
            sent: self.sent,
            failed: self.failed,
            uncompared: self.uncompared,
            compared,
            diverged,
            share: (compared > 0).then(|| f64::from(diverged) / f64::from(compared)),
            interval: (compared > 0)
                .then(|| crate::stats::interval::wilson(diverged, compared, LEVEL))
                .map(|i| [i.low, i.high]),
            level: LEVEL,
            early,
            repeated: self.repeated,
            varied: self.varied,
            beside: self.compared.iter().map(|c| c.3).max().unwrap_or(0),
            first_divergence: diverging.first().map(|d| d.at),
            verdict,
            diverging,
            fail_above: None,
            check_failed: false,
        })
    }
}

/// What a case's canaries showed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CanarySummary {
    /// Canaries sent in the case's canary rounds.
    pub sent: u32,
    /// Of those, the ones that failed (no output to compare).
    pub failed: u32,
    /// Complete, but with no complete reference to compare with.
    pub uncompared: u32,
    /// Compared with their reference.
    pub compared: u32,
    /// Of those, the ones whose output differed.
    pub diverged: u32,
    /// `diverged` / `compared`.
    pub share: Option<f64>,
    /// Wilson's score interval of `share` at `level`.
    pub interval: Option<[f64; 2]>,
    /// The interval's level.
    pub level: f64,
    /// Of the diverging ones, those that diverged early (see [`EARLY_EVENTS`]).
    pub early: u32,
    /// Diverging canaries whose output was the same other output as an earlier diverging one
    /// of their prompt in this case.
    #[serde(default)]
    pub repeated: u32,
    /// Diverging canaries whose output differed from an earlier diverging one of their prompt.
    #[serde(default)]
    pub varied: u32,
    /// The other requests sent with each canary (the case's concurrency less one).
    pub beside: u32,
    /// The earliest token event at which a canary diverged.
    pub first_divergence: Option<u32>,
    /// What the divergences look like.
    pub verdict: Verdict,
    /// Each diverging canary, earliest first.
    pub diverging: Vec<Divergence>,
    /// `--canary-fail`: the largest share of diverging canaries the check lets pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_above: Option<f64>,
    /// Whether the share was larger: the check failed (exit code 6).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub check_failed: bool,
}

impl CanarySummary {
    /// Checks the share against `--canary-fail` (nothing without it).
    pub fn check(&mut self, fail_above: Option<f64>) {
        self.fail_above = fail_above;
        self.check_failed = fail_above.is_some_and(|bound| self.share.is_some_and(|s| s > bound));
    }
}

/// Checks every case's canaries against `--canary-fail`.
pub fn check(cases: &mut [super::CaseSummary], fail_above: Option<f64>) {
    for c in cases.iter_mut().filter_map(|c| c.canaries.as_mut()) {
        c.check(fail_above);
    }
}

/// One canary whose output differed from its reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    /// The canary prompt.
    pub prompt: u32,
    /// The first token event that differed (from 0).
    pub at: u32,
    /// The token events compared.
    pub events: u32,
    /// Whether it is early.
    pub early: bool,
}

/// A case's canaries, in one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every compared canary gave its reference's output.
    Same,
    /// Some diverged, all late: floating point's batch non-invariance, as usual.
    Late,
    /// Some diverged early, but each prompt to the same other output every time it diverged
    /// (one did at least twice): a batch's numerics flipping a near tie at the start.
    Stable,
    /// Some diverged early, to outputs that vary (or each seen once): wrong output under load.
    Early,
    /// None could be compared.
    Unknown,
}

impl Verdict {
    /// The verdict as a sentence for the views.
    pub fn sentence(self) -> &'static str {
        match self {
            Verdict::Same => "every canary under load gave the output it gave alone",
            Verdict::Late => {
                "diverged late only: the usual batch non-invariance of floating point (a batch \
                 of another size sums in another order, and a near tie between two tokens flips)"
            }
            Verdict::Stable => {
                "diverged early, but each prompt to the same other output every time: a batch's \
                 numerics flipping a near tie between two tokens, not corruption (which varies)"
            }
            Verdict::Early => {
                "diverged early, to outputs that vary or were seen once: output under load that \
                 differs from the output alone from its first tokens looks like corruption"
            }
            Verdict::Unknown => "no canary could be compared with its reference",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::canary::{Canary, Compared};

    fn canary(prompt: u32, at: Option<u32>, status: Status) -> Record {
        let mut r = crate::record::ok_record(0.0, None, vec![1.0; 32]);
        r.phase = Phase::Canary;
        r.status = status;
        r.canary = Some(Box::new(Canary {
            prompt,
            beside: 4,
            compared: Some(Compared {
                diverged_at: at,
                events: 32,
            }),
            ..Canary::default()
        }));
        r
    }

    #[test]
    fn no_canary_no_summary_and_references_count_for_nothing() {
        let mut f = CanaryFigures::default();
        let mut reference = canary(0, None, Status::Ok);
        if let Some(c) = reference.canary.as_mut() {
            c.reference = true;
            c.compared = None;
        }
        f.add(&reference);
        f.add(&crate::record::ok_record(0.0, None, vec![1.0]));
        assert_eq!(f.finish(), None);
    }

    #[test]
    fn shares_positions_and_verdicts() {
        let mut f = CanaryFigures::default();
        for (prompt, at) in [(0, None), (1, Some(20)), (2, None), (3, Some(9))] {
            f.add(&canary(prompt, at, Status::Ok));
        }
        f.add(&canary(4, None, Status::Error));
        let s = f.finish().expect("sent");
        assert_eq!((s.sent, s.failed, s.compared, s.diverged), (5, 1, 4, 2));
        assert_eq!(s.share, Some(0.5));
        let [low, high] = s.interval.expect("compared");
        assert!(low < 0.5 && 0.5 < high && low > 0.0 && high < 1.0);
        assert_eq!(s.first_divergence, Some(9));
        assert_eq!(
            s.diverging.iter().map(|d| d.prompt).collect::<Vec<_>>(),
            [3, 1]
        );
        // 9 of 32 and 20 of 32: both past the first quarter and the first 4 events.
        assert_eq!((s.early, s.verdict), (0, Verdict::Late));

        let mut f = CanaryFigures::default();
        f.add(&canary(0, Some(7), Status::Ok));
        f.add(&canary(1, Some(2), Status::Ok));
        let s = f.finish().expect("sent");
        // 7 < 32 / 4, and 2 < 4.
        assert_eq!((s.early, s.verdict), (2, Verdict::Early));

        let mut s = s;
        s.check(Some(0.5));
        assert!(s.check_failed, "2 of 2 is above a half");
        s.check(None);
        assert!(!s.check_failed);
        let mut f = CanaryFigures::default();
        f.add(&canary(0, None, Status::Ok));
        let mut s = f.finish().expect("sent");
        assert_eq!(s.verdict, Verdict::Same);
        s.check(Some(0.0));
        assert!(!s.check_failed);
    }

    #[test]
    fn the_same_other_output_every_time_is_stable_and_a_varying_one_is_not() {
        let with_text = |at: u32, text: &str| {
            let mut r = canary(1, Some(at), Status::Ok);
            if let Some(c) = r.canary.as_mut() {
                c.text = text.to_owned();
            }
            r
        };
        let mut f = CanaryFigures::default();
        f.add(&with_text(1, " is the power"));
        f.add(&canary(0, None, Status::Ok));
        f.add(&with_text(1, " is the power"));
        let s = f.finish().expect("sent");
        assert_eq!((s.repeated, s.varied, s.verdict), (1, 0, Verdict::Stable));
        let mut f = CanaryFigures::default();
        f.add(&with_text(1, " is the power"));
        f.add(&with_text(1, " garbage"));
        let s = f.finish().expect("sent");
        assert_eq!((s.repeated, s.varied, s.verdict), (0, 1, Verdict::Early));
    }
}
