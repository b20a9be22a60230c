//! The table model of the reports. A [`Table`] says what a table holds and nothing of a format:
//! its columns, and per row its cells in column order; a [`Cell`] holds its figure as text, the
//! samples the figure rests on, and the marks that qualify it. The builders of `report/` (the
//! results tables, energy, phases, sessions, soak, shards, the sweep, the cases of `cases.csv`)
//! make tables from a summary; the formats only write them, each in its syntax, with the same
//! text in every cell: Markdown (`report.md` and the terminal), HTML (`report.html`) and CSV
//! (`cases.csv`).

use super::markup::{escape, markdown_cell};
use std::fmt;

/// A table: its column names and its rows, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// The column names, plain text.
    pub columns: Vec<String>,
    /// The rows, each with one cell per column.
    pub rows: Vec<Row>,
}

/// One row of a table (a case, a turn, a window, a shard, a load of a sweep).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// The cells, in column order.
    pub cells: Vec<Cell>,
}

/// One cell: a figure and what it rests on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    /// The figure as every format writes it ("0.19 s", "8,192"; "–" where there is none, empty
    /// where the cell says nothing).
    pub text: String,
    /// How many samples the figure rests on, where it is a statistic or a count of them.
    pub n: Option<u64>,
    /// What qualifies the figure, written after it in parentheses: "12 (3 unverified)".
    pub marks: Vec<Mark>,
}

/// What qualifies a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Of the responses counted, this many were not checked against the server's counters.
    Unverified(u32),
    /// The figure covers less time than its neighbours (the last window of a soak series).
    Short,
    /// A percentile with fewer than five samples beyond it: it describes the sample and
    /// promises nothing of the next ones.
    Descriptive,
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mark::Unverified(n) => write!(f, "{n} unverified"),
            Mark::Short => f.write_str("short"),
            Mark::Descriptive => f.write_str("descriptive"),
        }
    }
}

impl Cell {
    /// A cell of text, resting on no count of samples.
    pub fn new(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            n: None,
            marks: Vec::new(),
        }
    }

    /// A figure over `n` samples (`None`: no samples, or a figure that is no statistic).
    pub fn figure(text: impl Into<String>, n: Option<usize>) -> Cell {
        Cell {
            n: n.map(|n| n as u64),
            ..Cell::new(text)
        }
    }

    /// A count of samples, written as `text` ("1,024"): the figure is its own n.
    pub fn count(text: impl Into<String>, n: u32) -> Cell {
        Cell {
            n: Some(u64::from(n)),
            ..Cell::new(text)
        }
    }

    /// The cell with `mark` added.
    #[must_use]
    pub fn marked(mut self, mark: Mark) -> Cell {
        self.marks.push(mark);
        self
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::new(text)
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::new(text)
    }
}

/// The cell as every format shows it: the figure, then its marks in parentheses.
impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)?;
        if !self.marks.is_empty() {
            let marks: Vec<String> = self.marks.iter().map(ToString::to_string).collect();
            write!(f, " ({})", marks.join(", "))?;
        }
        Ok(())
    }
}

impl<C: Into<Cell>> FromIterator<C> for Row {
    fn from_iter<I: IntoIterator<Item = C>>(cells: I) -> Row {
        Row {
            cells: cells.into_iter().map(Into::into).collect(),
        }
    }
}

