//! What `llmload ab` adds to its summary (`summary.json`'s `ab`): per case, both arms side by
//! side with the paired change of each figure, and the paired gate's checks. The pairs are
//! formed and judged in `compare::paired`; these are the results it writes.

use crate::stats::Interval;
use serde::{Deserialize, Serialize};

/// `llmload ab`: the two arms, how their blocks were ordered, and the paired gate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbSection {
    /// The base's URL (arm A).
    pub base_url: String,
    /// The candidate's URL (arm B).
    pub candidate_url: String,
    /// What else differs in B's requests (`--b-model`, `--b-extra-body`), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidate_differs: Vec<String>,
    /// The seed the block orders were drawn from.
    pub seed: u64,
    /// Measured rounds per block (closed rounds).
    pub block_rounds: u32,
    /// What a block is, in words: "blocks of 1 round", "time slices of 5s".
    pub blocks: String,
    /// The confidence level of every interval.
    pub level: f64,
    /// Per case: both arms and the paired changes.
    pub cases: Vec<AbCase>,
    /// Every rule on every case.
    pub checks: Vec<PairedCheck>,
    /// `--fail-on inconclusive`.
    pub fail_on_inconclusive: bool,
}

impl AbSection {
    /// Whether a check fails the gate.
    pub fn failed(&self) -> bool {
        self.checks
            .iter()
            .any(|c| c.verdict.fails(self.fail_on_inconclusive))
    }
}

/// One case of `llmload ab`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbCase {
    /// The case id.
    pub case: String,
    /// The order its blocks ran in, pair by pair (`ABBA BAAB …`).
    pub order: String,
    /// Pairs planned.
    pub pairs_planned: usize,
    /// Pairs whose two blocks both ran.
    pub pairs_run: usize,
    /// Each figure: both arms and the paired change.
    pub figures: Vec<ArmsFigure>,
}

/// One figure of a case in both arms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmsFigure {
    /// The figure, as a rule names it (`ttft_p50`, `throughput`).
    pub metric: String,
    /// A's figure: the median of its blocks' figures.
    pub a: f64,
    /// B's figure: the median of its blocks' figures.
    pub b: f64,
    /// The paired change from A to B, percent.
    pub change: PairedChange,
}

/// How a paired interval was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairedMethod {
    /// The sign test's interval of the pairs' median: the order statistics that bound it.
    SignTest,
    /// Student's t over the pairs' values (attempts of earlier releases).
    StudentT,
    /// A bootstrap over the pairs, each resample drawing whole pairs (attempts of earlier
    /// releases).
    Bootstrap,
}

impl PairedMethod {
    /// The method in words, for the views.
    pub fn words(self) -> &'static str {
        match self {
            PairedMethod::SignTest => "sign test over pairs",
            PairedMethod::StudentT => "Student's t over pairs",
            PairedMethod::Bootstrap => "bootstrap over pairs",
        }
    }
}

/// The change from A to B over the pairs, in the unit of a rule's bound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairedChange {
    /// Percent (the median of the pairs' B / A, minus one, times 100) or the median of the
    /// pairs' B − A, in the metric's unit. (Attempts of earlier releases: the geometric mean
    /// and the mean.)
    pub change: f64,
    /// Its confidence interval, in the same unit; absent under `compare::paired::min_pairs`
    /// pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// The pairs it rests on.
    pub pairs: usize,
    /// The pairs whose B figure is above A's; absent in attempts of earlier releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_higher: Option<usize>,
    /// The pairs whose B figure is below A's (the rest are equal); absent in attempts of
    /// earlier releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_lower: Option<usize>,
    /// How the interval was found; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<PairedMethod>,
    /// The confidence level.
    pub level: f64,
}

/// How a rule came out on the pairs of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum PairedVerdict {
    /// The change is beyond the rule's bound with the stated confidence: the gate fails.
    Regressed,
    /// The change is beyond the bound the other way with the stated confidence.
    Improved,
    /// The change's interval lies on the good side of the bound.
    NoChange,
    /// Cannot tell: the interval straddles the bound, or there are too few pairs for one.
    Inconclusive {
        /// About how many pairs would decide, where that can be said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pairs_to_decide: Option<u64>,
        /// Why it cannot tell, in words.
        why: String,
    },
    /// Not compared, and why (a figure no block has, a percentile too far out for a block).
    NotCompared {
        /// Why, in words.
        reason: String,
    },
    /// A block of B did not finish what its pair's block of A did (failures, a stop).
    Unfinished {
        /// Why, in words.
        reason: String,
    },
}

impl PairedVerdict {
    /// Whether this verdict fails the gate (`strict`: `--fail-on inconclusive`).
    pub fn fails(&self, strict: bool) -> bool {
        match self {
            PairedVerdict::Regressed | PairedVerdict::Unfinished { .. } => true,
            PairedVerdict::Inconclusive { .. } => strict,
            _ => false,
        }
    }

    /// The verdict's name, as `compare` writes it.
    pub fn name(&self) -> &'static str {
        match self {
            PairedVerdict::Regressed => "regressed",
            PairedVerdict::Improved => "improved",
            PairedVerdict::NoChange => "no-change",
            PairedVerdict::Inconclusive { .. } => "inconclusive",
            PairedVerdict::NotCompared { .. } => "not-compared",
            PairedVerdict::Unfinished { .. } => "unfinished",
        }
    }
}

/// One rule on the pairs of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairedCheck {
    /// The case id.
    pub case: String,
    /// The rule, as `compare` writes it (`ttft_p50 > +10%`).
    pub rule: String,
    /// The paired change, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<PairedChange>,
    /// Pairs left out, and why (a block incomplete, a figure absent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// The outcome.
    #[serde(flatten)]
    pub verdict: PairedVerdict,
}
