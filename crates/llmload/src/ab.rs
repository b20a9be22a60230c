//! `llmload ab`: the base (A) and the candidate (B) measured interleaved in one attempt. Each
//! case's rounds (or a loop's window, in time slices) are cut into blocks; the blocks go to A
//! and B pair by pair in a randomized
//! balanced order (ABBA or BAAB, drawn from the seed and written down), so that whatever the
//! machine does over the attempt falls on both arms alike. The gate then judges each pair's B
//! against its A (`compare::paired`).
//!
//! The attempt folder holds one attempt per arm, `A/` and `B/`, each a whole attempt whose
//! cases are the blocks (`in64-c1-out16.b3`) and whose records say their arm, beside the
//! comparison's own `summary.json`, `report.md` and `report.html`.

use crate::api;
use crate::attempt::Attempt;
use crate::compare::gate::Rule;
use crate::compare::paired::block_order;
use crate::compare::paired::section::{ab_case, block_id, checks, pairs_of, CaseBlocks};
use crate::config::{Config, ConfigError};
use crate::error::{Error, Result};
use crate::guard::StopSignal;
use crate::record::Arm;
use crate::runner::attempt_run::AttemptRun;
use crate::summary::ab::AbSection;
use crate::summary::{OutcomeStatus, Summary};
use crate::target::Target;
use crate::telemetry::Sampler;
use crate::workload::schedule::Bound;
use crate::workload::shape::{CasePlan, Shape};
use crate::workload::source::PromptSource;
use crate::{endpoint, prepare, replicas, views};
use std::path::PathBuf;
use std::time::Duration;

/// What `llmload ab` takes besides each arm's configuration.
#[derive(Clone, Debug)]
pub struct AbOptions {
    /// Measured rounds per block (closed rounds).
    pub block_rounds: u32,
    /// The length of a block (continuous and open loops).
    pub block_time: Duration,
    /// The gate's rules.
    pub rules: Vec<Rule>,
    /// `--fail-on inconclusive`.
    pub fail_on_inconclusive: bool,
    /// What else differs in B's requests, in words (`--b-model`, `--b-extra-body`).
    pub candidate_differs: Vec<String>,
}

/// What a finished `llmload ab` leaves.
#[derive(Debug)]
pub struct AbResult {
    /// The attempt folder (with `A/` and `B/`).
    pub dir: PathBuf,
    /// The comparison's summary: the outcome, and both arms side by side in `ab`.
    pub summary: Summary,
}

/// One arm, ready to run: its configuration, target, prompts and telemetry.
struct Arm1 {
    config: Config,
    target: Target,
    prompts: PromptSource,
}

/// A case cut into blocks: its id, each block's plan, and the order of its pairs.
struct Cut {
    case: String,
    blocks: Vec<CasePlan>,
    order: Vec<[Arm; 2]>,
}

/// Runs `llmload ab`: `configs` are A's and B's (the same workload; their own URL, model,
/// extra body and prompts' seed).
pub async fn ab(
    configs: [Config; 2],
    options: &AbOptions,
    interrupted: StopSignal,
) -> Result<AbResult> {
    let [config_a, config_b] = configs;
    check(&config_a, options)?;
    api::http1::raise_open_files_limit();
    let set_up = async {
        let a = set_up(config_a).await?;
        let b = set_up(config_b).await?;
        Ok::<_, Error>((a, b))
    };
    let ((a, sampler_a), (b, sampler_b)) = tokio::select! {
        ready = set_up => ready?,
        signal = interrupted.raised() => return Err(Error::Stopped(format!(
            "stopped by {signal} while setting up, before the attempt folder was created"
        ))),
    };
    let blocks = (options.block_rounds, options.block_time);
    let cuts = cut(&a.config.plans(), blocks, a.config.seed);
    let plans: Vec<CasePlan> = cuts.iter().flat_map(|c| c.blocks.clone()).collect();
    let simulated = a.target.is_simulator() && b.target.is_simulator();
    let folders = Folders::create([&a, &b], &plans, simulated)?;
    let (planned, seed) = (plans.len(), a.config.seed);
    let mut runs = [
        start(
            (&a, sampler_a),
            &folders.arms[0],
            (simulated, &interrupted),
            Arm::A,
        )?,
        start(
            (&b, sampler_b),
            &folders.arms[1],
            (simulated, &interrupted),
            Arm::B,
        )?,
    ];
    let write = |summaries: [&Summary; 2]| folders.write(summaries, &cuts, options, seed);
    run_cases(&mut runs, (&cuts, planned), a.config.warmup, &write).await?;
    let [run_a, run_b] = runs;
    let summaries = [run_a.finish(planned).await?, run_b.finish(planned).await?];
    for (summary, at) in summaries.iter().zip(&folders.arms) {
        views::write_html(at, summary)?;
    }
    let summary = write([&summaries[0], &summaries[1]])?;
    Ok(AbResult {
        dir: folders.attempt.dir,
        summary,
    })
}

