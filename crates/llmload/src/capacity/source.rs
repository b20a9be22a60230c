//! The search as a case source of the one pipeline: each block of a probe is a case, planned
//! from the run's own template at the probe's load; when a block's case has run, its records
//! are read back from `requests.jsonl` and tallied against every objective, and the probe's
//! sequential test reads them at its looks.

use super::blocks::{block_of, segments_of, BlockRun};
use super::remeasure::{Remeasure, Remeasured};
use super::search::Search;
use super::sequential::{self, Block, Blocks, Looks, LOOKS};
use super::slo::Rule;
use super::CapacityOptions;
use crate::cases::CaseSource;
use crate::config::{Config, ConfigError};
use crate::record::Record;
use crate::summary::capacity::{LoadUnit, RuleVerdict, SloVerdict};
use crate::summary::CaseSummary;
use crate::workload::length::Length;
use crate::workload::schedule::Bound;
use crate::workload::shape::{CasePlan, LoadPoint, ShapeTemplate};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The fewest requests in a block, whatever the objectives.
const MIN_BLOCK_REQUESTS: u64 = 20;

/// The shortest segment of an open loop, and the shortest warmup before its first.
const MIN_SEGMENT: Duration = Duration::from_millis(500);
const MIN_WARMUP: Duration = Duration::from_secs(1);

/// One load the search measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    /// The load.
    pub load: f64,
    /// Its blocks, reused ones first.
    pub blocks: Vec<BlockRun>,
    /// The case id of each block run here.
    pub case_ids: Vec<String>,
    /// Blocks taken from `--resume`.
    pub reused: usize,
    /// The next look to read.
    next_look: usize,
    /// Every rule's verdict at the last look read.
    pub verdicts: Vec<RuleVerdict>,
    /// The probe's verdict at the last look read.
    pub verdict: SloVerdict,
    /// Decided, or at its cap, or stopped undecided before it (out of reach).
    pub done: bool,
    /// Stopped undecided before its cap: its segments straddle the bound too widely for the cap
    /// to decide them ([`sequential::out_of_reach`]).
    pub out_of_reach: bool,
    /// Measured again beside the other end of the bracket ([`super::remeasure`]).
    pub remeasured: Option<Remeasured>,
}

/// How long a block of closed users starts sessions: four sessions' think time and 5 s more,
/// 10 s at least.
pub fn users_block(turns: u32, think: Duration) -> Duration {
    (think * 4 * turns.saturating_sub(1) + Duration::from_secs(5)).max(Duration::from_secs(10))
}

/// `llmload capacity`'s cases.
pub struct CapacitySource {
    template: ShapeTemplate,
    input: Length,
    output: Length,
    dataset: Option<String>,
    /// What the load is counted in.
    pub unit: LoadUnit,
    /// Requests per user session (1 without sessions).
    pub turns: u32,
    /// The mean think time between a user's turns.
    think: Duration,
    /// The objectives.
    pub rules: Vec<(Rule, String)>,
    /// The probes' looks.
    pub looks: Looks,
    search: Search,
    budget: Option<Duration>,
    started: Option<Instant>,
    records: PathBuf,
    /// Every load measured, in the order measured.
    pub probes: Vec<Probe>,
    current: Option<usize>,
    issued: Vec<CasePlan>,
    /// The case running: its id, its probe, and whether it re-measures.
    pending: Option<(String, usize, bool)>,
    /// The bracket's loads measured again, once the search has decided.
    remeasure: Option<Remeasure>,
    resumed: HashMap<String, Vec<Record>>,
    /// Why the search stopped, and whether its answer is decided.
    pub stop: Option<(bool, String)>,
}

