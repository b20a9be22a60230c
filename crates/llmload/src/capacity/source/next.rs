//! What the search runs next: a block of the probe under way, a new probe where the search
//! goes on, or once it has decided, the bracket's two loads measured again side by side.

use super::super::remeasure::{self, Remeasure, Remeasured};
use super::super::search::{bracket, Step};
use super::CapacitySource;
use crate::summary::capacity::SloVerdict;
use crate::workload::shape::CasePlan;

impl CapacitySource {
    /// The next case to run (its plan, its probe, whether it re-measures), or why the search
    /// stops. Once the search ends decided with both ends of its bracket, they are re-measured
    /// side by side before the answer stands ([`remeasure`]).
    pub(super) fn next_case(&mut self) -> Result<(CasePlan, usize, bool), (bool, String)> {
        if self.remeasure.is_none() {
            match self.probe_to_run() {
                Ok(index) => {
                    let probe = &self.probes[index];
                    return Ok((
                        self.plan(probe.load, probe.blocks.len() + 1, false),
                        index,
                        false,
                    ));
                }
                Err((true, why)) => {
                    let index = |load: Option<f64>| {
                        let load = load?;
                        self.probes
                            .iter()
                            .position(|p| p.done && (p.load - load).abs() < 1e-9)
                    };
                    let (passing, failing) = bracket(&self.verdicts());
                    match (index(passing), index(failing)) {
                        (Some(passing), Some(failing)) => {
                            self.remeasure = Some(Remeasure {
                                passing,
                                failing,
                                why,
                                issued: 0,
                            });
                        }
                        _ => return Err((true, why)),
                    }
                }
                Err(stop) => return Err(stop),
            }
        }
        let (kind, looks) = (self.kind(), self.looks);
        let Some(remeasure) = self.remeasure.clone() else {
            return Err((false, "the search lost its bracket".to_owned()));
        };
        let mut issued = remeasure.issued;
        while let Some((index, block)) = remeasure.case(issued, kind, looks.first) {
            issued += 1;
            if let Some(r) = self.remeasure.as_mut() {
                r.issued = issued;
            }
            let load = self.probes[index].load;
            let plan = self.plan(load, block, true);
            // From `--resume`: read, not run again.
            let Some(records) = self.resumed.get(&plan.case.id) else {
                return Ok((plan, index, true));
            };
            let blocks = self.blocks_of(records, load);
            let remeasured = self.probes[index]
                .remeasured
                .get_or_insert_with(Remeasured::default);
            remeasured.reused += blocks.len();
            remeasured.blocks.extend(blocks);
        }
        let (passing, failing, why) = (remeasure.passing, remeasure.failing, remeasure.why);
        let mut ends = [(0.0, SloVerdict::Undecided); 2];
        for (end, index) in ends.iter_mut().zip([passing, failing]) {
            let probe = &mut self.probes[index];
            let remeasured = probe.remeasured.get_or_insert_with(Remeasured::default);
            remeasured.judge(&self.rules, looks, kind);
            *end = (
                probe.load,
                remeasured.verdict.unwrap_or(SloVerdict::Undecided),
            );
        }
        Err(remeasure::outcome(&why, ends[0], ends[1], self.unit))
    }

    /// The probe to run a block of next, or why the search stops.
    fn probe_to_run(&mut self) -> Result<usize, (bool, String)> {
        for _ in 0..256 {
            if let Some(index) = self.current.filter(|&i| !self.probes[i].done) {
                return Ok(index);
            }
            match self.search.next(&self.verdicts()) {
                Step::Probe(load) => self.current = Some(self.start_probe(load)),
                Step::Done { decided, why } => return Err((decided, why)),
            }
        }
        Err((false, "the search made no progress".to_owned()))
    }
}
