//! The shard section. A merged attempt's lists its shards (start lag, clock offset, self-check,
//! status), the missing and incomplete ones and those whose client was bound; a shard's own
//! attempt says which part of which attempt it is.

use super::table::Table;
use crate::summary::shards::{ShardRun, ShardsSection};

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1} ms"))
}

fn clock(run: &ShardRun) -> String {
    match (run.clock.offset_ms, run.clock.uncertainty_ms) {
        (Some(offset), Some(within)) => format!("{offset:+.1} ± {within:.1} ms"),
        _ => format!(
            "unknown ({})",
            run.clock.note.as_deref().unwrap_or("not estimated")
        ),
    }
}

/// The merged attempt's shard table: index, status, records, part, start lag, clock offset,
/// self-check.
pub fn table(section: &ShardsSection) -> Table {
    let mut table = Table::new(HEAD);
    for s in &section.shards {
        let part = match (s.run.arrivals, s.run.streams) {
            (Some(n), _) => format!("{n} arrivals"),
            (None, Some(n)) => format!("{n} streams"),
            (None, None) => "–".to_owned(),
        };
        table.push([
            s.run.index.to_string(),
            s.reason
                .as_ref()
                .map_or_else(|| s.status.clone(), |r| format!("{}: {r}", s.status)),
            s.records.to_string(),
            part,
            ms(s.run.start.map(|st| st.start_lag_ms)),
            clock(&s.run),
            s.client_check.clone().unwrap_or_else(|| "–".to_owned()),
        ]);
    }
    table
}

/// What the section says in sentences: how many shards, what is missing, what taints it, and
/// how far the shards' timelines may be apart.
pub fn sentences(section: &ShardsSection) -> Vec<String> {
    let mut lines = vec![format!(
        "Merged from {} ({} given). Records of every shard are on one timeline, each shard's \
         load start aligned with the others'; a shard's TTFT and latencies are on its own clock. \
         Start lags spread over {}, clock offsets from the server over {} (each known within at \
         most {}): the window and the achieved rate are no more exact than that.",
        section.complete_text(),
        section.shards.len(),
        ms(section.start_lag_spread_ms),
        ms(section.clock_offset_spread_ms),
        ms(section.clock_uncertainty_max_ms),
    )];
    if let Some(apart) = section.start_at_spread_ms.filter(|&d| d > 0.0) {
        lines.push(format!(
            "The shards were given start instants up to {} apart (each resolved its own \
             --start-at): the merged timeline aligns their loads, but the server saw them that \
             far apart.",
            ms(Some(apart))
        ));
    }
    if let Some(shortfall) = section.shortfall() {
        lines.push(format!("Not whole: {shortfall}."));
    }
    if !section.client_bound.is_empty() {
        let list: Vec<String> = section
            .client_bound
            .iter()
            .map(ToString::to_string)
            .collect();
        lines.push(format!(
            "The client of shard {} may have distorted what it measured: that taints the whole \
             attempt.",
            list.join(", ")
        ));
    }
    lines
}

const HEAD: [&str; 7] = [
    "Shard",
    "Status",
    "Records",
    "Its part",
    "Start lag",
    "Clock offset (server − shard)",
    "Self-check",
];

/// A shard's own attempt in one sentence: which part of which attempt it is.
pub fn part_of(run: &ShardRun) -> String {
    format!(
        "Shard {} of {} of attempt {} (merge the shards with llmload merge): start lag {}, clock \
         offset {}.",
        run.index,
        run.count,
        run.attempt_id,
        ms(run.start.map(|s| s.start_lag_ms)),
        clock(run)
    )
}

/// The page's shard section: which part of which attempt a shard's own attempt is, or a merged
/// attempt's shards; none for an attempt that is neither.
pub fn section(report: &super::Report) -> Option<super::page::Section<'_>> {
    let summary = &report.summary;
    let mut section = super::page::Section::new("shards", "Shards");
    if let Some(run) = &summary.shard {
        section.paragraph(part_of(run));
    }
    if let Some(shards) = &summary.shards {
        section.push(super::page::Block::Table(table(shards)));
        for line in sentences(shards) {
            section.note(line);
        }
    }
    section.unless_empty()
}
