//! The results on a terminal, for `-q`: the results tables alone, the same rows and cells as
//! `report.md`'s, aligned in columns that fit the terminal's width (`comfy-table`). Markdown
//! stays in `report.md`.

use super::results;
use super::table::Table;
use crate::summary::Summary;
use std::fmt::Write as _;

/// The width a table is fitted to without a `COLUMNS` that says otherwise.
const DEFAULT_WIDTH: u16 = 100;

/// The terminal's width: `COLUMNS` where the shell exports it, else [`DEFAULT_WIDTH`].
pub fn width() -> u16 {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|&w: &u16| w >= 40)
        .unwrap_or(DEFAULT_WIDTH)
}

/// `table` aligned, within `width` columns (cells wrap where they must).
pub fn table(table: &Table, width: u16) -> String {
    let mut out = comfy_table::Table::new();
    out.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(width)
        .set_header(&table.columns);
    for row in &table.rows {
        out.add_row(row.cells.iter().map(ToString::to_string));
    }
    // A figure wraps last: the headers give way first, up to a figure's width of 16.
    for (i, column) in out.column_iter_mut().enumerate() {
        let widest = table
            .rows
            .iter()
            .filter_map(|r| r.cells.get(i))
            .map(|c| c.to_string().chars().count())
            .max()
            .unwrap_or(0);
        // The width counts the padding on both sides.
        let floor = u16::try_from(widest.min(16) + 2).unwrap_or(18);
        column.set_constraint(comfy_table::ColumnConstraint::LowerBoundary(
            comfy_table::Width::Fixed(floor),
        ));
    }
    format!("{out}\n")
}

/// The results tables of `summary` (closed rounds, then continuous and open loops), aligned;
/// a simulated target says so above them, and a run with no complete case says that alone.
pub fn results(summary: &Summary, width: u16) -> String {
    let tables: Vec<Table> = [results::reference(summary), results::window(summary)]
        .into_iter()
        .filter(|t| !t.rows.is_empty())
        .collect();
    let mut out = String::new();
    if summary.simulated {
        out.push_str("SIMULATED target (built-in engine simulator)\n");
    }
    if tables.is_empty() {
        let total = summary.cases.len();
        let _ = writeln!(out, "No complete case (0 of {total}): see report.md");
        return out;
    }
    let rendered: Vec<String> = tables.iter().map(|t| table(t, width)).collect();
    out.push_str(&rendered.join("\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn the_results_are_aligned_within_the_width_and_hold_the_markdown_cells() {
        let summary = fixture::report().summary;
        let markdown = results::reference(&summary);
        for width in [60, 100, 160] {
            let text = results(&summary, width);
            assert!(!text.contains("|---"), "no Markdown: {text}");
            for line in text.lines() {
                assert!(
                    line.chars().count() <= usize::from(width),
                    "{width}: {line}"
                );
            }
            // Every row of report.md's table is there, each cell's text whole at a wide width.
            if width == 160 {
                for row in &markdown.rows {
                    for cell in &row.cells {
                        assert!(text.contains(&cell.to_string()), "{cell} missing: {text}");
                    }
                }
            }
        }
    }
}