/// Every case's pairs of blocks, each arm's first block of a case after `warmup` warmups;
/// `write` after each case, and where the run stops.
async fn run_cases(
    runs: &mut [AttemptRun<'_>; 2],
    (cuts, planned): (&[Cut], usize),
    warmup: u32,
    write: &impl Fn([&Summary; 2]) -> Result<Summary>,
) -> Result<()> {
    for cut in cuts {
        let mut warmed = [false, false];
        for (k, pair) in cut.order.iter().enumerate() {
            for &arm in pair {
                let i = usize::from(arm == Arm::B);
                let warmup = if warmed[i] { 0 } else { warmup };
                warmed[i] = true;
                if !runs[i].run_block(&cut.blocks[k], planned, warmup).await {
                    write([&runs[0].summary, &runs[1].summary])?;
                    return Ok(());
                }
            }
        }
        write([&runs[0].summary, &runs[1].summary])?;
    }
    Ok(())
}

/// The attempt folder of the comparison and those of its arms (`A/`, `B/`) inside it.
struct Folders {
    attempt: Attempt,
    arms: [Attempt; 2],
}

impl Folders {
    /// Creates the folders and each arm's `campaign.json` (its cases the blocks of `plans`).
    fn create(arms: [&Arm1; 2], plans: &[CasePlan], simulated: bool) -> Result<Folders> {
        let config = &arms[0].config;
        let attempt = Attempt::create(&config.out, &config.name)?;
        let folder = config.out.join(&config.name);
        let folders = Folders {
            arms: [
                Attempt::create_named(&folder, &attempt.id, Arm::A.letter())?,
                Attempt::create_named(&folder, &attempt.id, Arm::B.letter())?,
            ],
            attempt,
        };
        for (arm, at) in arms.iter().zip(&folders.arms) {
            views::campaign(at, &arm.config, &arm.target, simulated, plans)?;
        }
        Ok(folders)
    }

    /// Writes each arm's views from its summary, then the comparison's (returned).
    fn write(
        &self,
        summaries: [&Summary; 2],
        cuts: &[Cut],
        options: &AbOptions,
        seed: u64,
    ) -> Result<Summary> {
        for (summary, at) in summaries.iter().zip(&self.arms) {
            views::write(at, summary)?;
        }
        let summary = combined(summaries, cuts, options, (seed, &self.attempt.id));
        crate::views::write_comparison(&self.attempt, &summary)?;
        Ok(summary)
    }
}

/// What `llmload ab` cannot interleave, refused before anything is sent.
fn check(config: &Config, options: &AbOptions) -> Result<()> {
    let refuse = |why: &str| Err(Error::from(ConfigError(format!("llmload ab: {why}"))));
    if options.block_rounds == 0 {
        return refuse("--block-rounds needs 1 or more");
    }
    if options.block_time < Duration::from_millis(100) {
        return refuse("--block-time needs 100ms or more");
    }
    if config.repeat.is_some() {
        return refuse(
            "takes no --repeat: its pairs of blocks already measure both arms many times over",
        );
    }
    if !config.sharding.shard.is_whole() {
        return refuse("cannot be sharded: each pair of blocks must run back to back");
    }
    if config.load.stages.is_some() {
        return refuse("takes no --stages: a staged load cannot be cut into blocks");
    }
    let level = crate::stats::interval::level();
    let needed = crate::compare::paired::min_pairs(level);
    if !options.rules.is_empty() {
        let fewest = config
            .plans()
            .iter()
            .filter_map(|p| match p.shape {
                Shape::Rounds { rounds } => Some(rounds.div_ceil(options.block_rounds)),
                _ => None,
            })
            .min();
        if let Some(pairs) = fewest.filter(|&p| (p as usize) < needed) {
            return refuse(&format!(
                "{pairs} pair(s) of blocks a case cannot hold a {} % interval, so no rule could \
                 be decided: {needed} pairs are needed (--rounds {} or more at --block-rounds {})",
                crate::fmt::number(level * 100.0),
                needed as u64 * u64::from(options.block_rounds),
                options.block_rounds
            ));
        }
    }
    let sliced = |bound: &Bound| matches!(bound, Bound::Duration(_));
    if !config.plans().iter().all(|p| match &p.shape {
        Shape::Rounds { .. } => true,
        Shape::ClosedContinuous { bound } | Shape::Open { bound, .. } => sliced(bound),
        _ => false,
    }) {
        return refuse(
            "interleaves closed rounds, and continuous or open loops of a --duration (in time \
             slices of --block-time); a trace, sessions or a loop bounded by --requests cannot \
             be cut into blocks",
        );
    }
    Ok(())
}

/// Connects an arm's target and prepares its prompts and telemetry.
async fn set_up(config: Config) -> Result<(Arm1, Sampler)> {
    let endpoint = endpoint(&config, config.url.as_deref().unwrap_or_default())?;
    let (mut target, prompts, sampler) = prepare(&config, endpoint).await?;
    target.replicas = replicas(&config, &target)?;
    Ok((
        Arm1 {
            config,
            target,
            prompts,
        },
        sampler,
    ))
}

/// Starts an arm's run in its attempt: every record it writes says `arm`.
fn start<'a>(
    (arm1, sampler): (&'a Arm1, Sampler),
    attempt: &Attempt,
    (simulated, interrupted): (bool, &StopSignal),
    arm: Arm,
) -> Result<AttemptRun<'a>> {
    let mut run = AttemptRun::start(
        &arm1.config,
        (&arm1.target, &arm1.prompts),
        attempt,
        sampler,
        (simulated, interrupted.clone()),
        None,
    )?;
    run.set_arm(arm);
    Ok(run)
}

