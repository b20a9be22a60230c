//! The results on a terminal: for `-q` the results tables alone, the same rows and cells as
//! `report.md`'s, and otherwise the whole report ([`page`]), each aligned in columns that fit the
//! terminal's width (`comfy-table`) with its prose wrapped to it. Markdown stays in `report.md`
//! (and on a standard output that is not a terminal).

use super::table::Table;
use super::{results, saturation, text};
use crate::summary::Summary;
use std::fmt::Write as _;

pub use crate::console::width;
use crate::console::wrap;

/// `table` aligned, within `width` columns (cells wrap where they must).
pub fn table(table: &Table, width: u16) -> String {
    let rows: Vec<Vec<String>> = table
        .rows
        .iter()
        .map(|row| row.cells.iter().map(ToString::to_string).collect())
        .collect();
    aligned(&table.columns, &rows, width)
}

/// Rows under `columns`, aligned within `width` columns; a table too wide for them even so is
/// shown a row at a time, a line per cell under its column's name.
fn aligned(columns: &[String], rows: &[Vec<String>], width: u16) -> String {
    let text = grid(columns, rows, width);
    if text
        .lines()
        .all(|l| l.chars().count() <= usize::from(width))
    {
        return text;
    }
    let mut out = String::new();
    for row in rows {
        let mut cells = columns.iter().zip(row);
        if let Some((name, value)) = cells.next() {
            wrap(&format!("{name}: {value}"), usize::from(width), &mut out);
        }
        for (name, value) in cells {
            wrap(&format!("  {name}: {value}"), usize::from(width), &mut out);
        }
    }
    out
}

/// Rows under `columns` in a grid fitted to `width` as far as the figures allow.
fn grid(columns: &[String], rows: &[Vec<String>], width: u16) -> String {
    let mut out = comfy_table::Table::new();
    out.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(width)
        .set_header(columns);
    for row in rows {
        out.add_row(row);
    }
    // A figure wraps last: the headers give way first, up to a figure's width of 16; where the
    // figures whole do not fit, they wrap between words ("139.23 / tokens/s"); where even their
    // words do not, anywhere, so that the table keeps within the width.
    let widest = |word: bool| -> Vec<usize> {
        (0..columns.len())
            .map(|i| {
                let cells = rows.iter().filter_map(|r| r.get(i));
                let widths = cells.map(|c| {
                    let text = c.as_str();
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
    let tables: Vec<Table> = [
        results::reference(summary),
        results::window(summary),
        super::pooling::table(summary),
    ]
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
    let mut rendered: Vec<String> = tables.iter().map(|t| table(t, width)).collect();
    let models = super::models::table(summary);
    if !models.is_empty() {
        rendered.push(table(&models, width));
    }
    out.push_str(&rendered.join("\n"));
    for line in summary.cases.iter().flat_map(text::case_sentences) {
        out.push('\n');
        wrap(&line, usize::from(width), &mut out);
    }
    for line in super::abandoned::section(summary)
        .lines()
        .filter(|l| !l.is_empty())
    {
        out.push('\n');
        wrap(line, usize::from(width), &mut out);
    }
    if let Some((lines, between)) = super::repeats::section(summary) {
        for line in lines {
            out.push('\n');
            wrap(&line, usize::from(width), &mut out);
        }
        if !between.is_empty() {
            out.push('\n');
            out.push_str(&table(&between, width));
        }
    }
    out
}

/// A Markdown report for a terminal of `width` columns: each table aligned, each paragraph
/// wrapped at spaces (a word longer than the width stays whole), headings kept as lines of
/// their own; the text is otherwise the report's.
pub fn page(markdown: &str, width: u16) -> String {
    let mut out = String::new();
    let mut lines = markdown.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim_start().starts_with('|') {
            let mut block = vec![line];
            while let Some(next) = lines.next_if(|l| l.trim_start().starts_with('|')) {
                block.push(next);
            }
            out.push_str(&markdown_table(&block, width));
        } else if line.trim().is_empty() {
            out.push('\n');
        } else {
            let heading = line.trim_start_matches('#').trim_start();
            let text = if heading.len() < line.len() {
                heading
            } else {
                line
            };
            wrap(text, usize::from(width), &mut out);
        }
    }
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
    for line in saturation::ending(sweep) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Lines wrapped as text, each its own paragraph.
fn as_text(lines: &[&str], width: u16) -> String {
    let mut out = String::new();
    for line in lines {
        wrap(line, usize::from(width), &mut out);
    }
    out
}

/// A Markdown table's lines (header, separator, rows), aligned; one that is not a table is
/// wrapped as text.
fn markdown_table(block: &[&str], width: u16) -> String {
    let cells = |line: &str| -> Vec<String> {
        let inner = line.trim().trim_start_matches('|');
        let inner = inner.strip_suffix('|').unwrap_or(inner);
        let mut cells = Vec::new();
        let mut cell = String::new();
        let mut escaped = false;
        for c in inner.chars() {
            match c {
                '\\' if !escaped => escaped = true,
                '|' if !escaped => cells.push(std::mem::take(&mut cell).trim().to_owned()),
                c => {
                    if escaped && c != '|' {
                        cell.push('\\');
                    }
                    escaped = false;
                    cell.push(c);
                }
            }
        }
        cells.push(cell.trim().to_owned());
        cells
    };
    let is_separator =
        |line: &str| line.contains('-') && line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
    let (Some(head), Some(separator)) = (block.first(), block.get(1)) else {
        return as_text(block, width);
    };
    if !is_separator(separator) {
        return as_text(block, width);
    }
    let rows: Vec<Vec<String>> = block[2..].iter().map(|l| cells(l)).collect();
    aligned(&cells(head), &rows, width)
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
    fn the_whole_report_fits_the_width_with_every_word_and_cell_kept() {
        let markdown = crate::report::markdown::render(&fixture::report().summary);
        assert!(markdown.contains("|---"), "the fixture's report has tables");
        let words = |text: &str| -> Vec<String> {
            text.split(|c: char| c.is_whitespace() || "|│─┼├┤┌┐└┘┬┴═╞╡╪".contains(c))
                .filter(|w| !w.is_empty() && !w.chars().all(|c| c == '-' || c == ':'))
                .map(str::to_owned)
                .collect()
        };
        for width in [60u16, 100, 160] {
            let text = page(&markdown, width);
            assert!(!text.contains("|---"), "no Markdown table: {text}");
            let longest_word = words(&markdown).iter().map(|w| w.chars().count()).max();
            for line in text.lines() {
                let n = line.chars().count();
                assert!(
                    n <= usize::from(width) || longest_word.is_some_and(|w| n <= w),
                    "{width}: {n}: {line}"
                );
            }
            if width == 160 {
                // Nothing lost: every word of the report is on the page (cells unwrapped).
                let shown = words(&text).join(" ");
                for word in words(&markdown) {
                    assert!(shown.contains(&word), "{word:?} missing");
                }
            }
        }
    }

    #[test]
    fn escaped_pipes_stay_in_their_cell_and_prose_wraps_at_spaces() {
        let text = page(
            "| a | b |\n|---|---|\n| x \\| y | z |\n\nOne two three four.",
            40,
        );
        let row = text.lines().find(|l| l.contains('z')).expect("the row");
        assert!(row.contains("x | y"), "{text}");
        let mut out = String::new();
        wrap("- one two three four five", 12, &mut out);
        assert_eq!(out, "- one two\n  three four\n  five\n");
        let mut out = String::new();
        wrap("warning: a b", 9, &mut out);
        assert_eq!(
            out, "warning:\n  a b\n",
            "a line's continuation is indented"
        );
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
