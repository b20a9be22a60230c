//! What `llmload ab` adds to its summary: per case, both arms side by side with the paired
//! change of each figure, and the gate's checks on the pairs.

use super::{check, order_text, paired_change, BlockPair, PairedChange, PairedCheck};
use crate::record::Arm;
use crate::summary::gate::{Metric, Rule};
use crate::summary::CaseSummary;
use serde::{Deserialize, Serialize};

/// The figures every case shows side by side (each also a rule's metric name).
const SHOWN: [&str; 6] = [
    "ttft_p50",
    "ttft_p90",
    "ttft_p99",
    "e2e_p50",
    "tpot_p50",
    "throughput",
];

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

/// What a case of `llmload ab` ran: its id, the order of its pairs and each pair's blocks.
pub struct CaseBlocks<'a> {
    /// The case id.
    pub case: &'a str,
    /// The order of its pairs.
    pub order: &'a [[Arm; 2]],
    /// Each pair's blocks, A's and B's.
    pub pairs: Vec<BlockPair<'a>>,
}

impl AbCase {
    /// Both arms side by side over `blocks`, at `level`; a figure no pair has is left out.
    pub fn of(blocks: &CaseBlocks<'_>, level: f64) -> AbCase {
        let figures = SHOWN
            .iter()
            .filter_map(|name| {
                let metric: Metric = name.parse().ok()?;
                let mut pairs = Vec::new();
                for pair in &blocks.pairs {
                    if let (Some(a), Some(b)) = pair {
                        if let (Ok(x), Ok(y)) = (
                            super::block_figure(metric, a),
                            super::block_figure(metric, b),
                        ) {
                            pairs.push((x, y));
                        }
                    }
                }
                let median = |side: fn(&(f64, f64)) -> f64| {
                    let mut v: Vec<f64> = pairs.iter().map(side).collect();
                    v.sort_by(f64::total_cmp);
                    (!v.is_empty()).then(|| crate::stats::percentile(&v, 0.5))
                };
                Some(ArmsFigure {
                    metric: (*name).to_owned(),
                    a: median(|p| p.0)?,
                    b: median(|p| p.1)?,
                    change: paired_change(true, &pairs, level)?,
                })
            })
            .collect();
        AbCase {
            case: blocks.case.to_owned(),
            order: order_text(blocks.order),
            pairs_planned: blocks.order.len(),
            pairs_run: blocks
                .pairs
                .iter()
                .filter(|(a, b)| a.is_some() && b.is_some())
                .count(),
            figures,
        }
    }
}

/// Every rule on every case's pairs, at `level`.
pub fn checks(rules: &[Rule], cases: &[CaseBlocks<'_>], level: f64) -> Vec<PairedCheck> {
    cases
        .iter()
        .flat_map(|c| rules.iter().map(|r| check(r, c.case, &c.pairs, level)))
        .collect()
}

/// The blocks of a case as the arms' summaries hold them: block `k` (from 1) of case `case` is
/// the case whose id is [`block_id`]`(case, k)`.
pub fn pairs_of<'a>(
    case: &str,
    order_len: usize,
    a: &'a [CaseSummary],
    b: &'a [CaseSummary],
) -> Vec<BlockPair<'a>> {
    (1..=order_len)
        .map(|k| {
            let id = block_id(case, k);
            (a.iter().find(|c| c.id == id), b.iter().find(|c| c.id == id))
        })
        .collect()
}

/// The id of block `k` (from 1) of case `case` in an arm's attempt: `in64-c1-out16.b3`.
pub fn block_id(case: &str, k: usize) -> String {
    format!("{case}.b{k}")
}
