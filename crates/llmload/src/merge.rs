//! `llmload merge SHARD_DIR… [--out DIR]`: the shards of one attempt (`--shard I/N`, one
//! `--attempt-id`) joined into one attempt folder. The records are concatenated, each with its
//! shard's index and its times moved onto one timeline (every shard's load start at the same
//! instant), and every figure is rebuilt from them by the accumulators of a single run, over the
//! global window: from the earliest shard's start to the last shard's end. Shards of different
//! attempts, configurations or seeds are refused: merging the shards of one attempt is not
//! pooling attempts.

use crate::attempt::campaign::{read_campaign, Campaign, MergedFrom};
use crate::attempt::records::for_each_record;
use crate::attempt::{rebuild, Attempt};
use crate::config::ConfigError;
use crate::error::Context;
use crate::record::{Phase, Record};
use crate::summary::client_check::ClientVerdict;
use crate::summary::shards::{MergedShard, ShardRun, ShardsSection};
use crate::summary::{Outcome, OutcomeStatus, RunState, Summary};
use crate::RunResult;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One shard folder, read.
struct ShardDir {
    dir: PathBuf,
    campaign: Campaign,
    /// Its last `summary.json`, when it wrote one.
    summary: Option<Summary>,
    run: ShardRun,
}

fn refuse<T>(message: String) -> crate::error::Result<T> {
    Err(ConfigError(message).into())
}

/// Merges the shard folders `dirs` into one attempt folder under `out` (`OUT/NAME/ATTEMPT-ID`).
pub fn merge(dirs: &[PathBuf], out: &Path) -> crate::error::Result<RunResult> {
    let mut shards = dirs
        .iter()
        .map(|d| read_shard(d))
        .collect::<crate::error::Result<Vec<_>>>()?;
    check_same_attempt(&shards)?;
    shards.sort_by_key(|s| s.run.index);
    let first = &shards[0];
    let count = first.run.count;
    let anchor = shards
        .iter()
        .filter_map(|s| s.run.start.map(|st| st.schedule_start_s))
        .fold(0.0_f64, f64::max);
    let shift = |s: &ShardDir| s.run.start.map_or(0.0, |st| anchor - st.schedule_start_s);
    let name = first.campaign.config.name.as_deref().unwrap_or("campaign");
    // Written aside and moved into place whole: a merge stopped half-way leaves no attempt.
    let attempt = Attempt::create_staged(out, name, &first.run.attempt_id)?;
    let singles = first.campaign.config.warmup;
    let started_at = merged_start(first, anchor);
    let campaign = merged_campaign(&shards, &attempt, &started_at, singles);
    campaign.write(&attempt)?;
    let records = write_records(&attempt.dir, &shards, singles as usize, &shift)?;
    let section = section(&shards, &records, count, &shift);
    let previous = previous(&shards, &campaign, &section, &shift);
    let path = attempt.dir.join("requests.jsonl");
    let mut replay = |f: &mut dyn FnMut(&Record)| for_each_record(&path, |r| f(&r));
    let cases = rebuild::cases(
        &campaign,
        (Some(&previous), rebuild::End::Recorded),
        &[],
        &mut replay,
    )?;
    let total = crate::num::count(campaign.cases.len());
    let summary = Summary {
        outcome: Outcome::new(
            &cases,
            total,
            RunState::Ended {
                stop: None,
                failure: section.shortfall(),
            },
        ),
        cases,
        client_check: merged_client_check(&shards, &section),
        shards: Some(section),
        ..previous
    };
    crate::views::write(&attempt, &summary)?;
    crate::views::write_html(&attempt, &summary)?;
    let attempt = attempt.publish()?;
    Ok(RunResult {
        dir: attempt.dir,
        summary,
        metrics: None,
    })
}

