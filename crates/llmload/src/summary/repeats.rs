//! A series of repeats (`llmload run --repeat N`): the same campaign run N times in one attempt,
//! each repeat recorded apart. Only complete repeats are combined: the summary's cases pool
//! their records, and the variation between them is given per case for the headline figures.
//! A repeat that was stopped or failed is listed with its reason and never pooled.

use super::case::CaseSummary;
use crate::stats::interval::Unit;
use crate::stats::Spread;
use crate::summary::window::{self, LoadSummary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `summary.json`'s `repeats`: the series as declared and what came of each repeat.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Repeats declared (`--repeat N`).
    pub planned: u32,
    /// The repeats that ran to the end, in order: the only ones combined.
    pub complete: Vec<u32>,
    /// The repeats that did not, each with why (stopped, failed, never run).
    pub incomplete: Vec<Incomplete>,
    /// Each repeat that began, with its own figures.
    pub runs: Vec<RepeatRun>,
    /// Per case, the variation of its headline figures between the complete repeats.
    pub between: Vec<Between>,
}

/// A repeat that did not run to the end, or the repeats that never began (one entry for all of
/// them, however many).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incomplete {
    /// The repeat (from 1); the first of them, with `through`.
    pub repeat: u32,
    /// The last of the repeats this entry stands for, when it stands for more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through: Option<u32>,
    /// Why it is not complete, in words.
    pub reason: String,
}

impl Incomplete {
    /// Whether this entry stands for repeat `k`.
    pub fn covers(&self, k: u32) -> bool {
        (self.repeat..=self.through.unwrap_or(self.repeat)).contains(&k)
    }

    /// The repeats it stands for, in words: `Repeat 3`, `Repeats 3 to 10000`.
    pub fn which(&self) -> String {
        match self.through {
            Some(last) if last > self.repeat => format!("Repeats {} to {last}", self.repeat),
            _ => format!("Repeat {}", self.repeat),
        }
    }
}

/// One repeat that began: its cases, summarised as a run without `--repeat` would be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepeatRun {
    /// The repeat (from 1).
    pub repeat: u32,
    /// It ran every case to the end, neither stopped nor failed (a case of it may still be
    /// incomplete, for a failed response: that case is then incomplete in the series).
    pub complete: bool,
    /// Its cases, in run order.
    pub cases: Vec<CaseSummary>,
}

/// One case's figures between the complete repeats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Between {
    /// Case id.
    pub id: String,
    /// By figure name (`ttft_p50_ms`, …; see [`FIGURES`]): its spread over the repeats.
    pub figures: BTreeMap<String, Variation>,
}

/// The spread of one figure over the complete repeats, one value per repeat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variation {
    /// Repeats with a value.
    pub n: usize,
    /// Mean of the repeats' values.
    pub mean: f64,
    /// Sample standard deviation (n − 1) of the values; absent with one value.
    pub sd: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Coefficient of variation, sd ÷ mean; absent with one value or a mean of 0.
    pub cv: Option<f64>,
}

impl Variation {
    /// Over `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Variation> {
        let spread = Spread::of(values)?;
        let sd = (spread.n > 1).then_some(spread.sd);
        Some(Variation {
            n: spread.n,
            mean: spread.mean,
            sd,
            min: spread.min,
            max: spread.max,
            cv: sd
                .filter(|_| spread.mean != 0.0)
                .map(|sd| sd / spread.mean.abs()),
        })
    }
}

/// A figure of a case, as the series compares it between repeats.
pub type Figure = fn(&CaseSummary) -> Option<f64>;

/// The figures compared between repeats: (name in `between`, what the views call it, the
/// figure). The first four are the views' headline figures.
pub const FIGURES: [(&str, &str, Figure); 8] = [
    ("ttft_p50_ms", "TTFT p50", |c| {
        c.ttft_ms.as_ref().map(|d| d.median)
    }),
    ("ttft_p99_ms", "TTFT p99", |c| {
        c.ttft_ms.as_ref().map(|d| d.p99)
    }),
    ("e2e_p50_ms", "Complete p50", |c| {
        c.e2e_ms.as_ref().map(|d| d.median)
    }),
    ("throughput_tps", "Throughput", |c| {
        c.throughput_tps.as_ref().map(|s| s.mean)
    }),
    ("e2e_p99_ms", "Complete p99", |c| {
        c.e2e_ms.as_ref().map(|d| d.p99)
    }),
    ("ttft_p90_ms", "TTFT p90", |c| {
        c.ttft_ms.as_ref().map(|d| d.p90)
    }),
    ("tpot_p50_ms", "TPOT p50", |c| {
        c.tpot_ms.as_ref().map(|d| d.median)
    }),
    ("itl_p50_ms", "ITL p50", |c| {
        c.itl_ms.as_ref().map(|d| d.median)
    }),
];

