//! The report on a terminal: the page ([`super::page`]) with each table aligned in columns that
//! fit the terminal's width (`comfy-table`), header words whole, or a case at a time where the
//! columns cannot fit, and its prose wrapped to the width; every string made printable. For
//! `-q` the results alone. Markdown stays in `report.md` (and on a standard output that is not
//! a terminal). This file only writes blocks.

use super::markup::printable;
use super::page::{chart_line, Block, Section};
use super::table::Table;
use super::Report;
use crate::summary::Summary;

pub use crate::console::width;
use crate::console::wrap;

/// The sections `-q` prints: the results and what qualifies them.
const QUIET: [&str; 6] = [
    "results",
    "incomplete",
    "notes",
    "models",
    "repeats",
    "abandoned",
];

/// The whole report of `summary` for a terminal of `width` columns.
pub fn page(summary: &Summary, width: u16) -> String {
    let report = Report::of(summary);
    let sections = super::sections(&report);
    write(&sections, width)
}

/// What `-q` prints: the results sections of `summary`, aligned within `width`; a simulated
/// target says so above them.
pub fn results(summary: &Summary, width: u16) -> String {
    let report = Report::of(summary);
    let mut sections = super::sections(&report);
    sections.retain(|s| QUIET.contains(&s.id));
    let mut out = simulated_line(summary).to_owned();
    out.push_str(&write(&sections, width));
    out
}

/// What `llmload sweep` prints: the SIMULATED line where the target was one, the sweep's curve
/// aligned, what its marks mean, the findings, and why the sweep stopped adding load; empty for
/// a summary without a sweep.
pub fn sweep(summary: &Summary, width: u16) -> String {
    only(summary, "sweep", width)
}

/// What `llmload capacity` prints: the SIMULATED line where the target was one, then the
/// capacity section (the answer, each load's verdicts, the method); empty without one.
pub fn capacity(summary: &Summary, width: u16) -> String {
    only(summary, "capacity", width)
}

/// The SIMULATED line and the blocks of the section `id` alone; empty where there is none.
fn only(summary: &Summary, id: &str, width: u16) -> String {
    let report = Report::of(summary);
    let Some(section) = super::sections(&report).into_iter().find(|s| s.id == id) else {
        return String::new();
    };
    let mut out = simulated_line(summary).to_owned();
    for block in &section.blocks {
        write_block(&mut out, block, width);
    }
    out
}

/// `sections` for a terminal: each heading underlined, its blocks after it.
pub fn write(sections: &[Section<'_>], width: u16) -> String {
    let mut out = String::new();
    for (i, section) in sections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let heading = printable(&section.heading);
        out.push_str(&heading);
        out.push('\n');
        out.push_str(&"─".repeat(heading.chars().count().min(usize::from(width))));
        out.push('\n');
        for block in &section.blocks {
            write_block(&mut out, block, width);
        }
    }
    out
}

/// One block, wrapped to `width`.
fn write_block(out: &mut String, block: &Block<'_>, width: u16) {
    let columns = usize::from(width);
    match block {
        Block::Heading(text) => {
            out.push('\n');
            wrap(&format!("{}:", printable(text)), columns, out);
        }
        Block::Table(t) => out.push_str(&table(t, width)),
        Block::Paragraph(text)
        | Block::Note(text)
        | Block::Banner { text, .. }
        | Block::Absent { text, .. } => {
            wrap(&printable(text), columns, out);
        }
        Block::List(items) => {
            for item in items {
                wrap(&format!("- {}", printable(item)), columns, out);
            }
        }
        Block::Chart(chart) => wrap(&printable(&chart_line(chart)), columns, out),
    }
}

/// `table` aligned within `width` columns: header words whole, cells wrapping between words
/// where they must; where even so the columns cannot fit, a row at a time, a line per cell
/// under its column's name.
pub fn table(table: &Table, width: u16) -> String {
    let columns: Vec<String> = table
        .columns
        .iter()
        .map(|c| printable(c).into_owned())
        .collect();
    let rows: Vec<Vec<String>> = table
        .rows
        .iter()
        .map(|row| {
            row.cells
                .iter()
                .map(|c| printable(&c.to_string()).into_owned())
                .collect()
        })
        .collect();
    match grid(&columns, &rows, width) {
        Some(text) => text,
        None => vertical(&columns, &rows, width),
    }
}