impl CapacitySource {
    /// The search over `config`'s workload, writing its records to `records`
    /// (`requests.jsonl` of the attempt folder the run creates).
    pub fn new(
        config: &Config,
        options: &CapacityOptions,
        confidence: f64,
        records: PathBuf,
    ) -> Result<CapacitySource, ConfigError> {
        let (input, output) = match (&config.input_tokens[..], &config.output_tokens[..]) {
            ([input], [output]) => (input.clone(), output.clone()),
            _ => return Err(ConfigError(
                "capacity takes one --input-tokens and one --output-tokens (a distribution is fine)"
                    .into(),
            )),
        };
        if config.load.stages.is_some() || config.load.trace.is_some() || config.repeat.is_some() {
            return Err(ConfigError(
                "capacity sets the load itself: --stages, --trace and --repeat do not apply".into(),
            ));
        }
        if options.rules.is_empty() {
            return Err(ConfigError(
                "capacity needs one --slo or more (e.g. --slo ttft_p99<2s)".into(),
            ));
        }
        let mut template = config.template();
        let (unit, turns) = match (template.session, config.is_open()) {
            (_, true) => (LoadUnit::RateRps, template.session.map_or(1, |s| s.turns)),
            (Some(spec), false) => (LoadUnit::Users, spec.turns),
            (None, false) => (LoadUnit::Concurrency, 1),
        };
        // Users arrive one by one (`--stagger`): started all at once, with a fixed think time
        // they would keep in step, and their turns would come in waves no real users make.
        if let (LoadUnit::Users, Some(spec)) = (unit, template.session.as_mut()) {
            spec.stagger = true;
        }
        let integer = unit != LoadUnit::RateRps;
        let resolution = options
            .resolution
            .unwrap_or(if integer { 1.0 } else { 0.05 });
        let start = options.start.unwrap_or(if integer {
            1.0
        } else {
            config.load.rate_rps.first().copied().unwrap_or(1.0)
        });
        let think = template.session.map_or(Duration::ZERO, |s| s.think.mean());
        Ok(CapacitySource {
            dataset: config
                .dataset
                .as_ref()
                .map(crate::config::DatasetConfig::id_name),
            template,
            input,
            output,
            unit,
            turns,
            think,
            rules: options.rules.clone(),
            looks: Looks::at(confidence),
            search: Search {
                integer,
                resolution,
                max_load: options
                    .max_load
                    .unwrap_or(if integer { 1024.0 } else { 1e4 }),
                start,
            },
            budget: options.budget,
            started: None,
            records,
            probes: Vec::new(),
            current: None,
            issued: Vec::new(),
            pending: None,
            remeasure: None,
            resumed: match &options.resume {
                Some(dir) => read_by_case(&dir.join("requests.jsonl"))
                    .map_err(|e| ConfigError(format!("--resume {}: {e}", dir.display())))?,
                None => HashMap::new(),
            },
            stop: None,
        })
    }

    /// How the blocks of a probe relate: an open loop's (one request per arrival) are
    /// consecutive segments of one arrival process, a case per look; others a case each.
    pub fn kind(&self) -> Blocks {
        if self.unit == LoadUnit::RateRps && self.turns == 1 {
            Blocks::Consecutive {
                per_process: self.looks.first,
            }
        } else {
            Blocks::Independent
        }
    }

    /// The blocks one case holds: a look's for consecutive segments, else one.
    fn per_case(&self) -> usize {
        match self.kind() {
            Blocks::Consecutive { per_process } => per_process,
            Blocks::Independent => 1,
        }
    }

    /// The case plan of the case whose first block is `block` (from 1) at `load`; its id ends
    /// `-b{block}` (`-r{block}` where it re-measures).
    fn plan(&self, load: f64, block: usize, remeasure: bool) -> CasePlan {
        let tag = if remeasure { 'r' } else { 'b' };
        let point = if self.unit == LoadUnit::RateRps {
            LoadPoint::Rate(load)
        } else {
            LoadPoint::Concurrency(crate::num::to_u32(load))
        };
        let mut template = self.template.clone();
        let ramp = self.ramp(load);
        let per_case = self.per_case();
        let block_bound = template.bound.unwrap_or_else(|| self.block_bound(load));
        let mut warmup_time = Duration::ZERO;
        template.bound = Some(match block_bound {
            // The ramp's launches come on top of the block's measured ones.
            Bound::Requests(n) if per_case == 1 => Bound::Requests(n + ramp),
            bound @ Bound::Duration(_) if per_case == 1 => bound,
            // A look's segments after a warmup that fills the queue: one segment's time, a
            // second at least, its arrivals on top of the segments'.
            Bound::Requests(n) => {
                warmup_time = Duration::from_secs_f64(n as f64 / load).max(MIN_WARMUP);
                let warmup = (warmup_time.as_secs_f64() * load).ceil();
                Bound::Requests(n * per_case as u64 + crate::num::to_u64(warmup))
            }
            Bound::Duration(d) => {
                warmup_time = d.max(MIN_WARMUP);
                Bound::Duration(warmup_time + d * u32::try_from(per_case).unwrap_or(1))
            }
        });
        let mut plan = template
            .plan(&self.input, point, &self.output)
            .with_dataset(self.dataset.as_deref());
        plan.warmup_launches = ramp;
        if per_case > 1 {
            plan.warmup_time = warmup_time;
            plan.case.id = format!("{}-{tag}{block}-{}", plan.case.id, block + per_case - 1);
        } else {
            plan.case.id = format!("{}-{tag}{block}", plan.case.id);
        }
        plan
    }

