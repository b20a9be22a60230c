//! `llmload ab`: the base (A) and the candidate (B) measured interleaved in one attempt. Each
//! case's rounds are cut into blocks; the blocks go to A and B pair by pair in a randomized
//! balanced order (ABBA or BAAB, drawn from the seed and written down), so that whatever the
//! machine does over the attempt falls on both arms alike. The gate then judges each pair's B
//! against its A (`summary::paired`).
//!
//! The attempt folder holds one attempt per arm, `A/` and `B/`, each a whole attempt whose
//! cases are the blocks (`in64-c1-out16.b3`) and whose records say their arm, beside the
//! comparison's own `summary.json`, `report.md` and `report.html`.

use crate::api;
use crate::attempt::Attempt;
use crate::config::{Config, ConfigError};
use crate::error::{Error, Result};
use crate::guard::StopSignal;
use crate::record::Arm;
use crate::runner::session::Session;
use crate::summary::gate::Rule;
use crate::summary::paired::section::{block_id, checks, pairs_of, CaseBlocks};
use crate::summary::paired::{block_order, AbCase, AbSection};
use crate::summary::{OutcomeStatus, Summary};
use crate::target::Target;
use crate::telemetry::Sampler;
use crate::workload::shape::{CasePlan, Shape};
use crate::workload::source::PromptSource;
use crate::{endpoint, prepare, views};
use std::path::PathBuf;

/// What `llmload ab` takes besides each arm's configuration.
#[derive(Clone, Debug)]
pub struct AbOptions {
    /// Measured rounds per block.
    pub block_rounds: u32,
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

/// Runs `llmload ab`: `configs` are A's and B's (the same workload and seed; their own URL,
/// model and extra body).
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
    let cuts = cut(&a.config.plans(), options.block_rounds, a.config.seed);
    let simulated = a.target.is_simulator() && b.target.is_simulator();
    let attempt = Attempt::create(&a.config.out, &a.config.name)?;
    let folder = a.config.out.join(&a.config.name);
    let arm_attempts = [
        Attempt::create_named(&folder, &attempt.id, Arm::A.letter())?,
        Attempt::create_named(&folder, &attempt.id, Arm::B.letter())?,
    ];
    let plans: Vec<CasePlan> = cuts.iter().flat_map(|c| c.blocks.clone()).collect();
    for (arm, at) in [&a, &b].iter().zip(&arm_attempts) {
        views::campaign(at, &arm.config, &arm.target, simulated, &plans)?;
    }
    let (planned, warmup, seed) = (plans.len(), a.config.warmup, a.config.seed);
    let mut sessions = [
        start(
            (&a, sampler_a),
            &arm_attempts[0],
            simulated,
            &interrupted,
            Arm::A,
        )?,
        start(
            (&b, sampler_b),
            &arm_attempts[1],
            simulated,
            &interrupted,
            Arm::B,
        )?,
    ];
    let write = |sessions: &[Session<'_>; 2]| -> Result<()> {
        for (session, at) in sessions.iter().zip(&arm_attempts) {
            views::write(at, &session.summary)?;
        }
        let arms = [&sessions[0].summary, &sessions[1].summary];
        let summary = combined(arms, &cuts, options, (seed, &attempt.id));
        write_views(&attempt, &summary)
    };
    'cases: for cut in &cuts {
        let mut warmed = [false, false];
        for (k, pair) in cut.order.iter().enumerate() {
            for &arm in pair {
                let i = usize::from(arm == Arm::B);
                let warmup = if warmed[i] { 0 } else { warmup };
                warmed[i] = true;
                let go_on = sessions[i].run_block(&cut.blocks[k], planned, warmup).await;
                if !go_on {
                    write(&sessions)?;
                    break 'cases;
                }
            }
        }
        write(&sessions)?;
    }
    let [session_a, session_b] = sessions;
    let summary_a = session_a.finish(planned).await?;
    let summary_b = session_b.finish(planned).await?;
    for (summary, at) in [&summary_a, &summary_b].into_iter().zip(&arm_attempts) {
        views::write(at, summary)?;
        views::write_html(at, summary)?;
    }
    let summary = combined(
        [&summary_a, &summary_b],
        &cuts,
        options,
        (seed, &attempt.id),
    );
    write_views(&attempt, &summary)?;
    Ok(AbResult {
        dir: attempt.dir,
        summary,
    })
}

/// What `llmload ab` cannot interleave, refused before anything is sent.
fn check(config: &Config, options: &AbOptions) -> Result<()> {
    let refuse = |why: &str| Err(Error::from(ConfigError(format!("llmload ab: {why}"))));
    if options.block_rounds == 0 {
        return refuse("--block-rounds needs 1 or more");
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
    if config
        .plans()
        .iter()
        .any(|p| !matches!(p.shape, Shape::Rounds { .. }))
    {
        return refuse(
            "interleaves closed rounds (--arrival rounds) only: an open or continuous load \
             cannot yet be cut into blocks",
        );
    }
    Ok(())
}

/// Connects an arm's target and prepares its prompts and telemetry.
async fn set_up(config: Config) -> Result<(Arm1, Sampler)> {
    let endpoint = endpoint(&config, config.url.as_deref().unwrap_or_default())?;
    let (target, prompts, sampler) = prepare(&config, endpoint).await?;
    Ok((
        Arm1 {
            config,
            target,
            prompts,
        },
        sampler,
    ))
}

/// Starts an arm's session in its attempt: every record it writes says `arm`.
fn start<'a>(
    (arm1, sampler): (&'a Arm1, Sampler),
    attempt: &Attempt,
    simulated: bool,
    interrupted: &StopSignal,
    arm: Arm,
) -> Result<Session<'a>> {
    let mut session = Session::start(
        &arm1.config,
        (&arm1.target, &arm1.prompts),
        attempt,
        sampler,
        (simulated, interrupted.clone()),
        None,
    )?;
    session.set_arm(arm);
    Ok(session)
}

/// Each case of `plans` cut into blocks of `block_rounds` rounds (the last one shorter where
/// they do not divide), with the order of its pairs drawn from `seed` and the case's number.
fn cut(plans: &[CasePlan], block_rounds: u32, seed: u64) -> Vec<Cut> {
    plans
        .iter()
        .enumerate()
        .map(|(i, plan)| {
            let rounds = match plan.shape {
                Shape::Rounds { rounds } => rounds,
                _ => block_rounds,
            };
            let sizes = block_sizes(rounds, block_rounds);
            let blocks = sizes
                .iter()
                .enumerate()
                .map(|(k, &size)| {
                    let mut block = plan.clone();
                    block.case.id = block_id(&plan.case.id, k + 1);
                    block.shape = Shape::Rounds { rounds: size };
                    block
                })
                .collect();
            Cut {
                case: plan.case.id.clone(),
                blocks,
                order: block_order(sizes.len(), seed ^ (i as u64).rotate_left(32)),
            }
        })
        .collect()
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
        level,
        cases: blocks.iter().map(|c| AbCase::of(c, level)).collect(),
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

/// The comparison's `summary.json`, `report.md` and `report.html`.
fn write_views(attempt: &Attempt, summary: &Summary) -> Result<()> {
    attempt.write_json("summary.json", summary)?;
    let markdown = crate::report::markdown::render(summary);
    attempt.write_text("report.md", &crate::console::printable(&markdown))?;
    let html = crate::report::html::render(&crate::report::Report::of(summary));
    attempt.write_text("report.html", &html)
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
}
