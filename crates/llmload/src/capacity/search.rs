//! Where the search probes next: grow the load geometrically (doubling) until one fails, then
//! bisect in log space between the largest load that meets every objective and the smallest
//! that fails, until the two are within the resolution. Pure: it reads the verdicts so far.

use crate::summary::capacity::SloVerdict;

/// The search's bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Search {
    /// Whole loads (concurrency, users) or rates.
    pub integer: bool,
    /// Whole loads: the widest bracket that is an answer (1: neighbours). Rates: the largest
    /// ratio above 1 between its ends (0.05: 5 %).
    pub resolution: f64,
    /// The largest load the search may try.
    pub max_load: f64,
    /// The first load.
    pub start: f64,
}

/// What the search does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Measure this load.
    Probe(f64),
    /// Stop: whether the answer is decided, and why it stopped.
    Done {
        /// The bracket is as narrow as the resolution (or bounded by the smallest or largest
        /// load allowed).
        decided: bool,
        /// Why, in words.
        why: String,
    },
}

/// The bracket of `probes`: the largest load that meets below the smallest that fails.
pub fn bracket(probes: &[(f64, SloVerdict)]) -> (Option<f64>, Option<f64>) {
    let failing = probes
        .iter()
        .filter(|(_, v)| *v == SloVerdict::Fails)
        .map(|(l, _)| *l)
        .min_by(f64::total_cmp);
    let passing = probes
        .iter()
        .filter(|(l, v)| *v == SloVerdict::Meets && failing.is_none_or(|f| *l < f))
        .map(|(l, _)| *l)
        .max_by(f64::total_cmp);
    (passing, failing)
}

impl Search {
    /// The smallest load the search goes down to (whole loads: 1; rates: 1/64 of the start).
    fn floor(&self) -> f64 {
        if self.integer {
            1.0
        } else {
            self.start / 64.0
        }
    }

    fn round(&self, load: f64) -> f64 {
        if self.integer {
            load.round().max(1.0)
        } else {
            load
        }
    }

    /// The next step after `probes` (each load measured, with its verdict).
    pub fn next(&self, probes: &[(f64, SloVerdict)]) -> Step {
        let measured = |load: f64| probes.iter().any(|(l, _)| (l - load).abs() < 1e-9);
        if probes.is_empty() {
            return Step::Probe(self.round(self.start.min(self.max_load)));
        }
        match bracket(probes) {
            (_, None) => self.grow(probes),
            (None, Some(failing)) => self.lower(failing, &measured),
            (Some(passing), Some(failing)) => self.narrow(passing, failing, probes),
        }
    }

    /// Every load measured below the smallest that fails is undecided: halve it until a load
    /// not measured yet, down to the floor.
    fn lower(&self, failing: f64, probed: &dyn Fn(f64) -> bool) -> Step {
        let mut lower = self.round(failing / 2.0);
        while probed(lower) && lower > self.floor() && lower < failing {
            lower = self.round(lower / 2.0);
        }
        if failing <= self.floor() || lower < self.floor() || lower >= failing || probed(lower) {
            return Step::Done {
                decided: failing <= self.floor(),
                why: format!(
                    "the smallest load that fails is {}, and none below it was decided to meet",
                    crate::fmt::number(failing)
                ),
            };
        }
        Step::Probe(lower)
    }

    /// No load fails yet: double the largest, up to `max_load`.
    fn grow(&self, probes: &[(f64, SloVerdict)]) -> Step {
        let largest = probes.iter().map(|(l, _)| *l).fold(0.0, f64::max);
        if largest >= self.max_load {
            let decided = probes
                .iter()
                .any(|(l, v)| *v == SloVerdict::Meets && (l - largest).abs() < 1e-9);
            return Step::Done {
                decided,
                why: format!(
                    "no load up to --max-load {} fails",
                    crate::fmt::number(self.max_load)
                ),
            };
        }
        Step::Probe(self.round(largest * 2.0).min(self.max_load))
    }

    /// Between a load that meets and one that fails: the geometric middle, or the nearest
    /// unmeasured whole load to it; done when the two are within the resolution, or when two
    /// loads between them were left undecided (the loads near the boundary cannot be
    /// told from it at this confidence, and each more would cost a whole cap).
    fn narrow(&self, passing: f64, failing: f64, probes: &[(f64, SloVerdict)]) -> Step {
        let measured = |load: f64| probes.iter().any(|(l, _)| (l - load).abs() < 1e-9);
        let narrow = if self.integer {
            failing - passing <= self.resolution + 1e-9
        } else {
            failing / passing <= 1.0 + self.resolution + 1e-9
        };
        if narrow {
            return Step::Done {
                decided: true,
                why: "the bracket is within the resolution".to_owned(),
            };
        }
        let mut inside: Vec<f64> = probes
            .iter()
            .filter(|(l, v)| *v == SloVerdict::Undecided && passing < *l && *l < failing)
            .map(|(l, _)| *l)
            .collect();
        inside.sort_by(f64::total_cmp);
        let undecided: Vec<String> = inside.iter().map(|l| crate::fmt::number(*l)).collect();
        if undecided.len() >= 2 {
            return Step::Done {
                decided: false,
                why: format!(
                    "{} were left undecided (at the probe's cap, or out of its reach): the \
                     loads between {} and {} cannot be told from the boundary at this confidence",
                    undecided.join(" and "),
                    crate::fmt::number(passing),
                    crate::fmt::number(failing)
                ),
            };
        }
        let middle = (passing * failing).sqrt();
        let candidate = if self.integer {
            let inside =
                (crate::num::to_u64(passing) + 1..crate::num::to_u64(failing)).map(|l| l as f64);
            inside
                .filter(|&l| !measured(l))
                .min_by(|a, b| (a - middle).abs().total_cmp(&(b - middle).abs()))
        } else {
            // The middle, or where it was measured undecided, the middle of either half.
            [middle, (passing * middle).sqrt(), (middle * failing).sqrt()]
                .into_iter()
                .map(|l| tidy(l, passing, failing))
                .find(|&l| !measured(l))
        };
        match candidate {
            Some(load) => Step::Probe(load),
            None => Step::Done {
                decided: false,
                why: format!(
                    "every load between {} and {} was measured to the probe's cap without a \
                     decision",
                    crate::fmt::number(passing),
                    crate::fmt::number(failing)
                ),
            },
        }
    }
}

/// A rate between `passing` and `failing` to four significant digits (as case ids and reports
/// show it), where that stays strictly between them; else `load` as it is.
fn tidy(load: f64, passing: f64, failing: f64) -> f64 {
    let rounded = format!("{load:.3e}").parse::<f64>().unwrap_or(load);
    if passing < rounded && rounded < failing {
        rounded
    } else {
        load
    }
}

#[cfg(test)]
mod tests;