    /// The blocks of one case's `records` at `load`: the case's block, or its consecutive
    /// segments ([`segments_of`]).
    fn blocks_of(&self, records: &[Record], load: f64) -> Vec<BlockRun> {
        match self.per_case() {
            1 => vec![block_of(records, &self.rules, self.users(load))],
            parts => segments_of(records, &self.rules, parts),
        }
    }

    /// A closed loop's block starts from an idle server: its first launches (one per place)
    /// meet no queue yet, and a block of them would measure the ramp, not the load (at 10
    /// streams on 8 slots, 80 % of a 25-request block's TTFTs were fast against 75 % of the
    /// steady state's). They are its warmup; a rate's and users' blocks have none.
    fn ramp(&self, load: f64) -> u64 {
        if self.unit == LoadUnit::Concurrency {
            crate::num::to_u64(load)
        } else {
            0
        }
    }

    /// A block's size where `--requests`/`--duration` do not set it: enough values for every
    /// objective ([`Rule::block_values`]), two per place of a closed loop, 20 at least. Closed
    /// users instead run for a while ([`users_block`]), so that each goes through several
    /// sessions and the users keep cycling as a steady population does.
    fn block_bound(&self, load: f64) -> Bound {
        let values = self
            .rules
            .iter()
            .map(|(rule, _)| rule.block_values())
            .max()
            .unwrap_or(0)
            .max(MIN_BLOCK_REQUESTS);
        let places = crate::num::to_u64(load);
        match self.unit {
            LoadUnit::Concurrency => Bound::Requests(values.max(2 * places)),
            LoadUnit::Users => Bound::Duration(users_block(self.turns, self.think)),
            LoadUnit::RateRps if matches!(self.kind(), Blocks::Consecutive { .. }) => {
                let floor = (MIN_SEGMENT.as_secs_f64() * load).ceil();
                Bound::Requests(values.max(crate::num::to_u64(floor)))
            }
            LoadUnit::RateRps => Bound::Requests(values.div_ceil(u64::from(self.turns))),
        }
    }

    /// The closed users of a load (0 unless the load is users).
    fn users(&self, load: f64) -> u64 {
        if self.unit == LoadUnit::Users {
            crate::num::to_u64(load)
        } else {
            0
        }
    }

    /// Each probe's load and verdict, for the search.
    pub fn verdicts(&self) -> Vec<(f64, SloVerdict)> {
        self.probes
            .iter()
            .filter(|p| p.done)
            .map(|p| (p.load, p.verdict))
            .collect()
    }

    /// Reads the looks `probe` has reached.
    fn evaluate(&mut self, index: usize) {
        let (looks, kind) = (self.looks, self.kind());
        let probe = &mut self.probes[index];
        while !probe.done && probe.blocks.len() >= looks.first * (probe.next_look + 1) {
            let alpha = looks.alpha_at(probe.next_look);
            // The look's own blocks: reused ones beyond it are read at the later looks, as
            // they were when first measured.
            let seen = looks.first * (probe.next_look + 1);
            let blocks: Vec<Block> = probe.blocks[..seen]
                .iter()
                .map(|b| b.tallies.clone())
                .collect();
            probe.verdicts = sequential::judge_all(&self.rules, &blocks, alpha, kind);
            probe.verdict = sequential::overall(&probe.verdicts);
            probe.next_look += 1;
            probe.out_of_reach = matches!(kind, Blocks::Consecutive { .. })
                && probe.verdict == SloVerdict::Undecided
                && probe.next_look < LOOKS
                && self.rules.iter().enumerate().all(|(i, (rule, _))| {
                    let verdict = &probe.verdicts[i];
                    verdict.verdict != SloVerdict::Undecided
                        || matches!(rule, Rule::Latency { .. })
                            && sequential::out_of_reach(
                                &blocks.iter().map(|b| b[i]).collect::<Vec<_>>(),
                                verdict.threshold,
                                looks.cap(),
                                looks.alpha_at(LOOKS - 1),
                            )
                });
            probe.done = probe.verdict != SloVerdict::Undecided
                || probe.next_look == LOOKS
                || probe.out_of_reach;
        }
    }

