//! A series of repeats (`run --repeat N`) rebuilt from its records, each of which names its
//! repeat: every repeat's cases apart, as a run of one repeat would summarise them; which
//! repeats are complete (the run's word where its summary holds it, else what the records
//! prove); and the series' cases, from the records of the complete repeats alone ([`pooled`],
//! which the run calls too, so that `llmload report` combines the same records the same way).

use super::campaign::Campaign;
use super::rebuild::{self, End, Replay};
use crate::record::Record;
use crate::summary::energy::{self, Window};
use crate::summary::repeats::{self, Series};
use crate::summary::{CaseSummary, Summary};
use crate::telemetry::Reading;
use std::collections::BTreeSet;

/// The series' cases (the complete repeats combined) and the series itself, from the records
/// of `campaign` (`replay`), with the run's `previous` summary where there is one and how the
/// run `end`ed.
pub(crate) fn rebuild(
    campaign: &Campaign,
    (previous, end): (Option<&Summary>, End),
    telemetry: &[Reading],
    replay: &mut Replay,
) -> crate::error::Result<(Vec<CaseSummary>, Series)> {
    let said = previous.and_then(|p| p.repeats.as_ref());
    let planned = campaign
        .config
        .repeat
        .or(said.map(|s| s.planned))
        .unwrap_or(0);
    let mut recorded = BTreeSet::new();
    replay(&mut |r| recorded.extend(r.repeat))?;
    let mut series = Series {
        planned,
        ..Series::default()
    };
    for k in 1..=planned {
        let run_said = said.and_then(|s| s.runs.iter().find(|r| r.repeat == k));
        if run_said.is_none() && !recorded.contains(&k) {
            break;
        }
        let before = previous.map(|p| with_cases(p, run_said.map(|r| r.cases.clone())));
        // The run got past a repeat that a later one left records after: its records prove
        // its last case whole or not, as a damaged summary's would.
        let end = if recorded.last().is_some_and(|&last| last > k) {
            End::Unknown
        } else {
            end
        };
        let mut only = |f: &mut dyn FnMut(&Record)| {
            replay(&mut |r| {
                if r.repeat == Some(k) {
                    f(r);
                }
            })
        };
        let cases = rebuild::cases(campaign, (before.as_ref(), end), telemetry, &mut only)?;
        let verdict = match said {
            Some(said) => said_of(said, k, &cases, campaign),
            None => proven(&cases, campaign),
        };
        series.close(k, cases, verdict.err());
    }
    series.close_unrun();
    let cases = pooled(campaign, &series, telemetry, replay)?;
    series.compare_repeats();
    Ok((cases, series))
}

/// The series' cases: the records of its complete repeats summarised together, case by case
/// ([`repeats::combine`]); none before a repeat is complete.
pub(crate) fn pooled(
    campaign: &Campaign,
    series: &Series,
    telemetry: &[Reading],
    replay: &mut Replay,
) -> crate::error::Result<Vec<CaseSummary>> {
    let complete = &series.complete;
    if complete.is_empty() {
        return Ok(Vec::new());
    }
    let mut only = |f: &mut dyn FnMut(&Record)| {
        replay(&mut |r| {
            if r.repeat.is_some_and(|k| complete.contains(&k)) {
                f(r);
            }
        })
    };
    // Every case of a complete repeat was closed by it, which its records prove: the run got
    // past it.
    let cases = rebuild::cases(campaign, (None, End::Unknown), telemetry, &mut only)?;
    let mut cases = repeats::combine(cases, series);
    let interval_s = campaign.config.telemetry_interval_s;
    for case in cases.iter_mut().filter(|c| c.load.is_some()) {
        // A loop's energy is over its repeats' windows, not the time between them.
        let window = [windows_of(case, series)];
        energy::attach(std::slice::from_mut(case), &window, telemetry, interval_s);
        crate::summary::cost::attach(std::slice::from_mut(case), &window, campaign.config.price);
    }
    Ok(cases)
}

/// The measurement windows of the loop `case` in the complete repeats of `series`, with the
/// output tokens behind their throughputs.
fn windows_of(case: &CaseSummary, series: &Series) -> Window {
    let loads = series
        .complete_runs()
        .filter_map(|r| r.cases.iter().find(|c| c.id == case.id))
        .filter_map(|c| c.load.as_ref());
    let mut spans = Vec::new();
    let (mut tokens, mut responses) = (0.0, 0.0);
    for load in loads {
        let [a, b] = load.window_s;
        spans.push((a, b));
        tokens += (load.throughput_tps * (b - a).max(1e-9)).round();
        responses += (load.completed_rps * (b - a).max(1e-9)).round();
    }
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    Window {
        spans,
        output_tokens: crate::num::to_u64(tokens),
        tokens_verified: case.counts.unverified == 0,
        responses: crate::num::to_u64(responses),
    }
}

