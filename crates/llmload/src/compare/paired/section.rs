//! What `llmload ab` adds to its summary, worked out from the blocks: per case, both arms side
//! by side with the paired change of each figure ([`ab_case`]), and the gate's checks on the
//! pairs ([`checks`]). The types it fills are `summary::ab`'s.

use super::{check, order_text, paired_change, BlockPair};
use crate::compare::gate::{Metric, Rule};
use crate::record::Arm;
use crate::summary::ab::{AbCase, ArmsFigure, PairedCheck};
use crate::summary::CaseSummary;

/// The figures every case shows side by side (each also a rule's metric name).
const SHOWN: [&str; 6] = [
    "ttft_p50",
    "ttft_p90",
    "ttft_p99",
    "e2e_p50",
    "tpot_p50",
    "throughput",
];

/// What a case of `llmload ab` ran: its id, the order of its pairs and each pair's blocks.
pub struct CaseBlocks<'a> {
    /// The case id.
    pub case: &'a str,
    /// The order of its pairs.
    pub order: &'a [[Arm; 2]],
    /// Each pair's blocks, A's and B's.
    pub pairs: Vec<BlockPair<'a>>,
}

/// Both arms side by side over `blocks`, at `level`; a figure no pair has is left out.
pub fn ab_case(blocks: &CaseBlocks<'_>, level: f64) -> AbCase {
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