/// A shard folder: its campaign, its summary if any, and its shard section (from the summary,
/// else from the campaign, for a shard killed before it wrote one).
fn read_shard(dir: &Path) -> crate::error::Result<ShardDir> {
    let campaign = read_campaign(dir)?;
    let sharding = campaign.config.sharding.clone().unwrap_or_default();
    if sharding.shard.count <= 1 {
        return refuse(format!(
            "{} is not a shard (it ran without --shard I/N): merge joins the shards of one \
             attempt; attempts are never pooled (set them side by side with llmload compare)",
            dir.display()
        ));
    }
    let summary: Option<Summary> = crate::files::read_text(&dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let mut run = summary
        .as_ref()
        .and_then(|s| s.shard.clone())
        .unwrap_or_else(|| ShardRun {
            index: sharding.shard.index,
            count: sharding.shard.count,
            attempt_id: sharding.attempt_id.clone().unwrap_or_default(),
            config_fingerprint: campaign.config_fingerprint.clone().unwrap_or_default(),
            seed: campaign.config.seed,
            start_at: sharding.start_at.clone(),
            ..ShardRun::default()
        });
    // A shard killed before its final summary still wrote when its load began.
    run.start = run.start.or_else(|| crate::attempt::read_start(dir));
    Ok(ShardDir {
        dir: dir.to_path_buf(),
        campaign,
        summary,
        run,
    })
}

/// Refuses shards of different attempts, configurations, seeds or shard counts, and a shard
/// given twice.
fn check_same_attempt(shards: &[ShardDir]) -> crate::error::Result<()> {
    let Some(first) = shards.first() else {
        return refuse("merge needs the shard folders of one attempt".into());
    };
    let (a, da) = (&first.run, first.dir.display());
    for s in &shards[1..] {
        let (b, db) = (&s.run, s.dir.display());
        let differ = |what: &str, x: &dyn std::fmt::Display, y: &dyn std::fmt::Display| {
            refuse::<()>(format!(
                "cannot merge {da} and {db}: {what} differ ({x} and {y}); merge joins the \
                 shards of one attempt, never several attempts"
            ))
        };
        if a.attempt_id != b.attempt_id {
            differ("their attempt ids", &a.attempt_id, &b.attempt_id)?;
        }
        if a.seed != b.seed {
            differ("their seeds", &a.seed, &b.seed)?;
        }
        if a.count != b.count {
            differ("their numbers of shards", &a.count, &b.count)?;
        }
        if a.config_fingerprint != b.config_fingerprint {
            differ(
                "their configurations",
                &a.config_fingerprint,
                &b.config_fingerprint,
            )?;
        }
    }
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    for s in shards {
        if let Some(other) = seen.insert(s.run.index, &s.dir) {
            return refuse(format!(
                "cannot merge: {} and {} are both shard {} of {}",
                other.display(),
                s.dir.display(),
                s.run.index,
                s.run.count
            ));
        }
    }
    Ok(())
}

/// The merged attempt's wall-clock start: the shards' `--start-at` less the `anchor` seconds its
/// timeline has before it.
fn merged_start(first: &ShardDir, anchor: f64) -> String {
    let at = first
        .run
        .start_at
        .as_deref()
        .and_then(|t| humantime::parse_rfc3339_weak(t).ok());
    match at.and_then(|t| t.checked_sub(std::time::Duration::from_secs_f64(anchor))) {
        Some(t) => humantime::format_rfc3339_millis(t).to_string(),
        None => first.campaign.started_at.clone().unwrap_or_default(),
    }
}

/// `campaign.json` of the merged attempt: the first shard's, under the attempt's own id, its
/// single warmups counted over every shard, and the shards it came from.
fn merged_campaign(
    shards: &[ShardDir],
    attempt: &Attempt,
    started_at: &str,
    singles: u32,
) -> Campaign {
    let first = &shards[0];
    let mut campaign = first.campaign.clone();
    campaign.attempt_id.clone_from(&attempt.id);
    campaign.started_at = Some(started_at.to_owned());
    campaign.config.warmup = singles * crate::num::count(shards.len());
    campaign.config.sharding = None;
    campaign.merged_from = Some(MergedFrom {
        attempt_id: first.run.attempt_id.clone(),
        shards: first.run.count,
        dirs: shards.iter().map(|s| s.dir.display().to_string()).collect(),
    });
    campaign
}

/// Writes the merged `requests.jsonl`: every shard's single warmups first (so that the rebuild
/// tells them from the launches of a warmup time, as in a single run), then every other record,
/// shard by shard, each with its shard's index and its times shifted onto the merged timeline.
/// Returns each shard's number of records.
fn write_records(
    dir: &Path,
    shards: &[ShardDir],
    singles: usize,
    shift: &dyn Fn(&ShardDir) -> f64,
) -> crate::error::Result<Vec<u64>> {
    let path = dir.join("requests.jsonl");
    let file =
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let mut counts = vec![0_u64; shards.len()];
    for pass_singles in [true, false] {
        for (i, shard) in shards.iter().enumerate() {
            let d = shift(shard);
            let mut warmups: BTreeMap<String, usize> = BTreeMap::new();
            let mut failed = None;
            for_each_record(&shard.dir.join("requests.jsonl"), |mut r| {
                let n = warmups.entry(r.case.clone()).or_default();
                let single = r.phase == Phase::Warmup && *n < singles;
                *n += usize::from(r.phase == Phase::Warmup);
                if single != pass_singles || failed.is_some() {
                    return;
                }
                r.shard = Some(shard.run.index);
                shift_times(&mut r, d);
                counts[i] += 1;
                let line = serde_json::to_string(&r).map(|l| l + "\n");
                if let Err(e) = line
                    .map_err(std::io::Error::other)
                    .and_then(|l| out.write_all(l.as_bytes()))
                {
                    failed = Some(e);
                }
            })?;
            if let Some(e) = failed {
                return Err(e).with_context(|| format!("writing {}", path.display()));
            }
        }
    }
    out.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(counts)
}

fn shift_times(r: &mut Record, d: f64) {
    r.sent_s += d;
    for t in [
        &mut r.scheduled_s,
        &mut r.first_token_s,
        &mut r.done_s,
        &mut r.ended_s,
    ]
    .into_iter()
    .flatten()
    {
        *t += d;
    }
}

/// The shard section: each shard as it recorded itself, the missing and incomplete ones, and
/// the client-bound ones.
fn section(
    shards: &[ShardDir],
    records: &[u64],
    count: u32,
    shift: &dyn Fn(&ShardDir) -> f64,
) -> ShardsSection {
    let mut section = ShardsSection {
        count,
        ..ShardsSection::default()
    };
    for (shard, &records) in shards.iter().zip(records) {
        let outcome = shard.summary.as_ref().map(|s| &s.outcome);
        let (status, reason) = match outcome {
            Some(o) => (variant_name(o.status).unwrap_or_default(), o.reason.clone()),
            None => (
                "running".into(),
                Some("it wrote no summary.json (killed)".into()),
            ),
        };
        let complete = outcome.is_some_and(|o| o.status == OutcomeStatus::Completed);
        let check = shard.summary.as_ref().and_then(|s| s.client_check.as_ref());
        if !complete {
            section.incomplete.push(shard.run.index);
        }
        if check.is_some_and(|c| c.verdict == ClientVerdict::ClientMayHaveDistorted) {
            section.client_bound.push(shard.run.index);
        }
        section.shards.push(MergedShard {
            run: shard.run.clone(),
            dir: shard.dir.display().to_string(),
            status,
            reason: reason.filter(|_| !complete),
            records,
            client_check: check.and_then(|c| variant_name(c.verdict)),
            shift_s: shift(shard),
        });
    }
    section.missing = (0..count)
        .filter(|i| !shards.iter().any(|s| s.run.index == *i))
        .collect();
    section.with_spreads()
}

/// The name `summary.json` gives a unit variant (`completed`, `client-may-have-distorted`, …).
fn variant_name(value: impl Serialize) -> Option<String> {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => Some(name),
        _ => None,
    }
}

