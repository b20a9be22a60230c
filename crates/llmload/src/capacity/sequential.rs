//! The sequential test of one load: when a probe may stop, and what its verdict is.
//!
//! A probe is read only at preset looks, after `k₀`, `2k₀`, `3k₀` and `4k₀` blocks, and look `l`
//! (from 0) spends `α·2^-(l+1)` of the error allowed (`α = 1 − confidence`): the looks together
//! spend less than `α`, so by the union bound every verdict the probe can reach, wherever it
//! stops, is wrong with probability at most `α`. That is what lets it stop as soon as a look
//! decides; reading an ordinary interval after every block and stopping when it excludes the
//! bound would not hold its level.
//!
//! The unit is the block, not the request: responses under one load share the server's queue
//! and are dependent. A closed loop's blocks are cases of their own, each a fresh loop past its
//! ramp, taken to be independent: a latency objective is judged per block (did the block's share
//! within the bound reach the share wanted?) and the blocks' verdicts by an exact binomial
//! (Clopper–Pearson) interval on the share of blocks that meet it: the load meets the objective
//! when that interval lies above one half, fails it when below.
//!
//! An open loop's blocks are consecutive segments of one arrival process, whose congestion comes
//! in episodes: most segments can meet a bound while the load as a whole does not. Its latency
//! objective is judged on the share of all its responses within the bound, by batch means: the
//! segments' shares are nearly independent when each is long against the queue's memory, so
//! their mean has a Student-t interval; the interval is never narrower than independent
//! responses would give (an Agresti–Coull binomial interval on the pooled share).
//!
//! An error bound is judged on the responses themselves, an exact binomial interval on the error
//! share against the bound: failures are taken to be independent (a burst of them makes the
//! interval too narrow, which the report says).

use super::slo::{Rule, Tally};
use crate::summary::capacity::{RuleVerdict, SloVerdict};
use statrs::distribution::{Beta, ContinuousCDF, StudentsT};

/// How many looks a probe has; its cap is the last one's blocks.
pub const LOOKS: usize = 4;

/// The looks of a probe at one confidence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Looks {
    /// The error allowed over every look (1 − confidence).
    pub alpha: f64,
    /// The blocks at the first look; look `l` is after `(l + 1) × first`.
    pub first: usize,
}

impl Looks {
    /// The looks at `confidence`: the first after the fewest blocks whose unanimous verdict
    /// decides at the first look's share of the error (`0.5^k ≤ α/4`, one side of `α/2`).
    pub fn at(confidence: f64) -> Looks {
        let alpha = (1.0 - confidence).clamp(1e-9, 0.5);
        let mut first = 1;
        while half_to(first) > alpha / 4.0 {
            first += 1;
        }
        Looks { alpha, first }
    }

    /// The look that `blocks` blocks complete, if they complete one.
    pub fn look_at(&self, blocks: usize) -> Option<usize> {
        (blocks > 0 && blocks % self.first == 0 && blocks / self.first <= LOOKS)
            .then(|| blocks / self.first - 1)
    }

    /// The error look `l` spends: `α·2^-(l+1)`.
    pub fn alpha_at(&self, look: usize) -> f64 {
        self.alpha * half_to(look + 1)
    }

    /// The most blocks a probe runs (its cap).
    pub fn cap(&self) -> usize {
        self.first * LOOKS
    }
}

/// 0.5 to the power `k`.
fn half_to(k: usize) -> f64 {
    0.5f64.powi(i32::try_from(k).unwrap_or(i32::MAX))
}

/// An exact binomial (Clopper–Pearson) interval of `successes` in `trials` at error `alpha`
/// (two-sided).
pub fn clopper_pearson(successes: u64, trials: u64, alpha: f64) -> (f64, f64) {
    if trials == 0 {
        return (0.0, 1.0);
    }
    let (s, n) = (successes as f64, trials as f64);
    let low = if successes == 0 {
        0.0
    } else {
        Beta::new(s, n - s + 1.0).map_or(0.0, |b| b.inverse_cdf(alpha / 2.0))
    };
    let high = if successes >= trials {
        1.0
    } else {
        Beta::new(s + 1.0, n - s).map_or(1.0, |b| b.inverse_cdf(1.0 - alpha / 2.0))
    };
    (low, high)
}

