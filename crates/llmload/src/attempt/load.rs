//! An attempt folder read back: `campaign.json`, `requests.jsonl` and, when present,
//! `summary.json`. The per-case figures are recomputed from the records alone, so that every view
//! can be rebuilt or restyled after the fact (`llmload report DIR`) and `compare` never trusts a
//! summary that the records do not support.

use super::campaign::{read_campaign, Campaign};
use super::rebuild;
use crate::error::Context;
use crate::record::{Phase, Record};
use crate::report::{Report, FAILED_SHOWN, TIMELINE_MAX};
use crate::summary::repeats::Series;
use crate::summary::{CaseSummary, Outcome, OutcomeStatus, RunState, Summary};
use crate::telemetry::Reading;
use std::collections::BTreeMap;
use std::path::Path;

/// The latest activity among `records`.
fn last_activity<'a>(records: impl Iterator<Item = &'a Record>) -> Option<f64> {
    records
        .map(|r| r.done_s.unwrap_or(r.sent_s))
        .reduce(f64::max)
}

/// Why the run's own word is missing when its `summary.json` cannot be read.
const DAMAGED: &str = "its summary.json is damaged";

/// Reads the attempt folder `dir` and recomputes its summary from `requests.jsonl`, read
/// one line at a time (a long run's file is never held whole).
pub fn read(dir: &Path) -> crate::error::Result<Report> {
    let campaign = read_campaign(dir)?;
    let telemetry = read_telemetry(dir)?;
    let path = dir.join("summary.json");
    let (previous, missing) = match crate::files::read_text(&path) {
        Ok(text) => match super::check_schema(&path, &text)
            .map(|()| serde_json::from_str::<Summary>(&text))?
        {
            Ok(summary) => (Some(summary), None),
            Err(e) => {
                crate::console::note(format_args!(
                    "warning: {} is damaged ({e}); rebuilding from the records alone",
                    path.display()
                ));
                (None, Some(DAMAGED))
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            (None, Some("it wrote no summary.json"))
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let path = dir.join("requests.jsonl");
    let mut replay =
        |f: &mut dyn FnMut(&Record)| crate::attempt::records::for_each_record(&path, |r| f(&r));
    let end = if missing == Some(DAMAGED) {
        rebuild::End::Unknown
    } else {
        rebuild::End::Recorded
    };
    let cases = rebuilt(&campaign, (previous.as_ref(), end), &telemetry, &mut replay)?;
    let (records, last_activity_s) = records_for_html(&path, &cases.0)?;
    let mut report = assemble(&campaign, cases, records, previous.as_ref());
    report.last_activity_s = last_activity_s;
    let still_running = previous
        .as_ref()
        .is_some_and(|p| p.outcome.status == OutcomeStatus::Running);
    if let Some(why) =
        missing.or(still_running.then_some("its last summary.json says it was still running"))
    {
        report.summary.outcome = unfinished(&report.summary, &campaign, why, last_activity_s);
    }
    report.telemetry = telemetry;
    Ok(report)
}

/// The outcome of a run that ended without writing its final summary (it was killed, or its
/// machine stopped): how far its records go (in a series, those of every repeat).
fn unfinished(
    summary: &Summary,
    campaign: &Campaign,
    why: &str,
    last_activity_s: Option<f64>,
) -> Outcome {
    let cases = &summary.cases;
    let runs = summary.repeats.as_ref().map(|s| &s.runs);
    // In a series, the repeat it ended in is the one whose cases have records.
    let ended_in = runs.and_then(|r| r.last()).map(|r| &r.cases);
    let total = crate::num::count(campaign.cases.len().max(cases.len()));
    let recorded: u32 = runs
        .map_or_else(
            || cases.iter().collect(),
            |r| r.iter().flat_map(|r| &r.cases).collect::<Vec<_>>(),
        )
        .into_iter()
        .map(|c| {
            let n = &c.counts;
            n.ok.saturating_add(n.invalid)
                .saturating_add(n.error)
                .saturating_add(n.cancelled)
        })
        .fold(0, u32::saturating_add);
    let last = last_activity_s.map_or_else(
        || "no request was recorded".to_owned(),
        |t| format!("the last request activity at {t:.1} s"),
    );
    let series = match (&summary.repeats, runs.and_then(|r| r.last())) {
        (Some(s), Some(run)) => format!(
            "; {} of {} repeats complete, the run ended in repeat {}",
            s.complete.len(),
            s.planned,
            run.repeat
        ),
        _ => String::new(),
    };
    let reason = format!(
        "the run ended without its final summary ({why}; it was killed, or its machine \
         stopped): {} of {total} cases have records, {recorded} measured requests recorded, \
         {last}{series}",
        ended_in.unwrap_or(cases).len()
    );
    Outcome::new(
        cases,
        total,
        RunState::Ended {
            stop: None,
            failure: Some(reason),
        },
    )
}

/// Recomputes the summary of `campaign` from `records`. What the records cannot say comes
/// from `previous` when there is one: how the run ended (the outcome), the telemetry summary,
/// the measurement window of continuous and open-loop cases, the soak series' spans, and a
/// sweep's stop rules (its analysis is recomputed).
pub fn from_records(
    campaign: &Campaign,
    records: Vec<Record>,
    previous: Option<&Summary>,
) -> Report {
    let mut replay = |f: &mut dyn FnMut(&Record)| {
        records.iter().for_each(&mut *f);
        Ok(())
    };
    // Replaying from memory cannot fail.
    let end = rebuild::End::Recorded;
    let cases = rebuilt(campaign, (previous, end), &[], &mut replay).unwrap_or_default();
    assemble(campaign, cases, records, previous)
}

/// The cases of `campaign` rebuilt from its records, and a series' repeats where it ran as one
/// (`--repeat`): its cases are then the complete repeats combined.
fn rebuilt(
    campaign: &Campaign,
    run: (Option<&Summary>, rebuild::End),
    telemetry: &[Reading],
    replay: &mut rebuild::Replay,
) -> crate::error::Result<(Vec<CaseSummary>, Option<Series>)> {
    if campaign.config.repeat.is_some() {
        let (cases, series) = super::series::rebuild(campaign, run, telemetry, replay)?;
        return Ok((cases, Some(series)));
    }
    Ok((rebuild::cases(campaign, run, telemetry, replay)?, None))
}

/// The report of `campaign` with its rebuilt cases (and series) and the `records` the views
/// draw.
fn assemble(
    campaign: &Campaign,
    (cases, repeats): (Vec<CaseSummary>, Option<Series>),
    records: Vec<Record>,
    previous: Option<&Summary>,
) -> Report {
    let slo = campaign.config.slo.slo();
    let sweep = rebuild::sweep(previous.and_then(|p| p.sweep.as_ref()), &cases, &slo);
    let outcome = match previous {
        Some(p) => p.outcome.clone(),
        None => Outcome::new(
            &cases,
            crate::num::count(campaign.cases.len()),
            RunState::DONE,
        ),
    };
    let target = &campaign.target;
    Report {
        summary: Summary {
            schema_version: campaign.schema_version,
            attempt_id: campaign.attempt_id.clone(),
            target_url: target.url.clone(),
            replicas: target.replicas.clone(),
            api: target.api.name().to_owned(),
            model: target.model.clone(),
            simulated: target.simulated,
            cases,
            outcome,
            telemetry: previous.and_then(|p| p.telemetry.clone()),
            sweep,
            client_check: previous.and_then(|p| p.client_check.clone()),
            counting: previous.and_then(|p| p.counting.clone()),
            shard: previous.and_then(|p| p.shard.clone()),
            shards: previous.and_then(|p| p.shards.clone()),
            repeats,
            // The search's answer rests on its blocks' records, read as it went: kept as found.
            capacity: previous.and_then(|p| p.capacity.clone()),
            ab: previous.and_then(|p| p.ab.clone()),
        },
        last_activity_s: last_activity(records.iter()),
        records,
        started_at: campaign.started_at.clone(),
        telemetry: Vec::new(),
        limits: campaign.config.limits.thresholds(),
    }
}

/// The measured records the HTML page draws, slimmed to what it reads (token times dropped but
/// the last; no server timings, ids or session-graph call): per case, the first
/// [`TIMELINE_MAX`], and the failed ones among the first [`FAILED_SHOWN`] failures; with the
/// latest activity of any record.
///
/// `cases` (the summary's, where there is one) sizes the list once, to the records it says
/// there are: a list that grows by doubling holds twice its records while it moves.
pub fn records_for_html(
    path: &Path,
    cases: &[CaseSummary],
) -> crate::error::Result<(Vec<Record>, Option<f64>)> {
    let expected = cases
        .iter()
        .map(|c| (c.counts.measured() as usize).min(TIMELINE_MAX + FAILED_SHOWN))
        .sum();
    let mut kept = Vec::with_capacity(expected);
    let mut last: Option<f64> = None;
    let mut seen: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    crate::attempt::records::for_each_record(path, |mut r| {
        let t = r.done_s.unwrap_or(r.sent_s);
        last = Some(last.map_or(t, |l| l.max(t)));
        if r.phase != Phase::Measured {
            return;
        }
        let (measured, failed) = seen.entry(r.case.clone()).or_default();
        let is_failed = !matches!(
            r.status,
            crate::record::Status::Ok | crate::record::Status::Abandoned
        );
        let keep = *measured < TIMELINE_MAX || (is_failed && *failed < FAILED_SHOWN);
        *measured += 1;
        *failed += usize::from(is_failed);
        if keep {
            r.event_ms = r.event_ms.last().copied().into_iter().collect();
            r.event_tokens = Vec::new();
            r.notes = Vec::new();
            // Nothing on the page reads a record's server timings, ids or call: the sections
            // that show them read the summary.
            r.server = None;
            r.request_id = None;
            r.server_request_id = None;
            r.graph = None;
            kept.push(r);
        }
    })?;
    Ok((kept, last))
}

/// The readings of `telemetry.jsonl` in `dir`; none when there is no such file. A line that is
/// not a reading (a run killed mid-write leaves half a line) is skipped.
pub fn read_telemetry(dir: &Path) -> crate::error::Result<Vec<Reading>> {
    let path = dir.join("telemetry.jsonl");
    match crate::files::read_text(&path) {
        Ok(text) => Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempt::campaign::CampaignCase;
    use crate::fixture;
    use crate::report::markdown;

    #[test]
    fn the_page_keeps_only_the_records_it_draws() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("requests.jsonl");
        let mut sink = crate::attempt::records::RecordSink::create(&path).expect("sink");
        let events: Vec<f64> = (1..=64).map(f64::from).collect();
        for i in 0..TIMELINE_MAX + 500 {
            let mut r = crate::record::ok_record(i as f64 * 0.01, None, events.clone());
            if i >= TIMELINE_MAX + 300 {
                r.status = crate::record::Status::Error;
                r.error_kind = Some(crate::record::ErrorKind::Http);
            }
            sink.append(&r).expect("append");
        }
        let (kept, last) = records_for_html(&path, &[]).expect("readable");
        // The first TIMELINE_MAX, then the first FAILED_SHOWN failures after them.
        assert_eq!(kept.len(), TIMELINE_MAX + FAILED_SHOWN);
        assert!(
            kept.iter().all(|r| r.event_ms == [64.0]),
            "only the last event kept"
        );
        let latest = (TIMELINE_MAX + 499) as f64 * 0.01 + 0.064;
        assert!(last.is_some_and(|l| (l - latest).abs() < 1e-9), "{last:?}");
        let all = crate::attempt::records::read_records(&path).expect("readable");
        assert_eq!(last_activity(all.iter()), last);
    }

    #[test]
    fn warmups_stay_out_and_the_failure_leaves_its_case_incomplete() {
        let summary = fixture::report().summary;
        assert_eq!(summary.cases.len(), 4);
        let counts: Vec<u32> = summary.cases.iter().map(|c| c.counts.ok).collect();
        assert_eq!(counts, vec![2, 4, 2, 3]);
        let complete: Vec<bool> = summary.cases.iter().map(|c| c.complete).collect();
        assert_eq!(complete, vec![true, true, true, false]);
        assert_eq!(summary.outcome.cases_completed, 3);
        assert_eq!(
            summary.outcome.reason.as_deref(),
            Some("1 of 4 cases incomplete")
        );
    }

    #[test]
    fn the_previous_outcome_is_kept_and_unrun_cases_are_left_out() {
        let mut campaign = fixture::campaign();
        campaign.cases.push(CampaignCase {
            id: "in1024-c1-out4".into(),
            input_tokens: 1024,
            concurrency: 1,
            output_tokens: 4,
            ..CampaignCase::default()
        });
        let mut previous = fixture::report().summary;
        previous.outcome.reason = Some("interrupted".into());
        let report = from_records(&campaign, fixture::records(), Some(&previous));
        assert_eq!(report.summary.cases.len(), 4);
        assert_eq!(report.summary.outcome, previous.outcome);
        let recomputed = from_records(&campaign, fixture::records(), None);
        assert_eq!(recomputed.summary.outcome.cases_total, 5);
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(markdown::render(&fixture::report().summary));
    }

    #[test]
    fn sweep_markdown_snapshot() {
        insta::assert_snapshot!(markdown::render(&fixture::sweep_report().summary));
    }

    #[test]
    fn sweep_summary_json_snapshot() {
        let summary = fixture::sweep_report().summary;
        insta::assert_snapshot!(serde_json::to_string_pretty(&summary).expect("serialises"));
    }

    #[test]
    fn summary_json_snapshot() {
        let summary = fixture::report().summary;
        insta::assert_snapshot!(serde_json::to_string_pretty(&summary).expect("serialises"));
    }
}