/// What the rebuild needs that records cannot say, for the merged attempt: each case's window
/// over every shard's (the earliest start to the last end, on the merged timeline), and whether
/// every shard completed it.
fn previous(
    shards: &[ShardDir],
    campaign: &Campaign,
    section: &ShardsSection,
    shift: &dyn Fn(&ShardDir) -> f64,
) -> Summary {
    let whole = section.missing.is_empty() && section.incomplete.is_empty();
    let mut cases = Vec::new();
    for c in &campaign.cases {
        let mut merged: Option<crate::summary::CaseSummary> = None;
        for shard in shards {
            let Some(case) = shard
                .summary
                .as_ref()
                .and_then(|s| s.cases.iter().find(|x| x.id == c.id))
            else {
                continue;
            };
            let d = shift(shard);
            let m = merged.get_or_insert_with(|| {
                let mut first = case.clone();
                first.series = None;
                first
                    .load
                    .iter_mut()
                    .for_each(|l| l.window_s = [f64::INFINITY, f64::NEG_INFINITY]);
                first
            });
            m.complete &= case.complete;
            if let (Some(l), Some(w)) = (&mut m.load, case.load.as_ref().map(|l| l.window_s)) {
                l.window_s = [l.window_s[0].min(w[0] + d), l.window_s[1].max(w[1] + d)];
            }
        }
        if let Some(mut m) = merged {
            m.complete &= whole;
            cases.push(m);
        }
    }
    let base = shards
        .iter()
        .find_map(|s| s.summary.clone())
        .unwrap_or_else(|| crate::attempt::load::from_records(campaign, Vec::new(), None).summary);
    Summary {
        attempt_id: campaign.attempt_id.clone(),
        cases,
        telemetry: None,
        sweep: None,
        shard: None,
        ..base
    }
}

/// The client self-check of the merged attempt: a client-bound shard's (it taints the whole
/// attempt), else the first shard's.
fn merged_client_check(
    shards: &[ShardDir],
    section: &ShardsSection,
) -> Option<crate::summary::client_check::ClientCheck> {
    let pick = section.client_bound.first().copied();
    let shard = match pick {
        Some(i) => shards.iter().find(|s| s.run.index == i),
        None => shards.first(),
    }?;
    let mut check = shard.summary.as_ref()?.client_check.clone()?;
    if pick.is_some() {
        for reason in &mut check.reasons {
            *reason = format!("shard {}: {reason}", shard.run.index);
        }
    }
    Some(check)
}
