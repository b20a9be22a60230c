//! Human views of a summary. The report is one page built once ([`sections`]): an ordered list
//! of format-neutral sections ([`page`]), each from the file of what it shows. The writers only
//! write blocks, each in its syntax and with its escaping: [`markdown`] (`report.md`), [`html`]
//! (`report.html`, which also draws the charts) and [`terminal`]. The data format stands apart:
//! [`csv`] (`cases.csv`); what `llmload compare` prints is `compare::output`'s.
//!
//! Under the sections: the table model ([`table`]), a chart's canvas ([`plot`]) and the escaping
//! of each format ([`markup`]).
//! Sentences several sections write alike: [`text`], [`partial`] (a case's counts and an
//! incomplete case's partial figures) and [`dataset`] (the dataset named).

pub mod ab;
pub mod abandoned;
pub mod canaries;
pub mod capacity;
pub mod charts;
pub mod cost;
pub mod csv;
pub mod dataset;
pub mod energy;
pub mod gallery;
pub mod gpu;
mod graph;
pub mod html;
pub mod incomplete;
pub mod markdown;
pub mod marks;
pub mod markup;
pub mod models;
pub mod notes;
pub mod page;
pub mod partial;
pub mod phases;
pub mod plot;
pub mod pooling;
pub mod prefix_cache;
pub mod profile;
pub mod reasoning;
pub mod repeats;
pub mod replicas;
pub mod results;
pub mod results_section;
pub mod saturation;
pub mod server_side;
pub mod sessions;
pub mod shards;
pub mod soak;
pub mod speculative;
pub mod table;
pub mod target;
pub mod terminal;
pub mod text;
pub mod timeline;

use crate::record::{Phase, Record};
use crate::summary::Summary;
use crate::telemetry::Reading;
use page::Section;
use serde::Deserialize;

/// Everything the views are drawn from: the summary, the records, and when the attempt started.
#[derive(Clone, Debug)]
pub struct Report {
    /// Per-case figures and the outcome.
    pub summary: Summary,
    /// Every record of the attempt, warmups and failures included, in file order.
    pub records: Vec<Record>,
    /// Wall-clock start of the attempt, RFC 3339.
    pub started_at: Option<String>,
    /// GPU readings of `telemetry.jsonl`, in file order (empty without telemetry).
    pub telemetry: Vec<Reading>,
    /// The guard's temperature thresholds.
    pub limits: CampaignLimits,
    /// The latest final event (or send) of any record, seconds since the attempt started.
    pub last_activity_s: Option<f64>,
}

/// The report's timeline shows at most this many measured requests of its case: the first ones,
/// in file order.
pub const TIMELINE_MAX: usize = 2_000;

/// The report names the distinct errors among at most this many failed requests of a case: the
/// first ones, in file order.
pub const FAILED_SHOWN: usize = 100;

/// The page every format writes: its sections in order, each from the file of what it shows,
/// those with nothing to show left out. A new section is a file and a line here.
const SECTIONS: [fn(&Report) -> Option<Section<'_>>; 25] = [
    target::section,
    target::outcome,
    ab::section,
    results_section::section,
    incomplete::section,
    notes::section,
    models::section,
    replicas::section,
    repeats::page_section,
    saturation::section,
    capacity::section,
    soak::section,
    energy::section,
    cost::section,
    canaries::section,
    graph::section,
    prefix_cache::section,
    reasoning::section,
    abandoned::section,
    phases::section,
    server_side::section,
    profile::section,
    speculative::section,
    shards::section,
    gallery::section,
];

/// The report's page: its sections in order.
pub fn sections(report: &Report) -> Vec<Section<'_>> {
    SECTIONS
        .iter()
        .filter_map(|section| section(report))
        .collect()
}

impl Report {
    /// The report of a summary alone, without records or readings (what `report.md` and the
    /// terminal are written from during a run).
    pub fn of(summary: &Summary) -> Report {
        Report {
            summary: summary.clone(),
            records: Vec::new(),
            started_at: None,
            telemetry: Vec::new(),
            limits: CampaignLimits::default(),
            last_activity_s: None,
        }
    }

    /// The measured records of case `id`, in file order.
    pub fn measured(&self, id: &str) -> Vec<&Record> {
        self.records
            .iter()
            .filter(|r| r.case == id && r.phase == Phase::Measured)
            .collect()
    }
}

/// The guard's temperature thresholds as `campaign.json` writes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
pub struct CampaignLimits {
    /// Stop temperature, °C.
    pub stop_temp_c: Option<f64>,
    /// Stop T.Limit margin, °C.
    pub stop_margin_c: Option<f64>,
}