/// Each case of `plans` cut into blocks of `block_rounds` rounds (the last one shorter where
/// they do not divide), with the order of its pairs drawn from `seed` and the case's number.
fn cut(plans: &[CasePlan], blocks: (u32, Duration), seed: u64) -> Vec<Cut> {
    plans
        .iter()
        .enumerate()
        .map(|(i, plan)| {
            let shapes = block_shapes(plan, blocks);
            let cut_blocks = shapes
                .iter()
                .enumerate()
                .map(|(k, shape)| {
                    let mut block = plan.clone();
                    block.case.id = block_id(&plan.case.id, k + 1);
                    block.shape = shape.clone();
                    if k > 0 {
                        // A loop's warmup stretch is its first block's alone.
                        block.warmup_time = Duration::ZERO;
                    }
                    block
                })
                .collect();
            Cut {
                case: plan.case.id.clone(),
                blocks: cut_blocks,
                order: block_order(shapes.len(), seed ^ (i as u64).rotate_left(32)),
            }
        })
        .collect()
}

/// The shape of each block of `plan`: closed rounds in blocks of `block_rounds` rounds; a
/// continuous or open loop of a duration in time slices of `block_time` (the first one longer
/// by the warmup stretch), the last one shorter where they do not divide.
fn block_shapes(plan: &CasePlan, (block_rounds, block_time): (u32, Duration)) -> Vec<Shape> {
    let slices = |bound: &Bound| match bound {
        Bound::Duration(d) => time_slices(d.saturating_sub(plan.warmup_time), block_time)
            .into_iter()
            .enumerate()
            .map(|(k, slice)| {
                let warmup = if k == 0 {
                    plan.warmup_time
                } else {
                    Duration::ZERO
                };
                Bound::Duration(slice + warmup)
            })
            .collect(),
        Bound::Requests(_) => vec![*bound],
    };
    match &plan.shape {
        Shape::Rounds { rounds } => block_sizes(*rounds, block_rounds)
            .into_iter()
            .map(|rounds| Shape::Rounds { rounds })
            .collect(),
        Shape::ClosedContinuous { bound } => slices(bound)
            .into_iter()
            .map(|bound| Shape::ClosedContinuous { bound })
            .collect(),
        Shape::Open {
            process,
            rate_rps,
            bound,
            max_in_flight,
        } => slices(bound)
            .into_iter()
            .map(|bound| Shape::Open {
                process: *process,
                rate_rps: *rate_rps,
                bound,
                max_in_flight: *max_in_flight,
            })
            .collect(),
        other => vec![other.clone()],
    }
}

