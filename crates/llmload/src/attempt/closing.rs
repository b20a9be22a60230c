//! Whether a case that the run's summary does not hold may still be called complete when it is
//! rebuilt. The run closes a case by writing it into `summary.json`; a run that was killed (or
//! whose machine stopped) leaves the case it was running unclosed, and its records alone then
//! say only what ended before the end came. A case is complete only if its records prove that
//! the whole plan ran (every planned request, or every launch up to the next stage of the same
//! load, recorded) and the run got past it (a later case has records). Otherwise it is rebuilt as
//! incomplete, with the reason.

use crate::attempt::campaign::{CampaignCase, CaseBound, CaseLoad};
use std::collections::BTreeMap;

/// What the records of one case say of its launches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// Requests of the plan that left a record: measured ones for closed rounds, every launch of
    /// the load (warmup time included, single warmups not) for continuous and open loops.
    pub requests: u64,
    /// The lowest and highest serial (the record's index within the load) among those launches.
    pub serials: Option<(u32, u32)>,
}

impl Recorded {
    /// Adds a launch of serial `index`.
    pub(crate) fn add(&mut self, index: u32) {
        self.requests += 1;
        self.serials = Some(match self.serials {
            Some((lo, hi)) => (lo.min(index), hi.max(index)),
            None => (index, index),
        });
    }
}

/// How many requests the plan of `c` launches, where `campaign.json` says: rounds × concurrency,
/// a request bound, a trace's arrivals. None for a load bounded by its duration.
fn planned(c: &CampaignCase, rounds: u32) -> Option<u64> {
    match &c.load {
        None | Some(CaseLoad::Rounds { .. }) => {
            Some(u64::from(c.rounds(rounds)) * u64::from(c.concurrency))
        }
        Some(CaseLoad::Replay { arrivals, .. }) => Some(*arrivals),
        Some(CaseLoad::ClosedContinuous { bound } | CaseLoad::Open { bound, .. }) => {
            bound.requests()
        }
        // A bound on sessions: each sends its turns.
        // A graph's sessions: the calls they send.
        Some(CaseLoad::Sessions {
            calls: Some(calls), ..
        }) => Some(*calls),
        Some(CaseLoad::Sessions { bound, spec, .. }) => bound
            .requests()
            .map(|sessions| sessions * u64::from(spec.turns)),
    }
}

/// What came after a case that the run's summary does not hold.
#[derive(Clone, Copy, Debug)]
pub(crate) enum After<'a> {
    /// The next case (in run order) that left records, and what they hold: the run got past
    /// this one.
    Next(&'a CampaignCase, &'a Recorded),
    /// Nothing: the run ended in this case without closing it (it was killed).
    RunEnded,
    /// Nothing, and whether the run closed the case cannot be known (its `summary.json` is
    /// damaged): only its records can prove it.
    Unknown,
}

/// Why `c`, which the run's summary does not hold, is not complete; None when its records prove
/// it is. `rounds` is the campaign's rounds per case; `recorded` what its records hold; `after`
/// what came after it.
pub(crate) fn unproven(
    c: &CampaignCase,
    rounds: u32,
    recorded: &Recorded,
    after: After<'_>,
) -> Option<String> {
    let n = recorded.requests;
    let windowed = !matches!(c.load, None | Some(CaseLoad::Rounds { .. }));
    let first_of_load = c.stage.as_ref().is_none_or(|s| s.number <= 1);
    let lo = match recorded.serials {
        Some((lo, _)) if !first_of_load => u64::from(lo),
        _ => 0,
    };
    let span = recorded.serials.map_or(0, |(_, hi)| u64::from(hi) + 1 - lo);
    let duration = c
        .bound()
        .and_then(CaseBound::duration_s)
        .filter(|_| windowed)
        .map_or_else(String::new, |d| {
            format!(" (of those launched before the end; the load was to last {d} s)")
        });
    let (next_case, next_recorded) = match after {
        After::Next(case, recorded) => (case, recorded),
        After::RunEnded => {
            // The run ended in this case: whatever its records hold, it never closed it.
            let m = planned(c, rounds).unwrap_or(0).max(span).max(n);
            return Some(format!(
                "the run ended without closing this case: {n} of {m} requests recorded{duration}"
            ));
        }
        After::Unknown => {
            return match planned(c, rounds) {
                Some(m) if n >= m && span <= n => None,
                planned => Some(format!(
                    "its summary.json is damaged, and its records do not prove it whole: {n} of \
                     {} requests recorded{duration}",
                    planned.unwrap_or(0).max(span).max(n)
                )),
            };
        }
    };
    // The run got past this case; every request it launched must have left a record.
    let same_load = c.stage.is_some() && next_case.stage.is_some();
    let launched = match (windowed, same_load, next_recorded.serials) {
        (true, true, Some((next_lo, _))) => u64::from(next_lo).saturating_sub(lo),
        (true, _, _) => planned(c, rounds).unwrap_or(0).max(span),
        (false, _, _) => planned(c, rounds).unwrap_or(0),
    };
    (n < launched).then(|| {
        format!(
            "the run ended before every request of this case was recorded: {n} of {launched} \
             requests recorded"
        )
    })
}