/// One block's tally of every rule, in the order of the rules.
pub type Block = Vec<Tally>;

/// Whether a block meets a latency rule: its share within the bound reaches the share wanted.
fn block_meets(rule: &Rule, tally: Tally) -> bool {
    match *rule {
        Rule::Latency { share, .. } => tally.share().is_some_and(|s| s >= share),
        Rule::Errors { share } => tally.share().is_some_and(|s| 1.0 - s <= share),
    }
}

/// How a probe's blocks relate to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocks {
    /// Each a case of its own (a closed loop's, closed users').
    Independent,
    /// Consecutive segments of arrival processes (an open loop's), `per_process` segments to
    /// each process (one process per look).
    Consecutive {
        /// Segments per process.
        per_process: usize,
    },
}

/// The batch-means interval of the share within a bound over consecutive segments at error
/// `alpha` (two-sided): the segments' mean share ± t(n−1) × its standard error, the error never
/// below an Agresti–Coull binomial one on the pooled responses; `None` under two segments.
pub fn batch_means(blocks: &[Tally], alpha: f64) -> Option<(f64, (f64, f64))> {
    let (mean, error, n) = mean_and_error(blocks)?;
    let half = t_quantile(n, alpha)? * error;
    Some((mean, ((mean - half).max(0.0), (mean + half).min(1.0))))
}

/// The two-sided Student-t quantile of `n − 1` degrees of freedom at error `alpha`.
fn t_quantile(n: usize, alpha: f64) -> Option<f64> {
    let t = StudentsT::new(0.0, 1.0, n.checked_sub(1)? as f64).ok()?;
    Some(t.inverse_cdf(1.0 - alpha / 2.0))
}

/// The segments' mean share, its standard error (never below the binomial one) and the
/// segments counted; `None` under two segments.
fn mean_and_error(blocks: &[Tally]) -> Option<(f64, f64, usize)> {
    let shares: Vec<f64> = blocks.iter().filter_map(|b| b.share()).collect();
    if shares.len() < 2 {
        return None;
    }
    let n = shares.len() as f64;
    let mean = shares.iter().sum::<f64>() / n;
    let variance = shares.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let pooled = blocks.iter().fold(Tally::default(), |mut t, b| {
        t.add(*b);
        t
    });
    let judged = pooled.judged as f64 + 4.0;
    let adjusted = (pooled.met as f64 + 2.0) / judged;
    let error = (variance / n)
        .sqrt()
        .max((adjusted * (1.0 - adjusted) / judged).sqrt());
    Some((mean, error, shares.len()))
}

/// Whether consecutive segments read undecided cannot be expected to decide by the probe's
/// cap: the segments' standard error, shrunk as the square root of `cap` segments would shrink
/// it, gives at the last look (error `last_alpha`) an interval whose half-width is more than
/// twice the distance between the estimate and `threshold`. Stopping then is an undecided
/// verdict, which claims nothing, so it spends none of the error allowed.
pub fn out_of_reach(blocks: &[Tally], threshold: f64, cap: usize, last_alpha: f64) -> bool {
    let Some((mean, error, n)) = mean_and_error(blocks) else {
        return false;
    };
    if n >= cap {
        return false;
    }
    let at_cap = error * (n as f64 / cap as f64).sqrt();
    t_quantile(cap, last_alpha).is_some_and(|t| (mean - threshold).abs() * 2.0 < t * at_cap)
}