/// How many of [`FIGURES`] the views show.
pub const HEADLINE: usize = 4;

impl Series {
    /// The complete repeats' runs, in order.
    pub fn complete_runs(&self) -> impl Iterator<Item = &RepeatRun> {
        self.runs.iter().filter(|r| r.complete)
    }

    /// The values of `figure` for case `id`, one per complete repeat in which the case is
    /// complete and has the figure, in repeat order: the repeat-level values a test between
    /// two series takes.
    pub fn values(&self, id: &str, figure: impl Fn(&CaseSummary) -> Option<f64>) -> Vec<f64> {
        self.complete_runs()
            .filter_map(|run| run.cases.iter().find(|c| c.id == id))
            .filter(|c| c.complete)
            .filter_map(figure)
            .collect()
    }

    /// Sets `between` from the runs: every case of the complete repeats, in run order.
    pub fn compare_repeats(&mut self) {
        let mut ids: Vec<&str> = Vec::new();
        for case in self.complete_runs().flat_map(|r| &r.cases) {
            if !ids.contains(&case.id.as_str()) {
                ids.push(&case.id);
            }
        }
        let between = ids
            .iter()
            .map(|id| Between {
                id: (*id).to_owned(),
                figures: FIGURES
                    .iter()
                    .filter_map(|(name, _, figure)| {
                        Variation::of(&self.values(id, figure)).map(|v| ((*name).to_owned(), v))
                    })
                    .collect(),
            })
            .collect();
        self.between = between;
    }

    /// Closes repeat `k`, which ran as `cases`: complete, or not for `reason`.
    pub fn close(&mut self, k: u32, cases: Vec<CaseSummary>, reason: Option<String>) {
        self.runs.push(RepeatRun {
            repeat: k,
            complete: reason.is_none(),
            cases,
        });
        match reason {
            Some(reason) => self.incomplete.push(Incomplete {
                repeat: k,
                through: None,
                reason,
            }),
            None => self.complete.push(k),
        }
    }

    /// Lists the planned repeats after the last that began as incomplete, in one entry however
    /// many they are: the series ended before them.
    pub fn close_unrun(&mut self) {
        let last = self.runs.last().map(|r| r.repeat);
        let first = last.map_or(1, |k| k.saturating_add(1));
        if first > self.planned {
            return;
        }
        let reason = last.map_or_else(
            || "not run (the series ended before it)".to_owned(),
            |k| format!("not run (the series ended in repeat {k})"),
        );
        self.incomplete.push(Incomplete {
            repeat: first,
            through: (self.planned > first).then_some(self.planned),
            reason,
        });
    }

    /// The repeats neither complete nor incomplete: the one running while the summary is
    /// written.
    pub fn running(&self) -> Option<u32> {
        self.runs
            .iter()
            .map(|r| r.repeat)
            .find(|k| !self.complete.contains(k) && !self.incomplete.iter().any(|i| i.covers(*k)))
    }
}