/// Whether the attempt says how its run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Its `summary.json` is the run's last word, or there is none (the run was killed before
    /// it wrote one): a case it does not hold was never closed.
    Recorded,
    /// Its `summary.json` is damaged: whether the run closed its last case is not known.
    Unknown,
}

/// Why each of the cases that left records (`recorded`, in run order) and that the run did not
/// close (`closed` says which it did) is not complete, by id; absent when its records prove
/// it: the case the run ended in never is, an earlier one only if every request it launched
/// left a record. `rounds` is the campaign's rounds per case.
pub(crate) fn unclosed(
    recorded: &[(&CampaignCase, &Recorded)],
    closed: impl Fn(&CampaignCase) -> bool,
    rounds: u32,
    end: End,
) -> BTreeMap<String, String> {
    recorded
        .iter()
        .enumerate()
        .filter(|(_, (c, _))| !closed(c))
        .filter_map(|(i, &(c, r))| {
            let after = match (recorded.get(i + 1), end) {
                (Some(&(next, r)), _) => After::Next(next, r),
                (None, End::Recorded) => After::RunEnded,
                (None, End::Unknown) => After::Unknown,
            };
            unproven(c, rounds, r, after).map(|why| (c.id.clone(), why))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::schedule::Process;
    use crate::workload::stages::{LevelKind, StageLabel};

    fn recorded(serials: &[u32]) -> Recorded {
        let mut r = Recorded::default();
        for &i in serials {
            r.add(i);
        }
        r
    }

    fn open(duration_s: f64) -> CampaignCase {
        CampaignCase {
            id: "in32-r5-out4".into(),
            concurrency: 1,
            load: Some(CaseLoad::Open {
                process: Process::Poisson,
                rate_rps: 5.0,
                bound: CaseBound::Duration(duration_s),
                max_in_flight: None,
            }),
            ..CampaignCase::default()
        }
    }

    fn stage(number: u32) -> CampaignCase {
        CampaignCase {
            id: format!("stage{number}"),
            stage: Some(StageLabel {
                number,
                of: 3,
                kind: LevelKind::Rate,
                ramp: false,
                from: 5.0,
                to: 5.0,
                start_s: 2.0 * f64::from(number - 1),
                duration_s: 2.0,
            }),
            ..open(2.0)
        }
    }

    fn rounds() -> CampaignCase {
        CampaignCase {
            id: "in32-c2-out4".into(),
            concurrency: 2,
            load: Some(CaseLoad::Rounds { rounds: 3 }),
            ..CampaignCase::default()
        }
    }

    #[test]
    fn a_case_the_run_ended_in_is_never_proven_whatever_its_records_hold() {
        // Every planned request recorded, but the run never closed the case.
        let all = Recorded {
            requests: 6,
            serials: None,
        };
        assert_eq!(
            unproven(&rounds(), 1, &all, After::RunEnded).as_deref(),
            Some("the run ended without closing this case: 6 of 6 requests recorded")
        );
        let some = Recorded {
            requests: 4,
            serials: None,
        };
        let why = unproven(&rounds(), 1, &some, After::RunEnded).expect("unproven");
        assert!(why.ends_with("4 of 6 requests recorded"), "{why}");
        // A duration-bound open loop: the launches its serials show, and the planned length.
        let why =
            unproven(&open(10.0), 1, &recorded(&[0, 1, 3]), After::RunEnded).expect("unproven");
        assert_eq!(
            why,
            "the run ended without closing this case: 3 of 4 requests recorded (of those \
             launched before the end; the load was to last 10 s)"
        );
        // A request-bound one and a trace: their planned count.
        let mut bounded = open(1.0);
        if let Some(CaseLoad::Open { bound, .. }) = &mut bounded.load {
            *bound = CaseBound::Requests(20);
        }
        let why = unproven(&bounded, 1, &recorded(&[0, 1]), After::RunEnded).expect("unproven");
        assert!(why.ends_with("2 of 20 requests recorded"), "{why}");
        let trace = CampaignCase {
            load: Some(CaseLoad::Replay {
                trace: "trace.jsonl".into(),
                arrivals: 9,
                max_in_flight: None,
            }),
            ..open(1.0)
        };
        let why = unproven(&trace, 1, &recorded(&[0]), After::RunEnded).expect("unproven");
        assert!(why.ends_with("1 of 9 requests recorded"), "{why}");
    }

    #[test]
    fn with_a_damaged_summary_only_a_plan_of_known_size_recorded_whole_is_proven() {
        let all = Recorded {
            requests: 6,
            serials: None,
        };
        assert_eq!(unproven(&rounds(), 1, &all, After::Unknown), None);
        let some = Recorded {
            requests: 5,
            serials: None,
        };
        let why = unproven(&rounds(), 1, &some, After::Unknown).expect("unproven");
        assert_eq!(
            why,
            "its summary.json is damaged, and its records do not prove it whole: 5 of 6 \
             requests recorded"
        );
        // A load bounded by its duration: its records never say it reached its end.
        let why = unproven(&open(2.0), 1, &recorded(&[0, 1, 2]), After::Unknown).expect("why");
        assert!(why.contains("3 of 3 requests recorded"), "{why}");
    }

    #[test]
    fn a_case_the_run_got_past_is_complete_when_every_launch_left_a_record() {
        let later = rounds();
        let next = recorded(&[0]);
        let all = Recorded {
            requests: 6,
            serials: None,
        };
        assert_eq!(
            unproven(&rounds(), 1, &all, After::Next(&later, &next)),
            None
        );
        let short = Recorded {
            requests: 5,
            serials: None,
        };
        let why = unproven(&rounds(), 1, &short, After::Next(&later, &next)).expect("unproven");
        assert_eq!(
            why,
            "the run ended before every request of this case was recorded: 5 of 6 requests \
             recorded"
        );
        // A plain open loop drains before the next case: no serial missing.
        assert_eq!(
            unproven(
                &open(2.0),
                1,
                &recorded(&[0, 1, 2]),
                After::Next(&later, &next)
            ),
            None
        );
        let why = unproven(
            &open(2.0),
            1,
            &recorded(&[0, 2]),
            After::Next(&later, &next),
        )
        .expect("gap");
        assert!(why.ends_with("2 of 3 requests recorded"), "{why}");
    }

    #[test]
    fn a_stage_owns_every_serial_up_to_the_next_stages_first() {
        let (first, second, third) = (stage(1), stage(2), stage(3));
        // Stage 1 launched serials 0..=9, stage 2 begins at 10.
        let one = recorded(&(0..10).collect::<Vec<_>>());
        let two = recorded(&[10, 11, 13]);
        assert_eq!(unproven(&first, 1, &one, After::Next(&second, &two)), None);
        // Serial 9 still in flight when the run was killed: stage 1 is not proven.
        let cut = recorded(&(0..9).collect::<Vec<_>>());
        let why = unproven(&first, 1, &cut, After::Next(&second, &two)).expect("unproven");
        assert!(why.ends_with("9 of 10 requests recorded"), "{why}");
        // Stage 2, the one the run ended in, with serial 12 missing.
        let why = unproven(&second, 1, &two, After::RunEnded).expect("unproven");
        assert!(
            why.starts_with("the run ended without closing this case: 3 of 4 requests"),
            "{why}"
        );
        // Stage 2 followed by stage 3 from serial 14: 12 is missing.
        let three = recorded(&[14]);
        let why = unproven(&second, 1, &two, After::Next(&third, &three)).expect("unproven");
        assert!(why.ends_with("3 of 4 requests recorded"), "{why}");
    }
}
