//! Human views of a summary: one pure renderer per format, `fn render(&Summary) -> String`
//! (`report.html`, which also draws the records, takes the whole [`Report`]).
//!
//! In three layers, each file naming only files of the layers below it:
//!
//! - the formats: [`markdown`] (`report.md`, and what the terminal prints), [`html`]
//!   (`report.html`), [`csv`] (`cases.csv`), [`compare`] (`llmload compare`);
//! - what they show, format-neutral: the tables ([`results`], [`energy`], [`phases`],
//!   [`sessions`], [`soak`], [`shards`], [`saturation`], [`repeats`]), the sentences several formats write
//!   alike ([`text`], [`partial`]: a case's counts and an incomplete case's partial figures,
//!   [`dataset`]: the dataset named), and the charts ([`charts`], [`gpu`], [`timeline`], [`marks`]);
//! - the model under them: [`table`] (a table's columns, rows and cells, and how each format
//!   writes one), [`plot`] (a chart's canvas), [`markup`] (escaping).

pub mod abandoned;
pub mod charts;
pub mod compare;
pub mod csv;
pub mod dataset;
pub mod energy;
pub mod gpu;
pub mod html;
pub mod markdown;
pub mod marks;
pub mod markup;
pub mod models;
pub mod partial;
pub mod phases;
pub mod plot;
pub mod pooling;
pub mod repeats;
pub mod results;
pub mod saturation;
pub mod server_side;
pub mod sessions;
pub mod shards;
pub mod soak;
pub mod table;
pub mod terminal;
pub mod text;
pub mod timeline;

use crate::record::{Phase, Record};
use crate::summary::Summary;
use crate::telemetry::Reading;
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

impl Report {
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
