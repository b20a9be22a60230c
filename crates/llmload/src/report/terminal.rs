//! The results on a terminal, for `-q`: the results tables alone, the same rows and cells as
//! `report.md`'s, aligned in columns that fit the terminal's width (`comfy-table`). Markdown
//! stays in `report.md`.

use super::table::Table;
use super::{results, saturation, text};
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
    // A figure wraps last: the headers give way first, up to a figure's width of 16; where the
    // figures whole do not fit, they wrap between words ("139.23 / tokens/s"); where even their
    // words do not, anywhere, so that the table keeps within the width.
    let widest = |word: bool| -> Vec<usize> {
        (0..table.columns.len())
            .map(|i| {
                let cells = table.rows.iter().filter_map(|r| r.cells.get(i));
                let widths = cells.map(|c| {
                    let text = c.to_string();
                    if word {
                        text.split_whitespace()
                            .map(|w| w.chars().count())
                            .max()
                            .unwrap_or(0)
                    } else {
                        text.chars().count()
                    }
                });
                // The width counts the padding on both sides.
                widths.max().unwrap_or(0).min(16) + 2
            })
            .collect()
    };
    // A border before each column and one after the last.
    let fits =
        |floors: &Vec<usize>| floors.iter().sum::<usize>() + floors.len() < usize::from(width);
    let floors = [widest(false), widest(true)]
        .into_iter()
        .find(fits)
        .unwrap_or_default();
    for (column, floor) in out.column_iter_mut().zip(floors) {
        column.set_constraint(comfy_table::ColumnConstraint::LowerBoundary(
            comfy_table::Width::Fixed(u16::try_from(floor).unwrap_or(18)),
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
    let mut out = simulated_line(summary).to_owned();
    if tables.is_empty() {
        out.push_str(&text::no_complete_case(
            summary,
            "under \"Incomplete cases\" in report.md",
        ));
        return out;
    }
    let rendered: Vec<String> = tables.iter().map(|t| table(t, width)).collect();
    out.push_str(&rendered.join("\n"));
    out
}

/// What `llmload sweep` prints: the SIMULATED line where the target was one, the curve aligned,
/// what its marks mean, the findings, and why the sweep stopped adding load; empty for a summary
/// without a sweep.
pub fn sweep(summary: &Summary, width: u16) -> String {
    let Some(sweep) = &summary.sweep else {
        return String::new();
    };
    let mut out = simulated_line(summary).to_owned();
    out.push_str(&table(
        &saturation::curve(&sweep.analysis, sweep.axis),
        width,
    ));
    out.push_str(&saturation::findings_text(&sweep.analysis));
    if let Some(why) = &sweep.stopped_because {
        let _ = writeln!(out, "The sweep stopped adding load: {why}.");
    }
    out
}

/// The line above the tables of a simulated target; empty for a real one.
fn simulated_line(summary: &Summary) -> &'static str {
    if summary.simulated {
        "SIMULATED target (built-in engine simulator)\n"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn the_results_are_aligned_within_the_width_and_hold_the_markdown_cells() {
        let summary = fixture::report().summary;
        let markdown = results::reference(&summary);
        for width in [60, 100, 200] {
            let text = results(&summary, width);
            assert!(!text.contains("|---"), "no Markdown: {text}");
            for line in text.lines() {
                assert!(
                    line.chars().count() <= usize::from(width),
                    "{width}: {line}"
                );
            }
            // Every row of report.md's table is there, each cell's text whole at a wide width.
            if width == 200 {
                for row in &markdown.rows {
                    for cell in &row.cells {
                        assert!(text.contains(&cell.to_string()), "{cell} missing: {text}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_sweep_says_simulated_and_shows_n_and_the_small_sample_mark() {
        let mut summary = fixture::sweep_report().summary;
        let text = sweep(&summary, 200);
        assert!(text.starts_with("SIMULATED target"), "{text}");
        assert!(!text.contains("|---"), "aligned, not Markdown: {text}");
        let header = text.lines().nth(2).unwrap_or_default();
        assert!(header.contains(" n "), "{text}");
        // The fixture's loads have 1 to 8 responses: every p99 is descriptive, and says so.
        let row_of_8 = text
            .lines()
            .find(|l| l.starts_with("│ 8 "))
            .unwrap_or_default();
        assert!(row_of_8.contains("(descriptive)"), "{text}");
        assert!(row_of_8.contains("│ 8 "), "{text}");
        assert!(text.contains(super::text::DESCRIPTIVE_NOTE), "{text}");
        summary.simulated = false;
        assert!(!sweep(&summary, 120).contains("SIMULATED"));
        summary.sweep = None;
        assert_eq!(sweep(&summary, 120), "");
    }
}