/// The series' figures of each case, from `pooled` (the records of the complete repeats,
/// summarised together): a case is planned the rounds of every complete repeat, and complete
/// only when it is complete in each of them. A continuous or open loop's window figures are
/// its repeats' own combined ([`window::repeats::combine`]): the pooled records have no one
/// window.
pub fn combine(pooled: Vec<CaseSummary>, series: &Series) -> Vec<CaseSummary> {
    let runs: Vec<&RepeatRun> = series.complete_runs().collect();
    pooled
        .into_iter()
        .map(|mut case| {
            let of_each: Vec<Option<&CaseSummary>> = runs
                .iter()
                .map(|r| r.cases.iter().find(|c| c.id == case.id))
                .collect();
            case.rounds_planned = of_each
                .iter()
                .flatten()
                .map(|c| c.rounds_planned)
                .fold(0, u32::saturating_add);
            let short: Vec<String> = runs
                .iter()
                .zip(&of_each)
                .filter(|(_, c)| c.is_none_or(|c| !c.complete))
                .map(|(r, _)| r.repeat.to_string())
                .collect();
            if let Some(pooled) = case.load.take() {
                // A loop's rates are per repeat: each window apart, their mean over repeats.
                let each: Vec<&LoadSummary> = of_each
                    .iter()
                    .flatten()
                    .filter_map(|c| c.load.as_deref())
                    .collect();
                let load = window::repeats::combine(*pooled, &each);
                case.throughput_tps = if each.len() > 1 {
                    let values: Vec<f64> = each.iter().map(|l| l.throughput_tps).collect();
                    Spread::over(&values, Unit::Repeat)
                } else {
                    Spread::with(load.throughput_tps, load.throughput_ci.clone())
                };
                case.settle_pooling();
                case.load = Some(Box::new(load));
                // A soak series is each repeat's own, in its run.
                case.series = None;
            }
            case.complete = short.is_empty() && !runs.is_empty();
            case.incomplete_reason = (!short.is_empty()).then(|| {
                format!(
                    "incomplete in complete repeat {} of the series",
                    short.join(", ")
                )
            });
            case
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    /// A series of three repeats of the fixture's cases, the second stopped: the first case's
    /// median TTFT is `ttft` in each.
    fn series(ttft: [f64; 3]) -> Series {
        let cases = fixture::report().summary.cases;
        let runs = (1..=3)
            .zip(ttft)
            .map(|(k, t)| {
                let mut cases = cases.clone();
                if let Some(d) = cases[0].ttft_ms.as_mut() {
                    d.median = t;
                }
                RepeatRun {
                    repeat: k,
                    complete: k != 2,
                    cases,
                }
            })
            .collect();
        Series {
            planned: 3,
            complete: vec![1, 3],
            incomplete: vec![Incomplete {
                through: None,
                repeat: 2,
                reason: "stopped".into(),
            }],
            runs,
            between: Vec::new(),
        }
    }

    #[test]
    fn the_repeats_never_begun_are_one_entry_however_many() {
        let mut s = series([10.0, 99.0, 30.0]);
        s.planned = 10_000;
        s.close_unrun();
        assert_eq!(s.incomplete.len(), 2, "{:?}", s.incomplete);
        let unrun = &s.incomplete[1];
        assert_eq!((unrun.repeat, unrun.through), (4, Some(10_000)));
        assert!(unrun.covers(4) && unrun.covers(9_999) && !unrun.covers(3));
        assert_eq!(unrun.which(), "Repeats 4 to 10000");
        assert_eq!(s.running(), None);
        // One left: one repeat, named alone; none left: nothing added.
        let mut s = series([10.0, 99.0, 30.0]);
        s.planned = 4;
        s.close_unrun();
        assert_eq!(s.incomplete[1].which(), "Repeat 4");
        s.planned = 3;
        s.incomplete.truncate(1);
        s.close_unrun();
        assert_eq!(s.incomplete.len(), 1);
    }

    #[test]
    fn values_come_from_the_complete_repeats_only() {
        let s = series([10.0, 99.0, 30.0]);
        let id = &s.runs[0].cases[0].id;
        assert_eq!(s.values(id, FIGURES[0].2), vec![10.0, 30.0]);
        // The fixture's last case is incomplete: it has no repeat-level values.
        let last = &s.runs[0].cases[3];
        assert!(!last.complete);
        assert!(s.values(&last.id, FIGURES[0].2).is_empty());
        assert!(s.values("no-such-case", FIGURES[0].2).is_empty());
    }

    #[test]
    fn between_gives_the_spread_of_each_figure() {
        let mut s = series([10.0, 99.0, 30.0]);
        s.compare_repeats();
        assert_eq!(s.between.len(), 4);
        let first = &s.between[0].figures["ttft_p50_ms"];
        assert_eq!(
            (first.n, first.mean, first.min, first.max),
            (2, 20.0, 10.0, 30.0)
        );
        let sd = first.sd.expect("two values");
        assert!((sd - 200f64.sqrt()).abs() < 1e-12);
        assert!((first.cv.expect("a mean") - sd / 20.0).abs() < 1e-12);
        // Identical repeats vary by nothing.
        let second = &s.between[1].figures["ttft_p50_ms"];
        assert_eq!((second.sd, second.cv), (Some(0.0), Some(0.0)));
        assert!(
            s.between[3].figures.is_empty(),
            "an incomplete case has none"
        );
    }

    #[test]
    fn one_value_has_no_sd() {
        let v = Variation::of(&[5.0]).expect("a value");
        assert_eq!((v.n, v.sd, v.cv), (1, None, None));
        assert!(Variation::of(&[]).is_none());
    }

    #[test]
    fn a_combined_case_is_planned_every_complete_repeat_and_complete_only_in_all() {
        let mut s = series([10.0, 20.0, 30.0]);
        // The second case failed a response in repeat 3.
        s.runs[2].cases[1].complete = false;
        let pooled = fixture::report().summary.cases;
        let planned = pooled[0].rounds_planned;
        let combined = combine(pooled, &s);
        assert_eq!(combined[0].rounds_planned, 2 * planned);
        assert!(combined[0].complete);
        assert!(!combined[1].complete);
        assert_eq!(
            combined[1].incomplete_reason.as_deref(),
            Some("incomplete in complete repeat 3 of the series")
        );
        assert_eq!(s.running(), None);
    }
}
