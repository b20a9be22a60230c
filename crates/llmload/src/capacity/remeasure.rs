//! The bracket's two loads measured again, side by side. When the search ends decided with a
//! load that meets and a load that fails, each is measured once more with their blocks
//! interleaved (the failing load's, the passing load's, the failing load's… one block each for
//! a closed loop; one arrival process each, in turn, for an open loop), so that both see the
//! same machine at the same time. Each is judged on its re-measured blocks alone, at the first
//! look's error. A re-measurement decided the other way (the passing load now fails, or the
//! failing load now meets) takes the decision back: the boundary moved while it was measured.
//!
//! The check can only take a decision back, never make one, so it spends none of the answer's
//! error: where nothing moved, the chance that it takes back a right answer is at most the
//! first look's error (a quarter of it on each side, for each load).

use super::blocks::BlockRun;
use super::sequential::{self, Block, Blocks, Looks};
use super::slo::Rule;
use crate::fmt::number;
use crate::summary::capacity::{LoadUnit, RuleVerdict, SloVerdict};

/// What one load's re-measurement gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Remeasured {
    /// Its blocks, in the order run.
    pub blocks: Vec<BlockRun>,
    /// The case id of each case run.
    pub case_ids: Vec<String>,
    /// Blocks taken from `--resume`.
    pub reused: usize,
    /// Every rule's verdict over the blocks, once all have run.
    pub verdicts: Vec<RuleVerdict>,
    /// The load's verdict over them, once all have run.
    pub verdict: Option<SloVerdict>,
}

impl Remeasured {
    /// Judges the blocks at the first look's error.
    pub fn judge(&mut self, rules: &[(Rule, String)], looks: Looks, kind: Blocks) {
        let blocks: Vec<Block> = self.blocks.iter().map(|b| b.tallies.clone()).collect();
        self.verdicts = sequential::judge_all(rules, &blocks, looks.alpha_at(0), kind);
        self.verdict = Some(sequential::overall(&self.verdicts));
    }
}

/// The re-measurement under way: which probes, and how far it got.
#[derive(Clone, Debug, PartialEq)]
pub struct Remeasure {
    /// The probe of the largest load that meets.
    pub passing: usize,
    /// The probe of the smallest load above it that fails.
    pub failing: usize,
    /// Why the search itself stopped (decided).
    pub why: String,
    /// The cases issued so far.
    pub issued: usize,
}

impl Remeasure {
    /// The probe and the first block (from 1) of case `i` of the re-measurement, or `None`
    /// past its last: a closed loop's blocks one at a time, `first` for each load (the fewest
    /// whose unanimous verdict decides at the first look); an open loop's arrival processes
    /// one at a time, two for each load (the fewest that can meet).
    pub fn case(&self, i: usize, kind: Blocks, first: usize) -> Option<(usize, usize)> {
        let (per_case, rounds) = match kind {
            Blocks::Independent => (1, first),
            Blocks::Consecutive { per_process } => (per_process, 2),
        };
        (i < 2 * rounds).then(|| {
            let probe = if i % 2 == 0 {
                self.failing
            } else {
                self.passing
            };
            (probe, (i / 2) * per_case + 1)
        })
    }
}

/// The answer's stop after the re-measurement: decided, unless a load was re-measured the
/// other way.
pub fn outcome(
    why: &str,
    (passing, passing_verdict): (f64, SloVerdict),
    (failing, failing_verdict): (f64, SloVerdict),
    unit: LoadUnit,
) -> (bool, String) {
    let mut moved = Vec::new();
    if passing_verdict == SloVerdict::Fails {
        moved.push(format!("{} now fail", unit.words(passing)));
    }
    if failing_verdict == SloVerdict::Meets {
        moved.push(format!("{} now meet", unit.words(failing)));
    }
    if moved.is_empty() {
        (
            true,
            format!(
                "{why}; re-measured side by side, {} {} and {} {}",
                number(passing),
                passing_verdict.word(),
                number(failing),
                failing_verdict.word()
            ),
        )
    } else {
        (
            false,
            format!(
                "the boundary moved while it was measured: re-measured side by side, {} (the \
                 machine or the server changed speed during the search; run it again on a \
                 steadier one)",
                moved.join(" and ")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_loops_blocks_alternate_failing_first_and_an_open_loops_processes_too() {
        let r = Remeasure {
            passing: 3,
            failing: 5,
            why: String::new(),
            issued: 0,
        };
        let closed: Vec<_> = (0..16)
            .map_while(|i| r.case(i, Blocks::Independent, 7))
            .collect();
        assert_eq!(closed.len(), 14);
        assert_eq!(&closed[..4], [(5, 1), (3, 1), (5, 2), (3, 2)]);
        assert_eq!(closed[13], (3, 7));
        let open: Vec<_> = (0..8)
            .map_while(|i| r.case(i, Blocks::Consecutive { per_process: 7 }, 7))
            .collect();
        assert_eq!(open, [(5, 1), (3, 1), (5, 8), (3, 8)]);
    }

    #[test]
    fn only_a_verdict_the_other_way_takes_the_decision_back() {
        let unit = LoadUnit::Concurrency;
        let (decided, why) = outcome(
            "the bracket is within the resolution",
            (8.0, SloVerdict::Undecided),
            (9.0, SloVerdict::Fails),
            unit,
        );
        assert!(decided, "{why}");
        assert_eq!(
            why,
            "the bracket is within the resolution; re-measured side by side, 8 undecided and 9 \
             fails"
        );
        let (decided, why) = outcome("", (8.0, SloVerdict::Fails), (9.0, SloVerdict::Meets), unit);
        assert!(!decided);
        assert!(
            why.starts_with(
                "the boundary moved while it was measured: re-measured side by side, 8 \
                 concurrent generations now fail and 9 concurrent generations now meet"
            ),
            "{why}"
        );
        assert!(!outcome("", (8.0, SloVerdict::Meets), (9.0, SloVerdict::Meets), unit).0);
    }
}
