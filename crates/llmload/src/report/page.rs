//! The report page, built once: an ordered list of format-neutral [`Section`]s, each a heading
//! and its [`Block`]s (tables of the table model, prose, lists, charts). What a section holds is
//! decided once, by its builder (`fn section(&Report) -> Option<Section>` in the file of what it
//! shows); `report.md`, `report.html` and the terminal only write blocks, each in its syntax and
//! with its own escaping, so that every format shows the same sections in the same order.

use super::plot::Figure;
use super::table::Table;

/// One section of the page: an id (the HTML anchor, and how tests name it), a heading, and its
/// blocks in order.
pub struct Section<'a> {
    /// The section's anchor, lowercase words joined by `-`.
    pub id: &'static str,
    /// The heading, plain text.
    pub heading: String,
    /// What the section holds, in order.
    pub blocks: Vec<Block<'a>>,
}

/// One block of a section. Every string is plain text that may carry text from outside (a
/// model name, a server's error); the writer escapes it for its format.
pub enum Block<'a> {
    /// A heading under the section's own.
    Heading(String),
    /// A table of the table model.
    Table(Table),
    /// A paragraph.
    Paragraph(String),
    /// A paragraph that qualifies what is above it (smaller, in HTML).
    Note(String),
    /// A list, an item per entry.
    List(Vec<String>),
    /// A warning that stands out (the simulated target), with its anchor.
    Banner {
        /// The anchor of the banner in HTML.
        id: &'static str,
        /// What it says.
        text: String,
    },
    /// A note standing in for a chart that could not be drawn, with its anchor.
    Absent {
        /// The anchor of the note in HTML.
        id: &'static str,
        /// Why there is no chart.
        text: String,
    },
    /// A chart: drawn by `report.html` only; the text formats say in one line where it is.
    Chart(Chart<'a>),
}

/// A chart, drawn when a format wants it (drawing costs time and the text formats never do).
pub struct Chart<'a> {
    /// The figure's anchor in HTML, where it has one.
    pub id: Option<&'static str>,
    /// The chart's title, known before it is drawn.
    pub title: String,
    /// Draws the chart: its SVG (or why none), and its caption; `None` where there turns out
    /// to be nothing to draw.
    pub draw: Box<dyn Fn() -> Option<Figure> + 'a>,
}

/// What the text formats write in place of a chart.
pub fn chart_line(chart: &Chart<'_>) -> String {
    format!("Chart \"{}\": in report.html.", chart.title)
}

impl<'a> Section<'a> {
    /// An empty section.
    pub fn new(id: &'static str, heading: impl Into<String>) -> Section<'a> {
        Section {
            id,
            heading: heading.into(),
            blocks: Vec::new(),
        }
    }

    /// Adds a block.
    pub fn push(&mut self, block: Block<'a>) {
        self.blocks.push(block);
    }

    /// Adds a table under a heading, when it has rows; nothing otherwise.
    pub fn table(&mut self, heading: impl Into<String>, table: Table) {
        if !table.is_empty() {
            self.blocks.push(Block::Heading(heading.into()));
            self.blocks.push(Block::Table(table));
        }
    }

    /// Adds a note, unless it is empty; surrounding line breaks are dropped.
    pub fn note(&mut self, text: impl AsRef<str>) {
        let text = text.as_ref().trim();
        if !text.is_empty() {
            self.blocks.push(Block::Note(text.to_owned()));
        }
    }

    /// Adds a paragraph, unless it is empty; surrounding line breaks are dropped.
    pub fn paragraph(&mut self, text: impl AsRef<str>) {
        let text = text.as_ref().trim();
        if !text.is_empty() {
            self.blocks.push(Block::Paragraph(text.to_owned()));
        }
    }

    /// The section, or `None` when it holds nothing.
    pub fn unless_empty(self) -> Option<Section<'a>> {
        (!self.blocks.is_empty()).then_some(self)
    }
}

#[cfg(test)]
mod tests;