    /// A new probe at `load`, with the blocks `--resume` holds for it.
    fn start_probe(&mut self, load: f64) -> usize {
        let mut probe = Probe {
            load,
            blocks: Vec::new(),
            case_ids: Vec::new(),
            reused: 0,
            next_look: 0,
            verdicts: Vec::new(),
            verdict: SloVerdict::Undecided,
            done: false,
            out_of_reach: false,
            remeasured: None,
        };
        while probe.blocks.len() < self.looks.cap() {
            let id = self.plan(load, probe.blocks.len() + 1, false).case.id;
            match self.resumed.get(&id) {
                Some(records) => probe.blocks.extend(self.blocks_of(records, load)),
                None => break,
            }
        }
        probe.reused = probe.blocks.len();
        self.probes.push(probe);
        let index = self.probes.len() - 1;
        self.evaluate(index);
        index
    }

    /// Folds the block that just ran into its probe (or its re-measurement).
    fn take_block(&mut self, id: &str, index: usize, again: bool) -> Result<(), String> {
        let mut records = Vec::new();
        crate::attempt::records::for_each_record(&self.records, |r| {
            if r.case == id {
                records.push(r);
            }
        })
        .map_err(|e| e.to_string())?;
        let load = self.probes[index].load;
        let blocks = self.blocks_of(&records, load);
        let probe = &mut self.probes[index];
        if again {
            let remeasured = probe.remeasured.get_or_insert_with(Remeasured::default);
            remeasured.blocks.extend(blocks);
            remeasured.case_ids.push(id.to_owned());
        } else {
            probe.blocks.extend(blocks);
            probe.case_ids.push(id.to_owned());
            self.evaluate(index);
        }
        Ok(())
    }
}

/// The records of a `requests.jsonl`, by case.
fn read_by_case(path: &std::path::Path) -> crate::error::Result<HashMap<String, Vec<Record>>> {
    let mut by_case: HashMap<String, Vec<Record>> = HashMap::new();
    crate::attempt::records::for_each_record(path, |r| {
        by_case.entry(r.case.clone()).or_default().push(r);
    })?;
    Ok(by_case)
}

impl CaseSource for CapacitySource {
    fn next(&mut self, done: &[CaseSummary]) -> Option<CasePlan> {
        let started = *self.started.get_or_insert_with(Instant::now);
        if let Some((id, index, again)) = self.pending.take() {
            if !done.iter().any(|c| c.id == id) {
                self.stop = Some((false, format!("block {id} did not run to its end")));
            } else if let Err(e) = self.take_block(&id, index, again) {
                self.stop = Some((false, format!("reading the records of {id}: {e}")));
            }
        }
        if self.stop.is_some() {
            return None;
        }
        if let Some(budget) = self.budget.filter(|b| started.elapsed() >= *b) {
            self.stop = Some((
                false,
                format!(
                    "the budget of {} is spent{}",
                    humantime::format_duration(budget),
                    if self.remeasure.is_some() {
                        " before the bracket's two loads were re-measured side by side"
                    } else {
                        ""
                    }
                ),
            ));
            return None;
        }
        let (plan, index, again) = match self.next_case() {
            Ok(next) => next,
            Err(stop) => {
                self.stop = Some(stop);
                return None;
            }
        };
        self.pending = Some((plan.case.id.clone(), index, again));
        self.issued.push(plan.clone());
        Some(plan)
    }

    fn planned(&self) -> usize {
        self.issued.len() + usize::from(self.stop.is_none())
    }

    fn plans(&self) -> Vec<CasePlan> {
        self.issued.clone()
    }
}

mod next;
#[cfg(test)]
mod tests;