/// The verdict of `rule` over `blocks` (each a tally of this rule) at error `alpha`.
pub fn judge(rule: &Rule, text: &str, blocks: &[Tally], alpha: f64, kind: Blocks) -> RuleVerdict {
    let mut pooled = Tally::default();
    for b in blocks {
        pooled.add(*b);
    }
    let (estimate, (low, high), threshold, statistic, verdict);
    match *rule {
        Rule::Latency { share, .. } if matches!(kind, Blocks::Consecutive { .. }) => {
            threshold = share;
            // One process can miss the queue's episodes altogether: a load meets only over
            // two or more, each from its own warmup.
            let one_process = match kind {
                Blocks::Consecutive { per_process } => blocks.len() <= per_process,
                Blocks::Independent => false,
            };
            statistic = format!(
                "share of responses within the bound of {rule} (batch means over consecutive \
                 segments{})",
                if one_process {
                    "; one arrival process so far, two needed to meet"
                } else {
                    ""
                }
            );
            if let Some((mean, interval)) = batch_means(blocks, alpha) {
                (estimate, (low, high)) = (mean, interval);
                verdict = if low > threshold && !one_process {
                    SloVerdict::Meets
                } else if high < threshold {
                    SloVerdict::Fails
                } else {
                    SloVerdict::Undecided
                };
            } else {
                (estimate, (low, high)) = (pooled.share().unwrap_or(0.0), (0.0, 1.0));
                verdict = SloVerdict::Undecided;
            }
        }
        Rule::Latency { .. } => {
            let judged: Vec<&Tally> = blocks.iter().filter(|b| b.judged > 0).collect();
            let meeting = judged.iter().filter(|b| block_meets(rule, ***b)).count();
            let n = judged.len() as u64;
            (low, high) = clopper_pearson(meeting as u64, n, alpha);
            estimate = if n == 0 {
                0.0
            } else {
                meeting as f64 / n as f64
            };
            threshold = 0.5;
            statistic = format!("share of blocks that meet {rule}");
            verdict = if n == 0 {
                SloVerdict::Undecided
            } else if low > threshold {
                SloVerdict::Meets
            } else if high < threshold {
                SloVerdict::Fails
            } else {
                SloVerdict::Undecided
            };
        }
        Rule::Errors { share } => {
            let failed = pooled.judged - pooled.met;
            (low, high) = clopper_pearson(failed, pooled.judged, alpha);
            estimate = if pooled.judged == 0 {
                0.0
            } else {
                failed as f64 / pooled.judged as f64
            };
            threshold = share;
            statistic = "share of responses that failed".to_owned();
            verdict = if pooled.judged == 0 {
                SloVerdict::Undecided
            } else if high < threshold {
                SloVerdict::Meets
            } else if low > threshold {
                SloVerdict::Fails
            } else {
                SloVerdict::Undecided
            };
        }
    }
    RuleVerdict {
        rule: text.to_owned(),
        verdict,
        statistic,
        estimate,
        low,
        high,
        threshold,
        blocks: blocks.len(),
        requests: usize::try_from(pooled.judged).unwrap_or(usize::MAX),
        pooled: pooled.share(),
    }
}

/// Every rule's verdict over a probe's blocks at `look`, and the probe's: it meets when every
/// rule meets, fails when one fails, and is undecided otherwise.
pub fn judge_all(
    rules: &[(Rule, String)],
    blocks: &[Block],
    alpha: f64,
    kind: Blocks,
) -> Vec<RuleVerdict> {
    rules
        .iter()
        .enumerate()
        .map(|(i, (rule, text))| {
            let tallies: Vec<Tally> = blocks.iter().map(|b| b[i]).collect();
            judge(rule, text, &tallies, alpha, kind)
        })
        .collect()
}