impl Table {
    /// An empty table with these columns.
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = S>) -> Table {
        Table {
            columns: columns.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row of `cells`, in column order.
    pub fn push<C: Into<Cell>>(&mut self, cells: impl IntoIterator<Item = C>) {
        self.rows.push(cells.into_iter().collect());
    }

    /// Whether the table has no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table in Markdown: the header, its rule, a line per row, every cell escaped.
    pub fn markdown(&self) -> String {
        let columns: Vec<String> = self.columns.iter().map(|c| markdown_cell(c)).collect();
        let mut out = format!(
            "| {} |\n|{}\n",
            columns.join(" | "),
            "---|".repeat(self.columns.len())
        );
        for row in &self.rows {
            let cells: Vec<String> = row
                .cells
                .iter()
                .map(|c| markdown_cell(&c.to_string()))
                .collect();
            out.push_str("| ");
            out.push_str(&cells.join(" | "));
            out.push_str(" |\n");
        }
        out
    }

    /// The table as an HTML `<table>` element, every column name and cell escaped, and a line
    /// break after the header, each row and the table.
    pub fn html(&self) -> String {
        let mut out = String::from("<table>\n<tr>");
        for column in &self.columns {
            out.push_str("<th>");
            out.push_str(&escape(column));
            out.push_str("</th>");
        }
        out.push_str("</tr>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for cell in &row.cells {
                out.push_str("<td>");
                out.push_str(&escape(&cell.to_string()));
                out.push_str("</td>");
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
        out
    }

    /// The table as HTML cards, for a table with more columns than a page's width holds: a
    /// two-column table per row, captioned by the row's first cell, each column's name beside
    /// its cell, the cards side by side where the page is wide enough.
    pub fn html_cards(&self) -> String {
        let mut out = String::from("<div class=\"cards\">\n");
        for row in &self.rows {
            let mut cells = self.columns.iter().zip(&row.cells);
            out.push_str("<table class=\"card\">");
            if let Some((_, first)) = cells.next() {
                out.push_str("<caption>");
                out.push_str(&escape(&first.to_string()));
                out.push_str("</caption>");
            }
            for (column, cell) in cells {
                out.push_str("<tr><th>");
                out.push_str(&escape(column));
                out.push_str("</th><td>");
                out.push_str(&escape(&cell.to_string()));
                out.push_str("</td></tr>");
            }
            out.push_str("</table>\n");
        }
        out.push_str("</div>\n");
        out
    }

    /// How many columns the table has.
    pub fn width(&self) -> usize {
        self.columns.len()
    }

    /// The table as CSV: the header line and a line per row, fields quoted as RFC 4180 says
    /// whenever they hold a comma, a quote or a line break.
    pub fn csv(&self) -> String {
        let mut out = String::new();
        push_csv_line(&mut out, self.columns.iter().map(String::as_str));
        for row in &self.rows {
            let cells: Vec<String> = row.cells.iter().map(ToString::to_string).collect();
            push_csv_line(&mut out, cells.iter().map(String::as_str));
        }
        out
    }
}

fn push_csv_line<'a>(out: &mut String, fields: impl Iterator<Item = &'a str>) {
    let quoted: Vec<String> = fields.map(field).collect();
    out.push_str(&quoted.join(","));
    out.push('\n');
}

/// One CSV field, quoted when it must be.
fn field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut table = Table::new(["Case", "Responses (n)"]);
        table.push([
            Cell::new("a<b"),
            Cell::count("12", 12).marked(Mark::Unverified(3)),
        ]);
        table.push(["c, d", "–"]);
        table
    }

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        assert_eq!(field("in64-c1-out4"), "in64-c1-out4");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn a_cell_shows_its_figure_then_its_marks() {
        let cell = Cell::count("12", 12).marked(Mark::Unverified(3));
        assert_eq!(cell.to_string(), "12 (3 unverified)");
        assert_eq!(cell.n, Some(12));
        assert_eq!(Cell::new("4").marked(Mark::Short).to_string(), "4 (short)");
        assert_eq!(Cell::figure("–", None).to_string(), "–");
    }

    #[test]
    fn every_format_writes_the_same_cells() {
        let table = sample();
        assert_eq!(
            table.markdown(),
            "| Case | Responses (n) |\n|---|---|\n| a\\<b | 12 (3 unverified) |\n| c, d | – |\n"
        );
        assert_eq!(
            table.html(),
            "<table>\n<tr><th>Case</th><th>Responses (n)</th></tr>\n\
             <tr><td>a&lt;b</td><td>12 (3 unverified)</td></tr>\n\
             <tr><td>c, d</td><td>–</td></tr>\n</table>\n"
        );
        assert_eq!(
            table.csv(),
            "Case,Responses (n)\na<b,12 (3 unverified)\n\"c, d\",–\n"
        );
    }

    #[test]
    fn cards_hold_every_cell_beside_its_column() {
        assert_eq!(
            sample().html_cards(),
            "<div class=\"cards\">\n\
             <table class=\"card\"><caption>a&lt;b</caption>\
             <tr><th>Responses (n)</th><td>12 (3 unverified)</td></tr></table>\n\
             <table class=\"card\"><caption>c, d</caption>\
             <tr><th>Responses (n)</th><td>–</td></tr></table>\n</div>\n"
        );
        assert_eq!(sample().width(), 2);
    }
}