/// Each row as its lines: the first cell, then each other cell under its column's name.
fn vertical(columns: &[String], rows: &[Vec<String>], width: u16) -> String {
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

/// The longest word of `text`, in characters.
fn longest_word(text: &str) -> usize {
    text.split_whitespace()
        .map(|w| w.chars().count())
        .max()
        .unwrap_or(0)
}

/// Rows under `columns` in a grid fitted to `width`, or `None` where the columns cannot fit
/// with every header word whole.
fn grid(columns: &[String], rows: &[Vec<String>], width: u16) -> Option<String> {
    // A column is at least as wide as its header's longest word, so that no header word is
    // split; its figures whole where the width allows, up to 16 characters, else their longest
    // word; the width counts the padding on both sides.
    let floors = |whole: bool| -> Vec<usize> {
        columns
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let cells = rows.iter().filter_map(|r| r.get(i)).map(|c| {
                    if whole {
                        c.chars().count()
                    } else {
                        longest_word(c)
                    }
                });
                cells.max().unwrap_or(0).min(16).max(longest_word(name)) + 2
            })
            .collect()
    };
    // A border before each column and one after the last.
    let fits = |f: &Vec<usize>| f.iter().sum::<usize>() + f.len() < usize::from(width);
    let floors = [floors(true), floors(false)].into_iter().find(fits)?;
    let mut out = comfy_table::Table::new();
    out.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(width)
        .set_header(columns);
    for row in rows {
        out.add_row(row);
    }
    for (column, floor) in out.column_iter_mut().zip(floors) {
        column.set_constraint(comfy_table::ColumnConstraint::LowerBoundary(
            comfy_table::Width::Fixed(u16::try_from(floor).unwrap_or(u16::MAX)),
        ));
    }
    let text = format!("{out}\n");
    text.lines()
        .all(|l| l.chars().count() <= usize::from(width))
        .then_some(text)
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
        let markdown = crate::report::results::reference(&summary);
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
    fn the_whole_report_fits_the_width_with_every_cell_kept() {
        let summary = fixture::report().summary;
        let report = Report::of(&summary);
        let cells: Vec<String> = super::super::sections(&report)
            .iter()
            .flat_map(|s| &s.blocks)
            .filter_map(|b| match b {
                Block::Table(t) => Some(t.rows.iter().flat_map(|r| &r.cells)),
                _ => None,
            })
            .flatten()
            .map(ToString::to_string)
            .collect();
        assert!(!cells.is_empty(), "the fixture's report has tables");
        for width in [60u16, 100, 160, 400] {
            let text = page(&summary, width);
            assert!(!text.contains("|---"), "no Markdown table: {text}");
            for line in text.lines() {
                let n = line.chars().count();
                let one_word = !line.trim().contains(' ');
                assert!(n <= usize::from(width) || one_word, "{width}: {n}: {line}");
            }
            if width == 400 {
                // Nothing lost: every cell of every table is on the page, whole.
                for cell in &cells {
                    assert!(text.contains(cell.as_str()), "{cell:?} missing: {text}");
                }
            }
        }
    }

    #[test]
    fn header_words_stay_whole_and_a_narrow_terminal_gets_a_case_at_a_time() {
        let mut t = Table::new(["Concurrent requests", "Responses (n)", "Rounds"]);
        t.push(["1", "12", "3"]);
        let text = table(&t, 40);
        assert!(
            text.contains("Concurrent") && text.contains("Responses"),
            "{text}"
        );
        assert!(text.contains('│'), "a grid where it fits: {text}");
        let text = table(&t, 20);
        assert_eq!(
            text, "Concurrent requests:\n  1\n  Responses (n): 12\n  Rounds: 3\n",
            "a case at a time"
        );
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
        assert!(
            text.contains(crate::report::text::DESCRIPTIVE_NOTE),
            "{text}"
        );
        summary.simulated = false;
        assert!(!sweep(&summary, 120).contains("SIMULATED"));
        summary.sweep = None;
        assert_eq!(sweep(&summary, 120), "");
    }
}
