//! Human views of a summary: one pure renderer per format, `fn render(&Summary) -> String`
//! (`report.html`, which also draws the records, takes the whole [`Report`]).

pub mod charts;
pub mod compare;
pub mod csv;
#[cfg(test)]
mod fixture;
pub mod html;
pub mod load;
pub mod markdown;
pub mod plot;
pub mod timeline;

pub use load::{regenerate, write_html, Report};
