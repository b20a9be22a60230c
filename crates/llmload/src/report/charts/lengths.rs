//! The lengths a case sent, as `report.html` names them: read from the case's measured
//! records, so that a mix (`--input-tokens choice:64,128`) is named by the lengths it sent
//! ("64/128") or their range ("8–24"), never by one number (its mean) that no request had.

use crate::fmt::thousands;
use crate::record::Phase;
use crate::report::Report;
use crate::summary::CaseSummary;
use std::collections::{BTreeSet, HashMap};

/// Up to this many distinct lengths are named one by one; more, by their range.
const NAMED: usize = 3;

/// The prompt and output lengths each case's measured requests asked for.
#[derive(Debug, Default)]
pub struct Lengths {
    sent: HashMap<String, [BTreeSet<u32>; 2]>,
}

impl Lengths {
    /// Over the measured records of `report`.
    pub fn of(report: &Report) -> Lengths {
        let mut sent: HashMap<String, [BTreeSet<u32>; 2]> = HashMap::new();
        for r in report.records.iter().filter(|r| r.phase == Phase::Measured) {
            let lengths = sent.entry(r.case.clone()).or_default();
            lengths[0].insert(r.input_tokens);
            lengths[1].insert(r.requested_output_tokens);
        }
        Lengths { sent }
    }

    /// The prompt lengths of `cases` together: "64", "64/128", "16–2,048".
    pub fn input(&self, cases: &[&CaseSummary]) -> String {
        self.label(cases, 0, |c| c.input_tokens)
    }

    /// The output lengths of `cases` together, as [`Lengths::input`].
    pub fn output(&self, cases: &[&CaseSummary]) -> String {
        self.label(cases, 1, |c| c.output_tokens)
    }

    /// A case without records counts with its planned length.
    fn label(
        &self,
        cases: &[&CaseSummary],
        which: usize,
        planned: fn(&CaseSummary) -> u32,
    ) -> String {
        let mut values = BTreeSet::new();
        for case in cases {
            match self.sent.get(&case.id) {
                Some(sent) if !sent[which].is_empty() => values.extend(&sent[which]),
                _ => {
                    values.insert(planned(case));
                }
            }
        }
        name(&values)
    }
}

/// One length, a few of them, or their range.
fn name(values: &BTreeSet<u32>) -> String {
    match (values.first(), values.last()) {
        (Some(lo), Some(hi)) if values.len() > NAMED => {
            format!("{}–{}", thousands(*lo), thousands(*hi))
        }
        (Some(_), Some(_)) => {
            let named: Vec<String> = values.iter().map(|v| thousands(*v)).collect();
            named.join("/")
        }
        _ => "–".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn a_mix_is_named_by_the_lengths_it_sent_and_never_by_their_mean() {
        let report = fixture::mixed_lengths();
        let lengths = Lengths::of(&report);
        let case = &report.summary.cases[0];
        assert_eq!(lengths.input(&[case]), "64/128");
        assert!(!lengths.input(&[case]).contains("96"));
        let outputs = lengths.output(&[case]);
        assert!(outputs.contains('/') && !outputs.contains('4'), "{outputs}");
        let fixed = &report.summary.cases[2];
        assert_eq!(lengths.input(&[fixed]), "256");
        assert_eq!(lengths.input(&[case, fixed]), "64/128/256");
        assert_eq!(
            Lengths::default().input(&[case]),
            "96",
            "no records: as planned"
        );
        assert_eq!(name(&[1024, 2048, 32, 256].into()), "32–2,048");
    }
}