/// `summary` with `cases` (none when `None`) and without its series: what the rebuild of one
/// repeat takes as the run's word.
fn with_cases(summary: &Summary, cases: Option<Vec<CaseSummary>>) -> Summary {
    Summary {
        cases: cases.unwrap_or_default(),
        repeats: None,
        capacity: None,
        sweep: None,
        ..summary.clone()
    }
}

/// Whether repeat `k`, rebuilt as `cases`, is complete by the run's word `said`: as it said, or
/// not, with the run's reason; a repeat it said nothing of was running when the run ended.
fn said_of(
    said: &Series,
    k: u32,
    cases: &[CaseSummary],
    campaign: &Campaign,
) -> Result<(), String> {
    if said.complete.contains(&k) {
        return Ok(());
    }
    if let Some(i) = said.incomplete.iter().find(|i| i.covers(k)) {
        return Err(i.reason.clone());
    }
    Err(format!(
        "the run ended without closing this repeat (it was killed, or its machine stopped): {} \
         of {} cases have records",
        cases.len(),
        campaign.cases.len()
    ))
}

/// Without the run's word: a repeat is complete when its records prove every case of the
/// campaign closed.
fn proven(cases: &[CaseSummary], campaign: &Campaign) -> Result<(), String> {
    let closed = cases
        .iter()
        .filter(|c| c.incomplete_reason.is_none())
        .count();
    if closed == campaign.cases.len() {
        Ok(())
    } else {
        Err(format!(
            "the run left no word on this repeat, and its records prove {closed} of {} cases \
             closed",
            campaign.cases.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::attempt::load::from_records;
    use crate::fixture;
    use crate::record::Record;

    /// The fixture's campaign as a series of two, its records sent once per repeat.
    fn two_repeats() -> (crate::attempt::campaign::Campaign, Vec<Record>) {
        let mut campaign = fixture::campaign();
        campaign.config.repeat = Some(2);
        let records = (1..=2)
            .flat_map(|k| {
                fixture::records().into_iter().map(move |mut r| {
                    r.repeat = Some(k);
                    r
                })
            })
            .collect();
        (campaign, records)
    }

    #[test]
    fn without_the_runs_word_the_last_repeat_is_unproven_and_the_first_alone_combines() {
        let (campaign, records) = two_repeats();
        let summary = from_records(&campaign, records, None).summary;
        let series = summary.repeats.expect("a series");
        // Repeat 2's records prove repeat 1 whole; nothing proves the run closed repeat 2.
        assert_eq!(series.complete, [1]);
        assert_eq!(series.incomplete.len(), 1);
        assert_eq!(series.incomplete[0].repeat, 2);
        assert!(
            series.incomplete[0].reason.contains("prove 3 of 4 cases"),
            "{}",
            series.incomplete[0].reason
        );
        let alone = from_records(&fixture::campaign(), fixture::records(), None).summary;
        let counts = |cases: &[crate::summary::CaseSummary]| -> Vec<u32> {
            cases.iter().map(|c| c.counts.ok).collect()
        };
        assert_eq!(counts(&summary.cases), counts(&alone.cases));
        assert_eq!(counts(&series.runs[1].cases), counts(&alone.cases));
    }

    #[test]
    fn the_runs_word_decides_and_both_repeats_combine() {
        let (campaign, records) = two_repeats();
        let first = from_records(&campaign, records.clone(), None).summary;
        let mut said = first.repeats.clone().expect("a series");
        said.complete = vec![1, 2];
        said.incomplete.clear();
        let previous = crate::summary::Summary {
            repeats: Some(said),
            ..first
        };
        let summary = from_records(&campaign, records, Some(&previous)).summary;
        let series = summary.repeats.expect("a series");
        assert_eq!(series.complete, [1, 2]);
        let ok: Vec<u32> = summary.cases.iter().map(|c| c.counts.ok).collect();
        assert_eq!(ok, [4, 8, 4, 6], "each case twice");
        // The fixture's last case failed a response: incomplete in both, so in the series.
        assert!(!summary.cases[3].complete);
        assert!(summary.cases[..3].iter().all(|c| c.complete));
        assert_eq!(summary.cases[0].rounds_planned, 4);
        assert_eq!(series.between.len(), 4);
        assert_eq!(series.between[0].figures["ttft_p50_ms"].n, 2);
        assert!(series.between[3].figures.is_empty());
    }
}