/// The probe's verdict from its rules'.
pub fn overall(verdicts: &[RuleVerdict]) -> SloVerdict {
    if verdicts.iter().any(|v| v.verdict == SloVerdict::Fails) {
        SloVerdict::Fails
    } else if verdicts.iter().all(|v| v.verdict == SloVerdict::Meets) {
        SloVerdict::Meets
    } else {
        SloVerdict::Undecided
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_looks_spend_less_than_alpha() {
        let looks = Looks::at(0.95);
        // 0.5^7 = 0.0078 ≤ 0.0125 < 0.5^6.
        assert_eq!(looks.first, 7);
        assert_eq!(looks.cap(), 28);
        let spent: f64 = (0..LOOKS).map(|l| looks.alpha_at(l)).sum();
        assert!(spent < 0.05, "{spent}");
        assert_eq!(looks.look_at(7), Some(0));
        assert_eq!(looks.look_at(14), Some(1));
        assert_eq!(looks.look_at(8), None);
        assert_eq!(looks.look_at(35), None);
        assert_eq!(Looks::at(0.8).first, 5);
    }

    #[test]
    fn unanimous_blocks_decide_at_the_first_look_and_a_split_does_not() {
        let looks = Looks::at(0.95);
        let rule: Rule = "ttft_p90<100ms".parse().expect("rule");
        let good = Tally {
            met: 19,
            judged: 20,
        };
        let bad = Tally {
            met: 10,
            judged: 20,
        };
        let alpha = looks.alpha_at(0);
        let all_good = judge(&rule, "r", &[good; 7], alpha, Blocks::Independent);
        assert_eq!(all_good.verdict, SloVerdict::Meets);
        assert!(all_good.low > 0.5);
        let all_bad = judge(&rule, "r", &[bad; 7], alpha, Blocks::Independent);
        assert_eq!(all_bad.verdict, SloVerdict::Fails);
        let mut split = vec![good; 4];
        split.extend([bad; 3]);
        assert_eq!(
            judge(&rule, "r", &split, alpha, Blocks::Independent).verdict,
            SloVerdict::Undecided
        );
        // Six of seven is not enough at the first look's share of 5 %.
        let mut six = vec![good; 6];
        six.push(bad);
        assert_eq!(
            judge(&rule, "r", &six, alpha, Blocks::Independent).verdict,
            SloVerdict::Undecided
        );
    }

    #[test]
    fn batch_means_give_a_student_t_interval_never_narrower_than_the_responses_binomial() {
        let blocks = |mets: &[u64]| -> Vec<Tally> {
            mets.iter().map(|&met| Tally { met, judged: 20 }).collect()
        };
        // Shares 0.9, 0.95, 1, 0.85, 0.9, 0.95, 0.9: mean 0.92143, the segments' standard error
        // 0.01844 below the binomial one of 129 of 140 (Agresti–Coull: 131/144, 0.02388), which
        // is taken; t(6) at 97.5 % is 2.4469.
        let (mean, (low, high)) =
            batch_means(&blocks(&[18, 19, 20, 17, 18, 19, 18]), 0.05).expect("an interval");
        assert!((mean - 0.921_43).abs() < 1e-4, "{mean}");
        assert!(
            (low - 0.863_0).abs() < 1e-3 && (high - 0.979_9).abs() < 1e-3,
            "{low} {high}"
        );
        // Shares 1 and 0.5 in turn over 8 segments: their standard error 0.0945 is taken; t(7)
        // at 97.5 % is 2.3646.
        let (mean, (low, high)) =
            batch_means(&blocks(&[20, 10, 20, 10, 20, 10, 20, 10]), 0.05).expect("an interval");
        assert!((mean - 0.75).abs() < 1e-12);
        assert!(
            (low - 0.526_6).abs() < 1e-3 && (high - 0.973_4).abs() < 1e-3,
            "{low} {high}"
        );
        assert_eq!(batch_means(&blocks(&[20]), 0.05), None);
    }

    #[test]
    fn congestion_in_a_few_consecutive_segments_is_not_outvoted_by_the_rest() {
        // 22 segments wholly within the bound, 6 wholly outside: 79 % of the responses within,
        // against 90 % wanted. Counted per block, 22 of 28 meet and the load would meet (at
        // 95 %); on the responses' share, batch means do not say it meets.
        let rule: Rule = "ttft_p90<50ms".parse().expect("rule");
        let mut blocks = vec![
            Tally {
                met: 50,
                judged: 50
            };
            22
        ];
        blocks.extend([Tally { met: 0, judged: 50 }; 6]);
        let alpha = 0.05;
        let per_block = judge(&rule, "r", &blocks, alpha, Blocks::Independent);
        assert_eq!(per_block.verdict, SloVerdict::Meets);
        let segments = judge(
            &rule,
            "r",
            &blocks,
            alpha,
            Blocks::Consecutive { per_process: 7 },
        );
        assert_ne!(segments.verdict, SloVerdict::Meets, "{segments:?}");
        assert!((segments.estimate - 22.0 / 28.0).abs() < 1e-12);
        assert!((segments.threshold - 0.9).abs() < 1e-12);
        // Every segment at 60 % within: decided to fail at the first look.
        let slow = judge(
            &rule,
            "r",
            &[Tally {
                met: 30,
                judged: 50,
            }; 7],
            Looks::at(0.95).alpha_at(0),
            Blocks::Consecutive { per_process: 7 },
        );
        assert_eq!(slow.verdict, SloVerdict::Fails, "{slow:?}");
    }

    #[test]
    fn a_load_meets_only_over_two_arrival_processes() {
        let rule: Rule = "ttft_p90<50ms".parse().expect("rule");
        let kind = Blocks::Consecutive { per_process: 7 };
        let good = Tally {
            met: 49,
            judged: 50,
        };
        let one = judge(&rule, "r", &[good; 7], Looks::at(0.95).alpha_at(0), kind);
        assert!(one.low > 0.9, "{one:?}");
        assert_eq!(one.verdict, SloVerdict::Undecided);
        assert!(one.statistic.contains("two needed to meet"), "{one:?}");
        let two = judge(&rule, "r", &[good; 14], Looks::at(0.95).alpha_at(1), kind);
        assert_eq!(two.verdict, SloVerdict::Meets, "{two:?}");
        assert!(!two.statistic.contains("two needed"), "{two:?}");
    }

    #[test]
    fn segments_that_straddle_the_bound_are_out_of_reach_and_a_clear_estimate_is_not() {
        let looks = Looks::at(0.95);
        let last = looks.alpha_at(LOOKS - 1);
        let segments = |mets: &[u64]| -> Vec<Tally> {
            mets.iter().map(|&met| Tally { met, judged: 50 }).collect()
        };
        // Mean 0.85 against 0.9, the segments' error 0.093: at 28 segments 0.047, and t(27) at
        // 1 − 0.0016 is 3.3, a half-width of 0.15, near three times the distance.
        let straddling = segments(&[50, 20, 50, 45, 30, 50, 51]);
        assert!(out_of_reach(&straddling, 0.9, looks.cap(), last));
        // Mean 0.60, far below: the cap would decide it.
        let far = segments(&[30, 28, 32, 30, 31, 29, 30]);
        assert!(!out_of_reach(&far, 0.9, looks.cap(), last));
        // At the cap there is no look left to reach.
        assert!(!out_of_reach(&straddling.repeat(4), 0.9, looks.cap(), last));
    }

    #[test]
    fn an_error_bound_is_judged_on_the_responses() {
        let rule: Rule = "errors<5%".parse().expect("rule");
        // One block of `judged` responses, `met` of them within the bound.
        let one_block = |met, judged| {
            judge(
                &rule,
                "e",
                &[Tally { met, judged }],
                0.025,
                Blocks::Independent,
            )
        };
        let few = one_block(999, 1000);
        assert_eq!(few.verdict, SloVerdict::Meets);
        let many = one_block(800, 1000);
        assert_eq!(many.verdict, SloVerdict::Fails);
        let near = one_block(95, 100);
        assert_eq!(near.verdict, SloVerdict::Undecided);
        assert!((many.estimate - 0.2).abs() < 1e-12);
    }

    #[test]
    fn clopper_pearson_matches_known_values() {
        // 0 of 10 at 95 %: the upper end is 1 − 0.025^(1/10) = 0.3085.
        let (low, high) = clopper_pearson(0, 10, 0.05);
        assert_eq!(low, 0.0);
        assert!((high - 0.308_5).abs() < 1e-3, "{high}");
        let (low, high) = clopper_pearson(5, 10, 0.05);
        assert!((low - 0.187_1).abs() < 1e-3 && (high - 0.812_9).abs() < 1e-3);
    }

    #[test]
    fn a_probe_fails_when_one_rule_fails_and_meets_when_all_do() {
        let rules: Vec<(Rule, String)> = ["ttft_p90<1s", "errors<10%"]
            .iter()
            .map(|t| (t.parse().expect("rule"), (*t).to_owned()))
            .collect();
        let block = vec![
            Tally {
                met: 20,
                judged: 20,
            },
            Tally {
                met: 20,
                judged: 20,
            },
        ];
        let verdicts = judge_all(
            &rules,
            &vec![block; 7],
            Looks::at(0.95).alpha_at(0),
            Blocks::Independent,
        );
        assert_eq!(overall(&verdicts), SloVerdict::Meets, "{verdicts:?}");
        let block = vec![
            Tally { met: 2, judged: 20 },
            Tally {
                met: 20,
                judged: 20,
            },
        ];
        let verdicts = judge_all(
            &rules,
            &vec![block; 7],
            Looks::at(0.95).alpha_at(0),
            Blocks::Independent,
        );
        assert_eq!(overall(&verdicts), SloVerdict::Fails);
    }
}