/// `window` cut into slices of `slice`, the last one shorter where they do not divide (none
/// under a millisecond).
fn time_slices(window: Duration, slice: Duration) -> Vec<Duration> {
    let slice = slice.max(Duration::from_millis(1));
    let mut out = Vec::new();
    let mut left = window;
    while left >= Duration::from_millis(1) {
        let next = slice.min(left);
        out.push(next);
        left -= next;
    }
    out
}

/// `rounds` cut into blocks of `block` rounds, the last one shorter where they do not divide.
fn block_sizes(rounds: u32, block: u32) -> Vec<u32> {
    let block = block.max(1);
    (0..rounds.div_ceil(block))
        .map(|k| block.min(rounds - k * block))
        .collect()
}

/// The comparison's summary (attempt `attempt_id`) from the arms' (`a`, `b`; `seed` drew the
/// orders): A's, without its blocks as cases, the outcome the worse of the two (over both arms'
/// blocks), and both arms side by side.
fn combined(
    [a, b]: [&Summary; 2],
    cuts: &[Cut],
    options: &AbOptions,
    (seed, attempt_id): (u64, &str),
) -> Summary {
    let level = crate::stats::interval::level();
    let blocks: Vec<CaseBlocks<'_>> = cuts
        .iter()
        .map(|c| CaseBlocks {
            case: &c.case,
            order: &c.order,
            pairs: pairs_of(&c.case, c.order.len(), &a.cases, &b.cases),
        })
        .collect();
    let section = AbSection {
        base_url: a.target_url.clone(),
        candidate_url: b.target_url.clone(),
        candidate_differs: options.candidate_differs.clone(),
        seed,
        block_rounds: options.block_rounds,
        blocks: blocks_text(cuts, options),
        level,
        cases: blocks.iter().map(|c| ab_case(c, level)).collect(),
        checks: checks(&options.rules, &blocks, level),
        fail_on_inconclusive: options.fail_on_inconclusive,
    };
    let mut outcome = if a.outcome.status == OutcomeStatus::Completed {
        b.outcome.clone()
    } else {
        a.outcome.clone()
    };
    // Both arms' blocks counted: a block is a case of its arm's attempt.
    outcome.cases_completed = a.outcome.cases_completed + b.outcome.cases_completed;
    outcome.cases_total = a.outcome.cases_total + b.outcome.cases_total;
    outcome.rounds_completed = a.outcome.rounds_completed + b.outcome.rounds_completed;
    outcome.responses_completed = a.outcome.responses_completed + b.outcome.responses_completed;
    Summary {
        attempt_id: attempt_id.to_owned(),
        target_url: format!("A {} · B {}", a.target_url, b.target_url),
        cases: Vec::new(),
        outcome,
        ab: Some(section),
        ..a.clone()
    }
}

/// What a block of `cuts` is, in words: "blocks of 2 rounds", "time slices of 5s".
fn blocks_text(cuts: &[Cut], options: &AbOptions) -> String {
    let looped = cuts
        .iter()
        .filter_map(|c| c.blocks.first())
        .any(|b| !matches!(b.shape, Shape::Rounds { .. }));
    if looped {
        format!(
            "time slices of {}",
            humantime::format_duration(options.block_time)
        )
    } else if options.block_rounds == 1 {
        "blocks of 1 round".to_owned()
    } else {
        format!("blocks of {} rounds", options.block_rounds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_are_cut_into_blocks_the_last_one_shorter() {
        assert_eq!(block_sizes(6, 2), [2, 2, 2]);
        assert_eq!(block_sizes(7, 3), [3, 3, 1]);
        assert_eq!(block_sizes(2, 5), [2]);
        assert_eq!(block_sizes(4, 1), [1, 1, 1, 1]);
    }

    #[test]
    fn a_loops_window_is_cut_into_time_slices_the_last_one_shorter() {
        let s = Duration::from_secs;
        assert_eq!(time_slices(s(30), s(10)), [s(10), s(10), s(10)]);
        assert_eq!(time_slices(s(25), s(10)), [s(10), s(10), s(5)]);
        assert_eq!(time_slices(s(4), s(10)), [s(4)]);
        assert!(time_slices(Duration::ZERO, s(10)).is_empty());
    }
}
